/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd glue. A request goes through three phases in the access handler:
 *   1. headers: route, authenticate, authorise (before any body byte is read), refuse a
 *      declared Content-Length over the route's cap;
 *   2. body: accumulate up to the cap, then discard and remember it was too large;
 *   3. complete: run the route's handler, which queues exactly one reply.
 * One thread per connection: a long runBash only ties up its own connection.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/time-util.h"
#include "server-internal.h"

/* How long server_free() waits for abandoned workspace reads (their tokens are fired). */
#define INSPECT_DRAIN_MS 30000u

/* ---- listening ---- */

static int listen_unix(struct server *s, const char *path, struct b4_error *err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        cleanup_close int fd = -EBADF;

        if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path))
                return b4_error_set(err, -EINVAL,
                                    "unix socket path '%s' must be absolute and short", path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void)unlink(path); /* a stale socket from an earlier run */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return b4_error_set(err, -errno, "socket");
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return b4_error_set(err, -errno, "cannot bind '%s'", path);
        (void)chmod(path, 0660);
        s->unix_path = b4_strdup(path);
        if (!s->unix_path || b4_asprintf(&s->address, "unix:%s", path) < 0)
                return -ENOMEM;
        s->listen_fd = TAKE_FD(fd);
        return 0;
}

static int split_host_port(const char *spec, char **ret_host, char **ret_port)
{
        const char *colon = strrchr(spec, ':');
        const char *h = spec;
        size_t hl;

        if (!colon || !colon[1])
                return -EINVAL;
        hl = (size_t)(colon - spec);
        if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
                h = spec + 1;
                hl -= 2;
        }
        *ret_host = b4_strndup(h, hl);
        *ret_port = b4_strdup(colon + 1);
        return *ret_host && *ret_port ? 0 : -ENOMEM;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
        struct sockaddr_in in;
        struct sockaddr_in6 in6;

        if (sa->sa_family == AF_INET) {
                memcpy(&in, sa, sizeof(in));
                return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
        }
        if (sa->sa_family == AF_INET6) {
                memcpy(&in6, sa, sizeof(in6));
                return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr);
        }
        return false;
}

static int bind_tcp(struct server *s, struct addrinfo *ai, struct b4_error *err)
{
        char host[NI_MAXHOST], port[NI_MAXSERV];
        cleanup_close int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;

        if (fd < 0)
                return b4_error_set(err, -errno, "socket");
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
                return b4_error_set(err, -errno, "cannot bind '%s': %s", s->address,
                                    strerror(errno));
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
            getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
                free(s->address);
                s->address = NULL;
                if (b4_asprintf(&s->address, ai->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host,
                                port) < 0)
                        return -ENOMEM;
        }
        s->listen_fd = TAKE_FD(fd);
        return 0;
}

static int listen_tcp(struct server *s, const char *spec, struct b4_error *err)
{
        cleanup_free char *host = NULL, *port = NULL;
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
        struct addrinfo *ai = NULL;
        uint64_t p;
        int r;

        if (split_host_port(spec, &host, &port) < 0 || safe_atou64(port, &p) < 0 || p > 65535)
                return b4_error_set(err, -EINVAL,
                                    "listen address '%s' is not host:port or unix:/path", spec);
        if (strcmp(host, "localhost") != 0)
                hints.ai_flags |= AI_NUMERICHOST;
        if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
                return b4_error_set(err, -EINVAL, "cannot resolve listen address '%s'", spec);
        s->address = b4_strdup(spec);
        if (!s->address) {
                freeaddrinfo(ai);
                return -ENOMEM;
        }
        if (!s->config->thread_access.present && !addr_is_loopback(ai->ai_addr)) {
                freeaddrinfo(ai);
                return b4_error_set(
                        err, -EINVAL,
                        "refusing to listen on '%s' without a threadAccess block: anyone who can reach it could run commands in every thread. Listen on loopback or a unix socket, or configure threadAccess",
                        spec);
        }
        r = bind_tcp(s, ai, err);
        freeaddrinfo(ai);
        return r;
}

static int open_listener(struct server *s, const char *spec, struct b4_error *err)
{
        int r;

        if (strncmp(spec, "unix:", 5) == 0)
                r = listen_unix(s, spec + 5, err);
        else
                r = listen_tcp(s, spec, err);
        if (r < 0)
                return r;
        if (listen(s->listen_fd, 128) < 0)
                return b4_error_set(err, -errno, "listen on '%s'", spec);
        return 0;
}

/* ---- request lifecycle ---- */

static size_t split_path(const char *url, char segs[][256], size_t max)
{
        size_t n = 0;

        while (*url == '/')
                url++;
        while (*url && n < max) {
                const char *end = strchrnul(url, '/');
                size_t len = (size_t)(end - url);
                if (len >= 256)
                        return max + 1;
                memcpy(segs[n], url, len);
                segs[n++][len] = '\0';
                url = *end ? end + 1 : end;
        }
        return *url ? max + 1 : n;
}

/* Match @url against @pattern; fills rq->params. */
static bool route_match(struct request *rq, const struct route *rt, const char *url)
{
        char us[6][256], ps[6][256];
        size_t nu = split_path(url, us, 6), np = split_path(rt->pattern, ps, 6);
        size_t k = 0;

        if (nu != np || nu > 6)
                return false;
        for (size_t i = 0; i < nu; i++)
                if (strcmp(ps[i], "{}") != 0 && strcmp(ps[i], us[i]) != 0)
                        return false;
        for (size_t i = 0; i < nu && k < MAX_PATH_PARAMS; i++)
                if (strcmp(ps[i], "{}") == 0) {
                        rq->params[k] = b4_strdup(us[i]);
                        if (!rq->params[k++])
                                return false;
                }
        return true;
}

static void request_free(struct request *rq)
{
        if (!rq)
                return;
        if (rq->route && rq->route->end)
                rq->route->end(rq);
        for (size_t i = 0; i < MAX_PATH_PARAMS; i++)
                free(rq->params[i]);
        b4_thread_row_clear(&rq->thread);
        strbuf_release(&rq->body);
        free(rq);
}

static bool find_route(struct request *rq, const char *url, const char *method)
{
        bool path_known = false;

        for (size_t i = 0; i < server_n_routes; i++) {
                const struct route *r = &server_routes[i];
                for (size_t k = 0; k < MAX_PATH_PARAMS; k++) {
                        free(rq->params[k]);
                        rq->params[k] = NULL;
                }
                if (!route_match(rq, r, url))
                        continue;
                path_known = true;
                if (strcmp(r->method, method) == 0) {
                        rq->route = r;
                        return true;
                }
        }
        if (path_known)
                reply_error(rq, 405, "method_not_allowed", "%s is not allowed on %s", method, url);
        else
                reply_error(rq, 404, "not_found", "Not found");
        return false;
}

static uint64_t route_body_cap(const struct request *rq)
{
        const struct b4_server_config *sc = &rq->srv->config->server;

        switch (rq->route->body) {
        case ROUTE_BODY_UPLOAD:
                return staged_upload_cap(rq);
        case ROUTE_BODY_TOOL:
                return sc->max_tool_body_bytes;
        case ROUTE_BODY_INSPECT:
                return INSPECT_BODY_MAX_BYTES;
        case ROUTE_BODY_DEFAULT:
                break;
        }
        return sc->max_body_bytes;
}

/* Phase 1. Returns false when a reply was queued. */
static bool request_begin(struct request *rq, const char *url, const char *method)
{
        const char *cl;
        uint64_t n;

        if (!find_route(rq, url, method))
                return false;
        if (!access_check(rq))
                return false;
        if (rq->route->begin && !rq->route->begin(rq))
                return false;
        cl = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && safe_atou64(cl, &n) >= 0 && n > route_body_cap(rq)) {
                reply_error(rq, 413, "payload_too_large",
                            "request body of %s bytes exceeds the limit of %llu bytes", cl,
                            (unsigned long long)route_body_cap(rq));
                return false;
        }
        strbuf_init(&rq->body, route_body_cap(rq));
        return true;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **con_cls)
{
        struct request *rq = *con_cls;

        if (!rq) {
                rq = b4_calloc(1, sizeof(*rq));
                if (!rq)
                        return MHD_NO;
                rq->srv = cls;
                rq->conn = conn;
                rq->started_us = now_usec();
                (void)snprintf(rq->method, sizeof(rq->method), "%s", method);
                (void)snprintf(rq->path, sizeof(rq->path), "%s", url);
                for (char *c = rq->path; *c; c++) /* no log injection */
                        if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\' || *c == 0x7f)
                                *c = '?';
                *con_cls = rq;
                (void)request_begin(rq, url, method);
                return MHD_YES;
        }
        if (rq->replied) {
                *upload_data_size = 0; /* refused before the body: discard it */
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                if (!rq->body_too_large &&
                    strbuf_add(&rq->body, upload_data, *upload_data_size) < 0)
                        rq->body_too_large = true;
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (rq->body_too_large)
                reply_error(rq, 413, "payload_too_large",
                            "request body exceeds the limit of %llu bytes",
                            (unsigned long long)route_body_cap(rq));
        else
                rq->route->handler(rq);
        if (!rq->replied)
                reply_error(rq, 500, "internal_error", "no reply");
        return MHD_YES;
}

/* One structured line per request on stderr (the daemon is the logging layer). */
static void log_request(const struct request *rq, enum MHD_RequestTerminationCode toe)
{
        double ms = (double)(now_usec() - rq->started_us) / 1000.0;

        fprintf(stderr,
                "level=info msg=request method=%s path=\"%s\" route=%s status=%u ms=%.2f "
                "principal=%s%s\n",
                rq->method, rq->path, rq->route ? rq->route->name : "-", rq->status, ms,
                rq->principal_name ? rq->principal_name : "-",
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=true");
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct request *rq = *con_cls;

        if (rq) {
                metrics_request(rq->srv->metrics, rq->route ? rq->route->name : "unmatched",
                                rq->status);
                log_request(rq, toe);
        }
        request_free(rq);
        *con_cls = NULL;
}

int server_start(const struct server_options *opts, struct server **ret, struct b4_error *err)
{
        struct server *s = b4_calloc(1, sizeof(*s));
        const struct b4_server_config *sc = &opts->config->server;
        int r;

        if (!s)
                return -ENOMEM;
        s->opts = *opts;
        s->config = opts->config;
        s->listen_fd = -EBADF;
        s->metrics = metrics_new();
        r = s->metrics ? access_load(s, err) : -ENOMEM;
        if (r >= 0)
                r = open_listener(s, opts->listen ? opts->listen : sc->listen, err);
        if (r < 0) {
                server_free(s);
                return r;
        }
        s->mhd = MHD_start_daemon(
                MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0,
                NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned)sc->max_connections,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)((sc->request_timeout_ms + 999) / 1000),
                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
        if (!s->mhd) {
                server_free(s);
                return b4_error_set(err, -EIO, "cannot start the HTTP server");
        }
        s->listen_fd = -EBADF; /* the daemon owns it now, and closes it */
        *ret = s;
        return 0;
}

void server_quiesce(struct server *s)
{
        if (s && s->mhd && s->listen_fd < 0)
                s->listen_fd = MHD_quiesce_daemon(s->mhd); /* handed back to us */
}

struct server *server_free(struct server *s)
{
        if (!s)
                return NULL;
        if (s->mhd)
                MHD_stop_daemon(s->mhd);
        inspect_workers_drain(INSPECT_DRAIN_MS);
        safe_close(s->listen_fd);
        if (s->unix_path)
                (void)unlink(s->unix_path);
        access_free(s);
        metrics_free(s->metrics);
        free(s->unix_path);
        free(s->address);
        free(s);
        return NULL;
}

const char *server_address(const struct server *s)
{
        return s->address;
}
