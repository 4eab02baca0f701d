/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Private to src/mcp: the JSON-RPC layer (jsonrpc.c) and the tool table (mcp-tools.c). */

#include <stdbool.h>
#include <stddef.h>

#include "mcp.h"

struct jv;

enum rpc_kind {
        RPC_REQUEST,      /* method and id */
        RPC_NOTIFICATION, /* method, no id */
        RPC_RESPONSE,     /* result or error: a client's answer (this server asks nothing) */
};

struct rpc_msg {
        struct jv *root; /* owned */
        enum rpc_kind kind;
        const struct jv *id;     /* borrowed from root; NULL for a notification */
        const char *method;      /* borrowed; NULL for a response */
        const struct jv *params; /* borrowed; an object or NULL */
};

/*
 * rpc_parse() - one JSON-RPC 2.0 message
 * On failure *@ret_code is MCP_PARSE_ERROR (not JSON) or MCP_INVALID_REQUEST (a batch, not
 * an object, no "jsonrpc":"2.0", a bad id, method or params), *@ret_why says which, and
 * @ret->root / @ret->id are set when the text parsed (so the error echoes the id).
 * Return: 0, -EINVAL (see above), -ENOMEM. Clear @ret with rpc_msg_clear() either way.
 */
int rpc_parse(
        const char *buf, size_t len, struct rpc_msg *ret, int *ret_code, const char **ret_why);
void rpc_msg_clear(struct rpc_msg *m);

/* {"jsonrpc":"2.0","id":<id>,"result":<result>} (@result taken). NULL on OOM. */
char *rpc_result(const struct jv *id, struct jv *result);
/* {"jsonrpc":"2.0","id":<id or null>,"error":{code,message[,data]}} (@data taken, NULL ok). */
char *rpc_error(const struct jv *id, int code, const char *message, struct jv *data);
/* {"jsonrpc":"2.0","method":<method>,"params":<params>} (@params taken). */
char *rpc_notification(const char *method, struct jv *params);

/* One request being handled (mcp.c), for the methods. */
struct mcp_request {
        struct mcp_server *srv;
        struct mcp_session *ss;
        const struct rpc_msg *msg;
        const struct mcp_http_headers *hdr; /* NULL on stdio */
        mcp_emit_fn *emit;
        void *emit_ctx;
        void *caller;
        struct mcp_reply *reply;
        bool modern; /* served as 2026-07-28 */
};

/* Reply with @result (taken; resultType added in the modern era). Return: 0, -ENOMEM. */
int mcp_reply_result(struct mcp_request *q, struct jv *result);
/* Reply with a JSON-RPC error. Return: 0, -ENOMEM. */
int mcp_reply_error(struct mcp_request *q, int code, const char *msg);

/* The session's record of a call in flight, for notifications/cancelled. */
struct inflight;
int mcp_session_track(struct mcp_session *ss,
                      const char *scope,
                      const struct jv *id,
                      struct b4_cancel *c,
                      struct inflight **ret);
/* The scope @h gives a request's calls (NULL: the process); *@ret_trackable false when a
 * notifications/cancelled cannot reach them (HTTP without Mcp-Session-Id). */
const char *mcp_request_scope(const struct mcp_http_headers *h, bool *ret_trackable);
void mcp_session_untrack(struct mcp_session *ss, struct inflight *f); /* NULL ok */

const struct mcp_options *mcp_server_options(const struct mcp_server *s);
/* Count a call waiting for @thread's slot: false when MCP_QUEUE_MAX already wait. */
bool mcp_queue_enter(struct mcp_server *s, const char *thread);
void mcp_queue_leave(struct mcp_server *s, const char *thread);

/* Base64 (the Mcp-Name sentinel) decoded as a string; NULL when not canonical or has NUL. */
char *mcp_base64_decode(const char *s, size_t len);

/* ---- tool-call.c: tools/call ---- */
int mcp_tools_call(struct mcp_request *q);

/* ---- mcp-tools.c ---- */
struct mcp_tool;
/* The tool named @name among those @s offers, or NULL. */
const struct mcp_tool *mcp_tool_find(const struct mcp_server *s, const char *name);
/* tools/list's array (a new reference); @network: runBash's openWorldHint. */
struct jv *mcp_tools_list(const struct mcp_server *s, bool network);
/* Whether the tool's result is structured (runBash). */
bool mcp_tool_structured(const struct mcp_tool *t);
/* The tool's name. */
const char *mcp_tool_name(const struct mcp_tool *t);
/* Whether the tool works on one thread (all but listThreads). */
bool mcp_tool_needs_thread(const struct mcp_tool *t);
/* The bound thread, or NULL. */
const char *mcp_server_thread(const struct mcp_server *s);
bool mcp_server_lifecycle(const struct mcp_server *s);
