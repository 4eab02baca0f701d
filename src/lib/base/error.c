/* SPDX-License-Identifier: Apache-2.0 */
/* struct b4_error helpers: alloc-free, so they work under OOM. */

#include "b4box/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

B4_PRINTF(2, 0) static void set_msg(struct b4_error *err, const char *fmt, va_list ap)
{
        (void)vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int b4_error_set(struct b4_error *err, int r, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return r;
        err->error = r;
        err->code = B4_CODE_NONE;
        va_start(ap, fmt);
        set_msg(err, fmt, ap);
        va_end(ap);
        return r;
}

int b4_error_set_code(struct b4_error *err, int r, enum b4_code code, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return r;
        err->error = r;
        err->code = code;
        va_start(ap, fmt);
        set_msg(err, fmt, ap);
        va_end(ap);
        return r;
}

int b4_error_wrap(struct b4_error *err, int r, const char *fmt, ...)
{
        char prefix[sizeof(err->msg)];
        char old[sizeof(err->msg)];
        va_list ap;

        if (!err)
                return r;
        va_start(ap, fmt);
        (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        if (err->error == 0) {
                err->error = r;
                err->code = B4_CODE_NONE;
                memcpy(err->msg, prefix, sizeof(prefix));
                return r;
        }
        /* "prefix: old", truncated to the buffer. */
        memcpy(old, err->msg, sizeof(old));
        size_t n = strnlen(prefix, sizeof(err->msg) - 1);
        memcpy(err->msg, prefix, n);
        if (n + 2 < sizeof(err->msg)) {
                memcpy(err->msg + n, ": ", 2);
                n += 2;
        }
        size_t m = strnlen(old, sizeof(old));
        if (m > sizeof(err->msg) - 1 - n)
                m = sizeof(err->msg) - 1 - n;
        memcpy(err->msg + n, old, m);
        err->msg[n + m] = '\0';
        return err->error;
}

const char *b4_code_name(enum b4_code code)
{
        switch (code) {
        case B4_CODE_SANDBOX_UNAVAILABLE:
                return "B4_E2001";
        case B4_CODE_THREAD_REFUSED:
                return "B4_E2002";
        case B4_CODE_IMAGE_NOT_ALLOWED:
                return "B4_E2003";
        case B4_CODE_NO_TARGET:
                return "B4_E2004";
        case B4_CODE_IMAGE_UNSUPPORTED:
                return "B4_E2005";
        case B4_CODE_TOOL_DENIED:
                return "B4_E3001";
        case B4_CODE_SUBAGENT_DENIED:
                return "B4_E3002";
        case B4_CODE_NONE:
                break;
        }
        return NULL;
}
