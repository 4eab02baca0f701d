/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pending permission requests: the calls a gate parked until their answer, in one store with
 * one cap (the oldest go first). A host keeps one store for all its threads, keyed by owner;
 * a standalone context keeps its own.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "json/json.h"
#include "tools/tools-internal.h"

struct pending_store {
        pthread_mutex_t lock;
        struct pending **v; /* oldest first; each entry its own allocation */
        size_t n;
};

void pending_release(struct pending *p)
{
        free(p->id);
        free(p->owner);
        free(p->tool);
        jv_unref(p->args);
        strv_free(p->once_keys);
        strv_free(p->once_cands);
        ask_clear(&p->ask);
        *p = (struct pending){ 0 };
}

static void pending_free(struct pending *p)
{
        if (!p)
                return;
        pending_release(p);
        free(p);
}

int pending_store_new(struct pending_store **ret)
{
        struct pending_store *s = b4_calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        (void)pthread_mutex_init(&s->lock, NULL);
        *ret = s;
        return 0;
}

struct pending_store *pending_store_free(struct pending_store *s)
{
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                pending_free(s->v[i]);
        free(s->v);
        (void)pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

int pending_new_id(char **ret)
{
        static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
        static unsigned counter;
        unsigned char rnd[6];
        char tail[7];

        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
                for (size_t i = 0; i < sizeof(rnd); i++)
                        rnd[i] = (unsigned char)(now_usec() >> (i * 3)) + (unsigned char)counter++;
        for (size_t i = 0; i < 6; i++)
                tail[i] = digits[rnd[i] % 36];
        tail[6] = '\0';
        return b4_asprintf(ret, "perm-%" PRId64 "-%s", realtime_msec(), tail) < 0 ? -ENOMEM : 0;
}

/* Drop entry @i. Lock held. */
static struct pending *remove_locked(struct pending_store *s, size_t i)
{
        struct pending *p = s->v[i];

        memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(*s->v));
        s->n--;
        return p;
}

int pending_park(struct pending_store *s, struct pending *p)
{
        struct pending *e = b4_malloc(sizeof(*e));
        struct pending **a;

        if (!e) {
                pending_release(p);
                return -ENOMEM;
        }
        *e = *p;
        *p = (struct pending){ 0 };
        (void)pthread_mutex_lock(&s->lock);
        if (s->n == TOOLS_MAX_PENDING)
                pending_free(remove_locked(s, 0));
        a = b4_reallocarray(s->v, s->n + 1, sizeof(*s->v));
        if (a) {
                s->v = a;
                s->v[s->n++] = e;
        }
        (void)pthread_mutex_unlock(&s->lock);
        if (!a) {
                pending_free(e);
                return -ENOMEM;
        }
        return 0;
}

int pending_take(struct pending_store *s, const char *owner, const char *id, struct pending *ret)
{
        struct pending *p = NULL;

        (void)pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i]->owner, owner) == 0 && strcmp(s->v[i]->id, id) == 0) {
                        p = remove_locked(s, i);
                        break;
                }
        (void)pthread_mutex_unlock(&s->lock);
        if (!p)
                return -ENOENT;
        *ret = *p;
        free(p);
        return 0;
}

const struct pending *pending_newest(struct pending_store *s, const char *owner)
{
        const struct pending *p = NULL;

        (void)pthread_mutex_lock(&s->lock);
        for (size_t i = s->n; i-- > 0;)
                if (strcmp(s->v[i]->owner, owner) == 0) {
                        p = s->v[i];
                        break;
                }
        (void)pthread_mutex_unlock(&s->lock);
        return p;
}
