/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deterministic per-thread resource names (reference §3.2): sha256 over the compact JSON
 * array ["b4-sandbox-scope-v1", scope, thread], first 40 hex. The JSON is written by jansson,
 * whose escaping matches JSON.stringify for valid UTF-8 (raw non-ASCII, \uXXXX controls).
 */

#include <errno.h>
#include <string.h>

#include "b4box/provider.h"

#include "base/hash.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "json/json.h"

int b4_resource_id(const char *scope, const char *thread_id, char ret_hex[41])
{
        cleanup_(jv_unrefp) struct jv *arr = NULL;
        cleanup_free char *json = NULL;
        char hex[SHA256_HEX_LEN + 1];
        int r;

        if (!scope || !thread_id || !*scope)
                return -EINVAL;
        arr = jv_array_new();
        if (!arr)
                return -ENOMEM;
        r = jv_array_append_new(arr, jv_string_new("b4-sandbox-scope-v1"));
        if (r >= 0)
                r = jv_array_append_new(arr, jv_string_new(scope));
        if (r >= 0)
                r = jv_array_append_new(arr, jv_string_new(thread_id));
        if (r < 0)
                return -EINVAL; /* jansson refuses invalid UTF-8 (or OOM) */
        r = jv_dump(arr, 0, &json);
        if (r < 0)
                return r;
        sha256_hex(json, strlen(json), hex);
        memcpy(ret_hex, hex, 40);
        ret_hex[40] = '\0';
        return 0;
}
