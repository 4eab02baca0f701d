/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread runtime. Invariants, all under rt->lock:
 *  - a slot exists for a thread id exactly while a run (or a deletion) holds it;
 *  - a box exists for a sandbox key (the thread's root ancestor) while its sandbox is
 *    acquired or being acquired; box->users counts runs using it, and a box with users is
 *    never released or destroyed;
 *  - provider calls are made without the lock held; waiters sleep on rt->cond.
 */

#include "b4box/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/utf8.h"
#include "runtime-internal.h"

int b4_runtime_new(const struct b4_runtime_options *opts,
                   struct b4_runtime **ret,
                   struct b4_error *err)
{
        struct b4_runtime *rt;

        int r;

        if (!opts || !opts->provider || !opts->store || !opts->policy)
                return b4_error_set(err, -EINVAL, "runtime needs a provider, store and policy");
        rt = b4_calloc(1, sizeof(*rt));
        if (!rt)
                return -ENOMEM;
        rt->opts = *opts;
        if (!rt->opts.idle_timeout_ms)
                rt->opts.idle_timeout_ms = B4_DEFAULT_IDLE_TIMEOUT_MS;
        rt->boxes = hashmap_new();
        rt->slots = hashmap_new();
        if (!rt->boxes || !rt->slots || b4_policy_copy(&rt->policy, opts->policy) < 0) {
                hashmap_free(rt->boxes);
                hashmap_free(rt->slots);
                free(rt);
                return -ENOMEM;
        }
        rt->opts.policy = &rt->policy;
        (void)pthread_mutex_init(&rt->lock, NULL);
        (void)pthread_cond_init(&rt->cond, NULL);
        r = runtime_tools_init(rt, err);
        if (r < 0) {
                b4_runtime_free(rt);
                return r;
        }
        *ret = rt;
        return 0;
}

void runtime_observe(struct b4_runtime *rt, enum b4_runtime_event ev, uint64_t start_us)
{
        if (rt->opts.observe)
                rt->opts.observe(rt->opts.observe_data, ev, now_usec() - start_us);
}

static int release_box_cb(const char *key, void *value, void *ud)
{
        struct b4_runtime *rt = ud;
        struct box *b = value;

        if (b->sb) {
                uint64_t start = now_usec();

                if (!rt->opts.local) /* a local command leaves it warm for the next one */
                        (void)b4_provider_release(rt->opts.provider, key, NULL);
                b4_sandbox_unref(b->sb);
                if (!rt->opts.local)
                        runtime_observe(rt, B4_EVENT_RELEASE_SHUTDOWN, start);
        }
        free(b);
        return 0;
}

static int free_slot_cb(const char *key, void *value, void *ud)
{
        struct slot *s = value;

        if (!s->borrowed)
                b4_cancel_free(s->cancel);
        free(s);
        return 0;
}

/* How long b4_runtime_free() waits for abandoned workspace reads. */
#define READERS_DRAIN_MS 30000u

/* Wait up to READERS_DRAIN_MS for b4_runtime_inspect() workers (their tokens are fired).
 * Return: whether none is left. */
static bool drain_readers(struct b4_runtime *rt)
{
        uint64_t deadline = now_msec() + READERS_DRAIN_MS;
        bool drained;

        (void)pthread_mutex_lock(&rt->lock);
        while (rt->readers > 0 && now_msec() < deadline)
                (void)cond_wait_until_ms(&rt->cond, &rt->lock, now_msec() + 50);
        drained = rt->readers == 0;
        (void)pthread_mutex_unlock(&rt->lock);
        return drained;
}

struct b4_runtime *b4_runtime_free(struct b4_runtime *rt)
{
        bool drained;

        if (!rt)
                return NULL;
        drained = drain_readers(rt);
        (void)hashmap_foreach(rt->boxes, release_box_cb, rt);
        (void)hashmap_foreach(rt->slots, free_slot_cb, NULL);
        hashmap_free(rt->boxes);
        hashmap_free(rt->slots);
        runtime_tools_clear(rt);
        b4_policy_clear(&rt->policy);
        if (!drained) /* a read stuck in its provider still counts itself out under the lock */
                return NULL;
        (void)pthread_mutex_destroy(&rt->lock);
        (void)pthread_cond_destroy(&rt->cond);
        free(rt);
        return NULL;
}

/* ---- ids and ancestry ---- */

/* The rule of B4_THREAD_ID_MAX_BYTES. "." and ".." are refused because an HTTP path segment
 * of either is removed by URL normalisation, so such a thread could not be addressed. */
static bool thread_id_is_valid(const char *id)
{
        size_t len = strlen(id);

        if (len == 0 || len > B4_THREAD_ID_MAX_BYTES || !utf8_is_valid(id, len))
                return false;
        if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
                return false;
        for (const unsigned char *c = (const unsigned char *)id; *c; c++)
                if (*c < 0x20 || *c == 0x7f || *c == '/')
                        return false;
        return true;
}

static int generate_id(char **ret)
{
        unsigned char rnd[12];

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -EIO;
        return b4_asprintf(ret, "thr_%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
                           rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7], rnd[8], rnd[9],
                           rnd[10], rnd[11]) < 0
                       ? -ENOMEM
                       : 0;
}

/* The root ancestor of @id in @store (@id itself when it has no parent). A thread whose
 * deletion began (or that descends from one) has none: nothing may run in, read or attach
 * to a sandbox that a deletion is taking apart. */
int runtime_root_ancestor(struct b4_store *store, const char *id, char **ret, struct b4_error *err)
{
        cleanup_free char *cur = b4_strdup(id);

        if (!cur)
                return -ENOMEM;
        for (int depth = 0; depth <= MAX_PARENT_DEPTH; depth++) {
                struct b4_thread_row row = { 0 };
                int r = b4_store_thread_get(store, cur, &row, err);
                if (r < 0)
                        return r;
                if (row.deleting) {
                        b4_thread_row_clear(&row);
                        return b4_error_set(err, -ENOENT,
                                            "thread '%s' is being deleted; delete it again to "
                                            "finish",
                                            cur);
                }
                if (!row.parent_id) {
                        b4_thread_row_clear(&row);
                        *ret = TAKE_PTR(cur);
                        return 0;
                }
                free(cur);
                cur = TAKE_PTR(row.parent_id);
                b4_thread_row_clear(&row);
        }
        return b4_error_set(err, -ELOOP, "thread '%s' is nested deeper than %d parents", id,
                            MAX_PARENT_DEPTH);
}

int runtime_sandbox_key(struct b4_runtime *rt, const char *id, char **ret, struct b4_error *err)
{
        return runtime_root_ancestor(rt->opts.store, id, ret, err);
}

static int thread_create(struct b4_runtime *rt,
                         const char *id,
                         const char *metadata_json,
                         const char *parent,
                         const char *owner,
                         const char *const staged[2],
                         struct b4_thread_row *ret,
                         struct b4_error *err)
{
        cleanup_free char *gen = NULL, *key = NULL;
        struct b4_thread_row row = { 0 };
        int r;

        if (!id) {
                r = generate_id(&gen);
                if (r < 0)
                        return b4_error_set(err, r, "cannot generate a thread id");
                id = gen;
        }
        if (!thread_id_is_valid(id))
                return b4_error_set(
                        err, -EINVAL,
                        "thread_id must be 1 to %d bytes of UTF-8 without control characters or "
                        "'/', and not '.' or '..'",
                        B4_THREAD_ID_MAX_BYTES);
        if (parent) {
                r = runtime_sandbox_key(rt, parent, &key, err);
                if (r < 0)
                        return r == -ENOENT ? b4_error_set(err, r, "parent thread '%s' not found",
                                                           parent)
                                            : r;
        }
        row = (struct b4_thread_row){ .id = (char *)id,
                                      .metadata_json = (char *)metadata_json,
                                      .owner = (char *)owner,
                                      .parent_id = (char *)parent,
                                      .created_ms = realtime_msec() };
        if (staged)
                r = b4_store_thread_insert_staged(rt->opts.store, &row, staged[0], staged[1], err);
        else
                r = b4_store_thread_insert(rt->opts.store, &row, err);
        if (r < 0)
                return r;
        return b4_store_thread_get(rt->opts.store, id, ret, err);
}

int b4_runtime_thread_create(struct b4_runtime *rt,
                             const char *id,
                             const char *metadata_json,
                             const char *parent,
                             const char *owner,
                             struct b4_thread_row *ret,
                             struct b4_error *err)
{
        return thread_create(rt, id, metadata_json, parent, owner, NULL, ret, err);
}

int b4_runtime_thread_create_staged(struct b4_runtime *rt,
                                    const char *id,
                                    const char *metadata_json,
                                    const char *owner,
                                    const char *source_digest,
                                    const char *staged_json,
                                    struct b4_thread_row *ret,
                                    struct b4_error *err)
{
        const char *const staged[2] = { source_digest, staged_json };

        return thread_create(rt, id, metadata_json, NULL, owner, staged, ret, err);
}

const char *b4_runtime_thread_state(struct b4_runtime *rt, const char *id)
{
        cleanup_free char *key = NULL;
        bool live;

        if (runtime_sandbox_key(rt, id, &key, NULL) < 0)
                return "released";
        (void)pthread_mutex_lock(&rt->lock);
        struct box *b = hashmap_get(rt->boxes, key);
        live = b && b->sb;
        (void)pthread_mutex_unlock(&rt->lock);
        if (live)
                return "live";
        return b4_provider_kept(rt->opts.provider, key) ? "kept" : "released";
}

bool b4_runtime_thread_is_live(struct b4_runtime *rt, const char *id)
{
        return strcmp(b4_runtime_thread_state(rt, id), "live") == 0;
}

bool b4_runtime_thread_busy(struct b4_runtime *rt, const char *id)
{
        bool busy;

        (void)pthread_mutex_lock(&rt->lock);
        busy = hashmap_get(rt->slots, id) != NULL;
        (void)pthread_mutex_unlock(&rt->lock);
        return busy;
}

/* ---- slots ---- */

/* Take @id's slot; with @cancellable a cancel token is attached. Called with the lock held. */
int slot_take_locked(struct b4_runtime *rt, const char *id, bool cancellable, struct slot **ret)
{
        struct slot *s;

        if (rt->shutting_down)
                return -ESHUTDOWN;
        if (hashmap_get(rt->slots, id))
                return -EBUSY;
        s = b4_calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        if (cancellable) {
                s->cancel = b4_cancel_new();
                if (!s->cancel) {
                        free(s);
                        return -ENOMEM;
                }
        }
        if (hashmap_put(rt->slots, id, s) < 0) {
                b4_cancel_free(s->cancel);
                free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

void slot_drop_locked(struct b4_runtime *rt, const char *id)
{
        struct slot *s = hashmap_remove(rt->slots, id);

        if (s) {
                if (!s->borrowed)
                        b4_cancel_free(s->cancel);
                free(s);
        }
        (void)pthread_cond_broadcast(&rt->cond);
}

int b4_runtime_thread_cancel(struct b4_runtime *rt, const char *id)
{
        int r = -ESRCH;

        (void)pthread_mutex_lock(&rt->lock);
        struct slot *s = hashmap_get(rt->slots, id);
        if (s && s->cancel) {
                b4_cancel_fire(s->cancel);
                r = 0;
        }
        (void)pthread_mutex_unlock(&rt->lock);
        return r;
}
