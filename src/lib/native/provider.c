/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by the native provider module. */
#include <errno.h>

#include "providers.h"

int native_provider_new(const struct b4_provider_config *cfg,
                        struct b4_provider **ret,
                        struct b4_error *err)
{
        return b4_error_set(err, -EOPNOTSUPP, "native provider not built yet");
}
