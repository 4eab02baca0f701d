/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-agent: serves docs/agent-protocol.md over its stdin (requests) and stdout (replies)
 * inside a Docker or Kubernetes sandbox. One reader (this file's main loop) decodes frames
 * and hands each request to a thread of its own, so replies leave in any order; every frame
 * goes out whole under one writer lock. At most AGENT_INFLIGHT_MAX requests run at once
 * (more are refused -EBUSY). A framing error is fatal (FATAL, then exit): there is no way
 * to find the next frame. End of stdin means the host has gone: every running command's
 * tree is killed and the agent exits.
 *
 *   b4box-agent [--root DIR] [--read-only] [--cgroup DIR]
 *     --root DIR     resolve file operations in DIR instead of / (tests, a mounted volume)
 *     --read-only    refuse every write request (-EROFS): a reader's agent
 *     --cgroup DIR   a cgroup v2 directory the agent may create one child per command in
 *                    (pids.max for max_procs, cgroup.kill for the whole tree)
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"

#define AGENT_VERSION_TEXT "b4box-agent 1"
#define THREAD_STACK       (512u * 1024)

/* ---- the writer ---- */

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = 1;

int agent_send(uint32_t id, uint16_t type, uint16_t flags, const void *payload, size_t len)
{
        unsigned char hdr[AGENT_HDR_LEN];
        struct agent_hdr h = { .len = (uint32_t)len, .id = id, .type = type, .flags = flags };
        int r;

        if (len > AGENT_FRAME_MAX)
                return -E2BIG;
        agent_hdr_encode(hdr, &h);
        pthread_mutex_lock(&write_lock);
        r = write_all(out_fd, hdr, sizeof(hdr));
        if (r >= 0 && len)
                r = write_all(out_fd, payload, len);
        pthread_mutex_unlock(&write_lock);
        return r;
}

int agent_put_u32s(struct strbuf *sb, uint32_t v)
{
        unsigned char b[4];

        agent_put_u32(b, v);
        return strbuf_add(sb, b, sizeof(b));
}

int agent_put_u64s(struct strbuf *sb, uint64_t v)
{
        unsigned char b[8];

        agent_put_u64(b, v);
        return strbuf_add(sb, b, sizeof(b));
}

int agent_put_strs(struct strbuf *sb, const char *s, size_t len)
{
        int r = agent_put_u32s(sb, (uint32_t)len);

        return r < 0 ? r : strbuf_add(sb, s, len);
}

int agent_put_stat(struct strbuf *sb, const struct b4_stat *st)
{
        const char *t = st->target ? st->target : "";
        int r = agent_put_u32s(sb, (uint32_t)st->kind);

        if (r >= 0)
                r = agent_put_u32s(sb, st->executable ? 1 : 0);
        if (r >= 0)
                r = agent_put_u64s(sb, st->size);
        if (r >= 0)
                r = agent_put_u64s(sb, (uint64_t)st->mtime_ms);
        if (r >= 0)
                r = agent_put_strs(sb, t, strnlen(t, AGENT_PATH_MAX));
        return r;
}

int agent_send_error(uint32_t id, int r, const char *msg)
{
        struct strbuf sb;
        int k;

        strbuf_init(&sb, AGENT_FRAME_MAX);
        k = agent_put_u32s(&sb, (uint32_t)(r < 0 ? -r : r));
        if (k >= 0)
                k = agent_put_strs(&sb, msg, strnlen(msg, AGENT_MSG_MAX));
        if (k >= 0)
                k = agent_send(id, AGENT_ERROR, 0, sb.buf, sb.len);
        strbuf_release(&sb);
        return k;
}

static _Noreturn void fatal(const char *msg)
{
        struct strbuf sb;

        strbuf_init(&sb, AGENT_FRAME_MAX);
        if (agent_put_strs(&sb, msg, strlen(msg)) >= 0)
                (void)agent_send(0, AGENT_FATAL, 0, sb.buf, sb.len);
        fprintf(stderr, "b4box-agent: %s\n", msg);
        _exit(2);
}

/* ---- the request table ---- */

struct slot {
        bool used;
        uint32_t id;
        uint16_t type;
        int cancel_r, cancel_w; /* EXEC: a pipe the host's CANCEL (or the end) writes to */
        /* WRITE, until its data is complete */
        struct agent_req req;
        char *data;
        size_t have;
        bool collecting, counted, discard;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_empty = PTHREAD_COND_INITIALIZER;
static struct slot table[AGENT_INFLIGHT_MAX];
static size_t n_used;
static uint64_t write_pending; /* bytes held by collecting WRITEs */

/* Under table_lock. */
static struct slot *find(uint32_t id)
{
        for (size_t i = 0; i < AGENT_INFLIGHT_MAX; i++)
                if (table[i].used && table[i].id == id)
                        return &table[i];
        return NULL;
}

/* Claim a slot for @id. Return: the slot, or NULL with *ret_r (-EBUSY full, -EEXIST). */
static struct slot *claim(uint32_t id, uint16_t type, int *ret_r)
{
        struct slot *s = NULL;

        pthread_mutex_lock(&table_lock);
        if (find(id))
                *ret_r = -EEXIST;
        else
                for (size_t i = 0; i < AGENT_INFLIGHT_MAX && !s; i++)
                        if (!table[i].used)
                                s = &table[i];
        if (s) {
                *s = (struct slot){
                        .used = true, .id = id, .type = type, .cancel_r = -EBADF, .cancel_w = -EBADF
                };
                n_used++;
        } else if (*ret_r != -EEXIST) {
                *ret_r = -EBUSY;
        }
        pthread_mutex_unlock(&table_lock);
        return s;
}

static void unclaim(struct slot *s)
{
        pthread_mutex_lock(&table_lock);
        safe_close(s->cancel_r);
        safe_close(s->cancel_w);
        *s = (struct slot){ .cancel_r = -EBADF, .cancel_w = -EBADF };
        if (--n_used == 0)
                pthread_cond_broadcast(&table_empty);
        pthread_mutex_unlock(&table_lock);
}

/* ---- running a request ---- */

struct job {
        struct slot *slot;
        struct agent_req req;
        char *data;
        size_t len;
};

static void *job_main(void *arg)
{
        struct job *j = arg;

        if (j->req.type == AGENT_EXEC)
                agent_exec_serve(&j->req, j->slot->cancel_r);
        else
                agent_fs_serve(&j->req, j->data, j->len);
        agent_req_clear(&j->req);
        free(j->data);
        unclaim(j->slot);
        free(j);
        return NULL;
}

/* Start @req (owned from now on) on a thread of its own. */
static void start_job(struct slot *s, struct agent_req *req, char *data, size_t len)
{
        struct job *j = b4_calloc(1, sizeof(*j));
        pthread_attr_t a;
        pthread_t t;
        int r = -ENOMEM;

        if (j) {
                *j = (struct job){ .slot = s, .req = *req, .data = data, .len = len };
                *req = (struct agent_req){ 0 };
                data = NULL;
                pthread_attr_init(&a);
                pthread_attr_setstacksize(&a, THREAD_STACK);
                pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&t, &a, job_main, j);
                pthread_attr_destroy(&a);
                if (r >= 0)
                        return;
                *req = j->req;
                data = j->data;
                free(j);
        }
        (void)agent_send_error(s->id, r, "cannot start the request");
        agent_req_clear(req);
        free(data);
        unclaim(s);
}

/* A WRITE whose data is complete: run it, or drop it when it was refused. */
static void finish_write(struct slot *s)
{
        struct agent_req q = s->req;
        char *data = TAKE_PTR(s->data);

        pthread_mutex_lock(&table_lock);
        if (s->counted)
                write_pending -= q.max;
        s->collecting = false;
        s->req = (struct agent_req){ 0 };
        pthread_mutex_unlock(&table_lock);
        if (s->discard) {
                agent_req_clear(&q);
                free(data);
                unclaim(s);
                return;
        }
        start_job(s, &q, data, (size_t)q.max);
}

/* A WRITE: hold its data until the declared length has arrived. One refused for memory
 * is answered at once and its data still consumed (discarded). */
static void begin_write(struct slot *s, struct agent_req *req)
{
        bool over;

        s->req = *req;
        *req = (struct agent_req){ 0 };
        s->collecting = true;
        pthread_mutex_lock(&table_lock);
        over = write_pending + s->req.max > AGENT_WRITE_PENDING;
        if (!over)
                write_pending += s->req.max;
        s->counted = !over;
        pthread_mutex_unlock(&table_lock);
        if (!over && s->req.max)
                s->data = b4_malloc((size_t)s->req.max);
        if (over || (s->req.max && !s->data)) {
                (void)agent_send_error(s->id, -ENOMEM, "too much write data held at once");
                s->discard = true;
        }
        if (s->req.max == 0)
                finish_write(s);
}

/* DATA for a collecting WRITE. More than declared, or for no such WRITE, is fatal. */
static void on_data(const struct agent_hdr *h, const unsigned char *p)
{
        struct slot *s;

        pthread_mutex_lock(&table_lock);
        s = find(h->id);
        pthread_mutex_unlock(&table_lock);
        if (!s || !s->collecting || h->flags != 0)
                fatal("DATA for no write in progress");
        if (h->len > s->req.max - s->have)
                fatal("more WRITE data than declared");
        if (!s->discard)
                memcpy(s->data + s->have, p, h->len);
        s->have += h->len;
        if (s->have == s->req.max)
                finish_write(s);
}

static void on_cancel(uint32_t id)
{
        pthread_mutex_lock(&table_lock);
        struct slot *s = find(id);
        if (s && s->cancel_w >= 0)
                (void)write(s->cancel_w, "c", 1);
        pthread_mutex_unlock(&table_lock);
}

static void on_request(struct agent_req *req)
{
        struct slot *s;
        int r = 0;

        if (req->type == AGENT_CANCEL) {
                on_cancel(req->id);
                agent_req_clear(req);
                return;
        }
        s = claim(req->id, req->type, &r);
        if (!s) {
                (void)agent_send_error(req->id, r,
                                       r == -EEXIST ? "request id already in flight"
                                                    : "too many requests in flight");
                agent_req_clear(req);
                return;
        }
        if (req->type == AGENT_EXEC) {
                int p[2];
                if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
                        (void)agent_send_error(req->id, -errno, "cannot prepare the command");
                        agent_req_clear(req);
                        unclaim(s);
                        return;
                }
                s->cancel_r = p[0];
                s->cancel_w = p[1];
        }
        if (req->type == AGENT_WRITE)
                begin_write(s, req);
        else
                start_job(s, req, NULL, 0);
}

/* ---- the reader ---- */

/* Read exactly @len bytes. Return: 1, 0 at a clean end before the first byte, -1 else. */
static int read_exact(int fd, void *buf, size_t len)
{
        size_t got = 0;

        while (got < len) {
                ssize_t n = read(fd, (char *)buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return got == 0 && n == 0 ? 0 : -1;
                got += (size_t)n;
        }
        return 1;
}

static void hello(const struct agent_req *q)
{
        unsigned char p[16 + 4 + sizeof(AGENT_VERSION_TEXT) - 1];

        if (q->min_version > AGENT_PROTO_VERSION || q->max_version < AGENT_PROTO_VERSION)
                fatal("no common protocol version");
        agent_put_u32(p, AGENT_MAGIC);
        agent_put_u32(p + 4, AGENT_PROTO_VERSION);
        agent_put_u32(p + 8, AGENT_FRAME_MAX);
        agent_put_u32(p + 12, AGENT_INFLIGHT_MAX);
        agent_put_u32(p + 16, sizeof(AGENT_VERSION_TEXT) - 1);
        memcpy(p + 20, AGENT_VERSION_TEXT, sizeof(AGENT_VERSION_TEXT) - 1);
        if (agent_send(0, AGENT_HELLO, 0, p, sizeof(p)) < 0)
                _exit(1);
}

/* The host went away: kill every running command, give them a moment, exit. */
static _Noreturn void shut_down(void)
{
        struct timespec until;

        for (size_t i = 0; i < AGENT_INFLIGHT_MAX; i++)
                if (table[i].used && table[i].collecting) { /* no job: drop it here */
                        agent_req_clear(&table[i].req);
                        free(TAKE_PTR(table[i].data));
                        unclaim(&table[i]);
                }
        pthread_mutex_lock(&table_lock);
        for (size_t i = 0; i < AGENT_INFLIGHT_MAX; i++)
                if (table[i].used && table[i].cancel_w >= 0)
                        (void)write(table[i].cancel_w, "c", 1);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 3;
        while (n_used > 0 && pthread_cond_timedwait(&table_empty, &table_lock, &until) == 0)
                ;
        pthread_mutex_unlock(&table_lock);
        _exit(0);
}

static void serve(void)
{
        unsigned char *buf = b4_malloc(AGENT_FRAME_MAX);
        bool greeted = false;

        if (!buf)
                fatal("out of memory");
        for (;;) {
                unsigned char hb[AGENT_HDR_LEN];
                struct agent_hdr h;
                struct agent_req req;
                const char *why = NULL;
                int r = read_exact(0, hb, sizeof(hb));
                if (r == 0)
                        shut_down();
                if (r < 0)
                        fatal("truncated frame header");
                agent_hdr_decode(hb, &h);
                if (h.len > AGENT_FRAME_MAX)
                        fatal("frame over the size cap");
                if (h.len && read_exact(0, buf, h.len) <= 0)
                        fatal("truncated frame");
                if (h.type == AGENT_DATA && greeted && h.id != 0) {
                        on_data(&h, buf);
                        continue;
                }
                r = agent_req_parse(&h, buf, &req, &why);
                if (!greeted && (r < 0 || req.type != AGENT_HELLO))
                        fatal("the first frame must be a valid HELLO");
                if (r == -ENOMEM) {
                        (void)agent_send_error(h.id, r, why);
                        continue;
                }
                if (r < 0) {
                        /* A malformed request is answered; a WRITE whose data would follow
                         * cannot be skipped safely: its DATA frames are then fatal. */
                        (void)agent_send_error(h.id, r, why);
                        continue;
                }
                if (req.type == AGENT_HELLO) {
                        if (greeted)
                                fatal("a second HELLO");
                        hello(&req);
                        greeted = true;
                        agent_req_clear(&req);
                        continue;
                }
                on_request(&req);
        }
}

/* Reap every child: supervisors (nobody waits for them by pid) and, when the agent is PID 1
 * of its container, every orphan re-parented to it. SIGCHLD is blocked in every thread and
 * taken here. */
static void *reaper_main(void *arg)
{
        sigset_t *set = arg;
        int sig;

        for (;;) {
                if (sigwait(set, &sig) != 0)
                        continue;
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
        return NULL;
}

static int start_reaper(void)
{
        static sigset_t set;
        pthread_attr_t a;
        pthread_t t;
        int r;

        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        r = -pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by every later thread */
        if (r < 0)
                return r;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        r = -pthread_create(&t, &a, reaper_main, &set);
        pthread_attr_destroy(&a);
        return r;
}

static _Noreturn void usage(void)
{
        fprintf(stderr, "usage: b4box-agent [--root DIR] [--read-only] [--cgroup DIR]\n");
        _exit(2);
}

int main(int argc, char **argv)
{
        const char *root = "/", *cgroup = NULL;
        bool read_only = false;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
                        root = argv[++i];
                else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc)
                        cgroup = argv[++i];
                else if (strcmp(argv[i], "--read-only") == 0)
                        read_only = true;
                else
                        usage();
        }
        /* SIGPIPE would kill the agent on a dropped stream; writes fail EPIPE instead.
         * Commands get the default back (agent-exec.c). */
        struct sigaction sa = { .sa_handler = SIG_IGN };
        sigaction(SIGPIPE, &sa, NULL);
        if (agent_fs_init(root, read_only) < 0) {
                fprintf(stderr, "b4box-agent: cannot open the root %s: %m\n", root);
                return 1;
        }
        agent_exec_init(cgroup);
        if (start_reaper() < 0) {
                fprintf(stderr, "b4box-agent: cannot start the reaper\n");
                return 1;
        }
        serve();
}
