/* SPDX-License-Identifier: Apache-2.0 */
/* String-keyed hash map with separate chaining. */

#include "hashmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct entry {
        struct entry *next;
        void *value;
        char key[]; /* NUL-terminated copy */
};

struct hashmap {
        struct entry **buckets;
        size_t n_buckets; /* power of two */
        size_t size;
};

static uint64_t fnv1a(const char *s)
{
        uint64_t h = 1469598103934665603ull;

        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
}

struct hashmap *hashmap_new(void)
{
        struct hashmap *m = b4_calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        m->n_buckets = 16;
        m->buckets = b4_calloc(m->n_buckets, sizeof(*m->buckets));
        if (!m->buckets) {
                free(m);
                return NULL;
        }
        return m;
}

struct hashmap *hashmap_free(struct hashmap *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_buckets; i++)
                for (struct entry *e = m->buckets[i], *n; e; e = n) {
                        n = e->next;
                        free(e);
                }
        free(m->buckets);
        free(m);
        return NULL;
}

static struct entry **slot(const struct hashmap *m, const char *key)
{
        struct entry **p = &m->buckets[fnv1a(key) & (m->n_buckets - 1)];

        while (*p && strcmp((*p)->key, key) != 0)
                p = &(*p)->next;
        return p;
}

static void grow(struct hashmap *m)
{
        size_t nb = m->n_buckets * 2;
        struct entry **b = b4_calloc(nb, sizeof(*b));

        if (!b)
                return; /* stay at the current size: still correct, just slower */
        for (size_t i = 0; i < m->n_buckets; i++)
                for (struct entry *e = m->buckets[i], *n; e; e = n) {
                        n = e->next;
                        struct entry **head = &b[fnv1a(e->key) & (nb - 1)];
                        e->next = *head;
                        *head = e;
                }
        free(m->buckets);
        m->buckets = b;
        m->n_buckets = nb;
}

int hashmap_put(struct hashmap *m, const char *key, void *value)
{
        struct entry **p = slot(m, key);
        size_t len = strlen(key);
        struct entry *e;

        if (*p) {
                (*p)->value = value;
                return 0;
        }
        e = b4_malloc(sizeof(*e) + len + 1);
        if (!e)
                return -ENOMEM;
        memcpy(e->key, key, len + 1);
        e->value = value;
        e->next = NULL;
        *p = e;
        if (++m->size > m->n_buckets)
                grow(m);
        return 0;
}

void *hashmap_get(const struct hashmap *m, const char *key)
{
        struct entry *e = *slot(m, key);

        return e ? e->value : NULL;
}

void *hashmap_remove(struct hashmap *m, const char *key)
{
        struct entry **p = slot(m, key);
        struct entry *e = *p;
        void *v;

        if (!e)
                return NULL;
        *p = e->next;
        v = e->value;
        free(e);
        m->size--;
        return v;
}

size_t hashmap_size(const struct hashmap *m)
{
        return m->size;
}

int hashmap_foreach(const struct hashmap *m,
                    int (*fn)(const char *key, void *value, void *ud),
                    void *ud)
{
        for (size_t i = 0; i < m->n_buckets; i++)
                for (struct entry *e = m->buckets[i]; e; e = e->next) {
                        int r = fn(e->key, e->value, ud);
                        if (r != 0)
                                return r;
                }
        return 0;
}
