/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_exec(): one EXEC request and its replies (STARTED, DATA, EXIT). The agent enforces
 * the timeout and the output cap (its head live, its tail at the exit, the dropped count in
 * EXIT); agent-reply.c rebuilds the capture with core's capture, so the truncation marker
 * is core's, and the timeout line is left to core (ret->timeout_ms). The host keeps its own
 * deadline too: a command not reported ended AGENT_KILL_GRACE_MS after its timeout (or
 * after a cancel) fails -ETIMEDOUT, so a lying agent cannot hold a caller.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"

static int build(const struct agent_exec_req *q, struct strbuf *sb)
{
        uint32_t flags =
                (q->command ? AGENT_EXEC_SHELL : 0) | (q->clear_env ? AGENT_EXEC_CLEAR_ENV : 0);
        uint32_t argc = 0, envc = 0;
        int r;

        if (!q->command)
                while (q->argv && q->argv[argc])
                        argc++;
        while (q->env && q->env[envc])
                envc++;
        if ((!q->command && argc == 0) || q->output_cap == 0 || q->output_cap > AGENT_OUTPUT_MAX)
                return -EINVAL;
        if ((q->command ? 1 : argc) + envc > AGENT_ARGS_MAX)
                return -E2BIG;
        for (uint32_t i = 0; i < envc; i++)
                if (!strchr(q->env[i], '=') || q->env[i][0] == '=')
                        return -EINVAL;
        r = agent_buf_u32(sb, flags);
        if (r >= 0)
                r = agent_buf_u64(sb, q->timeout_ms);
        if (r >= 0)
                r = agent_buf_u64(sb, q->output_cap);
        if (r >= 0)
                r = agent_buf_u32(sb, q->max_procs);
        if (r >= 0)
                r = agent_buf_str(sb, q->cwd ? q->cwd : B4_WORKSPACE_ROOT);
        if (r >= 0)
                r = agent_buf_u32(sb, q->command ? 1 : argc);
        if (r >= 0 && q->command)
                r = agent_buf_str(sb, q->command);
        for (uint32_t i = 0; r >= 0 && !q->command && i < argc; i++)
                r = agent_buf_str(sb, q->argv[i]);
        if (r >= 0)
                r = agent_buf_u32(sb, envc);
        for (uint32_t i = 0; r >= 0 && i < envc; i++)
                r = agent_buf_str(sb, q->env[i]);
        return r;
}

/* The cancel token fired: ask the agent to kill the tree; give it the grace to report. */
static void on_cancel(struct agent_conn *conn, struct agent_call *c, uint64_t *deadline)
{
        uint64_t until = now_msec() + AGENT_KILL_GRACE_MS;

        (void)agent_conn_send(conn, c->id, AGENT_CANCEL, 0, NULL, 0);
        if (!*deadline || until < *deadline)
                *deadline = until;
}

static int finish(struct agent_call *c, const struct agent_exec_req *q, struct b4_exec_result *ret)
{
        struct b4_exec_result res = { 0 };
        int r;

        r = capture_finish(&c->out, &res.out, &res.out_len, &res.truncated);
        if (r >= 0)
                r = capture_finish(&c->err, &res.errout, &res.errout_len, &res.truncated);
        if (r < 0) {
                b4_exec_result_clear(&res);
                return r;
        }
        res.exit_code = (int)c->exit_code;
        res.cancelled = c->exit_flags & AGENT_EXIT_CANCELLED;
        if ((c->exit_flags & AGENT_EXIT_TIMED_OUT) && !res.cancelled && q->timeout_ms) {
                res.timed_out = true;
                res.exit_code = 124;
                res.timeout_ms = q->timeout_ms; /* core adds the timeout line */
        }
        res.duration_ms = c->duration_ms;
        /* getrusage(RUSAGE_CHILDREN) of the agent's supervisor: the command and what it
         * waited for or left behind and the supervisor reaped before the command ended (no
         * resident set at all: the supervisor died before it could report) */
        res.usage =
                (struct b4_exec_usage){ .known = c->max_rss ? B4_USAGE_CPU | B4_USAGE_PEAK_MEMORY
                                                            : 0,
                                        .cpu_ms = c->cpu_us / 1000,
                                        .peak_memory_bytes = c->max_rss };
        *ret = res;
        return 0;
}

static const char *why(int r)
{
        switch (r) {
        case -ENOTCONN:
                return "the sandbox agent went away during the command";
        case -EPROTO:
                return "the sandbox agent broke the protocol";
        case -ETIMEDOUT:
                return "the sandbox agent did not report the command's end in time";
        case -E2BIG:
                return "the command and its environment are too large";
        case -EINVAL:
                return "bad command request";
        default:
                return NULL;
        }
}

int agent_exec(struct agent_conn *conn,
               const struct agent_exec_req *q,
               struct b4_exec_result *ret,
               struct b4_error *err)
{
        uint64_t start = now_msec(), deadline;
        struct agent_call c;
        struct strbuf sb;
        int r;

        *ret = (struct b4_exec_result){ 0 };
        if (b4_cancel_is_set(q->cancel))
                return b4_error_set(err, -ECANCELED, "command cancelled before it started");
        if (q->output_cap == 0 || q->output_cap > AGENT_OUTPUT_MAX)
                return b4_error_set(err, -EINVAL, "output cap out of range");
        r = agent_call_init(&c, AGENT_EXEC, q->output_cap);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        c.on_output = q->on_output;
        c.userdata = q->userdata;
        strbuf_init(&sb, AGENT_FRAME_MAX);
        r = build(q, &sb);
        if (r >= 0)
                r = agent_conn_submit(conn, &c, sb.buf, sb.len);
        strbuf_release(&sb);
        if (r >= 0) {
                deadline = q->timeout_ms ? start + q->timeout_ms + AGENT_KILL_GRACE_MS : 0;
                r = agent_conn_wait(conn, &c, deadline, q->cancel, on_cancel);
        }
        if (r >= 0)
                r = finish(&c, q, ret);
        else if (c.id && (r == -ETIMEDOUT || r == -ENOMEM || r == -ECANCELED))
                /* the host gave up on a command the agent may still run: end it there too */
                (void)agent_conn_send(conn, c.id, AGENT_CANCEL, 0, NULL, 0);
        agent_call_release(&c);
        if (r < 0) {
                const char *w = why(r);
                return w ? b4_error_set(err, r, "%s", w)
                         : b4_error_set(err, r, "the command could not be started: %s",
                                        strerror(-r));
        }
        ret->duration_ms = ret->duration_ms ? ret->duration_ms : now_msec() - start;
        return 0;
}
