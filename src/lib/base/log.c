/* SPDX-License-Identifier: Apache-2.0 */
/* Logging hook: the level is checked before anything is formatted. */

#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static b4_log_fn *log_fn;
static enum b4_log_level log_max = B4_LOG_WARNING;
static void *log_userdata;

void b4_set_log_func(b4_log_fn *fn, enum b4_log_level max_level, void *userdata)
{
        log_fn = fn;
        log_max = max_level;
        log_userdata = userdata;
}

void b4_log(enum b4_log_level level, const char *fmt, ...)
{
        char line[1024];
        va_list ap;

        if (!log_fn || level > log_max)
                return;
        va_start(ap, fmt);
        (void)vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        log_fn(level, line, log_userdata);
}
