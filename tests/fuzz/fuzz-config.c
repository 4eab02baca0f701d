/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the b4box.json loader. Any input must either give a config or a non-empty
 * list of bounded refusals, never crash, leak or hang. Inputs over 64 KiB are skipped (the
 * loader's own cap is 1 MiB; larger inputs only slow the fuzzer down).
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

static void check_errors(char **errors)
{
        size_t n = 0;

        if (!errors || !errors[0])
                abort();
        for (; errors[n]; n++)
                if (!errors[n][0] || strlen(errors[n]) > 4096)
                        abort();
        if (n > B4_CONFIG_MAX_ERRORS + 1)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct b4_config *cfg = NULL;
        char **errors = NULL;
        int r;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        r = b4_config_parse((const char *)data, size, "/fuzz", &cfg, &errors, NULL);
        if (r == 0) {
                if (!cfg || errors || !cfg->sandbox.provider.type || !cfg->sandbox.provider.scope ||
                    !cfg->server.listen || !b4_config_policy(cfg))
                        abort();
                b4_config_free(cfg);
        } else if (r == -EINVAL) {
                if (cfg)
                        abort();
                check_errors(errors);
                b4_config_errors_free(errors);
        } else if (r != -ENOMEM) {
                abort();
        }
        return 0;
}
