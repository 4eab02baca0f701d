/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The runtime's shared state (runtime.c: threads and slots; run.c: sandboxes and runs). */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "b4box/runtime.h"

#include "base/hashmap.h"

#define MAX_THREAD_ID_BYTES 256
#define MAX_PARENT_DEPTH    16

struct box {
        struct b4_sandbox *sb; /* NULL while acquiring */
        bool acquiring;
        unsigned users;
        uint64_t last_used_ms;
};

struct slot {
        struct b4_cancel *cancel; /* fired by b4_runtime_thread_cancel() */
        bool borrowed;            /* cancel belongs to the slot's holder (a read) */
};

struct b4_runtime {
        struct b4_runtime_options opts; /* policy pointer replaced by &policy */
        struct b4_policy policy;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct hashmap *boxes; /* sandbox key -> struct box */
        struct hashmap *slots; /* thread id -> struct slot */
        bool shutting_down;
        uint64_t acquires, releases;
};

struct b4_run {
        struct b4_runtime *rt;
        char *thread_id;
        char *box_key;
        struct b4_sandbox *sb;    /* a reference */
        struct b4_cancel *cancel; /* borrowed from the slot */
};

/* The sandbox key of @id: its root ancestor (itself without a parent). *ret is heap. */
int runtime_sandbox_key(struct b4_runtime *rt, const char *id, char **ret, struct b4_error *err);
/* Take @id's slot (with a cancel token when @cancellable). Lock held. -EBUSY, -ESHUTDOWN. */
int slot_take_locked(struct b4_runtime *rt, const char *id, bool cancellable, struct slot **ret);
/* Free @id's slot and wake waiters. Lock held. */
void slot_drop_locked(struct b4_runtime *rt, const char *id);
