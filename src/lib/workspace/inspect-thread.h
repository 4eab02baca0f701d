/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One thread's workspace read over a provider, without the runtime's slot: the runtime's
 * (b4_runtime_inspect() runs it on a worker) and the tests' (library-internal). */

#include <stdbool.h>

#include "b4box/error.h"
#include "b4box/inspect.h"

struct b4_provider;

/**
 * b4_inspect_thread() - open a reader of @thread_id's workspace, inspect it, always close
 * (b4_with_reader()); with @consistent, the thread's processes are frozen around the
 * inspection (b4_provider_freeze()) so it sees one instant
 * @thread_id: the sandbox key (a child thread reads its root ancestor's workspace)
 * Return: as b4_inspect_workspace(), plus the reader's errors (-ENOENT with B4_E2001 when
 * the thread has no storage, -EOPNOTSUPP without a reader or, for @consistent, a freeze).
 */
int b4_inspect_thread(struct b4_provider *p,
                      const char *thread_id,
                      const struct b4_inspect_options *o,
                      bool consistent,
                      struct b4_inspection *ret,
                      struct b4_inspect_failure *ret_fail,
                      struct b4_error *err);
