/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running things in a probe sandbox: the threads' lifecycle, runBash, the file tools and
 * the in-sandbox helper (copied into the workspace with the file API, run with runBash).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "json/json.h"
#include "probe.h"

#define HELPER_MAX_BYTES (16u * 1024 * 1024)

void probe_out_clear(struct probe_out *o)
{
        free(o->out);
        free(o->err);
        *o = (struct probe_out){ 0 };
}

void probe_report(struct probe *p, const char *name, enum probe_result res, const char *fmt, ...)
{
        struct probe_row *rows = b4_reallocarray(p->rows, p->n_rows + 1, sizeof(*rows));
        char *detail = NULL;
        va_list ap;

        if (!rows)
                return;
        p->rows = rows;
        va_start(ap, fmt);
        if (b4_vasprintf(&detail, fmt, ap) < 0)
                detail = NULL;
        va_end(ap);
        for (char *c = detail; c && *c; c++)
                if ((unsigned char)*c < 0x20)
                        *c = ' '; /* one line per row */
        rows[p->n_rows] =
                (struct probe_row){ .name = b4_strdup(name), .result = res, .detail = detail };
        if (!rows[p->n_rows].name) {
                free(detail);
                return;
        }
        p->n_rows++;
}

bool probe_interrupted(const struct probe *p)
{
        return b4_cancel_is_set(p->cancel);
}

int probe_sandbox_open(struct probe *p,
                       struct probe_sandbox *s,
                       const char *id,
                       struct b4_error *err)
{
        struct b4_acquire_req req = { .thread_id = id, .policy = p->policy, .cancel = p->cancel };
        int r;

        (void)snprintf(s->id, sizeof(s->id), "%s", id);
        r = b4_provider_acquire(p->local.provider, &req, &s->sb, err);
        if (r < 0)
                return r;
        return b4_tools_new(
                s->sb,
                &(struct b4_tools_options){ .cancel = p->cancel, .read_cap = PROBE_READ_CAP },
                &s->tools, err);
}

void probe_sandbox_close(struct probe *p, struct probe_sandbox *s)
{
        struct b4_error err = { 0 };

        if (!s->id[0])
                return;
        s->tools = b4_tools_free(s->tools);
        s->sb = b4_sandbox_unref(s->sb);
        if (b4_provider_destroy(p->local.provider, s->id, &err) < 0)
                cli_error("probe: cannot destroy thread '%s': %s", s->id, err.msg);
        s->id[0] = '\0';
}

int probe_sandbox_b(struct probe *p, struct probe_sandbox **ret, struct b4_error *err)
{
        char id[sizeof(p->b.id)];
        int r;

        if (!p->b.sb) {
                (void)snprintf(id, sizeof(id), "%.80s-b", p->a.id);
                r = probe_sandbox_open(p, &p->b, id, err);
                if (r < 0)
                        return r;
                probe_helper_install(p, &p->b);
        }
        *ret = &p->b;
        return 0;
}

static int take_string(const struct jv *o, const char *key, char **ret, size_t *ret_len)
{
        const struct jv *v = jv_object_get(o, key);
        size_t n = jv_string_length(v);

        *ret = b4_strndup(jv_string(v) ? jv_string(v) : "", n);
        if (ret_len)
                *ret_len = n;
        return *ret ? 0 : -ENOMEM;
}

/* The error message of a failed result document. */
static const char *error_message(const struct jv *doc)
{
        const char *m = jv_string(jv_object_get(jv_object_get(doc, "error"), "message"));

        return m ? m : "tool failed";
}

/* The result document of one call. */
static int call_json(struct b4_tools *t,
                     const char *tool,
                     const struct jv *args,
                     struct jv **ret,
                     struct b4_error *err)
{
        struct b4_tool_result res = { 0 };
        int r;

        r = b4_tools_call(t, tool, args, &res, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(res.doc);
        return 0;
}

int probe_sh(struct probe_sandbox *s,
             const char *command,
             struct probe_out *ret,
             struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *args = jv_object_new(), *doc = NULL;
        struct probe_out o = { 0 };
        int r;

        if (!args || jv_object_set_new(args, "command", jv_string_new(command)) < 0)
                return -ENOMEM;
        r = call_json(s->tools, "runBash", args, &doc, err);
        if (r < 0)
                return r;
        if (!jv_is_true(jv_object_get(doc, "ok")))
                return b4_error_set(err, -EIO, "runBash: %s", error_message(doc));
        const struct jv *res = jv_object_get(doc, "result");
        r = take_string(res, "stdout", &o.out, &o.out_len);
        if (r >= 0)
                r = take_string(res, "stderr", &o.err, NULL);
        if (r < 0) {
                probe_out_clear(&o);
                return r;
        }
        o.exit_code = (int)jv_integer(jv_object_get(res, "exitCode"));
        o.timed_out = jv_is_true(jv_object_get(res, "timedOut"));
        o.truncated = jv_is_true(jv_object_get(res, "truncated"));
        *ret = o;
        return 0;
}

int probe_helper(struct probe_sandbox *s,
                 const char *args,
                 struct probe_out *ret,
                 struct b4_error *err)
{
        cleanup_free char *cmd = NULL;

        if (!s->helper_ready)
                return b4_error_set(err, -ENOEXEC, "the helper cannot run here: %s",
                                    s->helper_error);
        if (b4_asprintf(&cmd, "./" PROBE_HELPER_NAME " %s", args) < 0)
                return -ENOMEM;
        return probe_sh(s, cmd, ret, err);
}

int probe_tool(struct b4_tools *t,
               const char *tool,
               const char *args_json,
               bool *ret_ok,
               char **ret_text,
               struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *args = NULL, *doc = NULL;
        const struct jv *res;
        int r;

        r = jv_parse(args_json, strlen(args_json), &args, err);
        if (r >= 0)
                r = call_json(t, tool, args, &doc, err);
        if (r < 0)
                return r;
        *ret_ok = jv_is_true(jv_object_get(doc, "ok"));
        if (!*ret_ok) {
                *ret_text = b4_strdup(error_message(doc));
                return *ret_text ? 0 : -ENOMEM;
        }
        res = jv_object_get(doc, "result");
        if (jv_is_string(res)) {
                *ret_text = b4_strndup(jv_string(res), jv_string_length(res));
                return *ret_text ? 0 : -ENOMEM;
        }
        return jv_dump(res, 0, ret_text);
}

char *probe_first_line(const char *s)
{
        const char *nl = strchr(s, '\n');

        return b4_strndup(s, nl ? (size_t)(nl - s) : strlen(s));
}

static int read_helper(const char *path, char **ret, size_t *ret_len)
{
        cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, HELPER_MAX_BYTES, ret, ret_len);
}

/* Write the helper and make it executable (chmod through the fs, else through runBash). */
static int place_helper(struct probe *p, struct probe_sandbox *s, struct b4_error *err)
{
        cleanup_free char *bin = NULL;
        struct b4_fs *fs = b4_sandbox_fs(s->sb);
        struct probe_out o = { 0 };
        size_t len = 0;
        int r;

        r = read_helper(p->helper_path, &bin, &len);
        if (r < 0)
                return b4_error_set(err, r, "cannot read '%s': %s", p->helper_path, strerror(-r));
        r = b4_fs_write_file(fs, B4_WORKSPACE_ROOT "/" PROBE_HELPER_NAME, bin, len, err);
        if (r < 0)
                return r;
        r = b4_fs_chmod(fs, B4_WORKSPACE_ROOT "/" PROBE_HELPER_NAME, 0755, NULL);
        if (r >= 0)
                return 0;
        r = probe_sh(s, "chmod 755 " PROBE_HELPER_NAME, &o, err);
        if (r >= 0 && o.exit_code != 0)
                r = b4_error_set(err, -EIO, "chmod exited %d: %s", o.exit_code, o.err);
        probe_out_clear(&o);
        return r;
}

void probe_helper_install(struct probe *p, struct probe_sandbox *s)
{
        struct probe_out o = { 0 };
        struct b4_error err = { 0 };
        int r;

        s->helper_ready = false;
        r = place_helper(p, s, &err);
        if (r >= 0) {
                s->helper_ready = true;
                r = probe_helper(s, "hello", &o, &err);
                s->helper_ready = false;
        }
        if (r >= 0 && o.exit_code == 0 && strcmp(o.out, "b4box-probe-helper ok\n") == 0)
                s->helper_ready = true;
        else if (r >= 0)
                (void)snprintf(s->helper_error, sizeof(s->helper_error),
                               "./" PROBE_HELPER_NAME " hello exited %d: %.160s", o.exit_code,
                               o.err && o.err[0] ? o.err
                               : o.out           ? o.out
                                                 : "");
        else
                (void)snprintf(s->helper_error, sizeof(s->helper_error), "%.250s", err.msg);
        probe_out_clear(&o);
}
