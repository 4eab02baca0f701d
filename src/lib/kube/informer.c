/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared informer (kube.h): a thread that LISTs a collection, then WATCHes it from the
 * list's resourceVersion, resumes a watch the server ends, lists again on 410 (or, after a
 * back-off, on any other failure), and keeps the objects by name under one lock. Waiters
 * sleep on a condition variable that every change signals: no API request per wait.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube/kube-internal.h"

#define BACKOFF_MIN_MS  1000u
#define BACKOFF_MAX_MS  30000u
#define WATCH_TIMEOUT_S 300u
#define WAIT_SLICE_MS   50u /* how often a waiter with a cancel fd looks at it */
#define RESUME_MIN_MS   100u
#define RESUMES_MAX     5u

struct kube_informer {
        struct kube_client *c; /* borrowed */
        char *path;
        char *selector;
        kube_informer_fn fn;
        void *userdata;
        int stop[2]; /* the thread stops once stop[0] is readable */
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        struct hashmap *objects; /* name -> struct jv * (owned reference) */
        bool synced;
        bool failing;         /* the last list or watch failed, none has succeeded since */
        struct b4_error last; /* the last failure of a list or watch, for messages */
};

static const char *name_of(const struct jv *o)
{
        return jv_string(jv_object_get(jv_object_get(o, "metadata"), "name"));
}

static const char *rv_of(const struct jv *o)
{
        return jv_string(jv_object_get(jv_object_get(o, "metadata"), "resourceVersion"));
}

static int unref_value(const char *key, void *value, void *ud)
{
        (void)key;
        (void)ud;
        jv_unref(value);
        return 0;
}

static void notify(struct kube_informer *inf, enum kube_event_type type, const struct jv *o)
{
        if (inf->fn)
                inf->fn(type, o, inf->userdata);
}

static bool same_version(const struct jv *a, const struct jv *b)
{
        return a && b && rv_of(a) && rv_of(b) && strcmp(rv_of(a), rv_of(b)) == 0;
}

/*
 * One watch event into the cache (lock taken here), then told. A resumed watch may replay
 * what the cache has: an object at the version cached is not told again, and an ADDED of a
 * cached object is told as MODIFIED.
 */
static int on_event(enum kube_event_type type, struct jv *object, void *userdata)
{
        struct kube_informer *inf = userdata;
        const char *name = name_of(object);
        struct jv *old = NULL;
        bool tell;
        int r = 0;

        if (type == KUBE_EVENT_BOOKMARK || !name)
                return 0;
        (void)pthread_mutex_lock(&inf->lock);
        inf->failing = false;
        if (type == KUBE_EVENT_DELETED)
                old = hashmap_remove(inf->objects, name);
        else {
                old = hashmap_get(inf->objects, name);
                r = hashmap_put(inf->objects, name, jv_ref(object));
                if (r < 0) {
                        jv_unref(object);
                        old = NULL;
                }
        }
        (void)pthread_cond_broadcast(&inf->changed);
        (void)pthread_mutex_unlock(&inf->lock);
        tell = type == KUBE_EVENT_DELETED ? old != NULL : !same_version(old, object);
        if (type == KUBE_EVENT_ADDED && old)
                type = KUBE_EVENT_MODIFIED;
        jv_unref(old);
        if (r < 0)
                return r;
        if (tell)
                notify(inf, type, object);
        return 0;
}

struct relist {
        struct kube_informer *inf;
        struct hashmap *fresh;
};

/* An object of the old cache the new list lacks: deleted while no watch ran. */
static int report_gone(const char *key, void *value, void *ud)
{
        struct relist *rl = ud;

        if (!hashmap_get(rl->fresh, key))
                notify(rl->inf, KUBE_EVENT_DELETED, value);
        return 0;
}

/* The new list's objects as the cache; changes told after the swap. */
static int apply_list(struct kube_informer *inf, const struct jv *items)
{
        struct hashmap *fresh = hashmap_new(), *old;
        struct relist rl = { .inf = inf };

        if (!fresh)
                return -ENOMEM;
        for (size_t i = 0; i < jv_array_size(items); i++) {
                struct jv *o = jv_array_get(items, i);
                if (!name_of(o))
                        continue;
                jv_unref(hashmap_get(fresh, name_of(o)));
                if (hashmap_put(fresh, name_of(o), jv_ref(o)) < 0) {
                        jv_unref(o);
                        (void)hashmap_foreach(fresh, unref_value, NULL);
                        hashmap_free(fresh);
                        return -ENOMEM;
                }
        }
        (void)pthread_mutex_lock(&inf->lock);
        old = inf->objects;
        inf->objects = fresh;
        inf->synced = true;
        inf->failing = false;
        (void)pthread_cond_broadcast(&inf->changed);
        (void)pthread_mutex_unlock(&inf->lock);
        rl.fresh = fresh;
        for (size_t i = 0; inf->fn && i < jv_array_size(items); i++) {
                const struct jv *o = jv_array_get(items, i), *was = NULL;
                if (!name_of(o))
                        continue;
                was = hashmap_get(old, name_of(o));
                if (!was)
                        notify(inf, KUBE_EVENT_ADDED, o);
                else if (!rv_of(was) || !rv_of(o) || strcmp(rv_of(was), rv_of(o)) != 0)
                        notify(inf, KUBE_EVENT_MODIFIED, o);
        }
        if (inf->fn)
                (void)hashmap_foreach(old, report_gone, &rl);
        (void)hashmap_foreach(old, unref_value, NULL);
        hashmap_free(old);
        return 0;
}

static void remember(struct kube_informer *inf, const struct b4_error *err)
{
        (void)pthread_mutex_lock(&inf->lock);
        inf->last = *err;
        inf->failing = true;
        /* a refusal ends kube_informer_wait_synced() */
        (void)pthread_cond_broadcast(&inf->changed);
        (void)pthread_mutex_unlock(&inf->lock);
}

/* The server's answer is a refusal (RBAC): waiting for a list will not help. */
static bool refused(const struct kube_informer *inf)
{
        return inf->failing && (inf->last.error == -EACCES || inf->last.error == -EPERM);
}

/* Sleep @ms unless asked to stop. Return: true when asked to stop. */
static bool sleep_or_stop(struct kube_informer *inf, uint64_t ms)
{
        struct pollfd p = { .fd = inf->stop[0], .events = POLLIN };

        return poll(&p, 1, (int)ms) > 0;
}

static bool transport_error(int r)
{
        return r == -EIO || r == -ETIMEDOUT || r == -ECONNREFUSED || r == -EHOSTUNREACH;
}

/*
 * Watch from *rv for as long as it lasts. A watch the server ends, or a dropped connection,
 * is resumed from the last version (a dropped one after RESUME_MIN_MS doubling, as long as
 * fewer than RESUMES_MAX fail in a row). Return: 0 = list again now (410), < 0 = stop
 * (-ECANCELED) or list again after a back-off.
 */
static int watch_loop(struct kube_informer *inf, char **rv)
{
        uint64_t pause = RESUME_MIN_MS;
        unsigned failures = 0;
        int r;

        for (;;) {
                struct kube_watch_req req = { .path = inf->path,
                                              .label_selector = inf->selector,
                                              .resource_version = *rv,
                                              .timeout_s = WATCH_TIMEOUT_S,
                                              .cancel_fd = inf->stop[0] };
                struct b4_error err = { 0 };
                char *next = NULL;
                r = kube_watch(inf->c, &req, on_event, inf, &next, &err);
                if (next) {
                        free(*rv);
                        *rv = next;
                }
                if (r == 0) { /* the server's timeout */
                        (void)pthread_mutex_lock(&inf->lock);
                        inf->failing = false;
                        (void)pthread_mutex_unlock(&inf->lock);
                        failures = 0;
                        pause = RESUME_MIN_MS;
                        continue;
                }
                if (r == -ESTALE || r == -ECANCELED)
                        return r == -ESTALE ? 0 : r;
                remember(inf, &err);
                if (!transport_error(r) || ++failures >= RESUMES_MAX)
                        return r;
                if (sleep_or_stop(inf, pause))
                        return -ECANCELED;
                pause = pause * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : pause * 2;
        }
}

static void *run(void *userdata)
{
        struct kube_informer *inf = userdata;
        uint64_t backoff = BACKOFF_MIN_MS;

        for (;;) {
                cleanup_(jv_unrefp) struct jv *items = NULL;
                cleanup_free char *rv = NULL;
                struct b4_error err = { 0 };
                int r = kube_list_cancellable(inf->c, inf->path, inf->selector, NULL, inf->stop[0],
                                              &items, &rv, &err);
                if (r >= 0)
                        r = apply_list(inf, items);
                if (r >= 0) {
                        backoff = BACKOFF_MIN_MS;
                        r = watch_loop(inf, &rv);
                } else
                        remember(inf, &err);
                if (r == -ECANCELED || sleep_or_stop(inf, r == 0 ? 0 : backoff))
                        return NULL;
                if (r < 0)
                        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        }
}

int kube_informer_new(struct kube_client *c,
                      const char *path,
                      const char *label_selector,
                      kube_informer_fn fn,
                      void *userdata,
                      struct kube_informer **ret,
                      struct b4_error *err)
{
        cleanup_(kube_informer_freep) struct kube_informer *inf = b4_calloc(1, sizeof(*inf));

        if (!inf)
                return b4_error_set(err, -ENOMEM, "out of memory");
        inf->stop[0] = inf->stop[1] = -EBADF;
        (void)pthread_mutex_init(&inf->lock, NULL);
        (void)pthread_cond_init(&inf->changed, NULL);
        inf->c = c;
        inf->fn = fn;
        inf->userdata = userdata;
        inf->path = b4_strdup(path);
        inf->selector = label_selector ? b4_strdup(label_selector) : NULL;
        inf->objects = hashmap_new();
        if (!inf->path || (label_selector && !inf->selector) || !inf->objects)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (pipe2(inf->stop, O_CLOEXEC) < 0)
                return b4_error_set(err, -errno, "cannot make the informer's stop pipe");
        if (pthread_create(&inf->thread, NULL, run, inf) != 0)
                return b4_error_set(err, -EAGAIN, "cannot start the informer's thread");
        inf->started = true;
        *ret = TAKE_PTR(inf);
        return 0;
}

struct kube_informer *kube_informer_free(struct kube_informer *inf)
{
        if (!inf)
                return NULL;
        if (inf->started) {
                (void)!write(inf->stop[1], "x", 1);
                (void)pthread_join(inf->thread, NULL);
        }
        if (inf->stop[0] >= 0)
                (void)close(inf->stop[0]);
        if (inf->stop[1] >= 0)
                (void)close(inf->stop[1]);
        if (inf->objects) {
                (void)hashmap_foreach(inf->objects, unref_value, NULL);
                hashmap_free(inf->objects);
        }
        (void)pthread_cond_destroy(&inf->changed);
        (void)pthread_mutex_destroy(&inf->lock);
        free(inf->path);
        free(inf->selector);
        free(inf);
        return NULL;
}

static bool cancelled(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Wait on the condition (lock held) until a change, the deadline or a cancel slice.
 * Return: 0, -ETIMEDOUT, -ECANCELED. */
static int wait_change(struct kube_informer *inf, uint64_t deadline_ms, int cancel_fd)
{
        uint64_t until = deadline_ms;

        if (cancelled(cancel_fd))
                return -ECANCELED;
        if (now_msec() >= deadline_ms)
                return -ETIMEDOUT;
        if (cancel_fd >= 0 && now_msec() + WAIT_SLICE_MS < until)
                until = now_msec() + WAIT_SLICE_MS;
        (void)cond_wait_until_ms(&inf->changed, &inf->lock, until);
        return 0;
}

static int timed_out(struct kube_informer *inf, const char *what, struct b4_error *err)
{
        if (inf->last.error)
                return b4_error_set(err, -ETIMEDOUT, "%s: %s", what, inf->last.msg);
        return b4_error_set(err, -ETIMEDOUT, "%s", what);
}

int kube_informer_wait_synced(struct kube_informer *inf, uint64_t deadline_ms, struct b4_error *err)
{
        int r = 0;

        (void)pthread_mutex_lock(&inf->lock);
        while (!inf->synced && !refused(inf) && r == 0)
                r = wait_change(inf, deadline_ms, -EBADF);
        if (!inf->synced && refused(inf))
                r = b4_error_set(err, inf->last.error, "%s", inf->last.msg);
        else if (!inf->synced)
                r = timed_out(inf, "the informer's first list did not complete", err);
        (void)pthread_mutex_unlock(&inf->lock);
        return r < 0 ? r : 0;
}

bool kube_informer_live(struct kube_informer *inf)
{
        bool live;

        (void)pthread_mutex_lock(&inf->lock);
        live = inf->synced && !inf->failing;
        (void)pthread_mutex_unlock(&inf->lock);
        return live;
}

struct jv *kube_informer_get(struct kube_informer *inf, const char *name)
{
        struct jv *o;

        (void)pthread_mutex_lock(&inf->lock);
        o = jv_ref(hashmap_get(inf->objects, name));
        (void)pthread_mutex_unlock(&inf->lock);
        return o;
}

static int snapshot_one(const char *key, void *value, void *ud)
{
        (void)key;
        return jv_array_append_new(ud, jv_ref(value));
}

int kube_informer_snapshot(struct kube_informer *inf, struct jv **ret)
{
        struct jv *items = jv_array_new();
        int r;

        if (!items)
                return -ENOMEM;
        (void)pthread_mutex_lock(&inf->lock);
        r = hashmap_foreach(inf->objects, snapshot_one, items);
        (void)pthread_mutex_unlock(&inf->lock);
        if (r < 0) {
                jv_unref(items);
                return -ENOMEM;
        }
        *ret = items;
        return 0;
}

int kube_informer_wait(struct kube_informer *inf,
                       const char *name,
                       kube_informer_check_fn check,
                       void *userdata,
                       uint64_t deadline_ms,
                       int cancel_fd,
                       struct jv **ret,
                       struct b4_error *err)
{
        int r = 0;

        (void)pthread_mutex_lock(&inf->lock);
        for (;;) {
                struct jv *o = inf->synced ? hashmap_get(inf->objects, name) : NULL;
                if (inf->synced) {
                        r = check(o, userdata, err);
                        if (r != 0) {
                                if (r > 0 && ret)
                                        *ret = jv_ref(o);
                                break;
                        }
                }
                r = wait_change(inf, deadline_ms, cancel_fd);
                if (r == -ECANCELED) {
                        r = b4_error_set(err, r, "cancelled");
                        break;
                }
                if (r < 0) {
                        r = timed_out(inf, inf->synced ? "still waiting" : "not listed yet", err);
                        break;
                }
        }
        (void)pthread_mutex_unlock(&inf->lock);
        return r;
}
