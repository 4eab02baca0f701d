/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's seccomp filter (src/netd/netd-seccomp.c), loaded in a forked child: what
 * serving needs still works (UDP and TCP sockets, a thread's futex, time, memory), and what
 * it must not reach kills the child with SIGSYS: open, exec, fork, a netlink, unix or packet
 * socket, ptrace. Needs no privilege (PR_SET_NO_NEW_PRIVS).
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b4-test.h"
#include "netd.h"

static void *nothing(void *arg)
{
        return arg;
}

/* The child's status after loading the filter and running @fn. */
static int under_filter(void (*fn)(void))
{
        pid_t pid = fork();
        int status = 0;

        assert_true(pid >= 0);
        if (pid == 0) {
                pthread_t t;

                /* a thread started before the filter, as netd's workers are (TSYNC) */
                if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0)
                        _exit(3);
                if (netd_seccomp() < 0)
                        _exit(2);
                fn();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}

static bool killed(int status)
{
        return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}

static void serving(void)
{
        struct timespec ts;
        int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int t = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        void *p = malloc(1 << 20);

        if (u < 0 || t < 0 || !p || clock_gettime(CLOCK_REALTIME, &ts) < 0)
                _exit(1);
        free(p);
        (void)close(u);
        (void)close(t);
}

static void do_open(void)
{
        (void)open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void do_netlink(void)
{
        (void)socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
}

static void do_unix(void)
{
        (void)socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static void do_packet(void)
{
        (void)socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
}

static void do_fork(void)
{
        (void)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

static void do_exec(void)
{
        char *argv[] = { (char *)"/bin/true", NULL };

        (void)execve(argv[0], argv, NULL);
}

static void do_ptrace(void)
{
        (void)ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

static void do_thread(void)
{
        pthread_t t;

        (void)pthread_create(&t, NULL, nothing, NULL);
}

static void test_netd_seccomp_allows_serving(void **state)
{
        int status = under_filter(serving);

        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_netd_seccomp_kills_the_rest(void **state)
{
        void (*const fns[])(void) = { do_open, do_netlink, do_unix,   do_packet,
                                      do_fork, do_exec,    do_ptrace, do_thread };

        for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
                int status = under_filter(fns[i]);

                if (!killed(status))
                        fail_msg("call %zu: status 0x%x, not killed by SIGSYS", i, status);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_netd_seccomp_allows_serving),
                cmocka_unit_test(test_netd_seccomp_kills_the_rest),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
