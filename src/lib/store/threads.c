/* SPDX-License-Identifier: Apache-2.0 */
/* The threads table: insert, get, list, metadata update, deletion mark, delete (cascading). */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "store-internal.h"

void b4_thread_row_clear(struct b4_thread_row *row)
{
        free(row->id);
        free(row->metadata_json);
        free(row->owner);
        free(row->parent_id);
        *row = (struct b4_thread_row){ 0 };
}

struct b4_thread_row *b4_thread_rows_free(struct b4_thread_row *rows, size_t n)
{
        for (size_t i = 0; rows && i < n; i++)
                b4_thread_row_clear(&rows[i]);
        free(rows);
        return NULL;
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *s)
{
        if (s)
                (void)sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
        else
                (void)sqlite3_bind_null(st, col);
}

int b4_store_thread_insert(struct b4_store *s,
                           const struct b4_thread_row *row,
                           struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s,
                          "INSERT INTO threads (id, metadata, owner, parent_id, created_ms) "
                          "VALUES (?1, ?2, ?3, ?4, ?5)",
                          &st, err);
        if (r < 0)
                return r;
        bind_text_or_null(st, 1, row->id);
        bind_text_or_null(st, 2, row->metadata_json ? row->metadata_json : "{}");
        bind_text_or_null(st, 3, row->owner);
        bind_text_or_null(st, 4, row->parent_id);
        (void)sqlite3_bind_int64(st, 5, row->created_ms);
        r = store_step_done(s, st, err, "insert thread");
        if (r == -EEXIST)
                return b4_error_set(err, r, "thread '%s' already exists", row->id);
        return r;
}

static int row_from_stmt(sqlite3_stmt *st, struct b4_thread_row *ret)
{
        struct b4_thread_row row = { 0 };

        if (store_column_strdup(st, 0, &row.id) < 0 ||
            store_column_strdup(st, 1, &row.metadata_json) < 0 ||
            store_column_strdup(st, 2, &row.owner) < 0 ||
            store_column_strdup(st, 3, &row.parent_id) < 0) {
                b4_thread_row_clear(&row);
                return -ENOMEM;
        }
        row.created_ms = sqlite3_column_int64(st, 4);
        row.deleting = sqlite3_column_int64(st, 5) != 0;
        *ret = row;
        return 0;
}

#define THREAD_COLUMNS "id, metadata, owner, parent_id, created_ms, deleting"

static const char sql_thread_get[] = "SELECT " THREAD_COLUMNS " FROM threads WHERE id = ?1";

int b4_store_thread_get(struct b4_store *s,
                        const char *id,
                        struct b4_thread_row *ret,
                        struct b4_error *err)
{
        STORE_LOCKED(s);
        cleanup_(store_resetp) sqlite3_stmt *st = NULL;
        int rc, r;

        r = store_prepare_cached(s, sql_thread_get, &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return b4_error_set(err, -ENOENT, "thread '%s' not found", id);
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "get thread");
        return row_from_stmt(st, ret);
}

static int push_row(sqlite3_stmt *st, struct b4_thread_row **v, size_t *n)
{
        struct b4_thread_row *nv = b4_reallocarray(*v, *n + 1, sizeof(**v));

        if (!nv)
                return -ENOMEM;
        *v = nv;
        if (row_from_stmt(st, &nv[*n]) < 0)
                return -ENOMEM;
        (*n)++;
        return 0;
}

int b4_store_thread_list(struct b4_store *s,
                         const char *owner,
                         struct b4_thread_row **ret,
                         size_t *ret_n,
                         struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        struct b4_thread_row *v = NULL;
        size_t n = 0;
        STORE_LOCKED(s);
        int rc, r;

        r = store_prepare(s,
                          "SELECT " THREAD_COLUMNS " FROM threads WHERE ?1 IS NULL OR owner = ?1 "
                          "ORDER BY created_ms, id",
                          &st, err);
        if (r < 0)
                return r;
        bind_text_or_null(st, 1, owner);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                if (push_row(st, &v, &n) < 0) {
                        b4_thread_rows_free(v, n);
                        return -ENOMEM;
                }
        if (rc != SQLITE_DONE) {
                b4_thread_rows_free(v, n);
                return store_error(s, rc, err, "list threads");
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int changed_one(struct b4_store *s, const char *id, struct b4_error *err)
{
        if (sqlite3_changes(s->db) == 0)
                return b4_error_set(err, -ENOENT, "thread '%s' not found", id);
        return 0;
}

int b4_store_thread_set_metadata(struct b4_store *s,
                                 const char *id,
                                 const char *metadata_json,
                                 struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s, "UPDATE threads SET metadata = ?2 WHERE id = ?1", &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 2, metadata_json, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, err, "update thread");
        return r < 0 ? r : changed_one(s, id, err);
}

int b4_store_thread_delete(struct b4_store *s, const char *id, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        /* Records, grants and associations go with it (ON DELETE CASCADE). */
        r = store_prepare(s, "DELETE FROM threads WHERE id = ?1", &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, err, "delete thread");
        return r < 0 ? r : changed_one(s, id, err);
}

int b4_store_thread_mark_deleting(struct b4_store *s, const char *id, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s, "UPDATE threads SET deleting = 1 WHERE id = ?1", &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, err, "mark thread deleting");
        return r < 0 ? r : changed_one(s, id, err);
}

int b4_store_thread_list_deleting(struct b4_store *s, char ***ret_ids, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s, "SELECT id FROM threads WHERE deleting != 0 ORDER BY created_ms, id",
                          &st, err);
        if (r < 0)
                return r;
        return store_column_strv(s, st, "list deleting threads", ret_ids, err);
}
