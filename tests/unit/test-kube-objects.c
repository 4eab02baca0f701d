/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes objects (src/lib/kube/objects.c) against golden files in
 * tests/data/kube/golden/, plus the security properties asserted on the objects themselves,
 * so that a regenerated golden file cannot quietly lose one.
 *
 * Regenerate after an intended change (then review the diff):
 *   B4BOX_UPDATE_GOLDEN=1 meson test -C build-dbg kube-objects
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4-test.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "core/net-entry.h"
#include "json/json.h"
#include "kube/objects.h"

#define NS       "b4-sandboxes"
#define IMAGE    "node:24-slim"
#define IDENTITY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char *read_all(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t cap = 0, len = 0, n;

        if (!f)
                return NULL;
        do {
                if (len + 4096 + 1 > cap) {
                        cap = (len + 4096 + 1) * 2;
                        buf = realloc(buf, cap);
                        assert_non_null(buf);
                }
                n = fread(buf + len, 1, 4096, f);
                len += n;
        } while (n > 0);
        fclose(f);
        buf[len] = '\0';
        return buf;
}

/* Compare @v (consumed) with golden file @name, or write it with B4BOX_UPDATE_GOLDEN=1. */
static void check_golden(struct jv *v, const char *name)
{
        const char *src = getenv("B4BOX_SRCDIR");
        cleanup_free char *path = NULL, *got = NULL, *want = NULL;

        assert_non_null(v);
        assert_non_null(src);
        assert_int_equal(jv_dump(v, JV_SORT_KEYS | JV_PRETTY, &got), 0);
        jv_unref(v);
        assert_true(b4_asprintf(&path, "%s/tests/data/kube/golden/%s", src, name) >= 0);
        if (getenv("B4BOX_UPDATE_GOLDEN")) {
                FILE *f = fopen(path, "we");

                assert_non_null(f);
                fprintf(f, "%s\n", got);
                assert_int_equal(fclose(f), 0);
                return;
        }
        want = read_all(path);
        if (!want)
                fail_msg("missing golden file %s (B4BOX_UPDATE_GOLDEN=1 writes it)", path);
        want[strcspn(want, "\0")] = '\0';
        if (strlen(want) && want[strlen(want) - 1] == '\n')
                want[strlen(want) - 1] = '\0';
        if (strcmp(got, want) != 0)
                fail_msg("%s differs from the golden file; got:\n%s", name, got);
}

static void add_entry(struct b4_policy *p, const char *text)
{
        const char *why = NULL;

        p->network_list =
                realloc(p->network_list, (p->n_network_list + 1) * sizeof(*p->network_list));
        assert_non_null(p->network_list);
        assert_int_equal(net_entry_parse(text, &p->network_list[p->n_network_list], &why), 0);
        p->n_network_list++;
}

static void deny_policy(struct b4_policy *p)
{
        b4_policy_init(p);
        p->network = B4_NETWORK_DENY;
        add_entry(p, "203.0.113.0/24");
        add_entry(p, "198.51.100.7:443");
        add_entry(p, "[2001:db8::1]:8000-8080");
        add_entry(p, "registry.npmjs.org"); /* a name: not expressible, left out */
        p->resources.memory_mb = 512;
        p->resources.cpus = 1;
        p->resources.disk_gb = 2;
        assert_int_equal(b4_policy_set_env(p, "FOO", "bar"), 0);
}

static void names(struct kube_names *n)
{
        assert_int_equal(kube_names_of("app", "thread", n), 0);
}

static void test_names(void **state)
{
        struct kube_names n;
        char rdr[64];

        names(&n);
        /* reference §3.2's vector */
        assert_string_equal(n.id, "93c4fcf034837c402e3d6f16f1ed08abda918380");
        assert_string_equal(n.pod, "b4-sbx-93c4fcf034837c402e3d6f16f1ed08abda918380");
        assert_string_equal(n.pvc, "b4-sbx-vol-93c4fcf034837c402e3d6f16f1ed08abda918380");
        assert_string_equal(n.policy, "b4-sbx-net-93c4fcf034837c402e3d6f16f1ed08abda918380");
        assert_int_equal(strlen(n.scope), 40);
        assert_int_equal(kube_reader_name(&n, "0a1b2c3d", rdr), 0);
        assert_true(strlen(rdr) <= 63);
        assert_int_equal(kube_reader_name(&n, "0A1B2C3D", rdr), -EINVAL);
        assert_int_equal(kube_reader_name(&n, "0a1b2c3", rdr), -EINVAL);
        assert_int_equal(kube_names_of("", "thread", &n), -EINVAL);
}

static void test_cpu_quantity(void **state)
{
        static const struct {
                double cpus;
                const char *want;
        } cases[] = { { 1, "1" }, { 2, "2" }, { 0.5, "500m" }, { 1.25, "1250m" }, { 0.001, "1m" } };

        char *s = NULL;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(kube_quantity_cpu(cases[i].cpus, &s), 0);
                assert_string_equal(s, cases[i].want);
                free(s);
        }
        assert_int_equal(kube_quantity_cpu(0, &s), -EINVAL);
        assert_int_equal(kube_quantity_cpu(0.0001, &s), -EINVAL);
}

static struct jv *keeper(const struct b4_policy *p, bool userns)
{
        struct kube_names n;
        struct kube_pod_spec s = { .names = &n,
                                   .namespace = NS,
                                   .image = IMAGE,
                                   .identity = IDENTITY,
                                   .policy = p,
                                   .user_namespace = userns };
        struct jv *v = NULL;

        names(&n);
        assert_int_equal(kube_keeper_pod(&s, &v), 0);
        return v;
}

static const struct jv *path_get(const struct jv *v, const char *dotted)
{
        char buf[256], *save = NULL;

        (void)snprintf(buf, sizeof(buf), "%s", dotted);
        for (char *k = strtok_r(buf, ".", &save); v && k; k = strtok_r(NULL, ".", &save))
                v = jv_is_array(v) ? jv_array_get(v, (size_t)atoi(k)) : jv_object_get(v, k);
        return v;
}

static const char *str_at(const struct jv *v, const char *dotted)
{
        return jv_string(path_get(v, dotted));
}

/* The hardening the seed names, asserted one by one. */
static void test_keeper_hardened(void **state)
{
        struct b4_policy p;
        struct jv *v;

        deny_policy(&p);
        v = keeper(&p, false);
        assert_false(jv_is_true(path_get(v, "spec.automountServiceAccountToken")));
        assert_non_null(path_get(v, "spec.automountServiceAccountToken"));
        assert_true(jv_is_true(path_get(v, "spec.shareProcessNamespace")));
        assert_true(jv_is_true(path_get(v, "spec.securityContext.runAsNonRoot")));
        assert_int_equal(jv_integer(path_get(v, "spec.securityContext.runAsUser")), 1000);
        assert_int_equal(jv_integer(path_get(v, "spec.securityContext.runAsGroup")), 1000);
        assert_string_equal(str_at(v, "spec.securityContext.seccompProfile.type"),
                            "RuntimeDefault");
        assert_string_equal(str_at(v, "spec.containers.0.name"), "sandbox");
        assert_string_equal(str_at(v, "spec.containers.0.command.0"), "sleep");
        assert_string_equal(str_at(v, "spec.containers.0.command.1"), "infinity");
        assert_false(jv_is_true(
                path_get(v, "spec.containers.0.securityContext.allowPrivilegeEscalation")));
        assert_true(jv_is_true(
                path_get(v, "spec.containers.0.securityContext.readOnlyRootFilesystem")));
        assert_string_equal(str_at(v, "spec.containers.0.securityContext.capabilities.drop.0"),
                            "ALL");
        assert_string_equal(str_at(v, "spec.containers.0.resources.limits.memory"), "512Mi");
        assert_string_equal(str_at(v, "spec.containers.0.resources.limits.cpu"), "1");
        assert_string_equal(
                jv_string(jv_object_get(path_get(v, "metadata.labels"), KUBE_LABEL_MANAGED_BY)),
                "b4");
        /* deny mode: no cluster DNS at all */
        assert_string_equal(str_at(v, "spec.dnsPolicy"), "None");
        assert_string_equal(str_at(v, "spec.dnsConfig.nameservers.0"), KUBE_DEAD_RESOLVER);
        assert_null(path_get(v, "spec.hostUsers"));
        check_golden(v, "keeper-deny.json");
        b4_policy_clear(&p);
}

static void test_keeper_allow_root(void **state)
{
        struct b4_policy p;
        struct jv *v;

        b4_policy_init(&p);
        p.security.run_as_non_root = false;
        p.security.read_only_root = false;
        p.resources.cpus = 0.5;
        v = keeper(&p, true);
        assert_null(path_get(v, "spec.dnsPolicy"));
        assert_null(path_get(v, "spec.securityContext.runAsUser"));
        assert_false(jv_is_true(path_get(v, "spec.hostUsers")));
        assert_non_null(path_get(v, "spec.hostUsers"));
        check_golden(v, "keeper-allow-root.json");
        b4_policy_clear(&p);
}

static void test_pvc(void **state)
{
        struct kube_names n;
        struct jv *v = NULL;

        names(&n);
        assert_int_equal(kube_workspace_pvc(&n, NS, 2, "fast-ssd", &v), 0);
        assert_string_equal(str_at(v, "spec.accessModes.0"), "ReadWriteOnce");
        assert_string_equal(str_at(v, "spec.resources.requests.storage"), "2Gi");
        check_golden(v, "pvc.json");
        assert_int_equal(kube_workspace_pvc(&n, NS, 0, NULL, &v), 0);
        assert_string_equal(str_at(v, "spec.resources.requests.storage"), "1Gi");
        assert_null(path_get(v, "spec.storageClassName"));
        check_golden(v, "pvc-default.json");
}

/* No rule anywhere opens port 53 or a namespace (cluster DNS); ingress has no rule. */
static void test_deny_policy(void **state)
{
        struct kube_names n;
        struct b4_policy p;
        struct jv *v = NULL;
        const struct jv *egress;

        names(&n);
        deny_policy(&p);
        assert_int_equal(kube_deny_policy(&n, NS, &p, "6f1c7c1e-3b5a-4b0e-9d1f-0c3c2b1a0f9e", &v),
                         0);
        assert_string_equal(str_at(v, "spec.policyTypes.0"), "Ingress");
        assert_string_equal(str_at(v, "spec.policyTypes.1"), "Egress");
        assert_int_equal(jv_array_size(path_get(v, "spec.ingress")), 0);
        egress = path_get(v, "spec.egress");
        assert_int_equal(jv_array_size(egress), 3);
        for (size_t i = 0; i < jv_array_size(egress); i++) {
                const struct jv *r = jv_array_get(egress, i);

                assert_null(path_get(r, "to.0.namespaceSelector"));
                assert_non_null(path_get(r, "to.0.ipBlock.cidr"));
                for (size_t j = 0; j < jv_array_size(jv_object_get(r, "ports")); j++)
                        assert_int_not_equal(
                                jv_integer(path_get(jv_array_get(jv_object_get(r, "ports"), j),
                                                    "port")),
                                53);
        }
        assert_string_equal(str_at(v, "spec.egress.2.to.0.ipBlock.cidr"), "2001:db8::1/128");
        assert_int_equal(jv_integer(path_get(v, "spec.egress.2.ports.0.endPort")), 8080);
        assert_string_equal(jv_string(jv_object_get(path_get(v, "spec.podSelector.matchLabels"),
                                                    KUBE_LABEL_THREAD)),
                            n.id);
        check_golden(v, "netpol-deny.json");
        p.network = B4_NETWORK_ALLOW;
        assert_int_equal(kube_deny_policy(&n, NS, &p, NULL, &v), -EINVAL);
        b4_policy_clear(&p);
}

static void test_reader(void **state)
{
        struct kube_names n;
        char name[64];
        struct kube_reader_spec s = { .names = &n,
                                      .name = name,
                                      .namespace = NS,
                                      .image = IMAGE,
                                      .node = "node-1",
                                      .run_as_non_root = true,
                                      .uid = 1000,
                                      .gid = 1000 };
        const struct jv *lbls;
        struct jv *v = NULL;

        names(&n);
        assert_int_equal(kube_reader_name(&n, "0a1b2c3d", name), 0);
        assert_int_equal(kube_reader_pod(&s, &v), 0);
        assert_true(jv_is_true(path_get(v, "spec.volumes.0.persistentVolumeClaim.readOnly")));
        assert_true(jv_is_true(path_get(v, "spec.containers.0.volumeMounts.0.readOnly")));
        assert_null(path_get(v, "spec.securityContext.fsGroup"));
        assert_string_equal(str_at(v, "spec.nodeName"), "node-1");
        lbls = path_get(v, "metadata.labels");
        assert_null(jv_object_get(lbls, KUBE_LABEL_THREAD));
        assert_string_equal(jv_string(jv_object_get(lbls, KUBE_LABEL_READER)), n.id);
        check_golden(v, "reader.json");
}

static void test_access_review(void **state)
{
        struct jv *v = NULL;

        assert_int_equal(kube_access_review(NS, "create", "", "pods", "exec", &v), 0);
        check_golden(v, "ssar-pods-exec.json");
        assert_int_equal(
                kube_access_review(NS, "list", "networking.k8s.io", "networkpolicies", NULL, &v),
                0);
        assert_null(path_get(v, "spec.resourceAttributes.subresource"));
        jv_unref(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_cpu_quantity),
                cmocka_unit_test(test_keeper_hardened),
                cmocka_unit_test(test_keeper_allow_root),
                cmocka_unit_test(test_pvc),
                cmocka_unit_test(test_deny_policy),
                cmocka_unit_test(test_reader),
                cmocka_unit_test(test_access_review),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
