/* SPDX-License-Identifier: Apache-2.0 */
/* Clock helpers. */

#include "time-util.h"

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
