/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: HTTP responses read by lib/http (src/lib/http/http.c). Trust boundary: the
 * client reads answers from servers it does not control (a Docker daemon, a b4box server,
 * the Kubernetes API): a status line, headers, a body framed by length, by chunks or by the
 * connection's end.
 *
 * The input is the raw bytes a server sends back (then it closes). Each input is read twice,
 * buffered with a 4 KiB cap and through the chunk callback. Either the exchange fails with a
 * transport error or the cap, or: the buffered body is within the cap and NUL-terminated, the
 * callback saw the same bytes, and a kept header value has no line break and no surrounding
 * blanks.
 */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)
#define BODY_CAP       4096

struct reply {
        int listen_fd;
        const uint8_t *data;
        size_t size;
};

static char sock_path[108];
static int listen_fd = -1;

static void setup(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        (void)snprintf(sock_path, sizeof(sock_path), "/tmp/b4-fuzz-http-%d.sock", (int)getpid());
        (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        (void)unlink(sock_path);
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            listen(listen_fd, 4) < 0)
                abort();
}

static void cleanup_socket(void)
{
        (void)unlink(sock_path);
}

/* Answer one connection: read the request head, send the input, close. */
static void *serve(void *userdata)
{
        const struct reply *rp = userdata;
        char req[4096];
        size_t len = 0;
        int fd = accept(rp->listen_fd, NULL, NULL);

        if (fd < 0)
                return NULL;
        while (len < sizeof(req) - 1) {
                ssize_t k = read(fd, req + len, sizeof(req) - 1 - len);
                if (k <= 0)
                        break;
                len += (size_t)k;
                req[len] = '\0';
                if (strstr(req, "\r\n\r\n"))
                        break;
        }
        (void)send(fd, rp->data, rp->size, MSG_NOSIGNAL);
        (void)close(fd);
        return NULL;
}

static bool transport_error(int r)
{
        return r == -EIO || r == -EFBIG || r == -ETIMEDOUT || r == -ECONNREFUSED || r == -ENOMEM;
}

static void check_header(const char *v)
{
        size_t n = v ? strlen(v) : 0;

        if (v && (strpbrk(v, "\r\n") || (n > 0 && strchr(" \t", v[0])) ||
                  (n > 0 && strchr(" \t", v[n - 1]))))
                abort();
}

struct seen {
        size_t len;
        uint8_t buf[BODY_CAP];
        bool over;
};

static int on_chunk(long status, const void *data, size_t len, void *userdata)
{
        struct seen *s = userdata;

        (void)status;
        if (len > BODY_CAP - s->len) {
                s->over = true;
                return -EFBIG;
        }
        memcpy(s->buf + s->len, data, len);
        s->len += len;
        return 0;
}

/* One exchange against @rp's bytes; @each: through the callback, else buffered. */
static int exchange(struct http_client *c,
                    struct reply *rp,
                    bool each,
                    struct http_response *ret,
                    struct seen *seen)
{
        struct http_req req = { .method = "GET", .path = "/x", .timeout_ms = 2000 };
        struct http_sink sink = {
                .on_chunk = on_chunk, .userdata = seen, .cancel_fd = -EBADF, .header = "X-A"
        };
        pthread_t t;
        int r;

        if (pthread_create(&t, NULL, serve, rp) != 0)
                abort();
        r = each ? http_request_each(c, &req, &sink, ret, NULL)
                 : http_request(c, &req, BODY_CAP, "X-A", ret, NULL);
        (void)pthread_join(t, NULL);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct seen seen;
        struct reply rp = { .data = data, .size = size };
        struct http_response buffered = { 0 }, streamed = { 0 };
        struct http_client *c = NULL;
        int rb, rs;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        if (listen_fd < 0) {
                setup();
                (void)atexit(cleanup_socket);
        }
        if (http_client_new(sock_path, &c, NULL) < 0)
                abort();
        rp.listen_fd = listen_fd;
        seen = (struct seen){ 0 };
        rb = exchange(c, &rp, false, &buffered, &seen);
        rs = exchange(c, &rp, true, &streamed, &seen);
        if ((rb < 0 && !transport_error(rb)) || (rs < 0 && !transport_error(rs)))
                abort();
        if (rb == 0 && (buffered.len > BODY_CAP || buffered.body[buffered.len] != '\0'))
                abort();
        if (rb == 0 && rs == 0 &&
            (streamed.len != buffered.len || memcmp(seen.buf, buffered.body, seen.len) != 0 ||
             streamed.body))
                abort();
        check_header(buffered.header_value);
        check_header(streamed.header_value);
        http_response_clear(&buffered);
        http_response_clear(&streamed);
        http_client_free(c);
        return 0;
}
