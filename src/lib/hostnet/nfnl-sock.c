/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process's netfilter netlink socket (internal.h: nfnl_talk()), for the element batches
 * (nft-elems.c) and the queries of netlink.c. It is opened once and kept: the close of a
 * netfilter socket that has sent anything waits for the kernel's deferred release of every
 * pending nf_tables delete on the host (nft_rcv_nl_event() flushes it: an RCU grace period,
 * 8-20 ms on this host), so a socket per request made every delete, and any request after
 * one (an acquire after a release), pay for that. The kernel handles a request or a batch
 * inside sendmsg() and queues every reply, so they are read without waiting. Callers take
 * turns (one lock); the child of a fork opens its own socket.
 */

#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define SNDBUF_FLOOR 200000

static pthread_mutex_t sock_lock = PTHREAD_MUTEX_INITIALIZER;
static int sock_fd = -1;
static pid_t sock_pid;
static uint32_t sock_seq = 1;

uint32_t nfnl_seq(unsigned n)
{
        return __atomic_fetch_add(&sock_seq, n, __ATOMIC_RELAXED);
}

/* Call with sock_lock held. Return: the socket, or -errno. */
static int sock_get(void)
{
        int one = 1, fd;

        if (sock_fd >= 0 && sock_pid == getpid())
                return sock_fd;
        if (sock_fd >= 0)
                (void)close(sock_fd); /* the parent's: this drops our reference only */
        sock_fd = -1;
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
        if (fd < 0)
                return -errno;
        /* short error acknowledgements (no echo of the request) */
        (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
        sock_fd = fd;
        sock_pid = getpid();
        return fd;
}

static void sock_drop(void)
{
        if (sock_fd >= 0)
                (void)close(sock_fd);
        sock_fd = -1;
}

/* Read every queued reply to the messages numbered @first to @last (others are stale and
 * skipped): @fn gets those that are not acknowledgements; @want acknowledgements, the first
 * error if any. */
static int read_replies(int fd,
                        uint32_t first,
                        uint32_t last,
                        unsigned want,
                        void (*fn)(const struct nlmsghdr *h, void *data),
                        void *data)
{
        char buf[16384] __attribute__((aligned(8)));
        unsigned acks = 0;
        int err = 0;

        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                for (size_t off = 0, len; off + NLMSG_HDRLEN <= (size_t)n;
                     off += NLMSG_ALIGN(len)) {
                        const struct nlmsghdr *h = (const void *)(buf + off);
                        int e;

                        len = h->nlmsg_len;
                        if (len < NLMSG_HDRLEN || len > (size_t)n - off)
                                return -EBADMSG;
                        if (h->nlmsg_seq < first || h->nlmsg_seq > last)
                                continue;
                        if (h->nlmsg_type != NLMSG_ERROR) {
                                if (fn)
                                        fn(h, data);
                                continue;
                        }
                        if (len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                return -EBADMSG;
                        e = ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
                        if (e != 0 && err == 0)
                                err = e;
                        acks++;
                }
        }
        if (err)
                return err;
        return acks >= want ? 0 : -EPROTO;
}

int nfnl_talk(const void *buf,
              size_t len,
              uint32_t first,
              uint32_t last,
              unsigned want,
              void (*fn)(const struct nlmsghdr *h, void *data),
              void *data)
{
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        char stale[4096];
        int size = (int)len;
        int fd, r;

        (void)pthread_mutex_lock(&sock_lock);
        fd = sock_get();
        if (fd < 0) {
                (void)pthread_mutex_unlock(&sock_lock);
                return fd;
        }
        while (recv(fd, stale, sizeof(stale), MSG_DONTWAIT) > 0)
                ; /* what an interrupted request left */
        /* a batch is one message: the send buffer must hold it all */
        if (len > SNDBUF_FLOOR &&
            setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
                (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        if (sendto(fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                r = -errno;
        else
                r = read_replies(fd, first, last, want, fn, data);
        if (r == -EPROTO || r == -EBADMSG || r == -ENOBUFS)
                sock_drop(); /* a socket in an unknown state is not reused */
        (void)pthread_mutex_unlock(&sock_lock);
        return r;
}
