/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Errors: every fallible function returns an int, >= 0 on success and a negative errno on
 * failure, and optionally fills a caller-owned struct b4_error with a message and the
 * registry code clients see (B4_E2001 ...). The struct is alloc-free and needs no release.
 */

#include <stddef.h>

#define B4_PUBLIC       __attribute__((visibility("default")))
#define B4_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum b4_code {
        B4_CODE_NONE = 0,
        B4_CODE_SANDBOX_UNAVAILABLE = 2001, /* surfaces as "B4_E2001"; a retry may succeed */
        /* Deterministic admission refusals (b4box's own; the same request fails again): */
        B4_CODE_THREAD_REFUSED = 2002,    /* "B4_E2002": a resolver refused the thread */
        B4_CODE_IMAGE_NOT_ALLOWED = 2003, /* "B4_E2003": the provider may not run that image */
        B4_CODE_NO_TARGET = 2004,         /* "B4_E2004": no declarative target, no default */
        B4_CODE_IMAGE_UNSUPPORTED = 2005, /* "B4_E2005": the provider has no per-thread images */
        B4_CODE_TOOL_DENIED = 3001,       /* "B4_E3001" */
        B4_CODE_SUBAGENT_DENIED = 3002,   /* "B4_E3002" */
};

struct b4_error {
        int error;         /* negative errno; 0 = no error recorded */
        enum b4_code code; /* registry code for clients, or B4_CODE_NONE */
        char msg[512];     /* "outer context: inner context: cause", NUL-terminated */
};

/**
 * b4_error_set() - record an error
 * @err: optional (may be NULL); overwritten
 * @r:   negative errno
 *
 * Return: @r, so callers can write `return b4_error_set(err, r, ...);`.
 */
B4_PUBLIC int b4_error_set(struct b4_error *err, int r, const char *fmt, ...) B4_PRINTF(3, 4);

/**
 * b4_error_set_code() - like b4_error_set(), and also set the registry code
 */
B4_PUBLIC int b4_error_set_code(
        struct b4_error *err, int r, enum b4_code code, const char *fmt, ...) B4_PRINTF(4, 5);

/**
 * b4_error_wrap() - prefix context to an error already set ("context: old message")
 * @err: optional; when NULL or empty, behaves like b4_error_set()
 *
 * Return: err->error when set, else @r.
 */
B4_PUBLIC int b4_error_wrap(struct b4_error *err, int r, const char *fmt, ...) B4_PRINTF(3, 4);

/**
 * b4_code_name() - the registry name of @code ("B4_E2001"), or NULL for B4_CODE_NONE.
 * Return: a static string.
 */
B4_PUBLIC const char *b4_code_name(enum b4_code code);
