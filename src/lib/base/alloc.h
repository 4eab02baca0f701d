/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Every allocation in src/lib goes through these wrappers, so a fault-injection build can
 * fail the Nth one (alloc_fail_after()). Each returns NULL only on out-of-memory; the
 * asprintf wrapper leaves *ret NULL on failure so it is safe with cleanup_free.
 */

#include <stdarg.h>
#include <stddef.h>

#include "b4box/error.h"

void *b4_malloc(size_t n);
void *b4_calloc(size_t n, size_t size);
void *b4_realloc(void *p, size_t n);
/* Grow-by-array realloc with overflow check; returns NULL on overflow or OOM. */
void *b4_reallocarray(void *p, size_t n, size_t size);
char *b4_strdup(const char *s);
char *b4_strndup(const char *s, size_t n);
void *b4_memdup(const void *p, size_t n);
/* Return: the length, or -ENOMEM with *ret = NULL. */
int b4_asprintf(char **ret, const char *fmt, ...) B4_PRINTF(2, 3);
int b4_vasprintf(char **ret, const char *fmt, va_list ap) B4_PRINTF(2, 0);

/*
 * Fault injection (tests only): fail every allocation after @n more succeed; n < 0 turns it
 * off. Only honoured in builds with -DB4_FAULT_INJECTION.
 */
void alloc_fail_after(long n);
