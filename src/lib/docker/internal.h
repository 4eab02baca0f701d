/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The provider objects shared by provider.c (acquire, release, destroy), container.c and
 * sandbox.c (handles). */

#include <pthread.h>

#include "b4box/policy.h"
#include "b4box/provider-impl.h"

struct docker_client;

/* What this provider instance created for a thread (reference §3.4 step 6): the state of
 * the thread's lifecycle entry. */
struct docker_state {
        char *thread_id; /* owned */
        char id[41];     /* resource id */
        char name[64];   /* b4-sbx-<id> */
        char *image;     /* owned; the image (identity) the keeper runs */
        struct b4_policy policy;
        char *launch_json; /* owned; compact launch config */
        char identity[65];
};

struct docker_core {
        pthread_mutex_t lock; /* refs */
        struct docker_client *d;
        char *scope;
        char *image;       /* default image, or NULL */
        char **images;     /* allowlist: exact references or fnmatch patterns */
        char *seccomp_opt; /* "seccomp=<json>": every container's profile (seccomp.c) */
        char seccomp_digest[65];
        unsigned refs; /* the provider and every handle */
};

struct docker_provider {
        struct b4_provider base;
        struct docker_core *core;
};

/* container.c */
void docker_core_unref(struct docker_core *c);
int docker_remove_container(struct docker_core *c, const char *name, struct b4_error *err);
int docker_start_container(struct docker_core *c, const char *name, struct b4_error *err);
/* pause.c: pause (@frozen) or unpause the thread's container; none is success. */
int docker_pause_container(struct docker_core *c,
                           const char *thread_id,
                           bool frozen,
                           struct b4_error *err);
/* Create the labelled volume when absent; chown it once when running non-root. Errors
 * carry B4_E2001. */
int docker_ensure_volume(struct docker_core *c, const struct docker_state *s, struct b4_error *err);
/* Create and start the keeper of @s (no reuse). Errors carry B4_E2001. */
int docker_create_keeper(struct docker_core *c, const struct docker_state *s, struct b4_error *err);

/* sandbox.c: a new handle on @st's keeper. Return: 0 or -ENOMEM. */
int docker_sandbox_new(struct docker_core *c,
                       const struct docker_state *st,
                       struct b4_sandbox **ret);
