/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The tools host: the one long-lived tools object of a runtime. It keeps the tools' settings
 * and the one store of pending permission requests (keyed by thread) across calls; each call
 * runs on a short-lived context over the run's sandbox, so no sandbox reference outlives a
 * run. Thread-safe. Library-internal: the runtime owns one (b4_run_call(), b4_run_resume()).
 */

#include <stdint.h>

#include "tools/tools.h"

struct tools_host;

struct tools_host_options {
        struct b4_permissions *app;       /* borrowed, as in b4_tools_options */
        struct b4_grant_store *grants;    /* borrowed; per-thread "Always" grants */
        uint64_t read_cap;                /* 0 = B4_TOOLS_DEFAULT_READ_CAP */
        const char *const *approve_tools; /* copied */
};

/* Where one call runs: all borrowed for the call. */
struct tools_host_call {
        struct b4_sandbox *sb;
        const char *thread_id;        /* whose requests park and may be answered */
        struct b4_permissions *perms; /* the thread's own lists; NULL = the app's */
        struct b4_cancel *cancel;     /* NULL = none */
        b4_exec_output_fn *on_output; /* runBash's output as it comes; NULL = none */
        void *output_userdata;
};

/** tools_host_new() - @opts copied. Return: 0, -EINVAL, -ENOMEM. */
int tools_host_new(const struct tools_host_options *opts, struct tools_host **ret);
/** tools_host_free() - NULL ok. Return: NULL. */
struct tools_host *tools_host_free(struct tools_host *h);

/**
 * tools_host_call() - b4_tools_call() on a fresh context for @c; a permission request stays
 * pending in the host, keyed by @c->thread_id, for tools_host_resume()
 * Return: as b4_tools_call().
 */
int tools_host_call(struct tools_host *h,
                    const struct tools_host_call *c,
                    const char *tool,
                    const struct jv *args,
                    struct b4_tool_result *ret,
                    struct b4_error *err);

/**
 * tools_host_open() - the context tools_host_call() runs a call on, for the typed file
 * operations (b4_tools_fs_*, which park nothing); @ret owned by the caller (b4_tools_free()),
 * borrowing @c's members. Return: 0, -EINVAL, -ENOMEM.
 */
int tools_host_open(struct tools_host *h,
                    const struct tools_host_call *c,
                    struct b4_tools **ret,
                    struct b4_error *err);

/**
 * tools_host_open_reader() - as tools_host_open() over @rd's read-only filesystem instead of
 * a sandbox (@c->sb is ignored): the same path jail and gates; runBash fails -EROFS and the
 * changes fail as the reader's filesystem does. @c->perms is taken (freed with the context).
 * Return: 0, -EINVAL, -ENOMEM.
 */
int tools_host_open_reader(struct tools_host *h,
                           const struct tools_host_call *c,
                           struct b4_reader *rd,
                           struct b4_tools **ret,
                           struct b4_error *err);

/**
 * tools_host_resume() - b4_tools_resume() for a request raised by a call of the same thread
 * Return: 0, -ENOENT (no such request for this thread), -EINVAL (bad answer), -ENOMEM.
 */
int tools_host_resume(struct tools_host *h,
                      const struct tools_host_call *c,
                      const char *interrupt_id,
                      const char *answer,
                      struct b4_tool_result *ret,
                      struct b4_error *err);

/** tools_host_check() - b4_tools_check() on a fresh context for @c. */
int tools_host_check(struct tools_host *h,
                     const struct tools_host_call *c,
                     const char *tool,
                     const struct jv *args,
                     struct b4_tool_result *ret,
                     struct b4_error *err);
