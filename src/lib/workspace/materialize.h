/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Writing a captured workspace into a sandbox: the runtime's, at a managed admission
 * (library-internal; the rest of the captured-workspace API is in b4box/bundle.h). */

#include "b4box/bundle.h"
#include "b4box/error.h"

struct b4_cancel;
struct b4_sandbox;

/**
 * b4_workspace_materialize() - write a captured workspace into a sandbox's workspace
 * @sb:             the thread's sandbox; borrowed
 * @ws:             borrowed
 * @ret_commit:     with a git baseline, the commit id (owned); else set to NULL
 *
 * Files are written with their executable bit, links made as symlinks, and a git baseline
 * made with one commit (git run in the sandbox with a scrubbed environment).
 * Return: 0, -EOPNOTSUPP (the sandbox cannot make links or set modes), -EIO, -errno.
 */
int b4_workspace_materialize(struct b4_sandbox *sb,
                             const struct b4_captured_workspace *ws,
                             struct b4_cancel *cancel,
                             char **ret_commit,
                             struct b4_error *err);
