/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the store's files: the connection, its lock and SQLite error mapping. */

#include <pthread.h>
#include <sqlite3.h>

#include "store/store.h"

#define STORE_STMT_CACHE 16

struct b4_store {
        sqlite3 *db; /* the only connection */

        struct {
                const char *sql;    /* a static string: the cache key is its address */
                sqlite3_stmt *stmt; /* prepared once, reset after each use */
        } cache[STORE_STMT_CACHE];

        pthread_mutex_t lock; /* serialises every call */
        int lock_fd;          /* flock()ed <state>/b4box.lock */
        int dir_fd;           /* the state directory */
};

/* Map an SQLite result to -errno and set @err with the database's message. */
int store_error(struct b4_store *s, int rc, struct b4_error *err, const char *what);
/* Prepare @sql; on failure sets @err. */
int store_prepare(struct b4_store *s, const char *sql, sqlite3_stmt **ret, struct b4_error *err);
/* Step @st to the end, collecting column 0 of every row as text into a new strv (empty, not
 * NULL, for no rows). @what names the query in an error. Return: 0 or -errno. */
int store_column_strv(
        struct b4_store *s, sqlite3_stmt *st, const char *what, char ***ret, struct b4_error *err);
/*
 * A cached statement for a hot query (@sql must be a string literal). The caller holds the
 * store lock and resets it when done (cleanup_(store_resetp)); never finalize it.
 */
int store_prepare_cached(struct b4_store *s,
                         const char *sql,
                         sqlite3_stmt **ret,
                         struct b4_error *err);

static inline void store_resetp(sqlite3_stmt **st)
{
        if (*st) {
                (void)sqlite3_reset(*st);
                (void)sqlite3_clear_bindings(*st);
        }
        *st = NULL;
}

/* Run a statement that returns no rows to completion, then finalize it. */
int store_step_done(struct b4_store *s, sqlite3_stmt *st, struct b4_error *err, const char *what);
/* Duplicate a column as a heap string (NULL for SQL NULL). -ENOMEM on failure. */
int store_column_strdup(sqlite3_stmt *st, int col, char **ret);

static inline void sqlite3_finalizep(sqlite3_stmt **st)
{
        if (*st)
                (void)sqlite3_finalize(*st);
        *st = NULL;
}

static inline void store_unlockp(struct b4_store **s)
{
        if (*s)
                (void)pthread_mutex_unlock(&(*s)->lock);
}

/* Hold the store mutex until the end of the scope. */
#define STORE_LOCKED(s)                                                        \
 struct b4_store *store_guard__ __attribute__((cleanup(store_unlockp))) = (s); \
 (void)pthread_mutex_lock(&store_guard__->lock)
