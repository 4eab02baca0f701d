/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exec protocol (src/lib/kube/exec.c): the exec URL, the error channel's Status -> exit
 * code table, the channel demultiplexer (a first byte in a later fragment, a channel's
 * empty write), and kube_exec_run() / kube_exec_transport() against a scripted API server
 * side on 127.0.0.1 (kube-ws-peer.c): v5 with stdin and its close signal, v4 without, a
 * stream without a Status, a failed exec, an unknown channel, the output cap, the timeout;
 * and a real b4box-agent behind the peer, spoken to through agent_conn over the transport.
 */

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "kube-ws-peer.h"
#include "kube/exec.h"

/* ---- the URL ---- */

static void test_path(void **state)
{
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)"cat; exit 3", (char *)"a&b=c+d",
                         NULL };
        struct kube_exec_target t = { .namespace_name = "b4-sandboxes",
                                      .pod = "b4-sbx-1",
                                      .container = "sandbox",
                                      .argv = argv };
        char *p = NULL;
        static char big[KUBE_EXEC_ARGV_MAX];
        char *huge[] = { big, NULL };

        assert_int_equal(kube_exec_path(&t, true, &p), 0);
        assert_string_equal(p, "/api/v1/namespaces/b4-sandboxes/pods/b4-sbx-1/exec?command=sh&"
                               "command=-c&command=cat%3B%20exit%203&command=a%26b%3Dc%2Bd&"
                               "container=sandbox&stdin=true&stdout=true&stderr=true");
        free(p);
        t.container = NULL;
        assert_int_equal(kube_exec_path(&t, false, &p), 0);
        assert_null(strstr(p, "container=") ? p : NULL);
        assert_null(strstr(p, "stdin=") ? p : NULL);
        free(p);
        memset(big, 'x', sizeof(big) - 1);
        t.argv = huge;
        assert_int_equal(kube_exec_path(&t, false, &p), -E2BIG);
        t.argv = argv;
        t.pod = "";
        assert_int_equal(kube_exec_path(&t, false, &p), -EINVAL);
        t.pod = "p";
        t.argv = (char *[]){ NULL };
        assert_int_equal(kube_exec_path(&t, false, &p), -EINVAL);
}

/* ---- the Status table ---- */

static const char *nonzero(const char *cause)
{
        static char buf[512];

        (void)snprintf(buf, sizeof(buf),
                       "{\"metadata\":{},\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\","
                       "\"message\":\"command terminated with non-zero exit code\","
                       "\"details\":{\"causes\":[%s]}}",
                       cause);
        return buf;
}

static int decode(const char *json, int *ret_code)
{
        struct kube_exec_status st;
        int r = kube_exec_status_decode(json, strlen(json), &st);

        *ret_code = st.exit_code;
        return r;
}

static void test_status(void **state)
{
        struct kube_exec_status st;
        int code = -1;

        assert_int_equal(decode("{\"metadata\":{},\"status\":\"Success\"}", &code), 0);
        assert_int_equal(code, 0);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"3\"}"), &code), 0);
        assert_int_equal(code, 3);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"255\"}"), &code),
                         0);
        assert_int_equal(code, 255);
        /* another cause first is skipped */
        assert_int_equal(decode(nonzero("{\"reason\":\"Other\",\"message\":\"x\"},"
                                        "{\"reason\":\"ExitCode\",\"message\":\"0\"}"),
                                &code),
                         0);
        assert_int_equal(code, 0);
        /* NonZeroExitCode without a parsable ExitCode (client-go: ParseUint(msg, 10, 8)) */
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"256\"}"), &code),
                         -EPROTO);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"-1\"}"), &code),
                         -EPROTO);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"+3\"}"), &code),
                         -EPROTO);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":\"\"}"), &code),
                         -EPROTO);
        assert_int_equal(decode(nonzero("{\"reason\":\"ExitCode\",\"message\":3}"), &code),
                         -EPROTO);
        assert_int_equal(decode(nonzero(""), &code), -EPROTO);
        /* any other failure: the exec failed, with the server's words */
        const char *internal = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal "
                               "error occurred: error executing command in container: "
                               "executable file not found in $PATH\",\"reason\":"
                               "\"InternalError\",\"details\":{\"causes\":[{\"message\":"
                               "\"not found\"}]},\"code\":500}";
        assert_int_equal(kube_exec_status_decode(internal, strlen(internal), &st), -ENOEXEC);
        assert_int_equal(st.exit_code, 1);
        assert_non_null(strstr(st.message, "executable file not found"));
        /* not a Status */
        assert_int_equal(decode("", &code), -EPROTO);
        assert_int_equal(decode("[]", &code), -EPROTO);
        assert_int_equal(decode("{\"status\":\"Maybe\"}", &code), -EPROTO);
        assert_int_equal(decode("{\"status\":\"Success\"", &code), -EPROTO);
}

/* ---- the demultiplexer ---- */

struct sunk {
        char data[4][64];
        size_t len[4];
        int lasts[4];
        int calls;
};

static int sink(int channel, const uint8_t *p, size_t n, bool last, void *userdata)
{
        struct sunk *s = userdata;

        if (channel > 3)
                return -EPROTO;
        memcpy(s->data[channel] + s->len[channel], p, n);
        s->len[channel] += n;
        s->lasts[channel] += last;
        s->calls++;
        return 0;
}

static int feed(struct kube_exec_demux *d,
                struct sunk *s,
                const char *bytes,
                size_t n,
                bool first,
                bool last)
{
        struct kube_ws_chunk c = { .op = KUBE_WS_BINARY, .len = n, .first = first, .last = last };

        return kube_exec_demux_feed(d, &c, (const uint8_t *)bytes, sink, s);
}

static void test_demux(void **state)
{
        struct kube_exec_demux d = { .channel = -1 };
        struct sunk s = { 0 };
        struct kube_ws_chunk text = { .op = KUBE_WS_TEXT, .len = 1, .first = true, .last = true };

        /* the channel byte in the first fragment, the rest in others */
        assert_int_equal(feed(&d, &s, "\x01he", 3, true, false), 0);
        assert_int_equal(feed(&d, &s, "llo", 3, false, true), 0);
        /* an empty first fragment: the channel byte comes with the next one */
        assert_int_equal(feed(&d, &s, "", 0, true, false), 0);
        assert_int_equal(feed(&d, &s, "\x02", 1, false, false), 0);
        assert_int_equal(feed(&d, &s, "oops", 4, false, true), 0);
        /* the "connection is up" empty write [1]; a message with no byte at all */
        assert_int_equal(feed(&d, &s, "\x01", 1, true, true), 0);
        assert_int_equal(feed(&d, &s, "", 0, true, true), 0);
        /* the status */
        assert_int_equal(feed(&d, &s, "\x03{}", 3, true, true), 0);
        assert_int_equal(s.len[1], 5);
        assert_memory_equal(s.data[1], "hello", 5);
        assert_int_equal(s.len[2], 4);
        assert_memory_equal(s.data[2], "oops", 4);
        assert_int_equal(s.lasts[1], 2); /* "hello" and the empty write */
        assert_int_equal(s.len[3], 2);
        /* the sink's refusal and a text message */
        assert_int_equal(feed(&d, &s, "\x07x", 2, true, true), -EPROTO);
        assert_int_equal(kube_exec_demux_feed(&d, &text, (const uint8_t *)"\x01", sink, &s),
                         -EPROTO);
}

/* ---- a scripted API server ---- */

enum script {
        V5_STDIN,     /* echo stdin back, stderr "warn", exit 3 */
        V4_FRAGMENTS, /* v4 only: stdout in fragments, Success */
        NO_STATUS,
        INTERNAL,
        BAD_CHANNEL,
        FLOOD, /* 100 bytes of stdout */
        SILENT,
        NO_PROTOCOL,
        BIG_STDIN, /* count stdin bytes, check message sizes */
        NO_READ,   /* the Status at once, then neither reads nor closes */
};

struct exec_server {
        enum script script;
        int listen_fd, port;
        pthread_t thread;
        char url[64];
        struct peer_request req;
        char protocols[256];
        size_t stdin_bytes;
        size_t biggest_stdin;
        bool saw_close_signal;
        bool saw_close_frame;
        int hold[2]; /* SILENT: waits here */
};

static void send_status_nonzero(int fd, int code)
{
        char buf[512];

        (void)snprintf(buf, sizeof(buf),
                       "\x03{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command "
                       "terminated with non-zero exit code: exit status %d\",\"reason\":"
                       "\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
                       "\"message\":\"%d\"}]}}",
                       code, code);
        peer_send_frame(fd, true, KUBE_WS_BINARY, buf, strlen(buf));
}

static const char success[] = "\x03{\"metadata\":{},\"status\":\"Success\"}";

/* Read client frames until the close signal (v5) or @want stdin bytes: the bytes in @buf. */
static size_t read_stdin(int fd, struct exec_server *s, char *buf, size_t cap, size_t want)
{
        size_t len = 0;

        for (;;) {
                struct peer_frame f;

                if (want && s->stdin_bytes >= want)
                        return len;
                PEER_CHECK(peer_recv_frame(fd, &f) == 0);
                PEER_CHECK(f.op == KUBE_WS_BINARY && f.len >= 1);
                if (f.data[0] == 255) {
                        PEER_CHECK(f.len == 2 && f.data[1] == 0);
                        s->saw_close_signal = true;
                        free(f.data);
                        return len;
                }
                PEER_CHECK(f.data[0] == 0);
                s->stdin_bytes += f.len - 1;
                if (f.len - 1 > s->biggest_stdin)
                        s->biggest_stdin = f.len - 1;
                if (len + f.len - 1 <= cap) {
                        memcpy(buf + len, f.data + 1, f.len - 1);
                        len += f.len - 1;
                }
                free(f.data);
        }
}

/* The close handshake from the server's side. */
static void server_close(int fd, struct exec_server *s)
{
        struct peer_frame f;

        peer_send_frame(fd, true, KUBE_WS_CLOSE, "\x03\xe8", 2);
        while (peer_recv_frame(fd, &f) == 0) {
                bool close = f.op == KUBE_WS_CLOSE;

                free(f.data);
                if (close) {
                        s->saw_close_frame = true;
                        return;
                }
        }
}

static void run_script(int fd, struct exec_server *s)
{
        static char buf[300 * 1024];
        size_t n;

        switch (s->script) {
        case V5_STDIN:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                peer_send_frame(fd, true, KUBE_WS_BINARY, "\x01", 1); /* connection up */
                n = read_stdin(fd, s, buf + 1, 1024, 0);
                buf[0] = 1;
                peer_send_frame(fd, true, KUBE_WS_BINARY, buf, n + 1);
                peer_send_frame(fd, true, KUBE_WS_BINARY, "\x02warn", 5);
                send_status_nonzero(fd, 3);
                server_close(fd, s);
                return;
        case V4_FRAGMENTS:
                peer_upgrade(fd, &s->req, "v4.channel.k8s.io", NULL);
                peer_send_frame(fd, false, KUBE_WS_BINARY, "", 0);
                peer_send_frame(fd, false, KUBE_WS_CONT, "\x01hel", 4);
                peer_send_frame(fd, true, KUBE_WS_PING, "k", 1);
                peer_send_frame(fd, true, KUBE_WS_CONT, "lo", 2);
                peer_send_frame(fd, true, KUBE_WS_BINARY, success, sizeof(success) - 1);
                server_close(fd, s);
                return;
        case NO_STATUS:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                peer_send_frame(fd, true, KUBE_WS_BINARY, "\x01partial", 8);
                server_close(fd, s);
                return;
        case INTERNAL: {
                const char *st = "\x03{\"metadata\":{},\"status\":\"Failure\",\"message\":\"exec: "
                                 "\\\"nope\\\": executable file not found in $PATH\",\"reason\":"
                                 "\"InternalError\",\"code\":500}";
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                peer_send_frame(fd, true, KUBE_WS_BINARY, st, strlen(st));
                server_close(fd, s);
                return;
        }
        case BAD_CHANNEL:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                peer_send_frame(fd, true, KUBE_WS_BINARY, "\x07x", 2);
                (void)peer_recv_frame(fd, &(struct peer_frame){ 0 });
                return;
        case FLOOD:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                memset(buf, 'y', 101);
                buf[0] = 1;
                peer_send_frame(fd, true, KUBE_WS_BINARY, buf, 101);
                peer_send_frame(fd, true, KUBE_WS_BINARY, success, sizeof(success) - 1);
                server_close(fd, s);
                return;
        case SILENT:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                if (read(s->hold[0], buf, 1) < 0)
                        return;
                return;
        case NO_PROTOCOL:
                peer_upgrade(fd, &s->req, NULL, NULL);
                return;
        case NO_READ:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                peer_send_frame(fd, true, KUBE_WS_BINARY, success, sizeof(success) - 1);
                if (read(s->hold[0], buf, 1) < 0)
                        return;
                return;
        case BIG_STDIN:
                peer_upgrade(fd, &s->req, "v5.channel.k8s.io", NULL);
                (void)read_stdin(fd, s, buf, 0, 0);
                send_status_nonzero(fd, 0 + 7);
                server_close(fd, s);
                return;
        }
}

static void *exec_serve(void *userdata)
{
        struct exec_server *s = userdata;
        int fd = peer_accept(s->listen_fd);

        if (peer_read_request(fd, &s->req) == 0) {
                (void)peer_header(&s->req, "Sec-WebSocket-Protocol", s->protocols,
                                  sizeof(s->protocols));
                run_script(fd, s);
        }
        close(fd);
        return NULL;
}

static void exec_start(struct exec_server *s, enum script script)
{
        memset(s, 0, sizeof(*s));
        s->script = script;
        assert_int_equal(pipe(s->hold), 0);
        s->listen_fd = peer_listen(&s->port);
        (void)snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
        assert_int_equal(pthread_create(&s->thread, NULL, exec_serve, s), 0);
}

static void exec_stop(struct exec_server *s)
{
        assert_int_equal(write(s->hold[1], "x", 1), 1);
        assert_int_equal(pthread_join(s->thread, NULL), 0);
        close(s->listen_fd);
        close(s->hold[0]);
        close(s->hold[1]);
}

static char *argv_cat[] = { (char *)"sh", (char *)"-c", (char *)"cat; exit 3", NULL };

static int run(struct exec_server *s,
               bool v4_only,
               const struct kube_exec_run_opts *o,
               struct kube_exec_result *res,
               struct b4_error *err)
{
        struct kube_conn_opts c = { .server = s->url, .token = "t", .timeout_ms = 5000 };
        struct kube_exec_target t = { .namespace_name = "ns",
                                      .pod = "p",
                                      .container = "sandbox",
                                      .argv = argv_cat,
                                      .v4_only = v4_only };

        return kube_exec_run(&c, &t, o, res, err);
}

static void test_run_v5_stdin(void **state)
{
        struct exec_server s;
        struct kube_exec_result res;
        struct b4_error err = { 0 };
        struct kube_exec_run_opts o = { .stdin_data = "hello stdin",
                                        .stdin_len = 11,
                                        .cancel_fd = -EBADF };

        exec_start(&s, V5_STDIN);
        assert_int_equal(run(&s, false, &o, &res, &err), 0);
        exec_stop(&s);
        assert_int_equal(res.exit_code, 3);
        assert_int_equal(res.version, 5);
        assert_false(res.no_status || res.truncated);
        assert_string_equal(res.out, "hello stdin");
        assert_string_equal(res.errout, "warn");
        assert_true(s.saw_close_signal && s.saw_close_frame);
        assert_string_equal(s.protocols, "v5.channel.k8s.io, v4.channel.k8s.io");
        assert_non_null(strstr(s.req.target, "&stdin=true&stdout=true&stderr=true"));
        kube_exec_result_clear(&res);
}

static void test_run_v4(void **state)
{
        struct exec_server s;
        struct kube_exec_result res;
        struct kube_exec_run_opts o = { .cancel_fd = -EBADF };

        exec_start(&s, V4_FRAGMENTS);
        assert_int_equal(run(&s, true, &o, &res, NULL), 0);
        exec_stop(&s);
        assert_string_equal(s.protocols, "v4.channel.k8s.io");
        assert_null(strstr(s.req.target, "stdin=") ? s.req.target : NULL);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.version, 4);
        assert_string_equal(res.out, "hello");
        assert_int_equal(res.errout_len, 0);
        assert_true(s.saw_close_frame);
        kube_exec_result_clear(&res);
}

static void test_run_failures(void **state)
{
        struct exec_server s;
        struct kube_exec_result res;
        struct b4_error err = { 0 };
        struct kube_exec_run_opts o = { .cancel_fd = -EBADF };
        uint64_t t0;

        /* a stream without a Status: exit 1, said so */
        exec_start(&s, NO_STATUS);
        assert_int_equal(run(&s, false, &o, &res, NULL), 0);
        exec_stop(&s);
        assert_true(res.no_status && res.exit_code == 1);
        assert_string_equal(res.out, "partial");
        kube_exec_result_clear(&res);
        /* the exec itself failed: a named error with the server's message */
        exec_start(&s, INTERNAL);
        assert_int_equal(run(&s, false, &o, &res, &err), -ENOEXEC);
        exec_stop(&s);
        assert_non_null(strstr(err.msg, "executable file not found"));
        assert_null(res.out);
        /* a channel that does not exist */
        exec_start(&s, BAD_CHANNEL);
        assert_int_equal(run(&s, false, &o, &res, &err), -EPROTO);
        exec_stop(&s);
        /* no channel subprotocol chosen */
        exec_start(&s, NO_PROTOCOL);
        assert_int_equal(run(&s, false, &o, &res, &err), -EPROTO);
        exec_stop(&s);
        /* the output cap: the first bytes kept */
        o.output_cap = 10;
        exec_start(&s, FLOOD);
        assert_int_equal(run(&s, false, &o, &res, &err), 0);
        exec_stop(&s);
        assert_true(res.truncated && res.out_len == 10);
        kube_exec_result_clear(&res);
        /* the timeout */
        o.timeout_ms = 150;
        exec_start(&s, SILENT);
        t0 = now_msec();
        assert_int_equal(run(&s, false, &o, &res, &err), -ETIMEDOUT);
        assert_true(now_msec() - t0 < 3000);
        exec_stop(&s);
}

static void test_run_big_stdin(void **state)
{
        struct exec_server s;
        struct kube_exec_result res;
        static char data[200 * 1024 + 3];
        struct kube_exec_run_opts o = { .stdin_data = data,
                                        .stdin_len = sizeof(data),
                                        .cancel_fd = -EBADF };

        exec_start(&s, BIG_STDIN);
        assert_int_equal(run(&s, false, &o, &res, NULL), 0);
        exec_stop(&s);
        assert_int_equal(res.exit_code, 7);
        assert_int_equal(s.stdin_bytes, sizeof(data));
        assert_int_equal(s.biggest_stdin, KUBE_EXEC_STDIN_CHUNK);
        assert_true(s.saw_close_signal);
        kube_exec_result_clear(&res);
}

/* A command that ends without reading its stdin, on a server that then reads nothing: the
 * stdin writer is stuck in backpressure, and the end must not wait for it. */
static void test_run_unread_stdin(void **state)
{
        struct exec_server s;
        struct kube_exec_result res;
        size_t len = 16u * 1024 * 1024;
        char *data = calloc(1, len);
        struct kube_exec_run_opts o = { .stdin_data = data, .stdin_len = len, .cancel_fd = -EBADF };
        uint64_t t0 = now_msec();

        assert_non_null(data);
        exec_start(&s, NO_READ);
        assert_int_equal(run(&s, false, &o, &res, NULL), 0);
        assert_true(now_msec() - t0 < 5000);
        assert_int_equal(res.exit_code, 0);
        exec_stop(&s);
        kube_exec_result_clear(&res);
        free(data);
}

/* ---- b4box-agent behind the peer ---- */

struct bridge {
        int listen_fd, port;
        pthread_t thread;
        char root[256];
        char url[64];
        bool fragment; /* split stdout messages: an empty first fragment, then the rest */
        int pings;     /* received from the client */
};

/* One stdout piece from the agent as a channel-1 message. */
static void forward_stdout(int fd, const uint8_t *p, size_t n, bool fragment)
{
        static uint8_t msg[65537];

        if (fragment) {
                peer_send_frame(fd, false, KUBE_WS_BINARY, "", 0);
                peer_send_frame(fd, false, KUBE_WS_CONT, "\x01", 1);
                peer_send_frame(fd, true, KUBE_WS_CONT, p, n);
                return;
        }
        msg[0] = 1;
        memcpy(msg + 1, p, n);
        peer_send_frame(fd, true, KUBE_WS_BINARY, msg, n + 1);
}

/* Run the agent with pipes; pump WebSocket stdin to it and its stdout back, until the
 * client's close; then the Status. */
static void bridge_agent(int fd, struct bridge *b)
{
        int in[2], out[2];
        pid_t pid;
        const char *agent = getenv("B4BOX_AGENT"); /* checksrc: allow */
        static uint8_t buf[65536];

        PEER_CHECK(agent && pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
        pid = fork();
        PEER_CHECK(pid >= 0);
        if (pid == 0) {
                dup2(in[0], 0);  /* checksrc: allow */
                dup2(out[1], 1); /* checksrc: allow */
                execl(agent, agent, "--root", b->root, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        for (;;) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                                       { .fd = out[0], .events = POLLIN } };

                PEER_CHECK(poll(p, 2, 10000) > 0);
                if (p[1].revents) {
                        ssize_t n = read(out[0], buf, sizeof(buf));

                        if (n <= 0)
                                break;
                        forward_stdout(fd, buf, (size_t)n, b->fragment);
                }
                if (p[0].revents) {
                        struct peer_frame f;

                        if (peer_recv_frame(fd, &f) < 0)
                                break;
                        if (f.op == KUBE_WS_CLOSE) {
                                free(f.data);
                                break;
                        }
                        if (f.op == KUBE_WS_PING) {
                                b->pings++;
                                peer_send_frame(fd, true, KUBE_WS_PONG, f.data, f.len);
                                free(f.data);
                                continue;
                        }
                        PEER_CHECK(f.op == KUBE_WS_BINARY && f.len >= 1 && f.data[0] == 0);
                        PEER_CHECK(write(in[1], f.data + 1, f.len - 1) == (ssize_t)(f.len - 1));
                        free(f.data);
                }
        }
        close(in[1]);
        close(out[0]);
        PEER_CHECK(waitpid(pid, NULL, 0) == pid);
}

static void *bridge_serve(void *userdata)
{
        struct bridge *b = userdata;
        int fd = peer_accept(b->listen_fd);
        struct peer_request req;

        if (peer_read_request(fd, &req) == 0) {
                PEER_CHECK(strstr(req.target, "command=b4box-agent&stdin=true"));
                peer_upgrade(fd, &req, "v5.channel.k8s.io", NULL);
                bridge_agent(fd, b);
        }
        close(fd);
        return NULL;
}

static void agent_session(bool fragment)
{
        char *tmp = b4_test_tmpdir();
        struct bridge b = { .fragment = fragment };
        struct kube_conn_opts c = { .timeout_ms = 5000, .ping_ms = 40 };
        char *argv[] = { (char *)"b4box-agent", NULL };
        struct kube_exec_target t = { .namespace_name = "ns", .pod = "p", .argv = argv };
        struct agent_transport tr;
        struct agent_conn *conn = NULL;
        struct b4_error err = { 0 };
        struct b4_exec_result res = { 0 };
        char *data = NULL;
        size_t len = 0;

        (void)snprintf(b.root, sizeof(b.root), "%s", tmp);
        b.listen_fd = peer_listen(&b.port);
        (void)snprintf(b.url, sizeof(b.url), "http://127.0.0.1:%d", b.port);
        c.server = b.url;
        assert_int_equal(pthread_create(&b.thread, NULL, bridge_serve, &b), 0);
        assert_int_equal(kube_exec_transport(&c, &t, -EBADF, &tr, &err), 0);
        assert_int_equal(agent_conn_open(&tr, NULL, &conn, &err), 0);
        assert_int_equal(agent_write_file(conn, "/f.txt", 0, "over ws", 7, &err), 0);
        assert_int_equal(agent_read_file(conn, "/f.txt", 0, 1024, &data, &len, &err), 0);
        assert_int_equal(len, 7);
        assert_memory_equal(data, "over ws", 7);
        free(data);
        assert_int_equal(agent_exec(conn,
                                    &(struct agent_exec_req){ .command = "echo hi; exit 3",
                                                              .cwd = "/",
                                                              .output_cap = 4096 },
                                    &res, &err),
                         0);
        assert_int_equal(res.exit_code, 3);
        assert_string_equal(res.out, "hi\n");
        b4_exec_result_clear(&res);
        /* idle: pings keep the stream alive, and it still works after them */
        usleep(300 * 1000);
        assert_int_equal(agent_write_file(conn, "/g.txt", 0, "x", 1, &err), 0);
        agent_conn_free(conn);
        assert_int_equal(pthread_join(b.thread, NULL), 0);
        assert_true(b.pings >= 3);
        close(b.listen_fd);
        b4_test_rmrf(tmp);
        free(tmp);
}

static void test_agent_transport(void **state)
{
        agent_session(false);
        agent_session(true);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_demux),
                cmocka_unit_test(test_run_v5_stdin),
                cmocka_unit_test(test_run_v4),
                cmocka_unit_test(test_run_failures),
                cmocka_unit_test(test_run_big_stdin),
                cmocka_unit_test(test_run_unread_stdin),
                cmocka_unit_test(test_agent_transport),
        };

        signal(SIGPIPE, SIG_IGN); /* checksrc: allow */
        return cmocka_run_group_tests(tests, NULL, NULL);
}
