/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 through OpenSSL's direct SHA256_* functions, not EVP: an EVP digest is fetched from
 * a provider, and the first fetch initialises OpenSSL's library context (~1 ms, a fifth of a
 * warm `b4box exec`). The direct functions use the same assembly (SHA-NI where the CPU has
 * it) and need no initialisation. OpenSSL 3 marks them deprecated; they are still built.
 */

#define OPENSSL_SUPPRESS_DEPRECATED

#include "hash.h"

#include <openssl/sha.h>
#include <stdlib.h>

#include "alloc.h"

struct sha256_ctx {
        SHA256_CTX c;
};

static void to_hex(const unsigned char *md, unsigned n, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (unsigned i = 0; i < n; i++) {
                out[2 * i] = digits[md[i] >> 4];
                out[2 * i + 1] = digits[md[i] & 15];
        }
        out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char ret_hex[SHA256_HEX_LEN + 1])
{
        unsigned char md[SHA256_DIGEST_LENGTH];
        SHA256_CTX c;

        /* not SHA256(): OpenSSL 3 implements the one-shot through EVP */
        (void)SHA256_Init(&c);
        (void)SHA256_Update(&c, data, len);
        (void)SHA256_Final(md, &c);
        to_hex(md, SHA256_DIGEST_LENGTH, ret_hex);
}

struct sha256_ctx *sha256_new(void)
{
        struct sha256_ctx *c = b4_malloc(sizeof(*c));

        if (c && SHA256_Init(&c->c) != 1) {
                free(c);
                return NULL;
        }
        return c;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
        (void)SHA256_Update(&c->c, data, len);
}

void sha256_final_hex(struct sha256_ctx *c, char ret_hex[SHA256_HEX_LEN + 1])
{
        unsigned char md[SHA256_DIGEST_LENGTH];

        (void)SHA256_Final(md, &c->c);
        free(c);
        to_hex(md, SHA256_DIGEST_LENGTH, ret_hex);
}
