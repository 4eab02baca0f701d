/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd glue. A request goes through three phases in the access handler:
 *   1. headers: route, authenticate, authorise (before any body byte is read), refuse a
 *      declared Content-Length over the route's cap;
 *   2. body: accumulate up to the cap, then discard and remember it was too large;
 *   3. complete: run the route's handler on a thread of its own while the connection is
 *      suspended; it leaves exactly one reply in the request, which the access handler
 *      queues when the connection is resumed.
 * libmicrohttpd polls every connection with epoll on a small pool of threads, so an idle or
 * slow connection costs a descriptor, not a thread, and a long runBash ties up only its own
 * request. Slow clients are cut by the absolute deadlines of conns.c (audit M4).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "b4box/log.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/time-util.h"
#include "server-internal.h"

/* libmicrohttpd's polling threads: they parse, authenticate and read bodies, never block. */
#define POLL_THREADS 2
/* A path segment: a thread id at most, the longest segment any route has. */
#define SEGMENT_MAX (B4_THREAD_ID_MAX_BYTES + 1)

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
        if (r >= 0 && guard_init(s, host, s->address) < 0)
                return -ENOMEM;
        return r;
}

/* The socket a service manager passes (sd_listen_fds(3)'s protocol, without libsystemd):
 * exactly one listening stream socket at fd 3, for this process. The variables are unset so
 * commands never see them. The same loopback rule as listen_tcp() holds. */
static int listen_systemd(struct server *s, struct b4_error *err)
{
        const char *pid = secure_getenv("LISTEN_PID"), *fds = secure_getenv("LISTEN_FDS");
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int type = 0, acc = 0;
        socklen_t tl = sizeof(type), al = sizeof(acc);
        char host[NI_MAXHOST], port[NI_MAXSERV];
        uint64_t p = 0;

        if (!pid || !fds || safe_atou64(pid, &p) < 0 || p != (uint64_t)getpid())
                return b4_error_set(err, -EINVAL,
                                    "server.listen is \"systemd\", but no socket was passed "
                                    "to this process (LISTEN_PID/LISTEN_FDS): start it from a "
                                    ".socket unit");
        if (strcmp(fds, "1") != 0)
                return b4_error_set(err, -EINVAL,
                                    "socket activation passed %s sockets; b4box takes exactly one",
                                    fds);
        (void)unsetenv("LISTEN_PID");
        (void)unsetenv("LISTEN_FDS");
        (void)unsetenv("LISTEN_FDNAMES");
        if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
            getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) < 0 || !acc ||
            getsockname(3, (struct sockaddr *)&ss, &sl) < 0)
                return b4_error_set(err, -EINVAL,
                                    "the socket systemd passed is not a listening stream socket");
        (void)fcntl(3, F_SETFD, FD_CLOEXEC);
        s->listen_fd = 3;
        if (ss.ss_family == AF_UNIX) {
                const struct sockaddr_un *su = (const struct sockaddr_un *)&ss;
                int r = b4_asprintf(&s->address, "unix:%s", su->sun_path[0] ? su->sun_path : "@");

                return r < 0 ? -ENOMEM : 0;
        }
        if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                        NI_NUMERICHOST | NI_NUMERICSERV) != 0)
                return b4_error_set(err, -EINVAL, "cannot name the socket systemd passed");
        if (b4_asprintf(&s->address, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port) <
            0)
                return -ENOMEM;
        if (!s->config->thread_access.present && !addr_is_loopback((struct sockaddr *)&ss))
                return b4_error_set(
                        err, -EINVAL,
                        "refusing to serve the socket systemd passed (%s) without a threadAccess block: anyone who can reach it could run commands in every thread. Listen on loopback or a unix socket, or configure threadAccess",
                        s->address);
        return guard_init(s, host, s->address) < 0 ? -ENOMEM : 0;
}

static int open_listener(struct server *s, const char *spec, struct b4_error *err)
{
        int r;

        if (strcmp(spec, "systemd") == 0)
                r = listen_systemd(s, err);
        else if (strncmp(spec, "unix:", 5) == 0)
                r = listen_unix(s, spec + 5, err);
        else
                r = listen_tcp(s, spec, err);
        if (r < 0)
                return r;
        if (listen(s->listen_fd, SOMAXCONN) < 0)
                return b4_error_set(err, -errno, "listen on '%s'", spec);
        return 0;
}

/* ---- request lifecycle ---- */

static size_t split_path(const char *url, char segs[][SEGMENT_MAX], size_t max)
{
        size_t n = 0;

        while (*url == '/')
                url++;
        while (*url && n < max) {
                const char *end = strchrnul(url, '/');
                size_t len = (size_t)(end - url);
                if (len >= SEGMENT_MAX)
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
        char us[6][SEGMENT_MAX], ps[6][SEGMENT_MAX];
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
        if (rq->response)
                MHD_destroy_response(rq->response);
        b4_thread_row_clear(&rq->thread);
        strbuf_release(&rq->body);
        free(rq->identity);
        free(rq->stamp);
        free(rq);
}

/* Add @m to the comma-separated @allow once. */
static void allow_add(char *allow, size_t size, const char *m)
{
        size_t mlen = strlen(m);

        for (const char *p = allow; (p = strstr(p, m)); p += mlen)
                if ((p == allow || p[-1] == ' ') && (p[mlen] == ',' || p[mlen] == '\0'))
                        return;
        (void)snprintf(allow + strlen(allow), size - strlen(allow), "%s%s", *allow ? ", " : "", m);
}

static bool find_route(struct request *rq, const char *url, const char *method)
{
        char allow[64] = ""; /* the methods the route table has for @url, for a 405 */

        for (size_t i = 0; i < server_n_routes; i++) {
                const struct route *r = &server_routes[i];
                for (size_t k = 0; k < MAX_PATH_PARAMS; k++) {
                        free(rq->params[k]);
                        rq->params[k] = NULL;
                }
                if (!route_match(rq, r, url))
                        continue;
                if (strcmp(r->method, method) == 0) {
                        rq->route = r;
                        return true;
                }
                allow_add(allow, sizeof(allow), r->method);
        }
        if (*allow) {
                reply_error(rq, 405, "method_not_allowed", "%s is not allowed on %s", method, url);
                if (rq->response)
                        (void)MHD_add_response_header(rq->response, "Allow", allow);
        } else {
                reply_error(rq, 404, "not_found", "Not found");
        }
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

/* Where the body must have arrived by, counted from the end of the headers. */
static uint64_t route_body_timeout_ms(const struct request *rq)
{
        if (rq->route && rq->route->body == ROUTE_BODY_UPLOAD)
                return rq->srv->config->sandbox.staged.upload_timeout_ms;
        return rq->srv->config->server.request_timeout_ms;
}

/* Phase 1, on the poll thread: the browser guard and the route. false = it replied. */
static bool request_route(struct request *rq, const char *url, const char *method)
{
        if (!guard_browser(rq))
                return false;
        if (rq->path_has_nul) { /* libmicrohttpd would decode it and cut the path there */
                reply_error(rq, 400, "invalid_request",
                            "the request path must not contain a NUL byte (%%00)");
                return false;
        }
        rq->url = url;
        trace_accept(rq, MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "traceparent"));
        return find_route(rq, url, method);
}

/* Phase 1, the rest: policy, content type, the route's own checks, the declared length.
 * On a pool thread when a policy program decides (access_defers()). */
static bool request_admit(struct request *rq)
{
        const char *cl;
        uint64_t n;

        if (!access_check(rq) || !guard_content_type(rq))
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

/* Hand a reply made by a phase or a handler to libmicrohttpd (only allowed from here). */
static enum MHD_Result request_flush(struct request *rq)
{
        enum MHD_Result r = MHD_YES;

        if (rq->response) {
                r = MHD_queue_response(rq->conn, rq->status, rq->response);
                MHD_destroy_response(rq->response);
                rq->response = NULL;
        }
        return r;
}

static void request_resume(struct server *s, struct MHD_Connection *conn);

static void handler_main(struct worker_job *job)
{
        struct request *rq = container_of(job, struct request, job);
        struct server *s = rq->srv;
        struct MHD_Connection *conn = rq->conn;

        log_set_trace(rq->traceparent[0] ? rq->traceparent : NULL);
        rq->route->handler(rq);
        if (!rq->replied)
                reply_error(rq, 500, "internal_error", "no reply");
        void (*after)(void *ctx) = rq->after;
        void *after_ctx = rq->after_ctx;
        log_set_trace(NULL);
        if (!after) {
                request_resume(s, conn); /* rq is not touched after this */
                return;
        }
        /* a streamed reply: its producer runs once the reply is on its way (rq is not touched
         * after the resume), still counted as a worker so that the server's stop waits */
        (void)pthread_mutex_lock(&s->workers_lock);
        MHD_resume_connection(conn);
        (void)pthread_mutex_unlock(&s->workers_lock);
        after(after_ctx);
        (void)pthread_mutex_lock(&s->workers_lock);
        s->workers--;
        (void)pthread_cond_broadcast(&s->workers_done);
        (void)pthread_mutex_unlock(&s->workers_lock);
}

void request_detach(struct request *rq, void (*fn)(void *ctx), void *ctx)
{
        rq->after = fn;
        rq->after_ctx = ctx;
}

/* Suspend @rq's connection and run @fn on a pool thread (it resumes the connection).
 * Return: 0, or -errno when no thread could take it (the connection is not suspended). */
static int request_offload(struct request *rq, void (*fn)(struct worker_job *job))
{
        struct server *s = rq->srv;
        int r;

        rq->job.fn = fn;
        (void)pthread_mutex_lock(&s->workers_lock);
        MHD_suspend_connection(rq->conn);
        r = workers_submit(&s->pool, &rq->job);
        if (r == 0)
                s->workers++;
        else
                MHD_resume_connection(rq->conn);
        (void)pthread_mutex_unlock(&s->workers_lock);
        return r;
}

/* Resume @conn from a pool thread; @rq belongs to libmicrohttpd's thread again after it. */
static void request_resume(struct server *s, struct MHD_Connection *conn)
{
        (void)pthread_mutex_lock(&s->workers_lock);
        MHD_resume_connection(conn);
        s->workers--;
        (void)pthread_cond_broadcast(&s->workers_done);
        (void)pthread_mutex_unlock(&s->workers_lock);
}

/* Phase 1 on a pool thread: the policy program may take up to decisionTimeoutMs. When the
 * connection is resumed, libmicrohttpd calls on_request() again, which sends any reply. */
static void admit_main(struct worker_job *job)
{
        struct request *rq = container_of(job, struct request, job);
        struct server *s = rq->srv;
        struct MHD_Connection *conn = rq->conn;

        log_set_trace(rq->traceparent[0] ? rq->traceparent : NULL);
        (void)request_admit(rq);
        log_set_trace(NULL);
        request_resume(s, conn);
}

/* Phase 3: run the handler on a pool thread, so a long one blocks no other connection. */
static void request_dispatch(struct request *rq)
{
        int r = request_offload(rq, handler_main);

        if (r != 0)
                reply_error(rq, 503, "server_busy", "cannot start a thread for the request: %s",
                            strerror(-r));
}

/* Phase 3, once the body is in. */
static void request_complete(struct request *rq)
{
        conns_phase(rq->srv->conns, rq->track, CONN_BUSY, 0);
        if (rq->replied)
                return;
        if (rq->body_too_large)
                reply_error(rq, 413, "payload_too_large",
                            "request body exceeds the limit of %llu bytes",
                            (unsigned long long)route_body_cap(rq));
        else
                request_dispatch(rq);
}

/* The request line is in (headers not yet): make the request; it becomes *con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        struct request *rq = b4_calloc(1, sizeof(*rq));

        if (!rq)
                return NULL;
        rq->srv = cls;
        rq->conn = conn;
        rq->track = conns_of(conn);
        rq->started_us = now_usec();
        rq->path_has_nul = strstr(uri, "%00") != NULL;
        return rq;
}

static void request_name(struct request *rq, const char *url, const char *method)
{
        (void)snprintf(rq->method, sizeof(rq->method), "%s", method);
        (void)snprintf(rq->path, sizeof(rq->path), "%s", url);
        for (char *c = rq->path; *c; c++) /* no log injection */
                if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\' || *c == 0x7f)
                        *c = '?';
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

        (void)cls;
        (void)conn;
        (void)version;
        if (!rq)
                return MHD_NO; /* on_uri() ran out of memory */
        if (!rq->began) {
                rq->began = true;
                request_name(rq, url, method);
                if (request_route(rq, url, method) && access_defers(rq)) {
                        int r;

                        /* no header deadline while the policy program decides (its own
                         * decisionTimeoutMs bounds it) */
                        conns_phase(rq->srv->conns, rq->track, CONN_BUSY, 0);
                        r = request_offload(rq, admit_main);

                        rq->begin_deferred = r == 0;
                        if (r == 0)
                                return MHD_YES; /* called again once admit_main() resumes */
                        reply_error(rq, 503, "server_busy",
                                    "cannot start a thread for the request: %s", strerror(-r));
                } else if (!rq->replied) {
                        (void)request_admit(rq);
                }
                conns_phase(rq->srv->conns, rq->track, CONN_BODY, route_body_timeout_ms(rq));
                return request_flush(rq);
        }
        if (rq->begin_deferred) { /* the first call after admit_main() */
                rq->begin_deferred = false;
                conns_phase(rq->srv->conns, rq->track, CONN_BODY, route_body_timeout_ms(rq));
                return request_flush(rq);
        }
        if (*upload_data_size > 0) {
                if (!rq->replied && !rq->body_too_large &&
                    strbuf_add(&rq->body, upload_data, *upload_data_size) < 0)
                        rq->body_too_large = true;
                *upload_data_size = 0; /* refused before the body: discarded */
                return MHD_YES;
        }
        if (!rq->completed) {
                rq->completed = true;
                request_complete(rq);
        }
        return request_flush(rq);
}

/* One structured line per request on stderr (the daemon is the logging layer). */
static void log_request(const struct request *rq, enum MHD_RequestTerminationCode toe)
{
        char status[8], ms[32];

        (void)snprintf(status, sizeof(status), "%u", rq->status);
        (void)snprintf(ms, sizeof(ms), "%.2f", (double)(now_usec() - rq->started_us) / 1000.0);
        log_set_trace(rq->traceparent[0] ? rq->traceparent : NULL);
        server_log("info", "request", "method", rq->method, "path", rq->path, "route",
                   rq->route ? rq->route->name : "-", "status", status, "ms", ms, "principal",
                   rq->principal_name ? rq->principal_name : "-", "aborted",
                   toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? NULL : "true", NULL);
        log_set_trace(NULL);
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct server *s = cls;
        struct request *rq = *con_cls;

        if (rq) {
                metrics_request(s->metrics, rq->route ? rq->route->name : "unmatched", rq->status,
                                now_usec() - rq->started_us);
                log_request(rq, toe);
        }
        request_free(rq);
        *con_cls = NULL;
        conns_phase(s->conns, conns_of(conn), CONN_HEADERS, 0); /* keep-alive: the next one */
}

static void on_connection(void *cls,
                          struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        struct server *s = cls;

        if (toe == MHD_CONNECTION_NOTIFY_STARTED)
                conns_opened(s->conns, conn, socket_context);
        else
                conns_closed(s->conns, socket_context);
}

static int start_daemon(struct server *s)
{
        const struct b4_server_config *sc = &s->config->server;

        s->mhd = MHD_start_daemon(
                MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request,
                s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
                (unsigned)POLL_THREADS, MHD_OPTION_CONNECTION_LIMIT, (unsigned)sc->max_connections,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)((sc->request_timeout_ms + 999) / 1000),
                MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
                s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
        return s->mhd ? 0 : -EIO;
}

/* The library's warnings (a resolver's stderr, ...) join the request log on stderr, in the
 * same logfmt shape: the message quoted with '"' and '\\' escaped, one line. */
static void log_library(enum b4_log_level level, const char *msg, void *userdata)
{
        (void)userdata;
        server_log(level <= B4_LOG_ERROR     ? "error"
                   : level <= B4_LOG_WARNING ? "warning"
                                             : "info",
                   msg, NULL);
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
        (void)pthread_mutex_init(&s->workers_lock, NULL);
        (void)pthread_cond_init(&s->workers_done, NULL);
        workers_init(&s->pool);
        b4_set_log_func(log_library, B4_LOG_WARNING, NULL);
        s->metrics = metrics_new();
        if (s->metrics)
                metrics_controls(s->metrics, opts->preflight);
        r = s->metrics ? readers_new(&s->readers) : -ENOMEM;
        if (r >= 0)
                r = access_load(s, err);
        if (r >= 0)
                r = mcp_route_init(s);
        if (r >= 0)
                r = open_listener(s, opts->listen ? opts->listen : sc->listen, err);
        if (r >= 0)
                r = conns_new(sc->max_connections_ip, sc->header_timeout_ms, &s->conns);
        if (r < 0) {
                server_free(s);
                return r;
        }
        if (start_daemon(s) < 0) {
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
        /* libmicrohttpd must not be stopped with a connection suspended: let handlers end */
        (void)pthread_mutex_lock(&s->workers_lock);
        while (s->workers > 0)
                (void)pthread_cond_wait(&s->workers_done, &s->workers_lock);
        (void)pthread_mutex_unlock(&s->workers_lock);
        workers_stop(&s->pool);
        if (s->mhd)
                MHD_stop_daemon(s->mhd);
        s->conns = conns_free(s->conns);
        s->readers = readers_free(s->readers);
        safe_close(s->listen_fd);
        if (s->unix_path)
                (void)unlink(s->unix_path);
        access_free(s);
        guard_free(s);
        metrics_free(s->metrics);
        mcp_route_free(s);
        (void)pthread_cond_destroy(&s->workers_done);
        (void)pthread_mutex_destroy(&s->workers_lock);
        free(s->unix_path);
        free(s->address);
        free(s);
        return NULL;
}

void server_observe(void *srv, enum b4_runtime_event ev, uint64_t usec)
{
        struct server *s = srv;

        if (s && s->metrics)
                metrics_event(s->metrics, ev, usec);
}

const char *server_address(const struct server *s)
{
        return s->address;
}
