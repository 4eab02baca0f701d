/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-fd reads and writes with caps. */

#include "fd-util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"
#include "strbuf.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
        struct strbuf sb;
        char chunk[16384];
        int r;

        strbuf_init(&sb, max == STRBUF_UNLIMITED ? max : max + 1);
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        strbuf_release(&sb);
                        return r;
                }
                if (n == 0)
                        break;
                size_t room = sb.max - sb.len;
                r = strbuf_add(&sb, chunk, (size_t)n < room ? (size_t)n : room);
                if (r < 0) {
                        strbuf_release(&sb);
                        return r;
                }
                if (sb.len > max) {
                        strbuf_release(&sb);
                        return -EFBIG;
                }
        }
        return strbuf_detach(&sb, ret, ret_len);
}

int write_all(int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
        cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int write_string_at(int dirfd, const char *path, const char *s)
{
        cleanup_close int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return write_all(fd, s, strlen(s));
}
