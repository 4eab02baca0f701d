/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host-side file operations, no process per operation. Every path is resolved with openat2()
 * against a root dirfd (the keeper's /proc/<pid>/root, or a read-only workspace mount for
 * readers) with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, so a path means what it means inside
 * the sandbox, symlinks and ".." included, and can never leave the root. Leaf operations go
 * through the resolved parent directory and the leaf name, so a symlink leaf is seen (lstat),
 * replaced (write_file: temp + rename) or removed, never followed. Created files and dirs are
 * fchown'ed to the sandbox user; writes into the read-only root fail EROFS as inside.
 *
 * Confined operations (enum b4_fs_flags) resolve from a dirfd of the workspace instead: the
 * workspace is opened in the root with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS (a real directory
 * at /workspace), then the rest of the path beneath it with RESOLVE_BENEATH, plus
 * RESOLVE_NO_SYMLINKS when asked. The check is the resolution itself, so a symlink swapped in
 * by the sandbox makes the operation fail (EXDEV, ELOOP) instead of moving it.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "native.h"

#define SYMLINK_MAX  40
#define OPEN_RETRIES 64 /* openat2 EAGAIN (a rename raced a ".." walk): bounded retries */

/* Lexically normalise an absolute path: collapse "//", "." and ".." (".." at "/" stays). */
static int normalize(const char *path, char **ret)
{
        cleanup_free char *out = b4_malloc(strlen(path) + 2);
        size_t n = 0;

        if (!out)
                return -ENOMEM;
        if (path[0] != '/')
                return -EINVAL;
        for (const char *p = path; *p;) {
                while (*p == '/')
                        p++;
                const char *e = strchrnul(p, '/');
                size_t len = (size_t)(e - p);
                if (len == 0 || (len == 1 && p[0] == '.')) {
                } else if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 0 && out[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;
                } else {
                        out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                p = e;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

/* The root-relative form of @path for @c: "/workspace/x" -> "/x" when stripping. */
static int to_root(const struct fsctx *c, const char *path, char **ret)
{
        cleanup_free char *norm = NULL;
        size_t n;
        int r;

        r = normalize(path, &norm);
        if (r < 0)
                return r;
        if (!c->strip) {
                *ret = TAKE_PTR(norm);
                return 0;
        }
        n = strlen(c->strip);
        if (strncmp(norm, c->strip, n) != 0 || (norm[n] != '/' && norm[n] != '\0'))
                return -ENOENT;
        *ret = b4_strdup(norm[n] ? norm + n : "/");
        return *ret ? 0 : -ENOMEM;
}

static int open_how(int dirfd, const char *rel, int flags, mode_t mode, uint64_t resolve)
{
        struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
                                .mode = (flags & O_CREAT) ? mode : 0,
                                .resolve = resolve | RESOLVE_NO_MAGICLINKS };
        long fd = -1;

        for (int i = 0; i < OPEN_RETRIES; i++) {
                fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
                if (fd >= 0 || errno != EAGAIN)
                        break;
        }
        if (fd < 0 && errno == EAGAIN)
                return -EBUSY; /* never -EAGAIN: core reads that as a lost keeper and replaces it */
        return fd < 0 ? -errno : (int)fd;
}

/* @rel (normalised, root-relative) relative to the workspace: "." for the workspace itself,
 * NULL when @rel is not in it. */
static const char *in_workspace(const struct fsctx *c, const char *rel)
{
        size_t n = c->strip ? 0 : strlen(B4_WORKSPACE_ROOT);

        if (n && (strncmp(rel, B4_WORKSPACE_ROOT, n) != 0 || (rel[n] != '/' && rel[n] != '\0')))
                return NULL;
        return rel[n] && rel[n + 1] ? rel + n + 1 : ".";
}

/* The workspace dirfd (borrowed): the root itself for a view rooted at the workspace, else
 * the directory at /workspace, opened once per operation without following a symlink. */
static int workspace_fd(struct fsctx *c)
{
        if (c->strip)
                return c->root_fd;
        if (c->ws_fd < 0)
                c->ws_fd = open_how(c->root_fd, B4_WORKSPACE_ROOT, O_PATH | O_DIRECTORY, 0,
                                    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
        return c->ws_fd;
}

/* Open @rel (normalised, root-relative) as the operation's confinement says. */
static int open_in(struct fsctx *c, const char *rel, int flags, mode_t mode)
{
        uint64_t resolve = c->confine & B4_FS_NO_SYMLINKS ? RESOLVE_NO_SYMLINKS : 0;
        const char *sub;
        int wfd;

        if (!(c->confine & B4_FS_BENEATH))
                return open_how(c->root_fd, rel, flags, mode, resolve | RESOLVE_IN_ROOT);
        sub = in_workspace(c, rel);
        if (!sub)
                return -EXDEV;
        wfd = workspace_fd(c);
        if (wfd < 0)
                return wfd;
        return open_how(wfd, sub, flags, mode, resolve | RESOLVE_BENEATH);
}

/* The workspace itself under a confined operation: it exists by construction. */
static bool is_jail_root(const struct fsctx *c, const char *rel)
{
        const char *sub = c->confine & B4_FS_BENEATH ? in_workspace(c, rel) : NULL;

        return sub && strcmp(sub, ".") == 0;
}

/* Open the parent of @rel (normalised, root-relative) and return the leaf name. */
static int open_parent(struct fsctx *c, const char *rel, int *ret_fd, const char **ret_leaf)
{
        cleanup_free char *parent = NULL;
        const char *slash = strrchr(rel, '/');
        int fd;

        if (strcmp(rel, "/") == 0) {
                fd = open_in(c, "/", O_PATH | O_DIRECTORY, 0);
                *ret_leaf = ".";
        } else {
                parent = b4_strndup(rel, slash == rel ? 1 : (size_t)(slash - rel));
                if (!parent)
                        return -ENOMEM;
                fd = open_in(c, parent, O_PATH | O_DIRECTORY, 0);
                *ret_leaf = slash + 1;
        }
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        return 0;
}

static enum b4_file_kind kind_of(mode_t m)
{
        if (S_ISREG(m))
                return B4_FILE_REGULAR;
        if (S_ISDIR(m))
                return B4_FILE_DIRECTORY;
        if (S_ISLNK(m))
                return B4_FILE_SYMLINK;
        return B4_FILE_OTHER;
}

static void fill_stat(const struct stat *st, struct b4_stat *ret)
{
        *ret = (struct b4_stat){
                .kind = kind_of(st->st_mode),
                .size = (uint64_t)st->st_size,
                .executable = (st->st_mode & 0111) != 0,
                .mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000,
        };
}

static int read_link_at(int dirfd, const char *leaf, char **ret)
{
        char buf[4096];
        ssize_t n = readlinkat(dirfd, leaf, buf, sizeof(buf) - 1);

        if (n < 0)
                return -errno;
        *ret = b4_strndup(buf, (size_t)n);
        return *ret ? 0 : -ENOMEM;
}

/* ---- operations over a context ---- */

static int do_read(struct fsctx *c, const char *rel, uint64_t max, char **ret, size_t *ret_len)
{
        cleanup_close int fd = open_in(c, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((uint64_t)st.st_size > max)
                return -EFBIG; /* before reading: a sparse file costs nothing */
        return read_full_fd(fd, max >= SIZE_MAX ? STRBUF_UNLIMITED : (size_t)max, ret, ret_len);
}

/* pread() the range into a buffer of exactly the bytes that exist there. */
static int do_read_range(struct fsctx *c,
                         const char *rel,
                         uint64_t offset,
                         uint64_t length,
                         char **ret,
                         size_t *ret_len,
                         uint64_t *ret_size)
{
        cleanup_close int fd = open_in(c, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
        cleanup_free char *buf = NULL;
        size_t want, got = 0;
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        want = offset >= (uint64_t)st.st_size ? 0 : (size_t)((uint64_t)st.st_size - offset);
        if ((uint64_t)want > length)
                want = (size_t)length;
        buf = b4_malloc(want + 1);
        if (!buf)
                return -ENOMEM;
        while (got < want) { /* a file shrinking meanwhile ends the read early */
                ssize_t n = pread(fd, buf + got, want - got, (off_t)(offset + got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = got;
        *ret_size = (uint64_t)st.st_size;
        return 0;
}

static int do_lstat(struct fsctx *c, const char *rel, struct b4_stat *ret)
{
        cleanup_close int dfd = -EBADF;
        const char *leaf;
        struct stat st;
        int r;

        r = open_parent(c, rel, &dfd, &leaf);
        if (r < 0)
                return r;
        if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        fill_stat(&st, ret);
        if (S_ISLNK(st.st_mode)) {
                r = read_link_at(dfd, leaf, &ret->target);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int do_stat(struct fsctx *c, const char *rel, struct b4_stat *ret)
{
        cleanup_close int fd = open_in(c, rel, O_PATH, 0);
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        fill_stat(&st, ret);
        return 0;
}

static int do_list(struct fsctx *c, const char *rel, char ***ret)
{
        cleanup_(closedirp) DIR *d = NULL;
        cleanup_strv char **names = NULL;
        struct dirent *de;
        int fd;

        fd = open_in(c, rel, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        for (size_t n = 0; (errno = 0, de = readdir(d));) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (++n > B4_LIST_MAX_ENTRIES)
                        return -E2BIG;
                if (strv_extend(&names, de->d_name) < 0)
                        return -ENOMEM;
        }
        if (errno)
                return -errno;
        if (!names && !(names = b4_calloc(1, sizeof(char *))))
                return -ENOMEM;
        strv_sort(names);
        *ret = TAKE_PTR(names);
        return 0;
}

/* One step of the realpath walk: @res is resolved (no links); classify res/@comp. */
static int chase_one(
        struct fsctx *c, const char *res, const char *comp, struct stat *st, char **link)
{
        cleanup_close int dfd = open_in(c, *res ? res : "/", O_PATH | O_DIRECTORY, 0);

        if (dfd < 0)
                return dfd;
        if (fstatat(dfd, comp, st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return S_ISLNK(st->st_mode) ? read_link_at(dfd, comp, link) : 0;
}

static void pop_last(struct strbuf *res)
{
        while (res->len > 0 && res->buf[res->len - 1] != '/')
                res->len--;
        if (res->len > 0)
                res->len--;
        if (res->buf)
                res->buf[res->len] = '\0';
}

/* Resolve links and "..", tolerating a missing tail (realpath -m), inside the root. */
static int chase(struct fsctx *c, const char *rel, struct strbuf *res)
{
        cleanup_free char *todo = b4_strdup(rel);
        bool missing = false;
        int links = 0, r = 0;

        if (!todo)
                return -ENOMEM;
        for (char *p = todo; r >= 0 && *p;) {
                cleanup_free char *link = NULL, *rest = NULL;
                struct stat st;
                while (*p == '/')
                        p++;
                char *e = strchrnul(p, '/');
                char saved = *e;
                *e = '\0';
                if (!*p || strcmp(p, ".") == 0) {
                } else if (strcmp(p, "..") == 0) {
                        pop_last(res);
                } else if (!missing &&
                           (r = chase_one(c, res->buf ? res->buf : "", p, &st, &link)) < 0 &&
                           (r == -ENOENT || r == -ENOTDIR)) {
                        missing = true;
                        r = strbuf_addf(res, "/%s", p);
                } else if (r >= 0 && link) {
                        if (++links > SYMLINK_MAX)
                                return -ELOOP;
                        *e = saved;
                        if (link[0] == '/')
                                strbuf_reset(res);
                        if (b4_asprintf(&rest, "%s/%s", link, e) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = TAKE_PTR(rest);
                        p = todo;
                        continue;
                } else if (r >= 0) {
                        r = strbuf_addf(res, "/%s", p);
                }
                *e = saved;
                p = e;
        }
        return r;
}

/* A canonical path longer than PATH_MAX could not be opened anyway: -ENAMETOOLONG. */
static int do_realpath(struct fsctx *c, const char *rel, char **ret)
{
        struct strbuf res;
        int r;

        strbuf_init(&res, PATH_MAX);
        r = chase(c, rel, &res);
        if (r == -E2BIG)
                r = -ENAMETOOLONG;
        if (r >= 0)
                r = b4_asprintf(ret, "%s%s", c->strip ? c->strip : "",
                                res.len ? res.buf : (c->strip ? "" : "/"));
        strbuf_release(&res);
        return r < 0 ? r : 0;
}

static int own(const struct fsctx *c, int dirfd, const char *leaf)
{
        if (c->chown && fchownat(dirfd, leaf, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

static int do_mkdir_p(struct fsctx *c, const char *rel)
{
        cleanup_free char *prefix = b4_strdup(rel);
        int r;

        if (!prefix)
                return -ENOMEM;
        for (char *p = prefix + 1; *p;) {
                cleanup_close int dfd = -EBADF;
                char *e = strchrnul(p, '/');
                char saved = *e;
                const char *leaf;
                *e = '\0';
                if (is_jail_root(c, prefix)) {
                        *e = saved;
                        p = saved ? e + 1 : e;
                        continue;
                }
                r = open_parent(c, prefix, &dfd, &leaf);
                if (r < 0)
                        return r;
                if (mkdirat(dfd, leaf, 0755) == 0)
                        r = own(c, dfd, leaf);
                else
                        r = errno == EEXIST ? 0 : -errno;
                if (r < 0)
                        return r;
                *e = saved;
                p = saved ? e + 1 : e;
        }
        cleanup_close int fd = open_in(c, rel, O_PATH | O_DIRECTORY, 0);
        return fd < 0 ? fd : 0;
}

static int write_tmp(
        struct fsctx *c, int dfd, const char *tmp, const void *data, size_t len, mode_t mode)
{
        cleanup_close int fd =
                openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, data, len);
        if (r >= 0 && c->chown && fchown(fd, c->uid, c->gid) < 0)
                r = -errno;
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = -errno;
        return r;
}

static int do_write(struct fsctx *c, const char *rel, const void *data, size_t len)
{
        cleanup_free char *parent = NULL;
        cleanup_close int dfd = -EBADF, pfd = -EBADF;
        const char *leaf;
        struct stat st;
        mode_t mode = 0644;
        uint64_t rnd = 0;
        char tmp[64];
        int r;

        if (strcmp(rel, "/") == 0)
                return -EISDIR;
        parent = b4_strndup(rel, (size_t)(strrchr(rel, '/') - rel));
        if (!parent)
                return -ENOMEM;
        if (*parent) {
                r = do_mkdir_p(c, parent);
                if (r < 0)
                        return r;
        }
        r = open_parent(c, rel, &pfd, &leaf);
        if (r < 0)
                return r;
        dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                mode = st.st_mode & 0777; /* L13: a write drops setuid, setgid (as the kernel
                                             does for a writer without CAP_FSETID) */
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
                rnd = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&rnd;
        (void)snprintf(tmp, sizeof(tmp), ".b4box-tmp-%016llx", (unsigned long long)rnd);
        r = write_tmp(c, dfd, tmp, data, len, mode);
        if (r >= 0)
                r = RET_NERRNO(renameat(dfd, tmp, dfd, leaf));
        if (r < 0)
                (void)unlinkat(dfd, tmp, 0);
        return r;
}

static int do_remove(struct fsctx *c, const char *rel)
{
        cleanup_close int dfd = -EBADF;
        const char *leaf;
        int r;

        r = open_parent(c, rel, &dfd, &leaf);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (strcmp(leaf, ".") == 0)
                return -EBUSY;
        if (unlinkat(dfd, leaf, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR)
                return -errno;
        return unlinkat(dfd, leaf, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -errno;
}

static int do_touch(struct fsctx *c, const char *rel)
{
        cleanup_close int fd =
                open_in(c, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_NONBLOCK, 0644);

        if (fd >= 0 && c->chown && fchown(fd, c->uid, c->gid) < 0)
                return -errno;
        if (fd == -EEXIST)
                fd = open_in(c, rel, O_PATH, 0);
        if (fd < 0)
                return fd;
        cleanup_free char *p = NULL;
        if (b4_asprintf(&p, "/proc/self/fd/%d", fd) < 0)
                return -ENOMEM;
        return RET_NERRNO(utimensat(AT_FDCWD, p, NULL, 0));
}

/* The parent of @rel, created (mkdir -p) when missing. */
static int open_parent_p(struct fsctx *c, const char *rel, int *ret_fd, const char **ret_leaf)
{
        cleanup_free char *parent = NULL;
        const char *slash = strrchr(rel, '/');
        int r;

        if (slash && slash != rel) {
                parent = b4_strndup(rel, (size_t)(slash - rel));
                if (!parent)
                        return -ENOMEM;
                r = do_mkdir_p(c, parent);
                if (r < 0)
                        return r;
        }
        return open_parent(c, rel, ret_fd, ret_leaf);
}

static int do_symlink(struct fsctx *c, const char *target, const char *rel)
{
        cleanup_close int dfd = -EBADF;
        const char *leaf;
        int r;

        r = open_parent_p(c, rel, &dfd, &leaf);
        if (r < 0)
                return r;
        if (symlinkat(target, dfd, leaf) < 0)
                return -errno;
        return own(c, dfd, leaf);
}

/* chmod through an O_PATH fd of the leaf, never following a symlink leaf. */
static int do_chmod(struct fsctx *c, const char *rel, uint32_t mode)
{
        cleanup_close int fd = open_in(c, rel, O_PATH | O_NOFOLLOW, 0);
        cleanup_free char *p = NULL;
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        if (b4_asprintf(&p, "/proc/self/fd/%d", fd) < 0)
                return -ENOMEM;
        return RET_NERRNO(fchmodat(AT_FDCWD, p, (mode_t)(mode & 07777), 0));
}

/* ---- the b4_fs_ops members: enter the owner's context, map the path, run, leave ---- */

struct op {
        struct b4_fs *fs;
        struct fsctx c;
        char *rel;
        bool entered;
};

/* Enter @fs and set the operation's confinement. */
static int ctx_enter(struct b4_fs *fs, unsigned flags, struct fsctx *c, struct b4_error *err)
{
        int r = native_fs_enter(fs, c, err);

        if (r < 0)
                return r;
        c->confine = flags;
        c->ws_fd = -EBADF;
        return 0;
}

static void ctx_leave(struct b4_fs *fs, struct fsctx *c)
{
        c->ws_fd = safe_close(c->ws_fd);
        native_fs_leave(fs, c);
}

static int op_begin(
        struct op *o, struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        int r;

        *o = (struct op){ .fs = fs };
        if (!path || path[0] != '/')
                return b4_error_set(err, -EINVAL, "path '%s' is not absolute", path ? path : "");
        r = ctx_enter(fs, flags, &o->c, err);
        if (r < 0)
                return r;
        o->entered = true;
        return to_root(&o->c, path, &o->rel);
}

static int op_end(struct op *o, int r, struct b4_error *err, const char *name, const char *path)
{
        bool entered = o->entered;

        if (entered)
                ctx_leave(o->fs, &o->c);
        free(o->rel);
        *o = (struct op){ 0 };
        if (r < 0 && entered)
                return b4_error_set(err, r, "%s %s: %s", name, path, strerror(-r));
        return r;
}

static int fs_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_read(&o.c, o.rel, max, ret, ret_len);
        if (r == -EFBIG) {
                (void)op_end(&o, 0, err, "", "");
                return r; /* core words it */
        }
        return op_end(&o, r, err, "readFile", path);
}

static int fs_read_range(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         uint64_t offset,
                         uint64_t length,
                         char **ret,
                         size_t *ret_len,
                         uint64_t *ret_size,
                         struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_read_range(&o.c, o.rel, offset, length, ret, ret_len, ret_size);
        return op_end(&o, r, err, "readRange", path);
}

static int fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = do_lstat(&o.c, o.rel, ret);
        return op_end(&o, r, err, "lstat", path);
}

static int fs_stat(struct b4_fs *fs,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_stat(&o.c, o.rel, ret);
        return op_end(&o, r, err, "stat", path);
}

static int fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_list(&o.c, o.rel, ret);
        if (r == -E2BIG) {
                (void)op_end(&o, 0, err, "", "");
                return r; /* core words it */
        }
        return op_end(&o, r, err, "listDir", path);
}

static int fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = do_realpath(&o.c, o.rel, ret);
        return op_end(&o, r, err, "realPath", path);
}

static int fs_write_file(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_write(&o.c, o.rel, data, len);
        return op_end(&o, r, err, "writeFile", path);
}

static int fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = strcmp(o.rel, "/") == 0 ? 0 : do_mkdir_p(&o.c, o.rel);
        return op_end(&o, r, err, "mkdir", path);
}

static int fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = do_remove(&o.c, o.rel);
        return op_end(&o, r, err, "removeFile", path);
}

static int fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, flags, err);

        if (r >= 0)
                r = do_touch(&o.c, o.rel);
        return op_end(&o, r, err, "touchFile", path);
}

static int fs_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = do_symlink(&o.c, target, o.rel);
        return op_end(&o, r, err, "symlink", path);
}

static int fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err)
{
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0)
                r = do_chmod(&o.c, o.rel, mode);
        return op_end(&o, r, err, "chmod", path);
}

/* ---- walk: one pass over dirfds, lstat only, never following a link ---- */

struct walker {
        size_t max;
        struct b4_walk_entry *v;
        size_t n, cap;
};

static int walker_push(struct walker *w, const char *rel, const char *name, struct b4_stat *st)
{
        struct b4_walk_entry *nv;

        if (w->n >= w->max)
                return -E2BIG;
        if (w->n == w->cap) {
                nv = b4_reallocarray(w->v, w->cap ? w->cap * 2 : 64, sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                w->v = nv;
                w->cap = w->cap ? w->cap * 2 : 64;
        }
        if (b4_asprintf(&w->v[w->n].path, "%s%s%s", rel, *rel ? "/" : "", name) < 0)
                return -ENOMEM;
        w->v[w->n].st = *st;
        *st = (struct b4_stat){ 0 };
        w->n++;
        return 0;
}

static int walk_fd(struct walker *w, int dfd, const char *rel, char *const *prune, int depth);

static int walk_entry(
        struct walker *w, int dfd, const char *rel, const char *name, char *const *prune, int depth)
{
        struct b4_stat bst = { 0 };
        struct stat st;
        int r;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        fill_stat(&st, &bst);
        if (S_ISLNK(st.st_mode)) {
                r = read_link_at(dfd, name, &bst.target);
                if (r < 0)
                        return r;
        }
        r = walker_push(w, rel, name, &bst);
        b4_stat_clear(&bst);
        if (r < 0 || !S_ISDIR(st.st_mode) || (depth == 0 && strv_contains(prune, name)))
                return r;
        cleanup_free char *crel = b4_strdup(w->v[w->n - 1].path);
        int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (!crel) {
                safe_close(cfd);
                return -ENOMEM;
        }
        if (cfd < 0)
                return errno == ENOENT ? 0 : -errno;
        return walk_fd(w, cfd, crel, prune, depth + 1); /* takes cfd */
}

static int walk_fd(struct walker *w, int dfd, const char *rel, char *const *prune, int depth)
{
        cleanup_(closedirp) DIR *d = fdopendir(dfd);
        cleanup_strv char **names = NULL;
        struct dirent *de;
        int r;

        if (!d) {
                r = -errno;
                safe_close(dfd);
                return r;
        }
        if (depth > 256)
                return -ELOOP;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    strv_extend(&names, de->d_name) < 0)
                        return -ENOMEM;
        strv_sort(names);
        STRV_FOREACH (name, names) {
                r = walk_entry(w, dirfd(d), rel, *name, prune, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int fs_walk(struct b4_fs *fs,
                   const char *path,
                   size_t max,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        struct walker w = { .max = max };
        struct op o;
        int r = op_begin(&o, fs, path, 0, err);

        if (r >= 0) {
                int fd = open_in(&o.c, o.rel, O_RDONLY | O_DIRECTORY, 0);
                r = fd < 0 ? fd : walk_fd(&w, fd, "", prune, 0);
        }
        if (r == -E2BIG) {
                (void)op_end(&o, 0, err, "", "");
                b4_walk_entries_free(w.v, w.n);
                return r; /* core words it */
        }
        r = op_end(&o, r, err, "walk", path);
        if (r < 0) {
                b4_walk_entries_free(w.v, w.n);
                return r;
        }
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

/* Batched bounded reads under one enter/leave; per-file errors stay in the blobs. */
static int fs_read_files(struct b4_fs *fs,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        struct b4_blob *b = b4_calloc(n ? n : 1, sizeof(*b));
        struct fsctx c;
        int r;

        if (!b)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = ctx_enter(fs, 0, &c, err);
        if (r < 0) {
                free(b);
                return r;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                cleanup_free char *rel = NULL;
                int k = reqs[i].path && reqs[i].path[0] == '/' ? to_root(&c, reqs[i].path, &rel)
                                                               : -EINVAL;
                if (k >= 0)
                        k = do_read(&c, rel, reqs[i].max_bytes, &b[i].data, &b[i].len);
                if (k == -ENOMEM)
                        r = k;
                b[i].error = k < 0 ? k : 0;
        }
        ctx_leave(fs, &c);
        if (r < 0) {
                b4_blobs_free(b, n);
                return b4_error_set(err, r, "out of memory");
        }
        *ret = b;
        return 0;
}

const struct b4_fs_ops native_fs_ops = {
        .read_file = fs_read_file,
        .read_range = fs_read_range,
        .lstat = fs_lstat,
        .stat = fs_stat,
        .list_dir = fs_list_dir,
        .realpath = fs_realpath,
        .write_file = fs_write_file,
        .mkdir_p = fs_mkdir_p,
        .remove = fs_remove,
        .touch = fs_touch,
        .walk = fs_walk,
        .read_files = fs_read_files,
        .symlink = fs_symlink,
        .chmod = fs_chmod,
};

const struct b4_fs_ops native_fs_read_ops = {
        .read_file = fs_read_file,
        .read_range = fs_read_range,
        .lstat = fs_lstat,
        .stat = fs_stat,
        .list_dir = fs_list_dir,
        .realpath = fs_realpath,
        .walk = fs_walk,
        .read_files = fs_read_files,
};
