/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening the store: the state-dir lock, the SQLite connection (WAL, synchronous=FULL,
 * foreign keys on) and schema migrations keyed by PRAGMA user_version.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "store-internal.h"

extern const char store_schema_v1[];

#define STORE_VERSION 3

/* Version 2 (additive): a thread's staged workspace reference (reference §6.4), kept out of
 * its client metadata and deleted with the thread. */
static const char store_schema_v2[] =
        "CREATE TABLE thread_staged ("
        " thread_id TEXT PRIMARY KEY NOT NULL REFERENCES threads(id) ON DELETE CASCADE,"
        " source_digest TEXT NOT NULL,"
        " payload TEXT NOT NULL) STRICT;"
        "CREATE INDEX thread_staged_source ON thread_staged(source_digest);";

/* Version 3 (additive): a deletion in progress. The mark is committed before the provider
 * destroys the sandbox and the rows go after it, so a crash in between leaves a marked row
 * that b4_runtime_reconcile() finishes, never a row whose workspace is gone. */
static const char store_schema_v3[] =
        "ALTER TABLE threads ADD COLUMN deleting INTEGER NOT NULL DEFAULT 0;";

int store_error(struct b4_store *s, int rc, struct b4_error *err, const char *what)
{
        int r;

        switch (rc) {
        case SQLITE_CONSTRAINT:
                r = -EEXIST;
                break;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                r = -EBUSY;
                break;
        case SQLITE_FULL:
                r = -ENOSPC;
                break;
        case SQLITE_NOMEM:
                r = -ENOMEM;
                break;
        default:
                r = -EIO;
        }
        return b4_error_set(err, r, "%s: %s", what,
                            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

int store_prepare(struct b4_store *s, const char *sql, sqlite3_stmt **ret, struct b4_error *err)
{
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);

        return rc == SQLITE_OK ? 0 : store_error(s, rc, err, "prepare");
}

int store_column_strv(
        struct b4_store *s, sqlite3_stmt *st, const char *what, char ***ret, struct b4_error *err)
{
        cleanup_strv char **l = b4_calloc(1, sizeof(char *));
        int rc;

        if (!l)
                return -ENOMEM;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                if (strv_extend(&l, (const char *)sqlite3_column_text(st, 0)) < 0)
                        return -ENOMEM;
        if (rc != SQLITE_DONE)
                return store_error(s, rc, err, what);
        *ret = TAKE_PTR(l);
        return 0;
}

int store_prepare_cached(struct b4_store *s,
                         const char *sql,
                         sqlite3_stmt **ret,
                         struct b4_error *err)
{
        size_t i;
        int rc;

        for (i = 0; i < STORE_STMT_CACHE && s->cache[i].sql; i++)
                if (s->cache[i].sql == sql) {
                        *ret = s->cache[i].stmt;
                        return 0;
                }
        if (i == STORE_STMT_CACHE)
                return store_prepare(s, sql, ret, err); /* NEVER: more hot queries than slots */
        rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->cache[i].stmt, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, err, "prepare");
        s->cache[i].sql = sql;
        *ret = s->cache[i].stmt;
        return 0;
}

int store_step_done(struct b4_store *s, sqlite3_stmt *st, struct b4_error *err, const char *what)
{
        int rc = sqlite3_step(st);

        return rc == SQLITE_DONE ? 0 : store_error(s, rc, err, what);
}

int store_column_strdup(sqlite3_stmt *st, int col, char **ret)
{
        const unsigned char *t = sqlite3_column_text(st, col);

        *ret = NULL;
        if (!t)
                return 0;
        *ret = b4_strdup((const char *)t);
        return *ret ? 0 : -ENOMEM;
}

static int take_lock(const char *state_dir, unsigned flags, int *ret_fd, struct b4_error *err)
{
        cleanup_free char *path = NULL, *holder = NULL;
        cleanup_close int fd = -EBADF;
        char pid[32];
        int op = (flags & B4_STORE_EXCLUSIVE) ? LOCK_EX : LOCK_SH;

        if (b4_asprintf(&path, "%s/b4box.lock", state_dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return b4_error_set(err, -errno, "cannot open '%s'", path);
        if (flock(fd, op | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        return b4_error_set(err, -errno, "cannot lock '%s'", path);
                (void)read_file_at(AT_FDCWD, path, 31, &holder, NULL);
                return b4_error_set(err, -EBUSY,
                                    "state dir '%s' is in use by another b4box process (pid %s)",
                                    state_dir, holder && *holder ? holder : "unknown");
        }
        if (op == LOCK_EX) {
                (void)snprintf(pid, sizeof(pid), "%d", (int)getpid());
                if (ftruncate(fd, 0) == 0)
                        (void)write_all(fd, pid, strlen(pid));
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int exec_sql(struct b4_store *s, const char *sql, struct b4_error *err)
{
        char *msg = NULL;
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);

        if (rc == SQLITE_OK)
                return 0;
        int r = store_error(s, rc, err, "schema");
        if (msg && err)
                (void)snprintf(err->msg, sizeof(err->msg), "schema: %s", msg);
        sqlite3_free(msg);
        return r;
}

static int user_version(struct b4_store *s, int *ret, struct b4_error *err)
{
        cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "PRAGMA user_version", &st, err);

        if (r < 0)
                return r;
        if (sqlite3_step(st) != SQLITE_ROW)
                return store_error(s, sqlite3_errcode(s->db), err, "user_version");
        *ret = sqlite3_column_int(st, 0);
        return 0;
}

static int migrate(struct b4_store *s, struct b4_error *err)
{
        int v = 0, r;

        r = user_version(s, &v, err);
        if (r < 0)
                return r;
        if (v > STORE_VERSION)
                return b4_error_set(err, -EPROTO,
                                    "state store has schema version %d, newer than this b4box (%d)",
                                    v, STORE_VERSION);
        if (v == STORE_VERSION)
                return 0;
        r = exec_sql(s, "BEGIN IMMEDIATE", err);
        if (r < 0)
                return r;
        if (v < 1)
                r = exec_sql(s, store_schema_v1, err);
        if (r >= 0 && v < 2)
                r = exec_sql(s, store_schema_v2, err);
        if (r >= 0 && v < 3)
                r = exec_sql(s, store_schema_v3, err);
        if (r >= 0)
                r = exec_sql(s, "PRAGMA user_version = 3; COMMIT", err);
        if (r < 0)
                (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static int open_db(struct b4_store *s, const char *state_dir, struct b4_error *err)
{
        cleanup_free char *path = NULL;
        int rc, r;

        if (b4_asprintf(&path, "%s/b4box.db", state_dir) < 0)
                return -ENOMEM;
        /* SQLite would create it 0644 (its -wal and -shm take the database's mode). */
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return b4_error_set(err, -errno, "cannot open '%s'", path);
        (void)close(fd);
        rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                                     SQLITE_OPEN_FULLMUTEX,
                             NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, err, "open state store");
        /* Keep -wal and -shm when the last connection closes: making them again is the
         * dearest part of opening the store for a short CLI command. */
        int persist = 1;
        (void)sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
        /* Nor checkpoint on that close: a read-only command would copy the whole WAL back and
         * fsync three times. Writers checkpoint as the WAL grows (SQLite's auto-checkpoint),
         * and committed frames are as durable in the WAL as in the database. */
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        (void)sqlite3_busy_timeout(s->db, 5000);
        r = exec_sql(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON",
                     err);
        if (r < 0)
                return r;
        return migrate(s, err);
}

int b4_store_open(const char *state_dir,
                  unsigned flags,
                  struct b4_store **ret,
                  struct b4_error *err)
{
        struct b4_store *s;
        int r;

        if (!state_dir || !(flags & (B4_STORE_EXCLUSIVE | B4_STORE_SHARED)))
                return b4_error_set(err, -EINVAL, "store needs a state dir and a lock mode");
        cleanup_close int dir_fd = -EBADF;
        r = state_dir_open(state_dir, &dir_fd, err);
        if (r < 0)
                return r;
        s = b4_calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->lock_fd = -EBADF;
        s->dir_fd = TAKE_FD(dir_fd);
        (void)pthread_mutex_init(&s->lock, NULL);
        r = take_lock(state_dir, flags, &s->lock_fd, err);
        if (r >= 0)
                r = open_db(s, state_dir, err);
        if (r < 0) {
                b4_store_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

int b4_store_dir_fd(const struct b4_store *s)
{
        return s->dir_fd;
}

struct b4_store *b4_store_close(struct b4_store *s)
{
        if (!s)
                return NULL;
        for (size_t i = 0; i < STORE_STMT_CACHE; i++)
                if (s->cache[i].stmt)
                        (void)sqlite3_finalize(s->cache[i].stmt);
        if (s->db)
                (void)sqlite3_close(s->db);
        safe_close(s->lock_fd);
        safe_close(s->dir_fd);
        (void)pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}
