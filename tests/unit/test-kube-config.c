/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_config_resolve(): every kubeconfig row of kubernetes.md §6 against the fixtures in
 * tests/data/kube/ (current-context, a named context, data vs file forms, relative paths,
 * merging a list, a missing user / cluster / context, bad base64, the refusals), the
 * in-cluster service account from a temp dir with the environment set, and the precedence
 * of explicit options.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4-test.h"
#include "kube/kube.h"

static char fixture_dir[2048];
static char *tmp;

static const char *fx(const char *name)
{
        static char buf[8][4096];
        static int i;

        i = (i + 1) % 8;
        (void)snprintf(buf[i], sizeof(buf[i]), "%s/%s", fixture_dir, name);
        return buf[i];
}

static int setup(void **state)
{
        const char *src = getenv("B4BOX_SRCDIR");

        (void)state;
        (void)snprintf(fixture_dir, sizeof(fixture_dir), "%s/tests/data/kube", src ? src : ".");
        tmp = b4_test_tmpdir();
        /* nothing of the machine's own: no kubeconfig, not in a cluster */
        (void)unsetenv("KUBECONFIG");
        (void)unsetenv("KUBERNETES_SERVICE_HOST");
        (void)unsetenv("KUBERNETES_SERVICE_PORT");
        (void)setenv("HOME", tmp, 1);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        b4_test_rmrf(tmp);
        free(tmp);
        (void)unsetenv("KUBECONFIG");
        (void)unsetenv("KUBERNETES_SERVICE_HOST");
        (void)unsetenv("KUBERNETES_SERVICE_PORT");
        return 0;
}

static int resolve(const struct kube_options *o, struct kube_config *cfg, struct b4_error *err)
{
        *err = (struct b4_error){ 0 };
        *cfg = (struct kube_config){ 0 };
        return kube_config_resolve(o, cfg, err);
}

/* Resolving @file (with @context) fails with @want and a message containing @msg. */
static void refused(const char *file, const char *context, int want, const char *msg)
{
        struct kube_options o = { .kubeconfig = fx(file), .context = context };
        struct kube_config cfg;
        struct b4_error err;

        assert_int_equal(resolve(&o, &cfg, &err), want);
        assert_int_equal(err.error, want);
        if (!strstr(err.msg, msg))
                fail_msg("%s: '%s' does not say '%s'", file, err.msg, msg);
        assert_null(cfg.server);
}

static void assert_pem(const void *pem, size_t len, const char *want)
{
        assert_non_null(pem);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(pem, want, len);
}

static void test_current_context(void **state)
{
        struct kube_options o = { .kubeconfig = fx("basic.yaml") };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "https://data.example:6443");
        assert_string_equal(cfg.namespace, "team-a");
        assert_string_equal(cfg.token, "sekret-token");
        assert_null(cfg.token_file);
        /* certificate-authority-data folded over two lines, decoded */
        assert_pem(cfg.ca_pem, cfg.ca_pem_len,
                   "-----BEGIN CERTIFICATE-----\nCA-DATA\n-----END CERTIFICATE-----\n");
        assert_null(cfg.ca_file);
        assert_null(cfg.cert_file);
        assert_null(cfg.cert_pem);
        assert_false(cfg.insecure);
        assert_non_null(strstr(cfg.source, "context 'ctx-token'"));
        assert_true(cfg.qps == KUBE_DEFAULT_QPS);
        assert_int_equal(cfg.burst, KUBE_DEFAULT_BURST);
        kube_config_release(&cfg);
        assert_null(cfg.server);
}

static void test_named_context_files(void **state)
{
        struct kube_options o = { .kubeconfig = fx("basic.yaml"), .context = "ctx-cert-files" };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        /* the trailing '/' goes; IPv6 stays bracketed */
        assert_string_equal(cfg.server, "https://[fd00::1]:443");
        assert_string_equal(cfg.namespace, "default");
        /* relative paths against the kubeconfig's folder, absolute ones kept */
        assert_string_equal(cfg.ca_file, fx("pki/ca.crt"));
        assert_string_equal(cfg.cert_file, fx("pki/client.crt"));
        assert_string_equal(cfg.key_file, "/abs/client.key");
        assert_null(cfg.ca_pem);
        assert_null(cfg.token);
        kube_config_release(&cfg);
}

static void test_named_context_data(void **state)
{
        struct kube_options o = { .kubeconfig = fx("basic.yaml"), .context = "ctx-cert-data" };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_pem(cfg.cert_pem, cfg.cert_pem_len,
                   "-----BEGIN CERTIFICATE-----\nCLIENT-DATA\n-----END CERTIFICATE-----\n");
        assert_pem(cfg.key_pem, cfg.key_pem_len,
                   "-----BEGIN PRIVATE KEY-----\nKEY-DATA\n-----END PRIVATE KEY-----\n");
        assert_null(cfg.cert_file);
        assert_null(cfg.key_file);
        kube_config_release(&cfg);
}

static void test_token_file_and_anonymous(void **state)
{
        struct kube_options o = { .kubeconfig = fx("basic.yaml"), .context = "ctx-token-file" };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.token_file, fx("./tok/token"));
        assert_null(cfg.token);
        kube_config_release(&cfg);

        /* a context without a user: no credentials at all, and that is not an error */
        o.context = "ctx-anonymous";
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_null(cfg.token);
        assert_null(cfg.token_file);
        assert_null(cfg.cert_file);
        kube_config_release(&cfg);
}

static void test_refusals(void **state)
{
        (void)state;
        refused("missing-user.yaml", NULL, -ENOENT, "user 'ghost' of context 'c' is not defined");
        refused("missing-cluster.yaml", NULL, -ENOENT,
                "cluster 'nowhere' of context 'c' is not defined");
        refused("missing-context.yaml", NULL, -ENOENT, "context 'gone' is not defined");
        refused("basic.yaml", "no-such", -ENOENT, "context 'no-such' is not defined");
        refused("no-current.yaml", NULL, -ENOENT, "has no current-context");
        refused("bad-base64.yaml", NULL, -EINVAL, "certificate-authority-data is not valid base64");
        refused("insecure.yaml", NULL, -EPERM, "insecure-skip-tls-verify");
        refused("exec-user.yaml", NULL, -EOPNOTSUPP, "exec is not supported");
        refused("half-pair.yaml", NULL, -EINVAL, "client certificate without its key");
        refused("wrong-type.yaml", NULL, -EINVAL, "clusters.server must be a string");
        refused("no-server.yaml", NULL, -EINVAL, "cluster 'k' has no server");
        refused("not-yaml.yaml", NULL, -EINVAL, "is not valid YAML");
        refused("does-not-exist.yaml", NULL, -ENOENT, "cannot read kubeconfig");
}

static void test_insecure_allowed(void **state)
{
        struct kube_options o = { .kubeconfig = fx("insecure.yaml"), .allow_insecure = true };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_true(cfg.insecure);
        kube_config_release(&cfg);
}

static void test_merge_first_wins(void **state)
{
        char list[8192];
        struct kube_options o = { .kubeconfig = list };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        (void)snprintf(list, sizeof(list), "%s::%s", fx("merge-first.yaml"),
                       fx("merge-second.yaml"));
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        /* current-context and context "first" from the first file, cluster "shared" too; the
         * user only the second defines */
        assert_string_equal(cfg.server, "https://first");
        assert_string_equal(cfg.token, "from-second");
        kube_config_release(&cfg);

        /* $KUBECONFIG is the list when no option names one */
        assert_int_equal(setenv("KUBECONFIG", list, 1), 0);
        o.kubeconfig = NULL;
        o.context = "second";
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "https://first");
        kube_config_release(&cfg);
        (void)unsetenv("KUBECONFIG");
}

static void test_json_kubeconfig(void **state)
{
        struct kube_options o = { .kubeconfig = fx("config.json") };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "http://127.0.0.1:8001");
        assert_string_equal(cfg.namespace, "json-ns");
        assert_string_equal(cfg.token, "json-token");
        kube_config_release(&cfg);
}

static void test_explicit_over_kubeconfig(void **state)
{
        struct kube_options o = { .kubeconfig = fx("basic.yaml"),
                                  .api_server = "https://override:1",
                                  .namespace = "b4-sandboxes",
                                  .token_file = "/run/tok",
                                  .ca_file = "/etc/ca.pem" };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "https://override:1");
        assert_string_equal(cfg.namespace, "b4-sandboxes");
        assert_string_equal(cfg.token_file, "/run/tok");
        assert_null(cfg.token); /* the explicit file replaces the kubeconfig's token */
        assert_string_equal(cfg.ca_file, "/etc/ca.pem");
        assert_null(cfg.ca_pem);
        kube_config_release(&cfg);
}

/* A service-account dir under tmp with @files set. */
static void make_sa(const char *dir, bool token, bool ca, const char *ns)
{
        char p[2048];

        assert_int_equal(mkdir(dir, 0700), 0);
        (void)snprintf(p, sizeof(p), "%s/token", dir);
        if (token)
                assert_int_equal(b4_test_write(p, "sa-token\n"), 0);
        (void)snprintf(p, sizeof(p), "%s/ca.crt", dir);
        if (ca)
                assert_int_equal(b4_test_write(p, "PEM"), 0);
        (void)snprintf(p, sizeof(p), "%s/namespace", dir);
        if (ns)
                assert_int_equal(b4_test_write(p, ns), 0);
}

static void test_in_cluster(void **state)
{
        char sa[1024], want[2048];
        struct kube_options o = { .sa_dir = sa };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        (void)snprintf(sa, sizeof(sa), "%s/sa", tmp);
        make_sa(sa, true, true, "tenant-ns\n");
        assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
        assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "https://10.96.0.1:443");
        assert_string_equal(cfg.namespace, "tenant-ns");
        (void)snprintf(want, sizeof(want), "%s/token", sa);
        assert_string_equal(cfg.token_file, want);
        (void)snprintf(want, sizeof(want), "%s/ca.crt", sa);
        assert_string_equal(cfg.ca_file, want);
        assert_string_equal(cfg.source, "in-cluster");
        kube_config_release(&cfg);

        /* IPv6 service address: bracketed */
        assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1), 0);
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "https://[fd00:10:96::1]:443");
        kube_config_release(&cfg);

        /* an explicit namespace beats the file's */
        o.namespace = "b4-sandboxes";
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.namespace, "b4-sandboxes");
        kube_config_release(&cfg);

        /* a bad port */
        assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", "443x", 1), 0);
        assert_int_equal(resolve(&o, &cfg, &err), -EINVAL);
        (void)unsetenv("KUBERNETES_SERVICE_HOST");
        (void)unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_api_server_without_cluster(void **state)
{
        char sa[1024];
        struct kube_options o = { .sa_dir = sa, .api_server = "http://127.0.0.1:8001" };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        /* not in a cluster, no files: a local proxy without credentials */
        (void)snprintf(sa, sizeof(sa), "%s/none", tmp);
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.server, "http://127.0.0.1:8001");
        assert_null(cfg.token_file);
        assert_null(cfg.ca_file);
        assert_string_equal(cfg.namespace, "default");
        kube_config_release(&cfg);

        o.api_server = "ftp://x";
        assert_int_equal(resolve(&o, &cfg, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "is not an http(s):// URL"));
}

static void test_nothing_configured(void **state)
{
        char sa[1024], home[2048];
        struct kube_options o = { .sa_dir = sa };
        struct kube_config cfg;
        struct b4_error err;

        (void)state;
        (void)snprintf(sa, sizeof(sa), "%s/none", tmp);
        assert_int_equal(resolve(&o, &cfg, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "not in a cluster"));

        /* ~/.kube/config is the last resort */
        (void)snprintf(home, sizeof(home), "%s/.kube", tmp);
        assert_int_equal(mkdir(home, 0700), 0);
        (void)snprintf(home, sizeof(home), "%s/.kube/config", tmp);
        assert_int_equal(symlink(fx("config.json"), home), 0);
        assert_int_equal(resolve(&o, &cfg, &err), 0);
        assert_string_equal(cfg.token, "json-token");
        kube_config_release(&cfg);
        assert_int_equal(unlink(home), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_current_context),
                cmocka_unit_test(test_named_context_files),
                cmocka_unit_test(test_named_context_data),
                cmocka_unit_test(test_token_file_and_anonymous),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_insecure_allowed),
                cmocka_unit_test(test_merge_first_wins),
                cmocka_unit_test(test_json_kubeconfig),
                cmocka_unit_test(test_explicit_over_kubeconfig),
                cmocka_unit_test(test_in_cluster),
                cmocka_unit_test(test_api_server_without_cluster),
                cmocka_unit_test(test_nothing_configured),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
