/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the inspection's files (inspect.c: the pass; inspect-json.c: JSON both ways). */

#include <stdbool.h>
#include <stddef.h>

/* A valid leaf name: non-empty, not "." or "..", no '/', '\\' or control character. */
bool inspect_leaf_is_valid(const char *s, size_t len);
/* @base + "/" + @rel (just @base when @rel is empty). Return: 0 or -ENOMEM. */
int inspect_join(const char *base, const char *rel, char **ret);
/* JSON.stringify of a string. Return: 0, -EINVAL (not UTF-8), -ENOMEM. */
int inspect_quote(const char *s, char **ret);
