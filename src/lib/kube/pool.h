/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Warm pools of the Kubernetes provider (pool.c; docs/kubernetes-provider.md "Warm pools"):
 * ready keeper Pod + fresh PVC pairs made ahead for the default launch identity (the
 * provider's image and the app's policy), adopted by a new thread with two optimistic-lock
 * merge patches; and, whenever `warmPool` is configured, a thread's PVC and Pod found by
 * label in two informers' caches (adopted threads have no deterministic names).
 *
 * Thread-safe: any number of acquires may adopt at once (each under its thread's lease).
 * Errors carry B4_CODE_SANDBOX_UNAVAILABLE where they reach a caller.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/config.h"

#include "kube/provider.h"

struct jv;
struct kube_pool;

/*
 * kube_pool_new() - the informer of the scope's PVCs (listed before this returns, within
 * startupTimeoutMs) beside the provider's of its keeper Pods (@c->pods: required), and with
 * @cfg->kube_pool_size > 0 and @cfg->kube_pool_fill the filler thread.
 * @c: referenced. Return: 0; the client's errors (the list failed); -ENOMEM; -EAGAIN.
 */
int kube_pool_new(struct kube_core *c,
                  const struct b4_provider_config *cfg,
                  struct kube_pool **ret,
                  struct b4_error *err);
/* kube_pool_free() - stop the filler; with @delete_pairs, when this pool filled, delete this
 * owner's pairs still in the pool (the provider's free: the pool is not kept for the next
 * start). NULL ok. */
void kube_pool_free(struct kube_pool *p, bool delete_pairs);

const char *kube_pool_owner(const struct kube_pool *p);
/* Whether pairs are made for @st's launch identity (pool on, the default identity). */
bool kube_pool_serves(const struct kube_pool *p, const struct kube_state *st);
/* The filler looks again now (an adoption took a pair). */
void kube_pool_wake(struct kube_pool *p);

/*
 * kube_pool_find() - @st's PVC by its label (KUBE_LABEL_THREAD = @st->names.id) in the
 * cache, and its keeper Pod: @st->names.pvc (and .pod when a Pod of the thread mounts it)
 * replaced. Several PVCs of the thread (a crash or a race mid-adoption): the oldest
 * creationTimestamp wins, the others are deleted when never attached (from the pool, no Pod
 * but their first ever mounted them), else refused. A PVC adopted without its Pod (a crash
 * between the patches) gets its Pod adopted now.
 * Return: 1 found; 0 none (a new thread); -EEXIST (duplicates in use); the client's.
 */
int kube_pool_find(struct kube_pool *p, struct kube_state *st, struct b4_error *err);

/*
 * kube_pool_adopt() - give new thread @st a ready pair: merge-PATCH the PVC, then its Pod,
 * each with metadata.resourceVersion, adding the thread label and removing KUBE_LABEL_POOL
 * (409: another replica won, the next candidate is tried). On success @st->names.pvc and
 * .pod are the pair's and @st->pod_uid is set when the Pod runs (the agent is in it
 * already); @ret_pvc_uid: the PVC's uid (the policy's owner).
 * Return: 1 adopted; 0 none to be had (the cold path); < 0 an error after the PVC was taken.
 */
int kube_pool_adopt(struct kube_pool *p,
                    struct kube_state *st,
                    char ret_pvc_uid[64],
                    struct b4_error *err);

/* Wait (at most 2 s, no request) until the PVC cache shows @st's PVC with its thread label
 * (or gone): before core drops @st (release), so that the next acquire's lookup finds it. */
void kube_pool_settle(struct kube_pool *p, const struct kube_state *st);

/* The same after destroy: until the cache shows PVC @pvc terminating or gone (a new acquire
 * of the thread must not find it). */
void kube_pool_settle_deleted(struct kube_pool *p, const char *pvc);

/* The names of the cached Pods (@pods) or PVCs labelled with resource id @id: a strv
 * (strv_free), NULL when none or on OOM. */
char **kube_pool_labelled(struct kube_pool *p, bool pods, const char *id);

/* The index of the oldest object of @objs by creationTimestamp, then name; -ENOENT when
 * @n is 0. Pure: the duplicate rule, tested on its own. */
int kube_pool_oldest(const struct jv *const *objs, size_t n);
