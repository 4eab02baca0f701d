/* SPDX-License-Identifier: Apache-2.0 */
/*
 * External resolver commands: argv run with posix_spawn (no shell) in its own process group,
 * the request JSON on stdin, the answer read from stdout under a byte cap, all within the
 * configured deadline and the caller's cancel token. On timeout or cancellation the whole
 * process group is killed and reaped before returning, so nothing outlives the call.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4box/cancel.h"
#include "b4box/config.h"

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "json/json.h"
#include "runtime-internal.h"

#define RESOLVER_ERR_MAX 4096
#define RESOLVER_LOG_MAX 900 /* of stderr in the log line (b4_log() lines are 1 KiB) */

struct child {
        pid_t pid;
        int in, out, errfd; /* our ends */
        struct strbuf out_buf, err_buf;
        const char *input;
        size_t in_len, in_off;
};

static char *const resolver_env[] = { (char *)"PATH=/usr/local/bin:/usr/bin:/bin",
                                      (char *)"LC_ALL=C", NULL };

static int spawn_child(const struct b4_resolver *res, const char *cwd, struct child *c)
{
        int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        int r;

        if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
                r = -errno;
                goto out_close;
        }
        (void)posix_spawn_file_actions_init(&fa);
        (void)posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
        (void)posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
        (void)posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
        if (cwd)
                (void)posix_spawn_file_actions_addchdir_np(&fa, cwd);
        (void)posix_spawnattr_init(&at);
        (void)posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
        (void)posix_spawnattr_setpgroup(&at, 0);
        r = -posix_spawn(&c->pid, res->argv[0], &fa, &at, res->argv, resolver_env);
        (void)posix_spawn_file_actions_destroy(&fa);
        (void)posix_spawnattr_destroy(&at);
        if (r < 0)
                goto out_close;
        c->in = pin[1], c->out = pout[0], c->errfd = perr[0];
        pin[1] = pout[0] = perr[0] = -1;
        (void)fcntl(c->in, F_SETFL, O_NONBLOCK);
out_close:
        for (int i = 0; i < 2; i++) {
                safe_close(pin[i]);
                safe_close(pout[i]);
                safe_close(perr[i]);
        }
        return r;
}

/* Move bytes one step; returns 1 while there is more to do, 0 at EOF on stdout, <0 error. */
static int pump(struct child *c, struct pollfd *p)
{
        char buf[65536];
        ssize_t n;

        if (c->in >= 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
                n = write(c->in, c->input + c->in_off, c->in_len - c->in_off);
                if (n > 0)
                        c->in_off += (size_t)n;
                if (n < 0 || c->in_off == c->in_len)
                        c->in = safe_close(c->in); /* EPIPE: the resolver did not read it all */
        }
        if (c->errfd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
                n = read(c->errfd, buf, sizeof(buf));
                if (n <= 0)
                        c->errfd = safe_close(c->errfd);
                else
                        (void)strbuf_add(&c->err_buf, buf, (size_t)n); /* overflow dropped */
        }
        if (c->out >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                n = read(c->out, buf, sizeof(buf));
                if (n < 0 && errno != EINTR && errno != EAGAIN)
                        return -errno;
                if (n == 0)
                        c->out = safe_close(c->out);
                else if (n > 0 && strbuf_add(&c->out_buf, buf, (size_t)n) < 0)
                        return -E2BIG;
        }
        return c->out >= 0 || c->errfd >= 0;
}

static int wait_io(struct child *c, struct b4_cancel *cancel, uint64_t deadline)
{
        for (;;) {
                struct pollfd p[4] = {
                        { .fd = c->in, .events = POLLOUT },
                        { .fd = c->out, .events = POLLIN },
                        { .fd = c->errfd, .events = POLLIN },
                        { .fd = cancel ? b4_cancel_fd(cancel) : -1, .events = POLLIN },
                };
                uint64_t now = now_msec();
                int r;

                if (now >= deadline)
                        return -ETIMEDOUT;
                if (b4_cancel_is_set(cancel))
                        return -ECANCELED;
                r = poll(p, 4, (int)(deadline - now > 1000 ? 1000 : deadline - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                r = pump(c, p);
                if (r <= 0)
                        return r;
        }
}

static int reap(pid_t pid, bool kill_it, int *ret_status)
{
        int status = 0;

        if (kill_it)
                (void)kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (kill_it)
                (void)kill(-pid, SIGKILL); /* anything it left behind in its group */
        *ret_status = status;
        return 0;
}

/* The resolver's stderr, for the server log only: control bytes become '.', one line. */
static void log_stderr(const struct b4_resolver *res,
                       const char *thread_id,
                       const struct child *c,
                       const char *what)
{
        char line[RESOLVER_LOG_MAX];
        size_t n = 0;

        for (size_t i = 0; c->err_buf.buf && i < c->err_buf.len && n < sizeof(line) - 1; i++)
                line[n++] = (unsigned char)c->err_buf.buf[i] < 0x20 ? '.' : c->err_buf.buf[i];
        while (n > 0 && (line[n - 1] == '.' || line[n - 1] == ' '))
                n--;
        line[n] = '\0';
        log_warning("resolver '%s' for thread %s %s%s%s", res->argv[0], thread_id, what,
                    n ? "; stderr: " : "", line);
}

/* Exit status RESOLVER_EXIT_REFUSE with {"refuse": "<reason>"} on stdout: the reason, alone. */
static int resolver_refusal(const struct child *c, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const struct jv *reason;

        if (!c->out_buf.buf || jv_parse(c->out_buf.buf, c->out_buf.len, &v, NULL) < 0)
                return 0;
        reason = jv_object_get(v, "refuse");
        if (!jv_is_object(v) || jv_object_size(v) != 1 || !jv_is_string(reason) ||
            jv_string_length(reason) == 0 || jv_string_length(reason) > RESOLVER_REFUSE_MAX ||
            memchr(jv_string(reason), '\0', jv_string_length(reason)))
                return 0;
        return b4_error_set_code(err, -EPERM, B4_CODE_THREAD_REFUSED, "%s", jv_string(reason));
}

/* A failure the client hears only generically about; the details go to the server log. */
static int resolver_failed(const struct b4_resolver *res,
                           const char *thread_id,
                           const struct child *c,
                           int status,
                           struct b4_error *err)
{
        char what[64];
        int r = 0;

        if (WIFEXITED(status) && WEXITSTATUS(status) == RESOLVER_EXIT_REFUSE)
                r = resolver_refusal(c, err);
        if (WIFSIGNALED(status))
                (void)snprintf(what, sizeof(what), "was killed by signal %d", WTERMSIG(status));
        else
                (void)snprintf(what, sizeof(what), "exited with status %d%s", WEXITSTATUS(status),
                               r < 0 ? " (a refusal)"
                               : WEXITSTATUS(status) == RESOLVER_EXIT_REFUSE
                                       ? " without a valid {\"refuse\": ...} answer"
                                       : "");
        log_stderr(res, thread_id, c, what);
        if (r < 0)
                return r;
        return b4_error_set(err, -EIO, "%s (details are in the server log)", what);
}

int resolver_run(const struct b4_resolver *res,
                 const char *thread_id,
                 const char *cwd,
                 const char *input,
                 struct b4_cancel *cancel,
                 char **ret_out,
                 size_t *ret_len,
                 struct b4_error *err)
{
        struct child c = { .in = -EBADF,
                           .out = -EBADF,
                           .errfd = -EBADF,
                           .input = input,
                           .in_len = strlen(input) };
        uint64_t deadline = now_msec() + res->timeout_ms;
        sigset_t pipe_set, old;
        int status = 0, r;

        strbuf_init(&c.out_buf, RESOLVER_MAX_OUTPUT);
        strbuf_init(&c.err_buf, RESOLVER_ERR_MAX);
        (void)sigemptyset(&pipe_set);
        (void)sigaddset(&pipe_set, SIGPIPE);
        (void)pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        r = spawn_child(res, cwd, &c);
        if (r < 0) {
                (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
                return b4_error_set(err, r, "cannot run '%s': %s", res->argv[0], strerror(-r));
        }
        r = wait_io(&c, cancel, deadline);
        (void)reap(c.pid, r != 0, &status);
        safe_close(c.in);
        safe_close(c.out);
        safe_close(c.errfd);
        (void)sigtimedwait(&pipe_set, NULL, &(struct timespec){ 0 });
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == -ETIMEDOUT)
                r = b4_error_set(err, r, "timed out after %llu ms",
                                 (unsigned long long)res->timeout_ms);
        else if (r == -ECANCELED)
                r = b4_error_set(err, r, "cancelled");
        else if (r == -E2BIG)
                r = b4_error_set(err, r, "printed more than %u bytes", RESOLVER_MAX_OUTPUT);
        else if (r < 0)
                r = b4_error_set(err, r, "i/o failed: %s", strerror(-r));
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                r = resolver_failed(res, thread_id, &c, status, err);
        if (r >= 0)
                r = strbuf_detach(&c.out_buf, ret_out, ret_len);
        strbuf_release(&c.out_buf);
        strbuf_release(&c.err_buf);
        return r;
}
