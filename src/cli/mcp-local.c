/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box mcp`'s local backend: each call is one run on the thread (b4_runtime_run_begin()),
 * as `b4box tool` does, with the thread recorded like `b4box exec` records it. A run slot
 * held by another call is -EBUSY (the MCP core queues); a cancelled call cancels the run.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "base/macro.h"
#include "cli.h"
#include "json/json.h"
#include "mcp-backend.h"

/* b4_exec_output_fn: runBash's output to the core (progress). */
static void pass_output(void *userdata, enum b4_exec_stream stream, const char *p, size_t n)
{
        const struct mcp_call *c = userdata;

        (void)stream;
        c->on_output(c->output_ctx, p, n);
}

static int run_tool(struct cli_local *l,
                    const struct mcp_call *c,
                    struct jv **ret_doc,
                    struct b4_error *err)
{
        struct b4_tool_result res = { 0 };
        struct mcp_forward *fw = NULL;
        struct b4_run *run = NULL;
        int r;

        r = cli_local_thread_register(l, c->thread, err);
        if (r < 0)
                return r;
        r = b4_runtime_run_begin(l->rt, c->thread, &run, err);
        if (r < 0)
                return r;
        if (c->on_output)
                b4_run_set_output(run, pass_output, (void *)c);
        r = mcp_cancel_forward(c->cancel, b4_run_cancel_token(run), &fw);
        if (r >= 0)
                r = b4_run_call(run, c->tool, c->args, &res, err);
        fw = mcp_cancel_forward_stop(fw);
        b4_run_end(run);
        if (r < 0)
                return r;
        *ret_doc = TAKE_PTR(res.doc);
        b4_tool_result_clear(&res);
        return 0;
}

static struct jv *ok_doc(struct jv *result)
{
        return jv_pack("{s:b, s:o}", "ok", true, "result", result);
}

static struct jv *thread_list(struct cli_local *l, struct b4_error *err)
{
        struct b4_thread_row *rows = NULL;
        size_t n = 0;

        if (b4_runtime_thread_list(l->rt, NULL, &rows, &n, err) < 0)
                return NULL;
        struct jv *a = jv_array_new();
        for (size_t i = 0; a && i < n; i++)
                if (jv_array_append_new(a, jv_pack("{s:s, s:s}", "thread_id", rows[i].id, "state",
                                                   b4_runtime_thread_state(l->rt, rows[i].id))) < 0)
                        a = jv_unref(a);
        b4_thread_rows_free(rows, n);
        return a ? ok_doc(a) : NULL;
}

/* createThread, listThreads, releaseThread, deleteThread. Return: as mcp_backend_ops.call. */
static int lifecycle(struct cli_local *l,
                     const struct mcp_call *c,
                     struct jv **ret_doc,
                     struct b4_error *err)
{
        struct b4_thread_row row = { 0 };
        int r = 0;

        if (strcmp(c->tool, "listThreads") == 0) {
                *ret_doc = thread_list(l, err);
                return *ret_doc ? 0 : err->error ? err->error : -ENOMEM;
        }
        if (strcmp(c->tool, "createThread") == 0) {
                r = b4_runtime_thread_create(l->rt, c->thread, NULL, NULL, NULL, &row, err);
                b4_thread_row_clear(&row);
        } else if (strcmp(c->tool, "releaseThread") == 0) {
                r = b4_runtime_thread_release(l->rt, c->thread, err);
        } else {
                r = b4_runtime_thread_delete(l->rt, c->thread, err);
        }
        if (r < 0)
                return r;
        *ret_doc = ok_doc(jv_pack("{s:s, s:s}", "thread_id", c->thread, "done", c->tool));
        return *ret_doc ? 0 : -ENOMEM;
}

static int local_call(void *data,
                      const struct mcp_call *c,
                      struct jv **ret_doc,
                      struct b4_error *err)
{
        if (mcp_is_lifecycle_tool(c->tool))
                return lifecycle(data, c, ret_doc, err);
        return run_tool(data, c, ret_doc, err);
}

static bool local_network(void *data, const char *thread, void *caller)
{
        const struct cli_local *l = data;

        (void)thread;
        (void)caller;
        return l->cfg->sandbox.policy.network == B4_NETWORK_ALLOW;
}

const struct mcp_backend_ops mcp_local_ops = { .call = local_call,
                                               .network_allowed = local_network };
