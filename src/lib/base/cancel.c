/* SPDX-License-Identifier: Apache-2.0 */
/* Cancellation token: an atomic flag plus an eventfd that turns readable when fired. */

#include "b4box/cancel.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "alloc.h"
#include "macro.h"

struct b4_cancel {
        atomic_bool fired; /* set once, never cleared */
        int efd;           /* eventfd, readable once fired */
};

struct b4_cancel *b4_cancel_new(void)
{
        struct b4_cancel *c = b4_calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd < 0) {
                free(c);
                return NULL;
        }
        atomic_init(&c->fired, false);
        return c;
}

struct b4_cancel *b4_cancel_free(struct b4_cancel *c)
{
        if (!c)
                return NULL;
        safe_close(c->efd);
        free(c);
        return NULL;
}

void b4_cancel_fire(struct b4_cancel *c)
{
        uint64_t one = 1;

        if (!c || atomic_exchange(&c->fired, true))
                return;
        (void)!write(c->efd, &one, sizeof(one));
}

bool b4_cancel_is_set(const struct b4_cancel *c)
{
        return c && atomic_load(&((struct b4_cancel *)c)->fired);
}

int b4_cancel_fd(const struct b4_cancel *c)
{
        return c ? c->efd : -EBADF;
}
