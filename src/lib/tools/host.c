/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools host: what the runtime's dispatch hook calls. It keeps the settings and the
 * pending permission requests across calls; each call runs on a short-lived context over the
 * run's sandbox, so no sandbox reference outlives a run.
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

#define HOST_MAX_PENDING 256

struct parked {
        char *thread_id;
        struct pending p;
};

struct b4_tools_host {
        struct b4_tools_host_options opts;
        char **approve;
        pthread_mutex_t lock;
        struct parked *parked; /* oldest first */
        size_t n;
};

int b4_tools_host_new(const struct b4_tools_host_options *opts, struct b4_tools_host **ret)
{
        struct b4_tools_host *h;

        if (!opts || !ret)
                return -EINVAL;
        h = b4_calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->opts = *opts;
        h->approve = strv_copy((char *const *)opts->approve_tools);
        if (opts->approve_tools && !h->approve) {
                free(h);
                return -ENOMEM;
        }
        h->opts.approve_tools = (const char *const *)h->approve;
        (void)pthread_mutex_init(&h->lock, NULL);
        *ret = h;
        return 0;
}

static void parked_release(struct parked *k)
{
        free(k->thread_id);
        pending_release(&k->p);
}

struct b4_tools_host *b4_tools_host_free(struct b4_tools_host *h)
{
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n; i++)
                parked_release(&h->parked[i]);
        free(h->parked);
        strv_free(h->approve);
        (void)pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
}

static int open_context(struct b4_tools_host *h,
                        struct b4_sandbox *sb,
                        const char *thread_id,
                        struct b4_cancel *cancel,
                        struct b4_permissions **ret_perms,
                        struct b4_tools **ret,
                        struct b4_error *err)
{
        struct b4_permissions *perms = NULL;
        int r = 0;

        if (h->opts.thread_permissions)
                r = h->opts.thread_permissions(h->opts.userdata, thread_id, &perms, err);
        if (r < 0)
                return r;
        struct b4_tools_options o = {
                .app = h->opts.app,
                .thread = perms,
                .grants = h->opts.grants,
                .read_cap = h->opts.read_cap,
                .approve_tools = h->opts.approve_tools,
                .cancel = cancel,
        };
        r = b4_tools_new(sb, &o, ret, err);
        if (r < 0) {
                b4_permissions_free(perms);
                return r;
        }
        *ret_perms = perms;
        return 0;
}

/* Move the context's pending requests into the host (the oldest go past the cap). */
static int take_pending(struct b4_tools_host *h, struct b4_tools *t, const char *thread_id)
{
        int r = 0;

        (void)pthread_mutex_lock(&h->lock);
        while (t->n_pending > 0) {
                struct parked k = { .thread_id = b4_strdup(thread_id), .p = t->pending[0] };
                struct parked *a;

                if (!k.thread_id) {
                        r = -ENOMEM;
                        break;
                }
                if (h->n == HOST_MAX_PENDING) {
                        parked_release(&h->parked[0]);
                        memmove(h->parked, h->parked + 1, --h->n * sizeof(*h->parked));
                }
                a = b4_reallocarray(h->parked, h->n + 1, sizeof(*h->parked));
                if (!a) {
                        free(k.thread_id);
                        r = -ENOMEM;
                        break;
                }
                h->parked = a;
                h->parked[h->n++] = k;
                memmove(t->pending, t->pending + 1, --t->n_pending * sizeof(*t->pending));
        }
        (void)pthread_mutex_unlock(&h->lock);
        return r;
}

int b4_tools_host_dispatch(struct b4_sandbox *sb,
                           const char *thread_id,
                           const char *tool,
                           const char *args_json,
                           struct b4_cancel *cancel,
                           void *userdata,
                           char **ret_json,
                           struct b4_error *err)
{
        struct b4_tools_host *h = userdata;
        struct b4_permissions *perms = NULL;
        struct b4_tools *t = NULL;
        char *json = NULL;
        int r;

        if (!h || !sb || !thread_id || !ret_json)
                return b4_error_set(err, -EINVAL, "tools host: missing argument");
        r = open_context(h, sb, thread_id, cancel, &perms, &t, err);
        if (r < 0)
                return r;
        r = b4_tools_call(t, tool, args_json, &json, err);
        if (r >= 0)
                r = take_pending(h, t, thread_id);
        b4_tools_free(t);
        b4_permissions_free(perms);
        if (r < 0) {
                free(json);
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
        }
        *ret_json = json;
        return 0;
}

/* Remove the request @id of @thread_id from the host. Return: 0, -ENOENT. */
static int unpark(struct b4_tools_host *h,
                  const char *thread_id,
                  const char *id,
                  struct pending *ret)
{
        int r = -ENOENT;

        (void)pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < h->n; i++) {
                if (strcmp(h->parked[i].thread_id, thread_id) != 0 ||
                    strcmp(h->parked[i].p.id, id) != 0)
                        continue;
                *ret = h->parked[i].p;
                free(h->parked[i].thread_id);
                memmove(h->parked + i, h->parked + i + 1, (h->n - i - 1) * sizeof(*h->parked));
                h->n--;
                r = 0;
                break;
        }
        (void)pthread_mutex_unlock(&h->lock);
        return r;
}

int b4_tools_host_resume(struct b4_tools_host *h,
                         struct b4_sandbox *sb,
                         const char *thread_id,
                         const char *interrupt_id,
                         const char *answer,
                         struct b4_cancel *cancel,
                         char **ret_json,
                         struct b4_error *err)
{
        struct b4_permissions *perms = NULL;
        struct b4_tools *t = NULL;
        struct pending p = { 0 };
        char *json = NULL;
        int r;

        if (!h || !sb || !thread_id || !interrupt_id || !answer || !ret_json)
                return b4_error_set(err, -EINVAL, "tools host: missing argument");
        if (strcmp(answer, "once") != 0 && strcmp(answer, "always") != 0 &&
            strcmp(answer, "deny") != 0)
                return b4_error_set(
                        err, -EINVAL,
                        "invalid permission answer '%s' (expected once, always or deny)", answer);
        r = unpark(h, thread_id, interrupt_id, &p);
        if (r < 0)
                return b4_error_set(err, r, "no pending permission request '%s'", interrupt_id);
        r = open_context(h, sb, thread_id, cancel, &perms, &t, err);
        if (r >= 0) {
                t->pending = b4_malloc(sizeof(*t->pending));
                r = t->pending ? 0 : -ENOMEM;
        }
        if (r < 0) {
                pending_release(&p);
                b4_tools_free(t);
                b4_permissions_free(perms);
                return r;
        }
        t->pending[0] = p;
        t->n_pending = 1;
        r = b4_tools_resume(t, interrupt_id, answer, &json, err);
        if (r >= 0)
                r = take_pending(h, t, thread_id);
        b4_tools_free(t);
        b4_permissions_free(perms);
        if (r < 0) {
                free(json);
                return r;
        }
        *ret_json = json;
        return 0;
}
