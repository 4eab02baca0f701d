/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Materialisation of a captured workspace through struct b4_fs: on the fake (files, the
 * executable bit, links refused as unsupported, the git baseline through an injected exec)
 * and on the native provider with the real git (a deterministic commit id).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/bundle.h"
#include "b4box/config.h"

#include "b4-test.h"
#include "base/macro.h"
#include "fake/fake.h"
#include "workspace/materialize.h"

#define COMMIT "0123456789abcdef0123456789abcdef01234567"

static struct b4_captured_workspace *make_ws(bool git, size_t n_links)
{
        static const struct b4_captured_link links[] = { { (char *)"deps", (char *)"/opt" } };
        struct b4_bundle_input in[] = {
                { .path = "main.txt", .data = "x", .len = 1 },
                { .path = "bin/run.sh",
                  .data = "#!/bin/sh\necho hi\n",
                  .len = 18,
                  .executable = true },
                { .path = "src/deep/a b.c", .data = "int a;\n", .len = 7 },
        };
        struct b4_bundle *b = NULL;
        struct b4_captured_workspace *w = NULL;

        assert_int_equal(b4_bundle_create(in, ELEMENTSOF(in), &b, NULL), 0);
        assert_int_equal(b4_captured_workspace_make(&b, links, n_links, git, &w, NULL), 0);
        assert_null(b);
        return w;
}

static struct b4_provider *fake(void)
{
        struct b4_provider_config cfg = { .type = (char *)"fake", .scope = (char *)"test" };
        struct b4_provider *p = NULL;

        assert_int_equal(b4_provider_new(&cfg, &p, NULL), 0);
        return p;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *thread)
{
        struct b4_policy pol = { .network = B4_NETWORK_DENY }; /* no host veth/NAT */
        struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                fail_msg("acquire: %s", err.msg);
        return sb;
}

static void expect_file(struct b4_sandbox *sb, const char *path, const char *text, bool exec)
{
        struct b4_stat st = { 0 };
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(sb), path, B4_UNBOUNDED, &data, &len, NULL),
                         0);
        assert_int_equal(len, strlen(text));
        assert_memory_equal(data, text, len);
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), path, &st, NULL), 0);
        assert_int_equal(st.executable, exec);
        b4_stat_clear(&st);
        free(data);
}

static void test_fake_files(void **state)
{
        struct b4_provider *p = fake();
        struct b4_sandbox *sb = acquire(p, "m1");
        struct b4_captured_workspace *w = make_ws(false, 0);
        struct b4_error err = { 0 };
        char *commit = (char *)"unset";

        assert_int_equal(b4_workspace_materialize(sb, w, NULL, &commit, &err), 0);
        assert_null(commit);
        expect_file(sb, "/workspace/main.txt", "x", false);
        expect_file(sb, "/workspace/bin/run.sh", "#!/bin/sh\necho hi\n", true);
        expect_file(sb, "/workspace/src/deep/a b.c", "int a;\n", false);

        /* only once: a second materialisation into the same workspace is refused */
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, NULL, &err), -EEXIST);
        assert_string_equal(err.msg, "Workspace /workspace is not empty: a managed workspace is "
                                     "made only once");
        b4_captured_workspace_free(w);
        b4_sandbox_unref(sb);
        b4_provider_free(p);
}

static void test_fake_links_unsupported(void **state)
{
        struct b4_provider *p = fake();
        struct b4_sandbox *sb = acquire(p, "m2");
        struct b4_captured_workspace *w = make_ws(false, 1);
        struct b4_error err = { 0 };

        assert_int_equal(b4_workspace_materialize(sb, w, NULL, NULL, &err), -EOPNOTSUPP);
        assert_string_equal(err.msg, "environment link 'deps': symlink is not supported here");
        b4_captured_workspace_free(w);
        b4_sandbox_unref(sb);
        b4_provider_free(p);
}

/* An exec hook that records the command and answers @exit_code. */
struct seen_cmd {
        char *command;
        char *cwd;
        int exit_code;
};

static int record_cmd(struct b4_sandbox *sb,
                      const struct b4_exec_req *req,
                      struct b4_exec_result *ret,
                      void *userdata,
                      struct b4_error *err)
{
        struct seen_cmd *s = userdata;

        free(s->command);
        free(s->cwd);
        s->command = strdup(req->command);
        s->cwd = strdup(req->cwd);
        ret->out = strdup("");
        ret->errout = strdup(s->exit_code ? "ln: failed\n" : "");
        ret->errout_len = strlen(ret->errout);
        ret->exit_code = s->exit_code;
        return 0;
}

/* A filesystem without symlink: the links are made by the sandbox (one exec), in order. */
static void test_fake_links_by_exec(void **state)
{
        static const struct b4_captured_link links[] = {
                { (char *)"deps", (char *)"/opt" },
                { (char *)"tools/sh", (char *)"/bin/sh" },
        };
        struct b4_provider *p = fake();
        struct b4_sandbox *sb = acquire(p, "m6");
        struct b4_bundle_input in[] = { { .path = "main.txt", .data = "x", .len = 1 } };
        struct b4_bundle *b = NULL;
        struct b4_captured_workspace *w = NULL;
        struct seen_cmd s = { 0 };
        struct b4_error err = { 0 };

        assert_int_equal(b4_bundle_create(in, 1, &b, NULL), 0);
        assert_int_equal(b4_captured_workspace_make(&b, links, 2, false, &w, NULL), 0);
        assert_int_equal(fake_provider_set_exec(p, record_cmd, &s), 0);
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, NULL, &err), 0);
        assert_string_equal(s.command, "set -e\nln -s -- '/opt' 'deps'\nmkdir -p -- 'tools'\n"
                                       "ln -s -- '/bin/sh' 'tools/sh'\n");
        assert_string_equal(s.cwd, "/workspace");
        expect_file(sb, "/workspace/main.txt", "x", false);
        b4_sandbox_unref(sb);

        sb = acquire(p, "m7");
        s.exit_code = 1;
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, NULL, &err), -EIO);
        assert_string_equal(err.msg, "Workspace modes and links could not be made: ln: failed\n");
        b4_sandbox_unref(sb);
        free(s.command);
        free(s.cwd);
        b4_captured_workspace_free(w);
        b4_provider_free(p);
}

struct git_seen {
        unsigned calls;
        bool env_ok;
        const char *reply; /* stdout */
        int exit_code;
};

static int fake_git(struct b4_sandbox *sb,
                    const struct b4_exec_req *req,
                    struct b4_exec_result *ret,
                    void *userdata,
                    struct b4_error *err)
{
        struct git_seen *g = userdata;
        bool home = false, global = false;

        g->calls++;
        for (size_t i = 0; i < req->n_env; i++) {
                home |= strcmp(req->env[i].name, "HOME") == 0 &&
                        strcmp(req->env[i].value, "/tmp") == 0;
                global |= strcmp(req->env[i].name, "GIT_CONFIG_GLOBAL") == 0 &&
                          strcmp(req->env[i].value, "/dev/null") == 0;
        }
        g->env_ok = home && global && strstr(req->command, "git rev-parse HEAD") &&
                    strcmp(req->cwd, "/workspace") == 0;
        ret->out = strdup(g->reply);
        ret->out_len = strlen(g->reply);
        ret->errout = strdup(g->exit_code ? "git: not found\n" : "");
        ret->errout_len = strlen(ret->errout);
        ret->exit_code = g->exit_code;
        return 0;
}

static void test_fake_git(void **state)
{
        struct b4_provider *p = fake();
        struct b4_sandbox *sb = acquire(p, "m3");
        struct b4_captured_workspace *w = make_ws(true, 0);
        struct git_seen g = { .reply = COMMIT "\n" };
        struct b4_error err = { 0 };
        char *commit = NULL;

        assert_int_equal(fake_provider_set_exec(p, fake_git, &g), 0);
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, &commit, &err), 0);
        assert_string_equal(commit, COMMIT);
        assert_int_equal(g.calls, 1);
        assert_true(g.env_ok);
        free(commit);
        b4_sandbox_unref(sb);

        sb = acquire(p, "m4");
        g = (struct git_seen){ .reply = "", .exit_code = 127 };
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, &commit, &err), -EOPNOTSUPP);
        assert_string_equal(err.msg, "Workspace preparation requires compatible Git and link "
                                     "targets: git: not found\n");
        b4_sandbox_unref(sb);

        sb = acquire(p, "m5");
        g = (struct git_seen){ .reply = "not a commit\n" };
        assert_int_equal(b4_workspace_materialize(sb, w, NULL, &commit, &err), -EPROTO);
        assert_string_equal(err.msg, "git baseline printed no commit id");
        b4_sandbox_unref(sb);
        b4_captured_workspace_free(w);
        b4_provider_free(p);
}

/* The real thing: native provider, real git in the sandbox, deterministic commit id; the
 * executable bit and an environment link as a symlink, host-side (openat2 beneath the root). */
static void test_native_git(void **state)
{
        static const struct b4_captured_link links[] = { { (char *)"deps", (char *)"/usr/share" } };
        struct b4_bundle_input in[] = { { .path = "main.txt", .data = "x", .len = 1 },
                                        { .path = "sub/b.txt", .data = "b\n", .len = 2 },
                                        { .path = "bin/run.sh",
                                          .data = "#!/bin/sh\necho hi\n",
                                          .len = 18,
                                          .executable = true } };
        char *dir = NULL, scope[64];
        struct b4_provider *p = NULL;
        struct b4_bundle *b = NULL;
        struct b4_captured_workspace *w = NULL;
        struct b4_error err = { 0 };
        char *c1 = NULL, *c2 = NULL;

        if (!b4_test_is_root() || access("/usr/bin/git", X_OK) != 0 ||
            access("/sys/fs/cgroup", F_OK) != 0)
                skip();
        dir = b4_test_tmpdir();
        snprintf(scope, sizeof(scope), "bundle-test-%d", (int)getpid());
        struct b4_provider_config cfg = { .type = (char *)"native",
                                          .scope = scope,
                                          .state_dir = dir };
        if (b4_provider_new(&cfg, &p, &err) < 0)
                fail_msg("native: %s", err.msg);
        assert_int_equal(b4_bundle_create(in, ELEMENTSOF(in), &b, NULL), 0);
        assert_int_equal(b4_captured_workspace_make(&b, links, 1, true, &w, NULL), 0);
        for (int i = 0; i < 2; i++) {
                struct b4_exec_req req = {
                        .command =
                                "bin/run.sh; readlink deps; ls deps/doc >/dev/null && echo listed"
                };
                struct b4_exec_result res = { 0 };
                struct b4_stat st = { 0 };
                struct b4_sandbox *sb;
                char t[32];

                snprintf(t, sizeof(t), "git-%d", i);
                sb = acquire(p, t);
                if (b4_workspace_materialize(sb, w, NULL, i ? &c2 : &c1, &err) < 0)
                        fail_msg("materialise: %s", err.msg);
                expect_file(sb, "/workspace/sub/b.txt", "b\n", false);
                expect_file(sb, "/workspace/bin/run.sh", "#!/bin/sh\necho hi\n", true);
                assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace/deps", &st, NULL), 0);
                assert_int_equal(st.kind, B4_FILE_SYMLINK);
                assert_string_equal(st.target, "/usr/share");
                b4_stat_clear(&st);
                assert_int_equal(b4_sandbox_exec(sb, &req, &res, NULL), 0);
                assert_string_equal(res.out, "hi\n/usr/share\nlisted\n");
                b4_exec_result_clear(&res);
                b4_sandbox_unref(sb);
                assert_int_equal(b4_provider_destroy(p, t, NULL), 0);
        }
        assert_int_equal(strlen(c1), 40);
        assert_string_equal(c1, c2); /* content, author and dates fixed: same commit */
        free(c1);
        free(c2);
        b4_captured_workspace_free(w);
        b4_provider_free(p);
        b4_test_rmrf(dir);
        free(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fake_files),
                cmocka_unit_test(test_fake_links_unsupported),
                cmocka_unit_test(test_fake_links_by_exec),
                cmocka_unit_test(test_fake_git),
                cmocka_unit_test(test_native_git),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
