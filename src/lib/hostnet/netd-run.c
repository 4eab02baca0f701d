/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start and stop a listed thread's b4box-netd. netd is double-forked (so neither the CLI nor
 * the server keeps a child to reap), runs in the provider's network namespace, and outlives
 * the process that started it like the keeper does: it is recorded as run/<id>.netd
 * "<pid> <starttime>" and stopped by that record (the start time guards against pid reuse).
 * Its log is run/<id>.netd.log, its audit socket run/a-<hash>.sock (audit.h). Handshake: netd
 * writes "<pid> <port>\n" to its stdout (a pipe) once it listens.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/proc-util.h"
#include "base/strv.h"
#include "hostnet.h"
#include "netpolicy.h"

#ifndef B4_NETD_BUILD_PATH
# define B4_NETD_BUILD_PATH ""
#endif
#ifndef B4_NETD_INSTALL_PATH
# define B4_NETD_INSTALL_PATH "/usr/local/libexec/b4box-netd"
#endif

#define READY_TIMEOUT_MS 5000

const char *netd_exe_path(void)
{
        const char *paths[] = { secure_getenv("B4BOX_NETD"), B4_NETD_INSTALL_PATH,
                                B4_NETD_BUILD_PATH };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (paths[i] && *paths[i] && access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

static int push(char ***argv, const char *fmt, ...) B4_PRINTF(2, 3);

static int push(char ***argv, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = b4_vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : strv_consume(argv, s);
}

static int build_argv(const char *exe,
                      const char *id,
                      const struct b4_policy *p,
                      unsigned ifindex,
                      const char *gateway,
                      char ***ret)
{
        cleanup_strv char **argv = NULL;
        char ip[64];
        int r;

        r = push(&argv, "%s", exe);
        if (r >= 0)
                r = push(&argv, "--ifindex=%u", ifindex);
        if (r >= 0)
                r = push(&argv, "--listen=%s", gateway);
        if (r >= 0)
                r = push(&argv, "--mode=%s", p->network == B4_NETWORK_DENY ? "deny" : "allow");
        if (r >= 0)
                r = push(&argv, "--pin-floor=%u", p->dns.pin_floor_s);
        if (r >= 0)
                r = push(&argv, "--pin-cap=%u", p->dns.pin_cap_s);
        if (r >= 0) { /* relative: netd starts in the run directory (middle()) */
                char name[HOSTNET_AUDIT_NAME_LEN];

                hostnet_audit_name(id, name);
                r = push(&argv, "--audit=%s", name);
        }
        for (size_t i = 0; r >= 0 && i < p->dns.n_upstream; i++) {
                const struct b4_net_addr *a = &p->dns.upstream[i];

                (void)inet_ntop(a->family, a->addr, ip, sizeof(ip));
                r = push(&argv, "--upstream=%s", ip);
        }
        if (r >= 0)
                r = push(&argv, "--");
        for (size_t i = 0; r >= 0 && i < p->n_network_list; i++)
                r = push(&argv, "%s", p->network_list[i].text);
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(argv);
        return 0;
}

/* The middle child: fork netd and exit. Async-signal-safe only. */
static void middle(char **argv, int run_fd, int out_fd, int log_fd)
{
        char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        pid_t pid;

        if (null_fd < 0 || setsid() < 0)
                _exit(126);
        pid = fork();
        if (pid < 0)
                _exit(126);
        if (pid > 0)
                _exit(0);
        if (dup3(null_fd, STDIN_FILENO, 0) < 0 || dup3(out_fd, STDOUT_FILENO, 0) < 0 ||
            dup3(log_fd, STDERR_FILENO, 0) < 0 || fchdir(run_fd) < 0)
                _exit(126);
        execve(argv[0], argv, envp);
        _exit(127);
}

/* Read "<pid> <port>\n" within the timeout. */
static int read_handshake(int fd, pid_t *ret_pid, uint16_t *ret_port)
{
        char buf[32];
        size_t got = 0;
        unsigned long port = 0;
        int pid = 0;

        while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t n;

                if (poll(&p, 1, READY_TIMEOUT_MS) != 1)
                        return -ETIMEDOUT;
                n = read(fd, buf + got, sizeof(buf) - 1 - got);
                if (n <= 0)
                        return -EPIPE;
                got += (size_t)n;
        }
        buf[got] = '\0';
        if (sscanf(buf, "%d %lu", &pid, &port) != 2 || pid <= 1 || port == 0 || port > 65535)
                return -EPROTO;
        *ret_pid = pid;
        *ret_port = (uint16_t)port;
        return 0;
}

static int record(const struct hostnet *hn, const char *id, pid_t pid)
{
        char name[64], text[64];
        uint64_t st;
        int r = proc_starttime(pid, &st);

        if (r < 0)
                return r;
        (void)snprintf(name, sizeof(name), "%s.netd", id);
        (void)snprintf(text, sizeof(text), "%d %llu\n", (int)pid, (unsigned long long)st);
        return write_file_atomic_at(hn->run_fd, name, text, strlen(text), 0600);
}

int netd_start(const struct hostnet *hn,
               const char *id,
               const struct b4_policy *p,
               unsigned ifindex,
               const char *gateway,
               uint16_t *ret_port,
               struct b4_error *err)
{
        const char *exe = netd_exe_path();
        cleanup_strv char **argv = NULL;
        cleanup_close int log_fd = -EBADF;
        int pipe_fd[2] = { -EBADF, -EBADF }, status, r;
        char log[64];
        pid_t mid, pid = 0;

        if (!exe)
                return b4_error_set(err, -ENOENT, "b4box-netd not found (set B4BOX_NETD)");
        r = build_argv(exe, id, p, ifindex, gateway, &argv);
        if (r < 0)
                return b4_error_set(err, r, "cannot start b4box-netd");
        (void)snprintf(log, sizeof(log), "%s.netd.log", id);
        log_fd = openat(hn->run_fd, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (log_fd < 0 || pipe2(pipe_fd, O_CLOEXEC) < 0)
                return b4_error_set(err, -errno, "cannot start b4box-netd");
        mid = fork();
        if (mid == 0)
                middle(argv, hn->run_fd, pipe_fd[1], log_fd);
        r = mid < 0 ? -errno : 0;
        safe_close(pipe_fd[1]);
        while (mid > 0 && waitpid(mid, &status, 0) < 0 && errno == EINTR)
                ;
        if (r >= 0)
                r = read_handshake(pipe_fd[0], &pid, ret_port);
        safe_close(pipe_fd[0]);
        if (r >= 0)
                r = record(hn, id, pid);
        if (r < 0) {
                if (pid > 0)
                        (void)kill(pid, SIGKILL);
                return b4_error_set(err, r, "b4box-netd did not start (see run/%s)", log);
        }
        return 0;
}

void netd_stop(const struct hostnet *hn, const char *id)
{
        cleanup_free char *buf = NULL;
        char name[64];
        unsigned long long st = 0;
        uint64_t now;
        size_t len;
        int pid = 0;

        (void)snprintf(name, sizeof(name), "%s.netd", id);
        if (read_file_at(hn->run_fd, name, 64, &buf, &len) < 0)
                return;
        if (sscanf(buf, "%d %llu", &pid, &st) == 2 && pid > 1 && proc_starttime(pid, &now) == 0 &&
            now == st)
                (void)kill(pid, SIGTERM);
        (void)unlinkat(hn->run_fd, name, 0);
        (void)snprintf(name, sizeof(name), "%s.netd.log", id);
        (void)unlinkat(hn->run_fd, name, 0);
        hostnet_audit_name(id, name);
        (void)unlinkat(hn->run_fd, name, 0);
}
