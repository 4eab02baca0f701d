/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "b4box/log.h"

/* Format and hand a line to the hook set with b4_set_log_func(), if its level is wanted. */
void b4_log(enum b4_log_level level, const char *fmt, ...) B4_PRINTF(2, 3);

#define log_debug(...)   b4_log(B4_LOG_DEBUG, __VA_ARGS__)
#define log_warning(...) b4_log(B4_LOG_WARNING, __VA_ARGS__)
