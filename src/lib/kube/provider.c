/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes provider (docs/kubernetes.md; reference §4, seed 002): per thread one
 * keeper Pod `sleep infinity` and one ReadWriteOnce PVC at /workspace, plus the per-thread
 * NetworkPolicy in deny mode (objects.c).
 *
 *   provider ─ core (API client, agent binary, options; refcounted) ─ state per thread
 *   handle   ─ holds a core reference; its fs/exec go over the thread's agent (sandbox.c)
 *
 * Core runs the lifecycle: acquire, release, destroy and recovery exclusive per thread,
 * every handle operation shared. acquire creates or reattaches: PVC, policy, Pod, each
 * created and a 409 AlreadyExists taken as "it is there" (two b4box replicas racing on one
 * thread both end up on the one Pod); the wait for Running is a watch from the create's
 * resourceVersion (wait.c). A thread this instance already made live is reattached with no
 * API request; a lost Pod shows as a dropped agent connection, and recover makes it again.
 * release deletes the Pod and keeps the PVC (and the policy, owned by the PVC); destroy
 * deletes Pod, policy and PVC; a 404 on delete is done.
 */

#include "kube/provider.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "core/launch.h"
#include "json/json.h"
#include "kube/kube.h"
#include "kube/pool.h"
#include "providers.h"

#define AGENT_BINARY_MAX (64u * 1024 * 1024)
#define GONE_TIMEOUT_MS  30000u /* a replaced Pod's deletion */

struct kube_provider {
        struct b4_provider base;
        struct kube_core *core;
        struct kube_pool *pool; /* NULL: no warmPool configured (deterministic names only) */
};

static struct kube_core *core_of(struct b4_provider *p)
{
        return container_of(p, struct kube_provider, base)->core;
}

static struct kube_pool *pool_of(struct b4_provider *p)
{
        return container_of(p, struct kube_provider, base)->pool;
}

void kube_core_ref(struct kube_core *c)
{
        (void)pthread_mutex_lock(&c->lock);
        c->refs++;
        (void)pthread_mutex_unlock(&c->lock);
}

void kube_core_unref(struct kube_core *c)
{
        unsigned left;

        if (!c)
                return;
        (void)pthread_mutex_lock(&c->lock);
        left = --c->refs;
        (void)pthread_mutex_unlock(&c->lock);
        if (left)
                return;
        kube_informer_free(c->pods); /* before the client it uses */
        kube_client_free(c->client);
        free(c->scope);
        free(c->namespace);
        free(c->image);
        strv_free(c->images);
        free(c->storage_class);
        free(c->agent_bin);
        free(c->agent_reason);
        (void)pthread_mutex_destroy(&c->lock);
        free(c);
}

/* ---- states ---- */

static void state_free(void *state)
{
        struct kube_state *s = state;

        if (!s)
                return;
        free(s->thread_id);
        free(s->image);
        free(s->launch_json);
        b4_policy_clear(&s->policy);
        kube_agent_free(s->agent);
        free(s->pvc.intent);
        free(s);
}

static int state_new(struct kube_core *c,
                     const struct b4_acquire_req *req,
                     const char *image,
                     struct kube_state **ret,
                     struct b4_error *err)
{
        struct kube_state *s = b4_calloc(1, sizeof(*s));
        int r;

        if (!s)
                return b4_error_set(err, -ENOMEM, "out of memory");
        b4_policy_init(&s->policy);
        r = kube_names_of(c->scope, req->thread_id, &s->names);
        if (r < 0) {
                state_free(s);
                return b4_error_set(err, r, "invalid thread id or scope");
        }
        s->thread_id = b4_strdup(req->thread_id);
        s->image = b4_strdup(image);
        r = !s->thread_id || !s->image ? -ENOMEM : b4_policy_copy(&s->policy, req->policy);
        if (r >= 0)
                r = launch_config_json(&s->policy, &s->launch_json);
        if (r >= 0)
                r = launch_identity(s->image, &s->policy, s->identity);
        if (r >= 0)
                r = kube_agent_new(c, s->names.pod, false, &s->agent);
        if (r < 0) {
                state_free(s);
                return b4_error_set(err, r, "out of memory");
        }
        *ret = s;
        return 0;
}

/* ---- objects ---- */

static const char *meta_string(const struct jv *obj, const char *key)
{
        return jv_string(jv_object_get(jv_object_get(obj, "metadata"), key));
}

static const char *label_of(const struct jv *obj, const char *key)
{
        return jv_string(
                jv_object_get(jv_object_get(jv_object_get(obj, "metadata"), "labels"), key));
}

/* An object found by name is ours: managed by b4 and labelled with this thread's id. */
static bool is_ours(const struct jv *obj, const struct kube_names *n)
{
        const char *m = label_of(obj, KUBE_LABEL_MANAGED_BY), *t = label_of(obj, KUBE_LABEL_THREAD);

        return m && t && strcmp(m, KUBE_MANAGED_BY) == 0 && strcmp(t, n->id) == 0;
}

static int unavailable(struct b4_error *err, int r, const char *what, const char *name)
{
        struct b4_error inner = { 0 };

        if (err)
                inner = *err;
        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: could not %s \"%s\": %s. Run `b4box check`.",
                                 what, name, inner.msg);
}

/* Create the PVC; 409 is a PVC already there (kept: the workspace). *ret_uid: the new
 * PVC's uid, for the policy's owner reference ("" when it existed); st->pvc: that uid, its
 * version and that it is new (the workspace record, managed.c). */
static int ensure_pvc(struct kube_core *c,
                      struct kube_state *st,
                      char ret_uid[64],
                      struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL, *made = NULL;
        cleanup_free char *path =
                kube_path("v1", c->namespace, "persistentvolumeclaims", NULL, NULL);
        int r;

        ret_uid[0] = '\0';
        if (!path || kube_workspace_pvc(&st->names, c->namespace, st->policy.resources.disk_gb,
                                        c->storage_class, &body) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_create(c->client, path, body, &made, err);
        if (r == -EEXIST)
                return 0;
        if (r < 0)
                return unavailable(err, r, "create persistentvolumeclaim", st->names.pvc);
        st->pvc.made = true;
        (void)snprintf(st->pvc.uid, sizeof(st->pvc.uid), "%s", meta_string(made, "uid") ?: "");
        (void)snprintf(ret_uid, 64, "%s", st->pvc.uid);
        (void)snprintf(st->pvc.rv, sizeof(st->pvc.rv), "%s",
                       meta_string(made, "resourceVersion") ?: "");
        return 0;
}

/* The uid of the PVC named as @live's owner, or NULL. */
static const char *owner_uid(const struct jv *live, const char *pvc)
{
        const struct jv *refs = jv_object_get(jv_object_get(live, "metadata"), "ownerReferences");

        for (size_t i = 0; i < jv_array_size(refs); i++) {
                const struct jv *o = jv_array_get(refs, i);
                const char *kind = jv_string(jv_object_get(o, "kind"));
                const char *name = jv_string(jv_object_get(o, "name"));
                const char *uid = jv_string(jv_object_get(o, "uid"));

                if (kind && name && uid && *uid && strcmp(kind, "PersistentVolumeClaim") == 0 &&
                    strcmp(name, pvc) == 0)
                        return uid;
        }
        return NULL;
}

static int policy_body(struct kube_core *c,
                       const struct kube_state *st,
                       const char *owner,
                       struct jv **ret,
                       struct b4_error *err)
{
        if (kube_deny_policy(&st->names, c->namespace, &st->policy, owner, ret) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

static bool same_member(const struct jv *a, const struct jv *b, const char *key)
{
        cleanup_free char *x = NULL, *y = NULL;
        const struct jv *va = jv_object_get(a, key), *vb = jv_object_get(b, key);

        if (!va || !vb)
                return !va && !vb;
        return jv_dump(va, JV_SORT_KEYS, &x) >= 0 && jv_dump(vb, JV_SORT_KEYS, &y) >= 0 &&
               strcmp(x, y) == 0;
}

/* A live policy of that name: refused unless ours; replaced (carrying its resourceVersion)
 * when its spec or its owner differs from what this acquire wants. Its owner: the PVC's
 * uid when known, else the one it names (the PVC was there, and so was its policy), else
 * read from the PVC (a policy made without one). */
static int sync_policy(struct kube_core *c,
                       struct kube_state *st,
                       const struct jv *live,
                       struct b4_error *err)
{
        cleanup_free char *path = kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies",
                                            st->names.policy, NULL);
        cleanup_(jv_unrefp) struct jv *body = NULL;
        const char *rv = meta_string(live, "resourceVersion");
        const char *owner = st->pvc.uid[0] ? st->pvc.uid : owner_uid(live, st->names.pvc);
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (!is_ours(live, &st->names) || !rv || !*rv)
                return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: networkpolicy \"%s\" exists and "
                                         "is not b4's for this thread. Run `b4box check`.",
                                         st->names.policy);
        if (!owner) {
                r = kube_pvc_learn_uid(c, st, err);
                if (r < 0)
                        return unavailable(err, r, "read persistentvolumeclaim", st->names.pvc);
                owner = st->pvc.uid[0] ? st->pvc.uid : NULL;
        }
        r = policy_body(c, st, owner, &body, err);
        if (r < 0)
                return r;
        if (same_member(body, live, "spec") &&
            same_member(jv_object_get(body, "metadata"), jv_object_get(live, "metadata"),
                        "ownerReferences"))
                return 0;
        if (jv_object_set_new(jv_object_get(body, "metadata"), "resourceVersion",
                              jv_string_new(rv)) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_replace(c->client, path, body, NULL, err);
        return r < 0 ? unavailable(err, r, "replace networkpolicy", st->names.policy) : 0;
}

/*
 * Deny mode's policy, owned by the PVC (the garbage collector removes it with the PVC).
 * A new PVC (its uid known): create the policy, a 409 is synced. A PVC that was there: its
 * policy is read first (one GET where the reference sent POST 409 + GET), so its owner is
 * known without reading the PVC; none there: the PVC's uid is read (one GET), then it is
 * created. Allow mode: a policy left by an earlier deny-mode acquire is deleted (404 is none).
 */
static int ensure_policy(struct kube_core *c,
                         struct kube_state *st,
                         const char *pvc_uid,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL, *live = NULL;
        cleanup_free char *coll =
                kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies", NULL, NULL);
        cleanup_free char *path = kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies",
                                            st->names.policy, NULL);
        int r = -EEXIST;

        if (!coll || !path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (st->policy.network != B4_NETWORK_DENY) {
                r = kube_delete(c->client, path, NULL, err);
                return r == -ENOENT || r >= 0
                               ? 0
                               : unavailable(err, r, "delete networkpolicy", st->names.policy);
        }
        if (!st->pvc.uid[0] && pvc_uid && *pvc_uid) /* known another way (an adoption) */
                (void)snprintf(st->pvc.uid, sizeof(st->pvc.uid), "%s", pvc_uid);
        if (!st->pvc.uid[0]) {
                r = kube_get(c->client, path, &live, err);
                if (r >= 0)
                        return sync_policy(c, st, live, err);
                if (r != -ENOENT)
                        return unavailable(err, r, "read networkpolicy", st->names.policy);
                r = kube_pvc_learn_uid(c, st, err);
                if (r < 0)
                        return unavailable(err, r, "read persistentvolumeclaim", st->names.pvc);
        }
        r = policy_body(c, st, st->pvc.uid[0] ? st->pvc.uid : NULL, &body, err);
        if (r >= 0)
                r = kube_create(c->client, coll, body, NULL, err);
        if (r != -EEXIST)
                return r < 0 ? unavailable(err, r, "create networkpolicy", st->names.policy) : 0;
        jv_unrefp(&live);
        r = kube_get(c->client, path, &live, err);
        if (r < 0)
                return unavailable(err, r, "read networkpolicy", st->names.policy);
        return sync_policy(c, st, live, err);
}

/* What acquire found of the keeper Pod. */
struct found_pod {
        char rv[64]; /* watch from here */
        char uid[64];
        bool running;
};

static void take_pod(const struct jv *pod, struct found_pod *ret)
{
        char why[KUBE_WHY_MAX];

        (void)snprintf(ret->rv, sizeof(ret->rv), "%s", meta_string(pod, "resourceVersion") ?: "");
        (void)snprintf(ret->uid, sizeof(ret->uid), "%s", meta_string(pod, "uid") ?: "");
        ret->running = kube_pod_verdict(pod, 1, why) == KUBE_POD_RUNNING;
}

/* Whether the Pod runs in its own user namespace (spec.hostUsers false). */
static bool own_user_namespace(const struct jv *pod)
{
        const struct jv *v = jv_object_get(jv_object_get(pod, "spec"), "hostUsers");

        return jv_is_bool(v) && !jv_is_true(v);
}

static int delete_pod(struct kube_core *c, const char *name, struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", c->namespace, "pods", name, NULL);
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_delete(c->client, path, "gracePeriodSeconds=0", err);
        return r == -ENOENT ? 0 : r;
}

/*
 * Create the keeper, or take the one there: ours, same identity and not failing or going
 * away is reattached (Pending is waited for like a new one); anything else of ours is
 * deleted, waited out and made again. Another's Pod of that name is refused.
 */
static int ensure_pod(struct kube_core *c,
                      const struct kube_state *st,
                      uint64_t deadline,
                      int cancel_fd,
                      struct found_pod *ret,
                      struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL, *got = NULL;
        cleanup_free char *coll = kube_path("v1", c->namespace, "pods", NULL, NULL);
        cleanup_free char *path = kube_path("v1", c->namespace, "pods", st->names.pod, NULL);
        struct kube_pod_spec spec = { .names = &st->names,
                                      .namespace = c->namespace,
                                      .image = st->image,
                                      .identity = st->identity,
                                      .policy = &st->policy,
                                      .user_namespace = c->user_namespace };
        char why[KUBE_WHY_MAX] = "";
        const char *ident;
        int r;

        *ret = (struct found_pod){ 0 };
        if (!coll || !path || kube_keeper_pod(&spec, &body) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (int attempt = 0; attempt < 2; attempt++) {
                jv_unrefp(&got);
                r = kube_create(c->client, coll, body, &got, err);
                if (r >= 0 && c->user_namespace && !own_user_namespace(got)) {
                        (void)delete_pod(c, st->names.pod, NULL);
                        return b4_error_set_code(
                                err, -EOPNOTSUPP, B4_CODE_SANDBOX_UNAVAILABLE,
                                "Sandbox unavailable: the API server dropped hostUsers: false "
                                "from pod \"%s\" (user namespaces are not enabled on this "
                                "cluster): security.pidsLimit cannot be enforced. Set "
                                "sandbox.provider.hostUsers to true or enable them.",
                                st->names.pod);
                }
                if (r >= 0) {
                        take_pod(got, ret);
                        return 0;
                }
                if (r != -EEXIST)
                        return unavailable(err, r, "create pod", st->names.pod);
                jv_unrefp(&got);
                r = kube_get(c->client, path, &got, err);
                if (r == -ENOENT) /* deleted between the two: create again */
                        continue;
                if (r < 0)
                        return unavailable(err, r, "read pod", st->names.pod);
                if (!is_ours(got, &st->names))
                        return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                                 "Sandbox unavailable: pod \"%s\" exists and is "
                                                 "not b4's for this thread. Run `b4box check`.",
                                                 st->names.pod);
                ident = jv_string(
                        jv_object_get(jv_object_get(jv_object_get(got, "metadata"), "annotations"),
                                      KUBE_ANNOT_IDENTITY));
                if (ident && strcmp(ident, st->identity) == 0 &&
                    own_user_namespace(got) == c->user_namespace &&
                    kube_pod_verdict(got, 1, why) != KUBE_POD_FAILED) {
                        take_pod(got, ret);
                        return 0;
                }
                take_pod(got, ret);
                r = delete_pod(c, st->names.pod, err);
                if (r < 0)
                        return unavailable(err, r, "delete stale pod", st->names.pod);
                r = kube_pod_wait_gone(c, st->names.pod, ret->rv, deadline, cancel_fd, err);
                if (r < 0)
                        return r;
        }
        return b4_error_set_code(err, -EAGAIN, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: pod \"%s\" kept changing while it was "
                                 "created. Run `b4box check`.",
                                 st->names.pod);
}

/* Pod live and running, the agent copied in when it is a new Pod. */
static int make_live(struct kube_core *c,
                     struct kube_state *st,
                     uint64_t start,
                     int cancel_fd,
                     struct b4_error *err)
{
        uint64_t deadline = start + c->startup_timeout_ms;
        cleanup_(jv_unrefp) struct jv *pod = NULL;
        struct found_pod f;
        int r;

        r = ensure_pod(c, st, deadline, cancel_fd, &f, err);
        if (r < 0)
                return r;
        if (!f.running) {
                r = kube_keeper_wait_running(c, st->names.pod, f.uid, f.rv[0] ? f.rv : NULL,
                                             deadline, c->startup_timeout_ms, cancel_fd, &pod, err);
                if (r < 0)
                        return r;
                take_pod(pod, &f);
        }
        if (st->agent && strcmp(f.uid, st->pod_uid) != 0) {
                kube_agent_reset(st->agent);
                r = kube_agent_install(st->agent, err);
                if (r < 0)
                        return unavailable(err, r, "start b4box-agent in pod", st->names.pod);
        }
        (void)snprintf(st->pod_uid, sizeof(st->pod_uid), "%s", f.uid);
        return 0;
}

int kube_keeper_revive(struct kube_core *c, struct kube_state *st, struct b4_error *err)
{
        return make_live(c, st, now_msec(), -EBADF, err);
}

/* ---- acquire ---- */

/* ---- acquire with warmPool configured (pool.c) ---- */

/* What this instance made live before: its names (an adopted thread's are not the
 * deterministic ones), the agent then pointed at its Pod. */
static void take_names(struct kube_core *c, struct kube_state *want, const struct kube_state *have)
{
        if (strcmp(want->names.pod, have->names.pod) != 0 && want->agent) {
                want->agent = kube_agent_free(want->agent);
                (void)kube_agent_new(c, have->names.pod, false, &want->agent);
        }
        want->names = have->names;
}

/* An adopted pair's PVC: new to the thread, as if this acquire had created it. */
static void adopted_pvc(struct kube_state *st, const char *uid)
{
        st->pvc.made = true;
        (void)snprintf(st->pvc.uid, sizeof(st->pvc.uid), "%s", uid);
}

/*
 * The thread's PVC found by label (the informer's cache: no request), else a new thread of
 * the default identity adopts a ready pair (2 patches), else the cold path; then the policy
 * as always, and the keeper made live unless the adopted Pod runs with the agent in it.
 */
static int acquire_pooled(struct kube_core *c,
                          struct kube_pool *pool,
                          const struct kube_state *have,
                          struct kube_state *want,
                          uint64_t start,
                          int cancel_fd,
                          struct b4_error *err)
{
        char pvc_uid[64] = "";
        int r = 1;

        if (have)
                take_names(c, want, have);
        else
                r = kube_pool_find(pool, want, err);
        if (r == 0) {
                r = kube_pool_adopt(pool, want, pvc_uid, err);
                /* a pool PVC is fresh: only its pool Pod ever mounted it, and that Pod wrote
                 * nothing there, so a managed thread materialises into it (managed.c) */
                if (r > 0)
                        adopted_pvc(want, pvc_uid);
                else if (r == 0)
                        r = ensure_pvc(c, want, pvc_uid, err);
        }
        if (r >= 0)
                r = ensure_policy(c, want, pvc_uid, err);
        if (r >= 0 && !want->pod_uid[0])
                r = make_live(c, want, start, cancel_fd, err);
        return r < 0 ? r : 0;
}

static int acquire_locked(struct kube_core *c,
                          struct kube_pool *pool,
                          struct b4_entry *e,
                          const struct b4_acquire_req *req,
                          const char *image,
                          struct b4_error *err)
{
        struct kube_state *have = b4_entry_state(e);
        struct kube_state *want = NULL;
        uint64_t start = now_msec();
        char pvc_uid[64];
        int r;

        r = state_new(c, req, image, &want, err);
        if (r < 0)
                return r;
        if (have && strcmp(have->launch_json, want->launch_json) != 0) {
                state_free(want);
                return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: thread \"%s\" already has a "
                                         "different keeper configuration. Release the thread "
                                         "sandbox first, then acquire it with a different policy.",
                                         req->thread_id);
        }
        /* made live by this instance, its agent still connected (or never used): reattached
         * with no request; a Pod lost meanwhile shows on the next call, which recovers */
        if (have && have->pod_uid[0] && (!have->agent || !kube_agent_lost(have->agent))) {
                state_free(want);
                return 0;
        }
        if (pool) {
                r = acquire_pooled(c, pool, have, want, start, b4_cancel_fd(req->cancel), err);
        } else {
                r = ensure_pvc(c, want, pvc_uid, err);
                if (r >= 0)
                        r = ensure_policy(c, want, pvc_uid, err);
                if (r >= 0)
                        r = make_live(c, want, start, b4_cancel_fd(req->cancel), err);
        }
        if (r < 0) {
                state_free(want);
                return r;
        }
        b4_entry_set_state(e, want, state_free);
        return 0;
}

static int acquire(struct b4_provider *p,
                   struct b4_entry *e,
                   const struct b4_acquire_req *req,
                   struct b4_sandbox **ret,
                   struct b4_error *err)
{
        struct kube_core *c = core_of(p);
        const char *image = req->image ? req->image : c->image;
        int r;

        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "cancelled");
        r = acquire_locked(c, pool_of(p), e, req, image, err);
        if (r < 0)
                return r;
        r = kube_sandbox_new(c, b4_entry_state(e), ret);
        return r < 0 ? b4_error_set(err, r, "acquire of thread \"%s\" failed", req->thread_id) : 0;
}

/* ---- release, destroy ---- */

/* Return: 0 deleted (it may still be terminating); -ENOENT none; another error (logged). */
static int delete_quietly(struct kube_core *c,
                          const char *gv,
                          const char *resource,
                          const char *name,
                          const char *query)
{
        cleanup_free char *path = kube_path(gv, c->namespace, resource, name, NULL);
        struct b4_error e = { 0 };
        int r;

        if (!path)
                return -ENOMEM;
        r = kube_delete(c->client, path, query, &e);
        if (r < 0 && r != -ENOENT)
                log_warning("kubernetes: delete %s %s: %s", resource, name, e.msg);
        return r;
}

/* destroy's PVC of the thread's own name: deleted, and waited for (a GET, then a watch,
 * bounded), so that an acquire right after creates a new, empty one instead of taking a
 * terminating claim for its workspace (a 409 on create), whose Pod would never start. */
static void delete_pvc_gone(struct kube_core *c, const char *name)
{
        struct b4_error e = { 0 };

        if (delete_quietly(c, "v1", "persistentvolumeclaims", name, NULL) < 0)
                return;
        if (kube_wait_gone(c, "persistentvolumeclaims", name, NULL, now_msec() + GONE_TIMEOUT_MS,
                           -1, &e) < 0)
                log_warning("kubernetes: destroy: %s", e.msg);
}

/* ---- release, destroy with warmPool configured: names from the state or the labels ---- */

/* The thread's Pods (@pods) or PVCs: this instance's state's, those the cache has by label,
 * or the deterministic name when neither knows one. */
static char **thread_objects(struct kube_pool *pool,
                             const struct kube_state *st,
                             const struct kube_names *n,
                             bool pods)
{
        char **l = kube_pool_labelled(pool, pods, n->id);
        const char *own = st ? (pods ? st->names.pod : st->names.pvc) : NULL;
        const char *fixed = pods ? n->pod : n->pvc;

        if (own && !strv_contains(l, own) && strv_extend(&l, own) < 0)
                return strv_free(l);
        if (!l && strv_extend(&l, fixed) < 0)
                return NULL;
        return l;
}

static void delete_all(struct kube_core *c, char **names, const char *resource, const char *q)
{
        for (char **s = names; s && *s; s++)
                (void)delete_quietly(c, "v1", resource, *s, q);
        strv_free(names);
}

static void release_pooled(struct kube_core *c, struct kube_pool *pool, struct b4_entry *e)
{
        struct kube_names n;

        if (b4_entry_state(e))
                kube_pool_settle(pool, b4_entry_state(e));

        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) >= 0)
                delete_all(c, thread_objects(pool, b4_entry_state(e), &n, true), "pods",
                           "gracePeriodSeconds=0");
}

static void destroy_pooled(struct kube_core *c, struct kube_pool *pool, struct b4_entry *e)
{
        struct kube_names n;
        char **pvcs;

        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) < 0)
                return;
        delete_all(c, thread_objects(pool, b4_entry_state(e), &n, true), "pods",
                   "gracePeriodSeconds=0");
        (void)delete_quietly(c, "networking.k8s.io/v1", "networkpolicies", n.policy, NULL);
        pvcs = thread_objects(pool, b4_entry_state(e), &n, false);
        for (char **s = pvcs; s && *s; s++) {
                if (strcmp(*s, n.pvc) == 0) /* a pool pair's name is never made again */
                        delete_pvc_gone(c, *s);
                else
                        (void)delete_quietly(c, "v1", "persistentvolumeclaims", *s, NULL);
        }
        for (char **s = pvcs; s && *s; s++) /* a new acquire must not find them */
                kube_pool_settle_deleted(pool, *s);
        strv_free(pvcs);
}

/* Core drops the state; like the reference, errors are not the caller's (logged). */
static int release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct kube_core *c = core_of(p);
        struct kube_names n;

        if (pool_of(p)) {
                release_pooled(c, pool_of(p), e);
                return 0;
        }
        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) >= 0)
                (void)delete_quietly(c, "v1", "pods", n.pod, "gracePeriodSeconds=0");
        return 0;
}

static int destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct kube_core *c = core_of(p);
        struct kube_names n;

        if (pool_of(p)) {
                destroy_pooled(c, pool_of(p), e);
                return 0;
        }
        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) < 0)
                return 0;
        (void)delete_quietly(c, "v1", "pods", n.pod, "gracePeriodSeconds=0");
        (void)delete_quietly(c, "networking.k8s.io/v1", "networkpolicies", n.policy, NULL);
        delete_pvc_gone(c, n.pvc);
        return 0;
}

/* ---- images ---- */

/* Only managed threads resolve images (their record names it, so it must be immutable):
 * the reference must be allowed and pinned by digest, then it is itself the identity (the
 * kubelet pulls exactly that). Unmanaged threads run the configured image as it is. */
static int resolve_image(struct b4_provider *p,
                         const char *ref,
                         char **ret_identity,
                         struct b4_error *err)
{
        if (!ref || !*ref || !launch_image_allowed(core_of(p)->image, core_of(p)->images, ref))
                return b4_error_set_code(err, -EACCES, B4_CODE_IMAGE_NOT_ALLOWED,
                                         "Image %s is not one this provider may run: allow it with "
                                         "sandbox.provider.images",
                                         ref ? ref : "");
        if (!kube_image_pinned(ref))
                return b4_error_set_code(
                        err, -EOPNOTSUPP, B4_CODE_IMAGE_UNSUPPORTED,
                        "Image %s is not pinned by digest: the kubernetes provider "
                        "runs a managed workspace only from an image named "
                        "<name>@sha256:<64 hex>, so that its record names what "
                        "runs",
                        ref);
        *ret_identity = b4_strdup(ref);
        return *ret_identity ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static int preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        return kube_preflight(core_of(p), ret, err);
}

/* With warmPool configured the thread's PVC and Pod are found by label (an adopted
 * thread's names are the pool pair's). */
static int open_reader(struct b4_provider *p,
                       const struct b4_reader_req *req,
                       struct b4_reader **ret,
                       struct b4_error *err)
{
        struct kube_state st = { 0 };
        int r;

        if (!pool_of(p))
                return kube_reader_open(core_of(p), req, NULL, ret, err);
        if (!req->thread_id || kube_names_of(core_of(p)->scope, req->thread_id, &st.names) < 0)
                return b4_error_set(err, -EINVAL, "invalid thread id");
        r = kube_pool_find(pool_of(p), &st, err);
        if (r < 0)
                return r;
        return kube_reader_open(core_of(p), req, &st.names, ret, err);
}

static int workspace_record(struct b4_provider *p,
                            struct b4_entry *e,
                            enum b4_workspace_verb verb,
                            const struct b4_workspace_record *rec,
                            enum b4_storage_state *ret_state,
                            struct b4_error *err)
{
        return kube_workspace_record(core_of(p), b4_entry_state(e), verb, rec, ret_state, err);
}

static void provider_free(struct b4_provider *p)
{
        struct kube_provider *kp = container_of(p, struct kube_provider, base);

        free(p->scope);
        kube_pool_free(kp->pool, true);
        kube_core_unref(kp->core);
        free(kp);
}

static const struct b4_provider_ops kube_provider_ops = {
        .name = "kubernetes",
        .acquire = acquire,
        .release = release,
        .destroy = destroy,
        .preflight = preflight,
        .open_reader = open_reader,
        .resolve_image = resolve_image,
        .workspace_record = workspace_record,
        .free = provider_free,
};

/* ---- construction ---- */

static int set_reason(struct kube_core *c, const char *fmt, ...) B4_PRINTF(2, 3);

static int set_reason(struct kube_core *c, const char *fmt, ...)
{
        char *reason = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(c->agent_reason);
        c->agent_reason = reason;
        return 0;
}

/* The host's b4box-agent (agent_binary_path(), as the Docker provider finds it), read once:
 * every new Pod gets a copy. B4BOX_KUBE_AGENT=off (tests) goes without. */
static int load_agent(struct kube_core *c)
{
        const char *env = secure_getenv("B4BOX_KUBE_AGENT");
        cleanup_free char *path = NULL;
        int r;

        if (env && strcmp(env, "off") == 0)
                return set_reason(c, "no b4box-agent: %s", "B4BOX_KUBE_AGENT=off");
        r = agent_binary_path(&path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return set_reason(c, "no b4box-agent: %s",
                                  "not found (set B4BOX_AGENT or install it)");
        r = read_file_at(AT_FDCWD, path, AGENT_BINARY_MAX, &c->agent_bin, &c->agent_len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return set_reason(c, "no b4box-agent: %s could not be read", path);
        return set_reason(c,
                          "b4box-agent %s, copied into each Pod's emptyDir " KUBE_AGENT_DIR
                          " by one exec, then one long-lived exec per Pod",
                          path);
}

static int check_config(const struct b4_provider_config *cfg, struct b4_error *err)
{
        const char *s = cfg ? cfg->scope : NULL;

        while (s && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
                s++;
        if (!s || !*s)
                return b4_error_set(err, -EINVAL,
                                    "Sandbox scope must be a non-empty application/environment "
                                    "identifier");
        if (!cfg->image || !*cfg->image)
                return b4_error_set(err, -EINVAL,
                                    "b4box.json sandbox.provider.image is required by the "
                                    "kubernetes provider.");
        return 0;
}

static int core_client(struct kube_core *c,
                       const struct b4_provider_config *cfg,
                       struct b4_error *err)
{
        struct kube_options o = { .api_server = cfg->kube_api,
                                  .namespace = cfg->kube_namespace,
                                  .token_file = cfg->kube_token_file,
                                  .ca_file = cfg->kube_ca_file,
                                  .kubeconfig = cfg->kubeconfig,
                                  .context = cfg->kube_context };
        struct kube_config k = { 0 };
        int r;

        r = kube_config_resolve(&o, &k, err);
        if (r < 0)
                return b4_error_wrap(err, r, "kubernetes provider configuration");
        r = kube_client_new(&k, &c->client, err);
        if (r >= 0 && !(c->namespace = b4_strdup(kube_client_namespace(c->client))))
                r = b4_error_set(err, -ENOMEM, "out of memory");
        kube_config_release(&k);
        return r < 0 ? b4_error_wrap(err, r, "kubernetes API client") : 0;
}

static struct kube_core *core_new(const struct b4_provider_config *cfg, struct b4_error *err)
{
        struct kube_core *c = b4_calloc(1, sizeof(*c));

        if (!c) {
                (void)b4_error_set(err, -ENOMEM, "out of memory");
                return NULL;
        }
        c->refs = 1;
        (void)pthread_mutex_init(&c->lock, NULL);
        c->user_namespace = cfg->kube_user_namespace;
        c->startup_timeout_ms = cfg->kube_startup_timeout_ms ? cfg->kube_startup_timeout_ms
                                                             : B4_KUBE_DEFAULT_STARTUP_TIMEOUT_MS;
        c->scope = b4_strdup(cfg->scope);
        c->image = b4_strdup(cfg->image);
        c->images = cfg->images ? strv_copy(cfg->images) : NULL;
        c->storage_class = cfg->kube_storage_class ? b4_strdup(cfg->kube_storage_class) : NULL;
        if (!c->scope || !c->image || (cfg->images && !c->images) ||
            (cfg->kube_storage_class && !c->storage_class) || load_agent(c) < 0) {
                (void)b4_error_set(err, -ENOMEM, "out of memory");
                kube_core_unref(c);
                return NULL;
        }
        if (core_client(c, cfg, err) < 0) {
                kube_core_unref(c);
                return NULL;
        }
        return c;
}

/*
 * The scope's keeper Pods, listed then watched once for the process (c->pods): the pool's
 * view, and what a long-lived provider's acquires wait on. Only the pool needs it: without
 * the pool a refusal (no list or watch permission) or a list that does not complete leaves
 * c->pods NULL, said in a log line, and each acquire watches its Pod.
 */
static int start_pod_informer(struct kube_core *c, bool required, struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", c->namespace, "pods", NULL, NULL);
        cleanup_free char *sel = NULL;
        struct b4_error e = { 0 };
        struct kube_names n;
        int r;

        r = kube_names_of(c->scope, "pool", &n);
        if (r < 0)
                return b4_error_set(err, r, "invalid scope");
        if (!path || b4_asprintf(&sel,
                                 KUBE_LABEL_MANAGED_BY "=" KUBE_MANAGED_BY "," KUBE_LABEL_SCOPE
                                                       "=%s," KUBE_LABEL_ROLE "=keeper",
                                 n.scope) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_informer_new(c->client, path, sel, NULL, NULL, &c->pods, &e);
        if (r >= 0)
                r = kube_informer_wait_synced(c->pods, now_msec() + c->startup_timeout_ms, &e);
        if (r >= 0)
                return 0;
        c->pods = kube_informer_free(c->pods);
        if (required || r == -ENOMEM) {
                if (err)
                        *err = e;
                return b4_error_wrap(err, r, "kubernetes warm pool: listing the scope's objects");
        }
        log_warning("kubernetes: no shared pod informer (%s): each acquire watches its pod", e.msg);
        return 0;
}

int kube_provider_new(const struct b4_provider_config *cfg,
                      struct b4_provider **ret,
                      struct b4_error *err)
{
        struct kube_provider *kp;
        int r;

        if (!ret)
                return b4_error_set(err, -EINVAL, "kubernetes provider needs a result pointer");
        r = check_config(cfg, err);
        if (r < 0)
                return r;
        kp = b4_calloc(1, sizeof(*kp));
        if (!kp)
                return b4_error_set(err, -ENOMEM, "out of memory");
        kp->core = core_new(cfg, err);
        if (!kp->core) {
                free(kp);
                return err && err->error ? err->error : -ENOMEM;
        }
        r = cfg->kube_pool || cfg->kube_informer ? start_pod_informer(kp->core, cfg->kube_pool, err)
                                                 : 0;
        if (r >= 0 && cfg->kube_pool)
                r = kube_pool_new(kp->core, cfg, &kp->pool, err);
        if (r < 0) {
                kube_core_unref(kp->core);
                free(kp);
                return r;
        }
        if (b4_provider_init(&kp->base, &kube_provider_ops, cfg->scope) < 0) {
                kube_pool_free(kp->pool, true);
                kube_core_unref(kp->core);
                free(kp);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = &kp->base;
        return 0;
}
