/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Model Context Protocol server (docs/mcp.md): JSON-RPC 2.0 and MCP's lifecycle, tools
 * and notifications, transport-neutral and backend-neutral. A transport (`b4box mcp`'s
 * stdio loop, the server's POST /mcp) hands each message it reads to mcp_handle() and writes
 * the reply it gets back; a backend (the local runtime, a b4box server over HTTP, the
 * server's own runtime behind its access policy) runs the tool calls.
 *
 * Both eras on one endpoint: an `initialize` selects 2025-11-25 for the session (a stdio
 * process; over HTTP every request stands alone, and the Mcp-Session-Id an initialize mints
 * only scopes notifications/cancelled), a request whose params._meta names
 * "io.modelcontextprotocol/protocolVersion" is served statelessly as 2026-07-28.
 *
 * Errors: JSON-RPC errors and tool errors are replies, not return codes; functions return
 * -ENOMEM (or -errno from thread creation) only.
 *
 * Thread-safe: calls on one session may run concurrently (the stdio loop runs each
 * tools/call on a thread of its own, so a cancellation can reach it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/cancel.h"
#include "b4box/error.h"

struct jv;
struct mcp_server;
struct mcp_session;

#define MCP_LEGACY_VERSION "2025-11-25"
#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_MESSAGE_MAX    (4u * 1024u * 1024u) /* one message on stdio */

/* JSON-RPC 2.0 and MCP error codes. */
enum {
        MCP_PARSE_ERROR = -32700,
        MCP_INVALID_REQUEST = -32600,
        MCP_METHOD_NOT_FOUND = -32601,
        MCP_INVALID_PARAMS = -32602,
        MCP_INTERNAL_ERROR = -32603,
        MCP_HEADER_MISMATCH = -32020,
        MCP_UNSUPPORTED_VERSION = -32022,
};

/* A runBash command's output as it comes (stdout and stderr alike), for progress. */
typedef void mcp_output_fn(void *ctx, const char *p, size_t n);

/* One tool call as the backend sees it. Everything is borrowed for the call. */
struct mcp_call {
        const char *thread;       /* the bound thread or the call's thread_id */
        const char *tool;         /* a workspace tool or a lifecycle tool (createThread ...) */
        const struct jv *args;    /* the arguments, thread_id removed */
        struct b4_cancel *cancel; /* fired on notifications/cancelled or a closed stream */
        mcp_output_fn *on_output; /* runBash output goes here as it comes (may be NULL) */
        void *output_ctx;
        void *caller; /* the transport's context of the request (mcp_handle()'s @caller) */
};

struct mcp_backend_ops {
        /*
         * Run @c. Return 0 with *@ret_doc (a new reference) the tool's result document
         * ({"ok":true,"result":...} or {"ok":false,"error":{code,message}}); -EBUSY when the
         * thread's run slot is held (the core waits and tries again, mcp_options.queue_*);
         * another -errno with @err set: a failure the model is shown as a tool error (the
         * thread does not exist or the caller may not use it, the server is unreachable).
         */
        int (*call)(void *data,
                    const struct mcp_call *c,
                    struct jv **ret_doc,
                    struct b4_error *err);
        /* Whether @thread's network is allowed (NULL: the configured default): runBash's
         * openWorldHint in tools/list. */
        bool (*network_allowed)(void *data, const char *thread, void *caller);
};

struct mcp_options {
        const struct mcp_backend_ops *ops;
        void *data;             /* the backend's, passed to every op */
        const char *version;    /* serverInfo.version (borrowed, static) */
        const char *thread;     /* bound thread (copied); NULL: every call names thread_id */
        bool lifecycle_tools;   /* offer createThread, listThreads, releaseThread, deleteThread */
        unsigned queue_max;     /* calls waiting for one thread's slot; 0 = MCP_QUEUE_MAX */
        uint64_t queue_wait_ms; /* how long one waits; 0 = MCP_QUEUE_WAIT_MS */
        uint64_t progress_ms;   /* heartbeat with progressToken; 0 = MCP_PROGRESS_MS */
};

#define MCP_QUEUE_MAX     16u
#define MCP_QUEUE_WAIT_MS (10u * 60u * 1000u)
#define MCP_PROGRESS_MS   10000u

/* A server over @opts (copied; the strings it points to borrowed, but the bound thread).
 * Return: 0 with *@ret (the caller's, mcp_server_free()), -ENOMEM. */
int mcp_server_new(const struct mcp_options *opts, struct mcp_server **ret);
/* NULL ok. Return: NULL. */
struct mcp_server *mcp_server_free(struct mcp_server *s);

/* A session: a stdio process, or a server's HTTP endpoint (its calls in flight, scoped by
 * mcp_http_headers.session). Return: 0, -ENOMEM. */
int mcp_session_new(struct mcp_session **ret);
/* Fire every call in flight (an EOF or a shutdown); the calls still have to return. */
void mcp_session_cancel_all(struct mcp_session *ss);
/* NULL ok; no call may be in flight. Return: NULL. */
struct mcp_session *mcp_session_free(struct mcp_session *ss);

/* Write one message (compact JSON, one line, no newline) to the client while a request
 * runs: its progress notifications. Called on the call's thread. Return: 0, -errno (the
 * client is gone: the call is cancelled). */
typedef int mcp_emit_fn(void *ctx, const char *json, size_t len);

/* The HTTP request's MCP headers (Streamable HTTP); all NULL on stdio. */
struct mcp_http_headers {
        bool present;                 /* the message came over HTTP */
        const char *protocol_version; /* MCP-Protocol-Version */
        const char *method;           /* Mcp-Method */
        const char *name;             /* Mcp-Name */
        /* Mcp-Session-Id, qualified by the transport with the caller's identity: the scope in
         * which a notifications/cancelled finds a call; NULL: the calls are not cancellable
         * by notification (only by closing their stream) */
        const char *session;
};

#define MCP_SESSION_ID_LEN 32

struct mcp_reply {
        char *json;           /* heap: the response (one line, no newline); NULL: none (a
                                 notification or a response from the client) */
        unsigned http_status; /* what Streamable HTTP answers: 200, 202, 400, 404 */
        /* an initialize over HTTP: the Mcp-Session-Id to send back ("" otherwise) */
        char session_id[MCP_SESSION_ID_LEN + 1];
};

void mcp_reply_clear(struct mcp_reply *r);

/*
 * mcp_wants_progress() - whether the message in @buf is a tools/call of runBash asking for
 * progress (the one tool that reports any), so that an HTTP transport can choose SSE before
 * it runs (parses, builds nothing).
 */
bool mcp_wants_progress(const char *buf, size_t len);
/* Whether the message is a tools/call request (the stdio loop runs it on a thread). */
bool mcp_is_tool_call(const char *buf, size_t len);
/* Whether @tool is one of the lifecycle tools (createThread, listThreads, releaseThread,
 * deleteThread), which a backend answers itself instead of running a workspace tool. */
bool mcp_is_lifecycle_tool(const char *tool);

/*
 * mcp_handle() - handle one message (@len bytes of JSON text)
 * @hdr:    the HTTP headers (NULL on stdio)
 * @emit:   where notifications of this request go (NULL: none are sent)
 * @caller: passed to the backend as mcp_call.caller
 * @ret:    the reply (cleared first; the caller's, mcp_reply_clear())
 * Return: 0 (a reply or none, errors included as JSON-RPC errors), -ENOMEM.
 */
int mcp_handle(struct mcp_server *s,
               struct mcp_session *ss,
               const char *buf,
               size_t len,
               const struct mcp_http_headers *hdr,
               mcp_emit_fn *emit,
               void *emit_ctx,
               void *caller,
               struct mcp_reply *ret);

/*
 * mcp_cancel_forward() - fire @to once @from fires, until mcp_cancel_forward_stop() (a
 * backend whose run has a cancel token of its own). Both borrowed until stopped.
 * Return: 0 with *@ret, -errno (no thread could be made).
 */
struct mcp_forward;
int mcp_cancel_forward(struct b4_cancel *from, struct b4_cancel *to, struct mcp_forward **ret);
/* Stop and join. NULL ok. Return: NULL. */
struct mcp_forward *mcp_cancel_forward_stop(struct mcp_forward *f);
