/* SPDX-License-Identifier: Apache-2.0 */
/* Standard base64: the one encoder and the one canonical decoder (bundles, the fs routes). */

#include "base/base64.h"

#include <errno.h>
#include <string.h>

#include "base/alloc.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value_of(char c)
{
        const char *p = c ? strchr(alphabet, c) : NULL;

        return p ? (int)(p - alphabet) : -1;
}

int base64_encode(const void *data, size_t len, char **ret, size_t *ret_len)
{
        const unsigned char *in = data;
        size_t n = (len + 2) / 3 * 4;
        char *out = b4_malloc(n + 1), *o = out;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 3) {
                unsigned v = (unsigned)in[i] << 16;

                if (i + 1 < len)
                        v |= (unsigned)in[i + 1] << 8;
                if (i + 2 < len)
                        v |= in[i + 2];
                *o++ = alphabet[(v >> 18) & 63];
                *o++ = alphabet[(v >> 12) & 63];
                *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
                *o++ = i + 2 < len ? alphabet[v & 63] : '=';
        }
        *o = '\0';
        *ret = out;
        *ret_len = n;
        return 0;
}

ssize_t base64_decoded_len(const char *s, size_t len)
{
        size_t pad = 0;

        if (len % 4)
                return -1;
        if (len >= 1 && s[len - 1] == '=')
                pad = len >= 2 && s[len - 2] == '=' ? 2 : 1;
        for (size_t i = 0; i < len - pad; i++)
                if (value_of(s[i]) < 0)
                        return -1;
        if (pad) {
                int last = value_of(s[len - pad - 1]);

                /* the unused low bits of the last symbol must be zero */
                if ((pad == 1 && (last & 3)) || (pad == 2 && (last & 15)))
                        return -1;
        }
        return (ssize_t)(len / 4 * 3 - pad);
}

int base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
        ssize_t size = base64_decoded_len(s, len);
        char *out;
        size_t o = 0;

        if (size < 0)
                return -EINVAL;
        out = b4_malloc((size_t)size + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 4) {
                unsigned v = 0;
                int k = 0;

                for (int j = 0; j < 4; j++) {
                        int d = value_of(s[i + j]);

                        v = v << 6 | (unsigned)(d < 0 ? 0 : d);
                        k += d >= 0;
                }
                out[o++] = (char)(v >> 16);
                if (k > 2)
                        out[o++] = (char)(v >> 8);
                if (k > 3)
                        out[o++] = (char)v;
        }
        out[o] = '\0';
        *ret = out;
        *ret_len = o;
        return 0;
}
