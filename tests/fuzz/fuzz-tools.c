/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: tool calls as an HTTP client sends them (src/lib/tools/dispatch.c and the
 * five tools behind it). Trust boundary: the body of POST /threads/{id}/runs, i.e. a model's
 * tool names and arguments, checked by the dispatcher, the path jail and the permission
 * gates, run against the fake provider's in-memory workspace.
 *
 * The input is a runs body, {"calls":[{"tool":T,"args":{...}},...]}, read the way the server
 * reads it (jv_parse, then each args value handed to b4_tools_call() as parsed). One
 * harness-only tool name, "@answer" with args {"decision":D}, answers the newest permission
 * request through b4_tools_resume(). Permissions are interactive: readFile/listDir under
 * /workspace/src/ allowed, bash "rm" denied, anything else asks. Every result must be one of
 * the three documented JSON shapes, serialise to JSON that parses back, and its typed fields
 * (ok, code) must say what its document says.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/tools.h"

#include "fake/fake.h"
#include "json/json.h"
#include "providers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (16 * 1024)
#define FUZZ_MAX_CALLS 16
#define FUZZ_THREAD    "fuzz"

static struct b4_provider *provider(void)
{
        static struct b4_provider *p;

        if (!p && fake_provider_new(NULL, &p, NULL) < 0)
                abort();
        return p;
}

static struct b4_permissions *permissions(void)
{
        static struct b4_permissions *p;

        if (p)
                return p;
        if (b4_permissions_new(B4_PERMISSION_INTERACTIVE, &p) < 0 ||
            b4_permissions_add(p, B4_PERMISSION_LIST_ALLOW, "readFile", "/workspace/src/", NULL) <
                    0 ||
            b4_permissions_add(p, B4_PERMISSION_LIST_ALLOW, "listDir", "/workspace/src/", NULL) <
                    0 ||
            b4_permissions_add(p, B4_PERMISSION_LIST_DENY, "bash", "rm", NULL) < 0)
                abort();
        return p;
}

/* {"ok":true,"result":...} or {"ok":false,"error":{"code":C,"message":M}[,...]} */
static void check_result(const struct b4_tool_result *res)
{
        const struct jv *v = res->doc, *e;
        struct jv *back = NULL;
        char *json = NULL;

        if (!jv_is_object(v) || jv_dump(v, 0, &json) < 0 ||
            jv_parse(json, strlen(json), &back, NULL) < 0)
                abort();
        if (jv_is_true(jv_object_get(v, "ok")) != res->ok)
                abort();
        e = jv_object_get(v, "error");
        if (!res->ok && (!jv_is_string(jv_object_get(e, "code")) ||
                         !jv_is_string(jv_object_get(e, "message")) || !res->code ||
                         strcmp(res->code, jv_string(jv_object_get(e, "code"))) != 0))
                abort();
        if (res->ok && (!jv_object_get(v, "result") || res->code))
                abort();
        jv_unref(back);
        free(json);
}

static void answer(struct b4_tools *t, const struct jv *args)
{
        const char *id = NULL, *decision = jv_string(jv_object_get(args, "decision"));
        struct b4_tool_result res = { 0 };
        int r;

        if (b4_tools_last_request(t, &id, NULL, NULL, NULL) < 0 || !decision)
                return;
        r = b4_tools_resume(t, id, decision, &res, NULL);
        if (r == 0)
                check_result(&res);
        else if (r != -EINVAL && r != -ENOMEM)
                abort();
        b4_tool_result_clear(&res);
}

static void call(struct b4_tools *t, const struct jv *c)
{
        const char *tool = jv_string(jv_object_get(c, "tool"));
        struct b4_tool_result res = { 0 };

        if (!tool)
                return;
        if (strcmp(tool, "@answer") == 0) {
                answer(t, jv_object_get(c, "args"));
                return;
        }
        if (b4_tools_call(t, tool, jv_object_get(c, "args"), &res, NULL) == 0)
                check_result(&res);
        b4_tool_result_clear(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct b4_tools_options o = { .app = permissions(), .read_cap = 4096 };
        struct b4_acquire_req req = { .thread_id = FUZZ_THREAD };
        struct b4_sandbox *sb = NULL;
        struct b4_tools *t = NULL;
        struct jv *body = NULL;
        const struct jv *calls;
        struct b4_policy pol;

        if (size > FUZZ_MAX_INPUT || jv_parse((const char *)data, size, &body, NULL) < 0)
                return 0;
        calls = jv_object_get(body, "calls");
        b4_policy_init(&pol);
        req.policy = &pol;
        if (jv_is_array(calls) && b4_provider_acquire(provider(), &req, &sb, NULL) == 0 &&
            b4_tools_new(sb, &o, &t, NULL) == 0)
                for (size_t i = 0; i < jv_array_size(calls) && i < FUZZ_MAX_CALLS; i++)
                        call(t, jv_array_get(calls, i));
        b4_tools_free(t);
        b4_sandbox_unref(sb);
        (void)b4_provider_destroy(provider(), FUZZ_THREAD, NULL);
        /* nothing may outlive the thread (the provider is kept across inputs) */
        if (fake_provider_instances(provider(), FUZZ_THREAD) != 0 ||
            fake_provider_n_workspaces(provider()) != 0)
                abort();
        b4_policy_clear(&pol);
        jv_unref(body);
        return 0;
}
