/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Engine API client. The API version is negotiated on first use with GET /version (the
 * lower of the daemon's ApiVersion and DOCKER_API_MAX; a daemon older than 1.40 is refused)
 * and every later path is prefixed with it. Non-2xx answers become -errno at this boundary
 * with the daemon's own "message" kept (STYLE.md 5.6 rule 5).
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/time-util.h"
#include "docker/docker.h"
#include "http/http.h"
#include "json/json.h"

#define MAX_JSON_RESPONSE (16u * 1024 * 1024)

struct docker_client {
        struct http_client *http;
        pthread_mutex_t lock;
        char api[16]; /* "/v1.41" once negotiated, "" before */
};

static const char *host_socket(const char *host)
{
        if (!host || !*host)
                host = getenv("DOCKER_HOST"); /* checksrc: allow */
        if (!host || !*host)
                return DOCKER_DEFAULT_SOCKET;
        if (strncmp(host, "unix://", 7) == 0)
                return host + 7;
        return host;
}

int docker_client_new(const char *host, struct docker_client **ret, struct b4_error *err)
{
        const char *sock = host_socket(host);
        struct docker_client *d;
        int r;

        if (sock[0] != '/')
                return b4_error_set(err, -EINVAL,
                                    "Docker host '%s' is not supported: only unix:// sockets are",
                                    host ? host : sock);
        d = b4_calloc(1, sizeof(*d));
        if (!d)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = http_client_new(sock, &d->http, err);
        if (r < 0) {
                free(d);
                return r;
        }
        (void)pthread_mutex_init(&d->lock, NULL);
        *ret = d;
        return 0;
}

struct docker_client *docker_client_free(struct docker_client *d)
{
        if (!d)
                return NULL;
        http_client_free(d->http);
        (void)pthread_mutex_destroy(&d->lock);
        free(d);
        return NULL;
}

const char *docker_client_socket(const struct docker_client *d)
{
        return http_client_socket(d->http);
}

static int status_errno(long status)
{
        if (status == 404)
                return -ENOENT;
        if (status == 409)
                return -EEXIST;
        if (status == 401 || status == 403)
                return -EACCES;
        if (status == 400)
                return -EINVAL;
        return -EIO;
}

static bool status_ok(long status)
{
        return (status >= 200 && status < 300) || status == 304;
}

/* Map a failed status; the message is the daemon's "message" or the raw body. */
static int status_error(long status, const char *body, size_t len, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *msg = NULL;

        if (body && len > 0 && jv_parse(body, len, &v, NULL) >= 0)
                msg = jv_string(jv_object_get(v, "message"));
        if (!msg)
                return b4_error_set(err, status_errno(status), "Docker API status %ld: %.*s",
                                    status, (int)(len > 300 ? 300 : len), body ? body : "");
        return b4_error_set(err, status_errno(status), "%s", msg);
}

static int negotiate(struct docker_client *d, struct b4_error *err)
{
        struct http_req req = { .method = "GET", .path = "/version", .timeout_ms = 10000 };
        struct http_response resp = { 0 };
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *ver;
        unsigned major = 0, minor = 0;
        int r;

        r = http_request(d->http, &req, MAX_JSON_RESPONSE, NULL, &resp, err);
        if (r < 0)
                return r;
        if (!status_ok(resp.status)) {
                r = status_error(resp.status, resp.body, resp.len, err);
                http_response_clear(&resp);
                return r;
        }
        r = jv_parse(resp.body, resp.len, &v, err);
        http_response_clear(&resp);
        if (r < 0)
                return r;
        ver = jv_string(jv_object_get(v, "ApiVersion"));
        if (!ver || sscanf(ver, "%u.%u", &major, &minor) != 2)
                return b4_error_set(err, -EPROTO, "Docker daemon reported no API version");
        if (major != 1 || minor < DOCKER_API_MIN_MINOR)
                return b4_error_set(err, -EPROTONOSUPPORT,
                                    "Docker API %s is too old (1.%d or newer is needed)", ver,
                                    DOCKER_API_MIN_MINOR);
        if (minor > 41)
                minor = 41;
        (void)snprintf(d->api, sizeof(d->api), "/v1.%u", minor);
        return 0;
}

static int versioned(struct docker_client *d, const char *path, char **ret, struct b4_error *err)
{
        int r = 0;

        (void)pthread_mutex_lock(&d->lock);
        if (!d->api[0])
                r = negotiate(d, err);
        (void)pthread_mutex_unlock(&d->lock);
        if (r < 0)
                return r;
        if (b4_asprintf(ret, "%s%s", d->api, path) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

int docker_call_raw(struct docker_client *d,
                    const char *method,
                    const char *path,
                    const char *ctype,
                    const void *body,
                    size_t len,
                    uint64_t timeout_ms,
                    struct b4_error *err)
{
        cleanup_free char *full = NULL;
        struct http_response resp = { 0 };
        struct http_req req = { .method = method,
                                .content_type = ctype,
                                .body = body,
                                .body_len = len,
                                .timeout_ms = timeout_ms };
        int r;

        r = versioned(d, path, &full, err);
        if (r < 0)
                return r;
        req.path = full;
        r = http_request(d->http, &req, MAX_JSON_RESPONSE, NULL, &resp, err);
        if (r < 0)
                return r;
        if (!status_ok(resp.status))
                r = status_error(resp.status, resp.body, resp.len, err);
        http_response_clear(&resp);
        return r;
}

int docker_call(struct docker_client *d,
                const char *method,
                const char *path,
                const struct jv *body,
                struct jv **ret_json,
                struct b4_error *err)
{
        cleanup_free char *full = NULL;
        cleanup_free char *json = NULL;
        struct http_response resp = { 0 };
        struct http_req req = { .method = method };
        int r;

        r = versioned(d, path, &full, err);
        if (r < 0)
                return r;
        if (body && jv_dump(body, 0, &json) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        req = (struct http_req){ .method = method,
                                 .path = full,
                                 .content_type = json ? "application/json" : NULL,
                                 .body = json,
                                 .body_len = json ? strlen(json) : 0,
                                 .timeout_ms = strstr(path, "/wait") ? 600000 : 0 };
        r = http_request(d->http, &req, MAX_JSON_RESPONSE, NULL, &resp, err);
        if (r < 0)
                return r;
        if (!status_ok(resp.status))
                r = status_error(resp.status, resp.body, resp.len, err);
        else if (ret_json && resp.len > 0)
                r = jv_parse(resp.body, resp.len, ret_json, err);
        else if (ret_json)
                *ret_json = NULL;
        http_response_clear(&resp);
        return r;
}

/* Read what is left of a failed stream's body for its message. */
static int stream_error(struct http_stream *s, struct b4_error *err)
{
        char buf[4096];
        size_t len = 0;
        ssize_t k;

        while (len < sizeof(buf) - 1 &&
               (k = http_stream_read(s, buf + len, sizeof(buf) - 1 - len, 0, -EBADF, NULL)) > 0)
                len += (size_t)k;
        buf[len] = '\0';
        return status_error(http_stream_status(s), buf, len, err);
}

int docker_stream(struct docker_client *d,
                  const char *method,
                  const char *path,
                  const struct jv *body,
                  int cancel_fd,
                  struct http_stream **ret,
                  struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *full = NULL;
        cleanup_free char *json = NULL;
        struct http_req req;
        int r;

        r = versioned(d, path, &full, err);
        if (r < 0)
                return r;
        if (body && jv_dump(body, 0, &json) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        req = (struct http_req){ .method = method,
                                 .path = full,
                                 .content_type = json ? "application/json" : NULL,
                                 .body = json,
                                 .body_len = json ? strlen(json) : 0 };
        r = http_stream_open(d->http, &req, cancel_fd, &s, err);
        if (r < 0)
                return r;
        if (!status_ok(http_stream_status(s)))
                return stream_error(s, err);
        *ret = TAKE_PTR(s);
        return 0;
}

#define SAVE_STALL_MS 60000

int docker_image_save(struct docker_client *d, const char *ref, int out_fd, struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *enc = NULL, *path = NULL;
        char buf[64 * 1024];
        ssize_t n;
        int r;

        if (docker_urlencode(ref, &enc) < 0 || b4_asprintf(&path, "/images/%s/get", enc) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_stream(d, "GET", path, NULL, -EBADF, &s, err);
        if (r == -ENOENT)
                return b4_error_set(err, r, "Docker has no image '%s'", ref);
        if (r < 0)
                return r;
        while ((n = http_stream_read(s, buf, sizeof(buf), now_msec() + SAVE_STALL_MS, -EBADF,
                                     err)) > 0) {
                r = write_all(out_fd, buf, (size_t)n);
                if (r < 0)
                        return b4_error_set(err, r, "cannot keep the archive of '%s'", ref);
        }
        return n < 0 ? (int)n : 0;
}

int docker_server_version(struct docker_client *d, char **ret, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *ver;
        int r;

        r = docker_call(d, "GET", "/version", NULL, &v, err);
        if (r < 0)
                return r;
        ver = jv_string(jv_object_get(v, "Version"));
        if (!ver)
                return b4_error_set(err, -EPROTO, "Docker daemon reported no version");
        *ret = b4_strdup(ver);
        return *ret ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

int docker_urlencode(const char *s, char **ret)
{
        static const char hex[] = "0123456789ABCDEF";
        char *o = b4_malloc(strlen(s) * 3 + 1), *p = o;

        if (!o)
                return -ENOMEM;
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
                        *p++ = (char)c;
                } else {
                        *p++ = '%';
                        *p++ = hex[c >> 4];
                        *p++ = hex[c & 15];
                }
        }
        *p = '\0';
        *ret = o;
        return 0;
}

/* ---- archive endpoints ---- */

void docker_path_stat_clear(struct docker_path_stat *st)
{
        free(st->name);
        free(st->link_target);
        *st = (struct docker_path_stat){ 0 };
}

static int b64_value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '-')
                return 62;
        if (c == '/' || c == '_')
                return 63;
        return -1;
}

int docker_base64_decode(const char *in, size_t n, char **ret, size_t *ret_len)
{
        char *o = b4_malloc(n / 4 * 3 + 4);
        size_t len = 0;
        unsigned acc = 0;
        int bits = 0;

        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < n && in[i] != '='; i++) {
                int v;
                if (in[i] == '\n' || in[i] == '\r' || in[i] == ' ' || in[i] == '\t')
                        continue;
                v = b64_value(in[i]);
                if (v < 0) {
                        free(o);
                        return -EPROTO;
                }
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        o[len++] = (char)((acc >> bits) & 0xff);
                }
        }
        o[len] = '\0';
        *ret = o;
        *ret_len = len;
        return 0;
}

/* RFC 3339 with optional fraction and zone: ms since the epoch. */
static int64_t parse_rfc3339_ms(const char *s)
{
        struct tm tm = { 0 };
        const char *p;
        int64_t ms = 0, secs;
        int digits = 0;

        p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return 0;
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 3)
                                ms = ms * 10 + (*p - '0');
        for (; digits < 3; digits++)
                ms *= 10;
        secs = (int64_t)timegm(&tm);
        if (*p == '+' || *p == '-') {
                int hh = 0, mm = 0, sign = *p == '-' ? -1 : 1;
                if (sscanf(p + 1, "%d:%d", &hh, &mm) == 2 && hh >= 0 && hh <= 23 && mm >= 0 &&
                    mm <= 59) /* RFC 3339 offsets; larger ones overflowed */
                        secs -= sign * (hh * 3600 + mm * 60);
        }
        return secs * 1000 + ms;
}

int docker_path_stat_parse(const char *header, struct docker_path_stat *ret)
{
        cleanup_free char *json = NULL;
        cleanup_(jv_unrefp) struct jv *v = NULL;
        struct docker_path_stat st = { 0 };
        const char *link, *mtime;
        size_t len;
        int r;

        r = docker_base64_decode(header, strlen(header), &json, &len);
        if (r < 0)
                return r;
        if (jv_parse(json, len, &v, NULL) < 0 || !jv_is_object(v))
                return -EPROTO;
        st.size = (uint64_t)jv_integer(jv_object_get(v, "size"));
        st.mode = (uint32_t)jv_integer(jv_object_get(v, "mode"));
        mtime = jv_string(jv_object_get(v, "mtime"));
        st.mtime_ms = mtime ? parse_rfc3339_ms(mtime) : 0;
        link = jv_string(jv_object_get(v, "linkTarget"));
        st.name = b4_strdup(jv_string(jv_object_get(v, "name")) ?: "");
        if (link && *link)
                st.link_target = b4_strdup(link);
        if (!st.name || (link && *link && !st.link_target)) {
                docker_path_stat_clear(&st);
                return -ENOMEM;
        }
        *ret = st;
        return 0;
}

static int archive_path(const char *container, const char *path, char **ret)
{
        cleanup_free char *enc = NULL;

        if (docker_urlencode(path, &enc) < 0)
                return -ENOMEM;
        return b4_asprintf(ret, "/containers/%s/archive?path=%s", container, enc) < 0 ? -ENOMEM : 0;
}

int docker_archive_stat(struct docker_client *d,
                        const char *container,
                        const char *path,
                        struct docker_path_stat *ret,
                        struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *p = NULL;
        const char *h;
        int r;

        if (archive_path(container, path, &p) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_stream(d, "HEAD", p, NULL, -EBADF, &s, err);
        if (r == -ENOENT)
                return b4_error_set(err, r, "'%s': no such file or directory", path);
        if (r < 0)
                return r;
        h = http_stream_header(s, "X-Docker-Container-Path-Stat");
        if (!h || docker_path_stat_parse(h, ret) < 0)
                return b4_error_set(err, -EPROTO, "Docker sent no valid path stat for '%s'", path);
        return 0;
}

int docker_archive_get(struct docker_client *d,
                       const char *container,
                       const char *path,
                       struct http_stream **ret,
                       struct b4_error *err)
{
        cleanup_free char *p = NULL;
        int r;

        if (archive_path(container, path, &p) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_stream(d, "GET", p, NULL, -EBADF, ret, err);
        if (r == -ENOENT)
                return b4_error_set(err, r, "'%s': no such file or directory", path);
        return r;
}

int docker_archive_put(struct docker_client *d,
                       const char *container,
                       const char *dir,
                       const void *tar,
                       size_t len,
                       struct b4_error *err)
{
        cleanup_free char *p = NULL;

        if (archive_path(container, dir, &p) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return docker_call_raw(d, "PUT", p, "application/x-tar", tar, len, 0, err);
}

/* ---- hijacked streams ---- */

#define HIJACK_HEAD_MAX  16384u /* the response head of an upgrade */
#define HIJACK_TIMEOUT_S 30

static int unix_connect(const char *path, int *ret, struct b4_error *err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = HIJACK_TIMEOUT_S };
        cleanup_close int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return b4_error_set(err, -ENAMETOOLONG, "Docker socket path too long");
        memcpy(sa.sun_path, path, strlen(path));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return b4_error_set(err, -errno, "socket: %m");
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return b4_error_set(err, -errno, "connect %s: %m", path);
        /* the head must come in time; cleared once the stream is raw */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        *ret = TAKE_FD(fd);
        return 0;
}

/* Read up to the end of the response head; *ret_len bytes in @buf, @ret_head_len of them the
 * head (the rest is the stream's first bytes). */
static int read_head(int fd, char *buf, size_t cap, size_t *ret_len, size_t *ret_head_len)
{
        size_t len = 0;

        while (len < cap - 1) {
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                char *end;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                if (n == 0)
                        return -ECONNRESET;
                len += (size_t)n;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (end) {
                        *ret_len = len;
                        *ret_head_len = (size_t)(end - buf) + 4;
                        return 0;
                }
        }
        return -E2BIG;
}

int docker_hijack(struct docker_client *d,
                  const char *path,
                  const struct jv *body,
                  struct docker_hijacked *ret,
                  struct b4_error *err)
{
        cleanup_free char *full = NULL, *json = NULL, *req = NULL, *head = NULL;
        cleanup_close int fd = -EBADF;
        size_t len = 0, head_len = 0;
        long status = 0;
        int r;

        r = versioned(d, path, &full, err);
        if (r < 0)
                return r;
        if ((body && jv_dump(body, 0, &json) < 0) ||
            b4_asprintf(&req,
                        "POST %s HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n"
                        "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: %zu\r\n\r\n%s",
                        full, json ? strlen(json) : 0, json ? json : "") < 0 ||
            !(head = b4_malloc(HIJACK_HEAD_MAX)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = unix_connect(docker_client_socket(d), &fd, err);
        if (r < 0)
                return r;
        r = write_all(fd, req, strlen(req));
        if (r >= 0)
                r = read_head(fd, head, HIJACK_HEAD_MAX, &len, &head_len);
        if (r < 0)
                return b4_error_set(err, r, "Docker attach %s failed: %s", path, strerror(-r));
        if (sscanf(head, "HTTP/1.%*d %ld", &status) != 1)
                return b4_error_set(err, -EPROTO, "Docker attach %s: no HTTP status", path);
        if (status != 101 && status != 200) {
                /* the daemon's message is in the body (mostly in the same read) */
                return status_error(status, head + head_len, len - head_len, err);
        }
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 0 },
                         sizeof(struct timeval));
        ret->fd = TAKE_FD(fd);
        ret->pending_len = len - head_len;
        memmove(head, head + head_len, ret->pending_len);
        ret->pending = TAKE_PTR(head);
        return 0;
}
