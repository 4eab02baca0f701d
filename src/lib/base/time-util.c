/* SPDX-License-Identifier: Apache-2.0 */
/* Clock helpers. */

#include "time-util.h"

#include <errno.h>
#include <time.h>

uint64_t now_usec(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_msec(void)
{
        return now_usec() / 1000u;
}

int64_t realtime_msec(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_ms)
{
        struct timespec ts = { .tv_sec = (time_t)(deadline_ms / 1000u),
                               .tv_nsec = (long)(deadline_ms % 1000u) * 1000000L };

        return pthread_cond_clockwait(cond, lock, CLOCK_MONOTONIC, &ts) == ETIMEDOUT ? -ETIMEDOUT
                                                                                     : 0;
}
