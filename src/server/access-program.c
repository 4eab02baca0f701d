/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy program (threadAccess.command, docs/configuration.md "The policy program"): one
 * long-running process that receives each request as one line of JSON on its stdin and
 * answers one line on its stdout, in order. Its stdin and stdout are one end of a unix
 * stream socketpair (so a write to a dead program is EPIPE, never SIGPIPE); its stderr is
 * the server's.
 *
 * One decision at a time (a mutex whose wait counts against the decision's deadline). A
 * program that does not answer in decisionTimeoutMs, answers anything but one well-formed
 * line with the request's id, or exits is killed and reaped; that decision is a denial, and
 * the next request starts a new program (at most one start per RESTART_GAP_MS, denials in
 * between).
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "server-internal.h"

#define ANSWER_MAX_BYTES   (32u * 1024u) /* one answer line, newline included */
#define STAMP_MAX_BYTES    (16u * 1024u) /* reference UPLOADER_STAMP_MAX_BYTES */
#define IDENTITY_MAX_BYTES 128u          /* as a principal's name */
#define MESSAGE_MAX_BYTES  1024u
#define RESTART_GAP_MS     200u

struct access_program {
        pthread_mutex_t lock;
        char **argv;         /* borrowed from the config */
        uint64_t timeout_ms; /* per decision */
        pid_t pid;           /* 0 = not running */
        int fd;              /* our end of the socketpair; -1 = not running */
        uint64_t next_id;
        uint64_t started_ms; /* monotonic, of the last start attempt */
        char buf[ANSWER_MAX_BYTES];
        size_t buf_len; /* bytes read past the last answer (a lying program) are dropped */
};

void access_decision_clear(struct access_decision *d)
{
        free(d->message);
        free(d->identity);
        free(d->stamp);
        *d = (struct access_decision){ 0 };
}

static void stop_locked(struct access_program *p, bool kill_it)
{
        if (p->fd >= 0)
                p->fd = safe_close(p->fd);
        if (p->pid > 0) {
                if (kill_it)
                        (void)kill(p->pid, SIGKILL);
                while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        p->pid = 0;
        p->buf_len = 0;
}

static int start_locked(struct access_program *p)
{
        posix_spawn_file_actions_t fa;
        int sv[2], r;

        p->started_ms = now_msec();
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        r = posix_spawn_file_actions_init(&fa);
        if (r == 0) {
                r = posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
                if (r == 0)
                        r = posix_spawn_file_actions_adddup2(&fa, sv[1], STDOUT_FILENO);
                if (r == 0)
                        r = posix_spawnp(&p->pid, p->argv[0], &fa, NULL, p->argv, environ);
                (void)posix_spawn_file_actions_destroy(&fa);
        }
        (void)close(sv[1]);
        if (r != 0) {
                (void)close(sv[0]);
                p->pid = 0;
                return -r;
        }
        p->fd = sv[0];
        char pid[16];

        (void)snprintf(pid, sizeof(pid), "%d", (int)p->pid);
        server_log("info", "policy program started", "pid", pid, "program", p->argv[0], NULL);
        return 0;
}

int access_program_new(char **argv, uint64_t timeout_ms, struct access_program **ret)
{
        struct access_program *p = b4_calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        (void)pthread_mutex_init(&p->lock, NULL);
        p->argv = argv;
        p->timeout_ms = timeout_ms;
        p->fd = -1;
        *ret = p;
        return 0;
}

struct access_program *access_program_free(struct access_program *p)
{
        if (!p)
                return NULL;
        (void)pthread_mutex_lock(&p->lock);
        if (p->fd >= 0) /* EOF on its stdin asks it to exit; a second later it is killed */
                (void)shutdown(p->fd, SHUT_WR);
        if (p->pid > 0 && p->fd >= 0) {
                struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
                uint64_t end = now_msec() + 1000;
                char sink[512];

                while (now_msec() < end && poll(&pfd, 1, (int)(end - now_msec())) > 0 &&
                       read(p->fd, sink, sizeof(sink)) > 0)
                        ;
        }
        stop_locked(p, true);
        (void)pthread_mutex_unlock(&p->lock);
        (void)pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

static int send_all(int fd, const char *s, size_t len, uint64_t deadline_ms)
{
        while (len > 0) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                uint64_t now = now_msec();
                ssize_t n;

                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)(deadline_ms - now)) <= 0)
                        continue;
                n = send(fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0)
                        return -errno;
                s += n;
                len -= (size_t)n;
        }
        return 0;
}

/* One line (without its newline, NUL-terminated in p->buf) within the deadline. */
static int read_line(struct access_program *p, uint64_t deadline_ms, size_t *ret_len)
{
        for (;;) {
                char *nl = memchr(p->buf, '\n', p->buf_len);
                struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
                uint64_t now = now_msec();
                ssize_t n;

                if (nl) {
                        *nl = '\0';
                        *ret_len = (size_t)(nl - p->buf);
                        return 0;
                }
                if (p->buf_len >= sizeof(p->buf) - 1)
                        return -EMSGSIZE;
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)(deadline_ms - now)) <= 0)
                        continue;
                n = recv(p->fd, p->buf + p->buf_len, sizeof(p->buf) - 1 - p->buf_len, MSG_DONTWAIT);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        return n == 0 ? -EPIPE : -errno;
                p->buf_len += (size_t)n;
        }
}

static int take_string(const struct jv *v, size_t max, char **ret)
{
        if (!v)
                return 0;
        if (!jv_is_string(v) || jv_string_length(v) == 0 || jv_string_length(v) > max ||
            strlen(jv_string(v)) != jv_string_length(v))
                return -EBADMSG;
        *ret = b4_strdup(jv_string(v));
        return *ret ? 0 : -ENOMEM;
}

/* The answer's members (docs/configuration.md); anything else makes it malformed. */
static int parse_answer(const char *line, size_t len, uint64_t id, struct access_decision *d)
{
        cleanup_(jv_unrefp) struct jv *a = NULL;
        const struct jv *x;
        int r;

        if (jv_parse(line, len, &a, NULL) < 0 || !jv_is_object(a))
                return -EBADMSG;
        x = jv_object_get(a, "id");
        if (!x || !jv_is_safe_integer(x) || (uint64_t)jv_integer(x) != id)
                return -EBADMSG;
        x = jv_object_get(a, "allow");
        if (!x || !jv_is_bool(x))
                return -EBADMSG;
        d->allow = jv_is_true(x);
        if ((x = jv_object_get(a, "status"))) {
                if (!jv_is_safe_integer(x) || jv_integer(x) < 400 || jv_integer(x) > 499)
                        return -EBADMSG;
                d->status = (unsigned)jv_integer(x);
        }
        if ((x = jv_object_get(a, "threads"))) {
                if (!jv_is_string(x) ||
                    (strcmp(jv_string(x), "all") != 0 && strcmp(jv_string(x), "own") != 0))
                        return -EBADMSG;
                d->threads_set = true;
                d->see_all = strcmp(jv_string(x), "all") == 0;
        }
        r = take_string(jv_object_get(a, "message"), MESSAGE_MAX_BYTES, &d->message);
        if (r >= 0)
                r = take_string(jv_object_get(a, "identity"), IDENTITY_MAX_BYTES, &d->identity);
        if (r < 0)
                return r;
        if ((x = jv_object_get(a, "stamp"))) {
                if (!jv_is_object(x) || jv_dump(x, 0, &d->stamp) < 0)
                        return -EBADMSG;
                if (strlen(d->stamp) > STAMP_MAX_BYTES)
                        return -EMSGSIZE;
        }
        return 0;
}

static int ask_locked(struct access_program *p,
                      struct jv *req,
                      uint64_t deadline_ms,
                      struct access_decision *d)
{
        cleanup_free char *text = NULL;
        uint64_t id = ++p->next_id;
        size_t len = 0;
        int r;

        if (p->pid == 0) {
                if (now_msec() - p->started_ms < RESTART_GAP_MS && p->started_ms)
                        return -EAGAIN;
                r = start_locked(p);
                if (r < 0)
                        return r;
        }
        r = jv_object_set_new(req, "id", jv_integer_new((int64_t)id));
        if (r >= 0)
                r = jv_dump(req, 0, &text);
        if (r < 0)
                return -ENOMEM;
        len = strlen(text);
        char *line = b4_realloc(text, len + 2);
        if (!line)
                return -ENOMEM;
        text = line;
        memcpy(text + len, "\n", 2);
        r = send_all(p->fd, text, len + 1, deadline_ms);
        if (r >= 0)
                r = read_line(p, deadline_ms, &len);
        if (r >= 0)
                r = parse_answer(p->buf, len, id, d);
        if (r >= 0 && p->buf_len > len + 1)
                r = -EBADMSG; /* more than one line for one request */
        p->buf_len = 0;
        return r;
}

int access_program_ask(struct access_program *p, struct jv *req, struct access_decision *d)
{
        uint64_t deadline_ms = now_msec() + p->timeout_ms;
        struct timespec ts;
        int r;

        *d = (struct access_decision){ 0 };
        (void)clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(p->timeout_ms / 1000);
        ts.tv_nsec += (long)(p->timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        r = pthread_mutex_timedlock(&p->lock, &ts);
        if (r != 0)
                return -r;
        r = ask_locked(p, req, deadline_ms, d);
        if (r < 0 && r != -ENOMEM && r != -EAGAIN) {
                char pid[16];

                (void)snprintf(pid, sizeof(pid), "%d", (int)p->pid);
                server_log("warning", "policy program failed; it is restarted", "pid", pid, "error",
                           strerror(-r), NULL);
                stop_locked(p, true);
        }
        (void)pthread_mutex_unlock(&p->lock);
        if (r < 0)
                access_decision_clear(d);
        return r;
}
