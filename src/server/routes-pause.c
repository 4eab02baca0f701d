/* SPDX-License-Identifier: Apache-2.0 */
/* POST /threads/{id}/pause and /resume: freeze a live thread keeping its processes, thaw it. */

#include <errno.h>

#include "server-internal.h"

static void pause_or_resume(struct request *rq, bool paused)
{
        struct b4_error err = { 0 };
        int r = b4_runtime_thread_pause(rq->srv->opts.runtime, rq->thread.id, paused, &err);

        if (r == -ESRCH) {
                reply_error(rq, 409, "thread_not_live", "%s", err.msg);
                return;
        }
        if (r < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 200, thread_to_json(rq, &rq->thread));
}

void route_thread_pause(struct request *rq)
{
        pause_or_resume(rq, true);
}

void route_thread_resume(struct request *rq)
{
        pause_or_resume(rq, false);
}
