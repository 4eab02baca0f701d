/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The result documents (docs/tools.md): success, failure and permission request, built as
 * JSON values with the typed fields (ok, code) beside them; the edge serialises them.
 */

#include <errno.h>
#include <string.h>

#include "json/json.h"
#include "tools/tools-internal.h"

void b4_tool_result_clear(struct b4_tool_result *r)
{
        if (!r)
                return;
        jv_unref(r->doc);
        *r = (struct b4_tool_result){ 0 };
}

int result_ok(struct jv *value, struct b4_tool_result *ret)
{
        struct jv *doc = jv_pack("{s:b, s:o}", "ok", true, "result", value);

        if (!doc)
                return -ENOMEM;
        *ret = (struct b4_tool_result){ .ok = true, .doc = doc };
        return 0;
}

const char *result_error_code(const struct b4_error *e)
{
        if (e->code != B4_CODE_NONE)
                return b4_code_name(e->code);
        return e->error == -EAGAIN ? B4_TOOL_PERMISSION_REQUIRED : B4_TOOL_ERROR;
}

/* {code, [errno,] message}: errno (the E name) only for a plain tool_error. NULL on OOM. */
static struct jv *error_object(const char *code, const struct b4_error *e)
{
        const char *name = e->error < 0 ? strerrorname_np(-e->error) : NULL;

        return jv_pack("{s:s, s:s*, s:s}", "code", code, "errno",
                       strcmp(code, B4_TOOL_ERROR) == 0 ? name : NULL, "message", e->msg);
}

int result_error(const char *code,
                 const struct b4_error *e,
                 struct jv *request,
                 struct b4_tool_result *ret)
{
        struct jv *doc = jv_pack("{s:b, s:o, s:o*}", "ok", false, "error", error_object(code, e),
                                 "permissionRequest", request);

        if (!doc)
                return -ENOMEM;
        *ret = (struct b4_tool_result){ .ok = false, .code = code, .doc = doc };
        return 0;
}

/* ---- permission requests ---- */

static const char *const kind_names[] = {
        [ASK_COMMAND] = "command",
        [ASK_PATH] = "path",
        [ASK_TOOL] = "tool",
};

const char *ask_kind_name(enum ask_kind kind)
{
        return kind_names[kind];
}

/* The request's detail: what was asked for and the pattern that would allow it. */
static struct jv *request_detail(const struct ask *a)
{
        switch (a->kind) {
        case ASK_COMMAND:
                return jv_pack("{s:s, s:s}", "command", a->candidate, "suggestedPattern",
                               a->pattern);
        case ASK_PATH:
                return jv_pack("{s:s, s:s, s:s}", "operation", a->key, "path", a->candidate,
                               "suggestedPattern", a->pattern);
        case ASK_TOOL:
                break;
        }
        return jv_pack("{s:s, s:s}", "toolName", a->candidate, "suggestedPattern", a->pattern);
}

int result_request(const struct pending *p, struct jv **ret)
{
        struct jv *o =
                jv_pack("{s:s, s:s, s:s, s:o}", "interruptId", p->id, "type", "permission-request",
                        "kind", kind_names[p->ask.kind], "detail", request_detail(&p->ask));

        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}
