/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_escape(): percent-encoding as curl_easy_escape() does it (every byte but RFC 3986's
 * unreserved ALPHA DIGIT - . _ ~ becomes %XX, upper case), without libcurl, so the light
 * b4box, which links no libcurl, can build a request path before it hands the command over.
 */

#include <stdbool.h>
#include <string.h>

#include "base/alloc.h"
#include "http.h"

static bool unreserved(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~';
}

char *http_escape(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *r = b4_malloc(3 * n + 1), *o = r;

        if (!r)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (unreserved(*p)) {
                        *o++ = (char)*p;
                        continue;
                }
                *o++ = '%';
                *o++ = hex[*p >> 4];
                *o++ = hex[*p & 15];
        }
        *o = '\0';
        return r;
}
