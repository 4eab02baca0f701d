/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the MCP message handler (src/lib/mcp: JSON-RPC framing, both eras, the HTTP
 * header checks, tools/call's arguments) over a backend that answers every call at once.
 * Trust boundary: every byte on `b4box mcp`'s stdin and in a POST /mcp body (and its three
 * MCP headers) comes from the client.
 *
 * Input: byte 0 picks the mode (bit 0: HTTP headers present; bits 1-2: which header set;
 * bit 3: a bound thread); the rest is the message. Checked beyond "no crash": a reply is
 * one line of JSON, a JSON-RPC 2.0 response with exactly one of result and error; its id is
 * the request's when the request had a valid one; an HTTP status is one of 200/202/400/404.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

static int call(void *d, const struct mcp_call *c, struct jv **ret, struct b4_error *err)
{
        (void)d;
        if (!c->thread || !c->tool || !c->args || !c->cancel)
                abort();
        if (strcmp(c->tool, "readFile") == 0)
                return b4_error_set(err, -ENOENT, "thread '%s' not found", c->thread);
        *ret = jv_pack("{s:b, s:O}", "ok", true, "result", c->args);
        return *ret ? 0 : -ENOMEM;
}

static bool net(void *d, const char *thread, void *caller)
{
        return thread != NULL;
}

static const struct mcp_backend_ops ops = { .call = call, .network_allowed = net };

static void check_reply(const char *msg, size_t len, const struct mcp_reply *rep)
{
        struct jv *req = NULL, *v = NULL;

        if (rep->http_status != 200 && rep->http_status != 202 && rep->http_status != 400 &&
            rep->http_status != 404)
                abort();
        if (!rep->json)
                return;
        if (strchr(rep->json, '\n') || jv_parse(rep->json, strlen(rep->json), &v, NULL) < 0)
                abort();
        const char *ver = jv_string(jv_object_get(v, "jsonrpc"));
        if (!ver || strcmp(ver, "2.0") != 0 ||
            !jv_object_get(v, "result") == !jv_object_get(v, "error") || !jv_object_get(v, "id"))
                abort();
        if (jv_parse(msg, len, &req, NULL) >= 0 && jv_is_object(req)) {
                const struct jv *id = jv_object_get(req, "id");
                char *a = NULL, *b = NULL;
                if (id && (jv_is_string(id) || jv_is_safe_integer(id)) &&
                    (jv_dump(id, 0, &a) < 0 || jv_dump(jv_object_get(v, "id"), 0, &b) < 0 ||
                     strcmp(a, b) != 0))
                        abort();
                free(a);
                free(b);
        }
        jv_unref(req);
        jv_unref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct mcp_http_headers sets[4] = {
                { .present = true },
                { .present = true, .protocol_version = "2025-11-25" },
                { .present = true,
                  .protocol_version = "2026-07-28",
                  .method = "tools/call",
                  .name = "=?base64?cmVhZEZpbGU=?=" },
                { .present = true, .protocol_version = "2026-07-28", .method = "tools/list" },
        };
        struct mcp_server *s = NULL;
        struct mcp_session *ss = NULL;
        struct mcp_reply rep = { 0 };

        if (size < 1 || size > FUZZ_MAX_INPUT)
                return 0;
        struct mcp_options o = { .ops = &ops,
                                 .thread = data[0] & 8 ? "t" : NULL,
                                 .lifecycle_tools = data[0] & 16,
                                 .queue_wait_ms = 1 };
        if (mcp_server_new(&o, &s) < 0 || mcp_session_new(&ss) < 0)
                abort();
        const char *msg = (const char *)data + 1;
        size_t len = size - 1;
        /* initialize first, so that tools requests reach their handlers on "stdio" */
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
                                   "\"params\":{\"protocolVersion\":\"2025-11-25\"}}";
        if (mcp_handle(s, ss, init, sizeof(init) - 1, NULL, NULL, NULL, NULL, &rep) < 0)
                abort();
        mcp_reply_clear(&rep);
        const struct mcp_http_headers *h = data[0] & 1 ? &sets[(data[0] >> 1) & 3] : NULL;
        if (mcp_handle(s, ss, msg, len, h, NULL, NULL, NULL, &rep) == 0)
                check_reply(msg, len, &rep);
        (void)mcp_wants_progress(msg, len);
        (void)mcp_is_tool_call(msg, len);
        mcp_reply_clear(&rep);
        mcp_session_free(ss);
        mcp_server_free(s);
        return 0;
}
