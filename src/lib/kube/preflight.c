/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box check` for the Kubernetes provider (reference §4 preflight, docs/kubernetes.md):
 * one SelfSubjectAccessReview per API operation the provider performs, every one of them
 * run even when one is denied or fails, the results in three buckets reported separately
 * (transport failures, authorization-review failures, missing permissions), each sorted,
 * reviews that failed the same way named together with their one error (an unreachable
 * server: "for all 14 reviews: <error>", not the error 14 times);
 * only with every permission granted a NetworkPolicy list, and then enforcement is still
 * reported unconfirmed (nothing here can prove a policy-enforcing CNI). Then the controls.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "json/json.h"
#include "kube/kube.h"
#include "kube/provider.h"

/* The seed's REQUIRED_KUBE_PERMISSIONS, plus `watch pods` (b4box waits on a watch) and the
 * optional `list pods` (the shared Pod informer of b4box serve: without it, a watch per
 * acquire). */
static const struct permission {
        const char *verb, *group, *resource, *subresource;
        const char *without; /* optional: what the provider does when it is denied */
} permissions[] = {
        { "create", "", "pods", NULL, NULL },
        { "get", "", "pods", NULL, NULL },
        { "delete", "", "pods", NULL, NULL },
        { "watch", "", "pods", NULL, NULL },
        { "list", "", "pods", NULL,
          "b4box serve has no shared Pod informer: each acquire watches its Pod" },
        { "create", "", "persistentvolumeclaims", NULL, NULL },
        { "get", "", "persistentvolumeclaims", NULL, NULL },
        { "delete", "", "persistentvolumeclaims", NULL, NULL },
        { "create", "", "pods", "exec", NULL },
        { "get", "", "pods", "exec", NULL },
        { "create", "networking.k8s.io", "networkpolicies", NULL, NULL },
        { "get", "networking.k8s.io", "networkpolicies", NULL, NULL },
        { "list", "networking.k8s.io", "networkpolicies", NULL, NULL },
        { "update", "networking.k8s.io", "networkpolicies", NULL, NULL },
        { "delete", "networking.k8s.io", "networkpolicies", NULL, NULL },
};

enum bucket {
        BUCKET_GRANTED,
        BUCKET_TRANSPORT, /* the API could not be reached */
        BUCKET_REVIEW,    /* the review itself failed (an API error, an evaluationError) */
        BUCKET_DENIED,
};

/* "<verb> <group|core>/<resource>[/<sub>]" */
static int label(const struct permission *p, char **ret)
{
        return b4_asprintf(ret, "%s %s/%s%s%s", p->verb, *p->group ? p->group : "core", p->resource,
                           p->subresource ? "/" : "", p->subresource ?: "");
}

static bool transport_error(int r, const char *msg)
{
        switch (-r) {
        case ECONNREFUSED:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ETIMEDOUT:
        case ECONNRESET:
        case ECONNABORTED:
        case EPIPE:
                return true;
        case EIO: /* libcurl and TLS failures; a 5xx answer names its status */
                return !strstr(msg, " (5");
        default:
                return false;
        }
}

/* One review: its bucket, and for a failure the line to report. */
static enum bucket review(struct kube_core *c,
                          const char *path,
                          const struct permission *p,
                          char **ret_why)
{
        cleanup_(jv_unrefp) struct jv *body = NULL, *got = NULL;
        struct b4_error e = { 0 };
        const struct jv *status;
        const char *eval;
        int r;

        *ret_why = NULL;
        if (kube_access_review(c->namespace, p->verb, p->group, p->resource, p->subresource,
                               &body) < 0) {
                *ret_why = b4_strdup("out of memory");
                return BUCKET_REVIEW;
        }
        r = kube_create(c->client, path, body, &got, &e);
        if (r < 0) {
                *ret_why = b4_strdup(e.msg);
                return transport_error(r, e.msg) ? BUCKET_TRANSPORT : BUCKET_REVIEW;
        }
        status = jv_object_get(got, "status");
        eval = jv_string(jv_object_get(status, "evaluationError"));
        if (!jv_is_bool(jv_object_get(status, "allowed"))) {
                *ret_why = b4_strdup("the review's answer has no status.allowed");
                return BUCKET_REVIEW;
        }
        if (jv_is_true(jv_object_get(status, "allowed")))
                return BUCKET_GRANTED;
        if (eval && *eval) {
                (void)b4_asprintf(ret_why, "evaluationError: %.200s", eval);
                return BUCKET_REVIEW;
        }
        return BUCKET_DENIED;
}

/* The outcome of every review, by the index of its permission. */
struct reviews {
        enum bucket bucket[ELEMENTSOF(permissions)];
        char *label[ELEMENTSOF(permissions)]; /* "<verb> <group>/<resource>" */
        char *why[ELEMENTSOF(permissions)];   /* a failure's error; NULL for a denial */
};

/*
 * Whether two reviews failed the same way: the same text, except for the times libcurl
 * writes into its messages ("after 0 ms", "after 10001 milliseconds"), which differ from
 * one review to the next.
 */
static bool same_error(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        for (const char *a0 = a; *a || *b;) {
                bool timed = a - a0 >= 6 && strncmp(a - 6, "after ", 6) == 0;
                if (timed && *a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
                        a += strspn(a, "0123456789");
                        b += strspn(b, "0123456789");
                        continue;
                }
                if (*a != *b)
                        return false;
                a++;
                b++;
        }
        return true;
}

static size_t index_of(const struct reviews *rv, const char *label)
{
        size_t i = 0;

        while (i < ELEMENTSOF(permissions) - 1 && strcmp(rv->label[i], label) != 0)
                i++;
        return i;
}

/*
 * Bucket @b after "; " on @sb: "<head>: a, b (why), c (why 2)", the reviews sorted, those
 * that failed the same way named together before their one error; "<head> for all N
 * reviews: <error>" when every review failed so.
 */
static int add_bucket(struct strbuf *sb, const char *head, const struct reviews *rv, enum bucket b)
{
        cleanup_(strv_freep) char **labels = NULL;
        bool done[ELEMENTSOF(permissions)] = { false };
        size_t n;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(permissions); i++)
                if (rv->bucket[i] == b)
                        r = strv_extend(&labels, rv->label[i]);
        n = strv_length(labels);
        if (r < 0 || n == 0)
                return r;
        strv_sort(labels);
        if (sb->len)
                r = strbuf_adds(sb, "; ");
        if (r >= 0 && n == ELEMENTSOF(permissions) && rv->why[0]) {
                bool all = true;
                for (size_t i = 1; all && i < n; i++)
                        all = same_error(rv->why[0], rv->why[i]);
                if (all)
                        return strbuf_addf(sb, "%s for all %zu reviews: %s", head, n, rv->why[0]);
        }
        if (r >= 0)
                r = strbuf_addf(sb, "%s: ", head);
        for (size_t k = 0, first = 1; r >= 0 && k < n; k++) {
                size_t i = index_of(rv, labels[k]);
                if (done[i])
                        continue;
                for (size_t m = k; r >= 0 && m < n; m++) {
                        size_t j = index_of(rv, labels[m]);
                        if (done[j] || !same_error(rv->why[i], rv->why[j]))
                                continue;
                        done[j] = true;
                        r = strbuf_addf(sb, "%s%s", first ? "" : ", ", labels[m]);
                        first = 0;
                }
                if (r >= 0 && rv->why[i])
                        r = strbuf_addf(sb, " (%s)", rv->why[i]);
        }
        return r;
}

/* An optional permission denied: not a failure, a warning saying what the provider does. */
static int degrade(struct reviews *rv, size_t i, struct b4_preflight *ret)
{
        if (rv->bucket[i] != BUCKET_DENIED || !permissions[i].without)
                return 0;
        rv->bucket[i] = BUCKET_GRANTED;
        return b4_preflight_warn(ret, "Optional Kubernetes permission %s missing: %s.",
                                 rv->label[i], permissions[i].without);
}

/* Every review; *ret_failed: a detail naming the failures (NULL when all are granted); the
 * optional permissions denied as warnings on @ret. */
static int run_reviews(struct kube_core *c, struct b4_preflight *ret, char **ret_failed)
{
        cleanup_free char *path =
                kube_path("authorization.k8s.io/v1", NULL, "selfsubjectaccessreviews", NULL, NULL);
        struct reviews rv = { 0 };
        cleanup_free char *h_net = NULL, *h_rev = NULL, *h_den = NULL;
        struct strbuf sb;
        size_t len = 0;
        int r = 0;

        *ret_failed = NULL;
        if (!path)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(permissions); i++) {
                rv.bucket[i] = review(c, path, &permissions[i], &rv.why[i]);
                r = label(&permissions[i], &rv.label[i]);
                if (r >= 0)
                        r = degrade(&rv, i, ret);
        }
        strbuf_init(&sb, STRBUF_UNLIMITED);
        if (r >= 0 &&
            (b4_asprintf(&h_net,
                         "Kubernetes API not reachable while reviewing permissions in namespace "
                         "\"%s\"",
                         c->namespace) < 0 ||
             b4_asprintf(&h_rev, "Kubernetes authorization review failed in namespace \"%s\"",
                         c->namespace) < 0 ||
             b4_asprintf(&h_den, "Missing Kubernetes permissions in namespace \"%s\"",
                         c->namespace) < 0))
                r = -ENOMEM;
        if (r >= 0)
                r = add_bucket(&sb, h_net, &rv, BUCKET_TRANSPORT);
        if (r >= 0)
                r = add_bucket(&sb, h_rev, &rv, BUCKET_REVIEW);
        if (r >= 0)
                r = add_bucket(&sb, h_den, &rv, BUCKET_DENIED);
        if (r >= 0 && sb.len)
                r = strbuf_detach(&sb, ret_failed, &len);
        strbuf_release(&sb);
        for (size_t i = 0; i < ELEMENTSOF(permissions); i++) {
                free(rv.label[i]);
                free(rv.why[i]);
        }
        return r < 0 ? -ENOMEM : 0;
}

/* What the provider enforces, as `b4box check` lists it (check-rows.c rewrites the limit
 * rows for the policy in hand). */
static const struct {
        const char *name;
        enum b4_enforcement state;
        const char *detail;
} controls[] = {
        { "network deny", B4_NOT_ENFORCED,
          "a per-thread NetworkPolicy denying ingress and egress, and no cluster DNS "
          "(dnsPolicy None, nameserver " KUBE_DEAD_RESOLVER "); enforcement unconfirmed: it "
          "needs a policy-enforcing CNI (Calico, Cilium)" },
        { "network allowlist", B4_NOT_ENFORCED,
          "CIDR entries as the policy's ipBlock egress rules (unconfirmed, as above); host "
          "names cannot be expressed in a NetworkPolicy and are not allowed" },
        { "network denylist", B4_NOT_ENFORCED,
          "allow mode creates no per-thread policy: only the chart's backstop applies" },
        { "capabilities", B4_ENFORCED, "capabilities.drop ALL" },
        { "no_new_privs", B4_ENFORCED, "allowPrivilegeEscalation false" },
        { "read-only root", B4_ENFORCED, "readOnlyRootFilesystem with emptyDir /tmp and /run" },
        { "memory limit", B4_ENFORCED, "resources.limits.memory" },
        { "cpu limit", B4_ENFORCED, "resources.limits.cpu" },
        { "disk quota", B4_ENFORCED,
          "the PVC's storage request (the StorageClass's provisioner sizes the volume)" },
        { "command timeout", B4_ENFORCED, "b4box-agent kills the command's process group" },
        { "seccomp", B4_ENFORCED, "RuntimeDefault (the runtime's profile)" },
        { "pause", B4_NOT_APPLICABLE, "not on Kubernetes" },
        { "background processes", B4_NOT_APPLICABLE,
          "not on Kubernetes yet: the process routes answer 501 processes_unsupported" },
};

static int add_controls(struct kube_core *c, struct b4_preflight *ret)
{
        int r;

        for (size_t i = 0; i < ELEMENTSOF(controls); i++)
                if (b4_preflight_control(ret, controls[i].name, controls[i].state, "%s",
                                         controls[i].detail) < 0)
                        return -ENOMEM;
        r = c->user_namespace
                    ? b4_preflight_control(ret, "pids limit", B4_ENFORCED,
                                           "RLIMIT_NPROC of each command, counted in the Pod's own "
                                           "user namespace (hostUsers: false)")
                    : b4_preflight_control(ret, "pids limit", B4_NOT_ENFORCED,
                                           "the Pod has no user namespace of its own (hostUsers: "
                                           "false is not set), and Kubernetes has no per-Pod "
                                           "process limit: configure the kubelet's podPidsLimit");
        if (r < 0)
                return -ENOMEM;
        /* which path file operations and commands take (agent.c decides per Pod) */
        if (!c->agent_bin)
                return b4_preflight_control(ret, "operations", B4_NOT_APPLICABLE,
                                            "the reference's sh scripts: one exec per "
                                            "operation (%s)",
                                            c->agent_reason);
        return b4_preflight_control(ret, "operations", B4_NOT_APPLICABLE,
                                    "through b4box-agent: %s (a Pod that cannot run it: the "
                                    "reference's sh scripts, one exec per operation)",
                                    c->agent_reason);
}

int kube_preflight(struct kube_core *c, struct b4_preflight *ret, struct b4_error *err)
{
        cleanup_free char *failed = NULL, *path = NULL;
        struct b4_error e = { 0 };
        struct jv *items = NULL;
        int r;

        r = run_reviews(c, ret, &failed);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        if (failed) {
                ret->ok = false;
                ret->detail = TAKE_PTR(failed);
        } else {
                ret->ok = true;
                if (b4_asprintf(&ret->detail,
                                "Kubernetes reachable; required permissions granted in \"%s\".",
                                c->namespace) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                path = kube_path("networking.k8s.io/v1", c->namespace, "networkpolicies", NULL,
                                 NULL);
                r = path ? kube_list(c->client, path, NULL, NULL, &items, NULL, &e) : -ENOMEM;
                jv_unref(items);
                r = r >= 0 ? b4_preflight_warn(ret,
                                               "NetworkPolicy enforcement could not be confirmed "
                                               "in namespace \"%s\" (no policy-capable CNI "
                                               "detected). network:deny/allow egress control is "
                                               "best-effort until a CNI like Calico/Cilium is "
                                               "installed.",
                                               c->namespace)
                           : b4_preflight_warn(ret,
                                               "NetworkPolicies could not be listed in namespace "
                                               "\"%s\": %s",
                                               c->namespace, e.msg);
                if (r < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        }
        return add_controls(c, ret) < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}
