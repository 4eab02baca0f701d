/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pieces of the kube client that its files share and its tests and fuzzers reach:
 * the token source, the token bucket, the watch line parser and message sanitising. */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "b4box/error.h"

#include "kube/kube.h"

struct jv;

/* ---- token source (rest.c) ---- */

/* client-go's cached file token source re-reads each minute: so do we */
#define KUBE_TOKEN_MAX       (64u * 1024)
#define KUBE_TOKEN_REREAD_MS 60000u

/*
 * A bearer token: static, or a file re-read when its identity (dev, inode, size, mtime)
 * changes, when KUBE_TOKEN_REREAD_MS passed, or after kube_token_invalidate().
 */
struct kube_token {
        pthread_mutex_t lock;
        char *file;  /* owned; NULL = static */
        char *value; /* owned; the current token, NULL = none */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        uint64_t read_ms; /* now_msec() of the last read; 0 = never */
        bool stale;
};

/* Copies @file and @value. Return: 0, -ENOMEM. */
int kube_token_init(struct kube_token *t, const char *file, const char *value);
void kube_token_release(struct kube_token *t);
/* A heap copy of the token to send (NULL = none). Return: 0 or -errno (message names the file). */
int kube_token_get(struct kube_token *t, char **ret, struct b4_error *err);
void kube_token_invalidate(struct kube_token *t);

/* ---- token bucket (rest.c) ---- */

struct kube_bucket {
        pthread_mutex_t lock;
        double rate;   /* tokens per second; <= 0 = unlimited */
        double burst;  /* capacity */
        double tokens; /* may go negative: reservations ahead of time */
        uint64_t last_us;
};

void kube_bucket_init(struct kube_bucket *b, double qps, unsigned burst, uint64_t now_us);
void kube_bucket_release(struct kube_bucket *b);
/* Take one token at @now_us (CLOCK_MONOTONIC): how many microseconds to wait before using
 * it (0 = now). Reservations queue fairly: each caller waits for its own token. */
uint64_t kube_bucket_reserve(struct kube_bucket *b, uint64_t now_us);

/* ---- messages ---- */

/* @len bytes of untrusted text into @buf (size @n): control characters and bytes >= 0x7f
 * become '?', at most n - 1 bytes, NUL-terminated. */
void kube_sanitize(const char *s, size_t len, char *buf, size_t n);

/* kube_status_decode() of a parsed Status @o (NULL = none): the errno of @status. */
int kube_status_from_object(long status, const struct jv *o, struct b4_error *err);

/* ---- streams (rest.c) ---- */

struct http_stream;
/*
 * GET @path_query as a stream (a watch): the token bucket, the bearer token, a 401 re-read
 * once. Return: 0 with a 2xx stream in *ret (http_stream_free()); a non-2xx answer decoded
 * as kube_status_decode() does; transport errors as kube_request().
 */
int kube_stream_open(struct kube_client *c,
                     const char *path_query,
                     int cancel_fd,
                     struct http_stream **ret,
                     struct b4_error *err);

/* kube_list() with a cancel fd (readable = -ECANCELED): the informer's, stoppable. */
int kube_list_cancellable(struct kube_client *c,
                          const char *path,
                          const char *label_selector,
                          const char *field_selector,
                          int cancel_fd,
                          struct jv **ret_items,
                          char **ret_rv,
                          struct b4_error *err);

/* ---- watch lines (watch.c) ---- */

/* Split NDJSON into events; fed any bytes, with the line cap of kube.h. */
struct kube_watch_parser {
        char *line; /* owned; the partial line */
        size_t len, cap;
        char *rv; /* owned; the last resourceVersion seen */
};

void kube_watch_parser_init(struct kube_watch_parser *p);
void kube_watch_parser_release(struct kube_watch_parser *p);
/*
 * Feed @len bytes; each complete line is decoded and handed to @fn (blank lines skipped).
 * Return: 0, or what kube_watch() returns for a bad event, an ERROR event or @fn's stop.
 */
int kube_watch_parser_feed(struct kube_watch_parser *p,
                           const char *data,
                           size_t len,
                           kube_event_fn fn,
                           void *userdata,
                           struct b4_error *err);
/* The end of the body: a partial last line is decoded too. Return: as feed. */
int kube_watch_parser_finish(struct kube_watch_parser *p,
                             kube_event_fn fn,
                             void *userdata,
                             struct b4_error *err);

/* ---- configuration (config.c) ---- */

/* A deep copy of @src into @dst. Return: 0, -ENOMEM (@dst then released). */
int kube_config_copy(struct kube_config *dst, const struct kube_config *src);
