/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* `b4box mcp`'s backends (docs/mcp.md): the local state dir (mcp-local.c) or a server. */

#include "mcp/mcp.h"

/* The local runtime's: mcp_options.data is a struct cli_local *. */
extern const struct mcp_backend_ops mcp_local_ops;

/* Serve @o (ops and data filled in here) through the server at @url with @serve; only
 * b4box-full (the light b4box hands --server over before this). Return: an exit code. */
int mcp_remote_serve(const char *url,
                     struct mcp_options *o,
                     int (*serve)(const struct mcp_options *o));
