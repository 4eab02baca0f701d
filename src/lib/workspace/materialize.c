/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Materialisation: write a captured workspace into a sandbox's (empty) workspace through the
 * provider-neutral struct b4_fs, so every provider gets the same result (reference §3.7's
 * prepare program, in C): files with mode 0755 when executable (0644 otherwise, the write
 * default), environment links as symlinks, and a git baseline committed by git itself inside
 * the sandbox with a scrubbed environment, so the commit id depends on the content only.
 *
 * A filesystem without chmod or symlink (-EOPNOTSUPP) gets them done by the sandbox itself:
 * the modes and links are deferred and made by `chmod`/`mkdir -p`/`ln -s` commands run in the
 * workspace after every file is written (modes first, links last). Paths and targets are
 * portable (no quote, no `$`), so single quotes are exact. When that cannot run either (no
 * such commands: exit 127), the filesystem's own refusal is reported.
 */

#include "workspace/materialize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/bundle.h"
#include "b4box/cancel.h"
#include "b4box/provider.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "workspace.h"

#define GIT_TIMEOUT_MS   120000u
#define FIXUP_CHUNK_MAX  (64u * 1024u) /* one sh -c argument stays far below MAX_ARG_STRLEN */
#define FIXUP_TIMEOUT_MS 120000u

/* Modes and links the filesystem could not make, for the sandbox to make. */
struct deferred {
        char **modes;          /* relative paths to chmod 0755 */
        char **links;          /* "target\npath" pairs */
        struct b4_error first; /* the filesystem's first refusal */
};

static int defer(struct deferred *d, char ***list, char *item, const struct b4_error *e)
{
        if (!item)
                return -ENOMEM;
        if (!d->modes && !d->links && e)
                d->first = *e;
        return strv_consume(list, item);
}

static const struct b4_env_var git_env[] = {
        { (char *)"PATH", (char *)"/usr/local/bin:/usr/bin:/bin" },
        { (char *)"HOME", (char *)"/tmp" },
        { (char *)"LC_ALL", (char *)"C" },
        { (char *)"GIT_CONFIG_NOSYSTEM", (char *)"1" },
        { (char *)"GIT_CONFIG_GLOBAL", (char *)"/dev/null" },
        { (char *)"GIT_CONFIG_SYSTEM", (char *)"/dev/null" },
        { (char *)"GIT_AUTHOR_NAME", (char *)"Workspace Baseline" },
        { (char *)"GIT_AUTHOR_EMAIL", (char *)"workspace@localhost" },
        { (char *)"GIT_AUTHOR_DATE", (char *)"2000-01-01T00:00:00Z" },
        { (char *)"GIT_COMMITTER_NAME", (char *)"Workspace Baseline" },
        { (char *)"GIT_COMMITTER_EMAIL", (char *)"workspace@localhost" },
        { (char *)"GIT_COMMITTER_DATE", (char *)"2000-01-01T00:00:00Z" },
};

static const char git_script[] =
        "set -e; "
        "git -c core.hooksPath=/dev/null init -q --template= --initial-branch=main; "
        "git -c core.hooksPath=/dev/null add --force -A -- .; "
        "git -c core.hooksPath=/dev/null -c commit.gpgsign=false commit -q --allow-empty "
        "--no-verify -m 'Initial workspace'; "
        "test -z \"$(git status --porcelain)\"; "
        "git rev-parse HEAD";

static int join(const char *root, const char *rel, char **ret)
{
        return b4_asprintf(ret, "%s/%s", root, rel) < 0 ? -ENOMEM : 0;
}

static int require_empty(struct b4_fs *fs, const char *root, struct b4_error *err)
{
        cleanup_strv char **names = NULL;
        int r = b4_fs_list_dir(fs, root, &names, err);

        if (r == -ENOENT)
                return b4_fs_mkdir_p(fs, root, err);
        if (r < 0)
                return r;
        if (names && names[0])
                return b4_error_set(err, -EEXIST,
                                    "Workspace %s is not empty: a managed workspace is made only "
                                    "once",
                                    root);
        return 0;
}

static int write_files(struct b4_fs *fs,
                       const char *root,
                       const struct b4_bundle *b,
                       struct b4_cancel *cancel,
                       struct deferred *d,
                       struct b4_error *err)
{
        for (size_t i = 0; i < b->n_files; i++) {
                const struct b4_bundle_file *f = &b->files[i];
                cleanup_free char *path = NULL, *data = NULL;
                size_t len = 0;
                int r;

                if (b4_cancel_is_set(cancel))
                        return b4_error_set(err, -ECANCELED, "materialisation cancelled");
                if (join(root, f->path, &path) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                r = b4_bundle_file_decode(f, &data, &len, err);
                if (r >= 0)
                        r = b4_fs_write_file(fs, path, data, len, err);
                if (r >= 0 && f->executable)
                        r = b4_fs_chmod(fs, path, 0755, err);
                if (r == -EOPNOTSUPP && f->executable) {
                        b4_error_wrap(err, r, "materialise '%s'", f->path);
                        r = defer(d, &d->modes, b4_strdup(f->path), err);
                }
                if (r < 0)
                        return b4_error_wrap(err, r, "materialise '%s'", f->path);
        }
        return 0;
}

static int make_links(struct b4_fs *fs,
                      const char *root,
                      const struct b4_captured_workspace *ws,
                      struct deferred *d,
                      struct b4_error *err)
{
        for (size_t i = 0; i < ws->n_links; i++) {
                cleanup_free char *path = NULL;
                int r;

                if (join(root, ws->links[i].path, &path) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                r = b4_fs_symlink(fs, ws->links[i].target, path, err);
                if (r == -EOPNOTSUPP) {
                        char *pair = NULL;

                        b4_error_wrap(err, r, "environment link '%s'", ws->links[i].path);
                        if (b4_asprintf(&pair, "%s\n%s", ws->links[i].target, ws->links[i].path) <
                            0)
                                pair = NULL;
                        r = defer(d, &d->links, pair, err);
                        continue;
                }
                if (r < 0)
                        return b4_error_wrap(err, r, "environment link '%s'", ws->links[i].path);
        }
        return 0;
}

/* The commit id on the last line of @out: 40 or 64 lowercase hex. */
static int parse_commit(const char *out, size_t len, char **ret)
{
        size_t end = len, start;

        while (end > 0 && (out[end - 1] == '\n' || out[end - 1] == '\r'))
                end--;
        start = end;
        while (start > 0 && out[start - 1] != '\n')
                start--;
        if ((end - start != 40 && end - start != 64) ||
            strspn(out + start, "0123456789abcdef") < end - start)
                return -EPROTO;
        *ret = b4_strndup(out + start, end - start);
        return *ret ? 0 : -ENOMEM;
}

static int git_baseline(struct b4_sandbox *sb,
                        const char *root,
                        struct b4_cancel *cancel,
                        char **ret_commit,
                        struct b4_error *err)
{
        struct b4_exec_req req = {
                .command = git_script,
                .cwd = root,
                .env = git_env,
                .n_env = ELEMENTSOF(git_env),
                .timeout_ms = GIT_TIMEOUT_MS,
                .cancel = cancel,
        };
        struct b4_exec_result res = { 0 };
        int r;

        r = b4_sandbox_exec(sb, &req, &res, err);
        if (r < 0)
                return b4_error_wrap(err, r, "git baseline");
        if (res.exit_code != 0)
                r = b4_error_set(err, -EOPNOTSUPP,
                                 "Workspace preparation requires compatible Git and link "
                                 "targets: %.300s",
                                 res.errout_len ? res.errout : res.out);
        else if (parse_commit(res.out, res.out_len, ret_commit) < 0)
                r = b4_error_set(err, -EPROTO, "git baseline printed no commit id");
        b4_exec_result_clear(&res);
        return r;
}

/* Move @sb's text to @cmds when it is over the chunk size (or @all and not empty). */
static int flush(struct strbuf *sb, char ***cmds, bool all)
{
        char *c = NULL;
        int r;

        if (sb->len == 0 || (!all && sb->len <= FIXUP_CHUNK_MAX))
                return 0;
        r = strbuf_detach(sb, &c, NULL);
        strbuf_init(sb, FIXUP_CHUNK_MAX + 4096);
        return r < 0 ? r : strv_consume(cmds, c);
}

/* The commands for the deferred work, in chunks of about FIXUP_CHUNK_MAX bytes. */
static int fixup_commands(const struct deferred *d, char ***ret)
{
        cleanup_strv char **cmds = NULL;
        struct strbuf sb;
        int r = 0;

        strbuf_init(&sb, FIXUP_CHUNK_MAX + 4096);
        STRV_FOREACH (p, d->modes) {
                r = r < 0 ? r : strbuf_addf(&sb, "chmod 0755 -- '%s'\n", *p);
                r = r < 0 ? r : flush(&sb, &cmds, false);
        }
        STRV_FOREACH (l, d->links) {
                const char *nl = strchr(*l, '\n'), *slash = strrchr(nl + 1, '/');

                if (r >= 0 && slash)
                        r = strbuf_addf(&sb, "mkdir -p -- '%.*s'\n", (int)(slash - nl - 1), nl + 1);
                if (r >= 0)
                        r = strbuf_addf(&sb, "ln -s -- '%.*s' '%s'\n", (int)(nl - *l), *l, nl + 1);
                r = r < 0 ? r : flush(&sb, &cmds, false);
        }
        r = r < 0 ? r : flush(&sb, &cmds, true);
        strbuf_release(&sb);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(cmds);
        return 0;
}

static int run_fixup(struct b4_sandbox *sb,
                     const char *root,
                     const char *script,
                     const struct deferred *d,
                     struct b4_cancel *cancel,
                     struct b4_error *err)
{
        cleanup_free char *cmd = NULL;
        struct b4_exec_req req = { .cwd = root,
                                   .env = git_env,
                                   .n_env = 3, /* PATH, HOME, LC_ALL */
                                   .timeout_ms = FIXUP_TIMEOUT_MS,
                                   .cancel = cancel };
        struct b4_exec_result res = { 0 };
        int r;

        if (b4_asprintf(&cmd, "set -e\n%s", script) < 0)
                return -ENOMEM;
        req.command = cmd;
        r = b4_sandbox_exec(sb, &req, &res, NULL);
        if (r < 0 || res.exit_code == 127) /* nothing to run them with: the fs's refusal */
                r = b4_error_set(err, d->first.error ? d->first.error : -EOPNOTSUPP, "%s",
                                 d->first.msg);
        else if (res.exit_code != 0)
                r = b4_error_set(err, -EIO, "Workspace modes and links could not be made: %.300s",
                                 res.errout_len ? res.errout : res.out);
        b4_exec_result_clear(&res);
        return r;
}

static int make_deferred(struct b4_sandbox *sb,
                         const char *root,
                         const struct deferred *d,
                         struct b4_cancel *cancel,
                         struct b4_error *err)
{
        cleanup_strv char **cmds = NULL;
        int r;

        if (!d->modes && !d->links)
                return 0;
        r = fixup_commands(d, &cmds);
        STRV_FOREACH (c, cmds)
                if (r >= 0)
                        r = run_fixup(sb, root, *c, d, cancel, err);
        return r;
}

int b4_workspace_materialize(struct b4_sandbox *sb,
                             const struct b4_captured_workspace *ws,
                             struct b4_cancel *cancel,
                             char **ret_commit,
                             struct b4_error *err)
{
        struct b4_fs *fs;
        const char *root;
        cleanup_free char *commit = NULL;
        struct deferred d = { 0 };
        int r;

        if (!sb || !ws || !ws->source)
                return b4_error_set(err, -EINVAL, "invalid materialisation request");
        fs = b4_sandbox_fs(sb);
        root = sb->workspace_root ? sb->workspace_root : B4_WORKSPACE_ROOT;
        r = require_empty(fs, root, err);
        if (r >= 0)
                r = write_files(fs, root, ws->source, cancel, &d, err);
        if (r >= 0)
                r = make_links(fs, root, ws, &d, err);
        if (r >= 0)
                r = make_deferred(sb, root, &d, cancel, err);
        strv_free(d.modes);
        strv_free(d.links);
        if (r >= 0 && ws->baseline_git)
                r = git_baseline(sb, root, cancel, &commit, err);
        if (r < 0)
                return r;
        if (ret_commit)
                *ret_commit = TAKE_PTR(commit);
        return 0;
}
