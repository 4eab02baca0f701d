/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 through OpenSSL's EVP interface. */

#include "hash.h"

#include <openssl/evp.h>

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
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;

        (void)EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
        to_hex(md, n, ret_hex);
}

struct sha256_ctx *sha256_new(void)
{
        EVP_MD_CTX *c = EVP_MD_CTX_new();

        if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(c);
                return NULL;
        }
        return (struct sha256_ctx *)c;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
        (void)EVP_DigestUpdate((EVP_MD_CTX *)c, data, len);
}

void sha256_final_hex(struct sha256_ctx *c, char ret_hex[SHA256_HEX_LEN + 1])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;

        (void)EVP_DigestFinal_ex((EVP_MD_CTX *)c, md, &n);
        EVP_MD_CTX_free((EVP_MD_CTX *)c);
        to_hex(md, n, ret_hex);
}
