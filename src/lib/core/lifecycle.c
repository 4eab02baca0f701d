/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread lifecycle every provider shares (lifecycle.h): a registry of refcounted
 * entries by thread id, the fair gate, and recover-and-retry-once around handle operations.
 *
 * Locking: lc->lock guards the map and every entry's refs, state, epoch and generation.
 * The state changes only under the thread's exclusive lease (or with nothing in flight, at
 * provider free), so a holder of a shared lease may read it without the lock.
 */

#include "core/lifecycle.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"

struct b4_lifecycle {
        pthread_mutex_t lock;
        struct hashmap *entries; /* thread id -> struct b4_entry, while referenced */
        struct gate *gate;
        unsigned refs;               /* the provider's and every entry's */
        lifecycle_resume_fn *resume; /* transparent resume of a paused entry (core/pause.c) */
        void *resume_ud;
        struct b4_pause_stats pause_stats;
};

struct b4_entry {
        struct b4_lifecycle *lc; /* a reference */
        char *thread_id;         /* owned */
        unsigned refs;           /* the registry's while it has a state, callers', handles' */
        void *state;             /* the provider's; owned */
        b4_entry_state_free_fn *state_free;
        uint64_t epoch;      /* bumped whenever the state is set or cleared */
        uint64_t generation; /* recoveries since the state was set */
        bool paused;         /* its processes are frozen until resumed (core/pause.c) */
        int64_t paused_ms;   /* since when (realtime) */
};

/* ---- registry ---- */

struct b4_lifecycle *lifecycle_new(void)
{
        struct b4_lifecycle *lc = b4_calloc(1, sizeof(*lc));

        if (!lc)
                return NULL;
        lc->entries = hashmap_new();
        lc->gate = gate_new();
        if (!lc->entries || !lc->gate || pthread_mutex_init(&lc->lock, NULL) != 0) {
                hashmap_free(lc->entries);
                gate_free(lc->gate);
                free(lc);
                return NULL;
        }
        lc->refs = 1;
        return lc;
}

struct b4_lifecycle *lifecycle_unref(struct b4_lifecycle *lc)
{
        bool last;

        if (!lc)
                return NULL;
        (void)pthread_mutex_lock(&lc->lock);
        last = --lc->refs == 0;
        (void)pthread_mutex_unlock(&lc->lock);
        if (!last)
                return NULL;
        (void)NEVER(hashmap_size(lc->entries) != 0);
        hashmap_free(lc->entries);
        gate_free(lc->gate);
        (void)pthread_mutex_destroy(&lc->lock);
        free(lc);
        return NULL;
}

/* Under lc->lock. */
static struct b4_entry *entry_get_locked(struct b4_lifecycle *lc, const char *thread_id)
{
        struct b4_entry *e = hashmap_get(lc->entries, thread_id);

        if (e) {
                e->refs++;
                return e;
        }
        e = b4_calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        e->thread_id = b4_strdup(thread_id);
        if (!e->thread_id || hashmap_put(lc->entries, thread_id, e) < 0) {
                free(e->thread_id);
                free(e);
                return NULL;
        }
        e->lc = lc;
        e->refs = 1;
        lc->refs++;
        return e;
}

struct b4_entry *lifecycle_find(struct b4_lifecycle *lc, const char *thread_id)
{
        struct b4_entry *e;

        (void)pthread_mutex_lock(&lc->lock);
        e = hashmap_get(lc->entries, thread_id);
        if (e)
                e->refs++;
        (void)pthread_mutex_unlock(&lc->lock);
        return e;
}

struct b4_entry *entry_ref(struct b4_entry *e)
{
        (void)pthread_mutex_lock(&e->lc->lock);
        e->refs++;
        (void)pthread_mutex_unlock(&e->lc->lock);
        return e;
}

struct b4_entry *b4_entry_unref(struct b4_entry *e)
{
        struct b4_lifecycle *lc;
        bool last;

        if (!e)
                return NULL;
        lc = e->lc;
        (void)pthread_mutex_lock(&lc->lock);
        last = --e->refs == 0;
        if (last)
                (void)hashmap_remove(lc->entries, e->thread_id);
        (void)pthread_mutex_unlock(&lc->lock);
        if (!last)
                return NULL;
        (void)NEVER(e->state != NULL); /* the registry holds a reference while it has one */
        free(e->thread_id);
        free(e);
        lifecycle_unref(lc);
        return NULL;
}

const char *b4_entry_thread_id(const struct b4_entry *e)
{
        return e->thread_id;
}

void *b4_entry_state(const struct b4_entry *e)
{
        return e->state;
}

uint64_t b4_entry_generation(const struct b4_entry *e)
{
        return e->generation;
}

void b4_entry_set_state(struct b4_entry *e, void *state, b4_entry_state_free_fn *free_fn)
{
        struct b4_lifecycle *lc = e->lc;
        b4_entry_state_free_fn *old_free;
        void *old;

        (void)pthread_mutex_lock(&lc->lock);
        old = e->state;
        old_free = e->state_free;
        if (!old && state)
                e->refs++; /* the registry's */
        else if (old && !state && !NEVER(e->refs < 2))
                e->refs--; /* the caller still holds one */
        e->state = state;
        e->state_free = state ? free_fn : NULL;
        e->epoch++;
        e->generation = 0;
        e->paused = false; /* a new or no sandbox is not paused */
        (void)pthread_mutex_unlock(&lc->lock);
        if (old && old_free)
                old_free(old); /* may drop handles, so outside the lock */
}

struct foreach {
        b4_entry_state_fn *fn;
        void *userdata;
};

static int visit(const char *key, void *value, void *ud)
{
        struct b4_entry *e = value;
        struct foreach *f = ud;

        return e->state ? f->fn(e->thread_id, e->state, f->userdata) : 0;
}

int lifecycle_foreach_state(struct b4_lifecycle *lc, b4_entry_state_fn *fn, void *userdata)
{
        struct foreach f = { fn, userdata };
        int r;

        (void)pthread_mutex_lock(&lc->lock);
        r = hashmap_foreach(lc->entries, visit, &f);
        (void)pthread_mutex_unlock(&lc->lock);
        return r;
}

static int first_with_state(const char *key, void *value, void *ud)
{
        struct b4_entry *e = value;

        if (!e->state)
                return 0;
        *(struct b4_entry **)ud = e;
        return 1;
}

/* One entry at a time, allocating nothing: this also runs when memory is short. */
void lifecycle_clear(struct b4_lifecycle *lc)
{
        for (;;) {
                struct b4_entry *e = NULL;

                (void)pthread_mutex_lock(&lc->lock);
                (void)hashmap_foreach(lc->entries, first_with_state, &e);
                if (e)
                        e->refs++;
                (void)pthread_mutex_unlock(&lc->lock);
                if (!e)
                        return;
                b4_entry_set_state(e, NULL, NULL);
                b4_entry_unref(e);
        }
}

int lifecycle_enter(struct b4_lifecycle *lc,
                    const char *thread_id,
                    enum gate_mode mode,
                    struct b4_cancel *cancel,
                    const char *what,
                    struct b4_entry **ret_entry,
                    struct gate_lease **ret_lease,
                    struct b4_error *err)
{
        struct b4_entry *e;
        int r;

        (void)pthread_mutex_lock(&lc->lock);
        e = entry_get_locked(lc, thread_id);
        (void)pthread_mutex_unlock(&lc->lock);
        if (!e)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = gate_enter(lc->gate, thread_id, mode, cancel, ret_lease);
        if (r < 0) {
                b4_entry_unref(e);
                return b4_error_set(err, r, "%s of thread \"%s\" %s", what, thread_id,
                                    r == -ECANCELED ? "cancelled" : "failed");
        }
        *ret_entry = e;
        return 0;
}

void lifecycle_leave(struct b4_entry *e, struct gate_lease *lease)
{
        gate_leave(lease);
        b4_entry_unref(e);
}

/* ---- pause state (core/pause.c decides; attempt_begin() resumes) ---- */

void lifecycle_set_resume(struct b4_lifecycle *lc, lifecycle_resume_fn *fn, void *ud)
{
        (void)pthread_mutex_lock(&lc->lock);
        lc->resume = fn;
        lc->resume_ud = ud;
        (void)pthread_mutex_unlock(&lc->lock);
}

bool lifecycle_paused(struct b4_entry *e, int64_t *ret_since_ms)
{
        bool paused;

        (void)pthread_mutex_lock(&e->lc->lock);
        paused = e->paused && e->state;
        if (ret_since_ms)
                *ret_since_ms = paused ? e->paused_ms : 0;
        (void)pthread_mutex_unlock(&e->lc->lock);
        return paused;
}

/* The latency buckets' upper bounds, in microseconds (B4_PAUSE_BUCKETS of them). */
static const uint64_t pause_bucket_us[B4_PAUSE_BUCKETS] = { 500,   1000,  2000,   5000,
                                                            10000, 25000, 100000, 1000000 };

uint64_t b4_pause_bucket_us(size_t i)
{
        return i < B4_PAUSE_BUCKETS ? pause_bucket_us[i] : 0;
}

static void count_latency(struct b4_pause_latency *l, uint64_t us)
{
        l->count++;
        l->sum_us += us;
        for (size_t i = 0; i < B4_PAUSE_BUCKETS; i++)
                if (us <= pause_bucket_us[i])
                        l->buckets[i]++;
}

void lifecycle_set_paused(struct b4_entry *e, bool paused, int64_t now_ms, uint64_t latency_us)
{
        struct b4_lifecycle *lc = e->lc;

        (void)pthread_mutex_lock(&lc->lock);
        e->paused = paused;
        e->paused_ms = paused ? now_ms : 0;
        count_latency(paused ? &lc->pause_stats.pause : &lc->pause_stats.resume, latency_us);
        (void)pthread_mutex_unlock(&lc->lock);
}

void lifecycle_pause_stats(struct b4_lifecycle *lc, struct b4_pause_stats *ret)
{
        (void)pthread_mutex_lock(&lc->lock);
        *ret = lc->pause_stats;
        (void)pthread_mutex_unlock(&lc->lock);
}

/* Resume @e under its exclusive lease when it is paused (the provider's hook). */
static int resume_paused(struct b4_entry *e, struct b4_cancel *cancel, struct b4_error *err)
{
        struct b4_lifecycle *lc = e->lc;
        struct gate_lease *lease = NULL;
        lifecycle_resume_fn *fn;
        void *ud;
        int r = 0;

        if (!lifecycle_paused(e, NULL))
                return 0;
        r = gate_enter(lc->gate, e->thread_id, GATE_EXCLUSIVE, cancel, &lease);
        if (r < 0)
                return b4_error_set(err, r, "resuming thread \"%s\" %s", e->thread_id,
                                    r == -ECANCELED ? "cancelled" : "failed");
        (void)pthread_mutex_lock(&lc->lock);
        fn = lc->resume;
        ud = lc->resume_ud;
        (void)pthread_mutex_unlock(&lc->lock);
        if (fn && lifecycle_paused(e, NULL))
                r = fn(ud, e, err);
        gate_leave(lease);
        return r;
}

/* ---- recover and retry once ---- */

static struct b4_entry *attempt_entry(const struct attempt *a)
{
        return a->sb && a->sb->core ? a->sb->core->entry : NULL;
}

int attempt_begin(struct attempt *a, struct b4_error *err)
{
        struct b4_entry *e = attempt_entry(a);
        int r;

        if (!e || a->retrying)
                return 0; /* the retry runs under the exclusive lease attempt_again took */
        for (;;) {        /* a paused thread's next operation resumes it, here and only here */
                r = resume_paused(e, a->cancel, err);
                if (r < 0)
                        return r;
                r = gate_enter(e->lc->gate, e->thread_id, GATE_SHARED, a->cancel, &a->lease);
                if (r < 0)
                        return b4_error_set(err, r, "operation on thread \"%s\" could not start",
                                            e->thread_id);
                if (!lifecycle_paused(e, NULL))
                        break;
                a->lease = gate_leave(a->lease); /* paused meanwhile: resume again */
        }
        (void)pthread_mutex_lock(&e->lc->lock);
        a->epoch = e->epoch;
        a->generation = e->generation;
        (void)pthread_mutex_unlock(&e->lc->lock);
        return 0;
}

void attempt_unlease(struct attempt *a)
{
        a->lease = gate_leave(a->lease);
}

static bool is_lost(int r)
{
        return r == -EAGAIN || r == -ENOTCONN;
}

/* Is the first attempt's view still current? 1 = recover, 0 = someone did: just retry,
 * -1 = released, destroyed or re-acquired since: keep the failure. Exclusive lease held. */
static int token_check(const struct attempt *a, struct b4_entry *e)
{
        int r;

        (void)pthread_mutex_lock(&e->lc->lock);
        if (!e->state || e->epoch != a->epoch || a->generation > e->generation)
                r = -1;
        else
                r = a->generation == e->generation ? 1 : 0;
        (void)pthread_mutex_unlock(&e->lc->lock);
        return r;
}

static int recover(struct attempt *a, struct b4_entry *e, struct b4_error *err)
{
        int r = a->sb->core->ops->recover(a->sb, err);

        if (r < 0) {
                b4_entry_set_state(e, NULL, NULL);
                return r;
        }
        (void)pthread_mutex_lock(&e->lc->lock);
        e->generation++;
        (void)pthread_mutex_unlock(&e->lc->lock);
        return 0;
}

bool attempt_again(struct attempt *a, int *r, struct b4_error *err)
{
        struct b4_entry *e = attempt_entry(a);
        struct b4_error rec = { 0 };
        int check, rr;

        a->lease = gate_leave(a->lease);
        if (!e || a->retrying || !is_lost(*r) || !a->sb->core->ops->recover)
                return false;
        a->retrying = true;
        if (gate_enter(e->lc->gate, e->thread_id, GATE_EXCLUSIVE, NULL, &a->lease) < 0)
                return false;
        check = token_check(a, e);
        rr = check > 0 ? recover(a, e, &rec) : 0;
        if (check < 0 || rr < 0) {
                a->lease = gate_leave(a->lease);
                if (rr < 0) {
                        *r = rr;
                        if (err)
                                *err = rec;
                }
                return false;
        }
        if (err)
                *err = (struct b4_error){ 0 }; /* the retry's outcome is the only one */
        return true;
}
