/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A small HTTP/1.1 client over libcurl for local daemons reached through a unix socket (the
 * Docker Engine API). One request is one stream: http_stream_open() sends the request and
 * waits for the response head; the body is then pulled with http_stream_read(), which
 * honours a deadline and a cancel fd, so callers can decode long-lived bodies (Docker's
 * multiplexed exec stream, tar archives) incrementally and stop transferring at any point.
 * http_request() is the buffered form for small JSON exchanges.
 *
 * Thread-safe: a client is immutable after http_client_new() and every stream has its own
 * curl handles.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b4box/error.h"

struct http_client;
struct http_stream;

/**
 * http_client_new() - a client for the daemon listening on @socket_path
 * @socket_path: absolute path of the unix socket; copied
 * Return: 0, -EINVAL, -ENOMEM.
 */
int http_client_new(const char *socket_path, struct http_client **ret, struct b4_error *err);
/** http_client_free() - NULL ok. Return: NULL. */
struct http_client *http_client_free(struct http_client *c);
/** http_client_socket() - the socket path; borrowed for the client's lifetime. */
const char *http_client_socket(const struct http_client *c);

struct http_req {
        const char *method;       /* "GET", "POST", "PUT", "DELETE", "HEAD" */
        const char *path;         /* request target, already URL-encoded, starting with '/' */
        const char *content_type; /* NULL = no body */
        const void *body;         /* borrowed for the call */
        size_t body_len;
        uint64_t timeout_ms; /* for the whole exchange up to the response head; 0 = 60 s */
};

/**
 * http_stream_open() - send @req and wait for the response head
 * @cancel_fd: readable once the caller wants to give up (-EBADF = none)
 * Return: 0 with the stream (http_stream_free()), -ECONNREFUSED/-ENOENT (no daemon),
 * -ETIMEDOUT, -ECANCELED, -EIO (transport error; message set), -ENOMEM.
 */
int http_stream_open(struct http_client *c,
                     const struct http_req *req,
                     int cancel_fd,
                     struct http_stream **ret,
                     struct b4_error *err);
/** http_stream_status() - the response status code. */
long http_stream_status(const struct http_stream *s);
/** http_stream_header() - the value of response header @name (case-insensitive); borrowed. */
const char *http_stream_header(const struct http_stream *s, const char *name);
/**
 * http_stream_read() - up to @n body bytes into @buf
 * @deadline_ms: CLOCK_MONOTONIC ms after which it gives up with -ETIMEDOUT (0 = none)
 * @cancel_fd:   as for http_stream_open()
 * Return: bytes read (> 0), 0 at the end of the body, -ETIMEDOUT, -ECANCELED, -EIO.
 */
ssize_t http_stream_read(struct http_stream *s,
                         void *buf,
                         size_t n,
                         uint64_t deadline_ms,
                         int cancel_fd,
                         struct b4_error *err);
/** http_stream_free() - abort any transfer left and free. NULL ok. Return: NULL. */
struct http_stream *http_stream_free(struct http_stream *s);

static inline void http_stream_freep(struct http_stream **s)
{
        if (*s)
                *s = http_stream_free(*s);
}

struct http_response {
        long status;
        char *body; /* owned; NUL-terminated past len */
        size_t len;
        char *header_value; /* owned; the value of the header asked for, or NULL */
};

void http_response_clear(struct http_response *r);

/**
 * http_request() - one buffered exchange
 * @max_body: larger bodies fail -E2BIG
 * @header:   optional response header to keep in ret->header_value
 * Return: 0 (any status), or the errors of http_stream_open()/http_stream_read().
 */
int http_request(struct http_client *c,
                 const struct http_req *req,
                 size_t max_body,
                 const char *header,
                 struct http_response *ret,
                 struct b4_error *err);
