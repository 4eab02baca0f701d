/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP API (libmicrohttpd): JSON in and out, every refusal a named code, the
 * thread-access policy asked before any body is read, every body bounded.
 */

#include "b4box/config.h"
#include "b4box/runtime.h"

struct server;

struct server_options {
        const struct b4_config *config; /* borrowed; server and threadAccess blocks */
        const char *listen;             /* overrides config->server.listen when set */
        struct b4_runtime *runtime;     /* borrowed */
        const char *provider_name;      /* for GET /threads/{id} */
        /* Borrowed for server_start(), optional: the provider's preflight, whose NOT
         * ENFORCED controls become b4box_control_not_enforced gauges. */
        const struct b4_preflight *preflight;
        bool mcp_lifecycle_tools; /* POST /mcp also offers createThread ... deleteThread */
};

/**
 * server_start() - bind and start serving on background threads
 * Return: 0; -EINVAL (bad listen address, or a non-loopback address without a
 * threadAccess block); -EADDRINUSE; -ENOENT/-EACCES (token file); -EIO.
 */
int server_start(const struct server_options *opts, struct server **ret, struct b4_error *err);
/* Stop accepting new connections; requests in flight go on. */
void server_quiesce(struct server *s);
/* Stop everything and free (NULL ok). Return: NULL. */
struct server *server_free(struct server *s);
/* A runtime event for the metrics (a b4_runtime_observe_fn; @srv may be NULL: dropped). */
void server_observe(void *srv, enum b4_runtime_event ev, uint64_t usec);
/* The address actually bound ("127.0.0.1:4100", "unix:/x"); borrowed. */
const char *server_address(const struct server *s);

/* ---- logs (log.c): one line per event on stderr, logfmt or JSON ---- */
enum server_log_format {
        SERVER_LOG_LOGFMT = 0, /* level=info msg=request method=GET ... (the default) */
        SERVER_LOG_JSON,       /* {"ts":"...","level":"info","msg":"request","method":"GET"} */
};

/* Set before server_start(); applies to every line, the library's messages included. */
void server_log_set_format(enum server_log_format f);
/*
 * server_log() - one line: @level ("info", "warning", "error"), @msg, then pairs of string
 * key and string value, ended by NULL (a NULL value leaves its key out). A request's
 * traceparent is added on the thread that handles it. Written with one call, so lines from
 * other threads never interleave.
 */
void server_log(const char *level, const char *msg, ...) __attribute__((sentinel));
