/* SPDX-License-Identifier: Apache-2.0 */
/* The tests' WebSocket server side (kube-ws-peer.h). */

#include "kube-ws-peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int peer_listen(int *ret_port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        PEER_CHECK(fd >= 0);
        PEER_CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        PEER_CHECK(listen(fd, 8) == 0);
        PEER_CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

int peer_accept(int listen_fd)
{
        struct timeval tv = { .tv_sec = 10 };
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

        PEER_CHECK(fd >= 0);
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        return fd;
}

int peer_read_request(int fd, struct peer_request *r)
{
        size_t len = 0;

        memset(r, 0, sizeof(*r));
        /* byte by byte: nothing after the head is consumed */
        while (len < sizeof(r->head) - 1) {
                ssize_t n = read(fd, r->head + len, 1);

                if (n <= 0)
                        return -1;
                len++;
                if (len >= 4 && memcmp(r->head + len - 4, "\r\n\r\n", 4) == 0)
                        break;
        }
        PEER_CHECK(sscanf(r->head, "GET %8191s HTTP/1.1\r\n", r->target) == 1);
        return 0;
}

const char *peer_header(const struct peer_request *r, const char *name, char *out, size_t size)
{
        size_t n = strlen(name);

        for (const char *l = strstr(r->head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
                const char *v = l + 2, *e;

                if (strncasecmp(v, name, n) != 0 || v[n] != ':')
                        continue;
                v += n + 1;
                while (*v == ' ')
                        v++;
                e = strstr(v, "\r\n");
                PEER_CHECK(e && (size_t)(e - v) < size);
                memcpy(out, v, (size_t)(e - v));
                out[e - v] = '\0';
                return out;
        }
        return NULL;
}

void peer_accept_key(const char *key, char *out)
{
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        unsigned char d[SHA_DIGEST_LENGTH];
        char in[256];

        PEER_CHECK(strlen(key) + sizeof(guid) < sizeof(in));
        (void)snprintf(in, sizeof(in), "%s%s", key, guid);
        SHA1((const unsigned char *)in, strlen(in), d);
        PEER_CHECK(EVP_EncodeBlock((unsigned char *)out, d, sizeof(d)) == 28);
}

bool peer_write(int fd, const void *p, size_t n)
{
        const char *c = p;

        while (n > 0) {
                ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

                if (k <= 0)
                        return false; /* the client went away: its side of the test says why */
                c += k;
                n -= (size_t)k;
        }
        return true;
}

void peer_upgrade(int fd, const struct peer_request *r, const char *protocol, const char *extra)
{
        char key[128], accept[32], head[1024];

        PEER_CHECK(peer_header(r, "Sec-WebSocket-Key", key, sizeof(key)));
        peer_accept_key(key, accept);
        (void)snprintf(head, sizeof(head),
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%s%s%s\r\n",
                       accept, protocol ? "Sec-WebSocket-Protocol: " : "", protocol ? protocol : "",
                       protocol ? "\r\n" : "", extra ? extra : "");
        peer_write(fd, head, strlen(head));
}

static void send_frame(int fd, bool fin, uint8_t op, bool mask, const void *p, size_t n)
{
        uint8_t head[14], key[4] = { 0x12, 0x34, 0x56, 0x78 };
        size_t h = 2;
        uint8_t *body = malloc(n ? n : 1);

        PEER_CHECK(body);
        head[0] = (uint8_t)((fin ? 0x80 : 0) | op);
        if (n < 126) {
                head[1] = (uint8_t)n;
        } else if (n < 65536) {
                head[1] = 126;
                head[2] = (uint8_t)(n >> 8);
                head[3] = (uint8_t)n;
                h = 4;
        } else {
                head[1] = 127;
                for (int i = 0; i < 8; i++)
                        head[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
                h = 10;
        }
        if (mask) {
                head[1] |= 0x80;
                memcpy(head + h, key, 4);
                h += 4;
        }
        if (n)
                memcpy(body, p, n);
        for (size_t i = 0; mask && i < n; i++)
                body[i] ^= key[i % 4];
        if (peer_write(fd, head, h))
                (void)peer_write(fd, body, n);
        free(body);
}

void peer_send_frame(int fd, bool fin, uint8_t op, const void *p, size_t n)
{
        send_frame(fd, fin, op, false, p, n);
}

void peer_send_masked(int fd, bool fin, uint8_t op, const void *p, size_t n)
{
        send_frame(fd, fin, op, true, p, n);
}

static int read_exact(int fd, void *p, size_t n)
{
        char *c = p;

        while (n > 0) {
                ssize_t k = read(fd, c, n);

                if (k <= 0)
                        return -1;
                c += k;
                n -= (size_t)k;
        }
        return 0;
}

int peer_recv_frame(int fd, struct peer_frame *f)
{
        uint8_t h[2], ext[8], key[4] = { 0 };
        uint64_t len;

        memset(f, 0, sizeof(*f));
        if (read_exact(fd, h, 2) < 0)
                return -1;
        f->fin = h[0] & 0x80;
        f->op = h[0] & 0x0f;
        f->masked = h[1] & 0x80;
        len = h[1] & 0x7f;
        if (len == 126) {
                PEER_CHECK(read_exact(fd, ext, 2) == 0);
                len = (uint64_t)ext[0] << 8 | ext[1];
        } else if (len == 127) {
                PEER_CHECK(read_exact(fd, ext, 8) == 0);
                len = 0;
                for (int i = 0; i < 8; i++)
                        len = len << 8 | ext[i];
        }
        PEER_CHECK(f->masked); /* RFC 6455 5.1: every client frame is masked */
        PEER_CHECK(read_exact(fd, key, 4) == 0);
        PEER_CHECK(len < 64u * 1024 * 1024);
        f->len = (size_t)len;
        f->data = malloc(f->len + 1);
        PEER_CHECK(f->data);
        PEER_CHECK(read_exact(fd, f->data, f->len) == 0);
        for (size_t i = 0; i < f->len; i++)
                f->data[i] ^= key[i % 4];
        f->data[f->len] = '\0';
        return 0;
}
