/* SPDX-License-Identifier: Apache-2.0 */
/* strtol-based integer parsing that rejects partial input and overflow. */

#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

int safe_atou64(const char *s, uint64_t *ret)
{
        unsigned long long v;
        char *end = NULL;

        if (!s || !isdigit((unsigned char)s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi64(const char *s, int64_t *ret)
{
        long long v;
        char *end = NULL;

        if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi(const char *s, int *ret)
{
        int64_t v;
        int r = safe_atoi64(s, &v);

        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int)v;
        return 0;
}
