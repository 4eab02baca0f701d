/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run inside a sandbox, native (tests/native/hardening.sh) or Docker (tests/docker,
 * test_seccomp): core's syscall policy (audit M5). Each denied syscall below must fail with
 * EPERM, clone3 with ENOSYS, the ones a sandbox keeps must work. Static, libc only, raw
 * syscall() so libc fallbacks cannot hide a result. Prints one line per case ("ok NAME" /
 * "FAIL NAME: rc errno"), then "cases N", and exits 1 on any failure.
 */

#include <errno.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures, cases;

/* @want_errno 0: the call must succeed; otherwise it must fail with that errno. */
static void expect(const char *name, long rc, int want_errno)
{
        int e = errno;
        bool ok = want_errno ? rc < 0 && e == want_errno : rc >= 0;

        if (ok)
                printf("ok %s\n", name);
        else
                printf("FAIL %s: rc %ld errno %d (%s)\n", name, rc, rc < 0 ? e : 0,
                       rc < 0 ? strerror(e) : "-");
        failures += !ok;
        cases++;
        if (rc >= 0 && strncmp(name, "socket", 6) == 0)
                (void)close((int)rc);
}

#define DENIED(name, ...)  (errno = 0, expect(name, syscall(__VA_ARGS__), EPERM))
#define ALLOWED(name, ...) (errno = 0, expect(name, syscall(__VA_ARGS__), 0))

/* clone() with @flags: a child that was made exits at once and is reaped. */
static void clone_case(const char *name, unsigned long flags, int want_errno)
{
        long rc;

        errno = 0;
        rc = syscall(SYS_clone, flags | SIGCHLD, 0l, NULL, NULL, 0l);
        if (rc == 0)
                _exit(0);
        expect(name, rc, want_errno);
        if (rc > 0)
                (void)waitpid((pid_t)rc, NULL, 0);
}

int main(void)
{
        struct io_uring_params params;
        char ldt[16];
        int sv[2];
        long self = getpid();

        memset(&params, 0, sizeof(params));
        DENIED("io_uring_setup", SYS_io_uring_setup, 4l, &params);
        DENIED("io_uring_enter", SYS_io_uring_enter, -1l, 0l, 0l, 0l, NULL, 0l);
        DENIED("io_uring_register", SYS_io_uring_register, -1l, 0l, NULL, 0l);
        DENIED("socket(AF_VSOCK)", SYS_socket, (long)AF_VSOCK, (long)SOCK_STREAM, 0l);
        DENIED("socket(AF_ALG)", SYS_socket, (long)AF_ALG, (long)SOCK_SEQPACKET, 0l);
        DENIED("socket(AF_PACKET)", SYS_socket, (long)AF_PACKET, (long)SOCK_DGRAM, 0l);
        DENIED("socket(AF_BLUETOOTH)", SYS_socket, (long)AF_BLUETOOTH, (long)SOCK_STREAM, 0l);
        DENIED("socket(AF_KEY)", SYS_socket, (long)AF_KEY, (long)SOCK_RAW, 2l);
        DENIED("socket(AF_TIPC)", SYS_socket, (long)AF_TIPC, (long)SOCK_RDM, 0l);
        DENIED("socketpair(AF_VSOCK)", SYS_socketpair, (long)AF_VSOCK, (long)SOCK_STREAM, 0l, sv);
        DENIED("personality(ADDR_NO_RANDOMIZE)", SYS_personality, (long)ADDR_NO_RANDOMIZE);
        DENIED("personality(READ_IMPLIES_EXEC)", SYS_personality, (long)READ_IMPLIES_EXEC);
        DENIED("modify_ldt", SYS_modify_ldt, 0l, ldt, (long)sizeof(ldt));
        DENIED("kcmp", SYS_kcmp, self, self, 0l, 0l, 0l);
        DENIED("memfd_secret", SYS_memfd_secret, 0l);
        DENIED("process_madvise", SYS_process_madvise, -1l, NULL, 0l, 0l, 0l);
        DENIED("mbind", SYS_mbind, 0l, 0l, 0l, NULL, 0l, 0l);
        DENIED("set_mempolicy", SYS_set_mempolicy, 0l, NULL, 0l);
        DENIED("get_mempolicy", SYS_get_mempolicy, NULL, NULL, 0l, 0l, 0l);
        DENIED("set_mempolicy_home_node", SYS_set_mempolicy_home_node, 0l, 0l, 0l, 0l);
        DENIED("move_pages", SYS_move_pages, 0l, 0l, NULL, NULL, NULL, 0l);
        DENIED("migrate_pages", SYS_migrate_pages, 0l, 0l, NULL, NULL);
        DENIED("ustat", SYS_ustat, 0l, NULL);
        DENIED("ptrace(SEIZE, 1)", SYS_ptrace, (long)PTRACE_SEIZE, 1l, NULL, NULL);
        DENIED("process_vm_readv", SYS_process_vm_readv, self, NULL, 0l, NULL, 0l, 0l);
        DENIED("unshare(CLONE_NEWUSER)", SYS_unshare, (long)CLONE_NEWUSER);
        DENIED("unshare(CLONE_NEWNS)", SYS_unshare, (long)CLONE_NEWNS);
        DENIED("setns", SYS_setns, -1l, 0l);
        DENIED("mount", SYS_mount, "none", "/tmp", "tmpfs", 0l, NULL);
        DENIED("umount2", SYS_umount2, "/tmp", 0l);
        DENIED("keyctl", SYS_keyctl, 0l /* KEYCTL_GET_KEYRING_ID */, -3l, 0l);
        DENIED("add_key", SYS_add_key, "user", "b4", "x", 1l, -3l);
        DENIED("bpf", SYS_bpf, 0l, NULL, 0l);
        DENIED("perf_event_open", SYS_perf_event_open, NULL, 0l, -1l, -1l, 0l);
        DENIED("userfaultfd", SYS_userfaultfd, 0l);
        DENIED("name_to_handle_at", SYS_name_to_handle_at, -100l, "/", NULL, NULL, 0l);
        clone_case("clone(CLONE_NEWUSER)", CLONE_NEWUSER, EPERM);
        clone_case("clone(CLONE_NEWNET)", CLONE_NEWNET, EPERM);
        errno = 0;
        expect("clone3 (ENOSYS)", syscall(SYS_clone3, NULL, 0l), ENOSYS);
        clone_case("clone(fork)", 0, 0);
        ALLOWED("socket(AF_UNIX)", SYS_socket, (long)AF_UNIX, (long)SOCK_STREAM, 0l);
        ALLOWED("socket(AF_INET)", SYS_socket, (long)AF_INET, (long)SOCK_DGRAM, 0l);
        ALLOWED("socket(AF_INET6)", SYS_socket, (long)AF_INET6, (long)SOCK_DGRAM, 0l);
        ALLOWED("socket(AF_NETLINK)", SYS_socket, (long)AF_NETLINK, (long)SOCK_DGRAM, 0l);
        ALLOWED("socketpair(AF_UNIX)", SYS_socketpair, (long)AF_UNIX, (long)SOCK_STREAM, 0l, sv);
        ALLOWED("personality(query)", SYS_personality, 0xffffffffl);
        ALLOWED("personality(PER_LINUX32)", SYS_personality, (long)PER_LINUX32);
        ALLOWED("personality(PER_LINUX)", SYS_personality, (long)PER_LINUX);
        /* last: were it allowed, the parent would become this process's tracer */
        DENIED("ptrace(TRACEME)", SYS_ptrace, (long)PTRACE_TRACEME, 0l, NULL, NULL);
        printf("cases %d\n", cases);
        return failures ? 1 : 0;
}
