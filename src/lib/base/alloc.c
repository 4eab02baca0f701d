/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation wrappers. In fault-injection builds a countdown makes the Nth allocation fail,
 * so tests can prove every error path returns -ENOMEM cleanly.
 */

#include "alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic long fail_countdown = -1;

void alloc_fail_after(long n)
{
        fail_countdown = n;
}

static bool should_fail(void)
{
#ifdef B4_FAULT_INJECTION
        long n = atomic_load(&fail_countdown);

        if (n < 0)
                return false;
        if (n == 0)
                return true;
        atomic_fetch_sub(&fail_countdown, 1);
#endif
        return false;
}

void *b4_malloc(size_t n)
{
        if (should_fail())
                return NULL;
        return malloc(n ? n : 1); /* checksrc: allow */
}

void *b4_calloc(size_t n, size_t size)
{
        if (should_fail())
                return NULL;
        return calloc(n ? n : 1, size ? size : 1); /* checksrc: allow */
}

void *b4_realloc(void *p, size_t n)
{
        if (should_fail())
                return NULL;
        return realloc(p, n ? n : 1); /* checksrc: allow */
}

void *b4_reallocarray(void *p, size_t n, size_t size)
{
        if (size && n > SIZE_MAX / size)
                return NULL;
        return b4_realloc(p, n * size);
}

char *b4_strdup(const char *s)
{
        return b4_memdup(s, strlen(s) + 1);
}

char *b4_strndup(const char *s, size_t n)
{
        size_t len = strnlen(s, n);
        char *r = b4_malloc(len + 1);

        if (!r)
                return NULL;
        memcpy(r, s, len);
        r[len] = '\0';
        return r;
}

void *b4_memdup(const void *p, size_t n)
{
        void *r = b4_malloc(n);

        if (r && n)
                memcpy(r, p, n);
        return r;
}

int b4_vasprintf(char **ret, const char *fmt, va_list ap)
{
        va_list aq;
        int n;

        va_copy(aq, ap);
        n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        *ret = NULL;
        if (n < 0)
                return -EINVAL;
        char *s = b4_malloc((size_t)n + 1);
        if (!s)
                return -ENOMEM;
        (void)vsnprintf(s, (size_t)n + 1, fmt, ap);
        *ret = s;
        return n;
}

int b4_asprintf(char **ret, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = b4_vasprintf(ret, fmt, ap);
        va_end(ap);
        return r;
}
