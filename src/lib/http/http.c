/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl behind a pull API: each stream owns an easy handle inside its own multi handle.
 * http_stream_read() drives the transfer with curl_multi_perform()/curl_multi_poll() only
 * while the caller asks for bytes, so a stream the caller stops reading stops transferring
 * (curl pauses the socket when our write callback reports a full buffer).
 */

#include "http/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"

#define PENDING_MAX       (256u * 1024)
#define DEFAULT_OPEN_MS   60000
#define POLL_SLICE_MAX_MS 1000

struct http_client {
        char *socket_path;
};

struct http_stream {
        CURLM *multi;
        CURL *easy;
        struct curl_slist *headers;
        char **resp_headers; /* "name: value" lines of the final response */
        bool head_done;
        bool done;
        CURLcode result;
        char curl_err[CURL_ERROR_SIZE];
        char *pending; /* body bytes received but not yet read */
        size_t pending_len, pending_off;
        bool paused;
        long status;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
        curl_init_result = curl_global_init(CURL_GLOBAL_NOTHING);
}

int http_client_new(const char *socket_path, struct http_client **ret, struct b4_error *err)
{
        struct http_client *c;

        if (!socket_path || socket_path[0] != '/')
                return b4_error_set(err, -EINVAL, "socket path '%s' is not absolute",
                                    socket_path ? socket_path : "");
        (void)pthread_once(&curl_once, curl_init);
        if (curl_init_result != CURLE_OK)
                return b4_error_set(err, -EIO, "libcurl initialisation failed: %s",
                                    curl_easy_strerror(curl_init_result));
        c = b4_calloc(1, sizeof(*c));
        if (!c || !(c->socket_path = b4_strdup(socket_path))) {
                free(c);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = c;
        return 0;
}

struct http_client *http_client_free(struct http_client *c)
{
        if (c) {
                free(c->socket_path);
                free(c);
        }
        return NULL;
}

const char *http_client_socket(const struct http_client *c)
{
        return c->socket_path;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
        struct http_stream *s = userdata;
        size_t len = size * n;

        if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
                s->resp_headers = strv_free(s->resp_headers); /* a new (final) response */
                s->head_done = false;
                return len;
        }
        if (len <= 2 && (data[0] == '\r' || data[0] == '\n')) {
                (void)curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
                if (s->status >= 200)
                        s->head_done = true;
                return len;
        }
        while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
                len--;
        if (strv_consume(&s->resp_headers, b4_strndup(data, len)) < 0)
                return 0;
        return size * n;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
        struct http_stream *s = userdata;
        size_t len = size * n;
        char *p;

        if (s->pending_off > 0 && s->pending_off == s->pending_len)
                s->pending_off = s->pending_len = 0;
        if (s->pending_len - s->pending_off >= PENDING_MAX) {
                s->paused = true;
                return CURL_WRITEFUNC_PAUSE;
        }
        p = b4_realloc(s->pending, s->pending_len + len + 1);
        if (!p)
                return 0;
        s->pending = p;
        memcpy(p + s->pending_len, data, len);
        s->pending_len += len;
        s->head_done = true;
        return len;
}

static void collect_done(struct http_stream *s)
{
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(s->multi, &left)))
                if (m->msg == CURLMSG_DONE) {
                        s->done = true;
                        s->result = m->data.result;
                        (void)curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
                }
}

static int transfer_error(struct http_stream *s, struct b4_error *err)
{
        const char *why = s->curl_err[0] ? s->curl_err : curl_easy_strerror(s->result);

        if (s->result == CURLE_COULDNT_CONNECT)
                return b4_error_set(err, -ECONNREFUSED, "cannot connect: %s", why);
        if (s->result == CURLE_OPERATION_TIMEDOUT)
                return b4_error_set(err, -ETIMEDOUT, "%s", why);
        return b4_error_set(err, -EIO, "%s", why);
}

/* One step of the transfer: wait for socket activity (or the deadline/cancel), then run. */
static int pump(struct http_stream *s, uint64_t deadline_ms, int cancel_fd, struct b4_error *err)
{
        struct curl_waitfd extra = { .fd = cancel_fd, .events = CURL_WAIT_POLLIN };
        uint64_t now = now_msec();
        int timeout = POLL_SLICE_MAX_MS, running, numfds = 0;

        if (deadline_ms && now >= deadline_ms)
                return b4_error_set(err, -ETIMEDOUT, "timed out");
        if (deadline_ms && deadline_ms - now < (uint64_t)timeout)
                timeout = (int)(deadline_ms - now);
        if (s->paused) {
                s->paused = false;
                (void)curl_easy_pause(s->easy, CURLPAUSE_CONT);
        }
        if (curl_multi_perform(s->multi, &running) != CURLM_OK)
                return b4_error_set(err, -EIO, "curl_multi_perform failed");
        collect_done(s);
        if (s->done || s->head_done || s->pending_len > s->pending_off)
                return 0;
        if (curl_multi_poll(s->multi, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                            timeout, &numfds) != CURLM_OK)
                return b4_error_set(err, -EIO, "curl_multi_poll failed");
        if (cancel_fd >= 0 && (extra.revents & CURL_WAIT_POLLIN))
                return b4_error_set(err, -ECANCELED, "cancelled");
        return 0;
}

static int stream_setup(struct http_stream *s, struct http_client *c, const struct http_req *req)
{
        cleanup_free char *url = NULL;
        cleanup_free char *ctype = NULL;
        CURL *e = s->easy;
        int r = 0;

        if (b4_asprintf(&url, "http://docker%s", req->path) < 0)
                return -ENOMEM;
        s->headers = curl_slist_append(s->headers, "Expect:");
        if (req->content_type) {
                if (b4_asprintf(&ctype, "Content-Type: %s", req->content_type) < 0)
                        return -ENOMEM;
                s->headers = curl_slist_append(s->headers, ctype);
        }
        if (!s->headers)
                return -ENOMEM;
        r |= curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
        r |= curl_easy_setopt(e, CURLOPT_URL, url);
        r |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers);
        r |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->curl_err);
        r |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        r |= curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
        r |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        r |= curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
        r |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        r |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        if (strcmp(req->method, "HEAD") == 0)
                r |= curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        else if (strcmp(req->method, "GET") != 0)
                r |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
        if (req->content_type || strcmp(req->method, "POST") == 0) {
                r |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
                r |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        }
        return r == 0 ? 0 : -EINVAL;
}

int http_stream_open(struct http_client *c,
                     const struct http_req *req,
                     int cancel_fd,
                     struct http_stream **ret,
                     struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        uint64_t deadline;
        int r;

        s = b4_calloc(1, sizeof(*s));
        if (!s)
                return b4_error_set(err, -ENOMEM, "out of memory");
        s->multi = curl_multi_init();
        s->easy = curl_easy_init();
        if (!s->multi || !s->easy)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = stream_setup(s, c, req);
        if (r < 0)
                return b4_error_set(err, r, "cannot set up the request");
        if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK)
                return b4_error_set(err, -ENOMEM, "cannot start the request");
        deadline = now_msec() + (req->timeout_ms ? req->timeout_ms : DEFAULT_OPEN_MS);
        while (!s->head_done && !s->done) {
                r = pump(s, deadline, cancel_fd, err);
                if (r < 0)
                        return r;
        }
        if (s->done && s->result != CURLE_OK)
                return transfer_error(s, err);
        *ret = TAKE_PTR(s);
        return 0;
}

long http_stream_status(const struct http_stream *s)
{
        return s->status;
}

const char *http_stream_header(const struct http_stream *s, const char *name)
{
        size_t n = strlen(name);

        STRV_FOREACH (h, s->resp_headers)
                if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':') {
                        const char *v = *h + n + 1;
                        while (*v == ' ' || *v == '\t')
                                v++;
                        return v;
                }
        return NULL;
}

ssize_t http_stream_read(struct http_stream *s,
                         void *buf,
                         size_t n,
                         uint64_t deadline_ms,
                         int cancel_fd,
                         struct b4_error *err)
{
        int r;

        for (;;) {
                size_t avail = s->pending_len - s->pending_off;

                if (avail > 0) {
                        size_t k = avail < n ? avail : n;
                        memcpy(buf, s->pending + s->pending_off, k);
                        s->pending_off += k;
                        return (ssize_t)k;
                }
                if (s->done)
                        return s->result == CURLE_OK ? 0 : transfer_error(s, err);
                s->pending_off = s->pending_len = 0;
                s->head_done = false; /* make pump() wait for new bytes */
                r = pump(s, deadline_ms, cancel_fd, err);
                s->head_done = true;
                if (r < 0)
                        return r;
        }
}

struct http_stream *http_stream_free(struct http_stream *s)
{
        if (!s)
                return NULL;
        if (s->multi && s->easy)
                (void)curl_multi_remove_handle(s->multi, s->easy);
        if (s->easy)
                curl_easy_cleanup(s->easy);
        if (s->multi)
                (void)curl_multi_cleanup(s->multi);
        curl_slist_free_all(s->headers);
        strv_free(s->resp_headers);
        free(s->pending);
        free(s);
        return NULL;
}

void http_response_clear(struct http_response *r)
{
        free(r->body);
        free(r->header_value);
        *r = (struct http_response){ 0 };
}

int http_request(struct http_client *c,
                 const struct http_req *req,
                 size_t max_body,
                 const char *header,
                 struct http_response *ret,
                 struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *body = NULL;
        size_t len = 0, cap = 0;
        uint64_t deadline = now_msec() + (req->timeout_ms ? req->timeout_ms : DEFAULT_OPEN_MS);
        const char *h;
        int r;

        r = http_stream_open(c, req, -EBADF, &s, err);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t k;

                if (cap - len < 4096) {
                        char *p;
                        cap = cap ? cap * 2 : 8192;
                        p = b4_realloc(body, cap + 1);
                        if (!p)
                                return b4_error_set(err, -ENOMEM, "out of memory");
                        body = p;
                }
                k = http_stream_read(s, body + len, cap - len, deadline, -EBADF, err);
                if (k < 0)
                        return (int)k;
                if (k == 0)
                        break;
                len += (size_t)k;
                if (len > max_body)
                        return b4_error_set(err, -E2BIG, "response larger than %zu bytes",
                                            max_body);
        }
        if (!body && !(body = b4_malloc(1)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        body[len] = '\0';
        h = header ? http_stream_header(s, header) : NULL;
        *ret = (struct http_response){ .status = http_stream_status(s), .len = len };
        if (h && !(ret->header_value = b4_strdup(h)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        ret->body = TAKE_PTR(body);
        return 0;
}
