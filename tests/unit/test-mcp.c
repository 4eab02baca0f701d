/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MCP core (src/lib/mcp) over a scripted backend: JSON-RPC framing and its error codes,
 * the lifecycle of both eras, Streamable HTTP's header checks, the tool table, tools/call's
 * result mapping, the run-slot queue and its bounds, cancellation and progress.
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "mcp/mcp.h"

struct fake {
        pthread_mutex_t lock;
        int busy; /* calls answered -EBUSY before one runs (-1: always) */
        int calls;
        bool net;
        char tool[32];
        struct jv *args; /* the last call's */
        bool output;     /* write "line1\nline2\n" to on_output, then wait 400 ms */
        int delay_ms;    /* a silent command: wait this long */
};

static int fake_call(void *data, const struct mcp_call *c, struct jv **ret, struct b4_error *err)
{
        struct fake *f = data;
        const char *path = jv_string(jv_object_get(c->args, "path"));

        pthread_mutex_lock(&f->lock);
        f->calls++;
        if (f->busy) {
                f->busy -= f->busy > 0;
                pthread_mutex_unlock(&f->lock);
                return -EBUSY;
        }
        (void)snprintf(f->tool, sizeof(f->tool), "%s", c->tool);
        jv_unref(f->args);
        f->args = jv_ref((struct jv *)c->args);
        pthread_mutex_unlock(&f->lock);
        if (f->output && c->on_output) {
                c->on_output(c->output_ctx, "line1\nline2\n", 12);
                usleep(400 * 1000);
        }
        if (f->delay_ms)
                usleep((useconds_t)f->delay_ms * 1000);
        if (strcmp(c->tool, "runBash") == 0)
                *ret = jv_pack("{s:b, s:{s:s, s:s, s:i, s:b, s:b, s:b, s:i}}", "ok", true, "result",
                               "stdout", "out", "stderr", "", "exitCode", 3, "timedOut", false,
                               "cancelled", false, "truncated", false, "durationMs", 1);
        else if (path && strcmp(path, "nope") == 0)
                *ret = jv_pack("{s:b, s:{s:s, s:s, s:s}}", "ok", false, "error", "code",
                               "tool_error", "errno", "ENOENT", "message",
                               "readFile /workspace/nope: No such file or directory");
        else if (strcmp(c->thread, "gone") == 0)
                return b4_error_set(err, -ENOENT, "thread 'gone' not found");
        else
                *ret = jv_pack("{s:b, s:s}", "ok", true, "result", "fine");
        return 0;
}

static bool fake_net(void *data, const char *thread, void *caller)
{
        return ((struct fake *)data)->net;
}

static const struct mcp_backend_ops fake_ops = { .call = fake_call, .network_allowed = fake_net };

struct env {
        struct fake f;
        struct mcp_server *s;
        struct mcp_session *ss;
        pthread_mutex_t emit_lock;
        struct jv *emitted; /* array of notifications */
};

static int setup_opts(struct env *e, const struct mcp_options *o)
{
        struct mcp_options opts = *o;

        e->f = (struct fake){ .lock = PTHREAD_MUTEX_INITIALIZER };
        opts.ops = &fake_ops;
        opts.data = &e->f;
        pthread_mutex_init(&e->emit_lock, NULL);
        e->emitted = jv_array_new();
        return mcp_server_new(&opts, &e->s) || mcp_session_new(&e->ss);
}

static void teardown_env(struct env *e)
{
        mcp_session_free(e->ss);
        mcp_server_free(e->s);
        jv_unref(e->f.args);
        jv_unref(e->emitted);
}

static int emit(void *ctx, const char *json, size_t len)
{
        struct env *e = ctx;
        struct jv *v = NULL;

        assert_int_equal(jv_parse(json, len, &v, NULL), 0);
        pthread_mutex_lock(&e->emit_lock);
        assert_int_equal(jv_array_append_new(e->emitted, v), 0);
        pthread_mutex_unlock(&e->emit_lock);
        return 0;
}

/* Handle @text; the reply parsed (NULL when none), its HTTP status in *@status. */
static struct jv *handle_h(struct env *e,
                           const char *text,
                           const struct mcp_http_headers *h,
                           unsigned *status)
{
        struct mcp_reply rep = { 0 };
        struct jv *v = NULL;

        assert_int_equal(mcp_handle(e->s, e->ss, text, strlen(text), h, emit, e, NULL, &rep), 0);
        if (status)
                *status = rep.http_status;
        if (rep.json) {
                assert_null(strchr(rep.json, '\n'));
                assert_int_equal(jv_parse(rep.json, strlen(rep.json), &v, NULL), 0);
                assert_string_equal(jv_string(jv_object_get(v, "jsonrpc")), "2.0");
        }
        mcp_reply_clear(&rep);
        return v;
}

static struct jv *handle(struct env *e, const char *text)
{
        return handle_h(e, text, NULL, NULL);
}

static int64_t error_code(const struct jv *v)
{
        const struct jv *c = jv_object_get(jv_object_get(v, "error"), "code");

        assert_non_null(c);
        return jv_integer(c);
}

static const struct jv *result(const struct jv *v)
{
        const struct jv *r = jv_object_get(v, "result");

        assert_non_null(r);
        return r;
}

#define INIT                                                                                \
 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":" \
 "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define CALL(id, args) \
 "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\",\"params\":" args "}"
#define MODERN_META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}"

static void init(struct env *e)
{
        struct jv *v = handle(e, INIT);

        assert_string_equal(jv_string(jv_object_get(result(v), "protocolVersion")), "2025-11-25");
        jv_unref(v);
}

static void test_framing(void **state)
{
        struct env e;
        struct jv *v;
        unsigned st = 0;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        v = handle_h(&e, "nope", NULL, &st);
        assert_int_equal(error_code(v), -32700);
        assert_true(jv_is_null(jv_object_get(v, "id")));
        assert_int_equal(st, 400);
        jv_unref(v);
        v = handle(&e, "[" INIT "]");
        assert_int_equal(error_code(v), -32600);
        assert_non_null(
                strstr(jv_string(jv_object_get(jv_object_get(v, "error"), "message")), "batch"));
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"1.0\",\"id\":\"x\",\"method\":\"ping\"}");
        assert_int_equal(error_code(v), -32600);
        assert_string_equal(jv_string(jv_object_get(v, "id")), "x");
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
        assert_int_equal(error_code(v), -32600);
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
        assert_int_equal(error_code(v), -32600);
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":[1]}");
        assert_int_equal(error_code(v), -32600);
        assert_int_equal(jv_integer(jv_object_get(v, "id")), 4);
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"what/ever\"}");
        assert_int_equal(error_code(v), -32601);
        assert_string_equal(jv_string(jv_object_get(v, "id")), "abc");
        jv_unref(v);
        assert_null(
                handle_h(&e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", NULL, &st));
        assert_int_equal(st, 202);
        assert_null(handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}"));
        teardown_env(&e);
}

static void test_lifecycle(void **state)
{
        struct env e;
        struct jv *v;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t", .version = "9" }), 0);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        assert_int_equal(error_code(v), -32600); /* not initialized (stdio) */
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
        assert_int_equal(jv_object_size(result(v)), 0);
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}");
        assert_int_equal(error_code(v), -32602);
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\"}}");
        assert_string_equal(jv_string(jv_object_get(result(v), "protocolVersion")), "2025-06-18");
        assert_non_null(jv_object_get(jv_object_get(result(v), "capabilities"), "tools"));
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(result(v), "serverInfo"), "version")), "9");
        jv_unref(v);
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"1999-01-01\"}}");
        assert_string_equal(jv_string(jv_object_get(result(v), "protocolVersion")), "2025-11-25");
        jv_unref(v);
        assert_null(handle(&e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
        v = handle(&e, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
        assert_null(jv_object_get(result(v), "resultType"));
        jv_unref(v);
        teardown_env(&e);
}

static const struct jv *tool(const struct jv *list, const char *name)
{
        const struct jv *tools = jv_object_get(result(list), "tools");

        for (size_t i = 0; i < jv_array_size(tools); i++)
                if (strcmp(jv_string(jv_object_get(jv_array_get(tools, i), "name")), name) == 0)
                        return jv_array_get(tools, i);
        return NULL;
}

static bool required(const struct jv *t, const char *name)
{
        const struct jv *req = jv_object_get(jv_object_get(t, "inputSchema"), "required");

        for (size_t i = 0; i < jv_array_size(req); i++)
                if (strcmp(jv_string(jv_array_get(req, i)), name) == 0)
                        return true;
        return false;
}

static void test_tools_list(void **state)
{
        static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
        struct env e;
        struct jv *v;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        init(&e);
        v = handle(&e, list);
        assert_int_equal(jv_array_size(jv_object_get(result(v), "tools")), 5);
        assert_false(required(tool(v, "runBash"), "thread_id"));
        assert_true(required(tool(v, "runBash"), "command"));
        assert_non_null(jv_object_get(tool(v, "runBash"), "outputSchema"));
        assert_null(jv_object_get(tool(v, "readFile"), "outputSchema"));
        const struct jv *a = jv_object_get(tool(v, "runBash"), "annotations");
        assert_false(jv_is_true(jv_object_get(a, "openWorldHint")));
        assert_true(jv_is_true(jv_object_get(a, "destructiveHint")));
        a = jv_object_get(tool(v, "listDir"), "annotations");
        assert_true(jv_is_true(jv_object_get(a, "readOnlyHint")));
        jv_unref(v);
        e.f.net = true;
        v = handle(&e, list);
        a = jv_object_get(tool(v, "runBash"), "annotations");
        assert_true(jv_is_true(jv_object_get(a, "openWorldHint")));
        jv_unref(v);
        teardown_env(&e);

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .lifecycle_tools = true }), 0);
        init(&e);
        v = handle(&e, list);
        assert_int_equal(jv_array_size(jv_object_get(result(v), "tools")), 9);
        assert_true(required(tool(v, "readFile"), "thread_id"));
        assert_true(required(tool(v, "createThread"), "thread_id"));
        assert_false(required(tool(v, "listThreads"), "thread_id"));
        jv_unref(v);
        teardown_env(&e);
}

static const char *text0(const struct jv *v)
{
        const struct jv *c = jv_object_get(result(v), "content");

        return jv_string(jv_object_get(jv_array_get(c, 0), "text"));
}

static bool is_error(const struct jv *v)
{
        return jv_is_true(jv_object_get(result(v), "isError"));
}

static void test_tools_call(void **state)
{
        struct env e;
        struct jv *v;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ 0 }), 0);
        init(&e);
        v = handle(&e, CALL(1, "{\"name\":\"nope\",\"arguments\":{}}"));
        assert_int_equal(error_code(v), -32602);
        assert_string_equal(jv_string(jv_object_get(jv_object_get(v, "error"), "message")),
                            "Unknown tool: nope");
        jv_unref(v);
        v = handle(&e, CALL(2, "{\"name\":\"readFile\",\"arguments\":[]}"));
        assert_int_equal(error_code(v), -32602);
        jv_unref(v);
        v = handle(&e, CALL(3, "{\"arguments\":{}}"));
        assert_int_equal(error_code(v), -32602);
        jv_unref(v);
        v = handle(&e, CALL(4, "{\"name\":\"readFile\",\"arguments\":{\"path\":\"a\"}}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "thread_id is required"));
        assert_int_equal(e.f.calls, 0);
        jv_unref(v);
        v = handle(&e, CALL(5, "{\"name\":\"runBash\",\"arguments\":{\"thread_id\":\"t\","
                               "\"command\":\"exit 3\"}}"));
        assert_false(is_error(v));
        assert_int_equal(jv_integer(jv_object_get(jv_object_get(result(v), "structuredContent"),
                                                  "exitCode")),
                         3);
        assert_null(jv_object_get(e.f.args, "thread_id"));
        assert_string_equal(jv_string(jv_object_get(e.f.args, "command")), "exit 3");
        jv_unref(v);
        v = handle(&e, CALL(6, "{\"name\":\"readFile\",\"arguments\":{\"thread_id\":\"t\","
                               "\"path\":\"nope\"}}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "No such file"));
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(result(v), "_meta"), "b4box/code")),
                "tool_error");
        jv_unref(v);
        v = handle(&e, CALL(7, "{\"name\":\"listDir\",\"arguments\":{\"thread_id\":\"gone\"}}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "not found"));
        jv_unref(v);
        v = handle(&e, CALL(8, "{\"name\":\"createThread\",\"arguments\":{\"thread_id\":\"t\"}}"));
        assert_int_equal(error_code(v), -32602); /* not opted in */
        jv_unref(v);
        teardown_env(&e);

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "bound" }), 0);
        init(&e);
        v = handle(&e, CALL(1, "{\"name\":\"listDir\",\"arguments\":{\"thread_id\":\"other\"}}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "bound to thread 'bound'"));
        jv_unref(v);
        v = handle(&e, CALL(1, "{\"name\":\"listDir\"}"));
        assert_false(is_error(v));
        assert_string_equal(text0(v), "fine");
        jv_unref(v);
        teardown_env(&e);
}

static void test_modern(void **state)
{
        const struct mcp_http_headers h = { .present = true,
                                            .protocol_version = "2026-07-28",
                                            .method = "tools/list" };
        struct env e;
        struct jv *v;
        unsigned st;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        /* no initialize: a modern request stands alone */
        v = handle(
                &e,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" MODERN_META
                "}}");
        assert_string_equal(jv_string(jv_object_get(result(v), "resultType")), "complete");
        assert_true(jv_is_safe_integer(jv_object_get(result(v), "ttlMs")));
        assert_non_null(jv_object_get(result(v), "cacheScope"));
        jv_unref(v);
        v = handle(
                &e,
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"params\":{" MODERN_META
                "}}");
        assert_string_equal(
                jv_string(jv_array_get(jv_object_get(result(v), "supportedVersions"), 0)),
                "2026-07-28");
        assert_non_null(jv_object_get(jv_object_get(result(v), "_meta"),
                                      "io.modelcontextprotocol/serverInfo"));
        jv_unref(v);
        v = handle_h(&e,
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{"
                     "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\"}}}",
                     NULL, &st);
        assert_int_equal(error_code(v), -32022);
        assert_int_equal(st, 400);
        assert_string_equal(jv_string(jv_object_get(
                                    jv_object_get(jv_object_get(v, "error"), "data"), "requested")),
                            "2099-01-01");
        jv_unref(v);
        v = handle_h(
                &e,
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{" MODERN_META
                "}}",
                &h, &st);
        assert_int_equal(st, 200);
        jv_unref(v);
        const struct mcp_http_headers wrong = { .present = true,
                                                .protocol_version = "2026-07-28",
                                                .method = "tools/call" };
        v = handle_h(
                &e,
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{" MODERN_META
                "}}",
                &wrong, &st);
        assert_int_equal(error_code(v), -32020);
        assert_int_equal(st, 400);
        jv_unref(v);
        const struct mcp_http_headers call = { .present = true,
                                               .protocol_version = "2026-07-28",
                                               .method = "tools/call",
                                               .name = "=?base64?bGlzdERpcg==?=" };
        v = handle_h(&e, CALL(6, "{\"name\":\"listDir\"," MODERN_META "}"), &call, &st);
        assert_int_equal(st, 200);
        assert_false(is_error(v));
        assert_string_equal(jv_string(jv_object_get(result(v), "resultType")), "complete");
        jv_unref(v);
        const struct mcp_http_headers noname = { .present = true,
                                                 .protocol_version = "2026-07-28",
                                                 .method = "tools/call" };
        v = handle_h(&e, CALL(7, "{\"name\":\"listDir\"," MODERN_META "}"), &noname, &st);
        assert_int_equal(error_code(v), -32020);
        jv_unref(v);
        const struct mcp_http_headers unk = { .present = true,
                                              .protocol_version = "2026-07-28",
                                              .method = "x/y" };
        v = handle_h(&e,
                     "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"x/y\",\"params\":{" MODERN_META
                     "}}",
                     &unk, &st);
        assert_int_equal(error_code(v), -32601);
        assert_int_equal(st, 404);
        jv_unref(v);
        const struct mcp_http_headers old = { .present = true, .protocol_version = "1999-01-01" };
        v = handle_h(&e, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}", &old, &st);
        assert_int_equal(error_code(v), -32022);
        assert_int_equal(st, 400);
        jv_unref(v);
        v = handle_h(&e,
                     "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"initialize\",\"params\":{"
                     "\"protocolVersion\":\"2025-11-25\"," MODERN_META "}}",
                     NULL, &st);
        assert_int_equal(error_code(v), -32600);
        jv_unref(v);
        teardown_env(&e);
}

struct bg {
        struct env *e;
        const char *text;
        struct jv *reply;
        pthread_t t;
};

static void *bg_main(void *arg)
{
        struct bg *b = arg;

        b->reply = handle(b->e, b->text);
        return NULL;
}

/*
 * Until the backend has been called @n times in all. A call queued for a busy thread tries
 * again every 20 ms, so a second try means it is in the queue (and its id, registered before
 * the first, can be cancelled): what a fixed sleep here only hoped for on a loaded machine.
 */
static void await_calls(struct env *e, int n)
{
        for (uint64_t end = now_msec() + 30000;; usleep(1000)) {
                pthread_mutex_lock(&e->f.lock);
                int calls = e->f.calls;
                pthread_mutex_unlock(&e->f.lock);
                if (calls >= n)
                        return;
                assert_true(now_msec() < end);
        }
}

static int calls_now(struct env *e)
{
        int n;

        pthread_mutex_lock(&e->f.lock);
        n = e->f.calls;
        pthread_mutex_unlock(&e->f.lock);
        return n;
}

static void test_queue(void **state)
{
        struct env e;
        struct jv *v;

        /* the queue's own bound is the default (minutes): no wait here may run into it */
        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t", .queue_max = 1 }), 0);
        init(&e);
        e.f.busy = 3; /* the slot frees after three tries: the call waits, then runs */
        v = handle(&e, CALL(1, "{\"name\":\"listDir\"}"));
        assert_false(is_error(v));
        assert_int_equal(e.f.calls, 4);
        jv_unref(v);
        /* one call waits (queue_max 1): a second is refused at once */
        e.f.busy = -1;
        struct bg b = { .e = &e, .text = CALL(3, "{\"name\":\"listDir\"}") };
        assert_int_equal(pthread_create(&b.t, NULL, bg_main, &b), 0);
        await_calls(&e, 4 + 2);
        v = handle(&e, CALL(4, "{\"name\":\"listDir\"}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "already wait"));
        jv_unref(v);
        pthread_mutex_lock(&e.f.lock);
        e.f.busy = 0; /* the slot frees: the waiting call runs */
        pthread_mutex_unlock(&e.f.lock);
        assert_int_equal(pthread_join(b.t, NULL), 0);
        assert_false(is_error(b.reply));
        jv_unref(b.reply);
        teardown_env(&e);

        /* held for good: the wait is bounded */
        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t",
                                                               .queue_max = 1,
                                                               .queue_wait_ms = 150 }),
                         0);
        init(&e);
        e.f.busy = -1;
        v = handle(&e, CALL(2, "{\"name\":\"listDir\"}"));
        assert_true(is_error(v));
        assert_non_null(strstr(text0(v), "stayed busy"));
        jv_unref(v);
        teardown_env(&e);
}

static void test_cancel(void **state)
{
        struct env e;
        int n;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        init(&e);
        e.f.busy = -1;
        struct bg b = { .e = &e, .text = CALL("c-1", "{\"name\":\"listDir\"}") };
        /* c-2 is unknown: ignored (c-1 still tries); c-1 ends its wait for the slot */
        assert_int_equal(pthread_create(&b.t, NULL, bg_main, &b), 0);
        await_calls(&e, 2);
        assert_null(handle(&e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                               "\"params\":{\"requestId\":\"c-2\"}}"));
        n = calls_now(&e);
        await_calls(&e, n + 2);
        assert_null(handle(&e, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                               "\"params\":{\"requestId\":\"c-1\",\"reason\":\"x\"}}"));
        assert_int_equal(pthread_join(b.t, NULL), 0);
        assert_null(b.reply); /* a cancelled request is not answered on stdio */
        teardown_env(&e);
}

struct bg_h {
        struct env *e;
        const char *text;
        const struct mcp_http_headers *h;
        struct jv *reply;
        pthread_t t;
};

static void *bg_h_main(void *arg)
{
        struct bg_h *b = arg;

        b->reply = handle_h(b->e, b->text, b->h, NULL);
        return NULL;
}

/* Over HTTP a notifications/cancelled reaches only the calls of its own session scope. */
static void test_http_cancel(void **state)
{
        static const char init_text[] = INIT;
        const struct mcp_http_headers mine = { .present = true, .session = "alice 0123" };
        const struct mcp_http_headers other = { .present = true, .session = "bob 0123" };
        const struct mcp_http_headers none = { .present = true };
        static const char cancel[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                                     "cancelled\",\"params\":{\"requestId\":5}}";
        struct mcp_reply rep = { 0 };
        struct env e;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        assert_int_equal(
                mcp_handle(e.s, e.ss, init_text, strlen(init_text), &none, NULL, NULL, NULL, &rep),
                0);
        assert_int_equal(strlen(rep.session_id), MCP_SESSION_ID_LEN);
        assert_int_equal(strspn(rep.session_id, "0123456789abcdef"), MCP_SESSION_ID_LEN);
        mcp_reply_clear(&rep);
        e.f.busy = -1;
        struct bg_h b = { .e = &e, .text = CALL(5, "{\"name\":\"listDir\"}"), .h = &mine };
        assert_int_equal(pthread_create(&b.t, NULL, bg_h_main, &b), 0);
        await_calls(&e, 2);
        assert_null(handle_h(&e, cancel, &other, NULL));
        assert_null(handle_h(&e, cancel, &none, NULL));
        assert_null(handle(&e, cancel)); /* stdio's scope is not HTTP's */
        int before = calls_now(&e);
        await_calls(&e, before + 2); /* still waiting: none of those cancelled it */
        assert_null(handle_h(&e, cancel, &mine, NULL));
        assert_int_equal(pthread_join(b.t, NULL), 0);
        assert_true(is_error(b.reply));
        assert_non_null(strstr(text0(b.reply), "cancelled"));
        jv_unref(b.reply);
        teardown_env(&e);
}

static void test_progress(void **state)
{
        struct env e;
        struct jv *v;

        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t" }), 0);
        init(&e);
        e.f.output = true;
        v = handle(&e, CALL(1, "{\"name\":\"runBash\",\"arguments\":{\"command\":\"x\"},"
                               "\"_meta\":{\"progressToken\":\"tok\"}}"));
        assert_false(is_error(v));
        jv_unref(v);
        assert_true(jv_array_size(e.emitted) >= 1);
        const struct jv *p = jv_object_get(jv_array_get(e.emitted, 0), "params");
        assert_string_equal(jv_string(jv_object_get(jv_array_get(e.emitted, 0), "method")),
                            "notifications/progress");
        assert_string_equal(jv_string(jv_object_get(p, "progressToken")), "tok");
        assert_int_equal(jv_integer(jv_object_get(p, "progress")), 1);
        assert_string_equal(jv_string(jv_object_get(p, "message")), "line2");
        size_t n = jv_array_size(e.emitted);
        v = handle(&e, CALL(2, "{\"name\":\"runBash\",\"arguments\":{\"command\":\"x\"}}"));
        jv_unref(v);
        assert_int_equal(jv_array_size(e.emitted), n); /* no token: no progress */
        teardown_env(&e);

        /* a silent command: heartbeats every progress_ms, counting up, without a message */
        assert_int_equal(setup_opts(&e, &(struct mcp_options){ .thread = "t", .progress_ms = 100 }),
                         0);
        init(&e);
        e.f.delay_ms = 450;
        v = handle(&e, CALL(3, "{\"name\":\"runBash\",\"arguments\":{\"command\":\"x\"},"
                               "\"_meta\":{\"progressToken\":42}}"));
        jv_unref(v);
        assert_true(jv_array_size(e.emitted) >= 3);
        for (size_t i = 0; i < jv_array_size(e.emitted); i++) {
                p = jv_object_get(jv_array_get(e.emitted, i), "params");
                assert_int_equal(jv_integer(jv_object_get(p, "progressToken")), 42);
                assert_int_equal(jv_integer(jv_object_get(p, "progress")), (int64_t)i + 1);
                assert_null(jv_object_get(p, "message"));
        }
        teardown_env(&e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_framing),    cmocka_unit_test(test_lifecycle),
                cmocka_unit_test(test_tools_list), cmocka_unit_test(test_tools_call),
                cmocka_unit_test(test_modern),     cmocka_unit_test(test_queue),
                cmocka_unit_test(test_cancel),     cmocka_unit_test(test_http_cancel),
                cmocka_unit_test(test_progress),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
