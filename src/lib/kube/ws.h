/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A WebSocket client (RFC 6455) for the Kubernetes API server's exec streams, written over
 * libcurl's connect-only mode (CURLOPT_CONNECT_ONLY + curl_easy_send/recv: Debian's libcurl
 * 7.88 has no WebSocket support). libcurl does DNS, TCP and TLS (HTTP/1.1 forced, so ALPN
 * never settles on h2); this file writes the upgrade request, checks the 101 answer
 * (Sec-WebSocket-Accept, the chosen subprotocol) and does the framing: masked client frames,
 * the three payload length forms, continuation reassembly (delivered as chunks, never held
 * whole), ping -> pong, the close handshake.
 *
 * The server, and everything behind it (the kubelet, the container), is untrusted: frame
 * and message sizes are checked against caps before anything is read or allocated, a
 * masked server frame, a reserved bit, an unknown opcode, a fragmented or oversized control
 * frame, a non-minimal length or a bad close code is a protocol error (-EPROTO), and every
 * read has a deadline and a cancel fd.
 *
 * Thread safety: one reader at a time (kube_ws_read()), and senders (kube_ws_send(),
 * kube_ws_close()) on any other threads at the same time; kube_ws_shutdown() from anywhere.
 * A pong or a close reply the reader owes is sent by whoever holds the send side, so a
 * reader never waits behind a sender stuck in backpressure.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "b4box/error.h"

#define KUBE_WS_MESSAGE_MAX  (1024u * 1024) /* default cap on one incoming message */
#define KUBE_WS_HEAD_MAX     16384u         /* the upgrade's response head */
#define KUBE_WS_BODY_MAX     65536u         /* the body of a refused upgrade that is read */
#define KUBE_WS_TIMEOUT_MS   30000u         /* connect + TLS + upgrade, by default */
#define KUBE_WS_CONTROL_MAX  125u           /* RFC 6455 5.5 */
#define KUBE_WS_PROTOCOL_MAX 8              /* subprotocols offered at most */

enum kube_ws_opcode {
        KUBE_WS_CONT = 0x0,
        KUBE_WS_TEXT = 0x1,
        KUBE_WS_BINARY = 0x2,
        KUBE_WS_CLOSE = 0x8,
        KUBE_WS_PING = 0x9,
        KUBE_WS_PONG = 0xa,
};

/* How to reach the API server: plain values, so this file depends on no configuration
 * code. Every pointer is borrowed for the call (libcurl copies what it keeps). */
struct kube_conn_opts {
        const char *server;  /* "https://host[:port][/prefix]" or "http://..." */
        const char *token;   /* "Authorization: Bearer" value, or NULL */
        const char *ca_file; /* PEM file of the CA(s) to trust; NULL = the system's */
        const void *ca_blob; /* PEM bytes instead (kubeconfig's certificate-authority-data) */
        size_t ca_blob_len;
        const char *cert_file; /* client certificate (PEM), or the blob form */
        const void *cert_blob;
        size_t cert_blob_len;
        const char *key_file; /* its key (PEM), or the blob form */
        const void *key_blob;
        size_t key_blob_len;
        bool insecure;       /* no certificate checks (kubeconfig's insecure-skip-tls-verify,
                              * which the configuration allows only when told to) */
        uint64_t timeout_ms; /* connect + TLS; 0 = KUBE_WS_TIMEOUT_MS (the upgrade too) */
        uint64_t ping_ms;    /* long-lived streams (kube_exec_transport()): a ping after this
                              * long without a message; 0 = KUBE_EXEC_PING_MS (exec.h) */
};

/* One upgrade. */
struct kube_ws_opts {
        const char *path;             /* request target after the server's prefix: "/api/..." */
        const char *const *protocols; /* offered, NULL-terminated, 1..KUBE_WS_PROTOCOL_MAX */
        size_t message_max;           /* cap on an incoming message; 0 = KUBE_WS_MESSAGE_MAX */
        int cancel_fd;                /* readable = give up connecting; -EBADF = none */
};

struct kube_ws;

/**
 * kube_ws_connect() - connect to @c->server and upgrade @o->path to a WebSocket
 * Return: 0 with *ret (kube_ws_free()), or -errno with @err set:
 *   a refusal (any status but 101): kube_status_decode() of its status and body (kube.h:
 *   404 -ENOENT, 401 -EPERM, 403 -EACCES, 400/422 -EINVAL, 429 -EBUSY, ..., else -EIO),
 *   the body read up to KUBE_WS_BODY_MAX (Content-Length, else to the end);
 *   -EPROTO (a 101 that is not a valid upgrade: wrong Accept, a subprotocol not offered,
 *   an extension, no Upgrade/Connection); -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT,
 *   -ECANCELED, -EIO (transport, TLS included); -EINVAL (bad options); -ENOMEM.
 */
int kube_ws_connect(const struct kube_conn_opts *c,
                    const struct kube_ws_opts *o,
                    struct kube_ws **ret,
                    struct b4_error *err);

/**
 * kube_ws_connect_fd() - the same upgrade over @fd, a connected stream socket (tests, the
 * fuzzer): @c->server names the Host header and path prefix only, @c->token is sent, the
 * TLS fields are ignored. Takes ownership of @fd (closed on failure too).
 * Return: as kube_ws_connect().
 */
int kube_ws_connect_fd(int fd,
                       const struct kube_conn_opts *c,
                       const struct kube_ws_opts *o,
                       struct kube_ws **ret,
                       struct b4_error *err);

/** kube_ws_protocol() - the subprotocol the server chose ("" = none); borrowed. */
const char *kube_ws_protocol(const struct kube_ws *ws);

/**
 * kube_ws_send() - send one whole message of @op (TEXT, BINARY, PING, PONG) as one masked
 * frame (never fragmented) made of the @n pieces of @iov.
 * Return: 0, -EINVAL (a control payload over 125 bytes), -EPIPE (closed or shut down),
 * -ECONNRESET, -EIO, -ENOMEM.
 */
int kube_ws_send(struct kube_ws *ws,
                 enum kube_ws_opcode op,
                 const struct iovec *iov,
                 size_t n,
                 struct b4_error *err);

/**
 * kube_ws_close() - start the close handshake with @code (1000 normal); once: a second
 * call is a no-op. The frame is written now when no send is in progress, else right after
 * it (never waited for). Later reads still deliver what the server sends until its close.
 * Data sends fail -EPIPE from now on.
 * Return: 0, -EINVAL (a code that may not be sent).
 */
int kube_ws_close(struct kube_ws *ws, uint16_t code, struct b4_error *err);

/* What one kube_ws_read() delivered: a piece of a data message. */
struct kube_ws_chunk {
        enum kube_ws_opcode op; /* the message's: TEXT or BINARY */
        size_t len;             /* bytes put in the buffer (may be 0 on a first or last) */
        bool first;             /* the message's first bytes (its first chunk) */
        bool last;              /* the message ends with this chunk */
};

/**
 * kube_ws_read() - the next piece of a data message, at most @cap (> 0) bytes
 * @deadline_ms: CLOCK_MONOTONIC ms (now_msec()) to give up at; 0 = none
 * @cancel_fd:   readable = give up; -EBADF = none
 * Control frames are handled inside (a ping answered, a pong dropped, a close answered).
 * Return: 1 with *ret filled; 0 the server closed (handshake done: kube_ws_close_code());
 * -ETIMEDOUT, -ECANCELED (the connection stays usable), -EPROTO, -EMSGSIZE (a message over
 * the cap), -ECONNRESET (the stream ended without a close, or was shut down), -EIO.
 * After any error but -ETIMEDOUT/-ECANCELED every read fails the same way.
 */
int kube_ws_read(struct kube_ws *ws,
                 void *buf,
                 size_t cap,
                 uint64_t deadline_ms,
                 int cancel_fd,
                 struct kube_ws_chunk *ret,
                 struct b4_error *err);

/** kube_ws_close_code() - the server's close code (1005: none given, 1006: not closed). */
uint16_t kube_ws_close_code(const struct kube_ws *ws);

/** kube_ws_shutdown() - make a blocked read or send return (-ECONNRESET / -EPIPE), from any
 * thread; idempotent. */
void kube_ws_shutdown(struct kube_ws *ws);

/** kube_ws_free() - close the connection (no handshake) and free. NULL ok. Return: NULL. */
struct kube_ws *kube_ws_free(struct kube_ws *ws);

static inline void kube_ws_freep(struct kube_ws **ws)
{
        if (*ws)
                *ws = kube_ws_free(*ws);
}

/* ---- the framing alone (the reader above, the tests and the fuzzer use it) ---- */

struct kube_ws_frame {
        bool fin;
        uint8_t rsv; /* the three reserved bits (must be 0: no extension is negotiated) */
        uint8_t op;
        bool masked;
        uint8_t mask[4];
        uint64_t len;    /* payload length */
        size_t head_len; /* 2 .. 14 */
};

#define KUBE_WS_FRAME_HEAD_MAX 14u

/**
 * kube_ws_frame_parse() - decode the frame head at @p (@n bytes available)
 * Return: the head's length (> 0) with *ret set; 0 when more bytes are needed; -EPROTO when
 * the head can never be valid: a reserved bit, an unknown opcode, a fragmented control
 * frame or one over 125 bytes, a 64-bit length with its top bit set, a length not in its
 * minimal form. (Masking rules depend on the side: the caller checks ret->masked.)
 */
int kube_ws_frame_parse(const uint8_t *p, size_t n, struct kube_ws_frame *ret);

/**
 * kube_ws_frame_head() - write the head of a frame into @out (KUBE_WS_FRAME_HEAD_MAX bytes)
 * @mask: the masking key, or NULL for an unmasked (server) frame
 * Return: the head's length.
 */
size_t kube_ws_frame_head(uint8_t *out, bool fin, uint8_t op, const uint8_t *mask, uint64_t len);

/** kube_ws_mask() - XOR @len bytes at @p with @mask, the first byte at payload @offset. */
void kube_ws_mask(uint8_t *p, size_t len, const uint8_t mask[4], uint64_t offset);

/**
 * kube_ws_accept_key() - Sec-WebSocket-Accept for @key: base64(SHA-1(key + GUID)).
 * @out: at least 29 bytes (28 + NUL). Return: 0, -EINVAL (a key over 64 bytes).
 */
int kube_ws_accept_key(const char *key, char *out, size_t out_size);

/** kube_ws_close_code_valid() - whether @code may appear in a close frame (RFC 6455 7.4). */
bool kube_ws_close_code_valid(uint16_t code);
