/* SPDX-License-Identifier: Apache-2.0 */
/* The permission gates (§10.3) and the path jail (§10.2) a tool passes before it acts. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

void ask_clear(struct ask *a)
{
        free(a->key);
        free(a->candidate);
        free(a->pattern);
        *a = (struct ask){ 0 };
}

static bool answered_once(const struct b4_tools *t, const char *key, const char *candidate)
{
        for (size_t i = 0; t->once_keys && t->once_keys[i]; i++)
                if (strcmp(t->once_keys[i], key) == 0 && strcmp(t->once_cands[i], candidate) == 0)
                        return true;
        return false;
}

static int raise_ask(struct b4_tools *t,
                     enum ask_kind kind,
                     const char *key,
                     const char *candidate,
                     const char *shown,
                     struct b4_error *err)
{
        int r;

        ask_clear(&t->ask);
        t->ask.kind = kind;
        t->ask.key = b4_strdup(key);
        t->ask.candidate = b4_strdup(candidate);
        if (kind == ASK_COMMAND)
                r = b4_permission_suggest_command(candidate, &t->ask.pattern);
        else if (kind == ASK_PATH)
                r = b4_permission_suggest_path(candidate, &t->ask.pattern);
        else
                r = (t->ask.pattern = b4_strdup(candidate)) ? 0 : -ENOMEM;
        if (r < 0 || !t->ask.key || !t->ask.candidate) {
                ask_clear(&t->ask);
                return -ENOMEM;
        }
        t->ask.set = true;
        return b4_error_set(err, -EAGAIN, "permission required: %s", shown);
}

/*
 * The decision ladder shared by every gate: allow, deny, fail closed, or ask.
 * @shown is the <x> of the denial texts.
 */
static int gate(struct b4_tools *t,
                enum ask_kind kind,
                const char *key,
                const char *candidate,
                const char *shown,
                struct b4_error *err)
{
        enum b4_permission_decision d;
        int r;

        if (perm_view_is_open(&t->view) || answered_once(t, key, candidate))
                return 0;
        r = perm_view_match(&t->view, key, candidate, &d, err);
        if (r < 0)
                return r;
        if (d == B4_PERMISSION_ALLOW)
                return 0;
        if (d == B4_PERMISSION_DENY)
                return b4_error_set_code(err, -EACCES, B4_CODE_TOOL_DENIED,
                                         "Permission denied by user: %s", shown);
        if (perm_view_mode(&t->view) == B4_PERMISSION_NON_INTERACTIVE)
                return b4_error_set_code(err, -EACCES, B4_CODE_TOOL_DENIED,
                                         "Permission denied (fail-closed): %s", shown);
        return raise_ask(t, kind, key, candidate, shown, err);
}

int gate_command(struct b4_tools *t, const char *command, struct b4_error *err)
{
        return gate(t, ASK_COMMAND, "bash", command, command, err);
}

int gate_tool(struct b4_tools *t, const char *name, struct b4_error *err)
{
        cleanup_free char *shown = NULL;

        if (!strv_contains(t->approve, name))
                return 0;
        if (b4_asprintf(&shown, "tool %s", name) < 0)
                return -ENOMEM;
        return gate(t, ASK_TOOL, "tool", name, shown, err);
}

void jail_target_clear(struct jail_target *jt)
{
        free(jt->abs);
        free(jt->path);
        *jt = (struct jail_target){ 0 };
}

/* The fs realpath of @path. Fails closed (audit H2): a path the backend cannot canonicalise
 * (a link loop, a resolution past PATH_MAX, ...) is refused, never judged as written. */
static int canonical(
        struct b4_tools *t, const char *key, const char *path, char **ret, struct b4_error *err)
{
        struct b4_error inner = { 0 };
        int r = b4_fs_realpath(t->fs, path, ret, &inner);

        if (r == -ENOMEM || r >= 0)
                return r;
        return b4_error_set(err, r, "%s %s: cannot resolve the path: %s", key, path, strerror(-r));
}

/* Where a write to @abs goes: a symlink leaf is replaced, never written through (the fs
 * contract), so only the parent is canonicalised and the leaf kept. */
static int canonical_leaf(
        struct b4_tools *t, const char *key, const char *abs, char **ret, struct b4_error *err)
{
        cleanup_free char *parent = NULL, *real = NULL;
        const char *slash = strrchr(abs, '/');
        int r;

        if (!slash || slash == abs)
                return canonical(t, key, abs, ret, err);
        parent = b4_strndup(abs, (size_t)(slash - abs));
        if (!parent)
                return -ENOMEM;
        r = canonical(t, key, parent, &real, err);
        if (r < 0)
                return r;
        return b4_asprintf(ret, "%s%s", strcmp(real, "/") == 0 ? "" : real, slash);
}

/* The canonical path of @abs (for writeFile: of the place the write goes), gated when outside
 * the workspace; with the flags that make the backend use exactly it (audit H3: no second,
 * different resolution). */
static int gate_canonical(struct b4_tools *t,
                          const char *key,
                          const char *abs,
                          bool keep_leaf,
                          char **ret_real,
                          unsigned *ret_flags,
                          struct b4_error *err)
{
        cleanup_free char *real = NULL;
        unsigned flags = B4_FS_NO_SYMLINKS;
        int r;

        if (!t->real_root) {
                r = canonical(t, key, t->root, &t->real_root, err);
                if (r < 0)
                        return r;
        }
        if (keep_leaf)
                r = canonical_leaf(t, key, abs, &real, err);
        else
                r = canonical(t, key, abs, &real, err);
        if (r < 0)
                return r;
        if (jail_is_inside(t->real_root, real)) {
                flags |= B4_FS_BENEATH;
        } else {
                r = gate(t, ASK_PATH, key, real, real, err);
                if (r < 0)
                        return r;
        }
        *ret_real = TAKE_PTR(real);
        *ret_flags = flags;
        return 0;
}

int gate_path(struct b4_tools *t,
              const char *key,
              const char *path,
              struct jail_target *ret,
              struct b4_error *err)
{
        return gate_path_leaf(t, key, path, strcmp(key, "writeFile") == 0, ret, err);
}

int gate_path_leaf(struct b4_tools *t,
                   const char *key,
                   const char *path,
                   bool keep_leaf,
                   struct jail_target *ret,
                   struct b4_error *err)
{
        struct jail_target jt = { 0 };
        int r;

        r = jail_resolve(t->root, path, &jt.abs);
        if (r < 0)
                return b4_error_set(err, r, "cannot resolve '%s'", path);
        jt.tool_output = jail_is_tool_output(t->root, jt.abs);
        if (jt.tool_output || perm_view_is_open(&t->view)) {
                jt.flags = jt.tool_output ? B4_FS_BENEATH | B4_FS_NO_SYMLINKS : 0;
                jt.path = b4_strdup(jt.abs);
                r = jt.path ? 0 : -ENOMEM;
        } else {
                r = gate_canonical(t, key, jt.abs, keep_leaf, &jt.path, &jt.flags, err);
        }
        if (r < 0) {
                jail_target_clear(&jt);
                return r;
        }
        *ret = jt;
        return 0;
}
