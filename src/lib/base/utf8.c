/* SPDX-License-Identifier: Apache-2.0 */
/* Strict UTF-8 validation, and the length JavaScript gives a string. */

#include "utf8.h"

#include <stdint.h>

static size_t seq_len(unsigned char c, uint32_t *min, uint32_t *cp)
{
        if (c < 0x80) {
                *cp = c;
                return 1;
        }
        if ((c & 0xE0) == 0xC0) {
                *min = 0x80;
                *cp = c & 0x1F;
                return 2;
        }
        if ((c & 0xF0) == 0xE0) {
                *min = 0x800;
                *cp = c & 0x0F;
                return 3;
        }
        if ((c & 0xF8) == 0xF0) {
                *min = 0x10000;
                *cp = c & 0x07;
                return 4;
        }
        return 0;
}

bool utf8_is_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;

        while (i < len) {
                uint32_t min = 0, cp = 0;
                size_t n = seq_len(p[i], &min, &cp);
                if (n == 0 || n > len - i)
                        return false;
                for (size_t k = 1; k < n; k++) {
                        if ((p[i + k] & 0xC0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i + k] & 0x3F);
                }
                if (n > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
                        return false;
                i += n;
        }
        return true;
}

size_t utf8_js_length(const char *s)
{
        size_t n = 0;

        for (const unsigned char *c = (const unsigned char *)s; *c; c++)
                if ((*c & 0xc0) != 0x80)
                        n += *c >= 0xf0 ? 2 : 1;
        return n;
}
