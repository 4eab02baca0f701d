/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The reference's user-facing texts, in one table (messages.c): providers return the errno,
 * the b4_* wrappers word it. Each returns @r (or 0 / -ENOMEM for the timeout line).
 */

#include <stdint.h>

#include "b4box/provider.h"

/* -EFBIG from read_file: "readFile <path>: content exceeds maxBytes (<max>)." */
int msg_file_too_large(struct b4_error *err, const char *path, uint64_t max_bytes);
/* -E2BIG from list_dir: "listDir <path>: more than <B4_LIST_MAX_ENTRIES> entries" */
int msg_too_many_names(struct b4_error *err, const char *path);
/* -E2BIG from a walk: "Workspace entries limit exceeded" */
int msg_entries_limit(struct b4_error *err);
/* -EBADF after b4_reader_close(): "Workspace reader for thread \"<id>\" is closed" */
int msg_reader_closed(struct b4_error *err, const char *thread_id);
/* Append "Command timed out after <s>s (resources.timeoutMs: <ms>ms)." to ret->errout
 * (on its own line). Return: 0 or -ENOMEM. */
int msg_append_timeout(struct b4_exec_result *ret, uint64_t timeout_ms);
