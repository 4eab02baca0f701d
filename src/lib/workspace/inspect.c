/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspectWorkspace (reference §5.1). One pass in four steps:
 *   1. validate the options (invalid_options: nothing is read);
 *   2. walk the root's segments with lstat, never following a link (root_missing);
 *   3. one b4_fs_walk() of the start directory, sorted depth-first here whatever order the
 *      backend used, then a planning pass in that order that applies every structural rule
 *      (kinds, executables, excluded roots, expected links, byte limits) to the walked
 *      stats, stopping at the first refusal;
 *   4. one b4_fs_read_files() of the planned files, each bounded by its walked size, then
 *      the content rules (binary, UTF-8) in the same order.
 * Refusals are reported in the order the reference's depth-first loop would meet them: the
 * content of files before the first structural refusal is checked before that refusal.
 * A file whose read does not match its walked size is a `changed` refusal.
 */

#include "b4box/inspect.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "inspect-internal.h"
#include "inspect-thread.h"

void b4_inspect_options_init(struct b4_inspect_options *o)
{
        *o = (struct b4_inspect_options){
                .max_entries = B4_INSPECT_DEFAULT_MAX_ENTRIES,
                .max_file_bytes = B4_INSPECT_DEFAULT_MAX_FILE_BYTES,
                .max_total_bytes = B4_INSPECT_DEFAULT_MAX_TOTAL_BYTES,
        };
}

void b4_inspection_clear(struct b4_inspection *insp)
{
        for (size_t i = 0; insp->files && i < insp->n_files; i++) {
                free(insp->files[i].path);
                free(insp->files[i].text);
        }
        for (size_t i = 0; insp->links && i < insp->n_links; i++) {
                free(insp->links[i].name);
                free(insp->links[i].target);
        }
        for (size_t i = 0; insp->skipped && i < insp->n_skipped; i++)
                free(insp->skipped[i].path);
        free(insp->files);
        free(insp->links);
        free(insp->skipped);
        *insp = (struct b4_inspection){ 0 };
}

const char *b4_skip_reason_name(enum b4_skip_reason r)
{
        switch (r) {
        case B4_SKIP_EXECUTABLE:
                return "executable";
        case B4_SKIP_BINARY:
                return "binary";
        case B4_SKIP_NOT_UTF8:
                return "not_utf8";
        case B4_SKIP_SYMLINK:
                return "symlink";
        case B4_SKIP_OTHER:
                break;
        }
        return "other";
}

const char *b4_inspect_code_name(enum b4_inspect_code code)
{
        switch (code) {
        case B4_INSPECT_INVALID_OPTIONS:
                return "invalid_options";
        case B4_INSPECT_ROOT_MISSING:
                return "root_missing";
        case B4_INSPECT_REFUSED:
                return "refused";
        case B4_INSPECT_CHANGED:
                return "changed";
        case B4_INSPECT_NONE:
                break;
        }
        return NULL;
}

bool inspect_leaf_is_valid(const char *s, size_t len)
{
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 32 || c == 127 || c == '/' || c == '\\')
                        return false;
        }
        return true;
}

bool b4_inspect_root_is_canonical(const char *root)
{
        size_t len, n;

        if (!root)
                return false;
        len = strlen(root);
        n = utf8_js_length(root);
        if (n < 1 || n > B4_INSPECT_ROOT_MAX_CHARS || !utf8_is_valid(root, len))
                return false;
        for (const char *seg = root;;) {
                const char *end = strchrnul(seg, '/');
                if (!inspect_leaf_is_valid(seg, (size_t)(end - seg)))
                        return false;
                if (!*end)
                        return true;
                seg = end + 1;
        }
}

/* ---- the pass ---- */

struct insp {
        struct b4_fs *fs;
        const struct b4_inspect_options *o;
        struct b4_inspect_failure *fail;
        struct b4_error *err;
        char *start; /* owned: absolute start directory */
        struct b4_walk_entry *w;
        size_t nw;
        size_t *plan; /* indexes into w of the files to read, in order */
        size_t n_plan;
        struct b4_inspection *res;
        char **prune;      /* owned: excluded roots plus single-segment excluded paths */
        struct skip *skip; /* skip mode: what was left out, in plan order */
        size_t n_skip;
        /* the first structural refusal, reported after the content of earlier files */
        enum b4_inspect_code pending;
        char pending_msg[sizeof(((struct b4_error *)0)->msg)];
};

/* An entry left out in skip mode: its index in the walk and why. */
struct skip {
        size_t idx;
        enum b4_skip_reason reason;
};

static int refuse(struct insp *in, enum b4_inspect_code code, const char *fmt, ...) B4_PRINTF(3, 4);

static int refuse(struct insp *in, enum b4_inspect_code code, const char *fmt, ...)
{
        char msg[sizeof(((struct b4_error *)0)->msg)];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        in->fail->code = code;
        return b4_error_set(in->err, -EPROTO, "%s", msg);
}

static int cancelled(struct insp *in)
{
        if (!b4_cancel_is_set(in->o->cancel))
                return 0;
        return b4_error_set(in->err, -ECANCELED, "Workspace inspection cancelled");
}

/* JSON.stringify of @s into @buf (for messages); "<invalid>" when it cannot be quoted. */
static const char *quoted(const char *s, char *buf, size_t size)
{
        cleanup_free char *q = NULL;

        if (inspect_quote(s, &q) < 0)
                (void)snprintf(buf, size, "<invalid>");
        else
                (void)snprintf(buf, size, "%s", q);
        return buf;
}

static int validate_limits(struct insp *in)
{
        const struct b4_inspect_options *o = in->o;

        if (o->max_entries > B4_INSPECT_MAX_SAFE_INTEGER)
                return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid entries limit");
        if (o->max_file_bytes > B4_INSPECT_MAX_SAFE_INTEGER)
                return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid file bytes limit");
        if (o->max_total_bytes > B4_INSPECT_MAX_SAFE_INTEGER)
                return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid total bytes limit");
        return 0;
}

static int validate_names(struct insp *in)
{
        const struct b4_inspect_options *o = in->o;
        char q[1100];

        STRV_FOREACH (n, o->exclude_root)
                if (!inspect_leaf_is_valid(*n, strlen(*n)))
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS,
                                      "Invalid excluded root directory: %s",
                                      quoted(*n, q, sizeof(q)));
        for (size_t i = 0; i < o->n_expected; i++) {
                const struct b4_root_symlink *l = &o->expected[i];
                if (!l->name || !inspect_leaf_is_valid(l->name, strlen(l->name)))
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS,
                                      "Invalid expected root symlink: %s",
                                      quoted(l->name ? l->name : "", q, sizeof(q)));
                if (strv_contains(o->exclude_root, l->name))
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: %s",
                                      l->name);
                for (size_t k = 0; k < i; k++)
                        if (strcmp(o->expected[k].name, l->name) == 0)
                                return refuse(in, B4_INSPECT_INVALID_OPTIONS,
                                              "Conflicting root policy: %s", l->name);
                if (!l->target || !*l->target)
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid symlink target: %s",
                                      l->name);
                if (strv_contains(o->exclude_paths, l->name))
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: %s",
                                      l->name);
        }
        STRV_FOREACH (x, o->exclude_paths)
                if (!b4_inspect_root_is_canonical(*x))
                        return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid excluded path: %s",
                                      quoted(*x, q, sizeof(q)));
        if (o->unsupported != B4_INSPECT_UNSUPPORTED_REFUSE &&
            o->unsupported != B4_INSPECT_UNSUPPORTED_SKIP)
                return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid unsupported policy");
        return 0;
}

static bool workspace_root_is_canonical(const char *root)
{
        return root && root[0] == '/' && (!root[1] || b4_inspect_root_is_canonical(root + 1));
}

static int validate_options(struct insp *in)
{
        const struct b4_inspect_options *o = in->o;
        char q[1100];
        int r;

        r = validate_limits(in);
        if (r >= 0)
                r = validate_names(in);
        if (r < 0)
                return r;
        if (o->root && !b4_inspect_root_is_canonical(o->root))
                return refuse(in, B4_INSPECT_INVALID_OPTIONS,
                              "Invalid workspace inspection root: %s",
                              quoted(o->root, q, sizeof(q)));
        if (!b4_fs_can_read_tree(in->fs))
                return refuse(in, B4_INSPECT_INVALID_OPTIONS,
                              "Workspace source must provide lstat, listDir and readBinaryFile");
        if (!workspace_root_is_canonical(in->fs->root))
                return refuse(in, B4_INSPECT_INVALID_OPTIONS, "Invalid workspace root: %s",
                              quoted(in->fs->root ? in->fs->root : "", q, sizeof(q)));
        return 0;
}

/* ---- the root ---- */

int inspect_join(const char *base, const char *rel, char **ret)
{
        if (!*rel)
                return (*ret = b4_strdup(base)) ? 0 : -ENOMEM;
        return b4_asprintf(ret, "%s/%s", strcmp(base, "/") == 0 ? "" : base, rel) < 0 ? -ENOMEM : 0;
}

/* lstat of the root segment @walked failed with @r: absent, or the backend's error. */
static int segment_failed(struct insp *in, const char *walked, const char *abs, int r)
{
        struct b4_error saved = in->err ? *in->err : (struct b4_error){ 0 };
        cleanup_free char *parent = b4_strdup(abs);
        cleanup_strv char **names = NULL;
        char *slash;

        if (!parent)
                return -ENOMEM;
        slash = strrchr(parent, '/');
        slash[slash == parent ? 1 : 0] = '\0';
        if (b4_fs_list_dir(in->fs, parent, &names, NULL) < 0 ||
            strv_contains(names, strrchr(abs, '/') + 1)) {
                if (in->err)
                        *in->err = saved;
                return r;
        }
        in->fail->kind = B4_ROOT_ABSENT;
        return refuse(in, B4_INSPECT_ROOT_MISSING,
                      "Workspace root \"%s\" is missing (\"%s\" does not exist)", in->o->root,
                      walked);
}

static int check_root(struct insp *in)
{
        const char *root = in->o->root;
        cleanup_free char *walked = NULL;
        int r;

        if (!root)
                return inspect_join(in->fs->root, "", &in->start);
        walked = b4_calloc(1, strlen(root) + 1);
        if (!walked)
                return -ENOMEM;
        for (const char *seg = root; *seg;) {
                const char *end = strchrnul(seg, '/');
                cleanup_free char *abs = NULL;
                struct b4_stat st = { 0 };

                memcpy(walked, root, (size_t)(end - root));
                if (inspect_join(in->fs->root, walked, &abs) < 0)
                        return -ENOMEM;
                r = cancelled(in);
                if (r >= 0)
                        r = b4_fs_lstat(in->fs, abs, &st, in->err);
                if (r < 0 && r != -ECANCELED)
                        r = segment_failed(in, walked, abs, r);
                if (r >= 0)
                        r = cancelled(in);
                bool dir = st.kind == B4_FILE_DIRECTORY;
                b4_stat_clear(&st);
                if (r < 0)
                        return r;
                if (!dir) {
                        in->fail->kind = B4_ROOT_NOT_DIRECTORY;
                        return refuse(in, B4_INSPECT_ROOT_MISSING,
                                      "Workspace root \"%s\" is not a directory (\"%s\" is not "
                                      "a directory)",
                                      root, walked);
                }
                seg = *end ? end + 1 : end;
        }
        return inspect_join(in->fs->root, root, &in->start);
}

static int check_start(struct insp *in)
{
        struct b4_stat st = { 0 };
        int r;

        r = cancelled(in);
        if (r >= 0)
                r = b4_fs_lstat(in->fs, in->start, &st, in->err);
        if (r >= 0)
                r = cancelled(in);
        bool dir = st.kind == B4_FILE_DIRECTORY;
        b4_stat_clear(&st);
        if (r < 0)
                return r;
        if (!dir)
                return refuse(in, B4_INSPECT_REFUSED, "Workspace root must be a directory");
        return 0;
}

/* ---- the walk ---- */

/* Depth-first order with bytewise-sorted children: '/' sorts before every name byte. */
static int path_cmp(const void *a, const void *b)
{
        const unsigned char *x = (const unsigned char *)((const struct b4_walk_entry *)a)->path;
        const unsigned char *y = (const unsigned char *)((const struct b4_walk_entry *)b)->path;

        while (*x && *x == *y) {
                x++;
                y++;
        }
        unsigned cx = *x == '/' ? 1 : *x == 0 ? 0 : (unsigned)*x + 1;
        unsigned cy = *y == '/' ? 1 : *y == 0 ? 0 : (unsigned)*y + 1;
        return cx < cy ? -1 : cx > cy ? 1 : 0;
}

/* The walk's prune list: the excluded roots, and the excluded paths of one segment. */
static int prune_list(struct insp *in)
{
        int r = 0;

        STRV_FOREACH (n, in->o->exclude_root)
                if (r >= 0)
                        r = strv_extend(&in->prune, *n);
        STRV_FOREACH (x, in->o->exclude_paths)
                if (r >= 0 && !strchr(*x, '/') && !strv_contains(in->prune, *x))
                        r = strv_extend(&in->prune, *x);
        return r;
}

static int walk(struct insp *in)
{
        int r = cancelled(in);

        if (r >= 0)
                r = prune_list(in);
        if (r >= 0)
                r = b4_fs_walk(in->fs, in->start, (size_t)in->o->max_entries, in->prune, &in->w,
                               &in->nw, in->err);
        if (r == -E2BIG)
                return refuse(in, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP)
                return refuse(in, B4_INSPECT_CHANGED, "Workspace changed during the read: %s",
                              in->err ? in->err->msg : "an entry vanished");
        if (r >= 0)
                r = cancelled(in);
        if (r < 0)
                return r;
        if (in->nw > in->o->max_entries)
                return refuse(in, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        qsort_safe(in->w, in->nw, sizeof(*in->w), path_cmp);
        return 0;
}

/* Every walked path is made of valid leaves, unique, below a walked directory. */
static int check_walked(struct insp *in)
{
        struct hashmap *dirs = hashmap_new(), *seen = hashmap_new();
        int r = dirs && seen ? 0 : -ENOMEM;
        char q[1100];

        for (size_t i = 0; r >= 0 && i < in->nw; i++) {
                const char *p = in->w[i].path;
                const char *slash = strrchr(p, '/');
                const char *leaf = slash ? slash + 1 : p;

                if (!p || !inspect_leaf_is_valid(leaf, strlen(leaf)) || p[0] == '/') {
                        r = refuse(in, B4_INSPECT_REFUSED, "Invalid workspace entry name: %s",
                                   quoted(p ? p : "", q, sizeof(q)));
                        break;
                }
                if (hashmap_get(seen, p)) {
                        r = refuse(in, B4_INSPECT_REFUSED, "Workspace duplicate entry name");
                        break;
                }
                if (slash) {
                        cleanup_free char *parent = b4_strndup(p, (size_t)(slash - p));
                        if (!parent) {
                                r = -ENOMEM;
                                break;
                        }
                        if (!hashmap_get(dirs, parent)) {
                                r = refuse(in, B4_INSPECT_REFUSED,
                                           "Workspace entry outside a walked directory: %s", p);
                                break;
                        }
                }
                r = hashmap_put(seen, p, &in->w[i]);
                if (r >= 0 && in->w[i].st.kind == B4_FILE_DIRECTORY)
                        r = hashmap_put(dirs, p, &in->w[i]);
        }
        hashmap_free(dirs);
        hashmap_free(seen);
        return r;
}

/* ---- planning: the structural rules over the walked stats ---- */

static const char *kind_name(enum b4_file_kind k)
{
        switch (k) {
        case B4_FILE_REGULAR:
                return "file";
        case B4_FILE_DIRECTORY:
                return "directory";
        case B4_FILE_SYMLINK:
                return "symlink";
        case B4_FILE_OTHER:
                break;
        }
        return "other";
}

static const struct b4_root_symlink *expected_link(const struct b4_inspect_options *o,
                                                   const char *name)
{
        for (size_t i = 0; i < o->n_expected; i++)
                if (strcmp(o->expected[i].name, name) == 0)
                        return &o->expected[i];
        return NULL;
}

/* Remember the first structural refusal; reported once the earlier files were read. */
static int defer(struct insp *in, enum b4_inspect_code code, const char *fmt, ...) B4_PRINTF(3, 4);

static int defer(struct insp *in, enum b4_inspect_code code, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(in->pending_msg, sizeof(in->pending_msg), fmt, ap);
        va_end(ap);
        in->pending = code;
        return 1;
}

/* A root-level excluded directory or expected link; 1 = handled (or deferred refusal). */
static int plan_root_entry(struct insp *in, const struct b4_walk_entry *e, const char **skip)
{
        const struct b4_root_symlink *l;

        if (strv_contains(in->o->exclude_root, e->path)) {
                if (e->st.kind != B4_FILE_DIRECTORY)
                        return defer(in, B4_INSPECT_REFUSED, "Excluded root must be a directory");
                *skip = e->path;
                return 2;
        }
        l = expected_link(in->o, e->path);
        if (!l)
                return 0;
        if (e->st.kind != B4_FILE_SYMLINK || !e->st.target || strcmp(e->st.target, l->target) != 0)
                return defer(in, B4_INSPECT_REFUSED, "Unexpected root symlink: %s", e->path);
        return 2;
}

static bool below(const char *path, const char *dir)
{
        size_t n = dir ? strlen(dir) : 0;

        return dir && strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* @path is an excluded path or below one. */
static bool excluded(const struct insp *in, const char *path)
{
        STRV_FOREACH (x, in->o->exclude_paths)
                if (strcmp(path, *x) == 0 || below(path, *x))
                        return true;
        return false;
}

static bool skipping(const struct insp *in)
{
        return in->o->unsupported == B4_INSPECT_UNSUPPORTED_SKIP;
}

/* Record entry @i as left out (skip mode). Return: 0 (planning goes on). */
static void skip_entry(struct insp *in, size_t i, enum b4_skip_reason reason)
{
        in->skip[in->n_skip++] = (struct skip){ .idx = i, .reason = reason };
}

/* A kind or mode the text inventory cannot hold: skipped, or the reference's refusal. */
static int unsupported(struct insp *in, size_t i)
{
        const struct b4_walk_entry *e = &in->w[i];

        if (e->st.kind != B4_FILE_REGULAR) {
                if (!skipping(in))
                        return defer(in, B4_INSPECT_REFUSED, "Unsupported workspace entry (%s): %s",
                                     kind_name(e->st.kind), e->path);
                skip_entry(in, i, e->st.kind == B4_FILE_SYMLINK ? B4_SKIP_SYMLINK : B4_SKIP_OTHER);
                return 0;
        }
        if (!skipping(in))
                return defer(in, B4_INSPECT_REFUSED, "Executable workspace file: %s", e->path);
        skip_entry(in, i, B4_SKIP_EXECUTABLE);
        return 0;
}

/* One entry; 0 = continue, 1 = a refusal was deferred, <0 = error. */
static int plan_entry(struct insp *in, size_t i, uint64_t *total, const char **skip)
{
        const struct b4_walk_entry *e = &in->w[i];
        uint64_t cap;
        int r;

        if (below(e->path, *skip) || excluded(in, e->path))
                return 0;
        if (!strchr(e->path, '/')) {
                r = plan_root_entry(in, e, skip);
                if (r != 0)
                        return r == 2 ? 0 : r;
        }
        if (e->st.kind == B4_FILE_DIRECTORY)
                return 0;
        if (e->st.kind != B4_FILE_REGULAR || e->st.executable)
                return unsupported(in, i);
        cap = in->o->max_total_bytes - *total;
        if (in->o->max_file_bytes < cap)
                cap = in->o->max_file_bytes;
        if (e->st.size > cap)
                return defer(in, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: %s",
                             e->path);
        *total += e->st.size;
        in->plan[in->n_plan++] = i;
        return 0;
}

static int plan(struct insp *in)
{
        const char *skip = NULL;
        uint64_t total = 0;

        in->plan = b4_calloc(in->nw ? in->nw : 1, sizeof(*in->plan));
        in->skip = b4_calloc(in->nw ? in->nw : 1, sizeof(*in->skip));
        if (!in->plan || !in->skip)
                return -ENOMEM;
        for (size_t i = 0; i < in->nw; i++) {
                int r = plan_entry(in, i, &total, &skip);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        for (size_t i = 0; i < in->o->n_expected; i++) {
                const char *name = in->o->expected[i].name;
                bool seen = false;
                for (size_t k = 0; k < in->nw && !seen; k++)
                        seen = strcmp(in->w[k].path, name) == 0;
                if (!seen)
                        return defer(in, B4_INSPECT_REFUSED, "Missing expected root symlink: %s",
                                     name) > 0
                                       ? 0
                                       : -EINVAL;
        }
        return 0;
}

/* ---- reading: one batch, then the content rules ---- */

static int check_blob(struct insp *in, const struct b4_walk_entry *e, const struct b4_blob *b)
{
        if (b->error == -EFBIG)
                return refuse(in, B4_INSPECT_CHANGED,
                              "Workspace changed: %s grew after it was measured", e->path);
        if (b->error == -ENOENT || b->error == -EISDIR || b->error == -ELOOP ||
            b->error == -ENOTDIR)
                return refuse(in, B4_INSPECT_CHANGED,
                              "Workspace changed: %s changed after it was measured", e->path);
        if (b->error < 0)
                return b4_error_set(in->err, b->error, "readFile %s failed", e->path);
        if (b->len != e->st.size)
                return refuse(in, B4_INSPECT_CHANGED,
                              "Workspace changed: %s shrank after it was measured", e->path);
        if (memchr(b->data, '\0', b->len))
                return skipping(in) ? 1 + B4_SKIP_BINARY
                                    : refuse(in, B4_INSPECT_REFUSED, "Binary workspace file: %s",
                                             e->path);
        if (!utf8_is_valid(b->data, b->len))
                return skipping(in) ? 1 + B4_SKIP_NOT_UTF8
                                    : refuse(in, B4_INSPECT_REFUSED,
                                             "Workspace file is not UTF-8 text: %s", e->path);
        return 0;
}

static int read_planned(struct insp *in, struct b4_blob **ret)
{
        cleanup_free struct b4_read_req *reqs =
                b4_calloc(in->n_plan ? in->n_plan : 1, sizeof(*reqs));
        char **paths = b4_calloc(in->n_plan + 1, sizeof(char *));
        int r = reqs && paths ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < in->n_plan; i++) {
                const struct b4_walk_entry *e = &in->w[in->plan[i]];
                r = inspect_join(in->start, e->path, &paths[i]);
                reqs[i] = (struct b4_read_req){ .path = paths[i], .max_bytes = e->st.size };
        }
        if (r >= 0)
                r = cancelled(in);
        if (r >= 0)
                r = b4_fs_read_files(in->fs, reqs, in->n_plan, ret, in->err);
        if (r >= 0)
                r = cancelled(in);
        strv_free(paths);
        return r;
}

static int collect(struct insp *in, struct b4_blob *blobs)
{
        struct b4_inspection *res = in->res;
        int r;

        res->files = b4_calloc(in->n_plan ? in->n_plan : 1, sizeof(*res->files));
        if (!res->files)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_plan; i++) {
                struct b4_walk_entry *e = &in->w[in->plan[i]];
                r = check_blob(in, e, &blobs[i]);
                if (r < 0)
                        return r;
                if (r > 0) { /* skip mode: read, and left out */
                        skip_entry(in, in->plan[i], (enum b4_skip_reason)(r - 1));
                        continue;
                }
                res->files[res->n_files++] =
                        (struct b4_inspected_file){ .path = TAKE_PTR(e->path),
                                                    .text = TAKE_PTR(blobs[i].data),
                                                    .len = blobs[i].len };
                res->total_bytes += blobs[i].len;
        }
        return 0;
}

static int skip_cmp(const void *a, const void *b)
{
        size_t x = ((const struct skip *)a)->idx, y = ((const struct skip *)b)->idx;

        return x < y ? -1 : x > y ? 1 : 0;
}

/* The skipped entries, in walk (depth-first) order. */
static int collect_skipped(struct insp *in)
{
        struct b4_inspection *res = in->res;

        if (!skipping(in))
                return 0;
        res->lists_skipped = true;
        res->skipped = b4_calloc(in->n_skip ? in->n_skip : 1, sizeof(*res->skipped));
        if (!res->skipped)
                return -ENOMEM;
        qsort_safe(in->skip, in->n_skip, sizeof(*in->skip), skip_cmp);
        for (size_t i = 0; i < in->n_skip; i++) {
                struct b4_walk_entry *e = &in->w[in->skip[i].idx];
                res->skipped[i] = (struct b4_skipped_entry){ .path = TAKE_PTR(e->path),
                                                             .reason = in->skip[i].reason };
                res->n_skipped++;
        }
        return 0;
}

static int collect_links(struct insp *in)
{
        struct b4_inspection *res = in->res;
        const struct b4_inspect_options *o = in->o;

        res->links = b4_calloc(o->n_expected ? o->n_expected : 1, sizeof(*res->links));
        if (!res->links)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_expected; i++) {
                res->links[i].name = b4_strdup(o->expected[i].name);
                res->links[i].target = b4_strdup(o->expected[i].target);
                res->n_links++;
                if (!res->links[i].name || !res->links[i].target)
                        return -ENOMEM;
        }
        return 0;
}

static int run(struct insp *in)
{
        struct b4_blob *blobs = NULL;
        int r;

        r = validate_options(in);
        if (r >= 0)
                r = check_root(in);
        if (r >= 0)
                r = check_start(in);
        if (r >= 0)
                r = walk(in);
        if (r >= 0)
                r = check_walked(in);
        if (r >= 0)
                r = plan(in);
        if (r >= 0)
                r = read_planned(in, &blobs);
        if (r >= 0)
                r = collect(in, blobs);
        b4_blobs_free(blobs, in->n_plan);
        if (r >= 0 && in->pending != B4_INSPECT_NONE)
                r = refuse(in, in->pending, "%s", in->pending_msg);
        if (r >= 0)
                r = collect_links(in);
        if (r >= 0)
                r = collect_skipped(in);
        if (r >= 0)
                in->res->entries = in->nw;
        return r;
}

int b4_inspect_workspace(struct b4_fs *fs,
                         const struct b4_inspect_options *o,
                         struct b4_inspection *ret,
                         struct b4_inspect_failure *ret_fail,
                         struct b4_error *err)
{
        struct b4_inspect_options defaults;
        struct b4_inspect_failure fail = { 0 };
        struct b4_inspection res = { 0 };
        struct insp in = { .fs = fs, .o = o, .fail = &fail, .err = err, .res = &res };
        int r;

        if (!o) {
                b4_inspect_options_init(&defaults);
                in.o = &defaults;
        }
        r = run(&in);
        free(in.start);
        free(in.plan);
        free(in.skip);
        strv_free(in.prune);
        b4_walk_entries_free(in.w, in.nw);
        if (ret_fail)
                *ret_fail = fail;
        if (r < 0) {
                b4_inspection_clear(&res);
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
        }
        *ret = res;
        return 0;
}

struct thread_read {
        struct b4_provider *p;
        const char *thread_id;
        const struct b4_inspect_options *o;
        bool consistent;
        struct b4_inspection *ret;
        struct b4_inspect_failure *fail;
};

/* The root's segments again, after the read: a segment swapped for a link is refused. */
static int recheck_root(struct b4_fs *fs, const struct thread_read *t, struct b4_error *err)
{
        struct insp in = { .fs = fs, .o = t->o, .fail = t->fail, .err = err };
        int r;

        if (!t->o || !t->o->root)
                return 0;
        r = check_root(&in);
        free(in.start);
        return r;
}

static int inspect_and_recheck(struct b4_reader *rd,
                               const struct thread_read *t,
                               struct b4_error *err)
{
        int r = b4_inspect_workspace(b4_reader_fs(rd), t->o, t->ret, t->fail, err);

        if (r >= 0)
                r = recheck_root(b4_reader_fs(rd), t, err);
        if (r < 0)
                b4_inspection_clear(t->ret);
        return r;
}

static int read_body(struct b4_reader *rd, void *userdata, struct b4_error *err)
{
        struct thread_read *t = userdata;
        struct b4_error thaw_err = { 0 };
        int r, rt;

        if (!t->consistent)
                return inspect_and_recheck(rd, t, err);
        r = b4_provider_freeze(t->p, t->thread_id, true, err);
        if (r < 0)
                return r;
        r = inspect_and_recheck(rd, t, err);
        rt = b4_provider_freeze(t->p, t->thread_id, false, &thaw_err);
        if (rt < 0 && r >= 0) {
                b4_inspection_clear(t->ret);
                return b4_error_set(err, rt, "cannot resume thread \"%s\" after the read: %s",
                                    t->thread_id, thaw_err.msg);
        }
        return r;
}

int b4_inspect_thread(struct b4_provider *p,
                      const char *thread_id,
                      const struct b4_inspect_options *o,
                      bool consistent,
                      struct b4_inspection *ret,
                      struct b4_inspect_failure *ret_fail,
                      struct b4_error *err)
{
        struct b4_inspect_failure fail = { 0 };
        struct thread_read t = { .p = p,
                                 .thread_id = thread_id,
                                 .o = o,
                                 .consistent = consistent,
                                 .ret = ret,
                                 .fail = &fail };
        struct b4_reader_req req = { .thread_id = thread_id,
                                     .cancel = o ? o->cancel : NULL,
                                     .run_as_non_root = true,
                                     .uid = 1000,
                                     .gid = 1000 };
        int r;

        *ret = (struct b4_inspection){ 0 };
        r = b4_with_reader(p, &req, read_body, &t, err);
        if (r < 0)
                b4_inspection_clear(ret);
        if (ret_fail)
                *ret_fail = fail;
        return r;
}
