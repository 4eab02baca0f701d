/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection to one agent: a reader thread that decodes frames and feeds each to its
 * call (agent-reply.c), a writer lock so frames go out whole, and a table of the calls in
 * flight. A caller registers its call, sends its request and waits on the call's eventfd
 * (with its deadline and cancel token); the reader signals it when the call ends. When the
 * stream ends every call in flight fails -ENOTCONN; a protocol breach fails its call
 * -EPROTO and kills the connection the same way. Late replies (for a call that timed out)
 * are dropped.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent-internal.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time-util.h"

struct agent_conn {
        struct agent_transport t;
        struct agent_conn_opts opts;
        pthread_t reader;
        bool reader_started;
        pthread_mutex_t lock; /* calls, dead, next_id, version */
        pthread_mutex_t wlock;
        struct agent_call *calls[AGENT_INFLIGHT_MAX];
        size_t n_calls;
        uint32_t next_id;
        bool dead;
        int dead_error;
        size_t users; /* callers between submit and the end of their wait */
        pthread_cond_t idle;
        /* the handshake */
        int hello_efd;
        bool hello_done;
        uint32_t version;
        unsigned char *buf; /* AGENT_FRAME_MAX, the reader's */
};

/* ---- payload builders ---- */

int agent_buf_u32(struct strbuf *sb, uint32_t v)
{
        unsigned char b[4];

        agent_put_u32(b, v);
        return strbuf_add(sb, b, sizeof(b));
}

int agent_buf_u64(struct strbuf *sb, uint64_t v)
{
        unsigned char b[8];

        agent_put_u64(b, v);
        return strbuf_add(sb, b, sizeof(b));
}

int agent_buf_str(struct strbuf *sb, const char *s)
{
        size_t n = strlen(s);
        int r = n > UINT32_MAX ? -E2BIG : agent_buf_u32(sb, (uint32_t)n);

        return r < 0 ? r : strbuf_add(sb, s, n);
}

/* ---- state ---- */

static void signal_efd(int efd)
{
        uint64_t one = 1;

        if (efd >= 0)
                (void)!write(efd, &one, sizeof(one));
}

/* Under lock: the call of @id, or NULL. */
static struct agent_call **slot_of(struct agent_conn *c, uint32_t id)
{
        for (size_t i = 0; i < AGENT_INFLIGHT_MAX; i++)
                if (c->calls[i] && c->calls[i]->id == id)
                        return &c->calls[i];
        return NULL;
}

/* Under lock: end every call in flight with @error, mark the connection dead. */
static void kill_locked(struct agent_conn *c, int error)
{
        if (!c->dead) {
                c->dead = true;
                c->dead_error = error;
        }
        for (size_t i = 0; i < AGENT_INFLIGHT_MAX; i++) {
                struct agent_call *call = c->calls[i];
                if (!call)
                        continue;
                if (!call->done) {
                        call->done = true;
                        call->error = -ENOTCONN;
                }
                c->calls[i] = NULL;
                c->n_calls--;
                signal_efd(call->efd);
        }
        signal_efd(c->hello_efd);
}

bool agent_conn_alive(struct agent_conn *c)
{
        pthread_mutex_lock(&c->lock);
        bool alive = !c->dead;
        pthread_mutex_unlock(&c->lock);
        return alive;
}

uint32_t agent_conn_version(struct agent_conn *c)
{
        return c->version;
}

uint64_t agent_conn_fs_deadline(struct agent_conn *c)
{
        return now_msec() + c->opts.reply_timeout_ms;
}

/* ---- the reader ---- */

static int read_exact(struct agent_conn *c, void *buf, size_t len)
{
        size_t got = 0;

        while (got < len) {
                ssize_t n = c->t.read(c->t.userdata, (char *)buf + got, len - got);
                if (n == -EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? (int)n : -ENOTCONN;
                got += (size_t)n;
        }
        return 0;
}

static int on_hello(struct agent_conn *c, const struct agent_hdr *h, const unsigned char *p)
{
        struct agent_rd rd = { .p = p, .left = h->len };
        uint32_t magic, version, frame_max, inflight;
        const char *text;
        size_t n;

        if (c->hello_done || h->type != AGENT_HELLO || h->flags || agent_rd_u32(&rd, &magic) < 0 ||
            agent_rd_u32(&rd, &version) < 0 || agent_rd_u32(&rd, &frame_max) < 0 ||
            agent_rd_u32(&rd, &inflight) < 0 || agent_rd_str(&rd, 256, &text, &n) < 0 ||
            agent_rd_end(&rd) < 0 || magic != AGENT_MAGIC || version != AGENT_PROTO_VERSION)
                return -EPROTO;
        pthread_mutex_lock(&c->lock);
        c->version = version;
        c->hello_done = true;
        signal_efd(c->hello_efd);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

/* One frame. Return: 0, or -EPROTO (the connection must die). */
static int dispatch(struct agent_conn *c, const struct agent_hdr *h, const unsigned char *p)
{
        struct agent_call **s, *call;
        const char *why = NULL;
        int r;

        if (h->id == 0)
                return h->type == AGENT_FATAL ? -EPROTO : on_hello(c, h, p);
        if (!c->hello_done)
                return -EPROTO;
        pthread_mutex_lock(&c->lock);
        s = slot_of(c, h->id);
        if (!s) {
                pthread_mutex_unlock(&c->lock);
                return 0; /* a late reply: its caller gave up */
        }
        call = *s;
        r = agent_call_feed(call, h, p, &why);
        if (r == -ENOMEM) {
                call->done = true;
                call->error = -ENOMEM;
        } else if (r < 0) {
                call->done = true;
                call->error = -EPROTO;
                log_warning("agent: reply to request %u refused: %s", (unsigned)h->id,
                            why ? why : "malformed");
        }
        if (call->done) {
                *s = NULL;
                c->n_calls--;
                signal_efd(call->efd);
        }
        if (r < 0 && r != -ENOMEM)
                kill_locked(c, -EPROTO); /* before the caller wakes: it sees the death */
        pthread_mutex_unlock(&c->lock);
        return r < 0 && r != -ENOMEM ? -EPROTO : 0;
}

static void *reader_main(void *arg)
{
        struct agent_conn *c = arg;
        int r;

        for (;;) {
                unsigned char hb[AGENT_HDR_LEN];
                struct agent_hdr h;
                r = read_exact(c, hb, sizeof(hb));
                if (r < 0)
                        break;
                agent_hdr_decode(hb, &h);
                if (h.len > AGENT_FRAME_MAX) {
                        r = -EPROTO;
                        break;
                }
                r = h.len ? read_exact(c, c->buf, h.len) : 0;
                if (r >= 0)
                        r = dispatch(c, &h, c->buf);
                if (r < 0)
                        break;
        }
        pthread_mutex_lock(&c->lock);
        kill_locked(c, r == -EPROTO ? -EPROTO : -ENOTCONN);
        pthread_mutex_unlock(&c->lock);
        c->t.shutdown(c->t.userdata);
        return NULL;
}

/* ---- sending ---- */

int agent_conn_send(struct agent_conn *c,
                    uint32_t id,
                    uint16_t type,
                    uint16_t flags,
                    const void *payload,
                    size_t len)
{
        unsigned char hb[AGENT_HDR_LEN];
        struct agent_hdr h = { .len = (uint32_t)len, .id = id, .type = type, .flags = flags };
        int r;

        if (len > AGENT_FRAME_MAX)
                return -E2BIG;
        agent_hdr_encode(hb, &h);
        pthread_mutex_lock(&c->wlock);
        r = c->t.write(c->t.userdata, hb, sizeof(hb));
        if (r >= 0 && len)
                r = c->t.write(c->t.userdata, payload, len);
        pthread_mutex_unlock(&c->wlock);
        if (r < 0) {
                pthread_mutex_lock(&c->lock);
                kill_locked(c, -ENOTCONN);
                pthread_mutex_unlock(&c->lock);
                c->t.shutdown(c->t.userdata);
                return -ENOTCONN;
        }
        return 0;
}

/* Take @call out of the table if it is still there (a timeout, a cancel), and leave. */
static void leave(struct agent_conn *c, struct agent_call *call)
{
        pthread_mutex_lock(&c->lock);
        struct agent_call **s = slot_of(c, call->id);
        if (s && *s == call) {
                *s = NULL;
                c->n_calls--;
        }
        safe_close(call->efd);
        call->efd = -EBADF;
        if (--c->users == 0)
                pthread_cond_broadcast(&c->idle);
        pthread_mutex_unlock(&c->lock);
}

int agent_conn_submit(struct agent_conn *c,
                      struct agent_call *call,
                      const void *payload,
                      size_t len)
{
        struct agent_call **free_slot = NULL;

        call->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (call->efd < 0)
                return -errno;
        pthread_mutex_lock(&c->lock);
        if (c->dead) {
                pthread_mutex_unlock(&c->lock);
                call->efd = safe_close(call->efd);
                return -ENOTCONN;
        }
        for (size_t i = 0; i < AGENT_INFLIGHT_MAX && !free_slot; i++)
                if (!c->calls[i])
                        free_slot = &c->calls[i];
        if (!free_slot) {
                pthread_mutex_unlock(&c->lock);
                call->efd = safe_close(call->efd);
                return -EBUSY;
        }
        do
                call->id = ++c->next_id;
        while (call->id == 0 || slot_of(c, call->id));
        *free_slot = call;
        c->n_calls++;
        c->users++;
        pthread_mutex_unlock(&c->lock);
        int r = agent_conn_send(c, call->id, call->type, 0, payload, len);
        if (r < 0)
                leave(c, call);
        return r;
}

static bool call_done(struct agent_conn *c, struct agent_call *call)
{
        pthread_mutex_lock(&c->lock);
        bool done = call->done;
        pthread_mutex_unlock(&c->lock);
        return done;
}

int agent_conn_wait(struct agent_conn *c,
                    struct agent_call *call,
                    uint64_t deadline,
                    struct b4_cancel *cancel,
                    agent_cancel_fn *on_cancel)
{
        bool cancelled = false;
        int r = 0;

        while (!call_done(c, call)) {
                struct pollfd p[2] = { { .fd = call->efd, .events = POLLIN },
                                       { .fd = cancel && !cancelled ? b4_cancel_fd(cancel) : -1,
                                         .events = POLLIN } };
                uint64_t now = now_msec();
                int timeout = -1;
                if (deadline) {
                        if (now >= deadline) {
                                r = -ETIMEDOUT;
                                break;
                        }
                        timeout = deadline - now > 60000 ? 60000 : (int)(deadline - now);
                }
                if (poll(p, 2, timeout) < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (p[1].revents && !cancelled) {
                        cancelled = true;
                        if (!on_cancel) {
                                r = -ECANCELED;
                                break;
                        }
                        on_cancel(c, call, &deadline);
                }
        }
        leave(c, call);
        return r < 0 ? r : call->error;
}

/* ---- open and free ---- */

static int handshake(struct agent_conn *c)
{
        unsigned char p[12];
        uint64_t deadline = now_msec() + c->opts.hello_timeout_ms;
        int r;

        agent_put_u32(p, AGENT_MAGIC);
        agent_put_u32(p + 4, AGENT_PROTO_VERSION);
        agent_put_u32(p + 8, AGENT_PROTO_VERSION);
        r = agent_conn_send(c, 0, AGENT_HELLO, 0, p, sizeof(p));
        while (r >= 0) {
                pthread_mutex_lock(&c->lock);
                bool done = c->hello_done, dead = c->dead;
                int e = c->dead_error;
                pthread_mutex_unlock(&c->lock);
                if (done)
                        return 0;
                if (dead)
                        return e == -EPROTO ? -EPROTO : -ENOTCONN;
                uint64_t now = now_msec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd pf = { .fd = c->hello_efd, .events = POLLIN };
                (void)poll(&pf, 1, (int)(deadline - now));
                uint64_t v;
                (void)!read(c->hello_efd, &v, sizeof(v));
        }
        return r;
}

int agent_conn_open(const struct agent_transport *t,
                    const struct agent_conn_opts *opts,
                    struct agent_conn **ret,
                    struct b4_error *err)
{
        struct agent_conn *c = b4_calloc(1, sizeof(*c));
        int r;

        if (!c) {
                t->shutdown(t->userdata);
                t->close(t->userdata);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        c->t = *t;
        c->opts = opts ? *opts : (struct agent_conn_opts){ 0 };
        if (!c->opts.reply_timeout_ms)
                c->opts.reply_timeout_ms = AGENT_REPLY_TIMEOUT_MS;
        if (!c->opts.hello_timeout_ms)
                c->opts.hello_timeout_ms = AGENT_HELLO_TIMEOUT_MS;
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->wlock, NULL);
        pthread_cond_init(&c->idle, NULL);
        c->hello_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->buf = b4_malloc(AGENT_FRAME_MAX);
        r = c->hello_efd < 0 ? -errno : c->buf ? 0 : -ENOMEM;
        if (r >= 0) {
                r = -pthread_create(&c->reader, NULL, reader_main, c);
                c->reader_started = r >= 0;
        }
        if (r >= 0)
                r = handshake(c);
        if (r < 0) {
                agent_conn_free(c);
                return b4_error_set(err, r, "cannot connect to b4box-agent: %s",
                                    r == -EPROTO      ? "it does not speak the agent protocol"
                                    : r == -ETIMEDOUT ? "no handshake in time"
                                                      : strerror(-r));
        }
        *ret = c;
        return 0;
}

struct agent_conn *agent_conn_free(struct agent_conn *c)
{
        if (!c)
                return NULL;
        pthread_mutex_lock(&c->lock);
        kill_locked(c, -ENOTCONN);
        while (c->users > 0)
                pthread_cond_wait(&c->idle, &c->lock);
        pthread_mutex_unlock(&c->lock);
        c->t.shutdown(c->t.userdata);
        if (c->reader_started)
                pthread_join(c->reader, NULL);
        c->t.close(c->t.userdata);
        safe_close(c->hello_efd);
        free(c->buf);
        pthread_mutex_destroy(&c->lock);
        pthread_mutex_destroy(&c->wlock);
        pthread_cond_destroy(&c->idle);
        free(c);
        return NULL;
}
