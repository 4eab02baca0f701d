/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The library never prints; it hands debug and warning lines to a hook the program sets. */

#include "b4box/error.h"

enum b4_log_level {
        B4_LOG_ERROR = 3,
        B4_LOG_WARNING = 4,
        B4_LOG_INFO = 6,
        B4_LOG_DEBUG = 7,
};

typedef void b4_log_fn(enum b4_log_level level, const char *msg, void *userdata);

/**
 * b4_set_log_func() - route library log lines to @fn (NULL = drop them)
 * @max_level: lines above this level are not even formatted
 * @userdata:  passed through to @fn; borrowed for as long as it is set
 */
B4_PUBLIC void b4_set_log_func(b4_log_fn *fn, enum b4_log_level max_level, void *userdata);
