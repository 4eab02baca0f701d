/* SPDX-License-Identifier: Apache-2.0 */
/* The provider registry: `sandbox.provider.type` to constructor. */

#include "providers.h"

#include <errno.h>
#include <string.h>

#include "b4box/b4.h"

typedef int provider_ctor(const struct b4_provider_config *cfg,
                          struct b4_provider **ret,
                          struct b4_error *err);

static const struct {
        const char *type;
        provider_ctor *ctor;
} registry[] = {
        { "docker", docker_provider_new },
        { "fake", fake_provider_new },
        { "native", native_provider_new },
};

int b4_provider_new(const struct b4_provider_config *cfg,
                    struct b4_provider **ret,
                    struct b4_error *err)
{
        if (!cfg || !cfg->type)
                return b4_error_set(err, -EINVAL, "sandbox.provider.type is required");
        for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
                if (strcmp(registry[i].type, cfg->type) == 0)
                        return registry[i].ctor(cfg, ret, err);
        return b4_error_set(err, -EOPNOTSUPP,
                            "sandbox provider '%s' is not available in this build", cfg->type);
}
