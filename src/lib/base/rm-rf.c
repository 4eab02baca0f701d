/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recursive removal below a dirfd that never follows a symlink and never crosses a mount, for
 * a tree of any depth (audit L2: a sandbox can nest directories far deeper than any fixed
 * walk). The walk holds at most RM_DEPTH_MAX directory fds; a directory found deeper than
 * that is renamed up beside the tree being removed (same filesystem, so rename cannot fail
 * for distance) and removed from there in a later round, so depth costs rounds, never fds or
 * stack.
 */

#include "rm-rf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/strv.h"

#define RM_DEPTH_MAX 64

struct rm {
        int top_fd;     /* where deep subtrees are moved to */
        dev_t dev;      /* the filesystem we stay on */
        char **pending; /* names under top_fd still to remove */
        unsigned seq;
        const char *tag; /* names the moved subtrees: .<tag>.rm<seq> */
};

static int rm_children(struct rm *rm, int fd, int depth);

/* Move the too-deep directory @name (under @dirfd) up to top_fd for a later round. */
static int defer(struct rm *rm, int dirfd, const char *name)
{
        char moved[128];

        for (;;) {
                (void)snprintf(moved, sizeof(moved), ".%s.rm%u", rm->tag, rm->seq++);
                if (renameat2(dirfd, name, rm->top_fd, moved, RENAME_NOREPLACE) == 0)
                        break;
                if (errno != EEXIST)
                        return -errno;
        }
        return strv_extend(&rm->pending, moved) < 0 ? -ENOMEM : 0;
}

/* Subtrees an interrupted removal of the same tree moved up and left behind. */
static int find_leftovers(struct rm *rm)
{
        char prefix[80];
        int fd = fcntl(rm->top_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        int r = 0;

        if (!d) {
                safe_close(fd);
                return 0; /* nothing to add; the main removal reports real errors */
        }
        (void)snprintf(prefix, sizeof(prefix), ".%s.rm", rm->tag);
        while (r >= 0 && (de = readdir(d)))
                if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
                        r = strv_extend(&rm->pending, de->d_name) < 0 ? -ENOMEM : 0;
        (void)closedir(d);
        return r;
}

static int rm_entry(struct rm *rm, int dirfd, const char *name, int depth)
{
        struct stat st;
        int fd, r;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (st.st_dev != rm->dev)
                return -EXDEV;
        if (depth > RM_DEPTH_MAX)
                return defer(rm, dirfd, name);
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = rm_children(rm, fd, depth + 1); /* takes fd */
        if (r < 0)
                return r;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

static int rm_children(struct rm *rm, int fd, int depth)
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
                        r = rm_entry(rm, dirfd(d), de->d_name, depth);
        (void)closedir(d);
        return r;
}

int rm_rf_at(int dirfd, const char *name)
{
        struct rm rm = { .top_fd = dirfd, .tag = name };
        struct stat st;
        int r;

        if (fstat(dirfd, &st) < 0)
                return -errno;
        rm.dev = st.st_dev;
        r = find_leftovers(&rm);
        if (r >= 0)
                r = rm_entry(&rm, dirfd, name, 0);
        /* each round removes what it can and moves what lies deeper up for the next */
        while (r >= 0 && rm.pending && rm.pending[0]) {
                char **round = TAKE_PTR(rm.pending);
                STRV_FOREACH (p, round)
                        if (r >= 0)
                                r = rm_entry(&rm, dirfd, *p, 0);
                strv_free(round);
        }
        strv_free(rm.pending);
        return r;
}
