/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP's methods over the JSON-RPC layer: the lifecycle of both eras (docs/mcp.md), tools/list
 * and the dispatch of tools/call (tool-call.c), cancellation. The method table is the one
 * place that says what this server answers.
 */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "json/json.h"
#include "mcp-internal.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define TOOLS_TTL_MS 60000

static const char *const legacy_versions[] = { MCP_LEGACY_VERSION, "2025-06-18", "2025-03-26",
                                               "2024-11-05", NULL };

static const char instructions[] =
        "b4box runs each thread's tools in that thread's own sandbox: readFile, writeFile, "
        "editFile and listDir work on its workspace (/workspace), runBash runs bash there. "
        "The workspace is kept across calls and turns.";

struct inflight {
        struct inflight *next;
        char *id; /* the request id as compact JSON */
        struct b4_cancel *cancel;
};

struct mcp_session {
        pthread_mutex_t lock;
        bool initialized; /* an initialize was answered (legacy) */
        struct inflight *calls;
};

int mcp_session_new(struct mcp_session **ret)
{
        struct mcp_session *ss = b4_calloc(1, sizeof(*ss));

        if (!ss)
                return -ENOMEM;
        pthread_mutex_init(&ss->lock, NULL);
        *ret = ss;
        return 0;
}

void mcp_session_cancel_all(struct mcp_session *ss)
{
        pthread_mutex_lock(&ss->lock);
        for (struct inflight *f = ss->calls; f; f = f->next)
                b4_cancel_fire(f->cancel);
        pthread_mutex_unlock(&ss->lock);
}

struct mcp_session *mcp_session_free(struct mcp_session *ss)
{
        if (!ss)
                return NULL;
        pthread_mutex_destroy(&ss->lock);
        free(ss);
        return NULL;
}

/* The key a call is cancelled by: its id as compact JSON, after "<scope>\n" over HTTP. */
static char *call_key(const char *scope, const struct jv *id)
{
        cleanup_free char *json = NULL;
        char *key = NULL;

        if (!id || jv_dump(id, 0, &json) < 0 ||
            b4_asprintf(&key, "%s%s%s", scope ? scope : "", scope ? "\n" : "", json) < 0)
                return NULL;
        return key;
}

int mcp_session_track(struct mcp_session *ss,
                      const char *scope,
                      const struct jv *id,
                      struct b4_cancel *c,
                      struct inflight **ret)
{
        struct inflight *f = b4_calloc(1, sizeof(*f));

        if (!f || !(f->id = call_key(scope, id))) {
                free(f);
                return -ENOMEM;
        }
        f->cancel = c;
        pthread_mutex_lock(&ss->lock);
        f->next = ss->calls;
        ss->calls = f;
        pthread_mutex_unlock(&ss->lock);
        *ret = f;
        return 0;
}

void mcp_session_untrack(struct mcp_session *ss, struct inflight *f)
{
        if (!f)
                return;
        pthread_mutex_lock(&ss->lock);
        for (struct inflight **p = &ss->calls; *p; p = &(*p)->next)
                if (*p == f) {
                        *p = f->next;
                        break;
                }
        pthread_mutex_unlock(&ss->lock);
        free(f->id);
        free(f);
}

/* notifications/cancelled {requestId, reason?}: fire the call's token (unknown ids are
 * ignored, as the spec asks: the call may have finished). */
static void session_cancel(struct mcp_session *ss, const char *scope, const struct jv *request_id)
{
        cleanup_free char *id = call_key(scope, request_id);

        if (!id)
                return;
        pthread_mutex_lock(&ss->lock);
        for (struct inflight *f = ss->calls; f; f = f->next)
                if (strcmp(f->id, id) == 0)
                        b4_cancel_fire(f->cancel);
        pthread_mutex_unlock(&ss->lock);
}

/* ---- the server ---- */

struct mcp_server {
        struct mcp_options opts;
        char *thread;
        pthread_mutex_t lock;
        struct hashmap *waiting; /* thread -> calls waiting for its slot (as uintptr_t) */
};

int mcp_server_new(const struct mcp_options *opts, struct mcp_server **ret)
{
        struct mcp_server *s = b4_calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->opts = *opts;
        s->opts.thread = NULL;
        s->thread = opts->thread ? b4_strdup(opts->thread) : NULL;
        s->waiting = hashmap_new();
        if ((opts->thread && !s->thread) || !s->waiting)
                return mcp_server_free(s), -ENOMEM;
        if (!s->opts.queue_max)
                s->opts.queue_max = MCP_QUEUE_MAX;
        if (!s->opts.queue_wait_ms)
                s->opts.queue_wait_ms = MCP_QUEUE_WAIT_MS;
        if (!s->opts.progress_ms)
                s->opts.progress_ms = MCP_PROGRESS_MS;
        pthread_mutex_init(&s->lock, NULL);
        *ret = s;
        return 0;
}

struct mcp_server *mcp_server_free(struct mcp_server *s)
{
        if (!s)
                return NULL;
        hashmap_free(s->waiting);
        free(s->thread);
        free(s);
        return NULL;
}

const char *mcp_server_thread(const struct mcp_server *s)
{
        return s->thread;
}

bool mcp_server_lifecycle(const struct mcp_server *s)
{
        return s->opts.lifecycle_tools;
}

const struct mcp_options *mcp_server_options(const struct mcp_server *s)
{
        return &s->opts;
}

bool mcp_queue_enter(struct mcp_server *s, const char *thread)
{
        bool ok;

        pthread_mutex_lock(&s->lock);
        uintptr_t n = (uintptr_t)hashmap_get(s->waiting, thread);
        ok = n < s->opts.queue_max && hashmap_put(s->waiting, thread, (void *)(n + 1)) >= 0;
        pthread_mutex_unlock(&s->lock);
        return ok;
}

void mcp_queue_leave(struct mcp_server *s, const char *thread)
{
        pthread_mutex_lock(&s->lock);
        uintptr_t n = (uintptr_t)hashmap_get(s->waiting, thread);
        if (n <= 1)
                (void)hashmap_remove(s->waiting, thread);
        else
                (void)hashmap_put(s->waiting, thread, (void *)(n - 1));
        pthread_mutex_unlock(&s->lock);
}

/* ---- one request ---- */

void mcp_reply_clear(struct mcp_reply *r)
{
        free(r->json);
        *r = (struct mcp_reply){ 0 };
}

static int reply_error(
        struct mcp_request *q, unsigned status, int code, const char *msg, struct jv *data)
{
        q->reply->json = rpc_error(q->msg->id, code, msg, data);
        q->reply->http_status = status;
        return q->reply->json ? 0 : -ENOMEM;
}

int mcp_reply_result(struct mcp_request *q, struct jv *result)
{
        if (result && q->modern &&
            jv_object_set_new(result, "resultType", jv_string_new("complete")) < 0)
                result = jv_unref(result);
        if (!result)
                return -ENOMEM;
        q->reply->json = rpc_result(q->msg->id, result);
        q->reply->http_status = 200;
        return q->reply->json ? 0 : -ENOMEM;
}

int mcp_reply_error(struct mcp_request *q, int code, const char *msg)
{
        return reply_error(q, 200, code, msg, NULL);
}

static struct jv *server_info(const struct mcp_server *s)
{
        return jv_pack("{s:s, s:s, s:s}", "name", "b4box", "title", "b4box", "version",
                       s->opts.version ? s->opts.version : "0");
}

static bool legacy_supported(const char *v)
{
        for (size_t i = 0; legacy_versions[i]; i++)
                if (strcmp(legacy_versions[i], v) == 0)
                        return true;
        return false;
}

/* 128 random bits as hex: an HTTP client's Mcp-Session-Id, the scope of its cancellations. */
static int mint_session(char out[static MCP_SESSION_ID_LEN + 1])
{
        static const char hex[] = "0123456789abcdef";
        unsigned char b[MCP_SESSION_ID_LEN / 2];

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                return -EIO;
        for (size_t i = 0; i < sizeof(b); i++) {
                out[2 * i] = hex[b[i] >> 4];
                out[2 * i + 1] = hex[b[i] & 15];
        }
        out[MCP_SESSION_ID_LEN] = '\0';
        return 0;
}

static int m_initialize(struct mcp_request *q)
{
        const char *v = jv_string(jv_object_get(q->msg->params, "protocolVersion"));

        if (!v)
                return mcp_reply_error(q, MCP_INVALID_PARAMS,
                                       "initialize: params.protocolVersion must be a string");
        pthread_mutex_lock(&q->ss->lock);
        q->ss->initialized = true;
        pthread_mutex_unlock(&q->ss->lock);
        if (q->hdr && q->hdr->present && mint_session(q->reply->session_id) < 0)
                return -ENOMEM;
        return mcp_reply_result(q,
                                jv_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion",
                                        legacy_supported(v) ? v : MCP_LEGACY_VERSION,
                                        "capabilities", "tools", "listChanged", false, "serverInfo",
                                        server_info(q->srv), "instructions", instructions));
}

static int m_discover(struct mcp_request *q)
{
        return mcp_reply_result(
                q, jv_pack("{s:[s,s,s,s,s], s:{s:{s:b}}, s:s, s:i, s:s, s:{s:o}}",
                           "supportedVersions", MCP_MODERN_VERSION, legacy_versions[0],
                           legacy_versions[1], legacy_versions[2], legacy_versions[3],
                           "capabilities", "tools", "listChanged", false, "instructions",
                           instructions, "ttlMs", TOOLS_TTL_MS, "cacheScope", "public", "_meta",
                           "io.modelcontextprotocol/serverInfo", server_info(q->srv)));
}

static int m_ping(struct mcp_request *q)
{
        return mcp_reply_result(q, jv_object_new());
}

static int m_tools_list(struct mcp_request *q)
{
        const struct mcp_options *o = &q->srv->opts;
        bool net = o->ops->network_allowed(o->data, q->srv->thread, q->caller);
        struct jv *tools = mcp_tools_list(q->srv, net);

        /* one page: the list is short; cacheScope private: it depends on the caller's thread */
        return mcp_reply_result(q, q->modern ? jv_pack("{s:o, s:i, s:s}", "tools", tools, "ttlMs",
                                                       TOOLS_TTL_MS, "cacheScope", "private")
                                             : jv_pack("{s:o}", "tools", tools));
}

struct method {
        const char *name;
        int (*fn)(struct mcp_request *q);
        bool legacy_only; /* initialize */
        bool any_time;    /* answered before initialize too */
};

static const struct method methods[] = {
        { "initialize", m_initialize, .legacy_only = true, .any_time = true },
        { "ping", m_ping, .any_time = true },
        { "server/discover", m_discover, .any_time = true },
        { "tools/list", m_tools_list, .legacy_only = false },
        { "tools/call", mcp_tools_call, .legacy_only = false },
};

static const struct method *method_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                if (strcmp(methods[i].name, name) == 0)
                        return &methods[i];
        return NULL;
}

/* The scope of the calls a request may cancel: the whole process on stdio; over HTTP the
 * Mcp-Session-Id (and principal) the transport gives, none without one. */
const char *mcp_request_scope(const struct mcp_http_headers *h, bool *ret_trackable)
{
        *ret_trackable = !h || !h->present || h->session;
        return h && h->present ? h->session : NULL;
}

/* Notifications: none is answered; cancelled is acted on. */
static void notification(struct mcp_session *ss,
                         const struct rpc_msg *m,
                         const struct mcp_http_headers *h)
{
        bool trackable;
        const char *scope = mcp_request_scope(h, &trackable);

        if (trackable && strcmp(m->method, "notifications/cancelled") == 0)
                session_cancel(ss, scope, jv_object_get(m->params, "requestId"));
}

static int unsupported_version(struct mcp_request *q, const char *requested)
{
        struct jv *data = jv_pack("{s:[s,s], s:s}", "supported", MCP_MODERN_VERSION,
                                  MCP_LEGACY_VERSION, "requested", requested);

        return reply_error(q, 400, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version", data);
}

/* "=?base64?...?=" decoded, else the value as it is; NULL when it does not decode. */
static char *header_value(const char *h)
{
        size_t n = strlen(h);

        if (n < 11 || strncmp(h, "=?base64?", 9) != 0 || strcmp(h + n - 2, "?=") != 0)
                return b4_strdup(h);
        return mcp_base64_decode(h + 9, n - 11);
}

static int mismatch(struct mcp_request *q, const char *what)
{
        char msg[160];

        (void)snprintf(msg, sizeof(msg), "Header mismatch: %s", what);
        return reply_error(q, 400, MCP_HEADER_MISMATCH, msg, NULL);
}

/* Streamable HTTP 2026-07-28 "Server Validation": the headers mirror the body. Return: 1 when
 * they do, else 0 with the reply made (or -ENOMEM). */
static int modern_headers(struct mcp_request *q, const char *version)
{
        const struct mcp_http_headers *h = q->hdr;
        const char *name = jv_string(jv_object_get(q->msg->params, "name"));

        if (!h || !h->present)
                return 1;
        if (!h->protocol_version || strcmp(h->protocol_version, version) != 0)
                return mismatch(q, "MCP-Protocol-Version does not match the body's _meta");
        if (!h->method || strcmp(h->method, q->msg->method) != 0)
                return mismatch(q, "Mcp-Method is missing or does not match the body's method");
        if (strcmp(q->msg->method, "tools/call") == 0) {
                cleanup_free char *hn = h->name ? header_value(h->name) : NULL;
                if (!hn || !name || strcmp(hn, name) != 0)
                        return mismatch(q, "Mcp-Name is missing or does not match params.name");
        }
        return 1;
}

/* A legacy request over HTTP: an MCP-Protocol-Version header must name a version we speak. */
static int legacy_headers(struct mcp_request *q)
{
        const struct mcp_http_headers *h = q->hdr;

        if (!h || !h->present || !h->protocol_version || legacy_supported(h->protocol_version))
                return 1;
        if (strcmp(h->protocol_version, MCP_MODERN_VERSION) == 0)
                return mismatch(q, "MCP-Protocol-Version is 2026-07-28 but the body has no "
                                   "_meta protocol version");
        return unsupported_version(q, h->protocol_version);
}

/* Which era serves @q (q->modern), and whether it may go on. Return: 1, 0 replied, -ENOMEM. */
static int select_era(struct mcp_request *q, const struct method *m)
{
        const struct jv *meta = jv_object_get(q->msg->params, "_meta");
        const struct jv *v = jv_object_get(meta, META_VERSION);

        if (!v)
                return legacy_headers(q);
        if (!jv_is_string(v))
                return reply_error(q, 400, MCP_INVALID_PARAMS,
                                   "_meta[\"" META_VERSION "\"] must be a string", NULL);
        if (strcmp(jv_string(v), MCP_MODERN_VERSION) != 0)
                return unsupported_version(q, jv_string(v));
        q->modern = true;
        if (m && m->legacy_only)
                return reply_error(q, 400, MCP_INVALID_REQUEST,
                                   "initialize is not part of 2026-07-28: send requests with "
                                   "_meta, or initialize without it",
                                   NULL);
        return modern_headers(q, jv_string(v));
}

static bool session_ready(struct mcp_request *q, const struct method *m)
{
        bool ok;

        if (q->modern || m->any_time || (q->hdr && q->hdr->present))
                return true; /* over HTTP every request stands alone (stateless) */
        pthread_mutex_lock(&q->ss->lock);
        ok = q->ss->initialized;
        pthread_mutex_unlock(&q->ss->lock);
        return ok;
}

static int request(struct mcp_request *q)
{
        const struct method *m = method_find(q->msg->method);
        int r = select_era(q, m);

        if (r <= 0)
                return r;
        if (!m)
                return reply_error(q, q->modern ? 404 : 200, MCP_METHOD_NOT_FOUND,
                                   "Method not found", NULL);
        if (!session_ready(q, m))
                return mcp_reply_error(q, MCP_INVALID_REQUEST,
                                       "the session is not initialized: send initialize first");
        return m->fn(q);
}

int mcp_handle(struct mcp_server *s,
               struct mcp_session *ss,
               const char *buf,
               size_t len,
               const struct mcp_http_headers *hdr,
               mcp_emit_fn *emit,
               void *emit_ctx,
               void *caller,
               struct mcp_reply *ret)
{
        struct rpc_msg msg = { 0 };
        const char *why = NULL;
        int code = 0, r;

        *ret = (struct mcp_reply){ .http_status = 202 };
        struct mcp_request q = { .srv = s,
                                 .ss = ss,
                                 .msg = &msg,
                                 .hdr = hdr,
                                 .emit = emit,
                                 .emit_ctx = emit_ctx,
                                 .caller = caller,
                                 .reply = ret };
        r = rpc_parse(buf, len, &msg, &code, &why);
        if (r == -EINVAL)
                r = reply_error(&q, 400, code, why, NULL);
        else if (r >= 0 && msg.kind == RPC_NOTIFICATION)
                notification(ss, &msg, hdr);
        else if (r >= 0 && msg.kind == RPC_REQUEST)
                r = request(&q);
        rpc_msg_clear(&msg);
        if (r < 0)
                mcp_reply_clear(ret);
        return r < 0 ? -ENOMEM : 0;
}

/* ---- cheap looks at a message, for transports ---- */

static struct jv *peek(const char *buf, size_t len)
{
        struct jv *v = NULL;

        return jv_parse(buf, len, &v, NULL) < 0 ? NULL : v;
}

static bool is_method(const struct jv *v, const char *name)
{
        const char *m = jv_string(jv_object_get(v, "method"));

        return m && strcmp(m, name) == 0 && jv_object_get(v, "id");
}

bool mcp_is_tool_call(const char *buf, size_t len)
{
        cleanup_(jv_unrefp) struct jv *v = peek(buf, len);

        return is_method(v, "tools/call");
}

bool mcp_wants_progress(const char *buf, size_t len)
{
        cleanup_(jv_unrefp) struct jv *v = peek(buf, len);
        const struct jv *meta = jv_object_get(jv_object_get(v, "params"), "_meta");

        const char *name = jv_string(jv_object_get(jv_object_get(v, "params"), "name"));

        return is_method(v, "tools/call") && jv_object_get(meta, "progressToken") && name &&
               strcmp(name, "runBash") == 0;
}
