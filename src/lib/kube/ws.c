/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 6455 over libcurl's connect-only mode (ws.h). Three parts: the byte pipe (curl's
 * send/recv, or a plain socket for tests), the upgrade (request, 101 checks, a refusal's
 * Status), and the framing (the reader's state machine, the senders' masked frames and the
 * control frames the reader owes).
 */

#include "ws.h"

#include <curl/curl.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "http/http.h"
#include "kube/kube.h"

#define RBUF_SIZE       (64u * 1024) /* read-ahead; holds the response head too */
#define MASK_POOL       256u         /* random bytes fetched at once for masking keys */
#define CONTROL_WAIT_MS 1000u        /* for a control frame the reader owes to go out */
#define WS_GUID         "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct kube_ws {
        CURL *curl;                /* NULL: a plain socket (kube_ws_connect_fd) */
        int fd;                    /* the socket polled on; owned only without curl */
        pthread_mutex_t io_lock;   /* curl's handle (and its TLS state) is one caller's at a time */
        pthread_mutex_t send_lock; /* one frame at a time on the wire */
        pthread_mutex_t ctl_lock;  /* the control frame owed, close_sent */
        bool ctl_pending;
        uint8_t ctl_op;
        uint8_t ctl_payload[KUBE_WS_CONTROL_MAX];
        size_t ctl_len;
        bool close_sent; /* a close is queued or written: no data after it */
        bool close_written;
        atomic_bool shut;
        uint8_t mask_pool[MASK_POOL]; /* under send_lock */
        size_t mask_off;
        char protocol[64];
        /* the reader's */
        uint8_t *rbuf;
        size_t rlen, roff;
        size_t message_max;
        bool in_msg;
        uint8_t msg_op;
        uint64_t msg_len;
        bool first_pending;
        uint64_t frame_left;
        bool frame_fin;
        bool closed;
        int dead; /* the error every read repeats once the stream is unusable */
        uint16_t close_code;
};

/* ---- the byte pipe ---- */

static ssize_t pipe_recv(struct kube_ws *ws, void *buf, size_t len)
{
        ssize_t r;

        (void)pthread_mutex_lock(&ws->io_lock);
        if (ws->curl) {
                size_t n = 0;
                CURLcode c = curl_easy_recv(ws->curl, buf, len, &n);

                r = c == CURLE_OK ? (ssize_t)n : c == CURLE_AGAIN ? -EAGAIN : -ECONNRESET;
        } else {
                r = recv(ws->fd, buf, len, MSG_DONTWAIT);
                if (r < 0)
                        r = errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
        }
        (void)pthread_mutex_unlock(&ws->io_lock);
        return r;
}

static ssize_t pipe_send(struct kube_ws *ws, const void *buf, size_t len)
{
        ssize_t r;

        (void)pthread_mutex_lock(&ws->io_lock);
        if (ws->curl) {
                size_t n = 0;
                CURLcode c = curl_easy_send(ws->curl, buf, len, &n);

                r = c == CURLE_OK ? (ssize_t)n : c == CURLE_AGAIN ? -EAGAIN : -EPIPE;
        } else {
                r = send(ws->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (r < 0)
                        r = errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
        }
        (void)pthread_mutex_unlock(&ws->io_lock);
        return r;
}

/* Wait for @events on the socket: 0, -ETIMEDOUT, -ECANCELED, -ECONNRESET (shut down). */
static int pipe_wait(struct kube_ws *ws, short events, uint64_t deadline_ms, int cancel_fd)
{
        struct pollfd p[2] = { { .fd = ws->fd, .events = events },
                               { .fd = cancel_fd, .events = POLLIN } };

        for (;;) {
                int timeout = -1, n;

                if (atomic_load(&ws->shut))
                        return -ECONNRESET;
                if (deadline_ms) {
                        uint64_t now = now_msec();

                        if (now >= deadline_ms)
                                return -ETIMEDOUT;
                        timeout = deadline_ms - now > INT32_MAX ? INT32_MAX
                                                                : (int)(deadline_ms - now);
                }
                n = poll(p, cancel_fd >= 0 ? 2 : 1, timeout);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (cancel_fd >= 0 && p[1].revents)
                        return -ECANCELED;
                if (p[0].revents)
                        return 0;
        }
}

/* All of @len bytes: 0, -EPIPE (shut down or refused), -ETIMEDOUT, -ECANCELED. */
static int pipe_send_all(
        struct kube_ws *ws, const void *buf, size_t len, uint64_t deadline_ms, int cancel_fd)
{
        const uint8_t *p = buf;

        while (len > 0) {
                ssize_t n = pipe_send(ws, p, len);
                int r;

                if (n == -EAGAIN) {
                        r = pipe_wait(ws, POLLOUT, deadline_ms, cancel_fd);
                        if (r < 0)
                                return r == -ECONNRESET ? -EPIPE : r;
                        continue;
                }
                if (n <= 0)
                        return -EPIPE;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* More bytes into the read-ahead: 0, -ECONNRESET (end of stream), -ETIMEDOUT, -ECANCELED,
 * -ENOBUFS (the buffer is full: only the head reader can get there). */
static int fill(struct kube_ws *ws, uint64_t deadline_ms, int cancel_fd)
{
        if (ws->roff > 0) {
                memmove(ws->rbuf, ws->rbuf + ws->roff, ws->rlen - ws->roff);
                ws->rlen -= ws->roff;
                ws->roff = 0;
        }
        if (ws->rlen == RBUF_SIZE)
                return -ENOBUFS;
        for (;;) {
                ssize_t n = pipe_recv(ws, ws->rbuf + ws->rlen, RBUF_SIZE - ws->rlen);
                int r;

                if (n > 0) {
                        ws->rlen += (size_t)n;
                        return 0;
                }
                if (n != -EAGAIN)
                        return -ECONNRESET;
                r = pipe_wait(ws, POLLIN, deadline_ms, cancel_fd);
                if (r < 0)
                        return r;
        }
}

/* ---- the framing ---- */

int kube_ws_frame_parse(const uint8_t *p, size_t n, struct kube_ws_frame *ret)
{
        struct kube_ws_frame f = { 0 };
        uint8_t len7;
        size_t need = 2;

        if (n < 2)
                return 0;
        f.fin = p[0] & 0x80;
        f.rsv = (p[0] >> 4) & 7;
        f.op = p[0] & 0x0f;
        f.masked = p[1] & 0x80;
        len7 = p[1] & 0x7f;
        if (f.rsv)
                return -EPROTO;
        switch (f.op) {
        case KUBE_WS_CONT:
        case KUBE_WS_TEXT:
        case KUBE_WS_BINARY:
                break;
        case KUBE_WS_CLOSE:
        case KUBE_WS_PING:
        case KUBE_WS_PONG:
                if (!f.fin || len7 > KUBE_WS_CONTROL_MAX)
                        return -EPROTO;
                break;
        default:
                return -EPROTO;
        }
        need += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
        need += f.masked ? 4 : 0;
        if (n < need)
                return 0;
        if (len7 == 126) {
                f.len = (uint64_t)p[2] << 8 | p[3];
                if (f.len < 126)
                        return -EPROTO;
        } else if (len7 == 127) {
                for (int i = 0; i < 8; i++)
                        f.len = f.len << 8 | p[2 + i];
                if (f.len >> 63 || f.len <= 0xffff)
                        return -EPROTO;
        } else {
                f.len = len7;
        }
        if (f.masked)
                memcpy(f.mask, p + need - 4, 4);
        f.head_len = need;
        *ret = f;
        return (int)need;
}

size_t kube_ws_frame_head(uint8_t *out, bool fin, uint8_t op, const uint8_t *mask, uint64_t len)
{
        size_t n = 2;

        out[0] = (uint8_t)((fin ? 0x80 : 0) | (op & 0x0f));
        out[1] = mask ? 0x80 : 0;
        if (len < 126) {
                out[1] |= (uint8_t)len;
        } else if (len <= 0xffff) {
                out[1] |= 126;
                out[2] = (uint8_t)(len >> 8);
                out[3] = (uint8_t)len;
                n = 4;
        } else {
                out[1] |= 127;
                for (int i = 0; i < 8; i++)
                        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
                n = 10;
        }
        if (mask) {
                memcpy(out + n, mask, 4);
                n += 4;
        }
        return n;
}

void kube_ws_mask(uint8_t *p, size_t len, const uint8_t mask[4], uint64_t offset)
{
        for (size_t i = 0; i < len; i++)
                p[i] ^= mask[(offset + i) & 3];
}

bool kube_ws_close_code_valid(uint16_t code)
{
        if (code >= 3000 && code <= 4999)
                return true;
        return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

/* A masking key from the pool (refilled from getrandom): send_lock held. */
static int next_mask(struct kube_ws *ws, uint8_t mask[4])
{
        if (ws->mask_off == 0 || ws->mask_off + 4 > MASK_POOL) {
                ssize_t n = getrandom(ws->mask_pool, MASK_POOL, 0);

                if (n != (ssize_t)MASK_POOL)
                        return -EIO;
                ws->mask_off = 0;
        }
        memcpy(mask, ws->mask_pool + ws->mask_off, 4);
        ws->mask_off += 4;
        if (ws->mask_off + 4 > MASK_POOL)
                ws->mask_off = 0;
        return 0;
}

/* One masked frame of @op from the pieces of @iov: send_lock held. */
static int write_frame(
        struct kube_ws *ws, uint8_t op, const struct iovec *iov, size_t n, uint64_t deadline_ms)
{
        cleanup_free uint8_t *frame = NULL;
        uint8_t mask[4];
        size_t len = 0, off;
        int r;

        for (size_t i = 0; i < n; i++) {
                if (iov[i].iov_len > SIZE_MAX / 2 - len - KUBE_WS_FRAME_HEAD_MAX)
                        return -EINVAL;
                len += iov[i].iov_len;
        }
        r = next_mask(ws, mask);
        if (r < 0)
                return r;
        frame = b4_malloc(KUBE_WS_FRAME_HEAD_MAX + len);
        if (!frame)
                return -ENOMEM;
        off = kube_ws_frame_head(frame, true, op, mask, len);
        for (size_t i = 0; i < n; i++) {
                if (iov[i].iov_len == 0)
                        continue;
                memcpy(frame + off, iov[i].iov_base, iov[i].iov_len);
                off += iov[i].iov_len;
        }
        kube_ws_mask(frame + off - len, len, mask, 0);
        return pipe_send_all(ws, frame, off, deadline_ms, -EBADF);
}

/* Write the control frame owed, if any: send_lock held. A pong after our close is dropped. */
static void flush_control(struct kube_ws *ws)
{
        uint8_t payload[KUBE_WS_CONTROL_MAX], op;
        size_t len;

        (void)pthread_mutex_lock(&ws->ctl_lock);
        if (!ws->ctl_pending || (ws->close_written && ws->ctl_op != KUBE_WS_CLOSE)) {
                ws->ctl_pending = false;
                (void)pthread_mutex_unlock(&ws->ctl_lock);
                return;
        }
        op = ws->ctl_op;
        len = ws->ctl_len;
        memcpy(payload, ws->ctl_payload, len);
        ws->ctl_pending = false;
        if (op == KUBE_WS_CLOSE)
                ws->close_written = true;
        (void)pthread_mutex_unlock(&ws->ctl_lock);
        /* bounded: a server that pings without reading cannot hold the reader; a frame that
         * did not go out whole leaves the stream unusable (the next read or send says so) */
        if (write_frame(ws, op, &(struct iovec){ payload, len }, 1, now_msec() + CONTROL_WAIT_MS) <
            0)
                kube_ws_shutdown(ws);
}

/* Release the send side, writing whatever control frame was queued meanwhile. */
static void send_unlock(struct kube_ws *ws)
{
        for (;;) {
                bool again;

                flush_control(ws);
                (void)pthread_mutex_unlock(&ws->send_lock);
                (void)pthread_mutex_lock(&ws->ctl_lock);
                again = ws->ctl_pending;
                (void)pthread_mutex_unlock(&ws->ctl_lock);
                if (!again || pthread_mutex_trylock(&ws->send_lock) != 0)
                        return;
        }
}

/* Queue a control frame; a close replaces anything, nothing replaces a close. Written now
 * when the send side is free, else by its holder right after its frame: never waited for,
 * so neither the reader nor a closer can hang behind a sender stuck in backpressure. */
static void queue_control(struct kube_ws *ws, uint8_t op, const void *p, size_t len)
{
        (void)pthread_mutex_lock(&ws->ctl_lock);
        if (!(ws->ctl_pending && ws->ctl_op == KUBE_WS_CLOSE)) {
                ws->ctl_pending = true;
                ws->ctl_op = op;
                ws->ctl_len = len;
                if (len)
                        memcpy(ws->ctl_payload, p, len);
        }
        (void)pthread_mutex_unlock(&ws->ctl_lock);
        if (pthread_mutex_trylock(&ws->send_lock) != 0)
                return;
        send_unlock(ws);
}

int kube_ws_send(struct kube_ws *ws,
                 enum kube_ws_opcode op,
                 const struct iovec *iov,
                 size_t n,
                 struct b4_error *err)
{
        bool closing;
        size_t len = 0;
        int r;

        for (size_t i = 0; i < n; i++)
                len += iov[i].iov_len;
        if (op == KUBE_WS_CONT || op == KUBE_WS_CLOSE ||
            ((op == KUBE_WS_PING || op == KUBE_WS_PONG) && len > KUBE_WS_CONTROL_MAX))
                return b4_error_set(err, -EINVAL, "invalid WebSocket message");
        (void)pthread_mutex_lock(&ws->ctl_lock);
        closing = ws->close_sent;
        (void)pthread_mutex_unlock(&ws->ctl_lock);
        if (closing || atomic_load(&ws->shut))
                return b4_error_set(err, -EPIPE, "the WebSocket is closed");
        (void)pthread_mutex_lock(&ws->send_lock);
        r = write_frame(ws, op, iov, n, 0);
        send_unlock(ws);
        if (r < 0)
                return b4_error_set(err, r, "WebSocket send failed: %s", strerror(-r));
        return 0;
}

int kube_ws_close(struct kube_ws *ws, uint16_t code, struct b4_error *err)
{
        uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };

        if (!kube_ws_close_code_valid(code))
                return b4_error_set(err, -EINVAL, "invalid WebSocket close code %u", code);
        (void)pthread_mutex_lock(&ws->ctl_lock);
        if (ws->close_sent) {
                (void)pthread_mutex_unlock(&ws->ctl_lock);
                return 0;
        }
        ws->close_sent = true;
        (void)pthread_mutex_unlock(&ws->ctl_lock);
        queue_control(ws, KUBE_WS_CLOSE, p, sizeof(p));
        return 0;
}

/* ---- the reader ---- */

static int fail(struct kube_ws *ws, int r, struct b4_error *err, const char *what)
{
        if (r != -ETIMEDOUT && r != -ECANCELED)
                ws->dead = r;
        if (r == -ETIMEDOUT)
                return b4_error_set(err, r, "WebSocket read timed out");
        if (r == -ECANCELED)
                return b4_error_set(err, r, "WebSocket read cancelled");
        if (r == -ECONNRESET)
                return b4_error_set(err, r, "the WebSocket stream ended without a close");
        return b4_error_set(err, r, "WebSocket protocol error: %s", what);
}

/* The server's close: 0 (answered), or -EPROTO. */
static int on_close(struct kube_ws *ws, const uint8_t *p, size_t len)
{
        bool reply;

        if (len == 1)
                return -EPROTO;
        ws->close_code = 1005;
        if (len >= 2) {
                ws->close_code = (uint16_t)(p[0] << 8 | p[1]);
                if (!kube_ws_close_code_valid(ws->close_code) ||
                    !utf8_is_valid((const char *)p + 2, len - 2))
                        return -EPROTO;
        }
        ws->closed = true;
        (void)pthread_mutex_lock(&ws->ctl_lock);
        reply = !ws->close_sent;
        ws->close_sent = true;
        (void)pthread_mutex_unlock(&ws->ctl_lock);
        if (reply)
                queue_control(ws, KUBE_WS_CLOSE, p, len >= 2 ? 2 : 0);
        return 0;
}

/* The head of the next data frame: 1 (frame_left, frame_fin set), 0 closed, -errno. */
static int next_frame(struct kube_ws *ws, uint64_t deadline_ms, int cancel_fd, const char **what)
{
        for (;;) {
                struct kube_ws_frame f;
                int r = kube_ws_frame_parse(ws->rbuf + ws->roff, ws->rlen - ws->roff, &f);

                if (r < 0)
                        return *what = "invalid frame head", r;
                if (r > 0 && f.masked)
                        return *what = "a masked frame from the server", -EPROTO;
                if (r > 0 && f.op >= KUBE_WS_CLOSE && ws->rlen - ws->roff < f.head_len + f.len)
                        r = 0; /* a control frame is handled whole */
                if (r == 0) {
                        r = fill(ws, deadline_ms, cancel_fd);
                        if (r < 0)
                                return r;
                        continue;
                }
                ws->roff += f.head_len;
                if (f.op >= KUBE_WS_CLOSE) {
                        const uint8_t *p = ws->rbuf + ws->roff;

                        ws->roff += f.len;
                        if (f.op == KUBE_WS_PING)
                                queue_control(ws, KUBE_WS_PONG, p, f.len);
                        if (f.op != KUBE_WS_CLOSE)
                                continue;
                        r = on_close(ws, p, f.len);
                        return r < 0 ? (*what = "invalid close frame", r) : 0;
                }
                if (f.op == KUBE_WS_CONT && !ws->in_msg)
                        return *what = "a continuation outside a message", -EPROTO;
                if (f.op != KUBE_WS_CONT) {
                        if (ws->in_msg)
                                return *what = "a new message inside a fragmented one", -EPROTO;
                        ws->in_msg = true;
                        ws->msg_op = f.op;
                        ws->msg_len = 0;
                        ws->first_pending = true;
                }
                if (f.len > ws->message_max - ws->msg_len)
                        return *what = "a message over the size cap", -EMSGSIZE;
                ws->msg_len += f.len;
                ws->frame_left = f.len;
                ws->frame_fin = f.fin;
                return 1;
        }
}

int kube_ws_read(struct kube_ws *ws,
                 void *buf,
                 size_t cap,
                 uint64_t deadline_ms,
                 int cancel_fd,
                 struct kube_ws_chunk *ret,
                 struct b4_error *err)
{
        const char *what = "";
        size_t k;
        int r;

        if (ws->dead)
                return fail(ws, ws->dead, err, "the stream is unusable after an error");
        if (ws->closed)
                return 0;
        if (cap == 0)
                return b4_error_set(err, -EINVAL, "empty read buffer");
        while (ws->frame_left == 0) {
                r = next_frame(ws, deadline_ms, cancel_fd, &what);
                if (r < 0)
                        return fail(ws, r, err, what);
                if (r == 0)
                        return 0;
                if (ws->frame_left > 0 || !ws->frame_fin)
                        continue; /* an empty fragment that does not end the message */
                *ret = (struct kube_ws_chunk){ .op = ws->msg_op,
                                               .first = ws->first_pending,
                                               .last = true };
                ws->first_pending = ws->in_msg = false;
                return 1;
        }
        if (ws->roff == ws->rlen) {
                r = fill(ws, deadline_ms, cancel_fd);
                if (r < 0)
                        return fail(ws, r, err, "");
        }
        k = ws->rlen - ws->roff;
        if (k > cap)
                k = cap;
        if (k > ws->frame_left)
                k = (size_t)ws->frame_left;
        memcpy(buf, ws->rbuf + ws->roff, k);
        ws->roff += k;
        ws->frame_left -= k;
        *ret = (struct kube_ws_chunk){ .op = ws->msg_op,
                                       .len = k,
                                       .first = ws->first_pending,
                                       .last = ws->frame_fin && ws->frame_left == 0 };
        ws->first_pending = false;
        if (ret->last)
                ws->in_msg = false;
        return 1;
}

uint16_t kube_ws_close_code(const struct kube_ws *ws)
{
        return ws->closed ? ws->close_code : 1006;
}

const char *kube_ws_protocol(const struct kube_ws *ws)
{
        return ws->protocol;
}

void kube_ws_shutdown(struct kube_ws *ws)
{
        atomic_store(&ws->shut, true);
        if (ws->fd >= 0)
                (void)shutdown(ws->fd, SHUT_RDWR);
}

struct kube_ws *kube_ws_free(struct kube_ws *ws)
{
        if (!ws)
                return NULL;
        if (ws->curl)
                curl_easy_cleanup(ws->curl);
        else
                (void)safe_close(ws->fd);
        (void)pthread_mutex_destroy(&ws->io_lock);
        (void)pthread_mutex_destroy(&ws->send_lock);
        (void)pthread_mutex_destroy(&ws->ctl_lock);
        free(ws->rbuf);
        free(ws);
        return NULL;
}

/* ---- the upgrade ---- */

int kube_ws_accept_key(const char *key, char *out, size_t out_size)
{
        char in[64 + sizeof(WS_GUID)];
        unsigned char digest[SHA_DIGEST_LENGTH];
        cleanup_free char *b64 = NULL;
        size_t n = strlen(key), len = 0;

        if (n > 64 || out_size < 29)
                return -EINVAL;
        memcpy(in, key, n);
        memcpy(in + n, WS_GUID, sizeof(WS_GUID) - 1);
        (void)SHA1((const unsigned char *)in, n + sizeof(WS_GUID) - 1, digest);
        if (base64_encode(digest, sizeof(digest), &b64, &len) < 0)
                return -ENOMEM;
        memcpy(out, b64, len + 1);
        return 0;
}

static bool header_safe(const char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

/* "scheme://authority[/prefix]" -> the authority and the prefix (without its trailing '/'). */
static int split_server(const char *server, char **ret_host, char **ret_prefix)
{
        const char *p = strstr(server, "://"), *slash;
        size_t plen;

        if (!p || !header_safe(server))
                return -EINVAL;
        p += 3;
        slash = strchr(p, '/');
        if (!slash)
                slash = p + strlen(p);
        if (slash == p || memchr(p, '@', (size_t)(slash - p)))
                return -EINVAL;
        plen = strlen(slash);
        while (plen > 0 && slash[plen - 1] == '/')
                plen--;
        *ret_host = b4_strndup(p, (size_t)(slash - p));
        *ret_prefix = b4_strndup(slash, plen);
        if (!*ret_host || !*ret_prefix) {
                free(*ret_host);
                free(*ret_prefix);
                *ret_host = *ret_prefix = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int build_request(const struct kube_conn_opts *c,
                         const struct kube_ws_opts *o,
                         const char *key,
                         struct strbuf *sb,
                         struct b4_error *err)
{
        cleanup_free char *host = NULL, *prefix = NULL;
        int r;

        r = split_server(c->server, &host, &prefix);
        if (r < 0)
                return b4_error_set(err, r, "invalid API server URL '%s'", c->server);
        if (!o->path || o->path[0] != '/' || !header_safe(o->path) || strchr(o->path, ' ') ||
            (c->token && !header_safe(c->token)) || !o->protocols || !o->protocols[0])
                return b4_error_set(err, -EINVAL, "invalid WebSocket request");
        r = strbuf_addf(sb,
                        "GET %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: b4box\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                        "Sec-WebSocket-Protocol: ",
                        prefix, o->path, host, key);
        for (size_t i = 0; r >= 0 && o->protocols[i]; i++) {
                if (i >= KUBE_WS_PROTOCOL_MAX || !header_safe(o->protocols[i]) ||
                    strlen(o->protocols[i]) >= sizeof(((struct kube_ws *)0)->protocol) ||
                    strpbrk(o->protocols[i], ", "))
                        return b4_error_set(err, -EINVAL, "invalid WebSocket subprotocol");
                r = strbuf_addf(sb, "%s%s", i ? ", " : "", o->protocols[i]);
        }
        if (r >= 0 && c->token)
                r = strbuf_addf(sb, "\r\nAuthorization: Bearer %s", c->token);
        if (r >= 0)
                r = strbuf_adds(sb, "\r\n\r\n");
        return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}

/* The response head, as parsed. Values point into the head (NUL-terminated in place). */
struct head {
        long status;
        const char *reason;
        const char *upgrade, *connection, *accept, *protocol, *extensions, *content_length;
        int dup; /* a header that must appear once appeared twice */
};

static void trim(char **b, char **e)
{
        while (*b < *e && (**b == ' ' || **b == '\t'))
                (*b)++;
        while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
                (*e)--;
}

static void set_header(struct head *h, const char *name, const char *value)
{
        static const char *const names[] = { "upgrade",
                                             "connection",
                                             "sec-websocket-accept",
                                             "sec-websocket-protocol",
                                             "sec-websocket-extensions",
                                             "content-length" };
        const char **slots[] = { &h->upgrade,  &h->connection, &h->accept,
                                 &h->protocol, &h->extensions, &h->content_length };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                if (strcasecmp(name, names[i]) != 0)
                        continue;
                if (*slots[i])
                        h->dup = 1;
                *slots[i] = value;
        }
}

/* Parse the head in @buf (its "\r\n\r\n" end replaced by NULs): 0 or -EPROTO. */
static int parse_head(char *buf, struct head *h)
{
        char *line = buf, *eol = strstr(line, "\r\n"), *sp;

        *h = (struct head){ 0 };
        if (!eol || strncmp(line, "HTTP/1.", 7) != 0 || !(line[7] == '0' || line[7] == '1') ||
            line[8] != ' ')
                return -EPROTO;
        *eol = '\0';
        if (strlen(line) < 12 || line[9] < '1' || line[9] > '5' || line[10] < '0' ||
            line[10] > '9' || line[11] < '0' || line[11] > '9' || (line[12] && line[12] != ' '))
                return -EPROTO;
        h->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        h->reason = line[12] ? line + 13 : "";
        for (line = eol + 2; *line; line = eol + 2) {
                char *b, *e;

                eol = strstr(line, "\r\n");
                if (!eol)
                        return -EPROTO;
                *eol = '\0';
                sp = strchr(line, ':');
                if (!sp || sp == line || strpbrk(line, " \t") < sp)
                        return -EPROTO;
                *sp = '\0';
                b = sp + 1;
                e = eol;
                trim(&b, &e);
                *e = '\0';
                set_header(h, line, b);
        }
        return 0;
}

static bool has_token(const char *list, const char *token)
{
        size_t n = strlen(token);

        for (const char *p = list; p && *p;) {
                const char *end = strchr(p, ',');
                const char *b = p, *e = end ? end : p + strlen(p);

                while (b < e && (*b == ' ' || *b == '\t'))
                        b++;
                while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                if ((size_t)(e - b) == n && strncasecmp(b, token, n) == 0)
                        return true;
                p = end ? end + 1 : NULL;
        }
        return false;
}

static int check_upgrade(struct kube_ws *ws,
                         const struct head *h,
                         const char *key,
                         const struct kube_ws_opts *o,
                         struct b4_error *err)
{
        char want[32];

        if (kube_ws_accept_key(key, want, sizeof(want)) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (h->dup)
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: a header repeated");
        if (!h->upgrade || strcasecmp(h->upgrade, "websocket") != 0 ||
            !has_token(h->connection, "upgrade"))
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: no Upgrade: websocket");
        if (!h->accept || strcmp(h->accept, want) != 0)
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: wrong Sec-WebSocket-Accept");
        if (h->extensions)
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: an extension not offered");
        if (!h->protocol)
                return 0;
        for (size_t i = 0; o->protocols[i]; i++)
                if (strcmp(h->protocol, o->protocols[i]) == 0) {
                        memcpy(ws->protocol, h->protocol, strlen(h->protocol) + 1);
                        return 0;
                }
        return b4_error_set(err, -EPROTO, "WebSocket upgrade: subprotocol '%.64s' not offered",
                            h->protocol);
}

/* A refused upgrade: kube_status_decode()'s errno and message (one table for REST and exec). */
static int refusal(const struct head *h, const char *body, size_t len, struct b4_error *err)
{
        int r;

        if (h->status < 200)
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: unexpected HTTP %ld",
                                    h->status);
        r = kube_status_decode(h->status, body, len, err);
        return b4_error_wrap(err, r, "the API server refused the exec upgrade");
}

/* Read what the refusal's body holds (Content-Length, else to the end), bounded. */
static void read_body(struct kube_ws *ws, const struct head *h, uint64_t deadline_ms, int cfd)
{
        size_t want = KUBE_WS_BODY_MAX;

        if (h->content_length) {
                char *end;
                unsigned long long n;

                errno = 0;
                n = strtoull(h->content_length, &end, 10);
                if (!errno && *end == '\0' && h->content_length[0] >= '0' &&
                    h->content_length[0] <= '9' && n < want)
                        want = (size_t)n;
        }
        while (ws->rlen - ws->roff < want && fill(ws, deadline_ms, cfd) == 0)
                ;
}

static int read_head(struct kube_ws *ws, uint64_t deadline_ms, int cancel_fd, size_t *ret_len)
{
        for (;;) {
                char *end;
                int r;

                ws->rbuf[ws->rlen] = '\0';
                end = strstr((char *)ws->rbuf, "\r\n\r\n");
                if (end) {
                        *ret_len = (size_t)(end - (char *)ws->rbuf) + 4;
                        return 0;
                }
                if (memchr(ws->rbuf, '\0', ws->rlen))
                        return -EPROTO;
                if (ws->rlen >= KUBE_WS_HEAD_MAX)
                        return -E2BIG;
                r = fill(ws, deadline_ms, cancel_fd);
                if (r < 0)
                        return r;
        }
}

static int upgrade(struct kube_ws *ws,
                   const struct kube_conn_opts *c,
                   const struct kube_ws_opts *o,
                   uint64_t deadline_ms,
                   struct b4_error *err)
{
        struct strbuf req;
        uint8_t raw[16];
        cleanup_free char *key = NULL;
        struct head h;
        size_t klen = 0, head_len = 0;
        int r;

        if (getrandom(raw, sizeof(raw), 0) != sizeof(raw) ||
            base64_encode(raw, sizeof(raw), &key, &klen) < 0)
                return b4_error_set(err, -ENOMEM, "cannot make a WebSocket key");
        strbuf_init(&req, KUBE_WS_HEAD_MAX * 4);
        r = build_request(c, o, key, &req, err);
        if (r >= 0) {
                r = pipe_send_all(ws, req.buf, req.len, deadline_ms, o->cancel_fd);
                if (r < 0)
                        r = b4_error_set(err, r == -EPIPE ? -ECONNRESET : r,
                                         "sending the WebSocket upgrade failed: %s", strerror(-r));
        }
        strbuf_release(&req);
        if (r < 0)
                return r;
        r = read_head(ws, deadline_ms, o->cancel_fd, &head_len);
        if (r < 0)
                return b4_error_set(err, r == -E2BIG || r == -ENOBUFS ? -EPROTO : r,
                                    "no WebSocket upgrade answer: %s",
                                    r == -E2BIG ? "response head too large" : strerror(-r));
        ws->rbuf[head_len - 2] = '\0';
        if (parse_head((char *)ws->rbuf, &h) < 0)
                return b4_error_set(err, -EPROTO, "WebSocket upgrade: malformed response head");
        ws->roff = head_len;
        if (h.status != 101) {
                read_body(ws, &h, deadline_ms, o->cancel_fd);
                /* fill() may have moved the bytes: the body starts at roff */
                return refusal(&h, (const char *)ws->rbuf + ws->roff, ws->rlen - ws->roff, err);
        }
        return check_upgrade(ws, &h, key, o, err);
}

static int ws_new(const struct kube_ws_opts *o, struct kube_ws **ret)
{
        struct kube_ws *ws = b4_calloc(1, sizeof(*ws));

        if (!ws)
                return -ENOMEM;
        ws->rbuf = b4_malloc(RBUF_SIZE + 1);
        if (!ws->rbuf) {
                free(ws);
                return -ENOMEM;
        }
        ws->fd = -EBADF;
        ws->message_max = o->message_max ? o->message_max : KUBE_WS_MESSAGE_MAX;
        ws->close_code = 1006;
        (void)pthread_mutex_init(&ws->io_lock, NULL);
        (void)pthread_mutex_init(&ws->send_lock, NULL);
        (void)pthread_mutex_init(&ws->ctl_lock, NULL);
        *ret = ws;
        return 0;
}

static uint64_t deadline_of(const struct kube_conn_opts *c)
{
        return now_msec() + (c->timeout_ms ? c->timeout_ms : KUBE_WS_TIMEOUT_MS);
}

int kube_ws_connect_fd(int fd,
                       const struct kube_conn_opts *c,
                       const struct kube_ws_opts *o,
                       struct kube_ws **ret,
                       struct b4_error *err)
{
        cleanup_(kube_ws_freep) struct kube_ws *ws = NULL;
        int r;

        if (ws_new(o, &ws) < 0) {
                (void)safe_close(fd);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        ws->fd = fd;
        r = upgrade(ws, c, o, deadline_of(c), err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ws);
        return 0;
}

/* ---- libcurl's connection ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
        curl_init_result = curl_global_init(CURL_GLOBAL_SSL);
}

static int on_progress(void *userdata, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
        const struct kube_ws_opts *o = userdata;
        struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };

        return o->cancel_fd >= 0 && poll(&p, 1, 0) > 0;
}

static int set_blob(CURL *h, CURLoption opt, const void *data, size_t len)
{
        struct curl_blob b = { .data = (void *)data, .len = len, .flags = CURL_BLOB_COPY };

        return curl_easy_setopt(h, opt, &b) == CURLE_OK ? 0 : -EINVAL;
}

static int curl_setup(CURL *h, const struct kube_conn_opts *c, const struct kube_ws_opts *o)
{
        long ms = (long)(c->timeout_ms ? c->timeout_ms : KUBE_WS_TIMEOUT_MS);
        void *share = http_curl_share();
        int r = 0;

        if (curl_easy_setopt(h, CURLOPT_URL, c->server) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
            /* through a proxy (libcurl honours https_proxy and friends), always a tunnel:
             * the upgrade is ours to write, end to end */
            curl_easy_setopt(h, CURLOPT_HTTPPROXYTUNNEL, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)o) != CURLE_OK)
                return -EINVAL;
        /* the TLS sessions (and DNS answers) of the REST requests (src/lib/http): an exec
         * connection resumes the session a request started, and the reverse */
        if (share && curl_easy_setopt(h, CURLOPT_SHARE, share) != CURLE_OK)
                return -EINVAL;
        if (c->insecure && (curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
                            curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK))
                return -EINVAL;
        /* the CA given and only it, parsed once per process, as the REST requests do (their
         * sessions are then ours too); else libcurl parses it (and still no system CA) */
        if ((c->ca_blob || c->ca_file) &&
            http_curl_trust(h, c->ca_blob ? NULL : c->ca_file, c->ca_blob, c->ca_blob_len) < 0) {
                if (c->ca_blob)
                        r = set_blob(h, CURLOPT_CAINFO_BLOB, c->ca_blob, c->ca_blob_len);
                else if (curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file) != CURLE_OK)
                        r = -EINVAL;
                if (r >= 0 && curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK)
                        r = -EINVAL;
        }
        if (r >= 0 && c->cert_blob)
                r = set_blob(h, CURLOPT_SSLCERT_BLOB, c->cert_blob, c->cert_blob_len);
        else if (r >= 0 && c->cert_file &&
                 curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file) != CURLE_OK)
                r = -EINVAL;
        if (r >= 0 && c->key_blob)
                r = set_blob(h, CURLOPT_SSLKEY_BLOB, c->key_blob, c->key_blob_len);
        else if (r >= 0 && c->key_file &&
                 curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file) != CURLE_OK)
                r = -EINVAL;
        return r;
}

static int curl_errno(CURLcode res)
{
        if (res == CURLE_COULDNT_CONNECT)
                return -ECONNREFUSED;
        if (res == CURLE_COULDNT_RESOLVE_HOST)
                return -EHOSTUNREACH;
        if (res == CURLE_OPERATION_TIMEDOUT)
                return -ETIMEDOUT;
        if (res == CURLE_ABORTED_BY_CALLBACK)
                return -ECANCELED;
        return -EIO;
}

int kube_ws_connect(const struct kube_conn_opts *c,
                    const struct kube_ws_opts *o,
                    struct kube_ws **ret,
                    struct b4_error *err)
{
        cleanup_(kube_ws_freep) struct kube_ws *ws = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        uint64_t deadline = deadline_of(c);
        curl_socket_t sock = CURL_SOCKET_BAD;
        CURLcode res;
        int r;

        if (!c->server ||
            (strncmp(c->server, "https://", 8) != 0 && strncmp(c->server, "http://", 7) != 0))
                return b4_error_set(err, -EINVAL, "invalid API server URL '%s'",
                                    c->server ? c->server : "");
        (void)pthread_once(&curl_once, curl_init);
        if (curl_init_result != CURLE_OK || ws_new(o, &ws) < 0 || !(ws->curl = curl_easy_init()))
                return b4_error_set(err, -ENOMEM, "cannot set up libcurl");
        if (curl_setup(ws->curl, c, o) < 0 ||
            curl_easy_setopt(ws->curl, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK)
                return b4_error_set(err, -EINVAL, "libcurl refused the connection options");
        res = curl_easy_perform(ws->curl);
        (void)curl_easy_setopt(ws->curl, CURLOPT_ERRORBUFFER, NULL);
        (void)curl_easy_setopt(ws->curl, CURLOPT_NOPROGRESS, 1L); /* @o is the caller's */
        if (res != CURLE_OK)
                return b4_error_set(err, curl_errno(res), "cannot reach the API server %s: %s",
                                    c->server, errbuf[0] ? errbuf : curl_easy_strerror(res));
        if (curl_easy_getinfo(ws->curl, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK ||
            sock == CURL_SOCKET_BAD)
                return b4_error_set(err, -EIO, "libcurl gave no socket for %s", c->server);
        ws->fd = (int)sock;
        r = upgrade(ws, c, o, deadline, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ws);
        return 0;
}
