/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* NULL-terminated arrays of owned strings. */

#include <stdbool.h>
#include <stddef.h>

char **strv_free(char **l);

static inline void strv_freep(char ***l)
{
        *l = strv_free(*l);
}

size_t strv_length(char *const *l);
/* Append a copy of @s. Return: 0 or -ENOMEM (the list is unchanged on failure). */
int strv_extend(char ***l, const char *s);
/* Append @s, taking ownership of it (freed on failure). */
int strv_consume(char ***l, char *s);
bool strv_contains(char *const *l, const char *s);
char **strv_copy(char *const *l);
/* Sort bytewise (strcmp) in place. */
void strv_sort(char **l);

#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)
