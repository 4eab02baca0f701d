/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plain transport (a pair of fds), where b4box-agent is found (as b4box-keeper and
 * b4box-netd are: $B4BOX_AGENT, the installed path, the build tree's), and a local agent
 * started as a child over a socketpair (tests; an agent on the same host).
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent-internal.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"

#ifndef B4_AGENT_INSTALL_PATH
# define B4_AGENT_INSTALL_PATH "/usr/local/libexec/b4box-agent"
#endif
#ifndef B4_AGENT_BUILD_PATH
# define B4_AGENT_BUILD_PATH ""
#endif

/* A pair of fds (or one socket). shutdown must wake a blocked read or write whatever the
 * fds are (shutdown(2) does nothing to a pipe), so both wait in poll() beside a wake pipe
 * that shutdown makes readable for good. */
struct fds {
        int rfd, wfd;
        int wake_r, wake_w;
};

/* Wait until @fd is ready for @events or the transport is shut down. Return: 0 or -errno. */
static int fds_wait(struct fds *f, int fd, short events)
{
        struct pollfd p[2] = { { .fd = fd, .events = events },
                               { .fd = f->wake_r, .events = POLLIN } };

        for (;;) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents)
                        return -ESHUTDOWN;
                if (p[0].revents)
                        return 0;
        }
}

static int fds_write(void *u, const void *buf, size_t len)
{
        struct fds *f = u;
        const char *p = buf;

        while (len > 0) {
                int r = fds_wait(f, f->wfd, POLLOUT);
                if (r < 0)
                        return r;
                ssize_t n = send(f->wfd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == ENOTSOCK)
                        n = write(f->wfd, p, len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static ssize_t fds_read(void *u, void *buf, size_t len)
{
        struct fds *f = u;

        for (;;) {
                int r = fds_wait(f, f->rfd, POLLIN);
                if (r < 0)
                        return r;
                ssize_t n = read(f->rfd, buf, len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return n < 0 ? -errno : n;
        }
}

static void fds_shutdown(void *u)
{
        struct fds *f = u;

        (void)!write(f->wake_w, "x", 1);
        (void)shutdown(f->wfd, SHUT_WR); /* a socket's peer sees the end at once */
}

static void fds_close(void *u)
{
        struct fds *f = u;

        if (f->wfd != f->rfd)
                safe_close(f->wfd);
        safe_close(f->rfd);
        safe_close(f->wake_r);
        safe_close(f->wake_w);
        free(f);
}

int agent_transport_fds(int rfd, int wfd, struct agent_transport *ret)
{
        struct fds *f = b4_malloc(sizeof(*f));
        int w[2];

        if (!f || pipe2(w, O_CLOEXEC | O_NONBLOCK) < 0) {
                int r = f ? -errno : -ENOMEM;
                free(f);
                if (wfd != rfd)
                        safe_close(wfd);
                safe_close(rfd);
                return r;
        }
        *f = (struct fds){ .rfd = rfd, .wfd = wfd, .wake_r = w[0], .wake_w = w[1] };
        /* non-blocking: a write never blocks past a shutdown (a pipe's would) */
        (void)fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);
        (void)fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);
        *ret = (struct agent_transport){ .write = fds_write,
                                         .read = fds_read,
                                         .shutdown = fds_shutdown,
                                         .close = fds_close,
                                         .userdata = f };
        return 0;
}

int agent_binary_path(char **ret)
{
        const char *paths[] = { secure_getenv("B4BOX_AGENT"), B4_AGENT_INSTALL_PATH,
                                B4_AGENT_BUILD_PATH };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i] || !*paths[i] || access(paths[i], X_OK) < 0)
                        continue;
                *ret = b4_strdup(paths[i]);
                return *ret ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

/* In the child: the socket on 0 and 1, exec the agent. Async-signal-safe only. */
static _Noreturn void child(int sock, const char *path, char *const *argv)
{
        sigset_t none;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(sock, 0) < 0 || dup2(sock, 1) < 0) /* checksrc: allow */
                _exit(127);
        execv(path, argv);
        _exit(127);
}

int agent_spawn(const char *path,
                char *const *argv_extra,
                const struct agent_conn_opts *opts,
                struct agent_conn **ret,
                pid_t *ret_pid,
                struct b4_error *err)
{
        cleanup_free char *found = NULL;
        cleanup_free char **argv = NULL;
        struct agent_transport t;
        size_t n = 0;
        int sv[2], r;
        pid_t pid;

        if (!path) {
                r = agent_binary_path(&found);
                if (r < 0)
                        return b4_error_set(err, r, "b4box-agent not found (set B4BOX_AGENT)");
                path = found;
        }
        while (argv_extra && argv_extra[n])
                n++;
        argv = b4_calloc(n + 2, sizeof(char *));
        if (!argv)
                return b4_error_set(err, -ENOMEM, "out of memory");
        argv[0] = (char *)"b4box-agent";
        for (size_t i = 0; i < n; i++)
                argv[i + 1] = argv_extra[i];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return b4_error_set(err, -errno, "socketpair: %m");
        pid = fork();
        if (pid < 0) {
                r = -errno;
                safe_close(sv[0]);
                safe_close(sv[1]);
                return b4_error_set(err, r, "fork: %s", strerror(-r));
        }
        if (pid == 0)
                child(sv[1], path, argv);
        safe_close(sv[1]);
        r = agent_transport_fds(sv[0], sv[0], &t);
        if (r >= 0)
                r = agent_conn_open(&t, opts, ret, err);
        else
                b4_error_set(err, r, "out of memory");
        if (r < 0) {
                (void)kill(pid, SIGKILL);
                (void)waitpid(pid, NULL, 0);
                return r;
        }
        *ret_pid = pid;
        return 0;
}
