/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* SHA-256 (OpenSSL libcrypto, without its EVP layer: hash.c says why), as lowercase hex. */

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* Write 64 hex chars + NUL into @ret_hex. */
void sha256_hex(const void *data, size_t len, char ret_hex[SHA256_HEX_LEN + 1]);

struct sha256_ctx;
/* Streaming form. Return: NULL on OOM. */
struct sha256_ctx *sha256_new(void);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Finish and free @c. */
void sha256_final_hex(struct sha256_ctx *c, char ret_hex[SHA256_HEX_LEN + 1]);
