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
#include "base/macro.h"
#include "native.h"

static bool probe_namespaces(void)
{
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return false;
        if (pid == 0) {
                if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                            CLONE_NEWUTS | CLONE_NEWCGROUP) < 0)
                        _exit(1);
                if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", "/tmp", "tmpfs", 0, "size=4k") < 0)
                        _exit(2);
                _exit(0);
        }
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
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

static int cgroup_rows(const struct cgroup_host *cg, struct b4_preflight *p)
{
        static const char *const rows[] = { "pids limit", "memory limit", "cpu limit" };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(rows); i++)
                r = cg->has[i] ? b4_preflight_control(p, rows[i], B4_ENFORCED, "%s %s controller",
                                                      mode_name(cg->mode), cgroup_v1_names[i])
                               : b4_preflight_control(p, rows[i], B4_NOT_ENFORCED,
                                                      "no usable %s controller (%s)",
                                                      cgroup_v1_names[i], mode_name(cg->mode));
        return r;
}

static int allow_row(struct b4_preflight *p)
{
        const char *why = NULL;

        if (net_available(&why) >= 0)
                return b4_preflight_control(p, "network allow", B4_ENFORCED,
                                            "per-thread veth + NAT; 169.254.0.0/16, the host's "
                                            "own addresses and other sandboxes unreachable");
        return b4_preflight_control(p, "network allow", B4_NOT_ENFORCED,
                                    "%s: allow-mode sandboxes cannot start here", why);
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
                r = allow_row(p);
        if (r >= 0)
                r = b4_preflight_control(p, "network lists", B4_NOT_ENFORCED,
                                         "allowlist/denylist are not enforced");
        return r;
}

int native_preflight_run(const struct cgroup_host *cg,
                         struct b4_preflight *ret,
                         struct b4_error *err)
{
        struct b4_preflight p = { .ok = true };
        bool root = geteuid() == 0, ns = root && probe_namespaces(), o2 = probe_openat2();
        void *bpf = NULL;
        size_t len;
        int r;

        r = b4_preflight_control(&p, "privileges", root ? B4_ENFORCED : B4_NOT_ENFORCED,
                                 root ? "running as root"
                                      : "not root: rootless (user namespace) mode is not "
                                        "implemented");
        if (r >= 0)
                r = b4_preflight_control(&p, "namespaces", ns ? B4_ENFORCED : B4_NOT_ENFORCED,
                                         ns ? "pid, mount, net, ipc, uts, cgroup; tmpfs mounts ok"
                                            : "cannot create namespaces or mount");
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
                r = fixed_rows(&p);
        if (r < 0) {
                b4_preflight_clear(&p);
                return b4_error_set(err, r, "out of memory");
        }
        p.ok = root && ns && o2 && sc;
        if (!p.ok)
                (void)b4_asprintf(&p.detail, "the native provider cannot run here: %s",
                                  !root ? "needs root"
                                  : !ns ? "namespaces/mounts refused"
                                  : !o2 ? "no openat2()"
                                        : "no seccomp");
        else
                (void)b4_asprintf(&p.detail, "native sandbox (%s)", mode_name(cg->mode));
        *ret = p;
        return 0;
}
