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

#define READ_SCAN_CHUNK (256u * 1024)

/*
 * A line range of a file over the size cap: the file is read in pieces (ranged reads where
 * the provider has them, else once whole up to B4_FS_RANGE_FALLBACK_MAX) and only the range
 * is kept, at most @cap bytes of it. *ret as text_slice_lines().
 */
static int read_scan(struct b4_tools *t,
                     const struct jail_target *jt,
                     const char *path,
                     uint64_t cap,
                     int64_t start,
                     int64_t end,
                     char **ret,
                     size_t *ret_len,
                     struct b4_error *err)
{
        uint64_t chunk = b4_fs_has_read_range(t->fs) ? READ_SCAN_CHUNK : UINT64_MAX;
        struct b4_error inner = { 0 };
        struct line_scan s;
        uint64_t off = 0, size = 0;
        int r;

        line_scan_init(&s, start, end, (size_t)cap);
        do {
                cleanup_free char *buf = NULL;
                size_t n = 0;
                r = b4_fs_read_range_flags(t->fs, jt->path, jt->flags, off, chunk, &buf, &n, &size,
                                           &inner);
                if (r < 0) {
                        r = r == -ENOMEM ? r : jail_failed("readFile", jt, r, &inner, err);
                        break;
                }
                r = line_scan_feed(&s, path, buf, n, err);
                off += n;
                if (n == 0)
                        break;
        } while (r >= 0 && off < size);
        if (r >= 0)
                r = line_scan_finish(&s, path, ret, ret_len, err);
        line_scan_release(&s);
        return r;
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

        uint64_t cap;

        r = gate_path(t, "readFile", path, &jt, err);
        if (r < 0)
                return r;
        cap = jt.tool_output ? B4_TOOLS_TOOL_OUTPUT_CAP : t->read_cap;
        r = read_capped(t, &jt, cap, &data, &len, err);
        if (r == -EFBIG && (start || end)) { /* over the cap: only the range must fit */
                *err = (struct b4_error){ 0 };
                r = read_scan(t, &jt, path, cap, start, end, &sliced, &len, err);
                if (r >= 0 && jt.tool_output)
                        (void)b4_fs_touch_flags(t->fs, jt.path, jt.flags, NULL);
                return r < 0 ? r : text_value(sliced, len, ret);
        }
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

/* A usage figure, or null where the provider cannot know it. */
static struct jv *usage_json(const struct b4_exec_usage *u, unsigned bit, uint64_t v)
{
        return (u->known & bit) ? jv_integer_new((int64_t)v) : jv_null_new();
}

static int exec_result(const struct b4_exec_result *x, struct jv **ret)
{
        const struct b4_exec_usage *u = &x->usage;
        struct jv *o =
                jv_pack("{s:o, s:o, s:i, s:b, s:b, s:b, s:I, s:I, s:o, s:o, s:o, s:o}", "stdout",
                        text_json(x->out, x->out_len), "stderr",
                        text_json(x->errout, x->errout_len), "exitCode", x->exit_code, "timedOut",
                        x->timed_out, "cancelled", x->cancelled, "truncated", x->truncated,
                        "durationMs", (int64_t)x->duration_ms, "wallMs", (int64_t)x->duration_ms,
                        "cpuMs", usage_json(u, B4_USAGE_CPU, u->cpu_ms), "peakMemoryBytes",
                        usage_json(u, B4_USAGE_PEAK_MEMORY, u->peak_memory_bytes), "maxProcesses",
                        usage_json(u, B4_USAGE_MAX_PROCESSES, u->max_processes), "oomKilled",
                        (u->known & B4_USAGE_OOM) ? jv_bool_new(u->oom_killed) : jv_null_new());

        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

#define RUN_BASH_ENV_MAX 1024 /* per-call env entries */

static bool env_name_valid(const char *n)
{
        if (!(*n == '_' || (*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z')))
                return false;
        for (n++; *n; n++)
                if (!(*n == '_' || (*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') ||
                      (*n >= '0' && *n <= '9')))
                        return false;
        return true;
}

int run_bash_check(struct b4_tools *t, const struct jv *args, struct b4_error *err)
{
        struct b4_exec_bounds b = { 0 };
        const struct jv *tv = jv_object_get(args, "timeoutMs");
        const struct jv *ov = jv_object_get(args, "maxOutputBytes");
        const struct jv *env = jv_object_get(args, "env");

        if (!t->sb)
                return b4_error_set(err, -EROFS, "runBash: a workspace reader has no shell");
        b = b4_sandbox_exec_bounds(t->sb);
        if (tv && b.timeout_ms && (uint64_t)jv_integer(tv) > b.timeout_ms)
                return b4_error_set(err, -EINVAL,
                                    "runBash: timeoutMs (%lld) exceeds the policy's "
                                    "resources.timeoutMs (%llu)",
                                    (long long)jv_integer(tv), (unsigned long long)b.timeout_ms);
        if (ov && b.output_cap && (uint64_t)jv_integer(ov) > b.output_cap)
                return b4_error_set(err, -EINVAL,
                                    "runBash: maxOutputBytes (%lld) exceeds the policy's "
                                    "resources.outputCapBytes (%zu)",
                                    (long long)jv_integer(ov), b.output_cap);
        if (env && jv_object_size(env) > RUN_BASH_ENV_MAX)
                return b4_error_set(err, -EINVAL, "runBash: env has more than %d variables",
                                    RUN_BASH_ENV_MAX);
        for (void *it = env ? jv_object_iter(env) : NULL; it; it = jv_object_next(env, it)) {
                if (!env_name_valid(jv_iter_key(it)))
                        return b4_error_set(err, -EINVAL,
                                            "runBash: env name '%s' is not a variable name "
                                            "([A-Za-z_][A-Za-z0-9_]*)",
                                            jv_iter_key(it));
                if (strlen(jv_string(jv_iter_value(it))) != jv_string_length(jv_iter_value(it)))
                        return b4_error_set(err, -EINVAL,
                                            "runBash: env value of '%s' must not contain NUL",
                                            jv_iter_key(it));
        }
        return 0;
}

/* The per-call cwd: inside the workspace (lexically) and a directory there. *ret is heap. */
static int run_bash_cwd(struct b4_tools *t, const char *cwd, char **ret, struct b4_error *err)
{
        cleanup_free char *abs = NULL;
        struct b4_stat st = { 0 };
        struct b4_error inner = { 0 };
        int r;

        r = jail_resolve(t->root, cwd, &abs);
        if (r < 0)
                return r == -ENOMEM ? r : b4_error_set(err, r, "cannot resolve '%s'", cwd);
        if (!jail_is_inside(t->root, abs))
                return b4_error_set(err, -EINVAL, "runBash: cwd %s is outside the workspace %s",
                                    abs, t->root);
        r = b4_fs_stat_flags(t->fs, abs, B4_FS_BENEATH, &st, &inner);
        if (r >= 0 && st.kind != B4_FILE_DIRECTORY)
                r = -ENOTDIR;
        b4_stat_clear(&st);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return b4_error_set(err, r, "runBash: cwd %s: %s", abs, strerror(-r));
        *ret = TAKE_PTR(abs);
        return 0;
}

int b4_tools_gate_command(struct b4_tools *t,
                          const char *command,
                          const char *cwd,
                          char **ret_cwd,
                          struct b4_error *err)
{
        cleanup_free char *abs = NULL;
        int r;

        *ret_cwd = NULL;
        ask_clear(&t->ask);
        r = gate_tool(t, "runBash", err);
        if (r >= 0 && cwd)
                r = run_bash_cwd(t, cwd, &abs, err);
        if (r >= 0)
                r = gate_command(t, command, err);
        if (r == -EAGAIN) { /* interactive mode would ask: nothing parks here */
                ask_clear(&t->ask);
                return b4_error_set(err, -EPERM,
                                    "running \"%s\" needs a permission answer, which a background "
                                    "process cannot ask for: allow it in the permissions",
                                    command);
        }
        if (r < 0)
                return r;
        *ret_cwd = TAKE_PTR(abs);
        return 0;
}

/* The per-call env as exec variables; borrowed strings of @env. *ret is heap. */
static int run_bash_env(const struct jv *env, struct b4_env_var **ret, size_t *ret_n)
{
        size_t n = env ? jv_object_size(env) : 0, i = 0;
        struct b4_env_var *v;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        v = b4_calloc(n, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (void *it = jv_object_iter(env); it; it = jv_object_next(env, it), i++)
                v[i] = (struct b4_env_var){ .name = (char *)jv_iter_key(it),
                                            .value = (char *)jv_string(jv_iter_value(it)) };
        *ret = v;
        *ret_n = n;
        return 0;
}

int tool_run_bash(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err)
{
        const char *command = jv_string(jv_object_get(args, "command"));
        const struct jv *cwd = jv_object_get(args, "cwd");
        const struct jv *tv = jv_object_get(args, "timeoutMs");
        const struct jv *ov = jv_object_get(args, "maxOutputBytes");
        cleanup_free struct b4_env_var *env = NULL;
        cleanup_free char *cwd_abs = NULL;
        struct b4_exec_req req = { .command = command,
                                   .cwd = t->root,
                                   .timeout_ms = tv ? (uint64_t)jv_integer(tv) : 0,
                                   .output_cap = ov ? (size_t)jv_integer(ov) : 0,
                                   .cancel = t->cancel,
                                   .on_output = t->on_output,
                                   .output_userdata = t->output_userdata };
        struct b4_exec_result x = { 0 };
        struct b4_error inner = { 0 };
        int r;

        if (!t->sb)
                return b4_error_set(err, -EROFS, "runBash: a workspace reader has no shell");
        if (cwd) /* the bounds were checked with the arguments (dispatch.c) */
                r = run_bash_cwd(t, jv_string(cwd), &cwd_abs, err);
        else
                r = 0;
        if (r >= 0)
                r = run_bash_env(jv_object_get(args, "env"), &env, &req.n_env);
        if (r < 0)
                return r;
        req.env = env;
        if (cwd_abs)
                req.cwd = cwd_abs;
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
