/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's system call filter, loaded once everything is open, bound and started
 * (sockets, the netlink sockets, the workers): an allowlist of what receiving, resolving,
 * pinning, auditing and exiting take, synchronised to every thread (TSYNC). Any other call,
 * or a call from another ABI (i386, x32), kills the process: DNS then fails closed and the
 * provider starts a new netd on the thread's next exec. socket() is allowed for AF_INET and
 * AF_INET6 only (the upstream queries): no new netlink, unix or packet socket. No open, exec,
 * fork, ptrace, mount, bpf or namespace call is reachable.
 */

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/macro.h"
#include "netd.h"

#if defined(__x86_64__)
# define NETD_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
# define NETD_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
# error "b4box-netd's seccomp filter knows x86_64 and aarch64"
#endif

#define X32_SYSCALL_BIT 0x40000000u

static const int allowed[] = {
        SYS_read,
        SYS_write,
        SYS_writev,
        SYS_close,
        SYS_recvfrom,
        SYS_sendto,
        SYS_recvmsg,
        SYS_sendmsg,
        SYS_connect,
        SYS_accept4,
        SYS_setsockopt,
        SYS_getsockopt,
        SYS_getsockname,
        SYS_shutdown,
        SYS_fcntl,
        SYS_ppoll,
        SYS_futex,
        SYS_mmap,
        SYS_munmap,
        SYS_mprotect,
        SYS_madvise,
        SYS_brk,
        SYS_mremap,
        SYS_rt_sigreturn,
        SYS_rt_sigprocmask,
        SYS_exit,
        SYS_exit_group,
        SYS_getrandom,
        SYS_clock_gettime,
        SYS_gettimeofday,
        SYS_clock_nanosleep,
        SYS_nanosleep,
        SYS_sched_yield,
        SYS_getpid,
        SYS_gettid,
        SYS_tgkill,
        SYS_restart_syscall,
        SYS_fstat,
        SYS_newfstatat,
        SYS_lseek,
        SYS_dup3,
        SYS_rseq,
        SYS_set_robust_list,
        SYS_sigaltstack,
#ifdef SYS_poll
        SYS_poll,
#endif
#ifdef SYS_accept
        SYS_accept,
#endif
};

#define LOAD_NR \
 ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)))
#define LOAD_ARCH \
 ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)))
#define LOAD_ARG0 \
 ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])))
#define RET(v) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (v)))

int netd_seccomp(void)
{
        /* arch (3), nr and x32 (3), socket (6), the list (2 each), the default (1) */
        struct sock_filter f[3 + 3 + 6 + 2 * ELEMENTSOF(allowed) + 1];
        struct sock_fprog prog = { .filter = f };
        size_t n = 0;

        f[n++] = LOAD_ARCH;
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETD_AUDIT_ARCH, 1, 0);
        f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
        f[n++] = LOAD_NR;
#ifdef __x86_64__
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1);
        f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
#endif
        /* socket(AF_INET | AF_INET6, ...) only: decided here, the list below never sees it */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5);
        f[n++] = LOAD_ARG0;
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0);
        f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
        f[n++] = RET(SECCOMP_RET_ALLOW);
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                      (unsigned)allowed[i], 0, 1);
                f[n++] = RET(SECCOMP_RET_ALLOW);
        }
        f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
        prog.len = (unsigned short)n;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
                return -errno;
        return 0;
}
