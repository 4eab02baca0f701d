/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The streamed-reply writer (stream.h): a bounded byte queue between a producer and
 * libmicrohttpd's content-reader callback, and a keepalive ticker.
 *
 * Locking: one mutex per stream guards everything below. The reader callback runs on the
 * connection's polling thread and suspends the connection under the lock when the queue is
 * empty (so a producer cannot slip its wake-up in between); whoever then flips "waiting"
 * back resumes it, outside the lock. A suspended connection is never closed by
 * libmicrohttpd, so the connection pointer stays valid for that resume; once libmicrohttpd
 * drops the response (the request ended: sent, or the client went away) the free callback
 * clears it.
 */

#include "stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/cancel.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "server-internal.h"

#define STREAM_BLOCK_BYTES   (64u * 1024u) /* libmicrohttpd's read size */
#define STREAM_ABORT_POLL_MS 100u          /* how often a blocked producer checks the abort */

struct chunk {
        struct chunk *next;
        size_t len, off; /* data[off..len) is still to send */
        char data[];
};

struct stream {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* room in the queue, closed, gone */
        struct chunk *head, *tail;
        size_t queued;               /* bytes in the queue */
        struct MHD_Connection *conn; /* NULL once libmicrohttpd dropped the response */
        bool waiting;                /* the reader suspended conn for want of data */
        bool closed;                 /* the producer is done */
        bool gone;                   /* libmicrohttpd dropped the response */
        unsigned refs;               /* producer, response, ticker */
        enum stream_format format;
        uint64_t keepalive_ms;
        uint64_t last_write_ms; /* when the last event or keepalive was queued */
        struct b4_cancel *abort;
        pthread_t ticker;
        struct metrics *metrics; /* b4box_stream_clients: its response, created to dropped */
};

enum stream_format stream_format_of(const struct request *rq)
{
        const char *a =
                MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        const char *sse = a ? strstr(a, "text/event-stream") : NULL;
        const char *nd = a ? strstr(a, "application/x-ndjson") : NULL;

        if (sse && (!nd || sse < nd))
                return STREAM_SSE;
        return nd ? STREAM_NDJSON : STREAM_NONE;
}

/* Drop a reference; the last frees. Lock not held. */
static void stream_unref(struct stream *s)
{
        bool last;

        (void)pthread_mutex_lock(&s->lock);
        last = --s->refs == 0;
        (void)pthread_mutex_unlock(&s->lock);
        if (!last)
                return;
        for (struct chunk *c = s->head, *n; c; c = n) {
                n = c->next;
                free(c);
        }
        (void)pthread_mutex_destroy(&s->lock);
        (void)pthread_cond_destroy(&s->changed);
        free(s);
}

/* Lock held. Whether the caller must resume the connection (after unlocking). */
static struct MHD_Connection *take_waiting_locked(struct stream *s)
{
        if (!s->waiting || !s->conn)
                return NULL;
        s->waiting = false;
        return s->conn;
}

static void wake(struct MHD_Connection *conn)
{
        if (conn)
                MHD_resume_connection(conn);
}

/* Lock held. Append @len bytes (a chunk of their own). */
static int enqueue_locked(struct stream *s, const char *p, size_t len)
{
        struct chunk *c = b4_malloc(sizeof(*c) + len);

        if (!c)
                return -ENOMEM;
        *c = (struct chunk){ .len = len };
        memcpy(c->data, p, len);
        if (s->tail)
                s->tail->next = c;
        else
                s->head = c;
        s->tail = c;
        s->queued += len;
        s->last_write_ms = now_msec();
        return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct stream *s = cls;
        size_t n = 0;

        (void)pos;
        (void)pthread_mutex_lock(&s->lock);
        while (s->head && n < max) {
                struct chunk *c = s->head;
                size_t k = c->len - c->off < max - n ? c->len - c->off : max - n;
                memcpy(buf + n, c->data + c->off, k);
                n += k;
                c->off += k;
                if (c->off == c->len) {
                        s->head = c->next;
                        if (!s->head)
                                s->tail = NULL;
                        free(c);
                }
        }
        s->queued -= n;
        if (n > 0) {
                (void)pthread_cond_broadcast(&s->changed);
        } else if (s->closed) {
                (void)pthread_mutex_unlock(&s->lock);
                return MHD_CONTENT_READER_END_OF_STREAM;
        } else {
                s->waiting = true; /* resumed by the next event, keepalive or close */
                MHD_suspend_connection(s->conn);
        }
        (void)pthread_mutex_unlock(&s->lock);
        return (ssize_t)n;
}

/* libmicrohttpd dropped the response: the request is over, sent or not. */
static void reader_free(void *cls)
{
        struct stream *s = cls;

        (void)pthread_mutex_lock(&s->lock);
        s->conn = NULL;
        s->waiting = false;
        if (!s->closed) {
                s->gone = true; /* before the end: the client went away */
                if (s->abort)
                        b4_cancel_fire(s->abort);
        }
        (void)pthread_cond_broadcast(&s->changed);
        (void)pthread_mutex_unlock(&s->lock);
        metrics_gauge_add(s->metrics, METRICS_GAUGE_STREAM_CLIENTS, -1);
        stream_unref(s);
}

static void keepalive_locked(struct stream *s)
{
        static const char sse[] = ": keepalive\n\n";
        static const char nd[] = "{\"event\":\"keepalive\"}\n";

        if (s->format == STREAM_SSE)
                (void)enqueue_locked(s, sse, sizeof(sse) - 1);
        else
                (void)enqueue_locked(s, nd, sizeof(nd) - 1);
}

/* Queue a keepalive whenever a period passed without a write, until closed or gone. */
static void *ticker_main(void *arg)
{
        struct stream *s = arg;

        (void)pthread_mutex_lock(&s->lock);
        while (!s->closed && !s->gone) {
                uint64_t due = s->last_write_ms + s->keepalive_ms;
                if (now_msec() < due) {
                        (void)cond_wait_until_ms(&s->changed, &s->lock, due);
                        continue;
                }
                keepalive_locked(s);
                struct MHD_Connection *conn = take_waiting_locked(s);
                (void)pthread_mutex_unlock(&s->lock);
                wake(conn);
                (void)pthread_mutex_lock(&s->lock);
        }
        (void)pthread_mutex_unlock(&s->lock);
        stream_unref(s);
        return NULL;
}

static struct MHD_Response *response_new(struct stream *s)
{
        struct MHD_Response *resp = MHD_create_response_from_callback(
                MHD_SIZE_UNKNOWN, STREAM_BLOCK_BYTES, reader, s, reader_free);

        if (!resp)
                return NULL;
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                      s->format == STREAM_SSE ? "text/event-stream"
                                                              : "application/x-ndjson");
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        (void)MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        return resp;
}

int stream_open(struct request *rq,
                enum stream_format format,
                struct b4_cancel *abort,
                struct stream **ret)
{
        struct stream *s = b4_calloc(1, sizeof(*s));
        struct MHD_Response *resp;

        if (!s) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return -ENOMEM;
        }
        (void)pthread_mutex_init(&s->lock, NULL);
        (void)pthread_cond_init(&s->changed, NULL);
        s->conn = rq->conn;
        s->format = format;
        s->abort = abort;
        s->keepalive_ms = rq->srv->config->server.stream_keepalive_ms;
        if (s->keepalive_ms == 0)
                s->keepalive_ms = STREAM_KEEPALIVE_MS;
        s->last_write_ms = now_msec();
        s->refs = 1; /* the producer's */
        s->metrics = rq->srv->metrics;
        resp = response_new(s);
        if (!resp) {
                stream_unref(s);
                reply_error(rq, 500, "internal_error", "out of memory");
                return -ENOMEM;
        }
        metrics_gauge_add(s->metrics, METRICS_GAUGE_STREAM_CLIENTS, 1); /* reader_free(): -1 */
        s->refs++; /* the response's: dropped by reader_free() */
        s->refs++; /* the ticker's */
        if (pthread_create(&s->ticker, NULL, ticker_main, s) != 0) {
                s->refs--;
                MHD_destroy_response(resp); /* drops the response's reference */
                stream_unref(s);
                reply_error(rq, 503, "server_busy", "cannot start a thread for the stream");
                return -EAGAIN;
        }
        (void)pthread_detach(s->ticker);
        reply_response(rq, 200, resp);
        *ret = s;
        return 0;
}

/* The wire text of one event into @sb. */
static int format_event(const struct stream *s,
                        struct strbuf *sb,
                        const char *name,
                        int64_t id,
                        const char *data,
                        size_t len)
{
        int r;

        if (s->format == STREAM_SSE) {
                r = strbuf_addf(sb, "event: %s\n", name);
                if (r >= 0 && id >= 0)
                        r = strbuf_addf(sb, "id: %lld\n", (long long)id);
                if (r >= 0)
                        r = strbuf_adds(sb, "data: ");
                if (r >= 0)
                        r = strbuf_add(sb, data, len);
                return r < 0 ? r : strbuf_adds(sb, "\n\n");
        }
        r = strbuf_addf(sb, "{\"event\":\"%s\",", name);
        if (r >= 0 && id >= 0)
                r = strbuf_addf(sb, "\"id\":%lld,", (long long)id);
        if (r >= 0)
                r = strbuf_adds(sb, "\"data\":");
        if (r >= 0)
                r = strbuf_add(sb, data, len);
        return r < 0 ? r : strbuf_adds(sb, "}\n");
}

/* Lock held: wait until the queue has room for @len, the client is gone or (@abortable) the
 * abort fired. */
static int wait_room_locked(struct stream *s, size_t len, bool abortable)
{
        while (s->queued > 0 && s->queued + len > STREAM_QUEUE_MAX_BYTES) {
                if (s->gone)
                        return -EPIPE;
                if (abortable && b4_cancel_is_set(s->abort))
                        return -ECANCELED;
                (void)cond_wait_until_ms(&s->changed, &s->lock, now_msec() + STREAM_ABORT_POLL_MS);
        }
        return s->gone ? -EPIPE : 0;
}

static int queue_event(struct stream *s,
                       const char *name,
                       int64_t id,
                       const char *data,
                       size_t len,
                       bool abortable)
{
        struct MHD_Connection *conn = NULL;
        struct strbuf sb;
        int r;

        strbuf_init(&sb, SIZE_MAX);
        r = format_event(s, &sb, name, id, data, len);
        if (r < 0) {
                strbuf_release(&sb);
                return -ENOMEM;
        }
        (void)pthread_mutex_lock(&s->lock);
        r = wait_room_locked(s, sb.len, abortable);
        if (r >= 0)
                r = enqueue_locked(s, sb.buf, sb.len);
        if (r >= 0)
                conn = take_waiting_locked(s);
        (void)pthread_mutex_unlock(&s->lock);
        strbuf_release(&sb);
        wake(conn);
        return r;
}

int stream_event(struct stream *s, const char *name, int64_t id, const char *data, size_t len)
{
        return queue_event(s, name, id, data, len, true);
}

int stream_end(struct stream *s, const char *name, const char *data, size_t len)
{
        int r = queue_event(s, name, -1, data, len, false);

        stream_close(s);
        return r;
}

bool stream_gone(struct stream *s)
{
        bool gone;

        (void)pthread_mutex_lock(&s->lock);
        gone = s->gone;
        (void)pthread_mutex_unlock(&s->lock);
        return gone;
}

struct stream *stream_close(struct stream *s)
{
        struct MHD_Connection *conn;

        if (!s)
                return NULL;
        (void)pthread_mutex_lock(&s->lock);
        s->closed = true;
        s->abort = NULL; /* borrowed until now */
        conn = take_waiting_locked(s);
        (void)pthread_cond_broadcast(&s->changed);
        (void)pthread_mutex_unlock(&s->lock);
        wake(conn);
        stream_unref(s);
        return NULL;
}
