/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deterministic per-thread resource names (reference §3.2): sha256 over the compact JSON
 * array ["b4-sandbox-scope-v1", scope, thread], first 40 hex. The strings are written with
 * JSON.stringify's escaping (raw non-ASCII, lowercase \u00xx controls), byte for byte.
 */

#include <errno.h>
#include <string.h>

#include "b4box/provider.h"

#include "base/hash.h"
#include "base/strbuf.h"
#include "json/json.h"

int b4_resource_id(const char *scope, const char *thread_id, char ret_hex[41])
{
        struct strbuf sb;
        char hex[SHA256_HEX_LEN + 1];
        int r;

        if (!scope || !thread_id || !*scope)
                return -EINVAL;
        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_adds(&sb, "[\"b4-sandbox-scope-v1\",");
        if (r >= 0)
                r = jv_append_string(&sb, scope, strlen(scope));
        if (r >= 0)
                r = strbuf_addc(&sb, ',');
        if (r >= 0)
                r = jv_append_string(&sb, thread_id, strlen(thread_id));
        if (r >= 0)
                r = strbuf_addc(&sb, ']');
        if (r >= 0) {
                sha256_hex(sb.buf, sb.len, hex);
                memcpy(ret_hex, hex, 40);
                ret_hex[40] = '\0';
        }
        strbuf_release(&sb);
        return r;
}
