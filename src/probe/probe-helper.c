/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-probe-helper: the in-sandbox half of `b4box probe` (docs/probe.md). Static, libc
 * only, so it runs in any rootfs (the host's /usr, a busybox image). `b4box probe` writes it
 * into the thread's workspace as ./.b4box-probe and runs it with runBash:
 *
 *   hello                          prints "b4box-probe-helper ok"
 *   sys NAME                       one syscall probe (table below)
 *   connect MS PORT ADDR...        TCP connect to each ADDR, one line each
 *   listen PORT SECS               detached listener on [::]:PORT (dual stack) for SECS
 *   addrs                          the non-loopback addresses of this network namespace
 *   ifaces                         the names of the interfaces that are up
 *   forkbomb MAX                   fork paused children until fork fails or MAX; kill them
 *   memory MB                      touch MB MiB, reporting progress
 *   disk PATH MB                   write MB MiB to PATH, then unlink it
 *   output BYTES                   write BYTES to stdout
 *   swap A B SECS DONE             detached: renameat2(A, B, RENAME_EXCHANGE) in a loop for
 *                                  SECS, then write the swap count to DONE
 *   hold SECS MARKER               detached: sleep SECS (MARKER is only visible in argv)
 *
 * Output is one line per result, "<word> <detail>"; `sys` prints "allowed <detail>",
 * "refused <ERRNO>" or "unavailable <ERRNO>" (the call failed for a reason that is not a
 * refusal, e.g. the kernel lacks it). Exit 0 after a result, 2 on a usage error.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
# define AF_VSOCK 40
#endif
#ifndef CLONE_NEWTIME
# define CLONE_NEWTIME 0x00000080
#endif
#ifndef RENAME_EXCHANGE
# define RENAME_EXCHANGE (1 << 1)
#endif

#define MAX_FORKS 65536

static const char *errno_name(int e)
{
        static const struct {
                int e;
                const char *name;
        } names[] = {
                { EPERM, "EPERM" },
                { EACCES, "EACCES" },
                { ENOSYS, "ENOSYS" },
                { EINVAL, "EINVAL" },
                { ENOENT, "ENOENT" },
                { EAGAIN, "EAGAIN" },
                { ENOMEM, "ENOMEM" },
                { ENOSPC, "ENOSPC" },
                { EDQUOT, "EDQUOT" },
                { EFBIG, "EFBIG" },
                { EBUSY, "EBUSY" },
                { EEXIST, "EEXIST" },
                { ENODEV, "ENODEV" },
                { EOPNOTSUPP, "EOPNOTSUPP" },
                { EAFNOSUPPORT, "EAFNOSUPPORT" },
                { EPROTONOSUPPORT, "EPROTONOSUPPORT" },
                { ENETUNREACH, "ENETUNREACH" },
                { EHOSTUNREACH, "EHOSTUNREACH" },
                { ECONNREFUSED, "ECONNREFUSED" },
                { EADDRNOTAVAIL, "EADDRNOTAVAIL" },
                { ETIMEDOUT, "ETIMEDOUT" },
                { ESRCH, "ESRCH" },
                { EUSERS, "EUSERS" },
        };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (names[i].e == e)
                        return names[i].name;
        return "E?";
}

/* A non-negative decimal number, or -1. */
static long num(const char *s)
{
        char *end = NULL;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0)
                return -1;
        return v;
}

static bool is_refusal(int e)
{
        return e == EPERM || e == EACCES || e == ENOSYS;
}

/* Print the verdict of a syscall that returned @r (errno in @e). */
static int verdict(long r, int e, const char *what)
{
        if (r >= 0)
                printf("allowed %s returned %ld\n", what, r);
        else if (is_refusal(e))
                printf("refused %s\n", errno_name(e));
        else
                printf("unavailable %s (%s)\n", errno_name(e), strerror(e));
        return 0;
}

static long try_mount(void)
{
        long r = mount("none", "/tmp", "tmpfs", 0, "size=1m");
        int e = errno;

        if (r == 0)
                (void)umount("/tmp");
        errno = e;
        return r;
}

static long try_clone_newuser(void)
{
        long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);

        if (pid == 0)
                _exit(0);
        if (pid > 0) {
                int e = errno;
                (void)waitpid((pid_t)pid, NULL, 0);
                errno = e;
        }
        return pid;
}

static long try_ptrace_attach(void)
{
        long r = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
        int e = errno;

        if (r == 0) {
                (void)waitpid(1, NULL, __WALL);
                (void)ptrace(PTRACE_DETACH, 1, NULL, NULL);
        }
        errno = e;
        return r;
}

static long close_after(long fd)
{
        int e = errno;

        if (fd >= 0)
                (void)close((int)fd);
        errno = e;
        return fd;
}

static long try_bpf(void)
{
        union bpf_attr a;

        memset(&a, 0, sizeof(a));
        a.map_type = BPF_MAP_TYPE_ARRAY;
        a.key_size = 4;
        a.value_size = 4;
        a.max_entries = 1;
        return close_after(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
}

static long try_io_uring(void)
{
        struct io_uring_params p;

        memset(&p, 0, sizeof(p));
        return close_after(syscall(SYS_io_uring_setup, 4, &p));
}

static long try_perf_event(void)
{
        struct perf_event_attr a;

        memset(&a, 0, sizeof(a));
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof(a);
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        return close_after(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

static long try_userfaultfd(void)
{
        return close_after(syscall(SYS_userfaultfd, O_CLOEXEC));
}

static long try_vsock(void)
{
        return close_after(socket(AF_VSOCK, SOCK_STREAM, 0));
}

static long try_keyctl(void)
{
        return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
}

static long try_add_key(void)
{
        return syscall(SYS_add_key, "user", "b4box-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
}

static long try_personality(void)
{
        long r = personality(READ_IMPLIES_EXEC);

        /* glibc returns the old persona; the kernel refuses with -1 */
        return r == -1 ? -1 : 0;
}

static int sys_unshare(unsigned long flag)
{
        long r = unshare((int)flag);

        return verdict(r, errno, "unshare");
}

static int cmd_sys(const char *name)
{
        static const struct {
                const char *name;
                unsigned long flag;
        } ns[] = {
                { "unshare-mnt", CLONE_NEWNS },        { "unshare-uts", CLONE_NEWUTS },
                { "unshare-ipc", CLONE_NEWIPC },       { "unshare-user", CLONE_NEWUSER },
                { "unshare-pid", CLONE_NEWPID },       { "unshare-net", CLONE_NEWNET },
                { "unshare-cgroup", CLONE_NEWCGROUP }, { "unshare-time", CLONE_NEWTIME },
        };

        static const struct {
                const char *name;
                long (*fn)(void);
        } calls[] = {
                { "mount", try_mount },
                { "clone-newuser", try_clone_newuser },
                { "ptrace-attach-1", try_ptrace_attach },
                { "keyctl", try_keyctl },
                { "add-key", try_add_key },
                { "bpf", try_bpf },
                { "io-uring", try_io_uring },
                { "vsock", try_vsock },
                { "personality", try_personality },
                { "perf-event", try_perf_event },
                { "userfaultfd", try_userfaultfd },
        };

        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
                if (strcmp(name, ns[i].name) == 0)
                        return sys_unshare(ns[i].flag);
        if (strcmp(name, "ptrace-traceme") == 0) {
                /* in a child, so a successful TRACEME does not leave this process traced */
                pid_t pid = fork();
                if (pid == 0)
                        _exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : 100 + errno);
                int st = 0;
                if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
                        return printf("unavailable fork\n"), 0;
                int code = WEXITSTATUS(st);
                return verdict(code == 0 ? 0 : -1, code - 100, "ptrace(TRACEME)");
        }
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
                if (strcmp(name, calls[i].name) == 0) {
                        errno = 0;
                        long r = calls[i].fn();
                        return verdict(r, errno, name);
                }
        fprintf(stderr, "unknown syscall probe '%s'\n", name);
        return 2;
}

/* ---- network ---- */

static int64_t now_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One non-blocking connect. Return: 0 connected, a positive errno, or ETIMEDOUT. */
static int connect_once(const struct sockaddr *sa, socklen_t len, int ms)
{
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int e = 0;

        if (fd < 0)
                return errno;
        if (connect(fd, sa, len) < 0) {
                e = errno;
                if (e == EINPROGRESS) {
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        socklen_t el = sizeof(e);
                        int n = poll(&p, 1, ms);
                        if (n == 0)
                                e = ETIMEDOUT;
                        else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                                e = errno;
                }
        }
        (void)close(fd);
        return e;
}

/* Connect, retrying EADDRNOTAVAIL (a link-local address still tentative) until the deadline. */
static int connect_until(const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
        for (;;) {
                int left = (int)(deadline - now_ms());
                int e = connect_once(sa, len, left > 0 ? left : 1);
                if (e != EADDRNOTAVAIL || now_ms() >= deadline)
                        return e;
                (void)usleep(100 * 1000);
        }
}

/* A link-local IPv6 target without a scope: try it on every interface but lo. */
static int connect_ll6(struct sockaddr_in6 *sin6, int64_t deadline)
{
        struct if_nameindex *ifs = if_nameindex();
        int e = ENETUNREACH;

        for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
                if (strcmp(i->if_name, "lo") == 0)
                        continue;
                sin6->sin6_scope_id = i->if_index;
                e = connect_until((struct sockaddr *)sin6, sizeof(*sin6), deadline);
                if (e == 0 || e == ECONNREFUSED)
                        break;
        }
        if (ifs)
                if_freenameindex(ifs);
        return e;
}

static void report_connect(const char *addr, int e)
{
        if (e == 0)
                printf("%s connected\n", addr);
        else if (e == ECONNREFUSED)
                printf("%s refused-by-peer\n", addr);
        else if (e == ETIMEDOUT)
                printf("%s timeout\n", addr);
        else
                printf("%s unreachable %s\n", addr, errno_name(e));
}

static int connect_one(const char *addr, int port, int ms)
{
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
        int64_t deadline = now_ms() + ms;
        int e;

        if (inet_pton(AF_INET, addr, &sin.sin_addr) == 1)
                e = connect_until((struct sockaddr *)&sin, sizeof(sin), deadline);
        else if (inet_pton(AF_INET6, addr, &sin6.sin6_addr) == 1)
                e = IN6_IS_ADDR_LINKLOCAL(&sin6.sin6_addr)
                            ? connect_ll6(&sin6, deadline)
                            : connect_until((struct sockaddr *)&sin6, sizeof(sin6), deadline);
        else {
                fprintf(stderr, "not an address: '%s'\n", addr);
                return 2;
        }
        report_connect(addr, e);
        return 0;
}

static int cmd_connect(int argc, char **argv)
{
        int ms = (int)num(argv[0]), port = (int)num(argv[1]);

        if (ms <= 0 || port <= 0 || port > 65535)
                return 2;
        for (int i = 2; i < argc; i++)
                if (connect_one(argv[i], port, ms) != 0)
                        return 2;
        return 0;
}

/* Leave the caller: fork, the parent exits 0, the child is a new session with no stdio. */
static int detach(void)
{
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid > 0)
                _exit(0);
        (void)setsid();
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3; fd++)
                if (null >= 0)
                        (void)dup3(null, fd, 0);
        return 0;
}

static int cmd_listen(int port, int secs)
{
        struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6,
                                     .sin6_port = htons((uint16_t)port),
                                     .sin6_addr = IN6ADDR_ANY_INIT };
        int zero = 0, one = 1;
        int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0) {
                /* no IPv6 at all: IPv4 only */
                struct sockaddr_in sin = { .sin_family = AF_INET,
                                           .sin_port = htons((uint16_t)port) };
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
                        return printf("listen-failed %s\n", errno_name(errno)), 0;
        } else {
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
                (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                if (bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0)
                        return printf("listen-failed %s\n", errno_name(errno)), 0;
        }
        if (listen(fd, 16) < 0)
                return printf("listen-failed %s\n", errno_name(errno)), 0;
        printf("listening %d\n", port);
        (void)fflush(stdout);
        if (detach() < 0)
                return 1;
        (void)sleep((unsigned)secs);
        return 0;
}

static int cmd_addrs(bool names_only)
{
        struct ifaddrs *ifa = NULL;

        if (getifaddrs(&ifa) < 0)
                return printf("failed %s\n", errno_name(errno)), 0;
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
                char buf[INET6_ADDRSTRLEN] = "";
                if (names_only) {
                        if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET &&
                            (i->ifa_flags & IFF_UP))
                                printf("%s\n", i->ifa_name);
                        continue;
                }
                if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
                        continue;
                if (i->ifa_addr->sa_family == AF_INET) {
                        struct sockaddr_in a; /* copied: ifa_addr is only sockaddr-aligned */
                        memcpy(&a, i->ifa_addr, sizeof(a));
                        (void)inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
                } else if (i->ifa_addr->sa_family == AF_INET6) {
                        struct sockaddr_in6 a;
                        memcpy(&a, i->ifa_addr, sizeof(a));
                        (void)inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof(buf));
                }
                if (buf[0])
                        printf("%s\n", buf);
        }
        freeifaddrs(ifa);
        return 0;
}

/* ---- resource bombs ---- */

static int cmd_forkbomb(long max)
{
        static pid_t pids[MAX_FORKS];
        long n = 0;
        int e = 0;

        if (max <= 0 || max > MAX_FORKS)
                return 2;
        (void)alarm(30);
        while (n < max) {
                pid_t pid = fork();
                if (pid < 0) {
                        e = errno;
                        break;
                }
                if (pid == 0) {
                        (void)alarm(30);
                        for (;;)
                                (void)pause();
                }
                pids[n++] = pid;
        }
        for (long i = 0; i < n; i++)
                (void)kill(pids[i], SIGKILL);
        for (long i = 0; i < n; i++)
                (void)waitpid(pids[i], NULL, 0);
        printf("forked %ld %s\n", n, e ? errno_name(e) : "none");
        return 0;
}

static int cmd_memory(long mb)
{
        char line[64];
        long done = 0;

        if (mb <= 0)
                return 2;
        for (; done < mb; done++) {
                char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
                if (p == MAP_FAILED) {
                        printf("stopped %ld %s\n", done, errno_name(errno));
                        return 0;
                }
                memset(p, 0xa5, 1 << 20);
                if (done % 8 == 0) {
                        int n = snprintf(line, sizeof(line), "mb %ld\n", done);
                        (void)!write(STDOUT_FILENO, line, (size_t)n);
                }
        }
        printf("done %ld\n", done);
        return 0;
}

static int cmd_disk(const char *path, long mb)
{
        static char buf[1 << 20];
        long done = 0;
        int e = 0;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || mb <= 0)
                return printf("stopped 0 %s\n", errno_name(errno)), 0;
        memset(buf, 0x5a, sizeof(buf));
        for (; done < mb; done++) {
                if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
                        e = errno ? errno : ENOSPC;
                        break;
                }
        }
        if (!e && fsync(fd) < 0)
                e = errno;
        (void)close(fd);
        (void)unlink(path);
        if (e)
                printf("stopped %ld %s\n", done, errno_name(e));
        else
                printf("done %ld\n", done);
        return 0;
}

static int cmd_output(long bytes)
{
        static char buf[65536];

        memset(buf, 'x', sizeof(buf));
        for (size_t i = 63; i < sizeof(buf); i += 64)
                buf[i] = '\n';
        while (bytes > 0) {
                size_t n = bytes < (long)sizeof(buf) ? (size_t)bytes : sizeof(buf);
                ssize_t w = write(STDOUT_FILENO, buf, n);
                if (w <= 0)
                        return 1;
                bytes -= w;
        }
        return 0;
}

static int cmd_swap(const char *a, const char *b, int secs, const char *done_path)
{
        unsigned long n = 0;
        int64_t end = now_ms() + (int64_t)secs * 1000;

        if (detach() < 0)
                return 1;
        while (now_ms() < end)
                for (int i = 0; i < 1000; i++)
                        if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0)
                                n++;
        FILE *f = fopen(done_path, "we");
        if (f) {
                fprintf(f, "%lu\n", n);
                (void)fclose(f);
        }
        return 0;
}

static int cmd_hold(int secs)
{
        if (detach() < 0)
                return 1;
        (void)sleep((unsigned)secs);
        return 0;
}

int main(int argc, char **argv)
{
        const char *c = argc > 1 ? argv[1] : "";

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (strcmp(c, "hello") == 0)
                return printf("b4box-probe-helper ok\n"), 0;
        if (strcmp(c, "sys") == 0 && argc == 3)
                return cmd_sys(argv[2]);
        if (strcmp(c, "connect") == 0 && argc >= 5)
                return cmd_connect(argc - 2, argv + 2);
        if (strcmp(c, "listen") == 0 && argc == 4)
                return cmd_listen((int)num(argv[2]), (int)num(argv[3]));
        if (strcmp(c, "addrs") == 0)
                return cmd_addrs(false);
        if (strcmp(c, "ifaces") == 0)
                return cmd_addrs(true);
        if (strcmp(c, "forkbomb") == 0 && argc == 3)
                return cmd_forkbomb(num(argv[2]));
        if (strcmp(c, "memory") == 0 && argc == 3)
                return cmd_memory(num(argv[2]));
        if (strcmp(c, "disk") == 0 && argc == 4)
                return cmd_disk(argv[2], num(argv[3]));
        if (strcmp(c, "output") == 0 && argc == 3)
                return cmd_output(num(argv[2]));
        if (strcmp(c, "swap") == 0 && argc == 6)
                return cmd_swap(argv[2], argv[3], (int)num(argv[4]), argv[5]);
        if (strcmp(c, "hold") == 0 && argc == 4)
                return cmd_hold((int)num(argv[2]));
        fprintf(stderr,
                "usage: %s hello|sys|connect|listen|addrs|ifaces|forkbomb|memory|disk|"
                "output|swap|hold ...\n",
                argv[0]);
        return 2;
}
