/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the host side of the keeper protocol, exec_run() of src/lib/native/exec.c.
 * Trust boundary: the keeper is PID 1 of the sandbox, so a compromised sandbox controls every
 * byte of its replies and of the command's stdout/stderr; the host must survive any of them.
 *
 * A thread plays the keeper over a real socketpair: it parses the host's request with the
 * keeper's own recv_header()/read_body() (keeper-main.c, included with main() renamed; the
 * host's request must always be accepted), writes the fuzzed stdout and stderr to the pipes
 * it received, then the fuzzed reply bytes, and hangs up. Input: bytes 0-1 and 2-3 are the
 * stdout and stderr lengths (little endian, cut to what is left), then stdout, stderr and the
 * reply stream (struct keeper_msg records, any length). A result must be consistent with what
 * was sent; a failure must carry a message.
 */

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "b4box/provider.h"

#include "native/native.h"

int keeper_main(void);
#define main keeper_main
#include "keeper-main.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT  (64 * 1024)
#define FUZZ_OUTPUT_CAP 64

struct script {
        int sock;
        const uint8_t *out, *errout, *reply;
        size_t out_len, err_len, reply_len;
};

static void write_all(int fd, const uint8_t *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w <= 0)
                        return;
                p += w;
                n -= (size_t)w;
        }
}

static void *keeper_thread(void *arg)
{
        struct script *s = arg;
        struct req r = { .out_fd = -1, .err_fd = -1, .cg_fd = -1 };

        if (recv_header(s->sock, &r) < 0 || read_body(s->sock, &r) < 0)
                abort(); /* the host wrote a request its own keeper refuses */
        write_all(r.out_fd, s->out, s->out_len);
        write_all(r.err_fd, s->errout, s->err_len);
        req_release(&r); /* closes the pipes: EOF for the host */
        write_all(s->sock, s->reply, s->reply_len);
        (void)close(s->sock);
        return NULL;
}

static size_t take_len(const uint8_t *p, size_t *left)
{
        size_t n = (size_t)p[0] | (size_t)p[1] << 8;

        n = n < *left ? n : *left;
        *left -= n;
        return n;
}

static void check_result(const struct script *s, const struct b4_exec_result *res)
{
        if (res->exit_code < 0 || res->exit_code > 255 || res->timed_out || res->cancelled)
                abort();
        if (s->out_len <= FUZZ_OUTPUT_CAP &&
            (res->out_len != s->out_len || memcmp(res->out, s->out, s->out_len) != 0))
                abort();
        if (s->err_len <= FUZZ_OUTPUT_CAP &&
            (res->errout_len != s->err_len || memcmp(res->errout, s->errout, s->err_len) != 0))
                abort();
        if ((s->out_len > FUZZ_OUTPUT_CAP || s->err_len > FUZZ_OUTPUT_CAP) != res->truncated)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* The host may close the output pipes before the fake keeper has written everything
         * (a fuzzed EXITED first): that write must fail EPIPE, as a real command's would be
         * killed, not kill the fuzzer. */
        static bool ignoring;
        if (!ignoring) {
                (void)signal(SIGPIPE, SIG_IGN);
                ignoring = true;
        }
        struct exec_spec spec = { .command = "true",
                                  .cwd = "/workspace",
                                  .cg_fd = -EBADF,
                                  .output_cap = FUZZ_OUTPUT_CAP };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct script s = { 0 };
        pthread_t th;
        size_t left;
        int sv[2], r;

        if (size < 4 || size > FUZZ_MAX_INPUT)
                return 0;
        left = size - 4;
        s.out_len = take_len(data, &left);
        s.err_len = take_len(data + 2, &left);
        s.out = data + 4;
        s.errout = s.out + s.out_len;
        s.reply = s.errout + s.err_len;
        s.reply_len = left;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        s.sock = sv[1];
        if (pthread_create(&th, NULL, keeper_thread, &s) != 0) {
                (void)close(sv[0]);
                (void)close(sv[1]);
                return 0;
        }
        r = exec_run(sv[0], &spec, &res, &err); /* takes sv[0] */
        (void)pthread_join(th, NULL);
        if (r < 0 && (err.error != r || !err.msg[0]))
                abort();
        if (r >= 0)
                check_result(&s, &res);
        b4_exec_result_clear(&res);
        return 0;
}
