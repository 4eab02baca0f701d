/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A workspace of its own filesystem (resources.diskGb; audit L5, L7). As root, a thread whose
 * policy sets diskGb gets an ext4 image of that many GiB (sparse: it costs what is written),
 * native/disks/<id>.img, attached to a loop device and mounted (nosuid, nodev) on its
 * workspace dir in the host's mount namespace, so:
 *   - the workspace cannot grow past diskGb (ENOSPC inside, as on a full disk), and the host
 *     filesystem holding the state dir cannot be filled through it;
 *   - the sandbox's mountinfo shows "/" on /dev/loopN for /workspace, not the state dir's
 *     path on the host's block device.
 * The mount stays while the workspace exists (readers of a released thread read it too) and
 * comes back after a reboot at the next acquire or reader; the loop device is AUTOCLEAR, so
 * it goes with the last unmount. The image is made under a temporary name and renamed into
 * place once formatted, so a crash never leaves a half-made filesystem to mount. Its size is
 * fixed when it is made; a workspace that existed with content before diskGb was set stays a
 * plain directory (docs/native.md).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fd-util.h"
#include "base/macro.h"
#include "native.h"

static const char *const mkfs_paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4" };

static const char *mkfs_path(void)
{
        for (size_t i = 0; i < ELEMENTSOF(mkfs_paths); i++)
                if (access(mkfs_paths[i], X_OK) == 0)
                        return mkfs_paths[i];
        return NULL;
}

bool disk_available(const char **ret_why)
{
        const char *why = NULL;

        if (geteuid() != 0)
                why = "rootless mode cannot mount a filesystem per workspace";
        else if (access("/dev/loop-control", R_OK | W_OK) < 0)
                why = "no loop devices (/dev/loop-control)";
        else if (!mkfs_path())
                why = "mkfs.ext4 (e2fsprogs) is not installed";
        if (ret_why)
                *ret_why = why;
        return !why;
}

static void img_name(const char *id, bool tmp, char buf[64])
{
        (void)snprintf(buf, 64, "%s%s.img", tmp ? ".new-" : "", id);
}

/* mkfs.ext4 on the image @img_fd (as its fd 3): the root dir owned by the sandbox user, no
 * reserved blocks. */
static int mkfs(int img_fd, uint32_t uid, uint32_t gid)
{
        char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        char owner[64];
        int status;
        pid_t pid;

        (void)snprintf(owner, sizeof(owner), "root_owner=%" PRIu32 ":%" PRIu32, uid, gid);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null_fd < 0 || dup3(img_fd, 3, 0) < 0 || dup3(null_fd, 0, 0) < 0 ||
                    dup3(null_fd, 1, 0) < 0 || dup3(null_fd, 2, 0) < 0)
                        _exit(127);
                (void)close_range(4, ~0u, 0);
                execve(mkfs_path(),
                       (char *const[]){ (char *)"mkfs.ext4", (char *)"-q", (char *)"-F",
                                        (char *)"-m", (char *)"0", (char *)"-E", owner,
                                        (char *)"/proc/self/fd/3", NULL },
                       envp);
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* A sparse image of @gib GiB, formatted, renamed to its final name last. */
static int make_image(
        struct native_provider *np, const char *id, uint64_t gib, uint32_t uid, uint32_t gid)
{
        char tmp[64], name[64];
        int fd, r;

        img_name(id, true, tmp);
        img_name(id, false, name);
        (void)unlinkat(np->disks_fd, tmp, 0);
        fd = openat(np->disks_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = ftruncate(fd, (off_t)(gib << 30)) < 0 ? -errno : 0;
        if (r >= 0)
                r = mkfs(fd, uid, gid);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        (void)close(fd);
        if (r >= 0 && renameat(np->disks_fd, tmp, np->disks_fd, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(np->disks_fd, tmp, 0);
        return r;
}

/* A free loop device bound to @img_fd (AUTOCLEAR: it goes with the last unmount). */
static int loop_attach(int img_fd, char dev[32])
{
        struct loop_config cfg = { .fd = (uint32_t)img_fd,
                                   .info = { .lo_flags = LO_FLAGS_AUTOCLEAR } };
        cleanup_close int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

        if (ctl < 0)
                return -errno;
        for (int tries = 0; tries < 16; tries++) {
                long n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return -errno;
                (void)snprintf(dev, 32, "/dev/loop%ld", n);
                int fd = open(dev, O_RDWR | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                int r = ioctl(fd, LOOP_CONFIGURE, &cfg) < 0 ? -errno : 0;
                if (r == 0)
                        return fd; /* held until mounted */
                (void)close(fd);
                if (r != -EBUSY)
                        return r;
        }
        return -EBUSY; /* someone keeps taking the free one */
}

/* The loop device already backed by @img_fd's file, if any: an image must never be attached
 * twice (two ext4 mounts of one filesystem through two devices corrupt it), e.g. after a lazy
 * unmount whose last user has not let go yet. */
static int loop_find(int img_fd, char dev[32])
{
        cleanup_(closedirp) DIR *d = opendir("/sys/block");
        struct dirent *de;
        struct stat st;

        if (fstat(img_fd, &st) < 0)
                return -errno;
        while (d && (de = readdir(d))) {
                struct loop_info64 info;
                if (strncmp(de->d_name, "loop", 4) != 0 || strlen(de->d_name) > 20)
                        continue;
                (void)snprintf(dev, 32, "/dev/%.20s", de->d_name);
                int fd = open(dev, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (ioctl(fd, LOOP_GET_STATUS64, &info) == 0 && info.lo_device == st.st_dev &&
                    info.lo_inode == st.st_ino)
                        return fd;
                (void)close(fd);
        }
        return -ENOENT;
}

static bool is_mounted(int ws_fd, const char *id)
{
        struct stat top, st;

        return fstat(ws_fd, &top) == 0 && fstatat(ws_fd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode) && st.st_dev != top.st_dev;
}

static int mount_image(struct native_provider *np, const char *id, bool fresh)
{
        char name[64], dev[32], target[64];
        cleanup_close int img = -EBADF, loop = -EBADF, dir = -EBADF, root = -EBADF;

        img_name(id, false, name);
        img = openat(np->disks_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (img < 0)
                return -errno;
        dir = openat(np->ws_fd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        loop = loop_find(img, dev);
        if (loop < 0)
                loop = loop_attach(img, dev);
        if (loop < 0)
                return loop;
        (void)snprintf(target, sizeof(target), "/proc/self/fd/%d", dir);
        if (mount(dev, target, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
                return -errno;
        if (!fresh)
                return 0;
        /* mkfs's lost+found would be a workspace file like any other */
        root = openat(np->ws_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root >= 0)
                (void)unlinkat(root, "lost+found", AT_REMOVEDIR);
        return 0;
}

static bool dir_is_empty(int ws_fd, const char *id)
{
        int fd = openat(ws_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        bool empty = d != NULL;

        if (!d) {
                safe_close(fd);
                return false;
        }
        while (empty && (de = readdir(d)))
                empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        (void)closedir(d);
        return empty;
}

int disk_attach(struct native_provider *np,
                const char *id,
                uint64_t gib,
                uint32_t uid,
                uint32_t gid,
                struct b4_error *err)
{
        char name[64];
        bool fresh = false;
        int r;

        if (np->rootless || np->disks_fd < 0 || is_mounted(np->ws_fd, id))
                return 0;
        img_name(id, false, name);
        if (faccessat(np->disks_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return b4_error_set(err, -errno, "cannot look for the disk of %s", id);
                if (!gib || !disk_available(NULL) || !dir_is_empty(np->ws_fd, id))
                        return 0; /* a plain directory workspace */
                r = make_image(np, id, gib, uid, gid);
                if (r < 0)
                        return b4_error_set(err, r,
                                            "cannot make the %" PRIu64
                                            " GiB workspace filesystem (resources.diskGb)",
                                            gib);
                fresh = true;
        }
        r = mount_image(np, id, fresh);
        if (r < 0)
                return b4_error_set(err, r, "cannot mount the workspace filesystem %s/disks/%s",
                                    np->native_dir, name);
        return 0;
}

void disk_remove(struct native_provider *np, const char *id)
{
        char name[64], target[64];
        cleanup_close int dir = -EBADF;

        if (np->disks_fd < 0)
                return;
        if (is_mounted(np->ws_fd, id)) {
                dir = openat(np->ws_fd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                (void)snprintf(target, sizeof(target), "/proc/self/fd/%d", dir);
                if (dir >= 0)
                        (void)umount2(target, MNT_DETACH);
        }
        img_name(id, false, name);
        (void)unlinkat(np->disks_fd, name, 0);
        img_name(id, true, name);
        (void)unlinkat(np->disks_fd, name, 0);
}
