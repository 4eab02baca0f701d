/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference's user-facing texts (file too large, walk limit, closed reader, timeout
 * line): one table, so every provider says exactly the same thing.
 */

#include "core/messages.h"

#include <errno.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/macro.h"

/* The table: literal formats, so the compiler checks every use. */
#define MSG_FILE_TOO_LARGE "readFile %s: content exceeds maxBytes (%llu)."
#define MSG_TOO_MANY_NAMES "listDir %s: more than %d entries"
#define MSG_ENTRIES_LIMIT  "Workspace entries limit exceeded"
#define MSG_READER_CLOSED  "Workspace reader for thread \"%s\" is closed"
#define MSG_TIMEOUT        "%s%sCommand timed out after %llus (resources.timeoutMs: %llums)."

int msg_file_too_large(struct b4_error *err, const char *path, uint64_t max_bytes)
{
        return b4_error_set(err, -EFBIG, MSG_FILE_TOO_LARGE, path, (unsigned long long)max_bytes);
}

int msg_too_many_names(struct b4_error *err, const char *path)
{
        return b4_error_set(err, -E2BIG, MSG_TOO_MANY_NAMES, path, B4_LIST_MAX_ENTRIES);
}

int msg_entries_limit(struct b4_error *err)
{
        return b4_error_set(err, -E2BIG, MSG_ENTRIES_LIMIT);
}

int msg_reader_closed(struct b4_error *err, const char *thread_id)
{
        return b4_error_set(err, -EBADF, MSG_READER_CLOSED, thread_id);
}

int msg_append_timeout(struct b4_exec_result *ret, uint64_t timeout_ms)
{
        cleanup_free char *s = NULL;
        int n;

        n = b4_asprintf(
                &s, MSG_TIMEOUT, ret->errout ? ret->errout : "", ret->errout_len ? "\n" : "",
                (unsigned long long)((timeout_ms + 999) / 1000), (unsigned long long)timeout_ms);
        if (n < 0)
                return -ENOMEM;
        free(ret->errout);
        ret->errout = TAKE_PTR(s);
        ret->errout_len = (size_t)n;
        return 0;
}
