/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider's daemon-free parts: the keeper identity (reference §3.3 JSON, field
 * order and hash), the container-create body, the path-stat header, base64, URL encoding,
 * the PID-exhaustion detectors, the sandbox user's DAC and the construction-time refusals.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "core/launch.h"
#include "docker/docker.h"
#include "json/json.h"

static void test_identity(void **state)
{
        struct b4_policy p;
        char id[65];
        char *json = NULL;

        b4_policy_init(&p);
        assert_int_equal(launch_config_json(&p, &json), 0);
        assert_string_equal(json, "{\"networkMode\":\"bridge\",\"env\":[[\"HOME\",\"/workspace\"]],"
                                  "\"memoryMb\":null,\"cpus\":null,\"dropAllCapabilities\":true,"
                                  "\"noNewPrivileges\":true,\"readOnlyRootFilesystem\":true,"
                                  "\"pidsLimit\":512,\"user\":{\"uid\":1000,\"gid\":1000},"
                                  "\"init\":true}");
        free(json);
        assert_int_equal(launch_identity("img", &p, id), 0);
        assert_string_equal(id, "07f981092504164c29bb45d945fa3fa0ea8eb332680c2e70df22f84fd9a4ae7b");
        p.network = B4_NETWORK_DENY;
        p.resources.memory_mb = 256;
        p.resources.cpus = 1.5;
        p.resources.timeout_ms = 5000; /* not part of the identity */
        assert_int_equal(b4_policy_set_env(&p, "Z", "x"), 0);
        assert_int_equal(b4_policy_set_env(&p, "HOME", "/elsewhere"), 0);
        assert_int_equal(b4_policy_set_env(&p, "A", "1"), 0);
        assert_int_equal(launch_identity("img", &p, id), 0);
        assert_string_equal(id, "082814b1623d779cd758331e781e2808ec37b06faae9edcfec3c4d88c62ed118");
        b4_policy_clear(&p);
}

static void test_keeper_body(void **state)
{
        struct b4_policy p;
        struct jv *b = NULL, *h;
        char *json = NULL;

        b4_policy_init(&p);
        p.network = B4_NETWORK_DENY;
        p.resources.memory_mb = 64;
        p.resources.cpus = 0.5;
        assert_int_equal(docker_keeper_body("img", &p, "abc", "ident", &b), 0);
        h = jv_object_get(b, "HostConfig");
        assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "Binds"), 0)),
                            "b4-sbx-vol-abc:/workspace:nocopy");
        assert_string_equal(jv_string(jv_object_get(h, "NetworkMode")), "none");
        assert_int_equal(jv_integer(jv_object_get(h, "Memory")), 64 << 20);
        assert_int_equal(jv_integer(jv_object_get(h, "NanoCpus")), 500000000);
        assert_true(jv_is_true(jv_object_get(h, "Init")));
        assert_int_equal(jv_integer(jv_object_get(h, "PidsLimit")), 512);
        assert_string_equal(jv_string(jv_object_get(b, "User")), "1000:1000");
        assert_string_equal(jv_string(jv_object_get(jv_object_get(b, "Labels"), "b4.sandbox")),
                            "abc");
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(b, "Labels"), "b4.sandbox.identity")),
                "ident");
        assert_int_equal(jv_dump(jv_object_get(b, "Cmd"), 0, &json), 0);
        assert_string_equal(json, "[\"sleep\",\"infinity\"]");
        free(json);
        jv_unref(b);
        /* root, everything off: no user, no caps/nnp/read-only flags, a plain bind */
        p.security.run_as_non_root = false;
        p.security.drop_all_capabilities = false;
        p.security.no_new_privileges = false;
        p.security.read_only_root = false;
        assert_int_equal(docker_keeper_body("img", &p, "abc", "ident", &b), 0);
        h = jv_object_get(b, "HostConfig");
        assert_null(jv_object_get(b, "User"));
        assert_null(jv_object_get(h, "CapDrop"));
        assert_null(jv_object_get(h, "SecurityOpt"));
        assert_null(jv_object_get(h, "ReadonlyRootfs"));
        assert_null(jv_object_get(h, "Tmpfs"));
        assert_true(jv_is_true(jv_object_get(h, "Init")));
        assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "Binds"), 0)),
                            "b4-sbx-vol-abc:/workspace");
        jv_unref(b);
        b4_policy_clear(&p);
}

static void test_path_stat(void **state)
{
        struct docker_path_stat st = { 0 };

        assert_int_equal(
                docker_path_stat_parse("eyJuYW1lIjogImwiLCAic2l6ZSI6IDcsICJtb2RlIjogMTM0MjE4MjM5LC"
                                       "AibXRpbWUiOiAiMjAyNC0wMS0wMlQwMzowNDowNS42Nzg5MDEyMzQrMDE6"
                                       "MDAiLCAibGlua1RhcmdldCI6ICIvd29ya3NwYWNlL3QifQ==",
                                       &st),
                0);
        assert_string_equal(st.name, "l");
        assert_int_equal(st.size, 7);
        assert_true(st.mode & GO_MODE_SYMLINK);
        assert_int_equal(st.mode & 0777, 0777);
        assert_int_equal(st.mtime_ms, 1704161045678LL);
        assert_string_equal(st.link_target, "/workspace/t");
        docker_path_stat_clear(&st);
        assert_int_equal(docker_path_stat_parse("!!!", &st), -EPROTO);
        assert_int_equal(docker_path_stat_parse("bm90IGpzb24=", &st), -EPROTO);
}

static void test_codecs(void **state)
{
        char *s = NULL;
        size_t len;

        assert_int_equal(docker_base64_decode("aGVs\nbG8g\r\nd29y bGQ=", 22, &s, &len), 0);
        assert_int_equal(len, 11);
        assert_string_equal(s, "hello world");
        free(s);
        assert_int_equal(docker_base64_decode("a$b", 3, &s, &len), -EPROTO);
        assert_int_equal(docker_urlencode("/workspace/a b:c?&é", &s), 0);
        assert_string_equal(s, "/workspace/a%20b%3Ac%3F%26%C3%A9");
        free(s);
        assert_int_equal(docker_shell_quote("it's", &s), 0);
        assert_string_equal(s, "'it'\\''s'");
        free(s);
}

static void test_pid_detectors(void **state)
{
        assert_true(docker_shell_fork_failure("sh: can't fork\n"));
        assert_true(docker_shell_fork_failure("sh: 12: Cannot fork\n\n"));
        assert_true(docker_shell_fork_failure(
                "sh: line 0: can't fork: Resource temporarily unavailable\n"
                "sh: fork: retry: Resource temporarily unavailable\n"));
        assert_false(docker_shell_fork_failure(""));
        assert_false(docker_shell_fork_failure("sh: can't fork\nls: x: No such file\n"));
        assert_false(docker_shell_fork_failure("bash: can't fork\n"));
        assert_false(docker_shell_fork_failure("sh: 1a: can't fork\n"));
        assert_true(docker_admission_failure(
                "OCI runtime exec failed: exec failed: unable to start container process: "
                "read init-p: connection reset by peer: unknown"));
        assert_true(docker_admission_failure("OCI runtime exec failed: fork/exec: Resource "
                                             "temporarily unavailable"));
        assert_true(docker_admission_failure("OCI runtime exec failed: unable to start container "
                                             "process: procReady not received"));
        assert_false(docker_admission_failure("Resource temporarily unavailable"));
        assert_false(docker_admission_failure("OCI runtime exec failed: permission denied"));
}

static void test_dac(void **state)
{
        struct docker_dac u = { 0 };

        assert_int_equal(docker_dac_parse("U 1000\nG 1000 27 \nC 0000000000000000\n", &u), 0);
        assert_int_equal(u.uid, 1000);
        assert_int_equal(u.n_groups, 2);
        assert_int_equal(u.groups[1], 27);
        assert_false(u.override || u.read_search);
        /* owner class first, even when it grants less than the group or other class */
        assert_true(docker_dac_allows(&u, 1000, 1000, 0600, false, DOCKER_DAC_R));
        assert_false(docker_dac_allows(&u, 1000, 1000, 0077, false, DOCKER_DAC_R));
        assert_true(docker_dac_allows(&u, 0, 27, 0750, true, DOCKER_DAC_R | DOCKER_DAC_X));
        assert_false(docker_dac_allows(&u, 0, 0, 0700, true, DOCKER_DAC_X));
        assert_false(docker_dac_allows(&u, 0, 0, 0751, true, DOCKER_DAC_R | DOCKER_DAC_X));
        assert_true(docker_dac_allows(&u, 0, 0, 0751, true, DOCKER_DAC_X));
        /* root without capabilities is an ordinary owner (CapDrop ALL) */
        assert_int_equal(docker_dac_parse("U 0\nG 0\nC 0\n", &u), 0);
        assert_false(docker_dac_allows(&u, 1000, 1000, 0600, false, DOCKER_DAC_R));
        assert_true(docker_dac_allows(&u, 0, 0, 0600, false, DOCKER_DAC_R));
        /* CAP_DAC_OVERRIDE: everything but executing a file without any x bit */
        assert_int_equal(docker_dac_parse("C 2\nU 0\nG 0\n", &u), 0);
        assert_true(docker_dac_allows(&u, 1000, 1000, 0, true, DOCKER_DAC_R | DOCKER_DAC_X));
        assert_false(docker_dac_allows(&u, 1000, 1000, 0600, false, DOCKER_DAC_X));
        /* CAP_DAC_READ_SEARCH: reads and searches, never writes */
        assert_int_equal(docker_dac_parse("U 5\nG 5\nC 4\n", &u), 0);
        assert_true(docker_dac_allows(&u, 0, 0, 0, true, DOCKER_DAC_R | DOCKER_DAC_X));
        assert_false(docker_dac_allows(&u, 0, 0, 0, false, DOCKER_DAC_W));
        /* malformed or incomplete */
        assert_int_equal(docker_dac_parse("U 1000\nG 1000\n", &u), -EPROTO);
        assert_int_equal(docker_dac_parse("U 1000\nU 1\nG 1\nC 0\n", &u), -EPROTO);
        assert_int_equal(docker_dac_parse("U x\nG 1\nC 0\n", &u), -EPROTO);
        assert_int_equal(docker_dac_parse("U 1\nG 1 -2\nC 0\n", &u), -EPROTO);
        assert_int_equal(docker_dac_parse("", &u), -EPROTO);
}

static void test_refusals(void **state)
{
        struct b4_provider_config cfg = { .type = (char *)"docker", .scope = (char *)" \t" };
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };

        assert_int_equal(b4_provider_new(&cfg, &p, &err), -EINVAL);
        assert_string_equal(err.msg, "Sandbox scope must be a non-empty application/environment "
                                     "identifier");
        cfg.scope = (char *)"s";
        assert_int_equal(b4_provider_new(&cfg, &p, &err), -EINVAL);
        assert_string_equal(err.msg, "dockerSandbox needs an image, or an images predicate when "
                                     "every thread names its own image");
        cfg.image = (char *)"img";
        cfg.docker_host = (char *)"tcp://127.0.0.1:2375";
        assert_int_equal(b4_provider_new(&cfg, &p, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "only unix:// sockets are"));
        cfg.docker_host = (char *)"unix:///nonexistent.sock";
        assert_int_equal(b4_provider_new(&cfg, &p, &err), 0);
        assert_string_equal(b4_provider_name(p), "docker");
        assert_true(b4_provider_has_reader(p));
        b4_provider_free(p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_identity),      cmocka_unit_test(test_keeper_body),
                cmocka_unit_test(test_path_stat),     cmocka_unit_test(test_codecs),
                cmocka_unit_test(test_pid_detectors), cmocka_unit_test(test_dac),
                cmocka_unit_test(test_refusals),
        };

        return cmocka_run_group_tests_name("docker unit", tests, NULL, NULL);
}
