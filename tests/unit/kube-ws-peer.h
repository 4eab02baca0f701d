/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The server side of a WebSocket for the kube unit tests (test-kube-ws.c, test-kube-exec.c),
 * written apart from src/lib/kube/ws.c (its own head parsing, Accept computation and
 * framing, on OpenSSL's SHA-1 and base64), so one side's bug does not cancel the other's.
 * Blocking calls on a plain socket. The peer runs on a thread of its own, where cmocka's
 * asserts cannot be used: a failed PEER_CHECK aborts the test binary, loudly.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PEER_CHECK(x)                                                         \
 do {                                                                         \
  if (!(x)) {                                                                 \
   fprintf(stderr, "peer check failed: %s:%d: %s\n", __FILE__, __LINE__, #x); \
   abort();                                                                   \
  }                                                                           \
 } while (0)

/* A listening socket on 127.0.0.1; *ret_port its port. Return: the fd. */
int peer_listen(int *ret_port);
/* Accept one connection, with a 10 s receive timeout. Return: the fd. */
int peer_accept(int listen_fd);

/* The request head as read (NUL-terminated), and header lookups on it. */
struct peer_request {
        char head[16384];
        char target[8192];
};

/* Read one request head from @fd. Return: 0, -1 when the peer closed first. */
int peer_read_request(int fd, struct peer_request *r);
/* The value of @name in @r (copied to @out, trimmed), or NULL. */
const char *peer_header(const struct peer_request *r, const char *name, char *out, size_t size);

/* The Sec-WebSocket-Accept for @key, into @out (>= 29 bytes). */
void peer_accept_key(const char *key, char *out);
/* Answer 101 with @protocol (NULL: no Sec-WebSocket-Protocol) and the right Accept, plus
 * @extra header lines ("Name: v\r\n..." or NULL). */
void peer_upgrade(int fd, const struct peer_request *r, const char *protocol, const char *extra);

/* Write @n raw bytes; false when the client has gone. */
bool peer_write(int fd, const void *p, size_t n);
/* An unmasked frame (the server's). */
void peer_send_frame(int fd, bool fin, uint8_t op, const void *p, size_t n);
/* A masked frame (what a broken server must not send). */
void peer_send_masked(int fd, bool fin, uint8_t op, const void *p, size_t n);

struct peer_frame {
        bool fin;
        uint8_t op;
        bool masked;
        size_t len;
        uint8_t *data; /* unmasked, heap, NUL-terminated past len; free() it */
};

/* Read one frame of the client's (which must be masked). Return: 0, -1 at end of stream. */
int peer_recv_frame(int fd, struct peer_frame *f);
