/* SPDX-License-Identifier: Apache-2.0 */
/* Steps the conformance cases are written in; each names what it did when it fails. */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "suite.h"

int suite_acquire(struct suite_ctx *c, const char *thread_id, struct b4_sandbox **ret)
{
        struct b4_acquire_req req = { .thread_id = thread_id, .policy = &c->policy };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;

        if (!thread_id)
                return -1;
        if (c->n_handles >= SUITE_MAX_HANDLES)
                return suite_fail(c, "suite bug: too many handles");
        if (b4_provider_acquire(c->p, &req, &sb, &err) < 0)
                return suite_fail(c, "acquire '%s': %s", thread_id, err.msg);
        if (!sb)
                return suite_fail(c, "acquire '%s' returned no handle", thread_id);
        c->handles[c->n_handles++] = sb;
        if (!sb->thread_id || strcmp(sb->thread_id, thread_id) != 0)
                return suite_fail(c, "acquire '%s': handle thread id is '%s'", thread_id,
                                  sb->thread_id ? sb->thread_id : "(null)");
        if (!sb->workspace_root || sb->workspace_root[0] != '/')
                return suite_fail(c, "acquire '%s': workspace root is not absolute", thread_id);
        *ret = sb;
        return 0;
}

void suite_put(struct suite_ctx *c, struct b4_sandbox *sb)
{
        for (size_t i = 0; i < c->n_handles; i++) {
                if (c->handles[i] == sb) {
                        b4_sandbox_unref(sb);
                        c->handles[i] = c->handles[--c->n_handles];
                        return;
                }
        }
}

int suite_release(struct suite_ctx *c, const char *thread_id)
{
        struct b4_error err = { 0 };

        if (b4_provider_release(c->p, thread_id, &err) < 0)
                return suite_fail(c, "release '%s': %s", thread_id, err.msg);
        return 0;
}

int suite_destroy(struct suite_ctx *c, const char *thread_id)
{
        struct b4_error err = { 0 };

        if (b4_provider_destroy(c->p, thread_id, &err) < 0)
                return suite_fail(c, "destroy '%s': %s", thread_id, err.msg);
        return 0;
}

static int abs_path(struct suite_ctx *c, struct b4_fs *fs, const char *rel, char **ret)
{
        const char *root = fs->root ? fs->root : B4_WORKSPACE_ROOT;

        if (b4_asprintf(ret, "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", rel) < 0)
                return suite_fail(c, "out of memory");
        return 0;
}

int suite_write(struct suite_ctx *c, struct b4_fs *fs, const char *rel, const char *data)
{
        cleanup_free char *path = NULL;
        struct b4_error err = { 0 };

        if (abs_path(c, fs, rel, &path) < 0)
                return -1;
        if (b4_fs_write_file(fs, path, data, strlen(data), &err) < 0)
                return suite_fail(c, "writeFile %s: %s", path, err.msg);
        return 0;
}

int suite_expect_file(struct suite_ctx *c, struct b4_fs *fs, const char *rel, const char *want)
{
        cleanup_free char *path = NULL, *got = NULL;
        struct b4_error err = { 0 };
        size_t len = 0;

        if (abs_path(c, fs, rel, &path) < 0)
                return -1;
        if (b4_fs_read_file(fs, path, SUITE_MAX_READ, &got, &len, &err) < 0)
                return suite_fail(c, "readFile %s: %s", path, err.msg);
        if (len != strlen(want) || memcmp(got, want, len) != 0)
                return suite_fail(c, "readFile %s: got '%.*s', want '%s'", path,
                                  (int)(len > 64 ? 64 : len), got, want);
        return 0;
}

int suite_root_has(struct suite_ctx *c, struct b4_fs *fs, const char *name, bool *ret)
{
        cleanup_strv char **names = NULL;
        struct b4_error err = { 0 };
        const char *root = fs->root ? fs->root : B4_WORKSPACE_ROOT;

        if (b4_fs_list_dir(fs, root, &names, &err) < 0)
                return suite_fail(c, "listDir %s: %s", root, err.msg);
        *ret = strv_contains(names, name);
        return 0;
}

int suite_exec(struct suite_ctx *c, struct b4_sandbox *sb, const char *cmd, int *ret_exit)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };

        if (b4_sandbox_exec(sb, &req, &res, &err) < 0)
                return suite_fail(c, "exec '%s': %s", cmd, err.msg);
        *ret_exit = res.exit_code;
        b4_exec_result_clear(&res);
        return 0;
}
