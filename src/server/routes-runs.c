/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs: POST /threads/{id}/runs {calls: [{tool, args}...]} and the one-call form
 * POST /threads/{id}/tools/{tool}. A run holds the thread's slot for all its calls; a tool
 * failure is a result ({ok:false,...}), not an HTTP error.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/cancel.h"
#include "b4box/tools.h"

#include "base/macro.h"
#include "base/time-util.h"
#include "server-internal.h"

#define MAX_CALLS_PER_RUN 256

/*
 * One call: its result document as JSON text, or NULL with a reply queued (an internal
 * failure). Metrics read the result's ok field; the document is serialised here, once.
 */
static char *run_one(struct request *rq,
                     struct b4_run *run,
                     const char *tool,
                     const struct jv *args)
{
        struct b4_tool_result res = { 0 };
        struct b4_error err = { 0 };
        char *json = NULL;
        uint64_t t0 = now_usec();

        if (b4_cancel_is_set(b4_run_cancel_token(run)))
                return strdup(RUN_CANCELLED_RESULT);
        cleanup_(jv_unrefp) struct jv *traced = trace_tool_args(rq->traceparent, tool, args);

        if (!traced) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return NULL;
        }
        if (b4_run_call(run, tool, traced, &res, &err) < 0) {
                reply_b4_error(rq, &err);
                return NULL;
        }
        metrics_tool_call(rq->srv->metrics, tool, res.ok, res.code, now_usec() - t0);
        if (jv_dump(res.doc, 0, &json) < 0)
                reply_error(rq, 500, "internal_error", "out of memory");
        b4_tool_result_clear(&res);
        return json;
}

/*
 * A streamed reply decides its refusals before the 200: what the calls would refuse about
 * their arguments is a 400 invalid_arguments naming the call (/runs) instead of a result.
 */
static bool stream_args_ok(struct request *rq, struct b4_run *run, const struct jv *calls)
{
        for (size_t i = 0; i < jv_array_size(calls); i++) {
                const struct jv *c = jv_array_get(calls, i);
                struct b4_tool_result res = { 0 };
                struct b4_error err = { 0 };
                cleanup_(jv_unrefp) struct jv *empty = jv_object_new();
                const struct jv *args = jv_object_get(c, "args");

                if (b4_run_check(run, jv_string(jv_object_get(c, "tool")), args ? args : empty,
                                 &res, &err) < 0) {
                        reply_b4_error(rq, &err);
                        return false;
                }
                if (!res.ok) {
                        struct jv *e = jv_object_get(res.doc, "error");
                        const char *msg = jv_string(jv_object_get(e, "message"));
                        if (jv_array_size(calls) > 1)
                                reply_error(rq, 400, res.code, "calls[%zu]: %s", i, msg);
                        else
                                reply_error(rq, 400, res.code, "%s", msg);
                        b4_tool_result_clear(&res);
                        return false;
                }
                b4_tool_result_clear(&res);
        }
        return true;
}

/* Answer with a stream of @calls' events; the run is taken either way. */
static void stream_calls(struct request *rq,
                         enum stream_format format,
                         struct b4_run *run,
                         struct jv *calls,
                         bool single)
{
        if (!calls) {
                reply_error(rq, 500, "internal_error", "out of memory");
                b4_run_end(run);
                return;
        }
        if (!stream_args_ok(rq, run, calls) || run_events_start(rq, format, run, calls, single) < 0)
                b4_run_end(run);
}

static bool begin(struct request *rq, struct b4_run **ret)
{
        struct b4_error err = { 0 };

        if (b4_runtime_run_begin(rq->srv->opts.runtime, rq->thread.id, ret, &err) < 0) {
                reply_b4_error(rq, &err);
                return false;
        }
        rq->interrupted_ms = b4_run_interrupted_ms(*ret);
        if (rq->interrupted_ms) {
                char ms[24];

                (void)snprintf(ms, sizeof(ms), "%lld", (long long)rq->interrupted_ms);
                server_log("warning", "the thread's previous run was interrupted", "thread",
                           rq->thread.id, "started_ms", ms, NULL);
        }
        return true;
}

/* Validate {calls:[{tool, args}]} before taking the slot. */
static bool calls_valid(struct request *rq, const struct jv *calls)
{
        static const char *const call_keys[] = { "tool", "args", NULL };
        size_t n = jv_array_size(calls);

        if (!jv_is_array(calls) || n == 0 || n > MAX_CALLS_PER_RUN) {
                reply_error(rq, 400, "invalid_request", "calls must be an array of 1 to %d calls",
                            MAX_CALLS_PER_RUN);
                return false;
        }
        for (size_t i = 0; i < n; i++) {
                struct jv *c = jv_array_get(calls, i);
                if (!jv_is_object(c) || !jv_is_string(jv_object_get(c, "tool"))) {
                        reply_error(rq, 400, "invalid_request", "calls[%zu].tool must be a string",
                                    i);
                        return false;
                }
                if (!request_known_keys(rq, c, call_keys))
                        return false;
        }
        return true;
}

/* Run every call of @calls, appending results to @out ("[r1,r2,...]"). */
static bool run_calls(struct request *rq,
                      struct b4_run *run,
                      const struct jv *calls,
                      struct strbuf *out)
{
        bool ok = strbuf_addc(out, '[') >= 0;

        for (size_t i = 0; ok && i < jv_array_size(calls); i++) {
                struct jv *c = jv_array_get(calls, i);
                cleanup_(jv_unrefp) struct jv *empty = jv_object_new();
                struct jv *args = jv_object_get(c, "args");
                cleanup_free char *res =
                        run_one(rq, run, jv_string(jv_object_get(c, "tool")), args ? args : empty);
                if (!res)
                        return false;
                ok = (i == 0 || strbuf_addc(out, ',') >= 0) && strbuf_adds(out, res) >= 0;
        }
        if (!ok || strbuf_addc(out, ']') < 0) {
                reply_error(rq, 500, "internal_error", "results too large");
                return false;
        }
        return true;
}

void route_runs(struct request *rq)
{
        static const char *const known[] = { "calls", NULL };
        cleanup_(jv_unrefp) struct jv *body = request_json_object(rq);
        struct b4_run *run = NULL;
        struct strbuf out;
        bool ok;

        if (!body || !request_known_keys(rq, body, known))
                return;
        struct jv *calls = jv_object_get(body, "calls");
        if (!calls_valid(rq, calls) || !begin(rq, &run))
                return;
        enum stream_format format = stream_format_of(rq);
        if (format != STREAM_NONE) {
                stream_calls(rq, format, run, calls, false);
                return;
        }
        strbuf_init(&out, RESPONSE_MAX_BYTES);
        ok = strbuf_adds(&out, "{\"results\":") >= 0 && run_calls(rq, run, calls, &out) &&
             (!rq->interrupted_ms || strbuf_addf(&out, ",\"interruptedRun\":{\"startedMs\":%lld}",
                                                 (long long)rq->interrupted_ms) >= 0) &&
             strbuf_addc(&out, '}') >= 0;
        b4_run_end(run);
        if (ok)
                reply_text(rq, 200, &out);
        strbuf_release(&out);
}

void route_tool(struct request *rq)
{
        cleanup_(jv_unrefp) struct jv *args =
                rq->body.len ? request_json_object(rq) : jv_object_new();
        cleanup_free char *res = NULL;
        struct b4_run *run = NULL;
        struct strbuf out;

        if (!args || !begin(rq, &run))
                return;
        enum stream_format format = stream_format_of(rq);
        if (format != STREAM_NONE) {
                cleanup_(jv_unrefp) struct jv *calls =
                        jv_pack("[{s:s, s:O}]", "tool", rq->params[1], "args", args);
                stream_calls(rq, format, run, calls, true);
                return;
        }
        res = run_one(rq, run, rq->params[1], args);
        b4_run_end(run);
        if (!res)
                return;
        out = (struct strbuf){ .buf = TAKE_PTR(res), .max = RESPONSE_MAX_BYTES };
        out.len = out.cap = strlen(out.buf);
        reply_text(rq, 200, &out);
        strbuf_release(&out);
}

/*
 * POST /threads/{id}/permissions {interruptId, decision}: answer a permission request an
 * earlier call raised (once / always / deny); the call then finishes, under the run slot,
 * and its result is the reply.
 */
void route_permissions(struct request *rq)
{
        static const char *const known[] = { "interruptId", "decision", NULL };
        cleanup_(jv_unrefp) struct jv *body = request_json_object(rq);
        struct b4_tool_result res = { 0 };
        char *result_json = NULL;
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        int r;

        if (!body || !request_known_keys(rq, body, known))
                return;
        const char *id = jv_string(jv_object_get(body, "interruptId"));
        const char *decision = jv_string(jv_object_get(body, "decision"));
        if (!id || !decision) {
                reply_error(rq, 400, "invalid_request", "interruptId and decision must be strings");
                return;
        }
        if (!begin(rq, &run))
                return;
        r = b4_run_resume(run, id, decision, &res, &err);
        b4_run_end(run);
        if (r == -ENOENT) {
                reply_error(rq, 404, "interrupt_not_found", "no pending permission request '%s'",
                            id);
                return;
        }
        if (r < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        r = jv_dump(res.doc, 0, &result_json);
        b4_tool_result_clear(&res);
        if (r < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        struct strbuf out = { .buf = TAKE_PTR(result_json), .max = RESPONSE_MAX_BYTES };
        out.len = out.cap = strlen(out.buf);
        reply_text(rq, 200, &out);
        strbuf_release(&out);
}
