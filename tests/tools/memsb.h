/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A tiny in-memory sandbox for the tools tests: files, directories and symlinks (so the
 * jail's realpath decisions can be tested without a provider), and an exec that echoes.
 * The tree starts with /, /etc, /etc/passwd and the workspace root /workspace.
 */

#include "b4box/provider.h"

struct b4_sandbox *memsb_new(const char *thread_id);
/* Add a symlink @path -> @target (raw text, may be relative). */
void memsb_symlink(struct b4_sandbox *sb, const char *path, const char *target);
