/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP client against a scripted server (a thread on a unix socket or 127.0.0.1): the
 * target forms, the bearer token, header parsing (interim responses, case, whitespace),
 * chunked bodies, the body cap, the per-chunk callback, cancel and the head timeout.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "http/http.h"

struct server {
        int listen_fd;
        int stop[2];       /* written by the test: a hanging answer ends */
        const char *reply; /* raw bytes sent once the request is in */
        bool hang;         /* after the reply, keep the connection open until stop */
        char request[8192];
        char target[128];
        pthread_t thread;
};

/* Read the request head and its Content-Length body. */
static void read_request(struct server *s, int fd)
{
        size_t len = 0, want = 0;
        char *end;

        while (len < sizeof(s->request) - 1) {
                ssize_t k = read(fd, s->request + len, sizeof(s->request) - 1 - len);
                if (k <= 0)
                        break;
                len += (size_t)k;
                s->request[len] = '\0';
                end = strstr(s->request, "\r\n\r\n");
                if (!end)
                        continue;
                const char *cl = strcasestr(s->request, "Content-Length:");
                want = (size_t)(end + 4 - s->request) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
                if (len >= want)
                        break;
        }
}

static void *serve_one(void *userdata)
{
        struct server *s = userdata;
        struct pollfd p = { .fd = s->stop[0], .events = POLLIN };
        int fd = accept(s->listen_fd, NULL, NULL);

        if (fd < 0)
                return NULL;
        read_request(s, fd);
        if (s->reply)
                (void)send(fd, s->reply, strlen(s->reply), MSG_NOSIGNAL);
        if (s->hang)
                (void)poll(&p, 1, 10000);
        (void)close(fd);
        return NULL;
}

static void server_start(struct server *s, const char *reply, bool hang, bool tcp)
{
        *s = (struct server){ .reply = reply, .hang = hang };
        assert_int_equal(pipe(s->stop), 0);
        if (tcp) {
                struct sockaddr_in sa = { .sin_family = AF_INET,
                                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                socklen_t n = sizeof(sa);
                s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
                assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *)&sa, &n), 0);
                (void)snprintf(s->target, sizeof(s->target), "http://127.0.0.1:%u/base/",
                               ntohs(sa.sin_port));
        } else {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                (void)snprintf(s->target, sizeof(s->target), "unix:/tmp/b4-test-http-%d.sock",
                               (int)getpid());
                (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->target + 5);
                (void)unlink(sa.sun_path);
                s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        }
        assert_int_equal(listen(s->listen_fd, 4), 0);
        assert_int_equal(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

static void server_stop(struct server *s)
{
        (void)!write(s->stop[1], "x", 1);
        (void)shutdown(s->listen_fd, SHUT_RDWR); /* an accept() still waiting returns */
        (void)pthread_join(s->thread, NULL);
        (void)close(s->listen_fd);
        (void)close(s->stop[0]);
        (void)close(s->stop[1]);
        if (strncmp(s->target, "unix:", 5) == 0)
                (void)unlink(s->target + 5);
}

static struct http_client *client(const char *target)
{
        struct http_client *c = NULL;

        assert_int_equal(http_client_new(target, &c, NULL), 0);
        return c;
}

static void test_target_forms(void **state)
{
        static const char *const bad[] = { "ftp://h/", "relative", "unix:relative", "", NULL };
        struct http_client *c;
        struct b4_error err = { 0 };

        c = client("/run/x.sock");
        assert_string_equal(http_client_socket(c), "/run/x.sock");
        http_client_free(c);
        c = client("unix:/run/x.sock");
        assert_string_equal(http_client_socket(c), "/run/x.sock");
        assert_string_equal(http_client_target(c), "unix:/run/x.sock");
        http_client_free(c);
        c = client("https://api.example:6443/");
        assert_null(http_client_socket(c));
        http_client_free(c);
        for (size_t i = 0; bad[i]; i++) {
                c = NULL;
                assert_int_equal(http_client_new(bad[i], &c, &err), -EINVAL);
                assert_null(c);
                assert_non_null(strstr(err.msg, "http(s)://"));
        }
        assert_int_equal(http_client_new(NULL, &c, &err), -EINVAL);
}

/*
 * An interim 100 response's headers are dropped; names match in any case; values lose
 * their surrounding whitespace; the token and the body go out as sent.
 */
static void test_headers_and_token(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_response r = { 0 };
        struct http_req req = { .method = "POST",
                                .path = "/v1/x?y=1",
                                .content_type = "application/json",
                                .body = "{\"a\":1}",
                                .body_len = 7 };

        server_start(&s,
                     "HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n"
                     "HTTP/1.1 429 Too Many Requests\r\nretry-AFTER: \t 7 \t\r\nX-Empty:\r\n"
                     "Content-Length: 5\r\n\r\nhello",
                     false, false);
        c = client(s.target);
        assert_int_equal(http_client_set_token(c, "tok-123"), 0);
        assert_int_equal(http_request(c, &req, 100, "Retry-After", &r, NULL), 0);
        server_stop(&s);
        assert_int_equal(r.status, 429);
        assert_string_equal(r.header_value, "7");
        assert_int_equal(r.len, 5);
        assert_string_equal(r.body, "hello");
        assert_non_null(strstr(s.request, "POST /v1/x?y=1 HTTP/1.1\r\n"));
        assert_non_null(strstr(s.request, "\r\nAuthorization: Bearer tok-123\r\n"));
        assert_non_null(strstr(s.request, "\r\nContent-Type: application/json\r\n"));
        assert_non_null(strstr(s.request, "\r\n\r\n{\"a\":1}"));
        http_response_clear(&r);
        assert_int_equal(http_request(c, &req, 100, NULL, &r, NULL), -ECONNREFUSED);
        assert_int_equal(http_client_set_token(c, "bad\r\nX-Injected: 1"), -EINVAL);
        http_client_free(c);
}

static void test_header_lookup(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_stream *st = NULL;
        struct http_req req = { .method = "GET", .path = "/" };

        server_start(&s,
                     "HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nX-Empty:\r\nX-A:  one  \r\nX-B: a\rb\r\n"
                     "Content-Length: 0\r\n\r\n",
                     false, false);
        c = client(s.target);
        assert_int_equal(http_stream_open(c, &req, -EBADF, &st, NULL), 0);
        assert_int_equal(http_stream_status(st), 200);
        assert_string_equal(http_stream_header(st, "x-a"), "one");
        assert_string_equal(http_stream_header(st, "X-B"), "a b"); /* a bare CR is a space */
        assert_string_equal(http_stream_header(st, "X-Empty"), "");
        assert_null(http_stream_header(st, "X-Interim"));
        assert_null(http_stream_header(st, "X"));
        http_stream_free(st);
        server_stop(&s);
        http_client_free(c);
}

/* A chunked body arrives whole, over TCP with the URL's path prefix. */
static void test_chunked_over_tcp(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_response r = { 0 };
        struct http_req req = { .method = "GET", .path = "/x" };

        server_start(&s,
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n",
                     false, true);
        c = client(s.target);
        assert_null(http_client_socket(c));
        assert_int_equal(http_request(c, &req, 5, NULL, &r, NULL), 0);
        server_stop(&s);
        assert_non_null(strstr(s.request, "GET /base/x HTTP/1.1\r\n"));
        assert_null(strstr(s.request, "Authorization"));
        assert_int_equal(r.len, 5);
        assert_string_equal(r.body, "abcde");
        http_response_clear(&r);
        http_client_free(c);
}

/* One byte over the cap fails -EFBIG; a Content-Length over it fails before the body. */
static void test_body_cap(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_response r = { 0 };
        struct http_req req = { .method = "GET", .path = "/", .timeout_ms = 5000 };
        struct b4_error err = { 0 };
        uint64_t t0;

        server_start(
                &s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n0\r\n\r\n",
                false, false);
        c = client(s.target);
        assert_int_equal(http_request(c, &req, 5, NULL, &r, &err), -EFBIG);
        assert_non_null(strstr(err.msg, "larger than 5 bytes"));
        assert_null(r.body);
        server_stop(&s);
        http_client_free(c);

        server_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nab", true, false);
        c = client(s.target);
        t0 = now_msec();
        assert_int_equal(http_request(c, &req, 10, NULL, &r, &err), -EFBIG);
        assert_true(now_msec() - t0 < 4000); /* not the timeout */
        server_stop(&s);
        http_client_free(c);
}

struct chunks {
        char buf[64];
        size_t len;
        unsigned calls;
        int stop_with;
        long status;
};

static int on_chunk(long status, const void *data, size_t len, void *userdata)
{
        struct chunks *ch = userdata;

        ch->calls++;
        ch->status = status;
        if (ch->stop_with)
                return ch->stop_with;
        assert_true(ch->len + len < sizeof(ch->buf));
        memcpy(ch->buf + ch->len, data, len);
        ch->len += len;
        return 0;
}

static void test_each(void **state)
{
        static const char reply[] = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n"
                                    "X-Id: 9\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        struct server s;
        struct http_client *c;
        struct http_response r = { 0 };
        struct http_req req = { .method = "GET", .path = "/watch" };
        struct chunks ch = { 0 };
        struct http_sink sink = {
                .on_chunk = on_chunk, .userdata = &ch, .cancel_fd = -EBADF, .header = "X-Id"
        };

        server_start(&s, reply, false, false);
        c = client(s.target);
        assert_int_equal(http_request_each(c, &req, &sink, &r, NULL), 0);
        server_stop(&s);
        assert_int_equal(r.status, 404);
        assert_int_equal(ch.status, 404);
        assert_string_equal(r.header_value, "9");
        assert_null(r.body);
        assert_int_equal(r.len, 7);
        assert_memory_equal(ch.buf, "{\"a\":1}", 7);
        http_response_clear(&r);

        ch = (struct chunks){ .stop_with = -EPIPE };
        server_start(&s, reply, true, false);
        sink.header = NULL;
        assert_int_equal(http_request_each(c, &req, &sink, &r, NULL), -EPIPE);
        assert_int_equal(ch.calls, 1);
        server_stop(&s);
        http_client_free(c);
}

/* A body that never ends stops when the cancel fd fires; a head that never comes times out. */
static void test_cancel_and_timeout(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_response r = { 0 };
        struct http_req req = { .method = "GET", .path = "/" };
        struct chunks ch = { 0 };
        struct http_sink sink = { .on_chunk = on_chunk, .userdata = &ch };
        int cancel[2];
        uint64_t t0;

        assert_int_equal(pipe(cancel), 0);
        sink.cancel_fd = cancel[0];
        assert_int_equal(write(cancel[1], "x", 1), 1);
        server_start(&s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n", true,
                     false);
        c = client(s.target);
        assert_int_equal(http_request_each(c, &req, &sink, &r, NULL), -ECANCELED);
        server_stop(&s);
        http_client_free(c);

        server_start(&s, NULL, true, false);
        c = client(s.target);
        req.timeout_ms = 200;
        t0 = now_msec();
        assert_int_equal(http_request(c, &req, 10, NULL, &r, NULL), -ETIMEDOUT);
        assert_true(now_msec() - t0 < 3000);
        server_stop(&s);
        http_client_free(c);
        (void)close(cancel[0]);
        (void)close(cancel[1]);
}

/* A complete head then a body cut short: the stream opens, the bytes that came are read,
 * then the read fails (not the open: a watch keeps the events it got). */
static void test_cut_body(void **state)
{
        struct server s;
        struct http_client *c;
        struct http_stream *st = NULL;
        struct http_req req = { .method = "GET", .path = "/" };
        char buf[64];

        (void)state;
        server_start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", false, true);
        c = client(s.target);
        assert_int_equal(http_stream_open(c, &req, -EBADF, &st, NULL), 0);
        assert_int_equal(http_stream_status(st), 200);
        assert_int_equal(http_stream_read(st, buf, sizeof(buf), 0, -EBADF, NULL), 5);
        assert_memory_equal(buf, "hello", 5);
        assert_int_equal(http_stream_read(st, buf, sizeof(buf), 0, -EBADF, NULL), -EIO);
        http_stream_free(st);
        server_stop(&s);
        http_client_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_target_forms),       cmocka_unit_test(test_headers_and_token),
                cmocka_unit_test(test_header_lookup),      cmocka_unit_test(test_chunked_over_tcp),
                cmocka_unit_test(test_body_cap),           cmocka_unit_test(test_each),
                cmocka_unit_test(test_cancel_and_timeout), cmocka_unit_test(test_cut_body),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
