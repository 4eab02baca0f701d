/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-thread fair shared/exclusive gate (reference §3.5); the rules are in gate.h.
 *
 * Invariants, all under g->lock: a slot exists exactly while its id has an active entry or
 * a queued waiter; exclusive_active implies active_shared == 0; waiters live on the
 * stack of the thread blocked in gate_enter() and are unlinked by whoever grants or
 * cancels them, so a granted waiter is never on a queue.
 */

#include "gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/time-util.h"

struct gate_waiter {
        enum gate_mode mode;
        bool granted;             /* set (under the lock) when the entry started */
        pthread_cond_t cond;      /* signalled on grant */
        struct gate_waiter *next; /* queue order */
        struct gate_waiter *prev;
};

struct gate_slot {
        char *id;                 /* owned */
        unsigned active_shared;   /* shared entries running */
        bool exclusive_active;    /* an exclusive entry is running */
        struct gate_waiter *head; /* FIFO queue */
        struct gate_waiter *tail;
        size_t n_waiting;
};

struct gate {
        pthread_mutex_t lock;
        struct hashmap *slots; /* id -> struct gate_slot: only ids active or queued */
};

struct gate_lease {
        struct gate *gate;
        struct gate_slot *slot; /* valid while the lease is held */
        enum gate_mode mode;
};

struct gate *gate_new(void)
{
        struct gate *g = b4_calloc(1, sizeof(*g));

        if (!g)
                return NULL;
        g->slots = hashmap_new();
        if (!g->slots || pthread_mutex_init(&g->lock, NULL) != 0) {
                hashmap_free(g->slots);
                free(g);
                return NULL;
        }
        return g;
}

struct gate *gate_free(struct gate *g)
{
        if (!g)
                return NULL;
        (void)NEVER(hashmap_size(g->slots) != 0);
        hashmap_free(g->slots);
        (void)pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
}

static struct gate_slot *slot_find(struct gate *g, const char *id)
{
        return hashmap_get(g->slots, id);
}

static struct gate_slot *slot_get(struct gate *g, const char *id)
{
        struct gate_slot *s = slot_find(g, id);

        if (s)
                return s;
        s = b4_calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->id = b4_strdup(id);
        if (!s->id || hashmap_put(g->slots, id, s) < 0) {
                free(s->id);
                free(s);
                return NULL;
        }
        return s;
}

/* Delete the slot when its id is idle. */
static void slot_gc(struct gate *g, struct gate_slot *s)
{
        if (s->active_shared || s->exclusive_active || s->head)
                return;
        (void)hashmap_remove(g->slots, s->id);
        free(s->id);
        free(s);
}

static void queue_push(struct gate_slot *s, struct gate_waiter *w)
{
        w->next = NULL;
        w->prev = s->tail;
        if (s->tail)
                s->tail->next = w;
        else
                s->head = w;
        s->tail = w;
        s->n_waiting++;
}

static void queue_unlink(struct gate_slot *s, struct gate_waiter *w)
{
        if (w->prev)
                w->prev->next = w->next;
        else
                s->head = w->next;
        if (w->next)
                w->next->prev = w->prev;
        else
                s->tail = w->prev;
        w->next = w->prev = NULL;
        s->n_waiting--;
}

static void grant(struct gate_slot *s, struct gate_waiter *w)
{
        queue_unlink(s, w);
        if (w->mode == GATE_EXCLUSIVE)
                s->exclusive_active = true;
        else
                s->active_shared++;
        w->granted = true;
        (void)pthread_cond_signal(&w->cond);
}

/* Start the head of the queue: an exclusive alone, or the run of shared entries. */
static void drain(struct gate_slot *s)
{
        if (s->exclusive_active || !s->head)
                return;
        if (s->head->mode == GATE_EXCLUSIVE) {
                if (s->active_shared == 0)
                        grant(s, s->head);
                return;
        }
        while (s->head && s->head->mode == GATE_SHARED)
                grant(s, s->head);
}

/* Whether a new entry of @mode may start at once on @s. */
static bool can_start_now(const struct gate_slot *s, enum gate_mode mode)
{
        if (s->exclusive_active || s->head)
                return false;
        return mode == GATE_SHARED || s->active_shared == 0;
}

/* Block on @w until granted or cancelled. Called and returns with g->lock held. */
static int wait_turn(struct gate *g,
                     struct gate_slot *s,
                     struct gate_waiter *w,
                     struct b4_cancel *cancel)
{
        while (!w->granted) {
                if (!cancel) {
                        (void)pthread_cond_wait(&w->cond, &g->lock);
                        continue;
                }
                if (b4_cancel_is_set(cancel)) {
                        queue_unlink(s, w);
                        drain(s); /* a cancelled exclusive at the head may free shared ones */
                        slot_gc(g, s);
                        return -ECANCELED;
                }
                (void)cond_wait_until_ms(&w->cond, &g->lock, now_msec() + GATE_CANCEL_POLL_MS);
        }
        return 0;
}

static int waiter_init(struct gate_waiter *w, enum gate_mode mode)
{
        *w = (struct gate_waiter){ .mode = mode };
        return -pthread_cond_init(&w->cond, NULL);
}

/* Queue @mode on @s and wait for it. Called and returns with g->lock held. */
static int enter_slow(struct gate *g,
                      struct gate_slot *s,
                      enum gate_mode mode,
                      struct b4_cancel *cancel)
{
        struct gate_waiter w;
        int r;

        r = waiter_init(&w, mode);
        if (r < 0) {
                slot_gc(g, s);
                return r;
        }
        queue_push(s, &w);
        drain(s);
        r = wait_turn(g, s, &w, cancel);
        (void)pthread_cond_destroy(&w.cond);
        return r;
}

int gate_enter(struct gate *g,
               const char *id,
               enum gate_mode mode,
               struct b4_cancel *cancel,
               struct gate_lease **ret)
{
        cleanup_free struct gate_lease *l = NULL;
        struct gate_slot *s;
        int r = 0;

        if (!g || !id || !ret)
                return -EINVAL;
        if (b4_cancel_is_set(cancel))
                return -ECANCELED;
        l = b4_calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        (void)pthread_mutex_lock(&g->lock);
        s = slot_get(g, id);
        if (!s)
                r = -ENOMEM;
        else if (can_start_now(s, mode)) {
                if (mode == GATE_EXCLUSIVE)
                        s->exclusive_active = true;
                else
                        s->active_shared++;
        } else
                r = enter_slow(g, s, mode, cancel);
        (void)pthread_mutex_unlock(&g->lock);
        if (r < 0)
                return r;
        *l = (struct gate_lease){ .gate = g, .slot = s, .mode = mode };
        *ret = TAKE_PTR(l);
        return 0;
}

struct gate_lease *gate_leave(struct gate_lease *l)
{
        struct gate *g;
        struct gate_slot *s;

        if (!l)
                return NULL;
        g = l->gate;
        s = l->slot;
        (void)pthread_mutex_lock(&g->lock);
        if (l->mode == GATE_EXCLUSIVE)
                s->exclusive_active = false;
        else if (!NEVER(s->active_shared == 0))
                s->active_shared--;
        drain(s);
        slot_gc(g, s);
        (void)pthread_mutex_unlock(&g->lock);
        free(l);
        return NULL;
}

size_t gate_n_ids(struct gate *g)
{
        size_t n;

        (void)pthread_mutex_lock(&g->lock);
        n = hashmap_size(g->slots);
        (void)pthread_mutex_unlock(&g->lock);
        return n;
}

size_t gate_n_waiting(struct gate *g, const char *id)
{
        struct gate_slot *s;
        size_t n;

        (void)pthread_mutex_lock(&g->lock);
        s = slot_find(g, id);
        n = s ? s->n_waiting : 0;
        (void)pthread_mutex_unlock(&g->lock);
        return n;
}
