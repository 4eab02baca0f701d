/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A cancellation token (the seeds' AbortSignal): a flag that can be checked, plus an fd that
 * becomes readable once cancelled, so poll() loops can wait on it. Thread-safe.
 */

#include <stdbool.h>

#include "b4box/error.h"

struct b4_cancel;

/**
 * b4_cancel_new() - a new, not yet cancelled token
 * Return: the token (caller owns, b4_cancel_free()), or NULL on out-of-memory or fd exhaustion.
 */
B4_PUBLIC struct b4_cancel *b4_cancel_new(void);
/** b4_cancel_free() - free @c (NULL ok). Return: NULL. */
B4_PUBLIC struct b4_cancel *b4_cancel_free(struct b4_cancel *c);
/** b4_cancel_fire() - cancel; idempotent; async-signal-safe. */
B4_PUBLIC void b4_cancel_fire(struct b4_cancel *c);
/** b4_cancel_is_set() - whether @c (NULL = never cancelled) has fired. */
B4_PUBLIC bool b4_cancel_is_set(const struct b4_cancel *c);
/** b4_cancel_fd() - an fd readable (POLLIN) once fired; borrowed; -EBADF for NULL. */
B4_PUBLIC int b4_cancel_fd(const struct b4_cancel *c);
