/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "b4box/error.h"

/** b4_version() - the library version, "0.1.0"; static string. */
B4_PUBLIC const char *b4_version(void);
