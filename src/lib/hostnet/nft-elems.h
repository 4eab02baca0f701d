/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A thread's elements in the `inet b4box` table (b4box.nft), written over netlink: one
 * nf_tables batch (libnftnl messages, nftnl-dl.h) per change, every message acknowledged,
 * all of it one transaction. libnftables stays for the table itself (netpolicy.c): it reads
 * the ruleset into a cache before every command, which costs O(ruleset) per thread. The
 * element list is also the thread's record (run/<id>.nft), so that the teardown, or the
 * sweep after a crash, deletes exactly what the acquire added.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

#include "core/nft-key.h"

/*
 * What a thread has in the table: elements of the shared sets and maps, and, for a thread
 * whose list has IPv4 CIDRs or (allowlist) `name:port` entries, sets and a chain of its own
 * (so that adding or deleting its intervals touches no other thread's: b4box.nft says why).
 * In the order a thread adds them (a delete goes last first): its CIDR set and the set's
 * elements, its pin sets, its chain, its `own` element (jump to the chain), the mode element.
 */
enum nft_set {
        NFT_SET_MASQ4,
        NFT_SET_SRC4,
        NFT_SET_DNSPORT, /* map: the netd port */
        NFT_SET_DNSIN,
        NFT_SET_CIDR4,  /* shared (legacy: an older b4box's threads); deleted, never added */
        NFT_SET_DCIDR4, /* likewise */
        NFT_SET_MODE,   /* map: goto <chain> */
        NFT_OWN_SET,    /* the set cidrs_<ifindex> itself (ipv4_addr . inet_proto . inet_service,
                         * interval): created by an add, deleted (elements and all) by a delete */
        NFT_SET_OWN4, /* an element of cidrs_<ifindex>: added, never deleted alone (nor recorded) */
        NFT_OWN_CHAIN, /* the chain thread_<ifindex>: a match in cidrs_<ifindex> goes to @match;
                        * created with its rule, deleted with it */
        NFT_SET_OWN,   /* map own: jump thread_<ifindex> */
        NFT_OWN_PINS,  /* the set pins_<ifindex> itself (ipv4_addr . inet_proto . inet_service,
                        * a hash, timeout): empty when added, written by b4box-netd (a pin of
                        * a `name:port` entry), deleted (pins and all) by a delete */
        NFT_OWN_PINSR, /* pinsr_<ifindex>, the same for `name:port-port` entries (interval,
                        * timeout) */
        NFT_N_SETS,
};

struct nft_elem {
        enum nft_set set;
        struct nft_key k;  /* the objects (NFT_OWN_*): nft_key_iif() of @ifindex */
        uint16_t port;     /* NFT_SET_DNSPORT's value */
        const char *chain; /* NFT_SET_MODE's value: static text ("deny_mode", ...) */
        const char *match; /* NFT_OWN_CHAIN: where a match in cidrs_<ifindex> goes ("passed",
                            * "denied"); NULL: the thread has no CIDR set */
        bool pins, pinsr;  /* NFT_OWN_CHAIN: a rule for pins_<ifindex> / pinsr_<ifindex> too
                            * (outside never4: goto passed), after the CIDRs' */
        unsigned ifindex;  /* NFT_OWN_SET, NFT_SET_OWN4, NFT_OWN_PINS, NFT_OWN_PINSR,
                            * NFT_OWN_CHAIN, NFT_SET_OWN */
};

/* A growable list; zero-initialised is empty. */
struct nft_elems {
        struct nft_elem *v;
        size_t n, cap;
};

/* nft_elems_push() - append *@e. Return: 0 or -ENOMEM. */
int nft_elems_push(struct nft_elems *l, const struct nft_elem *e);

/* nft_elems_release() - free the list (it is empty afterwards). */
void nft_elems_release(struct nft_elems *l);

/*
 * nft_elems_commit() - in one transaction, delete @del's elements (last first) and then
 * add @add's (in order); either may be NULL or empty. A @del element already gone (-ENOENT)
 * does not stop the rest: the others are deleted one by one, the mode elements (and the
 * thread's own chain and set) last with @add's. Return: 0 or a negative errno (message in
 * @err): -EOPNOTSUPP without libnftnl, the kernel's (-ENOENT: no table or set; -EEXIST: an
 * element clashes, or the thread's own set or chain exists already), -EPROTO when an
 * acknowledgement is missing.
 */
int nft_elems_commit(const struct nft_elems *del,
                     const struct nft_elems *add,
                     struct b4_error *err);

/*
 * nft_elems_keep_pins() - drop from @del and from @add the thread's own pin sets
 * (NFT_OWN_PINS, NFT_OWN_PINSR) that both have, so that a replace (netd revived: the old
 * elements out, the new in) keeps the pins b4box-netd wrote there; the thread's chain, deleted
 * and added again, refers to them by name.
 */
void nft_elems_keep_pins(struct nft_elems *del, struct nft_elems *add);

/*
 * nft_elems_format() - the record of @l: one line per element, "<set> <key hex>" or
 * "<set> <key hex>-<key_end hex>" (values are not recorded: a delete needs keys only);
 * "ownset <iif hex>", "ownpins <iif hex>", "ownpinsr <iif hex>" and "ownchain <iif hex>" for
 * the thread's own sets
 * and chain, none for the elements of its CIDR set (they go with it).
 * *@ret is new text. Return: 0 or -ENOMEM.
 */
int nft_elems_format(const struct nft_elems *l, char **ret);

/* nft_elems_parse() - the list recorded in @text (nft_elems_format()), appended to @l.
 * Return: 0, -EINVAL (not such a record; @l unchanged), -ENOMEM. */
int nft_elems_parse(const char *text, struct nft_elems *l);
