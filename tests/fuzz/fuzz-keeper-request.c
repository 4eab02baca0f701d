/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the keeper's request parser, version 1 and 2 (background: the fds, the
 * timeout after the environment) (recv_header() and read_body() of
 * src/keeper/keeper-main.c, included here with its main() renamed, since the keeper is a
 * standalone libc-only program). Trust boundary: the keeper runs as PID 1 inside the sandbox
 * and parses every request that reaches its socket.
 *
 * Input: byte 0 = how many fds ride along (low 2 bits, +1 with bit 2) and whether the magic
 * and version are forced valid (bit 3, so the fuzzer gets past them), then a struct
 * keeper_req_hdr, then the body. Both go through a real socketpair. An accepted request must
 * respect the header's limits and have every string inside the received body.
 */

#include <stdint.h>

int keeper_main(void);
#define main keeper_main
#include "keeper-main.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

static bool inside(const struct req *r, const char *s)
{
        return s >= r->mem && s < r->mem + r->mem_len && memchr(s, '\0', r->mem + r->mem_len - s);
}

/* An accepted header keeps the protocol's limits, so read_body() allocates a bounded size. */
static void check_header(const struct req *r)
{
        if ((uint64_t)r->h.n_argv + r->h.n_env > KEEPER_ARGS_MAX || r->h.n_argv < 1 ||
            r->h.bpf_len > KEEPER_BPF_MAX || r->h.data_len > KEEPER_REQ_MAX)
                abort();
}

static void check_request(const struct req *r)
{
        if (r->out_fd < 0 || r->err_fd < 0 ||
            ((r->h.flags & KEEPER_CGROUP) != 0) != (r->cg_fd >= 0) ||
            ((r->h.flags & KEEPER_STDIN) != 0) != (r->in_fd >= 0))
                abort();
        /* background (version 2) only: never on a version 1 request, stdin only with it */
        if ((r->h.flags & (KEEPER_BACKGROUND | KEEPER_STDIN)) &&
            (r->h.version < 2 || !(r->h.flags & KEEPER_BACKGROUND)))
                abort();
        if (!(r->h.flags & KEEPER_BACKGROUND) && r->timeout_ms)
                abort();
        if (!inside(r, r->cwd) || r->argv[r->h.n_argv] || r->envp[r->h.n_env])
                abort();
        for (uint32_t i = 0; i < r->h.n_argv; i++)
                if (!inside(r, r->argv[i]))
                        abort();
        for (uint32_t i = 0; i < r->h.n_env; i++)
                if (!inside(r, r->envp[i]))
                        abort();
}

static int send_request(int sock, const struct keeper_req_hdr *h, size_t nfd)
{
        static int null_fd = -1;
        int fds[4];
        char cbuf[CMSG_SPACE(sizeof(fds))] = { 0 };
        struct iovec iov = { .iov_base = (void *)h, .iov_len = sizeof(*h) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (null_fd < 0)
                null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nfd) {
                struct cmsghdr *c = (struct cmsghdr *)(void *)cbuf;

                for (size_t i = 0; i < nfd; i++)
                        fds[i] = null_fd;
                mh.msg_control = cbuf;
                mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
                memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*h) ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct req r = { .out_fd = -1, .err_fd = -1, .cg_fd = -1, .in_fd = -1 };
        struct keeper_req_hdr h;
        size_t nfd, body;
        int sv[2];

        if (size < 1 + sizeof(h) || size > FUZZ_MAX_INPUT)
                return 0;
        memcpy(&h, data + 1, sizeof(h));
        nfd = (data[0] & 3) + ((data[0] & 4) ? 1 : 0);
        if (data[0] & 8) {
                h.magic = KEEPER_MAGIC;
                h.version = KEEPER_PROTO_VERSION;
        }
        body = size - 1 - sizeof(h);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        if (send_request(sv[1], &h, nfd) == 0 &&
            (body == 0 || send(sv[1], data + 1 + sizeof(h), body, MSG_NOSIGNAL) == (ssize_t)body)) {
                (void)shutdown(sv[1], SHUT_WR);
                if (recv_header(sv[0], &r) == 0) {
                        check_header(&r);
                        if (read_body(sv[0], &r) == 0)
                                check_request(&r);
                }
        }
        req_release(&r);
        (void)close(sv[0]);
        (void)close(sv[1]);
        return 0;
}
