/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Warm pools (docs/kubernetes-provider.md "Warm pools"; design brief §9): ready keeper Pod +
 * fresh PVC pairs for the provider's default launch identity, made ahead by a background
 * filler and adopted by a new thread with two optimistic-lock merge patches.
 *
 *   two informers (PVCs and keeper Pods of the scope) ─ the only view of what exists: the
 *   candidates, a thread's objects found by label, the count the filler keeps up
 *   filler thread ─ its own API client (a token bucket of its own, well below the
 *   interactive one): PVC, Pod, wait for Running, the agent's copy, then the PVC labelled
 *   KUBE_LABEL_POOL (the pair is a candidate from then on)
 *
 * A pair is owned by one replica (KUBE_LABEL_POOL_OWNER): no leader election. Adoption
 * patches the PVC first (the lock: a 409 means another replica took it, the next one is
 * tried), then its Pod. Pairs never return to the pool.
 */

#include "kube/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "core/launch.h"
#include "json/json.h"
#include "kube/kube.h"

#define FILL_QPS         5.0 /* the filler's own bucket: a tenth of the default */
#define FILL_BURST       5u
#define FILL_IDLE_MS     1000u /* the filler looks again at least this often */
#define FILL_BACKOFF_MAX 30000u
#define ADOPT_TRIES      8u /* candidates tried before the cold path */
#define POD_PATCH_TRIES  3u
#define MISSING_GRACE_S  60 /* a ready PVC whose Pod the cache lacks this long: the Pod went */

struct kube_pool {
        struct kube_core *c;               /* a reference */
        struct kube_client *slow;          /* the filler's client */
        struct kube_informer *pvcs, *pods; /* pods: borrowed, c->pods */
        unsigned size;
        char owner[64];
        char key[41];      /* KUBE_LABEL_POOL: 40 hex of the identity */
        char identity[65]; /* the default launch identity the pairs are made for */
        struct b4_policy policy;
        pthread_mutex_t lock; /* claimed, stopping */
        pthread_cond_t wake;
        struct hashmap *claimed; /* PVC names an acquire of this process is adopting */
        bool stopping;
        bool kicked; /* an adoption took a pair: look again now */
        int stop[2];
        pthread_t filler;
        bool started;
};

/* ---- what the caches say ---- */

static const struct jv *meta(const struct jv *o)
{
        return jv_object_get(o, "metadata");
}

static const char *meta_str(const struct jv *o, const char *key)
{
        return jv_string(jv_object_get(meta(o), key));
}

static const char *label(const struct jv *o, const char *key)
{
        return jv_string(jv_object_get(jv_object_get(meta(o), "labels"), key));
}

static const char *annotation(const struct jv *o, const char *key)
{
        return jv_string(jv_object_get(jv_object_get(meta(o), "annotations"), key));
}

static bool streq(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

static bool terminating(const struct jv *o)
{
        return jv_object_get(meta(o), "deletionTimestamp") != NULL;
}

/* Ours, not adopted, not going away: made by this owner, no thread label. */
static bool pool_object(const struct kube_pool *p, const struct jv *o)
{
        return streq(label(o, KUBE_LABEL_POOL_OWNER), p->owner) && !label(o, KUBE_LABEL_THREAD) &&
               !terminating(o);
}

/* A PVC an acquire may adopt: ready (labelled with our key), its Pod cached and running. */
static bool candidate(struct kube_pool *p, const struct jv *pvc)
{
        cleanup_(jv_unrefp) struct jv *pod = NULL;
        const char *pod_name = annotation(pvc, KUBE_ANNOT_POOL_POD);
        char why[KUBE_WHY_MAX];

        if (!pool_object(p, pvc) || !streq(label(pvc, KUBE_LABEL_POOL), p->key) || !pod_name)
                return false;
        pod = kube_informer_get(p->pods, pod_name);
        return pod && pool_object(p, pod) && streq(label(pod, KUBE_LABEL_POOL), p->key) &&
               kube_pod_verdict(pod, 1, why) == KUBE_POD_RUNNING;
}

/* Oldest first (creationTimestamp is RFC 3339 UTC: ordered as text), then by name. */
static int older(const struct jv *a, const struct jv *b)
{
        const char *ta = meta_str(a, "creationTimestamp") ?: "";
        const char *tb = meta_str(b, "creationTimestamp") ?: "";
        int r = strcmp(ta, tb);

        return r ? r : strcmp(meta_str(a, "name") ?: "", meta_str(b, "name") ?: "");
}

int kube_pool_oldest(const struct jv *const *objs, size_t n)
{
        size_t best = 0;

        if (!n)
                return -ENOENT;
        for (size_t i = 1; i < n; i++)
                if (older(objs[i], objs[best]) < 0)
                        best = i;
        return (int)best;
}

/* Seconds since @o's creationTimestamp; -1 when it does not parse. */
static long age_s(const struct jv *o)
{
        const char *ts = meta_str(o, "creationTimestamp");
        struct tm tm = { 0 };
        const char *end;

        if (!ts)
                return -1;
        end = strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!end || *end)
                return -1;
        return (long)(realtime_msec() / 1000 - (int64_t)timegm(&tm));
}

/* ---- construction ---- */

/* The default owner: the host name (a replica's Pod name in Kubernetes), made a label
 * value: other characters become '-', at most 63, alphanumeric at both ends. */
static void default_owner(char ret[64])
{
        char host[256] = "";
        size_t n, a = 0;

        (void)gethostname(host, sizeof(host) - 1);
        for (char *s = host; *s; s++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                            *s))
                        *s = '-';
        n = strlen(host);
        while (a < n && strchr("._-", host[a]))
                a++;
        if (n - a > 63)
                n = a + 63;
        while (n > a && strchr("._-", host[n - 1]))
                n--;
        if (n == a) {
                (void)snprintf(ret, 64, "b4box");
                return;
        }
        (void)snprintf(ret, 64, "%.*s", (int)(n - a), host + a);
}

static int slow_client(struct kube_pool *p, struct b4_error *err)
{
        struct kube_config cfg = *kube_client_config(p->c->client);

        cfg.qps = FILL_QPS;
        cfg.burst = FILL_BURST;
        return kube_client_new(&cfg, &p->slow, err);
}

/* The PVC informer; the keeper Pods' is the provider's (c->pods), shared. */
static int start_informers(struct kube_pool *p, struct b4_error *err)
{
        cleanup_free char *pvcs =
                kube_path("v1", p->c->namespace, "persistentvolumeclaims", NULL, NULL);
        cleanup_free char *sel = NULL;
        struct kube_names n;
        uint64_t deadline = now_msec() + p->c->startup_timeout_ms;
        int r;

        if (!p->c->pods)
                return b4_error_set(err, -EINVAL, "kubernetes warm pool: no pod informer");
        p->pods = p->c->pods;
        r = kube_names_of(p->c->scope, "pool", &n);
        if (r < 0)
                return b4_error_set(err, r, "invalid scope");
        if (!pvcs ||
            b4_asprintf(&sel, KUBE_LABEL_MANAGED_BY "=" KUBE_MANAGED_BY "," KUBE_LABEL_SCOPE "=%s",
                        n.scope) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_informer_new(p->c->client, pvcs, sel, NULL, NULL, &p->pvcs, err);
        if (r >= 0)
                r = kube_informer_wait_synced(p->pvcs, deadline, err);
        return r < 0 ? b4_error_wrap(err, r, "kubernetes warm pool: listing the scope's objects")
                     : 0;
}

static void *filler_main(void *arg);

int kube_pool_new(struct kube_core *c,
                  const struct b4_provider_config *cfg,
                  struct kube_pool **ret,
                  struct b4_error *err)
{
        struct kube_pool *p = b4_calloc(1, sizeof(*p));
        int r;

        if (!p)
                return b4_error_set(err, -ENOMEM, "out of memory");
        kube_core_ref(c);
        p->c = c;
        p->stop[0] = p->stop[1] = -EBADF;
        p->size = cfg->kube_pool_size;
        b4_policy_init(&p->policy);
        (void)pthread_mutex_init(&p->lock, NULL);
        (void)pthread_cond_init(&p->wake, NULL);
        if (cfg->kube_pool_owner)
                (void)snprintf(p->owner, sizeof(p->owner), "%s", cfg->kube_pool_owner);
        else
                default_owner(p->owner);
        r = cfg->kube_pool_policy ? b4_policy_copy(&p->policy, cfg->kube_pool_policy) : 0;
        if (r >= 0)
                r = launch_identity(c->image, &p->policy, p->identity);
        if (r >= 0 && !(p->claimed = hashmap_new()))
                r = -ENOMEM;
        if (r >= 0 && pipe2(p->stop, O_CLOEXEC | O_NONBLOCK) < 0)
                r = -errno;
        if (r < 0) {
                kube_pool_free(p, false);
                return b4_error_set(err, r, "kubernetes warm pool: %s", strerror(-r));
        }
        (void)snprintf(p->key, sizeof(p->key), "%.40s", p->identity);
        r = slow_client(p, err);
        if (r >= 0)
                r = start_informers(p, err);
        if (r >= 0 && p->size && cfg->kube_pool_fill) {
                r = -pthread_create(&p->filler, NULL, filler_main, p);
                p->started = r == 0;
                if (r < 0)
                        (void)b4_error_set(err, r, "kubernetes warm pool: no filler thread");
        }
        if (r < 0) {
                kube_pool_free(p, false);
                return r;
        }
        *ret = p;
        return 0;
}

const char *kube_pool_owner(const struct kube_pool *p)
{
        return p->owner;
}

bool kube_pool_serves(const struct kube_pool *p, const struct kube_state *st)
{
        return p->size && strcmp(st->identity, p->identity) == 0;
}

void kube_pool_wake(struct kube_pool *p)
{
        (void)pthread_mutex_lock(&p->lock);
        p->kicked = true;
        (void)pthread_cond_broadcast(&p->wake);
        (void)pthread_mutex_unlock(&p->lock);
}

/* ---- deleting ---- */

static void delete_object(struct kube_client *kc,
                          const char *ns,
                          const char *resource,
                          const char *name)
{
        cleanup_free char *path = kube_path("v1", ns, resource, name, NULL);
        struct b4_error e = { 0 };
        int r;

        if (!path)
                return;
        r = kube_delete(kc, path, strcmp(resource, "pods") == 0 ? "gracePeriodSeconds=0" : NULL,
                        &e);
        if (r < 0 && r != -ENOENT)
                log_warning("kubernetes warm pool: delete %s %s: %s", resource, name, e.msg);
}

/* A pair: its Pod first (the volume is then free), then the PVC; with the filler's client
 * (its own bucket). */
static void delete_pair(struct kube_pool *p, const char *pod, const char *pvc)
{
        if (pod)
                delete_object(p->slow, p->c->namespace, "pods", pod);
        if (pvc)
                delete_object(p->slow, p->c->namespace, "persistentvolumeclaims", pvc);
}

/* @obj as cached, only if it is still the pool's: the cache may lag an adoption by another
 * replica (then it is a thread's, and kept) or a harmless update (a 409 re-reads it). */
static void delete_cached(struct kube_pool *p, const char *resource, const struct jv *obj)
{
        const char *name = meta_str(obj, "name");
        const char *q = strcmp(resource, "pods") == 0 ? "gracePeriodSeconds=0" : NULL;
        cleanup_free char *path = kube_path("v1", p->c->namespace, resource, name, NULL);
        struct b4_error e = { 0 };
        int r;

        if (!path)
                return;
        r = kube_delete_listed(p->c->client, path, q, obj, &e);
        if (r == -EAGAIN) { /* changed since it was cached: deleted if still the pool's */
                cleanup_(jv_unrefp) struct jv *now = NULL;

                r = kube_get(p->c->client, path, &now, &e);
                if (r >= 0 && pool_object(p, now))
                        r = kube_delete_listed(p->c->client, path, q, now, &e);
        }
        if (r < 0 && r != -ENOENT && r != -EAGAIN)
                log_warning("kubernetes warm pool: delete %s %s: %s", resource, name, e.msg);
}

/* Every pair of this owner still in the pool (free and shutdown: the pool is not kept), with
 * the interactive client (not to take 2N/5 seconds). */
static void delete_own_pairs(struct kube_pool *p)
{
        cleanup_(jv_unrefp) struct jv *pvcs = NULL, *pods = NULL;

        if (!p->pvcs || !p->pods || kube_informer_snapshot(p->pvcs, &pvcs) < 0 ||
            kube_informer_snapshot(p->pods, &pods) < 0)
                return;
        for (size_t i = 0; i < jv_array_size(pods); i++)
                if (pool_object(p, jv_array_get(pods, i)))
                        delete_cached(p, "pods", jv_array_get(pods, i));
        for (size_t i = 0; i < jv_array_size(pvcs); i++)
                if (pool_object(p, jv_array_get(pvcs, i)))
                        delete_cached(p, "persistentvolumeclaims", jv_array_get(pvcs, i));
}

void kube_pool_free(struct kube_pool *p, bool delete_pairs)
{
        if (!p)
                return;
        (void)pthread_mutex_lock(&p->lock);
        p->stopping = true;
        (void)pthread_cond_broadcast(&p->wake);
        (void)pthread_mutex_unlock(&p->lock);
        if (p->stop[1] >= 0)
                (void)!write(p->stop[1], "x", 1);
        if (p->started)
                (void)pthread_join(p->filler, NULL);
        if (delete_pairs && p->started && p->slow)
                delete_own_pairs(p); /* only a process that filled the pool empties it */
        kube_informer_free(p->pvcs); /* p->pods is the provider's */
        kube_client_free(p->slow);
        hashmap_free(p->claimed);
        safe_close(p->stop[0]);
        safe_close(p->stop[1]);
        b4_policy_clear(&p->policy);
        (void)pthread_cond_destroy(&p->wake);
        (void)pthread_mutex_destroy(&p->lock);
        kube_core_unref(p->c);
        free(p);
}

/* ---- the filler ---- */

static bool own_user_namespace(const struct jv *pod)
{
        const struct jv *v = jv_object_get(jv_object_get(pod, "spec"), "hostUsers");

        return jv_is_bool(v) && !jv_is_true(v);
}

/* The pair's objects: the keeper's and the claim's bodies, made a pool pair's. */
static int pair_bodies(struct kube_pool *p,
                       const struct kube_names *n,
                       struct jv **ret_pvc,
                       struct jv **ret_pod)
{
        struct kube_pod_spec spec = { .names = n,
                                      .namespace = p->c->namespace,
                                      .image = p->c->image,
                                      .identity = p->identity,
                                      .policy = &p->policy,
                                      .user_namespace = p->c->user_namespace };
        int r;

        r = kube_workspace_pvc(n, p->c->namespace, p->policy.resources.disk_gb, p->c->storage_class,
                               ret_pvc);
        if (r >= 0)
                r = kube_pool_mark(*ret_pvc, NULL, p->owner, n->pod);
        if (r >= 0)
                r = kube_keeper_pod(&spec, ret_pod);
        if (r >= 0)
                r = kube_pool_mark(*ret_pod, p->key, p->owner, NULL);
        return r;
}

/* Running, the agent copied in, then the PVC labelled ready (a candidate from then on). */
static int ready_pair(struct kube_pool *p,
                      const struct kube_names *n,
                      const struct jv *made,
                      struct b4_error *err)
{
        cleanup_free char *path =
                kube_path("v1", p->c->namespace, "persistentvolumeclaims", n->pvc, NULL);
        cleanup_(jv_unrefp) struct jv *patch = NULL;
        struct kube_agent *a = NULL;
        uint64_t t = p->c->startup_timeout_ms;
        int r;

        r = kube_keeper_wait_running(p->c, n->pod, meta_str(made, "uid"),
                                     meta_str(made, "resourceVersion"), now_msec() + t, t,
                                     p->stop[0], NULL, err);
        if (r < 0)
                return r;
        if (p->c->agent_bin) {
                r = kube_agent_new(p->c, n->pod, false, &a);
                if (r >= 0)
                        r = kube_agent_install(a, err);
                kube_agent_free(a);
                if (r < 0)
                        return r;
        }
        patch = jv_pack("{s:{s:{s:s}}}", "metadata", "labels", KUBE_LABEL_POOL, p->key);
        if (!path || !patch)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return kube_patch(p->slow, path, patch, NULL, err);
}

/* One new pair. On any failure what was made is deleted. */
static int make_pair(struct kube_pool *p, char ret_pvc[64], struct b4_error *err)
{
        cleanup_free char *pvcs =
                kube_path("v1", p->c->namespace, "persistentvolumeclaims", NULL, NULL);
        cleanup_free char *pods = kube_path("v1", p->c->namespace, "pods", NULL, NULL);
        cleanup_(jv_unrefp) struct jv *pvc = NULL, *pod = NULL, *made = NULL;
        struct kube_names n;
        char suffix[17];
        uint64_t rnd = 0;
        int r;

        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = now_usec() ^ (uint64_t)(uintptr_t)p;
        (void)snprintf(suffix, sizeof(suffix), "%016llx", (unsigned long long)rnd);
        r = kube_pool_names(p->c->scope, suffix, &n);
        if (r >= 0 && (!pvcs || !pods))
                r = -ENOMEM;
        if (r >= 0)
                r = pair_bodies(p, &n, &pvc, &pod);
        if (r < 0)
                return b4_error_set(err, r, "kubernetes warm pool: the pair's objects");
        r = kube_create(p->slow, pvcs, pvc, NULL, err);
        if (r < 0)
                return r;
        r = kube_create(p->slow, pods, pod, &made, err);
        if (r < 0) {
                delete_pair(p, NULL, n.pvc);
                return r;
        }
        if (r >= 0 && p->c->user_namespace && !own_user_namespace(made))
                r = b4_error_set(err, -EOPNOTSUPP,
                                 "the API server dropped hostUsers: false from pod \"%s\"", n.pod);
        if (r >= 0)
                r = ready_pair(p, &n, made, err);
        if (r < 0)
                delete_pair(p, n.pod, n.pvc);
        (void)snprintf(ret_pvc, 64, "%s", n.pvc);
        return r;
}

/*
 * The pool's books from the caches: ready pairs of our key counted; pairs of ours that can
 * never be adopted deleted (made for another identity, i.e. an older configuration; a
 * ready PVC whose Pod failed or went: pairs never return, they are made anew).
 */
static unsigned tidy_and_count(struct kube_pool *p)
{
        cleanup_(jv_unrefp) struct jv *pvcs = NULL;
        unsigned ready = 0;

        if (kube_informer_snapshot(p->pvcs, &pvcs) < 0)
                return p->size;
        for (size_t i = 0; i < jv_array_size(pvcs); i++) {
                const struct jv *pvc = jv_array_get(pvcs, i);
                const char *pool = label(pvc, KUBE_LABEL_POOL);
                cleanup_(jv_unrefp) struct jv *pod = NULL;

                if (!pool_object(p, pvc) || !pool)
                        continue; /* not ours, adopted, or still being made */
                if (candidate(p, pvc)) {
                        ready++;
                        continue;
                }
                pod = kube_informer_get(p->pods, annotation(pvc, KUBE_ANNOT_POOL_POD) ?: "");
                /* the two caches are not in step: a Pod missing is gone only after a while */
                if (strcmp(pool, p->key) != 0 || (!pod && age_s(pvc) > MISSING_GRACE_S) ||
                    (pod && terminating(pod)) ||
                    (pod && kube_pod_verdict(pod, 2, (char[KUBE_WHY_MAX]){ 0 }) == KUBE_POD_FAILED))
                        delete_pair(p, annotation(pvc, KUBE_ANNOT_POOL_POD), meta_str(pvc, "name"));
        }
        return ready;
}

static int labelled_ready(const struct jv *pvc, void *userdata, struct b4_error *err)
{
        (void)err;
        return pvc && streq(label(pvc, KUBE_LABEL_POOL), userdata);
}

/* Until the informer shows @pvc labelled ready (the count would miss it otherwise). */
static void wait_cached(struct kube_pool *p, const char *pvc)
{
        (void)kube_informer_wait(p->pvcs, pvc, labelled_ready, p->key, now_msec() + 5000,
                                 p->stop[0], NULL, NULL);
}

static void *filler_main(void *arg)
{
        struct kube_pool *p = arg;
        uint64_t backoff = 0, wait_until;
        bool stop = false;

        while (!stop) {
                struct b4_error err = { 0 };
                unsigned ready = tidy_and_count(p);

                char pvc[64] = "";

                if (ready < p->size) {
                        if (make_pair(p, pvc, &err) >= 0) {
                                backoff = 0;
                                wait_cached(p, pvc);
                        } else {
                                log_warning("kubernetes warm pool: a pair could not be made: %s",
                                            err.msg);
                                backoff = backoff ? backoff * 2 : 1000;
                                if (backoff > FILL_BACKOFF_MAX)
                                        backoff = FILL_BACKOFF_MAX;
                        }
                }
                wait_until = now_msec() + (backoff ? backoff : ready < p->size ? 0 : FILL_IDLE_MS);
                (void)pthread_mutex_lock(&p->lock);
                while (!p->stopping && !p->kicked && now_msec() < wait_until)
                        if (cond_wait_until_ms(&p->wake, &p->lock, wait_until) < 0)
                                break;
                p->kicked = false;
                stop = p->stopping;
                (void)pthread_mutex_unlock(&p->lock);
        }
        return NULL;
}

/* ---- adoption ---- */

static bool claim(struct kube_pool *p, const char *pvc)
{
        bool ok;

        (void)pthread_mutex_lock(&p->lock);
        ok = !hashmap_get(p->claimed, pvc) && hashmap_put(p->claimed, pvc, p) >= 0;
        (void)pthread_mutex_unlock(&p->lock);
        return ok;
}

static void unclaim(struct kube_pool *p, const char *pvc)
{
        (void)pthread_mutex_lock(&p->lock);
        (void)hashmap_remove(p->claimed, pvc);
        (void)pthread_mutex_unlock(&p->lock);
}

static int by_age(const void *a, const void *b)
{
        return older(*(const struct jv *const *)a, *(const struct jv *const *)b);
}

/* The candidates now, oldest first (borrowed from @pvcs); claimed ones left out. Claims
 * the caches show taken are forgotten. */
static size_t candidates(struct kube_pool *p,
                         const struct jv *pvcs,
                         const struct jv **ret,
                         size_t max)
{
        size_t n = 0;

        for (size_t i = 0; i < jv_array_size(pvcs); i++) {
                const struct jv *pvc = jv_array_get(pvcs, i);
                const char *name = meta_str(pvc, "name");
                bool taken;

                if (!name)
                        continue;
                (void)pthread_mutex_lock(&p->lock);
                taken = hashmap_get(p->claimed, name) != NULL;
                (void)pthread_mutex_unlock(&p->lock);
                if (!candidate(p, pvc)) {
                        if (taken && !pool_object(p, pvc))
                                unclaim(p, name);
                        continue;
                }
                if (!taken && n < max)
                        ret[n++] = pvc;
        }
        qsort_safe(ret, n, sizeof(*ret), by_age);
        return n;
}

/* The adoption patch on @resource @name at @rv. -EAGAIN: changed meanwhile (409). */
static int patch_adopt(struct kube_pool *p,
                       const char *resource,
                       const char *name,
                       const char *rv,
                       const char *id,
                       struct jv **ret,
                       struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", p->c->namespace, resource, name, NULL);
        cleanup_(jv_unrefp) struct jv *patch = NULL;

        if (!path || kube_pool_adopt_patch(rv ?: "", id, &patch) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return kube_patch(p->c->client, path, patch, ret, err);
}

/*
 * The Pod of a PVC just adopted: patched at the cached version; a 409 (a status update
 * meanwhile) reads it and tries again while it is still the pool's. Return: 1 adopted
 * (*ret_pod the patched Pod), 0 gone or not the pool's any more (the keeper is then made
 * anew on the adopted PVC), < 0 an error.
 */
static int adopt_pod(struct kube_pool *p,
                     const char *name,
                     const char *id,
                     struct jv **ret_pod,
                     struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pod = kube_informer_get(p->pods, name);
        cleanup_free char *path = kube_path("v1", p->c->namespace, "pods", name, NULL);
        int r = -EAGAIN;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (unsigned i = 0; i < POD_PATCH_TRIES && pod; i++) {
                if (label(pod, KUBE_LABEL_THREAD) || !label(pod, KUBE_LABEL_POOL) ||
                    terminating(pod))
                        return 0;
                r = patch_adopt(p, "pods", name, meta_str(pod, "resourceVersion"), id, ret_pod,
                                err);
                if (r != -EAGAIN)
                        break;
                jv_unrefp(&pod);
                if (kube_get(p->c->client, path, &pod, err) < 0)
                        pod = NULL;
        }
        if (r == -ENOENT || !pod)
                return 0;
        return r < 0 ? r : 1;
}

static void use_pair(struct kube_core *c,
                     struct kube_state *st,
                     const char *pvc,
                     const char *pod,
                     const struct jv *live_pod)
{
        char why[KUBE_WHY_MAX];

        (void)snprintf(st->names.pvc, sizeof(st->names.pvc), "%s", pvc);
        if (pod && strcmp(pod, st->names.pod) != 0) {
                (void)snprintf(st->names.pod, sizeof(st->names.pod), "%s", pod);
                if (st->agent) {
                        st->agent = kube_agent_free(st->agent);
                        (void)kube_agent_new(c, st->names.pod, false, &st->agent);
                }
        }
        /* running, and the filler copied the agent into it: nothing left to do */
        if (live_pod && kube_pod_verdict(live_pod, 1, why) == KUBE_POD_RUNNING)
                (void)snprintf(st->pod_uid, sizeof(st->pod_uid), "%s",
                               meta_str(live_pod, "uid") ?: "");
}

int kube_pool_adopt(struct kube_pool *p,
                    struct kube_state *st,
                    char ret_pvc_uid[64],
                    struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pvcs = NULL;
        const struct jv *cand[ADOPT_TRIES];
        size_t n;
        int r;

        ret_pvc_uid[0] = '\0';
        if (!kube_pool_serves(p, st))
                return 0;
        if (kube_informer_snapshot(p->pvcs, &pvcs) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        n = candidates(p, pvcs, cand, ELEMENTSOF(cand));
        for (size_t i = 0; i < n; i++) {
                const char *pvc = meta_str(cand[i], "name");
                const char *pod = annotation(cand[i], KUBE_ANNOT_POOL_POD);
                cleanup_(jv_unrefp) struct jv *live = NULL;
                struct b4_error e = { 0 };

                if (!claim(p, pvc))
                        continue;
                /* the lock: the PVC at the version listed; 409 = another replica took it */
                r = patch_adopt(p, "persistentvolumeclaims", pvc,
                                meta_str(cand[i], "resourceVersion"), st->names.id, NULL, &e);
                if (r == -EAGAIN || r == -ENOENT) {
                        unclaim(p, pvc);
                        continue;
                }
                if (r < 0) {
                        unclaim(p, pvc);
                        log_warning("kubernetes warm pool: adopting %s: %s; the cold path "
                                    "instead",
                                    pvc, e.msg);
                        return 0;
                }
                kube_pool_wake(p);
                r = adopt_pod(p, pod, st->names.id, &live, err);
                if (r < 0)
                        return r;
                use_pair(p->c, st, pvc, pod, r > 0 ? live : NULL);
                (void)snprintf(ret_pvc_uid, 64, "%s", meta_str(cand[i], "uid") ?: "");
                return 1;
        }
        return 0;
}

/* ---- a thread's objects by label ---- */

/* A PVC no thread ever used: it came from the pool and its first Pod is still the only
 * one that mounted it (no other Pod of the scope names it). */
static bool never_attached(struct kube_pool *p, const struct jv *pvc, const struct jv *pods)
{
        const char *first = annotation(pvc, KUBE_ANNOT_POOL_POD), *name = meta_str(pvc, "name");

        if (!first || !name)
                return false;
        for (size_t i = 0; i < jv_array_size(pods); i++) {
                const struct jv *pod = jv_array_get(pods, i);
                const struct jv *vols = jv_object_get(jv_object_get(pod, "spec"), "volumes");

                for (size_t k = 0; k < jv_array_size(vols); k++) {
                        const char *claim_name = jv_string(jv_object_get(
                                jv_object_get(jv_array_get(vols, k), "persistentVolumeClaim"),
                                "claimName"));

                        if (streq(claim_name, name) && !streq(meta_str(pod, "name"), first))
                                return false;
                }
        }
        (void)p;
        return true;
}

static bool labelled(const struct jv *o, const char *id)
{
        return streq(label(o, KUBE_LABEL_THREAD), id) && !terminating(o);
}

/* The keeper Pod of the scope labelled @id, mounting @pvc, or NULL (borrowed). */
static const struct jv *pod_of(const struct jv *pods, const char *id, const char *pvc)
{
        for (size_t i = 0; i < jv_array_size(pods); i++) {
                const struct jv *pod = jv_array_get(pods, i);
                const struct jv *vols = jv_object_get(jv_object_get(pod, "spec"), "volumes");

                if (!labelled(pod, id))
                        continue;
                for (size_t k = 0; k < jv_array_size(vols); k++)
                        if (streq(jv_string(jv_object_get(jv_object_get(jv_array_get(vols, k),
                                                                        "persistentVolumeClaim"),
                                                          "claimName")),
                                  pvc))
                                return pod;
        }
        return NULL;
}

/* Several PVCs carry the thread's label: the oldest wins; the others are deleted when no
 * thread ever used them, refused (conflict) otherwise. Return: 0, -EEXIST. */
static int resolve_duplicates(struct kube_pool *p,
                              const struct jv *const *mine,
                              size_t n,
                              size_t winner,
                              const struct jv *pods,
                              const char *id,
                              struct b4_error *err)
{
        for (size_t i = 0; i < n; i++) {
                const char *name = meta_str(mine[i], "name");

                if (i == winner)
                        continue;
                if (!never_attached(p, mine[i], pods)) {
                        log_warning("kubernetes: thread %s has two workspaces in use, %s and %s; "
                                    "refusing it",
                                    id, meta_str(mine[winner], "name"), name);
                        return b4_error_set_code(
                                err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                "Sandbox unavailable: thread %s has two workspace claims in use "
                                "(%s, the oldest, and %s): delete the one to drop. Run `b4box "
                                "check`.",
                                id, meta_str(mine[winner], "name"), name);
                }
                log_warning("kubernetes: thread %s: deleting %s, a never used duplicate of %s", id,
                            name, meta_str(mine[winner], "name"));
                delete_pair(p, annotation(mine[i], KUBE_ANNOT_POOL_POD), name);
        }
        return 0;
}

#define DUPLICATES_MAX 16u

int kube_pool_find(struct kube_pool *p, struct kube_state *st, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pvcs = NULL, *pods = NULL, *live = NULL;
        const struct jv *mine[DUPLICATES_MAX];
        const struct jv *pod;
        const char *first;
        size_t n = 0;
        int w, r;

        if (kube_informer_snapshot(p->pvcs, &pvcs) < 0 ||
            kube_informer_snapshot(p->pods, &pods) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < jv_array_size(pvcs) && n < DUPLICATES_MAX; i++)
                if (labelled(jv_array_get(pvcs, i), st->names.id))
                        mine[n++] = jv_array_get(pvcs, i);
        w = kube_pool_oldest(mine, n);
        if (w < 0)
                return 0;
        r = resolve_duplicates(p, mine, n, (size_t)w, pods, st->names.id, err);
        if (r < 0)
                return r;
        pod = pod_of(pods, st->names.id, meta_str(mine[w], "name"));
        first = annotation(mine[w], KUBE_ANNOT_POOL_POD);
        if (!pod && first) {
                /* a crash between the two patches: the PVC adopted, its Pod not yet */
                r = adopt_pod(p, first, st->names.id, &live, err);
                if (r < 0)
                        return r;
                use_pair(p->c, st, meta_str(mine[w], "name"), first, NULL);
                return 1;
        }
        use_pair(p->c, st, meta_str(mine[w], "name"), pod ? meta_str(pod, "name") : NULL, NULL);
        return 1;
}

char **kube_pool_labelled(struct kube_pool *p, bool pods, const char *id)
{
        cleanup_(jv_unrefp) struct jv *items = NULL;
        char **names = NULL;

        if (kube_informer_snapshot(pods ? p->pods : p->pvcs, &items) < 0)
                return NULL;
        for (size_t i = 0; i < jv_array_size(items); i++)
                if (streq(label(jv_array_get(items, i), KUBE_LABEL_THREAD), id) &&
                    strv_extend(&names, meta_str(jv_array_get(items, i), "name")) < 0)
                        return strv_free(names);
        return names;
}

static int shows_thread(const struct jv *pvc, void *userdata, struct b4_error *err)
{
        (void)err;
        return !pvc || streq(label(pvc, KUBE_LABEL_THREAD), userdata);
}

static int shows_deleted(const struct jv *pvc, void *userdata, struct b4_error *err)
{
        (void)userdata;
        (void)err;
        return !pvc || terminating(pvc);
}

void kube_pool_settle_deleted(struct kube_pool *p, const char *pvc)
{
        (void)kube_informer_wait(p->pvcs, pvc, shows_deleted, NULL, now_msec() + 2000, -EBADF, NULL,
                                 NULL);
}

void kube_pool_settle(struct kube_pool *p, const struct kube_state *st)
{
        (void)kube_informer_wait(p->pvcs, st->names.pvc, shows_thread, (void *)st->names.id,
                                 now_msec() + 2000, -EBADF, NULL, NULL);
}
