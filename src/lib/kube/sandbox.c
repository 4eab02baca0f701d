/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handles: struct b4_sandbox over the keeper Pod b4-sbx-<id>. Every file operation and
 * command goes over the thread's b4box-agent connection (agent.c): no API request per tool
 * call once it is up. Core runs them under the thread's shared lease and, when one fails
 * -ENOTCONN (the stream dropped, the Pod went), runs recover under the exclusive lease and
 * retries it once; a command whose stream dropped while it ran is never retried (it may have
 * run), as in the Docker provider.
 *
 * A Pod that cannot run the agent (agent.c decides) is served by the reference's `sh -s`
 * scripts instead (shell-fs.c), one exec per operation and command.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent-client.h"
#include "agent/agent-fs-ops.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "kube/kube.h"
#include "kube/provider.h"
#include "kube/shell-fs.h"

struct kube_sandbox {
        struct b4_sandbox base;
        struct kube_core *core; /* a reference */
        char pod[64];
        uint64_t timeout_ms; /* the policy's */
        size_t output_cap;   /* the policy's */
};

static struct kube_sandbox *of_fs(struct b4_fs *fs)
{
        return container_of(fs, struct kube_sandbox, base.fs);
}

/* The connection of the thread's current state (stable under the lease the call holds):
 * 1 with *ret, 0 for the sh scripts, or -errno. */
static int conn_of(struct kube_sandbox *s, struct agent_conn **ret, struct b4_error *err)
{
        struct kube_state *st = b4_entry_state(b4_sandbox_entry(&s->base));

        if (!st || !st->agent)
                return b4_error_set(err, -ENOTCONN, "thread \"%s\" has no live sandbox",
                                    s->base.thread_id);
        return kube_agent_conn(st->agent, ret, err);
}

struct kube_agent *kube_fs_agent(struct b4_fs *fs)
{
        struct kube_state *st;

        if (fs->rd)
                return kube_reader_agent(fs->rd);
        st = fs->sb ? b4_entry_state(b4_sandbox_entry(fs->sb)) : NULL;
        return st ? st->agent : NULL;
}

/* ---- recovery ---- */

/* Exclusive lease: a lost connection to a running Pod is made again on the retry; a Pod
 * that is gone or broken is made again (its PVC is kept). */
static int sandbox_recover(struct b4_sandbox *sb, struct b4_error *err)
{
        struct kube_sandbox *s = container_of(sb, struct kube_sandbox, base);
        struct kube_state *st = b4_entry_state(b4_sandbox_entry(sb));

        if (!st)
                return b4_error_set(err, -ENOTCONN, "thread \"%s\" has no live sandbox",
                                    sb->thread_id);
        if (st->agent)
                kube_agent_reset(st->agent);
        return kube_keeper_revive(s->core, st, err);
}

/* ---- filesystem ---- */

/* agent_fs_ops' getter: the connection of the thread's current state. */
static int fs_conn(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        return conn_of(of_fs(fs), ret, err);
}

static const struct agent_fs_ops sandbox_fs_ops = {
        .ops = { AGENT_FS_READ_MEMBERS, AGENT_FS_WRITE_MEMBERS, AGENT_FS_LINK_MEMBERS },
        .conn = fs_conn,
        .fallback = &kube_shell_fs_ops,
};

/* ---- exec ---- */

/* The policy's variables, then the request's over them ("NAME=value"). */
static int exec_env(const struct b4_policy *p,
                    const struct b4_exec_req *req,
                    char ***ret,
                    struct b4_error *err)
{
        char **env = NULL;

        for (size_t i = 0; i < req->n_env; i++)
                if (!b4_env_name_is_valid(req->env[i].name))
                        return b4_error_set(err, -EINVAL,
                                            "Invalid environment variable name \"%s\": keys must "
                                            "match /^[A-Za-z_][A-Za-z0-9_]*$/",
                                            req->env[i].name ? req->env[i].name : "");
        for (size_t i = 0; i < p->n_env + req->n_env; i++) {
                const struct b4_env_var *v = i < p->n_env ? &p->env[i] : &req->env[i - p->n_env];
                char *kv = NULL;

                if (b4_asprintf(&kv, "%s=%s", v->name, v->value ? v->value : "") < 0 ||
                    strv_consume(&env, kv) < 0) {
                        strv_free(env);
                        return b4_error_set(err, -ENOMEM, "out of memory");
                }
        }
        *ret = env;
        return 0;
}

/* `cd <cwd> && <command>`: a missing cwd is the shell's error, as on Docker. */
static int exec_script(const struct b4_exec_req *req, char **ret, struct b4_error *err)
{
        struct strbuf sb;
        size_t len = 0;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_adds(&sb, "cd ");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, req->cwd ? req->cwd : B4_WORKSPACE_ROOT);
        if (r >= 0)
                r = strbuf_addf(&sb, " && %s", req->command);
        if (r >= 0)
                r = strbuf_detach(&sb, ret, &len);
        strbuf_release(&sb);
        return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}

/* Without the agent: the sh script of the command. No process limit can be set there, so
 * a policy whose limit this provider enforces (hostUsers: false) is refused rather than
 * run unlimited. */
static int shell_exec(struct kube_sandbox *s,
                      struct kube_state *st,
                      const struct b4_exec_req *req,
                      char **env,
                      struct b4_exec_result *ret,
                      struct b4_error *err)
{
        const char *why = NULL;
        int r;

        (void)kube_agent_shell(st->agent, &why);
        if (s->core->user_namespace && st->policy.security.pids_limit)
                return b4_error_set_code(err, -EOPNOTSUPP, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: pod \"%s\" cannot run "
                                         "b4box-agent (%s), and without it security.pidsLimit "
                                         "cannot be enforced. Run `b4box check`.",
                                         s->pod, why ? why : "");
        struct kube_shell_cmd c = {
                .command = req->command,
                .cwd = req->cwd,
                .env = env,
                .timeout_ms = req->timeout_ms ? req->timeout_ms : s->timeout_ms,
                .output_cap = req->output_cap ? req->output_cap : s->output_cap,
                .cancel_fd = req->cancel ? b4_cancel_fd(req->cancel) : -EBADF,
        };
        r = kube_shell_exec(st->agent, &c, ret, err);
        if (r == -EIO)
                return b4_error_set_code(err, -EIO, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: the exec into pod \"%s\" broke "
                                         "while the command ran: it is not retried",
                                         s->pod);
        return r;
}

static int sandbox_exec(struct b4_sandbox *sb,
                        const struct b4_exec_req *req,
                        struct b4_exec_result *ret,
                        struct b4_error *err)
{
        struct kube_sandbox *s = container_of(sb, struct kube_sandbox, base);
        struct kube_state *st = b4_entry_state(b4_sandbox_entry(sb));
        cleanup_free char *script = NULL;
        uint64_t start = now_msec();
        struct agent_conn *c = NULL;
        char **env = NULL;
        int r;

        struct agent_exec_req ar = {
                .timeout_ms = req->timeout_ms ? req->timeout_ms : s->timeout_ms,
                .output_cap = req->output_cap ? req->output_cap : s->output_cap,
                .cwd = "/",
                .cancel = req->cancel,
                /* RLIMIT_NPROC counts per uid in a user namespace: only the Pod's own one
                 * makes it this sandbox's process limit */
                .max_procs = s->core->user_namespace && st ? st->policy.security.pids_limit : 0,
        };
        r = conn_of(s, &c, err);
        if (r < 0)
                return r;
        r = exec_env(&st->policy, req, &env, err);
        if (r >= 0 && !c) {
                r = shell_exec(s, st, req, env, ret, err);
                strv_free(env);
                return r;
        }
        if (r >= 0)
                r = exec_script(req, &script, err);
        if (r < 0) {
                strv_free(env);
                return r;
        }
        ar.command = script;
        ar.env = env;
        r = agent_exec(c, &ar, ret, err);
        strv_free(env);
        if (r == -ENOTCONN || r == -EPROTO) {
                b4_exec_result_clear(ret);
                return b4_error_set_code(err, -EIO, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: the b4box-agent connection to pod "
                                         "\"%s\" dropped while the command ran: it is not "
                                         "retried",
                                         s->pod);
        }
        if (r < 0)
                return r;
        ret->timeout_ms = ar.timeout_ms;
        ret->duration_ms = now_msec() - start;
        return 0;
}

static void sandbox_free(struct b4_sandbox *sb)
{
        struct kube_sandbox *s = container_of(sb, struct kube_sandbox, base);
        struct kube_core *c = s->core;

        free(s);
        kube_core_unref(c);
}

static const struct b4_sandbox_ops sandbox_ops = {
        .exec = sandbox_exec,
        .recover = sandbox_recover,
        .free = sandbox_free,
};

int kube_sandbox_new(struct kube_core *c, const struct kube_state *st, struct b4_sandbox **ret)
{
        struct kube_sandbox *s = b4_calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        if (b4_sandbox_init(&s->base, &sandbox_ops, &sandbox_fs_ops.ops, st->thread_id) < 0) {
                free(s);
                return -ENOMEM;
        }
        (void)snprintf(s->pod, sizeof(s->pod), "%s", st->names.pod);
        s->timeout_ms = st->policy.resources.timeout_ms;
        s->output_cap = st->policy.output_cap ? st->policy.output_cap : B4_DEFAULT_OUTPUT_CAP;
        kube_core_ref(c);
        s->core = c;
        *ret = &s->base;
        return 0;
}
