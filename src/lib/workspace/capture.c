/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capture of a static workspace definition (reference §7.2) into a verified bundle.
 *
 * The directory is scanned beneath a dirfd without following links (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); symlinks and special files are refused, excluded
 * directories are pruned, and the regular files found must equal `include` exactly. Each
 * file is read through an O_NOFOLLOW fd whose identity (dev, ino, mode, size, mtime, ctime)
 * must match the scan before and after the read, and every path is checked once more at the
 * end, so a source changing underneath is refused rather than captured half-old.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "b4box/bundle.h"
#include "b4box/cancel.h"
#include "b4box/config.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "workspace.h"

struct found {
        char *path;     /* owned; relative to the scanned directory */
        struct stat st; /* as scanned */
};

struct scan {
        struct found *files; /* owned */
        size_t n, cap;
        size_t visited;
        char *const *exclude; /* borrowed */
        struct b4_cancel *cancel;
};

static void scan_release(struct scan *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->files[i].path);
        free(s->files);
}

int capture_open_beneath(int dirfd, const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t)flags | O_CLOEXEC | O_NOFOLLOW,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

        return fd < 0 ? -errno : (int)fd;
}

/* What the path says about the source (missing, a link, not a directory) is a refusal. */
static int refusal(int r)
{
        return r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EXDEV ? -EINVAL : r;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
               a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
               a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int scan_add(struct scan *s, char *path, const struct stat *st)
{
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                struct found *f = b4_reallocarray(s->files, cap, sizeof(*f));

                if (!f) {
                        free(path);
                        return -ENOMEM;
                }
                s->files = f;
                s->cap = cap;
        }
        s->files[s->n++] = (struct found){ .path = path, .st = *st };
        return 0;
}

static int scan_dir(struct scan *s, int dfd, const char *prefix, struct b4_error *err);

static int scan_entry(
        struct scan *s, int dfd, const char *prefix, const char *name, struct b4_error *err)
{
        cleanup_free char *rel = NULL;
        struct stat st;

        if (++s->visited > B4_BUNDLE_MAX_ENTRIES)
                return b4_error_set(err, -E2BIG, "Source has more than %u entries",
                                    B4_BUNDLE_MAX_ENTRIES);
        if (b4_asprintf(&rel, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return b4_error_set(err, -errno, "Source changed during capture: cannot stat '%s'",
                                    rel);
        if (S_ISLNK(st.st_mode))
                return b4_error_set(err, -EINVAL, "Source may not contain symlinks: '%s'", rel);
        if (S_ISDIR(st.st_mode)) {
                cleanup_close int sub = -EBADF;

                if (strv_contains(s->exclude, rel))
                        return 0;
                sub = capture_open_beneath(dfd, name, O_RDONLY | O_DIRECTORY);
                if (sub < 0)
                        return b4_error_set(err, sub, "cannot open source directory '%s'", rel);
                return scan_dir(s, sub, rel, err);
        }
        if (!S_ISREG(st.st_mode))
                return b4_error_set(err, -EINVAL, "Source may contain only regular files: '%s'",
                                    rel);
        if (scan_add(s, TAKE_PTR(rel), &st) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

/* Takes over nothing: @dfd stays the caller's. */
static int scan_dir(struct scan *s, int dfd, const char *prefix, struct b4_error *err)
{
        int fd = capture_open_beneath(dfd, ".", O_RDONLY | O_DIRECTORY);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = fd < 0 ? fd : -errno;
                safe_close(fd);
                return b4_error_set(err, r, "cannot read source directory '%s'",
                                    *prefix ? prefix : ".");
        }
        while (r >= 0 && (errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (b4_cancel_is_set(s->cancel))
                        r = b4_error_set(err, -ECANCELED, "capture cancelled");
                else
                        r = scan_entry(s, dfd, prefix, de->d_name, err);
        }
        if (r >= 0 && errno)
                r = b4_error_set(err, -errno, "cannot read source directory '%s'", prefix);
        (void)closedir(d);
        return r;
}

static int found_cmp(const void *a, const void *b)
{
        return strcmp(((const struct found *)a)->path, ((const struct found *)b)->path);
}

/* The found files must be exactly @include (both sorted). */
static int check_inventory(const struct scan *s, char **include, struct b4_error *err)
{
        size_t i = 0, j = 0, n = strv_length(include);

        while (i < s->n || j < n) {
                int c = i == s->n ? 1 : j == n ? -1 : strcmp(s->files[i].path, include[j]);

                if (c < 0)
                        return b4_error_set(err, -EINVAL,
                                            "Source exact inventory mismatch: '%s' is not listed "
                                            "in include",
                                            s->files[i].path);
                if (c > 0)
                        return b4_error_set(err, -EINVAL,
                                            "Source exact inventory mismatch: '%s' is listed in "
                                            "include but is not a regular file of the source",
                                            include[j]);
                if (j + 1 < n && strcmp(include[j], include[j + 1]) == 0)
                        return b4_error_set(err, -EINVAL,
                                            "Source exact inventory mismatch: '%s' is listed "
                                            "twice",
                                            include[j]);
                i++, j++;
        }
        return 0;
}

/* Read @path beneath @dfd, refusing if it is not the file @scanned describes. */
static int read_checked(int dfd,
                        const char *path,
                        const struct stat *scanned,
                        char **ret,
                        size_t *ret_len,
                        struct stat *ret_st,
                        struct b4_error *err)
{
        cleanup_close int fd = capture_open_beneath(dfd, path, O_RDONLY);
        struct stat before, after;
        int r;

        if (fd < 0)
                return b4_error_set(err, refusal(fd),
                                    "Source changed during capture: cannot open '%s'", path);
        if (fstat(fd, &before) < 0)
                return b4_error_set(err, -errno, "cannot stat '%s'", path);
        if (!S_ISREG(before.st_mode) || (scanned && !same_file(scanned, &before)))
                return b4_error_set(err, -EINVAL, "Source changed during capture: '%s'", path);
        if (before.st_size > B4_BUNDLE_MAX_FILE_BYTES)
                return b4_error_set(err, -E2BIG, "Source bundle file \"%s\" exceeds %u bytes", path,
                                    B4_BUNDLE_MAX_FILE_BYTES);
        r = read_full_fd(fd, (size_t)before.st_size, ret, ret_len);
        if (r < 0 && r != -EFBIG)
                return b4_error_set(err, r, "cannot read '%s'", path);
        if (r == -EFBIG || *ret_len != (size_t)before.st_size || fstat(fd, &after) < 0 ||
            !same_file(&before, &after)) {
                if (r == 0) {
                        free(*ret);
                        *ret = NULL;
                }
                return b4_error_set(err, -EINVAL, "Source changed during capture: '%s'", path);
        }
        *ret_st = before;
        return 0;
}

struct capture {
        int app_fd; /* the app root */
        int src_fd; /* the source directory beneath it */
        struct scan scan;
        struct b4_bundle_input *in; /* owned array; data owned through bufs */
        char **bufs;                /* owned: one buffer per input */
        size_t n_in;
};

static void capture_release(struct capture *c)
{
        safe_close(c->app_fd);
        safe_close(c->src_fd);
        scan_release(&c->scan);
        for (size_t i = 0; i < c->n_in; i++)
                free(c->bufs[i]);
        free(c->bufs);
        free(c->in);
}

static int add_input(struct capture *c, const char *path, char *data, size_t len, bool exec)
{
        c->bufs[c->n_in] = data;
        c->in[c->n_in++] = (struct b4_bundle_input){
                .path = path,
                .data = data,
                .len = len,
                .executable = exec,
        };
        return 0;
}

static bool under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Excluded directories: portable, existing directories, not holding an include. */
static int check_excludes(struct capture *c,
                          const struct b4_workspace_def *def,
                          struct b4_error *err)
{
        bool dot = strcmp(def->directory, ".") == 0;
        struct stat st;
        int r;

        STRV_FOREACH (x, def->exclude_directories) {
                cleanup_close int fd = -EBADF;

                r = b4_portable_path_check("Source excluded directory", *x, err);
                if (r < 0)
                        return r;
                fd = capture_open_beneath(c->src_fd, *x, O_RDONLY | O_DIRECTORY);
                if (fd < 0)
                        return b4_error_set(err, -EINVAL,
                                            "Source excluded directory '%s' is not a directory "
                                            "of the source",
                                            *x);
                STRV_FOREACH (i, def->include)
                        if (under(*i, *x))
                                return b4_error_set(err, -EINVAL,
                                                    "Source include '%s' lies in excluded "
                                                    "directory '%s'",
                                                    *i, *x);
        }
        if (dot && fstatat(c->src_fd, ".b4box", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            !strv_contains(def->exclude_directories, ".b4box"))
                return b4_error_set(err, -EINVAL,
                                    "Source captured from \".\" must exclude \".b4box\"");
        return 0;
}

static int open_source(struct capture *c,
                       const char *app_root,
                       const char *dir,
                       struct b4_error *err)
{
        int r;

        if (strcmp(dir, ".") != 0) {
                r = b4_portable_path_check("Source directory", dir, err);
                if (r < 0)
                        return r;
        }
        c->app_fd = open(app_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->app_fd < 0)
                return b4_error_set(err, -errno, "cannot open app root '%s'", app_root);
        c->src_fd = capture_open_beneath(c->app_fd, dir, O_RDONLY | O_DIRECTORY);
        if (c->src_fd < 0)
                return b4_error_set(err, refusal(c->src_fd),
                                    "Source directory '%s' is not a directory of the app", dir);
        return 0;
}

static int read_inventory(struct capture *c, struct b4_error *err)
{
        for (size_t i = 0; i < c->scan.n; i++) {
                const struct found *f = &c->scan.files[i];
                char *data = NULL;
                size_t len = 0;
                struct stat st;
                int r;

                if (b4_cancel_is_set(c->scan.cancel))
                        return b4_error_set(err, -ECANCELED, "capture cancelled");
                r = read_checked(c->src_fd, f->path, &f->st, &data, &len, &st, err);
                if (r < 0)
                        return r;
                add_input(c, f->path, data, len, st.st_mode & 0111);
        }
        return 0;
}

static int read_extra(struct capture *c, const struct b4_workspace_def *def, struct b4_error *err)
{
        for (size_t i = 0; i < def->n_files; i++) {
                const struct b4_workspace_file *x = &def->files[i];
                char *data = NULL;
                size_t len = 0;
                struct stat st;
                int r;

                if (x->file) {
                        r = b4_portable_path_check("Source file", x->file, err);
                        if (r >= 0)
                                r = read_checked(c->app_fd, x->file, NULL, &data, &len, &st, err);
                        if (r < 0)
                                return r;
                        add_input(c, x->path, data, len, st.st_mode & 0111);
                        continue;
                }
                if (!x->text || !utf8_is_valid(x->text, strlen(x->text)))
                        return b4_error_set(err, -EINVAL,
                                            "Source file '%s' needs a file or UTF-8 text", x->path);
                data = b4_strdup(x->text);
                if (!data)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                add_input(c, x->path, data, strlen(data), x->executable);
        }
        return 0;
}

/* Every scanned file must still be the file that was read. */
static int recheck(const struct capture *c, struct b4_error *err)
{
        for (size_t i = 0; i < c->scan.n; i++) {
                const struct found *f = &c->scan.files[i];
                struct stat st;

                if (fstatat(c->src_fd, f->path, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !same_file(&f->st, &st))
                        return b4_error_set(err, -EINVAL, "Source changed during capture: '%s'",
                                            f->path);
        }
        return 0;
}

static int capture_scan(struct capture *c, const struct b4_workspace_def *def, struct b4_error *err)
{
        cleanup_strv char **include = strv_copy(def->include);
        int r;

        if (def->include && !include)
                return b4_error_set(err, -ENOMEM, "out of memory");
        strv_sort(include);
        c->scan.exclude = def->exclude_directories;
        r = scan_dir(&c->scan, c->src_fd, "", err);
        if (r < 0)
                return r;
        qsort_safe(c->scan.files, c->scan.n, sizeof(*c->scan.files), found_cmp);
        if (!def->include)
                return 0; /* b4box bundle create without --include-from: take everything */
        return check_inventory(&c->scan, include, err);
}

static int capture_links(const struct b4_workspace_def *def,
                         struct b4_bundle **bundle,
                         struct b4_captured_workspace **ret,
                         struct b4_error *err)
{
        cleanup_free struct b4_captured_link *links =
                b4_calloc(def->n_links ? def->n_links : 1, sizeof(*links));

        if (!links)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < def->n_links; i++)
                links[i] = (struct b4_captured_link){ .path = def->links[i].path,
                                                      .target = def->links[i].target };
        return b4_captured_workspace_make(bundle, links, def->n_links, def->baseline_git, ret, err);
}

int b4_workspace_capture(const char *app_root,
                         const struct b4_workspace_def *def,
                         struct b4_cancel *cancel,
                         struct b4_captured_workspace **ret,
                         struct b4_error *err)
{
        struct capture c = { .app_fd = -EBADF, .src_fd = -EBADF, .scan.cancel = cancel };
        struct b4_bundle *bundle = NULL;
        int r;

        if (!app_root || !def || !def->directory || !ret)
                return b4_error_set(err, -EINVAL, "invalid capture request");
        r = open_source(&c, app_root, def->directory, err);
        if (r >= 0)
                r = check_excludes(&c, def, err);
        if (r >= 0)
                r = capture_scan(&c, def, err);
        if (r >= 0) {
                c.in = b4_calloc(c.scan.n + def->n_files + 1, sizeof(*c.in));
                c.bufs = b4_calloc(c.scan.n + def->n_files + 1, sizeof(char *));
                if (!c.in || !c.bufs)
                        r = b4_error_set(err, -ENOMEM, "out of memory");
        }
        if (r >= 0)
                r = read_inventory(&c, err);
        if (r >= 0)
                r = read_extra(&c, def, err);
        if (r >= 0)
                r = recheck(&c, err);
        if (r >= 0)
                r = b4_bundle_create(c.in, c.n_in, &bundle, err);
        if (r >= 0)
                r = capture_links(def, &bundle, ret, err);
        b4_bundle_free(bundle);
        capture_release(&c);
        return r;
}
