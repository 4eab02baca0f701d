/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake's background processes, in memory, so everything above the provider is tested
 * without root (fake.h describes the model):
 *   - with stdin: a `cat`: what is written to stdin is its output; eof ends it (exit 0);
 *   - a command starting with "sleep": runs until signalled (exit 128 + signal) or its
 *     timeout (timed out, exit 124), checked when the record is looked at;
 *   - anything else runs through the fake's exec at start: its stdout then stderr are the
 *     output, its exit code the record's; it is exited when start returns.
 * A release or destroy kills the running ones (released). The spool is bounded as a real
 * one (B4_PROC_SPOOL_MAX, or fake_provider_set_spool_max()). All under the core's lock.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "fake-internal.h"

struct fake_proc {
        uint64_t pid;
        char *tag, *command;
        bool running, timed_out, released, stdin_open, truncated, sleeper;
        int exit_code;
        int64_t started_ms, ended_ms;
        uint64_t deadline_ms; /* monotonic; 0 = none */
        char *log;            /* owned */
        size_t len;
};

static void proc_free(struct fake_proc *p)
{
        free(p->tag);
        free(p->command);
        free(p->log);
        free(p);
}

void fake_procs_clear(struct fake_ws *ws)
{
        for (size_t i = 0; i < ws->n_procs; i++)
                proc_free(ws->procs[i]);
        free(ws->procs);
        ws->procs = NULL;
        ws->n_procs = 0;
}

static void end(struct fake_proc *p, int code)
{
        p->running = false;
        p->stdin_open = false;
        p->exit_code = code;
        p->ended_ms = realtime_msec();
}

void fake_procs_kill_all(struct fake_ws *ws)
{
        for (size_t i = 0; i < ws->n_procs; i++)
                if (ws->procs[i]->running) {
                        ws->procs[i]->released = true;
                        end(ws->procs[i], 128 + 9);
                }
}

/* Apply a passed timeout. */
static void settle(struct fake_proc *p)
{
        if (p->running && p->deadline_ms && now_msec() >= p->deadline_ms) {
                p->timed_out = true;
                end(p, 124);
        }
}

static int append(struct fake_ws *ws, struct fake_proc *p, const char *data, size_t len)
{
        size_t room = ws->spool_max > p->len ? ws->spool_max - p->len : 0;
        char *n;

        if (len > room) {
                p->truncated = true;
                len = room;
        }
        if (!len)
                return 0;
        n = b4_realloc(p->log, p->len + len + 1);
        if (!n)
                return -ENOMEM;
        memcpy(n + p->len, data, len);
        p->len += len;
        n[p->len] = '\0';
        p->log = n;
        return 0;
}

static struct fake_proc *find(struct fake_ws *ws, uint64_t pid, struct b4_error *err)
{
        for (size_t i = 0; i < ws->n_procs; i++)
                if (ws->procs[i]->pid == pid) {
                        settle(ws->procs[i]);
                        return ws->procs[i];
                }
        (void)b4_error_set(err, -ESRCH, "no background process %llu", (unsigned long long)pid);
        return NULL;
}

static int info_of(const struct fake_proc *p, struct b4_proc_info *ret)
{
        *ret = (struct b4_proc_info){
                .pid = p->pid,
                .tag = p->tag ? b4_strdup(p->tag) : NULL,
                .command = b4_strdup(p->command),
                .running = p->running,
                .timed_out = p->timed_out,
                .released = p->released,
                .stdin_open = p->stdin_open,
                .truncated = p->truncated,
                .exit_code = p->running ? -1 : p->exit_code,
                .started_ms = p->started_ms,
                .ended_ms = p->ended_ms,
                .bytes = p->len,
        };
        if (!ret->command || (p->tag && !ret->tag)) {
                b4_proc_info_clear(ret);
                return -ENOMEM;
        }
        return 0;
}

/* Lock the handle's workspace. */
static int lock_ws(struct b4_sandbox *sb,
                   struct fake_core **c,
                   struct fake_ws **ws,
                   struct b4_error *err)
{
        return fake_view_lock(&sb->fs, FAKE_CALL_PROC, c, ws, err);
}

/* Run a plain command through the fake's exec, unlocked; its output becomes the log. */
static int run_now(struct b4_sandbox *sb,
                   fake_exec_fn *fn,
                   void *ud,
                   const struct b4_proc_req *req,
                   struct b4_exec_result *res,
                   struct b4_error *err)
{
        struct b4_exec_req x = {
                .command = req->command, .cwd = req->cwd, .env = req->env, .n_env = req->n_env
        };

        return fn(sb, &x, res, ud, err);
}

static int fp_start(struct b4_sandbox *sb,
                    const struct b4_proc_req *req,
                    struct b4_proc_info *ret,
                    struct b4_error *err)
{
        struct b4_exec_result res = { 0 };
        struct fake_proc *p, **v;
        struct fake_core *c;
        struct fake_ws *ws;
        bool plain = !req->stdin_pipe && strncmp(req->command, "sleep", 5) != 0;
        int r;

        if (plain) { /* outside the lock: an injected exec may call back into the provider */
                r = lock_ws(sb, &c, &ws, err);
                if (r < 0)
                        return r;
                fake_exec_fn *fn = c->exec;
                void *ud = c->exec_userdata;
                (void)fake_view_unlock(c, 0);
                r = run_now(sb, fn, ud, req, &res, err);
                if (r < 0)
                        return r;
        }
        r = lock_ws(sb, &c, &ws, err);
        if (r < 0) {
                b4_exec_result_clear(&res);
                return r;
        }
        if (ws->n_procs >= B4_PROC_MAX_RECORDS) {
                b4_exec_result_clear(&res);
                return fake_view_unlock(c, b4_error_set(err, -ENOSPC,
                                                        "thread \"%s\" has %u background process "
                                                        "records: forget some",
                                                        ws->thread_id, B4_PROC_MAX_RECORDS));
        }
        p = b4_calloc(1, sizeof(*p));
        v = p ? b4_reallocarray(ws->procs, ws->n_procs + 1, sizeof(*v)) : NULL;
        if (v)
                ws->procs = v;
        r = v ? 0 : -ENOMEM;
        if (r >= 0) {
                *p = (struct fake_proc){ .pid = ++ws->next_pid,
                                         .command = b4_strdup(req->command),
                                         .tag = req->tag ? b4_strdup(req->tag) : NULL,
                                         .running = true,
                                         .stdin_open = req->stdin_pipe,
                                         .sleeper = !plain && !req->stdin_pipe,
                                         .exit_code = -1,
                                         .started_ms = realtime_msec(),
                                         .deadline_ms = req->timeout_ms
                                                                ? now_msec() + req->timeout_ms
                                                                : 0 };
                ws->procs[ws->n_procs++] = p;
                if (!p->command || (req->tag && !p->tag))
                        r = -ENOMEM;
        } else {
                free(p);
        }
        if (r >= 0 && plain) {
                r = append(ws, p, res.out ? res.out : "", res.out_len);
                if (r >= 0)
                        r = append(ws, p, res.errout ? res.errout : "", res.errout_len);
                end(p, res.exit_code);
        }
        if (r >= 0)
                r = info_of(p, ret);
        b4_exec_result_clear(&res);
        return fake_view_unlock(c, r < 0 ? b4_error_set(err, r, "out of memory") : 0);
}

static int fp_list(struct b4_sandbox *sb,
                   struct b4_proc_info **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        struct b4_proc_info *v = NULL;
        struct fake_core *c;
        struct fake_ws *ws;
        size_t n = 0;
        int r;

        r = lock_ws(sb, &c, &ws, err);
        if (r < 0)
                return r;
        v = b4_calloc(ws->n_procs + 1, sizeof(*v));
        r = v ? 0 : -ENOMEM;
        for (; r >= 0 && n < ws->n_procs; n++) {
                settle(ws->procs[n]);
                r = info_of(ws->procs[n], &v[n]);
        }
        (void)fake_view_unlock(c, 0);
        if (r < 0) {
                b4_proc_infos_free(v, n);
                return b4_error_set(err, r, "out of memory");
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int fp_get(struct b4_sandbox *sb,
                  uint64_t pid,
                  struct b4_proc_info *ret,
                  struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        struct fake_proc *p;
        int r = lock_ws(sb, &c, &ws, err);

        if (r < 0)
                return r;
        p = find(ws, pid, err);
        return fake_view_unlock(c, !p ? -ESRCH : info_of(p, ret));
}

static int fp_read(struct b4_sandbox *sb,
                   uint64_t pid,
                   uint64_t offset,
                   size_t max,
                   char **ret,
                   size_t *ret_len,
                   struct b4_proc_info *ret_info,
                   struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        struct fake_proc *p;
        size_t n;
        int r = lock_ws(sb, &c, &ws, err);

        if (r < 0)
                return r;
        p = find(ws, pid, err);
        if (!p)
                return fake_view_unlock(c, -ESRCH);
        n = offset < p->len ? p->len - (size_t)offset : 0;
        n = n < max ? n : max;
        *ret = b4_malloc(n + 1);
        r = *ret ? 0 : -ENOMEM;
        if (r >= 0) {
                if (n)
                        memcpy(*ret, p->log + offset, n);
                (*ret)[n] = '\0';
                *ret_len = n;
        }
        if (r >= 0 && ret_info)
                r = info_of(p, ret_info);
        return fake_view_unlock(c, r);
}

static int fp_stdin(struct b4_sandbox *sb,
                    uint64_t pid,
                    const void *data,
                    size_t len,
                    bool eof,
                    struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        struct fake_proc *p;
        int r = lock_ws(sb, &c, &ws, err);

        if (r < 0)
                return r;
        p = find(ws, pid, err);
        if (!p)
                return fake_view_unlock(c, -ESRCH);
        if (!p->stdin_open)
                return fake_view_unlock(c, b4_error_set(err, -EPIPE,
                                                        "the stdin of background process %llu is "
                                                        "closed",
                                                        (unsigned long long)pid));
        r = append(ws, p, data, len); /* a cat */
        if (r >= 0 && eof)
                end(p, 0);
        return fake_view_unlock(c, r);
}

static int fp_signal(struct b4_sandbox *sb, uint64_t pid, int sig, struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        struct fake_proc *p;
        int r = lock_ws(sb, &c, &ws, err);

        if (r < 0)
                return r;
        p = find(ws, pid, err);
        if (p && p->running)
                end(p, 128 + sig);
        return fake_view_unlock(c, p ? 0 : -ESRCH);
}

static int fp_forget(struct b4_sandbox *sb, uint64_t pid, struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        int r = lock_ws(sb, &c, &ws, err);

        if (r < 0)
                return r;
        for (size_t i = 0; i < ws->n_procs; i++) {
                if (ws->procs[i]->pid != pid)
                        continue;
                proc_free(ws->procs[i]);
                memmove(&ws->procs[i], &ws->procs[i + 1], (ws->n_procs - i - 1) * sizeof(void *));
                ws->n_procs--;
                return fake_view_unlock(c, 0);
        }
        return fake_view_unlock(c, b4_error_set(err, -ESRCH, "no background process %llu",
                                                (unsigned long long)pid));
}

const struct b4_proc_ops fake_proc_ops = {
        .start = fp_start,
        .list = fp_list,
        .get = fp_get,
        .read = fp_read,
        .write_stdin = fp_stdin,
        .send_signal = fp_signal,
        .forget = fp_forget,
};
