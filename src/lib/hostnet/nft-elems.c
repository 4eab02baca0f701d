/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A thread's elements over netlink (nft-elems.h). One batch: BEGIN, one NEWSETELEM or
 * DELSETELEM message per run of elements of one set (at most PER_MSG each: an element list
 * is one nested attribute, whose length is 16 bits), END. Every message asks for an
 * acknowledgement; the kernel handles a batch inside sendmsg() and queues every reply
 * (errors too: it goes on after the first, then aborts the whole transaction), so all of
 * them are read without waiting and each must say 0. One socket serves the process
 * (nfnl-sock.c says why). Keys are core/nft-key.h's, the layout
 * b4box-netd's pins use too. A thread's own set and chain (nft-elems.h) are a NEWSET, and a
 * NEWCHAIN with one NEWRULE whose expressions are those nft compiles for the same text
 * (`nft --debug=netlink add rule inet b4box thread_7 ip daddr . meta l4proto . th dport
 * @cidrs_7 goto passed`); a DELCHAIN takes the chain's rule with it, a DELSET the set's
 * elements.
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
#define ELEM_ROOM  160  /* an element's attributes: key, key_end, a verdict with its chain */
#define MSG_ROOM   256  /* a message's header, table and set names */
#define OBJ_ROOM   1024 /* a set, chain or rule message (a rule: 8 expressions) */
#define NAME_MAX_  24   /* "thread_<ifindex>", "cidrs_<ifindex>", "pinsr_<ifindex>" */
#define RECORD_MAX (4u << 20)

/* Set names, and the record's tags of the rest. */
static const char *const set_names[NFT_N_SETS] = {
        [NFT_SET_MASQ4] = "masq4",    [NFT_SET_SRC4] = "src4",   [NFT_SET_DNSPORT] = "dnsport",
        [NFT_SET_DNSIN] = "dnsin",    [NFT_SET_CIDR4] = "cidr4", [NFT_SET_DCIDR4] = "dcidr4",
        [NFT_SET_MODE] = "mode",      [NFT_OWN_SET] = "ownset",  [NFT_SET_OWN4] = "own4",
        [NFT_OWN_CHAIN] = "ownchain", [NFT_SET_OWN] = "own",     [NFT_OWN_PINS] = "ownpins",
        [NFT_OWN_PINSR] = "ownpinsr",
};

/* The thread's own sets and chain: "cidrs_<ifindex>", "pins_<ifindex>" and "pinsr_<ifindex>"
 * (b4box-netd names them too: netd-pin.c), "thread_<ifindex>". */
static void own_set_name(unsigned ifindex, char out[NAME_MAX_])
{
        (void)snprintf(out, NAME_MAX_, "cidrs_%u", ifindex);
}

static void own_pins_name(unsigned ifindex, bool ranges, char out[NAME_MAX_])
{
        (void)snprintf(out, NAME_MAX_, ranges ? "pinsr_%u" : "pins_%u", ifindex);
}

static void own_chain_name(unsigned ifindex, char out[NAME_MAX_])
{
        (void)snprintf(out, NAME_MAX_, "thread_%u", ifindex);
}

/* The ifindex an nft_key_iif() key holds. */
static unsigned key_ifindex(const struct nft_key *k)
{
        uint32_t v = 0;

        memcpy(&v, k->key, sizeof(v));
        return v;
}

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
        if (add && (e->set == NFT_SET_MODE || e->set == NFT_SET_OWN)) {
                char own[NAME_MAX_];

                own_chain_name(e->ifindex, own);
                nl->elem_set_u32(x, NFTNL_SET_ELEM_VERDICT,
                                 (uint32_t)(e->set == NFT_SET_OWN ? NFT_JUMP : NFT_GOTO));
                if (nl->elem_set_str(x, NFTNL_SET_ELEM_CHAIN,
                                     e->set == NFT_SET_OWN ? own : e->chain) < 0) {
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
        char own[NAME_MAX_];
        int r = s ? 0 : -ENOMEM;

        own_set_name(e->ifindex, own);
        if (r >= 0)
                r = reserve(b, MSG_ROOM + n * ELEM_ROOM);
        if (r >= 0 && (nl->set_set_str(s, NFTNL_SET_TABLE, TABLE) < 0 ||
                       nl->set_set_str(s, NFTNL_SET_NAME,
                                       e->set == NFT_SET_OWN4 ? own : set_names[e->set]) < 0))
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

/* The header of an object message of @type at the batch's end (room reserved). */
static struct nlmsghdr *obj_hdr(struct batch *b, uint16_t type, uint16_t flags)
{
        return b->nl->nlmsg_build_hdr(b->buf + b->len, type, NFPROTO_INET, flags | NLM_F_ACK,
                                      b->seq++);
}

/* The key nft's concatenation `ipv4_addr . inet_proto . inet_service` describes itself with:
 * its datatype (the three types' ids, 6 bits each), field lengths, and the userdata nft
 * writes (key byte order, typeof) so that `nft list` shows the set as it would its own. */
#define OWN_KEY_TYPE ((7u << 12) | (12u << 6) | 13u)
static const uint8_t own_fields[] = { 4, 1, 2 };
static const uint8_t own_udata[] = { 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x08,
                                     0x00, 0x04, 0x0d, 0x00, 0x00, 0x00, 0x01, 0x00 };

/* NEWSET or DELSET of cidrs_<ifindex> (interval), pins_<ifindex> (a hash: exact ports,
 * timeout) or pinsr_<ifindex> (interval, timeout). A pin's refresh deletes it and adds it
 * again: in a hash that costs what pin4's does; an interval (pipapo) set's every transaction
 * clones its lookup tables and per-CPU scratch maps, ~0.1 ms however small the set. */
static int put_own_set(struct batch *b, const struct nft_elem *e, bool add)
{
        const struct nftnl_dl *nl = b->nl;
        struct nftnl_set *s = nl->set_alloc();
        bool pins = e->set != NFT_OWN_SET, interval = e->set != NFT_OWN_PINS;
        char name[NAME_MAX_];
        int r = s ? reserve(b, OBJ_ROOM) : -ENOMEM;

        if (pins)
                own_pins_name(e->ifindex, e->set == NFT_OWN_PINSR, name);
        else
                own_set_name(e->ifindex, name);
        if (r >= 0 && (nl->set_set_str(s, NFTNL_SET_TABLE, TABLE) < 0 ||
                       nl->set_set_str(s, NFTNL_SET_NAME, name) < 0))
                r = -ENOMEM;
        if (r >= 0) {
                nl->set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
                if (add) {
                        nl->set_set_u32(s, NFTNL_SET_FLAGS,
                                        (interval ? NFT_SET_INTERVAL | NFT_SET_CONCAT : 0) |
                                                (pins ? NFT_SET_TIMEOUT : 0));
                        nl->set_set_u32(s, NFTNL_SET_KEY_TYPE, OWN_KEY_TYPE);
                        nl->set_set_u32(s, NFTNL_SET_KEY_LEN, 12);
                        nl->set_set_u32(s, NFTNL_SET_ID, b->seq); /* unique in the batch */
                        if ((interval && nl->set_set_data(s, NFTNL_SET_DESC_CONCAT, own_fields,
                                                          sizeof(own_fields)) < 0) ||
                            nl->set_set_data(s, NFTNL_SET_USERDATA, own_udata, sizeof(own_udata)) <
                                    0)
                                r = -ENOMEM;
                }
        }
        if (r >= 0) {
                /* EXCL: a set left from an earlier thread of this ifindex fails the add */
                struct nlmsghdr *nlh = obj_hdr(b, add ? NFT_MSG_NEWSET : NFT_MSG_DELSET,
                                               add ? NLM_F_CREATE | NLM_F_EXCL : 0);

                nl->set_build_payload(nlh, s);
                advance(b, nlh);
                b->acks++;
        }
        if (s)
                nl->set_free(s);
        return r;
}

/* Append expression @name to @rule with the @n_u32 (attribute, value) pairs at @u32 and, when
 * @str is not NULL, the string attribute @str_attr. Return: 0 or -ENOMEM. */
static int add_expr(const struct nftnl_dl *nl,
                    struct nftnl_rule *rule,
                    const char *name,
                    const uint32_t (*u32)[2],
                    size_t n_u32,
                    uint16_t str_attr,
                    const char *str)
{
        struct nftnl_expr *x = nl->expr_alloc(name);

        if (!x)
                return -ENOMEM;
        for (size_t i = 0; i < n_u32; i++)
                nl->expr_set_u32(x, (uint16_t)u32[i][0], u32[i][1]);
        if (str && nl->expr_set_str(x, str_attr, str) < 0) {
                nl->rule_add_expr(rule, x); /* freed with the rule */
                return -ENOMEM;
        }
        nl->rule_add_expr(rule, x);
        return 0;
}

/* How a thread chain's rule looks up its set. */
struct lookup {
        const char *set, *to; /* the set; where a match goes */
        bool interval;        /* an interval set: l4proto byte-swapped as nft does */
        bool outside;         /* and `ip daddr != @never4` (the address loaded again) */
};

/* The expressions of `ip daddr . meta l4proto . th dport @<set> goto <to>` in an inet
 * table, as nft compiles them: the IPv4 dependency, the three loads into the concatenation's
 * registers, the lookup, (@lk->outside) the never4 lookup, the goto. */
static int lookup_goto(const struct nftnl_dl *nl, struct nftnl_rule *rule, const struct lookup *lk)
{
        static const uint32_t nfproto[][2] = { { NFTNL_EXPR_META_KEY, NFT_META_NFPROTO },
                                               { NFTNL_EXPR_META_DREG, NFT_REG_1 } };
        static const uint32_t cmp[][2] = { { NFTNL_EXPR_CMP_SREG, NFT_REG_1 },
                                           { NFTNL_EXPR_CMP_OP, NFT_CMP_EQ } };
        static const uint32_t daddr[][2] = { { NFTNL_EXPR_PAYLOAD_BASE,
                                               NFT_PAYLOAD_NETWORK_HEADER },
                                             { NFTNL_EXPR_PAYLOAD_OFFSET, 16 },
                                             { NFTNL_EXPR_PAYLOAD_LEN, 4 },
                                             { NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1 } };
        static const uint32_t l4proto[][2] = { { NFTNL_EXPR_META_KEY, NFT_META_L4PROTO },
                                               { NFTNL_EXPR_META_DREG, NFT_REG32_01 } };
        static const uint32_t swap[][2] = { { NFTNL_EXPR_BYTEORDER_SREG, NFT_REG32_01 },
                                            { NFTNL_EXPR_BYTEORDER_DREG, NFT_REG32_01 },
                                            { NFTNL_EXPR_BYTEORDER_OP, NFT_BYTEORDER_HTON },
                                            { NFTNL_EXPR_BYTEORDER_LEN, 1 },
                                            { NFTNL_EXPR_BYTEORDER_SIZE, 2 } };
        static const uint32_t dport[][2] = { { NFTNL_EXPR_PAYLOAD_BASE,
                                               NFT_PAYLOAD_TRANSPORT_HEADER },
                                             { NFTNL_EXPR_PAYLOAD_OFFSET, 2 },
                                             { NFTNL_EXPR_PAYLOAD_LEN, 2 },
                                             { NFTNL_EXPR_PAYLOAD_DREG, NFT_REG32_02 } };
        static const uint32_t lookup[][2] = { { NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1 } };
        static const uint32_t not_in[][2] = { { NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1 },
                                              { NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV } };
        static const uint32_t jump[][2] = { { NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT },
                                            { NFTNL_EXPR_IMM_VERDICT, (uint32_t)NFT_GOTO } };
        const uint8_t ipv4 = NFPROTO_IPV4;
        struct nftnl_expr *x;
        int r = add_expr(nl, rule, "meta", nfproto, ELEMENTSOF(nfproto), 0, NULL);

        if (r >= 0) {
                x = nl->expr_alloc("cmp");
                if (!x)
                        return -ENOMEM;
                for (size_t i = 0; i < ELEMENTSOF(cmp); i++)
                        nl->expr_set_u32(x, (uint16_t)cmp[i][0], cmp[i][1]);
                nl->rule_add_expr(rule, x);
                if (nl->expr_set(x, NFTNL_EXPR_CMP_DATA, &ipv4, sizeof(ipv4)) < 0)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = add_expr(nl, rule, "payload", daddr, ELEMENTSOF(daddr), 0, NULL);
        if (r >= 0)
                r = add_expr(nl, rule, "meta", l4proto, ELEMENTSOF(l4proto), 0, NULL);
        if (r >= 0 && lk->interval)
                r = add_expr(nl, rule, "byteorder", swap, ELEMENTSOF(swap), 0, NULL);
        if (r >= 0)
                r = add_expr(nl, rule, "payload", dport, ELEMENTSOF(dport), 0, NULL);
        if (r >= 0)
                r = add_expr(nl, rule, "lookup", lookup, ELEMENTSOF(lookup), NFTNL_EXPR_LOOKUP_SET,
                             lk->set);
        if (r >= 0 && lk->outside)
                r = add_expr(nl, rule, "payload", daddr, ELEMENTSOF(daddr), 0, NULL);
        if (r >= 0 && lk->outside)
                r = add_expr(nl, rule, "lookup", not_in, ELEMENTSOF(not_in), NFTNL_EXPR_LOOKUP_SET,
                             "never4");
        if (r >= 0)
                r = add_expr(nl, rule, "immediate", jump, ELEMENTSOF(jump), NFTNL_EXPR_IMM_CHAIN,
                             lk->to);
        return r;
}

/* One NEWRULE appended to @chain: lookup_goto(@lk). */
static int put_rule(struct batch *b, const char *chain, const struct lookup *lk)
{
        const struct nftnl_dl *nl = b->nl;
        struct nftnl_rule *rule = nl->rule_alloc();
        int r = rule ? reserve(b, OBJ_ROOM) : -ENOMEM;

        if (r >= 0 && (nl->rule_set_str(rule, NFTNL_RULE_TABLE, TABLE) < 0 ||
                       nl->rule_set_str(rule, NFTNL_RULE_CHAIN, chain) < 0))
                r = -ENOMEM;
        if (r >= 0) {
                nl->rule_set_u32(rule, NFTNL_RULE_FAMILY, NFPROTO_INET);
                r = lookup_goto(nl, rule, lk);
        }
        if (r >= 0) {
                struct nlmsghdr *nlh = obj_hdr(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);

                nl->rule_build_payload(nlh, rule);
                advance(b, nlh);
                b->acks++;
        }
        if (rule)
                nl->rule_free(rule);
        return r;
}

/* NEWCHAIN thread_<ifindex> and its rules (cidrs_<ifindex>'s, pins_<ifindex>'s,
 * pinsr_<ifindex>'s), or its DELCHAIN (rules and all). */
static int put_own_chain(struct batch *b, const struct nft_elem *e, bool add)
{
        const struct nftnl_dl *nl = b->nl;
        struct nftnl_chain *c = nl->chain_alloc();
        char name[NAME_MAX_], set[NAME_MAX_], pins[NAME_MAX_], pinsr[NAME_MAX_];
        int r = c ? reserve(b, OBJ_ROOM) : -ENOMEM;
        const struct lookup cidrs = { .set = set, .to = e->match, .interval = true },
                            exact = { .set = pins, .to = "passed", .outside = true },
                            ranges = {
                                    .set = pinsr, .to = "passed", .interval = true, .outside = true
                            };

        own_chain_name(e->ifindex, name);
        own_set_name(e->ifindex, set);
        own_pins_name(e->ifindex, false, pins);
        own_pins_name(e->ifindex, true, pinsr);
        if (r >= 0 && (nl->chain_set_str(c, NFTNL_CHAIN_TABLE, TABLE) < 0 ||
                       nl->chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0))
                r = -ENOMEM;
        if (r >= 0) {
                struct nlmsghdr *nlh = obj_hdr(b, add ? NFT_MSG_NEWCHAIN : NFT_MSG_DELCHAIN,
                                               add ? NLM_F_CREATE | NLM_F_EXCL : 0);

                nl->chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
                nl->chain_build_payload(nlh, c);
                advance(b, nlh);
                b->acks++;
        }
        if (c)
                nl->chain_free(c);
        if (r >= 0 && add && e->match)
                r = put_rule(b, name, &cidrs);
        if (r >= 0 && add && e->pins)
                r = put_rule(b, name, &exact);
        if (r >= 0 && add && e->pinsr)
                r = put_rule(b, name, &ranges);
        return r;
}

/* Whether @a and @b go in one element message. */
static bool same_run(const struct nft_elem *a, const struct nft_elem *b)
{
        return a->set == b->set && (a->set != NFT_SET_OWN4 || a->ifindex == b->ifindex);
}

static bool is_object(enum nft_set set)
{
        return set == NFT_OWN_SET || set == NFT_OWN_PINS || set == NFT_OWN_PINSR ||
               set == NFT_OWN_CHAIN;
}

/* The messages of one run of @n entries at @e: an object's, or one element message (none for
 * the thread's own set's elements on a delete: its set goes with them). */
static int put_run(struct batch *b, const struct nft_elem *e, size_t n, bool add)
{
        if (e->set == NFT_OWN_SET || e->set == NFT_OWN_PINS || e->set == NFT_OWN_PINSR)
                return put_own_set(b, e, add);
        if (e->set == NFT_OWN_CHAIN)
                return put_own_chain(b, e, add);
        if (e->set == NFT_SET_OWN4 && !add)
                return 0;
        return put_msg(b, e, n, add);
}

/* Messages for @l's entries, in order (@add) or last first (a delete), one per run of a
 * set's elements. */
static int put_list(struct batch *b, const struct nft_elems *l, bool add)
{
        int r = 0;

        for (size_t done = 0; l && done < l->n && r >= 0;) {
                size_t n = 1;

                if (add) {
                        const struct nft_elem *e = &l->v[done];

                        while (!is_object(e->set) && done + n < l->n && n < PER_MSG &&
                               same_run(&l->v[done + n], e))
                                n++;
                        r = put_run(b, e, n, true);
                } else {
                        size_t last = l->n - 1 - done;
                        const struct nft_elem *e = &l->v[last];

                        while (!is_object(e->set) && n <= last && n < PER_MSG &&
                               same_run(&l->v[last - n], e))
                                n++;
                        r = put_run(b, &l->v[last - n + 1], n, false);
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
        /* at most 4 messages an entry (a chain and its rules) */
        b.seq = first = nfnl_seq((unsigned)(4 * ((del ? del->n : 0) + (add ? add->n : 0)) + 2));
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

/* Each of @l's entries deleted alone, last first, an -ENOENT ignored. */
static int delete_each(const struct nftnl_dl *nl, const struct nft_elems *l)
{
        int r = 0;

        for (size_t i = l->n; i-- > 0 && r >= 0;) {
                struct nft_elems one = { .v = &l->v[i], .n = 1, .cap = 1 };
                int q = run(nl, &one, NULL);

                if (q < 0 && q != -ENOENT)
                        r = q;
        }
        return r;
}

/* @del minus what is already gone: every element but the mode ones (and the thread's own
 * set, chain and `own` element, which hold one another) deleted alone (an -ENOENT ignored), then
 * those with @add in one transaction (a thread is never unfiltered), or, when some of them
 * are gone too, each alone and then @add. */
static int commit_missing(const struct nftnl_dl *nl,
                          const struct nft_elems *del,
                          const struct nft_elems *add)
{
        struct nft_elems rest = { 0 }, tail = { 0 };
        int r = 0;

        for (size_t i = 0; i < del->n && r >= 0; i++) {
                const struct nft_elem *e = &del->v[i];

                if (e->set == NFT_SET_OWN4)
                        continue;
                r = nft_elems_push(e->set == NFT_SET_MODE || e->set == NFT_SET_OWN ||
                                                   is_object(e->set)
                                           ? &tail
                                           : &rest,
                                   e);
        }
        if (r >= 0)
                r = delete_each(nl, &rest);
        if (r >= 0)
                r = run(nl, &tail, add);
        if (r == -ENOENT && tail.n > 0) {
                r = delete_each(nl, &tail);
                if (r >= 0)
                        r = run(nl, NULL, add);
        }
        nft_elems_release(&rest);
        nft_elems_release(&tail);
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

static bool is_pins(const struct nft_elem *e)
{
        return e->set == NFT_OWN_PINS || e->set == NFT_OWN_PINSR;
}

/* Whether @l has the pin set @e. */
static bool has_pin_set(const struct nft_elems *l, const struct nft_elem *e)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->v[i].set == e->set && l->v[i].ifindex == e->ifindex)
                        return true;
        return false;
}

/* @l without the pin sets that @other has too (compacted in place, order kept). */
static void drop_common_pins(struct nft_elems *l, const struct nft_elems *other)
{
        size_t n = 0;

        for (size_t i = 0; i < l->n; i++)
                if (!is_pins(&l->v[i]) || !has_pin_set(other, &l->v[i]))
                        l->v[n++] = l->v[i];
        l->n = n;
}

void nft_elems_keep_pins(struct nft_elems *del, struct nft_elems *add)
{
        struct nft_elems old = *del;
        struct nft_elem *copy = b4_malloc(del->n ? del->n * sizeof(*copy) : 1);

        if (!copy)
                return; /* both kept: the pins start again, nothing is opened */
        memcpy(copy, del->v, del->n * sizeof(*copy));
        old.v = copy;
        drop_common_pins(del, add);
        drop_common_pins(add, &old);
        free(copy);
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

                if (e->set == NFT_SET_OWN4)
                        continue; /* deleted with the set */
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
        if (e->set == NFT_SET_OWN4)
                return -EINVAL; /* never recorded */
        if (is_object(e->set) && (e->k.len != 4 || e->k.range))
                return -EINVAL;
        if (e->set == NFT_SET_OWN && e->k.len != 4)
                return -EINVAL;
        if (is_object(e->set) || e->set == NFT_SET_OWN)
                e->ifindex = key_ifindex(&e->k);
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
