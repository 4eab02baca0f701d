/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A non-2xx answer's Status body (kubernetes.md §3) to an errno and a message. The body is
 * the server's and untrusted: parsed only when it is a capped JSON object, and its strings
 * reach the message sanitised.
 */

#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "json/json.h"
#include "kube/kube-internal.h"

#define STATUS_BODY_MAX (64u * 1024) /* a Status larger than this is not read as one */
#define TEXT_MAX        320

void kube_sanitize(const char *s, size_t len, char *buf, size_t n)
{
        size_t k = 0;

        if (n == 0)
                return;
        for (size_t i = 0; i < len && k + 1 < n; i++) {
                unsigned char c = (unsigned char)s[i];
                buf[k++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
        }
        buf[k] = '\0';
}

static int errno_of(long status, const char *reason)
{
        static const struct {
                long status;
                int error;
        } table[] = {
                { 400, -EINVAL },     { 401, -EPERM },     { 403, -EACCES }, { 404, -ENOENT },
                { 405, -EOPNOTSUPP }, { 410, -ESTALE },    { 413, -EFBIG },  { 422, -EINVAL },
                { 429, -EBUSY },      { 504, -ETIMEDOUT },
        };

        if (status == 409)
                return reason && strcmp(reason, "AlreadyExists") == 0 ? -EEXIST : -EAGAIN;
        if (reason && strcmp(reason, "Timeout") == 0)
                return -ETIMEDOUT;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].status == status)
                        return table[i].error;
        return -EIO;
}

/* The string member @key of @o, sanitised into @buf ("" when absent). */
static void member(const struct jv *o, const char *key, char *buf, size_t n)
{
        const struct jv *v = jv_object_get(o, key);

        buf[0] = '\0';
        if (jv_is_string(v))
                kube_sanitize(jv_string(v), jv_string_length(v), buf, n);
}

int kube_status_from_object(long status, const struct jv *o, struct b4_error *err)
{
        char reason[64] = "", message[TEXT_MAX] = "";
        const struct jv *kind = jv_object_get(o, "kind");
        int r;

        if (jv_is_string(kind) && strcmp(jv_string(kind), "Status") == 0) {
                member(o, "reason", reason, sizeof(reason));
                member(o, "message", message, sizeof(message));
        }
        r = errno_of(status, reason[0] ? reason : NULL);
        if (message[0])
                return b4_error_set(err, r, "%s (%ld%s%s)", message, status, reason[0] ? " " : "",
                                    reason);
        return b4_error_set(err, r, "the API server answered %ld%s%s", status, reason[0] ? " " : "",
                            reason);
}

int kube_status_decode(long status, const char *body, size_t len, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;

        if (body && len > 0 && len <= STATUS_BODY_MAX)
                (void)jv_parse(body, len, &v, NULL);
        return kube_status_from_object(status, jv_is_object(v) ? v : NULL, err);
}
