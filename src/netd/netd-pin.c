/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's pins over netlink (libnftnl + libmnl): one nf_tables batch per answer. On a
 * kernel that updates an element's timeout when it is added again (Linux 6.10 and later:
 * with an expiration given, even one equal to the timeout), one NEWSETELEM with the
 * timeout and expiration; before, NEWSETELEM → DELSETELEM → NEWSETELEM of the same
 * elements, so that each pin gets a fresh timeout, in one transaction. Neither fails on a
 * refresh (an exclusive add would, and the kernel's abort path costs 8–20 ms); the one
 * message also spares two lookups of the set by name, a walk of the table's sets (3,000
 * with 1,000 threads' own). The kernel handles a batch
 * inside sendmsg(), so every reply is queued when it returns: they are read without
 * waiting, and each message must have been acknowledged with no error.
 * Key layout (nft registers are 4-byte aligned): iface_index is a host-order u32,
 * ipv4_addr 4 bytes in network order, inet_proto 1 byte padded to 4, inet_service 2 bytes
 * (network order) padded to 4. A pin with ports goes to a set of the thread's own, made with
 * its elements (src/lib/hostnet/nft-elems.c), keyed ipv4_addr . inet_proto . inet_service (no
 * iif): pins_<ifindex>, a hash, for one port (a refresh costs what pin4's does), or
 * pinsr_<ifindex>, an interval set, for a range (a pipapo delete walks the set, the thread's
 * own pins only, and its every transaction clones the set's tables: ~0.1 ms).
 */

#include "netd-pin.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#define BATCH_MAX (256 * 1024)

/* Whether this kernel refreshes a present element's timeout on an add (6.10 and later). */
static bool kernel_updates_timeout(void)
{
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false;
        return major > 6 || (major == 6 && minor >= 10);
}

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
        p->update = kernel_updates_timeout();
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

void pin_key4p(struct pin_elem *e, const uint8_t ip[4], uint8_t proto, uint16_t lo, uint16_t hi)
{
        memset(e, 0, sizeof(*e));
        memcpy(e->key, ip, 4);
        e->key[4] = proto;
        e->key[8] = (uint8_t)(lo >> 8);
        e->key[9] = (uint8_t)lo;
        e->len = 12;
        if (lo == hi)
                return; /* pins_<ifindex>: a hash */
        memcpy(e->key_end, e->key, 8);
        e->key_end[8] = (uint8_t)(hi >> 8);
        e->key_end[9] = (uint8_t)hi;
        e->range = true;
}

void pin_set4p(unsigned ifindex, bool ranges, char out[PIN_SET_NAME_MAX])
{
        (void)snprintf(out, PIN_SET_NAME_MAX, ranges ? "pinsr_%u" : "pins_%u", ifindex);
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
                if (type == NFT_MSG_NEWSETELEM && timeout_ms > 0)
                        nftnl_set_elem_set_u64(x, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
                /* what makes a 6.10 kernel restart a present element's timeout when it is
                 * the same as before */
                if (type == NFT_MSG_NEWSETELEM && timeout_ms > 0 && p->update)
                        nftnl_set_elem_set_u64(x, NFTNL_SET_ELEM_EXPIRATION, timeout_ms);
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
        if (r >= 0 && !p->update)
                r = put_msg(p, batch, NFT_MSG_DELSETELEM, table, set, e, n, 0);
        if (r >= 0 && !p->update)
                r = put_msg(p, batch, NFT_MSG_NEWSETELEM, table, set, e, n, timeout_ms);
        if (r >= 0) {
                nftnl_batch_end(mnl_nlmsg_batch_current(batch), p->seq++);
                (void)mnl_nlmsg_batch_next(batch);
                if (mnl_socket_sendto(p->nl, mnl_nlmsg_batch_head(batch),
                                      mnl_nlmsg_batch_size(batch)) < 0)
                        r = -errno;
                else
                        r = read_acks(p, p->update ? 1 : 3);
        }
        mnl_nlmsg_batch_stop(batch);
        return r;
}

struct dump_ctx {
        pin_dump_fn *fn;
        void *data;
};

static int elem_counter(struct nftnl_expr *x, void *data)
{
        uint64_t *pb = data;
        const char *name = nftnl_expr_get_str(x, NFTNL_EXPR_NAME);

        if (name && strcmp(name, "counter") == 0) {
                pb[0] = nftnl_expr_get_u64(x, NFTNL_EXPR_CTR_PACKETS);
                pb[1] = nftnl_expr_get_u64(x, NFTNL_EXPR_CTR_BYTES);
        }
        return 0;
}

static int dump_elem(struct nftnl_set_elem *e, void *data)
{
        struct dump_ctx *c = data;
        uint32_t len = 0;
        const void *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
        uint64_t pb[2] = { 0, 0 };

        if (key) {
                (void)nftnl_set_elem_expr_foreach(e, elem_counter, pb);
                c->fn(key, len, pb[0], pb[1], c->data);
        }
        return 0;
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
        struct nftnl_set *s = nftnl_set_alloc();
        int r = MNL_CB_ERROR;

        if (!s)
                return r;
        if (nftnl_set_elems_nlmsg_parse(nlh, s) >= 0 &&
            nftnl_set_elem_foreach(s, dump_elem, data) >= 0)
                r = MNL_CB_OK;
        nftnl_set_free(s);
        return r;
}

int pinner_dump(struct pinner *p, const char *table, const char *set, pin_dump_fn *fn, void *data)
{
        enum {
                BUF = 64 * 1024
        };
        struct dump_ctx c = { .fn = fn, .data = data };
        struct nftnl_set *s = nftnl_set_alloc();
        char *buf = malloc(BUF);
        struct nlmsghdr *nlh;
        uint32_t seq = p->seq++;
        int r = 0;

        if (!s || !buf) {
                nftnl_set_free(s);
                free(buf);
                return -ENOMEM;
        }
        nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP | NLM_F_ACK,
                                    seq);
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
        nftnl_set_set_str(s, NFTNL_SET_NAME, set);
        nftnl_set_elems_nlmsg_build_payload(nlh, s);
        nftnl_set_free(s);
        if (mnl_socket_sendto(p->nl, nlh, nlh->nlmsg_len) < 0)
                r = -errno;
        while (r == 0) {
                ssize_t n = mnl_socket_recvfrom(p->nl, buf, BUF);
                int k;

                if (n < 0) {
                        r = -errno;
                        break;
                }
                k = mnl_cb_run(buf, (size_t)n, seq, p->portid, dump_cb, &c);
                if (k < 0)
                        r = errno ? -errno : -EIO;
                if (k <= MNL_CB_STOP)
                        break;
        }
        free(buf);
        return r;
}

struct forget_ctx {
        unsigned ifindex;
        struct pin_elem *e;
        size_t n, cap;
};

static void forget_one(const uint8_t *key, size_t len, uint64_t packets, uint64_t bytes, void *data)
{
        struct forget_ctx *c = data;
        uint32_t ifx;

        (void)packets;
        (void)bytes;
        if (len < 4 || len > sizeof(c->e[0].key))
                return;
        memcpy(&ifx, key, 4);
        if (ifx != c->ifindex)
                return;
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 64;
                struct pin_elem *e = realloc(c->e, cap * sizeof(*e));

                if (!e)
                        return;
                c->e = e;
                c->cap = cap;
        }
        memset(&c->e[c->n], 0, sizeof(c->e[0]));
        memcpy(c->e[c->n].key, key, len);
        c->e[c->n++].len = len;
}

void pin_key_iif(struct pin_elem *e, unsigned ifindex)
{
        uint32_t ifx = ifindex;

        memset(e, 0, sizeof(*e));
        memcpy(e->key, &ifx, 4);
        e->len = 4;
}

int pinner_del(
        struct pinner *p, const char *table, const char *set, const struct pin_elem *e, size_t n)
{
        static char buf[BATCH_MAX];
        struct mnl_nlmsg_batch *batch = mnl_nlmsg_batch_start(buf, sizeof(buf));
        int r;

        if (!batch)
                return -ENOMEM;
        nftnl_batch_begin(mnl_nlmsg_batch_current(batch), p->seq++);
        (void)mnl_nlmsg_batch_next(batch);
        r = put_msg(p, batch, NFT_MSG_DELSETELEM, table, set, e, n, 0);
        if (r >= 0) {
                nftnl_batch_end(mnl_nlmsg_batch_current(batch), p->seq++);
                (void)mnl_nlmsg_batch_next(batch);
                r = mnl_socket_sendto(p->nl, mnl_nlmsg_batch_head(batch),
                                      mnl_nlmsg_batch_size(batch)) < 0
                            ? -errno
                            : read_acks(p, 1);
        }
        mnl_nlmsg_batch_stop(batch);
        return r;
}

int pinner_forget(struct pinner *p, const char *table, const char *set, unsigned ifindex)
{
        struct forget_ctx c = { .ifindex = ifindex };
        int r = pinner_dump(p, table, set, forget_one, &c);

        /* 2048 keys per batch fit BATCH_MAX (a thread's are at most a few thousand) */
        for (size_t at = 0; r >= 0 && at < c.n; at += 2048)
                r = pinner_del(p, table, set, c.e + at, c.n - at > 2048 ? 2048 : c.n - at);
        free(c.e);
        return r;
}
