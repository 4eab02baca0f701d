/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box mcp --server URL`'s backend (b4box-full): each call is one request to the server's
 * HTTP API (POST /threads/{id}/tools/{tool}; the lifecycle tools' routes), with
 * $B4BOX_TOKEN. 409 run_in_flight is -EBUSY, so the MCP core queues the call. The call is
 * not streamed: no progress notifications, and a cancel takes effect when the server's
 * answer comes (docs/mcp.md).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/error.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "cli.h"
#include "client.h"
#include "http/http.h"
#include "json/json.h"
#include "mcp-backend.h"

struct remote {
        struct cli_client client;
};

/* The server's refusal as an error: its message and code. */
static int refusal(long status, const char *body, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const struct jv *e;

        (void)jv_parse(body, strlen(body), &v, NULL);
        e = jv_object_get(v, "error");
        const char *msg = jv_string(jv_object_get(e, "message"));
        const char *code = jv_string(jv_object_get(jv_object_get(e, "details"), "code"));
        if (status == 409 && code && strcmp(code, "run_in_flight") == 0)
                return -EBUSY;
        return b4_error_set(err, status == 404 ? -ENOENT : -EIO, "%s (HTTP %ld%s%s)",
                            msg ? msg : "the server refused the call", status, code ? ", " : "",
                            code ? code : "");
}

static int request(struct remote *rm,
                   const char *method,
                   const char *path,
                   const char *body,
                   struct jv **ret,
                   struct b4_error *err)
{
        struct cli_http_req req = {
                .method = method, .path = path, .body = body, .len = body ? strlen(body) : 0
        };
        struct cli_http_resp resp = { 0 };
        int r = cli_http_request(&rm->client, &req, &resp, err);

        if (r < 0)
                return r;
        if (resp.status < 200 || resp.status > 299)
                r = refusal(resp.status, resp.body ? resp.body : "", err);
        else if (jv_parse(resp.body ? resp.body : "null", resp.body ? resp.len : 4, ret, err) < 0)
                r = b4_error_set(err, -EBADMSG, "the server's answer is not JSON");
        free(resp.body);
        return r;
}

static struct jv *ok_doc(struct jv *result)
{
        return jv_pack("{s:b, s:o}", "ok", true, "result", result);
}

/* "/threads/<thread>[/<tail>][/<tool>]" with the ids escaped. */
static char *thread_path(const char *thread, const char *tail, const char *tool)
{
        cleanup_free char *et = http_escape(thread), *en = tool ? http_escape(tool) : NULL;
        char *path = NULL;

        if (!et || (tool && !en) ||
            b4_asprintf(&path, "/threads/%s%s%s%s", et, tail, tool ? "/" : "", tool ? en : "") < 0)
                return NULL;
        return path;
}

static int lifecycle(struct remote *rm,
                     const struct mcp_call *c,
                     struct jv **ret_doc,
                     struct b4_error *err)
{
        cleanup_free char *path = NULL, *body = NULL;
        struct jv *v = NULL;
        int r;

        if (strcmp(c->tool, "listThreads") == 0)
                r = request(rm, "GET", "/threads", NULL, &v, err);
        else if (strcmp(c->tool, "createThread") == 0) {
                cleanup_(jv_unrefp) struct jv *b = jv_pack("{s:s}", "thread_id", c->thread);
                if (!b || jv_dump(b, 0, &body) < 0)
                        return -ENOMEM;
                r = request(rm, "POST", "/threads", body, &v, err);
        } else {
                bool del = strcmp(c->tool, "deleteThread") == 0;
                path = thread_path(c->thread, del ? "" : "/release", NULL);
                if (!path)
                        return -ENOMEM;
                r = request(rm, del ? "DELETE" : "POST", path, del ? NULL : "{}", &v, err);
        }
        if (r < 0)
                return r;
        *ret_doc = ok_doc(v);
        return *ret_doc ? 0 : -ENOMEM;
}

static int remote_call(void *data,
                       const struct mcp_call *c,
                       struct jv **ret_doc,
                       struct b4_error *err)
{
        struct remote *rm = data;
        cleanup_free char *path = NULL, *body = NULL;

        if (mcp_is_lifecycle_tool(c->tool))
                return lifecycle(rm, c, ret_doc, err);
        path = thread_path(c->thread, "/tools", c->tool);
        if (!path || jv_dump(c->args, 0, &body) < 0)
                return -ENOMEM;
        return request(rm, "POST", path, body, ret_doc, err);
}

static bool remote_network(void *data, const char *thread, void *caller)
{
        (void)data;
        (void)thread;
        (void)caller;
        return false; /* the server's policy is not visible from here: no open-world claim */
}

static const struct mcp_backend_ops remote_ops = { .call = remote_call,
                                                   .network_allowed = remote_network };

int mcp_remote_serve(const char *url,
                     struct mcp_options *o,
                     int (*serve)(const struct mcp_options *o))
{
        struct remote rm = { .client = { .url = url, .token = secure_getenv("B4BOX_TOKEN") } };

        o->ops = &remote_ops;
        o->data = &rm;
        return serve(o);
}
