/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent-backed struct b4_fs_ops (agent-fs-ops.h): every member finds its provider's
 * table from fs->ops, asks it for the connection, and either answers with the agent's call
 * or hands the call to the provider's fallback members.
 */

#include "agent-fs-ops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-client.h"
#include "base/alloc.h"
#include "base/macro.h"

static const struct agent_fs_ops *table_of(const struct b4_fs *fs)
{
        return container_of(fs->ops, const struct agent_fs_ops, ops);
}

/* 1 with *ret: the agent serves; 0: the fallback does; -errno: the call's answer. */
static int route(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        return table_of(fs)->conn(fs, ret, err);
}

/* Whether the agent's answer @r to @op stands (true), or the fallback gives it. */
static bool stands(const struct b4_fs *fs, enum agent_fs_op op, int r)
{
        const struct agent_fs_ops *t = table_of(fs);

        return !t->fallback || !t->falls_back || !t->falls_back(op, r);
}

static const struct b4_fs_ops *fallback_of(const struct b4_fs *fs)
{
        return table_of(fs)->fallback;
}

static int unsupported(struct b4_error *err)
{
        return b4_error_set(err, -EOPNOTSUPP, "this file operation needs b4box-agent");
}

/* The fallback's member @m of @fs, or -EOPNOTSUPP. */
#define FALLBACK(fs, err, m, ...) \
 (fallback_of(fs) && fallback_of(fs)->m ? fallback_of(fs)->m(__VA_ARGS__) : unsupported(err))

int agent_fs_read_file(struct b4_fs *fs,
                       const char *path,
                       unsigned flags,
                       uint64_t max_bytes,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_READ_FILE,
                            r = agent_read_file(c, path, flags, max_bytes, ret, ret_len, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_READ_FILE, r))
                return r;
        return FALLBACK(fs, err, read_file, fs, path, flags, max_bytes, ret, ret_len, err);
}

int agent_fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_LSTAT, r = agent_lstat(c, path, ret, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_LSTAT, r))
                return r;
        return FALLBACK(fs, err, lstat, fs, path, ret, err);
}

int agent_fs_stat(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  struct b4_stat *ret,
                  struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_STAT, r = agent_stat(c, path, flags, ret, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_STAT, r))
                return r;
        return FALLBACK(fs, err, stat, fs, path, flags, ret, err);
}

int agent_fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_LIST_DIR, r = agent_list_dir(c, path, flags, ret, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_LIST_DIR, r))
                return r;
        return FALLBACK(fs, err, list_dir, fs, path, flags, ret, err);
}

int agent_fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_REALPATH, r = agent_realpath(c, path, ret, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_REALPATH, r))
                return r;
        return FALLBACK(fs, err, realpath, fs, path, ret, err);
}

int agent_fs_walk(struct b4_fs *fs,
                  const char *path,
                  size_t max_entries,
                  char *const *prune,
                  struct b4_walk_entry **ret,
                  size_t *ret_n,
                  struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 &&
            stands(fs, AGENT_FS_WALK, r = agent_walk(c, path, max_entries, prune, ret, ret_n, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_WALK, r))
                return r;
        return FALLBACK(fs, err, walk, fs, path, max_entries, prune, ret, ret_n, err);
}

/* How many of @reqs, from the first, fit one batch request: at most AGENT_BATCH_MAX files
 * in a frame of AGENT_FRAME_MAX bytes (at least one: an oversized path is the client's to
 * refuse). */
static size_t batch_fit(const struct b4_read_req *reqs, size_t n)
{
        size_t k = 0, bytes = 64;

        while (k < n && k < AGENT_BATCH_MAX && bytes + 12 + strlen(reqs[k].path) <= AGENT_FRAME_MAX)
                bytes += 12 + strlen(reqs[k++].path);
        return k ? k : 1;
}

static int read_files_chunked(struct agent_conn *c,
                              const struct b4_read_req *reqs,
                              size_t n,
                              struct b4_blob **ret,
                              struct b4_error *err)
{
        struct b4_blob *all = NULL;
        size_t done = 0;

        if (n == 0 || batch_fit(reqs, n) == n)
                return agent_read_files(c, reqs, n, ret, err);
        all = b4_calloc(n, sizeof(*all));
        if (!all)
                return b4_error_set(err, -ENOMEM, "out of memory");
        while (done < n) {
                size_t k = batch_fit(reqs + done, n - done);
                struct b4_blob *part = NULL;
                int r = agent_read_files(c, reqs + done, k, &part, err);

                if (r < 0) {
                        b4_blobs_free(all, n);
                        return r;
                }
                memcpy(all + done, part, k * sizeof(*part));
                free(part);
                done += k;
        }
        *ret = all;
        return 0;
}

int agent_fs_read_files(struct b4_fs *fs,
                        const struct b4_read_req *reqs,
                        size_t n,
                        struct b4_blob **ret,
                        struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_READ_FILES, r = read_files_chunked(c, reqs, n, ret, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_READ_FILES, r))
                return r;
        return FALLBACK(fs, err, read_files, fs, reqs, n, ret, err);
}

int agent_fs_write_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        const void *data,
                        size_t len,
                        struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 &&
            stands(fs, AGENT_FS_WRITE_FILE, r = agent_write_file(c, path, flags, data, len, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_WRITE_FILE, r))
                return r;
        return FALLBACK(fs, err, write_file, fs, path, flags, data, len, err);
}

int agent_fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_MKDIR_P, r = agent_mkdir_p(c, path, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_MKDIR_P, r))
                return r;
        return FALLBACK(fs, err, mkdir_p, fs, path, err);
}

int agent_fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_REMOVE, r = agent_remove(c, path, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_REMOVE, r))
                return r;
        return FALLBACK(fs, err, remove, fs, path, err);
}

int agent_fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_TOUCH, r = agent_touch(c, path, flags, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_TOUCH, r))
                return r;
        return FALLBACK(fs, err, touch, fs, path, flags, err);
}

int agent_fs_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_SYMLINK, r = agent_symlink(c, target, path, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_SYMLINK, r))
                return r;
        return FALLBACK(fs, err, symlink, fs, target, path, err);
}

int agent_fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err)
{
        struct agent_conn *c;
        int r = route(fs, &c, err);

        if (r > 0 && stands(fs, AGENT_FS_CHMOD, r = agent_chmod(c, path, mode, err)))
                return r;
        if (r < 0 && stands(fs, AGENT_FS_CHMOD, r))
                return r;
        return FALLBACK(fs, err, chmod, fs, path, mode, err);
}
