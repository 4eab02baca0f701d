/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests a web browser could make on a page's behalf (audit M2). Without a threadAccess
 * block the API is unauthenticated, so on a TCP listener:
 *   - the Host must name this server: localhost, 127.0.0.1, [::1], the bound address or the
 *     host of the listen address, with or without the bound port (a DNS-rebound page sends
 *     its own name);
 *   - an Origin is refused unless it is this server's own origin, http://<such a host>:<port>
 *     (the API serves no pages, so any other origin is a foreign page);
 * A unix socket is out of a browser's reach and skips both. With threadAccess the bearer
 * token is what a page cannot supply, so both are skipped too.
 * Always, on any listener: a request with a body must say Content-Type: application/json
 * (parameters allowed). Browsers send cross-origin "simple" requests only as text/plain,
 * form or multipart bodies, so this alone keeps a page from firing blind POSTs.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "server-internal.h"

int guard_init(struct server *s, const char *listen_host, const char *bound)
{
        const char *colon = strrchr(bound, ':');

        s->tcp = true;
        s->listen_host = b4_strdup(listen_host);
        s->bound_port = b4_strdup(colon ? colon + 1 : "");
        s->bound_host = colon ? b4_strndup(bound, (size_t)(colon - bound)) : b4_strdup(bound);
        if (!s->listen_host || !s->bound_port || !s->bound_host)
                return -ENOMEM;
        if (s->bound_host[0] == '[') { /* "[::1]" -> "::1", as listen_host is */
                memmove(s->bound_host, s->bound_host + 1, strlen(s->bound_host));
                s->bound_host[strcspn(s->bound_host, "]")] = '\0';
        }
        return 0;
}

void guard_free(struct server *s)
{
        free(s->listen_host);
        free(s->bound_host);
        free(s->bound_port);
}

static bool name_is_ours(const struct server *s, const char *name, size_t len)
{
        const char *const fixed[] = { "localhost", "127.0.0.1", "::1", s->bound_host,
                                      s->listen_host };

        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                if (fixed[i] && strlen(fixed[i]) == len && strncasecmp(fixed[i], name, len) == 0)
                        return true;
        return false;
}

/* "name", "name:port", "[v6]" or "[v6]:port"; @need_port for an origin's authority. */
static bool authority_is_ours(const struct server *s, const char *a, bool need_port)
{
        const char *name = a, *rest;
        size_t len;

        if (a[0] == '[') {
                name = a + 1;
                rest = strchr(name, ']');
                if (!rest)
                        return false;
                len = (size_t)(rest - name);
                rest++;
        } else {
                len = strcspn(a, ":");
                rest = a + len;
        }
        if (!name_is_ours(s, name, len))
                return false;
        if (*rest == '\0')
                return !need_port;
        return rest[0] == ':' && strcmp(rest + 1, s->bound_port) == 0;
}

static const char *header(const struct request *rq, const char *name)
{
        return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

bool guard_browser(struct request *rq)
{
        const struct server *s = rq->srv;
        const char *host = header(rq, "Host"), *origin = header(rq, "Origin");

        if (!s->tcp || s->config->thread_access.present)
                return true;
        if (!host || !authority_is_ours(s, host, false)) {
                reply_error(rq, 421, "host_not_allowed",
                            "Host '%s' does not name this server (%s:%s); without a threadAccess "
                            "block only localhost, 127.0.0.1, [::1] and the listen address are "
                            "accepted",
                            host ? host : "", s->bound_host, s->bound_port);
                return false;
        }
        if (origin &&
            (strncasecmp(origin, "http://", 7) != 0 || !authority_is_ours(s, origin + 7, true))) {
                reply_error(rq, 403, "origin_not_allowed",
                            "requests from web pages (Origin '%s') are refused without a "
                            "threadAccess block",
                            origin);
                return false;
        }
        return true;
}

bool guard_origin(struct request *rq)
{
        const char *origin = header(rq, "Origin");

        if (!origin || !rq->srv->tcp)
                return true;
        if (strncasecmp(origin, "http://", 7) == 0 && authority_is_ours(rq->srv, origin + 7, true))
                return true;
        reply_error(rq, 403, "origin_not_allowed",
                    "requests from web pages (Origin '%s') are refused on /mcp", origin);
        return false;
}

static bool has_body(const struct request *rq)
{
        const char *cl = header(rq, MHD_HTTP_HEADER_CONTENT_LENGTH);

        if (header(rq, MHD_HTTP_HEADER_TRANSFER_ENCODING))
                return true;
        return cl && strspn(cl, "0") != strlen(cl);
}

static bool is_json_media_type(const char *ct)
{
        static const char json[] = "application/json";
        const char *rest;

        if (strncasecmp(ct, json, strlen(json)) != 0)
                return false;
        rest = ct + strlen(json);
        rest += strspn(rest, " \t");
        return *rest == '\0' || *rest == ';';
}

bool guard_content_type(struct request *rq)
{
        const char *ct = header(rq, MHD_HTTP_HEADER_CONTENT_TYPE);

        if (!has_body(rq) || (ct && is_json_media_type(ct)))
                return true;
        reply_error(rq, 415, "unsupported_media_type",
                    "a request body must be sent as Content-Type: application/json (got: '%s')",
                    ct ? ct : "");
        return false;
}
