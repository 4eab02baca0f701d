/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper client: one command per connection (keeper-proto.h). The supervisor loop polls
 * stdout, stderr, the keeper connection and the cancel token with the command's deadline; it
 * never blocks on a pipe. On timeout or cancel it asks the keeper to SIGKILL the command's
 * session and everything in the command's own cgroup, and waits for the exit report. Each stream is
 * captured up to its cap, keeping the head and the tail around a "[... N bytes truncated ...]"
 * marker. Once the command's main process has exited, what is already in the pipes is drained and
 * the call returns: a background job that keeps the pipes open does not hold it up.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "core/capture.h"
#include "keeper-proto.h"
#include "native.h"

#define KILL_GRACE_MS 10000

/* ---- request ---- */

static int build_body(const struct exec_spec *s,
                      struct strbuf *sb,
                      const char *trailer,
                      uint32_t *ret_n_env)
{
        uint32_t n_env = 0;
        int r;

        r = strbuf_add(sb, s->bpf, s->bpf_len);
        if (r >= 0)
                r = strbuf_add(sb, s->cwd, strlen(s->cwd) + 1);
        if (r >= 0)
                r = strbuf_add(sb, "/bin/sh\0-c\0cd ", 14);
        if (r >= 0)
                r = strbuf_add_shell_quoted(sb, s->cwd);
        if (r >= 0)
                r = strbuf_adds(sb, " && ");
        if (r >= 0)
                r = strbuf_add(sb, s->command, strlen(s->command) + 1);
        for (char **e = s->env; r >= 0 && e && *e; e++, n_env++)
                r = strbuf_add(sb, *e, strlen(*e) + 1);
        if (r >= 0 && trailer)
                r = strbuf_add(sb, trailer, strlen(trailer) + 1);
        *ret_n_env = n_env;
        return r;
}

/* write_all() for a socket, without SIGPIPE when the keeper has gone away. */
static int send_all(int sock, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t n = send(sock, p, len, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int keeper_send(int sock,
                const struct exec_spec *s,
                const int *fds,
                size_t nfd,
                uint32_t version,
                const char *trailer)
{
        struct strbuf body;
        struct keeper_req_hdr h = { .magic = KEEPER_MAGIC,
                                    .version = version,
                                    .flags = s->flags,
                                    .uid = s->uid,
                                    .gid = s->gid,
                                    .n_argv = 3,
                                    .bpf_len = (uint32_t)(s->bpf_len / 8) };
        char cbuf[CMSG_SPACE(4 * sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        int r;

        if (nfd > 4)
                return -EINVAL;
        strbuf_init(&body, KEEPER_REQ_MAX);
        r = build_body(s, &body, trailer, &h.n_env);
        if (r < 0) {
                strbuf_release(&body);
                return r == -E2BIG ? -E2BIG : r;
        }
        h.data_len = (uint32_t)body.len;
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
        mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(h))
                r = -EIO;
        if (r >= 0)
                r = send_all(sock, body.buf, body.len);
        strbuf_release(&body);
        return r;
}

/* ---- supervision ---- */

struct run {
        const struct exec_spec *spec;
        int sock, out_r, err_r, cancel_fd;
        struct capture out, errc;
        uint64_t deadline;   /* ms, 0 = none */
        uint64_t kill_until; /* ms, set once we asked for a kill */
        bool exited, timed_out, cancelled, keeper_gone;
        int status;
        int failed; /* positive errno from FAILED */
};

/* Read what @fd has into @c, handing each chunk to the caller's on_output first. */
static void pump(const struct run *u, int *fd, struct capture *c, enum b4_exec_stream stream)
{
        char buf[65536];

        while (*fd >= 0) {
                ssize_t n = read(*fd, buf, sizeof(buf));
                if (n > 0) {
                        if (u->spec->on_output)
                                u->spec->on_output(u->spec->output_userdata, stream, buf,
                                                   (size_t)n);
                        capture_add(c, buf, (size_t)n);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 || errno != EAGAIN)
                        *fd = safe_close(*fd);
                return;
        }
}

static void ask_kill(struct run *u)
{
        struct keeper_msg m = { .type = KEEPER_MSG_KILL, .value = SIGKILL };

        if (u->kill_until)
                return;
        (void)send(u->sock, &m, sizeof(m), MSG_NOSIGNAL);
        u->kill_until = now_msec() + KILL_GRACE_MS;
}

static void on_keeper(struct run *u)
{
        struct keeper_msg m;
        ssize_t n = recv(u->sock, &m, sizeof(m), MSG_WAITALL);

        if (n != (ssize_t)sizeof(m)) {
                u->keeper_gone = true;
                return;
        }
        if (m.type == KEEPER_MSG_EXITED) {
                u->exited = true;
                u->status = m.value;
        } else if (m.type == KEEPER_MSG_FAILED) {
                u->failed = m.value > 0 ? m.value : EIO;
        }
}

static int poll_timeout(const struct run *u)
{
        uint64_t now = now_msec(), until = u->kill_until ? u->kill_until : u->deadline;

        if (!until)
                return -1;
        return until > now ? (int)(until - now > 60000 ? 60000 : until - now) : 0;
}

static void step(struct run *u)
{
        struct pollfd p[4] = {
                { .fd = u->out_r, .events = POLLIN },
                { .fd = u->err_r, .events = POLLIN },
                { .fd = u->sock, .events = POLLIN },
                { .fd = u->cancel_fd, .events = POLLIN },
        };
        int n = poll(p, 4, poll_timeout(u));

        if (n < 0)
                return;
        if (p[0].revents)
                pump(u, &u->out_r, &u->out, B4_EXEC_STDOUT);
        if (p[1].revents)
                pump(u, &u->err_r, &u->errc, B4_EXEC_STDERR);
        if (p[2].revents)
                on_keeper(u);
        if (p[3].revents && !u->cancelled) {
                u->cancelled = true;
                ask_kill(u);
        }
        if (u->deadline && !u->timed_out && now_msec() >= u->deadline) {
                u->timed_out = true;
                ask_kill(u);
        }
}

static int run_loop(struct run *u, struct b4_error *err)
{
        while (!u->exited && !u->failed && !u->keeper_gone) {
                if (u->kill_until && now_msec() >= u->kill_until)
                        return b4_error_set(err, -EIO, "the command did not die after SIGKILL");
                step(u);
        }
        if (u->failed)
                return b4_error_set(err, -u->failed, "the keeper could not start the command: %s",
                                    strerror(u->failed));
        if (u->keeper_gone)
                return b4_error_set(err, -EIO, "the sandbox keeper went away during the command");
        pump(u, &u->out_r, &u->out, B4_EXEC_STDOUT);
        pump(u, &u->err_r, &u->errc, B4_EXEC_STDERR);
        return 0;
}

static int finish(struct run *u, const struct exec_spec *s, struct b4_exec_result *ret)
{
        int r;

        r = capture_finish(&u->out, &ret->out, &ret->out_len, &ret->truncated);
        if (r >= 0)
                r = capture_finish(&u->errc, &ret->errout, &ret->errout_len, &ret->truncated);
        if (r < 0)
                return r;
        if (WIFEXITED(u->status))
                ret->exit_code = WEXITSTATUS(u->status);
        else if (WIFSIGNALED(u->status))
                ret->exit_code = 128 + WTERMSIG(u->status);
        else
                ret->exit_code = 255;
        ret->cancelled = u->cancelled;
        if (u->timed_out && !u->cancelled) {
                ret->timed_out = true;
                ret->exit_code = 124;
                ret->timeout_ms = s->timeout_ms; /* core adds the timeout line */
        }
        return 0;
}

static void run_release(struct run *u)
{
        safe_close(u->sock);
        safe_close(u->out_r);
        safe_close(u->err_r);
        capture_release(&u->out);
        capture_release(&u->errc);
}

static int open_pipes(struct run *u, int *out_w, int *err_w)
{
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        u->out_r = p[0];
        *out_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        u->err_r = p[0];
        *err_w = p[1];
        if (fcntl(u->out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(u->err_r, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int exec_run(int sock, const struct exec_spec *s, struct b4_exec_result *ret, struct b4_error *err)
{
        struct run u = { .spec = s, .sock = sock, .out_r = -EBADF, .err_r = -EBADF };
        cleanup_close int out_w = -EBADF, err_w = -EBADF;
        uint64_t start = now_msec();
        struct b4_exec_result res = { 0 };
        int r;

        u.cancel_fd = s->cancel ? b4_cancel_fd(s->cancel) : -EBADF;
        u.deadline = s->timeout_ms ? start + s->timeout_ms : 0;
        r = capture_init(&u.out, s->output_cap);
        if (r >= 0)
                r = capture_init(&u.errc, s->output_cap);
        if (r >= 0)
                r = open_pipes(&u, &out_w, &err_w);
        if (r < 0) {
                run_release(&u);
                return b4_error_set(err, r, "cannot prepare the command");
        }
        int fds[3] = { out_w, err_w, s->cg_fd };
        r = keeper_send(sock, s, fds, s->cg_fd >= 0 ? 3 : 2, 1, NULL); /* version 1 is enough */
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);
        if (r < 0) {
                run_release(&u);
                return b4_error_set(err, r == -E2BIG ? r : -EIO,
                                    r == -E2BIG ? "the command and its environment are too large"
                                                : "cannot send the command to the sandbox keeper");
        }
        r = run_loop(&u, err);
        if (r >= 0)
                r = finish(&u, s, &res);
        run_release(&u);
        if (r < 0) {
                b4_exec_result_clear(&res);
                return r;
        }
        res.duration_ms = now_msec() - start;
        *ret = res;
        return 0;
}
