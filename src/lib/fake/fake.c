/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake provider (reference §8): per-thread in-memory workspaces and no isolation.
 *
 *   provider ─ core (lock, workspace maps by thread id, exec hook; refcounted) ─ fake_ws
 *   handle / reader ─ hold a reference on the core and on their fake_ws
 *
 * acquire creates the thread's map on first use and returns the live handle while there is
 * one (one compute instance per thread: the lifecycle entry's state); release drops the
 * live handle but keeps the map; destroy deletes the map (handles still held then fail
 * "Sandbox unavailable: ... was destroyed"). Core runs the lifecycle (gate, registry) as for
 * every provider. Every map access holds the core lock. Handles and readers may outlive the
 * provider object: the core is freed with the last of them.
 *
 * Each view (handle or reader) carries its own ops table (fake-view.c), fixed when it is
 * made: the members the test switches (symlinks, batched) gave it then. The test hooks at the
 * end (fake.h) set what the views count, inject and break.
 */

#include "fake.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/provider-impl.h"

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strv.h"
#include "fake-internal.h"
#include "providers.h"

struct fake_provider {
        struct b4_provider base;
        struct fake_core *core;
};

static const struct b4_provider_ops fake_provider_ops;

/* ---- core and workspace lifetime ---- */

static void ws_unref_locked(struct fake_ws *ws)
{
        if (!ws || --ws->refs > 0)
                return;
        fakefs_clear(ws);
        fake_procs_clear(ws);
        free(ws->thread_id);
        free(ws);
}

static int ws_drop(const char *key, void *value, void *ud)
{
        ws_unref_locked(value);
        return 0;
}

static void core_unref(struct fake_core *c)
{
        bool last;

        (void)pthread_mutex_lock(&c->lock);
        last = --c->refs == 0;
        (void)pthread_mutex_unlock(&c->lock);
        if (!last)
                return;
        (void)hashmap_foreach(c->threads, ws_drop, NULL);
        hashmap_free(c->threads);
        (void)pthread_mutex_destroy(&c->lock);
        free(c);
}

static struct fake_ws *ws_find(struct fake_core *c, const char *thread_id)
{
        return hashmap_get(c->threads, thread_id);
}

static struct fake_ws *ws_get(struct fake_core *c, const char *thread_id)
{
        struct fake_ws *ws = ws_find(c, thread_id);

        if (ws)
                return ws;
        ws = b4_calloc(1, sizeof(*ws));
        if (!ws)
                return NULL;
        ws->thread_id = b4_strdup(thread_id);
        if (!ws->thread_id || hashmap_put(c->threads, thread_id, ws) < 0) {
                free(ws->thread_id);
                free(ws);
                return NULL;
        }
        ws->refs = 1; /* the map's */
        ws->spool_max = B4_PROC_SPOOL_MAX;
        return ws;
}

/* ---- handles ---- */

static int sandbox_exec(struct b4_sandbox *sb,
                        const struct b4_exec_req *req,
                        struct b4_exec_result *ret,
                        struct b4_error *err)
{
        struct fake_core *c;
        struct fake_ws *ws;
        fake_exec_fn *fn;
        void *userdata;
        int r;

        r = fake_view_lock(&sb->fs, FAKE_CALL_EXEC, &c, &ws, err);
        if (r < 0)
                return r;
        fn = c->exec;
        userdata = c->exec_userdata;
        (void)fake_view_unlock(c, 0);
        return fn(sb, req, ret, userdata, err);
}

static void sandbox_free(struct b4_sandbox *sb)
{
        struct fake_sandbox *s = container_of(sb, struct fake_sandbox, base);
        struct fake_core *c = s->core;

        (void)pthread_mutex_lock(&c->lock);
        ws_unref_locked(s->ws);
        (void)pthread_mutex_unlock(&c->lock);
        free(s);
        core_unref(c);
}

static const struct b4_sandbox_ops sandbox_ops = {
        .exec = sandbox_exec,
        .free = sandbox_free,
        .procs = &fake_proc_ops,
};

/* Start the thread's compute: a new live handle. Under the lock. */
static int instance_start(struct fake_core *c, struct fake_ws *ws, struct fake_sandbox **ret)
{
        struct fake_sandbox *s = b4_calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        fake_view_ops(c, true, &s->ops);
        if (b4_sandbox_init(&s->base, &sandbox_ops, &s->ops, ws->thread_id) < 0) {
                free(s);
                return -ENOMEM;
        }
        s->core = c;
        s->ws = ws;
        c->refs++;
        ws->refs++;
        ws->instances++;
        *ret = s;
        return 0;
}

/* The entry's state went (release, destroy, provider free): stop the compute. */
static void instance_stop(void *state)
{
        struct fake_sandbox *s = state;

        (void)pthread_mutex_lock(&s->core->lock);
        s->ws->instances = 0;
        fake_procs_kill_all(s->ws); /* release and destroy kill background processes */
        (void)pthread_mutex_unlock(&s->core->lock);
        b4_sandbox_unref(&s->base);
}

/* ---- readers ---- */

static void reader_free(struct b4_reader *r)
{
        struct fake_reader *rd = container_of(r, struct fake_reader, base);
        struct fake_core *c = rd->core;

        (void)pthread_mutex_lock(&c->lock);
        ws_unref_locked(rd->ws);
        (void)pthread_mutex_unlock(&c->lock);
        free(rd);
        core_unref(c);
}

static const struct b4_reader_ops reader_ops = {
        .free = reader_free, /* nothing to close: core refuses reads after b4_reader_close() */
};

static int reader_new_locked(struct fake_core *c, struct fake_ws *ws, struct b4_reader **ret)
{
        struct fake_reader *rd = b4_calloc(1, sizeof(*rd));

        if (!rd)
                return -ENOMEM;
        fake_view_ops(c, false, &rd->ops);
        if (b4_reader_init(&rd->base, &reader_ops, &rd->ops, ws->thread_id) < 0) {
                free(rd);
                return -ENOMEM;
        }
        rd->core = c;
        rd->ws = ws;
        c->refs++;
        ws->refs++;
        *ret = &rd->base;
        return 0;
}

/* ---- provider ---- */

static struct fake_core *core_of(struct b4_provider *p)
{
        return container_of(p, struct fake_provider, base)->core;
}

static int fake_acquire(struct b4_provider *p,
                        struct b4_entry *e,
                        const struct b4_acquire_req *req,
                        struct b4_sandbox **ret,
                        struct b4_error *err)
{
        struct fake_sandbox *live = b4_entry_state(e);
        struct fake_core *c = core_of(p);
        struct fake_ws *ws;
        int r = 0;

        if (!live) {
                (void)pthread_mutex_lock(&c->lock);
                ws = ws_get(c, req->thread_id);
                r = ws ? instance_start(c, ws, &live) : -ENOMEM;
                (void)pthread_mutex_unlock(&c->lock);
                if (r < 0)
                        return b4_error_set(err, r, "acquire of thread \"%s\" failed",
                                            req->thread_id);
                b4_entry_set_state(e, live, instance_stop);
        }
        *ret = b4_sandbox_ref(&live->base);
        return 0;
}

/* The live handle is the entry's state: core stops it. */
static int fake_release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return 0;
}

static int fake_destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct fake_core *c = core_of(p);
        struct fake_ws *ws;

        (void)pthread_mutex_lock(&c->lock);
        ws = hashmap_remove(c->threads, b4_entry_thread_id(e));
        if (ws) {
                ws->destroyed = true;
                ws_unref_locked(ws);
        }
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

struct sweep_scan {
        char *const *live;
        char **dead;
};

static int sweep_collect(const char *key, void *value, void *ud)
{
        struct sweep_scan *scan = ud;

        return strv_contains(scan->live, key) ? 0 : strv_extend(&scan->dead, key);
}

/* Destroy every workspace whose thread is not in @live (what a crash would leave here). */
static int fake_sweep(struct b4_provider *p, char *const *live, struct b4_error *err)
{
        struct fake_core *c = core_of(p);
        struct sweep_scan scan = { .live = live };
        int r;

        (void)pthread_mutex_lock(&c->lock);
        r = hashmap_foreach(c->threads, sweep_collect, &scan);
        (void)pthread_mutex_unlock(&c->lock);
        cleanup_strv char **dead = scan.dead;
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        STRV_FOREACH (id, dead) {
                r = b4_provider_destroy(p, *id, err);
                if (r < 0)
                        return r;
        }
        return (int)strv_length(dead);
}

static int fake_preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        ret->ok = true;
        ret->detail = b4_strdup("in-memory fake provider (no isolation, for tests)");
        return ret->detail ? 0 : -ENOMEM;
}

static int fake_open_reader(struct b4_provider *p,
                            const struct b4_reader_req *req,
                            struct b4_reader **ret,
                            struct b4_error *err)
{
        struct fake_core *c = core_of(p);
        struct fake_ws *ws;
        int r;

        if (c->read_delay_ms > 0) {
                struct pollfd pfd = { .fd = b4_cancel_fd(req->cancel), .events = POLLIN };
                (void)poll(&pfd, pfd.fd >= 0 ? 1 : 0, (int)c->read_delay_ms);
                if (b4_cancel_is_set(req->cancel))
                        return b4_error_set(err, -ECANCELED, "reader open cancelled");
        }
        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, req->thread_id);
        r = ws ? reader_new_locked(c, ws, ret) : -ENOENT;
        (void)pthread_mutex_unlock(&c->lock);
        if (r == -ENOENT)
                return b4_error_set_code(
                        err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                        "Sandbox unavailable: no workspace storage for thread \"%s\".",
                        req->thread_id);
        return r;
}

/* A no-op that records: the fake has no processes to stop. */
static int fake_freeze(struct b4_provider *p,
                       const char *thread_id,
                       bool frozen,
                       struct b4_error *err)
{
        struct fake_core *c = core_of(p);
        struct fake_ws *ws;

        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, thread_id);
        if (ws) {
                ws->frozen = frozen;
                ws->freezes += frozen;
        }
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

static void fake_free(struct b4_provider *p)
{
        struct fake_provider *fp = container_of(p, struct fake_provider, base);
        struct fake_core *c = fp->core;

        free(p->scope);
        free(fp);
        core_unref(c);
}

static const struct b4_provider_ops fake_provider_ops = {
        .name = "fake",
        .acquire = fake_acquire,
        .release = fake_release,
        .destroy = fake_destroy,
        .preflight = fake_preflight,
        .open_reader = fake_open_reader,
        .freeze = fake_freeze,
        .sweep = fake_sweep,
        .free = fake_free,
};

static struct fake_core *core_new(void)
{
        struct fake_core *c = b4_calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->threads = hashmap_new();
        if (!c->threads || pthread_mutex_init(&c->lock, NULL) != 0) {
                hashmap_free(c->threads);
                free(c);
                return NULL;
        }
        c->exec = fake_exec_builtin;
        c->refs = 1;
        const char *delay = secure_getenv("B4BOX_FAKE_READ_DELAY_MS");
        if (delay && safe_atou64(delay, &c->read_delay_ms) < 0)
                c->read_delay_ms = 0;
        return c;
}

int fake_provider_new(const struct b4_provider_config *cfg,
                      struct b4_provider **ret,
                      struct b4_error *err)
{
        struct fake_provider *fp;

        if (!ret)
                return b4_error_set(err, -EINVAL, "fake provider needs a result pointer");
        fp = b4_calloc(1, sizeof(*fp));
        if (!fp)
                return b4_error_set(err, -ENOMEM, "out of memory");
        fp->core = core_new();
        if (!fp->core || b4_provider_init(&fp->base, &fake_provider_ops,
                                          cfg && cfg->scope ? cfg->scope : "fake") < 0) {
                if (fp->core)
                        core_unref(fp->core);
                free(fp);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = &fp->base;
        return 0;
}

/* ---- test hooks ---- */

static struct fake_core *fake_core_of(struct b4_provider *p)
{
        return p && p->ops == &fake_provider_ops ? core_of(p) : NULL;
}

int fake_provider_set_exec(struct b4_provider *p, fake_exec_fn *fn, void *userdata)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        c->exec = fn ? fn : fake_exec_builtin;
        c->exec_userdata = fn ? userdata : NULL;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_instances(struct b4_provider *p, const char *thread_id)
{
        struct fake_core *c = fake_core_of(p);
        struct fake_ws *ws;
        int n;

        if (!c || !thread_id)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, thread_id);
        n = ws ? (int)ws->instances : 0;
        (void)pthread_mutex_unlock(&c->lock);
        return n;
}

int fake_provider_n_workspaces(struct b4_provider *p)
{
        struct fake_core *c = fake_core_of(p);
        int n = 0;

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        n = (int)hashmap_size(c->threads);
        (void)pthread_mutex_unlock(&c->lock);
        return n;
}

int fake_provider_set_spool_max(struct b4_provider *p, const char *thread_id, size_t max)
{
        struct fake_core *c = fake_core_of(p);
        struct fake_ws *ws;

        if (!c || !thread_id)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, thread_id);
        if (ws)
                ws->spool_max = max;
        (void)pthread_mutex_unlock(&c->lock);
        return ws ? 0 : -ENOENT;
}

int fake_provider_freezes(struct b4_provider *p, const char *thread_id, bool *ret_frozen)
{
        struct fake_core *c = fake_core_of(p);
        struct fake_ws *ws;
        int n;

        if (!c || !thread_id)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, thread_id);
        n = ws ? (int)ws->freezes : 0;
        if (ret_frozen)
                *ret_frozen = ws && ws->frozen;
        (void)pthread_mutex_unlock(&c->lock);
        return n;
}

int fake_provider_set_symlinks(struct b4_provider *p, bool on)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        c->symlinks = on;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_set_batched(struct b4_provider *p, bool on)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        c->batched = on;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_set_walk_faults(struct b4_provider *p, unsigned faults)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        c->walk_faults = faults;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_set_read_hook(struct b4_provider *p, fake_read_hook *fn, void *userdata)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        c->read_hook = fn;
        c->read_hook_data = fn ? userdata : NULL;
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_calls(struct b4_provider *p, enum fake_call call)
{
        struct fake_core *c = fake_core_of(p);
        int n;

        if (!c || (unsigned)call >= FAKE_CALL__COUNT)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        n = (int)c->calls[call];
        (void)pthread_mutex_unlock(&c->lock);
        return n;
}

int fake_provider_reset_calls(struct b4_provider *p)
{
        struct fake_core *c = fake_core_of(p);

        if (!c)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        memset(c->calls, 0, sizeof(c->calls));
        (void)pthread_mutex_unlock(&c->lock);
        return 0;
}

int fake_provider_mkother(struct b4_provider *p, const char *thread_id, const char *path)
{
        struct fake_core *c = fake_core_of(p);
        struct fake_ws *ws;
        int r;

        if (!c || !thread_id || !path)
                return -EINVAL;
        (void)pthread_mutex_lock(&c->lock);
        ws = ws_find(c, thread_id);
        r = ws ? fakefs_mkother(ws, path, NULL) : -ENOENT;
        (void)pthread_mutex_unlock(&c->lock);
        return r;
}
