/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The provider objects shared by provider.c (acquire, release, destroy), container.c and
 * sandbox.c (handles). */

#include <pthread.h>

#include "b4box/policy.h"
#include "b4box/provider-impl.h"

struct docker_agent;
struct docker_client;
struct docker_net;

/* How keepers and readers get b4box-agent (agent-mount.c). */
enum docker_agent_mode {
        DOCKER_AGENT_OFF,    /* the archive/exec fallback */
        DOCKER_AGENT_BIND,   /* the host's binary bound read-only at DOCKER_AGENT_PATH */
        DOCKER_AGENT_VOLUME, /* copied into a volume mounted read-only at DOCKER_AGENT_DIR */
};

/* What one keeper mounts for the agent: strings borrowed from the core. */
struct docker_agent_mount {
        enum docker_agent_mode mode;
        const char *bind;   /* DOCKER_AGENT_BIND: the host path */
        const char *volume; /* DOCKER_AGENT_VOLUME: the volume name */
};

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
        struct docker_agent *agent;      /* owned; NULL: the archive/exec fallback */
        struct docker_agent_mount mount; /* how its keeper gets the agent */
};

struct docker_core {
        pthread_mutex_t lock; /* refs */
        struct docker_client *d;
        char *scope;
        char *image;       /* default image, or NULL */
        char **images;     /* allowlist: exact references or fnmatch patterns */
        char *seccomp_opt; /* "seccomp=<json>": every container's profile (seccomp.c) */
        char seccomp_digest[65];
        /* b4box-agent (agent-mount.c): the mode, the reason and the volume under lock; the
         * path and, once set, the volume name never change */
        enum docker_agent_mode agent_mode;
        char *agent_path;       /* host path of b4box-agent; NULL: not found */
        char *agent_volume;     /* the copy's volume, in volume mode once made */
        char *agent_reason;     /* why operations take the path they take (preflight) */
        struct docker_net *net; /* the keepers' network (net.h) */
        unsigned refs;          /* the provider and every handle */
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

/* agent-mount.c */
/* At construction: the mode from B4BOX_DOCKER_AGENT and agent_binary_path(). Return: 0 or
 * -ENOMEM. */
int docker_agent_choose(struct docker_core *c);
/* What a new keeper of @image mounts; in volume mode the copy is made first (once), and a
 * failed copy turns the agent off for the provider. */
void docker_agent_mount_of(struct docker_core *c,
                           const char *image,
                           struct docker_agent_mount *ret);
/* The daemon refused the bind (@why): the provider copies the agent in from now on. */
void docker_agent_bind_refused(struct docker_core *c, const char *why);
/* pause.c: pause (@frozen) or unpause the thread's container; none is success. */
int docker_pause_container(struct docker_core *c,
                           const char *thread_id,
                           bool frozen,
                           struct b4_error *err);

/* sandbox.c: a new handle on @st's keeper. Return: 0 or -ENOMEM. */
int docker_sandbox_new(struct docker_core *c,
                       const struct docker_state *st,
                       struct b4_sandbox **ret);
