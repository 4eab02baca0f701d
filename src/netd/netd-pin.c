/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's pins over netlink (libnftnl + libmnl): one nf_tables batch per answer,
 * NEWSETELEM → DELSETELEM → NEWSETELEM of the same elements, so each pin gets a fresh
 * timeout whatever the kernel's refresh rule, in one transaction. The kernel handles a batch
 * inside sendmsg(), so every reply is queued when it returns: they are read without
 * waiting, and each message must have been acknowledged with no error.
 * Key layout (nft registers are 4-byte aligned): iface_index is a host-order u32 (network
 * order in the interval set pin4p, whose ranges compare big-endian: nft byte-swaps iif in
 * that lookup), ipv4_addr 4 bytes in network order, inet_proto 1 byte padded to 4,
 * inet_service 2 bytes (network order) padded to 4.
 */

#include "netd-pin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BATCH_MAX (256 * 1024)

int pinner_open(struct pinner *p)
{
        p->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
        if (!p->nl)
                return -errno;
        if (mnl_socket_bind(p->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;

                mnl_socket_close(p->nl);
                p->nl = NULL;
                return r;
        }
        p->portid = mnl_socket_get_portid(p->nl);
        p->seq = 1;
        return 0;
}

void pinner_close(struct pinner *p)
{
        if (p->nl)
                mnl_socket_close(p->nl);
        p->nl = NULL;
}

void pin_key4(struct pin_elem *e, unsigned ifindex, const uint8_t ip[4])
{
        uint32_t ifx = ifindex;

        memset(e, 0, sizeof(*e));
        memcpy(e->key, &ifx, 4);
        memcpy(e->key + 4, ip, 4);
        e->len = 8;
}

void pin_key4p(struct pin_elem *e,
               unsigned ifindex,
               const uint8_t ip[4],
               uint8_t proto,
               uint16_t lo,
               uint16_t hi)
{
        uint32_t ifx = htonl(ifindex); /* ranges compare big-endian: nft swaps iif there too */

        pin_key4(e, ifindex, ip);
        memcpy(e->key, &ifx, 4);
        e->key[8] = proto;
        e->key[12] = (uint8_t)(lo >> 8);
        e->key[13] = (uint8_t)lo;
        memcpy(e->key_end, e->key, 12);
        e->key_end[12] = (uint8_t)(hi >> 8);
        e->key_end[13] = (uint8_t)hi;
        e->len = 16;
        e->range = true;
}

/* One NEWSETELEM/DELSETELEM message for @n elements of set @set into @batch. */
static int put_msg(struct pinner *p,
                   struct mnl_nlmsg_batch *batch,
                   uint16_t type,
                   const char *table,
                   const char *set,
                   const struct pin_elem *e,
                   size_t n,
                   uint64_t timeout_ms)
{
        struct nftnl_set *s = nftnl_set_alloc();
        struct nlmsghdr *nlh;

        if (!s)
                return -ENOMEM;
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
        nftnl_set_set_str(s, NFTNL_SET_NAME, set);
        nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
        for (size_t i = 0; i < n; i++) {
                struct nftnl_set_elem *x = nftnl_set_elem_alloc();

                if (!x) {
                        nftnl_set_free(s);
                        return -ENOMEM;
                }
                nftnl_set_elem_set(x, NFTNL_SET_ELEM_KEY, e[i].key, (uint32_t)e[i].len);
                if (e[i].range)
                        nftnl_set_elem_set(x, NFTNL_SET_ELEM_KEY_END, e[i].key_end,
                                           (uint32_t)e[i].len);
                if (type == NFT_MSG_NEWSETELEM)
                        nftnl_set_elem_set_u64(x, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
                nftnl_set_elem_add(s, x);
        }
        nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(batch), type, NFPROTO_INET,
                                    (type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0) | NLM_F_ACK,
                                    p->seq++);
        nftnl_set_elems_nlmsg_build_payload(nlh, s);
        nftnl_set_free(s);
        return mnl_nlmsg_batch_next(batch) ? 0 : -E2BIG;
}

/* Read every queued reply: @want acknowledgements, no error. */
static int read_acks(struct pinner *p, unsigned want)
{
        static char buf[64 * 1024]; /* MNL_SOCKET_BUFFER_SIZE is a sysconf() call */
        unsigned acks = 0;
        int err = 0;

        for (;;) {
                ssize_t n = recv(mnl_socket_get_fd(p->nl), buf, sizeof(buf), MSG_DONTWAIT);
                int len;

                if (n < 0)
                        break;
                len = (int)n;
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; mnl_nlmsg_ok(h, len);
                     h = mnl_nlmsg_next(h, &len)) {
                        const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

                        if (h->nlmsg_type != NLMSG_ERROR)
                                continue;
                        if (e->error != 0 && err == 0)
                                err = e->error;
                        acks++;
                }
        }
        if (err)
                return err;
        return acks >= want ? 0 : -EPROTO;
}

int pinner_run(struct pinner *p,
               const char *table,
               const char *set,
               const struct pin_elem *e,
               size_t n,
               uint64_t timeout_ms)
{
        static char buf[BATCH_MAX];
        struct mnl_nlmsg_batch *batch;
        int r = 0;

        if (n == 0)
                return 0;
        batch = mnl_nlmsg_batch_start(buf, sizeof(buf));
        if (!batch)
                return -ENOMEM;
        nftnl_batch_begin(mnl_nlmsg_batch_current(batch), p->seq++);
        (void)mnl_nlmsg_batch_next(batch);
        r = put_msg(p, batch, NFT_MSG_NEWSETELEM, table, set, e, n, timeout_ms);
        if (r >= 0)
                r = put_msg(p, batch, NFT_MSG_DELSETELEM, table, set, e, n, 0);
        if (r >= 0)
                r = put_msg(p, batch, NFT_MSG_NEWSETELEM, table, set, e, n, timeout_ms);
        if (r >= 0) {
                nftnl_batch_end(mnl_nlmsg_batch_current(batch), p->seq++);
                (void)mnl_nlmsg_batch_next(batch);
                if (mnl_socket_sendto(p->nl, mnl_nlmsg_batch_head(batch),
                                      mnl_nlmsg_batch_size(batch)) < 0)
                        r = -errno;
                else
                        r = read_acks(p, 3);
        }
        mnl_nlmsg_batch_stop(batch);
        return r;
}
