/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `docker pause` for the Docker provider (b4_provider_pause(), and the consistent reads of
 * b4_provider_freeze()): POST /containers/{name}/pause or /unpause of the thread's keeper
 * container, the cgroup freezer on the daemon's side. A thread without a container (never
 * acquired, released) has nothing to freeze: success. Docker answers 409 when the container
 * is already in the asked state or not running; the first is success, the second the
 * daemon's message.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "docker.h"
#include "internal.h"

int docker_pause_container(struct docker_core *c,
                           const char *thread_id,
                           bool frozen,
                           struct b4_error *err)
{
        cleanup_free char *path = NULL;
        struct b4_error e = { 0 };
        char id[41];
        int r;

        if (b4_resource_id(c->scope, thread_id, id) < 0)
                return b4_error_set(err, -EINVAL, "invalid thread id");
        if (b4_asprintf(&path, "/containers/b4-sbx-%s/%s", id, frozen ? "pause" : "unpause") < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "POST", path, NULL, NULL, &e);
        if (r == -ENOENT)
                return 0; /* no container: nothing runs */
        if (r == -EEXIST && strstr(e.msg, frozen ? "already paused" : "is not paused"))
                return 0;
        if (r < 0 && err)
                *err = e;
        return r;
}
