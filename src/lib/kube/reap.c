/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box kube reap` (docs/kubernetes.md, "The PVC reaper"; the seed's mark / clear / delete):
 * one run lists the namespace's Pods and b4's PVCs; a PVC some Pod mounts is referenced.
 * Referenced and marked: the marker is cleared. Unreferenced without a valid marker: marked
 * with this run's time. Unreferenced and marked more than the TTL ago: deleted, with the uid
 * and resourceVersion it was listed with as preconditions. Patches carry the listed
 * resourceVersion; a PVC that changed (409) or went (404) is left for the next run. PVCs
 * being deleted, or holding a managed workspace record, are never touched.
 *
 * Warm pool pairs (pool.c) are mounted by their Pod, so never unreferenced: a pair never
 * adopted and older than the TTL is taken for its owner's (a replica that died without
 * deleting its pool) and deleted, its Pod first, then its PVC, each with the listed uid and
 * resourceVersion as preconditions. A live owner's filler makes a new pair in its place.
 */

#include "kube/reap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b4box/kube.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "json/json.h"
#include "kube/kube.h"
#include "kube/objects.h"

#define FUTURE_SLACK_S 300 /* a marker further in the future is not valid */

static const struct jv *meta(const struct jv *o)
{
        return jv_object_get(o, "metadata");
}

static const char *annotation(const struct jv *o, const char *key)
{
        return jv_string(jv_object_get(jv_object_get(meta(o), "annotations"), key));
}

/* RFC 3339 UTC as this module writes it ("2026-12-01T16:30:00Z"); -1 when it is not. */
static time_t parse_marker(const char *s)
{
        struct tm tm = { 0 };
        const char *end;

        if (!s)
                return -1;
        end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!end || *end)
                return -1;
        return timegm(&tm);
}

enum kube_reap_action kube_reap_decide(const struct jv *pvc,
                                       bool referenced,
                                       time_t now,
                                       unsigned ttl_hours)
{
        time_t since;

        if (jv_object_get(meta(pvc), "deletionTimestamp") ||
            annotation(pvc, KUBE_ANNOT_WORKSPACE_RECORD))
                return KUBE_REAP_NONE;
        since = parse_marker(annotation(pvc, KUBE_ANNOT_UNREFERENCED));
        if (referenced)
                return annotation(pvc, KUBE_ANNOT_UNREFERENCED) ? KUBE_REAP_CLEAR : KUBE_REAP_NONE;
        if (since < 0 || since > now + FUTURE_SLACK_S)
                return KUBE_REAP_MARK;
        return now - since > (time_t)ttl_hours * 3600 ? KUBE_REAP_DELETE : KUBE_REAP_NONE;
}

bool kube_reap_pool_expired(const struct jv *obj, time_t now, unsigned ttl_hours)
{
        const struct jv *lbls = jv_object_get(meta(obj), "labels");
        time_t made;

        if (!jv_string(jv_object_get(lbls, KUBE_LABEL_POOL_OWNER)) ||
            jv_object_get(lbls, KUBE_LABEL_THREAD) || jv_object_get(meta(obj), "deletionTimestamp"))
                return false;
        made = parse_marker(jv_string(jv_object_get(meta(obj), "creationTimestamp")));
        return made >= 0 && now - made > (time_t)ttl_hours * 3600;
}

/* The claims some Pod mounts, whatever its phase. */
static int referenced_claims(const struct jv *pods, char ***ret)
{
        char **l = NULL;

        for (size_t i = 0; i < jv_array_size(pods); i++) {
                const struct jv *vols =
                        jv_object_get(jv_object_get(jv_array_get(pods, i), "spec"), "volumes");

                for (size_t k = 0; k < jv_array_size(vols); k++) {
                        const char *claim = jv_string(jv_object_get(
                                jv_object_get(jv_array_get(vols, k), "persistentVolumeClaim"),
                                "claimName"));

                        if (claim && strv_extend(&l, claim) < 0) {
                                strv_free(l);
                                return -ENOMEM;
                        }
                }
        }
        *ret = l;
        return 0;
}

struct run {
        struct kube_client *c;
        const char *ns;
        bool dry_run;
        b4_kube_reap_line_fn *fn;
        void *userdata;
        unsigned counts[4]; /* by action */
        unsigned skipped;
        unsigned pool; /* pool objects deleted */
};

static void say(struct run *r, const char *what, const char *name, const char *why)
{
        char line[512];

        (void)snprintf(line, sizeof(line), "%s%s %s%s%s", r->dry_run ? "would " : "", what, name,
                       why ? ": " : "", why ? why : "");
        if (r->fn)
                r->fn(line, r->userdata);
}

/* The marker set to @stamp (NULL: removed), with the listed resourceVersion. */
static int patch_marker(struct run *r,
                        const struct jv *pvc,
                        const char *stamp,
                        struct b4_error *err)
{
        const char *name = jv_string(jv_object_get(meta(pvc), "name"));
        const char *rv = jv_string(jv_object_get(meta(pvc), "resourceVersion"));
        cleanup_free char *path = kube_path("v1", r->ns, "persistentvolumeclaims", name, NULL);
        cleanup_(jv_unrefp) struct jv *patch = NULL;

        patch = jv_pack("{s:{s:s, s:{s:o}}}", "metadata", "resourceVersion", rv ? rv : "",
                        "annotations", KUBE_ANNOT_UNREFERENCED,
                        stamp ? jv_string_new(stamp) : jv_null_new());
        if (!path || !patch)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return kube_patch(r->c, path, patch, NULL, err);
}

static int delete_object(struct run *r,
                         const char *resource,
                         const struct jv *pvc,
                         struct b4_error *err)
{
        const char *name = jv_string(jv_object_get(meta(pvc), "name"));
        cleanup_free char *path = kube_path("v1", r->ns, resource, name, NULL);

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return kube_delete_listed(r->c, path, NULL, pvc, err);
}

/* One PVC's action. 409 and 404 are skipped (the next run sees it again). */
static int act(struct run *r,
               const struct jv *pvc,
               enum kube_reap_action a,
               const char *stamp,
               struct b4_error *err)
{
        static const char *const words[] = { "", "mark", "clear", "delete" };
        const char *name = jv_string(jv_object_get(meta(pvc), "name"));
        struct b4_error e = { 0 };
        int res = 0;

        if (a == KUBE_REAP_NONE || !name)
                return 0;
        if (!r->dry_run)
                res = a == KUBE_REAP_DELETE
                              ? delete_object(r, "persistentvolumeclaims", pvc, &e)
                              : patch_marker(r, pvc, a == KUBE_REAP_MARK ? stamp : NULL, &e);
        if (res == -EAGAIN || res == -ENOENT || res == -EEXIST) {
                r->skipped++;
                say(r, "skip", name, e.msg);
                return 0;
        }
        if (res < 0)
                return b4_error_set(err, res, "%s %s: %s", words[a], name, e.msg);
        r->counts[a]++;
        say(r, words[a], name, NULL);
        return 0;
}

/* Expired pool Pods first (their volumes are then free), then expired pool PVCs. */
static int reap_pool(struct run *r,
                     const struct jv *pods,
                     const struct jv *pvcs,
                     time_t now,
                     unsigned ttl_hours,
                     struct b4_error *err)
{
        const struct jv *lists[] = { pods, pvcs };
        static const char *const resources[] = { "pods", "persistentvolumeclaims" };

        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                for (size_t i = 0; i < jv_array_size(lists[l]); i++) {
                        const struct jv *o = jv_array_get(lists[l], i);
                        const char *name = jv_string(jv_object_get(meta(o), "name"));
                        struct b4_error e = { 0 };
                        int res = 0;

                        if (!name || !kube_reap_pool_expired(o, now, ttl_hours))
                                continue;
                        if (!r->dry_run)
                                res = delete_object(r, resources[l], o, &e);
                        if (res == -EAGAIN || res == -ENOENT || res == -EEXIST) {
                                r->skipped++;
                                say(r, "skip", name, e.msg);
                                continue;
                        }
                        if (res < 0)
                                return b4_error_set(err, res, "delete %s %s: %s", resources[l],
                                                    name, e.msg);
                        r->pool++;
                        say(r, l ? "delete pool pvc" : "delete pool pod", name, NULL);
                }
        return 0;
}

int kube_reap_run(struct kube_client *c,
                  const char *ns,
                  unsigned ttl_hours,
                  bool dry_run,
                  time_t now,
                  b4_kube_reap_line_fn *fn,
                  void *userdata,
                  struct b4_error *err)
{
        cleanup_free char *pods_path = kube_path("v1", ns, "pods", NULL, NULL);
        cleanup_free char *pvcs_path = kube_path("v1", ns, "persistentvolumeclaims", NULL, NULL);
        cleanup_(jv_unrefp) struct jv *pods = NULL, *pvcs = NULL;
        struct run r = { .c = c, .ns = ns, .dry_run = dry_run, .fn = fn, .userdata = userdata };
        char **refs = NULL, stamp[32], line[256];
        struct tm tm;
        int res;

        if (!pods_path || !pvcs_path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        res = kube_list(c, pods_path, NULL, NULL, &pods, NULL, err);
        if (res >= 0)
                res = kube_list(c, pvcs_path, KUBE_LABEL_MANAGED_BY "=" KUBE_MANAGED_BY, NULL,
                                &pvcs, NULL, err);
        if (res < 0)
                return b4_error_wrap(err, res, "listing namespace \"%s\"", ns);
        if (referenced_claims(pods, &refs) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        (void)gmtime_r(&now, &tm);
        (void)strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
        res = reap_pool(&r, pods, pvcs, now, ttl_hours, err);
        for (size_t i = 0; res >= 0 && i < jv_array_size(pvcs); i++) {
                const struct jv *pvc = jv_array_get(pvcs, i);
                const char *name = jv_string(jv_object_get(meta(pvc), "name"));
                bool referenced = name && strv_contains(refs, name);

                if (kube_reap_pool_expired(pvc, now, ttl_hours))
                        continue; /* deleted above */
                res = act(&r, pvc, kube_reap_decide(pvc, referenced, now, ttl_hours), stamp, err);
        }
        strv_free(refs);
        if (res < 0)
                return res;
        (void)snprintf(line, sizeof(line),
                       "%s%zu PVCs in \"%s\": %u marked, %u cleared, %u deleted, %u skipped",
                       dry_run ? "dry run: " : "", jv_array_size(pvcs), ns,
                       r.counts[KUBE_REAP_MARK], r.counts[KUBE_REAP_CLEAR],
                       r.counts[KUBE_REAP_DELETE], r.skipped);
        if (fn)
                fn(line, userdata);
        if (r.pool && fn) {
                (void)snprintf(line, sizeof(line), "%s%u warm pool objects past the TTL deleted",
                               dry_run ? "dry run: " : "", r.pool);
                fn(line, userdata);
        }
        return 0;
}

int b4_kube_reap(const struct b4_kube_reap_opts *o,
                 b4_kube_reap_line_fn *fn,
                 void *userdata,
                 struct b4_error *err)
{
        const struct b4_provider_config *p = o->provider;
        bool kube = p && p->type && strcmp(p->type, "kubernetes") == 0;
        struct kube_options opts = { .namespace = o->namespace };
        struct kube_client *c = NULL;
        struct kube_config k = { 0 };
        unsigned ttl = o->ttl_hours ? o->ttl_hours : B4_KUBE_REAP_DEFAULT_TTL_HOURS;
        int r;

        if (ttl > B4_KUBE_REAP_MAX_TTL_HOURS)
                return b4_error_set(err, -EINVAL, "--ttl-hours must be from 1 to %u",
                                    B4_KUBE_REAP_MAX_TTL_HOURS);
        if (kube) {
                opts.api_server = p->kube_api;
                opts.token_file = p->kube_token_file;
                opts.ca_file = p->kube_ca_file;
                opts.kubeconfig = p->kubeconfig;
                opts.context = p->kube_context;
                if (!opts.namespace)
                        opts.namespace = p->kube_namespace;
        }
        if (!opts.namespace)
                opts.namespace = "b4-sandboxes";
        r = kube_config_resolve(&opts, &k, err);
        if (r < 0)
                return b4_error_wrap(err, r, "kubernetes configuration");
        r = kube_client_new(&k, &c, err);
        kube_config_release(&k);
        if (r < 0)
                return b4_error_wrap(err, r, "kubernetes API client");
        r = kube_reap_run(c, kube_client_namespace(c), ttl, o->dry_run, time(NULL), fn, userdata,
                          err);
        kube_client_free(c);
        return r;
}
