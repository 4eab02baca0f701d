/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inspection through the native provider's reader: what a thread wrote, the refusals of
 * links and executables made by real commands, a root segment that is a symlink, and a read
 * racing a writer inside the sandbox (reported as `changed`). Needs root and cgroups.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"
#include "b4box/provider-impl.h"

#include "b4-test.h"

static struct b4_provider *P;
static char *State;

static const char *const threads[] = { "ni-a", "ni-link", "ni-race", "ni-frozen" };

static int group_setup(void **state)
{
        char scope[64];
        struct b4_provider_config cfg = { .type = (char *)"native", .scope = scope };
        struct b4_error err = { 0 };

        if (!b4_test_is_root() || access("/sys/fs/cgroup", F_OK) < 0)
                return 0;
        State = b4_test_tmpdir();
        cfg.state_dir = State;
        (void)snprintf(scope, sizeof(scope), "inspect-test-%d", (int)getpid());
        if (b4_provider_new(&cfg, &P, &err) < 0) {
                fprintf(stderr, "# native provider: %s\n", err.msg);
                P = NULL;
        }
        return 0;
}

static int group_teardown(void **state)
{
        for (size_t i = 0; P && i < sizeof(threads) / sizeof(threads[0]); i++)
                (void)b4_provider_destroy(P, threads[i], NULL);
        P = b4_provider_free(P);
        if (State)
                b4_test_rmrf(State);
        free(State);
        return 0;
}

static struct b4_sandbox *acquire(const char *thread)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        if (!P) {
                print_message("# SKIP needs root, cgroups and the native provider\n");
                skip();
        }
        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY; /* never veth/NAT in the host's namespace */
        if (b4_provider_acquire(P, &req, &sb, &err) < 0)
                fail_msg("acquire %s: %s", thread, err.msg);
        b4_policy_clear(&pol);
        return sb;
}

static void sh(struct b4_sandbox *sb, const char *cmd)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };

        if (b4_sandbox_exec(sb, &req, &res, &err) < 0 || res.exit_code != 0)
                fail_msg("'%s': %s %s", cmd, err.msg, res.errout ? res.errout : "");
        b4_exec_result_clear(&res);
}

static int inspect(const char *thread,
                   const char *root,
                   struct b4_inspection *insp,
                   struct b4_inspect_failure *fail,
                   struct b4_error *err)
{
        struct b4_inspect_options o;

        b4_inspect_options_init(&o);
        o.root = root;
        o.max_file_bytes = o.max_total_bytes = 64u << 20;
        return b4_inspect_thread(P, thread, &o, false, insp, fail, err);
}

static void test_native_reads(void **state)
{
        struct b4_sandbox *sb = acquire("ni-a");
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };

        sh(sb, "mkdir -p src/lib && printf 'hi' > README && printf 'int x;' > src/lib/x.c");
        assert_int_equal(inspect("ni-a", NULL, &insp, &fail, &err), 0);
        assert_int_equal(insp.n_files, 2);
        assert_string_equal(insp.files[0].path, "README");
        assert_string_equal(insp.files[1].path, "src/lib/x.c");
        assert_string_equal(insp.files[1].text, "int x;");
        assert_int_equal(insp.entries, 4);
        b4_inspection_clear(&insp);
        assert_int_equal(inspect("ni-a", "src", &insp, &fail, &err), 0);
        assert_string_equal(insp.files[0].path, "lib/x.c");
        b4_inspection_clear(&insp);

        sh(sb, "printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh");
        assert_int_equal(inspect("ni-a", NULL, &insp, &fail, &err), -EPROTO);
        assert_string_equal(err.msg, "Executable workspace file: run.sh");
        sh(sb, "rm run.sh && ln -s /etc/passwd pw");
        assert_int_equal(inspect("ni-a", NULL, &insp, &fail, &err), -EPROTO);
        assert_string_equal(err.msg, "Unsupported workspace entry (symlink): pw");
        b4_sandbox_unref(sb);
        assert_int_equal(b4_inspect_thread(P, "ni-never", NULL, false, &insp, &fail, &err),
                         -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
}

static void test_root_symlink(void **state)
{
        struct b4_sandbox *sb = acquire("ni-link");
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };

        sh(sb, "mkdir -p real/sub && printf x > real/sub/f && ln -s real draft");
        assert_int_equal(inspect("ni-link", "draft/sub", &insp, &fail, &err), -EPROTO);
        assert_int_equal(fail.code, B4_INSPECT_ROOT_MISSING);
        assert_int_equal(fail.kind, B4_ROOT_NOT_DIRECTORY);
        assert_string_equal(err.msg, "Workspace root \"draft/sub\" is not a directory (\"draft\" "
                                     "is not a directory)");
        /* swap a segment of a root that read fine a moment ago */
        assert_int_equal(inspect("ni-link", "real/sub", &insp, &fail, &err), 0);
        b4_inspection_clear(&insp);
        sh(sb, "mv real elsewhere && ln -s elsewhere real");
        assert_int_equal(inspect("ni-link", "real/sub", &insp, &fail, &err), -EPROTO);
        assert_int_equal(fail.kind, B4_ROOT_NOT_DIRECTORY);
        b4_sandbox_unref(sb);
}

struct writer_job {
        struct b4_sandbox *sb;
        int r;         /* the exec's return */
        int exit_code; /* the loop's exit code */
};

static void *writer(void *arg)
{
        struct writer_job *w = arg;
        struct b4_exec_req req = {
                .command = "i=0; while [ $i -lt 20000 ]; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
                           ">> grow.txt; i=$((i+1)); done",
        };
        struct b4_exec_result res = { 0 };

        w->r = b4_sandbox_exec(w->sb, &req, &res, NULL);
        w->exit_code = res.exit_code;
        b4_exec_result_clear(&res);
        return NULL;
}

/* Start the writer and wait until it has appended something. */
static void start_writer(struct writer_job *w, pthread_t *t)
{
        struct b4_stat st = { 0 };

        assert_int_equal(pthread_create(t, NULL, writer, w), 0);
        for (int i = 0; i < 2000; i++) {
                if (b4_fs_lstat(b4_sandbox_fs(w->sb), "/workspace/grow.txt", &st, NULL) >= 0 &&
                    st.size > 5)
                        return;
                (void)usleep(1000);
        }
        fail_msg("the writer did not start appending within 2 s");
}

static void test_race(void **state)
{
        struct b4_sandbox *sb = acquire("ni-race");
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };
        unsigned changed = 0, ok = 0;
        struct writer_job w = { .sb = sb };
        pthread_t t;

        sh(sb, "printf start > grow.txt");
        start_writer(&w, &t);
        for (int i = 0; i < 2000 && changed == 0; i++) {
                int r = inspect("ni-race", NULL, &insp, &fail, &err);
                if (r == -EPROTO && fail.code == B4_INSPECT_CHANGED)
                        changed++;
                else if (r == 0)
                        ok++;
                else
                        fail_msg("unexpected: %d %s", r, err.msg);
                b4_inspection_clear(&insp);
        }
        (void)pthread_join(t, NULL);
        assert_int_equal(w.r, 0);
        assert_int_equal(w.exit_code, 0);
        print_message("# %u coherent reads before a `changed` refusal\n", ok);
        assert_true(changed > 0);
        assert_non_null(strstr(err.msg, "grow.txt"));
        /* consistent reads need the provider's freeze hook */
        assert_int_equal(b4_inspect_thread(P, "ni-race", NULL, true, &insp, &fail, &err),
                         b4_provider_has_reader(P) && P->ops->freeze ? 0 : -EOPNOTSUPP);
        b4_inspection_clear(&insp);
        b4_sandbox_unref(sb);
}

/* With consistent reads the same racing writer never yields `changed`: the thread is frozen
 * for the read, and thawed after it (the writer finishes all its appends). */
static void test_consistent_under_writes(void **state)
{
        struct b4_sandbox *sb = acquire("ni-frozen");
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        struct writer_job w = { .sb = sb };
        pthread_t t;

        if (!P->ops->freeze) {
                print_message("# SKIP the provider has no freeze\n");
                b4_sandbox_unref(sb);
                return;
        }
        sh(sb, "printf start > grow.txt");
        start_writer(&w, &t);
        for (int i = 0; i < 30; i++) {
                int r = b4_inspect_thread(P, "ni-frozen", NULL, true, &insp, &fail, &err);
                if (r < 0)
                        print_message("# consistent read %d: %d %s (code %d)\n", i, r, err.msg,
                                      (int)fail.code),
                                fail();
                b4_inspection_clear(&insp);
        }
        (void)pthread_join(t, NULL);
        assert_int_equal(w.r, 0);
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace/grow.txt", &st, NULL), 0);
        assert_int_equal(st.size, 5 + 20000 * 30); /* every append ran: thawed after each read */
        b4_stat_clear(&st);
        b4_sandbox_unref(sb);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_native_reads),
                cmocka_unit_test(test_root_symlink),
                cmocka_unit_test(test_race),
                cmocka_unit_test(test_consistent_under_writes),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
