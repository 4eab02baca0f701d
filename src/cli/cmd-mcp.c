/* SPDX-License-Identifier: Apache-2.0 */
/*
 *   b4box mcp [--thread ID] [--lifecycle-tools] [--server URL]
 * An MCP server on stdin/stdout (docs/mcp.md): newline-delimited JSON-RPC, nothing but MCP
 * on stdout, logs on stderr, exit at stdin's EOF. The tools run on the local state dir
 * through the runtime as `b4box exec` does (cli_local_open()); with --server URL (or
 * $B4BOX_URL) the command is b4box-full's and goes through that server's HTTP API.
 * Each tools/call runs on a thread of its own so that notifications/cancelled reaches it;
 * at most MCP_STDIO_CALLS run at once (more are refused with a JSON-RPC error).
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"
#include "b4box/version.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "cli.h"
#include "client.h"
#include "json/json.h"
#include "mcp-backend.h"
#include "mcp/mcp.h"

#define MCP_STDIO_CALLS 64 /* tools/call requests running at once */

struct stdio_ctx {
        struct mcp_server *srv;
        struct mcp_session *ss;
        pthread_mutex_t out_lock; /* one message per line, whole */
        pthread_mutex_t lock;
        pthread_cond_t idle;
        unsigned running;
};

/* mcp_emit_fn: one line on stdout. */
static int emit_line(void *ctx, const char *json, size_t len)
{
        struct stdio_ctx *x = ctx;
        int r;

        pthread_mutex_lock(&x->out_lock);
        r = write_all(STDOUT_FILENO, json, len);
        if (r >= 0)
                r = write_all(STDOUT_FILENO, "\n", 1);
        pthread_mutex_unlock(&x->out_lock);
        return r;
}

static void handle(struct stdio_ctx *x, const char *line, size_t len)
{
        struct mcp_reply rep = { 0 };

        if (mcp_handle(x->srv, x->ss, line, len, NULL, emit_line, x, NULL, &rep) < 0) {
                static const char oom[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
                                          "-32603,\"message\":\"out of memory\"}}";
                (void)emit_line(x, oom, sizeof(oom) - 1);
                return;
        }
        if (rep.json)
                (void)emit_line(x, rep.json, strlen(rep.json));
        mcp_reply_clear(&rep);
}

struct job {
        struct stdio_ctx *x;
        size_t len;
        char line[];
};

static void *job_main(void *arg)
{
        struct job *j = arg;
        struct stdio_ctx *x = j->x;

        handle(x, j->line, j->len);
        free(j);
        pthread_mutex_lock(&x->lock);
        if (--x->running == 0)
                pthread_cond_broadcast(&x->idle);
        pthread_mutex_unlock(&x->lock);
        return NULL;
}

/* A tools/call on a thread of its own; false when none can run now. */
static bool spawn(struct stdio_ctx *x, const char *line, size_t len)
{
        struct job *j;
        pthread_attr_t a;
        pthread_t t;
        bool ok = false;

        pthread_mutex_lock(&x->lock);
        if (x->running < MCP_STDIO_CALLS && (j = b4_malloc(sizeof(*j) + len + 1))) {
                j->x = x;
                j->len = len;
                memcpy(j->line, line, len);
                j->line[len] = '\0';
                (void)pthread_attr_init(&a);
                (void)pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
                ok = pthread_create(&t, &a, job_main, j) == 0;
                (void)pthread_attr_destroy(&a);
                if (ok)
                        x->running++;
                else
                        free(j);
        }
        pthread_mutex_unlock(&x->lock);
        return ok;
}

static void dispatch(struct stdio_ctx *x, const char *line, size_t len)
{
        static const char busy[] = "too many tool calls in flight";

        if (strspn(line, " \t\r") == len)
                return;
        if (!mcp_is_tool_call(line, len)) {
                handle(x, line, len);
                return;
        }
        if (spawn(x, line, len))
                return;
        struct jv *v = NULL;
        (void)jv_parse(line, len, &v, NULL);
        cleanup_free char *id = NULL;
        cleanup_free char *msg = NULL;
        if (jv_dump(jv_object_get(v, "id"), 0, &id) >= 0 &&
            b4_asprintf(&msg,
                        "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32000,"
                        "\"message\":\"%s\"}}",
                        id, busy) >= 0)
                (void)emit_line(x, msg, strlen(msg));
        jv_unref(v);
}

/* Lines from stdin until EOF; a line over MCP_MESSAGE_MAX is answered as a parse error. */
static int read_loop(struct stdio_ctx *x)
{
        static const char too_long[] =
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                "\"message\":\"the message is longer than 4 MiB\"}}";
        struct strbuf sb;
        char chunk[65536];
        bool skipping = false;
        ssize_t n;

        strbuf_init(&sb, MCP_MESSAGE_MAX);
        while ((n = read(STDIN_FILENO, chunk, sizeof(chunk))) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (ssize_t i = 0; i < n; i++) {
                        if (chunk[i] != '\n') {
                                if (!skipping && strbuf_addc(&sb, chunk[i]) < 0) {
                                        skipping = true;
                                        (void)emit_line(x, too_long, sizeof(too_long) - 1);
                                }
                                continue;
                        }
                        if (!skipping && sb.len)
                                dispatch(x, sb.buf, sb.len);
                        sb.len = 0;
                        skipping = false;
                }
        }
        if (!skipping && sb.len)
                dispatch(x, sb.buf, sb.len);
        strbuf_release(&sb);
        return 0;
}

struct mcp_args {
        const char *thread;
        const char *server;
        bool lifecycle;
};

static int parse_mcp(int argc, char **argv, struct mcp_args *a)
{
        for (int i = 1; i < argc; i++) {
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(argv[i], "--thread") == 0 && v && *v)
                        a->thread = argv[++i];
                else if (strcmp(argv[i], "--server") == 0 && v)
                        a->server = argv[++i];
                else if (strcmp(argv[i], "--lifecycle-tools") == 0)
                        a->lifecycle = true;
                else {
                        cli_error("mcp: unexpected argument '%s'", argv[i]);
                        return -1;
                }
        }
        return 0;
}

static int serve_stdio(const struct mcp_options *o)
{
        struct stdio_ctx x = { .out_lock = PTHREAD_MUTEX_INITIALIZER,
                               .lock = PTHREAD_MUTEX_INITIALIZER,
                               .idle = PTHREAD_COND_INITIALIZER };

        if (mcp_server_new(o, &x.srv) < 0 || mcp_session_new(&x.ss) < 0) {
                mcp_server_free(x.srv);
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        }
        (void)read_loop(&x);
        mcp_session_cancel_all(x.ss); /* EOF: the client is gone */
        pthread_mutex_lock(&x.lock);
        while (x.running)
                pthread_cond_wait(&x.idle, &x.lock);
        pthread_mutex_unlock(&x.lock);
        mcp_session_free(x.ss);
        mcp_server_free(x.srv);
        return CLI_EXIT_OK;
}

int cmd_mcp(int argc, char **argv, const struct cli_ctx *ctx)
{
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        struct mcp_args a = { 0 };
        struct sigaction ign = { .sa_handler = SIG_IGN };
        int r;

        if (parse_mcp(argc, argv, &a) < 0)
                return CLI_USAGE;
        (void)sigaction(SIGPIPE, &ign, NULL);
        const char *url = cli_server_url(a.server);
        struct mcp_options o = { .version = b4_version(),
                                 .thread = a.thread,
                                 .lifecycle_tools = a.lifecycle };
        if (url)
                return mcp_remote_serve(url, &o, serve_stdio);
        r = cli_local_open(ctx, &l);
        if (r != 0)
                return r;
        o.ops = &mcp_local_ops;
        o.data = &l;
        return serve_stdio(&o);
}
