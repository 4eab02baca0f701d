/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The provider contract (reference §1): a provider gives each thread a sandbox — compute plus
 * a persistent workspace — and, optionally, read-only readers of that workspace.
 *
 *   provider ── acquire(thread) ──> sandbox ── fs (struct b4_fs) + exec
 *            ── open_reader(thread) ──> reader ── fs (read members only)
 *
 * Every path handed to a struct b4_fs is an absolute in-sandbox path. Backends resolve it in
 * the sandbox's own root; the members that take enum b4_fs_flags also confine the resolution
 * itself (beneath the workspace, no symlinks), so the tools' jail (§10.2) decides on a path and
 * the backend refuses to use anything else, even when the sandbox swaps a symlink in between.
 * The workspace root is B4_WORKSPACE_ROOT in every built-in provider.
 *
 * This header is the embedder's: the handles and the b4_* calls on them. Provider
 * implementations (ops tables, init functions, preflight builders, the per-thread lifecycle)
 * use b4box/provider-impl.h.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/cancel.h"
#include "b4box/error.h"
#include "b4box/policy.h"

#define B4_WORKSPACE_ROOT "/workspace"
#define B4_UNBOUNDED      UINT64_MAX /* max_bytes meaning "no cap"; trusted callers only */
/* list_dir's entry cap: more names fail -E2BIG (the reference's walk maxEntries). */
#define B4_LIST_MAX_ENTRIES 10000

struct b4_fs;
struct b4_sandbox;
struct b4_reader;
struct b4_provider;
struct b4_fs_ops;
struct b4_sandbox_ops;
struct b4_sandbox_core;
struct b4_reader_ops;
struct b4_provider_ops;
struct b4_lifecycle;

/* ---- filesystem ------------------------------------------------------------------------ */

enum b4_file_kind {
        B4_FILE_REGULAR = 0,
        B4_FILE_DIRECTORY = 1,
        B4_FILE_SYMLINK = 2,
        B4_FILE_OTHER = 3,
};

struct b4_stat {
        enum b4_file_kind kind;
        uint64_t size;
        bool executable;  /* any of the 0111 bits */
        int64_t mtime_ms; /* modification time, ms since the epoch */
        char *target;     /* owned; raw readlink text, symlinks seen by lstat/walk only */
};

/** b4_stat_clear() - free what @st owns. */
B4_PUBLIC void b4_stat_clear(struct b4_stat *st);

struct b4_walk_entry {
        char *path;        /* owned; relative to the walk root, '/'-separated */
        struct b4_stat st; /* lstat of the entry (never follows links) */
};

/** b4_walk_entries_free() - free @n entries and the array. Return: NULL. */
B4_PUBLIC struct b4_walk_entry *b4_walk_entries_free(struct b4_walk_entry *e, size_t n);

struct b4_read_req {
        const char *path;   /* absolute in-sandbox path */
        uint64_t max_bytes; /* per-file cap; B4_UNBOUNDED = none */
};

struct b4_blob {
        char *data; /* owned, NUL-terminated past len; NULL when error < 0 */
        size_t len;
        int error; /* 0, or -ENOENT / -EFBIG (over max_bytes) / -EISDIR ... for this file */
};

/*
 * How a path must resolve (the members that take @flags; 0 = anywhere in the sandbox root):
 *   B4_FS_BENEATH      @path is B4_WORKSPACE_ROOT or below it, and its resolution never
 *                      leaves the workspace: a ".." or symlink that would (an absolute
 *                      symlink always counts as leaving) fails -EXDEV. Native resolves from a
 *                      dirfd of the workspace with RESOLVE_BENEATH.
 *   B4_FS_NO_SYMLINKS  no component of @path may be a symlink, the leaf included (for
 *                      write_file: the parent's components; a symlink leaf is replaced as
 *                      always): -ELOOP. With a canonical @path this means "exactly this path".
 */
enum b4_fs_flags {
        B4_FS_BENEATH = 1 << 0,
        B4_FS_NO_SYMLINKS = 1 << 1,
};

/** b4_blobs_free() - free @n blobs and the array. Return: NULL. */
B4_PUBLIC struct b4_blob *b4_blobs_free(struct b4_blob *b, size_t n);

/* Embedders read root; the rest is the implementer's and core's (provider-impl.h). */
struct b4_fs {
        const struct b4_fs_ops *ops;
        const char *root;      /* absolute workspace root, borrowed from the owner */
        struct b4_sandbox *sb; /* the handle this is the filesystem of, or NULL */
        struct b4_reader *rd;  /* the reader this is the filesystem of, or NULL */
};

/**
 * b4_fs_can_read_tree() - whether @fs has the members a tree read needs (lstat, list_dir and
 * read_file; walk and batched reads fall back to them). NULL gives false.
 */
B4_PUBLIC bool b4_fs_can_read_tree(const struct b4_fs *fs);
/**
 * b4_fs_has_read_range() - whether @fs reads ranges itself (b4_fs_ops.read_range): without
 * it every b4_fs_read_range_flags() call reads the whole file (a scan in chunks would read it
 * once per chunk). NULL gives false.
 */
B4_PUBLIC bool b4_fs_has_read_range(const struct b4_fs *fs);

/*
 * Wrappers: dispatch to @fs->ops; a missing member gives -EOPNOTSUPP ("<op> is not supported
 * here"). b4_fs_walk() and b4_fs_read_files() fall back to list_dir/lstat/read_file. The
 * plain forms pass flags 0; the *_flags forms confine the resolution (enum b4_fs_flags).
 * On a sandbox's fs every call holds the thread's shared lease (release, destroy and
 * recovery wait for it) and a lost sandbox is recovered and the call retried once. Texts:
 * read_file over max_bytes -EFBIG "readFile <path>: content exceeds maxBytes (<max>).",
 * list_dir over B4_LIST_MAX_ENTRIES -E2BIG "listDir <path>: more than <n> entries", walk over
 * max_entries -E2BIG "Workspace entries limit exceeded", any call on a closed reader -EBADF
 * "Workspace reader for thread \"<id>\" is closed".
 */
B4_PUBLIC int b4_fs_read_file(struct b4_fs *fs,
                              const char *path,
                              uint64_t max_bytes,
                              char **ret,
                              size_t *ret_len,
                              struct b4_error *err);
B4_PUBLIC int b4_fs_lstat(struct b4_fs *fs,
                          const char *path,
                          struct b4_stat *ret,
                          struct b4_error *err);
B4_PUBLIC int b4_fs_stat(struct b4_fs *fs,
                         const char *path,
                         struct b4_stat *ret,
                         struct b4_error *err);
B4_PUBLIC int b4_fs_list_dir(struct b4_fs *fs,
                             const char *path,
                             char ***ret_names,
                             struct b4_error *err);
B4_PUBLIC int b4_fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err);
B4_PUBLIC int b4_fs_walk(struct b4_fs *fs,
                         const char *path,
                         size_t max_entries,
                         char *const *prune,
                         struct b4_walk_entry **ret,
                         size_t *ret_n,
                         struct b4_error *err);
B4_PUBLIC int b4_fs_read_files(struct b4_fs *fs,
                               const struct b4_read_req *reqs,
                               size_t n,
                               struct b4_blob **ret,
                               struct b4_error *err);
B4_PUBLIC int b4_fs_write_file(
        struct b4_fs *fs, const char *path, const void *data, size_t len, struct b4_error *err);
B4_PUBLIC int b4_fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err);
B4_PUBLIC int b4_fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err);
B4_PUBLIC int b4_fs_touch(struct b4_fs *fs, const char *path, struct b4_error *err);
B4_PUBLIC int b4_fs_symlink(struct b4_fs *fs,
                            const char *target,
                            const char *path,
                            struct b4_error *err);
B4_PUBLIC int b4_fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err);
B4_PUBLIC int b4_fs_read_file_flags(struct b4_fs *fs,
                                    const char *path,
                                    unsigned flags,
                                    uint64_t max_bytes,
                                    char **ret,
                                    size_t *ret_len,
                                    struct b4_error *err);
/* A provider without a ranged read (b4_fs_ops.read_range) serves b4_fs_read_range_flags() by
 * reading the whole file, at most this many bytes: a larger file fails -EFBIG there. */
#define B4_FS_RANGE_FALLBACK_MAX (64u * 1024 * 1024)
/**
 * b4_fs_read_range_flags() - at most @length bytes of the regular file @path from byte
 * @offset (fewer at its end; none at or past it)
 * @ret:      owned by the caller, NUL-terminated past *ret_len
 * @ret_size: the file's size in bytes
 * Return: 0; as read_file (-ENOENT, -EISDIR, -EINVAL for a non-regular file); -EFBIG
 * "readRange <path>: no ranged read here and the file exceeds <n> bytes" on a provider
 * without one for a file over B4_FS_RANGE_FALLBACK_MAX.
 */
B4_PUBLIC int b4_fs_read_range_flags(struct b4_fs *fs,
                                     const char *path,
                                     unsigned flags,
                                     uint64_t offset,
                                     uint64_t length,
                                     char **ret,
                                     size_t *ret_len,
                                     uint64_t *ret_size,
                                     struct b4_error *err);
B4_PUBLIC int b4_fs_stat_flags(struct b4_fs *fs,
                               const char *path,
                               unsigned flags,
                               struct b4_stat *ret,
                               struct b4_error *err);
B4_PUBLIC int b4_fs_list_dir_flags(struct b4_fs *fs,
                                   const char *path,
                                   unsigned flags,
                                   char ***ret_names,
                                   struct b4_error *err);
B4_PUBLIC int b4_fs_write_file_flags(struct b4_fs *fs,
                                     const char *path,
                                     unsigned flags,
                                     const void *data,
                                     size_t len,
                                     struct b4_error *err);
B4_PUBLIC int b4_fs_touch_flags(struct b4_fs *fs,
                                const char *path,
                                unsigned flags,
                                struct b4_error *err);

/* ---- exec ------------------------------------------------------------------------------ */

enum b4_exec_stream {
        B4_EXEC_STDOUT = 1,
        B4_EXEC_STDERR = 2,
};

/*
 * Output as it arrives (b4_exec_req.on_output): @len > 0 bytes of @stream, in order, never
 * capped (the result's capture is, as always). Called on the thread that runs the command
 * (the caller's for the built-in providers), never concurrently for one command; it may block
 * (the command's pipes then fill and the command waits: backpressure) but should not for long.
 */
typedef void b4_exec_output_fn(void *userdata,
                               enum b4_exec_stream stream,
                               const char *data,
                               size_t len);

struct b4_exec_req {
        const char *command;          /* run as `sh -c <command>`; borrowed */
        const char *cwd;              /* NULL = the workspace root */
        const struct b4_env_var *env; /* extra variables over the policy's env; may be NULL */
        size_t n_env;
        uint64_t timeout_ms;      /* 0 = the policy's resources.timeout_ms (0 = none) */
        size_t output_cap;        /* per stream; 0 = the policy's output_cap */
        struct b4_cancel *cancel; /* optional; firing it kills the command */
        /* Optional: every chunk of output as it comes (a provider that cannot stream calls it
         * once per stream with the captured output at the end: docs/tools.md). */
        b4_exec_output_fn *on_output;
        void *output_userdata;
};

/* Which members of struct b4_exec_usage a provider filled (the others are the wire's null). */
enum b4_exec_usage_known {
        B4_USAGE_CPU = 1 << 0,
        B4_USAGE_PEAK_MEMORY = 1 << 1,
        B4_USAGE_MAX_PROCESSES = 1 << 2,
        B4_USAGE_OOM = 1 << 3,
};

/* What a command used, from its own cgroup (native) or container (Docker). */
struct b4_exec_usage {
        unsigned known;             /* enum b4_exec_usage_known bits; 0 = nothing known */
        uint64_t cpu_ms;            /* user + system CPU time */
        uint64_t peak_memory_bytes; /* the highest memory use seen */
        uint64_t max_processes;     /* the most tasks alive at once */
        bool oom_killed;            /* the OOM killer killed a process of it */
};

struct b4_exec_result {
        char *out; /* owned stdout, NUL-terminated past out_len */
        size_t out_len;
        char *errout; /* owned stderr, NUL-terminated past errout_len */
        size_t errout_len;
        int exit_code;  /* the command's; 128+N when killed by signal N; 124 on timeout */
        bool timed_out; /* the timeout fired (stderr carries the seeds' line) */
        bool cancelled; /* the cancel token fired */
        bool truncated; /* a stream went past output_cap (head and tail kept) */
        uint64_t duration_ms;
        uint64_t timeout_ms;        /* the timeout that applied (0 = none) */
        struct b4_exec_usage usage; /* accounting; a provider that knows nothing leaves it 0 */
};

/* The policy's bounds on a command, which per-call options may lower but not raise. */
struct b4_exec_bounds {
        uint64_t timeout_ms; /* resources.timeout_ms; 0 = no timeout (any per-call one goes) */
        size_t output_cap;   /* per stream; the policy's output_cap or B4_DEFAULT_OUTPUT_CAP */
};

/** b4_exec_result_clear() - free what @r owns and zero it. */
B4_PUBLIC void b4_exec_result_clear(struct b4_exec_result *r);

/* ---- sandbox handle -------------------------------------------------------------------- */

/* Embedders read fs, thread_id and workspace_root; core is the lifecycle's. */
struct b4_sandbox {
        struct b4_fs fs;              /* full filesystem (read + write members) */
        char *thread_id;              /* owned; the logical thread id, never the hash */
        char *workspace_root;         /* owned; absolute in-sandbox path */
        bool reattached;              /* set by the provider at acquire: its compute was found
                                         running (a kept keeper or container), not started */
        struct b4_sandbox_core *core; /* owned: ops, references, lifecycle entry */
};

/** b4_sandbox_ref() - take a reference. Return: @sb. */
B4_PUBLIC struct b4_sandbox *b4_sandbox_ref(struct b4_sandbox *sb);
/** b4_sandbox_unref() - drop a reference (NULL ok); frees the handle at zero. Return: NULL. */
B4_PUBLIC struct b4_sandbox *b4_sandbox_unref(struct b4_sandbox *sb);
/** b4_sandbox_fs() - the handle's filesystem; borrowed for the handle's lifetime. */
B4_PUBLIC struct b4_fs *b4_sandbox_fs(struct b4_sandbox *sb);
/**
 * b4_sandbox_exec_bounds() - the bounds of the policy the handle was acquired with (all 0 on a
 * handle b4_provider_acquire() did not return).
 */
B4_PUBLIC struct b4_exec_bounds b4_sandbox_exec_bounds(const struct b4_sandbox *sb);
/**
 * b4_sandbox_exec() - run @req, under the thread's shared lease (a provider may hold it only
 * while the command starts), retried once after a recovery when the sandbox was lost before
 * the command started. A timeout adds "Command timed out after <s>s (resources.timeoutMs:
 * <ms>ms)." to @ret->errout.
 * @ret: filled on success (owned by the caller, b4_exec_result_clear())
 * Return: 0 (see @ret->exit_code) or -errno.
 */
B4_PUBLIC int b4_sandbox_exec(struct b4_sandbox *sb,
                              const struct b4_exec_req *req,
                              struct b4_exec_result *ret,
                              struct b4_error *err);

/* ---- reader ---------------------------------------------------------------------------- */

/* A read-only view of a thread's workspace: fs has no write members, there is no exec. */
struct b4_reader {
        struct b4_fs fs;
        const struct b4_reader_ops *ops;
        char *thread_id;      /* owned */
        char *workspace_root; /* owned */
        atomic_bool closed;   /* set by b4_reader_close(); reads then fail -EBADF */
};

struct b4_reader_req {
        const char *thread_id;
        struct b4_cancel *cancel;
        bool run_as_non_root; /* default true: read as uid:gid */
        uint32_t uid, gid;
};

/** b4_reader_fs() - the reader's read-only filesystem; borrowed until b4_reader_free(). */
B4_PUBLIC struct b4_fs *b4_reader_fs(struct b4_reader *r);
B4_PUBLIC int b4_reader_close(struct b4_reader *r, struct b4_error *err);
/** b4_reader_free() - close (errors ignored) and free. Return: NULL. */
B4_PUBLIC struct b4_reader *b4_reader_free(struct b4_reader *r);

/* ---- provider -------------------------------------------------------------------------- */

enum b4_enforcement {
        B4_ENFORCED = 0,
        B4_NOT_ENFORCED = 1, /* configured but cannot be enforced here: always also a warning */
        B4_NOT_APPLICABLE = 2,
        B4_NOT_SET = 3, /* a limit the configuration does not set: nothing to enforce */
};

struct b4_control {
        char *name; /* owned; e.g. "seccomp", "memory limit", "network deny" */
        enum b4_enforcement state;
        char *detail; /* owned; how, or why not */
};

struct b4_preflight {
        bool ok;                     /* false fails `b4box check` */
        char *detail;                /* owned; e.g. "Docker 24.0.7" or why not ok */
        char **warnings;             /* owned strv */
        struct b4_control *controls; /* owned array: the enforcement table */
        size_t n_controls;
};

B4_PUBLIC void b4_preflight_clear(struct b4_preflight *p);
/**
 * b4_preflight_apply_policy() - turn a provider's preflight into the check rows of @policy
 * (src/lib/core/check-rows.c; `b4box check` and GET /threads/{id}/check): each limit row the
 * provider reports (memory, cpu, pids, disk, command timeout) leads with the value @policy
 * sets, or becomes B4_NOT_SET when it sets none (its NOT ENFORCED warning dropped); the
 * network list row leads with the entry count, and is NOT ENFORCED when the provider has no
 * such row. An n/a row stays.
 * Return: 0, -EINVAL, -ENOMEM (@pf partly rewritten).
 */
B4_PUBLIC int b4_preflight_apply_policy(struct b4_preflight *pf, const struct b4_policy *policy);
/** b4_enforcement_name() - "enforced", "not_enforced", "not_set" or "n/a"; static. */
B4_PUBLIC const char *b4_enforcement_name(enum b4_enforcement s);

struct b4_acquire_req {
        const char *thread_id;          /* logical id; any non-empty UTF-8 string */
        const struct b4_policy *policy; /* borrowed for the call */
        const char *image;              /* resolved image identity; NULL = provider default */
        struct b4_cancel *cancel;       /* optional */
};

struct b4_provider {
        const struct b4_provider_ops *ops;
        char *scope; /* owned; part of every resource name (not authentication) */
        struct b4_lifecycle *lifecycle; /* core's per-thread registry and gate */
};

/* ---- background processes (docs/http-api.md "Background processes") ---- */

/*
 * A background process of a thread's sandbox: started, then inspected, fed, signalled and
 * waited on by later calls, holding no run slot. Its output (stdout and stderr interleaved,
 * as `2>&1` would) is spooled by the provider, bounded (B4_PROC_SPOOL_MAX: past it output
 * is discarded and the record says truncated), and readable from any offset while the
 * record lasts. Release and destroy kill a thread's processes; their records and spools stay
 * until destroy (or b4_sandbox_proc_forget()), so they can still be read. Numbers (pid) are
 * b4box's, per thread, never reused while a record lasts (not the pid inside the sandbox).
 */
#define B4_PROC_SPOOL_MAX   (64u * 1024 * 1024) /* output bytes kept per process */
#define B4_PROC_MAX_RECORDS 256u                /* processes (live or not) per thread */
#define B4_PROC_TAG_MAX     128u                /* bytes */

struct b4_proc_req {
        const char *command;          /* `sh -c <command>`; borrowed */
        const char *cwd;              /* NULL = the workspace root */
        const struct b4_env_var *env; /* extra variables over the policy's env; may be NULL */
        size_t n_env;
        bool stdin_pipe;     /* stdin is a pipe fed by b4_sandbox_proc_stdin(); else empty */
        const char *tag;     /* optional label, <= B4_PROC_TAG_MAX bytes */
        uint64_t timeout_ms; /* 0 = none (the policy's timeout is for runBash) */
};

struct b4_proc_info {
        uint64_t pid;
        char *tag;     /* owned; NULL = none */
        char *command; /* owned */
        bool running;
        bool timed_out;               /* killed at its timeout (exit code 124) */
        bool released;                /* killed by a release or destroy of its sandbox */
        bool stdin_open;              /* started with stdin_pipe and no eof yet */
        bool truncated;               /* output went past B4_PROC_SPOOL_MAX and was discarded */
        int exit_code;                /* -1 while running; 128 + signal when a signal ended it */
        int64_t started_ms, ended_ms; /* realtime; ended_ms 0 while running */
        uint64_t bytes;               /* output bytes in the spool */
};

/** b4_proc_info_clear() - free the members (NULL ok). */
B4_PUBLIC void b4_proc_info_clear(struct b4_proc_info *i);
/** b4_proc_infos_free() - clear and free an array of @n. Return: NULL. */
B4_PUBLIC struct b4_proc_info *b4_proc_infos_free(struct b4_proc_info *v, size_t n);

/*
 * The calls. Each runs under the thread's shared lease (a paused thread is resumed first).
 * Errors: -EOPNOTSUPP (B4_E2001-free, "Sandbox provider \"<name>\" does not support
 * background processes"), -ESRCH (no such pid), -EINVAL (a bad argument), -EPIPE (stdin
 * closed or never opened), -ENOSPC (B4_PROC_MAX_RECORDS reached), provider errors.
 */
B4_PUBLIC bool b4_sandbox_has_procs(const struct b4_sandbox *sb);
B4_PUBLIC int b4_sandbox_proc_start(struct b4_sandbox *sb,
                                    const struct b4_proc_req *req,
                                    struct b4_proc_info *ret,
                                    struct b4_error *err);
/* Every record, oldest first (*ret: b4_proc_infos_free()). */
B4_PUBLIC int b4_sandbox_proc_list(struct b4_sandbox *sb,
                                   struct b4_proc_info **ret,
                                   size_t *ret_n,
                                   struct b4_error *err);
B4_PUBLIC int b4_sandbox_proc_get(struct b4_sandbox *sb,
                                  uint64_t pid,
                                  struct b4_proc_info *ret,
                                  struct b4_error *err);
/* Up to @max bytes of the spool from @offset (*ret heap, NUL-terminated past *ret_len; an
 * offset at or past the end gives 0 bytes); @ret_info (optional) is the record read with
 * it, so "exited and nothing more" is one answer. */
B4_PUBLIC int b4_sandbox_proc_read(struct b4_sandbox *sb,
                                   uint64_t pid,
                                   uint64_t offset,
                                   size_t max,
                                   char **ret,
                                   size_t *ret_len,
                                   struct b4_proc_info *ret_info,
                                   struct b4_error *err);
/* Write to its stdin (all of it, or an error), then close it with @eof. */
B4_PUBLIC int b4_sandbox_proc_stdin(struct b4_sandbox *sb,
                                    uint64_t pid,
                                    const void *data,
                                    size_t len,
                                    bool eof,
                                    struct b4_error *err);
/* Send @sig to every process it started (its own cgroup on native). Exited: success. */
B4_PUBLIC int b4_sandbox_proc_signal(struct b4_sandbox *sb,
                                     uint64_t pid,
                                     int sig,
                                     struct b4_error *err);
/* Wait until it exits, @timeout_ms at most (0 = only look), or @cancel fires; *ret is the
 * record either way (running = false when it ended). Return: 0, -ECANCELED, as above. */
B4_PUBLIC int b4_sandbox_proc_wait(struct b4_sandbox *sb,
                                   uint64_t pid,
                                   uint64_t timeout_ms,
                                   struct b4_cancel *cancel,
                                   struct b4_proc_info *ret,
                                   struct b4_error *err);
/* Kill it if running and remove its record and spool. */
B4_PUBLIC int b4_sandbox_proc_forget(struct b4_sandbox *sb, uint64_t pid, struct b4_error *err);

/** b4_provider_name() - "native", ...; static string. */
B4_PUBLIC const char *b4_provider_name(const struct b4_provider *p);
/**
 * b4_provider_acquire() - create or reattach the thread's sandbox
 * @ret: a new reference owned by the caller (b4_sandbox_unref())
 * Return: 0, -EINVAL (empty thread id), -ECANCELED, -EIO and others with B4_E2001 set.
 */
B4_PUBLIC int b4_provider_acquire(struct b4_provider *p,
                                  const struct b4_acquire_req *req,
                                  struct b4_sandbox **ret,
                                  struct b4_error *err);
B4_PUBLIC int b4_provider_release(struct b4_provider *p,
                                  const char *thread_id,
                                  struct b4_error *err);
B4_PUBLIC int b4_provider_destroy(struct b4_provider *p,
                                  const char *thread_id,
                                  struct b4_error *err);
/** b4_provider_kept() - whether @thread_id's compute runs without a handle here, so the next
 * acquire reattaches it (native: a kept keeper); false for providers that cannot tell. */
B4_PUBLIC bool b4_provider_kept(struct b4_provider *p, const char *thread_id);
/** b4_provider_preflight() - without a preflight member: ok with no controls. */
B4_PUBLIC int b4_provider_preflight(struct b4_provider *p,
                                    struct b4_preflight *ret,
                                    struct b4_error *err);
/**
 * b4_provider_open_reader() - a read-only view of the thread's workspace
 * Return: 0; -EOPNOTSUPP "Sandbox provider \"<name>\" does not support reading a thread
 * workspace"; -ENOENT (B4_E2001) when the thread has no workspace storage.
 */
B4_PUBLIC int b4_provider_open_reader(struct b4_provider *p,
                                      const struct b4_reader_req *req,
                                      struct b4_reader **ret,
                                      struct b4_error *err);
B4_PUBLIC bool b4_provider_has_reader(const struct b4_provider *p);
B4_PUBLIC int b4_provider_resolve_image(struct b4_provider *p,
                                        const char *reference,
                                        char **ret_identity,
                                        struct b4_error *err);
/*
 * Managed workspaces whose record lives with their storage (docs/workspaces.md "The record
 * on the storage"). A provider with the workspace_record member (provider-impl.h;
 * Kubernetes: the PVC annotation b4box.io/workspace-record) keeps what the runtime
 * materialised next to the bytes, so storage deleted or replaced behind b4box is seen at
 * the next acquire instead of an empty workspace taken as ready. Without it (native,
 * docker, fake) the runtime's store is the only record, as before.
 */
#define B4_WORKSPACE_RECORD_MAX (256u * 1024u) /* Kubernetes' total annotation limit */

/* What a thread's storage says of its managed workspace (b4_provider_workspace_check()). */
enum b4_storage_state {
        B4_STORAGE_READY = 0, /* the record of this intent is there: the storage holds it */
        B4_STORAGE_EMPTY,     /* the last acquire made the storage: nothing is in it */
        B4_STORAGE_GONE,      /* the storage is being deleted: destroy, acquire again */
        B4_STORAGE_PENDING,   /* storage this acquire did not make, without a record: made
                               * before records were kept, or by hand; nothing says what it
                               * holds (the runtime refuses it rather than guess) */
};

/* What the runtime publishes once a workspace is materialised. Borrowed for the call. */
struct b4_workspace_record {
        const char *intent;        /* the admission's intent digest: which workspace it is */
        const char *source_digest; /* the source materialised */
        const char *image;         /* the launch identity it runs; NULL = provider default */
};

/** b4_provider_keeps_workspace_record() - whether @p has the workspace_record member. */
B4_PUBLIC bool b4_provider_keeps_workspace_record(const struct b4_provider *p);
/**
 * b4_provider_workspace_check() - what the storage of @thread_id (acquired: call it after
 * b4_provider_acquire()) holds, against @intent; under the thread's exclusive lease. A
 * record of @intent not marked ready counts as none (PENDING).
 * Return: 0 with *ret set; -EEXIST (B4_E2001, "Workspace conflict: ...") when the storage
 * holds another intent's record; -EOPNOTSUPP without the member; -ENOTCONN when the thread
 * is not acquired; the provider's errors.
 */
B4_PUBLIC int b4_provider_workspace_check(struct b4_provider *p,
                                          const char *thread_id,
                                          const char *intent,
                                          enum b4_storage_state *ret,
                                          struct b4_error *err);
/**
 * b4_provider_workspace_publish() - record @rec as the ready workspace of @thread_id's
 * storage (acquired); under the thread's exclusive lease. Publishing the record already
 * there is success.
 * Return: 0; -E2BIG when the record would pass B4_WORKSPACE_RECORD_MAX; -EEXIST (another
 * intent's record is there); -EOPNOTSUPP, -ENOTCONN as above; the provider's errors.
 */
B4_PUBLIC int b4_provider_workspace_publish(struct b4_provider *p,
                                            const char *thread_id,
                                            const struct b4_workspace_record *rec,
                                            struct b4_error *err);
/**
 * b4_provider_sweep() - reconcile after a crash: remove the compute, workspace and every
 * host object (processes, cgroups, network devices and rules, id claims, records) of each
 * thread this provider instance holds that is not in @live_thread_ids, so a thread whose
 * deletion was interrupted, or whose creation left half a sandbox, leaves nothing behind.
 * Live threads keep their workspace; their compute is kept only where it can be reattached.
 * Call it with no acquire, release or destroy in flight (a server calls it at start).
 * @live_thread_ids: NULL-terminated; borrowed. Thread ids, not resource ids.
 * Return: the number of threads whose leftovers were removed; -EOPNOTSUPP ("Sandbox
 * provider \"<name>\" cannot sweep") without a sweep member; -EINVAL (NULL list); -errno.
 */
B4_PUBLIC int b4_provider_sweep(struct b4_provider *p,
                                char *const *live_thread_ids,
                                struct b4_error *err);
/**
 * b4_provider_freeze() - stop (@frozen) or resume every process of the thread's sandbox, so a
 * read sees one instant of its workspace (docs/inspect.md)
 * Return: 0; -EOPNOTSUPP when the provider cannot freeze; -errno.
 */
B4_PUBLIC int b4_provider_freeze(struct b4_provider *p,
                                 const char *thread_id,
                                 bool frozen,
                                 struct b4_error *err);

/**
 * b4_provider_network_audit() - thread @thread_id's network audit (docs/http-api.md,
 * GET /threads/{id}/network): one JSON object {thread, provider, enforced, reason?, mode?,
 * dns: {queries, admitted, refused, failed, dropped, events: [...]}, destinations: [...],
 * denials: [...], truncated?}. A provider without an audit, or a thread with nothing
 * audited (no network list, not acquired), gives that shape with "enforced": false, the
 * reason, zero totals and empty lists.
 * @ret_json: new, NUL-terminated; the caller frees it with free().
 * Return: 0; -EINVAL (no provider or id); -EIO (the audit exists but could not be read:
 * message in @err); -ENOMEM.
 */
B4_PUBLIC int b4_provider_network_audit(struct b4_provider *p,
                                        const char *thread_id,
                                        char **ret_json,
                                        struct b4_error *err);

/**
 * b4_provider_pause() - pause (@paused) a thread's live sandbox keeping its processes (every
 * one stopped, the freezer of b4_provider_freeze()), or resume it. While paused, the thread's
 * next handle operation (a command, a file call, a background process call) resumes it first,
 * transparently; release and destroy resume it before they end it. Pausing a paused thread or
 * resuming a running one is success. Takes the thread's exclusive lease.
 * Return: 0; -ENOENT (no live sandbox to pause); -EOPNOTSUPP (the provider cannot freeze);
 * -EBUSY (the freezer did not settle), -errno.
 */
B4_PUBLIC int b4_provider_pause(struct b4_provider *p,
                                const char *thread_id,
                                bool paused,
                                struct b4_error *err);
/** b4_provider_paused() - whether the thread is paused, since when (realtime ms; optional). */
B4_PUBLIC bool b4_provider_paused(struct b4_provider *p,
                                  const char *thread_id,
                                  int64_t *ret_since_ms);

#define B4_PAUSE_BUCKETS 8
/** b4_pause_bucket_us() - the latency histogram's upper bound @i (< B4_PAUSE_BUCKETS), in
 * microseconds: 500, 1000, 2000, 5000, 10000, 25000, 1e5, 1e6; 0 past the last. */
B4_PUBLIC uint64_t b4_pause_bucket_us(size_t i);

struct b4_pause_latency {
        uint64_t count, sum_us;
        uint64_t buckets[B4_PAUSE_BUCKETS]; /* cumulative: count of latencies <= the bound */
};

struct b4_pause_stats {
        struct b4_pause_latency pause, resume; /* resumes include the transparent ones */
};

/** b4_provider_pause_stats() - every pause and resume since the provider was made. */
B4_PUBLIC void b4_provider_pause_stats(struct b4_provider *p, struct b4_pause_stats *ret);

/** b4_provider_free() - NULL ok. Does not release live sandboxes. Return: NULL. */
B4_PUBLIC struct b4_provider *b4_provider_free(struct b4_provider *p);

/**
 * b4_resource_id() - the deterministic resource name of a thread in a scope (reference §3.2):
 * the first 40 hex of sha256 over the compact JSON ["b4-sandbox-scope-v1", scope, thread_id].
 * @ret_hex: 41 bytes, filled on success
 * Return: 0, -EINVAL (NULL, empty scope, or invalid UTF-8), -ENOMEM.
 */
B4_PUBLIC int b4_resource_id(const char *scope, const char *thread_id, char ret_hex[41]);

/**
 * b4_with_reader() - open a reader, run @fn, always close it (reference §1.4)
 * When both @fn and the close fail the message is "Workspace read and reader close failed:
 * <body error>; <close error>" and the body's errno is returned.
 */
typedef int b4_reader_fn(struct b4_reader *r, void *userdata, struct b4_error *err);
B4_PUBLIC int b4_with_reader(struct b4_provider *p,
                             const struct b4_reader_req *req,
                             b4_reader_fn *fn,
                             void *userdata,
                             struct b4_error *err);
