/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the Docker provider's header and text decoders (src/lib/docker/api.c).
 * Trust boundary: answers of the Docker daemon, whose content the sandboxed container
 * controls (file names, link targets, sizes, times, command output).
 *
 * The input is one X-Docker-Container-Path-Stat header value (base64 of JSON, cut at the
 * first NUL), also fed to the base64 decoder and the fork-failure detectors; when it starts
 * with '{' it is also encoded first, so the fuzzer reaches the JSON and the time parser. The
 * decoder must agree with the bundle encoder: decode(encode(input)) == input.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "docker/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

static void parse_stat(const char *header)
{
        struct docker_path_stat st = { 0 };

        if (docker_path_stat_parse(header, &st) == 0) {
                if (!st.name || (st.link_target && !st.link_target[0]))
                        abort();
                docker_path_stat_clear(&st);
        }
}

static void roundtrip(const uint8_t *data, size_t size)
{
        char *enc = NULL, *dec = NULL;
        size_t enc_len = 0, dec_len = 0;

        if (base64_encode(data, size, &enc, &enc_len) < 0)
                return;
        if (docker_base64_decode(enc, enc_len, &dec, &dec_len) < 0 || dec_len != size ||
            memcmp(dec, data, size) != 0 || dec[dec_len] != '\0')
                abort();
        if (size && data[0] == '{')
                parse_stat(enc);
        free(dec);
        free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text, *dec = NULL;
        size_t dec_len = 0;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        parse_stat(text);
        if (docker_base64_decode(text, size, &dec, &dec_len) == 0) {
                if (dec_len > size / 4 * 3 + 3)
                        abort();
                free(dec);
        }
        (void)docker_admission_failure(text);
        (void)docker_shell_fork_failure(text);
        roundtrip(data, size);
        free(text);
        return 0;
}
