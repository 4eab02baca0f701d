/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /mcp: MCP over Streamable HTTP (docs/mcp.md, docs/http-api.md "MCP"). Stateless in
 * both eras: no Mcp-Session-Id is minted, every POST carries one message and stands alone.
 * A request answers as JSON, except a tools/call with a progressToken when the client
 * accepts text/event-stream: an SSE stream of its progress notifications ending with the
 * response (closing it cancels the call). Notifications and responses answer 202.
 * Every tool call passes the access check POST /threads/{id}/tools/{tool} would (the same
 * principal, operation and thread visibility); a refusal is a tool error naming it, the
 * thread's existence not told apart from its invisibility. An Origin that is not this
 * server's is refused with 403 on every listener, threadAccess or not (the spec's MUST).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/runtime.h"
#include "b4box/tools.h"
#include "b4box/version.h"

#include "base/macro.h"
#include "base/time-util.h"
#include "mcp/mcp.h"
#include "server-internal.h"

struct mcp_http {
        struct request *rq;
        struct b4_cancel *abort; /* the stream's: fired when the client goes away; NULL = JSON */
        struct stream *st;
        struct mcp_session *ss;
        char *body;
        size_t len;
        struct mcp_http_headers hdr;
        char *hdr_copy[4]; /* the headers' values, owned (the producer outlives rq) */
        struct server *srv;
        char traceparent[TRACEPARENT_LEN + 1];
        /* a streamed call is checked before the 200 (the producer may not touch rq) */
        bool prechecked, pre_ok;
        char *pre_thread;
        struct reply_capture pre_cap;
};

static const struct route *route_named(const char *name)
{
        for (size_t i = 0; i < server_n_routes; i++)
                if (strcmp(server_routes[i].name, name) == 0)
                        return &server_routes[i];
        return NULL;
}

/* The access check of the route named @as on @thread, refusals captured in @cap. */
static bool check_as(struct request *rq,
                     const char *as,
                     const char *thread,
                     struct reply_capture *cap)
{
        const struct route *saved = rq->route, *r = route_named(as);
        char *param = rq->params[0];
        bool ok;

        if (!r)
                return false;
        b4_thread_row_clear(&rq->thread);
        rq->route = r;
        rq->params[0] = (char *)thread;
        rq->capture = cap;
        ok = access_check(rq);
        rq->capture = NULL;
        rq->params[0] = param;
        rq->route = saved;
        return ok;
}

static int refused(const struct reply_capture *cap, struct b4_error *err)
{
        return b4_error_set(err, cap->status == 404 ? -ENOENT : -EACCES, "%s (%s)", cap->message,
                            cap->code);
}

static void pass_output(void *userdata, enum b4_exec_stream stream, const char *p, size_t n)
{
        const struct mcp_call *c = userdata;

        (void)stream;
        c->on_output(c->output_ctx, p, n);
}

static int run_tool(struct mcp_http *h,
                    const struct mcp_call *c,
                    struct jv **ret_doc,
                    struct b4_error *err)
{
        struct b4_tool_result res = { 0 };
        struct mcp_forward *fw = NULL, *fw2 = NULL;
        struct b4_run *run = NULL;
        uint64_t t0 = now_usec();
        int r = b4_runtime_run_begin(h->srv->opts.runtime, c->thread, &run, err);

        if (r < 0)
                return r;
        if (c->on_output)
                b4_run_set_output(run, pass_output, (void *)c);
        r = mcp_cancel_forward(c->cancel, b4_run_cancel_token(run), &fw);
        if (r >= 0 && h->abort)
                r = mcp_cancel_forward(h->abort, b4_run_cancel_token(run), &fw2);
        cleanup_(jv_unrefp) struct jv *traced =
                r >= 0 ? trace_tool_args(h->traceparent[0] ? h->traceparent : NULL, c->tool,
                                         c->args)
                       : NULL;
        if (r >= 0)
                r = traced ? b4_run_call(run, c->tool, traced, &res, err) : -ENOMEM;
        fw = mcp_cancel_forward_stop(fw);
        fw2 = mcp_cancel_forward_stop(fw2);
        b4_run_end(run);
        if (r < 0)
                return r;
        metrics_tool_call(h->srv->metrics, c->tool, res.ok, res.code, now_usec() - t0);
        *ret_doc = TAKE_PTR(res.doc);
        b4_tool_result_clear(&res);
        return 0;
}

static struct jv *ok_doc(struct jv *result)
{
        return jv_pack("{s:b, s:o}", "ok", true, "result", result);
}

/* listThreads: the threads the caller may see (GET /threads's filter). */
static int list_threads(struct request *rq, struct jv **ret_doc, struct b4_error *err)
{
        struct b4_runtime *rt = rq->srv->opts.runtime;
        struct b4_thread_row *rows = NULL;
        size_t n = 0;
        int r = b4_runtime_thread_list(rt, NULL, &rows, &n, err);

        if (r < 0)
                return r;
        struct jv *a = jv_array_new();
        for (size_t i = 0; a && i < n; i++)
                if (access_may_see(rq, rows[i].owner) &&
                    jv_array_append_new(a, jv_pack("{s:s, s:s}", "thread_id", rows[i].id, "state",
                                                   b4_runtime_thread_state(rt, rows[i].id))) < 0)
                        a = jv_unref(a);
        b4_thread_rows_free(rows, n);
        *ret_doc = a ? ok_doc(a) : NULL;
        return *ret_doc ? 0 : -ENOMEM;
}

/* createThread, listThreads, releaseThread, deleteThread (serve --mcp-lifecycle-tools), each
 * behind the access check of its HTTP route. */
static int lifecycle(struct request *rq,
                     const struct mcp_call *c,
                     struct jv **ret_doc,
                     struct b4_error *err)
{
        static const struct {
                const char *tool, *route;
        } map[] = { { "createThread", "thread.create" },
                    { "listThreads", "thread.list" },
                    { "releaseThread", "thread.release" },
                    { "deleteThread", "thread.delete" } };
        struct b4_runtime *rt = rq->srv->opts.runtime;
        struct reply_capture cap = { 0 };
        struct b4_thread_row row = { 0 };
        size_t i = 0;
        int r;

        while (strcmp(map[i].tool, c->tool) != 0)
                i++;
        if (!check_as(rq, map[i].route, c->thread, &cap))
                return cap.set ? refused(&cap, err)
                               : b4_error_set(err, -EIO, "the access check failed");
        if (i == 1)
                return list_threads(rq, ret_doc, err);
        if (i == 0) {
                r = b4_runtime_thread_create(rt, c->thread, NULL, NULL, rq->principal_name, &row,
                                             err);
                b4_thread_row_clear(&row);
        } else {
                r = i == 2 ? b4_runtime_thread_release(rt, c->thread, err)
                           : b4_runtime_thread_delete(rt, c->thread, err);
        }
        if (r < 0)
                return r;
        *ret_doc = ok_doc(jv_pack("{s:s, s:s}", "thread_id", c->thread, "done", c->tool));
        return *ret_doc ? 0 : -ENOMEM;
}

/* mcp_backend_ops.call: the five tools, and the lifecycle tools when offered. */
static int http_call(void *data,
                     const struct mcp_call *c,
                     struct jv **ret_doc,
                     struct b4_error *err)
{
        struct mcp_http *h = c->caller;
        struct reply_capture cap = { 0 };

        (void)data;
        if (mcp_is_lifecycle_tool(c->tool))
                return h->prechecked ? b4_error_set(err, -EIO, "the access check failed")
                                     : lifecycle(h->rq, c, ret_doc, err);
        if (h->prechecked) {
                if (!h->pre_thread || strcmp(h->pre_thread, c->thread) != 0)
                        return b4_error_set(err, -EIO, "the access check failed");
                if (!h->pre_ok)
                        return h->pre_cap.set ? refused(&h->pre_cap, err)
                                              : b4_error_set(err, -EIO, "the access check failed");
        } else if (!check_as(h->rq, "thread.tool", c->thread, &cap)) {
                return cap.set ? refused(&cap, err)
                               : b4_error_set(err, -EIO, "the access check failed");
        }
        return run_tool(h, c, ret_doc, err);
}

static bool http_network(void *data, const char *thread, void *caller)
{
        struct mcp_http *h = caller;

        (void)data;
        (void)thread;
        return h->srv->config->sandbox.policy.network == B4_NETWORK_ALLOW;
}

static const struct mcp_backend_ops http_ops = { .call = http_call,
                                                 .network_allowed = http_network };

int mcp_route_init(struct server *s)
{
        struct mcp_options o = { .ops = &http_ops,
                                 .version = b4_version(),
                                 .lifecycle_tools = s->opts.mcp_lifecycle_tools };
        int r = mcp_server_new(&o, &s->mcp);

        return r < 0 ? r : mcp_session_new(&s->mcp_calls);
}

void mcp_route_free(struct server *s)
{
        s->mcp_calls = mcp_session_free(s->mcp_calls);
        s->mcp = mcp_server_free(s->mcp);
}

bool route_mcp_begin(struct request *rq)
{
        return guard_origin(rq);
}

static const char *header(const struct request *rq, const char *name)
{
        return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

/* mcp_emit_fn over the SSE stream. */
static int emit_event(void *ctx, const char *json, size_t len)
{
        struct mcp_http *h = ctx;

        return stream_event(h->st, "message", -1, json, len);
}

static void mcp_http_free(struct mcp_http *h)
{
        b4_cancel_free(h->abort);
        free(h->pre_thread);
        for (size_t i = 0; i < ELEMENTSOF(h->hdr_copy); i++)
                free(h->hdr_copy[i]);
        free(h->body);
        free(h);
}

/* The stream's producer: the call runs here, after the 200 went out. */
static void stream_main(void *ctx)
{
        struct mcp_http *h = ctx;
        struct mcp_reply rep = { 0 };

        if (mcp_handle(h->srv->mcp, h->ss, h->body, h->len, &h->hdr, emit_event, h, h, &rep) >= 0 &&
            rep.json)
                (void)stream_end(h->st, "message", rep.json, strlen(rep.json));
        else
                h->st = stream_close(h->st);
        mcp_reply_clear(&rep);
        mcp_http_free(h);
}

static void reply_mcp(struct request *rq, const struct mcp_reply *rep)
{
        struct strbuf sb;

        if (!rep->json) {
                reply_response(rq, 202,
                               MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
                rq->replied = true;
                return;
        }
        strbuf_init(&sb, RESPONSE_MAX_BYTES);
        if (strbuf_adds(&sb, rep->json) < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        reply_text(rq, rep->http_status ? rep->http_status : 200, &sb);
        strbuf_release(&sb);
        if (rep->session_id[0] && rq->response)
                (void)MHD_add_response_header(rq->response, "Mcp-Session-Id", rep->session_id);
}

/* The MCP headers, copied; Mcp-Session-Id (one this server minted: 32 hex) qualified with
 * the caller's principal, so that a session id alone cancels nothing of anyone else's. */
static int copy_headers(struct request *rq, struct mcp_http *h)
{
        static const char *const names[] = { "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name" };
        const char *sid = header(rq, "Mcp-Session-Id");

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const char *v = header(rq, names[i]);
                if (v && !(h->hdr_copy[i] = strdup(v)))
                        return -ENOMEM;
        }
        if (sid && strlen(sid) == MCP_SESSION_ID_LEN &&
            strspn(sid, "0123456789abcdef") == MCP_SESSION_ID_LEN &&
            asprintf(&h->hdr_copy[3], "%s %s", rq->principal_name ? rq->principal_name : "-", sid) <
                    0)
                return -ENOMEM;
        h->hdr = (struct mcp_http_headers){ .present = true,
                                            .protocol_version = h->hdr_copy[0],
                                            .method = h->hdr_copy[1],
                                            .name = h->hdr_copy[2],
                                            .session = h->hdr_copy[3] };
        return 0;
}

/* Before a stream's 200: the access check of the thread the call names (none named: the
 * core refuses the call before the backend sees it). */
static void precheck(struct request *rq, struct mcp_http *h)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *t;

        h->prechecked = true;
        if (jv_parse(h->body, h->len, &v, NULL) < 0)
                return;
        t = jv_string(
                jv_object_get(jv_object_get(jv_object_get(v, "params"), "arguments"), "thread_id"));
        if (!t || !*t || !(h->pre_thread = strdup(t)))
                return;
        h->pre_ok = check_as(rq, "thread.tool", h->pre_thread, &h->pre_cap);
}

void route_mcp(struct request *rq)
{
        struct mcp_http *h = calloc(1, sizeof(*h));
        struct mcp_reply rep = { 0 };

        if (!h || !(h->body = malloc(rq->body.len + 1))) {
                if (h)
                        mcp_http_free(h);
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        memcpy(h->body, rq->body.buf ? rq->body.buf : "", rq->body.len);
        h->len = rq->body.len;
        h->rq = rq;
        h->srv = rq->srv;
        h->ss = rq->srv->mcp_calls;
        memcpy(h->traceparent, rq->traceparent, sizeof(h->traceparent));
        if (copy_headers(rq, h) < 0) {
                mcp_http_free(h);
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        if (stream_format_of(rq) == STREAM_SSE && mcp_wants_progress(h->body, h->len)) {
                h->abort = b4_cancel_new();
                precheck(rq, h);
                if (!h->abort || stream_open(rq, STREAM_SSE, h->abort, &h->st) < 0) {
                        mcp_http_free(h); /* stream_open() replied 500 */
                        if (!rq->replied)
                                reply_error(rq, 500, "internal_error", "out of memory");
                        return;
                }
                request_detach(rq, stream_main, h);
                return;
        }
        if (mcp_handle(rq->srv->mcp, h->ss, h->body, h->len, &h->hdr, NULL, NULL, h, &rep) < 0)
                reply_error(rq, 500, "internal_error", "out of memory");
        else
                reply_mcp(rq, &rep);
        mcp_reply_clear(&rep);
        mcp_http_free(h);
}
