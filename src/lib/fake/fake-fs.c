/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake provider's in-memory filesystem (see fake-internal.h). Callers resolve a path's
 * symlinks first (fakefs_resolve()); then a path has its stored entry's kind, or is a
 * directory when it is the workspace root or one of its ancestors, or a proper prefix of any
 * stored path. Missing paths are -ENOENT ("ENOENT: <path>", the reference fake's text), also
 * for list_dir (unlike the reference fake, which lists nothing). list_dir refuses more than
 * B4_LIST_MAX_ENTRIES names, as every provider does. An "other" entry reads -EINVAL, lists
 * -ENOTDIR and is replaced by a write, as a FIFO would be by the atomic replace.
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "fake-internal.h"

#define MAX_LINKS 40 /* as the kernel's */

int fakefs_normalize(const char *path, char **ret, struct b4_error *err)
{
        cleanup_free char *out = NULL;
        size_t n = 0;

        if (!path || path[0] != '/')
                return b4_error_set(err, -EINVAL, "path must be absolute: '%s'", path ? path : "");
        out = b4_malloc(strlen(path) + 2);
        if (!out)
                return -ENOMEM;
        for (const char *p = path; *p;) {
                size_t len;

                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (len == 0 || (len == 1 && p[0] == '.')) {
                        p += len;
                        continue;
                }
                if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 0 && out[--n] != '/')
                                ;
                        p += len;
                        continue;
                }
                out[n++] = '/';
                memcpy(out + n, p, len);
                n += len;
                p += len;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

void fakefs_clear(struct fake_ws *ws)
{
        for (size_t i = 0; i < ws->n; i++) {
                free(ws->v[i].path);
                free(ws->v[i].data);
                free(ws->v[i].target);
        }
        free(ws->v);
        ws->v = NULL;
        ws->n = 0;
}

/* Whether @path lies strictly below the directory @dir (both normalised). */
static bool is_below(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        if (n == 1)
                return path[0] == '/' && path[1] != '\0';
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static struct fake_entry *entry_find(struct fake_ws *ws, const char *path)
{
        for (size_t i = 0; i < ws->n; i++)
                if (strcmp(ws->v[i].path, path) == 0)
                        return &ws->v[i];
        return NULL;
}

static enum fake_kind kind_of(struct fake_ws *ws, const char *path)
{
        struct fake_entry *e = entry_find(ws, path);

        if (e)
                return e->kind;
        if (strcmp(path, B4_WORKSPACE_ROOT) == 0 || is_below(B4_WORKSPACE_ROOT, path))
                return FAKE_DIR;
        for (size_t i = 0; i < ws->n; i++)
                if (is_below(ws->v[i].path, path))
                        return FAKE_DIR;
        return FAKE_NONE;
}

static bool in_workspace(const char *p)
{
        return strcmp(p, B4_WORKSPACE_ROOT) == 0 || is_below(p, B4_WORKSPACE_ROOT);
}

/* Follow the link @e met at @cur/<name>: the rest of the walk is its target, then @rest. */
static int follow(const struct fake_entry *e, char **cur, char **rest)
{
        char *joined = NULL;

        if (b4_asprintf(&joined, "%s/%s", e->target, *rest) < 0)
                return -ENOMEM;
        free(*rest);
        *rest = joined;
        if (e->target[0] == '/')
                (*cur)[0] = '\0';
        return 0;
}

int fakefs_resolve(struct fake_ws *ws,
                   const char *path,
                   bool follow_last,
                   unsigned flags,
                   const char *op,
                   char **ret,
                   struct b4_error *err)
{
        cleanup_free char *cur = b4_strdup(""), *rest = b4_strdup(path ? path : "");
        int hops = 0, r;

        if (!path || path[0] != '/')
                return b4_error_set(err, -EINVAL, "path must be absolute: '%s'", path ? path : "");
        if (!cur || !rest)
                return -ENOMEM;
        while (*rest) {
                size_t n = strcspn(rest, "/");
                cleanup_free char *next = NULL;
                const char *after = rest + n;
                bool last;

                while (*after == '/')
                        after++;
                last = *after == '\0';
                if (n == 0 || (n == 1 && rest[0] == '.') ||
                    (n == 2 && strncmp(rest, "..", 2) == 0)) {
                        if (n == 2) {
                                char *s = strrchr(cur, '/');
                                if (s)
                                        *s = '\0';
                        }
                        memmove(rest, after, strlen(after) + 1);
                        continue;
                }
                if (b4_asprintf(&next, "%s/%.*s", cur, (int)n, rest) < 0)
                        return -ENOMEM;
                memmove(rest, after, strlen(after) + 1);
                struct fake_entry *e = entry_find(ws, next);
                if (!e || e->kind != FAKE_LINK || (last && !follow_last)) {
                        free(cur);
                        cur = TAKE_PTR(next);
                        continue;
                }
                if (flags & B4_FS_NO_SYMLINKS)
                        return b4_error_set(err, -ELOOP, "%s %s: %s", op, path, strerror(ELOOP));
                if ((flags & B4_FS_BENEATH) && e->target[0] == '/')
                        return b4_error_set(err, -EXDEV, "%s %s: %s", op, path, strerror(EXDEV));
                if (++hops > MAX_LINKS)
                        return b4_error_set(err, -ELOOP, "%s %s: %s", op, path, strerror(ELOOP));
                r = follow(e, &cur, &rest);
                if (r < 0)
                        return r;
        }
        if ((flags & B4_FS_BENEATH) && !in_workspace(cur))
                return b4_error_set(err, -EXDEV, "%s %s: %s", op, path, strerror(EXDEV));
        *ret = *cur ? TAKE_PTR(cur) : b4_strdup("/");
        return *ret ? 0 : -ENOMEM;
}

/* The newest mtime at or below @path (directories without an explicit entry). */
static int64_t newest_mtime(struct fake_ws *ws, const char *path)
{
        int64_t m = 0;

        for (size_t i = 0; i < ws->n; i++)
                if ((strcmp(ws->v[i].path, path) == 0 || is_below(ws->v[i].path, path)) &&
                    ws->v[i].mtime_ms > m)
                        m = ws->v[i].mtime_ms;
        return m;
}

/* -ENOTDIR when a proper ancestor of @path is a file. */
static int check_parents(struct fake_ws *ws, const char *path, const char *op, struct b4_error *err)
{
        for (size_t i = 0; i < ws->n; i++)
                if (ws->v[i].kind != FAKE_DIR && is_below(path, ws->v[i].path))
                        return b4_error_set(err, -ENOTDIR, "%s %s: not a directory: '%s'", op, path,
                                            ws->v[i].path);
        return 0;
}

static struct fake_entry *entry_add(struct fake_ws *ws, const char *path, enum fake_kind kind)
{
        struct fake_entry *v = b4_reallocarray(ws->v, ws->n + 1, sizeof(*v));

        if (!v)
                return NULL;
        ws->v = v;
        v[ws->n] = (struct fake_entry){ .path = b4_strdup(path),
                                        .kind = kind,
                                        .mtime_ms = realtime_msec() };
        if (!v[ws->n].path)
                return NULL;
        return &v[ws->n++];
}

static void entry_del(struct fake_ws *ws, struct fake_entry *e)
{
        free(e->path);
        free(e->data);
        free(e->target);
        *e = ws->v[--ws->n];
}

/* The regular file at @path (normalised into *ret_p), or the error every read gives. */
static int regular_file(struct fake_ws *ws,
                        const char *path,
                        char **ret_p,
                        struct fake_entry **ret,
                        struct b4_error *err)
{
        int r = fakefs_normalize(path, ret_p, err);

        if (r < 0)
                return r;
        switch (kind_of(ws, *ret_p)) {
        case FAKE_NONE:
                return b4_error_set(err, -ENOENT, "ENOENT: %s", path);
        case FAKE_DIR:
                return b4_error_set(err, -EISDIR, "EISDIR: %s", path);
        case FAKE_LINK: /* followed by the caller: only with a link leaf left unresolved */
                return b4_error_set(err, -ELOOP, "ELOOP: %s", path);
        case FAKE_OTHER:
                return b4_error_set(err, -EINVAL, "EINVAL: %s: not a regular file", path);
        case FAKE_FILE:
                break;
        }
        *ret = entry_find(ws, *ret_p);
        return 0;
}

/* A copy of @len bytes of @src, NUL-terminated. */
static int copy_out(const char *src, size_t len, char **ret, size_t *ret_len)
{
        char *data = b4_malloc(len + 1);

        if (!data)
                return -ENOMEM;
        if (len)
                memcpy(data, src, len);
        data[len] = '\0';
        *ret = data;
        *ret_len = len;
        return 0;
}

int fakefs_read(struct fake_ws *ws,
                const char *path,
                uint64_t max_bytes,
                char **ret,
                size_t *ret_len,
                struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e = NULL;
        int r = regular_file(ws, path, &p, &e, err);

        if (r < 0)
                return r;
        if (max_bytes != B4_UNBOUNDED && e->len > max_bytes)
                return -EFBIG; /* core words it */
        return copy_out(e->data, e->len, ret, ret_len);
}

int fakefs_read_range(struct fake_ws *ws,
                      const char *path,
                      uint64_t offset,
                      uint64_t length,
                      char **ret,
                      size_t *ret_len,
                      uint64_t *ret_size,
                      struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e = NULL;
        size_t n;
        int r = regular_file(ws, path, &p, &e, err);

        if (r < 0)
                return r;
        n = offset >= e->len ? 0 : e->len - (size_t)offset;
        if ((uint64_t)n > length)
                n = (size_t)length;
        *ret_size = e->len;
        return copy_out(n ? e->data + offset : "", n, ret, ret_len);
}

int fakefs_lstat(struct fake_ws *ws, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        switch (kind_of(ws, p)) {
        case FAKE_NONE:
                return b4_error_set(err, -ENOENT, "ENOENT: %s", path);
        case FAKE_DIR:
                *ret = (struct b4_stat){ .kind = B4_FILE_DIRECTORY,
                                         .mtime_ms = newest_mtime(ws, p) };
                return 0;
        case FAKE_OTHER:
                e = entry_find(ws, p);
                *ret = (struct b4_stat){ .kind = B4_FILE_OTHER, .mtime_ms = e->mtime_ms };
                return 0;
        case FAKE_LINK:
                e = entry_find(ws, p);
                *ret = (struct b4_stat){ .kind = B4_FILE_SYMLINK,
                                         .size = strlen(e->target),
                                         .mtime_ms = e->mtime_ms,
                                         .target = b4_strdup(e->target) };
                return ret->target ? 0 : -ENOMEM;
        case FAKE_FILE:
                break;
        }
        e = entry_find(ws, p);
        *ret = (struct b4_stat){ .kind = B4_FILE_REGULAR,
                                 .size = e->len,
                                 .executable = e->executable,
                                 .mtime_ms = e->mtime_ms };
        return 0;
}

/* The first component of @path below @dir, appended to @names unless already there.
 * Return: 1 appended, 0 already there, -ENOMEM. */
static int add_child(char ***names, const char *path, const char *dir)
{
        const char *rest = path + (strlen(dir) == 1 ? 1 : strlen(dir) + 1);
        cleanup_free char *name = b4_strndup(rest, strcspn(rest, "/"));

        if (!name)
                return -ENOMEM;
        if (strv_contains(*names, name))
                return 0;
        return strv_consume(names, TAKE_PTR(name)) < 0 ? -ENOMEM : 1;
}

int fakefs_list(struct fake_ws *ws, const char *path, char ***ret, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        cleanup_strv char **names = NULL;
        size_t n = 0;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        switch (kind_of(ws, p)) {
        case FAKE_NONE:
                return b4_error_set(err, -ENOENT, "ENOENT: %s", path);
        case FAKE_FILE:
        case FAKE_LINK:
        case FAKE_OTHER:
                return b4_error_set(err, -ENOTDIR, "ENOTDIR: %s", path);
        case FAKE_DIR:
                break;
        }
        names = b4_calloc(1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        if (is_below(B4_WORKSPACE_ROOT, p) && add_child(&names, B4_WORKSPACE_ROOT, p) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ws->n; i++) {
                if (!is_below(ws->v[i].path, p))
                        continue;
                r = add_child(&names, ws->v[i].path, p);
                if (r < 0)
                        return r;
                n += (size_t)r;
                if (n > B4_LIST_MAX_ENTRIES)
                        return -E2BIG; /* core words it */
        }
        strv_sort(names);
        *ret = TAKE_PTR(names);
        return 0;
}

int fakefs_write(
        struct fake_ws *ws, const char *path, const void *data, size_t len, struct b4_error *err)
{
        cleanup_free char *p = NULL, *copy = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        if (kind_of(ws, p) == FAKE_DIR)
                return b4_error_set(err, -EISDIR, "writeFile %s: is a directory", path);
        r = check_parents(ws, p, "writeFile", err);
        if (r < 0)
                return r;
        copy = b4_malloc(len + 1);
        if (!copy)
                return -ENOMEM;
        if (len)
                memcpy(copy, data, len);
        copy[len] = '\0';
        e = entry_find(ws, p);
        if (!e)
                e = entry_add(ws, p, FAKE_FILE);
        if (!e)
                return -ENOMEM;
        free(e->data);
        free(e->target); /* a link leaf is replaced, never followed */
        e->target = NULL;
        e->kind = FAKE_FILE;
        e->data = TAKE_PTR(copy);
        e->len = len;
        e->mtime_ms = realtime_msec();
        return 0;
}

int fakefs_mkdir(struct fake_ws *ws, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        r = check_parents(ws, p, "mkdir", err);
        if (r < 0)
                return r;
        e = entry_find(ws, p);
        if (e && e->kind != FAKE_DIR)
                return b4_error_set(err, -EEXIST, "mkdir %s: file exists", path);
        if (e || strcmp(p, B4_WORKSPACE_ROOT) == 0 || is_below(B4_WORKSPACE_ROOT, p))
                return 0;
        return entry_add(ws, p, FAKE_DIR) ? 0 : -ENOMEM;
}

int fakefs_remove(struct fake_ws *ws, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        if (strcmp(p, B4_WORKSPACE_ROOT) == 0 || is_below(B4_WORKSPACE_ROOT, p))
                return b4_error_set(err, -EBUSY, "remove %s: is the workspace root", path);
        for (size_t i = 0; i < ws->n; i++)
                if (is_below(ws->v[i].path, p))
                        return b4_error_set(err, -ENOTEMPTY, "remove %s: directory not empty",
                                            path);
        e = entry_find(ws, p);
        if (!e)
                return 0;
        entry_del(ws, e);
        /* a parent only implied by @p stays, as a real directory does */
        char *slash = strrchr(p, '/');
        if (slash && slash != p) {
                *slash = '\0';
                if (strcmp(p, B4_WORKSPACE_ROOT) != 0 && !is_below(B4_WORKSPACE_ROOT, p) &&
                    !entry_find(ws, p) && !entry_add(ws, p, FAKE_DIR))
                        return -ENOMEM;
        }
        return 0;
}

int fakefs_touch(struct fake_ws *ws, const char *path, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        e = entry_find(ws, p);
        if (e) {
                e->mtime_ms = realtime_msec();
                return 0;
        }
        if (kind_of(ws, p) == FAKE_DIR) {
                r = fakefs_mkdir(ws, p, err);
                if (r < 0)
                        return r;
                e = entry_find(ws, p);
                if (e)
                        e->mtime_ms = realtime_msec();
                return 0;
        }
        return fakefs_write(ws, p, "", 0, err);
}

int fakefs_chmod(struct fake_ws *ws, const char *path, uint32_t mode, struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct fake_entry *e;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        switch (kind_of(ws, p)) {
        case FAKE_NONE:
                return b4_error_set(err, -ENOENT, "ENOENT: %s", path);
        case FAKE_DIR:
        case FAKE_OTHER:
                return 0; /* directories and other entries carry no mode in the fake */
        case FAKE_LINK:
                return b4_error_set(err, -ELOOP, "chmod %s: a symlink", path);
        case FAKE_FILE:
                break;
        }
        e = entry_find(ws, p);
        e->executable = (mode & 0111) != 0;
        return 0;
}

/* Add a new entry of @kind at @path (normalised into *@ret); an existing one is -EEXIST. */
static int entry_create(struct fake_ws *ws,
                        const char *path,
                        enum fake_kind kind,
                        const char *op,
                        struct fake_entry **ret,
                        struct b4_error *err)
{
        cleanup_free char *p = NULL;
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r < 0)
                return r;
        if (kind_of(ws, p) != FAKE_NONE)
                return b4_error_set(err, -EEXIST, "%s %s: file exists", op, path);
        r = check_parents(ws, p, op, err);
        if (r < 0)
                return r;
        *ret = entry_add(ws, p, kind);
        return *ret ? 0 : -ENOMEM;
}

int fakefs_symlink(struct fake_ws *ws, const char *target, const char *path, struct b4_error *err)
{
        cleanup_free char *t = b4_strdup(target ? target : "");
        struct fake_entry *e;
        int r;

        if (!t)
                return -ENOMEM;
        r = entry_create(ws, path, FAKE_LINK, "symlink", &e, err);
        if (r < 0)
                return r;
        e->target = TAKE_PTR(t);
        return 0;
}

int fakefs_mkother(struct fake_ws *ws, const char *path, struct b4_error *err)
{
        struct fake_entry *e;

        return entry_create(ws, path, FAKE_OTHER, "mkother", &e, err);
}

/* ---- the batched walk ---- */

struct walk {
        struct fake_ws *ws;
        size_t max;
        struct b4_walk_entry *v;
        size_t n;
};

/* Append @rel with the lstat of @abs. */
static int walk_push(struct walk *w, const char *abs, const char *rel, struct b4_error *err)
{
        struct b4_walk_entry *v;

        if (w->n >= w->max)
                return -E2BIG; /* core words it */
        v = b4_reallocarray(w->v, w->n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        w->v = v;
        v[w->n] = (struct b4_walk_entry){ .path = b4_strdup(rel) };
        if (!v[w->n].path)
                return -ENOMEM;
        w->n++;
        return fakefs_lstat(w->ws, abs, &v[w->n - 1].st, err);
}

static int walk_dir(
        struct walk *w, const char *abs, const char *rel, char *const *prune, struct b4_error *err)
{
        cleanup_strv char **names = NULL;
        int r;

        r = fakefs_list(w->ws, abs, &names, err);
        if (r < 0)
                return r;
        STRV_FOREACH (name, names) {
                cleanup_free char *cabs = NULL, *crel = NULL;

                if (b4_asprintf(&cabs, "%s/%s", strcmp(abs, "/") == 0 ? "" : abs, *name) < 0 ||
                    b4_asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", *name) < 0)
                        return -ENOMEM;
                r = walk_push(w, cabs, crel, err);
                if (r < 0)
                        return r;
                if (w->v[w->n - 1].st.kind == B4_FILE_DIRECTORY && !strv_contains(prune, *name))
                        r = walk_dir(w, cabs, crel, NULL, err);
                if (r < 0)
                        return r;
        }
        return r;
}

int fakefs_walk(struct fake_ws *ws,
                const char *path,
                size_t max,
                char *const *prune,
                struct b4_walk_entry **ret,
                size_t *ret_n,
                struct b4_error *err)
{
        cleanup_free char *p = NULL;
        struct walk w = { .ws = ws, .max = max };
        int r;

        r = fakefs_normalize(path, &p, err);
        if (r >= 0)
                r = walk_dir(&w, p, "", prune, err);
        if (r < 0) {
                b4_walk_entries_free(w.v, w.n);
                return r;
        }
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

/* Drop the directories, keeping what was below them. */
static void walk_drop_dirs(struct b4_walk_entry *v, size_t *n)
{
        size_t k = 0;

        for (size_t i = 0; i < *n; i++) {
                if (v[i].st.kind == B4_FILE_DIRECTORY) {
                        free(v[i].path);
                        b4_stat_clear(&v[i].st);
                        continue;
                }
                v[k++] = v[i];
        }
        *n = k;
}

static void walk_reverse(struct b4_walk_entry *v, size_t n)
{
        for (size_t i = 0; i < n / 2; i++) {
                struct b4_walk_entry t = v[i];
                v[i] = v[n - 1 - i];
                v[n - 1 - i] = t;
        }
}

/* Append a copy of the first entry. */
static int walk_duplicate(struct b4_walk_entry **v, size_t *n)
{
        struct b4_walk_entry *nv;

        if (*n == 0)
                return 0;
        nv = b4_reallocarray(*v, *n + 1, sizeof(*nv));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        nv[*n] = (struct b4_walk_entry){ .path = b4_strdup(nv[0].path), .st = nv[0].st };
        nv[*n].st.target = nv[0].st.target ? b4_strdup(nv[0].st.target) : NULL;
        if (!nv[*n].path || (nv[0].st.target && !nv[*n].st.target)) {
                free(nv[*n].path);
                free(nv[*n].st.target);
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

int fakefs_walk_break(unsigned faults, struct b4_walk_entry **v, size_t *n)
{
        if (faults & FAKE_WALK_NO_DIRS)
                walk_drop_dirs(*v, n);
        if (faults & FAKE_WALK_REVERSED)
                walk_reverse(*v, *n);
        return faults & FAKE_WALK_DUPLICATE ? walk_duplicate(v, n) : 0;
}
