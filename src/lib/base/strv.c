/* SPDX-License-Identifier: Apache-2.0 */
/* NULL-terminated string vectors. */

#include "strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "macro.h"

char **strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **s = l; *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l)
{
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

int strv_consume(char ***l, char *s)
{
        size_t n = strv_length(*l);
        char **nl;

        if (!s)
                return -ENOMEM;
        nl = b4_reallocarray(*l, n + 2, sizeof(char *));
        if (!nl) {
                free(s);
                return -ENOMEM;
        }
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s)
{
        return strv_consume(l, b4_strdup(s));
}

bool strv_contains(char *const *l, const char *s)
{
        STRV_FOREACH (i, l)
                if (strcmp(*i, s) == 0)
                        return true;
        return false;
}

char **strv_copy(char *const *l)
{
        char **r = b4_calloc(1, sizeof(char *));

        if (!r)
                return NULL;
        STRV_FOREACH (i, l)
                if (strv_extend(&r, *i) < 0)
                        return strv_free(r);
        return r;
}

static int cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **l)
{
        size_t n = strv_length(l);

        if (n > 1)
                qsort_safe(l, n, sizeof(char *), cmp);
}
