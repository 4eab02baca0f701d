/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake provider's filesystem views: the b4_fs members of its handles and readers. Each
 * call locks the provider's core, counts itself (fake_provider_calls()), resolves its path's
 * links (fakefs_resolve()) and runs the fake-fs.c operation on the view's workspace. The
 * batched members answer from one hold of the lock; the read hook runs before reads,
 * unlocked; the walk faults break the batched walk after it (fake.h).
 */

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "b4box/provider-impl.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "fake-internal.h"

/* The members' names in messages. */
static const char *const call_name[FAKE_CALL__COUNT] = {
        [FAKE_CALL_READ_FILE] = "readFile",
        [FAKE_CALL_LSTAT] = "lstat",
        [FAKE_CALL_STAT] = "stat",
        [FAKE_CALL_LIST_DIR] = "listDir",
        [FAKE_CALL_REALPATH] = "realpath",
        [FAKE_CALL_WALK] = "walk",
        [FAKE_CALL_READ_FILES] = "readFiles",
        [FAKE_CALL_WRITE_FILE] = "writeFile",
        [FAKE_CALL_MKDIR_P] = "mkdir",
        [FAKE_CALL_REMOVE] = "remove",
        [FAKE_CALL_TOUCH] = "touchFile",
        [FAKE_CALL_CHMOD] = "chmod",
        [FAKE_CALL_SYMLINK] = "symlink",
        [FAKE_CALL_EXEC] = "exec",
};

/* The core and workspace behind @fs (a handle's or a reader's). */
static struct fake_core *view_of(struct b4_fs *fs, struct fake_ws **ret_ws)
{
        if (fs->sb) {
                struct fake_sandbox *sb = container_of(fs, struct fake_sandbox, base.fs);
                if (ret_ws)
                        *ret_ws = sb->ws;
                return sb->core;
        }
        struct fake_reader *rd = container_of(fs, struct fake_reader, base.fs);
        if (ret_ws)
                *ret_ws = rd->ws;
        return rd->core;
}

/* Lock the core behind @fs, count @call and return the workspace it may touch. */
int fake_view_lock(struct b4_fs *fs,
                   enum fake_call call,
                   struct fake_core **ret_core,
                   struct fake_ws **ret_ws,
                   struct b4_error *err)
{
        struct fake_ws *ws;
        struct fake_core *c = view_of(fs, &ws);

        *ret_core = c;
        *ret_ws = ws;
        (void)pthread_mutex_lock(&c->lock);
        c->calls[call]++;
        if (ws->destroyed) {
                (void)pthread_mutex_unlock(&c->lock);
                return b4_error_set_code(
                        err, -ENOENT, B4_CODE_SANDBOX_UNAVAILABLE,
                        "Sandbox unavailable: the workspace of thread \"%s\" was destroyed.",
                        ws->thread_id);
        }
        return 0;
}

int fake_view_unlock(struct fake_core *c, int r)
{
        (void)pthread_mutex_unlock(&c->lock);
        return r;
}

/* Lock the view for @call and resolve @path in it (fakefs_resolve()); unlocked again on
 * error. */
static int view_resolve(struct b4_fs *fs,
                        const char *path,
                        bool follow_last,
                        unsigned flags,
                        enum fake_call call,
                        struct fake_core **ret_core,
                        struct fake_ws **ret_ws,
                        char **ret,
                        struct b4_error *err)
{
        int r = fake_view_lock(fs, call, ret_core, ret_ws, err);

        if (r < 0)
                return r;
        r = fakefs_resolve(*ret_ws, path, follow_last, flags, call_name[call], ret, err);
        return r < 0 ? fake_view_unlock(*ret_core, r) : 0;
}

/* The injected writer, if any (fake_provider_set_read_hook()): before a read, unlocked. */
static void before_read(struct b4_fs *fs)
{
        struct fake_core *c = view_of(fs, NULL);

        if (c->read_hook)
                c->read_hook(c->read_hook_data);
}

static int fs_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max_bytes,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r;

        before_read(fs);
        r = view_resolve(fs, path, true, flags, FAKE_CALL_READ_FILE, &c, &ws, &p, err);
        return r < 0 ? r : fake_view_unlock(c, fakefs_read(ws, p, max_bytes, ret, ret_len, err));
}

static int fs_read_range(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         uint64_t offset,
                         uint64_t length,
                         char **ret,
                         size_t *ret_len,
                         uint64_t *ret_size,
                         struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r;

        before_read(fs);
        r = view_resolve(fs, path, true, flags, FAKE_CALL_READ_FILE, &c, &ws, &p, err);
        return r < 0 ? r
                     : fake_view_unlock(c, fakefs_read_range(ws, p, offset, length, ret, ret_len,
                                                             ret_size, err));
}

static int fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, false, 0, FAKE_CALL_LSTAT, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_lstat(ws, p, ret, err));
}

static int fs_stat(struct b4_fs *fs,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, true, flags, FAKE_CALL_STAT, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_lstat(ws, p, ret, err));
}

static int fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, true, flags, FAKE_CALL_LIST_DIR, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_list(ws, p, ret, err));
}

static int fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, true, 0, FAKE_CALL_REALPATH, &c, &ws, ret, err);

        return r < 0 ? r : fake_view_unlock(c, 0);
}

static int fs_write_file(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, false, flags, FAKE_CALL_WRITE_FILE, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_write(ws, p, data, len, err));
}

static int fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, true, 0, FAKE_CALL_MKDIR_P, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_mkdir(ws, p, err));
}

static int fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, false, 0, FAKE_CALL_REMOVE, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_remove(ws, p, err));
}

static int fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, true, flags, FAKE_CALL_TOUCH, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_touch(ws, p, err));
}

static int fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, false, 0, FAKE_CALL_CHMOD, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_chmod(ws, p, mode, err));
}

static int fs_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r = view_resolve(fs, path, false, 0, FAKE_CALL_SYMLINK, &c, &ws, &p, err);

        return r < 0 ? r : fake_view_unlock(c, fakefs_symlink(ws, target, p, err));
}

static int fs_walk(struct b4_fs *fs,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        unsigned faults;
        int r = view_resolve(fs, path, true, 0, FAKE_CALL_WALK, &c, &ws, &p, err);

        if (r < 0)
                return r;
        faults = c->walk_faults;
        r = fake_view_unlock(c, fakefs_walk(ws, p, max_entries, prune, ret, ret_n, err));
        if (r < 0 || !faults)
                return r;
        r = fakefs_walk_break(faults, ret, ret_n);
        if (r < 0)
                *ret = b4_walk_entries_free(*ret, *ret_n);
        return r;
}

/* One read of the batch, under the lock: its error goes into @b, only -ENOMEM out. */
static int read_one(struct fake_ws *ws, const struct b4_read_req *req, struct b4_blob *b)
{
        cleanup_free char *p = NULL;
        int r = fakefs_resolve(ws, req->path, true, 0, "readFile", &p, NULL);

        if (r >= 0)
                r = fakefs_read(ws, p, req->max_bytes, &b->data, &b->len, NULL);
        b->error = r < 0 ? r : 0;
        return r == -ENOMEM ? r : 0;
}

static int fs_read_files(struct b4_fs *fs,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        struct b4_blob *b = b4_calloc(n ? n : 1, sizeof(*b));
        struct fake_core *c = NULL;
        struct fake_ws *ws = NULL;
        int r;

        if (!b)
                return -ENOMEM;
        before_read(fs);
        r = fake_view_lock(fs, FAKE_CALL_READ_FILES, &c, &ws, err);
        if (r >= 0) {
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = read_one(ws, &reqs[i], &b[i]);
                (void)fake_view_unlock(c, 0);
        }
        if (r < 0) {
                b4_blobs_free(b, n);
                return r;
        }
        *ret = b;
        return 0;
}

/* Every member a view may have; fake_view_ops() picks a view's. */
static const struct b4_fs_ops handle_fs_ops = {
        .read_file = fs_read_file,
        .read_range = fs_read_range,
        .lstat = fs_lstat,
        .stat = fs_stat,
        .list_dir = fs_list_dir,
        .realpath = fs_realpath,
        .write_file = fs_write_file,
        .mkdir_p = fs_mkdir_p,
        .remove = fs_remove,
        .touch = fs_touch,
        .chmod = fs_chmod,
        .symlink = fs_symlink,
        .walk = fs_walk,
        .read_files = fs_read_files,
};

static const struct b4_fs_ops reader_fs_ops = {
        .read_file = fs_read_file,
        .read_range = fs_read_range,
        .lstat = fs_lstat,
        .stat = fs_stat,
        .list_dir = fs_list_dir,
        .realpath = fs_realpath,
        .walk = fs_walk,
        .read_files = fs_read_files,
};

/*
 * The members of a new handle (@handle) or reader: the read members; the write members for
 * a handle, symlink only after fake_provider_set_symlinks() (so callers take their
 * no-symlink paths by default); walk and read_files only after fake_provider_set_batched()
 * (core's fallbacks otherwise). Under the lock.
 */
void fake_view_ops(const struct fake_core *c, bool handle, struct b4_fs_ops *ret)
{
        *ret = handle ? handle_fs_ops : reader_fs_ops;
        if (!c->symlinks)
                ret->symlink = NULL;
        if (!c->batched) {
                ret->walk = NULL;
                ret->read_files = NULL;
        }
}
