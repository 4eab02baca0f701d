/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Waiting for a keeper Pod to run (docs/kubernetes.md, "Waiting for Running"): one watch
 * of the Pod's name from the resourceVersion of its create (or get), so no transition is
 * missed and nothing is polled; the verdict on every event fails fast on reasons that will
 * not heal (the design brief's table). The reference polled every 250 ms. A long-lived
 * provider (b4box serve) waits for its keepers on its one shared Pod informer instead: no
 * request per acquire at all.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube/kube.h"
#include "kube/provider.h"

/* Write "<reason>: <message>" to @why, control characters replaced, bounded. */
static void set_why(char *why, const char *reason, const char *message)
{
        size_t n;

        (void)snprintf(why, KUBE_WHY_MAX, "%s%s%s", reason ? reason : "unknown",
                       message && *message ? ": " : "", message ? message : "");
        n = strlen(why);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
                        why[i] = ' ';
}

static bool in_list(const char *s, const char *const *l)
{
        for (; s && *l; l++)
                if (strcmp(s, *l) == 0)
                        return true;
        return false;
}

/* The container "sandbox"'s status, or NULL. */
static const struct jv *sandbox_status(const struct jv *status)
{
        const struct jv *l = jv_object_get(status, "containerStatuses");

        for (size_t i = 0; i < jv_array_size(l); i++) {
                const struct jv *cs = jv_array_get(l, i);

                if (jv_string(jv_object_get(cs, "name")) &&
                    strcmp(jv_string(jv_object_get(cs, "name")), KUBE_CONTAINER) == 0)
                        return cs;
        }
        return NULL;
}

static enum kube_pod_verdict container_verdict(const struct jv *cs, unsigned seen, char *why)
{
        static const char *const now[] = { "InvalidImageName",
                                           "ErrImageNeverPull",
                                           "CreateContainerConfigError",
                                           "ErrImagePull",
                                           "ImagePullBackOff",
                                           "CrashLoopBackOff",
                                           NULL };
        static const char *const twice[] = { "RegistryUnavailable", "CreateContainerError",
                                             "RunContainerError", NULL };
        const struct jv *state = jv_object_get(cs, "state");
        const struct jv *waiting = jv_object_get(state, "waiting");
        const struct jv *term = jv_object_get(jv_object_get(cs, "lastState"), "terminated");
        const char *reason = jv_string(jv_object_get(waiting, "reason"));
        const char *msg = jv_string(jv_object_get(waiting, "message"));

        if (jv_is_object(jv_object_get(state, "running")))
                return KUBE_POD_RUNNING;
        if (in_list(reason, now) || (in_list(reason, twice) && seen >= 2)) {
                if (term && !msg)
                        msg = jv_string(jv_object_get(term, "message"));
                set_why(why, reason, msg);
                return KUBE_POD_FAILED;
        }
        if (reason)
                set_why(why, reason, msg);
        term = term ? term : jv_object_get(state, "terminated");
        if (jv_is_object(term)) {
                char m[KUBE_WHY_MAX];

                (void)snprintf(m, sizeof(m), "exit code %lld%s%s",
                               (long long)jv_integer(jv_object_get(term, "exitCode")),
                               jv_string(jv_object_get(term, "message")) ? ", " : "",
                               jv_string(jv_object_get(term, "message"))
                                       ? jv_string(jv_object_get(term, "message"))
                                       : "");
                set_why(why, "terminated", m);
                return KUBE_POD_FAILED;
        }
        return KUBE_POD_WAIT;
}

/* PodScheduled False: kept for the timeout's message. */
static void note_unschedulable(const struct jv *status, char *why)
{
        const struct jv *l = jv_object_get(status, "conditions");

        for (size_t i = 0; i < jv_array_size(l); i++) {
                const struct jv *cd = jv_array_get(l, i);
                const char *type = jv_string(jv_object_get(cd, "type"));
                const char *st = jv_string(jv_object_get(cd, "status"));

                if (type && st && strcmp(type, "PodScheduled") == 0 && strcmp(st, "False") == 0)
                        set_why(why, jv_string(jv_object_get(cd, "reason")),
                                jv_string(jv_object_get(cd, "message")));
        }
}

enum kube_pod_verdict kube_pod_verdict(const struct jv *pod, unsigned seen, char *why)
{
        const struct jv *status = jv_object_get(pod, "status");
        const char *phase = jv_string(jv_object_get(status, "phase"));
        const struct jv *cs = sandbox_status(status);
        enum kube_pod_verdict v;

        if (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0)) {
                char m[64];

                (void)snprintf(m, sizeof(m), "entered %s", phase);
                set_why(why, jv_string(jv_object_get(status, "reason")) ?: "phase", m);
                return KUBE_POD_FAILED;
        }
        if (jv_object_get(jv_object_get(pod, "metadata"), "deletionTimestamp")) {
                set_why(why, "Terminating", "the Pod is being deleted");
                return KUBE_POD_FAILED;
        }
        note_unschedulable(status, why);
        v = cs ? container_verdict(cs, seen, why) : KUBE_POD_WAIT;
        if (v == KUBE_POD_RUNNING && !(phase && strcmp(phase, "Running") == 0))
                return KUBE_POD_WAIT;
        return v;
}

/* ---- the watch ---- */

/* The callback stops the watch with -EALREADY once the verdict is in. */
struct waiter {
        const char *name;
        const char *resource; /* "pods", or "persistentvolumeclaims" (kube_wait_gone()) */
        bool gone_only;       /* kube_wait_gone(): only a deletion ends the wait */
        unsigned seen;        /* observations of the Pod */
        enum kube_pod_verdict verdict;
        bool deleted;
        char why[KUBE_WHY_MAX];
        struct jv *pod; /* the last object seen (a reference) */
};

static int on_event(enum kube_event_type type, struct jv *object, void *userdata)
{
        struct waiter *w = userdata;
        const char *name = jv_string(jv_object_get(jv_object_get(object, "metadata"), "name"));

        if (type == KUBE_EVENT_BOOKMARK || !name || strcmp(name, w->name) != 0)
                return 0;
        if (type == KUBE_EVENT_DELETED) {
                w->deleted = true;
                return -EALREADY;
        }
        if (w->gone_only)
                return 0;
        jv_unref(w->pod);
        w->pod = jv_ref(object);
        w->verdict = kube_pod_verdict(object, ++w->seen, w->why);
        return w->verdict == KUBE_POD_WAIT ? 0 : -EALREADY;
}

/* Re-read the Pod after a 410 (or to start): its version, and its verdict. */
static int reread(struct kube_core *c, struct waiter *w, char **rv, struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", c->namespace, w->resource, w->name, NULL);
        struct jv *pod = NULL;
        const char *v;
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_get(c->client, path, &pod, err);
        if (r == -ENOENT) {
                w->deleted = true;
                return -EALREADY;
        }
        if (r < 0)
                return r;
        jv_unref(w->pod);
        w->pod = pod;
        free(*rv);
        v = jv_string(jv_object_get(jv_object_get(pod, "metadata"), "resourceVersion"));
        *rv = v ? b4_strdup(v) : NULL;
        if (w->gone_only)
                return 0;
        w->verdict = kube_pod_verdict(pod, ++w->seen, w->why);
        return w->verdict == KUBE_POD_WAIT ? 0 : -EALREADY;
}

static int unavailable(struct b4_error *err, int r, const char *fmt, ...) B4_PRINTF(3, 4);

static int unavailable(struct b4_error *err, int r, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE, "Sandbox unavailable: %s",
                                 msg);
}

static int conclude(
        struct waiter *w, int r, uint64_t timeout_ms, struct jv **ret_pod, struct b4_error *err)
{
        if (r == -EALREADY && w->deleted)
                return unavailable(err, -ENOENT, "pod \"%s\" disappeared while starting.", w->name);
        if (r == -EALREADY && w->verdict == KUBE_POD_FAILED)
                return unavailable(err, -EIO, "pod \"%s\" %s. Run `b4box check`.", w->name, w->why);
        if (r == -EALREADY) {
                if (ret_pod)
                        *ret_pod = TAKE_PTR(w->pod);
                return 0;
        }
        if (r == -ETIMEDOUT)
                return unavailable(err, r, "pod \"%s\" not Running within %llums%s%s.", w->name,
                                   (unsigned long long)timeout_ms, w->why[0] ? " (" : "",
                                   w->why[0] ? w->why : "");
        if (r == -ECANCELED)
                return b4_error_set(err, r, "Sandbox acquire aborted for pod \"%s\".", w->name);
        return b4_error_wrap(err, r, "Sandbox unavailable: waiting for pod \"%s\"", w->name);
}

/* Watch @w->name from @rv until the callback or a re-read concludes (-EALREADY), the
 * deadline (-ETIMEDOUT), cancel or an error. */
static int watch_pod(struct kube_core *c,
                     struct waiter *w,
                     const char *rv,
                     uint64_t deadline_ms,
                     int cancel_fd,
                     struct b4_error *err)
{
        cleanup_free char *field = NULL, *path = NULL, *cur = rv ? b4_strdup(rv) : NULL;
        int r = 0;

        if (b4_asprintf(&field, "metadata.name=%s", w->name) < 0 ||
            !(path = kube_path("v1", c->namespace, w->resource, NULL, NULL)) || (rv && !cur))
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (!cur)
                r = reread(c, w, &cur, err);
        while (r == 0) {
                uint64_t now = now_msec();
                char *next = NULL;

                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct kube_watch_req req = {
                        .path = path,
                        .field_selector = field,
                        .resource_version = cur,
                        .timeout_s = (unsigned)((deadline_ms - now + 999) / 1000),
                        .cancel_fd = cancel_fd,
                };
                r = kube_watch(c->client, &req, on_event, w, &next, err);
                if (next) {
                        free(cur);
                        cur = next;
                }
                if (r == -ESTALE)
                        r = reread(c, w, &cur, err);
                /* 0: the server ended the watch; go on from its last version */
        }
        return r;
}

int kube_pod_wait_running(struct kube_core *c,
                          const char *name,
                          const char *rv,
                          uint64_t deadline_ms,
                          uint64_t timeout_ms,
                          int cancel_fd,
                          struct jv **ret_pod,
                          struct b4_error *err)
{
        struct waiter w = { .resource = "pods", .name = name };
        int r = watch_pod(c, &w, rv, deadline_ms, cancel_fd, err);

        r = conclude(&w, r, timeout_ms, ret_pod, err);
        jv_unref(w.pod);
        return r;
}

/* ---- on the shared informer ---- */

/* A decimal resourceVersion, or 0 when it is not one (opaque: compared only when both are). */
static unsigned long long rv_number(const char *rv)
{
        char *end = NULL;
        unsigned long long n;

        if (!rv || *rv < '0' || *rv > '9')
                return 0;
        errno = 0;
        n = strtoull(rv, &end, 10);
        return errno || *end ? 0 : n;
}

enum kube_pod_verdict kube_cached_pod_verdict(struct kube_cached_pod *cp,
                                              const struct jv *o,
                                              char *why)
{
        const struct jv *meta = jv_object_get(o, "metadata");
        const char *uid = jv_string(jv_object_get(meta, "uid"));
        const char *rv = jv_string(jv_object_get(meta, "resourceVersion"));
        unsigned long long since = rv_number(cp->rv);

        if (!o || !uid || strcmp(uid, cp->uid) != 0) /* absent, or another Pod of the name */
                return cp->seen || (o && since && rv_number(rv) > since) ? KUBE_POD_GONE
                                                                         : KUBE_POD_WAIT;
        cp->seen = true;
        if (cp->observations && rv && strcmp(rv, cp->last_rv) == 0)
                return KUBE_POD_WAIT; /* told again, not a new observation */
        (void)snprintf(cp->last_rv, sizeof(cp->last_rv), "%s", rv ? rv : "");
        return kube_pod_verdict(o, ++cp->observations, why);
}

struct cached_waiter {
        struct waiter w;
        struct kube_cached_pod cp;
};

/* kube_cached_pod_verdict() under the informer's lock: 1 = concluded. */
static int judge_cached(const struct jv *o, void *userdata, struct b4_error *err)
{
        struct cached_waiter *cw = userdata;
        enum kube_pod_verdict v = kube_cached_pod_verdict(&cw->cp, o, cw->w.why);

        (void)err;
        cw->w.deleted = v == KUBE_POD_GONE;
        cw->w.verdict = v;
        return v == KUBE_POD_WAIT ? 0 : 1;
}

/* Whether the informer can serve this wait; the log line says why not. */
static bool informer_serves(struct kube_core *c, const char *name, const char *uid)
{
        if (!c->pods)
                return false;
        if (!uid || !*uid) {
                log_debug("kubernetes: pod \"%s\": uid not known, watching it", name);
                return false;
        }
        if (!kube_informer_live(c->pods)) {
                log_warning("kubernetes: the shared pod informer is not following the server; "
                            "pod \"%s\" is watched on its own",
                            name);
                return false;
        }
        return true;
}

int kube_keeper_wait_running(struct kube_core *c,
                             const char *name,
                             const char *uid,
                             const char *rv,
                             uint64_t deadline_ms,
                             uint64_t timeout_ms,
                             int cancel_fd,
                             struct jv **ret_pod,
                             struct b4_error *err)
{
        struct cached_waiter cw = {
                .w = { .resource = "pods", .name = name },
                .cp = { .uid = uid, .rv = rv },
        };
        struct b4_error e = { 0 };
        int r;

        if (!informer_serves(c, name, uid))
                return kube_pod_wait_running(c, name, rv, deadline_ms, timeout_ms, cancel_fd,
                                             ret_pod, err);
        r = kube_informer_wait(c->pods, name, judge_cached, &cw, deadline_ms, cancel_fd, &cw.w.pod,
                               &e);
        r = conclude(&cw.w, r > 0 ? -EALREADY : r, timeout_ms, ret_pod, err);
        jv_unref(cw.w.pod);
        return r;
}

int kube_wait_gone(struct kube_core *c,
                   const char *resource,
                   const char *name,
                   const char *rv,
                   uint64_t deadline_ms,
                   int cancel_fd,
                   struct b4_error *err)
{
        struct waiter w = { .resource = resource, .name = name, .gone_only = true };
        int r = watch_pod(c, &w, rv && *rv ? rv : NULL, deadline_ms, cancel_fd, err);
        const char *kind = strcmp(resource, "pods") == 0 ? "pod" : "persistentvolumeclaim";

        jv_unref(w.pod);
        if (r == -EALREADY)
                return 0;
        if (r == -ETIMEDOUT)
                return unavailable(err, r, "%s \"%s\" still terminating. Run `b4box check`.", kind,
                                   name);
        return r == -ECANCELED
                       ? b4_error_set(err, r, "Sandbox acquire aborted for %s \"%s\".", kind, name)
                       : b4_error_wrap(err, r, "waiting for %s \"%s\" to go", kind, name);
}

int kube_pod_wait_gone(struct kube_core *c,
                       const char *name,
                       const char *rv,
                       uint64_t deadline_ms,
                       int cancel_fd,
                       struct b4_error *err)
{
        return kube_wait_gone(c, "pods", name, rv, deadline_ms, cancel_fd, err);
}
