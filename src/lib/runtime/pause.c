/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pausing threads: by hand (b4_runtime_thread_pause()) and when idle (idle_pause_ms, from
 * b4_runtime_reap_idle()). The freezer and the transparent resume are core's
 * (b4_provider_pause()); the runtime decides which sandbox (the thread's root ancestor's) and
 * refuses to pause one a run is using.
 */

#include <errno.h>

#include "base/macro.h"
#include "base/strv.h"
#include "runtime-internal.h"

/*
 * Mark @key's live box pausing (runs starting meanwhile wait for it, so none is frozen
 * half-way), unless a run uses it (-EBUSY). -ESRCH when nothing is live. Lock held.
 */
static int box_mark_locked(struct b4_runtime *rt, const char *key)
{
        struct box *b = hashmap_get(rt->boxes, key);

        if (!b || !b->sb || b->acquiring)
                return -ESRCH;
        if (b->users > 0 || b->pausing)
                return -EBUSY;
        b->pausing = true;
        return 0;
}

static void box_unmark_locked(struct b4_runtime *rt, const char *key)
{
        struct box *b = hashmap_get(rt->boxes, key);

        if (b)
                b->pausing = false;
        (void)pthread_cond_broadcast(&rt->cond);
}

/* Pause or resume @key's sandbox unless a run uses it. */
static int pause_box(struct b4_runtime *rt, const char *key, bool paused, struct b4_error *err)
{
        int r;

        (void)pthread_mutex_lock(&rt->lock);
        r = box_mark_locked(rt, key);
        (void)pthread_mutex_unlock(&rt->lock);
        if (r < 0)
                return r;
        r = b4_provider_pause(rt->opts.provider, key, paused, err);
        (void)pthread_mutex_lock(&rt->lock);
        box_unmark_locked(rt, key);
        (void)pthread_mutex_unlock(&rt->lock);
        return r;
}

int b4_runtime_thread_pause(struct b4_runtime *rt,
                            const char *id,
                            bool paused,
                            struct b4_error *err)
{
        cleanup_free char *key = NULL;
        int r;

        r = runtime_sandbox_key(rt, id, &key, err);
        if (r < 0)
                return r;
        if (!paused) /* resuming under a run is harmless (its calls resume it anyway) */
                return b4_provider_pause(rt->opts.provider, key, false, err);
        r = pause_box(rt, key, true, err);
        if (r == -ESRCH || r == -ENOENT)
                return b4_error_set(err, -ESRCH, "thread '%s' has no live sandbox to pause", id);
        if (r == -EBUSY)
                return b4_error_set(err, r, "thread '%s' has a run in flight", id);
        return r;
}

bool b4_runtime_thread_paused(struct b4_runtime *rt, const char *id, int64_t *ret_since_ms)
{
        cleanup_free char *key = NULL;

        if (ret_since_ms)
                *ret_since_ms = 0;
        if (runtime_sandbox_key(rt, id, &key, NULL) < 0)
                return false;
        return b4_provider_paused(rt->opts.provider, key, ret_since_ms);
}

struct pause_scan {
        uint64_t now, after;
        char **keys;
        int r;
};

static int pause_scan_cb(const char *key, void *value, void *ud)
{
        struct pause_scan *scan = ud;
        struct box *b = value;

        if (b->sb && !b->users && !b->acquiring && scan->now >= b->last_used_ms + scan->after)
                scan->r = strv_extend(&scan->keys, key);
        return scan->r;
}

int runtime_pause_idle(struct b4_runtime *rt, uint64_t now_ms)
{
        struct pause_scan scan = { .now = now_ms, .after = rt->opts.idle_pause_ms };
        int paused = 0;

        if (!scan.after)
                return 0;
        (void)pthread_mutex_lock(&rt->lock);
        (void)hashmap_foreach(rt->boxes, pause_scan_cb, &scan);
        (void)pthread_mutex_unlock(&rt->lock);
        STRV_FOREACH (key, scan.keys) {
                if (b4_provider_paused(rt->opts.provider, *key, NULL))
                        continue;
                /* a provider that cannot pause leaves it running until the release */
                if (pause_box(rt, *key, true, NULL) >= 0)
                        paused++;
        }
        strv_free(scan.keys);
        return paused;
}
