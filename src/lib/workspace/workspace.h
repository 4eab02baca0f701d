/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal helpers shared by the workspace module's files. */

#include <stddef.h>

int capture_open_beneath(int dirfd, const char *path, int flags);
