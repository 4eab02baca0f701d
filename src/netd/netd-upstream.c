/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's upstream queries: one question asked of each upstream in turn, over UDP with
 * EDNS (DNS_EDNS_MAX) and a fresh random ID on its own connected socket, again over TCP when
 * the answer is truncated; NETD_UPSTREAM_TIMEOUT for each try. Called by several workers at
 * once: no shared state.
 */

#include <errno.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "netd.h"

static int read_exact(int fd, uint8_t *buf, size_t n)
{
        while (n > 0) {
                ssize_t k = recv(fd, buf, n, 0);

                if (k <= 0)
                        return k == 0 ? -ECONNRESET : -errno;
                buf += k;
                n -= (size_t)k;
        }
        return 0;
}

int netd_recv_tcp_msg(int fd, uint8_t *buf, size_t cap, size_t *ret_len)
{
        uint8_t hdr[2];
        size_t len;

        if (read_exact(fd, hdr, 2) < 0)
                return -EIO;
        len = (size_t)hdr[0] << 8 | hdr[1];
        if (len > cap || read_exact(fd, buf, len) < 0)
                return -EIO;
        *ret_len = len;
        return 0;
}

/* Ask one upstream over TCP (after a truncated UDP answer). */
static int ask_tcp(const struct netd_upstream *u,
                   const uint8_t *query,
                   size_t qlen,
                   uint8_t *buf,
                   size_t cap,
                   size_t *ret_len)
{
        struct timeval tv = { .tv_sec = NETD_UPSTREAM_TIMEOUT / 1000,
                              .tv_usec = NETD_UPSTREAM_TIMEOUT % 1000 * 1000 };
        uint8_t hdr[2] = { (uint8_t)(qlen >> 8), (uint8_t)qlen };
        int fd = socket(u->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), r = -EIO;

        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (const struct sockaddr *)&u->sa, u->len) == 0 &&
            send(fd, hdr, 2, MSG_NOSIGNAL) == 2 &&
            send(fd, query, qlen, MSG_NOSIGNAL) == (ssize_t)qlen)
                r = netd_recv_tcp_msg(fd, buf, cap, ret_len);
        (void)close(fd);
        return r;
}

/* Wait up to the timeout for an answer to @q on the connected @fd (others are ignored). */
static int wait_udp(int fd, const struct dns_query *q, uint8_t *buf, struct dns_answer *ans)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        while (poll(&p, 1, NETD_UPSTREAM_TIMEOUT) == 1) {
                ssize_t n = recv(fd, buf, DNS_MSG_MAX, 0);
                int r;

                if (n < 0)
                        return -errno;
                r = dns_answer_parse(buf, (size_t)n, q, ans);
                if (r != -EPROTO)
                        return r;
        }
        return -ETIMEDOUT;
}

static int ask_udp(const struct netd_upstream *u,
                   const struct dns_query *uq,
                   const uint8_t *query,
                   size_t qlen,
                   uint8_t *buf,
                   struct dns_answer *ans)
{
        int fd = socket(u->sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

        if (fd < 0)
                return -errno;
        r = connect(fd, (const struct sockaddr *)&u->sa, u->len) == 0 &&
                            send(fd, query, qlen, 0) == (ssize_t)qlen
                    ? wait_udp(fd, uq, buf, ans)
                    : -errno;
        (void)close(fd);
        return r;
}

int netd_resolve(const struct netd *d,
                 const struct dns_query *q,
                 uint8_t *buf,
                 struct dns_answer *ans)
{
        struct dns_query uq = *q;
        uint8_t query[DNS_UDP_MAX];
        int r = -ENETUNREACH;

        uq.flags = DNS_FLAG_RD;
        uq.edns_size = DNS_EDNS_MAX;
        for (size_t i = 0; i < d->n_up; i++) {
                size_t len;
                int qlen;

                if (getrandom(&uq.id, sizeof(uq.id), 0) != sizeof(uq.id))
                        return -EIO;
                qlen = dns_query_build(&uq, query, sizeof(query));
                if (qlen < 0)
                        return qlen;
                r = ask_udp(&d->up[i], &uq, query, (size_t)qlen, buf, ans);
                if (r == -EMSGSIZE) {
                        r = ask_tcp(&d->up[i], query, (size_t)qlen, buf, DNS_MSG_MAX, &len);
                        if (r >= 0)
                                r = dns_answer_parse(buf, len, &uq, ans);
                }
                if (r >= 0 && ans->rcode != DNS_RC_SERVFAIL && ans->rcode != DNS_RC_REFUSED)
                        return 0;
        }
        return r < 0 ? r : -EIO;
}
