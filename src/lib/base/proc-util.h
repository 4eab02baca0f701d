/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What /proc says about another process (keeper and b4box-netd records guard with it). */

#include <stdint.h>
#include <sys/types.h>

/* proc_starttime() - the start time of @pid (/proc/<pid>/stat field 22, clock ticks since
 * boot): with the pid it names one process for good. Return: 0, -ESRCH, -EIO. */
int proc_starttime(pid_t pid, uint64_t *ret);
