/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests to the API server over src/lib/http: JSON in and out, the token bucket before
 * every attempt, the bearer token per request (so it can rotate while the client is
 * shared), a 401 answered by one re-read of the token and a retry, 429/503 retried after
 * their Retry-After (bounded), and any other non-2xx decoded from its Status (status.c).
 * Connections are kept and reused (src/lib/http); an idempotent request (GET, DELETE) whose
 * connection was lost is sent once more, a write is not.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "http/http.h"
#include "json/json.h"
#include "kube/kube-internal.h"

#define DEFAULT_TIMEOUT_MS 30000u
#define ERROR_BODY_MAX     (64u * 1024)

struct kube_client {
        struct http_client *http;
        struct kube_config cfg;
        struct kube_token token;
        struct kube_bucket bucket;
};

static int setup_tls(struct kube_client *c, struct b4_error *err)
{
        const struct kube_config *k = &c->cfg;
        struct http_tls tls = {
                .ca_file = k->ca_file,
                .ca_pem = k->ca_pem,
                .ca_pem_len = k->ca_pem_len,
                .cert_file = k->cert_file,
                .cert_pem = k->cert_pem,
                .cert_pem_len = k->cert_pem_len,
                .key_file = k->key_file,
                .key_pem = k->key_pem,
                .key_pem_len = k->key_pem_len,
                .insecure = k->insecure,
        };

        /* http:// (a local proxy such as kubectl proxy): no TLS, so nothing to set */
        if (strncmp(k->server, "https://", 8) != 0)
                return 0;
        return http_client_set_tls(c->http, &tls, err);
}

int kube_client_new(const struct kube_config *cfg, struct kube_client **ret, struct b4_error *err)
{
        cleanup_(kube_client_freep) struct kube_client *c = NULL;
        int r;

        c = b4_calloc(1, sizeof(*c));
        if (!c)
                return b4_error_set(err, -ENOMEM, "out of memory");
        kube_bucket_init(&c->bucket, cfg->qps == 0 ? KUBE_DEFAULT_QPS : cfg->qps,
                         cfg->burst ? cfg->burst : KUBE_DEFAULT_BURST, now_usec());
        if (kube_token_init(&c->token, cfg->token_file, cfg->token) < 0 ||
            kube_config_copy(&c->cfg, cfg) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = http_client_new(cfg->server, &c->http, err);
        if (r >= 0 && http_client_set_reuse(c->http, KUBE_IDLE_CONNECTIONS) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = setup_tls(c, err);
        if (r < 0)
                return r;
        if (cfg->token_file && access(cfg->token_file, F_OK) < 0) {
                r = -errno;
                return b4_error_set(err, r, "the token file '%s' (%s): %s", cfg->token_file,
                                    cfg->source ? cfg->source : "options", strerror(-r));
        }
        *ret = TAKE_PTR(c);
        return 0;
}

struct kube_client *kube_client_free(struct kube_client *c)
{
        if (!c)
                return NULL;
        http_client_free(c->http);
        kube_token_release(&c->token);
        kube_bucket_release(&c->bucket);
        kube_config_release(&c->cfg);
        free(c);
        return NULL;
}

const struct kube_config *kube_client_config(const struct kube_client *c)
{
        return &c->cfg;
}

const char *kube_client_namespace(const struct kube_client *c)
{
        return c->cfg.namespace;
}

uint64_t kube_client_connections(struct kube_client *c)
{
        return http_client_connections(c->http);
}

int kube_client_token(struct kube_client *c, char **ret, struct b4_error *err)
{
        return kube_token_get(&c->token, ret, err);
}

void kube_client_token_invalidate(struct kube_client *c)
{
        kube_token_invalidate(&c->token);
}

/* "/SEG" percent-encoded onto @sb. */
static int add_segment(struct strbuf *sb, const char *seg)
{
        cleanup_free char *e = http_escape(seg);

        return e ? strbuf_addf(sb, "/%s", e) : -ENOMEM;
}

char *kube_path(const char *group_version,
                const char *ns,
                const char *resource,
                const char *name,
                const char *sub)
{
        struct strbuf sb;
        char *ret = NULL;
        size_t len;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_adds(&sb, strcmp(group_version, "v1") == 0 ? "/api/v1" : "/apis/");
        if (r >= 0 && strcmp(group_version, "v1") != 0)
                r = strbuf_adds(&sb, group_version);
        if (r >= 0 && ns)
                r = strbuf_adds(&sb, "/namespaces");
        if (r >= 0 && ns)
                r = add_segment(&sb, ns);
        if (r >= 0)
                r = strbuf_addf(&sb, "/%s", resource);
        if (r >= 0 && name)
                r = add_segment(&sb, name);
        if (r >= 0 && sub)
                r = strbuf_addf(&sb, "/%s", sub);
        if (r >= 0)
                r = strbuf_detach(&sb, &ret, &len);
        strbuf_release(&sb);
        return r >= 0 ? ret : NULL;
}

void kube_reply_clear(struct kube_reply *r)
{
        jv_unref(r->body);
        *r = (struct kube_reply){ 0 };
}

/* Sleep @ms, or less when @cancel_fd becomes readable. Return: 0, -ECANCELED. */
static int wait_ms(uint64_t ms, int cancel_fd)
{
        struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
        uint64_t end = now_msec() + ms, now;

        while ((now = now_msec()) < end) {
                int k = poll(&p, cancel_fd >= 0 ? 1 : 0, (int)(end - now));
                if (k > 0)
                        return -ECANCELED;
        }
        return 0;
}

/* Wait for a token of the bucket, within @deadline_ms. */
static int throttle(struct kube_client *c,
                    uint64_t deadline_ms,
                    int cancel_fd,
                    struct b4_error *err)
{
        uint64_t us = kube_bucket_reserve(&c->bucket, now_usec());
        uint64_t ms = (us + 999) / 1000;

        if (ms == 0)
                return 0;
        if (now_msec() + ms > deadline_ms)
                return b4_error_set(err, -ETIMEDOUT,
                                    "the client's request rate limit (%g per "
                                    "second) leaves no time before the timeout",
                                    c->bucket.rate);
        return wait_ms(ms, cancel_fd) < 0 ? b4_error_set(err, -ECANCELED, "cancelled") : 0;
}

/* Retry-After in ms when it is a plain number of seconds, else -1. */
static int64_t retry_after_ms(const char *v)
{
        int64_t s = 0;

        if (!v || !*v)
                return -1;
        for (; *v; v++) {
                if (*v < '0' || *v > '9' || s > 86400)
                        return -1;
                s = s * 10 + (*v - '0');
        }
        return s * 1000 > (int64_t)KUBE_RETRY_AFTER_MAX_MS ? (int64_t)KUBE_RETRY_AFTER_MAX_MS
                                                           : s * 1000;
}

/* The body of @s into @resp, at most @max bytes, by @deadline_ms. */
static int read_body(struct http_stream *s,
                     size_t max,
                     uint64_t deadline_ms,
                     int cancel_fd,
                     struct http_response *resp,
                     struct b4_error *err)
{
        struct strbuf sb;
        char buf[16384];
        ssize_t k;
        int r = 0;

        strbuf_init(&sb, max);
        while (r >= 0 &&
               (k = http_stream_read(s, buf, sizeof(buf), deadline_ms, cancel_fd, err)) > 0)
                r = strbuf_add(&sb, buf, (size_t)k);
        if (r == -E2BIG)
                r = b4_error_set(err, -EFBIG, "the API server's answer is larger than %zu bytes",
                                 max);
        else if (r < 0)
                r = b4_error_set(err, r, "out of memory");
        else if (k < 0)
                r = (int)k;
        if (r >= 0)
                r = strbuf_detach(&sb, &resp->body, &resp->len);
        strbuf_release(&sb);
        return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
}

/* One exchange, buffered, within @deadline_ms and cancellable (http_request() is neither). */
static int exchange(struct kube_client *c,
                    const struct http_req *hr,
                    size_t max_body,
                    uint64_t deadline_ms,
                    int cancel_fd,
                    struct http_response *resp,
                    struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        const char *after;
        int r;

        *resp = (struct http_response){ 0 };
        r = http_stream_open(c->http, hr, cancel_fd, &s, err);
        if (r < 0)
                return r;
        resp->status = http_stream_status(s);
        after = http_stream_header(s, "Retry-After");
        if (after && !(resp->header_value = b4_strdup(after)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = read_body(s, max_body, deadline_ms, cancel_fd, resp, err);
        if (r < 0)
                http_response_clear(resp);
        return r;
}

/* One attempt: token, bucket, exchange. */
static int attempt(struct kube_client *c,
                   struct http_req *hr,
                   size_t max_body,
                   uint64_t deadline,
                   int cancel_fd,
                   struct http_response *resp,
                   struct b4_error *err)
{
        char *token = NULL;
        uint64_t now;
        int r;

        r = throttle(c, deadline, cancel_fd, err);
        if (r < 0)
                return r;
        r = kube_token_get(&c->token, &token, err);
        if (r < 0)
                return r;
        now = now_msec();
        hr->bearer = token;
        hr->timeout_ms = deadline > now ? deadline - now : 1;
        r = exchange(c, hr, max_body, deadline, cancel_fd, resp, err);
        hr->bearer = NULL;
        if (token)
                explicit_bzero(token, strlen(token));
        free(token);
        return r;
}

/* Whether to try again after @resp, and after how long (*ret_wait_ms). */
static bool should_retry(struct kube_client *c,
                         const struct http_response *resp,
                         unsigned tries,
                         bool *reread,
                         uint64_t deadline,
                         uint64_t *ret_wait_ms)
{
        int64_t after;

        *ret_wait_ms = 0;
        if (resp->status == 401 && !*reread && c->token.file) {
                *reread = true;
                kube_token_invalidate(&c->token);
                return true;
        }
        if ((resp->status != 429 && resp->status != 503) || tries >= KUBE_RETRIES_MAX)
                return false;
        after = retry_after_ms(resp->header_value);
        if (after < 0 || now_msec() + (uint64_t)after >= deadline)
                return false;
        *ret_wait_ms = (uint64_t)after;
        return true;
}

static int decode_reply(const struct http_response *resp,
                        struct kube_reply *ret,
                        struct b4_error *err)
{
        struct jv *body = NULL;
        int r;

        if (resp->status < 200 || resp->status > 299)
                return kube_status_decode(resp->status, resp->body, resp->len, err);
        if (resp->len > 0) {
                r = jv_parse(resp->body, resp->len, &body, NULL);
                if (r == -ENOMEM)
                        return b4_error_set(err, r, "out of memory");
                if (r < 0)
                        return b4_error_set(err, -EPROTO,
                                            "the API server's %ld answer is not "
                                            "JSON",
                                            resp->status);
        }
        *ret = (struct kube_reply){ .status = resp->status, .body = body };
        return 0;
}

/*
 * Whether to send @method once more after a lost connection (@r): GET and DELETE only, and
 * only once (a DELETE that had been applied then answers 404, which callers take as gone).
 * -ECONNRESET is a kept connection lost after the request went out (http.h); -EIO any other
 * transport failure, a cut answer included.
 */
static bool resend(const char *method, int r, bool *resent)
{
        if (*resent || (r != -EIO && r != -ECONNRESET) ||
            (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0))
                return false;
        *resent = true;
        return true;
}

static int build(const struct kube_req *req, char **ret_path, char **ret_body)
{
        *ret_body = NULL;
        if (req->query ? b4_asprintf(ret_path, "%s?%s", req->path, req->query) < 0
                       : !(*ret_path = b4_strdup(req->path)))
                return -ENOMEM;
        return req->body ? jv_dump(req->body, 0, ret_body) : 0;
}

int kube_request(struct kube_client *c,
                 const struct kube_req *req,
                 struct kube_reply *ret,
                 struct b4_error *err)
{
        cleanup_free char *path = NULL;
        cleanup_free char *body = NULL;
        uint64_t timeout = req->timeout_ms ? req->timeout_ms : DEFAULT_TIMEOUT_MS;
        uint64_t deadline = now_msec() + timeout, wait;
        bool patch = strcmp(req->method, "PATCH") == 0, reread = false, resent = false;
        unsigned tries = 0;
        int r;

        if (build(req, &path, &body) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        struct http_req hr = {
                .method = req->method,
                .path = path,
                .body = body,
                .body_len = body ? strlen(body) : 0,
                .accept = "application/json",
                .content_type = !body               ? NULL
                                : req->content_type ? req->content_type
                                : patch             ? "application/merge-patch+json"
                                                    : "application/json",
        };
        for (;;) {
                struct http_response resp = { 0 };
                r = attempt(c, &hr, req->max_body ? req->max_body : KUBE_MAX_BODY, deadline,
                            req->cancel_fd, &resp, err);
                if (r < 0 && resend(req->method, r, &resent))
                        continue;
                if (r < 0)
                        return b4_error_wrap(err, r, "%s %s", req->method, req->path);
                if (!should_retry(c, &resp, tries++, &reread, deadline, &wait)) {
                        r = decode_reply(&resp, ret, err);
                        http_response_clear(&resp);
                        return r < 0 ? b4_error_wrap(err, r, "%s %s", req->method, req->path) : 0;
                }
                http_response_clear(&resp);
                if (wait > 0 && wait_ms(wait, req->cancel_fd) < 0)
                        return b4_error_set(err, -ECANCELED, "%s %s: cancelled", req->method,
                                            req->path);
        }
}

/* A shorthand: the reply's body into *ret (or dropped). */
static int simple(struct kube_client *c,
                  const char *method,
                  const char *path,
                  const char *query,
                  const struct jv *body,
                  struct jv **ret,
                  struct b4_error *err)
{
        struct kube_req req = {
                .method = method, .path = path, .query = query, .body = body, .cancel_fd = -EBADF
        };
        struct kube_reply reply = { 0 };
        int r = kube_request(c, &req, &reply, err);

        if (r < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(reply.body);
        kube_reply_clear(&reply);
        return 0;
}

int kube_get(struct kube_client *c, const char *path, struct jv **ret, struct b4_error *err)
{
        return simple(c, "GET", path, NULL, NULL, ret, err);
}

int kube_create(struct kube_client *c,
                const char *path,
                const struct jv *obj,
                struct jv **ret,
                struct b4_error *err)
{
        return simple(c, "POST", path, NULL, obj, ret, err);
}

int kube_replace(struct kube_client *c,
                 const char *path,
                 const struct jv *obj,
                 struct jv **ret,
                 struct b4_error *err)
{
        return simple(c, "PUT", path, NULL, obj, ret, err);
}

int kube_patch(struct kube_client *c,
               const char *path,
               const struct jv *patch,
               struct jv **ret,
               struct b4_error *err)
{
        return simple(c, "PATCH", path, NULL, patch, ret, err);
}

int kube_delete(struct kube_client *c, const char *path, const char *query, struct b4_error *err)
{
        return simple(c, "DELETE", path, query, NULL, NULL, err);
}

int kube_delete_listed(struct kube_client *c,
                       const char *path,
                       const char *query,
                       const struct jv *listed,
                       struct b4_error *err)
{
        const struct jv *m = jv_object_get(listed, "metadata");
        cleanup_(jv_unrefp) struct jv *body =
                jv_pack("{s:s, s:s, s:{s:s, s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                        "preconditions", "uid", jv_string(jv_object_get(m, "uid")) ?: "",
                        "resourceVersion", jv_string(jv_object_get(m, "resourceVersion")) ?: "");

        if (!body)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return simple(c, "DELETE", path, query, body, NULL, err);
}

/* A non-2xx stream's (capped) body decoded as a Status. */
static int stream_error(struct http_stream *s, int cancel_fd, struct b4_error *err)
{
        char *buf = b4_malloc(ERROR_BODY_MAX);
        size_t len = 0;
        ssize_t k = 1;
        int r;

        if (!buf)
                return b4_error_set(err, -ENOMEM, "out of memory");
        while (len < ERROR_BODY_MAX && k > 0) {
                k = http_stream_read(s, buf + len, ERROR_BODY_MAX - len, now_msec() + 5000,
                                     cancel_fd, NULL);
                len += k > 0 ? (size_t)k : 0;
        }
        r = kube_status_decode(http_stream_status(s), buf, len, err);
        free(buf);
        return r;
}

int kube_stream_open(struct kube_client *c,
                     const char *path_query,
                     int cancel_fd,
                     struct http_stream **ret,
                     struct b4_error *err)
{
        uint64_t deadline = now_msec() + DEFAULT_TIMEOUT_MS;
        bool reread = false;
        int r;

        for (;;) {
                struct http_req hr = { .method = "GET",
                                       .path = path_query,
                                       .accept = "application/json",
                                       .timeout_ms = DEFAULT_TIMEOUT_MS };
                struct http_stream *s = NULL;
                char *token = NULL;
                r = throttle(c, deadline, cancel_fd, err);
                if (r >= 0)
                        r = kube_token_get(&c->token, &token, err);
                if (r < 0)
                        return r;
                hr.bearer = token;
                r = http_stream_open(c->http, &hr, cancel_fd, &s, err);
                if (token)
                        explicit_bzero(token, strlen(token));
                free(token);
                if (r < 0)
                        return r;
                long status = http_stream_status(s);
                if (status >= 200 && status <= 299) {
                        *ret = s;
                        return 0;
                }
                if (status == 401 && !reread && c->token.file) {
                        reread = true;
                        kube_token_invalidate(&c->token);
                        http_stream_free(s);
                        continue;
                }
                r = stream_error(s, cancel_fd, err);
                http_stream_free(s);
                return r;
        }
}
