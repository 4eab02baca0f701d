/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider's daemon-free parts: the keeper identity (reference §3.3 JSON, field
 * order and hash), the container-create body, the path-stat header, base64, URL encoding,
 * the PID-exhaustion detectors, the sandbox user's DAC, the construction-time refusals and the
 * seccomp profile made from core's syscall policy.
 */

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "agent/agent-client.h"
#include "b4-test.h"
#include "base/hash.h"
#include "core/launch.h"
#include "core/syscall-policy.h"
#include "docker/docker.h"
#include "docker/net.h"
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

/* The network spec (net.h) decides NetworkMode and adds the resolv.conf bind. */
static void test_keeper_body_net(void **state)
{
        struct b4_policy p;
        struct jv *b = NULL, *h;
        const struct docker_seccomp sc = { "seccomp={}", "digest" };
        struct docker_net_spec net = { .mode = "b4-net-abc" };

        b4_policy_init(&p);
        p.network = B4_NETWORK_ALLOW;
        assert_int_equal(
                docker_keeper_body("img", &p, "abc", "ident", &sc,
                                   &(struct docker_keeper_opts){ .scope = "s", .net = &net }, &b),
                0);
        h = jv_object_get(b, "HostConfig");
        assert_string_equal(jv_string(jv_object_get(h, "NetworkMode")), "b4-net-abc");
        assert_null(jv_object_get(h, "Binds")); /* the workspace is a Mounts entry */
        jv_unref(b);
        net = (struct docker_net_spec){ .mode = "none",
                                        .resolv_bind =
                                                (char *)"/run/x.resolv:/etc/resolv.conf:ro" };
        assert_int_equal(
                docker_keeper_body("img", &p, "abc", "ident", &sc,
                                   &(struct docker_keeper_opts){ .scope = "s", .net = &net }, &b),
                0);
        h = jv_object_get(b, "HostConfig");
        assert_string_equal(jv_string(jv_object_get(h, "NetworkMode")), "none");
        assert_int_equal(jv_array_size(jv_object_get(h, "Binds")), 1);
        assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "Binds"), 0)),
                            "/run/x.resolv:/etc/resolv.conf:ro");
        jv_unref(b);
        b4_policy_clear(&p);
        (void)state;
}

static void test_keeper_body(void **state)
{
        struct b4_policy p;
        struct jv *b = NULL, *h;
        char *json = NULL;
        const struct docker_seccomp sc = { "seccomp={\"x\":1}", "digest" };
        struct docker_net_spec net = { .mode = "none" };

        b4_policy_init(&p);
        p.network = B4_NETWORK_DENY;
        p.resources.memory_mb = 64;
        p.resources.cpus = 0.5;
        assert_int_equal(
                docker_keeper_body("img", &p, "abc", "ident", &sc,
                                   &(struct docker_keeper_opts){ .scope = "sc", .net = &net }, &b),
                0);
        h = jv_object_get(b, "HostConfig");
        assert_int_equal(jv_dump(jv_object_get(h, "Mounts"), 0, &json), 0);
        assert_string_equal(json,
                            "[{\"Type\":\"volume\",\"Source\":\"b4-sbx-vol-abc\","
                            "\"Target\":\"/workspace\",\"VolumeOptions\":{\"NoCopy\":true,"
                            "\"Labels\":{\"b4.sandbox\":\"abc\",\"b4.sandbox.scope\":\"sc\"}}}]");
        free(json);
        assert_null(jv_object_get(h, "Binds"));
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
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(b, "Labels"), "b4.sandbox.seccomp")),
                "digest");
        assert_int_equal(jv_dump(jv_object_get(h, "SecurityOpt"), 0, &json), 0);
        assert_string_equal(json, "[\"no-new-privileges\",\"seccomp={\\\"x\\\":1}\"]");
        free(json);
        assert_int_equal(jv_dump(jv_object_get(b, "Cmd"), 0, &json), 0);
        assert_string_equal(json, "[\"sleep\",\"infinity\"]");
        free(json);
        jv_unref(b);
        /* root, everything off: no user, no caps/nnp/read-only flags, a plain bind; the
         * seccomp profile stays */
        p.security.run_as_non_root = false;
        p.security.drop_all_capabilities = false;
        p.security.no_new_privileges = false;
        p.security.read_only_root = false;
        assert_int_equal(docker_keeper_body("img", &p, "abc", "ident", &sc,
                                            &(struct docker_keeper_opts){ .scope = "sc",
                                                                          .copy_image = true,
                                                                          .agent = "/x/agent",
                                                                          .net = &net },
                                            &b),
                         0);
        h = jv_object_get(b, "HostConfig");
        assert_null(jv_object_get(b, "User"));
        assert_null(jv_object_get(h, "CapDrop"));
        assert_int_equal(jv_array_size(jv_object_get(h, "SecurityOpt")), 1);
        assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "SecurityOpt"), 0)), sc.opt);
        assert_null(jv_object_get(h, "ReadonlyRootfs"));
        assert_null(jv_object_get(h, "Tmpfs"));
        assert_true(jv_is_true(jv_object_get(h, "Init")));
        assert_int_equal(jv_dump(jv_object_get(h, "Mounts"), 0, &json), 0);
        assert_string_equal(json,
                            "[{\"Type\":\"volume\",\"Source\":\"b4-sbx-vol-abc\","
                            "\"Target\":\"/workspace\",\"VolumeOptions\":{\"NoCopy\":false,"
                            "\"Labels\":{\"b4.sandbox\":\"abc\",\"b4.sandbox.scope\":\"sc\"}}},"
                            "{\"Type\":\"bind\",\"Source\":\"/x/agent\","
                            "\"Target\":\"/.b4box/agent\",\"ReadOnly\":true}]");
        free(json);
        jv_unref(b);
        b4_policy_clear(&p);
}

/* ---- the seccomp profile (core's syscall policy as Docker's format) ---- */

static bool has_name(struct jv *entry, const char *name)
{
        struct jv *names = jv_object_get(entry, "names");

        for (size_t i = 0; i < jv_array_size(names); i++)
                if (strcmp(jv_string(jv_array_get(names, i)), name) == 0)
                        return true;
        return false;
}

static bool is_allow(struct jv *entry)
{
        return strcmp(jv_string(jv_object_get(entry, "action")), "SCMP_ACT_ALLOW") == 0;
}

/* The argument-0 values of the ALLOW entries for @name, each compared with @op (asserted:
 * one argument, index 0, valueTwo 0), into @v; returns how many. */
static size_t allowed_values(struct jv *calls, const char *name, const char *op, int64_t *v)
{
        size_t n = 0;

        for (size_t i = 0; i < jv_array_size(calls); i++) {
                struct jv *e = jv_array_get(calls, i), *args = jv_object_get(e, "args"), *a;
                if (!has_name(e, name))
                        continue;
                assert_true(is_allow(e));
                assert_int_equal(jv_array_size(args), 1);
                a = jv_array_get(args, 0);
                assert_int_equal(jv_integer(jv_object_get(a, "index")), 0);
                assert_int_equal(jv_integer(jv_object_get(a, "valueTwo")), 0);
                assert_string_equal(jv_string(jv_object_get(a, "op")), op);
                v[n++] = jv_integer(jv_object_get(a, "value"));
        }
        return n;
}

/* The one entry listing @name without arguments: its action and errnoRet (0 when none). */
static const char *plain_entry(struct jv *calls, const char *name, int64_t *errno_ret)
{
        const char *action = NULL;

        for (size_t i = 0; i < jv_array_size(calls); i++) {
                struct jv *e = jv_array_get(calls, i);
                if (!has_name(e, name))
                        continue;
                assert_null(jv_object_get(e, "args"));
                assert_null(action); /* listed once */
                action = jv_string(jv_object_get(e, "action"));
                *errno_ret = jv_integer(jv_object_get(e, "errnoRet"));
        }
        return action;
}

static void assert_denied(struct jv *calls, const char *name)
{
        int64_t e = -1;
        const char *action = plain_entry(calls, name, &e);

        if (!action || strcmp(action, "SCMP_ACT_ERRNO") != 0 || e != EPERM)
                fail_msg("%s: %s errnoRet %lld, want SCMP_ACT_ERRNO 1", name,
                         action ? action : "absent", (long long)e);
}

static void test_seccomp_profile(void **state)
{
        const struct syscall_policy *sp = syscall_policy();
        struct jv *prof = NULL, *calls, *allow;
        int64_t v[16], e = 0;
        size_t n;

        assert_int_equal(docker_seccomp_profile(&prof), 0);
        assert_string_equal(jv_string(jv_object_get(prof, "defaultAction")), "SCMP_ACT_ERRNO");
        assert_int_equal(jv_integer(jv_object_get(prof, "defaultErrnoRet")), EPERM);
        assert_int_equal(jv_array_size(jv_object_get(prof, "architectures")), 1);
#ifdef __x86_64__
        assert_string_equal(jv_string(jv_array_get(jv_object_get(prof, "architectures"), 0)),
                            "SCMP_ARCH_X86_64");
#endif
        assert_null(jv_object_get(prof, "archMap")); /* Docker refuses both */
        calls = jv_object_get(prof, "syscalls");
        /* the allow list: every known call but the denied and the conditional ones */
        allow = jv_array_get(calls, 0);
        assert_true(is_allow(allow) && !jv_object_get(allow, "args"));
        assert_true(jv_array_size(jv_object_get(allow, "names")) > 250);
        for (size_t i = 0; i < jv_array_size(jv_object_get(allow, "names")); i++)
                assert_false(syscall_policy_denies(
                        jv_string(jv_array_get(jv_object_get(allow, "names"), i))));
        for (const char *const *k = (const char *const[]){ "read", "write", "openat", "execve",
                                                           "wait4", "exit_group", "mmap", NULL };
             *k; k++)
                assert_string_equal(plain_entry(calls, *k, &e), "SCMP_ACT_ALLOW");
        /* what the probe finds allowed under Docker's default on Docker 20.10: errno(EPERM) */
        for (const char *const *k =
                     (const char *const[]){ "ptrace", "io_uring_setup", "io_uring_enter",
                                            "io_uring_register", "unshare", "mount", "keyctl",
                                            "bpf", "setns", "kcmp", "memfd_secret",
                                            "name_to_handle_at", "process_vm_readv", NULL };
             *k; k++)
                assert_denied(calls, *k);
#ifdef __x86_64__
        assert_denied(calls, "modify_ldt");
        assert_denied(calls, "tuxcall");
#endif
        /* every denied call this architecture has is listed as errno(EPERM), never allowed */
        for (size_t i = 0; i < sp->n_denied; i++)
                if (plain_entry(calls, sp->denied[i], &e))
                        assert_denied(calls, sp->denied[i]);
        /* the argument rules */
        n = allowed_values(calls, "socket", "SCMP_CMP_EQ", v);
        assert_int_equal(n, 4);
        assert_int_equal(v[0], AF_UNIX);
        assert_int_equal(v[1], AF_INET);
        assert_int_equal(v[2], AF_INET6);
        assert_int_equal(v[3], AF_NETLINK);
        assert_int_equal(allowed_values(calls, "socketpair", "SCMP_CMP_EQ", v), 4);
        n = allowed_values(calls, "personality", "SCMP_CMP_EQ", v);
        assert_int_equal(n, 5);
        assert_int_equal(v[0], 0);
        assert_int_equal(v[1], 8);
        assert_int_equal(v[2], 0x20000);
        assert_int_equal(v[3], 0x20008);
        assert_int_equal(v[4], 0xffffffffll);
        n = allowed_values(calls, "clone", "SCMP_CMP_MASKED_EQ", v);
        assert_int_equal(n, 1);
        assert_int_equal(v[0], CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID |
                                       CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP);
        assert_string_equal(plain_entry(calls, "clone3", &e), "SCMP_ACT_ERRNO");
        assert_int_equal(e, ENOSYS);
        jv_unref(prof);
}

static void test_seccomp_opt(void **state)
{
        char *opt = NULL, digest[65], want[65];
        struct jv *v = NULL;

        assert_int_equal(docker_seccomp_opt(&opt, digest), 0);
        assert_int_equal(strncmp(opt, "seccomp={", 9), 0);
        assert_int_equal(jv_parse(opt + 8, strlen(opt + 8), &v, NULL), 0);
        assert_true(jv_is_array(jv_object_get(v, "syscalls")));
        sha256_hex(opt + 8, strlen(opt + 8), want);
        assert_string_equal(digest, want);
        jv_unref(v);
        free(opt);
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

/* ---- the agent transport: Docker's stdout/stderr frames ---- */

static size_t frame(char *out, int stream, const char *payload, size_t n)
{
        out[0] = (char)stream;
        out[1] = out[2] = out[3] = 0;
        out[4] = (char)(n >> 24);
        out[5] = (char)(n >> 16);
        out[6] = (char)(n >> 8);
        out[7] = (char)n;
        memcpy(out + 8, payload, n);
        return 8 + n;
}

/* Feed @in (after @np pending bytes) and read everything: the stdout payload, the end. */
static ssize_t drain(const char *in, size_t len, size_t np, char *out, size_t cap)
{
        struct agent_transport t;
        char *pending = np ? malloc(np) : NULL;
        size_t got = 0;
        ssize_t n;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        if (np)
                memcpy(pending, in, np);
        assert_int_equal(write(sv[1], in + np, len - np), (ssize_t)(len - np));
        close(sv[1]);
        assert_int_equal(docker_agent_transport(sv[0], pending, np, &t), 0);
        while ((n = t.read(t.userdata, out + got, 3)) > 0) /* small reads: frames straddle */
                got += (size_t)n;
        t.close(t.userdata);
        assert_true(got <= cap);
        return n < 0 ? n : (ssize_t)got;
}

static void test_agent_transport(void **state)
{
        char in[256], out[256];
        size_t n = 0;

        n += frame(in + n, 1, "hello ", 6);
        n += frame(in + n, 2, "agent stderr\n", 13);
        n += frame(in + n, 1, "", 0);
        n += frame(in + n, 1, "world", 5);
        for (size_t np = 0; np <= n; np += 5) {
                memset(out, 0, sizeof(out));
                assert_int_equal(drain(in, n, np, out, sizeof(out)), 11);
                assert_string_equal(out, "hello world");
        }
        /* a stream id Docker never sends, non-zero padding, a cut header or payload */
        n = frame(in, 3, "x", 1);
        assert_int_equal(drain(in, n, 0, out, sizeof(out)), -EPROTO);
        n = frame(in, 1, "x", 1);
        in[2] = 1;
        assert_int_equal(drain(in, n, 0, out, sizeof(out)), -EPROTO);
        n = frame(in, 1, "abc", 3);
        assert_int_equal(drain(in, 5, 0, out, sizeof(out)), -EPROTO);
        assert_int_equal(drain(in, n - 1, 0, out, sizeof(out)), -EPROTO);
        assert_int_equal(drain(in, 0, 0, out, sizeof(out)), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_identity),
                cmocka_unit_test(test_keeper_body),
                cmocka_unit_test(test_keeper_body_net),
                cmocka_unit_test(test_path_stat),
                cmocka_unit_test(test_codecs),
                cmocka_unit_test(test_pid_detectors),
                cmocka_unit_test(test_dac),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_seccomp_profile),
                cmocka_unit_test(test_seccomp_opt),
                cmocka_unit_test(test_agent_transport),
        };

        return cmocka_run_group_tests_name("docker unit", tests, NULL, NULL);
}
