/* SPDX-License-Identifier: Apache-2.0 */
/* Skeleton: the API of kube.h, implemented in the following commits. */

#include "kube/kube.h"

#include <errno.h>
#include <string.h>

int kube_config_resolve(const struct kube_options *opts, struct kube_config *ret,
                        struct b4_error *err)
{
        (void)opts;
        (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}

void kube_config_release(struct kube_config *cfg)
{
        if (cfg)
                memset(cfg, 0, sizeof(*cfg));
}
