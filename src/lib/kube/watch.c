/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A watch (kubernetes.md §4): GET ...?watch=1 whose chunked body is newline-delimited JSON
 * events {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}. The body is the
 * server's and untrusted: one line is at most KUBE_WATCH_EVENT_MAX bytes (checked before it
 * grows), every event must be a JSON object of a known type with an object, and an ERROR
 * carries a Status (410 Expired: -ESTALE, the caller lists again).
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "http/http.h"
#include "json/json.h"
#include "kube/kube-internal.h"

#define RV_MAX          256 /* a resourceVersion longer than this is refused */
#define DEFAULT_TIMEOUT 300u
#define READ_SLACK_MS   30000u /* past timeoutSeconds, a server that does not end is cut */

void kube_watch_parser_init(struct kube_watch_parser *p)
{
        *p = (struct kube_watch_parser){ 0 };
}

void kube_watch_parser_release(struct kube_watch_parser *p)
{
        free(p->line);
        free(p->rv);
        *p = (struct kube_watch_parser){ 0 };
}

static int event_type(const char *t, enum kube_event_type *ret)
{
        static const char *const names[] = {
                [KUBE_EVENT_ADDED] = "ADDED",
                [KUBE_EVENT_MODIFIED] = "MODIFIED",
                [KUBE_EVENT_DELETED] = "DELETED",
                [KUBE_EVENT_BOOKMARK] = "BOOKMARK",
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp(t, names[i]) == 0) {
                        *ret = (enum kube_event_type)i;
                        return 0;
                }
        return -EPROTO;
}

/* Keep the object's metadata.resourceVersion (when it has a sane one). */
static int track_rv(struct kube_watch_parser *p, const struct jv *object, struct b4_error *err)
{
        const struct jv *rv = jv_object_get(jv_object_get(object, "metadata"), "resourceVersion");
        size_t n = jv_string_length(rv);
        char *copy;

        if (!rv)
                return 0;
        if (!jv_is_string(rv) || n == 0 || n > RV_MAX || strlen(jv_string(rv)) != n)
                return b4_error_set(err, -EPROTO, "a watch event with a bad resourceVersion");
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)jv_string(rv)[i] <= 0x20 ||
                    (unsigned char)jv_string(rv)[i] >= 0x7f)
                        return b4_error_set(err, -EPROTO,
                                            "a watch event with a bad "
                                            "resourceVersion");
        copy = b4_strdup(jv_string(rv));
        if (!copy)
                return b4_error_set(err, -ENOMEM, "out of memory");
        free(p->rv);
        p->rv = copy;
        return 0;
}

/* An ERROR event: its Status's errno. */
static int error_event(const struct jv *object, struct b4_error *err)
{
        const struct jv *code = jv_object_get(object, "code");
        long status = jv_is_safe_integer(code) ? (long)jv_integer(code) : 500;

        return b4_error_wrap(err, kube_status_from_object(status, object, err), "watch");
}

static int decode_line(struct kube_watch_parser *p,
                       const char *line,
                       size_t len,
                       kube_event_fn fn,
                       void *userdata,
                       struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *ev = NULL;
        enum kube_event_type type;
        const char *t;
        struct jv *object;
        int r;

        r = jv_parse(line, len, &ev, NULL);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r < 0 || !jv_is_object(ev))
                return b4_error_set(err, -EPROTO, "a watch event that is not a JSON object");
        t = jv_string(jv_object_get(ev, "type"));
        object = jv_object_get(ev, "object");
        if (!t || !jv_is_object(object))
                return b4_error_set(err, -EPROTO, "a watch event without a type or an object");
        if (strcmp(t, "ERROR") == 0)
                return error_event(object, err);
        if (event_type(t, &type) < 0) {
                char shown[64];
                kube_sanitize(t, strlen(t), shown, sizeof(shown));
                return b4_error_set(err, -EPROTO, "a watch event of unknown type '%s'", shown);
        }
        r = track_rv(p, object, err);
        if (r < 0)
                return r;
        return fn(type, object, userdata);
}

/* Append @len bytes to the partial line, within the cap. */
static int line_add(struct kube_watch_parser *p, const char *data, size_t len, struct b4_error *err)
{
        if (len > KUBE_WATCH_EVENT_MAX - p->len)
                return b4_error_set(err, -EPROTO, "a watch event larger than %u bytes",
                                    KUBE_WATCH_EVENT_MAX);
        if (p->len + len > p->cap) {
                size_t cap = p->cap ? p->cap : 4096;
                while (cap < p->len + len)
                        cap *= 2;
                cap = cap > KUBE_WATCH_EVENT_MAX ? KUBE_WATCH_EVENT_MAX : cap;
                char *n = b4_realloc(p->line, cap);
                if (!n)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                p->line = n;
                p->cap = cap;
        }
        memcpy(p->line + p->len, data, len);
        p->len += len;
        return 0;
}

static bool blank(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (!strchr(" \t\r", s[i]))
                        return false;
        return true;
}

/* Decode the partial line (it is complete), then forget it. */
static int flush(struct kube_watch_parser *p,
                 kube_event_fn fn,
                 void *userdata,
                 struct b4_error *err)
{
        size_t len = p->len;

        p->len = 0;
        if (blank(p->line, len))
                return 0;
        return decode_line(p, p->line, len, fn, userdata, err);
}

int kube_watch_parser_feed(struct kube_watch_parser *p,
                           const char *data,
                           size_t len,
                           kube_event_fn fn,
                           void *userdata,
                           struct b4_error *err)
{
        int r;

        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                size_t n = nl ? (size_t)(nl - data) : len;
                if (nl && p->len == 0) { /* a whole line in the chunk: no copy */
                        if (!blank(data, n)) {
                                r = decode_line(p, data, n, fn, userdata, err);
                                if (r < 0)
                                        return r;
                        }
                } else {
                        r = line_add(p, data, n, err);
                        if (r >= 0 && nl)
                                r = flush(p, fn, userdata, err);
                        if (r < 0)
                                return r;
                }
                data += n + (nl ? 1 : 0);
                len -= n + (nl ? 1 : 0);
        }
        return 0;
}

int kube_watch_parser_finish(struct kube_watch_parser *p,
                             kube_event_fn fn,
                             void *userdata,
                             struct b4_error *err)
{
        return p->len ? flush(p, fn, userdata, err) : 0;
}

/* "…?watch=1&allowWatchBookmarks=true&timeoutSeconds=N[&resourceVersion=…][&…Selector=…]" */
static int watch_url(const struct kube_watch_req *req, char **ret)
{
        const char *keys[] = { "resourceVersion", "labelSelector", "fieldSelector" };
        const char *values[] = { req->resource_version, req->label_selector, req->field_selector };
        struct strbuf sb;
        size_t len;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_addf(&sb, "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u", req->path,
                        req->timeout_s ? req->timeout_s : DEFAULT_TIMEOUT);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(keys); i++) {
                cleanup_free char *e = NULL;
                if (!values[i])
                        continue;
                e = http_escape(values[i]);
                r = e ? strbuf_addf(&sb, "&%s=%s", keys[i], e) : -ENOMEM;
        }
        if (r >= 0)
                r = strbuf_detach(&sb, ret, &len);
        strbuf_release(&sb);
        return r;
}

static int pump(struct http_stream *s,
                struct kube_watch_parser *p,
                const struct kube_watch_req *req,
                kube_event_fn fn,
                void *userdata,
                struct b4_error *err)
{
        uint64_t deadline = now_msec() +
                            (uint64_t)(req->timeout_s ? req->timeout_s : DEFAULT_TIMEOUT) * 1000 +
                            READ_SLACK_MS;
        char buf[16384];
        ssize_t k;
        int r;

        while ((k = http_stream_read(s, buf, sizeof(buf), deadline, req->cancel_fd, err)) > 0) {
                r = kube_watch_parser_feed(p, buf, (size_t)k, fn, userdata, err);
                if (r < 0)
                        return r;
        }
        if (k < 0)
                return (int)k;
        return kube_watch_parser_finish(p, fn, userdata, err);
}

int kube_watch(struct kube_client *c,
               const struct kube_watch_req *req,
               kube_event_fn fn,
               void *userdata,
               char **ret_rv,
               struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_(kube_watch_parser_release) struct kube_watch_parser p = { 0 };
        cleanup_free char *url = NULL;
        int r;

        if (watch_url(req, &url) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_stream_open(c, url, req->cancel_fd, &s, err);
        if (r < 0)
                r = b4_error_wrap(err, r, "watch %s", req->path);
        else
                r = pump(s, &p, req, fn, userdata, err);
        if (ret_rv) /* on every return: a watch cut after events resumes from them */
                *ret_rv = TAKE_PTR(p.rv);
        return r < 0 ? r : 0;
}
