/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's calls as a stream of events (docs/http-api.md, "Streaming"): the producer side of
 * a streamed POST /threads/{id}/tools/{tool} or /runs. It runs after the 200 went out
 * (request_detach()), holding the run slot, and writes
 *   stdout / stderr  {"offset":N,"text":"..."}           id: N (the chunk's first byte)
 *                    ("call":i first, on /runs)
 *   exit             the call's result document (one-call route) or {"results":[...]}
 *   error            {"message":"..."} when the run failed inside (out of memory)
 * Offsets count the stream's raw bytes. A chunk's text is UTF-8: a sequence cut by the chunk
 * boundary is held for the next chunk, and a byte that cannot start valid UTF-8 reads as
 * U+FFFD (the exit event's stdout/stderr are decoded as always).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/cancel.h"
#include "b4box/tools.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "server-internal.h"
#include "stream.h"

#define UTF8_HELD_MAX 3

struct run_events {
        struct b4_run *run;
        struct stream *st;
        struct metrics *metrics;
        struct jv *calls; /* a reference: [{tool, args}] */
        bool single;      /* the one-call route: exit carries the result itself */
        size_t call;      /* the call running */
        uint64_t off[3];  /* bytes seen per stream (index: enum b4_exec_stream) */
        char held[3][UTF8_HELD_MAX];
        size_t n_held[3];
        char traceparent[TRACEPARENT_LEN + 1]; /* the request's, or "" */
};

/* Length of the UTF-8 sequence a lead byte starts; 0 for a byte that cannot lead. */
static size_t utf8_seq_len(unsigned char c)
{
        return c < 0x80                 ? 1
               : c >= 0xc2 && c <= 0xdf ? 2
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4
                                        : 0;
}

/* How many bytes at the end of @p[0..n) are an incomplete (so far valid) sequence. */
static size_t utf8_cut_tail(const char *p, size_t n)
{
        for (size_t k = 1; k <= UTF8_HELD_MAX && k <= n; k++) {
                unsigned char c = (unsigned char)p[n - k];
                if ((c & 0xc0) == 0x80)
                        continue; /* a continuation byte: look further back */
                size_t want = utf8_seq_len(c);
                return want > k ? k : 0;
        }
        return 0;
}

/* Append @p[0..n) to @sb as a JSON string, each byte that starts no valid sequence U+FFFD. */
static int append_text(struct strbuf *sb, const char *p, size_t n)
{
        cleanup_free char *u = NULL;
        size_t ulen = 0;

        if (utf8_is_valid(p, n))
                return jv_append_string(sb, p, n);
        u = b4_malloc(n * 3 + 1);
        if (!u)
                return -ENOMEM;
        for (size_t i = 0; i < n;) {
                size_t k = utf8_seq_len((unsigned char)p[i]);
                if (k > 0 && i + k <= n && utf8_is_valid(p + i, k)) {
                        memcpy(u + ulen, p + i, k);
                        ulen += k;
                        i += k;
                } else {
                        memcpy(u + ulen, "\xef\xbf\xbd", 3);
                        ulen += 3;
                        i++;
                }
        }
        return jv_append_string(sb, u, ulen);
}

/* One stdout/stderr event of @p[0..n) starting at byte @off of its stream. */
static int chunk_event(
        struct run_events *ev, enum b4_exec_stream which, uint64_t off, const char *p, size_t n)
{
        struct strbuf sb;
        int r = 0;

        if (n == 0)
                return 0;
        strbuf_init(&sb, SIZE_MAX);
        if (!ev->single)
                r = strbuf_addf(&sb, "{\"call\":%zu,", ev->call);
        else
                r = strbuf_addc(&sb, '{');
        if (r >= 0)
                r = strbuf_addf(&sb, "\"offset\":%llu,\"text\":", (unsigned long long)off);
        if (r >= 0)
                r = append_text(&sb, p, n);
        if (r >= 0)
                r = strbuf_addc(&sb, '}');
        if (r >= 0)
                r = stream_event(ev->st, which == B4_EXEC_STDOUT ? "stdout" : "stderr",
                                 (int64_t)off, sb.buf, sb.len);
        strbuf_release(&sb);
        return r;
}

/* b4_exec_output_fn: the held tail of the last chunk, then this one up to a whole sequence. */
static void on_output(void *userdata, enum b4_exec_stream which, const char *p, size_t n)
{
        struct run_events *ev = userdata;
        size_t i = which == B4_EXEC_STDERR ? 2 : 1;
        uint64_t off = ev->off[i] - ev->n_held[i];
        cleanup_free char *joined = NULL;

        ev->off[i] += n;
        if (ev->n_held[i] > 0) {
                joined = b4_malloc(ev->n_held[i] + n);
                if (!joined)
                        return;
                memcpy(joined, ev->held[i], ev->n_held[i]);
                memcpy(joined + ev->n_held[i], p, n);
                p = joined;
                n += ev->n_held[i];
        }
        size_t cut = utf8_cut_tail(p, n);
        memcpy(ev->held[i], p + n - cut, cut);
        ev->n_held[i] = cut;
        (void)chunk_event(ev, which, off, p, n - cut); /* a client gone: the abort fired */
}

/* After a call: what is still held goes out as it is. */
static void flush_held(struct run_events *ev)
{
        for (size_t i = 1; i <= 2; i++) {
                if (ev->n_held[i] == 0)
                        continue;
                (void)chunk_event(ev, i == 1 ? B4_EXEC_STDOUT : B4_EXEC_STDERR,
                                  ev->off[i] - ev->n_held[i], ev->held[i], ev->n_held[i]);
                ev->n_held[i] = 0;
        }
}

/* One call's result document as JSON text (heap), or NULL with @err set. */
static char *call_one(struct run_events *ev, const struct jv *c, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *empty = jv_object_new();
        const char *tool = jv_string(jv_object_get(c, "tool"));
        const struct jv *args = jv_object_get(c, "args");
        struct b4_tool_result res = { 0 };
        uint64_t t0 = now_usec();
        char *json = NULL;

        if (b4_cancel_is_set(b4_run_cancel_token(ev->run)))
                return strdup(RUN_CANCELLED_RESULT);
        memset(ev->off, 0, sizeof(ev->off));
        cleanup_(jv_unrefp) struct jv *traced =
                trace_tool_args(ev->traceparent, tool, args ? args : empty);

        if (!traced)
                return b4_error_set(err, -ENOMEM, "out of memory"), NULL;
        if (b4_run_call(ev->run, tool, traced, &res, err) < 0)
                return NULL;
        flush_held(ev);
        metrics_tool_call(ev->metrics, tool, res.ok, res.code, now_usec() - t0);
        if (jv_dump(res.doc, 0, &json) < 0)
                (void)b4_error_set(err, -ENOMEM, "out of memory");
        b4_tool_result_clear(&res);
        return json;
}

static int run_all(struct run_events *ev, struct strbuf *out, struct b4_error *err)
{
        int r = ev->single ? 0 : strbuf_adds(out, "{\"results\":[");

        for (size_t i = 0; r >= 0 && i < jv_array_size(ev->calls); i++) {
                ev->call = i;
                cleanup_free char *res = call_one(ev, jv_array_get(ev->calls, i), err);
                if (!res)
                        return -EIO;
                if (i > 0)
                        r = strbuf_addc(out, ',');
                if (r >= 0)
                        r = strbuf_adds(out, res);
        }
        if (r >= 0 && !ev->single)
                r = strbuf_adds(out, "]}");
        return r < 0 ? b4_error_set(err, r, "results too large") : 0;
}

static void run_events_main(void *ctx)
{
        struct run_events *ev = ctx;
        struct b4_error err = { 0 };
        struct strbuf out;
        int r;

        strbuf_init(&out, RESPONSE_MAX_BYTES);
        r = run_all(ev, &out, &err);
        /* the slot is free before the last event goes: a client that saw it may run again */
        b4_run_set_output(ev->run, NULL, NULL);
        ev->run = b4_run_end(ev->run);
        if (r >= 0) {
                (void)stream_end(ev->st, "exit", out.buf, out.len);
        } else {
                cleanup_free char *msg = NULL;
                cleanup_free char *data = NULL;
                if (jv_quote(err.msg[0] ? err.msg : "internal error", &msg) >= 0 &&
                    b4_asprintf(&data, "{\"message\":%s}", msg) >= 0)
                        (void)stream_end(ev->st, "error", data, strlen(data));
                else
                        stream_close(ev->st);
        }
        strbuf_release(&out);
        jv_unref(ev->calls);
        free(ev);
}

int run_events_start(struct request *rq,
                     enum stream_format format,
                     struct b4_run *run,
                     struct jv *calls,
                     bool single)
{
        struct run_events *ev = b4_calloc(1, sizeof(*ev));

        if (!ev) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return -ENOMEM;
        }
        *ev = (struct run_events){
                .run = run, .metrics = rq->srv->metrics, .calls = jv_ref(calls), .single = single
        };
        memcpy(ev->traceparent, rq->traceparent, sizeof(ev->traceparent));
        if (stream_open(rq, format, b4_run_cancel_token(run), &ev->st) < 0) {
                jv_unref(ev->calls);
                free(ev);
                return -ENOMEM;
        }
        b4_run_set_output(run, on_output, ev);
        request_detach(rq, run_events_main, ev);
        return 0;
}
