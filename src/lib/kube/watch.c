/* SPDX-License-Identifier: Apache-2.0 */
/* Skeleton: the API of kube.h, implemented in the following commits. */

#include "kube/kube.h"

#include <errno.h>

int kube_watch(struct kube_client *c, const struct kube_watch_req *req, kube_event_fn fn,
               void *userdata, char **ret_rv, struct b4_error *err)
{
        (void)c, (void)req, (void)fn, (void)userdata, (void)ret_rv;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
