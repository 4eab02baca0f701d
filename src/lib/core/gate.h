/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The per-thread lifecycle gate (reference §3.5): for each thread id, operations enter either
 * shared (commands from a handle) or exclusive (acquire, release, destroy, recovery).
 *
 * Rules, per id:
 *   - a shared entry starts at once when no exclusive is active and nobody is queued;
 *   - an exclusive entry starts at once only when the id is idle; otherwise it queues;
 *   - waiters queue in FIFO order; after every leave (and every cancelled waiter) the head
 *     is started: an exclusive alone once nothing is active, or the whole run of consecutive
 *     shared entries at the head (alongside shared ones already running, never past an
 *     exclusive). So a queued exclusive blocks every shared entry that arrives after it and
 *     is never starved;
 *   - the state of an id with nothing active and nobody queued is deleted.
 *
 * Thread-safe: one mutex per gate and one condition variable per waiter. A waiter with a
 * cancel token re-checks it every GATE_CANCEL_POLL_MS and gives up with -ECANCELED.
 */

#include <stddef.h>

#include "b4box/cancel.h"

#define GATE_CANCEL_POLL_MS 10

struct gate;
struct gate_lease;

enum gate_mode {
        GATE_SHARED = 0,
        GATE_EXCLUSIVE = 1,
};

/** gate_new() - an empty gate. Return: the gate (gate_free()), or NULL on out-of-memory. */
struct gate *gate_new(void);

/**
 * gate_free() - free @g (NULL ok)
 *
 * Every lease must have been left and no thread may be waiting.
 * Return: NULL.
 */
struct gate *gate_free(struct gate *g);

/**
 * gate_enter() - wait for the turn of @mode on @id and take it
 * @g:      the gate; borrowed
 * @id:     the thread id; copied
 * @mode:   GATE_SHARED or GATE_EXCLUSIVE
 * @cancel: optional; firing it makes a waiter give up
 * @ret:    the lease, owned by the caller until gate_leave()
 *
 * Blocks until the entry is started. Return: 0, -ECANCELED (cancelled before or while
 * waiting; nothing is held), -EINVAL (NULL argument), -ENOMEM.
 */
int gate_enter(struct gate *g,
               const char *id,
               enum gate_mode mode,
               struct b4_cancel *cancel,
               struct gate_lease **ret);

/** gate_leave() - end the entry of @l (NULL ok) and start whoever is next. Return: NULL. */
struct gate_lease *gate_leave(struct gate_lease *l);

/** gate_n_ids() - how many ids currently have state (something active or queued). */
size_t gate_n_ids(struct gate *g);

/** gate_n_waiting() - how many entries are queued on @id (0 when it has no state). */
size_t gate_n_waiting(struct gate *g, const char *id);

static inline void gate_leavep(struct gate_lease **l)
{
        if (*l)
                *l = gate_leave(*l);
}
