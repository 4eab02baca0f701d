/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store, through the runtime: the thread rows and staged sources the server and the CLI
 * read and write besides runs and reads. The store itself is library-internal (store/store.h).
 */

#include <errno.h>
#include <stdlib.h>

#include "b4box/runtime.h"

#include "base/macro.h"
#include "runtime-internal.h"
#include "store/store.h"

int b4_runtime_thread_get(struct b4_runtime *rt,
                          const char *id,
                          struct b4_thread_row *ret,
                          struct b4_error *err)
{
        return b4_store_thread_get(rt->opts.store, id, ret, err);
}

int b4_runtime_thread_list(struct b4_runtime *rt,
                           const char *owner,
                           struct b4_thread_row **ret,
                           size_t *ret_n,
                           struct b4_error *err)
{
        return b4_store_thread_list(rt->opts.store, owner, ret, ret_n, err);
}

int b4_runtime_source_upload(struct b4_runtime *rt,
                             const char *digest,
                             const char *payload,
                             size_t len,
                             const char *uploader,
                             const char *stamp,
                             int64_t now_ms,
                             uint64_t max_staged,
                             bool *ret_created,
                             struct b4_error *err)
{
        return b4_store_source_upload(rt->opts.store, digest, payload, len, uploader, stamp, now_ms,
                                      max_staged, ret_created, err);
}

int b4_runtime_sources_reclaim(struct b4_runtime *rt,
                               int64_t now_ms,
                               uint64_t retention_ms,
                               struct b4_error *err)
{
        return b4_store_sources_reclaim(rt->opts.store, now_ms, retention_ms, err);
}

int b4_runtime_source_get(struct b4_runtime *rt,
                          const char *digest,
                          char **ret,
                          size_t *ret_len,
                          int64_t *ret_uploaded_ms,
                          struct b4_error *err)
{
        return b4_store_source_get(rt->opts.store, digest, ret, ret_len, ret_uploaded_ms, err);
}

int b4_runtime_source_uploaders(struct b4_runtime *rt,
                                const char *digest,
                                char ***ret,
                                char ***ret_stamps,
                                struct b4_error *err)
{
        return b4_store_source_uploaders(rt->opts.store, digest, ret, ret_stamps, err);
}

int b4_runtime_sources_list(struct b4_runtime *rt,
                            const char *uploader,
                            struct b4_source_info **ret,
                            size_t *ret_n,
                            struct b4_error *err)
{
        return b4_store_sources_list(rt->opts.store, uploader, ret, ret_n, err);
}

int b4_runtime_source_delete(struct b4_runtime *rt, const char *digest, struct b4_error *err)
{
        return b4_store_source_delete(rt->opts.store, digest, err);
}

int b4_runtime_thread_source(struct b4_runtime *rt,
                             const char *id,
                             char **ret,
                             struct b4_error *err)
{
        cleanup_free char *json = NULL;
        int r = b4_store_thread_staged_get(rt->opts.store, id, ret, &json, err);

        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}
