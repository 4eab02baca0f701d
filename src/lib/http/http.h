/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one HTTP/1.1 client (libcurl), shared by the library and the tool: the Docker Engine
 * API over its unix socket, the CLI's --server client, and the Kubernetes API to come.
 * A client is one server, reached through a unix socket or an http(s) URL, optionally with
 * a bearer token. Three forms of one exchange:
 *   - http_request(): buffered, with a cap on the body (a larger one fails -EFBIG);
 *   - http_request_each(): the body handed to a callback chunk by chunk as it arrives
 *     (server-sent events, NDJSON, watches), stoppable by the callback or a cancel fd;
 *   - http_stream_open() + http_stream_read(): the body pulled by the caller, who decodes
 *     long-lived bodies (Docker's multiplexed exec stream, tar archives) incrementally and
 *     can stop transferring at any point.
 * Every form honours a timeout for the response head; the pull form also a deadline and a
 * cancel fd per read.
 *
 * Every exchange speaks HTTP/1.1 (never h2, which an https server may offer through ALPN:
 * the Kubernetes API server's upgrades and watches are written against 1.1 here).
 *
 * Thread-safe: a client is immutable once set up (http_client_new(), http_client_set_token(),
 * http_client_set_tls() and http_client_set_reuse()) and every exchange has its own curl
 * handles, taken from the client's pool of idle ones when it keeps connections. A token that
 * changes while the client is shared (a rotated service-account token) travels per request
 * (http_req.bearer). Every stream must be freed before its client.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b4box/error.h"

struct http_client;
struct http_stream;

/**
 * http_client_new() - a client for one server
 * @target: where it listens; copied. "/path" or "unix:/path": a unix socket (requests go to
 *          http://localhost/...); "http://host[:port][/prefix]" or "https://...": a TCP
 *          server, request paths appended to the URL (its trailing '/' dropped)
 * Return: 0, -EINVAL (another form; message set), -EIO (libcurl initialisation), -ENOMEM.
 */
int http_client_new(const char *target, struct http_client **ret, struct b4_error *err);
/**
 * http_client_set_token() - send "Authorization: Bearer @token" with every request
 * @token: copied (and erased on free); NULL = none. Call before the client is shared.
 * Return: 0, -EINVAL (a token with a control character), -ENOMEM.
 */
int http_client_set_token(struct http_client *c, const char *token);

/*
 * How an https client checks the server and proves itself. A PEM item is a file or the
 * bytes themselves, not both; NULL/0 = none. Borrowed for http_client_set_tls().
 */
struct http_tls {
        const char *ca_file; /* the server must chain to these PEM certificates */
        const void *ca_pem;  /* ... or to these, in memory (CURLOPT_CAINFO_BLOB) */
        size_t ca_pem_len;
        const char *cert_file; /* a client certificate (PEM) */
        const void *cert_pem;
        size_t cert_pem_len;
        const char *key_file; /* its private key (PEM) */
        const void *key_pem;
        size_t key_pem_len;
        bool insecure; /* no certificate or host name check: the caller's decision */
};

/**
 * http_client_set_tls() - the TLS settings of an https client; everything copied (key
 * material erased on free). Call before the client is shared; a later call replaces all.
 * Return: 0; -EINVAL (a unix-socket or http:// client, a file and bytes given for one item,
 * a certificate without its key or the reverse; message set); -ENOMEM.
 */
int http_client_set_tls(struct http_client *c, const struct http_tls *tls, struct b4_error *err);
/* A kept connection idle this long is not used again (closed before a server's idle timeout,
 * commonly 90 s, can race a request). */
#define HTTP_IDLE_REUSE_S 60

/**
 * http_client_set_reuse() - keep connections open between exchanges (HTTP/1.1 keep-alive)
 * @idle_max: at most this many idle connections kept (<= 64); 0 = none, the default: each
 *            exchange on a connection of its own
 * With reuse, an exchange sends on a connection an earlier one left open (a clean end: the
 * whole body read), idle for at most HTTP_IDLE_REUSE_S; a new connection resumes its TLS
 * session from the process's cache (http_curl_share()). A kept connection the server closed:
 *   - found closed before use: a new one is opened;
 *   - lost with nothing of the answer received, and none of the request body written (no
 *     body, or not yet sent): libcurl sends the request again on a new connection;
 *   - lost after some of the body was written, before any answer: the exchange fails
 *     -ECONNRESET and is not sent again (it may have been applied): the caller decides.
 * An answer cut after it started fails -EIO as without reuse. Call before the client is
 * shared. Return: 0, -EINVAL (over 64), -ENOMEM.
 */
int http_client_set_reuse(struct http_client *c, size_t idle_max);
/** http_client_connections() - how many connections the client's exchanges opened so far
 * (a test or bench counts reuse with it). Thread-safe. */
uint64_t http_client_connections(struct http_client *c);
/**
 * http_curl_share() - the process's libcurl share (a CURLSH *, thread-safe) of TLS sessions
 * and DNS answers, which clients with reuse use: another libcurl user of the same servers
 * (the Kubernetes exec connections, src/lib/kube/ws.c) sets it as CURLOPT_SHARE to resume
 * the sessions the requests started, and the reverse. NULL when libcurl could not set it
 * up. Lives as long as the process.
 */
void *http_curl_share(void);

/**
 * http_curl_trust() - make the libcurl easy handle @easy (a CURL *) trust exactly the CA
 * certificates of @file or of the PEM bytes @pem (@len), one of them, and no system CA: the
 * PEM is parsed once per process (by its SHA-256, at most 8 CAs) and the parsed store handed
 * to each connection (CURLOPT_SSL_CTX_FUNCTION, OpenSSL), instead of libcurl parsing it for
 * every connection. TLS sessions are kept apart per CA (libcurl's session key names its
 * digest). Used by every https client here and by the kube exec connections (ws.c), so their
 * connections resume each other's sessions.
 * Return: 0; -EINVAL (not exactly one of @file, @pem); -errno reading @file; -ENOENT (no
 * certificate in it, or the cache full); -EOPNOTSUPP (a TLS backend without the callback);
 * on failure the caller sets CURLOPT_CAINFO(_BLOB) itself (libcurl then reports the error).
 */
int http_curl_trust(void *easy, const char *file, const void *pem, size_t len);

/** http_client_free() - NULL ok. Return: NULL. */
struct http_client *http_client_free(struct http_client *c);
/** http_client_socket() - the unix socket path, NULL for a TCP server; borrowed. */
const char *http_client_socket(const struct http_client *c);
/** http_client_target() - the target as given to http_client_new(); borrowed. */
const char *http_client_target(const struct http_client *c);

/** http_escape() - @s percent-encoded for one path segment or query value. Return: heap, NULL on
 * OOM. */
char *http_escape(const char *s);

#define HTTP_NO_TIMEOUT UINT64_MAX

struct http_req {
        const char *method;       /* "GET", "POST", "PUT", "DELETE", "HEAD" */
        const char *path;         /* request target, already URL-encoded, starting with '/' */
        const char *content_type; /* NULL = no body */
        const void *body;         /* borrowed for the call */
        size_t body_len;
        /* http_stream_open(), http_request_each(): up to the response head; http_request():
         * the whole exchange. 0 = 60 s, HTTP_NO_TIMEOUT = none. */
        uint64_t timeout_ms;
        const char *accept; /* an Accept header's value; NULL = none */
        /* "Authorization: Bearer @bearer" for this request instead of the client's token;
         * NULL = the client's. One with a control character fails the request -EINVAL. */
        const char *bearer;
};

/**
 * http_stream_open() - send @req and wait for the response head
 * @cancel_fd: readable once the caller wants to give up (-EBADF = none)
 * Return: 0 with the stream (http_stream_free()), -ECONNREFUSED (no server listening),
 * -EHOSTUNREACH (name not resolved), -ETIMEDOUT, -ECANCELED, -ECONNRESET (a kept connection
 * lost after the body was sent: http_client_set_reuse()), -EIO (any other transport error,
 * TLS included), -EINVAL (a bad http_req.bearer), -ENOMEM; the message names the target.
 * Once the head is complete the stream is returned even if the connection already failed:
 * the body bytes that came are read first, then http_stream_read() fails.
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
 * @max_body: a larger body fails -EFBIG ("response from T is larger than N bytes"), before
 *            it is read when Content-Length says so
 * @header:   optional response header to keep in ret->header_value
 * Return: 0 (any status; http_response_clear()), -EFBIG, or the errors of
 * http_stream_open()/http_stream_read().
 */
int http_request(struct http_client *c,
                 const struct http_req *req,
                 size_t max_body,
                 const char *header,
                 struct http_response *ret,
                 struct b4_error *err);

/*
 * One piece of the body of a response with @status; @data is borrowed for the call.
 * Return: >= 0 to go on, < 0 to stop the transfer with that error.
 */
typedef int (*http_chunk_fn)(long status, const void *data, size_t len, void *userdata);

/* Where http_request_each() puts a body; borrowed for the call. */
struct http_sink {
        http_chunk_fn on_chunk;
        void *userdata;     /* passed to on_chunk */
        int cancel_fd;      /* readable once the caller wants to give up; -EBADF = none */
        const char *header; /* optional response header to keep in ret->header_value */
};

/**
 * http_request_each() - one exchange, the body handed to @sink->on_chunk as it arrives
 * @ret: status, header and the body's length (ret->body stays NULL; http_response_clear())
 * The body of any status is delivered. No time limit after the head: a long-lived body
 * (events, a watch) runs until it ends, the callback stops it, or the cancel fd fires.
 * Return: 0, a negative return of on_chunk, or the errors of http_stream_open() and
 * http_stream_read().
 */
int http_request_each(struct http_client *c,
                      const struct http_req *req,
                      const struct http_sink *sink,
                      struct http_response *ret,
                      struct b4_error *err);
