/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The channel.k8s.io protocol over ws.c (exec.h): the exec URL, the channel demultiplexer,
 * the error channel's Status, a one-shot command and the agent's long-lived stream.
 */

#include "exec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "http/http.h"
#include "json/json.h"
#include "kube/kube.h"

#define READ_CHUNK     (64u * 1024)
#define DEFAULT_OUTPUT (1024u * 1024)

/* ---- the request ---- */

void kube_exec_conn_opts(const struct kube_config *cfg,
                         const char *token,
                         struct kube_conn_opts *ret)
{
        *ret = (struct kube_conn_opts){ .server = cfg->server,
                                        .token = token,
                                        .ca_file = cfg->ca_file,
                                        .ca_blob = cfg->ca_pem,
                                        .ca_blob_len = cfg->ca_pem_len,
                                        .cert_file = cfg->cert_file,
                                        .cert_blob = cfg->cert_pem,
                                        .cert_blob_len = cfg->cert_pem_len,
                                        .key_file = cfg->key_file,
                                        .key_blob = cfg->key_pem,
                                        .key_blob_len = cfg->key_pem_len,
                                        .insecure = cfg->insecure };
}

static int add_param(struct strbuf *sb, const char *name, const char *value, bool *first)
{
        cleanup_free char *v = http_escape(value);

        if (!v)
                return -ENOMEM;
        if (strbuf_addf(sb, "%s%s=%s", *first ? "?" : "&", name, v) < 0)
                return -E2BIG;
        *first = false;
        return 0;
}

int kube_exec_path(const struct kube_exec_target *t, bool with_stdin, char **ret)
{
        cleanup_free char *ns = NULL, *pod = NULL;
        struct strbuf sb;
        bool first = true;
        int r;

        if (!t->namespace_name || !*t->namespace_name || !t->pod || !*t->pod || !t->argv ||
            !t->argv[0] || (t->container && !*t->container))
                return -EINVAL;
        ns = http_escape(t->namespace_name);
        pod = http_escape(t->pod);
        if (!ns || !pod)
                return -ENOMEM;
        strbuf_init(&sb, KUBE_EXEC_ARGV_MAX);
        r = strbuf_addf(&sb, "/api/v1/namespaces/%s/pods/%s/exec", ns, pod) < 0 ? -E2BIG : 0;
        for (size_t i = 0; r >= 0 && t->argv[i]; i++)
                r = add_param(&sb, "command", t->argv[i], &first);
        if (r >= 0 && t->container)
                r = add_param(&sb, "container", t->container, &first);
        if (r >= 0 && with_stdin)
                r = add_param(&sb, "stdin", "true", &first);
        if (r >= 0)
                r = add_param(&sb, "stdout", "true", &first);
        if (r >= 0)
                r = add_param(&sb, "stderr", "true", &first);
        if (r < 0) {
                strbuf_release(&sb);
                return r;
        }
        return strbuf_detach(&sb, ret, NULL);
}

/* ---- the error channel ---- */

static void copy_message(const char *m, char *out, size_t size)
{
        size_t n = 0;

        for (; m && *m && n + 1 < size; m++)
                out[n++] = (unsigned char)*m < 0x20 || *m == 0x7f ? ' ' : *m;
        out[n] = '\0';
}

/* The ExitCode cause's message as 0..255 (client-go: ParseUint(msg, 10, 8)), or -1. */
static int exit_cause(const struct jv *details)
{
        struct jv *causes = jv_object_get(details, "causes");

        for (size_t i = 0; i < jv_array_size(causes); i++) {
                struct jv *cause = jv_array_get(causes, i);
                const char *reason = jv_string(jv_object_get(cause, "reason"));
                const char *msg = jv_string(jv_object_get(cause, "message"));
                int code = 0;

                if (!reason || strcmp(reason, "ExitCode") != 0)
                        continue;
                if (!msg || !*msg || strlen(msg) > 3)
                        return -1;
                for (const char *p = msg; *p; p++) {
                        if (*p < '0' || *p > '9')
                                return -1;
                        code = code * 10 + (*p - '0');
                }
                return code <= 255 ? code : -1;
        }
        return -1;
}

int kube_exec_status_decode(const char *json, size_t len, struct kube_exec_status *ret)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *status, *reason;
        int code;

        *ret = (struct kube_exec_status){ 0 };
        if (jv_parse(json, len, &v, NULL) < 0 || !jv_is_object(v))
                return -EPROTO;
        status = jv_string(jv_object_get(v, "status"));
        reason = jv_string(jv_object_get(v, "reason"));
        copy_message(jv_string(jv_object_get(v, "message")), ret->message, sizeof(ret->message));
        if (status && strcmp(status, "Success") == 0)
                return 0;
        if (!status || strcmp(status, "Failure") != 0)
                return -EPROTO;
        if (reason && strcmp(reason, "NonZeroExitCode") == 0) {
                code = exit_cause(jv_object_get(v, "details"));
                if (code < 0)
                        return -EPROTO;
                ret->exit_code = code;
                return 0;
        }
        ret->exit_code = 1;
        return -ENOEXEC;
}

/* ---- the demultiplexer ---- */

int kube_exec_demux_feed(struct kube_exec_demux *d,
                         const struct kube_ws_chunk *c,
                         const uint8_t *buf,
                         kube_exec_sink_fn *sink,
                         void *userdata)
{
        size_t n = c->len;
        int r = 0;

        if (c->op != KUBE_WS_BINARY)
                return -EPROTO;
        if (c->first || !d->in_message) {
                d->in_message = true;
                d->channel = -1;
        }
        if (d->channel < 0 && n > 0) {
                d->channel = buf[0];
                buf++;
                n--;
        }
        if (d->channel >= 0 && (n > 0 || c->last))
                r = sink(d->channel, buf, n, c->last, userdata);
        if (c->last) {
                d->in_message = false;
                d->channel = -1;
        }
        return r;
}

/* The error channel's message, gathered (bounded) until its end. */
struct status_buf {
        char data[KUBE_EXEC_STATUS_MAX];
        size_t len;
        bool done;
};

static int status_add(struct status_buf *s, const uint8_t *p, size_t n, bool last)
{
        if (s->done)
                return n > 0 ? -EPROTO : 0; /* one Status per exec */
        if (n > sizeof(s->data) - s->len)
                return -EPROTO;
        memcpy(s->data + s->len, p, n);
        s->len += n;
        if (last && s->len > 0)
                s->done = true;
        return 0;
}

static int version_of(struct kube_ws *ws, struct b4_error *err)
{
        const char *p = kube_ws_protocol(ws);

        if (strcmp(p, KUBE_EXEC_V5) == 0)
                return 5;
        if (strcmp(p, KUBE_EXEC_V4) == 0)
                return 4;
        return b4_error_set(err, -EPROTO, "the API server chose no exec subprotocol ('%.64s')", p);
}

static int open_exec(const struct kube_conn_opts *c,
                     const struct kube_exec_target *t,
                     bool with_stdin,
                     int cancel_fd,
                     struct kube_ws **ret,
                     int *ret_version,
                     struct b4_error *err)
{
        static const char *const both[] = { KUBE_EXEC_V5, KUBE_EXEC_V4, NULL };
        static const char *const v4[] = { KUBE_EXEC_V4, NULL };
        cleanup_(kube_ws_freep) struct kube_ws *ws = NULL;
        cleanup_free char *path = NULL;
        int r;

        r = kube_exec_path(t, with_stdin, &path);
        if (r < 0)
                return b4_error_set(err, r,
                                    r == -E2BIG    ? "exec command line too long"
                                    : r == -EINVAL ? "invalid exec target"
                                                   : "out of memory");
        r = kube_ws_connect(c,
                            &(struct kube_ws_opts){ .path = path,
                                                    .protocols = t->v4_only ? v4 : both,
                                                    .cancel_fd = cancel_fd },
                            &ws, err);
        if (r < 0)
                return r;
        r = version_of(ws, err);
        if (r < 0)
                return r;
        *ret_version = r;
        *ret = TAKE_PTR(ws);
        return 0;
}

/* ---- one command ---- */

struct run {
        struct kube_ws *ws;
        int version;
        const struct kube_exec_run_opts *o;
        size_t cap;
        struct strbuf out, errout;
        bool truncated;
        struct status_buf status;
        int writer_error;
};

static void capture(struct run *run, struct strbuf *sb, const uint8_t *p, size_t n)
{
        size_t room = run->cap - sb->len;

        if (n > room) {
                run->truncated = true;
                n = room;
        }
        if (n > 0 && strbuf_add(sb, p, n) < 0)
                run->truncated = true;
}

static int run_sink(int channel, const uint8_t *p, size_t n, bool last, void *userdata)
{
        struct run *run = userdata;

        switch (channel) {
        case KUBE_EXEC_STDOUT:
                capture(run, &run->out, p, n);
                return 0;
        case KUBE_EXEC_STDERR:
                capture(run, &run->errout, p, n);
                return 0;
        case KUBE_EXEC_ERROR:
                return status_add(&run->status, p, n, last);
        default:
                return -EPROTO;
        }
}

static void *run_writer(void *userdata)
{
        struct run *run = userdata;
        const uint8_t *p = run->o->stdin_data;
        size_t left = run->o->stdin_len;
        uint8_t chan = KUBE_EXEC_STDIN;
        int r = 0;

        while (r >= 0 && left > 0) {
                size_t k = left < KUBE_EXEC_STDIN_CHUNK ? left : KUBE_EXEC_STDIN_CHUNK;
                struct iovec iov[2] = { { &chan, 1 }, { (void *)p, k } };

                r = kube_ws_send(run->ws, KUBE_WS_BINARY, iov, 2, NULL);
                p += k;
                left -= k;
        }
        if (r >= 0 && run->version == 5) {
                uint8_t close_stdin[2] = { KUBE_EXEC_CLOSE, KUBE_EXEC_STDIN };

                r = kube_ws_send(run->ws, KUBE_WS_BINARY, &(struct iovec){ close_stdin, 2 }, 1,
                                 NULL);
        }
        run->writer_error = r;
        return NULL;
}

/* After the Status: our close, then the server's (bounded). */
static void finish(struct run *run, uint8_t *buf)
{
        uint64_t deadline = now_msec() + KUBE_EXEC_CLOSE_WAIT_MS;
        struct kube_ws_chunk c;

        (void)kube_ws_close(run->ws, 1000, NULL);
        while (kube_ws_read(run->ws, buf, READ_CHUNK, deadline, -EBADF, &c, NULL) > 0)
                ;
}

static int run_read(struct run *run, uint64_t deadline, struct b4_error *err)
{
        cleanup_free uint8_t *buf = b4_malloc(READ_CHUNK);
        struct kube_exec_demux d = { .channel = -1 };

        if (!buf)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (;;) {
                struct kube_ws_chunk c;
                int r = kube_ws_read(run->ws, buf, READ_CHUNK, deadline, run->o->cancel_fd, &c,
                                     err);

                if (r == 0)
                        return 0;
                if (r < 0)
                        return r;
                r = kube_exec_demux_feed(&d, &c, buf, run_sink, run);
                if (r < 0)
                        return b4_error_set(err, r,
                                            "exec protocol error: an unexpected channel, a text "
                                            "message or a malformed error channel");
                if (run->status.done) {
                        finish(run, buf);
                        return 0;
                }
        }
}

static int run_result(struct run *run, struct kube_exec_result *ret, struct b4_error *err)
{
        struct kube_exec_status st = { .exit_code = 1 };
        int r = 0;

        if (run->status.done) {
                r = kube_exec_status_decode(run->status.data, run->status.len, &st);
                if (r == -ENOEXEC)
                        return b4_error_set(err, r, "exec failed: %s", st.message);
                if (r < 0)
                        return b4_error_set(err, r,
                                            "exec: a malformed Status on the error channel");
        }
        *ret = (struct kube_exec_result){ .exit_code = st.exit_code,
                                          .no_status = !run->status.done,
                                          .truncated = run->truncated,
                                          .version = run->version };
        if (strbuf_detach(&run->out, &ret->out, &ret->out_len) < 0 ||
            strbuf_detach(&run->errout, &ret->errout, &ret->errout_len) < 0) {
                kube_exec_result_clear(ret);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        return 0;
}

void kube_exec_result_clear(struct kube_exec_result *r)
{
        free(r->out);
        free(r->errout);
        *r = (struct kube_exec_result){ 0 };
}

int kube_exec_run(const struct kube_conn_opts *c,
                  const struct kube_exec_target *t,
                  const struct kube_exec_run_opts *o,
                  struct kube_exec_result *ret,
                  struct b4_error *err)
{
        uint64_t deadline = o->timeout_ms ? now_msec() + o->timeout_ms : 0;
        struct run run = { .o = o, .cap = o->output_cap ? o->output_cap : DEFAULT_OUTPUT };
        pthread_t writer;
        bool writing = false;
        int r;

        *ret = (struct kube_exec_result){ 0 };
        r = open_exec(c, t, o->stdin_data != NULL, o->cancel_fd, &run.ws, &run.version, err);
        if (r < 0)
                return r;
        strbuf_init(&run.out, STRBUF_UNLIMITED);
        strbuf_init(&run.errout, STRBUF_UNLIMITED);
        if (o->stdin_data) {
                r = -pthread_create(&writer, NULL, run_writer, &run);
                if (r < 0)
                        b4_error_set(err, r, "cannot start the stdin writer");
                writing = r == 0;
        }
        if (r >= 0)
                r = run_read(&run, deadline, err);
        kube_ws_shutdown(run.ws); /* a writer stuck on a command that never reads ends */
        if (writing)
                (void)pthread_join(writer, NULL);
        if (r >= 0)
                r = run_result(&run, ret, err);
        strbuf_release(&run.out);
        strbuf_release(&run.errout);
        kube_ws_free(run.ws);
        return r;
}

/* ---- the agent's stream ---- */

struct stream {
        struct kube_ws *ws;
        int version;
        uint64_t ping_ms;
        struct kube_exec_demux d;
        uint8_t *buf;       /* READ_CHUNK: the last chunk read */
        const uint8_t *out; /* stdout bytes of it not yet handed out */
        size_t out_len;
        bool eof;
        struct status_buf status;
        char errtail[KUBE_EXEC_ERRTAIL_MAX + 1];
        size_t errtail_len;
};

static void keep_stderr(struct stream *s, const uint8_t *p, size_t n)
{
        size_t keep = KUBE_EXEC_ERRTAIL_MAX;

        if (n >= keep) {
                memcpy(s->errtail, p + n - keep, keep);
                s->errtail_len = keep;
        } else {
                size_t drop = s->errtail_len + n > keep ? s->errtail_len + n - keep : 0;

                memmove(s->errtail, s->errtail + drop, s->errtail_len - drop);
                memcpy(s->errtail + s->errtail_len - drop, p, n);
                s->errtail_len = s->errtail_len - drop + n;
        }
        s->errtail[s->errtail_len] = '\0';
}

static int stream_sink(int channel, const uint8_t *p, size_t n, bool last, void *userdata)
{
        struct stream *s = userdata;

        switch (channel) {
        case KUBE_EXEC_STDOUT:
                s->out = p;
                s->out_len = n;
                return 0;
        case KUBE_EXEC_STDERR:
                keep_stderr(s, p, n);
                return 0;
        case KUBE_EXEC_ERROR:
                return status_add(&s->status, p, n, last);
        default:
                return -EPROTO;
        }
}

static void stream_end(struct stream *s, const char *why)
{
        struct kube_exec_status st;

        s->eof = true;
        if (s->status.done) {
                int r = kube_exec_status_decode(s->status.data, s->status.len, &st);

                log_debug("exec stream ended: %s (exit %d%s%s)", why, r < 0 ? -1 : st.exit_code,
                          st.message[0] ? ": " : "", st.message);
                (void)kube_ws_close(s->ws, 1000, NULL);
        } else {
                log_debug("exec stream ended: %s", why);
        }
        if (s->errtail_len > 0)
                log_debug("exec stderr: %s", s->errtail);
}

static ssize_t stream_read(void *userdata, void *buf, size_t len)
{
        struct stream *s = userdata;

        for (;;) {
                struct b4_error e = { 0 };
                struct kube_ws_chunk c;
                int r;

                if (s->out_len > 0) {
                        size_t k = len < s->out_len ? len : s->out_len;

                        memcpy(buf, s->out, k);
                        s->out += k;
                        s->out_len -= k;
                        return (ssize_t)k;
                }
                if (s->eof)
                        return 0;
                r = kube_ws_read(s->ws, s->buf, READ_CHUNK, now_msec() + s->ping_ms, -EBADF, &c,
                                 &e);
                if (r == -ETIMEDOUT) {
                        /* idle: keep proxies and the API server's idle timeout away (the
                         * pong is dropped by the reader; a dead peer fails the send) */
                        r = kube_ws_send(s->ws, KUBE_WS_PING, NULL, 0, &e);
                        if (r < 0) {
                                stream_end(s, e.msg);
                                return r;
                        }
                        continue;
                }
                if (r == 0) {
                        stream_end(s, "closed by the server");
                        return 0;
                }
                if (r < 0) {
                        stream_end(s, e.msg);
                        return r;
                }
                r = kube_exec_demux_feed(&s->d, &c, s->buf, stream_sink, s);
                if (r < 0) {
                        stream_end(s, "protocol error");
                        return r;
                }
                if (s->status.done)
                        stream_end(s, "the command ended"); /* stdout before it still goes */
        }
}

static int stream_write(void *userdata, const void *buf, size_t len)
{
        struct stream *s = userdata;
        const uint8_t *p = buf;
        uint8_t chan = KUBE_EXEC_STDIN;

        while (len > 0) {
                size_t k = len < KUBE_EXEC_STDIN_CHUNK ? len : KUBE_EXEC_STDIN_CHUNK;
                struct iovec iov[2] = { { &chan, 1 }, { (void *)p, k } };
                int r = kube_ws_send(s->ws, KUBE_WS_BINARY, iov, 2, NULL);

                if (r < 0)
                        return r;
                p += k;
                len -= k;
        }
        return 0;
}

static void stream_shutdown(void *userdata)
{
        struct stream *s = userdata;

        kube_ws_shutdown(s->ws);
}

static void stream_close(void *userdata)
{
        struct stream *s = userdata;

        kube_ws_free(s->ws);
        free(s->buf);
        free(s);
}

int kube_exec_transport(const struct kube_conn_opts *c,
                        const struct kube_exec_target *t,
                        int cancel_fd,
                        struct agent_transport *ret,
                        struct b4_error *err)
{
        struct stream *s = b4_calloc(1, sizeof(*s));
        int r;

        if (!s || !(s->buf = b4_malloc(READ_CHUNK))) {
                free(s);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        s->d.channel = -1;
        s->ping_ms = c->ping_ms ? c->ping_ms : KUBE_EXEC_PING_MS;
        r = open_exec(c, t, true, cancel_fd, &s->ws, &s->version, err);
        if (r < 0) {
                free(s->buf);
                free(s);
                return r;
        }
        *ret = (struct agent_transport){ .read = stream_read,
                                         .write = stream_write,
                                         .shutdown = stream_shutdown,
                                         .close = stream_close,
                                         .userdata = s };
        return 0;
}
