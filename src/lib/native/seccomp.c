/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's syscall filter, declared as a table (OpenSSH style) and compiled once with
 * libseccomp to raw BPF; the keeper loads that BPF in each command just before execve.
 * Denied with EPERM: what a sandbox never needs (mount family, namespaces, kernel modules,
 * kexec, bpf, perf, keyrings, userfaultfd, handle-based opens, reboot, swap, accounting,
 * ptrace of other processes, ...). clone with any namespace flag is denied; clone3 returns
 * ENOSYS so libc falls back to clone, whose flags the filter can see. Foreign ABIs (i386,
 * x32) kill the process: only the native architecture is in the filter.
 */

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "native.h"

static const char *const denied[] = {
        "mount",
        "umount",
        "umount2",
        "pivot_root",
        "chroot",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "unshare",
        "setns",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "create_module",
        "bpf",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "userfaultfd",
        "open_by_handle_at",
        "name_to_handle_at",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "lookup_dcookie",
        "syslog",
        "quotactl",
        "quotactl_fd",
        "nfsservctl",
        "vhangup",
        "iopl",
        "ioperm",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
        "stime",
        "uselib",
        "pidfd_getfd",
        "fanotify_init",
        "sethostname",
        "setdomainname",
        "vm86",
        "vm86old",
        "get_kernel_syms",
        "query_module",
        "sysfs",
        "_sysctl",
};

static const unsigned long ns_flags[] = { CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET,   CLONE_NEWPID,
                                          CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP };

static void seccomp_releasep(scmp_filter_ctx *c)
{
        if (*c)
                seccomp_release(*c);
}

static int add_rules(scmp_filter_ctx ctx)
{
        int nr, r;

        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                nr = seccomp_syscall_resolve_name(denied[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not on this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
                if (r < 0)
                        return r;
        }
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

static int export_bpf(scmp_filter_ctx ctx, void **ret, size_t *ret_len)
{
        cleanup_close int fd = memfd_create("b4box-seccomp", MFD_CLOEXEC);
        char *buf = NULL;
        size_t len;
        int r;

        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = read_full_fd(fd, 1u << 20, &buf, &len);
        if (r < 0)
                return r;
        if (len == 0 || len % 8 != 0) {
                free(buf);
                return -EPROTO;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int seccomp_build(void **ret_bpf, size_t *ret_len, struct b4_error *err)
{
        cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r;

        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return b4_error_set(err, -ENOMEM, "cannot create the seccomp filter");
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r >= 0)
                r = add_rules(ctx);
        if (r >= 0)
                r = export_bpf(ctx, ret_bpf, ret_len);
        if (r < 0)
                return b4_error_set(err, r, "cannot build the seccomp filter");
        return 0;
}
