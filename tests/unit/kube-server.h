/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A scripted HTTP/1.1 server on 127.0.0.1 for the kube client's tests: one connection per
 * reply, in order; each request (head and body) is kept for the test to check. A reply may
 * run a hook first (rotate a token file, say) or hang until the server stops.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define KS_MAX     16
#define KS_REQ_MAX 16384

struct ks;
typedef void (*ks_hook_fn)(struct ks *s, size_t i);

struct ks_reply {
        char *raw;       /* owned: the response bytes (ks_resp()) */
        bool hang;       /* after raw, keep the connection open until ks_stop() */
        ks_hook_fn hook; /* run once the request is in, before the reply */
};

struct ks {
        int listen_fd;
        int stop[2];
        char url[64];
        struct ks_reply replies[KS_MAX];
        size_t n;
        size_t served;
        char requests[KS_MAX][KS_REQ_MAX];
        void *userdata;
        pthread_t thread;
        pthread_mutex_t lock;
};

/* "HTTP/1.1 <code> X" with Content-Length, Connection: close, @headers (CRLF-separated
 * lines, each ending in \r\n, or NULL) and @body. Return: heap. */
char *ks_resp(int code, const char *headers, const char *body);
/* Append a reply (takes @raw). */
void ks_add(struct ks *s, char *raw, bool hang, ks_hook_fn hook);
void ks_start(struct ks *s);
void ks_stop(struct ks *s);
/* How many requests came in. */
size_t ks_served(struct ks *s);
