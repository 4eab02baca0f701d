/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Safe integer parsing: whole string, no sign surprises, range checked. */

#include <stdint.h>

/* Return: 0, -EINVAL (not a decimal integer), -ERANGE. */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi64(const char *s, int64_t *ret);
int safe_atoi(const char *s, int *ret);
