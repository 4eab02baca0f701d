/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The tools layer's library-internal API (the runtime's and the tests'), beside the public
 * part in b4box/tools.h: the permission matching rules, per-thread grant storage, and the
 * calls that answer pending permission requests.
 *
 * A tools context consults either the app's permissions, or (when the thread has its own) the
 * per-thread store: the thread's lists plus the app's denials plus the thread's recorded
 * "Always" grants. A context is not thread-safe: one caller at a time (the runtime's run slot
 * ensures it).
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/config.h"
#include "b4box/error.h"
#include "b4box/tools.h"

#define B4_MAX_THREAD_GRANT_LENGTH 4096 /* longest recordable tool key / pattern */

/* ---- permissions ----------------------------------------------------------------------- */

enum b4_permission_decision {
        B4_PERMISSION_UNKNOWN = 0,
        B4_PERMISSION_ALLOW = 1,
        B4_PERMISSION_DENY = 2,
};

/**
 * b4_permission_key_is_valid() - whether @key is one of bash, readFile, writeFile, listDir,
 * tool.
 */
bool b4_permission_key_is_valid(const char *key);
/**
 * b4_permission_pattern_matches() - the matching rule of one pattern: exact for the "tool"
 * key, a byte prefix (candidate starts with pattern) for every other key.
 */
bool b4_permission_pattern_matches(const char *key, const char *pattern, const char *candidate);
/**
 * b4_permission_suggest_command() - the first two whitespace-separated tokens of @command,
 * joined by one space ("" for a blank command)
 * @ret: owned by the caller (free())
 * Return: 0, -ENOMEM.
 */
int b4_permission_suggest_command(const char *command, char **ret);
/**
 * b4_permission_suggest_path() - @path itself when it ends in '/', else its parent with a
 * trailing '/' ("/" for a file at the top level)
 * Return: 0, -ENOMEM.
 */
int b4_permission_suggest_path(const char *path, char **ret);
enum b4_permission_mode b4_permissions_mode(const struct b4_permissions *p);
/**
 * b4_permissions_add_runtime() - record an app-level "Always" answer (the reference's
 * .b4/permissions.json, kept in memory here). Runtime entries count only in interactive mode.
 * Return: 0, -EINVAL, -ENOMEM.
 */
int b4_permissions_add_runtime(struct b4_permissions *p,
                               const char *key,
                               const char *pattern,
                               struct b4_error *err);
/**
 * b4_permissions_match() - deny first, then allow; no entry matching gives unknown. In
 * bypass mode the lists are empty (always unknown: the gates already allow).
 */
enum b4_permission_decision b4_permissions_match(const struct b4_permissions *p,
                                                 const char *key,
                                                 const char *candidate);
/**
 * b4_permissions_from_config() - an app store from the `permissions` block of b4box.json
 * Return: 0 with *ret owned by the caller, -EINVAL (a bad pattern; message set), -ENOMEM.
 */
int b4_permissions_from_config(const struct b4_permissions_config *pc,
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
int b4_grant_store_memory_new(struct b4_grant_store **ret);
int b4_grant_store_add(struct b4_grant_store *s,
                       const char *thread_id,
                       const char *key,
                       const char *pattern,
                       struct b4_error *err);
int b4_grant_store_match(struct b4_grant_store *s,
                         const char *thread_id,
                         const char *key,
                         const char *candidate,
                         struct b4_error *err);
int b4_grant_store_forget(struct b4_grant_store *s, const char *thread_id, struct b4_error *err);
/** b4_grant_store_free() - NULL ok. Return: NULL. */
struct b4_grant_store *b4_grant_store_free(struct b4_grant_store *s);

/**
 * b4_grant_is_recordable() - the reference's grant rule: a key or pattern that is empty,
 * whitespace-only, contains NUL (@len past strlen) or is longer than
 * B4_MAX_THREAD_GRANT_LENGTH bytes is not recorded (the call is allowed once, with a warning).
 */
bool b4_grant_is_recordable(const char *s, size_t len);

/* ---- permission requests --------------------------------------------------------------- */

/**
 * b4_tools_resume() - answer a permission request and finish its call
 * @interrupt_id: from the permissionRequest of an earlier result; each id answers once
 * @answer:       "once", "always" or "deny"
 * @ret:          the call's result (which may be another permission request)
 * Return: 0, -ENOENT (no such pending request), -EINVAL (bad answer), -ENOMEM.
 */
int b4_tools_resume(struct b4_tools *t,
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
int b4_tools_last_request(struct b4_tools *t,
                          const char **ret_id,
                          const char **ret_kind,
                          const char **ret_subject,
                          const char **ret_pattern);
