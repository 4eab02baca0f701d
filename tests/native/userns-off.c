/* SPDX-License-Identifier: Apache-2.0 */
/*
 * userns-off UID GID CMD...: run CMD as UID:GID inside a fresh user namespace whose
 * user.max_user_namespaces is 0, i.e. on a "host" where user namespaces are disabled, without
 * touching the real host's setting. Root only (it writes a two-line id map: 0 and UID).
 */

#ifndef _GNU_SOURCE
# define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        int r = 0;

        if (fd < 0)
                return -errno;
        if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
                r = -errno;
        close(fd);
        return r;
}

static int write_maps(pid_t pid, unsigned uid, unsigned gid)
{
        char path[64], map[64];

        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        snprintf(map, sizeof(map), "0 0 1\n%u %u 1\n", uid, uid);
        if (write_file(path, map) < 0)
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        snprintf(map, sizeof(map), "0 0 1\n%u %u 1\n", gid, gid);
        return write_file(path, map) < 0 ? -1 : 0;
}

static void child(int rd, unsigned uid, unsigned gid, char **argv)
{
        char go;

        if (unshare(CLONE_NEWUSER) < 0 || write(rd + 1, "u", 1) != 1)
                _exit(120);
        if (read(rd, &go, 1) != 1)
                _exit(121);
        if (write_file("/proc/sys/user/max_user_namespaces", "0") < 0)
                _exit(122);
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                _exit(123);
        execvp(argv[0], argv);
        _exit(127);
}

int main(int argc, char **argv)
{
        int to_child[2], to_parent[2], status;
        unsigned uid, gid;
        char c;
        pid_t pid;

        if (argc < 4)
                return 2;
        uid = (unsigned)strtoul(argv[1], NULL, 10);
        gid = (unsigned)strtoul(argv[2], NULL, 10);
        if (pipe(to_child) < 0 || pipe(to_parent) < 0)
                return 1;
        pid = fork();
        if (pid == 0) {
                /* the child reads to_child[0] and writes to_parent[1]; keep them adjacent */
                if (dup2(to_child[0], 10) < 0 || dup2(to_parent[1], 11) < 0)
                        _exit(119);
                child(10, uid, gid, argv + 3);
        }
        if (pid < 0 || read(to_parent[0], &c, 1) != 1 || write_maps(pid, uid, gid) < 0 ||
            write(to_child[1], "g", 1) != 1) {
                perror("userns-off");
                return 1;
        }
        if (waitpid(pid, &status, 0) != pid)
                return 1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
