/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace reads hold the thread's run slot (reference §6.2) but never its sandbox: the
 * reader is opened by the caller from the provider, so a read neither acquires nor keeps
 * warm compute. The slot borrows the caller's cancel token, because a read abandoned at its
 * deadline frees the slot while its worker may still be inside the provider.
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "runtime-internal.h"

struct b4_read {
        struct b4_runtime *rt;
        char *thread_id;
        char *box_key;
};

static struct b4_read *read_free(struct b4_read *rd)
{
        if (!rd)
                return NULL;
        free(rd->thread_id);
        free(rd->box_key);
        free(rd);
        return NULL;
}

int b4_runtime_read_begin(struct b4_runtime *rt,
                          const char *id,
                          struct b4_cancel *cancel,
                          struct b4_read **ret,
                          struct b4_error *err)
{
        struct b4_read *rd = b4_calloc(1, sizeof(*rd));
        struct slot *slot = NULL;
        int r;

        if (!rd || !(rd->thread_id = b4_strdup(id))) {
                read_free(rd);
                return -ENOMEM;
        }
        rd->rt = rt;
        r = runtime_sandbox_key(rt, id, &rd->box_key, err);
        if (r < 0) {
                read_free(rd);
                return r;
        }
        (void)pthread_mutex_lock(&rt->lock);
        r = slot_take_locked(rt, id, false, &slot);
        if (r >= 0) {
                slot->cancel = cancel;
                slot->borrowed = true;
        }
        (void)pthread_mutex_unlock(&rt->lock);
        if (r < 0) {
                read_free(rd);
                return r == -EBUSY ? b4_error_set(err, r, "thread '%s' has a run in flight", id)
                       : r == -ESHUTDOWN ? b4_error_set(err, r, "the server is shutting down")
                                         : r;
        }
        *ret = rd;
        return 0;
}

const char *b4_read_sandbox_key(const struct b4_read *rd)
{
        return rd->box_key;
}

struct b4_read *b4_read_end(struct b4_read *rd)
{
        if (!rd)
                return NULL;
        (void)pthread_mutex_lock(&rd->rt->lock);
        slot_drop_locked(rd->rt, rd->thread_id);
        (void)pthread_mutex_unlock(&rd->rt->lock);
        return read_free(rd);
}

struct b4_provider *b4_runtime_provider(struct b4_runtime *rt)
{
        return rt->opts.provider;
}
