/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What this host lets the native provider enforce, as one enforcement-table row per control.
 * Probes are real: a forked child tries the namespaces and a tmpfs mount, openat2() is
 * called, the seccomp filter is compiled. Anything missing is NOT_ENFORCED with the reason.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "hostnet/hostnet.h"
#include "hostnet/netpolicy.h"
#include "native.h"

static bool wait_ok(pid_t pid)
{
        int status;

        return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0;
}

/* The namespaces of a keeper (plus a user namespace when @userns); then a tmpfs and a procfs
 * mount, in a child inside the new PID namespace as the keeper will be. */
static bool probe_namespaces(bool userns)
{
        pid_t pid = fork();

        if (pid < 0)
                return false;
        if (pid == 0) {
                if (unshare((userns ? CLONE_NEWUSER : 0) | CLONE_NEWNS | CLONE_NEWPID |
                            CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP) < 0)
                        _exit(1);
                pid = fork();
                if (pid == 0) {
                        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                            mount("tmpfs", "/tmp", "tmpfs", 0, "size=4k") < 0 ||
                            mount("proc", "/tmp", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
                                    0)
                                _exit(2);
                        _exit(0);
                }
                _exit(wait_ok(pid) ? 0 : 2);
        }
        return wait_ok(pid);
}

/* A sysctl that reads "0". */
static bool sysctl_zero(const char *path)
{
        cleanup_free char *v = NULL;
        size_t len;

        return read_file_at(AT_FDCWD, path, 64, &v, &len) >= 0 && v[0] == '0' &&
               (len == 1 || v[1] == '\n');
}

bool native_userns_allowed(const char **ret_why)
{
        if (sysctl_zero("/proc/sys/kernel/unprivileged_userns_clone"))
                return *ret_why = "kernel.unprivileged_userns_clone = 0", false;
        if (sysctl_zero("/proc/sys/user/max_user_namespaces"))
                return *ret_why = "user.max_user_namespaces = 0", false;
        *ret_why = NULL;
        return true;
}

static bool probe_openat2(void)
{
        struct open_how how = { .flags = O_PATH | O_CLOEXEC,
                                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

        if (fd < 0)
                return false;
        (void)close((int)fd);
        return true;
}

static const char *mode_name(enum cgroup_mode m)
{
        return m == CGROUP_V2 ? "cgroup v2" : m == CGROUP_V1 ? "cgroup v1" : "no cgroups";
}

/* How a command's tree is killed on this host (the "kill on timeout" row). */
static const char *kill_means(const struct cgroup_host *cg)
{
        if (cg->mode == CGROUP_V2)
                return "cgroup.kill";
        if (cg->unified_fd >= 0) /* hybrid: commands go in the unified hierarchy */
                return cg->has[3] ? "cgroup.kill on the unified hierarchy, where the kernel has "
                                    "it, else v1 freezer, then SIGKILL"
                                  : "cgroup.kill on the unified hierarchy, where the kernel has "
                                    "it, else v1 pids, SIGKILL loop";
        return cg->has[3] ? "v1 freezer, then SIGKILL" : "v1 pids, SIGKILL loop";
}

/* Pause/resume and background processes (issue 16): what this host gives them. */
static int procs_rows(const struct cgroup_host *cg, struct b4_preflight *p)
{
        bool freezer = cg->mode == CGROUP_V2 || (cg->mode == CGROUP_V1 && cg->has[3]);
        int r;

        r = freezer ? b4_preflight_control(p, "pause", B4_ENFORCED,
                                           "the thread's cgroup frozen (%s), processes kept",
                                           cg->mode == CGROUP_V2 ? "cgroup.freeze" : "v1 freezer")
                    : b4_preflight_control(p, "pause", B4_NOT_APPLICABLE,
                                           "no freezer here: pause answers 501");
        if (r < 0)
                return r;
        return b4_preflight_control(p, "background processes", B4_ENFORCED,
                                    "owned by the keeper, output spooled in the state dir "
                                    "(64 MiB each), signals to the command's cgroup%s",
                                    cg->mode == CGROUP_NONE ? " (none here: refused)" : "");
}

static int cgroup_rows(const struct cgroup_host *cg, struct b4_preflight *p)
{
        static const char *const rows[] = { "pids limit", "memory limit", "cpu limit" };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(rows); i++)
                if (cg->has[i])
                        r = b4_preflight_control(p, rows[i], B4_ENFORCED, "%s %s controller",
                                                 mode_name(cg->mode), cgroup_v1_names[i]);
                else if (cg->rootless)
                        r = b4_preflight_control(
                                p, rows[i], B4_NOT_ENFORCED,
                                "rootless without a delegated %s cgroup: an admin can delegate "
                                "one by making /sys/fs/cgroup/%s/b4box (v1) or the cgroup2 "
                                "b4box dir writable by uid %u",
                                cgroup_v1_names[i], cgroup_v1_names[i], (unsigned)geteuid());
                else
                        r = b4_preflight_control(p, rows[i], B4_NOT_ENFORCED,
                                                 "no usable %s controller (%s)", cgroup_v1_names[i],
                                                 mode_name(cg->mode));
        if (r >= 0)
                r = procs_rows(cg, p);
        if (r < 0)
                return r;
        if (cg->mode == CGROUP_V2 || (cg->mode == CGROUP_V1 && (cg->has[3] || cg->has[0])))
                return b4_preflight_control(p, "kill on timeout", B4_ENFORCED,
                                            "each command in its own cgroup (%s): everything "
                                            "it started dies, setsid() escapees included",
                                            kill_means(cg));
        return b4_preflight_control(p, "kill on timeout", B4_NOT_ENFORCED,
                                    "no cgroup for commands%s: the process group and session "
                                    "are killed, a process that calls setsid() and leaves them "
                                    "survives until release",
                                    cg->rootless ? " (rootless, none delegated)" : "");
}

/*
 * Limits beyond the cgroup controllers (audit L5); `b4box check` adds what the configuration
 * sets. The tmpfs sizes are native.h's, which mount.c mounts (test-native-unit
 * checks that they agree).
 */
static int limit_rows(struct b4_preflight *p)
{
        const char *why = NULL;
        int r;

        r = b4_preflight_control(p, "command timeout", B4_ENFORCED,
                                 "the supervisor's kill at the deadline");
        if (r >= 0 && disk_available(&why))
                r = b4_preflight_control(p, "disk quota", B4_ENFORCED,
                                         "a filesystem of its own per workspace: an ext4 image "
                                         "of diskGb GiB on a loop device");
        else if (r >= 0)
                r = b4_preflight_control(p, "disk quota", B4_NOT_ENFORCED,
                                         "workspaces are plain directories on the host "
                                         "filesystem (%s)",
                                         why);
        if (r >= 0)
                r = b4_preflight_control(p, "tmpfs sizes", B4_ENFORCED,
                                         NATIVE_TMPFS_SIZES
                                         " per thread; their pages count against the memory "
                                         "limit when one is set, without one only these sizes "
                                         "bound them");
        return r;
}

/* The audit needs a listed thread's netd (hostnet/audit.c, docs/native.md §Audit). */
static int audit_row(struct b4_preflight *p)
{
        const char *why = NULL;

        if (hostnet_available(&why) >= 0 && !netd_exe_path())
                why = "b4box-netd is not installed (set B4BOX_NETD)";
        if (why)
                return b4_preflight_control(p, "network audit", B4_NOT_ENFORCED,
                                            "%s: no listed thread, so nothing audited", why);
        return b4_preflight_control(
                p, "network audit", B4_ENFORCED,
                "threads with a list: the last 256 DNS events and their totals (b4box-netd), "
                "packets and bytes per destination and denials per destination (nft counters, "
                "65536 destinations host-wide), read by GET /threads/{id}/network and b4box "
                "network; threads without a list are not audited");
}

static int fixed_rows(struct b4_preflight *p)
{
        int r;

        r = b4_preflight_control(
                p, "capabilities", B4_ENFORCED,
                "all dropped: bounding, ambient, effective, permitted, inheritable");
        if (r >= 0)
                r = b4_preflight_control(p, "no_new_privs", B4_ENFORCED, "PR_SET_NO_NEW_PRIVS");
        if (r >= 0)
                r = b4_preflight_control(p, "read-only root", B4_ENFORCED,
                                         "read-only binds on a read-only tmpfs root");
        if (r >= 0)
                r = b4_preflight_control(p, "network deny", B4_ENFORCED,
                                         "empty network namespace, loopback only");
        if (r >= 0)
                r = hostnet_preflight(p); /* allow, forward, allowlist, denylist, dns */
        if (r >= 0)
                r = audit_row(p);
        return r;
}

static int privilege_rows(struct b4_preflight *p, bool root, bool userns, const char *why, bool ns)
{
        int r;

        if (root)
                r = b4_preflight_control(p, "privileges", B4_ENFORCED, "root");
        else if (userns)
                r = b4_preflight_control(p, "privileges", B4_ENFORCED,
                                         "rootless (user namespaces): the sandbox user is "
                                         "mapped to uid %u / gid %u, nothing else is mapped; "
                                         "the caller's supplementary groups stay (as nogroup)",
                                         (unsigned)geteuid(), (unsigned)getegid());
        else
                r = b4_preflight_control(p, "privileges", B4_NOT_ENFORCED,
                                         "not root and user namespaces are disabled (%s): "
                                         "rootless mode cannot run here",
                                         why);
        if (r >= 0)
                r = b4_preflight_control(p, "namespaces", ns ? B4_ENFORCED : B4_NOT_ENFORCED,
                                         ns ? "%spid, mount, net, ipc, uts, cgroup; tmpfs and "
                                              "proc mounts ok"
                                            : "cannot create the %spid, mount, net, ipc, uts and "
                                              "cgroup namespaces, or mount tmpfs/proc in them",
                                         root ? "" : "user, ");
        return r;
}

static const char *not_ok(bool root, bool userns, bool ns, bool o2)
{
        if (!root && !userns)
                return "not root and user namespaces are disabled";
        if (!ns)
                return "namespaces/mounts refused";
        return !o2 ? "no openat2()" : "no seccomp";
}

int native_preflight_run(const struct cgroup_host *cg,
                         struct b4_preflight *ret,
                         struct b4_error *err)
{
        struct b4_preflight p = { .ok = true };
        const char *why = NULL;
        bool root = geteuid() == 0, userns = root || native_userns_allowed(&why);
        bool ns = userns && probe_namespaces(!root), o2 = probe_openat2();
        void *bpf = NULL;
        size_t len;
        int r;

        r = privilege_rows(&p, root, userns, why, ns);
        if (r >= 0)
                r = b4_preflight_control(&p, "openat2", o2 ? B4_ENFORCED : B4_NOT_ENFORCED,
                                         o2 ? "RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS"
                                            : "openat2() unavailable (Linux >= 5.6 needed)");
        bool sc = seccomp_build(&bpf, &len, NULL) >= 0 && prctl(PR_GET_SECCOMP) >= 0;
        free(bpf);
        if (r >= 0)
                r = b4_preflight_control(&p, "seccomp", sc ? B4_ENFORCED : B4_NOT_ENFORCED,
                                         sc ? "libseccomp filter, native arch only"
                                            : "seccomp filters unavailable");
        if (r >= 0)
                r = cgroup_rows(cg, &p);
        if (r >= 0)
                r = limit_rows(&p);
        if (r >= 0)
                r = fixed_rows(&p);
        if (r < 0) {
                b4_preflight_clear(&p);
                return b4_error_set(err, r, "out of memory");
        }
        p.ok = userns && ns && o2 && sc;
        if (!p.ok)
                (void)b4_asprintf(&p.detail, "the native provider cannot run here: %s",
                                  not_ok(root, userns, ns, o2));
        else
                (void)b4_asprintf(&p.detail, "native sandbox (%s, %s)",
                                  root ? "root" : "rootless (user namespaces)",
                                  mode_name(cg->mode));
        *ret = p;
        return 0;
}
