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
#include "providers.h"

#define AGENT_BINARY_MAX (64u * 1024 * 1024)
#define GONE_TIMEOUT_MS  30000u /* a replaced Pod's deletion */

struct kube_provider {
        struct b4_provider base;
        struct kube_core *core;
};

static struct kube_core *core_of(struct b4_provider *p)
{
        return container_of(p, struct kube_provider, base)->core;
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
 * PVC's uid, for the policy's owner reference ("" when it existed). */
static int ensure_pvc(struct kube_core *c,
                      const struct kube_state *st,
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
        if (meta_string(made, "uid"))
                (void)snprintf(ret_uid, 64, "%s", meta_string(made, "uid"));
        return 0;
}

/* Deny mode: create the policy, or on 409 replace a live one of ours whose spec differs
 * (carrying its resourceVersion); another's object of that name is refused. Allow mode:
 * a policy left by an earlier deny-mode acquire is deleted (404 is none). */
static int ensure_policy(struct kube_core *c,
                         const struct kube_state *st,
                         const char *pvc_uid,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL, *live = NULL;
        cleanup_free char *coll =
                kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies", NULL, NULL);
        cleanup_free char *path = kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies",
                                            st->names.policy, NULL);
        cleanup_free char *want = NULL, *have = NULL;
        const char *rv;
        int r;

        if (!coll || !path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (st->policy.network != B4_NETWORK_DENY) {
                r = kube_delete(c->client, path, NULL, err);
                return r == -ENOENT || r >= 0
                               ? 0
                               : unavailable(err, r, "delete networkpolicy", st->names.policy);
        }
        if (kube_deny_policy(&st->names, c->namespace, &st->policy, *pvc_uid ? pvc_uid : NULL,
                             &body) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_create(c->client, coll, body, NULL, err);
        if (r != -EEXIST)
                return r < 0 ? unavailable(err, r, "create networkpolicy", st->names.policy) : 0;
        r = kube_get(c->client, path, &live, err);
        if (r < 0)
                return unavailable(err, r, "read networkpolicy", st->names.policy);
        rv = meta_string(live, "resourceVersion");
        if (!is_ours(live, &st->names) || !rv || !*rv)
                return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: networkpolicy \"%s\" exists and "
                                         "is not b4's for this thread. Run `b4box check`.",
                                         st->names.policy);
        if (jv_dump(jv_object_get(body, "spec"), JV_SORT_KEYS, &want) < 0 ||
            jv_dump(jv_object_get(live, "spec"), JV_SORT_KEYS, &have) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (strcmp(want, have) == 0)
                return 0;
        if (jv_object_set_new(jv_object_get(body, "metadata"), "resourceVersion",
                              jv_string_new(rv)) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_replace(c->client, path, body, NULL, err);
        return r < 0 ? unavailable(err, r, "replace networkpolicy", st->names.policy) : 0;
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
                r = kube_pod_wait_running(c, st->names.pod, f.rv[0] ? f.rv : NULL, deadline,
                                          c->startup_timeout_ms, cancel_fd, &pod, err);
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

static int acquire_locked(struct kube_core *c,
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
        r = ensure_pvc(c, want, pvc_uid, err);
        if (r >= 0)
                r = ensure_policy(c, want, pvc_uid, err);
        if (r >= 0)
                r = make_live(c, want, start, b4_cancel_fd(req->cancel), err);
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
        r = acquire_locked(c, e, req, image, err);
        if (r < 0)
                return r;
        r = kube_sandbox_new(c, b4_entry_state(e), ret);
        return r < 0 ? b4_error_set(err, r, "acquire of thread \"%s\" failed", req->thread_id) : 0;
}

/* ---- release, destroy ---- */

static void delete_quietly(struct kube_core *c,
                           const char *gv,
                           const char *resource,
                           const char *name,
                           const char *query)
{
        cleanup_free char *path = kube_path(gv, c->namespace, resource, name, NULL);
        struct b4_error e = { 0 };
        int r;

        if (!path)
                return;
        r = kube_delete(c->client, path, query, &e);
        if (r < 0 && r != -ENOENT)
                log_warning("kubernetes: delete %s %s: %s", resource, name, e.msg);
}

/* Core drops the state; like the reference, errors are not the caller's (logged). */
static int release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct kube_core *c = core_of(p);
        struct kube_names n;

        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) >= 0)
                delete_quietly(c, "v1", "pods", n.pod, "gracePeriodSeconds=0");
        return 0;
}

static int destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct kube_core *c = core_of(p);
        struct kube_names n;

        if (kube_names_of(c->scope, b4_entry_thread_id(e), &n) < 0)
                return 0;
        delete_quietly(c, "v1", "pods", n.pod, "gracePeriodSeconds=0");
        delete_quietly(c, "networking.k8s.io/v1", "networkpolicies", n.policy, NULL);
        delete_quietly(c, "v1", "persistentvolumeclaims", n.pvc, NULL);
        return 0;
}

/* ---- images ---- */

/* The reference itself is the identity: the kubelet resolves it (digest-pin images to
 * make it immutable). */
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
        *ret_identity = b4_strdup(ref);
        return *ret_identity ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static int preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        return kube_preflight(core_of(p), ret, err);
}

static int open_reader(struct b4_provider *p,
                       const struct b4_reader_req *req,
                       struct b4_reader **ret,
                       struct b4_error *err)
{
        return kube_reader_open(core_of(p), req, ret, err);
}

static void provider_free(struct b4_provider *p)
{
        struct kube_provider *kp = container_of(p, struct kube_provider, base);

        free(p->scope);
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
        if (b4_provider_init(&kp->base, &kube_provider_ops, cfg->scope) < 0) {
                kube_core_unref(kp->core);
                free(kp);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = &kp->base;
        return 0;
}
