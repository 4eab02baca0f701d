/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-agent in a container: one attached exec per connection (POST /containers/{c}/exec
 * with stdin, then /exec/{id}/start hijacked), its stdin the requests and its stdout the
 * replies. Without a TTY Docker multiplexes the exec's stdout and stderr in 8-byte framed
 * chunks (stream id, 3 zero bytes, big-endian length): the transport hands the client the
 * stdout payload only and keeps the agent's stderr for diagnostics.
 *
 * The connection is made on first use and kept until it is lost; only reset (under the
 * thread's exclusive lease, or the owner's free) replaces it, so no call ever runs on a
 * connection being freed.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "docker/docker.h"
#include "json/json.h"

#define STDERR_KEEP 512u /* the tail of the agent's stderr kept for errors */

static size_t min_size(size_t a, size_t b)
{
        return a < b ? a : b;
}

/* ---- the transport over a hijacked exec stream ---- */

#define READ_BUF (64u * 1024) /* one read(2) takes many small frames */

struct hj_stream {
        int fd;
        char *pending; /* bytes that came with the response head */
        size_t pending_len, pending_off;
        char *buf; /* READ_BUF bytes read ahead from @fd */
        size_t buf_len, buf_off;
        unsigned char hdr[8];
        size_t hdr_len;
        size_t left; /* payload bytes left in the current frame */
        int stream;
        char errtail[STDERR_KEEP + 1];
        size_t errtail_len;
};

static ssize_t raw_read(struct hj_stream *h, void *buf, size_t len)
{
        if (h->pending_off < h->pending_len) {
                size_t k = min_size(len, h->pending_len - h->pending_off);
                memcpy(buf, h->pending + h->pending_off, k);
                h->pending_off += k;
                return (ssize_t)k;
        }
        if (h->buf_off == h->buf_len) {
                ssize_t n;
                do
                        n = read(h->fd, h->buf, READ_BUF);
                while (n < 0 && errno == EINTR);
                if (n <= 0)
                        return n < 0 ? -errno : 0;
                h->buf_len = (size_t)n;
                h->buf_off = 0;
        }
        len = min_size(len, h->buf_len - h->buf_off);
        memcpy(buf, h->buf + h->buf_off, len);
        h->buf_off += len;
        return (ssize_t)len;
}

static void keep_stderr(struct hj_stream *h, const char *p, size_t n)
{
        if (n >= STDERR_KEEP) {
                memcpy(h->errtail, p + n - STDERR_KEEP, STDERR_KEEP);
                h->errtail_len = STDERR_KEEP;
        } else {
                size_t drop =
                        h->errtail_len + n > STDERR_KEEP ? h->errtail_len + n - STDERR_KEEP : 0;
                memmove(h->errtail, h->errtail + drop, h->errtail_len - drop);
                memcpy(h->errtail + h->errtail_len - drop, p, n);
                h->errtail_len = h->errtail_len - drop + n;
        }
        h->errtail[h->errtail_len] = '\0';
}

/* The next frame header: 1, 0 at a clean end of stream, or -errno. */
static int next_frame(struct hj_stream *h)
{
        while (h->hdr_len < sizeof(h->hdr)) {
                ssize_t n = raw_read(h, h->hdr + h->hdr_len, sizeof(h->hdr) - h->hdr_len);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        return h->hdr_len == 0 ? 0 : -EPROTO;
                h->hdr_len += (size_t)n;
        }
        h->hdr_len = 0;
        h->stream = h->hdr[0];
        if (h->stream > 2 || h->hdr[1] || h->hdr[2] || h->hdr[3])
                return -EPROTO;
        h->left = (size_t)h->hdr[4] << 24 | (size_t)h->hdr[5] << 16 | (size_t)h->hdr[6] << 8 |
                  h->hdr[7];
        return 1;
}

static ssize_t hj_read(void *userdata, void *buf, size_t len)
{
        struct hj_stream *h = userdata;
        char junk[4096];

        for (;;) {
                ssize_t n;
                if (h->left == 0) {
                        int r = next_frame(h);
                        if (r <= 0) {
                                if (h->errtail_len > 0)
                                        log_debug("b4box-agent stderr: %s", h->errtail);
                                return r;
                        }
                        continue;
                }
                if (h->stream == 1) {
                        n = raw_read(h, buf, min_size(len, h->left));
                        if (n > 0)
                                h->left -= (size_t)n;
                        return n == 0 ? -EPROTO : n;
                }
                n = raw_read(h, junk, min_size(sizeof(junk), h->left));
                if (n <= 0)
                        return n == 0 ? -EPROTO : n;
                h->left -= (size_t)n;
                if (h->stream == 2)
                        keep_stderr(h, junk, (size_t)n);
        }
}

static int hj_write(void *userdata, const void *buf, size_t len)
{
        struct hj_stream *h = userdata;
        const char *p = buf;

        while (len > 0) {
                ssize_t n = send(h->fd, p, len, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static void hj_shutdown(void *userdata)
{
        struct hj_stream *h = userdata;

        (void)shutdown(h->fd, SHUT_RDWR);
}

static void hj_close(void *userdata)
{
        struct hj_stream *h = userdata;

        (void)close(h->fd);
        free(h->pending);
        free(h->buf);
        free(h);
}

int docker_agent_transport(int fd, char *pending, size_t pending_len, struct agent_transport *ret)
{
        struct hj_stream *h = b4_calloc(1, sizeof(*h));
        char *buf = b4_malloc(READ_BUF);

        if (!h || !buf) {
                (void)close(fd);
                free(pending);
                free(buf);
                free(h);
                return -ENOMEM;
        }
        *h = (struct hj_stream){
                .fd = fd, .pending = pending, .pending_len = pending_len, .buf = buf
        };
        *ret = (struct agent_transport){ .read = hj_read,
                                         .write = hj_write,
                                         .shutdown = hj_shutdown,
                                         .close = hj_close,
                                         .userdata = h };
        return 0;
}

/* ---- the link ---- */

struct docker_agent {
        struct agent_slot slot;  /* the connection, made on first use */
        struct docker_client *d; /* borrowed */
        char container[128];
        char *user; /* NULL = the container's */
        bool read_only;
};

int docker_agent_new(struct docker_client *d,
                     const char *container,
                     const char *user,
                     bool read_only,
                     struct docker_agent **ret)
{
        struct docker_agent *a = b4_calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        if (user && !(a->user = b4_strdup(user))) {
                free(a);
                return -ENOMEM;
        }
        agent_slot_init(&a->slot);
        a->d = d;
        (void)snprintf(a->container, sizeof(a->container), "%s", container);
        a->read_only = read_only;
        *ret = a;
        return 0;
}

struct docker_agent *docker_agent_free(struct docker_agent *a)
{
        if (!a)
                return NULL;
        agent_slot_clear(&a->slot);
        free(a->user);
        free(a);
        return NULL;
}

static int exec_create(struct docker_agent *a, char **ret_id, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        cleanup_(jv_unrefp) struct jv *resp = NULL;
        cleanup_free char *path = NULL;
        const char *id;
        int r;

        body = a->read_only ? jv_pack("{s:b, s:b, s:b, s:b, s:[s, s], s:s*}", "AttachStdin", true,
                                      "AttachStdout", true, "AttachStderr", true, "Tty", false,
                                      "Cmd", DOCKER_AGENT_PATH, "--read-only", "User", a->user)
                            : jv_pack("{s:b, s:b, s:b, s:b, s:[s], s:s*}", "AttachStdin", true,
                                      "AttachStdout", true, "AttachStderr", true, "Tty", false,
                                      "Cmd", DOCKER_AGENT_PATH, "User", a->user);
        if (!body || b4_asprintf(&path, "/containers/%s/exec", a->container) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(a->d, "POST", path, body, &resp, err);
        if (r < 0)
                return r;
        id = jv_string(jv_object_get(resp, "Id"));
        if (!id)
                return b4_error_set(err, -EPROTO, "Docker returned no exec id");
        *ret_id = b4_strdup(id);
        return *ret_id ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static int connect_agent(void *userdata, struct agent_conn **ret, struct b4_error *err)
{
        struct docker_agent *a = userdata;
        cleanup_(jv_unrefp) struct jv *body = jv_pack("{s:b, s:b}", "Detach", false, "Tty", false);
        cleanup_free char *id = NULL, *path = NULL;
        struct docker_hijacked hj = { .fd = -EBADF };
        struct agent_transport t;
        int r;

        r = exec_create(a, &id, err);
        if (r < 0)
                return r;
        if (!body || b4_asprintf(&path, "/exec/%s/start", id) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_hijack(a->d, path, body, &hj, err);
        if (r < 0)
                return r;
        if (docker_agent_transport(hj.fd, hj.pending, hj.pending_len, &t) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return agent_conn_open(&t, NULL, ret, err);
}

int docker_agent_conn(struct docker_agent *a, struct agent_conn **ret, struct b4_error *err)
{
        struct b4_error e = { 0 };
        int r = agent_slot_get(&a->slot, connect_agent, a, ret, &e);

        if (r >= 0 && !agent_conn_alive(*ret))
                return b4_error_set(err, -ENOTCONN, "the b4box-agent connection to %s was lost",
                                    a->container);
        if (r >= 0)
                return 0;
        /* runc could not fork the agent: PID exhaustion, recovered like any exec's */
        if (docker_admission_failure(e.msg))
                return b4_error_set(err, -EAGAIN, "b4box-agent could not start in %s: %s",
                                    a->container, e.msg);
        return b4_error_set(err, r == -ENOMEM ? r : -ENOTCONN,
                            "b4box-agent could not start in %s: %s", a->container, e.msg);
}

bool docker_agent_lost(struct docker_agent *a)
{
        return agent_slot_lost(&a->slot);
}

void docker_agent_reset(struct docker_agent *a)
{
        agent_slot_reset(&a->slot);
}
