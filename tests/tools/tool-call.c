/* SPDX-License-Identifier: Apache-2.0 */
/* Text in, text out over the tools' typed API (tool-call.h). */

#include "tool-call.h"

#include <stdlib.h>
#include <string.h>

#include "b4-test.h"
#include "json/json.h"

char *tool_result_text(const struct b4_tool_result *res)
{
        const char *code = jv_string(jv_object_get(jv_object_get(res->doc, "error"), "code"));
        char *json = NULL;

        assert_non_null(res->doc);
        assert_int_equal(res->ok, jv_is_true(jv_object_get(res->doc, "ok")));
        if (res->ok)
                assert_null(res->code);
        else
                assert_string_equal(res->code, code);
        assert_int_equal(jv_dump(res->doc, 0, &json), 0);
        return json;
}

static int finish(int r, struct b4_tool_result *res, char **ret_json)
{
        if (r == 0)
                *ret_json = tool_result_text(res);
        b4_tool_result_clear(res);
        return r;
}

int tool_call_text(struct b4_tools *t,
                   const char *tool,
                   const char *args_json,
                   char **ret_json,
                   struct b4_error *err)
{
        struct b4_tool_result res = { 0 };
        struct jv *args = NULL;
        int r;

        assert_int_equal(jv_parse(args_json, strlen(args_json), &args, NULL), 0);
        r = b4_tools_call(t, tool, args, &res, err);
        jv_unref(args);
        return finish(r, &res, ret_json);
}

int tool_resume_text(struct b4_tools *t,
                     const char *id,
                     const char *answer,
                     char **ret_json,
                     struct b4_error *err)
{
        struct b4_tool_result res = { 0 };

        return finish(b4_tools_resume(t, id, answer, &res, err), &res, ret_json);
}
