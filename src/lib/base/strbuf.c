/* SPDX-License-Identifier: Apache-2.0 */
/* Capped growable buffer. */

#include "strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void strbuf_init(struct strbuf *sb, size_t max)
{
        *sb = (struct strbuf){ .max = max };
}

void strbuf_release(struct strbuf *sb)
{
        free(sb->buf);
        sb->buf = NULL;
        sb->len = sb->cap = 0;
}

void strbuf_reset(struct strbuf *sb)
{
        sb->len = 0;
        if (sb->buf)
                sb->buf[0] = '\0';
}

static int grow(struct strbuf *sb, size_t extra)
{
        size_t need, ncap;
        char *n;

        if (extra > sb->max - sb->len)
                return -E2BIG;
        need = sb->len + extra + 1;
        if (need <= sb->cap)
                return 0;
        ncap = sb->cap ? sb->cap : 64;
        while (ncap < need)
                ncap = ncap > ((size_t)-1) / 2 ? need : ncap * 2;
        n = b4_realloc(sb->buf, ncap);
        if (!n)
                return -ENOMEM;
        sb->buf = n;
        sb->cap = ncap;
        return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
        int r = grow(sb, len);

        if (r < 0)
                return r;
        if (len)
                memcpy(sb->buf + sb->len, data, len);
        sb->len += len;
        sb->buf[sb->len] = '\0';
        return 0;
}

int strbuf_adds(struct strbuf *sb, const char *s)
{
        return strbuf_add(sb, s, strlen(s));
}

int strbuf_addc(struct strbuf *sb, char c)
{
        return strbuf_add(sb, &c, 1);
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
        va_list ap, aq;
        int n, r;

        va_start(ap, fmt);
        va_copy(aq, ap);
        n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        if (n < 0) {
                va_end(ap);
                return -EINVAL;
        }
        r = grow(sb, (size_t)n);
        if (r < 0) {
                va_end(ap);
                return r;
        }
        (void)vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        sb->len += (size_t)n;
        return 0;
}

int strbuf_detach(struct strbuf *sb, char **ret, size_t *ret_len)
{
        if (!sb->buf) {
                int r = grow(sb, 0);
                if (r < 0)
                        return r;
                sb->buf[0] = '\0';
        }
        *ret = sb->buf;
        if (ret_len)
                *ret_len = sb->len;
        sb->buf = NULL;
        sb->len = sb->cap = 0;
        return 0;
}

int strbuf_add_shell_quoted(struct strbuf *sb, const char *s)
{
        int r = strbuf_addc(sb, '\'');

        for (; r >= 0 && *s; s++)
                r = *s == '\'' ? strbuf_adds(sb, "'\\''") : strbuf_addc(sb, *s);
        return r < 0 ? r : strbuf_addc(sb, '\'');
}
