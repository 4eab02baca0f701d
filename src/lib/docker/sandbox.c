/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handles: struct b4_sandbox over the keeper b4-sbx-<id>. Core runs every operation under
 * the thread's shared lease and retries it once after recover (reference §3.6): an
 * operation that hits PID exhaustion returns -EAGAIN; recover removes the keeper and
 * recreates it from the recorded launch config (the volume is kept; no ownership init).
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "docker/docker.h"
#include "docker/internal.h"
#include "docker/net.h"

#define EXEC_MARKER_WORD "__B4_EXEC_STARTED__"

struct docker_sandbox {
        struct b4_sandbox base;
        struct docker_core *core; /* a reference */
        char name[64];
        uint64_t timeout_ms; /* the policy's */
        size_t output_cap;   /* the policy's */
        struct docker_fs_target t;
};

/* ---- recovery ---- */

/* Under the exclusive lease, with the state the failed attempt saw still current: a lost
 * agent in a running keeper is reconnected (on the retry); anything else replaces the
 * keeper (PID exhaustion, a keeper gone). */
static int sandbox_recover(struct b4_sandbox *sb, struct b4_error *err)
{
        struct docker_sandbox *s = container_of(sb, struct docker_sandbox, base);
        const struct docker_state *st = b4_entry_state(b4_sandbox_entry(sb));
        struct b4_error e = { 0 };
        bool running = false;
        int r;

        if (st->agent && docker_agent_lost(st->agent)) {
                docker_agent_reset(st->agent);
                if (docker_container_running(s->core, st->name, &running, NULL) >= 0 && running)
                        return 0;
        }
        if (st->agent)
                docker_agent_reset(st->agent);
        r = docker_remove_container(s->core, st->name, &e);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: Docker PID recovery removal failed "
                                         "for thread \"%s\": %s. Run `b4box check`.",
                                         st->thread_id, e.msg);
        docker_net_detach(s->core->net, st->id);              /* the new keeper gets a new netns */
        return docker_create_keeper(s->core, st, false, err); /* already coded B4_E2001 */
}

/* ---- filesystem ---- */

/* The archive/exec members: the agent-backed table's fallback (fs.c). */
static struct docker_fs_target *target_of(struct b4_fs *fs)
{
        return &container_of(fs, struct docker_sandbox, base.fs)->t;
}

static int fs_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        return docker_fs_read_file(target_of(fs), path, flags, max, ret, ret_len, err);
}

static int fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return docker_fs_lstat(target_of(fs), path, ret, err);
}

static int fs_stat(struct b4_fs *fs,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        return docker_fs_stat(target_of(fs), path, flags, ret, err);
}

static int fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        return docker_fs_list_dir(target_of(fs), path, flags, ret, err);
}

static int fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        return docker_fs_realpath(target_of(fs), path, ret, err);
}

static int fs_walk(struct b4_fs *fs,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        return docker_fs_walk(target_of(fs), path, max_entries, prune, ret, ret_n, err);
}

static int fs_read_files(struct b4_fs *fs,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        return docker_fs_read_files(target_of(fs), reqs, n, ret, err);
}

static int fs_write_file(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        return docker_fs_write_file(target_of(fs), path, flags, data, len, err);
}

static int fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        return docker_fs_mkdir_p(target_of(fs), path, err);
}

static int fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        return docker_fs_remove(target_of(fs), path, err);
}

static int fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        return docker_fs_touch(target_of(fs), path, flags, err);
}

static const struct b4_fs_ops fallback_fs_ops = {
        .read_file = fs_read_file,
        .lstat = fs_lstat,
        .stat = fs_stat,
        .list_dir = fs_list_dir,
        .realpath = fs_realpath,
        .walk = fs_walk,
        .read_files = fs_read_files,
        .write_file = fs_write_file,
        .mkdir_p = fs_mkdir_p,
        .remove = fs_remove,
        .touch = fs_touch,
};

/* agent_fs_ops' getter: the agent of the thread's current state (stable under the lease the
 * operation holds; a handle outlives states, so it never keeps the agent itself). */
static int fs_conn(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        struct docker_sandbox *s = container_of(fs, struct docker_sandbox, base.fs);
        const struct docker_state *st = b4_entry_state(b4_sandbox_entry(&s->base));
        int r;

        if (!st || !st->agent)
                return 0;
        r = docker_agent_conn(st->agent, ret, err);
        return r < 0 ? r : 1;
}

static const struct agent_fs_ops sandbox_fs_ops = {
        .ops = { AGENT_FS_READ_MEMBERS, AGENT_FS_WRITE_MEMBERS },
        .conn = fs_conn,
        .fallback = &fallback_fs_ops,
        .falls_back = docker_fs_falls_back,
};

/* ---- exec ---- */

struct exec_args {
        char **argv;
        char **env;
};

static int build_exec(const struct b4_exec_req *req, struct exec_args *a, struct b4_error *err)
{
        cleanup_free char *cwd = NULL, *script = NULL;
        int r;

        for (size_t i = 0; i < req->n_env; i++) {
                cleanup_free char *kv = NULL;
                if (!b4_env_name_is_valid(req->env[i].name))
                        return b4_error_set(err, -EINVAL,
                                            "Invalid environment variable name \"%s\": keys must "
                                            "match /^[A-Za-z_][A-Za-z0-9_]*$/",
                                            req->env[i].name ? req->env[i].name : "");
                if (b4_asprintf(&kv, "%s=%s", req->env[i].name,
                                req->env[i].value ? req->env[i].value : "") < 0 ||
                    strv_consume(&a->env, TAKE_PTR(kv)) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        }
        r = docker_shell_quote(req->cwd ? req->cwd : B4_WORKSPACE_ROOT, &cwd);
        if (r >= 0)
                r = b4_asprintf(&script, "printf '%%s\\n' '%s'; cd %s && %s", EXEC_MARKER_WORD, cwd,
                                req->command);
        if (r >= 0)
                r = strv_extend(&a->argv, "sh");
        if (r >= 0)
                r = strv_extend(&a->argv, "-c");
        if (r >= 0)
                r = strv_consume(&a->argv, TAKE_PTR(script));
        return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}

/* The daemon or the keeper could not run the command at all: B4_E2001. */
static int exec_unavailable(const char *thread_id, int r, struct b4_error *err)
{
        struct b4_error inner = { 0 };

        if (err)
                inner = *err;
        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: a command for thread \"%s\" could not run: "
                                 "%s. Run `b4box check`.",
                                 thread_id, inner.msg);
}

/* One attempt. -EAGAIN with @ret filled: an admission failure (the command never started),
 * never for a configured timeout's 124 (§3.6); core recovers and retries. */
static int exec_once(struct docker_sandbox *s,
                     const struct b4_exec_req *req,
                     const struct exec_args *a,
                     struct b4_exec_result *ret,
                     struct b4_error *err)
{
        struct docker_exec_spec spec = {
                .container = s->name,
                .argv = a->argv,
                .env = a->env,
                .timeout_ms = req->timeout_ms ? req->timeout_ms : s->timeout_ms,
                .output_cap = req->output_cap ? req->output_cap : s->output_cap,
                .cancel = req->cancel,
        };
        bool started = false;
        int r;

        r = docker_exec_run_marked(s->t.d, &spec, EXEC_MARKER_WORD "\n", &started, ret, err);
        if (r < 0)
                return r;
        ret->timeout_ms = spec.timeout_ms;
        if (!started && !ret->timed_out && ret->exit_code != 0 &&
            (docker_admission_failure(ret->out) || docker_admission_failure(ret->errout)))
                return -EAGAIN;
        return 0;
}

/* The command line both paths run: `cd <cwd> && <command>`, so a missing cwd is the
 * shell's error in both. */
static int agent_script(const struct b4_exec_req *req, char **ret, struct b4_error *err)
{
        cleanup_free char *cwd = NULL;

        if (docker_shell_quote(req->cwd ? req->cwd : B4_WORKSPACE_ROOT, &cwd) < 0 ||
            b4_asprintf(ret, "cd %s && %s", cwd, req->command) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

/* The agent's output frames to the caller's b4_exec_req.on_output: the head of each stream
 * as it is read, the tail kept past the cap when the command ends (docs/docker.md). */
static void forward_output(
        enum agent_stream stream, const char *data, size_t len, bool tail, void *userdata)
{
        const struct b4_exec_req *req = userdata;

        (void)tail;
        req->on_output(req->output_userdata,
                       stream == AGENT_STREAM_STDOUT ? B4_EXEC_STDOUT : B4_EXEC_STDERR, data, len);
}

/*
 * One attempt through the agent. -ENOTCONN/-EAGAIN only when the command was never sent
 * (core recovers and retries); a connection lost while the command ran fails it (-EIO):
 * it may have run, so it is never retried.
 */
static int exec_agent(struct docker_sandbox *s,
                      struct docker_agent *agent,
                      const struct b4_exec_req *req,
                      const struct exec_args *a,
                      struct b4_exec_result *ret,
                      struct b4_error *err)
{
        cleanup_free char *script = NULL;
        struct agent_exec_req ar = {
                .timeout_ms = req->timeout_ms ? req->timeout_ms : s->timeout_ms,
                .output_cap = req->output_cap ? req->output_cap : s->output_cap,
                .env = a->env,
                .cwd = "/",
                .cancel = req->cancel,
                .on_output = req->on_output ? forward_output : NULL,
                .userdata = (void *)req,
        };
        struct agent_conn *c;
        int r;

        r = agent_script(req, &script, err);
        if (r >= 0)
                r = docker_agent_conn(agent, &c, err);
        if (r < 0)
                return r;
        ar.command = script;
        r = agent_exec(c, &ar, ret, err);
        if (r == -ENOTCONN || r == -EPROTO) {
                b4_exec_result_clear(ret);
                return b4_error_set(err, -EIO,
                                    "the b4box-agent connection to %s dropped while the command "
                                    "ran: it is not retried",
                                    s->name);
        }
        if (r >= 0)
                ret->timeout_ms = ar.timeout_ms;
        return r;
}

static int sandbox_exec(struct b4_sandbox *sb,
                        const struct b4_exec_req *req,
                        struct b4_exec_result *ret,
                        struct b4_error *err)
{
        struct docker_sandbox *s = container_of(sb, struct docker_sandbox, base);
        const struct docker_state *st = b4_entry_state(b4_sandbox_entry(sb));
        struct exec_args a = { 0 };
        uint64_t start = now_msec();
        int r;

        r = build_exec(req, &a, err);
        if (r >= 0 && st && st->agent)
                r = exec_agent(s, st->agent, req, &a, ret, err);
        else if (r >= 0)
                r = exec_once(s, req, &a, ret, err);
        strv_free(a.argv);
        strv_free(a.env);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r < 0 && r != -EAGAIN && r != -EINVAL && r != -ECANCELED &&
            !(err && err->code != B4_CODE_NONE))
                return exec_unavailable(sb->thread_id, r, err);
        ret->duration_ms = now_msec() - start;
        return r;
}

static void sandbox_free(struct b4_sandbox *sb)
{
        struct docker_sandbox *s = container_of(sb, struct docker_sandbox, base);
        struct docker_core *c = s->core;

        free(s);
        docker_core_unref(c);
}

static const struct b4_sandbox_ops sandbox_ops = {
        .exec = sandbox_exec,
        .recover = sandbox_recover,
        .free = sandbox_free,
};

int docker_sandbox_new(struct docker_core *c,
                       const struct docker_state *st,
                       struct b4_sandbox **ret)
{
        struct docker_sandbox *s = b4_calloc(1, sizeof(*s));
        const struct b4_security *sec = &st->policy.security;

        if (!s)
                return -ENOMEM;
        if (b4_sandbox_init(&s->base, &sandbox_ops, &sandbox_fs_ops.ops, st->thread_id) < 0) {
                free(s);
                return -ENOMEM;
        }
        (void)snprintf(s->name, sizeof(s->name), "%s", st->name);
        s->timeout_ms = st->policy.resources.timeout_ms;
        s->output_cap = st->policy.output_cap ? st->policy.output_cap : B4_DEFAULT_OUTPUT_CAP;
        s->t = (struct docker_fs_target){ .d = c->d,
                                          .container = s->name,
                                          .uid = sec->run_as_non_root ? sec->uid : 0,
                                          .gid = sec->run_as_non_root ? sec->gid : 0 };
        s->core = c;
        (void)pthread_mutex_lock(&c->lock);
        c->refs++;
        (void)pthread_mutex_unlock(&c->lock);
        *ret = &s->base;
        return 0;
}
