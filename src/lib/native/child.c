/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The clone child (STYLE.md 5.9): the only code that runs between clone3() and the exec of
 * the keeper. It is a copy of a possibly multi-threaded process, so it is async-signal-safe:
 * raw syscalls on pre-opened fds and the parent's precomputed op list, no allocation, no
 * stdio, no cleanup attributes. A failure is reported as {step, errno} on err_fd and the
 * parent turns it into a message; a successful exec closes err_fd (CLOEXEC) instead.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keeper-proto.h"
#include "native.h"

static _Noreturn void fail(const struct child_plan *p, int step, int e)
{
        struct child_failure f = { .step = step, .error = e };

        (void)!write(p->err_fd, &f, sizeof(f));
        _exit(1);
}

/* The acquire trace's stamp (trace.c): clock_gettime() is async-signal-safe (the vDSO). */
static void stamp(const struct child_plan *p, size_t slot)
{
        struct timespec ts;

        if (!p->trace || slot >= TRACE_CHILD_SLOTS)
                return;
        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        p->trace[slot] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int lo_up(void)
{
        struct ifreq ifr;
        int s, r = 0;

        s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -errno;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
                r = -errno;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (r == 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
                r = -errno;
        (void)close(s);
        return r;
}

static int pivot(const char *root)
{
        if (chdir(root) < 0)
                return -errno;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return -errno;
        if (umount2(".", MNT_DETACH) < 0)
                return -errno;
        if (chdir("/") < 0)
                return -errno;
        return 0;
}

static int mkfile(const char *path, unsigned int mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

        if (fd < 0)
                return -errno;
        (void)close(fd);
        return 0;
}

static int run_op(const struct child_op *op)
{
        switch (op->type) {
        case CHILD_OP_MOUNT:
                return mount(op->src, op->dst, op->fstype, op->flags, op->data) < 0 ? -errno : 0;
        case CHILD_OP_MKDIR:
                return mkdir(op->dst, op->mode) < 0 && errno != EEXIST ? -errno : 0;
        case CHILD_OP_SYMLINK:
                return symlink(op->src, op->dst) < 0 ? -errno : 0;
        case CHILD_OP_MKFILE:
                return mkfile(op->dst, op->mode);
        case CHILD_OP_UNLINK:
                return unlink(op->dst) < 0 ? -errno : 0;
        case CHILD_OP_PIVOT:
                return pivot(op->dst);
        case CHILD_OP_LO_UP:
                return lo_up();
        case CHILD_OP_HOSTNAME:
                return sethostname(op->src, strlen(op->src)) < 0 ? -errno : 0;
        }
        return -EINVAL;
}

/* Move an fd above the stdio/listen range so the final dup3()s cannot clobber it. */
static int lift(const struct child_plan *p, int fd)
{
        int n = fcntl(fd, F_DUPFD_CLOEXEC, 10);

        if (n < 0)
                fail(p, -1, errno);
        return n;
}

/*
 * Audit L6: nothing the launching process inherited may reach the keeper (which outlives it).
 * Close every fd above the listen fd except err_fd and exe_fd (both CLOEXEC: they stay
 * usable until the exec itself). close_range() (Linux 5.9) is what commands use too.
 */
/* Close every fd from 3 up except the @n in @keep (distinct, any order). */
static void close_all_but(const struct child_plan *p, int *keep, int n)
{
        unsigned int from = 3;

        for (int i = 1; i < n; i++) /* insertion sort: n is at most 10 */
                for (int k = i; k > 0 && keep[k - 1] > keep[k]; k--) {
                        int t = keep[k];
                        keep[k] = keep[k - 1];
                        keep[k - 1] = t;
                }
        for (int i = 0; i <= n; i++) {
                unsigned int to = i < n ? (unsigned int)keep[i] : 0U;
                if (i < n && to < from) /* at or below a fd already passed */
                        continue;
                if ((i == n || to > from) &&
                    syscall(SYS_close_range, from, i < n ? to - 1 : ~0U, 0U) < 0)
                        fail(p, -1, errno);
                if (i < n)
                        from = to + 1;
        }
}

/* Right after the clone: this copy of the server holds every fd the server had (the state
 * dir lock, other keepers' handshake sockets, client connections); none may outlive a
 * server that dies while we wait (audit L6). */
static void close_early(const struct child_plan *p)
{
        int keep[4 + CGROUP_V1_MAX + 2] = { p->err_fd, p->listen_fd, p->exe_fd, p->sync_fd };
        int n = 4;

        for (size_t i = 0; i < p->n_cg_procs && i < CGROUP_V1_MAX + 2; i++)
                keep[n++] = p->cg_procs[i];
        close_all_but(p, keep, n);
}

/* Into the thread's cgroups, before anything else runs (and before the cgroup namespace,
 * whose root they become): "0" is the writer itself. The files are the provider's (its
 * credentials are the ones checked). On cgroup v1 each first write waits for an RCU grace
 * period, which the provider spends on the network meanwhile. */
static void enter_cgroups(const struct child_plan *p)
{
        for (size_t i = 0; i < p->n_cg_procs; i++) {
                if (write(p->cg_procs[i], "0", 1) != 1)
                        fail(p, CHILD_STEP_CGROUP, errno);
                (void)close(p->cg_procs[i]);
        }
}

/* Before exec: only the keeper's socket; the error pipe and the binary's fd are CLOEXEC. */
static void close_inherited(const struct child_plan *p)
{
        int keep[] = { KEEPER_LISTEN_FD, p->err_fd, p->exe_fd };

        close_all_but(p, keep, 3);
}

/* Rootless: the keeper runs as a non-zero uid and loses its capabilities at exec, so the
 * bounding and ambient sets are emptied here, while CAP_SETPCAP is still held. */
static void drop_bounding(const struct child_plan *p)
{
        for (int cap = 0; cap < 64; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        fail(p, (int)p->n_ops, errno);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                fail(p, (int)p->n_ops, errno);
}

/* Raise the effective set to the permitted one (a change of euid away from 0 empties it). */
static int caps_effective(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[0].effective = d[0].permitted;
        d[1].effective = d[1].permitted;
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/*
 * As root: leave the host's user namespace for one of our own, wait for the parent to map it
 * to the thread's block, and become its root. The namespace is created with the block's base
 * as euid, so it is owned by that (otherwise unused) host uid, not by root: the kernel gives
 * the owner of a user namespace every capability in it, and the server, whose file operations
 * run as the sandbox user without capabilities (creds.c), must not get them back that way
 * (e.g. CAP_SYS_PTRACE over the keeper's /proc/1). Raw syscalls: glibc's set*id would try to
 * signal the parent's other threads, which this copy of the process does not have.
 */
static void enter_userns(const struct child_plan *p)
{
        char c;
        int r;

        if (syscall(SYS_setgroups, 0, NULL) < 0 ||
            syscall(SYS_setresuid, -1, p->userns_owner, -1) < 0)
                fail(p, CHILD_STEP_USERNS, errno);
        r = caps_effective();
        if (r < 0)
                fail(p, CHILD_STEP_USERNS, -r);
        if (unshare(CLONE_NEWUSER) < 0)
                fail(p, CHILD_STEP_USERNS, errno);
        stamp(p, TRACE_CHILD_USERNS_ASK);
        if (write(p->sync_fd, "u", 1) != 1 || read(p->sync_fd, &c, 1) != 1 || c != 'm')
                _exit(1);
        if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0)
                fail(p, CHILD_STEP_USERNS, errno);
        stamp(p, TRACE_CHILD_USERNS);
}

_Noreturn void child_main(const struct child_plan *plan)
{
        struct child_plan p = *plan;
        char *const argv[] = { (char *)"b4box-keeper", NULL };
        char *const envp[] = { NULL };
        char go;
        int null_fd;

        p.err_fd = lift(&p, p.err_fd);
        p.listen_fd = lift(&p, p.listen_fd);
        p.exe_fd = lift(&p, p.exe_fd);
        p.sync_fd = lift(&p, p.sync_fd);
        close_early(&p);
        if (read(p.sync_fd, &go, 1) != 1)
                _exit(1);
        stamp(&p, TRACE_CHILD_GO);
        enter_cgroups(&p);
        stamp(&p, TRACE_CHILD_CGROUP);
        if (unshare(CLONE_NEWCGROUP) < 0)
                fail(&p, -1, errno);
        stamp(&p, TRACE_CHILD_OP0);
        for (size_t i = 0; i < p.n_ops; i++) {
                int r = run_op(&p.ops[i]);
                if (r < 0 && !(p.ops[i].optional && r == -ENOENT))
                        fail(&p, (int)i, -r);
                stamp(&p, TRACE_CHILD_OP0 + i + 1);
        }
        if (p.late_userns)
                enter_userns(&p);
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                fail(&p, (int)p.n_ops, errno);
        null_fd = lift(&p, null_fd);
        if (dup3(p.listen_fd, KEEPER_LISTEN_FD, 0) < 0)
                fail(&p, (int)p.n_ops, errno);
        for (int fd = 0; fd < 3; fd++)
                if (dup3(null_fd, fd, 0) < 0)
                        fail(&p, (int)p.n_ops, errno);
        (void)setsid();
        if (p.drop_bounding)
                drop_bounding(&p);
        close_inherited(&p);
        stamp(&p, TRACE_CHILD_EXEC);
        syscall(SYS_execveat, p.exe_fd, "", argv, envp, AT_EMPTY_PATH);
        fail(&p, (int)p.n_ops, errno);
}
