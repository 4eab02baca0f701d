/* SPDX-License-Identifier: Apache-2.0 */
/* The five workspace tools (reference §10.1) over a jailed, gated filesystem and exec. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "json/json.h"
#include "tools/tools-internal.h"

static void jv_unref_ptr(struct jv **v)
{
        jv_unrefp(v);
}

#define cleanup_jv cleanup_(jv_unref_ptr)

/* A backend failure in the same words on every provider. */
static int fs_failed(
        const char *op, const char *abs, int r, const struct b4_error *inner, struct b4_error *err)
{
        switch (r) {
        case -EXDEV: /* B4_FS_BENEATH: the resolution left the workspace */
                return b4_error_set(err, r, "%s %s: refused: the path leads out of the workspace",
                                    op, abs);
        case -ENOENT:
        case -EISDIR:
        case -ENOTDIR:
        case -EACCES:
        case -EPERM:
        case -ELOOP:
        case -ENAMETOOLONG:
        case -ENOTEMPTY:
        case -EEXIST:
                return b4_error_set(err, r, "%s %s: %s", op, abs, strerror(-r));
        case -ENOMEM:
                return r;
        default:
                return b4_error_set(err, r, "%s %s: %s", op, abs,
                                    inner->msg[0] ? inner->msg : strerror(-r));
        }
}

/* A JSON string from bytes that may not be UTF-8 (lossy, as the reference's text reads); NULL
 * @s reads as empty. NULL on OOM. */
static struct jv *text_json(const char *s, size_t len)
{
        cleanup_free char *u = NULL;
        size_t ulen = 0;

        if (!s)
                return jv_string_new("");
        if (utf8_is_valid(s, len))
                return jv_stringn_new(s, len);
        return text_utf8_lossy(s, len, &u, &ulen) < 0 ? NULL : jv_stringn_new(u, ulen);
}

static int text_value(const char *s, size_t len, struct jv **ret)
{
        *ret = text_json(s, len);
        return *ret ? 0 : -ENOMEM;
}

static int string_value(const char *s, struct jv **ret)
{
        *ret = jv_string_new(s);
        return *ret ? 0 : -ENOMEM;
}

int jail_failed(const char *op,
                const struct jail_target *jt,
                int r,
                const struct b4_error *inner,
                struct b4_error *err)
{
        if (r == -ELOOP && (jt->flags & B4_FS_NO_SYMLINKS))
                return b4_error_set(err, r, "%s %s: refused: a symbolic link is in the way", op,
                                    jt->abs);
        return fs_failed(op, jt->abs, r, inner, err);
}

/* Bounded read of @jt under @cap, with the reference's too-large text. */
static int read_capped(struct b4_tools *t,
                       const struct jail_target *jt,
                       uint64_t cap,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err)
{
        struct b4_error inner = { 0 };
        struct b4_stat st = { 0 };
        uint64_t size;
        int r;

        r = b4_fs_read_file_flags(t->fs, jt->path, jt->flags, cap, ret, ret_len, &inner);
        if (r != -EFBIG)
                return r < 0 ? jail_failed("readFile", jt, r, &inner, err) : 0;
        size = cap + 1;
        if (b4_fs_stat_flags(t->fs, jt->path, jt->flags, &st, NULL) >= 0 && st.size > cap)
                size = st.size;
        b4_stat_clear(&st);
        return b4_error_set(err, -EFBIG,
                            "File too large: %" PRIu64 " bytes (max %" PRIu64 ") at %s", size, cap,
                            jt->abs);
}

static int64_t line_arg(const struct jv *args, const char *name)
{
        const struct jv *v = jv_object_get(args, name);

        return v && !jv_is_null(v) ? jv_integer(v) : 0;
}

int tool_read_file(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err)
{
        const char *path = jv_string(jv_object_get(args, "path"));
        int64_t start = line_arg(args, "startLine"), end = line_arg(args, "endLine");
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        cleanup_free char *data = NULL;
        cleanup_free char *sliced = NULL;
        size_t len = 0;
        int r;

        r = gate_path(t, "readFile", path, &jt, err);
        if (r < 0)
                return r;
        r = read_capped(t, &jt, jt.tool_output ? B4_TOOLS_TOOL_OUTPUT_CAP : t->read_cap, &data,
                        &len, err);
        if (r < 0)
                return r;
        if (jt.tool_output)
                (void)b4_fs_touch_flags(t->fs, jt.path, jt.flags, NULL);
        if (start == 0 && end == 0)
                return text_value(data, len, ret);
        r = text_slice_lines(path, data, len, start, end, &sliced, &len, err);
        if (r < 0)
                return r;
        return text_value(sliced, len, ret);
}

int tool_write_file(struct b4_tools *t,
                    const struct jv *args,
                    struct jv **ret,
                    struct b4_error *err)
{
        const struct jv *content = jv_object_get(args, "content");
        const char *path = jv_string(jv_object_get(args, "path"));
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        cleanup_free char *msg = NULL;
        struct b4_error inner = { 0 };
        size_t len = jv_string_length(content);
        int r;

        r = gate_path(t, "writeFile", path, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_write_file_flags(t->fs, jt.path, jt.flags, jv_string(content), len, &inner);
        if (r < 0)
                return jail_failed("writeFile", &jt, r, &inner, err);
        if (b4_asprintf(&msg, "wrote %zu bytes to %s", len, path) < 0)
                return -ENOMEM;
        return string_value(msg, ret);
}

struct edit_args {
        const char *path;
        const char *old_text, *new_text;
        size_t old_len, new_len;
        bool all;
};

static int edit_write(struct b4_tools *t,
                      const struct edit_args *a,
                      const struct text_edit *e,
                      struct jv **ret,
                      struct b4_error *err)
{
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        cleanup_free char *msg = NULL;
        struct b4_error inner = { 0 };
        int r;

        r = gate_path(t, "writeFile", a->path, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_write_file_flags(t->fs, jt.path, jt.flags, e->content, e->len, &inner);
        if (r < 0)
                return jail_failed("writeFile", &jt, r, &inner, err);
        r = text_describe_edit(a->path, e->lines, e->n_lines, &msg);
        if (r < 0)
                return r;
        return string_value(msg, ret);
}

int tool_edit_file(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err)
{
        const struct jv *old_v = jv_object_get(args, "oldText");
        const struct jv *new_v = jv_object_get(args, "newText");
        const struct jv *all_v = jv_object_get(args, "replaceAll");
        struct edit_args a = {
                .path = jv_string(jv_object_get(args, "path")),
                .old_text = jv_string(old_v),
                .old_len = jv_string_length(old_v),
                .new_text = jv_string(new_v),
                .new_len = jv_string_length(new_v),
                .all = all_v && jv_is_true(all_v),
        };
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        cleanup_free char *data = NULL;
        cleanup_free char *msg = NULL;
        struct text_edit e = { 0 };
        size_t len = 0;
        int r;

        r = gate_path(t, "readFile", a.path, &jt, err);
        if (r < 0)
                return r;
        r = read_capped(t, &jt, t->read_cap, &data, &len, err);
        if (r < 0)
                return r;
        if (!utf8_is_valid(data, len))
                return b4_error_set(
                        err, -EILSEQ,
                        "editFile: %s is not valid UTF-8; editFile only edits UTF-8 text files, and the file was left unchanged",
                        a.path);
        r = text_apply_edit(a.path, data, len, a.old_text, a.old_len, a.new_text, a.new_len, a.all,
                            &e, err);
        if (r < 0)
                return r;
        if (a.old_len == a.new_len && memcmp(a.old_text, a.new_text, a.old_len) == 0) {
                text_edit_clear(&e);
                if (b4_asprintf(
                            &msg,
                            "no change: newText is identical to oldText in %s; the file was not written",
                            a.path) < 0)
                        return -ENOMEM;
                return string_value(msg, ret);
        }
        r = edit_write(t, &a, &e, ret, err);
        text_edit_clear(&e);
        return r;
}

int tool_list_dir(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err)
{
        const struct jv *pv = jv_object_get(args, "path");
        const char *path = pv ? jv_string(pv) : ".";
        cleanup_(jail_target_clear) struct jail_target jt = { 0 };
        cleanup_strv char **names = NULL;
        cleanup_jv struct jv *list = NULL;
        struct b4_error inner = { 0 };
        int r;

        r = gate_path(t, "listDir", path, &jt, err);
        if (r < 0)
                return r;
        r = b4_fs_list_dir_flags(t->fs, jt.path, jt.flags, &names, &inner);
        if (r == -E2BIG) /* every provider caps a listing (L10) */
                return b4_error_set(err, r, "listDir %s: more than %d entries", jt.abs,
                                    B4_LIST_MAX_ENTRIES);
        if (r < 0)
                return jail_failed("listDir", &jt, r, &inner, err);
        strv_sort(names);
        list = jv_array_new();
        if (!list)
                return -ENOMEM;
        STRV_FOREACH (n, names)
                if (jv_array_append_new(list, text_json(*n, strlen(*n))) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(list);
        return 0;
}

static int exec_result(const struct b4_exec_result *x, struct jv **ret)
{
        struct jv *o = jv_pack("{s:o, s:o, s:i, s:b, s:b, s:b, s:I}", "stdout",
                               text_json(x->out, x->out_len), "stderr",
                               text_json(x->errout, x->errout_len), "exitCode", x->exit_code,
                               "timedOut", x->timed_out, "cancelled", x->cancelled, "truncated",
                               x->truncated, "durationMs", (int64_t)x->duration_ms);

        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

int tool_run_bash(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err)
{
        const char *command = jv_string(jv_object_get(args, "command"));
        struct b4_exec_req req = { .command = command, .cwd = t->root, .cancel = t->cancel };
        struct b4_exec_result x = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = gate_command(t, command, err);
        if (r < 0)
                return r;
        r = b4_sandbox_exec(t->sb, &req, &x, &inner);
        if (r < 0) {
                b4_exec_result_clear(&x);
                if (r == -ENOMEM)
                        return r;
                return b4_error_set(err, r, "runBash failed: %s",
                                    inner.msg[0] ? inner.msg : strerror(-r));
        }
        r = exec_result(&x, ret);
        b4_exec_result_clear(&x);
        return r;
}
