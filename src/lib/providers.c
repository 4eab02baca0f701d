/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The provider registry: `sandbox.provider.type` to constructor. Built twice (meson):
 * with B4_PROVIDER_DOCKER for libb4box and b4box-full, without it for the light b4box,
 * which hands a Docker or Kubernetes command over to b4box-full (docs/ARCHITECTURE.md).
 */

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
#ifdef B4_PROVIDER_DOCKER
        { "docker", docker_provider_new },
#endif
        { "fake", fake_provider_new },
#ifdef B4_PROVIDER_DOCKER
        { "kubernetes", kube_provider_new },
#endif
        { "native", native_provider_new },
};

static provider_ctor *find(const char *type)
{
        for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
                if (strcmp(registry[i].type, type) == 0)
                        return registry[i].ctor;
        return NULL;
}

bool b4_provider_available(const char *type)
{
        return type && find(type);
}

int b4_provider_new(const struct b4_provider_config *cfg,
                    struct b4_provider **ret,
                    struct b4_error *err)
{
        if (!cfg || !cfg->type)
                return b4_error_set(err, -EINVAL, "sandbox.provider.type is required");
        provider_ctor *ctor = find(cfg->type);

        if (ctor)
                return ctor(cfg, ret, err);
        return b4_error_set(err, -EOPNOTSUPP,
                            "sandbox provider '%s' is not available in this build", cfg->type);
}
