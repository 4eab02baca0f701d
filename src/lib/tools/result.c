/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The result documents (docs/tools.md): success, failure and permission request, built as
 * JSON values with the typed fields (ok, code) beside them; the edge serialises them.
 */

#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "json/json.h"
#include "tools/tools-internal.h"

static void jv_unref_ptr(struct jv **v)
{
        jv_unrefp(v);
}

#define cleanup_jv cleanup_(jv_unref_ptr)

void b4_tool_result_clear(struct b4_tool_result *r)
{
        if (!r)
                return;
        jv_unref(r->doc);
        *r = (struct b4_tool_result){ 0 };
}

int result_ok(struct jv *value, struct b4_tool_result *ret)
{
        cleanup_jv struct jv *doc = jv_object_new();
        int r;

        if (!doc) {
                jv_unref(value);
                return -ENOMEM;
        }
        r = jv_object_set_new(doc, "ok", jv_bool_new(true));
        if (r >= 0)
                r = jv_object_set_new(doc, "result", value);
        else
                jv_unref(value);
        if (r < 0)
                return r;
        *ret = (struct b4_tool_result){ .ok = true, .doc = TAKE_PTR(doc) };
        return 0;
}

const char *result_error_code(const struct b4_error *e)
{
        if (e->code != B4_CODE_NONE)
                return b4_code_name(e->code);
        return e->error == -EAGAIN ? B4_TOOL_PERMISSION_REQUIRED : B4_TOOL_ERROR;
}

static int error_object(const char *code, const struct b4_error *e, struct jv **ret)
{
        cleanup_jv struct jv *o = jv_object_new();
        const char *name = e->error < 0 ? strerrorname_np(-e->error) : NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = jv_object_set_new(o, "code", jv_string_new(code));
        if (r >= 0 && strcmp(code, B4_TOOL_ERROR) == 0 && name)
                r = jv_object_set_new(o, "errno", jv_string_new(name));
        if (r >= 0)
                r = jv_object_set_new(o, "message", jv_string_new(e->msg));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int result_error(const char *code,
                 const struct b4_error *e,
                 struct jv *request,
                 struct b4_tool_result *ret)
{
        cleanup_jv struct jv *doc = jv_object_new();
        cleanup_jv struct jv *req = request;
        struct jv *eo = NULL;
        int r;

        if (!doc)
                return -ENOMEM;
        r = error_object(code, e, &eo);
        if (r >= 0)
                r = jv_object_set_new(doc, "ok", jv_bool_new(false));
        if (r >= 0)
                r = jv_object_set_new(doc, "error", TAKE_PTR(eo));
        if (r >= 0 && req)
                r = jv_object_set_new(doc, "permissionRequest", TAKE_PTR(req));
        jv_unref(eo);
        if (r < 0)
                return r;
        *ret = (struct b4_tool_result){ .ok = false, .code = code, .doc = TAKE_PTR(doc) };
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

static int request_detail(const struct ask *a, struct jv **ret)
{
        cleanup_jv struct jv *d = jv_object_new();
        int r;

        if (!d)
                return -ENOMEM;
        if (a->kind == ASK_COMMAND)
                r = jv_object_set_new(d, "command", jv_string_new(a->candidate));
        else if (a->kind == ASK_PATH) {
                r = jv_object_set_new(d, "operation", jv_string_new(a->key));
                if (r >= 0)
                        r = jv_object_set_new(d, "path", jv_string_new(a->candidate));
        } else
                r = jv_object_set_new(d, "toolName", jv_string_new(a->candidate));
        if (r >= 0)
                r = jv_object_set_new(d, "suggestedPattern", jv_string_new(a->pattern));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

int result_request(const struct pending *p, struct jv **ret)
{
        cleanup_jv struct jv *o = jv_object_new();
        struct jv *detail = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = jv_object_set_new(o, "interruptId", jv_string_new(p->id));
        if (r >= 0)
                r = jv_object_set_new(o, "type", jv_string_new("permission-request"));
        if (r >= 0)
                r = jv_object_set_new(o, "kind", jv_string_new(kind_names[p->ask.kind]));
        if (r >= 0)
                r = request_detail(&p->ask, &detail);
        if (r >= 0)
                r = jv_object_set_new(o, "detail", detail);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}
