/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handles: struct b4_sandbox over the keeper b4-sbx-<id>. Every operation runs under the
 * thread's shared lease and carries PID-exhaustion recovery (reference §3.6): the attempt
 * captures a token {state, generation}; when it fails recoverably it takes the exclusive
 * lease and, if the token is still current, removes the keeper, recreates it from the
 * recorded launch config (the volume is kept; no ownership init), bumps the generation and
 * retries once. A token from an older generation (someone else recovered) just retries; a
 * token whose state is gone (released, destroyed, re-acquired) keeps the original failure.
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "core/gate.h"
#include "docker/docker.h"
#include "docker/internal.h"

#define EXEC_MARKER_WORD "__B4_EXEC_STARTED__"

struct dk_sandbox {
        struct b4_sandbox base;
        struct dk_core *core; /* a reference */
        char name[64];
        uint64_t timeout_ms; /* the policy's */
        size_t output_cap;   /* the policy's */
        struct docker_fs_target t;
};

static const struct b4_fs_ops sandbox_fs_ops;

/* ---- recovery ---- */

struct token {
        struct dk_state *state; /* a reference, or NULL */
        unsigned generation;
};

static void token_take(struct dk_sandbox *s, struct token *t)
{
        struct dk_core *c = s->core;

        (void)pthread_mutex_lock(&c->lock);
        for (struct dk_state *st = c->states; st; st = st->next)
                if (strcmp(st->thread_id, s->base.thread_id) == 0) {
                        st->refs++;
                        t->state = st;
                        t->generation = st->generation;
                }
        (void)pthread_mutex_unlock(&c->lock);
}

static void state_put(struct dk_core *c, struct dk_state *st)
{
        if (!st)
                return;
        (void)pthread_mutex_lock(&c->lock);
        dk_state_unref(st);
        (void)pthread_mutex_unlock(&c->lock);
}

typedef int op_fn(struct dk_sandbox *s, void *arg, struct b4_error *err);

/* Is the token still current? 1 = recreate, 0 = just retry, -1 = keep the failure. */
static int token_check(struct dk_core *c, const struct token *t, const char *thread_id)
{
        struct dk_state *cur = NULL;
        int r;

        (void)pthread_mutex_lock(&c->lock);
        for (struct dk_state *st = c->states; st; st = st->next)
                if (strcmp(st->thread_id, thread_id) == 0)
                        cur = st;
        if (!t->state || cur != t->state || t->generation > cur->generation)
                r = -1;
        else
                r = t->generation == cur->generation ? 1 : 0;
        (void)pthread_mutex_unlock(&c->lock);
        return r;
}

static int recreate(struct dk_sandbox *s, struct dk_state *st, struct b4_error *err)
{
        struct dk_core *c = s->core;
        struct b4_error e = { 0 };
        int r;

        r = dk_remove_container(c, st->name, &e);
        if (r < 0) {
                dk_state_forget(c, st->thread_id);
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: Docker PID recovery removal failed "
                                         "for thread \"%s\": %s. Run `b4box check`.",
                                         st->thread_id, e.msg);
        }
        r = dk_create_keeper(c, st, err);
        if (r < 0) {
                dk_state_forget(c, st->thread_id);
                return r; /* already coded B4_E2001 */
        }
        (void)pthread_mutex_lock(&c->lock);
        st->generation++;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

static int run_op(
        struct dk_sandbox *s, op_fn *fn, void *arg, struct b4_cancel *cancel, struct b4_error *err)
{
        struct dk_core *c = s->core;
        struct gate_lease *lease = NULL;
        struct token t = { 0 };
        int r, check;

        r = gate_enter(c->gate, s->base.thread_id, GATE_SHARED, cancel, &lease);
        if (r < 0)
                return b4_error_set(err, r, "operation on thread \"%s\" could not start",
                                    s->base.thread_id);
        token_take(s, &t);
        r = fn(s, arg, err);
        lease = gate_leave(lease);
        if (r != -EAGAIN) {
                state_put(c, t.state);
                return r;
        }
        /* the provider-owned, never-cancelled path: one caller's cancel cannot strand it */
        r = gate_enter(c->gate, s->base.thread_id, GATE_EXCLUSIVE, NULL, &lease);
        if (r >= 0) {
                check = token_check(c, &t, s->base.thread_id);
                r = check < 0 ? -EAGAIN : check > 0 ? recreate(s, t.state, err) : 0;
                if (r >= 0)
                        r = fn(s, arg, err);
                lease = gate_leave(lease);
        }
        state_put(c, t.state);
        return r;
}

/* ---- filesystem ---- */

struct fs_args {
        const char *path;
        unsigned flags; /* enum b4_fs_flags */
        uint64_t max;
        char **ret_s;
        size_t *ret_len;
        char ***ret_names;
        struct b4_stat *ret_st;
        const void *data;
        size_t len;
        size_t max_entries;
        char *const *prune;
        struct b4_walk_entry **ret_walk;
        size_t *ret_n;
        const struct b4_read_req *reqs;
        size_t n;
        struct b4_blob **ret_blobs;
};

#define FS_OP(fname, call)                                                    \
 static int fname##_op(struct dk_sandbox *s, void *arg, struct b4_error *err) \
 {                                                                            \
  struct fs_args *a = arg;                                                    \
  return call;                                                                \
 }

FS_OP(read_file, dfs_read_file(&s->t, a->path, a->flags, a->max, a->ret_s, a->ret_len, err))
FS_OP(lstat, dfs_lstat(&s->t, a->path, a->ret_st, err))
FS_OP(stat, dfs_stat(&s->t, a->path, a->flags, a->ret_st, err))
FS_OP(list_dir, dfs_list_dir(&s->t, a->path, a->flags, a->ret_names, err))
FS_OP(realpath, dfs_realpath(&s->t, a->path, a->ret_s, err))
FS_OP(walk, dfs_walk(&s->t, a->path, a->max_entries, a->prune, a->ret_walk, a->ret_n, err))
FS_OP(read_files, dfs_read_files(&s->t, a->reqs, a->n, a->ret_blobs, err))
FS_OP(write_file, dfs_write_file(&s->t, a->path, a->flags, a->data, a->len, err))
FS_OP(mkdir_p, dfs_mkdir_p(&s->t, a->path, err))
FS_OP(remove, dfs_remove(&s->t, a->path, err))
FS_OP(touch, dfs_touch(&s->t, a->path, a->flags, err))

static struct dk_sandbox *sb_of(struct b4_fs *fs)
{
        return container_of(fs, struct dk_sandbox, base.fs);
}

static int fs_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        struct fs_args a = {
                .path = path, .flags = flags, .max = max, .ret_s = ret, .ret_len = ret_len
        };

        return run_op(sb_of(fs), read_file_op, &a, NULL, err);
}

static int fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        struct fs_args a = { .path = path, .ret_st = ret };

        return run_op(sb_of(fs), lstat_op, &a, NULL, err);
}

static int fs_stat(struct b4_fs *fs,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        struct fs_args a = { .path = path, .flags = flags, .ret_st = ret };

        return run_op(sb_of(fs), stat_op, &a, NULL, err);
}

static int fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct fs_args a = { .path = path, .flags = flags, .ret_names = ret };

        return run_op(sb_of(fs), list_dir_op, &a, NULL, err);
}

static int fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        struct fs_args a = { .path = path, .ret_s = ret };

        return run_op(sb_of(fs), realpath_op, &a, NULL, err);
}

static int fs_walk(struct b4_fs *fs,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        struct fs_args a = { .path = path,
                             .max_entries = max_entries,
                             .prune = prune,
                             .ret_walk = ret,
                             .ret_n = ret_n };

        return run_op(sb_of(fs), walk_op, &a, NULL, err);
}

static int fs_read_files(struct b4_fs *fs,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        struct fs_args a = { .reqs = reqs, .n = n, .ret_blobs = ret };

        return run_op(sb_of(fs), read_files_op, &a, NULL, err);
}

static int fs_write_file(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        struct fs_args a = { .path = path, .flags = flags, .data = data, .len = len };

        return run_op(sb_of(fs), write_file_op, &a, NULL, err);
}

static int fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct fs_args a = { .path = path };

        return run_op(sb_of(fs), mkdir_p_op, &a, NULL, err);
}

static int fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct fs_args a = { .path = path };

        return run_op(sb_of(fs), remove_op, &a, NULL, err);
}

static int fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        struct fs_args a = { .path = path, .flags = flags };

        return run_op(sb_of(fs), touch_op, &a, NULL, err);
}

static const struct b4_fs_ops sandbox_fs_ops = {
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

/* ---- exec ---- */

struct exec_args {
        const struct b4_exec_req *req;
        char **argv;
        char **env;
        uint64_t timeout_ms;
        struct b4_exec_result res; /* a failed attempt kept for the caller */
};

static int exec_op(struct dk_sandbox *s, void *arg, struct b4_error *err)
{
        struct exec_args *a = arg;
        struct docker_exec_spec spec = {
                .container = s->name,
                .argv = a->argv,
                .env = a->env,
                .timeout_ms = a->timeout_ms,
                .output_cap = a->req->output_cap ? a->req->output_cap : s->output_cap,
                .cancel = a->req->cancel,
        };
        bool started = false;
        int r;

        b4_exec_result_clear(&a->res);
        r = docker_exec_run_marked(s->t.d, &spec, EXEC_MARKER_WORD "\n", &started, &a->res, err);
        if (r < 0)
                return r;
        /* admission failure only, and never for a configured timeout's 124 (§3.6) */
        if (!started && !a->res.timed_out && a->res.exit_code != 0 &&
            (docker_admission_failure(a->res.out) || docker_admission_failure(a->res.errout)))
                return -EAGAIN;
        return 0;
}

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

static int append_timeout(struct b4_exec_result *ret, uint64_t ms)
{
        cleanup_free char *s = NULL;
        int n;

        n = b4_asprintf(&s, "%s%sCommand timed out after %llus (resources.timeoutMs: %llums).",
                        ret->errout, ret->errout_len ? "\n" : "",
                        (unsigned long long)((ms + 999) / 1000), (unsigned long long)ms);
        if (n < 0)
                return -ENOMEM;
        free(ret->errout);
        ret->errout = TAKE_PTR(s);
        ret->errout_len = (size_t)n;
        return 0;
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

static int sandbox_exec(struct b4_sandbox *sb,
                        const struct b4_exec_req *req,
                        struct b4_exec_result *ret,
                        struct b4_error *err)
{
        struct dk_sandbox *s = container_of(sb, struct dk_sandbox, base);
        struct exec_args a = { .req = req };
        uint64_t start = now_msec();
        int r;

        a.timeout_ms = req->timeout_ms ? req->timeout_ms : s->timeout_ms;
        r = build_exec(req, &a, err);
        if (r >= 0)
                r = run_op(s, exec_op, &a, req->cancel, err);
        if (r == -EAGAIN)
                r = 0; /* recovery declined or failed again: the failed result stands */
        if (r >= 0 && a.res.timed_out)
                r = append_timeout(&a.res, a.timeout_ms);
        strv_free(a.argv);
        strv_free(a.env);
        if (r < 0) {
                b4_exec_result_clear(&a.res);
                if (r == -ENOMEM)
                        return b4_error_set(err, r, "out of memory");
                if (r == -EINVAL || r == -ECANCELED || (err && err->code != B4_CODE_NONE))
                        return r;
                return exec_unavailable(sb->thread_id, r, err);
        }
        a.res.duration_ms = now_msec() - start;
        *ret = a.res;
        return 0;
}

static void sandbox_free(struct b4_sandbox *sb)
{
        struct dk_sandbox *s = container_of(sb, struct dk_sandbox, base);
        struct dk_core *c = s->core;

        free(s);
        dk_core_unref(c);
}

static const struct b4_sandbox_ops sandbox_ops = {
        .exec = sandbox_exec,
        .free = sandbox_free,
};

int dk_sandbox_new(struct dk_core *c, struct dk_state *st, struct b4_sandbox **ret)
{
        struct dk_sandbox *s = b4_calloc(1, sizeof(*s));
        const struct b4_security *sec = &st->policy.security;

        if (!s)
                return -ENOMEM;
        if (b4_sandbox_init(&s->base, &sandbox_ops, &sandbox_fs_ops, st->thread_id) < 0) {
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
        c->refs++;
        *ret = &s->base;
        return 0;
}
