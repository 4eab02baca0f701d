/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance suite against the fake provider (one TAP line per case), then against
 * deliberately broken providers to prove each kind of case can fail and that cleanup runs
 * even when a body fails.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "fake/fake.h"
#include "providers.h"

/* ---- the suite against the fake: one cmocka test per case ---- */

static int make_fake(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        struct b4_provider_config cfg = { .type = (char *)"fake", .scope = (char *)"conf" };

        return b4_provider_new(&cfg, ret, err);
}

static int fake_instances(struct b4_provider *p, const char *thread_id, void *userdata)
{
        return fake_provider_instances(p, thread_id);
}

static void test_fake_case(void **state)
{
        size_t i = (size_t)(uintptr_t)*state;
        struct b4_conformance_opts o = { .make_provider = make_fake,
                                         .instances = fake_instances,
                                         .concurrency = 8 };
        struct b4_conformance_report rep = { 0 };

        assert_int_equal(b4_conformance_run_case(&o, i, &rep, NULL), 0);
        assert_int_equal(rep.index, i);
        assert_string_equal(rep.name, b4_conformance_case_name(i));
        if (rep.result != B4_CONFORMANCE_PASS)
                fail_msg("%s: %s", rep.result == B4_CONFORMANCE_SKIP ? "skipped" : "failed",
                         rep.message);
        assert_string_equal(rep.message, "");
}

/* ---- a provider with selectable bugs, wrapping a fake ---- */

enum bug {
        BUG_FRESH_ACQUIRE = 1 << 0, /* acquire starts from an empty workspace every time */
        BUG_DROP_EXIT = 1 << 1,     /* exec reports any non-zero exit as 1 */
        BUG_DESTROY_KEEPS = 1 << 2, /* destroy only releases */
        BUG_DESTROY_FAILS = 1 << 3, /* destroy fails -EIO */
        BUG_ONE_WORKSPACE = 1 << 4, /* every thread shares one workspace */
        BUG_NO_READER = 1 << 5,     /* no open_reader member */
        BUG_TWO_INSTANCES = 1 << 6, /* the instances probe says 2 */
        BUG_LEAK = 1 << 7,          /* every acquired workspace gets a file 'secret' */
};

struct broken {
        struct b4_provider base;
        struct b4_provider *inner;
        unsigned bugs;
        struct world *w;
};

/* What the test sees across the providers the suite makes. */
struct world {
        unsigned bugs;
        unsigned destroys; /* destroy calls that reached the wrapper */
        char last_destroyed[128];
        int inner_workspaces_left; /* fake workspaces left when the suite freed a provider */
};

static const char *inner_id(struct broken *b, const char *thread_id)
{
        return (b->bugs & BUG_ONE_WORKSPACE) ? "shared" : thread_id;
}

static int broken_acquire(struct b4_provider *p,
                          struct b4_entry *e,
                          const struct b4_acquire_req *req,
                          struct b4_sandbox **ret,
                          struct b4_error *err)
{
        struct broken *b = (struct broken *)p;
        struct b4_acquire_req r = *req;
        int rc;

        if (b->bugs & BUG_FRESH_ACQUIRE)
                (void)b4_provider_destroy(b->inner, req->thread_id, NULL);
        r.thread_id = inner_id(b, req->thread_id);
        rc = b4_provider_acquire(b->inner, &r, ret, err);
        if (rc >= 0 && (b->bugs & BUG_LEAK))
                assert_int_equal(
                        b4_fs_write_file(b4_sandbox_fs(*ret), "/workspace/secret", "x", 1, NULL),
                        0);
        return rc;
}

static int broken_release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct broken *b = (struct broken *)p;
        const char *thread_id = b4_entry_thread_id(e);

        return b4_provider_release(b->inner, inner_id(b, thread_id), err);
}

static int broken_destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        struct broken *b = (struct broken *)p;
        const char *thread_id = b4_entry_thread_id(e);

        b->w->destroys++;
        snprintf(b->w->last_destroyed, sizeof(b->w->last_destroyed), "%s", thread_id);
        if (b->bugs & BUG_DESTROY_FAILS)
                return b4_error_set(err, -EIO, "backend unreachable");
        if (b->bugs & BUG_DESTROY_KEEPS)
                return b4_provider_release(b->inner, inner_id(b, thread_id), err);
        return b4_provider_destroy(b->inner, inner_id(b, thread_id), err);
}

static int broken_open_reader(struct b4_provider *p,
                              const struct b4_reader_req *req,
                              struct b4_reader **ret,
                              struct b4_error *err)
{
        struct broken *b = (struct broken *)p;
        struct b4_reader_req r = *req;

        r.thread_id = inner_id(b, req->thread_id);
        return b4_provider_open_reader(b->inner, &r, ret, err);
}

static void broken_free(struct b4_provider *p)
{
        struct broken *b = (struct broken *)p;

        b->w->inner_workspaces_left = fake_provider_n_workspaces(b->inner);
        b4_provider_free(b->inner);
        free(p->scope);
        free(b);
}

static const struct b4_provider_ops broken_ops = {
        .name = "broken",
        .acquire = broken_acquire,
        .release = broken_release,
        .destroy = broken_destroy,
        .open_reader = broken_open_reader,
        .free = broken_free,
};

static const struct b4_provider_ops broken_ops_no_reader = {
        .name = "broken",
        .acquire = broken_acquire,
        .release = broken_release,
        .destroy = broken_destroy,
        .free = broken_free,
};

static int exec_drop_exit(struct b4_sandbox *sb,
                          const struct b4_exec_req *req,
                          struct b4_exec_result *ret,
                          void *userdata,
                          struct b4_error *err)
{
        int r = fake_exec_builtin(sb, req, ret, NULL, err);

        if (r >= 0 && ret->exit_code != 0)
                ret->exit_code = 1;
        return r;
}

static int make_broken(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        struct world *w = userdata;
        struct broken *b = calloc(1, sizeof(*b));
        int r;

        assert_non_null(b);
        r = make_fake(NULL, &b->inner, err);
        assert_int_equal(r, 0);
        b->bugs = w->bugs;
        b->w = w;
        assert_int_equal(
                b4_provider_init(&b->base,
                                 (w->bugs & BUG_NO_READER) ? &broken_ops_no_reader : &broken_ops,
                                 "broken"),
                0);
        if (w->bugs & BUG_DROP_EXIT)
                assert_int_equal(fake_provider_set_exec(b->inner, exec_drop_exit, NULL), 0);
        *ret = &b->base;
        return 0;
}

static int broken_instances(struct b4_provider *p, const char *thread_id, void *userdata)
{
        struct broken *b = (struct broken *)p;

        if (b->bugs & BUG_TWO_INSTANCES)
                return 2;
        return fake_provider_instances(b->inner, inner_id(b, thread_id));
}

/* Run case @name (1-based number @n, checked against the name) with @bugs. */
static void run_broken(struct world *w, size_t n, struct b4_conformance_report *rep)
{
        struct b4_conformance_opts o = { .make_provider = make_broken,
                                         .instances = broken_instances,
                                         .userdata = w,
                                         .run_id = "test" };

        *rep = (struct b4_conformance_report){ 0 };
        assert_int_equal(b4_conformance_run_case(&o, n - 1, rep, NULL), 0);
}

static void expect_fail(unsigned bugs, size_t n, const char *msg_part)
{
        struct world w = { .bugs = bugs };
        struct b4_conformance_report rep;

        run_broken(&w, n, &rep);
        if (rep.result != B4_CONFORMANCE_FAIL)
                fail_msg("case %zu '%s' did not fail with bugs %#x", n, rep.name, bugs);
        if (!strstr(rep.message, msg_part))
                fail_msg("case %zu: message '%s' lacks '%s'", n, rep.message, msg_part);
        /* cleanup ran: every workspace of the case is gone (unless destroy is the bug) */
        if (!(bugs & (BUG_DESTROY_KEEPS | BUG_DESTROY_FAILS)))
                assert_int_equal(w.inner_workspaces_left, 0);
        assert_true(w.destroys > 0);
}

static void expect_pass(unsigned bugs, size_t n)
{
        struct world w = { .bugs = bugs };
        struct b4_conformance_report rep;

        run_broken(&w, n, &rep);
        if (rep.result != B4_CONFORMANCE_PASS)
                fail_msg("case %zu '%s' with bugs %#x: %s", n, rep.name, bugs, rep.message);
}

static void test_broken_acquire_not_idempotent(void **state)
{
        expect_fail(BUG_FRESH_ACQUIRE, 1, "readFile /workspace/x: ENOENT");
        expect_fail(BUG_FRESH_ACQUIRE, 9, "writeFile /workspace/c");
        expect_pass(BUG_FRESH_ACQUIRE, 4);
}

static void test_broken_exit_code(void **state)
{
        expect_fail(BUG_DROP_EXIT, 10, "'exit 7' exited 1, want 7");
        expect_pass(BUG_DROP_EXIT, 4); /* `true` still exits 0 */
}

static void test_broken_isolation(void **state)
{
        expect_fail(BUG_ONE_WORKSPACE, 2, "handle thread id is 'shared'");
        expect_fail(BUG_LEAK, 2, "lists 'secret' written by thread 'test-2-a'");
        expect_pass(BUG_LEAK, 1);
}

static void test_broken_destroy_keeps(void **state)
{
        expect_fail(BUG_DESTROY_KEEPS, 3, "'keep' survived destroy");
        expect_fail(BUG_DESTROY_KEEPS, 7, "succeeded");
        expect_fail(BUG_DESTROY_KEEPS, 12, "was not destroyed");
}

static void test_broken_instances(void **state)
{
        expect_fail(BUG_TWO_INSTANCES, 9, "2 live instances");
}

static void test_broken_cleanup_messages(void **state)
{
        struct world w = { .bugs = BUG_DESTROY_FAILS };
        struct b4_conformance_report rep;

        /* body fine, cleanup fails */
        run_broken(&w, 4, &rep);
        assert_int_equal(rep.result, B4_CONFORMANCE_FAIL);
        assert_string_equal(rep.message, "SandboxProvider conformance cleanup failed: destroy "
                                         "'test-4-t': backend unreachable");
        /* body and cleanup fail */
        w = (struct world){ .bugs = BUG_DESTROY_FAILS | BUG_FRESH_ACQUIRE };
        run_broken(&w, 1, &rep);
        assert_int_equal(rep.result, B4_CONFORMANCE_FAIL);
        assert_string_equal(rep.message,
                            "SandboxProvider conformance body and cleanup failed: readFile "
                            "/workspace/x: ENOENT: /workspace/x; destroy 'test-1-t1': backend "
                            "unreachable");
        expect_fail(BUG_DESTROY_FAILS, 11, "destroy 'test-11-never': backend unreachable");
}

/* A failing body still destroys every thread it used. */
static void test_cleanup_after_failure(void **state)
{
        struct world w = { .bugs = BUG_FRESH_ACQUIRE };
        struct b4_conformance_report rep;

        run_broken(&w, 2 + 0, &rep); /* case 2 passes even with this bug: two threads used */
        assert_int_equal(rep.result, B4_CONFORMANCE_PASS);
        assert_int_equal(w.destroys, 2 + 0);
        w = (struct world){ .bugs = BUG_FRESH_ACQUIRE };
        run_broken(&w, 1, &rep);
        assert_int_equal(rep.result, B4_CONFORMANCE_FAIL);
        assert_string_equal(w.last_destroyed, "test-1-t1");
        assert_int_equal(w.inner_workspaces_left, 0);
}

static void test_no_reader_skips(void **state)
{
        struct world w = { .bugs = BUG_NO_READER };
        struct b4_conformance_report rep;

        for (size_t n = 5; n <= 8; n++) {
                run_broken(&w, n, &rep);
                assert_int_equal(rep.result, B4_CONFORMANCE_SKIP);
                assert_string_equal(rep.message, "provider \"broken\" has no workspace reader");
        }
        expect_pass(BUG_NO_READER, 1);
}

struct tally {
        unsigned calls;
        unsigned failed;
};

static void count_report(const struct b4_conformance_report *rep, void *userdata)
{
        struct tally *t = userdata;

        t->calls++;
        t->failed += rep->result == B4_CONFORMANCE_FAIL;
}

static void test_run_summary(void **state)
{
        struct tally t = { 0 };
        struct b4_conformance_opts o = { .make_provider = make_fake,
                                         .report = count_report,
                                         .userdata = &t };
        struct b4_conformance_summary sum = { 0 };

        assert_int_equal(b4_conformance_n_cases(), 12);
        assert_null(b4_conformance_case_name(12));
        assert_int_equal(b4_conformance_run(&o, &sum, NULL), 0);
        assert_int_equal(sum.passed, 12);
        assert_int_equal(sum.failed, 0);
        assert_int_equal(t.calls, 12);
        o.make_provider = NULL;
        assert_int_equal(b4_conformance_run(&o, &sum, NULL), -EINVAL);
}

static int make_failing(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        return b4_error_set(err, -EIO, "no backend");
}

static void test_run_reports_failures(void **state)
{
        struct tally t = { 0 };
        struct b4_conformance_opts o = { .make_provider = make_failing,
                                         .report = count_report,
                                         .userdata = &t };
        struct b4_conformance_summary sum = { 0 };

        assert_int_equal(b4_conformance_run(&o, &sum, NULL), -EPROTO);
        assert_int_equal(sum.failed, 12);
        assert_int_equal(t.failed, 12);
}

int main(void)
{
        static const struct CMUnitTest fixed[] = {
                cmocka_unit_test(test_broken_acquire_not_idempotent),
                cmocka_unit_test(test_broken_exit_code),
                cmocka_unit_test(test_broken_isolation),
                cmocka_unit_test(test_broken_destroy_keeps),
                cmocka_unit_test(test_broken_instances),
                cmocka_unit_test(test_broken_cleanup_messages),
                cmocka_unit_test(test_cleanup_after_failure),
                cmocka_unit_test(test_no_reader_skips),
                cmocka_unit_test(test_run_summary),
                cmocka_unit_test(test_run_reports_failures),
        };
        size_t n = b4_conformance_n_cases(), nf = sizeof(fixed) / sizeof(fixed[0]);
        struct CMUnitTest *tests = calloc(n + nf, sizeof(*tests));
        char(*names)[160] = calloc(n, sizeof(*names));
        int r;

        if (!tests || !names)
                return 1;
        for (size_t i = 0; i < n; i++) {
                snprintf(names[i], sizeof(names[i]), "fake: %zu %s", i + 1,
                         b4_conformance_case_name(i));
                tests[i] = (struct CMUnitTest){ .name = names[i],
                                                .test_func = test_fake_case,
                                                .initial_state = (void *)(uintptr_t)i };
        }
        memcpy(tests + n, fixed, sizeof(fixed));
        r = _cmocka_run_group_tests("conformance", tests, n + nf, NULL, NULL);
        free(tests);
        free(names);
        return r;
}
