/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-fd reads and writes with caps. */

#include "fd-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/error.h"

#include "alloc.h"
#include "macro.h"
#include "strbuf.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
        struct strbuf sb;
        char chunk[16384];
        int r;

        strbuf_init(&sb, max == STRBUF_UNLIMITED ? max : max + 1);
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        strbuf_release(&sb);
                        return r;
                }
                if (n == 0)
                        break;
                size_t room = sb.max - sb.len;
                r = strbuf_add(&sb, chunk, (size_t)n < room ? (size_t)n : room);
                if (r < 0) {
                        strbuf_release(&sb);
                        return r;
                }
                if (sb.len > max) {
                        strbuf_release(&sb);
                        return -EFBIG;
                }
        }
        return strbuf_detach(&sb, ret, ret_len);
}

int write_all(int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
        cleanup_close int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int write_string_at(int dirfd, const char *path, const char *s)
{
        cleanup_close int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return write_all(fd, s, strlen(s));
}

int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, int mode)
{
        char tmp[300];
        int fd, r;

        if (strlen(name) > 255)
                return -ENAMETOOLONG;
        (void)snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode);
        if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0)
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                            (mode_t)mode);
        if (fd < 0)
                return -errno;
        r = write_all(fd, data, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        (void)close(fd);
        if (r >= 0)
                r = renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0;
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

static int verify_private(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
                return -EPERM;
        return 0;
}

int open_private_dir_at(int dirfd, const char *name, int mode, int *ret_fd)
{
        int fd, r;

        if (mkdirat(dirfd, name, (mode_t)mode) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOTDIR ? -ELOOP : -errno; /* O_NOFOLLOW on a link: ENOTDIR */
        r = verify_private(fd);
        if (r < 0) {
                (void)close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int check_parents_private(const char *path)
{
        char buf[4096];
        size_t n = strlen(path);
        struct stat st;

        if (path[0] != '/' || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, path, n + 1);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        for (char *slash = strrchr(buf, '/'); slash; slash = strrchr(buf, '/')) {
                if (slash == buf) {
                        buf[1] = '\0';
                } else {
                        *slash = '\0';
                }
                if (lstat(buf, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode))
                        return -ELOOP; /* the caller passes a canonical path */
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
                    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
                        return -EPERM;
                if (slash == buf)
                        break;
        }
        return 0;
}

int state_dir_open(const char *path, int *ret_fd, struct b4_error *err)
{
        char *real = NULL;
        int fd = -EBADF, r;

        if (!path || path[0] != '/')
                return b4_error_set(err, -EINVAL, "the state dir must be an absolute path");
        r = open_private_dir_at(AT_FDCWD, path, 0700, &fd);
        if (r >= 0) {
                real = realpath(path, NULL); /* checksrc: allow (libc allocates) */
                r = real ? check_parents_private(real) : -errno;
                free(real);
        }
        if (r < 0) {
                if (fd >= 0)
                        (void)close(fd);
                return b4_error_set(err, r,
                                    "state dir '%s' cannot be trusted (%s): it must be a "
                                    "directory (not a symlink) owned by uid %u, not writable "
                                    "by group or others, inside directories that only root or "
                                    "uid %u can change",
                                    path, strerror(-r), (unsigned)geteuid(), (unsigned)geteuid());
        }
        *ret_fd = fd;
        return 0;
}

void closedirp(DIR **d)
{
        if (*d)
                (void)closedir(*d);
}
