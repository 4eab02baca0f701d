/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read a thread's audit from its netd: connect to run/<name>.sock through /proc/self/fd (the
 * run directory's path may be long; the descriptor's is short), read to the end within the
 * timeout. netd writes the whole document and closes; a document that does not end in '}'
 * and a newline is a netd that died mid-way.
 */

#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"

#define READ_TIMEOUT_MS 2000

void hostnet_audit_name(const char *id, char ret[HOSTNET_AUDIT_NAME_LEN])
{
        char hex[SHA256_HEX_LEN + 1];

        sha256_hex(id, strlen(id), hex);
        (void)snprintf(ret, HOSTNET_AUDIT_NAME_LEN, "a-%.24s.sock", hex);
}

static int64_t now_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_audit(const struct hostnet *hn, const char *id)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        char name[HOSTNET_AUDIT_NAME_LEN], rec[320];
        int fd, r;

        (void)snprintf(rec, sizeof(rec), "%s.netd", id);
        if (faccessat(hn->run_fd, rec, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return -ENOENT; /* no netd recorded: no list, or not acquired */
        hostnet_audit_name(id, name);
        (void)snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", hn->run_fd, name);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
        if (r < 0 && errno != EINPROGRESS && errno != EAGAIN) {
                r = -errno;
                (void)close(fd);
                return r;
        }
        return fd;
}

/* Read @fd to its end, within the deadline and the cap. */
static int read_all(int fd, char **ret, size_t *ret_len)
{
        int64_t deadline = now_ms() + READ_TIMEOUT_MS;
        size_t len = 0, cap = 64 * 1024;
        char *buf = b4_malloc(cap + 1);

        if (!buf)
                return -ENOMEM;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int64_t left = deadline - now_ms();
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) != 1) {
                        free(buf);
                        return -ETIMEDOUT;
                }
                if (len == cap) {
                        char *bigger =
                                cap >= HOSTNET_AUDIT_MAX ? NULL : b4_realloc(buf, 2 * cap + 1);

                        if (!bigger) {
                                free(buf);
                                return cap >= HOSTNET_AUDIT_MAX ? -EFBIG : -ENOMEM;
                        }
                        buf = bigger;
                        cap *= 2;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n < 0) {
                        free(buf);
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

int hostnet_audit_read(
        const struct hostnet *hn, const char *id, char **ret, size_t *ret_len, struct b4_error *err)
{
        cleanup_close int fd = connect_audit(hn, id);
        char *doc = NULL;
        size_t len = 0;
        int r;

        if (fd == -ENOENT)
                return -ENOENT;
        if (fd < 0)
                return b4_error_set(err, -EIO,
                                    "the network audit of thread '%s' is unavailable: %s", id,
                                    strerror(-fd));
        r = read_all(fd, &doc, &len);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r >= 0 && (len < 2 || doc[0] != '{' || doc[len - 1] != '\n' || doc[len - 2] != '}')) {
                free(doc);
                r = -EPROTO;
        }
        if (r < 0)
                return b4_error_set(err, -EIO, "b4box-netd of thread '%s' gave no audit (%s)", id,
                                    strerror(-r));
        *ret = doc;
        *ret_len = len;
        return 0;
}
