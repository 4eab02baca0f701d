/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause and resume a thread keeping its processes (b4_provider_pause()): the provider's
 * freezer (its freeze member) under the thread's exclusive lease, the paused flag on the
 * lifecycle entry, and the resume hook that attempt_begin() calls before any handle
 * operation of a paused thread (lifecycle.h), so a call on a paused thread resumes it.
 */

#include <errno.h>

#include "base/time-util.h"
#include "core/lifecycle.h"

/* Freeze or thaw @e's sandbox and record it. Exclusive lease held. */
static int set_paused(struct b4_provider *p, struct b4_entry *e, bool paused, struct b4_error *err)
{
        uint64_t t0;
        int r;

        if (lifecycle_paused(e, NULL) == paused)
                return 0;
        t0 = now_usec();
        r = p->ops->freeze(p, b4_entry_thread_id(e), paused, err);
        if (r < 0)
                return r;
        lifecycle_set_paused(e, paused, realtime_msec(), now_usec() - t0);
        return 0;
}

static int resume_hook(void *ud, struct b4_entry *e, struct b4_error *err)
{
        return set_paused(ud, e, false, err);
}

void pause_init(struct b4_provider *p)
{
        if (p->ops->freeze)
                lifecycle_set_resume(p->lifecycle, resume_hook, p);
}

void pause_end(struct b4_provider *p, struct b4_entry *e)
{
        if (lifecycle_paused(e, NULL))
                (void)set_paused(p, e, false, NULL); /* v1: frozen tasks die only once thawed */
}

int b4_provider_pause(struct b4_provider *p,
                      const char *thread_id,
                      bool paused,
                      struct b4_error *err)
{
        struct gate_lease *lease = NULL;
        struct b4_entry *e = NULL;
        int r;

        if (!p || !thread_id || !*thread_id)
                return b4_error_set(err, -EINVAL, "pause needs a provider and a thread id");
        if (!p->ops->freeze)
                return b4_error_set(err, -EOPNOTSUPP,
                                    "Sandbox provider \"%s\" cannot pause a thread", p->ops->name);
        r = lifecycle_enter(p->lifecycle, thread_id, GATE_EXCLUSIVE, NULL,
                            paused ? "pause" : "resume", &e, &lease, err);
        if (r < 0)
                return r;
        if (!b4_entry_state(e))
                r = paused ? b4_error_set(err, -ENOENT,
                                          "thread \"%s\" has no live sandbox to pause", thread_id)
                           : 0;
        else
                r = set_paused(p, e, paused, err);
        lifecycle_leave(e, lease);
        return r;
}

bool b4_provider_paused(struct b4_provider *p, const char *thread_id, int64_t *ret_since_ms)
{
        struct b4_entry *e = p && thread_id ? lifecycle_find(p->lifecycle, thread_id) : NULL;
        bool paused = e && lifecycle_paused(e, ret_since_ms);

        if (!paused && ret_since_ms)
                *ret_since_ms = 0;
        b4_entry_unref(e);
        return paused;
}

void b4_provider_pause_stats(struct b4_provider *p, struct b4_pause_stats *ret)
{
        lifecycle_pause_stats(p->lifecycle, ret);
}
