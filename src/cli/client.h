/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The CLI's HTTP client for `--server URL` (or $B4BOX_URL, token in $B4BOX_TOKEN):
 * "http://host:port", "https://..." or "unix:/path/to.sock". Bodies are JSON; responses
 * are bounded. A thin layer over lib/http, which does the transfer.
 */

#include <stddef.h>

#include "b4box/error.h"

struct jv;

#define CLIENT_MAX_RESPONSE (64u * 1024 * 1024)

struct cli_client {
        const char *url;   /* borrowed */
        const char *token; /* borrowed; NULL = no Authorization header */
};

/* The server to talk to: @flag (--server), else $B4BOX_URL, else NULL (run locally). */
const char *cli_server_url(const char *flag);

/**
 * cli_http() - one request
 * @body:       JSON text or NULL
 * @ret_status: the HTTP status
 * @ret_body:   the response body (heap, NUL-terminated)
 * Return: 0 (any status), -EINVAL (not a server URL), -ECONNREFUSED/-EHOSTUNREACH/-EIO
 * (transport, message set), -EFBIG (response over CLIENT_MAX_RESPONSE), -ENOMEM.
 */
int cli_http(const struct cli_client *c,
             const char *method,
             const char *path,
             const char *body,
             long *ret_status,
             char **ret_body,
             struct b4_error *err);

struct cli_http_req {
        const char *method;
        const char *path;
        const char *body;    /* NULL = none */
        size_t len;          /* bytes of @body */
        size_t max_response; /* 0 = CLIENT_MAX_RESPONSE */
};

struct cli_http_resp {
        long status;
        long retry_after; /* seconds from a Retry-After header, 0 when none */
        char *body;       /* heap, NUL-terminated */
        size_t len;       /* bytes of @body */
};

/**
 * cli_http_request() - one request with a sized body and a bounded response
 * No time limit: a tool call runs as long as the server lets it.
 * Return: 0 (any status; @ret filled, caller frees ret->body), the errors of http_request()
 *         (-EFBIG: response over the cap), -EINVAL (not a server URL, or a token with a control
 *         character), -ENOMEM.
 */
int cli_http_request(const struct cli_client *c,
                     const struct cli_http_req *req,
                     struct cli_http_resp *ret,
                     struct b4_error *err);

/* Print a JSON error body as "b4box: <message> (<code>)"; returns CLI_EXIT_FAILED. */
int cli_http_fail(long status, const char *body);

/**
 * cli_remote_tool() - POST /threads/{thread}/tools/{tool} with @args_json on the server at
 * @url (token from $B4BOX_TOKEN); the result document on success
 * Return: 0 with *ret_json (heap), or an exit code after printing why (transport or refusal).
 */
int cli_remote_tool(const char *url,
                    const char *thread,
                    const char *tool,
                    const char *args_json,
                    char **ret_json);

/*
 * One event of a streamed tool call (the server's NDJSON events, docs/http-api.md): @name
 * "stdout", "stderr", "exit" (@data the result document) or "error"; borrowed for the call.
 * Return: 0 to go on, < 0 to stop.
 */
typedef int cli_event_fn(void *userdata, const char *name, const struct jv *data);

/**
 * cli_remote_tool_stream() - POST /threads/{thread}/tools/{tool} asking for NDJSON, each event
 * to @fn as it arrives
 * @cancel_fd: readable once the caller gives up (the connection is dropped: the server then
 *             cancels the command); -EBADF = none
 * Return: 0 once the stream ended, or an exit code after printing why (transport, refusal,
 * a malformed stream, cancelled).
 */
int cli_remote_tool_stream(const char *url,
                           const char *thread,
                           const char *tool,
                           const char *args_json,
                           int cancel_fd,
                           cli_event_fn *fn,
                           void *userdata);
