/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread runtime over the fake provider: run slots, shared child sandboxes, deletion
 * and id reuse, idle reap, shutdown, concurrent runs of one thread, permission requests
 * answered in a later run, the caller's permission lists and read cap, and a reader kept
 * across calls (b4_runtime_open_reader(), b4_runtime_reader_tools()).
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        struct b4_provider_config pc = { .type = (char *)"fake", .scope = (char *)"rt" };
        struct b4_error err = { 0 };

        f->dir = b4_test_tmpdir();
        b4_policy_init(&f->policy);
        if (b4_store_open(f->dir, B4_STORE_EXCLUSIVE, &f->store, &err) < 0 ||
            b4_provider_new(&pc, &f->provider, &err) < 0)
                return -1;
        struct b4_runtime_options o = { .provider = f->provider,
                                        .store = f->store,
                                        .policy = &f->policy,
                                        .idle_timeout_ms = 1000 };
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

static void create(struct fixture *f, const char *id, const char *parent)
{
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };

        assert_int_equal(b4_runtime_thread_create(f->rt, id, NULL, parent, NULL, &row, &err), 0);
        b4_thread_row_clear(&row);
}

/* A tool call of @run: writeFile @content to /workspace/@name, which must succeed. */
static void call(struct b4_run *run, const char *name, const char *content)
{
        struct b4_tool_result res = { 0 };
        struct jv *args = jv_object_new();

        assert_int_equal(jv_object_set_new(args, "path", jv_string_new(name)), 0);
        assert_int_equal(jv_object_set_new(args, "content", jv_string_new(content)), 0);
        assert_int_equal(b4_run_call(run, "writeFile", args, &res, NULL), 0);
        assert_true(res.ok);
        assert_null(res.code);
        b4_tool_result_clear(&res);
        jv_unref(args);
}

static void test_run_slot_is_exclusive(void **state)
{
        struct fixture *f = *state;
        struct b4_run *a = NULL, *b = NULL;
        struct b4_error err = { 0 };

        create(f, "t", NULL);
        assert_int_equal(b4_runtime_run_begin(f->rt, "t", &a, &err), 0);
        assert_true(b4_runtime_thread_busy(f->rt, "t"));
        assert_int_equal(b4_runtime_run_begin(f->rt, "t", &b, &err), -EBUSY);
        assert_string_equal(err.msg, "thread 't' has a run in flight");
        assert_int_equal(b4_runtime_thread_delete(f->rt, "t", &err), -EBUSY);
        assert_int_equal(b4_runtime_thread_release(f->rt, "t", &err), -EBUSY);
        assert_int_equal(b4_runtime_thread_cancel(f->rt, "t"), 0);
        assert_true(b4_cancel_is_set(b4_run_cancel_token(a)));
        b4_run_end(a);
        assert_false(b4_runtime_thread_busy(f->rt, "t"));
        assert_int_equal(b4_runtime_thread_cancel(f->rt, "t"), -ESRCH);
        assert_int_equal(b4_runtime_run_begin(f->rt, "t", &b, &err), 0);
        b4_run_end(b);
        assert_int_equal(b4_runtime_run_begin(f->rt, "ghost", &b, &err), -ENOENT);
}

static void test_child_shares_parent_sandbox(void **state)
{
        struct fixture *f = *state;
        struct b4_run *p = NULL, *c = NULL;
        char *data = NULL;
        size_t len = 0;

        create(f, "parent", NULL);
        create(f, "child", "parent");
        assert_int_equal(b4_runtime_run_begin(f->rt, "parent", &p, NULL), 0);
        call(p, "note", "from-parent");
        /* a child runs while its parent's run is in flight, in the same sandbox */
        assert_int_equal(b4_runtime_run_begin(f->rt, "child", &c, NULL), 0);
        assert_ptr_equal(b4_run_sandbox(c), b4_run_sandbox(p));
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(b4_run_sandbox(c)), "/workspace/note",
                                         B4_UNBOUNDED, &data, &len, NULL),
                         0);
        assert_string_equal(data, "from-parent");
        free(data);
        b4_run_end(c);
        b4_run_end(p);
        assert_int_equal(fake_provider_instances(f->provider, "parent"), 1);
        assert_int_equal(fake_provider_instances(f->provider, "child"), 0);
}

static void test_delete_destroys_and_frees_id(void **state)
{
        struct fixture *f = *state;
        struct b4_thread_row row = { 0 };
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };
        char **names = NULL;

        create(f, "d", NULL);
        create(f, "d-kid", "d");
        assert_int_equal(b4_runtime_run_begin(f->rt, "d", &run, NULL), 0);
        call(run, "file", "x");
        b4_run_end(run);
        assert_true(b4_runtime_thread_is_live(f->rt, "d"));
        assert_int_equal(b4_runtime_thread_delete(f->rt, "d", &err), 0);
        assert_false(b4_runtime_thread_is_live(f->rt, "d"));
        assert_int_equal(fake_provider_n_workspaces(f->provider), 0);
        assert_int_equal(b4_store_thread_get(f->store, "d-kid", &row, NULL), -ENOENT);
        assert_int_equal(b4_runtime_thread_delete(f->rt, "d", &err), -ENOENT);
        create(f, "d", NULL);
        assert_int_equal(b4_runtime_run_begin(f->rt, "d", &run, NULL), 0);
        assert_int_equal(
                b4_fs_list_dir(b4_sandbox_fs(b4_run_sandbox(run)), "/workspace", &names, NULL), 0);
        assert_null(names[0]);
        free(names);
        b4_run_end(run);
}

/* A crash between the deletion mark and the rows' removal, and a sandbox without a row:
 * reconcile finishes the one and sweeps the other, and a marked thread refuses runs. */
static void test_reconcile_finishes_and_sweeps(void **state)
{
        struct fixture *f = *state;
        struct b4_reconcile_stats st = { 0 };
        struct b4_thread_row row = { 0 };
        struct b4_sandbox *sb = NULL;
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };

        create(f, "keep", NULL);
        create(f, "gone", NULL);
        create(f, "gone-kid", "gone");
        for (const char *const *id = (const char *const[]){ "keep", "gone", NULL }; *id; id++) {
                assert_int_equal(b4_runtime_run_begin(f->rt, *id, &run, NULL), 0);
                call(run, "file", "x");
                b4_run_end(run);
        }
        assert_int_equal(b4_provider_acquire(f->provider,
                                             &(struct b4_acquire_req){ .thread_id = "orphan",
                                                                       .policy = &f->policy },
                                             &sb, &err),
                         0);
        b4_sandbox_unref(sb);
        assert_int_equal(fake_provider_n_workspaces(f->provider), 3);
        assert_int_equal(b4_store_thread_mark_deleting(f->store, "gone", &err), 0);
        assert_int_equal(b4_runtime_run_begin(f->rt, "gone-kid", &run, &err), -ENOENT);
        assert_int_equal(b4_runtime_reconcile(f->rt, &st, &err), 0);
        assert_int_equal(st.deletions_finished, 1);
        assert_int_equal(st.threads, 1);
        assert_int_equal(st.swept, 1); /* the orphan; "gone" went with its deletion */
        assert_int_equal(fake_provider_n_workspaces(f->provider), 1);
        assert_int_equal(b4_store_thread_get(f->store, "gone", &row, NULL), -ENOENT);
        assert_int_equal(b4_store_thread_get(f->store, "gone-kid", &row, NULL), -ENOENT);
        assert_int_equal(b4_runtime_run_begin(f->rt, "keep", &run, NULL), 0);
        b4_run_end(run);
        assert_int_equal(b4_runtime_reconcile(f->rt, &st, &err), 0);
        assert_int_equal(st.deletions_finished + (size_t)st.swept, 0);
}

static void test_reap_idle_releases_keeps_workspace(void **state)
{
        struct fixture *f = *state;
        struct b4_runtime_stats st;
        struct b4_run *run = NULL;
        char *data = NULL;
        size_t len = 0;

        create(f, "idle", NULL);
        assert_int_equal(b4_runtime_run_begin(f->rt, "idle", &run, NULL), 0);
        call(run, "kept", "v");
        b4_run_end(run);
        assert_int_equal(b4_runtime_reap_idle(f->rt, 0), 0); /* not idle yet at t=0 */
        assert_int_equal(b4_runtime_reap_idle(f->rt, UINT64_MAX / 2), 1);
        assert_false(b4_runtime_thread_is_live(f->rt, "idle"));
        assert_int_equal(fake_provider_instances(f->provider, "idle"), 0);
        b4_runtime_stats(f->rt, &st);
        assert_int_equal(st.releases, 1);
        assert_int_equal(b4_runtime_run_begin(f->rt, "idle", &run, NULL), 0);
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(b4_run_sandbox(run)), "/workspace/kept",
                                         B4_UNBOUNDED, &data, &len, NULL),
                         0);
        assert_string_equal(data, "v");
        free(data);
        b4_run_end(run);
}

static void test_shutdown_refuses_new_runs(void **state)
{
        struct fixture *f = *state;
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };

        create(f, "s", NULL);
        assert_int_equal(b4_runtime_run_begin(f->rt, "s", &run, NULL), 0);
        b4_run_end(run);
        b4_runtime_shutdown(f->rt, 1000);
        assert_int_equal(b4_runtime_run_begin(f->rt, "s", &run, &err), -ESHUTDOWN);
        assert_false(b4_runtime_thread_is_live(f->rt, "s"));
}

struct racer {
        struct b4_runtime *rt;
        int result;
        struct b4_run *run;
        pthread_barrier_t *barrier;
};

static void *race(void *arg)
{
        struct racer *r = arg;

        (void)pthread_barrier_wait(r->barrier);
        r->result = b4_runtime_run_begin(r->rt, "race", &r->run, NULL);
        return NULL;
}

static void test_concurrent_runs_one_wins(void **state)
{
        struct fixture *f = *state;

        enum {
                N = 8
        };

        pthread_t th[N];
        struct racer rc[N];
        pthread_barrier_t barrier;
        int wins = 0, busy = 0;

        create(f, "race", NULL);
        pthread_barrier_init(&barrier, NULL, N);
        for (int i = 0; i < N; i++) {
                rc[i] = (struct racer){ .rt = f->rt, .barrier = &barrier };
                pthread_create(&th[i], NULL, race, &rc[i]);
        }
        for (int i = 0; i < N; i++)
                pthread_join(th[i], NULL);
        for (int i = 0; i < N; i++) {
                wins += rc[i].result == 0;
                busy += rc[i].result == -EBUSY;
                b4_run_end(rc[i].run);
        }
        pthread_barrier_destroy(&barrier);
        assert_int_equal(wins, 1);
        assert_int_equal(busy, N - 1);
        assert_int_equal(fake_provider_instances(f->provider, "race"), 1);
}

static void test_bad_ids_and_parents(void **state)
{
        struct fixture *f = *state;
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };

        assert_int_equal(b4_runtime_thread_create(f->rt, "a/b", NULL, NULL, NULL, &row, &err),
                         -EINVAL);
        assert_int_equal(b4_runtime_thread_create(f->rt, "", NULL, NULL, NULL, &row, &err),
                         -EINVAL);
        assert_int_equal(b4_runtime_thread_create(f->rt, "x", NULL, "nope", NULL, &row, &err),
                         -ENOENT);
        assert_string_equal(err.msg, "parent thread 'nope' not found");
        assert_int_equal(b4_runtime_thread_create(f->rt, NULL, NULL, NULL, "alice", &row, &err), 0);
        assert_int_equal(strncmp(row.id, "thr_", 4), 0);
        assert_int_equal(strlen(row.id), 28);
        assert_string_equal(row.owner, "alice");
        b4_thread_row_clear(&row);
}

/* The interruptId of a permission_required result; the caller frees it. */
static char *request_id(const struct b4_tool_result *res)
{
        const struct jv *req = jv_object_get(res->doc, "permissionRequest");

        assert_false(res->ok);
        assert_string_equal(res->code, "permission_required");
        return strdup(jv_string(jv_object_get(req, "interruptId")));
}

static void test_permission_request_resumes_in_a_later_run(void **state)
{
        static const char cfg_json[] = "{\"sandbox\": {\"provider\": {\"type\": \"fake\", "
                                       "\"scope\": \"rt\"}}, \"permissions\": "
                                       "{\"mode\": \"interactive\"}}";
        struct fixture *f = *state;
        struct b4_config *cfg = NULL;
        struct b4_runtime *rt = NULL;
        struct b4_tool_result res = { 0 };
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };
        struct jv *args = jv_object_new();
        char *id;

        assert_int_equal(b4_config_parse(cfg_json, strlen(cfg_json), f->dir, &cfg, NULL, &err), 0);
        struct b4_runtime_options o = {
                .provider = f->provider, .store = f->store, .policy = &f->policy, .config = cfg
        };
        assert_int_equal(b4_runtime_new(&o, &rt, &err), 0);
        create(f, "p", NULL);
        create(f, "q", NULL);
        assert_int_equal(jv_object_set_new(args, "command", jv_string_new("echo hi")), 0);
        /* the config's interactive mode asks; the request outlives its run */
        assert_int_equal(b4_runtime_run_begin(rt, "p", &run, &err), 0);
        assert_int_equal(b4_run_call(run, "runBash", args, &res, &err), 0);
        id = request_id(&res);
        b4_tool_result_clear(&res);
        b4_run_end(run);
        /* only the thread that raised it may answer it */
        assert_int_equal(b4_runtime_run_begin(rt, "q", &run, &err), 0);
        assert_int_equal(b4_run_resume(run, id, "once", &res, &err), -ENOENT);
        b4_run_end(run);
        assert_int_equal(b4_runtime_run_begin(rt, "p", &run, &err), 0);
        assert_int_equal(b4_run_resume(run, id, "maybe", &res, &err), -EINVAL);
        assert_int_equal(b4_run_resume(run, id, "once", &res, &err), 0);
        assert_true(res.ok);
        assert_string_equal(jv_string(jv_object_get(jv_object_get(res.doc, "result"), "stdout")),
                            "hi\n");
        b4_tool_result_clear(&res);
        assert_int_equal(b4_run_resume(run, id, "once", &res, &err), -ENOENT);
        b4_run_end(run);
        free(id);
        jv_unref(args);
        b4_runtime_free(rt);
        b4_config_free(cfg);
}

/* One call's result document as JSON text; the caller frees it. */
static char *call_text(struct b4_run *run, const char *tool, const char *key, const char *value)
{
        struct b4_tool_result res = { 0 };
        struct jv *args = jv_object_new();
        char *json = NULL;

        assert_int_equal(jv_object_set_new(args, key, jv_string_new(value)), 0);
        assert_int_equal(b4_run_call(run, tool, args, &res, NULL), 0);
        assert_int_equal(jv_dump(res.doc, 0, &json), 0);
        b4_tool_result_clear(&res);
        jv_unref(args);
        return json;
}

static void test_caller_permissions_and_read_cap(void **state)
{
        struct fixture *f = *state;
        struct b4_permissions *perms = NULL;
        struct b4_runtime *rt = NULL;
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };
        char *json;

        assert_int_equal(b4_permissions_new(B4_PERMISSION_NON_INTERACTIVE, &perms), 0);
        assert_int_equal(b4_permissions_add(perms, B4_PERMISSION_LIST_DENY, "bash", "echo", &err),
                         0);
        struct b4_runtime_options o = { .provider = f->provider,
                                        .store = f->store,
                                        .policy = &f->policy,
                                        .permissions = perms,
                                        .read_cap = 4 };
        assert_int_equal(b4_runtime_new(&o, &rt, &err), 0);
        create(f, "c", NULL);
        assert_int_equal(b4_runtime_run_begin(rt, "c", &run, &err), 0);
        call(run, "five", "12345");
        json = call_text(run, "readFile", "path", "five");
        assert_string_equal(json, "{\"ok\":false,\"error\":{\"code\":\"tool_error\",\"errno\":"
                                  "\"EFBIG\",\"message\":\"File too large: 5 bytes (max 4) at "
                                  "/workspace/five\"}}");
        free(json);
        json = call_text(run, "runBash", "command", "echo hi");
        assert_string_equal(json, "{\"ok\":false,\"error\":{\"code\":\"B4_E3001\",\"message\":"
                                  "\"Permission denied by user: echo hi\"}}");
        free(json);
        b4_run_end(run);
        b4_runtime_free(rt);
        b4_permissions_free(perms);
}

/* A reader outside the slot: reads a child's workspace (the root's) while a run is in
 * flight and after a release; its tools read through the jail, have no shell, write nothing. */
static void test_reader_outside_the_slot(void **state)
{
        struct fixture *f = *state;
        struct b4_reader *rd = NULL;
        struct b4_tools *t = NULL;
        struct b4_tool_result res = { 0 };
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        struct b4_stat st = { 0 };
        struct jv *args;
        char *data = NULL;
        size_t len = 0;
        uint64_t size = 0;

        create(f, "r", NULL);
        create(f, "rc", "r");
        assert_int_equal(b4_runtime_open_reader(f->rt, "r", NULL, &rd, &err), -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_int_equal(b4_runtime_open_reader(f->rt, "ghost", NULL, &rd, &err), -ENOENT);
        assert_int_equal(b4_runtime_run_begin(f->rt, "r", &run, NULL), 0);
        call(run, "a.txt", "hello");
        /* opened while the run is in flight: no slot is taken */
        assert_int_equal(b4_runtime_open_reader(f->rt, "rc", NULL, &rd, &err), 0);
        assert_string_equal(rd->thread_id, "r");
        assert_int_equal(b4_runtime_reader_tools(f->rt, rd, &t, &err), 0);
        assert_int_equal(b4_tools_fs_read(t, "a.txt", 1, UINT64_MAX, &data, &len, &size, &err), 0);
        assert_string_equal(data, "ello");
        assert_int_equal(size, 5);
        free(data);
        b4_run_end(run);
        assert_int_equal(b4_runtime_thread_release(f->rt, "r", &err), 0);
        assert_int_equal(b4_tools_fs_stat(t, "/workspace/a.txt", true, &st, &err), 0);
        assert_int_equal(st.size, 5);
        b4_stat_clear(&st);
        assert_true(b4_tools_fs_stat(t, "/nowhere/x", true, &st, &err) < 0); /* workspace only */
        assert_true(b4_tools_fs_write(t, "b.txt", "x", 1, &err) < 0);
        assert_int_equal(b4_tools_fs_stat(t, "b.txt", true, &st, &err), -ENOENT);
        args = jv_pack("{s:s}", "command", "true");
        assert_int_equal(b4_tools_call(t, "runBash", args, &res, &err), 0);
        assert_false(res.ok);
        assert_int_equal(jv_dump(res.doc, 0, &data), 0);
        assert_non_null(strstr(data, "a workspace reader has no shell"));
        free(data);
        b4_tool_result_clear(&res);
        jv_unref(args);
        b4_tools_free(t);
        b4_reader_free(rd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_run_slot_is_exclusive, setup, teardown),
                cmocka_unit_test_setup_teardown(test_child_shares_parent_sandbox, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete_destroys_and_frees_id, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reconcile_finishes_and_sweeps, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reap_idle_releases_keeps_workspace, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_shutdown_refuses_new_runs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_runs_one_wins, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_ids_and_parents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_permission_request_resumes_in_a_later_run,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader_outside_the_slot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_caller_permissions_and_read_cap, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
