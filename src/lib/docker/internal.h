/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The provider objects shared by provider.c (acquire, release, destroy), container.c and
 * sandbox.c (handles). */

#include <pthread.h>

#include "b4box/policy.h"
#include "b4box/provider-impl.h"

struct docker_agent;
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
        struct docker_agent *agent; /* owned; NULL: the archive/exec fallback */
};

struct docker_core {
        pthread_mutex_t lock; /* refs */
        struct docker_client *d;
        char *scope;
        char *image;       /* default image, or NULL */
        char **images;     /* allowlist: exact references or fnmatch patterns */
        char *seccomp_opt; /* "seccomp=<json>": every container's profile (seccomp.c) */
        char seccomp_digest[65];
        char *agent_path;   /* host path of b4box-agent, bound into keepers; NULL: fallback */
        bool agent_off;     /* under lock: the daemon could not bind it (agent_path kept) */
        char *agent_reason; /* why operations take the path they take (preflight) */
        unsigned refs;      /* the provider and every handle */
};

struct docker_provider {
        struct b4_provider base;
        struct docker_core *core;
};

/* container.c */
void docker_core_unref(struct docker_core *c);
int docker_remove_container(struct docker_core *c, const char *name, struct b4_error *err);
int docker_start_container(struct docker_core *c, const char *name, struct b4_error *err);
/* Whether container @name exists and runs (a missing one: false). */
int docker_container_running(struct docker_core *c,
                             const char *name,
                             bool *ret,
                             struct b4_error *err);
/* Create and start the keeper of @s (no reuse). Its create makes the labelled volume when
 * absent. @first (acquire, not recovery): a volume that did not exist is new, so the image's
 * /workspace is copied in and, for a non-root user, its root is chowned once (on the host
 * when reachable, else by the ownership init container) before the start. Errors carry
 * B4_E2001. */
int docker_create_keeper(struct docker_core *c,
                         const struct docker_state *s,
                         bool first,
                         struct b4_error *err);

/* sandbox.c: a new handle on @st's keeper. Return: 0 or -ENOMEM. */
int docker_sandbox_new(struct docker_core *c,
                       const struct docker_state *st,
                       struct b4_sandbox **ret);
