/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Standard base64 (RFC 4648 §4, with padding), canonical only on the way in. */

#include <stddef.h>
#include <sys/types.h>

/* Encode @len bytes; *ret is heap, NUL-terminated, *ret_len its length. Return: 0, -ENOMEM. */
int base64_encode(const void *data, size_t len, char **ret, size_t *ret_len);
/* The decoded length of canonical base64 @s (padded, no whitespace, zero unused bits), or -1
 * when it is not canonical. */
ssize_t base64_decoded_len(const char *s, size_t len);
/* Decode canonical @s; *ret is heap, NUL-terminated past *ret_len. Return: 0, -EINVAL (not
 * canonical), -ENOMEM. */
int base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
