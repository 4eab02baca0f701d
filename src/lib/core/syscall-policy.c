/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syscall policy of every sandbox (audit M5), as data. Denied with EPERM: what a sandbox
 * never needs (mount family, namespaces, kernel modules, kexec, bpf, perf, keyrings,
 * userfaultfd, handle-based opens, reboot, swap, accounting, ptrace, ...), everything
 * Docker's default profile denies to a container without capabilities, and the x86_64 slots
 * that were never implemented. clone with any namespace flag is denied; clone3 answers
 * ENOSYS. docs/native.md compares it with Docker's default row by row.
 */

#include "core/syscall-policy.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>

#include "base/macro.h"

static const char *const denied[] = {
        "mount",
        "umount",
        "umount2",
        "pivot_root",
        "chroot",
        "move_mount",
        "open_tree",
        "open_tree_attr",
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
        "ustat",
        /* Docker's default profile denies these too (docs/native.md has the comparison) */
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "modify_ldt",
        "kcmp",
        "process_madvise",
        "memfd_secret",
        "mbind",
        "set_mempolicy",
        "get_mempolicy",
        "set_mempolicy_home_node",
        "move_pages",
        "migrate_pages",
        "lsm_get_self_attr",
        "lsm_set_self_attr",
        "lsm_list_modules",
        /* never implemented on x86_64 (ENOSYS); listed so no profile allows them */
        "afs_syscall",
        "getpmsg",
        "putpmsg",
        "security",
        "tuxcall",
        "vserver",
};

static const char *const family_calls[] = { "socket", "socketpair" };

/* Local sockets, IP, and netlink (iproute2 and glibc's getaddrinfo need it); vsock, packet,
 * alg, bluetooth, ... are denied. Sorted. */
static const unsigned int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

static const uint64_t clone_ns_flags[] = { CLONE_NEWUSER,  CLONE_NEWNS,  CLONE_NEWNET,
                                           CLONE_NEWPID,   CLONE_NEWIPC, CLONE_NEWUTS,
                                           CLONE_NEWCGROUP };

static const struct syscall_policy policy = {
        .denied = denied,
        .n_denied = ELEMENTSOF(denied),
        .family_calls = family_calls,
        .n_family_calls = ELEMENTSOF(family_calls),
        .families = families,
        .n_families = ELEMENTSOF(families),
        /* PER_LINUX32 and UNAME26 (so 0, 8, 0x20000, 0x20008: Docker's values) */
        .persona_bits = (1u << 3) | (1u << 17),
        .persona_query = 0xffffffffu,
        .clone_ns_flags = clone_ns_flags,
        .n_clone_ns_flags = ELEMENTSOF(clone_ns_flags),
        .enosys_call = "clone3",
        .enosys_errno = ENOSYS,
        .deny_errno = EPERM,
};

const struct syscall_policy *syscall_policy(void)
{
        return &policy;
}

uint64_t syscall_policy_clone_ns_mask(void)
{
        uint64_t m = 0;

        for (size_t i = 0; i < policy.n_clone_ns_flags; i++)
                m |= policy.clone_ns_flags[i];
        return m;
}

/* Subsets of persona_bits in ascending order: count a subset up through the set bits. */
size_t syscall_policy_persona_values(uint32_t *out, size_t n)
{
        uint32_t v = 0;
        size_t k = 0;

        do {
                if (k < n)
                        out[k] = v;
                k++;
                v = (v - policy.persona_bits) & policy.persona_bits;
        } while (v != 0);
        if (k < n)
                out[k] = policy.persona_query;
        return k + 1;
}

bool syscall_policy_denies(const char *name)
{
        for (size_t i = 0; i < policy.n_denied; i++)
                if (strcmp(policy.denied[i], name) == 0)
                        return true;
        return false;
}
