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
#include <sys/socket.h>
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
};

/* The address families a sandbox may open: local sockets, IP, and netlink (iproute2 and
 * glibc's getaddrinfo need it). Everything else (vsock, packet, alg, bluetooth, ...) is
 * EPERM for socket() and socketpair(). Must stay sorted. */
static const unsigned int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

/* personality() values a sandbox may set: PER_LINUX, PER_LINUX32, UNAME26 and their union
 * (Docker's list); 0xffffffff only queries. */
#define PERSONA_ALLOWED_BITS ((1u << 3) | (1u << 17))

static const unsigned long ns_flags[] = { CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET,   CLONE_NEWPID,
                                          CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP };

static void seccomp_releasep(scmp_filter_ctx *c)
{
        if (*c)
                seccomp_release(*c);
}

/* socket()/socketpair() with a family outside families[]: each gap below the last allowed
 * family one by one, then everything above it. The compares are 64-bit: a value with any
 * bit above 31 set (which the kernel would truncate to an int) is denied too. */
/* SCMP_A0() with one datum leaves datum_b to the compiler's zero; say it (clang warns). */
static struct scmp_arg_cmp arg0(enum scmp_compare op, scmp_datum_t v)
{
        return (struct scmp_arg_cmp){ .arg = 0, .op = op, .datum_a = v, .datum_b = 0 };
}

static int add_family_rules(scmp_filter_ctx ctx, int nr)
{
        unsigned int last = families[ELEMENTSOF(families) - 1];
        size_t k = 0;
        int r;

        for (unsigned int f = 0; f < last; f++) {
                if (f == families[k]) {
                        k++;
                        continue;
                }
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, arg0(SCMP_CMP_EQ, f));
                if (r < 0)
                        return r;
        }
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, arg0(SCMP_CMP_GT, last));
}

/*
 * personality(v) is denied unless v's bits are within PERSONA_ALLOWED_BITS or v is
 * 0xffffffff. A rule may compare an argument once, so the denied set is covered by
 * single masked compares "bit a set, bit b clear", a outside the allowed bits: with b = a + 1
 * (mod 32) for every such a, plus (2, 4) and (16, 18) for a run of ones that ends on an
 * allowed bit (3 or 17). Any denied v has a run of ones holding a disallowed bit; the bit
 * above that run is clear (v is not all ones), so one of these pairs matches. No allowed v
 * matches: 0xffffffff has no clear bit, the others have no disallowed bit set. The masks
 * cover bits 0-31 only, so bits above them are ignored, as the kernel (unsigned int) does.
 */
static int add_persona_rule(scmp_filter_ctx ctx, unsigned int a, unsigned int b)
{
        uint32_t set = 1u << a, mask = set | 1u << b;

        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                SCMP_A0_32(SCMP_CMP_MASKED_EQ, mask, set));
}

static int add_persona_rules(scmp_filter_ctx ctx)
{
        int r = 0;

        for (unsigned int a = 0; r >= 0 && a < 32; a++)
                if (!(PERSONA_ALLOWED_BITS & 1u << a))
                        r = add_persona_rule(ctx, a, (a + 1) % 32);
        if (r >= 0)
                r = add_persona_rule(ctx, 2, 4);
        if (r >= 0)
                r = add_persona_rule(ctx, 16, 18);
        return r;
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
        r = add_family_rules(ctx, SCMP_SYS(socket));
        if (r >= 0)
                r = add_family_rules(ctx, SCMP_SYS(socketpair));
        if (r >= 0)
                r = add_persona_rules(ctx);
        if (r < 0)
                return r;
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
