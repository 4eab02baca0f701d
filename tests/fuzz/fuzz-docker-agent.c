/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the Docker agent transport (src/lib/docker/agent.c): the demultiplexer of a
 * hijacked exec stream (Docker's 8-byte stdout/stderr frames) that carries b4box-agent's
 * replies, then the agent client's handshake over it (src/lib/agent).
 * Trust boundary: the bytes of the agent's exec stream. Docker frames them, but the payload
 * and its amount are the agent's, and the sandbox can replace the agent.
 *
 * The input's first byte says how many of the following bytes arrive with the response head
 * (the transport's pending bytes); the rest come over a socket that then ends. Checked
 * beyond "no crash": a read never returns more than it was asked for, the payload handed on
 * is never more than the input, and the stream always ends (0 or an error, never a hang);
 * the client's handshake over the same bytes returns (it refuses what is not an agent).
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent-client.h"
#include "docker/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

/* A transport over the input: @pending first, then the rest through a socket that ends. */
static int feed(const uint8_t *data, size_t size, struct agent_transport *ret)
{
        size_t np = size ? data[0] : 0;
        char *pending = NULL;
        int sv[2];

        if (size == 0)
                return -EINVAL;
        data++;
        size--;
        if (np > size)
                np = size;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        if (np && !(pending = malloc(np))) {
                close(sv[0]);
                close(sv[1]);
                return -ENOMEM;
        }
        if (np)
                memcpy(pending, data, np);
        /* the socket buffer holds FUZZ_MAX_INPUT: the whole input goes in before reading */
        if (size - np > 0 && write(sv[1], data + np, size - np) != (ssize_t)(size - np))
                abort();
        (void)shutdown(sv[1], SHUT_WR);
        /* the peer stays open (reads as end of stream), so the client's writes go nowhere */
        if (docker_agent_transport(sv[0], pending, np, ret) < 0) {
                close(sv[1]);
                return -ENOMEM;
        }
        close(sv[1]);
        return 0;
}

static void demux(const uint8_t *data, size_t size)
{
        struct agent_transport t;
        size_t total = 0;
        char buf[1000];

        if (feed(data, size, &t) < 0)
                return;
        for (;;) {
                size_t want = 1 + (total % sizeof(buf));
                ssize_t n = t.read(t.userdata, buf, want);

                if (n <= 0)
                        break;
                if ((size_t)n > want)
                        abort();
                total += (size_t)n;
                if (total > size)
                        abort();
        }
        t.close(t.userdata);
}

static void handshake(const uint8_t *data, size_t size)
{
        struct agent_conn_opts o = { .hello_timeout_ms = 2000, .reply_timeout_ms = 2000 };
        struct agent_transport t;
        struct agent_conn *c = NULL;

        if (feed(data, size, &t) < 0)
                return;
        if (agent_conn_open(&t, &o, &c, NULL) == 0)
                agent_conn_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_MAX_INPUT)
                return 0;
        demux(data, size);
        handshake(data, size);
        return 0;
}
