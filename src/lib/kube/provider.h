/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the Kubernetes provider (docs/kubernetes.md), one section per module:
 *   provider.c   the provider object: construction, acquire (create or reattach),
 *                release, destroy
 *   wait.c       waiting for a keeper Pod to run: one watch from the create's
 *                resourceVersion, the fail-fast verdicts on Pod status
 *   agent.c      b4box-agent in the Pod: copied into its emptyDir once per Pod by one exec,
 *                then one long-lived exec as the agent connection's transport
 *   sandbox.c    handles: file operations and commands over that connection
 *   shell-fs.c   without the agent: the reference's `sh -s` scripts, one exec each
 *   reader.c     workspace readers: a separate read-only Pod on the PVC, never the keeper
 *   managed.c    managed workspaces: their record as the PVC's annotation, pinned images
 *   pool.c       warm pools (pool.h): ready Pod + PVC pairs adopted by new threads, a
 *                thread's objects found by label
 *   preflight.c  `b4box check`: one SelfSubjectAccessReview per operation, the controls
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/policy.h"
#include "b4box/provider-impl.h"

#include "kube/objects.h"

struct agent_conn;
struct jv;
struct kube_agent;
struct kube_client;
struct kube_informer;
struct kube_exec_result;

/* What every handle and state shares: refcounted (the provider and each handle). */
struct kube_core {
        pthread_mutex_t lock; /* refs */
        unsigned refs;
        struct kube_client *client;
        char *scope;
        char *namespace;
        char *image;         /* default image */
        char **images;       /* allowlist */
        char *storage_class; /* NULL: the cluster's default */
        uint64_t startup_timeout_ms;
        bool user_namespace; /* hostUsers: false (pidsLimit enforced in the Pod) */
        /* b4box-agent: the host's binary, read once at construction (NULL: none, and
         * agent_reason says why: the sh scripts serve every Pod) */
        char *agent_bin;
        size_t agent_len;
        char *agent_reason;
        /* the scope's keeper Pods, listed and watched once per process (owned; NULL = none:
         * each wait watches its Pod): a long-lived provider's, or the warm pool's */
        struct kube_informer *pods;
};

void kube_core_ref(struct kube_core *c);
void kube_core_unref(struct kube_core *c);

/* The PVC as an acquire saw it, for the workspace record and the policy's owner. */
struct kube_pvc_seen {
        bool made;    /* this acquire created it (201): it is empty, it has no record */
        char uid[64]; /* "" = not known (it existed: a 409) */
        char rv[64];  /* its resourceVersion as last seen; "" = not known */
        char *intent; /* owned; the intent of the record checked or published, or NULL */
};

/* The state of a thread's lifecycle entry: what this provider instance made live. */
struct kube_state {
        char *thread_id; /* owned */
        struct kube_names names;
        char *image; /* owned */
        struct b4_policy policy;
        char *launch_json; /* owned: compact launch config (core/launch.h) */
        char identity[65];
        char pod_uid[64];         /* the keeper Pod this state's agent was copied into */
        struct kube_agent *agent; /* owned: the Pod's link (the agent, or the sh scripts) */
        struct kube_pvc_seen pvc; /* the PVC as this state's acquire saw it (managed.c) */
};

/* ---- wait.c ---- */

enum kube_pod_verdict {
        KUBE_POD_WAIT,    /* not running yet: keep waiting */
        KUBE_POD_RUNNING, /* phase Running and container "sandbox" running */
        KUBE_POD_FAILED,  /* will not run: the message says why */
        KUBE_POD_GONE,    /* kube_cached_pod_verdict(): deleted, or made again under its name */
};

/*
 * kube_pod_verdict() - what the Pod object @pod (untrusted) says, with the reference's and
 * the design brief's fail-fast table: InvalidImageName, ErrImageNeverPull,
 * CreateContainerConfigError, ErrImagePull, ImagePullBackOff and CrashLoopBackOff (or a
 * terminated container) fail at once; RegistryUnavailable, CreateContainerError and
 * RunContainerError when @seen (observations of the Pod so far) is >= 2; phase
 * Failed/Succeeded and a deletionTimestamp at once. Unschedulable keeps waiting
 * (an autoscaler may add a node) and is kept in @why for the timeout's message.
 * @why: KUBE_WHY_MAX bytes: the reason and message ("ErrImagePull: ..."), sanitised.
 */
#define KUBE_WHY_MAX 512
enum kube_pod_verdict kube_pod_verdict(const struct jv *pod, unsigned seen, char *why);

/*
 * kube_pod_wait_running() - wait for @name to run, watching from @rv (the create's or the
 * get's resourceVersion; NULL: read the Pod first; never polling) until @deadline_ms
 * (now_msec() time; @timeout_ms is the budget it stands for, for the message) or
 * @cancel_fd. A 410 re-reads the Pod and watches again from its version.
 * @ret_pod: the running Pod (owned), may be NULL.
 * Return: 0; -ETIMEDOUT, -ENOENT (it disappeared), -EIO (a fail-fast verdict), -ECANCELED,
 * and the client's errors; @err carries the reference's "Sandbox unavailable: pod ..." text
 * with B4_CODE_SANDBOX_UNAVAILABLE.
 */
int kube_pod_wait_running(struct kube_core *c,
                          const char *name,
                          const char *rv,
                          uint64_t deadline_ms,
                          uint64_t timeout_ms,
                          int cancel_fd,
                          struct jv **ret_pod,
                          struct b4_error *err);

/*
 * kube_cached_pod_verdict() - what the informer's cached object @o (untrusted; NULL: absent)
 * says of the Pod @cp waits for, on every change: only the object of @cp->uid counts, each
 * new resourceVersion of it one observation (kube_pod_verdict()'s @seen). Another uid is an
 * older Pod of the name the cache still holds (keep waiting) or one made again under it
 * (KUBE_POD_GONE: ours was seen, or its resourceVersion is past @cp->rv, compared as
 * numbers when both are); absent after ours was seen is KUBE_POD_GONE too.
 */
struct kube_cached_pod {
        const char *uid; /* the created (or read) Pod's; borrowed */
        const char *rv;  /* its resourceVersion then; borrowed, may be NULL */
        bool seen;       /* ours was in the cache */
        unsigned observations;
        char last_rv[64];
};
enum kube_pod_verdict kube_cached_pod_verdict(struct kube_cached_pod *cp,
                                              const struct jv *o,
                                              char *why);

/*
 * kube_keeper_wait_running() - kube_pod_wait_running() for keeper Pod @name of uid @uid (the
 * create's or the get's): on the shared informer c->pods when there is one, it follows the
 * server and @uid is known (no request: the cached object's verdicts, only @uid's Pod
 * counting; another uid past @rv, or after ours, is "disappeared"); else the per-Pod watch,
 * said in a log line. The same returns and messages.
 */
int kube_keeper_wait_running(struct kube_core *c,
                             const char *name,
                             const char *uid,
                             const char *rv,
                             uint64_t deadline_ms,
                             uint64_t timeout_ms,
                             int cancel_fd,
                             struct jv **ret_pod,
                             struct b4_error *err);

/* kube_wait_gone() - wait for the deletion of @resource ("pods", "persistentvolumeclaims")
 * @name, as kube_pod_wait_gone() does for a Pod. */
int kube_wait_gone(struct kube_core *c,
                   const char *resource,
                   const char *name,
                   const char *rv,
                   uint64_t deadline_ms,
                   int cancel_fd,
                   struct b4_error *err);

/* kube_pod_wait_gone() - wait for @name's deletion (a DELETED event or a 404), watching
 * from @rv (NULL or "": read first). Return: 0, -ETIMEDOUT, -ECANCELED, the client's. */
int kube_pod_wait_gone(struct kube_core *c,
                       const char *name,
                       const char *rv,
                       uint64_t deadline_ms,
                       int cancel_fd,
                       struct b4_error *err);

/* ---- agent.c ---- */

/* The link to b4box-agent in Pod @pod (KUBE_AGENT_PATH), run with --read-only when
 * @read_only (a reader's). Nothing starts yet. Return: 0 or -ENOMEM. */
int kube_agent_new(struct kube_core *c, const char *pod, bool read_only, struct kube_agent **ret);
struct kube_agent *kube_agent_free(struct kube_agent *a);
/* Copy the agent into the Pod's emptyDir (one exec, the binary on stdin). Exclusive lease. */
int kube_agent_install(struct kube_agent *a, struct b4_error *err);
/* The live connection, made on first use (one exec); borrowed until reset/free (exclusive
 * lease only). Return: 1 with *ret; 0 when the Pod goes without the agent (the sh scripts
 * serve it: shell-fs.c); -ENOTCONN (lost, or could not start: core recovers); -ENOMEM. */
int kube_agent_conn(struct kube_agent *a, struct agent_conn **ret, struct b4_error *err);
/* Whether the Pod goes without the agent, and why (*ret_why borrowed from @a). */
bool kube_agent_shell(struct kube_agent *a, const char **ret_why);

/* One exec in the Pod (its errors: kube_exec_run()). */
struct kube_shell_run {
        size_t output_cap;   /* per stream */
        uint64_t timeout_ms; /* 0 = none */
        int cancel_fd;       /* -EBADF = none */
};

int kube_agent_run(struct kube_agent *a,
                   char *const *argv,
                   const void *stdin_data,
                   size_t stdin_len,
                   const struct kube_shell_run *o,
                   struct kube_exec_result *ret,
                   struct b4_error *err);
/* kube_agent_run() of `sh -c 'head -c <len> | sh -s'` with @script on stdin. */
int kube_agent_shell_run(struct kube_agent *a,
                         const char *script,
                         size_t len,
                         const struct kube_shell_run *o,
                         struct kube_exec_result *ret,
                         struct b4_error *err);
bool kube_agent_lost(struct kube_agent *a);
void kube_agent_reset(struct kube_agent *a);

/* ---- provider.c ---- */

/* Make @st's keeper live again (recovery): delete a Pod that is not running, create it,
 * wait, copy the agent. Exclusive lease. */
int kube_keeper_revive(struct kube_core *c, struct kube_state *st, struct b4_error *err);

/* ---- managed.c ---- */

/* The PVC's uid (for the policy's owner reference) when @st does not know it: one GET of
 * the PVC, its uid and resourceVersion kept in st->pvc. Return: 0 or the client's errors. */
int kube_pvc_learn_uid(struct kube_core *c, struct kube_state *st, struct b4_error *err);
/* b4_provider_ops.workspace_record: the record as the PVC annotation
 * KUBE_ANNOT_WORKSPACE_RECORD, {"intent", "sourceDigest", "image", "ready"}, PATCHed with
 * the PVC's resourceVersion (a 409 is read again, KUBE_PUBLISH_TRIES in all). */
#define KUBE_PUBLISH_TRIES 4
int kube_workspace_record(struct kube_core *c,
                          struct kube_state *st,
                          enum b4_workspace_verb verb,
                          const struct b4_workspace_record *rec,
                          enum b4_storage_state *ret_state,
                          struct b4_error *err);
/* Whether @ref is pinned by digest: "<name>@sha256:<64 lowercase hex>". */
bool kube_image_pinned(const char *ref);

/* ---- sandbox.c ---- */

/* A new handle on @st's keeper. Return: 0 or -ENOMEM. */
int kube_sandbox_new(struct kube_core *c, const struct kube_state *st, struct b4_sandbox **ret);
/* The Pod link of a handle's or reader's fs (stable under the call's lease), or NULL. */
struct kube_agent *kube_fs_agent(struct b4_fs *fs);

/* ---- reader.c ---- */

/* A reader's Pod link. */
struct kube_agent *kube_reader_agent(struct b4_reader *r);

/* A workspace reader (b4_provider_ops.open_reader): a read-only Pod on the thread's PVC.
 * @names: the thread's PVC and keeper Pod when they are not the deterministic ones (an
 * adopted warm pool pair, pool.c), else NULL. */
int kube_reader_open(struct kube_core *c,
                     const struct b4_reader_req *req,
                     const struct kube_names *names,
                     struct b4_reader **ret,
                     struct b4_error *err);

/* ---- preflight.c ---- */

int kube_preflight(struct kube_core *c, struct b4_preflight *ret, struct b4_error *err);
