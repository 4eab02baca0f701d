/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start a keeper: clone3(CLONE_PIDFD) into new PID, mount, network, IPC and UTS namespaces
 * (plus a user namespace in rootless mode), born in its cgroup on v2 (CLONE_INTO_CGROUP);
 * while the child waits on a socket the parent writes its uid/gid maps (rootless) and shields
 * it from the OOM killer, then lets it go; the child (child.c) writes itself into its v1
 * cgroups (the first write waits for an RCU grace period, which the primer began earlier,
 * thread.c; the provider plumbs the network meanwhile, between spawn_keeper_start() and
 * spawn_keeper_finish()), unshares its cgroup
 * namespace, builds the root filesystem from the precomputed plan and execs the keeper binary
 * from an fd. The error pipe is CLOEXEC: EOF means the exec happened, a struct child_failure
 * means it did not.
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

static pid_t do_clone(bool userns, int cgroup_fd, int *ret_pidfd)
{
        struct clone_args args = {
                .flags = NS_FLAGS | CLONE_PIDFD | (userns ? CLONE_NEWUSER : 0) |
                         (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0),
                .pidfd = (uint64_t)(uintptr_t)ret_pidfd,
                .exit_signal = SIGCHLD,
                .cgroup = cgroup_fd >= 0 ? (uint64_t)cgroup_fd : 0,
        };

        return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static void spawn_close(struct keeper_spawn *sp)
{
        sp->sync_w = safe_close(sp->sync_w);
        sp->err_r = safe_close(sp->err_r);
        sp->pidfd = safe_close(sp->pidfd);
        trace_child_page_free(sp->trace);
        sp->trace = NULL;
}

/* Clone the child, born in the cgroup2 dir when there is one (else, on a kernel without
 * CLONE_INTO_CGROUP, it writes that dir's cgroup.procs too). */
static int clone_child(const struct spawn_args *a,
                       const struct cgroup_placement *pl,
                       int sync_r,
                       int err_w,
                       struct keeper_spawn *sp)
{
        int procs[CGROUP_V1_MAX + 2];
        size_t n = pl->n_procs;
        int cgroup_fd = pl->clone_fd;
        pid_t pid;

        memcpy(procs, pl->procs, n * sizeof(int));
        pid = do_clone(a->um != NULL, cgroup_fd, &sp->pidfd);
        if (pid < 0 && cgroup_fd >= 0 && (errno == EINVAL || errno == E2BIG || errno == ENOSYS)) {
                procs[n++] = pl->clone_procs; /* Linux < 5.7 */
                pid = do_clone(a->um != NULL, -EBADF, &sp->pidfd);
        }
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* child_main() closes every fd but its own first: holding the parent's ends
                 * (or anything else of the server's), a child whose parent was killed
                 * mid-spawn would wait on the sync socket forever, holding the state-dir
                 * lock of a dead server. */
                struct child_plan cp = { .ops = a->plan->ops,
                                         .n_ops = a->plan->n_ops,
                                         .sync_fd = sync_r,
                                         .err_fd = err_w,
                                         .listen_fd = a->listen_fd,
                                         .exe_fd = a->exe_fd,
                                         .drop_bounding = a->um && a->um->inside_uid != 0,
                                         .late_userns = !a->um && a->host_base != 0,
                                         .userns_owner = a->host_base,
                                         .cg_procs = procs,
                                         .n_cg_procs = n,
                                         .trace = sp->trace };
                child_main(&cp);
        }
        sp->pid = pid;
        return 0;
}

int spawn_keeper_start(const struct spawn_args *a, struct keeper_spawn *ret, struct b4_error *err)
{
        struct keeper_spawn sp = { .pidfd = -EBADF, .sync_w = -EBADF, .err_r = -EBADF };
        struct cgroup_placement pl;
        int sync_p[2] = { -EBADF, -EBADF }, err_p[2] = { -EBADF, -EBADF };
        int r;

        r = cgroup_placement_open(a->cg, &pl);
        if (r < 0)
                return b4_error_set(err, r, "cannot open the keeper's cgroup");
        /* sync is a socketpair so a child that died cannot SIGPIPE us (send + NOSIGNAL) */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync_p) < 0 ||
            pipe2(err_p, O_CLOEXEC) < 0) {
                r = b4_error_set(err, -errno, "cannot create keeper pipes");
                goto out;
        }
        sp.trace = trace_child_page();
        trace_mark("spawn.pipes");
        r = clone_child(a, &pl, sync_p[0], err_p[1], &sp);
        trace_mark("spawn.clone");
        if (r < 0) {
                r = b4_error_set(err, r, "cannot clone the keeper into new namespaces");
                trace_child_page_free(sp.trace);
                goto out;
        }
        sp.sync_w = TAKE_FD(sync_p[1]);
        sp.err_r = TAKE_FD(err_p[0]);
        sp.plan = a->plan;
        sp.late_base = a->um ? 0 : a->host_base;
        if (a->um && (r = write_maps(sp.pid, a->um)) < 0)
                b4_error_set(err, r, "cannot write the user namespace id maps");
        if (r >= 0) {
                (void)oom_protect(sp.pid); /* best effort: CAP_SYS_RESOURCE; commands run at 500 */
                trace_child_stamp(sp.trace, TRACE_CHILD_SENT);
                if (send(sp.sync_w, "g", 1, MSG_NOSIGNAL) != 1)
                        r = b4_error_set(err, -EIO, "keeper vanished before setup");
                trace_mark("spawn.go");
        }
        if (r < 0) {
                keeper_kill(sp.pidfd);
                spawn_close(&sp);
                goto out;
        }
        *ret = sp;
out:
        cgroup_placement_close(&pl);
        safe_close(sync_p[0]);
        safe_close(sync_p[1]);
        safe_close(err_p[0]);
        safe_close(err_p[1]);
        return r;
}

/* Map the late user namespace, then wait for the exec (EOF) or a failure report. */
static int wait_exec(struct keeper_spawn *sp, struct b4_error *err)
{
        struct child_failure f;
        ssize_t n;
        int r;

        if (sp->late_base && (r = map_late_userns(sp->pid, sp->late_base, sp->sync_w, err)) < 0)
                return r;
        do
                n = read(sp->err_r, &f, sizeof(f));
        while (n < 0 && errno == EINTR);
        trace_child_fold(sp->trace, sp->plan->ops, sp->plan->n_ops);
        trace_mark("spawn.wait");
        if (n == 0)
                return 0;
        if (n != (ssize_t)sizeof(f))
                return b4_error_set(err, -EIO, "keeper setup failed (short report)");
        return report_failure(sp->plan, &f, err);
}

int spawn_keeper_finish(struct keeper_spawn *sp, struct keeper_proc *ret, struct b4_error *err)
{
        int r = wait_exec(sp, err);

        if (r >= 0)
                r = proc_starttime(sp->pid, &ret->starttime);
        if (r < 0) {
                keeper_kill(sp->pidfd);
                spawn_close(sp);
                return r;
        }
        ret->pid = sp->pid;
        ret->pidfd = TAKE_FD(sp->pidfd);
        spawn_close(sp);
        return 0;
}
