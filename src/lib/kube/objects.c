/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread's Kubernetes objects (objects.h). Field by field what seed 002 and reference §4
 * describe, with b4box's additions from the design brief: deny mode drops cluster DNS and
 * ingress, the Pod shares its process namespace, readers never set fsGroup.
 */

#include "kube/objects.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "b4box/provider.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "core/launch.h"
#include "json/json.h"

/* emptyDir sizes: scratch for the sandbox, room for the agent's copy. */
#define TMP_SIZE   "256Mi"
#define RUN_SIZE   "16Mi"
#define AGENT_SIZE "32Mi"
#define GRACE_S    1

int kube_names_of(const char *scope, const char *thread_id, struct kube_names *ret)
{
        char hex[SHA256_HEX_LEN + 1];
        int r;

        *ret = (struct kube_names){ 0 };
        r = b4_resource_id(scope, thread_id, ret->id);
        if (r < 0)
                return r;
        sha256_hex(scope, strlen(scope), hex);
        memcpy(ret->scope, hex, 40);
        (void)snprintf(ret->pod, sizeof(ret->pod), "b4-sbx-%s", ret->id);
        (void)snprintf(ret->pvc, sizeof(ret->pvc), "b4-sbx-vol-%s", ret->id);
        (void)snprintf(ret->policy, sizeof(ret->policy), "b4-sbx-net-%s", ret->id);
        return 0;
}

int kube_reader_name(const struct kube_names *n, const char *suffix8, char ret[64])
{
        if (!suffix8 || strlen(suffix8) != 8 || strspn(suffix8, "0123456789abcdef") != 8)
                return -EINVAL;
        (void)snprintf(ret, 64, "b4-sbx-rdr-%s-%s", n->id, suffix8);
        return 0;
}

int kube_quantity_cpu(double cpus, char **ret)
{
        double milli = round(cpus * 1000.0);

        if (!(cpus > 0) || milli < 1 || milli > 1e9)
                return -EINVAL;
        if (fmod(milli, 1000.0) == 0)
                return b4_asprintf(ret, "%.0f", milli / 1000.0) < 0 ? -ENOMEM : 0;
        return b4_asprintf(ret, "%.0fm", milli) < 0 ? -ENOMEM : 0;
}

static struct jv *labels(const struct kube_names *n, const char *role)
{
        bool reader = strcmp(role, "reader") == 0;

        return jv_pack("{s:s, s:s, s:s, s:s}", KUBE_LABEL_MANAGED_BY, KUBE_MANAGED_BY,
                       reader ? KUBE_LABEL_READER : KUBE_LABEL_THREAD, n->id, KUBE_LABEL_SCOPE,
                       n->scope, KUBE_LABEL_ROLE, role);
}

static struct jv *metadata(const char *name, const char *ns, struct jv *lbls, struct jv *annot)
{
        return jv_pack("{s:s, s:s, s:o, s:o*}", "name", name, "namespace", ns, "labels", lbls,
                       "annotations", annot);
}

/* The policy's environment as Pod env (HOME=/workspace for a non-root user: launch.h). */
static struct jv *pod_env(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *pairs = launch_env_json(p);
        struct jv *env = jv_array_new();

        if (!pairs || !env)
                return jv_unref(env);
        for (size_t i = 0; i < jv_array_size(pairs); i++) {
                const struct jv *kv = jv_array_get(pairs, i);

                if (jv_array_append_new(env, jv_pack("{s:O, s:O}", "name", jv_array_get(kv, 0),
                                                     "value", jv_array_get(kv, 1))) < 0)
                        return jv_unref(env);
        }
        return env;
}

static struct jv *limits(const struct b4_resources *res)
{
        cleanup_free char *cpu = NULL, *mem = NULL;
        struct jv *l = jv_object_new();

        if (!l)
                return NULL;
        if (res->memory_mb &&
            (b4_asprintf(&mem, "%lluMi", (unsigned long long)res->memory_mb) < 0 ||
             jv_object_set_new(l, "memory", jv_string_new(mem)) < 0))
                return jv_unref(l);
        if (res->cpus > 0 && (kube_quantity_cpu(res->cpus, &cpu) < 0 ||
                              jv_object_set_new(l, "cpu", jv_string_new(cpu)) < 0))
                return jv_unref(l);
        return l;
}

static struct jv *container_security(const struct b4_security *sec)
{
        struct jv *drop = sec->drop_all_capabilities ? jv_pack("{s:[s]}", "drop", "ALL") : NULL;
        bool lost = false;
        struct jv *v;

        v = jv_pack("{s:b, s:b, s:b, s:o*}", "allowPrivilegeEscalation", !sec->no_new_privileges,
                    "readOnlyRootFilesystem", sec->read_only_root, "privileged", false,
                    "capabilities", jv_opt(sec->drop_all_capabilities, drop, &lost));
        return lost ? jv_unref(v) : v;
}

/* Pod-level: seccomp always; the identity only for a non-root user; fsGroup (the Docker
 * provider's chown) only for a keeper, never for a reader. */
static struct jv *pod_security(bool non_root, uint32_t uid, uint32_t gid, bool fs_group)
{
        struct jv *v = jv_pack("{s:{s:s}}", "seccompProfile", "type", "RuntimeDefault");

        if (!v || !non_root)
                return v;
        if (jv_object_set_new(v, "runAsNonRoot", jv_bool_new(true)) < 0 ||
            jv_object_set_new(v, "runAsUser", jv_integer_new(uid)) < 0 ||
            jv_object_set_new(v, "runAsGroup", jv_integer_new(gid)) < 0)
                return jv_unref(v);
        if (fs_group &&
            (jv_object_set_new(v, "fsGroup", jv_integer_new(gid)) < 0 ||
             jv_object_set_new(v, "fsGroupChangePolicy", jv_string_new("OnRootMismatch")) < 0))
                return jv_unref(v);
        return v;
}

static int add_mount(struct jv *mounts, const char *name, const char *path, bool read_only)
{
        return jv_array_append_new(mounts,
                                   jv_pack("{s:s, s:s, s:o*}", "name", name, "mountPath", path,
                                           "readOnly", read_only ? jv_bool_new(true) : NULL));
}

static int add_empty_dir(struct jv *vols, const char *name, bool memory, const char *size)
{
        return jv_array_append_new(vols,
                                   jv_pack("{s:s, s:{s:s*, s:s}}", "name", name, "emptyDir",
                                           "medium", memory ? "Memory" : NULL, "sizeLimit", size));
}

/* The volumes and mounts both Pods have: the workspace claim, the agent's emptyDir and,
 * with a read-only root, the scratch emptyDirs. */
static int volumes(const struct kube_names *n,
                   bool ws_read_only,
                   bool ro_root,
                   struct jv **ret_vols,
                   struct jv **ret_mounts)
{
        cleanup_(jv_unrefp) struct jv *vols = jv_array_new();
        cleanup_(jv_unrefp) struct jv *mounts = jv_array_new();
        int r;

        if (!vols || !mounts)
                return -ENOMEM;
        r = jv_array_append_new(vols, jv_pack("{s:s, s:{s:s, s:o*}}", "name", "workspace",
                                              "persistentVolumeClaim", "claimName", n->pvc,
                                              "readOnly", ws_read_only ? jv_bool_new(true) : NULL));
        if (r >= 0)
                r = add_mount(mounts, "workspace", "/workspace", ws_read_only);
        if (r >= 0)
                r = add_empty_dir(vols, "b4", true, AGENT_SIZE);
        if (r >= 0)
                r = add_mount(mounts, "b4", KUBE_AGENT_DIR, false);
        if (r >= 0 && ro_root) {
                r = add_empty_dir(vols, "tmp", false, TMP_SIZE);
                if (r >= 0)
                        r = add_empty_dir(vols, "run", true, RUN_SIZE);
                if (r >= 0)
                        r = add_mount(mounts, "tmp", "/tmp", false);
                if (r >= 0)
                        r = add_mount(mounts, "run", "/run", false);
        }
        if (r < 0)
                return r;
        *ret_vols = TAKE_PTR(vols);
        *ret_mounts = TAKE_PTR(mounts);
        return 0;
}

static struct jv *keeper_container(const struct kube_pod_spec *s, struct jv *mounts)
{
        const struct b4_policy *p = s->policy;

        return jv_pack("{s:s, s:s, s:[s,s], s:o, s:o, s:{s:o}, s:o}", "name", KUBE_CONTAINER,
                       "image", s->image, "command", "sleep", "infinity", "env", pod_env(p),
                       "securityContext", container_security(&p->security), "resources", "limits",
                       limits(&p->resources), "volumeMounts", mounts);
}

int kube_keeper_pod(const struct kube_pod_spec *s, struct jv **ret)
{
        const struct b4_security *sec = &s->policy->security;
        bool deny = s->policy->network == B4_NETWORK_DENY;
        cleanup_(jv_unrefp) struct jv *spec = NULL;
        struct jv *vols = NULL, *mounts = NULL, *annot = NULL;
        int r;

        if (!s->image || !*s->image)
                return -EINVAL;
        r = volumes(s->names, false, sec->read_only_root, &vols, &mounts);
        if (r < 0)
                return r;
        spec = jv_pack("{s:s, s:b, s:b, s:b, s:i, s:o, s:[o], s:o}", "restartPolicy", "Always",
                       "automountServiceAccountToken", false, "enableServiceLinks", false,
                       "shareProcessNamespace", true, "terminationGracePeriodSeconds", GRACE_S,
                       "securityContext",
                       pod_security(sec->run_as_non_root, sec->uid, sec->gid, true), "containers",
                       keeper_container(s, mounts), "volumes", vols);
        if (!spec)
                return -ENOMEM;
        if (s->user_namespace && jv_object_set_new(spec, "hostUsers", jv_bool_new(false)) < 0)
                return -ENOMEM;
        if (deny && (jv_object_set_new(spec, "dnsPolicy", jv_string_new("None")) < 0 ||
                     jv_object_set_new(spec, "dnsConfig",
                                       jv_pack("{s:[s]}", "nameservers", KUBE_DEAD_RESOLVER)) < 0))
                return -ENOMEM;
        if (s->identity && !(annot = jv_pack("{s:s}", KUBE_ANNOT_IDENTITY, s->identity)))
                return -ENOMEM;
        *ret = jv_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                       metadata(s->names->pod, s->namespace, labels(s->names, "keeper"), annot),
                       "spec", TAKE_PTR(spec));
        return *ret ? 0 : -ENOMEM;
}

int kube_workspace_pvc(const struct kube_names *n,
                       const char *ns,
                       uint64_t disk_gb,
                       const char *storage_class,
                       struct jv **ret)
{
        cleanup_free char *size = NULL;

        if (b4_asprintf(&size, "%lluGi", (unsigned long long)(disk_gb ? disk_gb : 1)) < 0)
                return -ENOMEM;
        *ret = jv_pack("{s:s, s:s, s:o, s:{s:[s], s:s, s:s*, s:{s:{s:s}}}}", "apiVersion", "v1",
                       "kind", "PersistentVolumeClaim", "metadata",
                       metadata(n->pvc, ns, labels(n, "keeper"), NULL), "spec", "accessModes",
                       "ReadWriteOnce", "volumeMode", "Filesystem", "storageClassName",
                       storage_class, "resources", "requests", "storage", size);
        return *ret ? 0 : -ENOMEM;
}

/* One egress rule for an allowlist CIDR, with its ports on TCP and UDP. */
static struct jv *cidr_rule(const struct b4_net_entry *e)
{
        char addr[INET6_ADDRSTRLEN], cidr[INET6_ADDRSTRLEN + 5];
        struct jv *ports = NULL;

        if (!inet_ntop(e->family, e->addr, addr, sizeof(addr)))
                return NULL;
        (void)snprintf(cidr, sizeof(cidr), "%s/%u", addr, e->prefix);
        if (e->port_lo) {
                static const char *const protos[] = { "TCP", "UDP" };

                ports = jv_array_new();
                for (size_t i = 0; ports && i < ELEMENTSOF(protos); i++) {
                        struct jv *pt = jv_pack("{s:s, s:i}", "protocol", protos[i], "port",
                                                (int)e->port_lo);

                        if (pt && e->port_hi > e->port_lo &&
                            jv_object_set_new(pt, "endPort", jv_integer_new(e->port_hi)) < 0)
                                pt = jv_unref(pt);
                        if (jv_array_append_new(ports, pt) < 0)
                                ports = jv_unref(ports);
                }
                if (!ports)
                        return NULL;
        }
        return jv_pack("{s:[{s:{s:s}}], s:o*}", "to", "ipBlock", "cidr", cidr, "ports", ports);
}

static struct jv *owner_refs(const char *pvc, const char *uid)
{
        return jv_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind",
                       "PersistentVolumeClaim", "name", pvc, "uid", uid);
}

int kube_deny_policy(const struct kube_names *n,
                     const char *ns,
                     const struct b4_policy *p,
                     const char *pvc_uid,
                     struct jv **ret)
{
        cleanup_(jv_unrefp) struct jv *egress = jv_array_new();
        struct jv *meta;

        if (p->network != B4_NETWORK_DENY)
                return -EINVAL;
        if (!egress)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_network_list; i++) {
                const struct b4_net_entry *e = &p->network_list[i];

                if (e->kind == B4_NET_CIDR && jv_array_append_new(egress, cidr_rule(e)) < 0)
                        return -ENOMEM;
        }
        meta = metadata(n->policy, ns, labels(n, "keeper"), NULL);
        if (meta && pvc_uid &&
            jv_object_set_new(meta, "ownerReferences", owner_refs(n->pvc, pvc_uid)) < 0)
                meta = jv_unref(meta);
        *ret = jv_pack("{s:s, s:s, s:o, s:{s:{s:{s:s}}, s:[s,s], s:[], s:O}}", "apiVersion",
                       "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata", meta, "spec",
                       "podSelector", "matchLabels", KUBE_LABEL_THREAD, n->id, "policyTypes",
                       "Ingress", "Egress", "ingress", "egress", egress);
        return *ret ? 0 : -ENOMEM;
}

int kube_reader_pod(const struct kube_reader_spec *s, struct jv **ret)
{
        static const struct b4_security hardened = { .drop_all_capabilities = true,
                                                     .no_new_privileges = true,
                                                     .read_only_root = true };
        cleanup_(jv_unrefp) struct jv *spec = NULL;
        struct jv *vols = NULL, *mounts = NULL;
        int r;

        if (!s->image || !*s->image)
                return -EINVAL;
        r = volumes(s->names, true, true, &vols, &mounts);
        if (r < 0)
                return r;
        spec = jv_pack("{s:s, s:b, s:b, s:i, s:s, s:{s:[s]}, s:o, s:[{s:s, s:s, s:[s,s], "
                       "s:o, s:o}], s:o}",
                       "restartPolicy", "Never", "automountServiceAccountToken", false,
                       "enableServiceLinks", false, "terminationGracePeriodSeconds", GRACE_S,
                       "dnsPolicy", "None", "dnsConfig", "nameservers", KUBE_DEAD_RESOLVER,
                       "securityContext", pod_security(s->run_as_non_root, s->uid, s->gid, false),
                       "containers", "name", KUBE_CONTAINER, "image", s->image, "command", "sleep",
                       "infinity", "securityContext", container_security(&hardened), "volumeMounts",
                       mounts, "volumes", vols);
        if (!spec)
                return -ENOMEM;
        if (s->node && jv_object_set_new(spec, "nodeName", jv_string_new(s->node)) < 0)
                return -ENOMEM;
        *ret = jv_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                       metadata(s->name, s->namespace, labels(s->names, "reader"), NULL), "spec",
                       TAKE_PTR(spec));
        return *ret ? 0 : -ENOMEM;
}

int kube_access_review(const char *ns,
                       const char *verb,
                       const char *group,
                       const char *resource,
                       const char *subresource,
                       struct jv **ret)
{
        *ret = jv_pack("{s:s, s:s, s:{s:{s:s, s:s, s:s, s:s, s:s*}}}", "apiVersion",
                       "authorization.k8s.io/v1", "kind", "SelfSubjectAccessReview", "spec",
                       "resourceAttributes", "namespace", ns, "verb", verb, "group", group,
                       "resource", resource, "subresource", subresource);
        return *ret ? 0 : -ENOMEM;
}

/* ---- warm pools ---- */

int kube_pool_names(const char *scope, const char *suffix, struct kube_names *ret)
{
        size_t n = suffix ? strlen(suffix) : 0;
        int r;

        if (n != 16 || strspn(suffix, "0123456789abcdef") != n)
                return -EINVAL;
        r = kube_names_of(scope, "pool", ret);
        if (r < 0)
                return r;
        ret->id[0] = '\0';
        (void)snprintf(ret->pod, sizeof(ret->pod), "b4-sbx-pool-%s", suffix);
        (void)snprintf(ret->pvc, sizeof(ret->pvc), "b4-sbx-vol-pool-%s", suffix);
        ret->policy[0] = '\0';
        return 0;
}

int kube_pool_mark(struct jv *obj, const char *pool, const char *owner, const char *pod)
{
        struct jv *meta = jv_object_get(obj, "metadata"), *lbls = jv_object_get(meta, "labels");
        struct jv *annot = jv_object_get(meta, "annotations");

        if (!lbls || !owner)
                return -EINVAL;
        (void)jv_object_del(lbls, KUBE_LABEL_THREAD);
        if (jv_object_set_new(lbls, KUBE_LABEL_POOL_OWNER, jv_string_new(owner)) < 0 ||
            (pool && jv_object_set_new(lbls, KUBE_LABEL_POOL, jv_string_new(pool)) < 0))
                return -ENOMEM;
        if (!pod)
                return 0;
        if (!annot) {
                if (jv_object_set_new(meta, "annotations", jv_object_new()) < 0)
                        return -ENOMEM;
                annot = jv_object_get(meta, "annotations");
        }
        return jv_object_set_new(annot, KUBE_ANNOT_POOL_POD, jv_string_new(pod));
}

int kube_pool_adopt_patch(const char *rv, const char *thread_id, struct jv **ret)
{
        *ret = jv_pack("{s:{s:s, s:{s:s, s:n}}}", "metadata", "resourceVersion", rv, "labels",
                       KUBE_LABEL_THREAD, thread_id, KUBE_LABEL_POOL);
        return *ret ? 0 : -ENOMEM;
}
