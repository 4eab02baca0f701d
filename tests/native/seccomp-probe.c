/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run inside a native sandbox (audit M5): each syscall below must fail with EPERM, the ones
 * a sandbox keeps must work. Static, libc only, raw syscall() so libc fallbacks cannot hide a
 * result. Prints one line per case ("ok NAME" / "FAIL NAME: rc errno") and exits 1 on any
 * failure.
 */

#include <errno.h>
#include <linux/io_uring.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;

static void expect(const char *name, long rc, bool want_eperm)
{
        int e = errno;
        bool ok = want_eperm ? rc < 0 && e == EPERM : rc >= 0;

        if (ok)
                printf("ok %s\n", name);
        else
                printf("FAIL %s: rc %ld errno %d (%s)\n", name, rc, rc < 0 ? e : 0,
                       rc < 0 ? strerror(e) : "-");
        failures += !ok;
        if (rc >= 0 && strncmp(name, "socket", 6) == 0)
                (void)close((int)rc);
}

#define DENIED(name, ...)  (errno = 0, expect(name, syscall(__VA_ARGS__), true))
#define ALLOWED(name, ...) (errno = 0, expect(name, syscall(__VA_ARGS__), false))

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
        ALLOWED("socket(AF_UNIX)", SYS_socket, (long)AF_UNIX, (long)SOCK_STREAM, 0l);
        ALLOWED("socket(AF_INET)", SYS_socket, (long)AF_INET, (long)SOCK_DGRAM, 0l);
        ALLOWED("socket(AF_INET6)", SYS_socket, (long)AF_INET6, (long)SOCK_DGRAM, 0l);
        ALLOWED("socket(AF_NETLINK)", SYS_socket, (long)AF_NETLINK, (long)SOCK_DGRAM, 0l);
        ALLOWED("socketpair(AF_UNIX)", SYS_socketpair, (long)AF_UNIX, (long)SOCK_STREAM, 0l, sv);
        ALLOWED("personality(query)", SYS_personality, 0xffffffffl);
        ALLOWED("personality(PER_LINUX32)", SYS_personality, (long)PER_LINUX32);
        ALLOWED("personality(PER_LINUX)", SYS_personality, (long)PER_LINUX);
        return failures ? 1 : 0;
}
