/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeper records and handles. A keeper outlives the process that started it, so the state
 * dir's run/<id>.keeper records "v2 <pid> <starttime> <identity>" (v2: the keeper speaks the
 * protocol with command cgroups; a v1 keeper of an older build is replaced, never adopted). A later
 * process adopts the keeper only if a pidfd opened on that pid names a process whose /proc start
 * time is the recorded one (checked after pidfd_open, so pid reuse cannot fool it) and the identity
 * matches; otherwise the keeper is killed and replaced. The control socket is
 * run/<id>.sock, reached through /proc/self/fd/<dirfd>/ when the path is too long.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/proc-util.h"
#include "native.h"

int keeper_record_write(int dirfd, const char *id, const struct keeper_record *rec)
{
        char name[64], buf[160];

        (void)snprintf(name, sizeof(name), "%s.keeper", id);
        (void)snprintf(buf, sizeof(buf), "v%d %d %" PRIu64 " %s\n", KEEPER_RECORD_VERSION,
                       (int)rec->pid, rec->starttime, rec->identity);
        return native_record_write(dirfd, name, buf);
}

int keeper_record_read(int dirfd, const char *id, struct keeper_record *ret)
{
        cleanup_free char *buf = NULL;
        char name[64];
        size_t len;
        int version, pid, r;
        unsigned long long st;

        (void)snprintf(name, sizeof(name), "%s.keeper", id);
        r = read_file_at(dirfd, name, 256, &buf, &len);
        if (r < 0)
                return r;
        *ret = (struct keeper_record){ 0 };
        if (sscanf(buf, "v%d %d %llu %64s", &version, &pid, &st, ret->identity) != 4 ||
            version < 1 || version > KEEPER_RECORD_VERSION || pid <= 1)
                return -EINVAL;
        ret->version = version;
        ret->pid = pid;
        ret->starttime = st;
        return 0;
}

int keeper_verify(const struct keeper_record *rec, int *ret_pidfd)
{
        cleanup_close int pidfd = pidfd_open(rec->pid, 0);
        uint64_t st;
        int r;

        if (pidfd < 0)
                return -errno;
        r = proc_starttime(rec->pid, &st);
        if (r < 0)
                return r;
        if (st != rec->starttime)
                return -ESRCH; /* the pid was reused by another process */
        *ret_pidfd = TAKE_FD(pidfd);
        return 0;
}

static void reap(int pidfd)
{
        siginfo_t si;

        (void)waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG);
}

void keeper_kill(int pidfd)
{
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        if (pidfd < 0)
                return;
        (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        (void)poll(&p, 1, 10000);
        reap(pidfd);
}

bool keeper_is_dead(int pidfd)
{
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        if (pidfd < 0)
                return true;
        if (poll(&p, 1, 0) == 0)
                return false;
        reap(pidfd);
        return true;
}

static int sock_addr(int dirfd, const char *run_dir, const char *id, struct sockaddr_un *sa)
{
        int n;

        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s.sock", run_dir, id);
        if (n > 0 && (size_t)n < sizeof(sa->sun_path))
                return 0;
        n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s.sock", dirfd, id);
        return n > 0 && (size_t)n < sizeof(sa->sun_path) ? 0 : -ENAMETOOLONG;
}

int keeper_connect(int dirfd, const char *run_dir, const char *id, int *ret_fd)
{
        cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa;
        int r;

        if (fd < 0)
                return -errno;
        r = sock_addr(dirfd, run_dir, id, &sa);
        if (r < 0)
                return r;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int keeper_listen(int dirfd, const char *run_dir, const char *id, int *ret_fd)
{
        cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa;
        char name[64];
        int r;

        if (fd < 0)
                return -errno;
        r = sock_addr(dirfd, run_dir, id, &sa);
        if (r < 0)
                return r;
        (void)snprintf(name, sizeof(name), "%s.sock", id);
        (void)unlinkat(dirfd, name, 0);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        if (fchmodat(dirfd, name, 0600, 0) < 0)
                return -errno;
        if (listen(fd, 128) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
