/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handle's filesystem through the jail (b4box/tools.h, "the handle's filesystem"): each
 * operation decides its path with the tools' gate (gate_path_leaf()) under the key of what it
 * does, calls the provider with exactly the path and flags decided on, and words a failure
 * as the tools do (jail_failed()). No second copy of the path rules lives anywhere else.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

struct b4_tools_dirent *b4_tools_dirents_free(struct b4_tools_dirent *d, size_t n)
{
        for (size_t i = 0; d && i < n; i++)
                free(d[i].name);
        free(d);
        return NULL;
}

/* The jail's decision on @path for an operation gated as @key. An "ask" is not parked. */
static int target(struct b4_tools *t,
                  const char *key,
                  const char *path,
                  bool keep_leaf,
                  struct jail_target *ret,
                  struct b4_error *err)
{
        int r;

        if (!t || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing argument");
        if (!path || !*path)
                return b4_error_set(err, -EINVAL, "path must be a non-empty string");
        ask_clear(&t->ask);
        r = gate_path_leaf(t, key, path, keep_leaf, ret, err);
        ask_clear(&t->ask);
        return r;
}

int b4_tools_fs_stat(struct b4_tools *t,
                     const char *path,
                     bool follow,
                     struct b4_stat *ret,
                     struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        struct b4_stat st = { 0 };
        int r;

        r = target(t, "readFile", path, !follow, &jt, err);
        if (r < 0)
                return r;
        if (follow)
                r = b4_fs_stat_flags(t->fs, jt.path, jt.flags, &st, &inner);
        else
                r = b4_fs_lstat(t->fs, jt.path, &st, &inner);
        if (r < 0) {
                b4_stat_clear(&st);
                return jail_failed(follow ? "stat" : "lstat", &jt, r, &inner, err);
        }
        *ret = st;
        return 0;
}

int b4_tools_fs_realpath(struct b4_tools *t, const char *path, char **ret, struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "readFile", path, false, &jt, err);
        if (r < 0)
                return r;
        if (jt.flags & B4_FS_NO_SYMLINKS && !jt.tool_output) {
                *ret = TAKE_PTR(jt.path); /* the gate's own canonical path */
                return 0;
        }
        r = b4_fs_realpath(t->fs, jt.path, ret, &inner);
        return r < 0 ? jail_failed("realPath", &jt, r, &inner, err) : 0;
}

/* @dir + "/" + @name, for the lstat of a listed child. */
static int child_path(const char *dir, const char *name, char **ret)
{
        return b4_asprintf(ret, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
}

static int kinds_of(struct b4_tools *t,
                    const struct jail_target *jt,
                    char **names,
                    struct b4_tools_dirent *d,
                    struct b4_error *err)
{
        for (size_t i = 0; names[i]; i++) {
                cleanup_free char *p = NULL;
                struct b4_error inner = { 0 };
                struct b4_stat st = { 0 };
                int r = child_path(jt->path, names[i], &p);

                if (r < 0)
                        return r;
                r = b4_fs_lstat(t->fs, p, &st, &inner);
                if (r == -ENOENT) /* gone since the listing: still listed, as other */
                        st.kind = B4_FILE_OTHER;
                else if (r < 0)
                        return jail_failed("list", jt, r, &inner, err);
                d[i].kind = st.kind;
                d[i].name = TAKE_PTR(names[i]);
                b4_stat_clear(&st);
        }
        return 0;
}

int b4_tools_fs_list(struct b4_tools *t,
                     const char *path,
                     struct b4_tools_dirent **ret,
                     size_t *ret_n,
                     struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_tools_dirent *d = NULL;
        struct b4_error inner = { 0 };
        cleanup_strv char **names = NULL;
        size_t n;
        int r;

        r = target(t, "listDir", path, false, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_list_dir_flags(t->fs, jt.path, jt.flags, &names, &inner);
        if (r == -E2BIG)
                return b4_error_set(err, r, "list %s: more than %d entries", jt.abs,
                                    B4_LIST_MAX_ENTRIES);
        if (r < 0)
                return jail_failed("list", &jt, r, &inner, err);
        n = strv_length(names);
        d = b4_calloc(n + 1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        r = kinds_of(t, &jt, names, d, err);
        if (r < 0) {
                b4_tools_dirents_free(d, n);
                return r;
        }
        *ret = d;
        *ret_n = n;
        return 0;
}

int b4_tools_fs_walk(struct b4_tools *t,
                     const char *path,
                     size_t max_entries,
                     char *const *prune,
                     struct b4_walk_entry **ret,
                     size_t *ret_n,
                     struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "listDir", path, false, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_walk(t->fs, jt.path, max_entries, prune, ret, ret_n, &inner);
        if (r == -E2BIG) {
                *err = inner; /* the reference's text */
                return r;
        }
        return r < 0 ? jail_failed("walk", &jt, r, &inner, err) : 0;
}

int b4_tools_fs_read(struct b4_tools *t,
                     const char *path,
                     uint64_t offset,
                     uint64_t length,
                     char **ret,
                     size_t *ret_len,
                     uint64_t *ret_size,
                     struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        bool capped = length > B4_TOOLS_FS_READ_MAX;
        cleanup_free char *data = NULL;
        size_t len = 0;
        int r;

        r = target(t, "readFile", path, false, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_read_range_flags(t->fs, jt.path, jt.flags, offset,
                                   capped ? B4_TOOLS_FS_READ_MAX + 1ull : length, &data, &len,
                                   ret_size, &inner);
        if (r == -EFBIG) {
                *err = inner; /* the fallback's bound, in its words */
                return r;
        }
        if (r < 0)
                return jail_failed("read", &jt, r, &inner, err);
        if (len > B4_TOOLS_FS_READ_MAX)
                return b4_error_set(err, -EFBIG,
                                    "read %s: more than %u bytes from offset %" PRIu64
                                    " (size %" PRIu64 "); read it in ranges",
                                    jt.abs, B4_TOOLS_FS_READ_MAX, offset, *ret_size);
        *ret = TAKE_PTR(data);
        *ret_len = len;
        return 0;
}

int b4_tools_fs_write(
        struct b4_tools *t, const char *path, const void *data, size_t len, struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "writeFile", path, true, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_write_file_flags(t->fs, jt.path, jt.flags, data, len, &inner);
        return r < 0 ? jail_failed("write", &jt, r, &inner, err) : 0;
}

int b4_tools_fs_mkdir(struct b4_tools *t, const char *path, struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "writeFile", path, true, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_mkdir_p(t->fs, jt.path, &inner);
        return r < 0 ? jail_failed("mkdir", &jt, r, &inner, err) : 0;
}

int b4_tools_fs_remove(struct b4_tools *t, const char *path, struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "writeFile", path, true, &jt, err);
        if (r < 0)
                return r;
        if (strcmp(jt.abs, t->root) == 0 || (t->real_root && strcmp(jt.path, t->real_root) == 0))
                return b4_error_set(err, -EPERM, "remove %s: refused: the workspace root", jt.abs);
        r = b4_fs_remove(t->fs, jt.path, &inner);
        return r < 0 ? jail_failed("remove", &jt, r, &inner, err) : 0;
}

int b4_tools_fs_touch(struct b4_tools *t, const char *path, struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = target(t, "writeFile", path, true, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_touch_flags(t->fs, jt.path, jt.flags, &inner);
        return r < 0 ? jail_failed("touch", &jt, r, &inner, err) : 0;
}
