/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace reads hold the thread's run slot (reference §6.2) but never its sandbox: the
 * reader is opened from the provider, so a read neither acquires nor keeps warm compute.
 * The slot borrows the read's cancel token, because a read abandoned at its deadline frees
 * the slot while its worker may still be inside the provider.
 *
 * b4_runtime_inspect() runs the read on a worker thread that owns everything it touches (a
 * job shared by reference count with the caller), so an abandoned read finishes in the
 * background with nothing freed under it; b4_runtime_free() waits for such workers.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "b4box/inspect.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "runtime-internal.h"
#include "tools/host.h"
#include "workspace/inspect-thread.h"

struct b4_read {
        struct b4_runtime *rt;
        char *thread_id;
        char *box_key;
};

static struct b4_read *read_free(struct b4_read *rd)
{
        if (!rd)
                return NULL;
        free(rd->thread_id);
        free(rd->box_key);
        free(rd);
        return NULL;
}

int b4_runtime_read_begin(struct b4_runtime *rt,
                          const char *id,
                          struct b4_cancel *cancel,
                          struct b4_read **ret,
                          struct b4_error *err)
{
        struct b4_read *rd = b4_calloc(1, sizeof(*rd));
        struct slot *slot = NULL;
        int r;

        if (!rd || !(rd->thread_id = b4_strdup(id))) {
                read_free(rd);
                return -ENOMEM;
        }
        rd->rt = rt;
        r = runtime_sandbox_key(rt, id, &rd->box_key, err);
        if (r < 0) {
                read_free(rd);
                return r;
        }
        (void)pthread_mutex_lock(&rt->lock);
        r = slot_take_locked(rt, id, false, &slot);
        if (r >= 0) {
                slot->cancel = cancel;
                slot->borrowed = true;
        }
        (void)pthread_mutex_unlock(&rt->lock);
        if (r < 0) {
                read_free(rd);
                return r == -EBUSY ? b4_error_set(err, r, "thread '%s' has a run in flight", id)
                       : r == -ESHUTDOWN ? b4_error_set(err, r, "the server is shutting down")
                                         : r;
        }
        *ret = rd;
        return 0;
}

const char *b4_read_sandbox_key(const struct b4_read *rd)
{
        return rd->box_key;
}

struct b4_read *b4_read_end(struct b4_read *rd)
{
        if (!rd)
                return NULL;
        (void)pthread_mutex_lock(&rd->rt->lock);
        slot_drop_locked(rd->rt, rd->thread_id);
        (void)pthread_mutex_unlock(&rd->rt->lock);
        return read_free(rd);
}

/* ---- a reader of the thread's workspace, outside any slot ---- */

int b4_runtime_open_reader(struct b4_runtime *rt,
                           const char *id,
                           struct b4_cancel *cancel,
                           struct b4_reader **ret,
                           struct b4_error *err)
{
        cleanup_free char *key = NULL;
        struct b4_reader_req req = {
                .cancel = cancel, .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        int r = runtime_sandbox_key(rt, id, &key, err);

        if (r < 0)
                return r;
        req.thread_id = key;
        return b4_provider_open_reader(rt->opts.provider, &req, ret, err);
}

int b4_runtime_reader_tools(struct b4_runtime *rt,
                            struct b4_reader *rd,
                            struct b4_tools **ret,
                            struct b4_error *err)
{
        struct tools_host_call c = { .thread_id = rd->thread_id };
        int r = runtime_run_permissions(rt, rd->thread_id, &c.perms, err);

        if (r < 0)
                return r;
        return tools_host_open_reader(rt->tools, &c, rd, ret, err);
}

struct b4_provider *b4_runtime_provider(struct b4_runtime *rt)
{
        return rt->opts.provider;
}

/* ---- b4_runtime_inspect(): the read on a worker, bounded by a deadline and cancel ---- */

/* What one read needs; shared by the caller and the worker (refs). */
struct read_job {
        pthread_mutex_t lock;
        unsigned refs;
        struct b4_runtime *rt;
        char *key; /* whose workspace: the thread's root ancestor */
        char *root;
        char **exclude;
        struct b4_root_symlink *links;
        size_t n_links;
        struct b4_inspect_options o; /* pointing at the copies above */
        bool consistent;
        struct b4_cancel *cancel; /* fired by thread cancel, shutdown, the deadline, the caller */
        struct b4_cancel *done;   /* fired by the worker */
        int r;
        struct b4_inspection insp;
        struct b4_inspect_failure fail;
        struct b4_error err;
};

static void job_unref(struct read_job *j)
{
        bool last;

        (void)pthread_mutex_lock(&j->lock);
        last = --j->refs == 0;
        (void)pthread_mutex_unlock(&j->lock);
        if (!last)
                return;
        for (size_t i = 0; i < j->n_links; i++) {
                free((char *)j->links[i].name);
                free((char *)j->links[i].target);
        }
        free(j->links);
        free(j->key);
        free(j->root);
        strv_free(j->exclude);
        b4_inspection_clear(&j->insp);
        b4_cancel_free(j->cancel);
        b4_cancel_free(j->done);
        (void)pthread_mutex_destroy(&j->lock);
        free(j);
}

/* Copy what @o points at into @j: the worker may outlive the caller's options. */
static int copy_options(struct read_job *j, const struct b4_inspect_options *o)
{
        j->o = *o;
        j->o.cancel = j->cancel;
        if (o->root && !(j->root = b4_strdup(o->root)))
                return -ENOMEM;
        if (o->exclude_root && !(j->exclude = strv_copy(o->exclude_root)))
                return -ENOMEM;
        j->links = b4_calloc(o->n_expected ? o->n_expected : 1, sizeof(*j->links));
        if (!j->links)
                return -ENOMEM;
        for (; j->n_links < o->n_expected; j->n_links++) {
                struct b4_root_symlink *l = &j->links[j->n_links];
                l->name = b4_strdup(o->expected[j->n_links].name);
                l->target = b4_strdup(o->expected[j->n_links].target);
                if (!l->name || !l->target) {
                        j->n_links++;
                        return -ENOMEM;
                }
        }
        j->o.root = j->root;
        j->o.exclude_root = j->exclude;
        j->o.expected = j->links;
        return 0;
}

static struct read_job *job_new(struct b4_runtime *rt,
                                const struct b4_inspect_options *o,
                                bool consistent)
{
        struct b4_inspect_options defaults;
        struct read_job *j = b4_calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        (void)pthread_mutex_init(&j->lock, NULL);
        j->refs = 1;
        j->rt = rt;
        j->consistent = consistent;
        j->cancel = b4_cancel_new();
        j->done = b4_cancel_new();
        if (!o) {
                b4_inspect_options_init(&defaults);
                o = &defaults;
        }
        if (!j->cancel || !j->done || copy_options(j, o) < 0) {
                job_unref(j);
                return NULL;
        }
        return j;
}

static void *worker_main(void *arg)
{
        struct read_job *j = arg;
        struct b4_runtime *rt = j->rt;

        j->r = b4_inspect_thread(rt->opts.provider, j->key, &j->o, j->consistent, &j->insp,
                                 &j->fail, &j->err);
        b4_cancel_fire(j->done);
        job_unref(j);
        (void)pthread_mutex_lock(&rt->lock);
        rt->readers--;
        (void)pthread_cond_broadcast(&rt->cond);
        (void)pthread_mutex_unlock(&rt->lock);
        return NULL;
}

static int start_worker(struct read_job *j)
{
        struct b4_runtime *rt = j->rt;
        pthread_attr_t attr;
        pthread_t tid;
        int r;

        j->refs++; /* the worker's; no other thread sees j yet */
        (void)pthread_mutex_lock(&rt->lock);
        rt->readers++;
        (void)pthread_mutex_unlock(&rt->lock);
        (void)pthread_attr_init(&attr);
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&tid, &attr, worker_main, j);
        (void)pthread_attr_destroy(&attr);
        if (r == 0)
                return 0;
        j->refs--;
        (void)pthread_mutex_lock(&rt->lock);
        rt->readers--;
        (void)pthread_mutex_unlock(&rt->lock);
        return -r;
}

/* Until the worker is done, the read is cancelled (@cancel or the job's token) or the
 * deadline (0 = none) passes. Return: 0, -ECANCELED, -ETIMEDOUT. */
static int wait_job(struct read_job *j, uint64_t timeout_ms, const struct b4_cancel *cancel)
{
        uint64_t deadline = timeout_ms ? now_msec() + timeout_ms : UINT64_MAX;

        for (;;) {
                struct pollfd p[3] = { { .fd = b4_cancel_fd(j->done), .events = POLLIN },
                                       { .fd = b4_cancel_fd(j->cancel), .events = POLLIN },
                                       { .fd = cancel ? b4_cancel_fd(cancel) : -1,
                                         .events = POLLIN } };
                uint64_t now = now_msec();

                if (b4_cancel_is_set(j->done))
                        return 0;
                if (b4_cancel_is_set(j->cancel) || b4_cancel_is_set(cancel))
                        return -ECANCELED;
                if (now >= deadline)
                        return -ETIMEDOUT;
                (void)poll(p, 3, (int)(deadline - now > 1000 ? 1000 : deadline - now));
        }
}

/* The digests @key's admission recorded; none in provider-storage mode. */
static int get_digests(struct b4_runtime *rt, const char *key, struct b4_workspace_read *ret)
{
        struct b4_association a = { 0 };
        int r = b4_store_association_get(rt->opts.store, key, &a, NULL);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        ret->source_digest = TAKE_PTR(a.source_digest);
        ret->intent_digest = TAKE_PTR(a.intent_digest);
        b4_association_clear(&a);
        return 0;
}

/* The worker's outcome into @ret and @err (the worker is done with the job). */
static int take_result(struct read_job *j, struct b4_workspace_read *ret, struct b4_error *err)
{
        int r;

        if (j->r < 0) {
                if (err)
                        *err = j->err;
                ret->fail = j->fail;
                return j->r;
        }
        r = get_digests(j->rt, j->key, ret);
        if (r < 0)
                return b4_error_set(err, r, "cannot read the workspace's digests");
        ret->inspection = j->insp;
        j->insp = (struct b4_inspection){ 0 };
        return 0;
}

int b4_runtime_inspect(struct b4_runtime *rt,
                       const char *id,
                       const struct b4_inspect_options *o,
                       bool consistent,
                       uint64_t timeout_ms,
                       const struct b4_cancel *cancel,
                       struct b4_workspace_read *ret,
                       struct b4_error *err)
{
        struct read_job *j = job_new(rt, o, consistent);
        struct b4_read *rd = NULL;
        int r;

        *ret = (struct b4_workspace_read){ 0 };
        if (!j)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = b4_runtime_read_begin(rt, id, j->cancel, &rd, err);
        if (r < 0) {
                job_unref(j);
                return r;
        }
        j->key = b4_strdup(b4_read_sandbox_key(rd));
        r = j->key ? start_worker(j) : -ENOMEM;
        if (r < 0) {
                b4_read_end(rd);
                job_unref(j);
                return b4_error_set(err, r, "cannot start the workspace read");
        }
        r = wait_job(j, timeout_ms, cancel);
        if (r < 0)
                b4_cancel_fire(j->cancel); /* abandon: the worker stops at its next check */
        b4_read_end(rd);
        if (r == -ETIMEDOUT)
                r = b4_error_set(err, r, "the workspace read did not finish within %llu ms",
                                 (unsigned long long)timeout_ms);
        else if (r < 0)
                r = b4_error_set(err, r, "the workspace read was cancelled");
        else
                r = take_result(j, ret, err);
        job_unref(j);
        return r;
}
