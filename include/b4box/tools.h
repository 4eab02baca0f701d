/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The workspace tools (reference §10.1-10.3) as an embedder sees them: readFile, writeFile,
 * editFile, listDir and runBash over one thread's sandbox, behind the path jail and the
 * permission gates. A run calls them (b4_run_call(), b4box/runtime.h); a caller holding a
 * sandbox of its own (the CLI's probe) may make a tools context over it (b4_tools_new()).
 *
 *   b4_run_call(run, "readFile", args, &result)   ->  result.ok, result.code, result.doc
 *
 * Arguments arrive parsed (a JSON object) and results leave typed: whether the call
 * succeeded, the error code, and the result document, which the edge serialises (docs/tools.md
 * has the exact shapes):
 *   {"ok":true,"result":<tool result>}
 *   {"ok":false,"error":{"code":"...","message":"..."}}
 *   {"ok":false,"error":{"code":"permission_required",...},"permissionRequest":{...}}
 * A tool failure is a result, not a C error: the calls return 0 for all three.
 * The JSON values are the library's (struct jv, src/lib/json); the server and the CLI use it.
 *
 * Permissions: a struct b4_permissions holds a mode and allow/deny pattern lists keyed by
 * "bash", "readFile", "writeFile", "listDir" and "tool"; the runtime builds the app's from
 * the config, or takes the embedder's (b4_runtime_options.permissions).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/config.h"
#include "b4box/error.h"
#include "b4box/provider.h"

struct b4_cancel;
struct b4_sandbox;
struct b4_permissions;
struct b4_grant_store;
struct b4_tools;
struct jv;

#define B4_TOOLS_DEFAULT_READ_CAP (256u * 1024) /* bytes; readFile/editFile size cap */
/* readFile's cap under tool-outputs/ (the reference reads those uncapped): 32 MiB, so that
 * even escaped six-fold as JSON ("\u0000") one read stays inside a run's 256 MiB response. */
#define B4_TOOLS_TOOL_OUTPUT_CAP (32u * 1024 * 1024)

/* ---- permissions ----------------------------------------------------------------------- */

/* enum b4_permission_mode (interactive, non-interactive, bypass) is in b4box/config.h. */

enum b4_permission_list {
        B4_PERMISSION_LIST_ALLOW = 0,
        B4_PERMISSION_LIST_DENY = 1,
};

/**
 * b4_permission_mode_from_string() - parse "interactive", "non-interactive" or "bypass"
 * Return: 0, -EINVAL.
 */
B4_PUBLIC int b4_permission_mode_from_string(const char *s, enum b4_permission_mode *ret);
/** b4_permission_mode_to_string() - static string. */
B4_PUBLIC const char *b4_permission_mode_to_string(enum b4_permission_mode mode);
/**
 * b4_permissions_new() - an empty permission set (no allow or deny entries)
 * @ret: owned by the caller (b4_permissions_free())
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_permissions_new(enum b4_permission_mode mode, struct b4_permissions **ret);
/** b4_permissions_free() - NULL ok. Return: NULL. */
B4_PUBLIC struct b4_permissions *b4_permissions_free(struct b4_permissions *p);
/**
 * b4_permissions_add() - add a configured allow or deny pattern
 * @key:     bash, readFile, writeFile, listDir or tool
 * @pattern: copied; must be non-empty
 * Return: 0, -EINVAL (unknown key, empty pattern; message set), -ENOMEM.
 */
B4_PUBLIC int b4_permissions_add(struct b4_permissions *p,
                                 enum b4_permission_list list,
                                 const char *key,
                                 const char *pattern,
                                 struct b4_error *err);

/* ---- results --------------------------------------------------------------------------- */

/* The tools' own error codes (error.code; registry codes such as "B4_E3001" besides). */
#define B4_TOOL_UNKNOWN_TOOL        "unknown_tool"
#define B4_TOOL_INVALID_ARGUMENTS   "invalid_arguments"
#define B4_TOOL_ERROR               "tool_error"
#define B4_TOOL_PERMISSION_REQUIRED "permission_required"

/* The outcome of one call: what callers branch on, plus the document the wire carries. */
struct b4_tool_result {
        bool ok;
        /* NULL when ok; else error.code, a static string: one of the B4_TOOL_* codes above or
         * a registry code */
        const char *code;
        /* Owned: {"ok":true,"result":...} or {"ok":false,"error":{...}[,"permissionRequest"]} */
        struct jv *doc;
};

/** b4_tool_result_clear() - drop the document and zero @r. NULL ok. */
B4_PUBLIC void b4_tool_result_clear(struct b4_tool_result *r);

/* ---- a tools context over a sandbox of the caller's ------------------------------------ */

/* A context is not thread-safe: one caller at a time. A permission request it raises is
 * answered only through a run (b4_run_resume()); a context of its own is for callers that
 * ask no one (non-interactive or bypass mode, or no permissions). */

struct b4_tools_options {
        /* Borrowed, must outlive the context. NULL = no permission store: every gate allows
         * (the reference's legacy behaviour); callers normally pass one. */
        struct b4_permissions *app;
        /* Borrowed; the thread's own allow/deny lists (per-thread store), or NULL to use the
         * app's lists. Its mode is ignored: the app's mode applies. */
        struct b4_permissions *thread;
        /* Borrowed; where a per-thread store records "Always" answers (a grant store is the
         * library's own, the runtime's). NULL with @thread set: "Always" acts as "once". */
        struct b4_grant_store *grants;
        /* readFile/editFile size cap in bytes; 0 = B4_TOOLS_DEFAULT_READ_CAP. */
        uint64_t read_cap;
        /* NULL-terminated tool names whose every call passes the "tool" gate first
         * (tools.approve); borrowed. */
        const char *const *approve_tools;
        /* Borrowed; firing it kills a running runBash command. NULL = none. */
        struct b4_cancel *cancel;
        /* Optional: a runBash command's output as it comes (b4_exec_req.on_output). */
        b4_exec_output_fn *on_output;
        void *output_userdata;
};

/**
 * b4_tools_new() - a tools context over one thread's sandbox
 * @sb:   a reference is taken; the workspace root is sb->workspace_root
 * @opts: copied (the pointers in it stay borrowed); NULL = all defaults
 * @ret:  owned by the caller (b4_tools_free())
 * Return: 0, -EINVAL (workspace root not absolute), -ENOMEM.
 */
B4_PUBLIC int b4_tools_new(struct b4_sandbox *sb,
                           const struct b4_tools_options *opts,
                           struct b4_tools **ret,
                           struct b4_error *err);
/**
 * b4_tools_free() - drop the sandbox reference and the requests still pending. NULL ok.
 * Return: NULL.
 */
B4_PUBLIC struct b4_tools *b4_tools_free(struct b4_tools *t);

/**
 * b4_tools_call() - run one tool
 * @name: readFile, writeFile, editFile, listDir or runBash
 * @args: the arguments, a JSON object (NULL = {}); borrowed (a permission request keeps a
 *        reference)
 * @ret:  filled on success; the caller clears it (b4_tool_result_clear())
 * Return: 0 whenever a result was produced, including tool failures, denials and permission
 * requests; -EINVAL (NULL @t/@name/@ret), -ENOMEM.
 */
B4_PUBLIC int b4_tools_call(struct b4_tools *t,
                            const char *name,
                            const struct jv *args,
                            struct b4_tool_result *ret,
                            struct b4_error *err);
/**
 * b4_tools_check() - what b4_tools_call() would refuse about @args before running anything
 * (their shape, runBash's per-call bounds), for a caller that must answer before it starts
 * (a streamed reply). Gates and paths are not checked: the call still does that.
 * @ret: ok, or the invalid_arguments result the call would give (the caller clears it)
 * Return: 0, -EINVAL (NULL @t/@name/@ret), -ENOMEM.
 */
B4_PUBLIC int b4_tools_check(struct b4_tools *t,
                             const char *name,
                             const struct jv *args,
                             struct b4_tool_result *ret,
                             struct b4_error *err);

/* ---- the handle's filesystem, through the jail (src/lib/tools/fs.c) --------------------- */

/*
 * Typed file operations over a tools context, for clients that implement a sandbox handle
 * over b4box (POST /threads/{id}/fs/{op}, docs/http-api.md). Each one passes the same path
 * jail and permission gates as the tools (docs/tools.md, "Path jail"): a read is gated as
 * readFile (stat, lstat, realPath, read) or listDir (list, walk), a change as writeFile
 * (write, mkdir, remove, touch); lstat and remove keep a symlink leaf (never followed), as
 * writeFile does. A gate never parks a permission request here: interactive mode's "ask" is
 * -EAGAIN (message "permission required: <path>"), answered by the caller's own means.
 *
 * @path: non-empty, relative to the workspace root or absolute, as for the tools.
 * Errors (negative errno, message in @err in the tools' words, "<op> <abs>: <reason>"):
 * -EINVAL (empty path; a read or remove of a non-regular file), -ENOENT, -EISDIR, -ENOTDIR,
 * -ENOTEMPTY, -EEXIST, -ELOOP ("refused: a symbolic link is in the way", or unresolvable),
 * -EXDEV ("refused: the path leads out of the workspace"), -ENAMETOOLONG, -EFBIG/-E2BIG (a
 * bound), -EACCES (B4_E3001 from a gate; else the filesystem's), -EPERM, -EAGAIN (ask),
 * -ENOMEM, and the provider's (-EIO, -EOPNOTSUPP).
 */

/* The most one b4_tools_fs_read() returns; more from @offset fails -EFBIG. */
#define B4_TOOLS_FS_READ_MAX (16u * 1024 * 1024)

/* One child of a directory (b4_tools_fs_list()). */
struct b4_tools_dirent {
        char *name;             /* owned; the raw name */
        enum b4_file_kind kind; /* of its lstat */
};

/** b4_tools_dirents_free() - free @n entries and the array. Return: NULL. */
B4_PUBLIC struct b4_tools_dirent *b4_tools_dirents_free(struct b4_tools_dirent *d, size_t n);

/** b4_tools_fs_stat() - stat (@follow) or lstat of @path; @ret owned (b4_stat_clear()). */
B4_PUBLIC int b4_tools_fs_stat(struct b4_tools *t,
                               const char *path,
                               bool follow,
                               struct b4_stat *ret,
                               struct b4_error *err);
/**
 * b4_tools_gate_command() - what runBash decides before it runs @command, for a command run
 * another way (a background process, b4_runtime_proc_start()): the tool's approval, @cwd (may
 * be NULL) through the path jail as runBash's cwd, the command gate. Never parks a request.
 * @ret_cwd: the jailed cwd to run in (heap), NULL when @cwd is NULL
 * Return: 0; -EACCES (denied, B4_E3001 message); -EPERM (interactive mode would ask);
 * -EINVAL, -ENOTDIR, -ENOENT (a bad cwd); -ENOMEM.
 */
B4_PUBLIC int b4_tools_gate_command(struct b4_tools *t,
                                    const char *command,
                                    const char *cwd,
                                    char **ret_cwd,
                                    struct b4_error *err);
/** b4_tools_fs_realpath() - the canonical path (links resolved, a missing tail tolerated). */
B4_PUBLIC int b4_tools_fs_realpath(struct b4_tools *t,
                                   const char *path,
                                   char **ret,
                                   struct b4_error *err);
/**
 * b4_tools_fs_list() - the direct children of a directory, sorted bytewise, with the kind of
 * each; more than B4_LIST_MAX_ENTRIES fails -E2BIG (never a truncated list)
 */
B4_PUBLIC int b4_tools_fs_list(struct b4_tools *t,
                               const char *path,
                               struct b4_tools_dirent **ret,
                               size_t *ret_n,
                               struct b4_error *err);
/**
 * b4_tools_fs_walk() - the subtree below @path (b4_fs_walk(): depth-first, children sorted,
 * entries lstat'ed, direct children named in @prune not descended); more than @max_entries
 * fails -E2BIG "Workspace entries limit exceeded"
 */
B4_PUBLIC int b4_tools_fs_walk(struct b4_tools *t,
                               const char *path,
                               size_t max_entries,
                               char *const *prune,
                               struct b4_walk_entry **ret,
                               size_t *ret_n,
                               struct b4_error *err);
/**
 * b4_tools_fs_read() - at most @length bytes (UINT64_MAX = to the end) of a regular file
 * from byte @offset, at most B4_TOOLS_FS_READ_MAX: when more remain from @offset and @length
 * asks for them, -EFBIG "read <abs>: more than <max> bytes from offset <o>" (nothing returned)
 * @ret: owned, NUL-terminated past *ret_len; @ret_size: the file's size
 */
B4_PUBLIC int b4_tools_fs_read(struct b4_tools *t,
                               const char *path,
                               uint64_t offset,
                               uint64_t length,
                               char **ret,
                               size_t *ret_len,
                               uint64_t *ret_size,
                               struct b4_error *err);
/** b4_tools_fs_write() - replace the file atomically with @len bytes (parents created). */
B4_PUBLIC int b4_tools_fs_write(
        struct b4_tools *t, const char *path, const void *data, size_t len, struct b4_error *err);
/** b4_tools_fs_mkdir() - create the directory and its parents; an existing one is success. */
B4_PUBLIC int b4_tools_fs_mkdir(struct b4_tools *t, const char *path, struct b4_error *err);
/**
 * b4_tools_fs_remove() - remove a file, symlink or empty directory; a missing path is
 * success. The workspace root itself is refused (-EPERM).
 */
B4_PUBLIC int b4_tools_fs_remove(struct b4_tools *t, const char *path, struct b4_error *err);
/** b4_tools_fs_touch() - set the mtime to now, creating an empty file when missing. */
B4_PUBLIC int b4_tools_fs_touch(struct b4_tools *t, const char *path, struct b4_error *err);
