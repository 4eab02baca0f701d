/* SPDX-License-Identifier: Apache-2.0 */
/* Recursive removal below a dirfd that never follows a symlink and never crosses a mount. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "native.h"

#define RM_DEPTH_MAX 256

static int rm_children(int fd, dev_t dev, int depth);

static int rm_entry(int dirfd, const char *name, dev_t dev, int depth)
{
        struct stat st;
        int fd, r;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (st.st_dev != dev || depth > RM_DEPTH_MAX)
                return -EXDEV;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = rm_children(fd, dev, depth + 1); /* takes fd */
        if (r < 0)
                return r;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

static int rm_children(int fd, dev_t dev, int depth)
{
        DIR *d = fdopendir(fd);
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = -errno;
                safe_close(fd);
                return r;
        }
        while (r >= 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        r = rm_entry(dirfd(d), de->d_name, dev, depth);
        (void)closedir(d);
        return r;
}

int rm_rf_at(int dirfd, const char *name)
{
        struct stat st;

        if (fstat(dirfd, &st) < 0)
                return -errno;
        return rm_entry(dirfd, name, st.st_dev, 0);
}
