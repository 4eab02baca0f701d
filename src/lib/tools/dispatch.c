/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tool dispatcher: a name and parsed arguments in, a typed result (ok, code and the
 * result document, docs/tools.md) out, with argument validation and the permission request /
 * resume cycle.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "json/json.h"
#include "tools/tools-internal.h"

static void jv_unref_ptr(struct jv **v)
{
        jv_unrefp(v);
}

#define cleanup_jv cleanup_(jv_unref_ptr)

enum arg_type {
        ARG_TEXT, /* any string */
        ARG_NAME, /* a string without NUL (paths, commands) */
        ARG_LINE, /* an integer >= 1, or null */
        ARG_BOOL, /* a boolean, or null */
        ARG_ENV,  /* an object of strings */
        ARG_SIZE, /* an integer >= 1 */
};

enum {
        ARG_REQUIRED = 1 << 0,
        ARG_NONEMPTY = 1 << 1,
};

struct arg_spec {
        const char *name;
        enum arg_type type;
        unsigned flags;
};

#define MAX_ARGS 5

static const struct tool_def {
        const char *name;
        tool_fn *fn;
        const char *allowed;
        struct arg_spec args[MAX_ARGS];
        /* optional: bounds the argument types do not say (invalid_arguments too) */
        int (*check)(struct b4_tools *t, const struct jv *args, struct b4_error *err);
} tool_defs[] = {
        { "readFile",
          tool_read_file,
          "path, startLine, endLine",
          { { "path", ARG_NAME, ARG_REQUIRED | ARG_NONEMPTY },
            { "startLine", ARG_LINE, 0 },
            { "endLine", ARG_LINE, 0 } },
          NULL },
        { "writeFile",
          tool_write_file,
          "path, content",
          { { "path", ARG_NAME, ARG_REQUIRED | ARG_NONEMPTY },
            { "content", ARG_TEXT, ARG_REQUIRED } },
          NULL },
        { "editFile",
          tool_edit_file,
          "path, oldText, newText, replaceAll",
          { { "path", ARG_NAME, ARG_REQUIRED | ARG_NONEMPTY },
            { "oldText", ARG_TEXT, ARG_REQUIRED | ARG_NONEMPTY },
            { "newText", ARG_TEXT, ARG_REQUIRED },
            { "replaceAll", ARG_BOOL, 0 } },
          NULL },
        { "listDir", tool_list_dir, "path", { { "path", ARG_NAME, 0 } }, NULL },
        { "runBash",
          tool_run_bash,
          "command, cwd, env, timeoutMs, maxOutputBytes",
          { { "command", ARG_NAME, ARG_REQUIRED | ARG_NONEMPTY },
            { "cwd", ARG_NAME, ARG_NONEMPTY },
            { "env", ARG_ENV, 0 },
            { "timeoutMs", ARG_SIZE, 0 },
            { "maxOutputBytes", ARG_SIZE, 0 } },
          run_bash_check },
};

static const struct tool_def *find_tool(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(tool_defs); i++)
                if (strcmp(tool_defs[i].name, name) == 0)
                        return &tool_defs[i];
        return NULL;
}

static const struct arg_spec *find_arg(const struct tool_def *d, const char *name)
{
        for (size_t i = 0; i < MAX_ARGS && d->args[i].name; i++)
                if (strcmp(d->args[i].name, name) == 0)
                        return &d->args[i];
        return NULL;
}

static int check_value(const struct tool_def *d,
                       const struct arg_spec *a,
                       const struct jv *v,
                       struct b4_error *err)
{
        const char *what = NULL;

        switch (a->type) {
        case ARG_TEXT:
        case ARG_NAME:
                if (!jv_is_string(v))
                        what = a->flags & ARG_NONEMPTY ? "a non-empty string" : "a string";
                else if ((a->flags & ARG_NONEMPTY) && jv_string_length(v) == 0)
                        what = "a non-empty string";
                else if (a->type == ARG_NAME && strlen(jv_string(v)) != jv_string_length(v))
                        return b4_error_set(err, -EINVAL, "%s: argument '%s' must not contain NUL",
                                            d->name, a->name);
                break;
        case ARG_LINE:
                if (!jv_is_null(v) && (!jv_is_safe_integer(v) || jv_integer(v) < 1))
                        what = "an integer >= 1 or null";
                break;
        case ARG_BOOL:
                if (!jv_is_null(v) && !jv_is_bool(v))
                        what = "a boolean or null";
                break;
        case ARG_ENV:
                if (!jv_is_object(v))
                        what = "an object of strings";
                for (void *it = what ? NULL : jv_object_iter(v); it; it = jv_object_next(v, it))
                        if (!jv_is_string(jv_iter_value(it)))
                                return b4_error_set(err, -EINVAL,
                                                    "%s: argument '%s' must be an object of "
                                                    "strings ('%s' is %s)",
                                                    d->name, a->name, jv_iter_key(it),
                                                    jv_type_name(jv_iter_value(it)));
                break;
        case ARG_SIZE:
                if (!jv_is_safe_integer(v) || jv_integer(v) < 1)
                        what = "an integer >= 1";
                break;
        }
        if (what)
                return b4_error_set(err, -EINVAL, "%s: argument '%s' must be %s (got %s)", d->name,
                                    a->name, what, jv_type_name(v));
        return 0;
}

static int validate(const struct tool_def *d, const struct jv *args, struct b4_error *err)
{
        int r;

        if (!jv_is_object(args))
                return b4_error_set(err, -EINVAL, "%s: arguments must be a JSON object (got %s)",
                                    d->name, jv_type_name(args));
        for (void *it = jv_object_iter(args); it; it = jv_object_next(args, it)) {
                const struct arg_spec *a = find_arg(d, jv_iter_key(it));
                if (!a)
                        return b4_error_set(err, -EINVAL, "%s: unknown argument '%s' (allowed: %s)",
                                            d->name, jv_iter_key(it), d->allowed);
                r = check_value(d, a, jv_iter_value(it), err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < MAX_ARGS && d->args[i].name; i++)
                if ((d->args[i].flags & ARG_REQUIRED) && !jv_object_get(args, d->args[i].name))
                        return b4_error_set(err, -EINVAL, "%s: missing required argument '%s'",
                                            d->name, d->args[i].name);
        return 0;
}

/* ---- permission requests ---- */

/* The call whose gate raised t->ask, as a pending request (not yet parked). */
static int pending_from_call(struct b4_tools *t,
                             const char *tool,
                             const struct jv *args,
                             struct pending *ret)
{
        struct pending p = { 0 };

        if (pending_new_id(&p.id) < 0)
                return -ENOMEM;
        p.owner = b4_strdup(t->owner);
        p.tool = b4_strdup(tool);
        p.args = jv_ref((struct jv *)args);
        p.once_keys = strv_copy(t->once_keys);
        p.once_cands = strv_copy(t->once_cands);
        p.ask = t->ask;
        t->ask = (struct ask){ 0 };
        if (!p.owner || !p.tool || (t->once_keys && (!p.once_keys || !p.once_cands))) {
                pending_release(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

/* Park the call and answer with its permission request. */
static int ask_result(struct b4_tools *t,
                      const char *tool,
                      const struct jv *args,
                      const struct b4_error *e,
                      struct b4_tool_result *ret)
{
        struct pending p = { 0 };
        struct jv *req = NULL;
        int r;

        r = pending_from_call(t, tool, args, &p);
        if (r >= 0)
                r = result_request(&p, &req);
        if (r >= 0)
                r = result_error(B4_TOOL_PERMISSION_REQUIRED, e, req, ret);
        if (r >= 0)
                r = pending_park(t->pending, &p);
        else
                pending_release(&p);
        if (r < 0)
                b4_tool_result_clear(ret);
        return r;
}

/* ---- calls ---- */

int b4_tools_check(struct b4_tools *t,
                   const char *name,
                   const struct jv *args,
                   struct b4_tool_result *ret,
                   struct b4_error *err)
{
        const struct tool_def *d = name ? find_tool(name) : NULL;
        struct b4_error e = { 0 };
        int r;

        if (!t || !name || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing argument");
        *ret = (struct b4_tool_result){ .ok = true };
        if (!d)
                return 0; /* the call answers unknown_tool itself */
        r = validate(d, args, &e);
        if (r >= 0 && d->check)
                r = d->check(t, args, &e);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "%s: %s", name, strerror(-r));
        if (r < 0)
                return result_error(B4_TOOL_INVALID_ARGUMENTS, &e, NULL, ret);
        return 0;
}

static int run_call(struct b4_tools *t,
                    const char *name,
                    const struct jv *args,
                    struct b4_tool_result *ret)
{
        const struct tool_def *d = find_tool(name);
        struct b4_error e = { 0 };
        struct jv *value = NULL;
        int r;

        if (!d) {
                (void)b4_error_set(
                        &e, -EINVAL,
                        "unknown tool '%s' (known: readFile, writeFile, editFile, listDir, runBash)",
                        name);
                return result_error(B4_TOOL_UNKNOWN_TOOL, &e, NULL, ret);
        }
        r = validate(d, args, &e);
        if (r >= 0 && d->check)
                r = d->check(t, args, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return result_error(B4_TOOL_INVALID_ARGUMENTS, &e, NULL, ret);
        ask_clear(&t->ask);
        r = gate_tool(t, name, &e);
        if (r >= 0)
                r = d->fn(t, args, &value, &e);
        if (r >= 0)
                return result_ok(value, ret);
        if (r == -ENOMEM)
                return r; /* out of memory is not a tool failure */
        if (r == -EAGAIN && t->ask.set)
                return ask_result(t, name, args, &e, ret);
        if (e.error == 0)
                (void)b4_error_set(&e, r, "%s failed: %s", name, strerror(-r));
        return result_error(result_error_code(&e), &e, NULL, ret);
}

int b4_tools_call(struct b4_tools *t,
                  const char *name,
                  const struct jv *args,
                  struct b4_tool_result *ret,
                  struct b4_error *err)
{
        cleanup_jv struct jv *empty = NULL;
        int r;

        if (!t || !name || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing argument");
        *ret = (struct b4_tool_result){ 0 };
        if (!args) {
                args = empty = jv_object_new();
                if (!args)
                        return b4_error_set(err, -ENOMEM, "%s: %s", name, strerror(ENOMEM));
        }
        t->once_keys = t->once_cands = NULL;
        r = run_call(t, name, args, ret);
        if (r < 0)
                return b4_error_set(err, r, "%s: %s", name, strerror(-r));
        return 0;
}

static int answer_denied(const struct pending *p, struct b4_tool_result *ret)
{
        struct b4_error e = { 0 };

        if (p->ask.kind == ASK_TOOL)
                (void)b4_error_set_code(&e, -EACCES, B4_CODE_TOOL_DENIED,
                                        "Permission denied by user: tool %s", p->ask.candidate);
        else
                (void)b4_error_set_code(&e, -EACCES, B4_CODE_TOOL_DENIED,
                                        "Permission denied by user: %s", p->ask.candidate);
        return result_error(result_error_code(&e), &e, NULL, ret);
}

/* Re-run the parked call with its chain of answers plus this one. */
static int answer_allowed(struct b4_tools *t,
                          struct pending *p,
                          bool always,
                          struct b4_tool_result *ret,
                          struct b4_error *err)
{
        int r;

        if (always) {
                r = perm_view_add_allow(&t->view, p->ask.key, p->ask.pattern, err);
                if (r < 0)
                        return r;
        }
        r = strv_extend(&p->once_keys, p->ask.key);
        if (r >= 0)
                r = strv_extend(&p->once_cands, p->ask.candidate);
        if (r < 0)
                return r;
        t->once_keys = p->once_keys;
        t->once_cands = p->once_cands;
        r = run_call(t, p->tool, p->args, ret);
        t->once_keys = t->once_cands = NULL;
        return r;
}

int b4_tools_resume(struct b4_tools *t,
                    const char *interrupt_id,
                    const char *answer,
                    struct b4_tool_result *ret,
                    struct b4_error *err)
{
        struct pending p = { 0 };
        int r;

        if (!t || !interrupt_id || !answer || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing argument");
        *ret = (struct b4_tool_result){ 0 };
        if (strcmp(answer, "once") != 0 && strcmp(answer, "always") != 0 &&
            strcmp(answer, "deny") != 0)
                return b4_error_set(
                        err, -EINVAL,
                        "invalid permission answer '%s' (expected once, always or deny)", answer);
        if (pending_take(t->pending, t->owner, interrupt_id, &p) < 0)
                return b4_error_set(err, -ENOENT, "no pending permission request '%s'",
                                    interrupt_id);
        if (strcmp(answer, "deny") == 0)
                r = answer_denied(&p, ret);
        else
                r = answer_allowed(t, &p, strcmp(answer, "always") == 0, ret, err);
        pending_release(&p);
        if (r < 0 && err && err->error == 0)
                return b4_error_set(err, r, "resume: %s", strerror(-r));
        return r;
}

int b4_tools_last_request(struct b4_tools *t,
                          const char **ret_id,
                          const char **ret_kind,
                          const char **ret_subject,
                          const char **ret_pattern)
{
        const struct pending *p = t ? pending_newest(t->pending, t->owner) : NULL;

        if (!p)
                return -ENOENT;
        if (ret_id)
                *ret_id = p->id;
        if (ret_kind)
                *ret_kind = ask_kind_name(p->ask.kind);
        if (ret_subject)
                *ret_subject = p->ask.candidate;
        if (ret_pattern)
                *ret_pattern = p->ask.pattern;
        return 0;
}
