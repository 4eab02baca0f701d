/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The WebSocket client (src/lib/kube/ws.c) against RFC 6455's vectors and a scripted server
 * (kube-ws-peer.c, its own framing) on 127.0.0.1 through libcurl's connect-only mode, or on
 * a socketpair: the upgrade and its checks (Accept, subprotocol, extensions, a refusal's
 * Status), masking, the three length forms, fragments with control frames between them,
 * ping -> pong, the close handshake both ways and its codes, the caps checked before a
 * payload is read, protocol breaches, timeout, cancel and shutdown.
 */

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "kube-ws-peer.h"
#include "kube/ws.h"

static const char *const v5v4[] = { "v5.channel.k8s.io", "v4.channel.k8s.io", NULL };

/* ---- the pure parts ---- */

static void test_accept_key(void **state)
{
        char out[32];

        /* RFC 6455 1.3 */
        assert_int_equal(kube_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out, sizeof(out)), 0);
        assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        peer_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
        assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_frame_vectors(void **state)
{
        struct kube_ws_frame f;
        uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
        uint8_t b16[] = { 0x82, 0x7e, 0x01, 0x00 };
        uint8_t b64[] = { 0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0 };
        uint8_t head[KUBE_WS_FRAME_HEAD_MAX];

        /* RFC 6455 5.7: a single-frame unmasked text message */
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x81\x05Hello", 7, &f), 2);
        assert_true(f.fin && f.op == KUBE_WS_TEXT && !f.masked && f.len == 5);
        /* a masked one: the key, and unmasking gives "Hello" */
        assert_int_equal(kube_ws_frame_parse(masked, sizeof(masked), &f), 6);
        assert_true(f.masked && f.len == 5);
        kube_ws_mask(masked + 6, 5, f.mask, 0);
        assert_memory_equal(masked + 6, "Hello", 5);
        /* a fragmented text: "Hel" then "lo" */
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x01\x03Hel", 5, &f), 2);
        assert_true(!f.fin && f.op == KUBE_WS_TEXT);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x80\x02lo", 4, &f), 2);
        assert_true(f.fin && f.op == KUBE_WS_CONT);
        /* 256 bytes: the 16-bit form; 64 KiB: the 64-bit form */
        assert_int_equal(kube_ws_frame_parse(b16, sizeof(b16), &f), 4);
        assert_int_equal(f.len, 256);
        assert_int_equal(kube_ws_frame_parse(b64, sizeof(b64), &f), 10);
        assert_int_equal(f.len, 65536);
        /* a ping, unmasked "Hello" */
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x89\x05Hello", 7, &f), 2);
        assert_true(f.op == KUBE_WS_PING);
        /* incomplete heads want more */
        assert_int_equal(kube_ws_frame_parse(b64, 1, &f), 0);
        assert_int_equal(kube_ws_frame_parse(b64, 9, &f), 0);
        assert_int_equal(kube_ws_frame_parse(masked, 5, &f), 0);
        /* never valid: reserved bits, unknown opcodes, fragmented or long control frames,
         * non-minimal lengths, the 64-bit top bit */
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\xc1\x00", 2, &f), -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x83\x00", 2, &f), -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x8b\x00", 2, &f), -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x09\x00", 2, &f), -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x89\x7e\x00\x7e", 4, &f), -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x82\x7e\x00\x05", 4, &f), -EPROTO);
        assert_int_equal(
                kube_ws_frame_parse((const uint8_t *)"\x82\x7f\0\0\0\0\0\0\xff\xff", 10, &f),
                -EPROTO);
        assert_int_equal(kube_ws_frame_parse((const uint8_t *)"\x82\x7f\x80\0\0\0\0\0\0\0", 10, &f),
                         -EPROTO);
        /* the writer's heads parse back */
        for (uint64_t len = 0; len < 70000; len = len * 3 + 1) {
                uint8_t key[4] = { 1, 2, 3, 4 };
                size_t n = kube_ws_frame_head(head, true, KUBE_WS_BINARY, key, len);

                assert_int_equal(kube_ws_frame_parse(head, n, &f), (int)n);
                assert_true(f.len == len && f.masked && !memcmp(f.mask, key, 4));
                assert_int_equal(n, 2 + (len > 125 ? 2 : 0) + (len > 65535 ? 6 : 0) + 4);
        }
        assert_true(kube_ws_close_code_valid(1000) && kube_ws_close_code_valid(4000));
        assert_false(kube_ws_close_code_valid(1005) || kube_ws_close_code_valid(999) ||
                     kube_ws_close_code_valid(1006) || kube_ws_close_code_valid(1015) ||
                     kube_ws_close_code_valid(2000) || kube_ws_close_code_valid(5000));
}

/* ---- a scripted server ---- */

typedef void peer_fn(int fd, struct peer_request *req, void *ctx);

struct server {
        int listen_fd;
        int port;
        peer_fn *fn;
        void *ctx;
        struct peer_request req;
        pthread_t thread;
        char url[64];
};

static void *serve(void *userdata)
{
        struct server *s = userdata;
        int fd = peer_accept(s->listen_fd);

        if (peer_read_request(fd, &s->req) == 0)
                s->fn(fd, &s->req, s->ctx);
        close(fd);
        return NULL;
}

static void server_start(struct server *s, peer_fn *fn, void *ctx)
{
        memset(s, 0, sizeof(*s));
        s->fn = fn;
        s->ctx = ctx;
        s->listen_fd = peer_listen(&s->port);
        (void)snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/prefix/", s->port);
        assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_stop(struct server *s)
{
        assert_int_equal(pthread_join(s->thread, NULL), 0);
        close(s->listen_fd);
}

/* Connect to @s: 0 with *ret, or the error (message in @err). */
static int dial(struct server *s,
                const char *token,
                size_t message_max,
                struct kube_ws **ret,
                struct b4_error *err)
{
        struct kube_conn_opts c = { .server = s->url, .token = token, .timeout_ms = 5000 };
        struct kube_ws_opts o = { .path = "/api/v1/x/exec?command=a%20b",
                                  .protocols = v5v4,
                                  .message_max = message_max,
                                  .cancel_fd = -EBADF };

        return kube_ws_connect(&c, &o, ret, err);
}

/* Read one whole message (chunks of at most @chunk bytes). Return: its length (*ret_err 1),
 * or 0 with *ret_err 0 (closed) or the error. */
static ssize_t read_message(struct kube_ws *ws, char *buf, size_t cap, size_t chunk, int *ret_err)
{
        size_t len = 0;

        for (;;) {
                struct kube_ws_chunk c;
                int r = kube_ws_read(ws, buf + len, chunk < cap - len ? chunk : cap - len,
                                     now_msec() + 5000, -EBADF, &c, NULL);

                if (r <= 0) {
                        *ret_err = r;
                        return r;
                }
                assert_true(c.first == (len == 0) || c.len == 0);
                len += c.len;
                if (c.last) {
                        *ret_err = 1;
                        return (ssize_t)len;
                }
        }
}

/* ---- the upgrade ---- */

static void up_v5(int fd, struct peer_request *req, void *ctx)
{
        peer_upgrade(fd, req, "v5.channel.k8s.io", NULL);
        peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03\xe8", 2);
        struct peer_frame f;
        PEER_CHECK(peer_recv_frame(fd, &f) == 0 && f.op == KUBE_WS_CLOSE && f.len == 2 &&
                   !memcmp(f.data, "\x03\xe8", 2));
        free(f.data);
}

static void test_upgrade_request(void **state)
{
        struct server s;
        struct kube_ws *ws = NULL;
        struct b4_error err = { 0 };
        char v[256], key[64];
        struct kube_ws_chunk c;
        char buf[16];

        server_start(&s, up_v5, NULL);
        assert_int_equal(dial(&s, "tok-123", 0, &ws, &err), 0);
        assert_string_equal(kube_ws_protocol(ws), "v5.channel.k8s.io");
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), 0, -EBADF, &c, NULL), 0);
        assert_int_equal(kube_ws_close_code(ws), 1000);
        kube_ws_free(ws);
        server_stop(&s);
        /* what went on the wire */
        assert_string_equal(s.req.target, "/prefix/api/v1/x/exec?command=a%20b");
        assert_string_equal(peer_header(&s.req, "Upgrade", v, sizeof(v)), "websocket");
        assert_string_equal(peer_header(&s.req, "Connection", v, sizeof(v)), "Upgrade");
        assert_string_equal(peer_header(&s.req, "Sec-WebSocket-Version", v, sizeof(v)), "13");
        assert_string_equal(peer_header(&s.req, "Sec-WebSocket-Protocol", v, sizeof(v)),
                            "v5.channel.k8s.io, v4.channel.k8s.io");
        assert_string_equal(peer_header(&s.req, "Authorization", v, sizeof(v)), "Bearer tok-123");
        assert_non_null(peer_header(&s.req, "Sec-WebSocket-Key", key, sizeof(key)));
        assert_int_equal(strlen(key), 24); /* 16 random bytes, base64 */
        (void)snprintf(key, sizeof(key), "127.0.0.1:%d", s.port);
        assert_string_equal(peer_header(&s.req, "Host", v, sizeof(v)), key);
}

struct bad_answer {
        const char *protocol;
        const char *extra;
        const char *raw;   /* sent instead of the 101 */
        const char *later; /* sent 50 ms after raw (a body in another read) */
        bool wrong_accept;
};

static void up_bad(int fd, struct peer_request *req, void *ctx)
{
        const struct bad_answer *b = ctx;

        if (b->raw) {
                peer_write(fd, b->raw, strlen(b->raw));
                if (b->later) {
                        usleep(50 * 1000);
                        peer_write(fd, b->later, strlen(b->later));
                }
                return;
        }
        if (b->wrong_accept) {
                const char *h = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\n"
                                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGJzzhZRbK+xOo=\r\n"
                                "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n";
                peer_write(fd, h, strlen(h));
                return;
        }
        peer_upgrade(fd, req, b->protocol, b->extra);
}

static int dial_bad(const struct bad_answer *b, struct b4_error *err)
{
        struct server s;
        struct kube_ws *ws = NULL;
        int r;

        server_start(&s, up_bad, (void *)b);
        r = dial(&s, NULL, 0, &ws, err);
        kube_ws_free(ws);
        server_stop(&s);
        return r;
}

static void test_upgrade_refused(void **state)
{
        struct b4_error err = { 0 };
        char head[512];

        /* a wrong Accept, a subprotocol not offered, an extension, no Upgrade header */
        assert_int_equal(dial_bad(&(struct bad_answer){ .wrong_accept = true }, &err), -EPROTO);
        assert_non_null(strstr(err.msg, "Sec-WebSocket-Accept"));
        assert_int_equal(dial_bad(&(struct bad_answer){ .protocol = "v3.channel.k8s.io" }, &err),
                         -EPROTO);
        assert_int_equal(dial_bad(&(struct bad_answer){ .protocol = "v5.channel.k8s.io",
                                                        .extra = "Sec-WebSocket-Extensions: "
                                                                 "permessage-deflate\r\n" },
                                  &err),
                         -EPROTO);
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 101 Switching\r\n"
                                                               "Connection: Upgrade\r\n\r\n" },
                                  &err),
                         -EPROTO);
        /* no subprotocol at all is the ws layer's "" (exec refuses it) */
        struct server s;
        struct kube_ws *ws = NULL;
        server_start(&s, up_bad, &(struct bad_answer){ 0 });
        assert_int_equal(dial(&s, NULL, 0, &ws, &err), 0);
        assert_string_equal(kube_ws_protocol(ws), "");
        kube_ws_free(ws);
        server_stop(&s);
        /* a Status body: its errno and message; Content-Length honoured */
        const char *body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                           "\"status\":\"Failure\",\"message\":\"pods \\\"p\\\" is forbidden: "
                           "User cannot create pods/exec\",\"reason\":\"Forbidden\",\"code\":403}";
        (void)snprintf(head, sizeof(head),
                       "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                       strlen(body), body);
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = head }, &err), -EACCES);
        assert_non_null(strstr(err.msg, "refused the exec upgrade"));
        assert_non_null(strstr(err.msg, "(403 Forbidden)"));
        assert_non_null(strstr(err.msg, "User cannot create pods/exec"));
        /* the body in a later read than the head */
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 404 Not Found\r\n"
                                                               "Content-Length: 61\r\n\r\n",
                                                        .later = "{\"kind\":\"Status\",\"message"
                                                                 "\":\"pods \\\"p\\\" not found\""
                                                                 ",\"code\":404}" },
                                  &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "pods \"p\" not found"));
        /* no body: by the status code; a body that is not a Status too */
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 404 Not Found\r\n"
                                                               "Content-Length: 0\r\n\r\n" },
                                  &err),
                         -ENOENT);
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 400 Bad Request\r\n"
                                                               "\r\nyou must specify at least 1" },
                                  &err),
                         -EINVAL);
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 500 Oops\r\n\r\n" }, &err),
                         -EIO);
        assert_int_equal(
                dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 401 Unauthorized\r\n\r\n" }, &err),
                -EPERM);
        /* not HTTP; a head never ending; a closed connection */
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "SSH-2.0-x\r\n\r\n" }, &err),
                         -EPROTO);
        assert_int_equal(dial_bad(&(struct bad_answer){ .raw = "HTTP/1.1 101 x\r\nUpgrade" }, &err),
                         -ECONNRESET);
}

static void test_bad_options(void **state)
{
        struct kube_ws *ws = NULL;
        struct b4_error err = { 0 };
        struct kube_conn_opts c = { .server = "http://127.0.0.1:1", .token = "a\r\nX-Evil: 1" };
        struct kube_ws_opts o = { .path = "/x", .protocols = v5v4, .cancel_fd = -EBADF };
        int sv[2];

        /* a token or path that would inject a header is refused before anything is sent */
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(kube_ws_connect_fd(sv[0], &c, &o, &ws, &err), -EINVAL);
        close(sv[1]);
        c.token = NULL;
        o.path = "/x\r\nHost: y";
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(kube_ws_connect_fd(sv[0], &c, &o, &ws, &err), -EINVAL);
        close(sv[1]);
        c.server = "ftp://x";
        o.path = "/x";
        assert_int_equal(kube_ws_connect(&c, &o, &ws, &err), -EINVAL);
        /* nobody listening */
        c.server = "http://127.0.0.1:1";
        assert_int_equal(kube_ws_connect(&c, &o, &ws, &err), -ECONNREFUSED);
}

/* ---- framing ---- */

static void echo_peer(int fd, struct peer_request *req, void *ctx)
{
        static char big[70000];
        struct peer_frame f;

        peer_upgrade(fd, req, "v4.channel.k8s.io", NULL);
        /* "Hello" in three fragments, an empty one and control frames between them */
        peer_send_frame(fd, false, KUBE_WS_BINARY, "He", 2);
        peer_send_frame(fd, true, KUBE_WS_PING, "p1", 2);
        peer_send_frame(fd, false, KUBE_WS_CONT, "", 0);
        peer_send_frame(fd, false, KUBE_WS_CONT, "l", 1);
        peer_send_frame(fd, true, KUBE_WS_PONG, "unsolicited", 11);
        peer_send_frame(fd, true, KUBE_WS_CONT, "lo", 2);
        PEER_CHECK(peer_recv_frame(fd, &f) == 0);
        PEER_CHECK(f.op == KUBE_WS_PONG && f.fin && f.len == 2 && !memcmp(f.data, "p1", 2));
        free(f.data);
        /* the three length forms, an empty message */
        memset(big, 'x', sizeof(big));
        big[0] = 'A';
        big[sizeof(big) - 1] = 'Z';
        peer_send_frame(fd, true, KUBE_WS_BINARY, big, 125);
        peer_send_frame(fd, true, KUBE_WS_BINARY, big, 300);
        peer_send_frame(fd, true, KUBE_WS_BINARY, big, sizeof(big));
        peer_send_frame(fd, true, KUBE_WS_BINARY, "", 0);
        /* the client's messages come back masked and whole */
        for (size_t want = 0; want < 4; want++) {
                static const size_t lens[] = { 5, 126, 65535, 65536 };

                PEER_CHECK(peer_recv_frame(fd, &f) == 0);
                PEER_CHECK(f.op == KUBE_WS_BINARY && f.fin && f.len == lens[want]);
                for (size_t i = 0; i < f.len; i++)
                        PEER_CHECK(f.data[i] == (uint8_t)(i * 7));
                free(f.data);
        }
        /* a close with a reason; the reply carries the code */
        peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x0f\xa0going", 7);
        PEER_CHECK(peer_recv_frame(fd, &f) == 0);
        PEER_CHECK(f.op == KUBE_WS_CLOSE && f.len == 2 && !memcmp(f.data, "\x0f\xa0", 2));
        free(f.data);
}

static void test_messages(void **state)
{
        struct server s;
        struct kube_ws *ws = NULL;
        static char buf[80000];
        static uint8_t out[65536];
        int e = 0;

        server_start(&s, echo_peer, NULL);
        assert_int_equal(dial(&s, NULL, 0, &ws, NULL), 0);
        assert_string_equal(kube_ws_protocol(ws), "v4.channel.k8s.io");
        /* read in small pieces: chunks never cross a message */
        assert_int_equal(read_message(ws, buf, sizeof(buf), 1, &e), 5);
        assert_memory_equal(buf, "Hello", 5);
        assert_int_equal(read_message(ws, buf, sizeof(buf), 7, &e), 125);
        assert_int_equal(read_message(ws, buf, sizeof(buf), 100, &e), 300);
        assert_int_equal(read_message(ws, buf, sizeof(buf), sizeof(buf), &e), 70000);
        assert_true(buf[0] == 'A' && buf[69999] == 'Z');
        assert_int_equal(read_message(ws, buf, sizeof(buf), 10, &e), 0);
        assert_int_equal(e, 1); /* an empty message, not the close */
        for (size_t i = 0; i < sizeof(out); i++)
                out[i] = (uint8_t)(i * 7);
        static const size_t lens[] = { 5, 126, 65535, 65536 };
        for (size_t i = 0; i < 4; i++) {
                /* two pieces make one frame */
                struct iovec iov[2] = { { out, 1 }, { out + 1, lens[i] - 1 } };
                assert_int_equal(kube_ws_send(ws, KUBE_WS_BINARY, iov, 2, NULL), 0);
        }
        assert_int_equal(read_message(ws, buf, sizeof(buf), 10, &e), 0);
        assert_int_equal(e, 0);
        assert_int_equal(kube_ws_close_code(ws), 4000);
        /* no data after the close */
        assert_int_equal(kube_ws_send(ws, KUBE_WS_BINARY, &(struct iovec){ out, 1 }, 1, NULL),
                         -EPIPE);
        kube_ws_free(ws);
        server_stop(&s);
}

static void client_close_peer(int fd, struct peer_request *req, void *ctx)
{
        struct peer_frame f;

        peer_upgrade(fd, req, "v5.channel.k8s.io", NULL);
        PEER_CHECK(peer_recv_frame(fd, &f) == 0);
        PEER_CHECK(f.op == KUBE_WS_CLOSE && f.len == 2 && !memcmp(f.data, "\x03\xe8", 2));
        free(f.data);
        /* data already in flight still arrives, then the answer */
        peer_send_frame(fd, true, KUBE_WS_BINARY, "late", 4);
        peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03\xe8", 2);
        /* and nothing more from the client (it answered already) */
        PEER_CHECK(peer_recv_frame(fd, &f) == -1);
}

static void test_client_close(void **state)
{
        struct server s;
        struct kube_ws *ws = NULL;
        char buf[16];
        int e = 0;

        server_start(&s, client_close_peer, NULL);
        assert_int_equal(dial(&s, NULL, 0, &ws, NULL), 0);
        assert_int_equal(kube_ws_close(ws, 1000, NULL), 0);
        assert_int_equal(kube_ws_close(ws, 1000, NULL), 0); /* once */
        assert_int_equal(read_message(ws, buf, sizeof(buf), 16, &e), 4);
        assert_int_equal(read_message(ws, buf, sizeof(buf), 16, &e), 0);
        assert_int_equal(kube_ws_close_code(ws), 1000);
        kube_ws_shutdown(ws);
        kube_ws_free(ws);
        server_stop(&s);
}

/* ---- breaches and caps ---- */

enum breach {
        OVERSIZED_FRAME,
        OVERSIZED_FRAGMENTS,
        MASKED,
        CONT_FIRST,
        NESTED,
        BAD_CLOSE_CODE,
        CLOSE_ONE_BYTE,
        CLOSE_BAD_UTF8,
        EOF_NO_CLOSE,
        RESERVED_BIT,
};

static void breach_peer(int fd, struct peer_request *req, void *ctx)
{
        enum breach b = *(enum breach *)ctx;
        char junk[600] = { 0 };

        peer_upgrade(fd, req, "v5.channel.k8s.io", NULL);
        switch (b) {
        case OVERSIZED_FRAME:
                /* the head alone: the client must refuse before wanting the payload */
                peer_write(fd, "\x82\x7e\x07\xd0", 4);
                break;
        case OVERSIZED_FRAGMENTS:
                peer_send_frame(fd, false, KUBE_WS_BINARY, junk, 600);
                peer_send_frame(fd, true, KUBE_WS_CONT, junk, 600);
                break;
        case MASKED:
                peer_send_masked(fd, true, KUBE_WS_BINARY, "x", 1);
                break;
        case CONT_FIRST:
                peer_send_frame(fd, true, KUBE_WS_CONT, "x", 1);
                break;
        case NESTED:
                peer_send_frame(fd, false, KUBE_WS_BINARY, "x", 1);
                peer_send_frame(fd, true, KUBE_WS_BINARY, "y", 1);
                break;
        case BAD_CLOSE_CODE:
                peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03\xed", 2); /* 1005 */
                break;
        case CLOSE_ONE_BYTE:
                peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03", 1);
                break;
        case CLOSE_BAD_UTF8:
                peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03\xe8\xff", 3);
                break;
        case EOF_NO_CLOSE:
                peer_send_frame(fd, true, KUBE_WS_BINARY, "x", 1);
                return; /* and hang up */
        case RESERVED_BIT:
                peer_write(fd, "\xc2\x01x", 3);
                break;
        }
        /* wait for the client to hang up */
        if (read(fd, junk, sizeof(junk)) < 0)
                return;
}

static int breach(enum breach b, struct b4_error *err)
{
        struct server s;
        struct kube_ws *ws = NULL;
        char buf[2048];
        int e = 0;

        server_start(&s, breach_peer, &b);
        assert_int_equal(dial(&s, NULL, 1000, &ws, NULL), 0);
        do
                (void)read_message(ws, buf, sizeof(buf), sizeof(buf), &e);
        while (e > 0);
        /* an error sticks */
        if (e < 0) {
                struct kube_ws_chunk c;
                assert_int_equal(kube_ws_read(ws, buf, 1, 0, -EBADF, &c, err), e);
        }
        kube_ws_free(ws);
        server_stop(&s);
        return e;
}

static void test_breaches(void **state)
{
        struct b4_error err = { 0 };

        assert_int_equal(breach(OVERSIZED_FRAME, &err), -EMSGSIZE);
        assert_int_equal(breach(OVERSIZED_FRAGMENTS, &err), -EMSGSIZE);
        assert_int_equal(breach(MASKED, &err), -EPROTO);
        assert_int_equal(breach(CONT_FIRST, &err), -EPROTO);
        assert_int_equal(breach(NESTED, &err), -EPROTO);
        assert_int_equal(breach(BAD_CLOSE_CODE, &err), -EPROTO);
        assert_int_equal(breach(CLOSE_ONE_BYTE, &err), -EPROTO);
        assert_int_equal(breach(CLOSE_BAD_UTF8, &err), -EPROTO);
        assert_int_equal(breach(EOF_NO_CLOSE, &err), -ECONNRESET);
        assert_int_equal(breach(RESERVED_BIT, &err), -EPROTO);
}

/* ---- time, cancel, shutdown ---- */

static void slow_peer(int fd, struct peer_request *req, void *ctx)
{
        int *go = ctx;
        char c;

        peer_upgrade(fd, req, "v5.channel.k8s.io", NULL);
        PEER_CHECK(read(go[0], &c, 1) == 1); /* the test says when */
        peer_send_frame(fd, true, KUBE_WS_BINARY, "late", 4);
        PEER_CHECK(read(go[0], &c, 1) == 1);
}

static void *shut_later(void *userdata)
{
        usleep(50 * 1000);
        kube_ws_shutdown(userdata);
        return NULL;
}

static void test_deadline_cancel_shutdown(void **state)
{
        struct server s;
        struct kube_ws *ws = NULL;
        struct kube_ws_chunk c;
        char buf[16];
        int go[2], cancel[2];
        uint64_t t0;
        pthread_t t;

        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(cancel), 0);
        server_start(&s, slow_peer, go);
        assert_int_equal(dial(&s, NULL, 0, &ws, NULL), 0);
        t0 = now_msec();
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), now_msec() + 100, -EBADF, &c, NULL),
                         -ETIMEDOUT);
        assert_true(now_msec() - t0 >= 100 && now_msec() - t0 < 2000);
        assert_int_equal(write(cancel[1], "x", 1), 1);
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), 0, cancel[0], &c, NULL), -ECANCELED);
        /* still usable after both */
        assert_int_equal(write(go[1], "x", 1), 1);
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), now_msec() + 5000, -EBADF, &c, NULL),
                         1);
        assert_true(c.len == 4 && c.first && c.last && !memcmp(buf, "late", 4));
        /* a shutdown from another thread ends a blocked read */
        assert_int_equal(pthread_create(&t, NULL, shut_later, ws), 0);
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), now_msec() + 5000, -EBADF, &c, NULL),
                         -ECONNRESET);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(kube_ws_send(ws, KUBE_WS_BINARY, &(struct iovec){ buf, 1 }, 1, NULL),
                         -EPIPE);
        assert_int_equal(write(go[1], "x", 1), 1);
        kube_ws_free(ws);
        server_stop(&s);
        close(go[0]);
        close(go[1]);
        close(cancel[0]);
        close(cancel[1]);
}

/* A listening socket nobody accepts on (the kernel completes the TCP handshake): the
 * upgrade's deadline and cancel fd. */
static void test_upgrade_deadline_cancel(void **state)
{
        struct kube_ws *ws = NULL;
        struct b4_error err = { 0 };
        int port, cancel[2];
        int lfd = peer_listen(&port);
        char url[64];
        uint64_t t0;

        (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
        assert_int_equal(pipe(cancel), 0);
        t0 = now_msec();
        assert_int_equal(
                kube_ws_connect(&(struct kube_conn_opts){ .server = url, .timeout_ms = 200 },
                                &(struct kube_ws_opts){
                                        .path = "/x", .protocols = v5v4, .cancel_fd = -EBADF },
                                &ws, &err),
                -ETIMEDOUT);
        assert_true(now_msec() - t0 >= 200 && now_msec() - t0 < 3000);
        assert_int_equal(write(cancel[1], "x", 1), 1);
        t0 = now_msec();
        assert_int_equal(kube_ws_connect(&(struct kube_conn_opts){ .server = url },
                                         &(struct kube_ws_opts){ .path = "/x",
                                                                 .protocols = v5v4,
                                                                 .cancel_fd = cancel[0] },
                                         &ws, &err),
                         -ECANCELED);
        assert_true(now_msec() - t0 < 3000);
        close(lfd);
        close(cancel[0]);
        close(cancel[1]);
}

/* ---- a socketpair instead of libcurl ---- */

static void *pair_peer(void *userdata)
{
        int fd = *(int *)userdata;
        struct peer_request req;

        PEER_CHECK(peer_read_request(fd, &req) == 0);
        PEER_CHECK(!strcmp(req.target, "/api/v1/x"));
        up_v5(fd, &req, NULL);
        close(fd);
        return NULL;
}

static void test_socketpair(void **state)
{
        struct kube_conn_opts c = { .server = "https://kube.example:6443" };
        struct kube_ws_opts o = { .path = "/api/v1/x", .protocols = v5v4, .cancel_fd = -EBADF };
        struct kube_ws *ws = NULL;
        struct kube_ws_chunk ch;
        char buf[8];
        pthread_t t;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pthread_create(&t, NULL, pair_peer, &sv[1]), 0);
        assert_int_equal(kube_ws_connect_fd(sv[0], &c, &o, &ws, NULL), 0);
        assert_int_equal(kube_ws_read(ws, buf, sizeof(buf), 0, -EBADF, &ch, NULL), 0);
        kube_ws_free(ws);
        assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accept_key),
                cmocka_unit_test(test_frame_vectors),
                cmocka_unit_test(test_upgrade_request),
                cmocka_unit_test(test_upgrade_refused),
                cmocka_unit_test(test_bad_options),
                cmocka_unit_test(test_messages),
                cmocka_unit_test(test_client_close),
                cmocka_unit_test(test_breaches),
                cmocka_unit_test(test_deadline_cancel_shutdown),
                cmocka_unit_test(test_upgrade_deadline_cancel),
                cmocka_unit_test(test_socketpair),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
