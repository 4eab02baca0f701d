/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A growable byte buffer with a hard cap (curl's dynbuf "toobig"). The content is always
 * NUL-terminated past len so it can be used as a C string when it holds text.
 * Embedded struct: strbuf_init() / strbuf_release(); a released buffer may be reused.
 */

#include <stdarg.h>
#include <stddef.h>

#include "b4box/error.h"

struct strbuf {
        char *buf;  /* NULL until the first append; NUL-terminated past len */
        size_t len; /* bytes held */
        size_t cap; /* bytes allocated */
        size_t max; /* hard limit on len; appends past it fail with -E2BIG */
};

#define STRBUF_UNLIMITED ((size_t)-1)

void strbuf_init(struct strbuf *sb, size_t max);
void strbuf_release(struct strbuf *sb);
/* Return: 0, -E2BIG when the cap would be exceeded (nothing appended), -ENOMEM. */
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_adds(struct strbuf *sb, const char *s);
int strbuf_addc(struct strbuf *sb, char c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) B4_PRINTF(2, 3);
/* Take the buffer (never NULL on success: an empty buffer yields ""); resets @sb. */
int strbuf_detach(struct strbuf *sb, char **ret, size_t *ret_len);
void strbuf_reset(struct strbuf *sb);
/* Append @s in POSIX single quotes (' becomes '\\''), safe as one shell word. */
int strbuf_add_shell_quoted(struct strbuf *sb, const char *s);
