/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal helpers shared by the workspace module's files. */

#include <stddef.h>

/* Standard base64 of @len bytes; *ret is heap (NUL-terminated), *ret_len its length. */
int bundle_b64_encode(const void *data, size_t len, char **ret, size_t *ret_len);
int capture_open_beneath(int dirfd, const char *path, int flags);
