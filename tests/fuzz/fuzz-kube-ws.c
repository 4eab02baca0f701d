/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the Kubernetes exec WebSocket (src/lib/kube/ws.c, exec.c): the upgrade's
 * response head (and a refusal's Status body), the frame reader (lengths, fragments,
 * control frames, close codes, caps), the channel demultiplexer and the error channel's
 * Status -> exit code decoder.
 * Trust boundary: every byte the API server sends back on an exec connection; the server,
 * the kubelet and the container behind it are untrusted.
 *
 * The first input byte picks the mode: bit 0 set, the rest is the whole answer (head
 * included: it fails the Accept check at best); clear, a valid 101 (v5, or v4 with bit 1)
 * comes first and the rest are frames. A thread plays the server over a socketpair and
 * hangs up after the input. Checked beyond "no crash": a chunk never exceeds the buffer
 * asked for, the payload delivered is never more than the input, a read ends (closed or
 * an error) once the input is exhausted, and the demultiplexer's pieces stay in its chunk.
 */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/time-util.h"
#include "kube/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

struct server {
        int fd;
        const uint8_t *data;
        size_t size;
        bool raw;
        bool v4;
};

static void write_all(int fd, const void *p, size_t n)
{
        const char *c = p;

        while (n > 0) {
                ssize_t k = write(fd, c, n);

                if (k <= 0)
                        return;
                c += k;
                n -= (size_t)k;
        }
}

static void *serve(void *userdata)
{
        struct server *s = userdata;
        char req[16384], key[64] = "", accept[32], head[512];
        size_t len = 0;
        const char *k;

        while (len < sizeof(req) - 1) {
                ssize_t n = read(s->fd, req + len, 1);

                if (n <= 0)
                        break;
                len++;
                req[len] = '\0';
                if (len >= 4 && !memcmp(req + len - 4, "\r\n\r\n", 4))
                        break;
        }
        if (!s->raw) {
                k = strstr(req, "Sec-WebSocket-Key: ");
                if (!k || sscanf(k + 19, "%63[^\r]", key) != 1 ||
                    kube_ws_accept_key(key, accept, sizeof(accept)) < 0)
                        abort();
                (void)snprintf(head, sizeof(head),
                               "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                               "Sec-WebSocket-Protocol: %s\r\n\r\n",
                               accept, s->v4 ? KUBE_EXEC_V4 : KUBE_EXEC_V5);
                write_all(s->fd, head, strlen(head));
        }
        write_all(s->fd, s->data, s->size);
        (void)shutdown(s->fd, SHUT_WR);
        /* read what the client sends (pongs, its close) until it hangs up */
        while (read(s->fd, req, sizeof(req)) > 0)
                ;
        return NULL;
}

struct sunk {
        const uint8_t *lo, *hi; /* the chunk fed */
        char status[KUBE_EXEC_STATUS_MAX];
        size_t status_len;
};

static int sink(int channel, const uint8_t *p, size_t n, bool last, void *userdata)
{
        struct sunk *s = userdata;
        struct kube_exec_status st;

        if (n && (p < s->lo || p + n > s->hi))
                abort();
        if (channel != KUBE_EXEC_ERROR)
                return channel <= KUBE_EXEC_STDERR ? 0 : -EPROTO;
        if (n > sizeof(s->status) - s->status_len)
                return -EPROTO;
        memcpy(s->status + s->status_len, p, n);
        s->status_len += n;
        if (last) {
                int r = kube_exec_status_decode(s->status, s->status_len, &st);

                if (r == 0 && (st.exit_code < 0 || st.exit_code > 255))
                        abort();
                s->status_len = 0;
        }
        return 0;
}

static void session(const uint8_t *data, size_t size, uint8_t mode)
{
        static const char *const protocols[] = { KUBE_EXEC_V5, KUBE_EXEC_V4, NULL };
        struct server s = { .data = data, .size = size, .raw = mode & 1, .v4 = mode & 2 };
        struct kube_conn_opts c = { .server = "https://kube.invalid:6443", .timeout_ms = 5000 };
        struct kube_ws_opts o = {
                .path = "/api/v1/namespaces/ns/pods/p/exec?command=x&stdout=true",
                .protocols = protocols,
                .message_max = 4096,
                .cancel_fd = -EBADF,
        };
        struct kube_exec_demux d = { .channel = -1 };
        struct sunk sk = { 0 };
        struct kube_ws *ws = NULL;
        size_t total = 0;
        pthread_t t;
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return;
        s.fd = sv[1];
        if (pthread_create(&t, NULL, serve, &s) != 0)
                abort();
        if (kube_ws_connect_fd(sv[0], &c, &o, &ws, NULL) == 0) {
                uint8_t buf[997];

                for (size_t i = 0;; i++) {
                        size_t want = 1 + (i * 131) % sizeof(buf);
                        struct kube_ws_chunk ch;
                        int r = kube_ws_read(ws, buf, want, now_msec() + 5000, -EBADF, &ch, NULL);

                        if (r <= 0) {
                                if (r == -ETIMEDOUT)
                                        abort(); /* the input ended: the read must too */
                                break;
                        }
                        if (ch.len > want)
                                abort();
                        total += ch.len;
                        if (total > size)
                                abort();
                        sk.lo = buf;
                        sk.hi = buf + ch.len;
                        if (kube_exec_demux_feed(&d, &ch, buf, sink, &sk) < 0)
                                break;
                }
                kube_ws_free(ws);
        }
        (void)pthread_join(t, NULL);
        (void)close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct kube_ws_frame f;
        struct kube_exec_status st;

        if (size == 0 || size > FUZZ_MAX_INPUT)
                return 0;
        /* the pure parts on the raw bytes */
        if (kube_ws_frame_parse(data, size, &f) > 0 && (f.head_len > 14 || f.head_len > size))
                abort();
        (void)kube_exec_status_decode((const char *)data, size, &st);
        session(data + 1, size - 1, data[0]);
        return 0;
}
