/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-keeper: PID 1 of one thread's sandbox. It is exec'd by the provider's clone child
 * after the sandbox's namespaces, cgroup and root filesystem are in place, finds its listening
 * unix socket on fd 3, and then only does three things until it is killed:
 *   - reaps every process of the sandbox (orphans included),
 *   - on request, forks a command with the identity, capabilities, no_new_privs and seccomp
 *     filter the request carries (see keeper-proto.h), and reports its wait status,
 *   - kills a command's session, and everything in the command's own cgroup when the request
 *     gave it one (so a process that setsid()s away dies too), when asked or when its client
 *     goes away; background jobs of a command that exited normally are left alone;
 *   - owns background commands (KEEPER_BACKGROUND): copies their output into their spool,
 *     bounded, kills them at their deadline and writes their exit status, with no client.
 * It links only against libc (statically) and allocates nothing between requests, so an idle
 * keeper stays well under 1 MiB of RSS. It never exits on its own.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper-proto.h"

#define CMDS_MAX 256

struct cmd {
        pid_t pid;      /* 0 = free slot */
        int conn;       /* client connection, -1 once gone */
        int cg_fd;      /* the command's own cgroup dir, -1 = none */
        uint32_t flags; /* KEEPER_CG_* and KEEPER_BACKGROUND of the request */
        /* background commands (KEEPER_BACKGROUND): */
        int pump_fd;       /* the read end of its output pipe, -1 = none (or closed) */
        int spool_fd;      /* where the output goes */
        int status_fd;     /* where the exit line goes */
        uint64_t spooled;  /* bytes written to the spool */
        uint64_t deadline; /* CLOCK_MONOTONIC ms, 0 = none */
        bool timed_out, truncated;
};

#define CMD_FREE \
 ((struct cmd){ .conn = -1, .cg_fd = -1, .pump_fd = -1, .spool_fd = -1, .status_fd = -1 })

static struct cmd cmds[CMDS_MAX];

struct req {
        struct keeper_req_hdr h;
        int out_fd, err_fd, cg_fd, in_fd;
        uint64_t timeout_ms; /* background */
        char *mem;           /* mmap'ed: data, then the pointer arrays */
        size_t mem_len;
        struct sock_fprog prog;
        const char *cwd;
        char **argv, **envp;
};

static void send_msg(int fd, uint32_t type, int32_t value)
{
        struct keeper_msg m = { .type = type, .value = value };

        if (fd >= 0)
                (void)send(fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void child_fail(const char *step)
{
        char buf[160];
        int n = snprintf(buf, sizeof(buf), "b4box-keeper: %s failed: %s\n", step, strerror(errno));

        if (n > 0)
                (void)!write(STDERR_FILENO, buf, (size_t)n);
        _exit(127);
}

static void child_drop_caps(void)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[2] = { { 0 } };

        if (syscall(SYS_capset, &hdr, data) < 0)
                child_fail("capset");
}

static void child_drop_bounding(void)
{
        for (int cap = 0; cap < 64; cap++)
                if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
                    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        child_fail("PR_CAPBSET_DROP");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                child_fail("PR_CAP_AMBIENT_CLEAR_ALL");
}

static void child_setup_fds(const struct req *r)
{
        int in_fd = r->in_fd >= 0 ? r->in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (in_fd < 0 || dup3(in_fd, STDIN_FILENO, 0) < 0)
                child_fail("stdin");
        if (dup3(r->out_fd, STDOUT_FILENO, 0) < 0 ||
            dup3(r->err_fd >= 0 ? r->err_fd : r->out_fd, STDERR_FILENO, 0) < 0)
                _exit(127);
        if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
                child_fail("close_range");
}

static void child_reset_signals(void)
{
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t all;

        for (int sig = 1; sig < NSIG; sig++)
                (void)sigaction(sig, &sa, NULL);
        sigemptyset(&all);
        (void)sigprocmask(SIG_SETMASK, &all, NULL);
}

static void child_oom_adj(void)
{
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

        if (fd >= 0) {
                (void)!write(fd, "500", 3); /* OOM victims before the keeper */
                (void)close(fd);
        }
}

/* Join the command's own cgroup before anything else runs, so every descendant is in it
 * (when fork_command() could not start it there). */
static void child_join_cgroup(const struct req *r, bool joined)
{
        int fd;

        if (r->cg_fd < 0 || joined)
                return;
        fd = openat(r->cg_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
                child_fail("joining the command cgroup");
        (void)close(fd);
}

/* The forked command, @joined: already in its cgroup. Never returns. */
static void run_child(const struct req *r, bool joined)
{
        uint32_t f = r->h.flags;

        child_join_cgroup(r, joined);
        (void)setsid();
        child_reset_signals();
        child_setup_fds(r);
        child_oom_adj();
        umask(022);
        if (chdir(r->cwd) < 0 && chdir("/") < 0)
                child_fail("chdir");
        if (f & KEEPER_DROP_CAPS)
                child_drop_bounding();
        if (f & KEEPER_SETUID) {
                if (!(f & KEEPER_NO_SETGROUPS) && setgroups(0, NULL) < 0)
                        child_fail("setgroups");
                if (setresgid(r->h.gid, r->h.gid, r->h.gid) < 0)
                        child_fail("setresgid");
                if (setresuid(r->h.uid, r->h.uid, r->h.uid) < 0)
                        child_fail("setresuid");
        }
        if (f & KEEPER_DROP_CAPS)
                child_drop_caps();
        if ((f & (KEEPER_NO_NEW_PRIVS | KEEPER_SECCOMP)) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
                child_fail("PR_SET_NO_NEW_PRIVS");
        if ((f & KEEPER_SECCOMP) && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &r->prog) < 0)
                child_fail("seccomp");
        execve(r->argv[0], r->argv, r->envp);
        child_fail("execve");
}

static int recv_header(int conn, struct req *r)
{
        char cbuf[CMSG_SPACE(4 * sizeof(int))];
        size_t nfd;
        struct iovec iov = { .iov_base = &r->h, .iov_len = sizeof(r->h) };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c;
        ssize_t n;

        n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
        if (n != (ssize_t)sizeof(r->h))
                return -EPROTO;
        c = CMSG_FIRSTHDR(&mh);
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                return -EPROTO;
        nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (i == 0)
                        r->out_fd = fd;
                else if (i == 1)
                        r->err_fd = fd;
                else if (i == 2 && (r->h.flags & KEEPER_CGROUP))
                        r->cg_fd = fd;
                else if (i == nfd - 1 && (r->h.flags & KEEPER_STDIN) && r->in_fd < 0)
                        r->in_fd = fd;
                else
                        (void)close(fd);
        }
        if (nfd != 2u + !!(r->h.flags & KEEPER_CGROUP) + !!(r->h.flags & KEEPER_STDIN))
                return -EPROTO;
        if ((r->h.flags & (KEEPER_BACKGROUND | KEEPER_STDIN)) &&
            (r->h.version < 2 || !(r->h.flags & KEEPER_BACKGROUND)))
                return -EPROTO;
        if (r->h.magic != KEEPER_MAGIC || r->h.version < 1 || r->h.version > KEEPER_PROTO_VERSION ||
            r->h.data_len > KEEPER_REQ_MAX || r->h.bpf_len > KEEPER_BPF_MAX || r->h.n_argv < 1 ||
            r->h.n_argv > KEEPER_ARGS_MAX ||
            r->h.n_env > KEEPER_ARGS_MAX - r->h.n_argv || /* no uint32 wrap */
            (size_t)r->h.bpf_len * sizeof(struct sock_filter) > r->h.data_len)
                return -EPROTO;
        return 0;
}

static int recv_all(int conn, char *p, size_t len)
{
        while (len > 0) {
                ssize_t n = recv(conn, p, len, MSG_WAITALL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EPROTO;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Point @out[0..n) at consecutive NUL-terminated strings from *@p, bounded by @end. */
static int split_strings(char **p, const char *end, char **out, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++) {
                char *nul = memchr(*p, '\0', (size_t)(end - *p));
                if (!nul)
                        return -EPROTO;
                out[i] = *p;
                *p = nul + 1;
        }
        out[n] = NULL;
        return 0;
}

static int read_body(int conn, struct req *r)
{
        size_t ptrs = ((size_t)r->h.n_argv + r->h.n_env + 2) * sizeof(char *);
        size_t bpf_bytes = (size_t)r->h.bpf_len * sizeof(struct sock_filter);
        char *p, *end;
        int e;

        r->mem_len = ptrs + r->h.data_len + 1;
        r->mem = mmap(NULL, r->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r->mem == MAP_FAILED) {
                r->mem = NULL;
                return -ENOMEM;
        }
        r->argv = (char **)(void *)r->mem; /* mmap memory: page aligned */
        r->envp = r->argv + r->h.n_argv + 1;
        p = r->mem + ptrs;
        end = p + r->h.data_len;
        e = recv_all(conn, p, r->h.data_len);
        if (e < 0)
                return e;
        r->prog = (struct sock_fprog){ .len = (unsigned short)r->h.bpf_len,
                                       .filter = (struct sock_filter *)(void *)p }; /* 8-aligned */
        p += bpf_bytes;
        r->cwd = p;
        p = memchr(p, '\0', (size_t)(end - p));
        if (!p)
                return -EPROTO;
        p++;
        e = split_strings(&p, end, r->argv, r->h.n_argv);
        if (e < 0)
                return e;
        e = split_strings(&p, end, r->envp, r->h.n_env);
        if (e < 0 || !(r->h.flags & KEEPER_BACKGROUND))
                return e;
        char *nul = memchr(p, '\0', (size_t)(end - p)), *num_end = NULL;
        if (!nul)
                return -EPROTO;
        errno = 0;
        r->timeout_ms = strtoull(p, &num_end, 10);
        return num_end == nul && nul != p && errno == 0 ? 0 : -EPROTO;
}

static void req_release(struct req *r)
{
        if (r->out_fd >= 0)
                (void)close(r->out_fd);
        if (r->err_fd >= 0)
                (void)close(r->err_fd);
        if (r->cg_fd >= 0)
                (void)close(r->cg_fd);
        if (r->in_fd >= 0)
                (void)close(r->in_fd);
        if (r->mem)
                (void)munmap(r->mem, r->mem_len);
}

static struct cmd *cmd_free_slot(void)
{
        for (size_t i = 0; i < CMDS_MAX; i++)
                if (cmds[i].pid == 0)
                        return &cmds[i];
        return NULL;
}

/*
 * fork(), straight into the command's own cgroup when it has one: clone3(CLONE_INTO_CGROUP)
 * costs what a fork costs, while a write to cgroup.procs waits for an RCU grace period
 * (~10 ms on an idle host, the most of a warm command). Where clone3 refuses (a kernel before
 * 5.7, or a cgroup it will not start a process in), fork() and the child writes cgroup.procs
 * as before, with the same error if that fails too.
 */
static pid_t fork_command(const struct req *r, bool *ret_joined)
{
        struct clone_args a = { .flags = CLONE_INTO_CGROUP,
                                .exit_signal = SIGCHLD,
                                .cgroup = (uint64_t)r->cg_fd };
        pid_t pid;

        *ret_joined = false;
        if (r->cg_fd >= 0) {
                pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
                if (pid >= 0) {
                        *ret_joined = true;
                        return pid;
                }
        }
        return fork();
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A background command: its output pipe replaces the request's stdout and stderr (which
 * become the spool and status fds of @bg). */
static int background_prepare(struct req *r, struct cmd *bg)
{
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        (void)fcntl(p[0], F_SETFL, O_NONBLOCK);
        *bg = CMD_FREE;
        bg->pump_fd = p[0];
        bg->spool_fd = r->out_fd;
        bg->status_fd = r->err_fd;
        bg->deadline = r->timeout_ms ? now_ms() + r->timeout_ms : 0;
        r->out_fd = p[1];
        r->err_fd = -1; /* the child's stderr is its stdout */
        return 0;
}

static void cmd_close_fds(struct cmd *c)
{
        if (c->conn >= 0)
                (void)close(c->conn);
        if (c->cg_fd >= 0)
                (void)close(c->cg_fd);
        if (c->pump_fd >= 0)
                (void)close(c->pump_fd);
        if (c->spool_fd >= 0)
                (void)close(c->spool_fd);
        if (c->status_fd >= 0)
                (void)close(c->status_fd);
        *c = CMD_FREE;
}

/* Accept one connection and start its command; the connection stays open until it exits
 * (a background command's is closed once it started). */
static void handle_accept(int listen_fd)
{
        struct timeval tv = { .tv_sec = 5 };
        struct req r = { .out_fd = -1, .err_fd = -1, .cg_fd = -1, .in_fd = -1 };
        struct cmd *slot, bg = CMD_FREE;
        bool joined = false;
        int conn, e;
        pid_t pid;

        conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
                return;
        (void)setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        e = recv_header(conn, &r);
        if (e == 0)
                e = read_body(conn, &r);
        slot = cmd_free_slot();
        if (e == 0 && !slot)
                e = -EBUSY; /* too many commands at once; EAGAIN means "cannot fork" */
        if (e == 0 && (r.h.flags & KEEPER_BACKGROUND))
                e = background_prepare(&r, &bg);
        pid = e == 0 ? fork_command(&r, &joined) : -1;
        if (pid == 0)
                run_child(&r, joined);
        if (e == 0 && pid < 0)
                e = -errno;
        if (e == 0) {
                bg.pid = pid;
                bg.conn = (r.h.flags & KEEPER_BACKGROUND) ? -1 : conn;
                bg.cg_fd = r.cg_fd;
                bg.flags = r.h.flags;
                *slot = bg;
                r.cg_fd = -1;
        }
        req_release(&r);
        if (e < 0) {
                cmd_close_fds(&bg);
                send_msg(conn, KEEPER_MSG_FAILED, -e);
                (void)close(conn);
                return;
        }
        send_msg(conn, KEEPER_MSG_STARTED, pid);
        if (r.h.flags & KEEPER_BACKGROUND)
                (void)close(conn); /* the keeper's now */
}

/* The session id (field 6) of /proc/<pid>/stat, or -1. */
static pid_t proc_session(const char *pid)
{
        char path[64], buf[512];
        ssize_t n;
        int fd;
        char *p;
        long ppid, pgrp, sid;
        char state;

        (void)snprintf(path, sizeof(path), "/proc/%s/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        (void)close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &sid) != 4)
                return -1;
        return (pid_t)sid;
}

/* SIGKILL the command's process group and anything else left in its session. */
static void kill_session(pid_t leader, int sig)
{
        DIR *d;
        struct dirent *de;

        (void)kill(-leader, sig);
        (void)kill(leader, sig);
        d = opendir("/proc");
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
                    proc_session(de->d_name) == leader)
                        (void)kill((pid_t)strtol(de->d_name, NULL, 10), sig);
        (void)closedir(d);
}

/* SIGKILL every pid listed in @dirfd's cgroup.procs; return how many were listed. */
static int kill_procs(int dirfd)
{
        static char buf[65536];
        ssize_t n;
        int fd, count = 0;

        fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        (void)close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        for (char *p = buf, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 1) {
                        (void)kill((pid_t)pid, SIGKILL);
                        count++;
                }
        }
        return count;
}

static void write_at(int dirfd, const char *file, const char *s)
{
        int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);

        if (fd >= 0) {
                (void)!write(fd, s, strlen(s));
                (void)close(fd);
        }
}

/* Kill everything in the command's cgroup: cgroup.kill (v2), or freeze, kill, thaw until
 * empty (v1; a frozen fork bomb cannot outrun the loop). Bounded: ~200 ms at most. */
static void kill_cgroup(const struct cmd *c)
{
        if (c->cg_fd < 0)
                return;
        if (c->flags & KEEPER_CG_KILL) {
                write_at(c->cg_fd, "cgroup.kill", "1");
                return;
        }
        for (int i = 0; i < 200; i++) {
                if (c->flags & KEEPER_CG_FREEZER)
                        write_at(c->cg_fd, "freezer.state", "FROZEN");
                int n = kill_procs(c->cg_fd);
                if (c->flags & KEEPER_CG_FREEZER)
                        write_at(c->cg_fd, "freezer.state", "THAWED");
                if (n == 0)
                        return;
                (void)usleep(1000);
        }
}

static void kill_cmd(const struct cmd *c, int sig)
{
        kill_session(c->pid, sig);
        if (sig == SIGKILL)
                kill_cgroup(c);
}

static void background_exited(struct cmd *c, int status);

static void reap(void)
{
        int status;
        pid_t pid;

        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                for (size_t i = 0; i < CMDS_MAX; i++) {
                        if (cmds[i].pid != pid)
                                continue;
                        send_msg(cmds[i].conn, KEEPER_MSG_EXITED, status);
                        if (cmds[i].flags & KEEPER_BACKGROUND)
                                background_exited(&cmds[i], status);
                        cmd_close_fds(&cmds[i]);
                        break;
                }
        }
}

/* Copy what the pipe has into the spool, KEEPER_SPOOL_MAX bytes at most (the rest is read
 * and dropped, so the command never blocks on it). Closes the pipe at its end. */
static void pump(struct cmd *c)
{
        static char buf[65536];

        for (int round = 0; round < 16 && c->pump_fd >= 0; round++) {
                ssize_t n = read(c->pump_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        (void)close(c->pump_fd);
                        c->pump_fd = -1;
                        return;
                }
                size_t keep = c->spooled >= KEEPER_SPOOL_MAX ? 0
                              : (uint64_t)n > KEEPER_SPOOL_MAX - c->spooled
                                      ? (size_t)(KEEPER_SPOOL_MAX - c->spooled)
                                      : (size_t)n;
                if (keep < (size_t)n)
                        c->truncated = true;
                if (keep > 0 && write(c->spool_fd, buf, keep) == (ssize_t)keep)
                        c->spooled += keep;
        }
}

/* The main process exited: what its pipe still holds goes to the spool (output of jobs it
 * left behind after this is lost), then the status line. */
static void background_exited(struct cmd *c, int status)
{
        char line[64];
        int n;

        pump(c);
        n = snprintf(line, sizeof(line), "%d %d %d\n", status, c->timed_out, c->truncated);
        if (c->status_fd >= 0 && n > 0)
                (void)!write(c->status_fd, line, (size_t)n);
}

/* Kill the background commands whose deadline passed; return the poll timeout until the
 * next one (-1: none). */
static int deadlines(void)
{
        uint64_t now = now_ms(), next = 0;

        for (size_t i = 0; i < CMDS_MAX; i++) {
                struct cmd *c = &cmds[i];
                if (c->pid == 0 || !c->deadline)
                        continue;
                if (now >= c->deadline) {
                        c->deadline = 0;
                        c->timed_out = true;
                        kill_cmd(c, SIGKILL);
                } else if (!next || c->deadline < next) {
                        next = c->deadline;
                }
        }
        if (!next)
                return -1;
        return next - now < 60000 ? (int)(next - now) + 1 : 60000; /* a far deadline: look again */
}

static void handle_conn(struct cmd *c, short revents)
{
        struct keeper_msg m;
        ssize_t n = 0;

        if (revents & POLLIN)
                n = recv(c->conn, &m, sizeof(m), MSG_DONTWAIT);
        if (n == (ssize_t)sizeof(m) && m.type == KEEPER_MSG_KILL) {
                kill_cmd(c, m.value > 0 && m.value < NSIG ? m.value : SIGKILL);
                return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* The client went away (or spoke nonsense): the command dies with it. */
        kill_cmd(c, SIGKILL);
        (void)close(c->conn);
        c->conn = -1;
}

static int setup_signals(void)
{
        struct sigaction ign = { .sa_handler = SIG_IGN };
        sigset_t mask;

        (void)sigaction(SIGPIPE, &ign, NULL);
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -1;
        return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void loop_once(int sfd)
{
        struct pollfd pfd[2 * CMDS_MAX + 2];
        struct cmd *map[2 * CMDS_MAX + 2];
        nfds_t n = 0;

        pfd[n++] = (struct pollfd){ .fd = KEEPER_LISTEN_FD, .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
        for (size_t i = 0; i < CMDS_MAX; i++) {
                if (cmds[i].pid != 0 && cmds[i].conn >= 0) {
                        map[n] = &cmds[i];
                        pfd[n++] = (struct pollfd){ .fd = cmds[i].conn, .events = POLLIN };
                }
                if (cmds[i].pid != 0 && cmds[i].pump_fd >= 0) {
                        map[n] = &cmds[i];
                        pfd[n++] = (struct pollfd){ .fd = cmds[i].pump_fd, .events = POLLIN };
                }
        }
        if (poll(pfd, n, deadlines()) < 0)
                return;
        for (nfds_t i = 2; i < n; i++) /* output first: a reaped command's pipe is drained */
                if (pfd[i].revents && map[i]->pump_fd == pfd[i].fd)
                        pump(map[i]);
        if (pfd[1].revents) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                        ;
                reap();
        }
        for (nfds_t i = 2; i < n; i++)
                if (pfd[i].revents && map[i]->conn == pfd[i].fd)
                        handle_conn(map[i], pfd[i].revents);
        if (pfd[0].revents & POLLIN)
                handle_accept(KEEPER_LISTEN_FD);
}

int main(void)
{
        int sfd = setup_signals();

        if (sfd < 0)
                return 1;
        /* Not dumpable: a command running as the keeper's own uid (rootless) cannot open
         * /proc/1/mem and take over the unfiltered keeper. */
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        for (size_t i = 0; i < CMDS_MAX; i++)
                cmds[i] = CMD_FREE;
        for (;;)
                loop_once(sfd);
}
