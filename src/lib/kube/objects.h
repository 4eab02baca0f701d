/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Kubernetes objects of one thread, as JSON bodies (seed 002, docs/kubernetes.md,
 * reference §4): the keeper Pod, its ReadWriteOnce PVC at /workspace, the per-thread
 * NetworkPolicy of deny mode, the read-only reader Pod, and the SelfSubjectAccessReviews of
 * preflight. Pure builders: no I/O, no clock, no randomness but what the caller passes, so
 * tests/unit/test-kube-objects.c compares them with golden files.
 *
 * Ownership: every *ret is a new reference (jv_unref()); inputs are borrowed.
 * Errors: -ENOMEM (also invalid UTF-8 in a string, which jansson refuses), -EINVAL (a
 * name that cannot be made, a policy Kubernetes cannot express).
 */

#include <stdbool.h>
#include <stdint.h>

#include "b4box/policy.h"

struct jv;

/* The labels every object carries (the reference's two plus b4box's). */
#define KUBE_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define KUBE_MANAGED_BY       "b4"
#define KUBE_LABEL_THREAD     "b4.run/thread"     /* the resource id: the policy selector */
#define KUBE_LABEL_READER     "b4.run/reader"     /* a reader's resource id (not selected) */
#define KUBE_LABEL_SCOPE      "b4box.io/scope"    /* 40 hex of sha256 of the scope */
#define KUBE_LABEL_ROLE       "b4box.io/role"     /* keeper | reader */
#define KUBE_ANNOT_IDENTITY   "b4box.io/identity" /* launch identity (core/launch.h) */
/* Warm pools (docs/kubernetes-provider.md "Warm pools"): a pool pair's Pod carries
 * KUBE_LABEL_POOL from its creation, its PVC once the pair is ready (the PVC is the object
 * adoption locks); both carry the owner, and neither a thread label until adopted. */
#define KUBE_LABEL_POOL       "b4box.io/pool"       /* 40 hex of the launch identity */
#define KUBE_LABEL_POOL_OWNER "b4box.io/pool-owner" /* the replica that made the pair */
#define KUBE_ANNOT_POOL_POD   "b4box.io/pool-pod"   /* on a pool PVC: its pair's Pod */

/* The container the provider execs into; where b4box-agent is copied (an emptyDir). */
#define KUBE_CONTAINER     "sandbox"
#define KUBE_AGENT_DIR     "/b4"
#define KUBE_AGENT_PATH    KUBE_AGENT_DIR "/agent"
#define KUBE_DEAD_RESOLVER "127.0.0.1" /* deny mode: dnsPolicy None points here */

/* A thread's names, all DNS-1123 labels of at most 63 characters (reference §3.2). */
struct kube_names {
        char id[41];     /* resource id */
        char scope[41];  /* KUBE_LABEL_SCOPE value */
        char pod[64];    /* b4-sbx-<id> */
        char pvc[64];    /* b4-sbx-vol-<id> */
        char policy[64]; /* b4-sbx-net-<id> */
};

/* Return: 0, -EINVAL (empty scope). */
int kube_names_of(const char *scope, const char *thread_id, struct kube_names *ret);
/* A reader's Pod name b4-sbx-rdr-<id>-<suffix8> (@suffix8: 8 lowercase hex). -EINVAL else. */
int kube_reader_name(const struct kube_names *n, const char *suffix8, char ret[64]);

/* What a keeper Pod is made of. */
struct kube_pod_spec {
        const struct kube_names *names;
        const char *namespace;
        const char *image;
        const char *identity; /* launch identity, or NULL */
        const struct b4_policy *policy;
        bool user_namespace; /* hostUsers: false (pidsLimit enforced in the Pod) */
};

/* The keeper: `sleep infinity` in container "sandbox", hardened as the seed says,
 * shareProcessNamespace (pause reaps zombies), resources from the policy, deny mode without
 * cluster DNS (dnsPolicy None, nameserver KUBE_DEAD_RESOLVER). */
int kube_keeper_pod(const struct kube_pod_spec *s, struct jv **ret);

/* The workspace claim: ReadWriteOnce, <disk_gb or 1>Gi, @storage_class when non-NULL. */
int kube_workspace_pvc(const struct kube_names *n,
                       const char *namespace,
                       uint64_t disk_gb,
                       const char *storage_class,
                       struct jv **ret);

/* The per-thread policy of deny mode: ingress and egress denied, egress only to the
 * allowlist's CIDRs (ports kept; names cannot be expressed and are left out: preflight says
 * so), no DNS rule. @pvc_uid (or NULL) makes the PVC its owner, so the garbage collector
 * removes it with the PVC. -EINVAL for an allow-mode policy (it has none). */
int kube_deny_policy(const struct kube_names *n,
                     const char *namespace,
                     const struct b4_policy *p,
                     const char *pvc_uid,
                     struct jv **ret);

/* A workspace reader: the PVC mounted readOnly, the agent's emptyDir, no fsGroup (it never
 * changes a file's group), pinned to @node (NULL: unpinned), labelled as a reader (no
 * thread label, so the thread's policy does not select it; the chart denies readers all). */
struct kube_reader_spec {
        const struct kube_names *names;
        const char *name; /* kube_reader_name() */
        const char *namespace;
        const char *image;
        const char *node; /* the keeper's spec.nodeName, or NULL */
        bool run_as_non_root;
        uint32_t uid, gid;
};

int kube_reader_pod(const struct kube_reader_spec *s, struct jv **ret);

/* One SelfSubjectAccessReview body: @group "" for the core group, @subresource or NULL. */
int kube_access_review(const char *namespace,
                       const char *verb,
                       const char *group,
                       const char *resource,
                       const char *subresource,
                       struct jv **ret);

/* Kubernetes quantities: memory "<mb>Mi", cpu "<n>" or "<milli>m". Return: 0, -ENOMEM. */
int kube_quantity_cpu(double cpus, char **ret);

/* ---- warm pools ---- */

/* A pool pair's names from @suffix (16 lowercase hex): Pod b4-sbx-pool-<suffix>, PVC
 * b4-sbx-vol-pool-<suffix>; @scope as kube_names_of() takes it. -EINVAL else. */
int kube_pool_names(const char *scope, const char *suffix, struct kube_names *ret);

/* Make a keeper Pod or its PVC (kube_keeper_pod(), kube_workspace_pvc()) a pool pair's:
 * the thread label removed, KUBE_LABEL_POOL_OWNER @owner, KUBE_LABEL_POOL @pool when
 * non-NULL (the Pod's at creation), KUBE_ANNOT_POOL_POD @pod when non-NULL (the PVC's). */
int kube_pool_mark(struct jv *obj, const char *pool, const char *owner, const char *pod);

/* The adoption merge patch: metadata.resourceVersion @rv (the optimistic lock: 409 when
 * another replica changed the object first), KUBE_LABEL_THREAD @thread_id added,
 * KUBE_LABEL_POOL removed. */
int kube_pool_adopt_patch(const char *rv, const char *thread_id, struct jv **ret);
