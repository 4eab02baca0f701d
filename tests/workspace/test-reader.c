/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readers (reference §1.4): b4_with_reader() always closes and reports both errors; the fake
 * reader rejects without storage, refuses reads after close and never starts compute;
 * b4_inspect_thread() with and without a consistent (frozen) read; the runtime's read slot
 * and its whole read (b4_runtime_inspect()).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"
#include "b4box/runtime.h"
#include "b4box/store.h"

#include "b4-test.h"
#include "base/macro.h"
#include "fake/fake.h"

/* ---- a stub provider whose reader's close can fail ---- */

struct stub {
        struct b4_provider p;
        struct b4_reader r;
        int close_error;
        unsigned closes, frees;
};

static struct stub *stub_of_reader(struct b4_reader *r)
{
        return container_of(r, struct stub, r);
}

static int stub_close(struct b4_reader *r, struct b4_error *err)
{
        struct stub *s = stub_of_reader(r);

        s->closes++;
        if (s->close_error)
                return b4_error_set(err, s->close_error, "could not remove the reader");
        return 0;
}

static void stub_reader_free(struct b4_reader *r)
{
        stub_of_reader(r)->frees++;
}

static const struct b4_reader_ops stub_reader_ops = { .close = stub_close,
                                                      .free = stub_reader_free };
static const struct b4_fs_ops stub_fs_ops = { 0 };

static int stub_open(struct b4_provider *p,
                     const struct b4_reader_req *req,
                     struct b4_reader **ret,
                     struct b4_error *err)
{
        struct stub *s = (struct stub *)p;

        assert_int_equal(b4_reader_init(&s->r, &stub_reader_ops, &stub_fs_ops, req->thread_id), 0);
        *ret = &s->r;
        return 0;
}

static void stub_free(struct b4_provider *p)
{
}

static const struct b4_provider_ops stub_ops = { .name = "stub",
                                                 .open_reader = stub_open,
                                                 .free = stub_free };
static const struct b4_provider_ops noreader_ops = { .name = "bare", .free = stub_free };

static int body_fails(struct b4_reader *r, void *ud, struct b4_error *err)
{
        return b4_error_set(err, -EIO, "the read failed");
}

static int body_ok(struct b4_reader *r, void *ud, struct b4_error *err)
{
        return 0;
}

static void test_with_reader(void **state)
{
        struct stub s = { .p = { .ops = &stub_ops } };
        struct b4_reader_req req = { .thread_id = "t" };
        struct b4_error err = { 0 };

        s.close_error = -EBUSY;
        assert_int_equal(b4_with_reader(&s.p, &req, body_fails, NULL, &err), -EIO);
        assert_string_equal(err.msg, "Workspace read and reader close failed: the read failed; "
                                     "could not remove the reader");
        assert_int_equal(s.closes, 2); /* closed, then once more by b4_reader_free() */
        assert_int_equal(s.frees, 1);
        assert_int_equal(b4_with_reader(&s.p, &req, body_ok, NULL, &err), -EBUSY);
        assert_string_equal(err.msg, "could not remove the reader");
        s.close_error = 0;
        assert_int_equal(b4_with_reader(&s.p, &req, body_fails, NULL, &err), -EIO);
        assert_string_equal(err.msg, "the read failed");
        assert_int_equal(b4_with_reader(&s.p, &req, body_ok, NULL, &err), 0);
        assert_int_equal(s.closes, 8);
        assert_int_equal(s.frees, 4);

        struct b4_provider bare = { .ops = &noreader_ops };
        assert_int_equal(b4_with_reader(&bare, &req, body_ok, NULL, &err), -EOPNOTSUPP);
        assert_string_equal(
                err.msg, "Sandbox provider \"bare\" does not support reading a thread workspace");
}

/* ---- the fake reader ---- */

static struct b4_provider *fake(void)
{
        struct b4_provider_config pc = { .type = (char *)"fake", .scope = (char *)"rd" };
        struct b4_provider *p = NULL;

        assert_int_equal(b4_provider_new(&pc, &p, NULL), 0);
        return p;
}

static void write_files(struct b4_provider *p, const char *thread)
{
        struct b4_policy pol;
        struct b4_acquire_req aq = { .thread_id = thread, .policy = &pol };
        struct b4_sandbox *sb = NULL;

        b4_policy_init(&pol);
        assert_int_equal(b4_provider_acquire(p, &aq, &sb, NULL), 0);
        assert_int_equal(
                b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/src/main.c", "int x;\n", 7, NULL),
                0);
        assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/README", "hi", 2, NULL),
                         0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(p, thread, NULL), 0);
        b4_policy_clear(&pol);
}

static void test_fake_reader(void **state)
{
        struct b4_provider *p = fake();
        struct b4_reader_req req = { .thread_id = "nope" };
        struct b4_reader *rd = NULL;
        struct b4_error err = { 0 };
        char *data = NULL;
        size_t len;

        assert_int_equal(b4_provider_open_reader(p, &req, &rd, &err), -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_string_equal(err.msg,
                            "Sandbox unavailable: no workspace storage for thread \"nope\".");
        assert_int_equal(fake_provider_n_workspaces(p), 0); /* never creates storage */

        write_files(p, "t");
        req.thread_id = "t";
        assert_int_equal(b4_provider_open_reader(p, &req, &rd, &err), 0);
        assert_int_equal(fake_provider_instances(p, "t"), 0); /* no compute started */
        assert_null(b4_reader_fs(rd)->ops->write_file);
        assert_int_equal(
                b4_fs_read_file(b4_reader_fs(rd), "/workspace/README", 10, &data, &len, &err), 0);
        free(data);
        assert_int_equal(b4_reader_close(rd, &err), 0);
        assert_int_equal(b4_reader_close(rd, &err), 0); /* idempotent */
        assert_int_equal(
                b4_fs_read_file(b4_reader_fs(rd), "/workspace/README", 10, &data, &len, &err),
                -EBADF);
        assert_string_equal(err.msg, "Workspace reader for thread \"t\" is closed");
        b4_reader_free(rd);
        b4_provider_free(p);
}

static void test_inspect_thread(void **state)
{
        struct b4_provider *p = fake();
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };
        bool frozen = true;

        write_files(p, "t");
        assert_int_equal(b4_inspect_thread(p, "t", NULL, false, &insp, &fail, &err), 0);
        assert_int_equal(insp.n_files, 2);
        assert_string_equal(insp.files[0].path, "README");
        assert_string_equal(insp.files[1].path, "src/main.c");
        assert_int_equal(insp.entries, 3);
        b4_inspection_clear(&insp);
        assert_int_equal(fake_provider_freezes(p, "t", &frozen), 0);

        assert_int_equal(b4_inspect_thread(p, "t", NULL, true, &insp, &fail, &err), 0);
        assert_int_equal(insp.n_files, 2);
        b4_inspection_clear(&insp);
        assert_int_equal(fake_provider_freezes(p, "t", &frozen), 1);
        assert_false(frozen); /* thawed after the read */
        assert_int_equal(fake_provider_instances(p, "t"), 0);

        assert_int_equal(b4_inspect_thread(p, "gone", NULL, false, &insp, &fail, &err), -ENOENT);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        b4_provider_free(p);
}

/* ---- the runtime's read slot ---- */

static void test_read_slot(void **state)
{
        char *dir = b4_test_tmpdir();
        struct b4_provider *p = fake();
        struct b4_store *store = NULL;
        struct b4_runtime *rt = NULL;
        struct b4_policy pol;
        struct b4_thread_row row = { 0 };
        struct b4_cancel *c = b4_cancel_new();
        struct b4_read *rd = NULL, *rd2 = NULL;
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        assert_int_equal(b4_store_open(dir, B4_STORE_EXCLUSIVE, &store, &err), 0);
        struct b4_runtime_options o = { .provider = p, .store = store, .policy = &pol };
        assert_int_equal(b4_runtime_new(&o, &rt, &err), 0);
        assert_ptr_equal(b4_runtime_provider(rt), p);
        assert_int_equal(b4_runtime_thread_create(rt, "par", NULL, NULL, NULL, &row, &err), 0);
        b4_thread_row_clear(&row);
        assert_int_equal(b4_runtime_thread_create(rt, "kid", NULL, "par", NULL, &row, &err), 0);
        b4_thread_row_clear(&row);

        assert_int_equal(b4_runtime_read_begin(rt, "nope", c, &rd, &err), -ENOENT);
        assert_int_equal(b4_runtime_read_begin(rt, "kid", c, &rd, &err), 0);
        assert_string_equal(b4_read_sandbox_key(rd), "par");
        assert_false(b4_runtime_thread_is_live(rt, "kid")); /* no sandbox acquired */
        assert_true(b4_runtime_thread_busy(rt, "kid"));
        assert_int_equal(b4_runtime_run_begin(rt, "kid", &run, &err), -EBUSY);
        assert_string_equal(err.msg, "thread 'kid' has a run in flight");
        assert_int_equal(b4_runtime_read_begin(rt, "kid", c, &rd2, &err), -EBUSY);
        assert_int_equal(b4_runtime_thread_delete(rt, "kid", &err), -EBUSY);
        assert_false(b4_cancel_is_set(c));
        assert_int_equal(b4_runtime_thread_cancel(rt, "kid"), 0);
        assert_true(b4_cancel_is_set(c));
        rd = b4_read_end(rd);
        assert_false(b4_runtime_thread_busy(rt, "kid"));
        assert_int_equal(b4_runtime_thread_cancel(rt, "kid"), -ESRCH);
        /* the token is the caller's: still valid after the slot is gone */
        assert_true(b4_cancel_is_set(c));

        /* a run in flight refuses a read the other way round */
        assert_int_equal(b4_runtime_run_begin(rt, "kid", &run, &err), 0);
        assert_int_equal(b4_runtime_read_begin(rt, "kid", c, &rd, &err), -EBUSY);
        b4_run_end(run);

        b4_cancel_free(c);
        b4_runtime_free(rt);
        b4_provider_free(p);
        b4_store_close(store);
        b4_policy_clear(&pol);
        b4_test_rmrf(dir);
        free(dir);
}

/* b4_runtime_inspect(): the root ancestor's workspace, the slot held only while reading,
 * a caller's cancel, a run in flight; the answer formatted and read back. */
static void test_runtime_inspect(void **state)
{
        char *dir = b4_test_tmpdir();
        struct b4_provider *p = fake();
        struct b4_store *store = NULL;
        struct b4_runtime *rt = NULL;
        struct b4_policy pol;
        struct b4_thread_row row = { 0 };
        struct b4_workspace_read rd = { 0 };
        struct b4_inspect_response res = { 0 };
        struct b4_cancel *c = b4_cancel_new();
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };
        char *text = NULL;
        size_t len = 0;

        b4_policy_init(&pol);
        assert_int_equal(b4_store_open(dir, B4_STORE_EXCLUSIVE, &store, &err), 0);
        struct b4_runtime_options o = { .provider = p, .store = store, .policy = &pol };
        assert_int_equal(b4_runtime_new(&o, &rt, &err), 0);
        assert_int_equal(b4_runtime_thread_create(rt, "par", NULL, NULL, NULL, &row, &err), 0);
        b4_thread_row_clear(&row);
        assert_int_equal(b4_runtime_thread_create(rt, "kid", NULL, "par", NULL, &row, &err), 0);
        b4_thread_row_clear(&row);
        write_files(p, "par");

        assert_int_equal(b4_runtime_inspect(rt, "kid", NULL, false, 5000, NULL, &rd, &err), 0);
        assert_int_equal(rd.inspection.n_files, 2);
        assert_string_equal(rd.inspection.files[0].path, "README");
        assert_null(rd.source_digest); /* provider storage: no admission recorded one */
        assert_null(rd.intent_digest);
        assert_false(b4_runtime_thread_busy(rt, "kid"));
        assert_false(b4_runtime_thread_is_live(rt, "kid")); /* no sandbox acquired */
        assert_int_equal(b4_inspect_response_format("kid", NULL, &rd, NULL, &text, &len), 0);
        assert_int_equal(b4_inspect_response_parse(text, len, "kid", NULL, &res, &err), 0);
        assert_int_equal(res.n_files, 2);
        assert_string_equal(res.paths[1], "src/main.c");
        assert_null(res.source_digest);
        assert_null(res.root);
        b4_inspect_response_clear(&res);
        free(text);
        b4_workspace_read_clear(&rd);

        assert_int_equal(b4_runtime_inspect(rt, "nope", NULL, false, 0, NULL, &rd, &err), -ENOENT);
        b4_cancel_fire(c);
        assert_int_equal(b4_runtime_inspect(rt, "kid", NULL, false, 0, c, &rd, &err), -ECANCELED);
        assert_false(b4_runtime_thread_busy(rt, "kid"));
        assert_int_equal(b4_runtime_run_begin(rt, "kid", &run, &err), 0);
        assert_int_equal(b4_runtime_inspect(rt, "kid", NULL, false, 0, NULL, &rd, &err), -EBUSY);
        b4_run_end(run);
        b4_workspace_read_clear(&rd);

        b4_cancel_free(c);
        b4_runtime_free(rt);
        b4_provider_free(p);
        b4_store_close(store);
        b4_policy_clear(&pol);
        b4_test_rmrf(dir);
        free(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_with_reader),     cmocka_unit_test(test_fake_reader),
                cmocka_unit_test(test_inspect_thread),  cmocka_unit_test(test_read_slot),
                cmocka_unit_test(test_runtime_inspect),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
