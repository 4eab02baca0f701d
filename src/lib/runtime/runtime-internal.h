/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The runtime's shared state (runtime.c: threads and slots; run.c: sandboxes and runs;
 * read.c: workspace reads; tools.c: the tools and permissions of runs).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "b4box/config.h"
#include "b4box/runtime.h"

#include "base/hashmap.h"
#include "store/store.h"

struct b4_permissions;
struct b4_grant_store;
struct tools_host;

#define MAX_PARENT_DEPTH 16

struct box {
        struct b4_sandbox *sb; /* NULL while acquiring */
        bool acquiring;
        bool pausing; /* a pause is being applied: runs wait (pause.c) */
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
        unsigned readers; /* b4_runtime_inspect() workers still running, abandoned ones too */
        /* the tools (tools.c); set once by b4_runtime_new() */
        enum b4_permission_mode perm_mode;
        struct b4_permissions *app_perms; /* opts.permissions or own_perms; NULL = no gate */
        struct b4_permissions *own_perms; /* from the config's permissions block */
        struct b4_grant_store *grants;    /* "Always" answers, in the store */
        struct tools_host *tools;
};

struct b4_run {
        struct b4_runtime *rt;
        char *thread_id;
        char *box_key;
        struct b4_sandbox *sb;        /* a reference */
        struct b4_cancel *cancel;     /* borrowed from the slot */
        struct b4_permissions *perms; /* the thread's own lists, or NULL (the app's) */
        int marker_fd;                /* run-marker.c: the locked marker, or -1 */
        int64_t interrupted_ms;       /* the start of a run a crash cut short, or 0 */
        b4_exec_output_fn *on_output; /* b4_run_set_output() */
        void *output_userdata;
};

/* run-marker.c. Begin: take the thread's marker, noting an interrupted run (never fails a
 * run for it: errors are returned for the log). End: drop it (NULL-safe on no marker). */
int run_marker_begin(struct b4_runtime *rt, struct b4_run *run);
void run_marker_end(struct b4_runtime *rt, struct b4_run *run);

/* The root ancestor of @id (itself without a parent), the one walk up the parent chain.
 * *ret is heap. Return: 0, -ENOENT (no row, or a deletion began), -ELOOP (deeper than
 * MAX_PARENT_DEPTH), -EIO, -ENOMEM. */
int runtime_root_ancestor(struct b4_store *store, const char *id, char **ret, struct b4_error *err);
/* The sandbox key of @id: runtime_root_ancestor() in the runtime's store. */
int runtime_sandbox_key(struct b4_runtime *rt, const char *id, char **ret, struct b4_error *err);
/* Take @id's slot (with a cancel token when @cancellable). Lock held. -EBUSY, -ESHUTDOWN. */
int slot_take_locked(struct b4_runtime *rt, const char *id, bool cancellable, struct slot **ret);
/* Free @id's slot and wake waiters. Lock held. */
void slot_drop_locked(struct b4_runtime *rt, const char *id);

/* Pause the sandboxes idle longer than idle_pause_ms (pause.c). Return: how many. */
int runtime_pause_idle(struct b4_runtime *rt, uint64_t now_ms);

/* Managed admission (admission.c): whether sandbox.workspace or sandbox.thread is set. */
bool runtime_is_managed(const struct b4_runtime *rt);
/* Report @ev, which began at @start_us (now_usec()), to the observer if there is one. */
void runtime_observe(struct b4_runtime *rt, enum b4_runtime_event ev, uint64_t start_us);
/*
 * Acquire @key's sandbox, resolving and recording it at its first admission and materialising
 * its workspace when not yet made (managed mode); a plain acquire otherwise. Called with the
 * runtime lock released while @key's box is marked acquiring.
 */
int admission_acquire(struct b4_runtime *rt,
                      const char *key,
                      struct b4_cancel *cancel,
                      struct b4_sandbox **ret,
                      struct b4_error *err);

/* External resolvers (resolver.c): stdout is capped at RESOLVER_MAX_OUTPUT. */
#define RESOLVER_MAX_OUTPUT (4u * 1024u * 1024u)
/* A resolver refuses a thread by exiting with this status after printing {"refuse": "<reason>"}
 * (1 to RESOLVER_REFUSE_MAX bytes); the reason alone reaches the client (422 thread_refused). */
#define RESOLVER_EXIT_REFUSE 3
#define RESOLVER_REFUSE_MAX  1024u
struct b4_resolver;
/* @thread_id names the thread in the server log line a failure writes (with the stderr). */
int resolver_run(const struct b4_resolver *res,
                 const char *thread_id,
                 const char *cwd,
                 const char *input,
                 struct b4_cancel *cancel,
                 char **ret_out,
                 size_t *ret_len,
                 struct b4_error *err);

/* The runtime's tools (tools.c): the app's permission lists, grants in the store, the host. */
int runtime_tools_init(struct b4_runtime *rt, struct b4_error *err);
void runtime_tools_clear(struct b4_runtime *rt);
/*
 * A run's effective permissions: the own lists of the sandbox record of @box_key (the run's
 * root ancestor), *ret owned; NULL when the record names none (the app's lists apply).
 */
int runtime_run_permissions(struct b4_runtime *rt,
                            const char *box_key,
                            struct b4_permissions **ret,
                            struct b4_error *err);
