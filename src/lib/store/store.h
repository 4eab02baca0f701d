/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The state store, library-internal: one SQLite database per state directory
 * (`<state>/b4box.db`) holding threads, their sandbox records, permission grants, staged
 * sources and workspace associations. Opening and closing it, and the thread row, are public
 * (b4box/state.h); everything else here is the runtime's, and the server and the CLI reach it
 * through runtime calls (b4box/runtime.h).
 *
 * Thread-safe: every call is serialised on the store's own mutex.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"
#include "b4box/state.h"

/** Return: 0, -EEXIST (id taken), -EIO. */
int b4_store_thread_insert(struct b4_store *s,
                           const struct b4_thread_row *row,
                           struct b4_error *err);
/** @ret filled on success (caller clears). Return: 0, -ENOENT, -EIO. */
int b4_store_thread_get(struct b4_store *s,
                        const char *id,
                        struct b4_thread_row *ret,
                        struct b4_error *err);
/** All threads (or only @owner's when non-NULL), oldest first. Return: 0, -EIO. */
int b4_store_thread_list(struct b4_store *s,
                         const char *owner,
                         struct b4_thread_row **ret,
                         size_t *ret_n,
                         struct b4_error *err);
/** Replace the metadata. Return: 0, -ENOENT, -EIO. */
int b4_store_thread_set_metadata(struct b4_store *s,
                                 const char *id,
                                 const char *metadata_json,
                                 struct b4_error *err);
/**
 * b4_store_thread_mark_deleting() - record (durably) that @id's deletion has begun; the row
 * stays readable until b4_store_thread_delete(). Return: 0, -ENOENT, -EIO.
 */
int b4_store_thread_mark_deleting(struct b4_store *s, const char *id, struct b4_error *err);
/**
 * b4_store_thread_list_deleting() - ids of the threads marked deleting, oldest first
 * @ret_ids: owned strv (possibly empty)
 * Return: 0, -EIO, -ENOMEM.
 */
int b4_store_thread_list_deleting(struct b4_store *s, char ***ret_ids, struct b4_error *err);
/** Delete the thread and every row that belongs to it, in one transaction. Return: 0, -ENOENT. */
int b4_store_thread_delete(struct b4_store *s, const char *id, struct b4_error *err);

/** Record (or replace) the thread's sandbox record. Return: 0, -ENOENT (no thread), -EIO. */
int b4_store_record_put(struct b4_store *s,
                        const char *thread_id,
                        const char *digest,
                        const char *payload_json,
                        struct b4_error *err);
/** Return: 0 with owned *ret_digest and *ret_payload, -ENOENT (no record), -EIO. */
int b4_store_record_get(struct b4_store *s,
                        const char *thread_id,
                        char **ret_digest,
                        char **ret_payload,
                        struct b4_error *err);

/** Add an "Always" grant (idempotent). Return: 0, -ENOENT (no thread), -EIO. */
int b4_store_grant_add(struct b4_store *s,
                       const char *thread_id,
                       const char *tool,
                       const char *pattern,
                       struct b4_error *err);
/** Patterns granted to @thread_id for @tool, sorted. Return: 0 (possibly empty strv), -EIO. */
int b4_store_grant_list(struct b4_store *s,
                        const char *thread_id,
                        const char *tool,
                        char ***ret_patterns,
                        struct b4_error *err);

/* ---- managed workspaces: sources, associations, admissions (src/lib/store/sources.c) ---- */

/* A thread's workspace association (reference §9.3): created at first admission. */
struct b4_association {
        char *thread_id;     /* owned */
        char *source_digest; /* owned; the bundle the workspace was made from */
        char *intent_digest; /* owned */
        char *state;         /* owned: "creating" (not materialised yet) or "ready" */
        int64_t revision;    /* optimistic CAS counter, 1 at creation */
        char *payload;       /* owned JSON: what the admission decided (links, image, ...) */
};

/** b4_association_clear() - free what @a owns. */
void b4_association_clear(struct b4_association *a);

/* Everything a first admission writes, in one transaction. */
struct b4_admission_rows {
        const char *thread_id;
        const char *source_digest;
        const char *source_payload; /* the bundle's canonical JSON; kept if already held */
        size_t source_len;
        const char *intent_digest;
        const char *association_payload;
        const char *record_digest;  /* NULL: no sandbox record (workspace mode) */
        const char *record_payload; /* with record_digest */
};

/**
 * b4_store_admit() - write the source (if not held), the association in state "creating"
 * and the sandbox record, all or nothing
 * Return: 0; -EEXIST (the thread already has an association); -ENOENT (no thread); -EIO.
 */
int b4_store_admit(struct b4_store *s, const struct b4_admission_rows *rows, struct b4_error *err);
/** b4_store_association_get() - Return: 0 (@ret filled, caller clears), -ENOENT, -EIO. */
int b4_store_association_get(struct b4_store *s,
                             const char *thread_id,
                             struct b4_association *ret,
                             struct b4_error *err);
/**
 * b4_store_association_update() - set state and payload when the revision still is @revision
 * (then revision + 1). Return: 0, -ESTALE (someone else changed it), -ENOENT, -EIO.
 */
int b4_store_association_update(struct b4_store *s,
                                const char *thread_id,
                                int64_t revision,
                                const char *state,
                                const char *payload,
                                struct b4_error *err);

/**
 * b4_store_source_get() - the stored payload (a bundle's canonical JSON) of @digest
 * @ret: heap copy, NUL-terminated past @ret_len; @ret_uploaded_ms 0 when never uploaded
 * Return: 0, -ENOENT, -EIO.
 */
int b4_store_source_get(struct b4_store *s,
                        const char *digest,
                        char **ret,
                        size_t *ret_len,
                        int64_t *ret_uploaded_ms,
                        struct b4_error *err);

/** b4_store_dir_fd() - the state directory, open for the store's lifetime (borrowed). */
int b4_store_dir_fd(const struct b4_store *s);

/**
 * b4_store_source_upload() - keep an uploaded bundle (its canonical JSON) under @digest
 * @uploader:   recorded as an uploader of the digest (principal name); NULL = none
 * @stamp:      the policy program's stamp (JSON object text) kept with @uploader; NULL = none
 * @now_ms:     the upload time (refreshes the retention window of a held source)
 * @max_staged: quota on the sum of uploaded payload bytes
 * @ret_created: true when the digest was not held as an upload before
 * Return: 0; -ENOSPC when the new bytes would exceed @max_staged (nothing changed); -EIO.
 */
int b4_store_source_upload(struct b4_store *s,
                           const char *digest,
                           const char *payload,
                           size_t len,
                           const char *uploader,
                           const char *stamp,
                           int64_t now_ms,
                           uint64_t max_staged,
                           bool *ret_created,
                           struct b4_error *err);
/**
 * b4_store_sources_reclaim() - delete every held source no association references that was
 * never uploaded, or was last uploaded before @now_ms - @retention_ms (reference §6.5)
 * Return: the number deleted, or -EIO.
 */
int b4_store_sources_reclaim(struct b4_store *s,
                             int64_t now_ms,
                             uint64_t retention_ms,
                             struct b4_error *err);
/** b4_store_source_uploaders() - principals that uploaded @digest, sorted, and (when
 * @ret_stamps) each one's stamp, "" for none. Return: 0, -EIO, -ENOMEM. */
int b4_store_source_uploaders(struct b4_store *s,
                              const char *digest,
                              char ***ret,
                              char ***ret_stamps,
                              struct b4_error *err);
/** b4_store_sources_list() - the sources held as uploads (of @uploader only, unless NULL),
 * by digest. *@ret is the caller's (b4_source_infos_free()). Return: 0, -EIO, -ENOMEM. */
int b4_store_sources_list(struct b4_store *s,
                          const char *uploader,
                          struct b4_source_info **ret,
                          size_t *ret_n,
                          struct b4_error *err);
/** b4_store_source_delete() - forget an upload nothing references.
 * Return: 0; -ENOENT not held as an upload; -EBUSY a thread's workspace names it; -EIO. */
int b4_store_source_delete(struct b4_store *s, const char *digest, struct b4_error *err);

/* ---- staged workspace references (reference §6.4) --------------------------------------- */

/**
 * b4_store_thread_insert_staged() - create a root thread together with its staged workspace
 * reference, in one transaction, only while @source_digest is held as an upload
 * @row:         the thread (parent_id must be NULL); borrowed
 * @staged_json: the reference {sourceDigest, environmentLinks, baseline?}, canonical JSON;
 *               kept apart from the client's metadata and deleted with the thread
 * Return: 0; -ENOENT (the source is not held as an upload: reclaimed meanwhile, nothing
 *         stored); -EEXIST (id taken); -EINVAL (a parent was given); -EIO.
 */
int b4_store_thread_insert_staged(struct b4_store *s,
                                  const struct b4_thread_row *row,
                                  const char *source_digest,
                                  const char *staged_json,
                                  struct b4_error *err);
/**
 * b4_store_thread_staged_get() - the staged reference of @thread_id
 * @ret_digest: its source digest (owned); @ret_json: the reference JSON (owned)
 * Return: 0, -ENOENT (none), -EIO.
 */
int b4_store_thread_staged_get(struct b4_store *s,
                               const char *thread_id,
                               char **ret_digest,
                               char **ret_json,
                               struct b4_error *err);
