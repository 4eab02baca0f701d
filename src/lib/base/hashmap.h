/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A string-keyed hash map (separate chaining, FNV-1a, grows at load 1). Keys are copied;
 * values are borrowed pointers the caller owns. Not thread-safe.
 */

#include <stddef.h>

struct hashmap;

struct hashmap *hashmap_new(void);
/* Free the map and its key copies, not the values. Return: NULL. */
struct hashmap *hashmap_free(struct hashmap *m);
/* Insert or replace. Return: 0 or -ENOMEM. */
int hashmap_put(struct hashmap *m, const char *key, void *value);
void *hashmap_get(const struct hashmap *m, const char *key);
/* Remove @key; returns its value or NULL. */
void *hashmap_remove(struct hashmap *m, const char *key);
size_t hashmap_size(const struct hashmap *m);
/* Call @fn for every entry; stop early when it returns non-zero (returned). Do not modify
 * the map from @fn. */
int hashmap_foreach(const struct hashmap *m,
                    int (*fn)(const char *key, void *value, void *ud),
                    void *ud);
