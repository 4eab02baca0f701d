/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP API (libmicrohttpd): JSON in and out, every refusal a named code, the
 * thread-access policy asked before any body is read, every body bounded.
 */

#include "b4box/config.h"
#include "b4box/runtime.h"
#include "b4box/store.h"

struct server;

struct server_options {
        const struct b4_config *config; /* borrowed; server and threadAccess blocks */
        const char *listen;             /* overrides config->server.listen when set */
        struct b4_runtime *runtime;     /* borrowed */
        struct b4_store *store;         /* borrowed */
        const char *provider_name;      /* for GET /threads/{id} */
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
/* The address actually bound ("127.0.0.1:4100", "unix:/x"); borrowed. */
const char *server_address(const struct server *s);
