/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tools/call: the arguments and the thread they name, the wait for the thread's run slot
 * (bounded: MCP_QUEUE_MAX waiting calls per thread, each at most queue_wait_ms), progress
 * notifications with the last output line while runBash runs, cancellation, and the result
 * document mapped to a CallToolResult (a tool failure is isError, a non-zero exit is not).
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "mcp-internal.h"

#define PROGRESS_LINE_MAX 200 /* bytes of the last output line a progress message carries */
#define PROGRESS_GAP_MS   200 /* at most five progress notifications a second */
#define QUEUE_POLL_MS     20

char *mcp_base64_decode(const char *s, size_t len)
{
        char *out = NULL;
        size_t n = 0;

        if (base64_decode(s, len, &out, &n) < 0)
                return NULL;
        if (strlen(out) != n)
                out = (free(out), NULL);
        return out;
}

/* ---- progress ---- */

struct progress {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool started, stop, fresh;
        const struct jv *token;
        struct mcp_request *q;
        struct b4_cancel *cancel; /* fired when the client is gone */
        uint64_t every_ms;
        int64_t count;
        char cur[PROGRESS_LINE_MAX + 1], last[PROGRESS_LINE_MAX + 1];
        size_t cur_len;
};

/* mcp_output_fn: keep the last complete (non-empty) line, cut at PROGRESS_LINE_MAX. */
static void progress_output(void *ctx, const char *p, size_t n)
{
        struct progress *pg = ctx;

        pthread_mutex_lock(&pg->lock);
        for (size_t i = 0; i < n; i++) {
                if (p[i] == '\n') {
                        if (pg->cur_len) {
                                memcpy(pg->last, pg->cur, pg->cur_len);
                                pg->last[pg->cur_len] = '\0';
                                pg->fresh = true;
                        }
                        pg->cur_len = 0;
                } else if (p[i] != '\r' && pg->cur_len < PROGRESS_LINE_MAX) {
                        pg->cur[pg->cur_len++] = p[i];
                }
        }
        if (pg->fresh)
                pthread_cond_signal(&pg->cond);
        pthread_mutex_unlock(&pg->lock);
}

static int progress_send(struct progress *pg, const char *line)
{
        /* a line cut inside a UTF-8 sequence, or not UTF-8 at all, is left out */
        struct jv *msg = *line ? jv_string_new(line) : NULL;
        cleanup_free char *json = rpc_notification(
                "notifications/progress", jv_pack("{s:O, s:I, s:o*}", "progressToken", pg->token,
                                                  "progress", ++pg->count, "message", msg));

        if (!json)
                return -ENOMEM;
        return pg->q->emit(pg->q->emit_ctx, json, strlen(json));
}

/* A notification when a line completes (at most one per PROGRESS_GAP_MS) and a heartbeat
 * every every_ms without one, until stopped. */
static void *progress_main(void *arg)
{
        struct progress *pg = arg;
        uint64_t next_beat = now_msec() + pg->every_ms, not_before = 0;

        pthread_mutex_lock(&pg->lock);
        while (!pg->stop) {
                uint64_t now = now_msec();
                bool due = (pg->fresh && now >= not_before) || now >= next_beat;
                if (!due) {
                        uint64_t until = pg->fresh ? not_before : next_beat;
                        (void)cond_wait_until_ms(&pg->cond, &pg->lock, until);
                        continue;
                }
                char line[PROGRESS_LINE_MAX + 1];
                memcpy(line, pg->last, sizeof(line));
                pg->fresh = false;
                pthread_mutex_unlock(&pg->lock);
                if (progress_send(pg, line) < 0)
                        b4_cancel_fire(pg->cancel); /* the client is gone */
                pthread_mutex_lock(&pg->lock);
                not_before = now_msec() + PROGRESS_GAP_MS;
                next_beat = now_msec() + pg->every_ms;
        }
        pthread_mutex_unlock(&pg->lock);
        return NULL;
}

static void progress_start(struct progress *pg,
                           struct mcp_request *q,
                           const struct jv *token,
                           struct b4_cancel *cancel)
{
        *pg = (struct progress){ .token = token,
                                 .q = q,
                                 .cancel = cancel,
                                 .every_ms = mcp_server_options(q->srv)->progress_ms };
        pthread_mutex_init(&pg->lock, NULL);
        pthread_cond_init(&pg->cond, NULL);
        pg->started = pthread_create(&pg->thread, NULL, progress_main, pg) == 0;
}

static void progress_stop(struct progress *pg)
{
        if (pg->started) {
                pthread_mutex_lock(&pg->lock);
                pg->stop = true;
                pthread_cond_signal(&pg->cond);
                pthread_mutex_unlock(&pg->lock);
                (void)pthread_join(pg->thread, NULL);
        }
        pthread_cond_destroy(&pg->cond);
        pthread_mutex_destroy(&pg->lock);
}

/* ---- the call ---- */

/* Wait for @ms or the cancel token. Return: true when cancelled. */
static bool wait_cancelled(struct b4_cancel *c, int ms)
{
        struct pollfd p = { .fd = b4_cancel_fd(c), .events = POLLIN };

        (void)poll(&p, 1, ms);
        return b4_cancel_is_set(c);
}

/* The backend's call; while the thread's slot is held, wait in its queue and try again. */
static int call_queued(struct mcp_request *q,
                       const struct mcp_call *c,
                       struct jv **ret_doc,
                       struct b4_error *err)
{
        const struct mcp_options *o = mcp_server_options(q->srv);
        int r = o->ops->call(o->data, c, ret_doc, err);
        uint64_t deadline;

        if (r != -EBUSY)
                return r;
        if (!mcp_queue_enter(q->srv, c->thread))
                return b4_error_set(err, -EBUSY,
                                    "thread '%s' is busy and %u calls already wait for it",
                                    c->thread, o->queue_max);
        deadline = now_msec() + o->queue_wait_ms;
        while (r == -EBUSY) {
                if (wait_cancelled(c->cancel, QUEUE_POLL_MS)) {
                        r = b4_error_set(err, -ECANCELED,
                                         "the call was cancelled while it waited for thread '%s'",
                                         c->thread);
                        break;
                }
                if (now_msec() >= deadline) {
                        r = b4_error_set(err, -EBUSY,
                                         "thread '%s' stayed busy for %llu ms (the queue's bound)",
                                         c->thread, (unsigned long long)o->queue_wait_ms);
                        break;
                }
                *err = (struct b4_error){ 0 };
                r = o->ops->call(o->data, c, ret_doc, err);
        }
        mcp_queue_leave(q->srv, c->thread);
        return r;
}

static struct jv *text_block(struct jv *text)
{
        return jv_pack("{s:s, s:o}", "type", "text", "text", text);
}

/* A CallToolResult with isError and @msg. */
static struct jv *tool_error(const char *msg)
{
        return jv_pack("{s:[o], s:b}", "content", text_block(jv_string_new(msg)), "isError", true);
}

static struct jv *as_text(const struct jv *v)
{
        cleanup_free char *json = NULL;

        if (jv_is_string(v))
                return jv_ref((struct jv *)v);
        return jv_dump(v, 0, &json) < 0 ? NULL : jv_string_new(json);
}

/* {ok:true,result} -> content (+ structuredContent); {ok:false,error} -> isError. */
static struct jv *call_result(const struct mcp_tool *t, const struct jv *doc)
{
        const struct jv *res = jv_object_get(doc, "result");
        const struct jv *e = jv_object_get(doc, "error");
        const struct jv *perm = jv_object_get(doc, "permissionRequest");

        if (jv_is_true(jv_object_get(doc, "ok")))
                return jv_pack("{s:[o], s:O*, s:b}", "content", text_block(as_text(res)),
                               "structuredContent",
                               mcp_tool_structured(t) && jv_is_object(res) ? res : NULL, "isError",
                               false);
        const char *msg = jv_string(jv_object_get(e, "message"));
        return jv_pack("{s:[o, o*], s:b, s:{s:O?, s:O*}}", "content",
                       text_block(jv_string_new(msg ? msg : "the tool failed")),
                       perm ? text_block(as_text(perm)) : NULL, "isError", true, "_meta",
                       "b4box/code", jv_object_get(e, "code"), "b4box/permissionRequest", perm);
}

/* The thread the call names. Return: it (borrowed), or NULL with *@why set. */
static const char *call_thread(
        struct mcp_request *q, const struct mcp_tool *t, const struct jv *args, char *why, size_t n)
{
        const char *bound = mcp_server_thread(q->srv);
        const struct jv *v = jv_object_get(args, "thread_id");

        if (!mcp_tool_needs_thread(t))
                return "";
        if (v &&
            (!jv_is_string(v) || !*jv_string(v) || jv_string_length(v) != strlen(jv_string(v)))) {
                (void)snprintf(why, n, "%s: thread_id must be a non-empty string",
                               mcp_tool_name(t));
                return NULL;
        }
        if (bound && v && strcmp(jv_string(v), bound) != 0) {
                (void)snprintf(why, n, "%s: this server is bound to thread '%s'", mcp_tool_name(t),
                               bound);
                return NULL;
        }
        if (bound)
                return bound;
        if (!v)
                (void)snprintf(why, n, "%s: thread_id is required", mcp_tool_name(t));
        return v ? jv_string(v) : NULL;
}

/* @args without thread_id (a new reference). */
static struct jv *without_thread(const struct jv *args)
{
        struct jv *o = jv_object_new();

        for (void *it = jv_object_iter(args); o && it; it = jv_object_next(args, it))
                if (strcmp(jv_iter_key(it), "thread_id") != 0 &&
                    jv_object_set_new(o, jv_iter_key(it), jv_ref(jv_iter_value(it))) < 0)
                        o = jv_unref(o);
        return o;
}

/* Run the call with its cancel token tracked and progress while it runs; *@ret_cancelled:
 * whether it was cancelled. */
static struct jv *run_call(struct mcp_request *q,
                           const struct mcp_tool *t,
                           struct mcp_call *c,
                           bool *ret_cancelled)
{
        const struct jv *meta = jv_object_get(q->msg->params, "_meta");
        const struct jv *token = jv_object_get(meta, "progressToken");
        cleanup_(jv_unrefp) struct jv *doc = NULL;
        struct inflight *f = NULL;
        struct progress pg = { 0 };
        struct b4_error err = { 0 };
        bool progress = token && q->emit && (jv_is_string(token) || jv_is_safe_integer(token));
        int r;

        bool trackable;
        const char *scope = mcp_request_scope(q->hdr, &trackable);

        c->cancel = b4_cancel_new();
        if (!c->cancel ||
            (trackable && mcp_session_track(q->ss, scope, q->msg->id, c->cancel, &f) < 0)) {
                b4_cancel_free(c->cancel);
                return NULL;
        }
        if (progress) {
                progress_start(&pg, q, token, c->cancel);
                c->on_output = progress_output;
                c->output_ctx = &pg;
        }
        r = call_queued(q, c, &doc, &err);
        if (progress)
                progress_stop(&pg);
        mcp_session_untrack(q->ss, f);
        *ret_cancelled = b4_cancel_is_set(c->cancel);
        c->cancel = b4_cancel_free(c->cancel);
        if (r < 0)
                return tool_error(err.msg[0] ? err.msg : strerror(-r));
        return call_result(t, doc);
}

int mcp_tools_call(struct mcp_request *q)
{
        const struct jv *p = q->msg->params;
        const char *name = jv_string(jv_object_get(p, "name"));
        const struct jv *args = jv_object_get(p, "arguments");
        cleanup_(jv_unrefp) struct jv *empty = jv_object_new();
        cleanup_(jv_unrefp) struct jv *stripped = NULL;
        const struct mcp_tool *t;
        char why[256], msg[320];

        if (!name)
                return mcp_reply_error(q, MCP_INVALID_PARAMS,
                                       "tools/call: params.name must be a string");
        t = mcp_tool_find(q->srv, name);
        if (!t) {
                (void)snprintf(msg, sizeof(msg), "Unknown tool: %.256s", name);
                return mcp_reply_error(q, MCP_INVALID_PARAMS, msg);
        }
        if (args && !jv_is_object(args))
                return mcp_reply_error(q, MCP_INVALID_PARAMS,
                                       "tools/call: params.arguments must be an object");
        if (!empty)
                return -ENOMEM;
        const char *thread = call_thread(q, t, args ? args : empty, why, sizeof(why));
        if (!thread)
                return mcp_reply_result(q, tool_error(why));
        stripped = without_thread(args ? args : empty);
        if (!stripped)
                return -ENOMEM;
        struct mcp_call c = {
                .thread = thread, .tool = name, .args = stripped, .caller = q->caller
        };
        bool cancelled = false;
        struct jv *res = run_call(q, t, &c, &cancelled);
        /* stdio: a cancelled request is not answered (the spec's SHOULD); an HTTP request
         * still is (its POST waits for a response) */
        if (cancelled && res && !(q->hdr && q->hdr->present)) {
                jv_unref(res);
                return 0;
        }
        return mcp_reply_result(q, res);
}

/* ---- a cancel token forwarded to another ---- */

struct mcp_forward {
        pthread_t thread;
        struct b4_cancel *from, *to, *stop;
};

static void *forward_main(void *arg)
{
        struct mcp_forward *f = arg;
        struct pollfd p[2] = { { .fd = b4_cancel_fd(f->from), .events = POLLIN },
                               { .fd = b4_cancel_fd(f->stop), .events = POLLIN } };

        while (poll(p, 2, -1) < 0 && errno == EINTR)
                ;
        if (b4_cancel_is_set(f->from) && !b4_cancel_is_set(f->stop))
                b4_cancel_fire(f->to);
        return NULL;
}

int mcp_cancel_forward(struct b4_cancel *from, struct b4_cancel *to, struct mcp_forward **ret)
{
        struct mcp_forward *f = b4_calloc(1, sizeof(*f));
        int r;

        if (!f)
                return -ENOMEM;
        *f = (struct mcp_forward){ .from = from, .to = to, .stop = b4_cancel_new() };
        if (!f->stop) {
                free(f);
                return -ENOMEM;
        }
        r = -pthread_create(&f->thread, NULL, forward_main, f);
        if (r < 0) {
                b4_cancel_free(f->stop);
                free(f);
                return r;
        }
        *ret = f;
        return 0;
}

struct mcp_forward *mcp_cancel_forward_stop(struct mcp_forward *f)
{
        if (!f)
                return NULL;
        b4_cancel_fire(f->stop);
        (void)pthread_join(f->thread, NULL);
        b4_cancel_free(f->stop);
        free(f);
        return NULL;
}
