/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs and sandboxes: admission at the first run (acquire, deduplicated per sandbox key),
 * tool calls and permission answers, release, deletion, idle reap and shutdown.
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "runtime-internal.h"
#include "tools/host.h"

/* Get the live box of @key, acquiring the sandbox when needed. Lock held on entry and exit. */
static int box_get_locked(struct b4_runtime *rt,
                          const char *key,
                          struct b4_cancel *cancel,
                          struct box **ret,
                          struct b4_error *err)
{
        struct b4_sandbox *sb = NULL;
        struct box *b;
        int r;

        while ((b = hashmap_get(rt->boxes, key)) && (b->acquiring || b->pausing))
                (void)pthread_cond_wait(&rt->cond, &rt->lock);
        if (b && b->sb) {
                *ret = b;
                return 0;
        }
        b = b4_calloc(1, sizeof(*b));
        if (!b || hashmap_put(rt->boxes, key, b) < 0) {
                free(b);
                return -ENOMEM;
        }
        b->acquiring = true;
        (void)pthread_mutex_unlock(&rt->lock);
        r = admission_acquire(rt, key, cancel, &sb, err);
        (void)pthread_mutex_lock(&rt->lock);
        b->acquiring = false;
        (void)pthread_cond_broadcast(&rt->cond);
        if (r < 0) {
                hashmap_remove(rt->boxes, key);
                free(b);
                return r;
        }
        b->sb = sb;
        rt->acquires++;
        *ret = b;
        return 0;
}

int b4_runtime_procs_sandbox(struct b4_runtime *rt,
                             const char *id,
                             struct b4_sandbox **ret,
                             struct b4_error *err)
{
        cleanup_free char *key = NULL;
        struct box *b = NULL;
        int r;

        r = runtime_sandbox_key(rt, id, &key, err);
        if (r < 0)
                return r;
        (void)pthread_mutex_lock(&rt->lock);
        r = rt->shutting_down ? b4_error_set(err, -ESHUTDOWN, "the server is shutting down")
                              : box_get_locked(rt, key, NULL, &b, err);
        if (r >= 0) {
                b->last_used_ms = now_msec();
                *ret = b4_sandbox_ref(b->sb);
        }
        (void)pthread_mutex_unlock(&rt->lock);
        return r;
}

static struct b4_run *run_free(struct b4_run *run)
{
        if (!run)
                return NULL;
        b4_sandbox_unref(run->sb);
        b4_permissions_free(run->perms);
        free(run->thread_id);
        free(run->box_key);
        free(run);
        return NULL;
}

int b4_runtime_run_begin(struct b4_runtime *rt,
                         const char *id,
                         struct b4_run **ret,
                         struct b4_error *err)
{
        struct b4_run *run = b4_calloc(1, sizeof(*run));
        struct slot *slot = NULL;
        struct box *b = NULL;
        int r;

        if (!run)
                return -ENOMEM;
        run->rt = rt;
        run->marker_fd = -EBADF;
        run->thread_id = b4_strdup(id);
        if (!run->thread_id) {
                run_free(run);
                return -ENOMEM;
        }
        r = runtime_sandbox_key(rt, id, &run->box_key, err);
        if (r < 0) {
                run_free(run);
                return r;
        }
        (void)pthread_mutex_lock(&rt->lock);
        r = slot_take_locked(rt, id, true, &slot);
        if (r < 0) {
                (void)pthread_mutex_unlock(&rt->lock);
                run_free(run);
                return r == -EBUSY ? b4_error_set(err, r, "thread '%s' has a run in flight", id)
                       : r == -ESHUTDOWN ? b4_error_set(err, r, "the server is shutting down")
                                         : r;
        }
        run->cancel = slot->cancel;
        r = box_get_locked(rt, run->box_key, slot->cancel, &b, err);
        if (r < 0) {
                slot_drop_locked(rt, id);
                (void)pthread_mutex_unlock(&rt->lock);
                run_free(run);
                return r;
        }
        b->users++;
        run->sb = b4_sandbox_ref(b->sb);
        (void)pthread_mutex_unlock(&rt->lock);
        /* after admission, which writes the record at a thread's first run */
        r = runtime_run_permissions(rt, run->box_key, &run->perms, err);
        if (r < 0) {
                b4_run_end(run);
                return r;
        }
        r = run_marker_begin(rt, run);
        if (r < 0) /* a report lost, never a run refused */
                log_warning("thread '%s': cannot keep its run marker: %s", id, strerror(-r));
        *ret = run;
        return 0;
}

static struct tools_host_call run_context(const struct b4_run *run)
{
        return (struct tools_host_call){ .sb = run->sb,
                                         .thread_id = run->thread_id,
                                         .perms = run->perms,
                                         .cancel = run->cancel,
                                         .on_output = run->on_output,
                                         .output_userdata = run->output_userdata };
}

int b4_run_call(struct b4_run *run,
                const char *tool,
                const struct jv *args,
                struct b4_tool_result *ret,
                struct b4_error *err)
{
        struct tools_host_call c = run_context(run);

        return tools_host_call(run->rt->tools, &c, tool, args, ret, err);
}

int b4_run_check(struct b4_run *run,
                 const char *tool,
                 const struct jv *args,
                 struct b4_tool_result *ret,
                 struct b4_error *err)
{
        struct tools_host_call c = run_context(run);

        return tools_host_check(run->rt->tools, &c, tool, args, ret, err);
}

int b4_run_tools(struct b4_run *run, struct b4_tools **ret, struct b4_error *err)
{
        struct tools_host_call c = run_context(run);

        return tools_host_open(run->rt->tools, &c, ret, err);
}

int b4_run_resume(struct b4_run *run,
                  const char *interrupt_id,
                  const char *answer,
                  struct b4_tool_result *ret,
                  struct b4_error *err)
{
        struct tools_host_call c = run_context(run);

        return tools_host_resume(run->rt->tools, &c, interrupt_id, answer, ret, err);
}

struct b4_sandbox *b4_run_sandbox(struct b4_run *run)
{
        return run->sb;
}

struct b4_cancel *b4_run_cancel_token(struct b4_run *run)
{
        return run->cancel;
}

void b4_run_set_output(struct b4_run *run, b4_exec_output_fn *fn, void *userdata)
{
        run->on_output = fn;
        run->output_userdata = userdata;
}

struct b4_run *b4_run_end(struct b4_run *run)
{
        struct b4_runtime *rt;

        if (!run)
                return NULL;
        rt = run->rt;
        run_marker_end(rt, run);
        (void)pthread_mutex_lock(&rt->lock);
        struct box *b = hashmap_get(rt->boxes, run->box_key);
        if (b && b->users > 0) {
                b->users--;
                b->last_used_ms = now_msec();
        }
        slot_drop_locked(rt, run->thread_id);
        (void)pthread_mutex_unlock(&rt->lock);
        return run_free(run);
}

/* Remove @key's box if nobody uses it; returns its sandbox (a reference) or NULL. Lock held. */
static int box_take_idle_locked(struct b4_runtime *rt, const char *key, struct b4_sandbox **ret_sb)
{
        struct box *b = hashmap_get(rt->boxes, key);

        *ret_sb = NULL;
        if (!b)
                return 0;
        if (b->users > 0 || b->acquiring || b->pausing)
                return -EBUSY;
        hashmap_remove(rt->boxes, key);
        *ret_sb = b->sb;
        free(b);
        return 1;
}

int b4_runtime_thread_release(struct b4_runtime *rt, const char *id, struct b4_error *err)
{
        cleanup_free char *key = NULL;
        struct b4_sandbox *sb = NULL;
        int r;

        r = runtime_sandbox_key(rt, id, &key, err);
        if (r < 0)
                return r;
        uint64_t start = now_usec();

        (void)pthread_mutex_lock(&rt->lock);
        r = box_take_idle_locked(rt, key, &sb);
        if (r > 0)
                rt->releases++;
        (void)pthread_mutex_unlock(&rt->lock);
        if (r == -EBUSY)
                return b4_error_set(err, r, "thread '%s' has a run in flight", id);
        if (r == 0 && !rt->opts.local) /* nothing acquired; locally another process may have */
                return 0;
        b4_sandbox_unref(sb);
        r = b4_provider_release(rt->opts.provider, key, err);
        if (r >= 0)
                runtime_observe(rt, B4_EVENT_RELEASE_EXPLICIT, start);
        return r;
}

/* @id and every thread below it, parents first. */
static int collect_family(struct b4_runtime *rt, const char *id, char ***ret, struct b4_error *err)
{
        struct b4_thread_row *rows = NULL;
        cleanup_strv char **family = NULL;
        size_t n = 0;
        int r;

        r = b4_store_thread_list(rt->opts.store, NULL, &rows, &n, err);
        if (r < 0)
                return r;
        r = strv_extend(&family, id);
        for (size_t k = 0; r >= 0 && k < strv_length(family); k++)
                for (size_t i = 0; r >= 0 && i < n; i++)
                        if (rows[i].parent_id && strcmp(rows[i].parent_id, family[k]) == 0)
                                r = strv_extend(&family, rows[i].id);
        b4_thread_rows_free(rows, n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(family);
        return 0;
}

/* Take the slots of every id in @family, or none. Lock held. */
static int take_family_slots_locked(struct b4_runtime *rt, char **family)
{
        struct slot *s;

        for (size_t i = 0; family[i]; i++) {
                int r = slot_take_locked(rt, family[i], false, &s);
                if (r < 0) {
                        while (i-- > 0)
                                slot_drop_locked(rt, family[i]);
                        return r;
                }
        }
        return 0;
}

static int delete_rows(struct b4_runtime *rt, char **family, struct b4_error *err)
{
        for (size_t i = strv_length(family); i-- > 0;) {
                int r = b4_store_thread_delete(rt->opts.store, family[i], err);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        return 0;
}

int b4_runtime_thread_delete(struct b4_runtime *rt, const char *id, struct b4_error *err)
{
        struct b4_thread_row row = { 0 };
        cleanup_strv char **family = NULL;
        struct b4_sandbox *sb = NULL;
        bool is_root;
        int r;

        r = b4_store_thread_get(rt->opts.store, id, &row, err);
        if (r < 0)
                return r;
        is_root = !row.parent_id;
        b4_thread_row_clear(&row);
        r = collect_family(rt, id, &family, err);
        if (r < 0)
                return r;
        (void)pthread_mutex_lock(&rt->lock);
        r = take_family_slots_locked(rt, family);
        if (r >= 0 && is_root) {
                r = box_take_idle_locked(rt, id, &sb);
                if (r < 0) /* a run of the family holds the box: give the slots back */
                        for (size_t i = 0; family[i]; i++)
                                slot_drop_locked(rt, family[i]);
        }
        (void)pthread_mutex_unlock(&rt->lock);
        if (r == -EBUSY)
                return b4_error_set(err, r, "thread '%s' has a run in flight", id);
        if (r < 0)
                return r;
        b4_sandbox_unref(sb);
        /* Mark, destroy, delete: a crash in between leaves a marked row (finished by
         * b4_runtime_reconcile()), never a row whose workspace is gone nor the reverse. */
        r = b4_store_thread_mark_deleting(rt->opts.store, id, err);
        if (r >= 0 && is_root)
                r = b4_provider_destroy(rt->opts.provider, id, err);
        if (r >= 0)
                r = delete_rows(rt, family, err);
        (void)pthread_mutex_lock(&rt->lock);
        for (size_t i = 0; family[i]; i++)
                slot_drop_locked(rt, family[i]);
        (void)pthread_mutex_unlock(&rt->lock);
        return r;
}

struct idle_scan {
        uint64_t now, timeout;
        char **keys;
        int r;
};

static int idle_scan_cb(const char *key, void *value, void *ud)
{
        struct idle_scan *scan = ud;
        struct box *b = value;

        if (b->sb && !b->users && !b->acquiring && scan->now >= b->last_used_ms + scan->timeout)
                scan->r = strv_extend(&scan->keys, key);
        return scan->r;
}

int b4_runtime_reap_idle(struct b4_runtime *rt, uint64_t now_ms)
{
        struct idle_scan scan = { .now = now_ms, .timeout = rt->opts.idle_timeout_ms };
        int released = 0;

        (void)runtime_pause_idle(rt, now_ms);
        (void)pthread_mutex_lock(&rt->lock);
        (void)hashmap_foreach(rt->boxes, idle_scan_cb, &scan);
        (void)pthread_mutex_unlock(&rt->lock);
        STRV_FOREACH (key, scan.keys) {
                struct b4_sandbox *sb = NULL;
                (void)pthread_mutex_lock(&rt->lock);
                int r = box_take_idle_locked(rt, *key, &sb);
                if (r > 0)
                        rt->releases++;
                (void)pthread_mutex_unlock(&rt->lock);
                if (r <= 0)
                        continue;
                uint64_t start = now_usec();
                b4_sandbox_unref(sb);
                (void)b4_provider_release(rt->opts.provider, *key, NULL);
                runtime_observe(rt, B4_EVENT_RELEASE_IDLE, start);
                released++;
        }
        strv_free(scan.keys);
        return released;
}

static int fire_cb(const char *key, void *value, void *ud)
{
        struct slot *s = value;

        b4_cancel_fire(s->cancel);
        return 0;
}

/* Wait until no slot is held or @deadline (CLOCK_MONOTONIC ms) passes. Lock held. */
static void wait_slots_locked(struct b4_runtime *rt, uint64_t deadline)
{
        while (hashmap_size(rt->slots) > 0 && now_msec() < deadline)
                (void)cond_wait_until_ms(&rt->cond, &rt->lock, now_msec() + 50);
}

static int collect_key_cb(const char *key, void *value, void *ud)
{
        return strv_extend(ud, key);
}

void b4_runtime_shutdown(struct b4_runtime *rt, uint64_t deadline_ms)
{
        char **keys = NULL;

        (void)pthread_mutex_lock(&rt->lock);
        rt->shutting_down = true;
        wait_slots_locked(rt, now_msec() + deadline_ms);
        (void)hashmap_foreach(rt->slots, fire_cb, NULL);
        wait_slots_locked(rt, now_msec() + 5000);
        (void)hashmap_foreach(rt->boxes, collect_key_cb, &keys);
        (void)pthread_mutex_unlock(&rt->lock);
        STRV_FOREACH (key, keys)
                (void)b4_runtime_thread_release(rt, *key, NULL);
        strv_free(keys);
}

static int count_live_cb(const char *key, void *value, void *ud)
{
        struct box *b = value;

        if (b->sb)
                (*(size_t *)ud)++;
        return 0;
}

void b4_runtime_stats(struct b4_runtime *rt, struct b4_runtime_stats *ret)
{
        *ret = (struct b4_runtime_stats){ 0 };
        (void)pthread_mutex_lock(&rt->lock);
        (void)hashmap_foreach(rt->boxes, count_live_cb, &ret->threads_live);
        ret->runs_in_flight = hashmap_size(rt->slots);
        ret->acquires = rt->acquires;
        ret->releases = rt->releases;
        (void)pthread_mutex_unlock(&rt->lock);
}

/* Finish every deletion a crash interrupted. Return: how many, or the first error. */
static int finish_deletions(struct b4_runtime *rt, struct b4_error *err)
{
        cleanup_strv char **ids = NULL;
        int n = 0, r;

        r = b4_store_thread_list_deleting(rt->opts.store, &ids, err);
        if (r < 0)
                return r;
        STRV_FOREACH (id, ids) {
                r = b4_runtime_thread_delete(rt, *id, err);
                if (r == -ENOENT) /* went with an ancestor finished before it */
                        continue;
                if (r < 0)
                        return b4_error_wrap(err, r, "cannot finish deleting thread '%s'", *id);
                n++;
        }
        return n;
}

static int thread_ids(struct b4_runtime *rt, char ***ret, struct b4_error *err)
{
        struct b4_thread_row *rows = NULL;
        cleanup_strv char **ids = NULL;
        size_t n = 0;
        int r;

        r = b4_store_thread_list(rt->opts.store, NULL, &rows, &n, err);
        if (r < 0)
                return r;
        ids = b4_calloc(1, sizeof(char *));
        r = ids ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = strv_extend(&ids, rows[i].id);
        b4_thread_rows_free(rows, n);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        *ret = TAKE_PTR(ids);
        return (int)n;
}

int b4_runtime_reconcile(struct b4_runtime *rt,
                         struct b4_reconcile_stats *ret,
                         struct b4_error *err)
{
        struct b4_reconcile_stats st = { .swept = -1 };
        cleanup_strv char **ids = NULL;
        int r;

        r = finish_deletions(rt, err);
        if (r < 0)
                return r;
        st.deletions_finished = (size_t)r;
        r = thread_ids(rt, &ids, err);
        if (r < 0)
                return r;
        st.threads = (size_t)r;
        struct b4_error sweep_err = { 0 };
        r = b4_provider_sweep(rt->opts.provider, ids, &sweep_err);
        if (r < 0 && r != -EOPNOTSUPP) {
                if (err)
                        *err = sweep_err;
                return r;
        }
        if (r >= 0)
                st.swept = r;
        if (ret)
                *ret = st;
        return 0;
}
