/* SPDX-License-Identifier: Apache-2.0 */
/* The provider registry: `sandbox.provider.type` to constructor. */

#include "providers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

#include "base/strv.h"

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

void b4_provider_config_clear(struct b4_provider_config *c)
{
        free(c->type);
        free(c->scope);
        free(c->image);
        strv_free(c->images);
        free(c->state_dir);
        free(c->docker_host);
        free(c->kube_api);
        free(c->kube_namespace);
        free(c->kube_token_file);
        free(c->kube_ca_file);
        *c = (struct b4_provider_config){ 0 };
}

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
