/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider against a real dockerd (run under with-dockerd.sh, which provides the
 * daemon, a local test image and the scope, and removes everything by label afterwards):
 * the conformance suite, the hardening seen from inside the keeper (the seccomp probe of
 * tests/native among it), the exec and filesystem
 * fast paths, PID-exhaustion recovery with a real fork bomb, keeper replacement and readers.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "base/fd-util.h"
#include "base/time-util.h"
#include "docker/docker.h"
#include "json/json.h"

static const char *E_HOST, *E_IMAGE, *E_SCOPE;

static int make_provider_with(const char *image, struct b4_provider **ret, struct b4_error *err)
{
        struct b4_provider_config cfg = { .type = (char *)"docker",
                                          .scope = (char *)E_SCOPE,
                                          .image = (char *)image,
                                          .docker_host = (char *)E_HOST };

        return b4_provider_new(&cfg, ret, err);
}

static struct b4_provider *provider(void)
{
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };

        if (make_provider_with(E_IMAGE, &p, &err) < 0)
                fail_msg("provider: %s", err.msg);
        return p;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *thread, struct b4_policy *pol)
{
        struct b4_acquire_req req = { .thread_id = thread, .policy = pol };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                fail_msg("acquire %s: %s", thread, err.msg);
        return sb;
}

/* Run @cmd; returns stdout (caller frees), asserts the exit code. */
static char *run(struct b4_sandbox *sb, const char *cmd, int want_exit)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result x = { 0 };
        struct b4_error err = { 0 };
        char *out;

        if (b4_sandbox_exec(sb, &req, &x, &err) < 0)
                fail_msg("exec '%s': %s", cmd, err.msg);
        if (x.exit_code != want_exit)
                fail_msg("'%s' exited %d (stdout '%s', stderr '%s')", cmd, x.exit_code, x.out,
                         x.errout);
        out = x.out;
        x.out = NULL;
        b4_exec_result_clear(&x);
        return out;
}

static void destroy(struct b4_provider *p, const char *thread)
{
        (void)b4_provider_destroy(p, thread, NULL);
}

static struct jv *inspect(struct b4_provider *p, const char *what, const char *name)
{
        struct jv *v = NULL;
        char path[256];

        snprintf(path, sizeof(path), "/%s/%s%s", what, name,
                 strcmp(what, "containers") == 0 ? "/json" : "");
        if (docker_call(docker_provider_client(p), "GET", path, NULL, &v, NULL) < 0)
                return NULL;
        return v;
}

static void keeper_name(const char *thread, char name[64])
{
        char id[41];

        assert_int_equal(b4_resource_id(E_SCOPE, thread, id), 0);
        snprintf(name, 64, "b4-sbx-%s", id);
}

/* Which path this run exercises: B4BOX_DOCKER_AGENT=off (meson's *-fallback tests) forces
 * the archive/exec fallback; otherwise operations go through b4box-agent. */
static bool agent_mode(void)
{
        const char *e = getenv("B4BOX_DOCKER_AGENT");

        return !e || strcmp(e, "off") != 0;
}

/* ---- conformance ---- */

static int factory(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        return make_provider_with(E_IMAGE, ret, err);
}

static void test_conformance(void **state)
{
        size_t i = (size_t)(uintptr_t)*state;
        struct b4_conformance_opts o = { .make_provider = factory, .concurrency = 4 };
        struct b4_conformance_report rep = { 0 };

        assert_int_equal(b4_conformance_run_case(&o, i, &rep, NULL), 0);
        if (rep.result != B4_CONFORMANCE_PASS)
                fail_msg("%s: %s", rep.result == B4_CONFORMANCE_SKIP ? "skipped" : "failed",
                         rep.message);
}

/* ---- hardening, from inside ---- */

static void test_hardening(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        char name[64];
        char *out;
        struct jv *v;

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        pol.security.pids_limit = 77;
        pol.resources.memory_mb = 256;
        sb = acquire(p, "hard", &pol);
        out = run(sb,
                  "id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; "
                  "echo \"home=$HOME\"",
                  0);
        assert_string_equal(out, "1000\n1000\nCapPrm:\t0000000000000000\n"
                                 "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nhome=/workspace\n");
        free(out);
        out = run(sb, "touch /etc/x 2>&1; echo rc=$?; touch /tmp/x && echo tmp-ok", 0);
        assert_non_null(strstr(out, "Read-only file system"));
        assert_non_null(strstr(out, "tmp-ok"));
        free(out);
        out = run(sb, "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max",
                  0);
        assert_string_equal(out, "77\n");
        free(out);
        out = run(sb, "ls /sys/class/net", 0);
        assert_string_equal(out, "lo\n");
        free(out);
        out = run(sb, "stat -c '%u:%g %a' /workspace", 0);
        assert_string_equal(out, "1000:1000 755\n");
        free(out);
        /* the Engine view agrees: init, labels, caps, no_new_privs, memory */
        keeper_name("hard", name);
        v = inspect(p, "containers", name);
        assert_non_null(v);
        {
                struct jv *h = jv_object_get(v, "HostConfig");
                assert_true(jv_is_true(jv_object_get(h, "Init")));
                assert_true(jv_is_true(jv_object_get(h, "ReadonlyRootfs")));
                assert_string_equal(jv_string(jv_object_get(h, "NetworkMode")), "none");
                assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "CapDrop"), 0)), "ALL");
                assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "SecurityOpt"), 0)),
                                    "no-new-privileges");
                assert_int_equal(jv_integer(jv_object_get(h, "Memory")), 256 << 20);
                assert_int_equal(jv_integer(jv_object_get(h, "PidsLimit")), 77);
                assert_string_equal(jv_string(jv_object_get(jv_object_get(v, "Config"), "User")),
                                    "1000:1000");
        }
        jv_unref(v);
        b4_sandbox_unref(sb);
        destroy(p, "hard");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

static void test_network_allow(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        char *out;

        b4_policy_init(&pol);
        sb = acquire(p, "net-allow", &pol);
        out = run(sb, "ls /sys/class/net | tr '\\n' ' '", 0);
        assert_string_equal(out, "eth0 lo ");
        free(out);
        b4_sandbox_unref(sb);
        destroy(p, "net-allow");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- seccomp: core's syscall policy, the same denials as native (audit M5) ---- */

/* Copy the host program named by @env (tests/docker/meson.build sets it) to @dest in @sb. */
static void put_program(struct b4_sandbox *sb, const char *env, const char *dest)
{
        const char *path = getenv(env);
        struct b4_error err = { 0 };
        char *buf = NULL;
        size_t len = 0;
        int fd;

        if (!path)
                fail_msg("%s is not set (tests/docker/meson.build sets it)", env);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read_full_fd(fd, 16u << 20, &buf, &len), 0);
        (void)close(fd);
        if (b4_fs_write_file(b4_sandbox_fs(sb), dest, buf, len, &err) < 0)
                fail_msg("write %s: %s", dest, err.msg);
        free(buf);
}

static void test_seccomp(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        char name[64];
        const char *cases, *opt;
        size_t oks = 0;
        struct jv *v, *h;
        char *out;

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        sb = acquire(p, "seccomp", &pol);
        put_program(sb, "B4BOX_TEST_SECCOMP_PROBE", "/workspace/probe");
        /* run() fails with the probe's output (its FAIL lines) unless every case passed */
        out = run(sb, "chmod 0755 /workspace/probe && cd /workspace && ./probe", 0);
        for (const char *l = out; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                oks += strncmp(l, "ok ", 3) == 0;
        cases = strstr(out, "\ncases ");
        assert_non_null(cases);
        assert_int_equal(oks, strtoul(cases + 7, NULL, 10));
        assert_true(oks >= 49);
        for (const char *const *k =
                     (const char *const[]){
                             "ok ptrace(TRACEME)\n", "ok ptrace(SEIZE, 1)\n", "ok io_uring_setup\n",
                             "ok socket(AF_VSOCK)\n", "ok personality(ADDR_NO_RANDOMIZE)\n",
                             "ok unshare(CLONE_NEWUSER)\n", "ok mount\n", "ok keyctl\n", "ok bpf\n",
                             "ok clone3 (ENOSYS)\n", "ok clone(fork)\n", NULL };
             *k; k++)
                if (!strstr(out, *k))
                        fail_msg("no '%.*s' in:\n%s", (int)strlen(*k) - 1, *k, out);
        free(out);
        /* the ordinary tools still work under the profile */
        out = run(sb,
                  "echo x | sha256sum | cut -c1-8; ls / | grep -c workspace; sleep 0.1 && "
                  "cat /proc/self/status | grep -c ^Seccomp:.2",
                  0);
        assert_string_equal(out, "73cb3858\n1\n1\n");
        free(out);
        /* the Engine view: the profile is the keeper's SecurityOpt, its digest a label */
        keeper_name("seccomp", name);
        v = inspect(p, "containers", name);
        assert_non_null(v);
        h = jv_object_get(v, "HostConfig");
        opt = jv_string(jv_array_get(jv_object_get(h, "SecurityOpt"), 1));
        assert_non_null(opt);
        assert_int_equal(strncmp(opt, "seccomp={", 9), 0);
        assert_int_equal(
                strlen(jv_string(jv_object_get(jv_object_get(jv_object_get(v, "Config"), "Labels"),
                                               "b4.sandbox.seccomp"))),
                64);
        jv_unref(v);
        b4_sandbox_unref(sb);
        destroy(p, "seccomp");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

static const char *label_of(struct jv *container, const char *key)
{
        return jv_string(
                jv_object_get(jv_object_get(jv_object_get(container, "Config"), "Labels"), key));
}

/* A keeper with this instance's identity but another (here: no) seccomp profile is replaced. */
static void test_seccomp_identity(void **state)
{
        struct b4_provider *p = provider();
        struct docker_client *d = docker_provider_client(p);
        struct b4_policy pol;
        struct b4_sandbox *sb;
        char name[64], path[128], *body = NULL, *fake_id = NULL;
        struct jv *v, *req = NULL;

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        keeper_name("sc-ident", name);
        sb = acquire(p, "sc-ident", &pol);
        b4_sandbox_unref(sb);
        v = inspect(p, "containers", name);
        assert_non_null(v);
        /* the same name and identity label, no profile and no seccomp label */
        assert_true(asprintf(&body,
                             "{\"Image\":\"%s\",\"Cmd\":[\"sleep\",\"infinity\"],\"Labels\":"
                             "{\"b4.sandbox\":\"%s\",\"b4.sandbox.identity\":\"%s\"}}",
                             E_IMAGE, label_of(v, "b4.sandbox"),
                             label_of(v, "b4.sandbox.identity")) > 0);
        jv_unref(v);
        snprintf(path, sizeof(path), "/containers/%s?force=1", name);
        assert_int_equal(docker_call(d, "DELETE", path, NULL, NULL, NULL), 0);
        assert_int_equal(jv_parse(body, strlen(body), &req, NULL), 0);
        snprintf(path, sizeof(path), "/containers/create?name=%s", name);
        assert_int_equal(docker_call(d, "POST", path, req, NULL, NULL), 0);
        jv_unref(req);
        free(body);
        v = inspect(p, "containers", name);
        fake_id = strdup(jv_string(jv_object_get(v, "Id")));
        jv_unref(v);
        /* the same instance and launch config: replaced, not reused */
        sb = acquire(p, "sc-ident", &pol);
        b4_sandbox_unref(sb);
        v = inspect(p, "containers", name);
        assert_string_not_equal(jv_string(jv_object_get(v, "Id")), fake_id);
        assert_int_equal(strlen(label_of(v, "b4.sandbox.seccomp")), 64);
        jv_unref(v);
        free(fake_id);
        destroy(p, "sc-ident");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- exec ---- */

static void test_exec(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_env_var env[] = { { (char *)"GREETING", (char *)"it's" } };
        struct b4_exec_req req = { .command = "echo out; echo err >&2; printf %s \"$GREETING\"; "
                                              "pwd; exit 3",
                                   .cwd = "/workspace/sub",
                                   .env = env,
                                   .n_env = 1 };
        struct b4_exec_result x = { 0 };
        struct b4_env_var bad[] = { { (char *)"1X", (char *)"v" } };
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        sb = acquire(p, "exec", &pol);
        assert_int_equal(b4_fs_mkdir_p(b4_sandbox_fs(sb), "/workspace/sub", NULL), 0);
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), 0);
        assert_int_equal(x.exit_code, 3);
        assert_string_equal(x.out, "out\nit's/workspace/sub\n");
        assert_string_equal(x.errout, "err\n");
        assert_false(x.truncated);
        b4_exec_result_clear(&x);
        /* capped output keeps head and tail */
        req = (struct b4_exec_req){ .command = "seq 1 20000", .output_cap = 1000 };
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), 0);
        assert_true(x.truncated);
        assert_int_equal(strncmp(x.out, "1\n2\n3\n", 6), 0);
        assert_non_null(strstr(x.out, "bytes truncated ...]"));
        assert_non_null(strstr(x.out, "19999\n20000\n"));
        b4_exec_result_clear(&x);
        /* a background job holding the pipes does not hold the call up */
        {
                uint64_t t0 = now_msec();
                req = (struct b4_exec_req){ .command = "sleep 4 & echo bg" };
                assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), 0);
                assert_int_equal(x.exit_code, 0);
                assert_string_equal(x.out, "bg\n");
                assert_true(now_msec() - t0 < 3000);
                b4_exec_result_clear(&x);
        }
        req = (struct b4_exec_req){ .command = "true", .env = bad, .n_env = 1 };
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), -EINVAL);
        assert_string_equal(err.msg, "Invalid environment variable name \"1X\": keys must match "
                                     "/^[A-Za-z_][A-Za-z0-9_]*$/");
        /* a released keeper: the handle's command cannot run (B4_E2001) */
        assert_int_equal(b4_provider_release(p, "exec", NULL), 0);
        req = (struct b4_exec_req){ .command = "true" };
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_non_null(strstr(err.msg, "Sandbox unavailable: a command for thread \"exec\" "
                                        "could not run: "));
        b4_sandbox_unref(sb);
        destroy(p, "exec");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

struct chunks {
        uint64_t first_ms; /* when the first byte came */
        char got[64];
        size_t len;
};

static void on_chunk(void *userdata, enum b4_exec_stream stream, const char *data, size_t len)
{
        struct chunks *c = userdata;

        if (stream != B4_EXEC_STDOUT || len == 0)
                return;
        if (!c->first_ms)
                c->first_ms = now_msec();
        len = len < sizeof(c->got) - 1 - c->len ? len : sizeof(c->got) - 1 - c->len;
        memcpy(c->got + c->len, data, len);
        c->len += len;
}

/* Through the agent, output reaches on_output as the command prints it and the result has
 * the command's CPU and peak memory; the fallback's one-shot exec delivers the output at the
 * end (core's rest), and its result knows no usage. */
static void test_exec_stream(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct chunks c = { 0 };
        struct b4_exec_req req = { .command = "echo a; sleep 1.5; echo b",
                                   .on_output = on_chunk,
                                   .output_userdata = &c };
        struct b4_exec_result x = { 0 };
        struct b4_error err = { 0 };
        uint64_t end;

        b4_policy_init(&pol);
        sb = acquire(p, "stream", &pol);
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, &err), 0);
        end = now_msec();
        assert_string_equal(x.out, "a\nb\n");
        assert_string_equal(c.got, "a\nb\n");
        if (agent_mode())
                assert_true(end - c.first_ms >= 1000); /* "a" came before "b" was printed */
        /* accounting: the agent's getrusage of the command; none on the fallback */
        assert_int_equal(x.usage.known, agent_mode() ? B4_USAGE_CPU | B4_USAGE_PEAK_MEMORY : 0);
        if (agent_mode())
                assert_true(x.usage.peak_memory_bytes > 0);
        b4_exec_result_clear(&x);
        b4_sandbox_unref(sb);
        destroy(p, "stream");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

static void test_timeout(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_exec_req req = { .command = "echo started; sleep 30 & sleep 30; echo never" };
        struct b4_exec_result x = { 0 };
        uint64_t t0;
        char *out;

        b4_policy_init(&pol);
        pol.resources.timeout_ms = 1500;
        sb = acquire(p, "timeout", &pol);
        t0 = now_msec();
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, NULL), 0);
        assert_true(now_msec() - t0 < 8000);
        assert_int_equal(x.exit_code, 124);
        assert_true(x.timed_out);
        assert_string_equal(x.out, "started\n");
        assert_string_equal(x.errout, "Command timed out after 2s (resources.timeoutMs: 1500ms).");
        b4_exec_result_clear(&x);
        /* the whole process group died: no sleep is left */
        out = run(sb, "ps -o comm | grep -c '^sleep' || true", 0);
        assert_string_equal(out, "1\n"); /* the keeper's own "sleep infinity" */
        free(out);
        b4_sandbox_unref(sb);
        destroy(p, "timeout");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

static void *fire_later(void *arg)
{
        usleep(400000);
        b4_cancel_fire(arg);
        return NULL;
}

static void test_cancel(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_cancel *c = b4_cancel_new();
        struct b4_exec_req req = { .command = "sleep 30", .cancel = c };
        struct b4_exec_result x = { 0 };
        pthread_t th;
        uint64_t t0;

        b4_policy_init(&pol);
        sb = acquire(p, "cancel", &pol);
        free(run(sb, "true", 0)); /* the agent is up: the cancel hits the running command */
        pthread_create(&th, NULL, fire_later, c);
        t0 = now_msec();
        assert_int_equal(b4_sandbox_exec(sb, &req, &x, NULL), 0);
        pthread_join(th, NULL);
        assert_true(now_msec() - t0 < 8000);
        assert_true(x.cancelled);
        assert_int_equal(x.exit_code, 137);
        b4_exec_result_clear(&x);
        b4_cancel_free(c);
        b4_sandbox_unref(sb);
        destroy(p, "cancel");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- filesystem ---- */

static void test_fs_files(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_fs *fs;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char *s = NULL, *out;
        size_t len;

        b4_policy_init(&pol);
        sb = acquire(p, "fs", &pol);
        fs = b4_sandbox_fs(sb);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/a/b/c.txt", "hello", 5, &err), 0);
        out = run(sb, "stat -c '%u:%g %a %s' /workspace/a /workspace/a/b /workspace/a/b/c.txt", 0);
        assert_string_equal(out, "1000:1000 755 4096\n1000:1000 755 4096\n1000:1000 644 5\n");
        free(out);
        /* an existing file keeps its mode */
        free(run(sb, "chmod 755 /workspace/a/b/c.txt", 0));
        assert_int_equal(b4_fs_write_file(fs, "/workspace/a/b/c.txt", "hello!", 6, &err), 0);
        out = run(sb, "stat -c '%a' /workspace/a/b/c.txt; cat /workspace/a/b/c.txt", 0);
        assert_string_equal(out, "755\nhello!");
        free(out);
        /* bounded reads: at the cap, over it, uncapped */
        assert_int_equal(b4_fs_read_file(fs, "/workspace/a/b/c.txt", 6, &s, &len, &err), 0);
        assert_int_equal(len, 6);
        assert_string_equal(s, "hello!");
        free(s);
        assert_int_equal(b4_fs_read_file(fs, "/workspace/a/b/c.txt", 5, &s, &len, &err), -EFBIG);
        assert_string_equal(err.msg,
                            "readFile /workspace/a/b/c.txt: content exceeds maxBytes (5).");
        assert_int_equal(b4_fs_read_file(fs, "/workspace/nope", B4_UNBOUNDED, &s, &len, &err),
                         -ENOENT);
        assert_int_equal(b4_fs_read_file(fs, "/workspace/a", B4_UNBOUNDED, &s, &len, &err),
                         -EISDIR);
        /* links: lstat reports the raw target; stat and read follow */
        free(run(sb, "ln -s b/c.txt /workspace/a/link; ln -s /nowhere /workspace/a/dangling", 0));
        assert_int_equal(b4_fs_lstat(fs, "/workspace/a/link", &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_SYMLINK);
        assert_string_equal(st.target, "b/c.txt");
        b4_stat_clear(&st);
        assert_int_equal(b4_fs_stat(fs, "/workspace/a/link", &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        assert_int_equal(st.size, 6);
        assert_true(st.executable);
        assert_true(st.mtime_ms > 1000000000000LL);
        b4_stat_clear(&st);
        assert_int_equal(b4_fs_read_file(fs, "/workspace/a/link", 100, &s, &len, &err), 0);
        assert_string_equal(s, "hello!");
        free(s);
        if (b4_fs_realpath(fs, "/workspace/a/link", &s, &err) < 0)
                fail_msg("realpath /workspace/a/link: %s", err.msg);
        assert_string_equal(s, "/workspace/a/b/c.txt");
        free(s);
        if (b4_fs_realpath(fs, "/workspace/a/./b/../b/new/x", &s, &err) < 0)
                fail_msg("realpath: %s", err.msg);
        assert_string_equal(s, "/workspace/a/b/new/x");
        free(s);
        /* mkdir, touch, remove */
        assert_int_equal(b4_fs_mkdir_p(fs, "/workspace/m/n/o", &err), 0);
        assert_int_equal(b4_fs_touch(fs, "/workspace/m/n/o/t", &err), 0);
        out = run(sb, "stat -c '%u %F' /workspace/m/n/o /workspace/m/n/o/t", 0);
        assert_string_equal(out, "1000 directory\n1000 regular empty file\n");
        free(out);
        assert_int_equal(b4_fs_remove(fs, "/workspace/m/n/o/t", &err), 0);
        assert_int_equal(b4_fs_remove(fs, "/workspace/m/n/o/t", &err), 0);
        assert_int_equal(b4_fs_remove(fs, "/workspace/m/n/o", &err), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/m/n/o", &st, &err), -ENOENT);
        b4_sandbox_unref(sb);
        destroy(p, "fs");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

static void test_fs_batch(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_fs *fs;
        struct b4_error err = { 0 };
        struct b4_walk_entry *w = NULL;
        size_t n = 0;
        char **names = NULL;
        char *const prune[] = { (char *)"node_modules", NULL };
        struct b4_read_req reqs[] = { { "/workspace/d/f1", 100 },
                                      { "/workspace/missing", 100 },
                                      { "/workspace/d/big", 10 },
                                      { "/workspace/d", 100 },
                                      { "/workspace/d/f2", B4_UNBOUNDED } };
        struct b4_blob *blobs = NULL;

        b4_policy_init(&pol);
        sb = acquire(p, "batch", &pol);
        fs = b4_sandbox_fs(sb);
        free(run(sb,
                 "cd /workspace && mkdir -p d/e node_modules/x && printf one > d/f1 && "
                 "printf 'two\\n' > d/f2 && seq 1 100 > d/big && touch d/e/g 'd/sp ace' "
                 "node_modules/x/y && ln -s f1 d/l && chmod +x d/f1 && ln d/f2 d/hard",
                 0));
        assert_int_equal(b4_fs_list_dir(fs, "/workspace/d", &names, &err), 0);
        {
                const char *want[] = { "big", "e", "f1", "f2", "hard", "l", "sp ace", NULL };
                for (size_t i = 0; want[i]; i++)
                        assert_string_equal(names[i], want[i]);
                assert_null(names[7]);
        }
        for (char **q = names; *q; q++)
                free(*q);
        free(names);
        assert_int_equal(b4_fs_list_dir(fs, "/workspace/none", &names, &err), -ENOENT);
        assert_int_equal(b4_fs_walk(fs, "/workspace", 100, prune, &w, &n, &err), 0);
        {
                const char *want[] = { "d",        "d/big",        "d/e",    "d/e/g",
                                       "d/f1",     "d/f2",         "d/hard", "d/l",
                                       "d/sp ace", "node_modules", NULL };
                for (size_t i = 0; want[i]; i++) {
                        assert_true(i < n);
                        assert_string_equal(w[i].path, want[i]);
                }
                assert_int_equal(n, 10);
                assert_int_equal(w[4].st.kind, B4_FILE_REGULAR);
                assert_true(w[4].st.executable);
                assert_int_equal(w[4].st.size, 3);
                assert_int_equal(w[6].st.size, 4); /* a hard link reports its size too */
                assert_int_equal(w[7].st.kind, B4_FILE_SYMLINK);
                assert_string_equal(w[7].st.target, "f1");
                assert_int_equal(w[2].st.kind, B4_FILE_DIRECTORY);
        }
        b4_walk_entries_free(w, n);
        assert_int_equal(b4_fs_walk(fs, "/workspace", 5, prune, &w, &n, &err), -E2BIG);
        assert_string_equal(err.msg, "Workspace entries limit exceeded");
        assert_int_equal(b4_fs_read_files(fs, reqs, 5, &blobs, &err), 0);
        assert_int_equal(blobs[0].error, 0);
        assert_string_equal(blobs[0].data, "one");
        assert_int_equal(blobs[1].error, -ENOENT);
        assert_int_equal(blobs[2].error, -EFBIG);
        assert_int_equal(blobs[3].error, -EISDIR);
        assert_int_equal(blobs[4].error, 0);
        assert_string_equal(blobs[4].data, "two\n");
        b4_blobs_free(blobs, 5);
        /* eight or more: one archive of the common directory (links read one by one) */
        {
                struct b4_read_req many[] = {
                        { "/workspace/d/f1", 100 },           { "/workspace/d/missing", 100 },
                        { "/workspace/d/big", 10 },           { "/workspace/d/e", 100 },
                        { "/workspace/d/f2", 100 },           { "/workspace/d/l", 100 },
                        { "/workspace/d/hard", 100 },         { "/workspace/d/e/g", 100 },
                        { "/workspace/d/sp ace", 5 },         { "/workspace/d/f1", 2 },
                        { "/workspace/d/big", B4_UNBOUNDED },
                };
                size_t nm = sizeof(many) / sizeof(many[0]);

                assert_int_equal(b4_fs_read_files(fs, many, nm, &blobs, &err), 0);
                assert_string_equal(blobs[0].data, "one");
                assert_int_equal(blobs[1].error, -ENOENT);
                assert_int_equal(blobs[2].error, -EFBIG);
                assert_int_equal(blobs[3].error, -EISDIR);
                assert_string_equal(blobs[4].data, "two\n");
                assert_string_equal(blobs[5].data, "one");
                assert_string_equal(blobs[6].data, "two\n");
                assert_int_equal(blobs[7].error, 0);
                assert_int_equal(blobs[7].len, 0);
                assert_int_equal(blobs[8].len, 0);
                assert_int_equal(blobs[9].error, -EFBIG);
                assert_int_equal(blobs[10].len, 292);
                b4_blobs_free(blobs, nm);
        }
        /* more files than one agent request carries (AGENT_BATCH_MAX): still in order */
        {
                size_t nb = 9000;
                struct b4_read_req *lots = calloc(nb, sizeof(*lots));

                assert_non_null(lots);
                for (size_t i = 0; i < nb; i++)
                        lots[i] = (struct b4_read_req){ i % 3 == 2 ? "/workspace/d/missing"
                                                        : i % 3    ? "/workspace/d/f2"
                                                                   : "/workspace/d/f1",
                                                        100 };
                assert_int_equal(b4_fs_read_files(fs, lots, nb, &blobs, &err), 0);
                for (size_t i = 0; i < nb; i++) {
                        if (i % 3 == 2)
                                assert_int_equal(blobs[i].error, -ENOENT);
                        else
                                assert_string_equal(blobs[i].data, i % 3 ? "two\n" : "one");
                }
                b4_blobs_free(blobs, nb);
                free(lots);
        }
        b4_sandbox_unref(sb);
        destroy(p, "batch");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- audit H1: the file members see and do what the sandbox user can, not dockerd's root ---- */

/* Run @cmd in @thread's keeper as @user (bypassing the provider): the fixtures' owner. */
static void exec_as(struct b4_provider *p, const char *thread, const char *user, const char *cmd)
{
        char name[64];
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)cmd, NULL };
        struct docker_exec_spec s = { .argv = argv, .user = user, .output_cap = 4096 };
        struct b4_exec_result x = { 0 };
        struct b4_error err = { 0 };

        keeper_name(thread, name);
        s.container = name;
        if (docker_exec_run(docker_provider_client(p), &s, &x, &err) < 0)
                fail_msg("exec as %s '%s': %s", user, cmd, err.msg);
        if (x.exit_code != 0)
                fail_msg("'%s' as %s exited %d: %s", cmd, user, x.exit_code, x.errout);
        b4_exec_result_clear(&x);
}

static bool walk_has(const struct b4_walk_entry *w, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(w[i].path, path) == 0)
                        return true;
        return false;
}

static void assert_read_errno(struct b4_fs *fs, const char *path, int want)
{
        struct b4_error err = { 0 };
        char *s = NULL;
        size_t len = 0;
        int r = b4_fs_read_file(fs, path, 4096, &s, &len, &err);

        if (r != want)
                fail_msg("readFile %s: %d (%s), want %d", path, r, err.msg, want);
        if (r >= 0)
                free(s);
}

static void test_fs_user_dac(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_fs *fs;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        struct b4_walk_entry *w = NULL;
        struct b4_blob *blobs = NULL;
        size_t n = 0;
        char *out;

        b4_policy_init(&pol);
        sb = acquire(p, "dac", &pol);
        fs = b4_sandbox_fs(sb);
        free(run(sb, "chmod 777 /workspace && mkdir /workspace/pub && echo p >/workspace/pub/f",
                 0));
        exec_as(p, "dac", "0:0",
                "cd /workspace && echo s >secret && chmod 600 secret && mkdir private rootdir && "
                "echo n >private/note && chmod 700 private && echo r >rootdir/file && "
                "chmod 755 rootdir");
        /* readFile fails exactly where cat does */
        out = run(sb,
                  "cat /workspace/secret /workspace/private/note /workspace/rootdir/file "
                  "/etc/passwd >/dev/null 2>&1; echo $?; cat /workspace/rootdir/file",
                  0);
        assert_string_equal(out, "1\nr\n");
        free(out);
        assert_read_errno(fs, "/workspace/secret", -EACCES);
        assert_read_errno(fs, "/workspace/private/note", -EACCES);
        assert_read_errno(fs, "/workspace/private/none", -EACCES);
        assert_read_errno(fs, "/workspace/rootdir/file", 0);
        assert_read_errno(fs, "/workspace/rootdir/none", -ENOENT);
        assert_int_equal(b4_fs_read_file(fs, "/workspace/secret", 4096, &out, &n, &err), -EACCES);
        assert_string_equal(err.msg, "readFile /workspace/secret: Permission denied");
        /* stat needs the search permission the user lacks */
        assert_int_equal(b4_fs_stat(fs, "/workspace/private/note", &st, &err), -EACCES);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/private/note", &st, &err), -EACCES);
        if (b4_fs_lstat(fs, "/workspace/secret", &st, &err) < 0)
                fail_msg("lstat /workspace/secret: %s", err.msg);
        b4_stat_clear(&st);
        /* the walk lists what ls -R would */
        assert_int_equal(b4_fs_walk(fs, "/workspace", 100, NULL, &w, &n, &err), 0);
        assert_true(walk_has(w, n, "private"));
        assert_false(walk_has(w, n, "private/note"));
        assert_true(walk_has(w, n, "rootdir/file"));
        b4_walk_entries_free(w, n);
        /* batched reads, through the exec batch and through one archive */
        for (size_t k = 0; k < 2; k++) {
                struct b4_read_req reqs[] = {
                        { "/workspace/secret", 100 },       { "/workspace/private/note", 100 },
                        { "/workspace/rootdir/file", 100 }, { "/workspace/pub/f", 100 },
                        { "/workspace/private/x", 100 },    { "/workspace/none", 100 },
                        { "/workspace/pub", 100 },          { "/workspace/pub/f", 1 },
                };
                size_t nr = k == 0 ? 4 : 8;

                assert_int_equal(b4_fs_read_files(fs, reqs, nr, &blobs, &err), 0);
                assert_int_equal(blobs[0].error, -EACCES);
                assert_int_equal(blobs[1].error, -EACCES);
                assert_string_equal(blobs[2].data, "r\n");
                assert_string_equal(blobs[3].data, "p\n");
                if (k == 1) {
                        assert_int_equal(blobs[4].error, -EACCES);
                        assert_int_equal(blobs[5].error, -ENOENT);
                        assert_int_equal(blobs[6].error, -EISDIR);
                        assert_int_equal(blobs[7].error, -EFBIG);
                }
                b4_blobs_free(blobs, nr);
        }
        /* writeFile fails where touch does, and leaves nothing behind */
        out = run(sb, "touch /workspace/rootdir/new 2>&1; echo $?", 0);
        assert_non_null(strstr(out, "Permission denied\n1\n"));
        free(out);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/rootdir/new", "x", 1, &err), -EACCES);
        assert_string_equal(err.msg, "writeFile /workspace/rootdir/new: Permission denied");
        assert_int_equal(b4_fs_write_file(fs, "/workspace/rootdir/file", "x", 1, &err), -EACCES);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/rootdir/d/new", "x", 1, &err), -EACCES);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/private/new", "x", 1, &err), -EACCES);
        assert_int_equal(b4_fs_mkdir_p(fs, "/workspace/rootdir/m/n", &err), -EACCES);
        out = run(sb, "ls -A /workspace/rootdir; cat /workspace/rootdir/file", 0);
        assert_string_equal(out, "file\nr\n");
        free(out);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/pub/g/h", "ok", 2, &err), 0);
        out = run(sb, "stat -c '%u %a' /workspace/pub/g /workspace/pub/g/h", 0);
        assert_string_equal(out, "1000 755\n1000 644\n");
        free(out);
        b4_sandbox_unref(sb);
        destroy(p, "dac");

        /* runAsNonRoot false: root without capabilities gets the owner bits of its own files only
         */
        pol.security.run_as_non_root = false;
        sb = acquire(p, "dacroot", &pol);
        fs = b4_sandbox_fs(sb);
        free(run(sb, "mkdir -p /workspace/u && chmod 777 /workspace/u", 0));
        exec_as(p, "dacroot", "1000:1000", "echo u >/workspace/u/f && chmod 600 /workspace/u/f");
        free(run(sb, "cat /workspace/u/f", 1));
        assert_read_errno(fs, "/workspace/u/f", -EACCES);
        b4_sandbox_unref(sb);
        destroy(p, "dacroot");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- PID exhaustion ---- */

#define BOMB_PIDS 48

/* The keeper's pids in use, from the daemon's stats (one sample), or -1. */
static int64_t keeper_pids(struct b4_provider *p, const char *name)
{
        struct jv *v = NULL;
        char path[160];
        int64_t n = -1;

        snprintf(path, sizeof(path), "/containers/%s/stats?stream=false&one-shot=true", name);
        if (docker_call(docker_provider_client(p), "GET", path, NULL, &v, NULL) < 0)
                return -1;
        if (jv_integer(jv_object_get(jv_object_get(v, "pids_stats"), "limit")) == BOMB_PIDS)
                n = jv_integer(jv_object_get(jv_object_get(v, "pids_stats"), "current"));
        jv_unref(v);
        return n;
}

/*
 * Set off tests/docker/pid-filler.c in @sb's keeper @name and wait until the keeper is at its
 * pids limit. The filler never lets a pid go, retakes any that frees, and starts only once
 * what served its own command is gone (through the agent: the supervisor, the request's
 * thread): from then on nothing in the keeper frees a pid, so the next operation meets the
 * exhaustion every time, whichever path it takes.
 */
static void bomb(struct b4_provider *p, struct b4_sandbox *sb, const char *name)
{
        uint64_t end = now_msec() + 30000;
        int64_t n;
        char *out;

        out = run(sb,
                  agent_mode() ? "cd /workspace && ./filler $PPID; echo $?"
                               : "cd /workspace && ./filler; echo $?",
                  0);
        assert_string_equal(out, "0\n");
        free(out);
        while ((n = keeper_pids(p, name)) != BOMB_PIDS) {
                if (now_msec() > end)
                        fail_msg("the keeper never reached its %d pids (last %lld)", BOMB_PIDS,
                                 (long long)n);
                (void)usleep(20 * 1000);
        }
}

static char *keeper_id(struct b4_provider *p, const char *name)
{
        struct jv *v = inspect(p, "containers", name);
        char *id;

        assert_non_null(v);
        id = strdup(jv_string(jv_object_get(v, "Id")));
        jv_unref(v);
        assert_non_null(id);
        return id;
}

/*
 * A keeper held at its pids limit (reference §3.6): a file read recovers it (a new keeper,
 * the workspace kept) on every path, the agent's request that gets no thread included; and
 * through the agent a command it cannot start recovers too. The bomb is gone with the old
 * keeper.
 */
static void test_fork_bomb(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_fs *fs;
        struct b4_error err = { 0 };
        struct b4_read_req req = { "/workspace/keep", 100 };
        struct b4_blob *blobs = NULL;
        char name[64], *first, *second, *third, *out;

        b4_policy_init(&pol);
        pol.security.pids_limit = BOMB_PIDS;
        sb = acquire(p, "bomb", &pol);
        fs = b4_sandbox_fs(sb);
        keeper_name("bomb", name);
        assert_int_equal(b4_fs_write_file(fs, "/workspace/keep", "kept", 4, &err), 0);
        put_program(sb, "B4BOX_TEST_PID_FILLER", "/workspace/filler");
        free(run(sb, "chmod 0755 /workspace/filler", 0));
        first = keeper_id(p, name);
        bomb(p, sb, name);
        if (b4_fs_read_files(fs, &req, 1, &blobs, &err) < 0)
                fail_msg("read_files at the pids limit: %s", err.msg);
        assert_int_equal(blobs[0].error, 0);
        assert_string_equal(blobs[0].data, "kept");
        b4_blobs_free(blobs, 1);
        second = keeper_id(p, name);
        assert_string_not_equal(first, second);
        if (agent_mode()) {
                bomb(p, sb, name);
                out = run(sb, "cat /workspace/keep", 0);
                assert_string_equal(out, "kept");
                free(out);
                third = keeper_id(p, name);
                assert_string_not_equal(second, third);
                free(third);
        }
        out = run(sb, "ps -o comm | grep -c filler || true", 0);
        assert_string_equal(out, "0\n");
        free(out);
        free(first);
        free(second);
        b4_sandbox_unref(sb);
        destroy(p, "bomb");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- the agent ---- */

static char *read_all(struct b4_fs *fs, const char *path)
{
        struct b4_error err = { 0 };
        char *data = NULL;
        size_t len = 0;

        if (b4_fs_read_file(fs, path, 4096, &data, &len, &err) < 0)
                fail_msg("read %s: %s", path, err.msg);
        return data;
}

/* A killed agent: between operations the next one reconnects to the same keeper; during a
 * command that command fails and is never run again. */
static void test_agent_lost(void **state)
{
        struct b4_provider *p;
        struct b4_policy pol;
        struct b4_sandbox *sb;
        /* the command's parent is the agent's supervisor; its parent is the agent */
        struct b4_exec_req req = { .command =
                                           "echo x >> /workspace/count; "
                                           "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat); sleep 5" };
        struct b4_exec_result x = { 0 };
        struct b4_error err = { 0 };
        char name[64];
        struct jv *before, *after;
        char *out;

        if (!agent_mode())
                skip();
        p = provider();
        b4_policy_init(&pol);
        sb = acquire(p, "agent-lost", &pol);
        keeper_name("agent-lost", name);
        before = inspect(p, "containers", name);
        /* /tmp is the keeper's tmpfs: it survives only if the keeper is the same */
        free(run(sb, "echo kept > /tmp/mark", 0));
        free(run(sb,
                 "a=$(cut -d' ' -f4 /proc/$PPID/stat); (sleep 0.3; kill -9 $a) >/dev/null 2>&1 &",
                 0));
        (void)usleep(1000 * 1000);
        out = read_all(b4_sandbox_fs(sb), "/tmp/mark");
        assert_string_equal(out, "kept\n");
        free(out);
        assert_true(b4_sandbox_exec(sb, &req, &x, &err) < 0);
        assert_non_null(strstr(err.msg, "not retried"));
        b4_exec_result_clear(&x);
        out = run(sb, "cat /tmp/mark; wc -l < /workspace/count", 0);
        assert_string_equal(out, "kept\n1\n");
        free(out);
        after = inspect(p, "containers", name);
        assert_non_null(before);
        assert_non_null(after);
        assert_string_equal(jv_string(jv_object_get(before, "Id")),
                            jv_string(jv_object_get(after, "Id")));
        jv_unref(before);
        jv_unref(after);
        b4_sandbox_unref(sb);
        destroy(p, "agent-lost");
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- keepers ---- */

static void test_stale_keeper(void **state)
{
        struct b4_provider *p1 = provider(), *p2 = provider();
        struct b4_policy a, b;
        struct b4_sandbox *sb;
        struct b4_acquire_req req = { .thread_id = "stale", .policy = &b };
        struct b4_error err = { 0 };
        char name[64];
        struct jv *v1, *v2, *v3;
        char *out;

        b4_policy_init(&a);
        b4_policy_init(&b);
        b.network = B4_NETWORK_DENY;
        keeper_name("stale", name);
        sb = acquire(p1, "stale", &a);
        assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/f", "x", 1, NULL), 0);
        b4_sandbox_unref(sb);
        v1 = inspect(p1, "containers", name);
        /* the same instance with another launch config is refused */
        assert_int_equal(b4_provider_acquire(p1, &req, &sb, &err), -EEXIST);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_non_null(strstr(err.msg, "already has a different keeper configuration"));
        /* the same instance and config reuses the keeper, starting it when stopped */
        {
                char path[128];
                snprintf(path, sizeof(path), "/containers/%s/stop?t=0", name);
                assert_int_equal(
                        docker_call(docker_provider_client(p1), "POST", path, NULL, NULL, NULL), 0);
        }
        sb = acquire(p1, "stale", &a);
        b4_sandbox_unref(sb);
        v2 = inspect(p1, "containers", name);
        assert_string_equal(jv_string(jv_object_get(v1, "Id")), jv_string(jv_object_get(v2, "Id")));
        assert_true(jv_is_true(jv_object_get(jv_object_get(v2, "State"), "Running")));
        /* a fresh provider with another identity replaces it and keeps the volume */
        sb = acquire(p2, "stale", &b);
        v3 = inspect(p2, "containers", name);
        assert_string_not_equal(jv_string(jv_object_get(v1, "Id")),
                                jv_string(jv_object_get(v3, "Id")));
        assert_string_not_equal(
                jv_string(jv_object_get(jv_object_get(jv_object_get(v1, "Config"), "Labels"),
                                        "b4.sandbox.identity")),
                jv_string(jv_object_get(jv_object_get(jv_object_get(v3, "Config"), "Labels"),
                                        "b4.sandbox.identity")));
        out = run(sb, "cat /workspace/f", 0);
        assert_string_equal(out, "x");
        free(out);
        b4_sandbox_unref(sb);
        jv_unref(v1);
        jv_unref(v2);
        jv_unref(v3);
        /* a fresh provider never adopts, even with the same identity */
        sb = acquire(p1, "stale", &a);
        b4_sandbox_unref(sb);
        v1 = inspect(p1, "containers", name);
        sb = acquire(p2, "stale", &b);
        (void)sb;
        b4_sandbox_unref(sb);
        destroy(p2, "stale");
        destroy(p1, "stale");
        jv_unref(v1);
        b4_provider_free(p1);
        b4_provider_free(p2);
        b4_policy_clear(&a);
        b4_policy_clear(&b);
}

static void test_fresh_never_adopts(void **state)
{
        struct b4_provider *p1 = provider(), *p2 = provider();
        struct b4_policy a;
        struct b4_sandbox *sb;
        char name[64];
        struct jv *v1, *v2;

        b4_policy_init(&a);
        keeper_name("adopt", name);
        sb = acquire(p1, "adopt", &a);
        b4_sandbox_unref(sb);
        v1 = inspect(p1, "containers", name);
        sb = acquire(p2, "adopt", &a);
        b4_sandbox_unref(sb);
        v2 = inspect(p2, "containers", name);
        assert_string_not_equal(jv_string(jv_object_get(v1, "Id")),
                                jv_string(jv_object_get(v2, "Id")));
        jv_unref(v1);
        jv_unref(v2);
        destroy(p2, "adopt");
        b4_provider_free(p1);
        b4_provider_free(p2);
        b4_policy_clear(&a);
}

/* ---- readers ---- */

static void test_reader(void **state)
{
        struct b4_provider *p = provider();
        struct b4_policy pol;
        struct b4_sandbox *sb;
        struct b4_reader *rd = NULL;
        struct b4_reader_req rq = {
                .thread_id = "rdr", .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        struct b4_error err = { 0 };
        char name[64], vol[80];
        struct jv *k1, *k2, *rv;
        char *s = NULL;
        size_t len;
        char filter[256];
        struct jv *list = NULL;

        b4_policy_init(&pol);
        sb = acquire(p, "rdr", &pol);
        assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/r.txt", "seen", 4, NULL),
                         0);
        keeper_name("rdr", name);
        k1 = inspect(p, "containers", name);
        assert_int_equal(b4_provider_open_reader(p, &rq, &rd, &err), 0);
        assert_null(b4_reader_fs(rd)->ops->write_file);
        assert_int_equal(b4_fs_read_file(b4_reader_fs(rd), "/workspace/r.txt", 100, &s, &len, &err),
                         0);
        assert_string_equal(s, "seen");
        free(s);
        /* the reader container: labelled, read-only bind, no network, caps dropped */
        snprintf(
                filter, sizeof(filter),
                "/containers/json?filters=%%7B%%22label%%22%%3A%%5B%%22b4.sandbox.reader%%3D%s%%22%%5D%%7D",
                name + 7);
        assert_int_equal(docker_call(docker_provider_client(p), "GET", filter, NULL, &list, NULL),
                         0);
        assert_int_equal(jv_array_size(list), 1);
        rv = inspect(p, "containers", jv_string(jv_object_get(jv_array_get(list, 0), "Id")));
        jv_unref(list);
        {
                struct jv *h = jv_object_get(rv, "HostConfig");
                struct jv *mounts = jv_object_get(rv, "Mounts"), *m = NULL;
                for (size_t i = 0; i < jv_array_size(mounts); i++)
                        if (strcmp(jv_string(jv_object_get(jv_array_get(mounts, i), "Destination")),
                                   "/workspace") == 0)
                                m = jv_array_get(mounts, i);
                assert_non_null(m);
                assert_string_equal(jv_string(jv_object_get(h, "NetworkMode")), "none");
                assert_string_equal(jv_string(jv_array_get(jv_object_get(h, "CapDrop"), 0)), "ALL");
                assert_true(jv_is_true(jv_object_get(h, "ReadonlyRootfs")));
                assert_string_equal(jv_string(jv_object_get(m, "Type")), "bind");
                assert_false(jv_is_true(jv_object_get(m, "RW")));
                assert_string_equal(jv_string(jv_object_get(m, "Destination")), "/workspace");
                assert_int_equal(
                        strncmp(jv_string(jv_array_get(jv_object_get(h, "SecurityOpt"), 1)),
                                "seccomp={", 9),
                        0);
        }
        jv_unref(rv);
        assert_int_equal(b4_reader_close(rd, &err), 0);
        assert_int_equal(b4_reader_close(rd, &err), 0);
        assert_int_equal(b4_fs_read_file(b4_reader_fs(rd), "/workspace/r.txt", 100, &s, &len, &err),
                         -EBADF);
        assert_string_equal(err.msg, "Workspace reader for thread \"rdr\" is closed");
        b4_reader_free(rd);
        /* the keeper is untouched: same container, same start, still usable */
        k2 = inspect(p, "containers", name);
        assert_string_equal(jv_string(jv_object_get(k1, "Id")), jv_string(jv_object_get(k2, "Id")));
        assert_string_equal(jv_string(jv_object_get(jv_object_get(k1, "State"), "StartedAt")),
                            jv_string(jv_object_get(jv_object_get(k2, "State"), "StartedAt")));
        free(run(sb, "true", 0));
        jv_unref(k1);
        jv_unref(k2);
        b4_sandbox_unref(sb);
        /* after destroy: refused, and no volume is created by trying */
        destroy(p, "rdr");
        assert_int_equal(b4_provider_open_reader(p, &rq, &rd, &err), -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_non_null(strstr(err.msg, "no workspace storage for thread \"rdr\""));
        snprintf(vol, sizeof(vol), "b4-sbx-vol-%s", name + 7);
        assert_null(inspect(p, "volumes", vol));
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

/* ---- preflight, images, options ---- */

static void test_preflight(void **state)
{
        struct b4_provider *p = provider(), *bad = NULL;
        struct b4_provider_config cfg = { .type = (char *)"docker",
                                          .scope = (char *)E_SCOPE,
                                          .image = (char *)E_IMAGE,
                                          .docker_host = (char *)"unix:///nonexistent.sock" };
        struct b4_preflight pf = { 0 };
        const char *detail;

        assert_int_equal(b4_provider_preflight(p, &pf, NULL), 0);
        assert_true(pf.ok);
        assert_int_equal(strncmp(pf.detail, "Docker ", 7), 0);
        /* which path operations take, and why */
        assert_true(pf.n_controls > 0);
        assert_string_equal(pf.controls[pf.n_controls - 1].name, "operations");
        detail = pf.controls[pf.n_controls - 1].detail;
        if (!agent_mode())
                assert_non_null(strstr(detail, "B4BOX_DOCKER_AGENT=off"));
        else if (getenv("B4BOX_DOCKER_AGENT")) /* copy */
                assert_non_null(strstr(detail, "copied into a volume mounted read-only"));
        else
                assert_non_null(strstr(detail, "bound read-only at /.b4box/agent"));
        if (agent_mode())
                assert_int_equal(strncmp(detail, "b4box-agent ", 12), 0);
        b4_preflight_clear(&pf);
        assert_int_equal(b4_provider_new(&cfg, &bad, NULL), 0);
        assert_int_equal(b4_provider_preflight(bad, &pf, NULL), 0);
        assert_false(pf.ok);
        assert_int_equal(strncmp(pf.detail, "Docker daemon not reachable (", 29), 0);
        b4_preflight_clear(&pf);
        b4_provider_free(bad);
        b4_provider_free(p);
}

static void test_images(void **state)
{
        struct b4_provider *p = NULL;
        struct b4_provider_config cfg = { .type = (char *)"docker",
                                          .scope = (char *)E_SCOPE,
                                          .docker_host = (char *)E_HOST };
        char *pats[] = { (char *)"b4box-test-*", NULL };
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = "img" };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };
        char *id = NULL;
        char name[64];
        struct jv *v;

        assert_int_equal(b4_provider_new(&cfg, &p, &err), -EINVAL);
        assert_string_equal(err.msg, "dockerSandbox needs an image, or an images predicate when "
                                     "every thread names its own image");
        cfg.scope = (char *)"  ";
        cfg.images = pats;
        assert_int_equal(b4_provider_new(&cfg, &p, &err), -EINVAL);
        cfg.scope = (char *)E_SCOPE;
        assert_int_equal(b4_provider_new(&cfg, &p, &err), 0);
        assert_int_equal(b4_provider_resolve_image(p, "busybox:latest", &id, &err), -EACCES);
        assert_int_equal(err.code, B4_CODE_IMAGE_NOT_ALLOWED);
        assert_int_equal(b4_provider_resolve_image(p, E_IMAGE, &id, &err), 0);
        assert_int_equal(strncmp(id, "sha256:", 7), 0);
        assert_int_equal(strlen(id), 71);
        b4_policy_init(&pol);
        req.policy = &pol;
        assert_int_equal(b4_provider_acquire(p, &req, &sb, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "has no default image"));
        req.image = id;
        assert_int_equal(b4_provider_acquire(p, &req, &sb, &err), 0);
        keeper_name("img", name);
        v = inspect(p, "containers", name);
        assert_string_equal(jv_string(jv_object_get(v, "Image")), id);
        jv_unref(v);
        b4_sandbox_unref(sb);
        destroy(p, "img");
        free(id);
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

int main(void)
{
        size_t nc = b4_conformance_n_cases();
        struct CMUnitTest tests[64];
        char names[32][96];
        size_t k = 0;
        static const struct CMUnitTest rest[] = {
                cmocka_unit_test(test_hardening),
                cmocka_unit_test(test_seccomp),
                cmocka_unit_test(test_seccomp_identity),
                cmocka_unit_test(test_network_allow),
                cmocka_unit_test(test_exec),
                cmocka_unit_test(test_exec_stream),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_fs_files),
                cmocka_unit_test(test_fs_batch),
                cmocka_unit_test(test_fs_user_dac),
                cmocka_unit_test(test_fork_bomb),
                cmocka_unit_test(test_agent_lost),
                cmocka_unit_test(test_stale_keeper),
                cmocka_unit_test(test_fresh_never_adopts),
                cmocka_unit_test(test_reader),
                cmocka_unit_test(test_preflight),
                cmocka_unit_test(test_images),
        };

        E_HOST = getenv("B4BOX_TEST_DOCKER_HOST");
        E_IMAGE = getenv("B4BOX_TEST_DOCKER_IMAGE");
        E_SCOPE = getenv("B4BOX_TEST_DOCKER_SCOPE");
        if (!E_HOST || !E_IMAGE || !E_SCOPE) {
                printf("1..0 # SKIP run me through tests/docker/with-dockerd.sh\n");
                return 77;
        }
        for (size_t i = 0; i < nc && k < 32; i++, k++) {
                snprintf(names[k], sizeof(names[k]), "conformance: %s",
                         b4_conformance_case_name(i));
                tests[k] = (struct CMUnitTest){ .name = names[k],
                                                .test_func = test_conformance,
                                                .initial_state = (void *)(uintptr_t)i };
        }
        for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
                tests[k++] = rest[i];
        /* one test by name (a repeat run): B4BOX_TEST_FILTER=test_fork_bomb, cmocka's glob */
        if (getenv("B4BOX_TEST_FILTER"))
                cmocka_set_test_filter(getenv("B4BOX_TEST_FILTER"));
        return _cmocka_run_group_tests("docker provider", tests, k, NULL, NULL);
}
