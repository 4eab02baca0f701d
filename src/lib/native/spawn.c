/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start a keeper: clone3(CLONE_PIDFD) into new PID, mount, network, IPC and UTS namespaces
 * (plus a user namespace in rootless mode); while the child waits on a pipe the parent writes
 * its uid/gid maps (rootless), moves it into the thread's cgroup and shields it from the OOM
 * killer; then the child (child.c) unshares its cgroup namespace, builds the
 * root filesystem from the precomputed plan and execs the keeper binary from an fd. The
 * error pipe is CLOEXEC: EOF means the exec happened, a struct child_failure means it did not.
 *
 * As root with a host id block (idmap.c), the child builds its root as the host's root, then
 * enters a user namespace of its own and the parent maps it to the block: the mount, PID and
 * network namespaces stay owned by the host's user namespace, so the sandbox's root (the
 * block's first id, a nobody on the host) holds no capability over any of them.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/proc-util.h"
#include "native.h"

#define NS_FLAGS (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

static int oom_protect(pid_t pid)
{
        char path[64];

        (void)snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
        return write_string_at(AT_FDCWD, path, "-1000");
}

static int report_failure(const struct mount_plan *plan,
                          const struct child_failure *f,
                          struct b4_error *err)
{
        cleanup_free char *what = NULL;

        if (mount_plan_describe(plan, f->step, &what) < 0)
                return -ENOMEM;
        return b4_error_set(err, -f->error, "keeper setup failed: %s: %s", what,
                            strerror(f->error));
}

static pid_t do_clone(bool userns, int *ret_pidfd)
{
        struct clone_args args = {
                .flags = NS_FLAGS | CLONE_PIDFD | (userns ? CLONE_NEWUSER : 0),
                .pidfd = (uint64_t)(uintptr_t)ret_pidfd,
                .exit_signal = SIGCHLD,
        };

        return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/* Rootless: the sandbox's one uid and gid are the invoking user's; setgroups is denied. */
static int write_maps(pid_t pid, const struct userns_map *um)
{
        char path[64], buf[64];
        int r;

        (void)snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        r = write_string_at(AT_FDCWD, path, "deny");
        if (r < 0)
                return r;
        (void)snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        (void)snprintf(buf, sizeof(buf), "%u %u 1\n", um->inside_uid, um->outside_uid);
        r = write_string_at(AT_FDCWD, path, buf);
        if (r < 0)
                return r;
        (void)snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        (void)snprintf(buf, sizeof(buf), "%u %u 1\n", um->inside_gid, um->outside_gid);
        return write_string_at(AT_FDCWD, path, buf);
}

/* As root: the keeper's own user namespace maps its ids 0..65535 to its block @base. Its
 * setgroups stays allowed, so commands can shed the groups they inherited from us. */
static int write_block_maps(pid_t pid, uint32_t base)
{
        char path[64], buf[64];
        int r;

        (void)snprintf(buf, sizeof(buf), "0 %u %u\n", base, IDMAP_BLOCK);
        (void)snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        r = write_string_at(AT_FDCWD, path, buf);
        if (r < 0)
                return r;
        (void)snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        return write_string_at(AT_FDCWD, path, buf);
}

/* The child built its root and entered its user namespace ("u"): map it, let it go on. A
 * child that failed before says nothing and exits, so EOF sends us to its report. */
static int map_late_userns(pid_t pid, uint32_t base, int sync_fd, struct b4_error *err)
{
        char c;
        ssize_t n;
        int r;

        do
                n = read(sync_fd, &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 || c != 'u')
                return 1; /* read the failure report */
        r = write_block_maps(pid, base);
        if (r < 0)
                return b4_error_set(err, r, "cannot write the keeper's user namespace id maps");
        if (send(sync_fd, "m", 1, MSG_NOSIGNAL) != 1)
                return b4_error_set(err, -EIO, "keeper vanished before its id maps");
        return 0;
}

/* Parent side after the clone: id maps, cgroup, OOM shield, go, wait for exec or failure. */
static int parent_side(const struct mount_plan *plan,
                       const struct cgroup *cg,
                       const struct userns_map *um,
                       uint32_t host_base,
                       pid_t pid,
                       int sync_w,
                       int err_r,
                       uint64_t *trace_page,
                       struct b4_error *err)
{
        struct child_failure f;
        ssize_t n;
        int r;

        if (um && (r = write_maps(pid, um)) < 0)
                return b4_error_set(err, r, "cannot write the user namespace id maps");
        r = cgroup_attach(cg, pid);
        if (r < 0)
                return b4_error_set(err, r, "cannot move the keeper into its cgroup");
        trace_mark("spawn.cgroup_attach");
        (void)oom_protect(pid); /* best effort: needs CAP_SYS_RESOURCE; commands run at 500 */
        trace_mark("spawn.oom");
        if (send(sync_w, "g", 1, MSG_NOSIGNAL) != 1)
                return b4_error_set(err, -EIO, "keeper vanished before setup");
        if (host_base && (r = map_late_userns(pid, host_base, sync_w, err)) < 0)
                return r;
        do
                n = read(err_r, &f, sizeof(f));
        while (n < 0 && errno == EINTR);
        trace_child_fold(trace_page, plan->ops, plan->n_ops);
        trace_mark("child.exec");
        if (n == 0)
                return 0;
        if (n != (ssize_t)sizeof(f))
                return b4_error_set(err, -EIO, "keeper setup failed (short report)");
        return report_failure(plan, &f, err);
}

int spawn_keeper(const struct mount_plan *plan,
                 int exe_fd,
                 int listen_fd,
                 const struct cgroup *cg,
                 const struct userns_map *um,
                 uint32_t host_base,
                 struct keeper_proc *ret,
                 struct b4_error *err)
{
        int sync_p[2] = { -EBADF, -EBADF }, err_p[2] = { -EBADF, -EBADF };
        uint64_t *trace_page = NULL;
        int pidfd = -EBADF;
        pid_t pid;
        int r;

        /* sync is a socketpair so a child that died cannot SIGPIPE us (send + NOSIGNAL) */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync_p) < 0 ||
            pipe2(err_p, O_CLOEXEC) < 0) {
                r = b4_error_set(err, -errno, "cannot create keeper pipes");
                goto out;
        }
        trace_page = trace_child_page();
        trace_mark("spawn.pipes");
        pid = do_clone(um != NULL, &pidfd);
        if (pid < 0) {
                r = b4_error_set(err, -errno, "cannot clone the keeper into new namespaces");
                goto out;
        }
        if (pid == 0) {
                /* child_main() closes every fd but its own four first: holding the parent's
                 * ends (or anything else of the server's), a child whose parent was killed
                 * mid-spawn would wait on the sync socket forever, holding the state-dir
                 * lock of a dead server. */
                struct child_plan cp = { .ops = plan->ops,
                                         .n_ops = plan->n_ops,
                                         .sync_fd = sync_p[0],
                                         .err_fd = err_p[1],
                                         .listen_fd = listen_fd,
                                         .exe_fd = exe_fd,
                                         .drop_bounding = um && um->inside_uid != 0,
                                         .late_userns = !um && host_base != 0,
                                         .userns_owner = host_base,
                                         .trace = trace_page };
                child_main(&cp);
        }
        err_p[1] = safe_close(err_p[1]);
        sync_p[0] = safe_close(sync_p[0]);
        trace_mark("spawn.clone");
        r = parent_side(plan, cg, um, um ? 0 : host_base, pid, sync_p[1], err_p[0], trace_page,
                        err);
        if (r >= 0)
                r = proc_starttime(pid, &ret->starttime);
        trace_mark("spawn.starttime");
        if (r < 0) {
                keeper_kill(pidfd);
                pidfd = safe_close(pidfd);
                goto out;
        }
        ret->pid = pid;
        ret->pidfd = TAKE_FD(pidfd);
out:
        trace_child_page_free(trace_page);
        safe_close(sync_p[0]);
        safe_close(sync_p[1]);
        safe_close(err_p[0]);
        safe_close(err_p[1]);
        return r;
}
