/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

/* CLOCK_MONOTONIC in microseconds / milliseconds. */
uint64_t now_usec(void);
uint64_t now_msec(void);
/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t realtime_msec(void);
