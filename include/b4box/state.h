/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The state directory: one SQLite store per directory (`<state>/b4box.db`) that the runtime
 * keeps its threads in, and the thread row the runtime hands out. An embedder opens the
 * store and passes it to b4_runtime_new(); everything read or written in it goes through the
 * runtime (b4box/runtime.h). One process owns a state dir at a time: a server takes an
 * exclusive lock, local CLI commands a shared one, so neither can run over the other.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

struct b4_store;

enum b4_store_flags {
        B4_STORE_EXCLUSIVE = 1 << 0, /* a server: refuse when anyone else holds the dir */
        B4_STORE_SHARED = 1 << 1,    /* a local command: refuse while a server holds it */
};

/**
 * b4_store_open() - open (creating and migrating) the store of @state_dir
 * @state_dir: created 0700 if missing; borrowed
 * @flags:     B4_STORE_EXCLUSIVE or B4_STORE_SHARED
 * @ret:       owned by the caller (b4_store_close()); thread-safe
 * Return: 0; -EBUSY "state dir '<d>' is in use by another b4box process (pid <n>)";
 *         -EIO (SQLite, message kept); -ENOMEM.
 */
B4_PUBLIC int b4_store_open(const char *state_dir,
                            unsigned flags,
                            struct b4_store **ret,
                            struct b4_error *err);
/** b4_store_close() - NULL ok; releases the lock. Return: NULL. */
B4_PUBLIC struct b4_store *b4_store_close(struct b4_store *s);

/* A thread as stored. */
struct b4_thread_row {
        char *id;            /* owned */
        char *metadata_json; /* owned; a JSON object, "{}" when none */
        char *owner;         /* owned; principal name, NULL without an access policy */
        char *parent_id;     /* owned; NULL, or the thread whose sandbox this one shares */
        int64_t created_ms;  /* ms since the epoch */
        bool deleting;       /* its deletion began and has not finished (b4_runtime_reconcile()) */
};

/* A source held as an upload (GET /workspace/sources). */
struct b4_source_info {
        char *digest;        /* owned; 64 lowercase hex */
        uint64_t size;       /* payload bytes */
        int64_t uploaded_ms; /* the last upload, ms since the epoch */
        uint64_t references; /* threads whose workspace names it */
};

/** b4_source_infos_free() - free @n infos and the array (NULL ok). */
B4_PUBLIC void b4_source_infos_free(struct b4_source_info *l, size_t n);

/** b4_thread_row_clear() - free what @row owns. */
B4_PUBLIC void b4_thread_row_clear(struct b4_thread_row *row);
/** b4_thread_rows_free() - clear @n rows and free the array. Return: NULL. */
B4_PUBLIC struct b4_thread_row *b4_thread_rows_free(struct b4_thread_row *rows, size_t n);
