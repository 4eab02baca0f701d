/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed workspaces in the store: held sources (bundles by digest), associations (which
 * bundle a thread's workspace was made from, and whether it is made yet) and the single
 * transaction a first admission writes (source + association + record, reference §9.3 step 4),
 * so a crash leaves either everything or nothing.
 *
 * A source stored by an admission has uploaded_ms 0 ("never uploaded"); uploads set it.
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "store-internal.h"

void b4_association_clear(struct b4_association *a)
{
        free(a->thread_id);
        free(a->source_digest);
        free(a->intent_digest);
        free(a->state);
        free(a->payload);
        *a = (struct b4_association){ 0 };
}

static int run(struct b4_store *s, const char *sql, struct b4_error *err)
{
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

        return rc == SQLITE_OK ? 0 : store_error(s, rc, err, sql);
}

static int put_source(struct b4_store *s, const struct b4_admission_rows *a, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO sources (digest, size, payload, uploaded_ms) "
                              "VALUES (?1, ?2, ?3, 0) ON CONFLICT(digest) DO NOTHING",
                              &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, a->source_digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_int64(st, 2, (sqlite3_int64)a->source_len);
        (void)sqlite3_bind_blob64(st, 3, a->source_payload, a->source_len, SQLITE_STATIC);
        return store_step_done(s, st, err, "store source");
}

static int put_association(struct b4_store *s,
                           const struct b4_admission_rows *a,
                           struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO associations (thread_id, source_digest, intent_digest, "
                              "state, revision, payload) VALUES (?1, ?2, ?3, 'creating', 1, ?4)",
                              &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, a->thread_id, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 2, a->source_digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 3, a->intent_digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 4, a->association_payload, -1, SQLITE_STATIC);
        r = store_step_done(s, st, err, "create association");
        if (r == -EEXIST && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
                return b4_error_set(err, -ENOENT, "thread '%s' not found", a->thread_id);
        if (r == -EEXIST)
                return b4_error_set(err, -EEXIST, "thread '%s' already has a workspace",
                                    a->thread_id);
        return r;
}

static int put_record(struct b4_store *s, const struct b4_admission_rows *a, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO thread_records (thread_id, digest, payload) "
                              "VALUES (?1, ?2, ?3)",
                              &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, a->thread_id, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 2, a->record_digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 3, a->record_payload, -1, SQLITE_STATIC);
        return store_step_done(s, st, err, "store sandbox record");
}

int b4_store_admit(struct b4_store *s, const struct b4_admission_rows *rows, struct b4_error *err)
{
        STORE_LOCKED(s);
        int r;

        r = run(s, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = put_source(s, rows, err);
        if (r >= 0)
                r = put_association(s, rows, err);
        if (r >= 0 && rows->record_digest)
                r = put_record(s, rows, err);
        if (r >= 0)
                r = run(s, "COMMIT", err);
        if (r < 0)
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int b4_store_association_get(struct b4_store *s,
                             const char *thread_id,
                             struct b4_association *ret,
                             struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        struct b4_association a = { 0 };
        STORE_LOCKED(s);
        int rc, r;

        r = store_prepare(s,
                          "SELECT thread_id, source_digest, intent_digest, state, revision, "
                          "payload FROM associations WHERE thread_id = ?1",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return b4_error_set(err, -ENOENT, "thread '%s' has no workspace", thread_id);
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "get association");
        a.revision = sqlite3_column_int64(st, 4);
        if (store_column_strdup(st, 0, &a.thread_id) < 0 ||
            store_column_strdup(st, 1, &a.source_digest) < 0 ||
            store_column_strdup(st, 2, &a.intent_digest) < 0 ||
            store_column_strdup(st, 3, &a.state) < 0 ||
            store_column_strdup(st, 5, &a.payload) < 0) {
                b4_association_clear(&a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

int b4_store_association_update(struct b4_store *s,
                                const char *thread_id,
                                int64_t revision,
                                const char *state,
                                const char *payload,
                                struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s,
                          "UPDATE associations SET state = ?3, payload = ?4, revision = "
                          "revision + 1 WHERE thread_id = ?1 AND revision = ?2",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
        (void)sqlite3_bind_int64(st, 2, revision);
        (void)sqlite3_bind_text(st, 3, state, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 4, payload, -1, SQLITE_STATIC);
        r = store_step_done(s, st, err, "update association");
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                return b4_error_set(err, -ESTALE, "thread '%s''s workspace changed meanwhile",
                                    thread_id);
        return r;
}

int b4_store_source_get(struct b4_store *s,
                        const char *digest,
                        char **ret,
                        size_t *ret_len,
                        int64_t *ret_uploaded_ms,
                        struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        const void *blob;
        size_t n;
        char *copy;
        int rc, r;

        r = store_prepare(s, "SELECT payload, uploaded_ms FROM sources WHERE digest = ?1", &st,
                          err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return b4_error_set(err, -ENOENT, "source %s is not held", digest);
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "get source");
        blob = sqlite3_column_blob(st, 0);
        n = (size_t)sqlite3_column_bytes(st, 0);
        copy = b4_malloc(n + 1);
        if (!copy)
                return -ENOMEM;
        if (n)
                memcpy(copy, blob, n);
        copy[n] = '\0';
        *ret = copy;
        *ret_len = n;
        if (ret_uploaded_ms)
                *ret_uploaded_ms = sqlite3_column_int64(st, 1);
        return 0;
}

/* ---- uploads (reference §6.3, §6.5) ------------------------------------------------------ */

static int scalar(
        struct b4_store *s, const char *sql, const char *arg, int64_t *ret, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc, r = store_prepare(s, sql, &st, err);

        if (r < 0)
                return r;
        if (arg)
                (void)sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret = -1;
                return 0;
        }
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "query");
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

static int bind_exec(struct b4_store *s,
                     const char *sql,
                     const char *a,
                     int64_t b,
                     const char *c,
                     struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s, sql, &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
        (void)sqlite3_bind_int64(st, 2, b);
        if (c)
                (void)sqlite3_bind_text(st, 3, c, -1, SQLITE_STATIC);
        return store_step_done(s, st, err, sql);
}

static int upload_locked(struct b4_store *s,
                         const char *digest,
                         const char *payload,
                         size_t len,
                         int64_t now_ms,
                         uint64_t max_staged,
                         bool *ret_created,
                         struct b4_error *err)
{
        int64_t uploaded = -1, used = 0;
        int r;

        r = scalar(s, "SELECT uploaded_ms FROM sources WHERE digest = ?1", digest, &uploaded, err);
        if (r >= 0)
                r = scalar(s, "SELECT COALESCE(SUM(size), 0) FROM sources WHERE uploaded_ms > 0",
                           NULL, &used, err);
        if (r < 0)
                return r;
        if (uploaded <= 0 && (uint64_t)used + len > max_staged)
                return b4_error_set(err, -ENOSPC,
                                    "staged sources would exceed maxStagedBytes (%llu bytes)",
                                    (unsigned long long)max_staged);
        *ret_created = uploaded <= 0;
        if (uploaded >= 0)
                return bind_exec(s, "UPDATE sources SET uploaded_ms = ?2 WHERE digest = ?1", digest,
                                 now_ms, NULL, err);
        struct b4_admission_rows rows = { .source_digest = digest,
                                          .source_payload = payload,
                                          .source_len = len };
        r = put_source(s, &rows, err);
        return r < 0 ? r
                     : bind_exec(s, "UPDATE sources SET uploaded_ms = ?2 WHERE digest = ?1", digest,
                                 now_ms, NULL, err);
}

/* A later upload's stamp replaces the same uploader's earlier one. */
static int put_uploader(struct b4_store *s,
                        const char *digest,
                        const char *uploader,
                        const char *stamp,
                        struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO source_uploaders (digest, principal, stamp) VALUES "
                              "(?1, ?2, ?3) ON CONFLICT DO UPDATE SET stamp = excluded.stamp",
                              &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 2, uploader, -1, SQLITE_STATIC);
        if (stamp)
                (void)sqlite3_bind_text(st, 3, stamp, -1, SQLITE_STATIC);
        return store_step_done(s, st, err, "record an uploader");
}

int b4_store_source_upload(struct b4_store *s,
                           const char *digest,
                           const char *payload,
                           size_t len,
                           const char *uploader,
                           const char *stamp,
                           int64_t now_ms,
                           uint64_t max_staged,
                           bool *ret_created,
                           struct b4_error *err)
{
        STORE_LOCKED(s);
        int r;

        if (now_ms <= 0)
                now_ms = 1; /* 0 means "never uploaded" */
        r = run(s, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = upload_locked(s, digest, payload, len, now_ms, max_staged, ret_created, err);
        if (r >= 0 && uploader)
                r = put_uploader(s, digest, uploader, stamp, err);
        if (r >= 0)
                r = run(s, "COMMIT", err);
        if (r < 0)
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int b4_store_sources_reclaim(struct b4_store *s,
                             int64_t now_ms,
                             uint64_t retention_ms,
                             struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        STORE_LOCKED(s);
        int r;

        r = store_prepare(s,
                          "DELETE FROM sources WHERE digest NOT IN (SELECT source_digest FROM "
                          "associations WHERE source_digest IS NOT NULL) AND digest NOT IN (SELECT "
                          "source_digest FROM thread_staged) AND (uploaded_ms = 0 OR "
                          "uploaded_ms < ?1)",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_int64(st, 1, now_ms - (int64_t)retention_ms);
        r = store_step_done(s, st, err, "reclaim sources");
        return r < 0 ? r : sqlite3_changes(s->db);
}

int b4_store_source_uploaders(struct b4_store *s,
                              const char *digest,
                              char ***ret,
                              char ***ret_stamps,
                              struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        cleanup_strv char **l = b4_calloc(1, sizeof(char *));
        cleanup_strv char **stamps = b4_calloc(1, sizeof(char *));
        STORE_LOCKED(s);
        int rc, r;

        if (!l || !stamps)
                return -ENOMEM;
        r = store_prepare(s,
                          "SELECT principal, COALESCE(stamp, '') FROM source_uploaders WHERE "
                          "digest = ?1 ORDER BY principal",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                if (strv_extend(&l, (const char *)sqlite3_column_text(st, 0)) < 0 ||
                    strv_extend(&stamps, (const char *)sqlite3_column_text(st, 1)) < 0)
                        return -ENOMEM;
        if (rc != SQLITE_DONE)
                return store_error(s, rc, err, "list uploaders");
        *ret = TAKE_PTR(l);
        if (ret_stamps)
                *ret_stamps = TAKE_PTR(stamps);
        return 0;
}

void b4_source_infos_free(struct b4_source_info *l, size_t n)
{
        for (size_t i = 0; l && i < n; i++)
                free(l[i].digest);
        free(l);
}

int b4_store_sources_list(struct b4_store *s,
                          const char *uploader,
                          struct b4_source_info **ret,
                          size_t *ret_n,
                          struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        struct b4_source_info *l = NULL;
        STORE_LOCKED(s);
        size_t n = 0;
        int rc, r;

        r = store_prepare(
                s,
                "SELECT digest, size, uploaded_ms, (SELECT COUNT(*) FROM associations a "
                "WHERE a.source_digest = s.digest) + (SELECT COUNT(*) FROM thread_staged t "
                "WHERE t.source_digest = s.digest) FROM sources s WHERE uploaded_ms > 0 "
                "AND (?1 IS NULL OR digest IN (SELECT digest FROM source_uploaders WHERE "
                "principal = ?1)) ORDER BY digest",
                &st, err);
        if (r < 0)
                return r;
        if (uploader)
                (void)sqlite3_bind_text(st, 1, uploader, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct b4_source_info *nl = b4_reallocarray(l, n + 1, sizeof(*l));

                if (!nl) {
                        b4_source_infos_free(l, n);
                        return -ENOMEM;
                }
                l = nl;
                l[n] = (struct b4_source_info){
                        .digest = b4_strdup((const char *)sqlite3_column_text(st, 0)),
                        .size = (uint64_t)sqlite3_column_int64(st, 1),
                        .uploaded_ms = sqlite3_column_int64(st, 2),
                        .references = (uint64_t)sqlite3_column_int64(st, 3),
                };
                if (!l[n++].digest) {
                        b4_source_infos_free(l, n);
                        return -ENOMEM;
                }
        }
        if (rc != SQLITE_DONE) {
                b4_source_infos_free(l, n);
                return store_error(s, rc, err, "list sources");
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int b4_store_source_delete(struct b4_store *s, const char *digest, struct b4_error *err)
{
        STORE_LOCKED(s);
        int64_t uploaded = -1, refs = 0;
        int r = run(s, "BEGIN IMMEDIATE", err);

        if (r < 0)
                return r;
        r = scalar(s, "SELECT uploaded_ms FROM sources WHERE digest = ?1", digest, &uploaded, err);
        if (r >= 0)
                r = scalar(s,
                           "SELECT (SELECT COUNT(*) FROM associations WHERE source_digest = ?1) + "
                           "(SELECT COUNT(*) FROM thread_staged WHERE source_digest = ?1)",
                           digest, &refs, err);
        if (r >= 0 && uploaded <= 0)
                r = b4_error_set(err, -ENOENT, "source %s is not held", digest);
        else if (r >= 0 && refs > 0)
                r = b4_error_set(err, -EBUSY,
                                 "source %s is the workspace of %lld thread(s); delete them first",
                                 digest, (long long)refs);
        else if (r >= 0)
                r = bind_exec(s, "DELETE FROM sources WHERE digest = ?1", digest, 0, NULL, err);
        if (r >= 0)
                r = run(s, "COMMIT", err);
        if (r < 0)
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

/* ---- staged workspace references (reference §6.4) ---------------------------------------- */

static int insert_thread_locked(struct b4_store *s,
                                const struct b4_thread_row *row,
                                struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO threads (id, metadata, owner, parent_id, created_ms) "
                              "VALUES (?1, ?2, ?3, NULL, ?4)",
                              &st, err);

        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 2, row->metadata_json ? row->metadata_json : "{}", -1,
                                SQLITE_STATIC);
        if (row->owner)
                (void)sqlite3_bind_text(st, 3, row->owner, -1, SQLITE_STATIC);
        (void)sqlite3_bind_int64(st, 4, row->created_ms);
        r = store_step_done(s, st, err, "insert thread");
        if (r == -EEXIST)
                return b4_error_set(err, r, "thread '%s' already exists", row->id);
        return r;
}

static int staged_locked(struct b4_store *s,
                         const struct b4_thread_row *row,
                         const char *digest,
                         const char *payload,
                         struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int64_t uploaded = -1;
        int r;

        r = scalar(s, "SELECT uploaded_ms FROM sources WHERE digest = ?1", digest, &uploaded, err);
        if (r < 0)
                return r;
        if (uploaded <= 0)
                return b4_error_set(err, -ENOENT, "source %s is not held as an upload", digest);
        r = insert_thread_locked(s, row, err);
        if (r >= 0)
                r = store_prepare(s,
                                  "INSERT INTO thread_staged (thread_id, source_digest, payload) "
                                  "VALUES (?1, ?2, ?3)",
                                  &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 2, digest, -1, SQLITE_STATIC);
        (void)sqlite3_bind_text(st, 3, payload, -1, SQLITE_STATIC);
        return store_step_done(s, st, err, "store staged reference");
}

int b4_store_thread_insert_staged(struct b4_store *s,
                                  const struct b4_thread_row *row,
                                  const char *source_digest,
                                  const char *staged_json,
                                  struct b4_error *err)
{
        STORE_LOCKED(s);
        int r;

        if (row->parent_id)
                return b4_error_set(err, -EINVAL, "a staged workspace needs a root thread");
        r = run(s, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        r = staged_locked(s, row, source_digest, staged_json, err);
        if (r >= 0)
                r = run(s, "COMMIT", err);
        if (r < 0)
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

int b4_store_thread_staged_get(struct b4_store *s,
                               const char *thread_id,
                               char **ret_digest,
                               char **ret_json,
                               struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        cleanup_free char *d = NULL, *p = NULL;
        STORE_LOCKED(s);
        int rc, r;

        r = store_prepare(s,
                          "SELECT source_digest, payload FROM thread_staged WHERE thread_id = ?1",
                          &st, err);
        if (r < 0)
                return r;
        (void)sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return b4_error_set(err, -ENOENT, "thread '%s' has no staged workspace", thread_id);
        if (rc != SQLITE_ROW)
                return store_error(s, rc, err, "get staged reference");
        if (store_column_strdup(st, 0, &d) < 0 || store_column_strdup(st, 1, &p) < 0)
                return -ENOMEM;
        *ret_digest = TAKE_PTR(d);
        *ret_json = TAKE_PTR(p);
        return 0;
}
