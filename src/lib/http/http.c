/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl behind a pull API: each stream owns an easy handle inside its own multi handle.
 * http_stream_read() drives the transfer with curl_multi_perform()/curl_multi_poll() only
 * while the caller asks for bytes, so a stream the caller stops reading stops transferring
 * (curl pauses the socket when our write callback reports a full buffer). The buffered and
 * the callback forms are loops over the pull API: one transfer engine.
 *
 * A client with reuse (http_client_set_reuse()) keeps the handles of finished exchanges in
 * a pool: a multi handle holds its connection cache, so the next exchange that takes it
 * sends on the connection the last one left open. A request body is read through a callback
 * that cannot rewind, so libcurl re-sends a request on a fresh connection only when none of
 * its body had been written (see http.h). The process-wide TLS state (the session share,
 * the parsed CA stores) is tls.c's.
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
#include "base/strbuf.h"
#include "base/strv.h"
#include "base/time-util.h"

#define PENDING_MAX       (256u * 1024)
#define DEFAULT_OPEN_MS   60000
#define POLL_SLICE_MAX_MS 1000
#define IDLE_MAX          64u

/* A PEM item held in memory (struct curl_blob points at it for each transfer). */
struct tls_blob {
        void *data;
        size_t len;
};

/* One transfer engine: an easy handle and the multi handle that drives it (and caches the
 * connections its transfers leave open). */
struct handle {
        CURLM *multi;
        CURL *easy;
};

struct http_client {
        char *target;      /* as given */
        char *socket_path; /* NULL for TCP */
        char *base_url;    /* "http://localhost" for a socket, else the URL without its '/' */
        char *auth_header; /* "Authorization: Bearer ..." or NULL */
        struct tls_blob ca, cert, key;
        char *ca_file, *cert_file, *key_file;
        bool insecure;
        pthread_mutex_t pool_lock; /* idle[], n_idle, connects */
        struct handle *idle;       /* handles of finished exchanges, their connections kept */
        size_t n_idle, idle_max;   /* idle_max 0: no reuse */
        uint64_t connects;         /* connections opened by the client's exchanges */
};

struct http_stream {
        struct http_client *client;
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
        const char *target; /* the client's, for messages */
        const char *up;     /* the request body (borrowed), read by on_upload() */
        size_t up_len, up_off;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
        curl_init_result = curl_global_init(CURL_GLOBAL_SSL);
}

static void free_secret(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

static uint64_t deadline_after(uint64_t timeout_ms)
{
        uint64_t now = now_msec();

        if (timeout_ms == HTTP_NO_TIMEOUT)
                return 0;
        timeout_ms = timeout_ms ? timeout_ms : DEFAULT_OPEN_MS;
        return timeout_ms > UINT64_MAX - now ? 0 : now + timeout_ms;
}

static int parse_target(struct http_client *c, const char *target, struct b4_error *err)
{
        const char *sock = strncmp(target, "unix:", 5) == 0 ? target + 5 : target;
        size_t n;

        if (sock[0] == '/') {
                c->socket_path = b4_strdup(sock);
                c->base_url = b4_strdup("http://localhost");
                return c->socket_path && c->base_url ? 0 : -ENOMEM;
        }
        if (sock != target ||
            (strncmp(target, "http://", 7) != 0 && strncmp(target, "https://", 8) != 0))
                return b4_error_set(err, -EINVAL,
                                    "server '%s' is not an absolute unix socket path, unix:/path "
                                    "or an http(s):// URL",
                                    target);
        n = strlen(target);
        while (n > 0 && target[n - 1] == '/')
                n--;
        c->base_url = b4_strndup(target, n);
        return c->base_url ? 0 : -ENOMEM;
}

int http_client_new(const char *target, struct http_client **ret, struct b4_error *err)
{
        struct http_client *c;
        int r;

        (void)pthread_once(&curl_once, curl_init);
        if (curl_init_result != CURLE_OK)
                return b4_error_set(err, -EIO, "libcurl initialisation failed: %s",
                                    curl_easy_strerror(curl_init_result));
        c = b4_calloc(1, sizeof(*c));
        if (!c)
                return b4_error_set(err, -ENOMEM, "out of memory");
        (void)pthread_mutex_init(&c->pool_lock, NULL);
        c->target = b4_strdup(target ? target : "");
        r = c->target ? parse_target(c, c->target, err) : -ENOMEM;
        if (r < 0) {
                http_client_free(c);
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
        }
        *ret = c;
        return 0;
}

/* A token fit for a header line: no control character. */
static bool token_ok(const char *token)
{
        for (const char *p = token; p && *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* "Authorization: Bearer @token" in *ret (heap; NULL for no token). Return: 0, -EINVAL (a
 * control character), -ENOMEM. */
static int auth_header(const char *token, char **ret)
{
        *ret = NULL;
        if (!token_ok(token))
                return -EINVAL;
        if (token && b4_asprintf(ret, "Authorization: Bearer %s", token) < 0)
                return -ENOMEM;
        return 0;
}

int http_client_set_token(struct http_client *c, const char *token)
{
        char *h = NULL;
        int r = auth_header(token, &h);

        if (r < 0)
                return r;
        free_secret(c->auth_header);
        c->auth_header = h;
        return 0;
}

static void blob_clear(struct tls_blob *b)
{
        if (b->data)
                explicit_bzero(b->data, b->len);
        free(b->data);
        *b = (struct tls_blob){ 0 };
}

static void tls_clear(struct http_client *c)
{
        blob_clear(&c->ca);
        blob_clear(&c->cert);
        blob_clear(&c->key);
        free(c->ca_file);
        free(c->cert_file);
        free(c->key_file);
        c->ca_file = c->cert_file = c->key_file = NULL;
        c->insecure = false;
}

/* One PEM item: a file or bytes. Return: 0, -EINVAL (both), -ENOMEM. */
static int tls_item(
        const char *file, const void *pem, size_t len, char **ret_file, struct tls_blob *ret_blob)
{
        if (file && pem)
                return -EINVAL;
        if (file && !(*ret_file = b4_strdup(file)))
                return -ENOMEM;
        if (pem) {
                ret_blob->data = b4_malloc(len ? len : 1);
                if (!ret_blob->data)
                        return -ENOMEM;
                memcpy(ret_blob->data, pem, len);
                ret_blob->len = len;
        }
        return 0;
}

int http_client_set_tls(struct http_client *c, const struct http_tls *tls, struct b4_error *err)
{
        bool cert = tls->cert_file || tls->cert_pem, key = tls->key_file || tls->key_pem;
        int r;

        if (c->socket_path || strncmp(c->base_url, "https://", 8) != 0)
                return b4_error_set(err, -EINVAL, "TLS settings for '%s', which is not https://",
                                    c->target);
        if (cert != key)
                return b4_error_set(err, -EINVAL,
                                    "a client certificate needs its key and the key "
                                    "its certificate");
        tls_clear(c);
        r = tls_item(tls->ca_file, tls->ca_pem, tls->ca_pem_len, &c->ca_file, &c->ca);
        if (r >= 0)
                r = tls_item(tls->cert_file, tls->cert_pem, tls->cert_pem_len, &c->cert_file,
                             &c->cert);
        if (r >= 0)
                r = tls_item(tls->key_file, tls->key_pem, tls->key_pem_len, &c->key_file, &c->key);
        if (r < 0) {
                tls_clear(c);
                return r == -EINVAL ? b4_error_set(err, r,
                                                   "a TLS item given as a file and as "
                                                   "bytes")
                                    : b4_error_set(err, r, "out of memory");
        }
        c->insecure = tls->insecure;
        return 0;
}

static void handle_cleanup(struct handle *h)
{
        if (h->easy)
                curl_easy_cleanup(h->easy);
        if (h->multi)
                (void)curl_multi_cleanup(h->multi); /* closes its cached connections */
        *h = (struct handle){ 0 };
}

int http_client_set_reuse(struct http_client *c, size_t idle_max)
{
        struct handle *idle = NULL;

        if (idle_max > IDLE_MAX)
                return -EINVAL;
        if (idle_max && !(idle = b4_calloc(idle_max, sizeof(*idle))))
                return -ENOMEM;
        for (size_t i = 0; i < c->n_idle; i++)
                handle_cleanup(&c->idle[i]);
        free(c->idle);
        c->idle = idle;
        c->n_idle = 0;
        c->idle_max = idle_max;
        return 0;
}

uint64_t http_client_connections(struct http_client *c)
{
        uint64_t n;

        (void)pthread_mutex_lock(&c->pool_lock);
        n = c->connects;
        (void)pthread_mutex_unlock(&c->pool_lock);
        return n;
}

/* An idle handle of the pool, else a new one. Return: 0, -ENOMEM. */
static int handle_take(struct http_client *c, struct handle *ret)
{
        *ret = (struct handle){ 0 };
        if (c->idle_max) {
                (void)pthread_mutex_lock(&c->pool_lock);
                if (c->n_idle > 0)
                        *ret = c->idle[--c->n_idle];
                (void)pthread_mutex_unlock(&c->pool_lock);
        }
        if (!ret->multi)
                *ret = (struct handle){ .multi = curl_multi_init(), .easy = curl_easy_init() };
        if (ret->multi && ret->easy)
                return 0;
        handle_cleanup(ret);
        return -ENOMEM;
}

/* Back to the pool (its connection, when the exchange ended cleanly, kept), or freed. */
static void handle_give(struct http_client *c, struct handle *h)
{
        bool kept = false;

        if (c->idle_max) {
                curl_easy_reset(h->easy);
                (void)pthread_mutex_lock(&c->pool_lock);
                if (c->n_idle < c->idle_max) {
                        c->idle[c->n_idle++] = *h;
                        kept = true;
                }
                (void)pthread_mutex_unlock(&c->pool_lock);
        }
        if (!kept)
                handle_cleanup(h);
        *h = (struct handle){ 0 };
}

struct http_client *http_client_free(struct http_client *c)
{
        if (c) {
                (void)http_client_set_reuse(c, 0);
                (void)pthread_mutex_destroy(&c->pool_lock);
                free_secret(c->auth_header);
                tls_clear(c);
                free(c->target);
                free(c->socket_path);
                free(c->base_url);
                free(c);
        }
        return NULL;
}

const char *http_client_socket(const struct http_client *c)
{
        return c->socket_path;
}

const char *http_client_target(const struct http_client *c)
{
        return c->target;
}

/*
 * A header line as kept: a CR, LF or NUL inside it becomes a space (RFC 9110 5.5 lets a
 * recipient do so), then the line end and the value's trailing blanks go. Return: heap.
 */
static char *header_line(const char *data, size_t len)
{
        char *h = b4_malloc(len + 1);

        if (!h)
                return NULL;
        for (size_t i = 0; i < len; i++)
                h[i] = data[i] == '\r' || data[i] == '\n' || data[i] == '\0' ? ' ' : data[i];
        while (len > 0 && (h[len - 1] == ' ' || h[len - 1] == '\t'))
                len--;
        h[len] = '\0';
        return h;
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
        if (strv_consume(&s->resp_headers, header_line(data, len)) < 0)
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
                        long connects = 0;
                        s->done = true;
                        s->result = m->data.result;
                        (void)curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
                        (void)curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
                        (void)pthread_mutex_lock(&s->client->pool_lock);
                        s->client->connects += connects > 0 ? (uint64_t)connects : 0;
                        (void)pthread_mutex_unlock(&s->client->pool_lock);
                }
}

static int transfer_error(struct http_stream *s, struct b4_error *err)
{
        const char *why = s->curl_err[0] ? s->curl_err : curl_easy_strerror(s->result);

        if (s->result == CURLE_COULDNT_CONNECT)
                return b4_error_set(err, -ECONNREFUSED, "cannot connect to %s: %s", s->target, why);
        if (s->result == CURLE_COULDNT_RESOLVE_HOST)
                return b4_error_set(err, -EHOSTUNREACH, "cannot reach %s: %s", s->target, why);
        if (s->result == CURLE_OPERATION_TIMEDOUT)
                return b4_error_set(err, -ETIMEDOUT, "%s: %s", s->target, why);
        if (s->result == CURLE_SEND_FAIL_REWIND) /* see on_upload() */
                return b4_error_set(err, -ECONNRESET,
                                    "the kept connection to %s closed after the request was "
                                    "sent, before an answer: not sent again (it may have been "
                                    "applied)",
                                    s->target);
        return b4_error_set(err, -EIO, "%s: %s", s->target, why);
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

static int blob_opt(CURL *e, CURLoption opt, const struct tls_blob *b)
{
        struct curl_blob blob = { .data = b->data, .len = b->len, .flags = CURL_BLOB_COPY };

        return b->data ? (int)curl_easy_setopt(e, opt, &blob) : 0;
}

/* The client's TLS settings on @e. Return: 0, or nonzero (a curl code) on failure. */
static int tls_setup(CURL *e, const struct http_client *c)
{
        int r = 0;

        /* the CA given and only it: not also the system's directory (libcurl's CApath) */
        if ((c->ca_file || c->ca.data) &&
            http_curl_trust(e, c->ca_file, c->ca.data, c->ca.len) < 0) {
                if (c->ca_file)
                        r |= curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
                r |= blob_opt(e, CURLOPT_CAINFO_BLOB, &c->ca);
                r |= curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
        }
        if (c->cert_file)
                r |= curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
        r |= blob_opt(e, CURLOPT_SSLCERT_BLOB, &c->cert);
        if (c->key_file)
                r |= curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
        r |= blob_opt(e, CURLOPT_SSLKEY_BLOB, &c->key);
        if (c->insecure) {
                r |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
                r |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        return r;
}

/*
 * The request body, for libcurl to send. No seek callback: when a kept connection dies
 * after some of the body was written and before any answer, libcurl would re-send the
 * request on a new connection; it cannot rewind this, so the exchange fails
 * (CURLE_SEND_FAIL_REWIND) and the caller decides. With nothing written yet, it re-sends.
 */
static size_t on_upload(char *buf, size_t size, size_t n, void *userdata)
{
        struct http_stream *s = userdata;
        size_t k = s->up_len - s->up_off;

        if (k > size * n)
                k = size * n;
        memcpy(buf, s->up + s->up_off, k);
        s->up_off += k;
        return k;
}

static int stream_setup(struct http_stream *s, struct http_client *c, const struct http_req *req)
{
        cleanup_free char *url = NULL;
        cleanup_free char *ctype = NULL;
        CURL *e = s->easy;
        int r = 0;

        if (b4_asprintf(&url, "%s%s", c->base_url, req->path) < 0)
                return -ENOMEM;
        s->headers = curl_slist_append(s->headers, "Expect:");
        if (req->bearer) {
                char *h = NULL;
                r = auth_header(req->bearer, &h);
                if (r < 0)
                        return r;
                if (s->headers)
                        s->headers = curl_slist_append(s->headers, h);
                free_secret(h);
        } else if (s->headers && c->auth_header)
                s->headers = curl_slist_append(s->headers, c->auth_header);
        if (req->content_type) {
                if (b4_asprintf(&ctype, "Content-Type: %s", req->content_type) < 0)
                        return -ENOMEM;
                s->headers = curl_slist_append(s->headers, ctype);
        }
        if (req->accept && s->headers) {
                cleanup_free char *accept = NULL;
                if (b4_asprintf(&accept, "Accept: %s", req->accept) < 0)
                        return -ENOMEM;
                s->headers = curl_slist_append(s->headers, accept);
        }
        if (!s->headers)
                return -ENOMEM;
        if (c->socket_path)
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
        r |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        if (c->idle_max && http_curl_share())
                r |= curl_easy_setopt(e, CURLOPT_SHARE, http_curl_share());
        if (c->idle_max) /* before a server's idle timeout (commonly 90 s) closes it */
                r |= curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, (long)HTTP_IDLE_REUSE_S);
        r |= tls_setup(e, c);
        if (strcmp(req->method, "HEAD") == 0)
                r |= curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        else if (strcmp(req->method, "GET") != 0)
                r |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
        if (req->content_type || strcmp(req->method, "POST") == 0) {
                s->up = req->body ? req->body : "";
                s->up_len = req->body ? req->body_len : 0;
                r |= curl_easy_setopt(e, CURLOPT_POST, 1L);
                r |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->up_len);
                r |= curl_easy_setopt(e, CURLOPT_READFUNCTION, on_upload);
                r |= curl_easy_setopt(e, CURLOPT_READDATA, s);
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
        struct handle h;
        uint64_t deadline;
        int r;

        s = b4_calloc(1, sizeof(*s));
        if (!s || handle_take(c, &h) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        s->client = c;
        s->target = c->target;
        s->multi = h.multi;
        s->easy = h.easy;
        if (req->bearer && !token_ok(req->bearer))
                return b4_error_set(err, -EINVAL, "a bearer token with a control character");
        r = stream_setup(s, c, req);
        if (r < 0)
                return b4_error_set(err, r, "cannot set up the request");
        if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK)
                return b4_error_set(err, -ENOMEM, "cannot start the request");
        deadline = deadline_after(req->timeout_ms);
        while (!s->head_done && !s->done) {
                r = pump(s, deadline, cancel_fd, err);
                if (r < 0)
                        return r;
        }
        /* a complete head is an answer: a body cut short fails at a read, after its bytes */
        if (s->done && s->result != CURLE_OK && !s->head_done)
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
        /* an unfinished transfer closes its connection: only a clean end keeps one */
        if (s->easy) {
                (void)curl_multi_remove_handle(s->multi, s->easy);
                handle_give(s->client, &(struct handle){ .multi = s->multi, .easy = s->easy });
        }
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

/* Fail before reading a body that Content-Length already says is too large. */
static int check_length(struct http_stream *s, size_t max_body, struct b4_error *err)
{
        curl_off_t cl = -1;

        (void)curl_easy_getinfo(s->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        if (cl > 0 && (uint64_t)cl > max_body)
                return b4_error_set(err, -EFBIG, "response from %s is larger than %zu bytes",
                                    s->target, max_body);
        return 0;
}

static int keep_header(struct http_stream *s, const char *name, struct http_response *ret)
{
        const char *h = name ? http_stream_header(s, name) : NULL;

        ret->status = http_stream_status(s);
        ret->header_value = NULL;
        if (h && !(ret->header_value = b4_strdup(h)))
                return -ENOMEM;
        return 0;
}

/* Hand the body to @sink until it ends, the sink stops, the deadline passes or cancel. */
static int pump_body(struct http_stream *s,
                     uint64_t deadline,
                     const struct http_sink *sink,
                     size_t *ret_len,
                     struct b4_error *err)
{
        char buf[16384];
        ssize_t k;
        int r;

        while ((k = http_stream_read(s, buf, sizeof(buf), deadline, sink->cancel_fd, err)) > 0) {
                r = sink->on_chunk(s->status, buf, (size_t)k, sink->userdata);
                if (r < 0)
                        return r;
                *ret_len += (size_t)k;
        }
        return (int)k;
}

int http_request_each(struct http_client *c,
                      const struct http_req *req,
                      const struct http_sink *sink,
                      struct http_response *ret,
                      struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        struct http_response resp = { 0 };
        int r;

        r = http_stream_open(c, req, sink->cancel_fd, &s, err);
        if (r < 0)
                return r;
        if (keep_header(s, sink->header, &resp) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = pump_body(s, 0, sink, &resp.len, err);
        if (r < 0) {
                http_response_clear(&resp);
                return r;
        }
        *ret = resp;
        return 0;
}

struct collect {
        struct strbuf sb;
        const char *target;
        struct b4_error *err;
};

static int collect_chunk(long status, const void *data, size_t len, void *userdata)
{
        struct collect *col = userdata;
        int r = strbuf_add(&col->sb, data, len);

        (void)status;
        if (r == -E2BIG)
                return b4_error_set(col->err, -EFBIG, "response from %s is larger than %zu bytes",
                                    col->target, col->sb.max);
        return r < 0 ? b4_error_set(col->err, r, "out of memory") : 0;
}

int http_request(struct http_client *c,
                 const struct http_req *req,
                 size_t max_body,
                 const char *header,
                 struct http_response *ret,
                 struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        struct collect col = { .target = c->target, .err = err };
        struct http_sink sink = { .on_chunk = collect_chunk,
                                  .userdata = &col,
                                  .cancel_fd = -EBADF };
        struct http_response resp = { 0 };
        uint64_t deadline = deadline_after(req->timeout_ms);
        int r;

        r = http_stream_open(c, req, -EBADF, &s, err);
        if (r < 0)
                return r;
        r = check_length(s, max_body, err);
        if (r < 0)
                return r;
        strbuf_init(&col.sb, max_body);
        r = pump_body(s, deadline, &sink, &resp.len, err);
        if (r >= 0 && keep_header(s, header, &resp) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = strbuf_detach(&col.sb, &resp.body, &resp.len);
        strbuf_release(&col.sb);
        if (r < 0) {
                http_response_clear(&resp);
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
        }
        *ret = resp;
        return 0;
}
