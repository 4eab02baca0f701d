/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The provider lifecycle, kept once for every provider (reference §3.5, §3.6):
 *
 *   provider ── lifecycle (lock, registry id -> entry, fair gate; refcounted)
 *   entry    ── one per thread id while referenced: the provider's state from its last
 *               acquire, an epoch (bumped whenever that state is set or cleared) and a
 *               generation (bumped by every recovery within an epoch)
 *   handle   ── holds a reference on its entry
 *
 * acquire, release, destroy and recovery enter the thread's gate exclusive; every
 * filesystem call and exec of a handle enters it shared and, on a "sandbox lost" error
 * (-EAGAIN, -ENOTCONN), is retried once after the handle's recover ran under the exclusive
 * lease (only if the epoch and generation it saw are still current). The registry holds a
 * reference on an entry while it has a state; an entry is freed with its last reference.
 * This header is core's own; providers see the entry through provider-impl.h.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "b4box/provider-impl.h"

#include "core/gate.h"

struct b4_lifecycle;

/* The core-owned part of a handle (b4_sandbox_init()). */
struct b4_sandbox_core {
        const struct b4_sandbox_ops *ops;
        atomic_int refs;
        struct b4_entry *entry; /* a reference once b4_provider_acquire() returned the handle */
        struct b4_exec_bounds bounds; /* from the acquire's policy (b4_sandbox_exec_bounds()) */
};

/** lifecycle_new() - an empty registry. Return: it (lifecycle_unref()), NULL on OOM. */
struct b4_lifecycle *lifecycle_new(void);
/** lifecycle_unref() - drop the provider's reference (NULL ok). Return: NULL. */
struct b4_lifecycle *lifecycle_unref(struct b4_lifecycle *lc);
/** lifecycle_clear() - drop every entry's state; with nothing in flight (provider free). */
void lifecycle_clear(struct b4_lifecycle *lc);

/**
 * lifecycle_enter() - take @thread_id's entry (created when absent) and enter its gate
 * @ret_entry: a reference, dropped by lifecycle_leave()
 * Return: 0, -ECANCELED, -ENOMEM (message set, naming @what).
 */
int lifecycle_enter(struct b4_lifecycle *lc,
                    const char *thread_id,
                    enum gate_mode mode,
                    struct b4_cancel *cancel,
                    const char *what,
                    struct b4_entry **ret_entry,
                    struct gate_lease **ret_lease,
                    struct b4_error *err);
/** lifecycle_leave() - leave the gate and drop the entry reference. */
void lifecycle_leave(struct b4_entry *e, struct gate_lease *lease);
/** lifecycle_find() - the entry of @thread_id, referenced, or NULL (never created). */
struct b4_entry *lifecycle_find(struct b4_lifecycle *lc, const char *thread_id);

struct b4_entry *entry_ref(struct b4_entry *e);

/*
 * Pause state (core/pause.c sets it, under the thread's exclusive lease): a paused entry's
 * processes are frozen; attempt_begin() calls the lifecycle's resume hook first (under the
 * exclusive lease), so any handle operation of a paused thread resumes it. Clearing the
 * entry's state (release, destroy, a failed recovery) clears the flag.
 */
typedef int lifecycle_resume_fn(void *ud, struct b4_entry *e, struct b4_error *err);
void lifecycle_set_resume(struct b4_lifecycle *lc, lifecycle_resume_fn *fn, void *ud);
/* Whether @e has a state and is paused; since when (realtime ms) in @ret_since_ms. */
bool lifecycle_paused(struct b4_entry *e, int64_t *ret_since_ms);
/* Record a pause or resume that took @latency_us. */
void lifecycle_set_paused(struct b4_entry *e, bool paused, int64_t now_ms, uint64_t latency_us);
void lifecycle_pause_stats(struct b4_lifecycle *lc, struct b4_pause_stats *ret);
/* pause.c: install the resume hook (b4_provider_init()); resume a paused entry before
 * release or destroy end it (exclusive lease held). */
void pause_init(struct b4_provider *p);
void pause_end(struct b4_provider *p, struct b4_entry *e);
/* b4_provider_foreach_state(). */
int lifecycle_foreach_state(struct b4_lifecycle *lc, b4_entry_state_fn *fn, void *userdata);

/*
 * One call with recover-and-retry-once:
 *
 *      struct attempt a = { .sb = sb, .cancel = cancel };
 *      do {
 *              r = attempt_begin(&a, err);
 *              if (r >= 0)
 *                      r = <the raw operation>;
 *      } while (attempt_again(&a, &r, err));
 *
 * Without a handle, an entry or a recover member the operation runs once (readers take no
 * lease at all).
 */
struct attempt {
        struct b4_sandbox *sb;    /* borrowed; NULL: no lease */
        struct b4_cancel *cancel; /* for the shared entry only: recovery is never cancelled */
        struct gate_lease *lease;
        uint64_t epoch, generation; /* what the first attempt saw */
        bool retrying;              /* the second round, under the exclusive lease */
};

int attempt_begin(struct attempt *a, struct b4_error *err);
/* Give up the lease early (the unleased part of a two-part exec). */
void attempt_unlease(struct attempt *a);
/* Leave the lease; true when @r was a lost-sandbox error and recovery says retry (the
 * exclusive lease is then held for the retry). On a failed recovery *r is its error. */
bool attempt_again(struct attempt *a, int *r, struct b4_error *err);
