/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The workspace tools (reference §10.1-10.3): readFile, writeFile, editFile, listDir and
 * runBash over one thread's sandbox, behind the path jail and the permission gates.
 *
 *   b4_tools_call(t, "readFile", args, &result)   ->  result.ok, result.code, result.doc
 *
 * Arguments arrive parsed (a JSON object) and results leave typed: whether the call
 * succeeded, the error code, and the result document, which the edge serialises (docs/tools.md
 * has the exact shapes):
 *   {"ok":true,"result":<tool result>}
 *   {"ok":false,"error":{"code":"...","message":"..."}}
 *   {"ok":false,"error":{"code":"permission_required",...},"permissionRequest":{...}}
 * A tool failure is a result, not a C error: b4_tools_call() returns 0 for all three.
 * The JSON values are the library's (struct jv, src/lib/json); the server and the CLI use it.
 * A context is not thread-safe: one caller at a time (the runtime's run slot ensures it).
 *
 * Permissions: a struct b4_permissions holds a mode and allow/deny pattern lists keyed by
 * "bash", "readFile", "writeFile", "listDir" and "tool". A tools context consults either
 * the app's permissions, or (when the thread has its own) the per-thread store: the thread's
 * lists plus the app's denials plus the thread's recorded "Always" grants.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/config.h"
#include "b4box/error.h"

struct b4_cancel;
struct b4_sandbox;
struct b4_permissions;
struct b4_grant_store;
struct b4_tools;

#define B4_TOOLS_DEFAULT_READ_CAP (256u * 1024) /* bytes; readFile/editFile size cap */
/* readFile's cap under tool-outputs/ (the reference reads those uncapped): 32 MiB, so that
 * even escaped six-fold as JSON ("\u0000") one read stays inside a run's 256 MiB response. */
#define B4_TOOLS_TOOL_OUTPUT_CAP   (32u * 1024 * 1024)
#define B4_MAX_THREAD_GRANT_LENGTH 4096 /* longest recordable tool key / pattern */

/* ---- permissions ----------------------------------------------------------------------- */

/* enum b4_permission_mode (interactive, non-interactive, bypass) is in b4box/config.h. */

enum b4_permission_decision {
        B4_PERMISSION_UNKNOWN = 0,
        B4_PERMISSION_ALLOW = 1,
        B4_PERMISSION_DENY = 2,
};

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
 * b4_permission_key_is_valid() - whether @key is one of bash, readFile, writeFile, listDir,
 * tool.
 */
B4_PUBLIC bool b4_permission_key_is_valid(const char *key);

/**
 * b4_permission_pattern_matches() - the matching rule of one pattern: exact for the "tool"
 * key, a byte prefix (candidate starts with pattern) for every other key.
 */
B4_PUBLIC bool b4_permission_pattern_matches(const char *key,
                                             const char *pattern,
                                             const char *candidate);

/**
 * b4_permission_suggest_command() - the first two whitespace-separated tokens of @command,
 * joined by one space ("" for a blank command)
 * @ret: owned by the caller (free())
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_permission_suggest_command(const char *command, char **ret);
/**
 * b4_permission_suggest_path() - @path itself when it ends in '/', else its parent with a
 * trailing '/' ("/" for a file at the top level)
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_permission_suggest_path(const char *path, char **ret);

/**
 * b4_permissions_new() - an empty permission set (no allow or deny entries)
 * @ret: owned by the caller (b4_permissions_free())
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_permissions_new(enum b4_permission_mode mode, struct b4_permissions **ret);
/** b4_permissions_free() - NULL ok. Return: NULL. */
B4_PUBLIC struct b4_permissions *b4_permissions_free(struct b4_permissions *p);
B4_PUBLIC enum b4_permission_mode b4_permissions_mode(const struct b4_permissions *p);

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

/**
 * b4_permissions_add_runtime() - record an app-level "Always" answer (the reference's
 * .b4/permissions.json, kept in memory here). Runtime entries count only in interactive mode.
 * Return: 0, -EINVAL, -ENOMEM.
 */
B4_PUBLIC int b4_permissions_add_runtime(struct b4_permissions *p,
                                         const char *key,
                                         const char *pattern,
                                         struct b4_error *err);

/**
 * b4_permissions_match() - deny first, then allow; no entry matching gives unknown. In
 * bypass mode the lists are empty (always unknown: the gates already allow).
 */
B4_PUBLIC enum b4_permission_decision b4_permissions_match(const struct b4_permissions *p,
                                                           const char *key,
                                                           const char *candidate);

/**
 * b4_permissions_from_config() - an app store from the `permissions` block of b4box.json
 * Return: 0 with *ret owned by the caller, -EINVAL (a bad pattern; message set), -ENOMEM.
 */
B4_PUBLIC int b4_permissions_from_config(const struct b4_permissions_config *pc,
                                         struct b4_permissions **ret,
                                         struct b4_error *err);

/* ---- per-thread grant storage ---------------------------------------------------------- */

/*
 * Where "Always" answers of a thread with its own permissions are recorded. The in-memory
 * store below is the default; the SQLite state store implements the same ops. Grants vanish
 * with the thread (forget).
 */
struct b4_grant_store_ops {
        /* Record (thread, key, pattern); recording twice is success. */
        int (*add)(struct b4_grant_store *s,
                   const char *thread_id,
                   const char *key,
                   const char *pattern,
                   struct b4_error *err);
        /* 1 when a recorded grant of (thread, key) matches @candidate under
         * b4_permission_pattern_matches(), 0 when none does, or -errno. */
        int (*match)(struct b4_grant_store *s,
                     const char *thread_id,
                     const char *key,
                     const char *candidate,
                     struct b4_error *err);
        /* Drop every grant of the thread; a thread without grants is success. */
        int (*forget)(struct b4_grant_store *s, const char *thread_id, struct b4_error *err);
        void (*free)(struct b4_grant_store *s);
};

struct b4_grant_store {
        const struct b4_grant_store_ops *ops;
};

/** b4_grant_store_memory_new() - an in-memory store. Return: 0, -ENOMEM. */
B4_PUBLIC int b4_grant_store_memory_new(struct b4_grant_store **ret);
B4_PUBLIC int b4_grant_store_add(struct b4_grant_store *s,
                                 const char *thread_id,
                                 const char *key,
                                 const char *pattern,
                                 struct b4_error *err);
B4_PUBLIC int b4_grant_store_match(struct b4_grant_store *s,
                                   const char *thread_id,
                                   const char *key,
                                   const char *candidate,
                                   struct b4_error *err);
B4_PUBLIC int b4_grant_store_forget(struct b4_grant_store *s,
                                    const char *thread_id,
                                    struct b4_error *err);
/** b4_grant_store_free() - NULL ok. Return: NULL. */
B4_PUBLIC struct b4_grant_store *b4_grant_store_free(struct b4_grant_store *s);

/**
 * b4_grant_is_recordable() - the reference's grant rule: a key or pattern that is empty,
 * whitespace-only, contains NUL (@len past strlen) or is longer than
 * B4_MAX_THREAD_GRANT_LENGTH bytes is not recorded (the call is allowed once, with a warning).
 */
B4_PUBLIC bool b4_grant_is_recordable(const char *s, size_t len);

/* ---- tools ----------------------------------------------------------------------------- */

struct b4_tools_options {
        /* Borrowed, must outlive the context. NULL = no permission store: every gate allows
         * (the reference's legacy behaviour); callers normally pass one. */
        struct b4_permissions *app;
        /* Borrowed; the thread's own allow/deny lists (per-thread store), or NULL to use the
         * app's lists. Its mode is ignored: the app's mode applies. */
        struct b4_permissions *thread;
        /* Borrowed; where a per-thread store records "Always" answers. NULL with @thread set:
         * "Always" acts as "once". */
        struct b4_grant_store *grants;
        /* readFile/editFile size cap in bytes; 0 = B4_TOOLS_DEFAULT_READ_CAP. */
        uint64_t read_cap;
        /* NULL-terminated tool names whose every call passes the "tool" gate first
         * (tools.approve); borrowed. */
        const char *const *approve_tools;
        /* Borrowed; firing it kills a running runBash command. NULL = none. */
        struct b4_cancel *cancel;
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

struct jv;

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
 * b4_tools_resume() - answer a permission request and finish its call
 * @interrupt_id: from the permissionRequest of an earlier result; each id answers once
 * @answer:       "once", "always" or "deny"
 * @ret:          the call's result (which may be another permission request)
 * Return: 0, -ENOENT (no such pending request), -EINVAL (bad answer), -ENOMEM.
 */
B4_PUBLIC int b4_tools_resume(struct b4_tools *t,
                              const char *interrupt_id,
                              const char *answer,
                              struct b4_tool_result *ret,
                              struct b4_error *err);

/**
 * b4_tools_last_request() - the newest pending permission request, for callers that prompt
 * without reading the result document (the CLI)
 * @ret_id:      its interrupt id
 * @ret_kind:    "command", "path" or "tool"
 * @ret_subject: the command, canonical path or tool name
 * @ret_pattern: the suggested pattern an "always" answer records
 * All borrowed until the next b4_tools_call()/b4_tools_resume(); any may be NULL.
 * Return: 0, -ENOENT (nothing pending).
 */
B4_PUBLIC int b4_tools_last_request(struct b4_tools *t,
                                    const char **ret_id,
                                    const char **ret_kind,
                                    const char **ret_subject,
                                    const char **ret_pattern);
