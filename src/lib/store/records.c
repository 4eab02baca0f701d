/* SPDX-License-Identifier: Apache-2.0 */
/* Per-thread sandbox records and "Always" permission grants. */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "store-internal.h"

static int fk_to_enoent(int r, const char *thread_id, struct b4_error *err)
{
        /* A missing thread violates the foreign key: the caller asked about no thread. */
        if (r == -EEXIST)
                return b4_error_set(err, -ENOENT, "thread '%s' not found", thread_id);
        return r;
}

int b4_store_record_put(struct b4_store *s,
                        const char *thread_id,
                        const char *digest,
                        const char *payload_json,
                        struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(
                s,
                "INSERT INTO thread_records (thread_id, digest, payload) VALUES (?1, ?2, ?3) "
                "ON CONFLICT(thread_id) DO UPDATE SET digest = ?2, payload = ?3",
                &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 2, digest, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 3, payload_json, -1, SQLITE_TRANSIENT);
        return fk_to_enoent(store_step_done(s, st, err, "put record"), thread_id, err);
}

int b4_store_record_get(struct b4_store *s,
                        const char *thread_id,
                        char **ret_digest,
                        char **ret_payload,
                        struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        cleanup_free char *digest = NULL, *payload = NULL;
        STORE_LOCKED(s);
        int rc, r;

        r = store_prepare(s, "SELECT digest, payload FROM thread_records WHERE thread_id = ?1", &st,
                          err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return b4_error_set(err, -ENOENT, "thread '%s' has no sandbox record", thread_id);
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "get record");
        if (store_column_strdup(st, 0, &digest) < 0 || store_column_strdup(st, 1, &payload) < 0)
                return -ENOMEM;
        *ret_digest = TAKE_PTR(digest);
        *ret_payload = TAKE_PTR(payload);
        return 0;
}

int b4_store_grant_add(struct b4_store *s,
                       const char *thread_id,
                       const char *tool,
                       const char *pattern,
                       struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s,
                          "INSERT INTO permission_grants (thread_id, tool, pattern) "
                          "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 2, tool, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 3, pattern, -1, SQLITE_TRANSIENT);
        return fk_to_enoent(store_step_done(s, st, err, "add grant"), thread_id, err);
}

int b4_store_grant_list(struct b4_store *s,
                        const char *thread_id,
                        const char *tool,
                        char ***ret_patterns,
                        struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(
                s,
                "SELECT pattern FROM permission_grants WHERE thread_id = ?1 AND tool = ?2 "
                "ORDER BY pattern",
                &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_TRANSIENT);
        (void)sqlite3_bind_text(st, 2, tool, -1, SQLITE_TRANSIENT);
        return store_column_strv(s, st, "list grants", ret_patterns, err);
}
