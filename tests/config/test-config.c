/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box.json: defaults, good configs, and every refusal with its exact text. Most refusal
 * cases are data-driven (tests/data/config/NAME.test): each case is
 *
 *   ### name
 *   <b4box.json text, any number of lines>
 *   ---
 *   <expected refusal, one per line, in order; nothing = the config is valid>
 *
 * parsed with base_dir "/app". Lines starting with "#" before the first case are comments.
 */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"

static int parse(const char *json, struct b4_config **ret, char ***ret_errors)
{
        return b4_config_parse(json, strlen(json), "/app", ret, ret_errors, NULL);
}

/* Parse @json, expect exactly one refusal equal to @msg. */
static void expect_refusal(const char *json, const char *msg)
{
        struct b4_config *cfg = NULL;
        char **errors = NULL;

        assert_int_equal(parse(json, &cfg, &errors), -EINVAL);
        assert_null(cfg);
        assert_non_null(errors);
        assert_string_equal(errors[0], msg);
        assert_null(errors[1]);
        strv_free(errors);
}

static struct b4_config *expect_ok(const char *json)
{
        struct b4_config *cfg = NULL;
        char **errors = NULL;
        int r = parse(json, &cfg, &errors);

        STRV_FOREACH (e, errors)
                print_error("unexpected refusal: %s\n", *e);
        strv_free(errors);
        assert_int_equal(r, 0);
        assert_non_null(cfg);
        return cfg;
}

static void test_config_default(void **state)
{
        struct b4_config *cfg = NULL;
        const struct b4_policy *p;

        assert_int_equal(b4_config_default(&cfg, NULL), 0);
        assert_string_equal(cfg->sandbox.provider.type, "native");
        assert_string_equal(cfg->sandbox.provider.scope, "b4box");
        assert_null(cfg->sandbox.provider.image);
        assert_string_equal(cfg->server.listen, "127.0.0.1:4100");
        assert_int_equal(cfg->permissions.mode, B4_PERMISSION_NON_INTERACTIVE);
        assert_false(cfg->thread_access.present);
        assert_int_equal(cfg->sandbox.idle_timeout_ms, 600000);
        assert_int_equal(cfg->sandbox.workspace_read_timeout_ms, 120000);
        assert_int_equal(cfg->sandbox.workspace_kind, B4_WORKSPACE_NONE);
        assert_int_equal(cfg->sandbox.thread_kind, B4_THREAD_NONE);
        p = b4_config_policy(cfg);
        assert_int_equal(p->network, B4_NETWORK_ALLOW);
        assert_null(p->network_list);
        assert_int_equal(p->n_env, 0);
        assert_true(p->security.drop_all_capabilities);
        assert_true(p->security.no_new_privileges);
        assert_true(p->security.read_only_root);
        assert_true(p->security.run_as_non_root);
        assert_int_equal(p->security.uid, 1000);
        assert_int_equal(p->security.gid, 1000);
        assert_int_equal(p->security.pids_limit, 512);
        assert_int_equal(p->output_cap, B4_DEFAULT_OUTPUT_CAP);
        assert_non_null(cfg->base_dir);
        assert_int_equal(cfg->base_dir[0], '/');
        b4_config_free(cfg);
}

/* The typed list: what each entry kind parses to, and the dns defaults and options. */
static void test_config_network_entries(void **state)
{
        struct b4_config *cfg =
                expect_ok("{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"},"
                          " \"network\": {\"mode\": \"deny\", \"allowlist\": ["
                          "\"10.1.0.0/16:80-90\", \"[2001:db8::1]:443\", \"Api.Example.COM.\","
                          " \"*.example.com\", \"203.0.113.7\"],"
                          " \"dns\": {\"pinCapSeconds\": 60, \"upstream\": [\"192.0.2.53\"]}}}}");
        const struct b4_policy *p = b4_config_policy(cfg);
        const struct b4_net_entry *e = p->network_list;
        uint8_t v6[16];

        assert_int_equal(p->n_network_list, 5);
        assert_int_equal(e[0].kind, B4_NET_CIDR);
        assert_int_equal(e[0].family, AF_INET);
        assert_memory_equal(e[0].addr, ((uint8_t[]){ 10, 1, 0, 0 }), 4);
        assert_int_equal(e[0].prefix, 16);
        assert_int_equal(e[0].port_lo, 80);
        assert_int_equal(e[0].port_hi, 90);
        assert_string_equal(e[0].text, "10.1.0.0/16:80-90");
        assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", v6), 1);
        assert_int_equal(e[1].family, AF_INET6);
        assert_memory_equal(e[1].addr, v6, 16);
        assert_int_equal(e[1].prefix, 128);
        assert_int_equal(e[1].port_lo, 443);
        assert_int_equal(e[2].kind, B4_NET_NAME);
        assert_string_equal(e[2].name, "api.example.com");
        assert_string_equal(e[2].text, "Api.Example.COM.");
        assert_int_equal(e[2].port_lo, 0);
        assert_int_equal(e[2].port_hi, 0);
        assert_int_equal(e[3].kind, B4_NET_WILDCARD);
        assert_string_equal(e[3].name, "example.com");
        assert_int_equal(e[4].prefix, 32);
        assert_int_equal(p->dns.pin_floor_s, B4_DEFAULT_PIN_FLOOR_S);
        assert_int_equal(p->dns.pin_cap_s, 60);
        assert_int_equal(p->dns.n_upstream, 1);
        assert_int_equal(p->dns.upstream[0].family, AF_INET);
        b4_config_free(cfg);
}

static void test_config_empty_object_is_default(void **state)
{
        struct b4_config *cfg = expect_ok("{}");

        assert_string_equal(cfg->sandbox.provider.type, "native");
        assert_string_equal(cfg->sandbox.provider.scope, "b4box");
        assert_string_equal(cfg->base_dir, "/app");
        b4_config_free(cfg);
}

static void test_config_full_sandbox(void **state)
{
        struct b4_config *cfg = expect_ok(
                "{\"server\": {\"listen\": \"unix:run/b4.sock\", \"maxBodyBytes\": 2048},"
                " \"sandbox\": {\"provider\": {\"type\": \"docker\", \"scope\": \" app \","
                "   \"image\": \"debian:12\", \"images\": [\"debian:*\"]},"
                "  \"network\": {\"mode\": \"deny\", \"allowlist\": [\"10.0.0.0/8\"]},"
                "  \"env\": {\"B\": \"2\", \"A\": \"1\"},"
                "  \"resources\": {\"memoryMb\": 512.0, \"cpus\": 1.5, \"timeoutMs\": 1000,"
                "   \"diskGb\": 2, \"outputCapBytes\": 4096},"
                "  \"security\": {\"runAsNonRoot\": {\"uid\": 0, \"gid\": 7}, \"pidsLimit\": 64,"
                "   \"readOnlyRootFilesystem\": false},"
                "  \"idleTimeoutMs\": 5000}}");
        const struct b4_policy *p = b4_config_policy(cfg);

        assert_string_equal(cfg->server.listen, "unix:/app/run/b4.sock");
        assert_int_equal(cfg->server.max_body_bytes, 2048);
        assert_string_equal(cfg->sandbox.provider.scope, " app ");
        assert_string_equal(cfg->sandbox.provider.docker_host, "unix:///var/run/docker.sock");
        assert_string_equal(cfg->sandbox.provider.images[0], "debian:*");
        assert_int_equal(p->network, B4_NETWORK_DENY);
        assert_string_equal(p->network_list[0].text, "10.0.0.0/8");
        assert_int_equal(p->n_env, 2);
        assert_string_equal(p->env[0].name, "A");
        assert_string_equal(p->env[1].value, "2");
        assert_int_equal(p->resources.memory_mb, 512);
        assert_true(p->resources.cpus == 1.5);
        assert_int_equal(p->resources.disk_gb, 2);
        assert_int_equal(p->output_cap, 4096);
        assert_true(p->security.run_as_non_root);
        assert_int_equal(p->security.uid, 0);
        assert_int_equal(p->security.gid, 7);
        assert_int_equal(p->security.pids_limit, 64);
        assert_false(p->security.read_only_root);
        assert_int_equal(cfg->sandbox.idle_timeout_ms, 5000);
        b4_config_free(cfg);
}

static void test_config_managed(void **state)
{
        struct b4_config *cfg = expect_ok(
                "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"t\"},"
                "  \"thread\": {\"command\": [\"bin/resolve\", \"--json\"], \"timeoutMs\": 5000},"
                "  \"workspaceRead\": \"http\", \"workspaceReadTimeoutMs\": 1000,"
                "  \"stagedWorkspaces\": {\"maxUploadBytes\": 1, \"retentionMs\": 60000}},"
                " \"threadAccess\": {\"principals\": [{\"name\": \"ctl\", \"tokenFile\": \"tok\","
                "   \"operations\": [\"thread.create\", \"workspace.source.put\"], \"threads\": "
                "\"all\"}], \"stagedSources\": \"own\"},"
                " \"permissions\": {\"mode\": \"bypass\", \"deny\": {\"bash\": [\"rm \"]}}}");
        const struct b4_sandbox_config *s = &cfg->sandbox;

        assert_int_equal(s->thread_kind, B4_THREAD_RESOLVER);
        assert_string_equal(s->thread_resolver.argv[0], "/app/bin/resolve");
        assert_string_equal(s->thread_resolver.argv[1], "--json");
        assert_int_equal(s->thread_resolver.timeout_ms, 5000);
        assert_true(s->workspace_read);
        assert_int_equal(s->workspace_read_timeout_ms, 1000);
        assert_true(s->staged.enabled);
        assert_int_equal(s->staged.max_upload_bytes, 1);
        assert_int_equal(s->staged.max_staged_bytes, 1024ull * 1024 * 1024);
        assert_int_equal(cfg->thread_access.n_principals, 1);
        assert_string_equal(cfg->thread_access.principals[0].token_file, "/app/tok");
        assert_int_equal(cfg->thread_access.principals[0].operations,
                         B4_OP_THREAD_CREATE | B4_OP_SOURCE_PUT);
        assert_int_equal(cfg->thread_access.principals[0].threads, B4_THREADS_ALL);
        assert_true(cfg->thread_access.staged_sources_own);
        assert_int_equal(cfg->permissions.mode, B4_PERMISSION_BYPASS);
        assert_string_equal(cfg->permissions.deny[B4_PERM_BASH][0], "rm ");
        assert_null(cfg->permissions.allow[B4_PERM_BASH]);
        b4_config_free(cfg);
}

static void test_config_targets(void **state)
{
        struct b4_config *cfg = expect_ok(
                "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"t\"},"
                "  \"thread\": {\"targets\": {\"key\": \"tier\", \"values\": {"
                "   \"big\": {\"workspace\": {\"source\": {\"directory\": \"ws\", \"include\": "
                "[\"a.txt\"], \"files\": [{\"path\": \"b.sh\", \"text\": \"x\", \"executable\": true}]},"
                "     \"baseline\": \"git\", \"environmentLinks\": [{\"path\": \"l\", \"target\": "
                "\"/opt/x\"}]},"
                "    \"environment\": {\"image\": \"debian:12\"},"
                "    \"policy\": {\"network\": {\"mode\": \"deny\"}, \"env\": {\"Z\": \"1\", "
                "\"Y\": \"\"}, \"resources\": {\"memoryMb\": 64}},"
                "    \"permissions\": {\"allow\": {\"zeta\": [\"a\"], \"bash\": [\"ls\"]}}}},"
                "   \"default\": {\"workspace\": {\"source\": {\"directory\": \".\", \"include\": []}}}}}}}");
        const struct b4_thread_targets *t = &cfg->sandbox.thread_targets;
        const struct b4_thread_sandbox *big;

        assert_int_equal(cfg->sandbox.thread_kind, B4_THREAD_TARGETS);
        assert_string_equal(t->key, "tier");
        assert_int_equal(t->n_values, 1);
        big = &t->values[0].sandbox;
        assert_string_equal(t->values[0].value, "big");
        assert_string_equal(big->workspace.directory, "ws");
        assert_string_equal(big->workspace.include[0], "a.txt");
        assert_true(big->workspace.baseline_git);
        assert_true(big->workspace.files[0].executable);
        assert_string_equal(big->workspace.links[0].target, "/opt/x");
        assert_string_equal(big->image, "debian:12");
        assert_true(big->policy.has_network);
        assert_int_equal(big->policy.network, B4_NETWORK_DENY);
        assert_true(big->policy.has_env);
        assert_string_equal(big->policy.env[0].name, "Y");
        assert_int_equal(big->policy.memory_mb, 64);
        assert_int_equal(big->n_allow, 2);
        assert_string_equal(big->allow[0].tool, "bash");
        assert_string_equal(big->allow[1].tool, "zeta");
        assert_non_null(t->fallback);
        assert_string_equal(t->fallback->workspace.directory, ".");
        b4_config_free(cfg);
}

/* Kubernetes: the in-cluster defaults, or a kubeconfig instead of them (docs/configuration.md). */
static void test_config_kubernetes(void **state)
{
        struct b4_config *cfg = expect_ok("{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\","
                                          " \"scope\": \"s\", \"image\": \"i\"}}}");
        const struct b4_provider_config *p = &cfg->sandbox.provider;

        assert_string_equal(p->kube_api, "https://kubernetes.default.svc");
        assert_string_equal(p->kube_namespace, "b4-sandboxes");
        assert_string_equal(p->kube_token_file,
                            "/var/run/secrets/kubernetes.io/serviceaccount/token");
        assert_null(p->kubeconfig);
        assert_null(p->kube_context);
        assert_null(p->kube_storage_class);
        assert_int_equal(p->kube_startup_timeout_ms, 60000);
        assert_false(p->kube_user_namespace);
        b4_config_free(cfg);
        cfg = expect_ok(
                "{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\", \"scope\": \"s\","
                " \"image\": \"i\", \"kubeconfig\": \"/etc/kube/config\", \"context\": \"c\","
                " \"storageClass\": \"fast\", \"startupTimeoutMs\": 5000, \"hostUsers\": false}}}");
        p = &cfg->sandbox.provider;
        assert_null(p->kube_api);
        assert_null(p->kube_token_file);
        assert_null(p->kube_ca_file);
        assert_string_equal(p->kubeconfig, "/etc/kube/config");
        assert_string_equal(p->kube_context, "c");
        assert_string_equal(p->kube_storage_class, "fast");
        assert_int_equal(p->kube_startup_timeout_ms, 5000);
        assert_true(p->kube_user_namespace);
        b4_config_free(cfg);
}

/* warmPool (docs/configuration.md): off without the key; the app's policy copied for the
 * pairs; the refusals' exact texts. */
static void test_config_kube_warm_pool(void **state)
{
        struct b4_config *cfg = expect_ok("{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\","
                                          " \"scope\": \"s\", \"image\": \"i\"}}}");
        const struct b4_provider_config *p = &cfg->sandbox.provider;

        assert_false(p->kube_pool);
        assert_int_equal(p->kube_pool_size, 0);
        assert_null(p->kube_pool_owner);
        assert_null(p->kube_pool_policy);
        b4_config_free(cfg);
        cfg = expect_ok("{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\", \"scope\": "
                        "\"s\", \"image\": \"i\", \"warmPool\": {\"size\": 0}}}}");
        p = &cfg->sandbox.provider;
        assert_true(p->kube_pool); /* lookups by label stay on */
        assert_int_equal(p->kube_pool_size, 0);
        assert_null(p->kube_pool_policy);
        b4_config_free(cfg);
        cfg = expect_ok("{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\", \"scope\": "
                        "\"s\", \"image\": \"i\", \"warmPool\": {\"size\": 64, \"owner\": "
                        "\"b4box-0.replica_A\"}}, \"network\": {\"mode\": \"deny\"}}}");
        p = &cfg->sandbox.provider;
        assert_int_equal(p->kube_pool_size, 64);
        assert_string_equal(p->kube_pool_owner, "b4box-0.replica_A");
        assert_non_null(p->kube_pool_policy);
        assert_int_equal(p->kube_pool_policy->network, B4_NETWORK_DENY);
        b4_config_free(cfg);

#define KPOOL(x)                                                              \
 "{\"sandbox\": {\"provider\": {\"type\": \"kubernetes\", \"scope\": \"s\", " \
 "\"image\": \"i\", \"warmPool\": " x "}}}"
        expect_refusal(KPOOL("3"), "b4box.json sandbox.provider.warmPool must be { \"size\": "
                                   "<pairs, 0 to 64>, \"owner\"?: <replica id> } (got: 3).");
        expect_refusal(KPOOL("{\"size\": 65}"),
                       "b4box.json sandbox.provider.warmPool.size must be an integer from 0 to 64 "
                       "(got: 65).");
        expect_refusal(KPOOL("{\"size\": 1, \"colour\": 1}"),
                       "b4box.json sandbox.provider.warmPool.colour is not a warm pool option "
                       "(known: size, owner).");
        expect_refusal(KPOOL("{\"size\": 1, \"owner\": \"-bad\"}"),
                       "b4box.json sandbox.provider.warmPool.owner must be a Kubernetes label "
                       "value: 1 to 63 of A-Z a-z 0-9 . _ -, a letter or digit at both ends "
                       "(got: \"-bad\").");
#undef KPOOL
}

static void test_config_reference_refusals(void **state)
{
        /* Reference §2.3, one per refusal; more in tests/data/config. */
        expect_refusal("{\"sandbox\": 1}", "b4box.json sandbox must be an object.");
        expect_refusal("{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, "
                       "\"colour\": 1}}",
                       "b4box.json sandbox.colour is not a sandbox option (known: workspace, "
                       "thread, workspaceRead, workspaceReadTimeoutMs, stagedWorkspaces, "
                       "provider, network, env, resources, security, idleTimeoutMs, idlePauseMs).");
        expect_refusal("{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"  \"}}}",
                       "Sandbox scope must be a non-empty application/environment identifier");
        expect_refusal("{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, "
                       "\"security\": {\"runAsNonRoot\": null}}}",
                       "b4box.json sandbox.security.runAsNonRoot may not be null: use true, "
                       "false or { uid, gid }.");
}

/* threadAccess.command: a policy program instead of, or after, principals. */
static void test_config_policy_program(void **state)
{
        struct b4_config *cfg;

        cfg = expect_ok("{\"threadAccess\": {\"command\": [\"bin/policy\", \"--strict\"]}}");
        assert_string_equal(cfg->thread_access.command[0], "/app/bin/policy");
        assert_string_equal(cfg->thread_access.command[1], "--strict");
        assert_null(cfg->thread_access.command[2]);
        assert_int_equal(cfg->thread_access.decision_timeout_ms, B4_DEFAULT_DECISION_TIMEOUT_MS);
        assert_int_equal(cfg->thread_access.n_principals, 0);
        b4_config_free(cfg);
        cfg = expect_ok(
                "{\"threadAccess\": {\"command\": [\"policy\"], \"decisionTimeoutMs\": 250,"
                " \"principals\": [{\"name\": \"a\", \"tokenFile\": \"t\","
                " \"operations\": [\"workspace.source.read\", \"workspace.source.delete\"]}]}}");
        assert_string_equal(cfg->thread_access.command[0], "policy"); /* found on PATH */
        assert_int_equal(cfg->thread_access.decision_timeout_ms, 250);
        assert_int_equal(cfg->thread_access.principals[0].operations,
                         B4_OP_SOURCE_READ | B4_OP_SOURCE_DELETE);
        b4_config_free(cfg);
        expect_refusal("{\"threadAccess\": {\"command\": []}}",
                       "b4box.json threadAccess.command must be a non-empty array of at most 256 "
                       "strings (got: []).");
        expect_refusal("{\"threadAccess\": {\"command\": [\"p\"], \"decisionTimeoutMs\": 0}}",
                       "b4box.json threadAccess.decisionTimeoutMs must be an integer from 1 to "
                       "60000 (got: 0).");
        expect_refusal("{\"threadAccess\": {}}",
                       "b4box.json threadAccess.principals must be an array of at most 64 "
                       "principals (got: undefined).");
        expect_refusal("{\"threadAccess\": {\"cmd\": 1, \"principals\": []}}",
                       "b4box.json threadAccess.cmd is not a threadAccess option (known: "
                       "principals, stagedSources, command, decisionTimeoutMs).");
}

static void test_config_number_quoting(void **state)
{
        static const struct {
                const char *value, *got;
        } cases[] = {
                { "1.5", "1.5" },
                { "1.0e7", "10000000" },
                { "0.1", "0.1" },
                { "1e21", "1e+21" },
                { "1e-7", "1e-7" },
                { "0.000001", "0.000001" },
                { "-2.5e-3", "-0.0025" },
                { "1.2345678901234568e23", "1.2345678901234569e+23" },
                { "5e-324", "5e-324" },
                { "0.000001234", "0.000001234" },
                { "\"60000\"", "\"60000\"" },
                { "null", "null" },
                { "[1,{\"a\":true}]", "[1,{\"a\":true}]" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char json[256], msg[256];

                snprintf(json, sizeof(json),
                         "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, "
                         "\"workspaceRead\": \"http\", \"thread\": {\"command\": [\"x\"]}, "
                         "\"workspaceReadTimeoutMs\": %s}, \"threadAccess\": {\"principals\": []}}",
                         cases[i].value);
                snprintf(msg, sizeof(msg),
                         "b4box.json sandbox.workspaceReadTimeoutMs must be an integer from "
                         "1000 to 1800000 (got: %s).",
                         cases[i].got);
                expect_refusal(json, msg);
        }
}

static void test_config_load(void **state)
{
        cleanup_free char *dir = b4_test_tmpdir();
        cleanup_free char *path = NULL, *missing = NULL;
        struct b4_error err = { 0 };
        struct b4_config *cfg = NULL;
        char **errors = NULL;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/b4box.json", dir) > 0);
        assert_true(asprintf(&missing, "%s/none.json", dir) > 0);
        assert_int_equal(b4_test_write(path, "{\"threadAccess\": {\"principals\": [{\"name\": "
                                             "\"a\", \"tokenFile\": \"t\", \"operations\": "
                                             "[\"thread.run\"]}]}}"),
                         0);
        assert_int_equal(b4_config_load(path, &cfg, &errors, &err), 0);
        assert_string_equal(cfg->base_dir, dir);
        assert_true(strncmp(cfg->thread_access.principals[0].token_file, dir, strlen(dir)) == 0);
        b4_config_free(cfg);
        assert_int_equal(b4_config_load(missing, &cfg, &errors, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "none.json"));
        assert_null(errors);
        assert_int_equal(b4_test_write(path, "{\"sandbox\": "), 0);
        assert_int_equal(b4_config_load(path, &cfg, &errors, &err), -EINVAL);
        assert_true(strncmp(errors[0], "b4box.json is not valid JSON: ", 30) == 0);
        strv_free(errors);
        b4_test_rmrf(dir);
}

static void test_config_error_cap(void **state)
{
        char json[64 * 1024];
        size_t n = 0;
        struct b4_config *cfg = NULL;
        char **errors = NULL;

        n += (size_t)snprintf(json + n, sizeof(json) - n, "{");
        for (int i = 0; i < 150; i++)
                n += (size_t)snprintf(json + n, sizeof(json) - n, "%s\"k%d\": 1", i ? "," : "", i);
        snprintf(json + n, sizeof(json) - n, "}");
        assert_int_equal(parse(json, &cfg, &errors), -EINVAL);
        assert_int_equal(strv_length(errors), B4_CONFIG_MAX_ERRORS + 1);
        assert_string_equal(errors[B4_CONFIG_MAX_ERRORS],
                            "b4box.json: 50 more refusals not shown.");
        strv_free(errors);
}

#ifdef B4_FAULT_INJECTION
/* Fail allocation 1, 2, ... N: every run returns 0, -EINVAL or -ENOMEM and leaks nothing. */
static void torture(const char *json, int want)
{
        int r = -ENOMEM;

        for (long n = 0; r == -ENOMEM && n < 100000; n++) {
                struct b4_config *cfg = NULL;
                char **errors = NULL;

                alloc_fail_after(n);
                r = parse(json, &cfg, &errors);
                alloc_fail_after(-1);
                assert_true(r == want || r == -ENOMEM);
                if (r == -ENOMEM) {
                        assert_null(cfg);
                        assert_null(errors);
                }
                b4_config_free(cfg);
                strv_free(errors);
        }
        assert_int_equal(r, want);
}

static void test_config_alloc_failures(void **state)
{
        torture("{\"server\": {\"listen\": \"unix:s\"}, \"sandbox\": {\"provider\": {\"type\": "
                "\"kubernetes\", \"scope\": \"s\", \"image\": \"i\", \"images\": [\"a\"]},"
                " \"env\": {\"A\": \"1\"}, \"network\": {\"mode\": \"allow\", \"denylist\": [\"x\"]},"
                " \"thread\": {\"targets\": {\"key\": \"k\", \"values\": {\"v\": {\"workspace\":"
                " {\"source\": {\"directory\": \".\", \"include\": [\"a\", \"b\"], \"files\":"
                " [{\"path\": \"c\", \"text\": \"x\"}]}, \"environmentLinks\": [{\"path\": \"l\","
                " \"target\": \"/t\"}]}, \"policy\": {\"env\": {\"B\": \"2\"}}, \"permissions\":"
                " {\"allow\": {\"bash\": [\"ls\"]}}}}, \"default\": {\"workspace\": {\"source\":"
                " {\"directory\": \".\", \"include\": []}}}}}},"
                " \"permissions\": {\"allow\": {\"bash\": [\"git \"]}},"
                " \"threadAccess\": {\"principals\": [{\"name\": \"a\", \"tokenFile\": \"t\","
                " \"operations\": [\"thread.run\"]}]}}",
                0);
        torture("{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"},"
                " \"thread\": {\"command\": [\"bin/r\"], \"timeoutMs\": 5000},"
                " \"stagedWorkspaces\": {\"maxUploadBytes\": 1000, \"retentionMs\": 60000}},"
                " \"threadAccess\": {\"principals\": []}}",
                0);
        torture("{\"sandbox\": {\"provider\": {\"type\": \"x\"}, \"a\": 1, \"b\": 2,"
                " \"workspace\": {\"command\": [\"bin/x\"]}}, \"c\": 3}",
                -EINVAL);
}
#endif

static void test_config_examples(void **state)
{
        static const char *const names[] = { "fake.json", "native.json" };
        const char *src = getenv("B4BOX_SRCDIR");

        assert_non_null(src);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                cleanup_free char *path = NULL;
                struct b4_error err = { 0 };
                struct b4_config *cfg = NULL;
                char **errors = NULL;

                assert_true(asprintf(&path, "%s/examples/%s", src, names[i]) > 0);
                assert_int_equal(b4_config_load(path, &cfg, &errors, &err), 0);
                assert_string_equal(cfg->sandbox.provider.scope, "example");
                b4_config_free(cfg);
        }
}

/* ---- data-driven cases ---- */

struct tcase {
        char *name;

        struct strbuf_lite {
                char *buf;
                size_t len;
        } json;

        char **expected;
};

static void append(struct strbuf_lite *b, const char *line)
{
        size_t n = strlen(line);

        b->buf = realloc(b->buf, b->len + n + 1);
        assert_non_null(b->buf);
        memcpy(b->buf + b->len, line, n + 1);
        b->len += n;
}

static int run_case(const char *file, struct tcase *tc)
{
        struct b4_config *cfg = NULL;
        char **errors = NULL;
        int fails = 0;
        size_t ne, nx;

        (void)b4_config_parse(tc->json.buf ? tc->json.buf : "", tc->json.len, "/app", &cfg, &errors,
                              NULL);
        ne = strv_length(errors);
        nx = strv_length(tc->expected);
        for (size_t i = 0; i < ne || i < nx; i++) {
                const char *got = i < ne ? errors[i] : "(none)";
                const char *want = i < nx ? tc->expected[i] : "(none)";

                if (strcmp(got, want) != 0) {
                        print_error("%s: %s: refusal %zu\n  want: %s\n  got:  %s\n", file, tc->name,
                                    i, want, got);
                        fails++;
                }
        }
        if ((nx == 0) != (cfg != NULL)) {
                print_error("%s: %s: config %s\n", file, tc->name, cfg ? "accepted" : "refused");
                fails++;
        }
        b4_config_free(cfg);
        strv_free(errors);
        return fails;
}

static void case_reset(struct tcase *tc, const char *name)
{
        free(tc->name);
        free(tc->json.buf);
        strv_free(tc->expected);
        *tc = (struct tcase){ 0 };
        if (name) {
                tc->name = strdup(name);
                tc->expected = calloc(1, sizeof(char *));
        }
}

static int run_file(const char *path, int *ret_cases)
{
        cleanup_fclose FILE *f = fopen(path, "re");
        struct tcase tc = { 0 };
        bool in_expected = false;
        char line[8192];
        int fails = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "### ", 4) == 0) {
                        if (tc.name) {
                                fails += run_case(path, &tc);
                                (*ret_cases)++;
                        }
                        line[strcspn(line, "\n")] = 0;
                        case_reset(&tc, line + 4);
                        in_expected = false;
                } else if (!tc.name) {
                        continue;
                } else if (!in_expected && strcmp(line, "---\n") == 0) {
                        in_expected = true;
                } else if (in_expected) {
                        line[strcspn(line, "\n")] = 0;
                        if (line[0])
                                assert_int_equal(strv_extend(&tc.expected, line), 0);
                } else {
                        append(&tc.json, line);
                }
        }
        if (tc.name) {
                fails += run_case(path, &tc);
                (*ret_cases)++;
        }
        case_reset(&tc, NULL);
        return fails;
}

static void test_config_data_files(void **state)
{
        const char *src = getenv("B4BOX_SRCDIR");
        cleanup_free char *dir = NULL;
        struct dirent *de;
        int fails = 0, cases = 0, files = 0;
        DIR *d;

        assert_non_null(src);
        assert_true(asprintf(&dir, "%s/tests/data/config", src) > 0);
        d = opendir(dir);
        assert_non_null(d);
        while ((de = readdir(d))) {
                cleanup_free char *p = NULL;
                size_t n = strlen(de->d_name);

                if (n < 6 || strcmp(de->d_name + n - 5, ".test") != 0)
                        continue;
                assert_true(asprintf(&p, "%s/%s", dir, de->d_name) > 0);
                fails += run_file(p, &cases);
                files++;
        }
        closedir(d);
        print_message("# %d data files, %d cases, %d mismatches\n", files, cases, fails);
        assert_true(files > 0);
        assert_true(cases > 20);
        assert_int_equal(fails, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_default),
                cmocka_unit_test(test_config_kubernetes),
                cmocka_unit_test(test_config_kube_warm_pool),
                cmocka_unit_test(test_config_empty_object_is_default),
                cmocka_unit_test(test_config_full_sandbox),
                cmocka_unit_test(test_config_network_entries),
                cmocka_unit_test(test_config_managed),
                cmocka_unit_test(test_config_targets),
                cmocka_unit_test(test_config_reference_refusals),
                cmocka_unit_test(test_config_policy_program),
                cmocka_unit_test(test_config_number_quoting),
                cmocka_unit_test(test_config_load),
                cmocka_unit_test(test_config_error_cap),
#ifdef B4_FAULT_INJECTION /* cmocka's TAP skip reads as a failure to meson */
                cmocka_unit_test(test_config_alloc_failures),
#endif
                cmocka_unit_test(test_config_examples),
                cmocka_unit_test(test_config_data_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
