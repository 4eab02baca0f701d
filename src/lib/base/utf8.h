/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Strict UTF-8 (no overlongs, no surrogates, max U+10FFFF), as a fatal TextDecoder. */
bool utf8_is_valid(const char *s, size_t len);
/* The length of valid UTF-8 @s in UTF-16 code units, as JavaScript's String.length counts
 * (a character past U+FFFF is two). */
size_t utf8_js_length(const char *s);
