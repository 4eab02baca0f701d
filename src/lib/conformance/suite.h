/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the conformance suite: the per-case context the runner gives each case body,
 * and the helpers bodies use. A helper that fails records the first failure in the context
 * (suite_fail()) and returns -1, so bodies read as a list of steps ending `return 0;`.
 * Handles and readers a body opens are tracked by the context and dropped by the runner
 * before it destroys every thread the body used.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/conformance.h"
#include "b4box/policy.h"
#include "b4box/provider-impl.h"

#define SUITE_MAX_THREADS 8
#define SUITE_MAX_HANDLES 64
#define SUITE_MAX_READ    (1024 * 1024)

struct suite_ctx {
        const struct b4_conformance_opts *o;
        struct b4_provider *p;
        char prefix[96];                  /* "<run id>-<case>" */
        char *threads[SUITE_MAX_THREADS]; /* owned; destroyed after the body */
        size_t n_threads;
        struct b4_sandbox *handles[SUITE_MAX_HANDLES]; /* references the body took */
        size_t n_handles;
        struct b4_policy policy; /* network allow, like the reference */
        enum b4_conformance_result result;
        char msg[1024]; /* first failure or skip reason */
};

typedef int suite_case_fn(struct suite_ctx *c);

struct suite_case {
        const char *name;
        suite_case_fn *fn;
};

extern const struct suite_case suite_cases[];
extern const size_t suite_n_cases;

/* snprintf that may truncate on purpose. */
void suite_format(char *buf, size_t size, const char *fmt, ...) B4_PRINTF(3, 4);
/* Record the first failure; always returns -1. */
int suite_fail(struct suite_ctx *c, const char *fmt, ...) B4_PRINTF(2, 3);
/* Mark the case skipped with a reason; returns 1 (bodies return it as is). */
int suite_skip(struct suite_ctx *c, const char *fmt, ...) B4_PRINTF(2, 3);

/* A thread id unique to this run ("<prefix>-<name>"), registered for cleanup; NULL on OOM. */
const char *suite_thread(struct suite_ctx *c, const char *name);

/*
 * Run @fn as a case on @c: body, then drop its handles and destroy every thread it used,
 * then combine the outcomes into c->result / c->msg (reference AggregateError texts).
 */
void suite_run_body(struct suite_ctx *c, suite_case_fn *fn);
int suite_ctx_init(struct suite_ctx *c,
                   const struct b4_conformance_opts *o,
                   struct b4_provider *p,
                   const char *prefix);
void suite_ctx_release(struct suite_ctx *c);

/* Steps: each fails the case (message set) and returns -1, or returns 0. */
int suite_acquire(struct suite_ctx *c, const char *thread_id, struct b4_sandbox **ret);
/* Drop a handle the body no longer needs (before a release/destroy, as a runtime would). */
void suite_put(struct suite_ctx *c, struct b4_sandbox *sb);
int suite_release(struct suite_ctx *c, const char *thread_id);
int suite_destroy(struct suite_ctx *c, const char *thread_id);
int suite_write(struct suite_ctx *c, struct b4_fs *fs, const char *rel, const char *data);
int suite_expect_file(struct suite_ctx *c, struct b4_fs *fs, const char *rel, const char *want);
/* *ret = whether the workspace root lists @name. */
int suite_root_has(struct suite_ctx *c, struct b4_fs *fs, const char *name, bool *ret);
int suite_exec(struct suite_ctx *c, struct b4_sandbox *sb, const char *cmd, int *ret_exit);
