/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's commands. Each runs under a supervisor of its own: a forked child that is a
 * child subreaper (PR_SET_CHILD_SUBREAPER), so every process the command leaves behind,
 * even one that called setsid() to leave its process group, is re-parented to it. The
 * command itself is a new session (its own process group). On timeout or cancel the agent
 * SIGKILLs the command's group and tells the supervisor to kill everything re-parented to
 * it until it has no child left; after a normal exit the supervisor simply exits (a
 * background job lives on, as on native and under `docker exec`).
 *
 * Output is capped here, per stream: the first cap - cap/2 bytes go out live as DATA, the
 * last cap/2 are kept in a ring and sent at the exit (AGENT_F_TAIL), and EXIT counts what
 * was dropped between them, so the host rebuilds exactly what core's capture would keep
 * without the stream carrying more than the cap. The timeout is the agent's: exit 124 and
 * AGENT_EXIT_TIMED_OUT (the host's core words the timeout line; nothing here does).
 *
 * Between fork() and execve() only async-signal-safe calls are made: the agent has threads.
 * Nothing here waits for a supervisor: agent-main.c's reaper reaps every child (the agent
 * may be PID 1 of its container and inherit every orphan).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "base/alloc.h"
#include "base/macro.h"

#define CG_PATH_MAX 4096 /* a command's cgroup dir, --cgroup included */

static const char *cgroup_root; /* --cgroup, or NULL */

void agent_exec_init(const char *cgroup_dir)
{
        cgroup_root = cgroup_dir;
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- one stream's cap ---- */

struct stream {
        int fd;
        uint16_t flag; /* AGENT_F_STDOUT / AGENT_F_STDERR */
        uint64_t head_cap, sent;
        char *ring;
        size_t ring_cap, ring_len, ring_pos;
        uint64_t dropped;
};

static int stream_init(struct stream *s, int fd, uint16_t flag, uint64_t cap)
{
        *s = (struct stream){
                .fd = fd, .flag = flag, .head_cap = cap - cap / 2, .ring_cap = (size_t)(cap / 2)
        };
        s->ring = b4_malloc(s->ring_cap + 1);
        return s->ring ? 0 : -ENOMEM;
}

static void stream_add(struct stream *s, uint32_t id, const char *p, size_t n)
{
        size_t k = s->head_cap - s->sent < n ? (size_t)(s->head_cap - s->sent) : n;

        if (k > 0 && agent_send(id, AGENT_DATA, s->flag, p, k) >= 0)
                s->sent += k;
        p += k;
        n -= k;
        for (; n > 0 && s->ring_cap > 0; p++, n--) {
                if (s->ring_len == s->ring_cap)
                        s->dropped++;
                else
                        s->ring_len++;
                s->ring[s->ring_pos] = *p;
                s->ring_pos = (s->ring_pos + 1) % s->ring_cap;
        }
        s->dropped += n;
}

/* The ring, oldest first, as TAIL frames. */
static void stream_flush(struct stream *s, uint32_t id)
{
        size_t start = s->ring_len == s->ring_cap ? s->ring_pos : 0;
        char *lin = b4_malloc(s->ring_len + 1);

        if (!lin)
                return;
        for (size_t i = 0; i < s->ring_len; i++)
                lin[i] = s->ring[(start + i) % s->ring_cap];
        for (size_t off = 0; off < s->ring_len; off += AGENT_DATA_CHUNK) {
                size_t n =
                        s->ring_len - off < AGENT_DATA_CHUNK ? s->ring_len - off : AGENT_DATA_CHUNK;
                (void)agent_send(id, AGENT_DATA, s->flag | AGENT_F_TAIL, lin + off, n);
        }
        free(lin);
}

/* Read what is there (non-blocking fd); close at EOF. */
static void stream_pump(struct stream *s, uint32_t id)
{
        char buf[65536];

        while (s->fd >= 0) {
                ssize_t n = read(s->fd, buf, sizeof(buf));
                if (n > 0) {
                        stream_add(s, id, buf, (size_t)n);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 || errno != EAGAIN)
                        s->fd = safe_close(s->fd);
                return;
        }
}

/* ---- the command's environment ---- */

static bool same_name(const char *a, const char *b)
{
        size_t n = strcspn(a, "=");

        return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* envp: the agent's environment (unless clear_env) with the request's entries over it. */
static char **build_env(const struct agent_req *q)
{
        size_t n_base = 0, n_req = 0, n = 0;
        char **base = (q->execflags & AGENT_EXEC_CLEAR_ENV) ? NULL : environ;
        char **v;

        while (base && base[n_base])
                n_base++;
        while (q->env[n_req])
                n_req++;
        v = b4_calloc(n_base + n_req + 1, sizeof(char *));
        if (!v)
                return NULL;
        for (size_t i = 0; i < n_base; i++) {
                bool over = false;
                for (size_t j = 0; j < n_req && !over; j++)
                        over = same_name(q->env[j], base[i]);
                if (!over)
                        v[n++] = base[i];
        }
        for (size_t j = 0; j < n_req; j++)
                v[n++] = q->env[j];
        return v; /* borrows the strings */
}

/* ---- the supervisor (async-signal-safe code only) ---- */

/* The parent pid in /proc/<pid>/stat, or -1: "pid (comm) S ppid ...", comm may hold ')'. */
static pid_t ppid_of(const char *pid)
{
        char path[64], buf[512];
        size_t n = 0;
        int fd;
        ssize_t k;

        for (const char *p = "/proc/"; *p; p++)
                path[n++] = *p;
        for (const char *p = pid; *p && n < 40; p++)
                path[n++] = *p;
        for (const char *p = "/stat"; *p; p++)
                path[n++] = *p;
        path[n] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        k = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (k <= 0)
                return -1;
        buf[k] = '\0';
        char *e = strrchr(buf, ')');
        if (!e || e[1] != ' ' || !e[2] || e[3] != ' ')
                return -1;
        pid_t v = 0;
        for (const char *p = e + 4; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (*p - '0');
        return v;
}

/* SIGKILL every process whose parent is the supervisor. Return: how many were found. */
static int kill_children(pid_t self)
{
        char buf[4096];
        int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), found = 0;
        long n;

        if (fd < 0)
                return 0;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
                for (long off = 0; off < n;) {
                        struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
                        off += d->d_reclen;
                        if (d->d_name[0] < '0' || d->d_name[0] > '9')
                                continue;
                        if (ppid_of(d->d_name) != self)
                                continue;
                        pid_t pid = 0;
                        for (const char *p = d->d_name; *p; p++)
                                pid = pid * 10 + (*p - '0');
                        (void)kill(pid, SIGKILL);
                        found++;
                }
        }
        close(fd);
        return found;
}

/* Kill the whole tree: the command's group, then everything re-parented to us, until we
 * have no child left (bounded: a tree under a pids limit cannot outrun it for long). */
static void kill_tree(pid_t cmd)
{
        pid_t self = getpid();
        struct timespec ts = { .tv_nsec = 2000000 };

        for (int round = 0; round < 5000; round++) {
                (void)kill(-cmd, SIGKILL);
                (void)kill_children(self);
                for (;;) {
                        pid_t w = waitpid(-1, NULL, WNOHANG);
                        if (w < 0 && errno == ECHILD)
                                return;
                        if (w <= 0)
                                break;
                }
                nanosleep(&ts, NULL);
        }
}

struct spawn {
        char **argv, **envp;
        const char *cwd;
        bool shell;
        uint32_t max_procs;
        int out_w, err_w, null_r; /* the command's 1, 2 and 0 */
        int status_w;             /* supervisor -> agent: pid, then wait status */
        int ctl_r;                /* agent -> supervisor: 'K' kill the tree, EOF leave */
        int fail_w;               /* command -> agent: errno when it could not start */
        int cg_procs;             /* cgroup.procs of the command's cgroup, or -1 */
};

static void write_int(int fd, int v)
{
        (void)write(fd, &v, sizeof(v));
}

/* The supervisor's last word: the command's wait status and what the command and the
 * processes it left to us (reaped so far) used. */
struct end_report {
        int status;
        uint64_t cpu_us, max_rss;
};

static void write_end(int fd, int status)
{
        struct end_report e = { .status = status };
        struct rusage ru;

        if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
                e.cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
                e.max_rss = (uint64_t)ru.ru_maxrss * 1024u; /* KiB on Linux */
        }
        (void)write(fd, &e, sizeof(e)); /* one pipe write <= PIPE_BUF: whole or nothing */
}

static _Noreturn void run_command(const struct spawn *s)
{
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigset_t none;

        (void)setsid();
        sigaction(SIGPIPE, &dfl, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (s->cg_procs >= 0)
                (void)write(s->cg_procs, "0", 1);
        if (s->max_procs) {
                struct rlimit rl = { .rlim_cur = s->max_procs, .rlim_max = s->max_procs };
                if (setrlimit(RLIMIT_NPROC, &rl) < 0)
                        goto fail;
        }
        /* the command's stdin, stdout and stderr */
        if (dup2(s->null_r, 0) < 0) /* checksrc: allow */
                goto fail;
        if (dup2(s->out_w, 1) < 0) /* checksrc: allow */
                goto fail;
        if (dup2(s->err_w, 2) < 0) /* checksrc: allow */
                goto fail;
        umask(022);
        if (chdir(s->cwd) < 0 && (!s->shell || chdir("/") < 0))
                goto fail; /* a shell reports a missing cwd itself: "cd '<cwd>' && ..." */
        execvpe(s->argv[0], s->argv, s->envp);
fail:
        write_int(s->fail_w, errno);
        _exit(127);
}

/* Close every fd from 3 up but @keep (the agent's other requests' pipes must not live on in
 * this process: a command's stdout would never see its end). */
static void close_others(const int *keep, size_t n)
{
        unsigned lo = 3;

        for (;;) {
                unsigned next = ~0u;
                for (size_t i = 0; i < n; i++)
                        if (keep[i] >= (int)lo && (unsigned)keep[i] < next)
                                next = (unsigned)keep[i];
                if (next > lo && syscall(SYS_close_range, lo, next - 1, 0) < 0)
                        for (unsigned fd = lo; fd < next && fd < 65536; fd++)
                                (void)close((int)fd);
                if (next == ~0u)
                        return;
                lo = next + 1;
        }
}

static _Noreturn void supervise(const struct spawn *s)
{
        const int keep[] = { s->out_w, s->err_w,  s->null_r,  s->status_w,
                             s->ctl_r, s->fail_w, s->cg_procs };
        pid_t cmd;
        int st = 0;
        char c = 0;

        close_others(keep, ELEMENTSOF(keep));
        (void)dup2(s->null_r, 0); /* checksrc: allow (not the agent's stream) */
        (void)dup2(s->null_r, 1); /* checksrc: allow */
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        cmd = fork();
        if (cmd < 0) {
                write_int(s->fail_w, errno);
                _exit(127);
        }
        if (cmd == 0)
                run_command(s);
        close(s->fail_w);
        close(s->out_w);
        close(s->err_w);
        write_int(s->status_w, cmd);
        for (;;) {
                pid_t w = waitpid(-1, &st, 0);
                if (w == cmd)
                        break;
                if (w < 0 && errno != EINTR)
                        _exit(1);
        }
        write_end(s->status_w, st);
        while (read(s->ctl_r, &c, 1) < 0 && errno == EINTR)
                ;
        if (c == 'K')
                kill_tree(cmd);
        _exit(0);
}

/* ---- the agent's side ---- */

struct run {
        const struct agent_req *q;
        struct stream out, err;
        int status_r, ctl_w, fail_r, cancel_fd;
        pid_t sup, cmd;
        int status;
        uint64_t cpu_us, max_rss;
        bool exited, timed_out, cancelled, killed;
        uint64_t start, deadline, kill_until;
};

static void ask_kill(struct run *u)
{
        if (u->killed)
                return;
        u->killed = true;
        if (u->cmd > 0)
                (void)kill(-u->cmd, SIGKILL);
        (void)write(u->ctl_w, "K", 1);
        u->kill_until = now_ms() + AGENT_KILL_GRACE_MS;
}

static int poll_timeout(const struct run *u)
{
        uint64_t now = now_ms(), until = u->killed ? u->kill_until : u->deadline;

        if (!until)
                return -1;
        return until > now ? (int)(until - now > 60000 ? 60000 : until - now) : 0;
}

static void on_status(struct run *u)
{
        struct end_report e;
        ssize_t n = read(u->status_r, &e, sizeof(e));

        if (n == (ssize_t)sizeof(e)) {
                u->status = e.status;
                u->cpu_us = e.cpu_us;
                u->max_rss = e.max_rss;
                u->exited = true;
        } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                u->status = 255 << 8; /* the supervisor died: report a failure */
                u->exited = true;
        }
}

static void step(struct run *u)
{
        struct pollfd p[4] = {
                { .fd = u->out.fd, .events = POLLIN },
                { .fd = u->err.fd, .events = POLLIN },
                { .fd = u->status_r, .events = POLLIN },
                { .fd = u->cancel_fd, .events = POLLIN },
        };
        int n = poll(p, 4, poll_timeout(u));

        if (n < 0)
                return;
        if (p[0].revents)
                stream_pump(&u->out, u->q->id);
        if (p[1].revents)
                stream_pump(&u->err, u->q->id);
        if (p[2].revents)
                on_status(u);
        if (p[3].revents && !u->cancelled) {
                u->cancelled = true;
                ask_kill(u);
        }
        if (u->deadline && !u->timed_out && !u->exited && now_ms() >= u->deadline) {
                u->timed_out = true;
                ask_kill(u);
        }
}

static void send_exit(struct run *u)
{
        unsigned char p[48];
        uint32_t code, flags = 0;

        if (WIFEXITED(u->status)) {
                code = (uint32_t)WEXITSTATUS(u->status);
        } else if (WIFSIGNALED(u->status)) {
                code = 128u + (uint32_t)WTERMSIG(u->status);
                flags |= AGENT_EXIT_SIGNALED;
        } else {
                code = 255;
        }
        if (u->cancelled)
                flags |= AGENT_EXIT_CANCELLED;
        else if (u->timed_out) {
                flags = AGENT_EXIT_TIMED_OUT;
                code = 124;
        }
        agent_put_u32(p, code);
        agent_put_u32(p + 4, flags);
        agent_put_u64(p + 8, u->out.dropped);
        agent_put_u64(p + 16, u->err.dropped);
        agent_put_u64(p + 24, now_ms() - u->start);
        agent_put_u64(p + 32, u->cpu_us);
        agent_put_u64(p + 40, u->max_rss);
        (void)agent_send(u->q->id, AGENT_EXIT, 0, p, sizeof(p));
}

/* Read the supervisor's first word (the command's pid) and the start failure, if any.
 * Return: 0, or -errno when the command could not start. */
static int await_start(struct run *u)
{
        int v = 0;
        ssize_t n;

        do
                n = read(u->fail_r, &v, sizeof(v));
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof(v))
                return -(v > 0 ? v : EIO);
        do
                n = read(u->status_r, &v, sizeof(v));
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(v))
                return -EIO;
        u->cmd = v;
        return 0;
}

/* The command's own cgroup (v2) under --cgroup, with pids.max; NULL dir = none. */
static int open_cgroup(const struct agent_req *q, char *dir, size_t len)
{
        char path[CG_PATH_MAX + 32];
        int fd, n;

        if (!cgroup_root)
                return -1;
        n = snprintf(dir, len, "%s/b4-agent-%u-%u", cgroup_root, (unsigned)getpid(),
                     (unsigned)q->id);
        if (n < 0 || (size_t)n >= len || mkdir(dir, 0755) < 0)
                return -1;
        if (q->max_procs) {
                (void)snprintf(path, sizeof(path), "%s/pids.max", dir);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)dprintf(fd, "%u", (unsigned)q->max_procs);
                        close(fd);
                }
        }
        (void)snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        return open(path, O_WRONLY | O_CLOEXEC);
}

static void close_cgroup(const char *dir, bool kill_all)
{
        char path[CG_PATH_MAX + 32];
        int fd;

        if (!dir[0])
                return;
        if (kill_all) {
                (void)snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)write(fd, "1", 1);
                        close(fd);
                }
        }
        for (int i = 0; i < 100 && rmdir(dir) < 0 && errno == EBUSY; i++) {
                struct timespec ts = { .tv_nsec = 10000000 };
                nanosleep(&ts, NULL);
        }
}

/* The shell form, as native runs it (src/lib/native/exec.c): cd '<cwd>' && <command>. */
static char *shell_script(const char *cwd, const char *command)
{
        struct strbuf sb;
        char *ret = NULL;
        size_t len;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_adds(&sb, "cd ");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, cwd);
        if (r >= 0)
                r = strbuf_adds(&sb, " && ");
        if (r >= 0)
                r = strbuf_adds(&sb, command);
        if (r >= 0)
                r = strbuf_detach(&sb, &ret, &len);
        strbuf_release(&sb);
        return ret;
}

static const char *start_error(int r)
{
        return r == -ENOENT ? "the program or the working directory does not exist"
                            : "the command could not be started";
}

/* Pipes, the cgroup and the supervisor. The agent's ends go to @u (also on failure, for
 * the caller to close). Return: 0 or -errno. */
static int start_supervisor(struct spawn *s, struct run *u, char *cgdir, size_t cglen)
{
        int out[2] = { -1, -1 }, err[2] = { -1, -1 }, st[2] = { -1, -1 }, ctl[2] = { -1, -1 },
            fail[2] = { -1, -1 };
        int r = 0;

        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
            pipe2(ctl, O_CLOEXEC) < 0 || pipe2(fail, O_CLOEXEC) < 0)
                r = -errno;
        if (r >= 0 && (s->null_r = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
                r = -errno;
        if (r >= 0) {
                s->cg_procs = open_cgroup(u->q, cgdir, cglen);
                if (s->cg_procs < 0)
                        cgdir[0] = '\0';
                s->out_w = out[1];
                s->err_w = err[1];
                s->status_w = st[1];
                s->ctl_r = ctl[0];
                s->fail_w = fail[1];
                u->sup = fork();
                if (u->sup < 0)
                        r = -errno;
                else if (u->sup == 0)
                        supervise(s);
        }
        safe_close(out[1]);
        safe_close(err[1]);
        safe_close(st[1]);
        safe_close(ctl[0]);
        safe_close(fail[1]);
        s->cg_procs = safe_close(s->cg_procs);
        s->null_r = safe_close(s->null_r);
        u->out.fd = out[0];
        u->err.fd = err[0];
        u->status_r = st[0];
        u->ctl_w = ctl[1];
        u->fail_r = fail[0];
        return r;
}

/* After a kill, the supervisor closes its end of the status pipe once the whole tree is
 * gone (it exits): the EXIT then means nothing of the command is left. Bounded by the grace. */
static void await_tree_dead(struct run *u)
{
        char buf[64];

        while (now_ms() < u->kill_until) {
                struct pollfd p = { .fd = u->status_r, .events = POLLIN };
                uint64_t left = u->kill_until - now_ms();
                if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
                        return;
                ssize_t n = read(u->status_r, buf, sizeof(buf));
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                        return;
        }
}

/* From STARTED to EXIT: stream the output, enforce the deadline, obey a cancel. */
static void run_to_end(struct run *u)
{
        unsigned char p[4];
        uint32_t id = u->q->id;

        agent_put_u32(p, (uint32_t)u->cmd);
        (void)agent_send(id, AGENT_STARTED, 0, p, sizeof(p));
        (void)fcntl(u->out.fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(u->err.fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(u->status_r, F_SETFL, O_NONBLOCK);
        u->deadline = u->q->timeout_ms ? u->start + u->q->timeout_ms : 0;
        while (!u->exited && !(u->killed && now_ms() >= u->kill_until))
                step(u);
        stream_pump(&u->out, id);
        stream_pump(&u->err, id);
        if (!u->killed)
                (void)write(u->ctl_w, "L", 1); /* leave what runs in the background */
        stream_flush(&u->out, id);
        stream_flush(&u->err, id);
        if (!u->exited)
                u->status = SIGKILL; /* did not die within the grace: as killed */
        if (u->killed)
                await_tree_dead(u);
        send_exit(u);
}

static void run_release(struct run *u)
{
        u->ctl_w = safe_close(u->ctl_w); /* the supervisor's cue to exit, if not given */
        safe_close(u->out.fd);
        safe_close(u->err.fd);
        safe_close(u->status_r);
        safe_close(u->fail_r);
        free(u->out.ring);
        free(u->err.ring);
}

void agent_exec_serve(const struct agent_req *q, int cancel_fd)
{
        bool shell = q->execflags & AGENT_EXEC_SHELL;
        cleanup_free char *script = NULL;
        char *sh_argv[] = { (char *)"/bin/sh", (char *)"-c", NULL, NULL };
        struct spawn s = { .argv = shell ? sh_argv : q->argv,
                           .cwd = q->cwd,
                           .shell = shell,
                           .max_procs = q->max_procs,
                           .cg_procs = -1,
                           .null_r = -1 };
        struct run u = { .q = q,
                         .cancel_fd = cancel_fd,
                         .out.fd = -1,
                         .err.fd = -1,
                         .status_r = -1,
                         .ctl_w = -1,
                         .fail_r = -1,
                         .start = now_ms() };
        char cgdir[CG_PATH_MAX] = "";
        int r = 0;

        s.envp = build_env(q);
        if (shell)
                sh_argv[2] = script = shell_script(q->cwd, q->argv[0]);
        if (!s.envp || (shell && !script) ||
            stream_init(&u.out, -1, AGENT_F_STDOUT, q->output_cap) < 0 ||
            stream_init(&u.err, -1, AGENT_F_STDERR, q->output_cap) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = start_supervisor(&s, &u, cgdir, sizeof(cgdir));
        if (r >= 0)
                r = await_start(&u);
        if (r < 0)
                (void)agent_send_error(q->id, r, start_error(r));
        else
                run_to_end(&u);
        run_release(&u);
        close_cgroup(cgdir, u.killed);
        free(s.envp);
}
