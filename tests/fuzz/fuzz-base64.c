/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the canonical base64 decoder (src/lib/base/base64.c). Trust boundary: the
 * `content` of POST /threads/{id}/fs/write with encoding "base64" and source bundles' file
 * bodies, both from clients. An accepted input must be canonical: its decoded length is the
 * one base64_decoded_len() predicted and encoding the bytes again gives the input back; a
 * refused input is one base64_decoded_len() refuses too.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *dec = NULL, *enc = NULL;
        size_t dlen = 0, elen = 0;
        ssize_t want;
        int r;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        want = base64_decoded_len((const char *)data, size);
        r = base64_decode((const char *)data, size, &dec, &dlen);
        if (r < 0) {
                if (want >= 0 && r != -ENOMEM)
                        abort(); /* refused what the length check accepted */
                return 0;
        }
        if (want < 0 || (size_t)want != dlen || dec[dlen] != '\0')
                abort();
        if (base64_encode(dec, dlen, &enc, &elen) < 0)
                abort();
        if (elen != size || memcmp(enc, data, size) != 0)
                abort(); /* not canonical, yet accepted */
        free(dec);
        free(enc);
        return 0;
}
