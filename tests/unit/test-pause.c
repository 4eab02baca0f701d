/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause and resume over the fake provider: by hand (the runtime refuses a thread with no live
 * sandbox and one a run uses), the transparent resume of the next call (core's attempt, the
 * one place), a consistent read that must not thaw a paused thread, idle pause before the
 * idle release (which resumes before it ends the sandbox), and the latency stats.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "b4-test.h"
#include "fake/fake.h"
#include "json/json.h"
#include "store/store.h"

struct fixture {
        char *dir;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
        struct b4_policy policy;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct b4_provider_config pc = { .type = (char *)"fake", .scope = (char *)"pause" };
        struct b4_error err = { 0 };

        f->dir = b4_test_tmpdir();
        b4_policy_init(&f->policy);
        if (b4_store_open(f->dir, B4_STORE_EXCLUSIVE, &f->store, &err) < 0 ||
            b4_provider_new(&pc, &f->provider, &err) < 0)
                return -1;
        struct b4_runtime_options o = { .provider = f->provider,
                                        .store = f->store,
                                        .policy = &f->policy,
                                        .idle_timeout_ms = 10000,
                                        .idle_pause_ms = 100 };
        if (b4_runtime_new(&o, &f->rt, &err) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        b4_runtime_free(f->rt);
        b4_provider_free(f->provider);
        b4_store_close(f->store);
        b4_policy_clear(&f->policy);
        b4_test_rmrf(f->dir);
        free(f->dir);
        free(f);
        return 0;
}

/* Create @id and run one writeFile in it, so its sandbox is live and idle. */
static void make_live(struct fixture *f, const char *id)
{
        struct b4_thread_row row = { 0 };
        struct b4_tool_result res = { 0 };
        struct b4_run *run = NULL;
        struct jv *args = jv_pack("{s:s, s:s}", "path", "f", "content", "1");

        assert_int_equal(b4_runtime_thread_create(f->rt, id, NULL, NULL, NULL, &row, NULL), 0);
        b4_thread_row_clear(&row);
        assert_int_equal(b4_runtime_run_begin(f->rt, id, &run, NULL), 0);
        assert_int_equal(b4_run_call(run, "writeFile", args, &res, NULL), 0);
        assert_true(res.ok);
        b4_tool_result_clear(&res);
        jv_unref(args);
        b4_run_end(run);
}

static uint64_t mono_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool frozen(struct fixture *f, const char *id)
{
        bool fr = false;

        assert_true(fake_provider_freezes(f->provider, id, &fr) >= 0);
        return fr;
}

static void test_pause_needs_a_live_idle_thread(void **state)
{
        struct fixture *f = *state;
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;

        assert_int_equal(b4_runtime_thread_pause(f->rt, "ghost", true, &err), -ENOENT);
        assert_int_equal(b4_runtime_thread_create(f->rt, "cold", NULL, NULL, NULL, &row, NULL), 0);
        b4_thread_row_clear(&row);
        assert_int_equal(b4_runtime_thread_pause(f->rt, "cold", true, &err), -ESRCH);
        assert_string_equal(err.msg, "thread 'cold' has no live sandbox to pause");
        assert_int_equal(b4_runtime_thread_pause(f->rt, "cold", false, &err), 0);
        assert_int_equal(b4_runtime_run_begin(f->rt, "cold", &run, NULL), 0);
        assert_int_equal(b4_runtime_thread_pause(f->rt, "cold", true, &err), -EBUSY);
        assert_string_equal(err.msg, "thread 'cold' has a run in flight");
        assert_false(b4_runtime_thread_paused(f->rt, "cold", NULL));
        b4_run_end(run);
}

static void test_next_call_resumes_transparently(void **state)
{
        struct fixture *f = *state;
        struct b4_pause_stats st;
        struct b4_run *run = NULL;
        int64_t since = 0;
        char *data = NULL;
        size_t len = 0;

        make_live(f, "p");
        assert_int_equal(b4_runtime_thread_pause(f->rt, "p", true, NULL), 0);
        assert_true(frozen(f, "p"));
        assert_true(b4_runtime_thread_paused(f->rt, "p", &since));
        assert_true(since > 0);
        assert_int_equal(b4_runtime_thread_pause(f->rt, "p", true, NULL), 0); /* idempotent */
        b4_provider_pause_stats(f->provider, &st);
        assert_int_equal(st.pause.count, 1);
        assert_int_equal(st.resume.count, 0);
        /* a consistent read around a paused thread leaves it frozen */
        assert_int_equal(b4_provider_freeze(f->provider, "p", true, NULL), 0);
        assert_int_equal(b4_provider_freeze(f->provider, "p", false, NULL), 0);
        assert_true(frozen(f, "p"));
        /* the next call resumes it first */
        assert_int_equal(b4_runtime_run_begin(f->rt, "p", &run, NULL), 0);
        assert_true(b4_runtime_thread_paused(f->rt, "p", NULL)); /* taking the slot is no call */
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(b4_run_sandbox(run)), "/workspace/f",
                                         B4_UNBOUNDED, &data, &len, NULL),
                         0);
        assert_string_equal(data, "1");
        free(data);
        assert_false(frozen(f, "p"));
        assert_false(b4_runtime_thread_paused(f->rt, "p", &since));
        assert_int_equal(since, 0);
        b4_run_end(run);
        b4_provider_pause_stats(f->provider, &st);
        assert_int_equal(st.resume.count, 1);
        assert_int_equal(st.resume.buckets[B4_PAUSE_BUCKETS - 1], 1);
        /* by hand too */
        assert_int_equal(b4_runtime_thread_pause(f->rt, "p", true, NULL), 0);
        assert_int_equal(b4_runtime_thread_pause(f->rt, "p", false, NULL), 0);
        assert_false(frozen(f, "p"));
        assert_false(b4_runtime_thread_paused(f->rt, "p", NULL));
}

static void test_idle_pause_then_release(void **state)
{
        struct fixture *f = *state;
        uint64_t t = mono_ms();

        make_live(f, "idle");
        assert_int_equal(b4_runtime_reap_idle(f->rt, t), 0);
        assert_false(b4_runtime_thread_paused(f->rt, "idle", NULL)); /* not idle for 100 ms yet */
        assert_int_equal(b4_runtime_reap_idle(f->rt, t + 5000), 0);
        assert_true(b4_runtime_thread_paused(f->rt, "idle", NULL));
        assert_true(frozen(f, "idle"));
        assert_true(b4_runtime_thread_is_live(f->rt, "idle"));
        assert_int_equal(b4_runtime_reap_idle(f->rt, t + 60000), 1); /* the idle release */
        assert_false(b4_runtime_thread_is_live(f->rt, "idle"));
        assert_false(b4_runtime_thread_paused(f->rt, "idle", NULL));
        assert_false(frozen(f, "idle")); /* resumed before it was released */
        assert_int_equal(fake_provider_instances(f->provider, "idle"), 0);
}

static void test_release_and_delete_of_a_paused_thread(void **state)
{
        struct fixture *f = *state;

        make_live(f, "r");
        assert_int_equal(b4_runtime_thread_pause(f->rt, "r", true, NULL), 0);
        assert_int_equal(b4_runtime_thread_release(f->rt, "r", NULL), 0);
        assert_false(frozen(f, "r"));
        assert_false(b4_runtime_thread_paused(f->rt, "r", NULL));
        make_live(f, "d");
        assert_int_equal(b4_runtime_thread_pause(f->rt, "d", true, NULL), 0);
        assert_int_equal(b4_runtime_thread_delete(f->rt, "d", NULL), 0);
        assert_false(b4_runtime_thread_paused(f->rt, "d", NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pause_needs_a_live_idle_thread, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_next_call_resumes_transparently, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_idle_pause_then_release, setup, teardown),
                cmocka_unit_test_setup_teardown(test_release_and_delete_of_a_paused_thread, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
