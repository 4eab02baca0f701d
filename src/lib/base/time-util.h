/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <pthread.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in microseconds / milliseconds. */
uint64_t now_usec(void);
uint64_t now_msec(void);
/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t realtime_msec(void);

/*
 * Wait on @cond, @lock held, until it is signalled or CLOCK_MONOTONIC reaches @deadline_ms
 * (now_msec() time), whatever clock @cond was made with. Wakeups may be spurious: callers
 * loop on their condition. Return: 0 woken, -ETIMEDOUT the deadline passed.
 */
int cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline_ms);
