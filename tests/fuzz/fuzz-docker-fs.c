/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the Docker provider's filesystem over the Engine API (src/lib/docker/fs.c,
 * exec.c, tar.c through libarchive, api.c). Trust boundary: the daemon's answers, whose
 * content (tar members, names, sizes, link targets, command output) the sandboxed container
 * controls.
 *
 * A thread plays the daemon on a unix socket and answers each request from the input. Byte 0
 * picks the operation (readFile capped or not, lstat, stat, listDir, walk, readFiles, realpath);
 * the rest is answers separated by lines "@@": each starts with a line "STATUS [ARG]" (ARG:
 * the X-Docker-Container-Path-Stat value of an archive answer, the exit code of an exec start)
 * and its body follows (a tar, an exec stream, JSON). GET /version, exec create and exec inspect
 * are answered by the harness. A failure must carry a message; results are checked for shape.
 */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "b4box/provider.h"

#include "base/strv.h"
#include "docker/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)
#define FUZZ_CAP       4096

static struct {
        pthread_mutex_t lock;
        const char *next, *end; /* the answers not used yet */
        int exit_code;          /* of the last exec start */
} script = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
                if (w <= 0)
                        return;
                p += w;
                n -= (size_t)w;
        }
}

static void reply(int fd, bool head, int status, const char *stat, const char *body, size_t len)
{
        char h[8192];
        int n = snprintf(h, sizeof(h),
                         "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s%.4000s%sConnection: "
                         "close\r\n\r\n",
                         status, len, stat ? "X-Docker-Container-Path-Stat: " : "",
                         stat ? stat : "", stat ? "\r\n" : "");

        send_all(fd, h, (size_t)n);
        if (!head)
                send_all(fd, body, len);
}

/* The next scripted answer, or a 404 once the input is used up. */
static void scripted(int fd, bool head, bool exec_start)
{
        const char *p = script.next, *sep, *eol, *body;
        char line[128] = "", arg[4096] = "";
        int status = 404;

        if (!p || p >= script.end) {
                reply(fd, head, 404, NULL, "{\"message\":\"no such thing\"}", 27);
                return;
        }
        sep = memmem(p, (size_t)(script.end - p), "\n@@\n", 4);
        script.next = sep ? sep + 4 : script.end;
        if (!sep)
                sep = script.end;
        eol = memchr(p, '\n', (size_t)(sep - p));
        eol = eol ? eol : sep;
        body = eol < sep ? eol + 1 : sep;
        (void)snprintf(line, sizeof(line), "%.*s", (int)(eol - p), p);
        if (sscanf(line, "%d %4095s", &status, arg) < 1 || status < 100 || status > 599)
                status = 200;
        for (char *c = arg; *c; c++)
                if (*c == '\r' || *c == '\n')
                        *c = ' ';
        if (exec_start)
                script.exit_code = atoi(arg);
        reply(fd, head, status, !exec_start && arg[0] ? arg : NULL, body, (size_t)(sep - body));
}

static void serve(int fd)
{
        char req[16384];
        size_t len = 0;
        char *end = NULL;

        while (len < sizeof(req) - 1 && !end) {
                ssize_t n = recv(fd, req + len, sizeof(req) - 1 - len, 0);
                if (n <= 0)
                        return;
                len += (size_t)n;
                req[len] = '\0';
                end = strstr(req, "\r\n\r\n");
        }
        if (!end)
                return;
        pthread_mutex_lock(&script.lock);
        if (strncmp(req, "GET /version", 12) == 0) {
                static const char v[] = "{\"ApiVersion\":\"1.41\",\"Version\":\"24.0.0\"}";
                reply(fd, false, 200, NULL, v, sizeof(v) - 1);
        } else if (strstr(req, "/exec ") || strstr(req, "/exec?")) {
                reply(fd, false, 201, NULL, "{\"Id\":\"e1\"}", 11);
        } else if (strstr(req, "/exec/e1/json")) {
                char v[128];
                int n = snprintf(v, sizeof(v), "{\"ExitCode\":%d,\"Running\":false,\"Pid\":0}",
                                 script.exit_code);
                reply(fd, false, 200, NULL, v, (size_t)n);
        } else {
                scripted(fd, strncmp(req, "HEAD ", 5) == 0, strstr(req, "/exec/e1/start") != NULL);
        }
        pthread_mutex_unlock(&script.lock);
}

static void *daemon_thread(void *arg)
{
        int lfd = *(int *)arg;

        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                serve(fd);
                (void)shutdown(fd, SHUT_WR);
                (void)close(fd);
        }
        return NULL;
}

static struct sockaddr_un sa = { .sun_family = AF_UNIX };

static void remove_socket(void)
{
        (void)unlink(sa.sun_path);
}

static struct docker_client *client(void)
{
        static struct docker_client *d;
        static int lfd = -1;
        char host[sizeof(sa.sun_path) + 8];
        pthread_t th;

        if (d)
                return d;
        (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/b4box-fuzz-dockerd-%d.sock",
                       (int)getpid());
        (void)unlink(sa.sun_path);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
            pthread_create(&th, NULL, daemon_thread, &lfd) != 0)
                abort();
        (void)pthread_detach(th);
        (void)atexit(remove_socket);
        (void)snprintf(host, sizeof(host), "unix://%s", sa.sun_path);
        if (docker_client_new(host, &d, NULL) < 0)
                abort();
        return d;
}

static void check(int r, const struct b4_error *err)
{
        if (r < 0 && (!err->msg[0] || err->error >= 0))
                abort();
}

static void read_files(struct docker_fs_target *t, bool many)
{
        struct b4_read_req reqs[8];
        struct b4_blob *blobs = NULL;
        struct b4_error err = { 0 };
        size_t n = many ? 8 : 3;
        char paths[8][48];
        int r;

        for (size_t i = 0; i < n; i++) {
                (void)snprintf(paths[i], sizeof(paths[i]), "/workspace/d/f%u", (unsigned)i % 8);
                reqs[i] = (struct b4_read_req){ .path = paths[i],
                                                .max_bytes = i == 1 ? B4_UNBOUNDED : FUZZ_CAP };
        }
        r = docker_fs_read_files(t, reqs, n, &blobs, &err);
        check(r, &err);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((blobs[i].error < 0) == (blobs[i].data != NULL) ||
                    (blobs[i].data && reqs[i].max_bytes != B4_UNBOUNDED &&
                     blobs[i].len > reqs[i].max_bytes))
                        abort();
        if (r >= 0)
                b4_blobs_free(blobs, n);
}

static void run_op(struct docker_fs_target *t, uint8_t op)
{
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        struct b4_walk_entry *w = NULL;
        char *buf = NULL, **names = NULL;
        size_t len = 0, n = 0;
        unsigned flags = (op >> 3) & (B4_FS_BENEATH | B4_FS_NO_SYMLINKS); /* the jail's modes */
        int r;

        switch (op % 8) {
        case 0:
        case 1:
                r = docker_fs_read_file(t, "/workspace/a", flags, op % 8 ? B4_UNBOUNDED : FUZZ_CAP,
                                        &buf, &len, &err);
                if (r >= 0 && ((op % 8 == 0 && len > FUZZ_CAP) || buf[len] != '\0'))
                        abort();
                free(buf);
                break;
        case 2:
        case 3:
                r = op % 8 == 2 ? docker_fs_lstat(t, "/workspace/l", &st, &err)
                                : docker_fs_stat(t, "/workspace/l", flags, &st, &err);
                b4_stat_clear(&st);
                break;
        case 4:
                r = docker_fs_list_dir(t, "/workspace", flags, &names, &err);
                for (size_t i = 0; r >= 0 && names[i]; i++)
                        if (!names[i][0])
                                abort();
                strv_free(names);
                break;
        case 5:
                r = docker_fs_walk(t, "/workspace", 64, NULL, &w, &n, &err);
                if (r >= 0 && n > 64)
                        abort();
                if (r >= 0)
                        b4_walk_entries_free(w, n);
                break;
        case 6:
                read_files(t, op & 8);
                return;
        default:
                r = docker_fs_realpath(t, "/workspace/x/../y", &buf, &err);
                if (r >= 0 && buf[0] != '/')
                        abort();
                free(buf);
                break;
        }
        check(r, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct docker_fs_target t = { .d = client(), .container = "b4-sbx-fuzz" };

        if (size < 1 || size > FUZZ_MAX_INPUT)
                return 0;
        pthread_mutex_lock(&script.lock);
        script.next = (const char *)data + 1;
        script.end = (const char *)data + size;
        script.exit_code = 0;
        pthread_mutex_unlock(&script.lock);
        run_op(&t, data[0]);
        pthread_mutex_lock(&script.lock);
        script.next = script.end = NULL;
        pthread_mutex_unlock(&script.lock);
        return 0;
}
