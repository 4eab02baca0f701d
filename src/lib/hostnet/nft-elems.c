/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A thread's elements over netlink (nft-elems.h). One batch: BEGIN, one NEWSETELEM or
 * DELSETELEM message per run of elements of one set (at most PER_MSG each: an element list
 * is one nested attribute, whose length is 16 bits), END. Every message asks for an
 * acknowledgement; the kernel handles a batch inside sendmsg() and queues every reply
 * (errors too: it goes on after the first, then aborts the whole transaction), so all of
 * them are read without waiting and each must say 0. One socket serves the process
 * (nfnl-sock.c says why). Keys are core/nft-key.h's, the layout
 * b4box-netd's pins use too.
 */

#include "nft-elems.h"

#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "internal.h"
#include "nftnl-dl.h"

#define TABLE      "b4box"
#define PER_MSG    128
#define ELEM_ROOM  160 /* an element's attributes: key, key_end, a verdict with its chain */
#define MSG_ROOM   256 /* a message's header, table and set names */
#define RECORD_MAX (4u << 20)

static const char *const set_names[NFT_N_SETS] = {
        [NFT_SET_MASQ4] = "masq4", [NFT_SET_SRC4] = "src4",   [NFT_SET_DNSPORT] = "dnsport",
        [NFT_SET_DNSIN] = "dnsin", [NFT_SET_CIDR4] = "cidr4", [NFT_SET_DCIDR4] = "dcidr4",
        [NFT_SET_MODE] = "mode",
};

int nft_elems_push(struct nft_elems *l, const struct nft_elem *e)
{
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 16;
                struct nft_elem *v = b4_realloc(l->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->v = v;
                l->cap = cap;
        }
        l->v[l->n++] = *e;
        return 0;
}

void nft_elems_release(struct nft_elems *l)
{
        free(l->v);
        *l = (struct nft_elems){ 0 };
}

/* A batch under construction. */
struct batch {
        const struct nftnl_dl *nl;
        char *buf;
        size_t len, cap;
        uint32_t seq;
        unsigned acks; /* messages that asked for one */
};

static int reserve(struct batch *b, size_t room)
{
        size_t cap = b->cap * 2 > b->len + room ? b->cap * 2 : b->len + room;
        char *buf;

        if (b->len + room <= b->cap)
                return 0;
        buf = b4_realloc(b->buf, cap);
        if (!buf)
                return -ENOMEM;
        memset(buf + b->cap, 0, cap - b->cap);
        b->buf = buf;
        b->cap = cap;
        return 0;
}

static void advance(struct batch *b, const struct nlmsghdr *nlh)
{
        b->len += NLMSG_ALIGN(nlh->nlmsg_len);
}

static int put_elem(const struct nftnl_dl *nl,
                    struct nftnl_set *s,
                    const struct nft_elem *e,
                    bool add)
{
        struct nftnl_set_elem *x = nl->elem_alloc();

        if (!x)
                return -ENOMEM;
        nl->elem_set(x, NFTNL_SET_ELEM_KEY, e->k.key, (uint32_t)e->k.len);
        if (e->k.range)
                nl->elem_set(x, NFTNL_SET_ELEM_KEY_END, e->k.key_end, (uint32_t)e->k.len);
        if (add && e->set == NFT_SET_DNSPORT) {
                uint8_t port[2] = { (uint8_t)(e->port >> 8), (uint8_t)e->port };

                nl->elem_set(x, NFTNL_SET_ELEM_DATA, port, sizeof(port));
        }
        if (add && e->set == NFT_SET_MODE) {
                nl->elem_set_u32(x, NFTNL_SET_ELEM_VERDICT, (uint32_t)NFT_GOTO);
                if (nl->elem_set_str(x, NFTNL_SET_ELEM_CHAIN, e->chain) < 0) {
                        nl->elem_free(x);
                        return -ENOMEM;
                }
        }
        nl->elem_add(s, x);
        return 0;
}

/* One message for the @n elements at @e (one set). */
static int put_msg(struct batch *b, const struct nft_elem *e, size_t n, bool add)
{
        const struct nftnl_dl *nl = b->nl;
        struct nftnl_set *s = nl->set_alloc();
        struct nlmsghdr *nlh;
        int r = s ? 0 : -ENOMEM;

        if (r >= 0)
                r = reserve(b, MSG_ROOM + n * ELEM_ROOM);
        if (r >= 0 && (nl->set_set_str(s, NFTNL_SET_TABLE, TABLE) < 0 ||
                       nl->set_set_str(s, NFTNL_SET_NAME, set_names[e->set]) < 0))
                r = -ENOMEM;
        if (r >= 0)
                nl->set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
        for (size_t i = 0; i < n && r >= 0; i++)
                r = put_elem(nl, s, &e[i], add);
        if (r >= 0) {
                nlh = nl->nlmsg_build_hdr(
                        b->buf + b->len, add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
                        NFPROTO_INET, (add ? NLM_F_CREATE : 0) | NLM_F_ACK, b->seq++);
                nl->elems_build_payload(nlh, s);
                advance(b, nlh);
                b->acks++;
        }
        if (s)
                nl->set_free(s);
        return r;
}

/* Messages for @l's elements, in order (@add) or last first (a delete), one per run of a
 * set's elements. */
static int put_list(struct batch *b, const struct nft_elems *l, bool add)
{
        int r = 0;

        for (size_t done = 0; l && done < l->n && r >= 0;) {
                size_t n = 1;

                if (add) {
                        while (done + n < l->n && n < PER_MSG &&
                               l->v[done + n].set == l->v[done].set)
                                n++;
                        r = put_msg(b, &l->v[done], n, true);
                } else {
                        size_t last = l->n - 1 - done;

                        while (n <= last && n < PER_MSG && l->v[last - n].set == l->v[last].set)
                                n++;
                        r = put_msg(b, &l->v[last - n + 1], n, false);
                }
                done += n;
        }
        return r;
}

/* The batch on the process's netfilter socket (nfnl-sock.c). */
static int send_batch(const struct batch *b, uint32_t first)
{
        return nfnl_talk(b->buf, b->len, first, b->seq - 1, b->acks, NULL, NULL);
}

/* One transaction: @del's deletes, then @add's adds. */
static int run(const struct nftnl_dl *nl, const struct nft_elems *del, const struct nft_elems *add)
{
        struct batch b = { .nl = nl };
        struct nlmsghdr *nlh;
        uint32_t first;
        int r;

        if ((!del || del->n == 0) && (!add || add->n == 0))
                return 0;
        b.seq = first = nfnl_seq((unsigned)((del ? del->n : 0) + (add ? add->n : 0) + 2));
        r = reserve(&b, MSG_ROOM);
        if (r >= 0) {
                nlh = nl->batch_begin(b.buf + b.len, b.seq++);
                advance(&b, nlh);
                r = put_list(&b, del, false);
        }
        if (r >= 0)
                r = put_list(&b, add, true);
        if (r >= 0)
                r = reserve(&b, MSG_ROOM);
        if (r >= 0) {
                nlh = nl->batch_end(b.buf + b.len, b.seq++);
                advance(&b, nlh);
                r = send_batch(&b, first);
        }
        free(b.buf);
        return r;
}

/* @del minus what is already gone: every element but the mode ones deleted alone (an
 * -ENOENT ignored), then the mode ones with @add in one transaction (a thread is never
 * unfiltered), or @add alone when they are gone too. */
static int commit_missing(const struct nftnl_dl *nl,
                          const struct nft_elems *del,
                          const struct nft_elems *add)
{
        struct nft_elems mode = { 0 };
        int r = 0;

        for (size_t i = 0; i < del->n && r >= 0; i++) {
                struct nft_elems one = { .v = &del->v[i], .n = 1, .cap = 1 };
                int q;

                if (del->v[i].set == NFT_SET_MODE) {
                        r = nft_elems_push(&mode, &del->v[i]);
                        continue;
                }
                q = run(nl, &one, NULL);
                if (q < 0 && q != -ENOENT)
                        r = q;
        }
        if (r >= 0)
                r = run(nl, &mode, add);
        if (r == -ENOENT && mode.n > 0)
                r = run(nl, NULL, add);
        nft_elems_release(&mode);
        return r;
}

int nft_elems_commit(const struct nft_elems *del, const struct nft_elems *add, struct b4_error *err)
{
        const char *why = NULL;
        const struct nftnl_dl *nl = nftnl_dl(&why);
        int r;

        if (!nl)
                return b4_error_set(err, -EOPNOTSUPP, "%s", why);
        r = run(nl, del, add);
        if (r == -ENOENT && del && del->n > 0)
                r = commit_missing(nl, del, add);
        if (r < 0)
                return b4_error_set(err, r, "nf_tables refused the elements of the b4box table: %s",
                                    strerror(-r));
        return 0;
}

static int put_hex(struct strbuf *sb, const uint8_t *p, size_t n)
{
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++)
                r = strbuf_addf(sb, "%02x", p[i]);
        return r;
}

int nft_elems_format(const struct nft_elems *l, char **ret)
{
        struct strbuf sb;
        int r = 0;

        strbuf_init(&sb, RECORD_MAX);
        for (size_t i = 0; i < l->n && r >= 0; i++) {
                const struct nft_elem *e = &l->v[i];

                r = strbuf_addf(&sb, "%s ", set_names[e->set]);
                if (r >= 0)
                        r = put_hex(&sb, e->k.key, e->k.len);
                if (r >= 0 && e->k.range)
                        r = strbuf_addf(&sb, "-");
                if (r >= 0 && e->k.range)
                        r = put_hex(&sb, e->k.key_end, e->k.len);
                if (r >= 0)
                        r = strbuf_addf(&sb, "\n");
        }
        if (r >= 0)
                r = strbuf_detach(&sb, ret, NULL);
        strbuf_release(&sb);
        return r;
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* @n hex digits at @s into @out; the count of bytes, or -EINVAL. */
static int get_hex(const char *s, size_t n, uint8_t out[NFT_KEY_MAX])
{
        if (n == 0 || n % 2 || n / 2 > NFT_KEY_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i += 2) {
                int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i / 2] = (uint8_t)(hi << 4 | lo);
        }
        return (int)(n / 2);
}

/* One record line (without its newline) into @e. */
static int parse_line(const char *s, size_t len, struct nft_elem *e)
{
        const char *sp = memchr(s, ' ', len), *dash;
        int n;

        *e = (struct nft_elem){ .set = NFT_N_SETS };
        if (!sp)
                return -EINVAL;
        for (unsigned i = 0; i < NFT_N_SETS; i++)
                if (strlen(set_names[i]) == (size_t)(sp - s) &&
                    memcmp(s, set_names[i], (size_t)(sp - s)) == 0)
                        e->set = (enum nft_set)i;
        if (e->set == NFT_N_SETS)
                return -EINVAL;
        len -= (size_t)(sp + 1 - s);
        s = sp + 1;
        dash = memchr(s, '-', len);
        n = get_hex(s, dash ? (size_t)(dash - s) : len, e->k.key);
        if (n < 0)
                return n;
        e->k.len = (size_t)n;
        if (dash) {
                e->k.range = true;
                if (get_hex(dash + 1, len - (size_t)(dash + 1 - s), e->k.key_end) != n)
                        return -EINVAL;
        }
        return 0;
}

int nft_elems_parse(const char *text, struct nft_elems *l)
{
        size_t n0 = l->n;
        int r = 0;

        for (const char *s = text; *s && r >= 0;) {
                const char *nl = strchr(s, '\n');
                size_t len = nl ? (size_t)(nl - s) : strlen(s);
                struct nft_elem e;

                r = parse_line(s, len, &e);
                if (r >= 0)
                        r = nft_elems_push(l, &e);
                s += len + (nl ? 1 : 0);
        }
        if (r < 0)
                l->n = n0;
        return r;
}
