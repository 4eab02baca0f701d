/* SPDX-License-Identifier: Apache-2.0 */
/* The text logic of readFile and editFile (reference §10.1), over bytes. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "tools/tools-internal.h"

/* ---- lossy UTF-8 (WHATWG decoder: one U+FFFD per maximal invalid subpart) ---- */

/* Bytes that follow lead @c and the bounds of the first of them; 0 = invalid lead. */
static size_t utf8_need(unsigned char c, unsigned char *lo, unsigned char *hi)
{
        *lo = 0x80;
        *hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
                return 1;
        if (c >= 0xE0 && c <= 0xEF) {
                if (c == 0xE0)
                        *lo = 0xA0;
                if (c == 0xED)
                        *hi = 0x9F;
                return 2;
        }
        if (c >= 0xF0 && c <= 0xF4) {
                if (c == 0xF0)
                        *lo = 0x90;
                if (c == 0xF4)
                        *hi = 0x8F;
                return 3;
        }
        return 0;
}

/* Length of the valid sequence at @p (1..4), or -(bytes to replace by one U+FFFD). */
static int utf8_step(const unsigned char *p, size_t left)
{
        unsigned char lo, hi;
        size_t need;

        if (p[0] < 0x80)
                return 1;
        need = utf8_need(p[0], &lo, &hi);
        if (need == 0)
                return -1;
        for (size_t k = 1; k <= need; k++) {
                if (k >= left || p[k] < lo || p[k] > hi)
                        return -(int)k;
                lo = 0x80;
                hi = 0xBF;
        }
        return (int)need + 1;
}

int text_utf8_lossy(const char *s, size_t len, char **ret, size_t *ret_len)
{
        static const char fffd[] = "\xEF\xBF\xBD";
        const unsigned char *p = (const unsigned char *)s;
        struct strbuf out;
        size_t i = 0;
        int r = 0;

        strbuf_init(&out, STRBUF_UNLIMITED);
        while (r >= 0 && i < len) {
                int n = utf8_step(p + i, len - i);
                if (n > 0) {
                        r = strbuf_add(&out, p + i, (size_t)n);
                        i += (size_t)n;
                } else {
                        r = strbuf_add(&out, fffd, 3);
                        i += (size_t)-n;
                }
        }
        if (r >= 0)
                r = strbuf_detach(&out, ret, ret_len);
        strbuf_release(&out);
        return r;
}

/* ---- readFile ranges ---- */

int text_slice_lines(const char *path,
                     const char *data,
                     size_t len,
                     int64_t start,
                     int64_t end,
                     char **ret,
                     size_t *ret_len,
                     struct b4_error *err)
{
        uint64_t total = 0, line = 1, last;
        size_t from = 0, to = len;
        struct strbuf out;
        int r;

        /* Lines split on \n only; a trailing \n ends the last line. */
        for (size_t i = 0; i < len; i++)
                if (data[i] == '\n')
                        total++;
        if (len > 0 && data[len - 1] != '\n')
                total++;
        if (start == 0)
                start = 1;
        if (end != 0 && start > end)
                return b4_error_set(err, -EINVAL,
                                    "readFile: startLine (%" PRId64
                                    ") is greater than endLine (%" PRId64 ")",
                                    start, end);
        if ((uint64_t)start > total)
                return b4_error_set(err, -EINVAL,
                                    "readFile: startLine %" PRId64
                                    " is past the end of %s (%" PRIu64 " lines)",
                                    start, path, total);
        last = end == 0 || (uint64_t)end > total ? total : (uint64_t)end;
        for (size_t i = 0; i < len && line <= last; i++) {
                if (data[i] != '\n')
                        continue;
                line++;
                if (line == (uint64_t)start)
                        from = i + 1;
                if (line == last + 1)
                        to = i;
        }
        strbuf_init(&out, STRBUF_UNLIMITED);
        r = strbuf_addf(&out, "[%s lines %" PRId64 "-%" PRIu64 " of %" PRIu64 "]\n", path, start,
                        last, total);
        if (r >= 0)
                r = strbuf_add(&out, data + from, to - from);
        if (r >= 0)
                r = strbuf_detach(&out, ret, ret_len);
        strbuf_release(&out);
        return r;
}

/* ---- editFile ---- */

void text_edit_clear(struct text_edit *e)
{
        free(e->content);
        free(e->lines);
        *e = (struct text_edit){ 0 };
}

static const char *find(const char *hay, size_t hay_len, size_t from, const char *n, size_t n_len)
{
        if (from > hay_len)
                return NULL;
        return memmem(hay + from, hay_len - from, n, n_len);
}

/* A \n not preceded by \r. */
static bool has_bare_lf(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
                        return true;
        return false;
}

static int not_found(const char *path,
                     const char *content,
                     size_t len,
                     const char *old_text,
                     size_t old_len,
                     struct b4_error *err)
{
        bool crlf = memmem(content, len, "\r\n", 2) && has_bare_lf(old_text, old_len);

        return b4_error_set(
                err, -ENOENT, "oldText not found in %s%s", path,
                crlf ? " (the file uses CRLF line endings, but oldText contains bare \\n line breaks)"
                     : "");
}

/* Occurrence offsets: overlapping count refusal, or non-overlapping when @all. */
static int find_offsets(const char *path,
                        const char *content,
                        size_t len,
                        const char *old_text,
                        size_t old_len,
                        bool all,
                        size_t **ret,
                        size_t *ret_n,
                        struct b4_error *err)
{
        cleanup_free size_t *offs = NULL;
        const char *first = find(content, len, 0, old_text, old_len);
        size_t n = 0;

        if (!first)
                return not_found(path, content, len, old_text, old_len, err);
        if (!all && find(content, len, (size_t)(first - content) + 1, old_text, old_len)) {
                size_t count = 0;
                for (const char *at = first; at;
                     at = find(content, len, (size_t)(at - content) + 1, old_text, old_len))
                        count++;
                return b4_error_set(
                        err, -EEXIST,
                        "oldText occurs %zu times in %s; include more surrounding text or set replaceAll",
                        count, path);
        }
        for (const char *at = first; at;
             at = all ? find(content, len, (size_t)(at - content) + old_len, old_text, old_len)
                      : NULL) {
                size_t *m = b4_reallocarray(offs, n + 1, sizeof(*offs));
                if (!m)
                        return -ENOMEM;
                offs = m;
                offs[n++] = (size_t)(at - content);
        }
        *ret = TAKE_PTR(offs);
        *ret_n = n;
        return 0;
}

static int line_numbers(const char *content, const size_t *offs, size_t n, uint64_t **ret)
{
        uint64_t *lines = b4_calloc(n, sizeof(*lines));
        uint64_t line = 1;
        size_t cursor = 0;

        if (!lines)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                for (; cursor < offs[i]; cursor++)
                        if (content[cursor] == '\n')
                                line++;
                lines[i] = line;
        }
        *ret = lines;
        return 0;
}

static int splice(const char *content,
                  size_t len,
                  const size_t *offs,
                  size_t n,
                  size_t old_len,
                  const char *new_text,
                  size_t new_len,
                  char **ret,
                  size_t *ret_len)
{
        struct strbuf out;
        size_t cursor = 0;
        int r = 0;

        strbuf_init(&out, STRBUF_UNLIMITED);
        r = strbuf_add(&out, "", 0);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = strbuf_add(&out, content + cursor, offs[i] - cursor);
                if (r >= 0)
                        r = strbuf_add(&out, new_text, new_len);
                cursor = offs[i] + old_len;
        }
        if (r >= 0)
                r = strbuf_add(&out, content + cursor, len - cursor);
        if (r >= 0)
                r = strbuf_detach(&out, ret, ret_len);
        strbuf_release(&out);
        return r;
}

int text_apply_edit(const char *path,
                    const char *content,
                    size_t len,
                    const char *old_text,
                    size_t old_len,
                    const char *new_text,
                    size_t new_len,
                    bool replace_all,
                    struct text_edit *ret,
                    struct b4_error *err)
{
        cleanup_free size_t *offs = NULL;
        struct text_edit e = { 0 };
        size_t n = 0;
        int r;

        if (old_len == 0)
                return b4_error_set(err, -EINVAL, "editFile: oldText must not be empty");
        r = find_offsets(path, content, len, old_text, old_len, replace_all, &offs, &n, err);
        if (r < 0)
                return r;
        r = line_numbers(content, offs, n, &e.lines);
        if (r >= 0)
                r = splice(content, len, offs, n, old_len, new_text, new_len, &e.content, &e.len);
        if (r < 0) {
                text_edit_clear(&e);
                return r;
        }
        e.n_lines = n;
        *ret = e;
        return 0;
}

int text_describe_edit(const char *path, const uint64_t *lines, size_t n, char **ret)
{
        struct strbuf out;
        int r;

        strbuf_init(&out, STRBUF_UNLIMITED);
        r = strbuf_addf(&out, "replaced %zu %s in %s at %s", n,
                        n == 1 ? "occurrence" : "occurrences", path, n == 1 ? "line" : "lines");
        for (size_t i = 0; r >= 0 && i < n && i < 20; i++)
                r = strbuf_addf(&out, "%s%" PRIu64, i ? ", " : " ", lines[i]);
        if (r >= 0 && n > 20)
                r = strbuf_addf(&out, ", and %zu more", n - 20);
        if (r >= 0)
                r = strbuf_detach(&out, ret, NULL);
        strbuf_release(&out);
        return r;
}

/* ---- readFile ranges over a file read in pieces ---- */

void line_scan_init(struct line_scan *s, int64_t start, int64_t end, size_t cap)
{
        *s = (struct line_scan){ .start = start ? start : 1, .end = end, .line = 1, .cap = cap };
        strbuf_init(&s->range, cap + 1); /* the range and the '\n' that ends its last line */
}

void line_scan_release(struct line_scan *s)
{
        strbuf_release(&s->range);
}

static bool in_range(const struct line_scan *s)
{
        return s->line >= (uint64_t)s->start && (s->end == 0 || s->line <= (uint64_t)s->end);
}

static int range_too_large(const struct line_scan *s, const char *path, struct b4_error *err)
{
        char end[32] = "end";

        if (s->end)
                (void)snprintf(end, sizeof(end), "%" PRId64, s->end);
        return b4_error_set(err, -EFBIG,
                            "readFile: lines %" PRId64 "-%s of %s are more than %zu bytes (the "
                            "size cap); ask for fewer lines",
                            s->start, end, path, s->cap);
}

int line_scan_feed(
        struct line_scan *s, const char *path, const char *p, size_t n, struct b4_error *err)
{
        for (size_t i = 0; i < n;) {
                const char *nl = memchr(p + i, '\n', n - i);
                size_t k = nl ? (size_t)(nl - (p + i)) + 1 : n - i; /* to the line's end */

                if (in_range(s)) {
                        int r = strbuf_add(&s->range, p + i, k);
                        if (r == -E2BIG)
                                return range_too_large(s, path, err);
                        if (r < 0)
                                return r;
                }
                s->bytes += k;
                s->last_was_nl = nl != NULL;
                if (nl) {
                        s->newlines++;
                        s->line++;
                }
                i += k;
        }
        return 0;
}

int line_scan_finish(
        struct line_scan *s, const char *path, char **ret, size_t *ret_len, struct b4_error *err)
{
        uint64_t total = s->newlines + (s->bytes > 0 && !s->last_was_nl ? 1 : 0), last;
        size_t len = s->range.len;
        struct strbuf out;
        int r;

        if (s->end != 0 && s->start > s->end)
                return b4_error_set(err, -EINVAL,
                                    "readFile: startLine (%" PRId64
                                    ") is greater than endLine (%" PRId64 ")",
                                    s->start, s->end);
        if ((uint64_t)s->start > total)
                return b4_error_set(err, -EINVAL,
                                    "readFile: startLine %" PRId64
                                    " is past the end of %s (%" PRIu64 " lines)",
                                    s->start, path, total);
        last = s->end == 0 || (uint64_t)s->end > total ? total : (uint64_t)s->end;
        if (len > 0 && s->range.buf[len - 1] == '\n')
                len--; /* the lines are joined by '\n', the last one's own is not shown */
        if (len > s->cap)
                return range_too_large(s, path, err);
        strbuf_init(&out, STRBUF_UNLIMITED);
        r = strbuf_addf(&out, "[%s lines %" PRId64 "-%" PRIu64 " of %" PRIu64 "]\n", path, s->start,
                        last, total);
        if (r >= 0 && len > 0)
                r = strbuf_add(&out, s->range.buf, len);
        if (r >= 0)
                r = strbuf_detach(&out, ret, ret_len);
        strbuf_release(&out);
        return r;
}
