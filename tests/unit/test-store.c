/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite store: lock modes, threads, cascading delete, records, grants, reopen. */

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4-test.h"
#include "store/store.h"

static int setup(void **state)
{
        *state = b4_test_tmpdir();
        return *state ? 0 : -1;
}

static int teardown(void **state)
{
        b4_test_rmrf(*state);
        free(*state);
        return 0;
}

static void test_lock_modes(void **state)
{
        struct b4_store *a = NULL, *b = NULL;
        struct b4_error err = { 0 };

        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &a, &err), 0);
        assert_int_equal(b4_store_open(*state, B4_STORE_SHARED, &b, &err), -EBUSY);
        assert_non_null(strstr(err.msg, "is in use by another b4box process (pid "));
        a = b4_store_close(a);
        assert_int_equal(b4_store_open(*state, B4_STORE_SHARED, &a, &err), 0);
        assert_int_equal(b4_store_open(*state, B4_STORE_SHARED, &b, &err), 0);
        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &a, &err), -EBUSY);
        b4_store_close(a);
        b4_store_close(b);
}

static void test_threads_roundtrip(void **state)
{
        struct b4_store *s = NULL;
        struct b4_error err = { 0 };
        struct b4_thread_row row = { .id = (char *)"t1",
                                     .metadata_json = (char *)"{\"a\":1}",
                                     .owner = (char *)"alice",
                                     .created_ms = 5 };
        struct b4_thread_row got = { 0 }, *list = NULL;
        size_t n = 0;

        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_thread_insert(s, &row, &err), 0);
        assert_int_equal(b4_store_thread_insert(s, &row, &err), -EEXIST);
        row.id = (char *)"t2";
        row.owner = (char *)"bob";
        row.metadata_json = NULL;
        row.parent_id = (char *)"t1";
        assert_int_equal(b4_store_thread_insert(s, &row, &err), 0);
        assert_int_equal(b4_store_thread_get(s, "t2", &got, &err), 0);
        assert_string_equal(got.metadata_json, "{}");
        assert_string_equal(got.parent_id, "t1");
        b4_thread_row_clear(&got);
        assert_int_equal(b4_store_thread_list(s, "alice", &list, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(list[0].id, "t1");
        list = b4_thread_rows_free(list, n);
        assert_int_equal(b4_store_thread_list(s, NULL, &list, &n, &err), 0);
        assert_int_equal(n, 2);
        b4_thread_rows_free(list, n);
        assert_int_equal(b4_store_thread_get(s, "nope", &got, &err), -ENOENT);
        assert_int_equal(b4_store_thread_set_metadata(s, "t1", "{\"b\":2}", &err), 0);
        assert_int_equal(b4_store_thread_set_metadata(s, "nope", "{}", &err), -ENOENT);
        b4_store_close(s);
}

static void test_delete_cascades_and_survives_reopen(void **state)
{
        struct b4_store *s = NULL;
        struct b4_error err = { 0 };
        struct b4_thread_row row = { .id = (char *)"t", .created_ms = 1 };
        char *digest = NULL, *payload = NULL, **grants = NULL;

        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_thread_insert(s, &row, &err), 0);
        assert_int_equal(b4_store_record_put(s, "t", "d1", "{}", &err), 0);
        assert_int_equal(b4_store_record_put(s, "t", "d2", "{\"v\":1}", &err), 0);
        assert_int_equal(b4_store_record_put(s, "ghost", "d", "{}", &err), -ENOENT);
        assert_int_equal(b4_store_grant_add(s, "t", "bash", "git status", &err), 0);
        assert_int_equal(b4_store_grant_add(s, "t", "bash", "git status", &err), 0);
        assert_int_equal(b4_store_grant_add(s, "t", "bash", "ls", &err), 0);
        s = b4_store_close(s);

        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_record_get(s, "t", &digest, &payload, &err), 0);
        assert_string_equal(digest, "d2");
        assert_string_equal(payload, "{\"v\":1}");
        free(digest);
        free(payload);
        assert_int_equal(b4_store_grant_list(s, "t", "bash", &grants, &err), 0);
        assert_string_equal(grants[0], "git status");
        assert_string_equal(grants[1], "ls");
        assert_null(grants[2]);
        for (char **g = grants; *g; g++)
                free(*g);
        free(grants);
        assert_int_equal(b4_store_thread_delete(s, "t", &err), 0);
        assert_int_equal(b4_store_thread_delete(s, "t", &err), -ENOENT);
        assert_int_equal(b4_store_record_get(s, "t", &digest, &payload, &err), -ENOENT);
        /* the id is free again, with no leftovers */
        assert_int_equal(b4_store_thread_insert(s, &row, &err), 0);
        assert_int_equal(b4_store_grant_list(s, "t", "bash", &grants, &err), 0);
        assert_null(grants[0]);
        free(grants);
        b4_store_close(s);
}

static const char D1[] = "1111111111111111111111111111111111111111111111111111111111111111";

/* A version-1 database (as written before thread_staged existed) upgrades in place. */
static void make_v1(const char *dir)
{
        struct b4_store *s = NULL;
        struct b4_thread_row row = { .id = (char *)"old", .created_ms = 1 };
        char *path = NULL;
        sqlite3 *db = NULL;

        assert_int_equal(b4_store_open(dir, B4_STORE_EXCLUSIVE, &s, NULL), 0);
        assert_int_equal(b4_store_thread_insert(s, &row, NULL), 0);
        b4_store_close(s);
        assert_true(asprintf(&path, "%s/b4box.db", dir) > 0);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                                      "DROP INDEX thread_staged_source; DROP TABLE thread_staged; "
                                      "ALTER TABLE threads DROP COLUMN deleting; "
                                      "PRAGMA user_version = 1",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
        free(path);
}

/* A deletion mark is durable, listed, visible on the row, and goes with the row. */
static void test_mark_deleting(void **state)
{
        struct b4_store *s = NULL;
        struct b4_error err = { 0 };
        struct b4_thread_row a = { .id = (char *)"a", .created_ms = 1 },
                             b = { .id = (char *)"b", .created_ms = 2 }, got = { 0 };
        char **ids = NULL;

        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_thread_insert(s, &a, &err), 0);
        assert_int_equal(b4_store_thread_insert(s, &b, &err), 0);
        assert_int_equal(b4_store_thread_mark_deleting(s, "nope", &err), -ENOENT);
        assert_int_equal(b4_store_thread_mark_deleting(s, "b", &err), 0);
        b4_store_close(s);
        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_thread_list_deleting(s, &ids, &err), 0);
        assert_non_null(ids);
        assert_string_equal(ids[0], "b");
        assert_null(ids[1]);
        free(ids[0]);
        free(ids);
        assert_int_equal(b4_store_thread_get(s, "b", &got, &err), 0);
        assert_true(got.deleting);
        b4_thread_row_clear(&got);
        assert_int_equal(b4_store_thread_get(s, "a", &got, &err), 0);
        assert_false(got.deleting);
        b4_thread_row_clear(&got);
        assert_int_equal(b4_store_thread_delete(s, "b", &err), 0);
        assert_int_equal(b4_store_thread_list_deleting(s, &ids, &err), 0);
        assert_null(ids[0]);
        free(ids);
        b4_store_close(s);
}

static void test_v1_upgrades_to_v2(void **state)
{
        struct b4_store *s = NULL;
        struct b4_error err = { 0 };
        struct b4_thread_row row = { .id = (char *)"new", .created_ms = 2 }, got = { 0 };
        char *digest = NULL, *json = NULL;
        bool created = false;

        make_v1(*state);
        assert_int_equal(b4_store_open(*state, B4_STORE_EXCLUSIVE, &s, &err), 0);
        assert_int_equal(b4_store_thread_get(s, "old", &got, &err), 0); /* rows kept */
        b4_thread_row_clear(&got);
        assert_int_equal(b4_store_thread_staged_get(s, "old", &digest, &json, &err), -ENOENT);
        /* not held as an upload: nothing is created */
        assert_int_equal(b4_store_thread_insert_staged(s, &row, D1, "{}", &err), -ENOENT);
        assert_int_equal(b4_store_thread_get(s, "new", &got, &err), -ENOENT);
        assert_int_equal(b4_store_source_upload(s, D1, "{}", 2, "alice", NULL, 1000, 1 << 20,
                                                &created, &err),
                         0);
        assert_int_equal(b4_store_thread_insert_staged(s, &row, D1, "{\"x\":1}", &err), 0);
        assert_int_equal(b4_store_thread_insert_staged(s, &row, D1, "{}", &err), -EEXIST);
        assert_int_equal(b4_store_thread_staged_get(s, "new", &digest, &json, &err), 0);
        assert_string_equal(digest, D1);
        assert_string_equal(json, "{\"x\":1}");
        free(digest);
        free(json);
        /* a reference keeps its source from reclaim, past the retention window */
        assert_int_equal(b4_store_sources_reclaim(s, 10000000, 60000, &err), 0);
        assert_int_equal(b4_store_thread_delete(s, "new", &err), 0);
        assert_int_equal(b4_store_thread_staged_get(s, "new", &digest, &json, &err), -ENOENT);
        assert_int_equal(b4_store_sources_reclaim(s, 10000000, 60000, &err), 1);
        b4_store_close(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_lock_modes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_threads_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete_cascades_and_survives_reopen, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v1_upgrades_to_v2, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mark_deleting, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
