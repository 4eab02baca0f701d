/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed workspaces in b4box.json: `sandbox.workspace` (a static definition, reference §7.2,
 * or a resolver command) and `sandbox.thread` (a resolver command or declarative targets).
 * Only the shape is validated here; capture and resolver runs come with the runtime.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"

static const char *const resolver_keys[] = { "command", "timeoutMs", NULL };
static const char *const def_keys[] = { "source", "environmentLinks", "baseline", NULL };
static const char *const source_keys[] = { "directory", "include", "excludeDirectories", "files",
                                           NULL };
static const char *const file_keys[] = { "path", "file", "text", "executable", NULL };
static const char *const link_keys[] = { "path", "target", NULL };

void config_resolver_clear(struct b4_resolver *r)
{
        strv_free(r->argv);
        *r = (struct b4_resolver){ 0 };
}

static bool arg_ok(const struct jv *a)
{
        return jv_is_string(a) && strlen(jv_string(a)) == jv_string_length(a) &&
               jv_string_length(a) <= CFG_MAX_STRING;
}

void config_parse_argv(struct cfg *c, const struct jv *v, const char *path, char ***ret)
{
        char p[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) == 0 || jv_array_size(v) > CFG_MAX_ARGV) {
                cfg_refuse(c,
                           "b4box.json %s.command must be a non-empty array of at most %d "
                           "strings (got: %s).",
                           path, CFG_MAX_ARGV, cfg_got(c, v));
                return;
        }
        *ret = b4_calloc(1, sizeof(char *));
        if (!*ret) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (size_t i = 0; i < jv_array_size(v); i++) {
                const struct jv *a = jv_array_get(v, i);
                const char *s = jv_string(a);
                bool rel = i == 0 && arg_ok(a) && s[0] != '/' && strchr(s, '/');

                snprintf(p, sizeof(p), "%s.command[%zu]", path, i);
                if (!arg_ok(a))
                        cfg_refuse(c,
                                   "b4box.json %s must be a string of at most %d bytes without "
                                   "NUL (got: %s).",
                                   p, CFG_MAX_STRING, cfg_got(c, a));
                else if (i == 0 && !*s)
                        cfg_refuse(c, "b4box.json %s must name a program.", p);
                else if (strv_consume(ret, rel ? cfg_abs_path(c, s) : b4_strdup(s)) < 0)
                        cfg_fail(c, -ENOMEM);
        }
}

void config_parse_resolver(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           struct b4_resolver *r)
{
        const struct jv *x;
        char p[CFG_PATH_MAX];

        r->timeout_ms = B4_DEFAULT_RESOLVER_TIMEOUT_MS;
        cfg_known_keys(c, v, path, "a resolver option", resolver_keys);
        config_parse_argv(c, jv_object_get(v, "command"), path, &r->argv);
        if ((x = jv_object_get(v, "timeoutMs")))
                (void)cfg_uint_range(c, x, cfg_path(p, path, "timeoutMs"), 1000, 600000,
                                     &r->timeout_ms);
}

static int strcmpp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Refuse repeated entries of @l (sorted copy; the list keeps its order). */
static void check_unique(struct cfg *c, char **l, const char *path)
{
        size_t n = strv_length(l);
        cleanup_free char **s = NULL;

        if (n < 2)
                return;
        s = b4_memdup(l, n * sizeof(char *));
        if (!s) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        qsort_safe(s, n, sizeof(char *), strcmpp);
        for (size_t i = 1; i < n; i++)
                if (strcmp(s[i - 1], s[i]) == 0 && (i < 2 || strcmp(s[i - 2], s[i]) != 0))
                        cfg_refuse(c, "b4box.json %s lists \"%s\" more than once.", path, s[i]);
}

static bool portable(const struct jv *v)
{
        return jv_is_string(v) && cfg_is_portable_path(jv_string(v), jv_string_length(v));
}

static char **parse_path_list(struct cfg *c, const struct jv *v, const char *path)
{
        char p[CFG_PATH_MAX];
        char **l;

        if (!jv_is_array(v) || jv_array_size(v) > CFG_MAX_ENTRIES) {
                cfg_refuse(c,
                           "b4box.json %s must be an array of at most %d portable relative "
                           "paths (got: %s).",
                           path, CFG_MAX_ENTRIES, cfg_got(c, v));
                return NULL;
        }
        l = b4_calloc(1, sizeof(char *));
        for (size_t i = 0; l && i < jv_array_size(v); i++) {
                const struct jv *e = jv_array_get(v, i);

                if (!portable(e))
                        cfg_refuse(c, "b4box.json %s must be a portable relative path (got: %s).",
                                   cfg_index(p, path, i), cfg_got(c, e));
                else if (strv_extend(&l, jv_string(e)) < 0)
                        cfg_fail(c, -ENOMEM);
        }
        if (!l)
                cfg_fail(c, -ENOMEM);
        check_unique(c, l, path);
        return l;
}

static void parse_file(struct cfg *c,
                       const struct jv *v,
                       const char *p,
                       struct b4_workspace_file *f)
{
        const struct jv *file = jv_object_get(v, "file"), *text = jv_object_get(v, "text");
        const struct jv *x;
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be { path, file } or { path, text, executable? } "
                           "(got: %s).",
                           p, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, p, "a file option", file_keys);
        if (!portable(x = jv_object_get(v, "path")))
                cfg_refuse(c, "b4box.json %s.path must be a portable relative path (got: %s).", p,
                           cfg_got(c, x));
        else if (!(f->path = b4_strdup(jv_string(x))))
                cfg_fail(c, -ENOMEM);
        if (!file == !text)
                cfg_refuse(c, "b4box.json %s needs exactly one of \"file\" or \"text\".", p);
        if (file && !portable(file))
                cfg_refuse(c, "b4box.json %s.file must be a portable relative path (got: %s).", p,
                           cfg_got(c, file));
        else if (file && !(f->file = b4_strdup(jv_string(file))))
                cfg_fail(c, -ENOMEM);
        if (text && (!jv_is_string(text) || strlen(jv_string(text)) != jv_string_length(text)))
                cfg_refuse(c, "b4box.json %s.text must be a string without NUL (got: %s).", p,
                           cfg_got(c, text));
        else if (text && !(f->text = b4_strdup(jv_string(text))))
                cfg_fail(c, -ENOMEM);
        if ((x = jv_object_get(v, "executable")) && !text)
                cfg_refuse(c, "b4box.json %s.executable applies only with \"text\".", p);
        else if (x)
                (void)cfg_bool(c, x, cfg_path(q, p, "executable"), &f->executable);
}

static void parse_files(struct cfg *c,
                        const struct jv *v,
                        const char *path,
                        struct b4_workspace_def *d)
{
        char p[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) > CFG_MAX_ENTRIES) {
                cfg_refuse(c, "b4box.json %s must be an array of at most %d files (got: %s).", path,
                           CFG_MAX_ENTRIES, cfg_got(c, v));
                return;
        }
        d->files = b4_calloc(jv_array_size(v) + 1, sizeof(*d->files));
        if (!d->files) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        d->n_files = jv_array_size(v);
        for (size_t i = 0; i < d->n_files; i++)
                parse_file(c, jv_array_get(v, i), cfg_index(p, path, i), &d->files[i]);
}

static void parse_source(struct cfg *c,
                         const struct jv *v,
                         const char *path,
                         struct b4_workspace_def *d)
{
        const struct jv *x;
        char p[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be { directory, include, excludeDirectories?, "
                           "files? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a source option", source_keys);
        x = jv_object_get(v, "directory");
        if (!(jv_is_string(x) && strcmp(jv_string(x), ".") == 0) && !portable(x))
                cfg_refuse(c,
                           "b4box.json %s.directory must be \".\" or a portable relative path "
                           "(got: %s).",
                           path, cfg_got(c, x));
        else if (!(d->directory = b4_strdup(jv_string(x))))
                cfg_fail(c, -ENOMEM);
        d->include = parse_path_list(c, jv_object_get(v, "include"), cfg_path(p, path, "include"));
        if ((x = jv_object_get(v, "excludeDirectories")))
                d->exclude_directories =
                        parse_path_list(c, x, cfg_path(p, path, "excludeDirectories"));
        if ((x = jv_object_get(v, "files")))
                parse_files(c, x, cfg_path(p, path, "files"), d);
}

static bool absolute_portable(const struct jv *v)
{
        const char *s = jv_string(v);

        return s && s[0] == '/' && jv_string_length(v) <= CFG_MAX_PATH &&
               cfg_is_portable_path(s + 1, jv_string_length(v) - 1);
}

static void parse_link(struct cfg *c,
                       const struct jv *v,
                       const char *p,
                       struct b4_environment_link *l)
{
        const struct jv *x;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json %s must be { path, target } (got: %s).", p,
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, p, "a link option", link_keys);
        if (!portable(x = jv_object_get(v, "path")))
                cfg_refuse(c, "b4box.json %s.path must be a portable relative path (got: %s).", p,
                           cfg_got(c, x));
        else if (!(l->path = b4_strdup(jv_string(x))))
                cfg_fail(c, -ENOMEM);
        if (!absolute_portable(x = jv_object_get(v, "target")))
                cfg_refuse(c, "b4box.json %s.target must be an absolute portable path (got: %s).",
                           p, cfg_got(c, x));
        else if (!(l->target = b4_strdup(jv_string(x))))
                cfg_fail(c, -ENOMEM);
}

static void parse_links(struct cfg *c,
                        const struct jv *v,
                        const char *path,
                        struct b4_workspace_def *d)
{
        char p[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) > CFG_MAX_ENTRIES) {
                cfg_refuse(c, "b4box.json %s must be an array of at most %d links (got: %s).", path,
                           CFG_MAX_ENTRIES, cfg_got(c, v));
                return;
        }
        d->links = b4_calloc(jv_array_size(v) + 1, sizeof(*d->links));
        if (!d->links) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        d->n_links = jv_array_size(v);
        for (size_t i = 0; i < d->n_links; i++)
                parse_link(c, jv_array_get(v, i), cfg_index(p, path, i), &d->links[i]);
}

void config_parse_workspace_def(struct cfg *c,
                                const struct jv *v,
                                const char *path,
                                struct b4_workspace_def *d)
{
        const struct jv *x;
        char p[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be a workspace definition { source, "
                           "environmentLinks?, baseline? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a workspace definition option", def_keys);
        parse_source(c, jv_object_get(v, "source"), cfg_path(p, path, "source"), d);
        if ((x = jv_object_get(v, "environmentLinks")))
                parse_links(c, x, cfg_path(p, path, "environmentLinks"), d);
        if (!(x = jv_object_get(v, "baseline")))
                return;
        if (jv_is_string(x) && strcmp(jv_string(x), "git") == 0 && jv_string_length(x) == 3)
                d->baseline_git = true;
        else
                cfg_refuse(c, "b4box.json %s.baseline must be \"git\" (got: %s).", path,
                           cfg_got(c, x));
}

void config_workspace_def_clear(struct b4_workspace_def *d)
{
        free(d->directory);
        strv_free(d->include);
        strv_free(d->exclude_directories);
        for (size_t i = 0; d->files && i < d->n_files; i++) {
                free(d->files[i].path);
                free(d->files[i].file);
                free(d->files[i].text);
        }
        free(d->files);
        for (size_t i = 0; d->links && i < d->n_links; i++) {
                free(d->links[i].path);
                free(d->links[i].target);
        }
        free(d->links);
        *d = (struct b4_workspace_def){ 0 };
}

void config_parse_workspace(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s)
{
        bool cmd = jv_object_get(v, "command") != NULL;
        bool src = jv_object_get(v, "source") != NULL;

        if (cmd && !src) {
                s->workspace_kind = B4_WORKSPACE_RESOLVER;
                config_parse_resolver(c, v, "sandbox.workspace", &s->workspace_resolver);
        } else if (src && !cmd) {
                s->workspace_kind = B4_WORKSPACE_STATIC;
                config_parse_workspace_def(c, v, "sandbox.workspace", &s->workspace);
        } else {
                cfg_refuse(c, "b4box.json sandbox.workspace must be a workspace definition or a "
                              "resolver command.");
        }
}
