/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The provider implementer's API (the embedder's is b4box/provider.h): the ops tables, the
 * init functions of handles, readers and providers, the preflight builders and the
 * per-thread lifecycle entry.
 *
 * What core does for every provider, once (core/provider.c, core/lifecycle.c):
 *   - the per-thread registry: an entry per thread id, refcounted, freed with its last
 *     reference; it carries the provider's state (b4_entry_set_state()), an epoch and a
 *     generation;
 *   - the fair shared/exclusive gate per thread (reference §3.5): acquire, release, destroy
 *     and recovery exclusive, every filesystem call and exec of a handle shared (readers
 *     take no lease); cancellable while waiting;
 *   - recover-and-retry-once: an operation failing -EAGAIN or -ENOTCONN (the sandbox was
 *     lost: keeper gone, PID exhaustion) runs the handle's recover under the exclusive lease
 *     and is retried once;
 *   - the reference's texts: providers return -EFBIG (read_file over max_bytes), -E2BIG
 *     (walk over max_entries), set ret->timeout_ms/timed_out, and core words them; a closed
 *     reader is refused by core.
 * So a provider is its raw operations, its recover and its preflight.
 *
 * Installed with the embedding headers: the conformance suite (b4box/conformance.h) is for
 * implementers too, and b4_sandbox_init() & co. were already part of the exported ABI.
 */

#include <stdbool.h>
#include <stdint.h>

#include "b4box/provider.h"

/* ---- filesystem ------------------------------------------------------------------------ */

/*
 * Filesystem operations. Read members are required except walk and read_files (the
 * b4_fs_* wrappers fall back to per-entry calls). Write members are NULL in readers.
 * Ownership: every ret_* value is the caller's. Errors: negative errno, message in @err.
 */
struct b4_fs_ops {
        /* Bounded read of a regular file: one larger than max_bytes fails -EFBIG (core
         * words it) without reading past max+1 (a size known up front is checked before
         * reading). Missing -ENOENT, a
         * directory -EISDIR, another non-regular file -EINVAL. *ret is NUL-terminated past
         * *ret_len. @flags: enum b4_fs_flags. */
        int (*read_file)(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         uint64_t max_bytes,
                         char **ret,
                         size_t *ret_len,
                         struct b4_error *err);
        int (*lstat)(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err);
        /* Follows links (within @flags); fills kind, size, executable, mtime_ms. */
        int (*stat)(struct b4_fs *fs,
                    const char *path,
                    unsigned flags,
                    struct b4_stat *ret,
                    struct b4_error *err);
        /* Names of the direct children, sorted bytewise. Missing path -ENOENT; more than
         * B4_LIST_MAX_ENTRIES names -E2BIG (core words it; never a truncated list, never
         * more held). */
        int (*list_dir)(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        char ***ret_names,
                        struct b4_error *err);
        /* Canonical path resolving links and "..", tolerating a non-existent tail (realpath -m).
         * A path that cannot be resolved (a loop, too long, ...) is an error, never the input
         * returned unchanged: callers decide on the result. */
        int (*realpath)(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err);
        /* Optional. Whole subtree below @path (not @path itself), depth-first, children sorted;
         * names in @prune (direct children of @path) are reported but not descended.
         * More than max_entries entries: -E2BIG (core words it), never a truncated list. */
        int (*walk)(struct b4_fs *fs,
                    const char *path,
                    size_t max_entries,
                    char *const *prune,
                    struct b4_walk_entry **ret,
                    size_t *ret_n,
                    struct b4_error *err);
        /* Optional. Batched bounded reads; results in request order, per-file errors in blobs. */
        int (*read_files)(struct b4_fs *fs,
                          const struct b4_read_req *reqs,
                          size_t n,
                          struct b4_blob **ret,
                          struct b4_error *err);

        /* Optional. Ranged read of a regular file: at most @length bytes from byte @offset
         * (fewer at its end, none at or past it), never more read or held; *ret_size is the
         * file's size. Errors as read_file (no -EFBIG). Without it b4_fs_read_range_flags()
         * reads the whole file (at most B4_FS_RANGE_FALLBACK_MAX bytes) and slices it. */
        int (*read_range)(struct b4_fs *fs,
                          const char *path,
                          unsigned flags,
                          uint64_t offset,
                          uint64_t length,
                          char **ret,
                          size_t *ret_len,
                          uint64_t *ret_size,
                          struct b4_error *err);

        /* Write members (NULL in readers). */
        /* Create parents, replace atomically (temp + rename), keep an existing file's mode,
         * replace (never follow) a symlink leaf. Files belong to the sandbox user. */
        int (*write_file)(struct b4_fs *fs,
                          const char *path,
                          unsigned flags,
                          const void *data,
                          size_t len,
                          struct b4_error *err);
        int (*mkdir_p)(struct b4_fs *fs, const char *path, struct b4_error *err);
        /* Remove a file or empty directory; a missing path is success. */
        int (*remove)(struct b4_fs *fs, const char *path, struct b4_error *err);
        /* Set the mtime to now, creating an empty file if missing. */
        int (*touch)(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err);
        /* Optional write members (NULL = unsupported: the wrappers give -EOPNOTSUPP). */
        /* Make @path a symlink whose text is @target (never resolved here); parents are
         * created; an existing @path fails -EEXIST. */
        int (*symlink)(struct b4_fs *fs,
                       const char *target,
                       const char *path,
                       struct b4_error *err);
        /* Set the permission bits (07777) of the file or directory at @path; a symlink leaf
         * is never followed (-ELOOP). */
        int (*chmod)(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err);
};

/* ---- sandbox handle -------------------------------------------------------------------- */

struct b4_proc_ops;

struct b4_sandbox_ops {
        /* Run a command (required unless exec_start/exec_finish below). A non-zero exit
         * is a result, not an error; errors are failures to
         * run at all (-EIO, -ECANCELED when cancelled before start, ...). Set
         * ret->timeout_ms to the timeout that applied: core adds the timeout line. A lost
         * sandbox is -EAGAIN/-ENOTCONN (see recover); with @ret filled that failed result
         * stands when no retry happens. */
        int (*exec)(struct b4_sandbox *sb,
                    const struct b4_exec_req *req,
                    struct b4_exec_result *ret,
                    struct b4_error *err);
        /* Optional: replace the thread's lost compute (reference §3.6), so the operation
         * that failed -EAGAIN/-ENOTCONN can be retried once. Core calls it under the
         * thread's exclusive lease, never cancelled, and only when no release, destroy,
         * acquire or other recovery happened since the failed attempt started. Without it
         * lost-sandbox errors are returned as they are. On failure core drops the entry's
         * state (the next acquire starts over). Return: 0 or -errno with @err set. */
        int (*recover)(struct b4_sandbox *sb, struct b4_error *err);
        /* Called when the last reference goes. */
        void (*free)(struct b4_sandbox *sb);
        /* Optional, instead of exec: a command in two parts. exec_start runs under the
         * shared lease (and is retried after recover like every operation) and hands
         * *ret_started to exec_finish, which runs the command holding no lease, so a
         * release ends a running command instead of waiting for it (native). exec_finish
         * takes @started (also on error) and may fail -EAGAIN/-ENOTCONN too: the whole
         * command is then recovered and retried. Without them exec runs whole under the
         * shared lease (Docker, reference §3.5). */
        int (*exec_start)(struct b4_sandbox *sb,
                          const struct b4_exec_req *req,
                          void **ret_started,
                          struct b4_error *err);
        int (*exec_finish)(struct b4_sandbox *sb,
                           void *started,
                           struct b4_exec_result *ret,
                           struct b4_error *err);
        /* Optional: background processes (struct b4_proc_ops below); NULL = none. */
        const struct b4_proc_ops *procs;
};

/*
 * Background processes (provider.h, "background processes"): a provider that has them
 * points b4_sandbox_ops.procs at this table. Every member is required; core has checked the
 * arguments (command non-empty, tag bounded, signal valid) and holds the shared lease; wait
 * is core's (get, polled). Ownership: ret values are the caller's.
 */
struct b4_proc_ops {
        int (*start)(struct b4_sandbox *sb,
                     const struct b4_proc_req *req,
                     struct b4_proc_info *ret,
                     struct b4_error *err);
        int (*list)(struct b4_sandbox *sb,
                    struct b4_proc_info **ret,
                    size_t *ret_n,
                    struct b4_error *err);
        int (*get)(struct b4_sandbox *sb,
                   uint64_t pid,
                   struct b4_proc_info *ret,
                   struct b4_error *err);
        int (*read)(struct b4_sandbox *sb,
                    uint64_t pid,
                    uint64_t offset,
                    size_t max,
                    char **ret,
                    size_t *ret_len,
                    struct b4_proc_info *ret_info,
                    struct b4_error *err);
        int (*write_stdin)(struct b4_sandbox *sb,
                           uint64_t pid,
                           const void *data,
                           size_t len,
                           bool eof,
                           struct b4_error *err);
        int (*send_signal)(struct b4_sandbox *sb, uint64_t pid, int sig, struct b4_error *err);
        int (*forget)(struct b4_sandbox *sb, uint64_t pid, struct b4_error *err);
};

/** b4_sandbox_init() - for implementers: set fields, one reference. Return: 0 or -ENOMEM. */
B4_PUBLIC int b4_sandbox_init(struct b4_sandbox *sb,
                              const struct b4_sandbox_ops *ops,
                              const struct b4_fs_ops *fs_ops,
                              const char *thread_id);

/* ---- reader ---------------------------------------------------------------------------- */

struct b4_reader_ops {
        /* Optional: release what the reader holds, early. Idempotent. Core refuses every
         * read after b4_reader_close() (-EBADF "Workspace reader for thread \"<id>\" is
         * closed"), so a read never sees a closed reader. */
        int (*close)(struct b4_reader *r, struct b4_error *err);
        void (*free)(struct b4_reader *r);
};

B4_PUBLIC int b4_reader_init(struct b4_reader *r,
                             const struct b4_reader_ops *ops,
                             const struct b4_fs_ops *fs_ops,
                             const char *thread_id);

/* ---- preflight ------------------------------------------------------------------------- */

B4_PUBLIC int b4_preflight_warn(struct b4_preflight *p, const char *fmt, ...) B4_PRINTF(2, 3);
/* Adds a control row; a B4_NOT_ENFORCED row also adds a warning "<name>: <detail>". */
B4_PUBLIC int b4_preflight_control(struct b4_preflight *p,
                                   const char *name,
                                   enum b4_enforcement state,
                                   const char *fmt,
                                   ...) B4_PRINTF(4, 5);

/* ---- provider and lifecycle ------------------------------------------------------------ */

struct b4_entry;

enum b4_workspace_verb {
        B4_WORKSPACE_CHECK,
        B4_WORKSPACE_PUBLISH
};

struct b4_provider_ops {
        const char *name; /* "native", "docker", "kubernetes", "fake" */
        /* acquire, release and destroy run under the thread's exclusive lease; @e is its
         * entry (b4_entry_state(): what the last acquire kept, or NULL). */
        /* Create or reattach; idempotent per thread id. Keep what later calls need with
         * b4_entry_set_state(). Core ties the returned handle to @e. */
        int (*acquire)(struct b4_provider *p,
                       struct b4_entry *e,
                       const struct b4_acquire_req *req,
                       struct b4_sandbox **ret,
                       struct b4_error *err);
        /* Drop warm compute, keep the workspace. Core then drops the entry's state. */
        int (*release)(struct b4_provider *p, struct b4_entry *e, struct b4_error *err);
        /* Remove compute and workspace. Succeeds for a thread never acquired. Core then
         * drops the entry's state. */
        int (*destroy)(struct b4_provider *p, struct b4_entry *e, struct b4_error *err);
        /* Optional members: NULL = the capability is absent. */
        int (*preflight)(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err);
        int (*open_reader)(struct b4_provider *p,
                           const struct b4_reader_req *req,
                           struct b4_reader **ret,
                           struct b4_error *err);
        /* Refuse a non-allowed image before any side effect; else its immutable identity. */
        int (*resolve_image)(struct b4_provider *p,
                             const char *reference,
                             char **ret_identity,
                             struct b4_error *err);
        /* Optional: stop (frozen) or resume every process of the thread's sandbox, for
         * consistent reads (b4_provider_freeze(), docs/inspect.md). A thread with no live
         * compute is success. */
        int (*freeze)(struct b4_provider *p,
                      const char *thread_id,
                      bool frozen,
                      struct b4_error *err);
        /* Optional: remove everything this provider instance (its scope and state) holds for
         * a thread not in @live_thread_ids (b4_provider_sweep()). Return: how many threads'
         * leftovers were removed. */
        int (*sweep)(struct b4_provider *p, char *const *live_thread_ids, struct b4_error *err);
        /* Optional: whether @thread_id's compute is running though nothing holds it here
         * (a restart left it; the next acquire adopts it). No lease, no side effect. */
        bool (*kept)(struct b4_provider *p, const char *thread_id);
        /* Optional: the thread's network audit as netd shapes it (docs/native.md §Audit: a
         * JSON object with mode, dns, destinations, denials, truncated), *ret_json new.
         * -ENOENT with the reason in @err when the thread has nothing audited (core then
         * answers "enforced": false with that reason). */
        int (*network_audit)(struct b4_provider *p,
                             const char *thread_id,
                             char **ret_json,
                             struct b4_error *err);
        /* Optional: the managed workspace's record kept with the thread's storage
         * (provider.h, b4_provider_workspace_check/publish()); NULL = the runtime's store is
         * the record. Core calls it under the exclusive lease with @e acquired (its state
         * set; none: -ENOTCONN). B4_WORKSPACE_CHECK sets *ret_state for @rec->intent (other
         * members may be NULL): EMPTY only when the acquire that made the state made the
         * storage, GONE when it is being deleted, PENDING when it has no ready record of
         * @rec->intent; another intent's record (or one that does not parse) is -EEXIST,
         * never overwritten. B4_WORKSPACE_PUBLISH stores @rec as
         * ready (@ret_state NULL), refusing one over B4_WORKSPACE_RECORD_MAX (-E2BIG) and
         * another intent's (-EEXIST). */
        int (*workspace_record)(struct b4_provider *p,
                                struct b4_entry *e,
                                enum b4_workspace_verb verb,
                                const struct b4_workspace_record *rec,
                                enum b4_storage_state *ret_state,
                                struct b4_error *err);
        /* Core has dropped every entry's state before. */
        void (*free)(struct b4_provider *p);
};

/**
 * b4_provider_init() - set @p's ops and scope (copied; the provider's free releases it) and
 * give it its lifecycle registry (b4_provider_free() releases that)
 * Return: 0 or -ENOMEM (nothing to undo).
 */
B4_PUBLIC int b4_provider_init(struct b4_provider *p,
                               const struct b4_provider_ops *ops,
                               const char *scope);
/** b4_provider_clear() - undo b4_provider_init() in a constructor that fails after it. */
B4_PUBLIC void b4_provider_clear(struct b4_provider *p);

/** b4_sandbox_entry() - the lifecycle entry of a handle acquire returned (NULL before). */
B4_PUBLIC struct b4_entry *b4_sandbox_entry(struct b4_sandbox *sb);
/** b4_entry_thread_id() - the entry's thread id; borrowed for the entry's lifetime. */
B4_PUBLIC const char *b4_entry_thread_id(const struct b4_entry *e);
/** b4_entry_state() - the state the provider kept (under the thread's lease), or NULL. */
B4_PUBLIC void *b4_entry_state(const struct b4_entry *e);
/** b4_entry_generation() - how many recoveries happened since the state was set. */
B4_PUBLIC uint64_t b4_entry_generation(const struct b4_entry *e);

typedef void b4_entry_state_free_fn(void *state);
/**
 * b4_entry_set_state() - replace the entry's state (exclusive lease held)
 * @state:   owned by the entry from now on; NULL clears
 * @free_fn: frees @state when it is replaced or cleared (may drop handles)
 * The previous state is freed; the epoch changes, so a recovery token from before is stale.
 */
B4_PUBLIC void b4_entry_set_state(struct b4_entry *e, void *state, b4_entry_state_free_fn *free_fn);
/**
 * b4_provider_entry() - the entry of @thread_id if one exists (test hooks, sweeps), with a
 * reference (b4_entry_unref()); NULL when there is none. No lease is taken.
 */
B4_PUBLIC struct b4_entry *b4_provider_entry(struct b4_provider *p, const char *thread_id);
/**
 * b4_provider_foreach_state() - call @fn for each entry that has a state (sweeps), under the
 * registry's lock: @fn must be quick and must not call b4_entry_* or b4_provider_*. Stops
 * at @fn's first non-zero return, which is returned.
 */
typedef int b4_entry_state_fn(const char *thread_id, void *state, void *userdata);
B4_PUBLIC int b4_provider_foreach_state(struct b4_provider *p,
                                        b4_entry_state_fn *fn,
                                        void *userdata);
/** b4_entry_unref() - drop a reference (NULL ok). Return: NULL. */
B4_PUBLIC struct b4_entry *b4_entry_unref(struct b4_entry *e);
