/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes exec over a WebSocket (ws.h): the channel.k8s.io protocol, v5 preferred, v4
 * accepted. Every binary message starts with its channel byte: 0 stdin (client to server),
 * 1 stdout, 2 stderr, 3 the error channel (one Status JSON: the exit code), 4 resize
 * (unused), and in v5 the close signal [255, channel] (the client half-closes stdin with
 * [255, 0]). v4 has no such signal: a command reading stdin sees its end only when the
 * stream closes, so stdin payloads under v4 must be self-delimiting (`head -c N`, the
 * agent's framing). The channel byte is the first payload byte of a message wherever it
 * arrives (an empty first fragment carries none); a 1-byte message is a channel's empty
 * write (the API server's "connection is up" [1]) and is ignored.
 *
 * Two uses:
 *  - kube_exec_run(): one command, stdin from memory, stdout and stderr captured with caps,
 *    the exit code from the Status (bootstrapping b4box-agent, the `sh -s` fallback);
 *  - kube_exec_transport(): a struct agent_transport over one exec's stdin/stdout (stderr
 *    kept, bounded, for diagnostics), so src/lib/agent runs over it as over Docker's stream.
 *
 * Tokens: the caller passes the one to send now (kube_client_token()); a 401 is -EPERM, on
 * which it should drop its cached token (kube_client_token_invalidate()) and retry once, as
 * REST does.
 *
 * Cancel or a timeout closes the stream; the process in the container is not killed by that
 * (the API server ends the exec, the container runtime may let the process live on): kill
 * it through the agent, which owns its commands' trees.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

#include "agent/agent-client.h"
#include "ws.h"

#define KUBE_EXEC_STDIN         0
#define KUBE_EXEC_STDOUT        1
#define KUBE_EXEC_STDERR        2
#define KUBE_EXEC_ERROR         3
#define KUBE_EXEC_RESIZE        4
#define KUBE_EXEC_CLOSE         255
#define KUBE_EXEC_STATUS_MAX    65536u       /* the error channel's Status, at most */
#define KUBE_EXEC_STDIN_CHUNK   (32u * 1024) /* stdin bytes per message (never fragmented) */
#define KUBE_EXEC_ARGV_MAX      (8u * 1024)  /* the exec URL's bytes, at most (proxies) */
#define KUBE_EXEC_ERRTAIL_MAX   4096u        /* stderr kept by the transport */
#define KUBE_EXEC_CLOSE_WAIT_MS 1000u        /* for the server's close after the Status */
#define KUBE_EXEC_PING_MS       15000u       /* a ping after this long without a message */

#define KUBE_EXEC_V5 "v5.channel.k8s.io"
#define KUBE_EXEC_V4 "v4.channel.k8s.io"

struct kube_config;

/**
 * kube_exec_conn_opts() - the connection options of a resolved configuration (kube.h):
 * server, CA, client certificate and key (file or PEM bytes), insecure; with @token (the
 * one kube_client_token() gives now; NULL = none). Everything stays borrowed from @cfg and
 * @token, which must outlive *ret's use.
 */
void kube_exec_conn_opts(const struct kube_config *cfg,
                         const char *token,
                         struct kube_conn_opts *ret);

/* Which exec, on which Pod. Borrowed for the call. */
struct kube_exec_target {
        const char *namespace_name;
        const char *pod;
        const char *container; /* NULL: not named (the Pod's only container) */
        char *const *argv;     /* NULL-terminated, at least argv[0] */
        bool v4_only;          /* offer v4 alone (tests; servers without v5) */
};

/**
 * kube_exec_path() - the request target of an exec:
 * /api/v1/namespaces/NS/pods/POD/exec?command=A&command=B&container=C&stdin=true&stdout=true
 * &stderr=true, every element percent-encoded (one place for it).
 * @with_stdin: whether stdin=true is asked for.
 * Return: 0 with *ret (owned), -EINVAL (a missing or empty field, no argv), -E2BIG (over
 * KUBE_EXEC_ARGV_MAX: bulk data goes on stdin), -ENOMEM.
 */
int kube_exec_path(const struct kube_exec_target *t, bool with_stdin, char **ret);

/* What the error channel said. */
struct kube_exec_status {
        int exit_code;     /* 0..255 */
        char message[512]; /* the Status' message (control characters replaced) */
};

/**
 * kube_exec_status_decode() - the exit code of the error channel's Status @json:
 * {"status":"Success"} is 0; {"status":"Failure","reason":"NonZeroExitCode",
 * "details":{"causes":[{"reason":"ExitCode","message":"N"}]}} is N (0..255).
 * Return: 0 with *ret; -ENOEXEC for any other Failure (the exec failed: e.g. an
 * InternalError "executable file not found"; ret->message holds the server's message and
 * exit_code is 1, as the reference reports it); -EPROTO (not a Status, or NonZeroExitCode
 * without a parsable ExitCode cause).
 */
int kube_exec_status_decode(const char *json, size_t len, struct kube_exec_status *ret);

/* The channel demultiplexer: feed it kube_ws_read()'s chunks, it says where bytes go. */
struct kube_exec_demux {
        int channel; /* the current message's channel; -1 before its first byte */
        bool in_message;
};

/* One piece of a message for one channel (@data is within the chunk fed). */
typedef int kube_exec_sink_fn(
        int channel, const uint8_t *data, size_t len, bool last, void *userdata);

/**
 * kube_exec_demux_feed() - route one chunk: its bytes after the channel byte go to @sink
 * with the channel (a message with no byte at all is dropped; the channel byte alone is
 * delivered as an empty piece with @last when it ends the message).
 * Return: 0, -EPROTO (a text message), or the first negative return of @sink.
 */
int kube_exec_demux_feed(struct kube_exec_demux *d,
                         const struct kube_ws_chunk *c,
                         const uint8_t *buf,
                         kube_exec_sink_fn *sink,
                         void *userdata);

/* ---- one command ---- */

struct kube_exec_run_opts {
        const void *stdin_data; /* NULL: no stdin asked for (stdin=false) */
        size_t stdin_len;       /* sent in KUBE_EXEC_STDIN_CHUNK messages, then (v5) closed */
        size_t output_cap;      /* per stream; the first output_cap bytes kept; 0 = 1 MiB */
        uint64_t timeout_ms;    /* the whole exec; 0 = none */
        int cancel_fd;          /* readable = give up; -EBADF = none */
};

struct kube_exec_result {
        int exit_code;  /* from the Status; 1 when the stream closed without one */
        bool no_status; /* the stream ended without a Status (exit_code 1) */
        char *out;      /* owned, NUL-terminated past out_len */
        size_t out_len;
        char *errout; /* owned, NUL-terminated past errout_len */
        size_t errout_len;
        bool truncated; /* a stream went past output_cap */
        int version;    /* 5 or 4: the protocol the server chose */
};

void kube_exec_result_clear(struct kube_exec_result *r);

/**
 * kube_exec_run() - run @t->argv in the Pod and wait for its end
 * A non-zero exit is a result. Return: 0 with *ret filled (kube_exec_result_clear()), or
 * -errno: the upgrade's errors (kube_ws_connect()), -ENOEXEC (the exec failed: message
 * set), -EPROTO (a protocol breach: an unknown channel, a malformed Status, a text
 * message), -ETIMEDOUT, -ECANCELED, -ECONNRESET (the stream broke mid-way), -ENOMEM.
 * On error *ret is empty.
 */
int kube_exec_run(const struct kube_conn_opts *c,
                  const struct kube_exec_target *t,
                  const struct kube_exec_run_opts *o,
                  struct kube_exec_result *ret,
                  struct b4_error *err);

/* ---- a long-lived stream ---- */

/**
 * kube_exec_transport() - start @t->argv (stdin, stdout and stderr attached) and make its
 * stdin/stdout the byte stream of *ret: write sends stdin messages, read returns stdout's
 * bytes, stderr's last KUBE_EXEC_ERRTAIL_MAX bytes are kept and logged (debug) at the end,
 * the error channel's Status ends the stream (read returns 0; a non-zero exit is logged),
 * a ping goes out after KUBE_EXEC_PING_MS without a message (idle timeouts of proxies and
 * the API server's 4 h).
 * Any other channel or a breach fails the read -EPROTO. The transport's shutdown shuts the
 * socket down (the API server ends the exec; the agent sees the end of its stdin, v4 or
 * v5) and its close frees. Give *ret to agent_conn_open(), which owns it.
 * @cancel_fd: for the upgrade only (-EBADF = none).
 * Return: 0, or the errors of kube_ws_connect(), -EINVAL/-E2BIG (kube_exec_path()).
 */
int kube_exec_transport(const struct kube_conn_opts *c,
                        const struct kube_exec_target *t,
                        int cancel_fd,
                        struct agent_transport *ret,
                        struct b4_error *err);
