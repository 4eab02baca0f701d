/* SPDX-License-Identifier: Apache-2.0 */
/* JSON-RPC 2.0 framing (https://www.jsonrpc.org/specification) as MCP 2025-11-25 narrows it:
 * ids are strings or integers, params an object, no batches. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "json/json.h"
#include "mcp-internal.h"

void rpc_msg_clear(struct rpc_msg *m)
{
        m->root = jv_unref(m->root);
        *m = (struct rpc_msg){ 0 };
}

static bool id_valid(const struct jv *id)
{
        return jv_is_string(id) || jv_is_safe_integer(id);
}

static int invalid(int *ret_code, const char **ret_why, const char *why)
{
        *ret_code = MCP_INVALID_REQUEST;
        *ret_why = why;
        return -EINVAL;
}

/* The members of an object that is a message: the kind and its shape. */
static int classify(struct rpc_msg *m, int *ret_code, const char **ret_why)
{
        const struct jv *v = jv_object_get(m->root, "jsonrpc");
        const struct jv *id = jv_object_get(m->root, "id");
        const struct jv *method = jv_object_get(m->root, "method");
        const struct jv *params = jv_object_get(m->root, "params");

        if (id && id_valid(id))
                m->id = id;
        if (!jv_is_string(v) || strcmp(jv_string(v), "2.0") != 0)
                return invalid(ret_code, ret_why, "\"jsonrpc\" must be \"2.0\"");
        if (!method) {
                if (!id || (!jv_object_get(m->root, "result") && !jv_object_get(m->root, "error")))
                        return invalid(ret_code, ret_why, "a request needs a \"method\"");
                m->kind = RPC_RESPONSE;
                return 0;
        }
        if (!jv_is_string(method) || jv_string_length(method) != strlen(jv_string(method)))
                return invalid(ret_code, ret_why, "\"method\" must be a string");
        if (id && !id_valid(id))
                return invalid(ret_code, ret_why, "\"id\" must be a string or an integer");
        if (params && !jv_is_object(params))
                return invalid(ret_code, ret_why, "\"params\" must be an object");
        m->kind = id ? RPC_REQUEST : RPC_NOTIFICATION;
        m->method = jv_string(method);
        m->params = params;
        return 0;
}

int rpc_parse(const char *buf, size_t len, struct rpc_msg *ret, int *ret_code, const char **ret_why)
{
        struct b4_error err = { 0 };
        int r;

        *ret = (struct rpc_msg){ 0 };
        r = jv_parse(buf, len, &ret->root, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret_code = MCP_PARSE_ERROR;
                *ret_why = "the message is not JSON";
                return -EINVAL;
        }
        if (jv_is_array(ret->root))
                return invalid(ret_code, ret_why,
                               "batches are not supported (MCP 2025-11-25 removed them)");
        if (!jv_is_object(ret->root))
                return invalid(ret_code, ret_why, "a message must be a JSON object");
        return classify(ret, ret_code, ret_why);
}

static char *dump(struct jv *v)
{
        char *text = NULL;

        if (v && jv_dump(v, 0, &text) < 0)
                text = NULL;
        jv_unref(v);
        return text;
}

char *rpc_result(const struct jv *id, struct jv *result)
{
        return dump(jv_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

char *rpc_error(const struct jv *id, int code, const char *message, struct jv *data)
{
        struct jv *e = jv_pack("{s:i, s:s, s:o*}", "code", code, "message", message, "data", data);

        return dump(jv_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "error", e));
}

char *rpc_notification(const char *method, struct jv *params)
{
        return dump(
                jv_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params));
}
