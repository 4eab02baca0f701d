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

#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

#include "core/nft-key.h"

/* The table's sets and maps a thread has elements in. */
enum nft_set {
        NFT_SET_MASQ4,
        NFT_SET_SRC4,
        NFT_SET_DNSPORT, /* map: the netd port */
        NFT_SET_DNSIN,
        NFT_SET_CIDR4,
        NFT_SET_DCIDR4,
        NFT_SET_MODE, /* map: goto <chain> */
        NFT_N_SETS,
};

struct nft_elem {
        enum nft_set set;
        struct nft_key k;
        uint16_t port;     /* NFT_SET_DNSPORT's value */
        const char *chain; /* NFT_SET_MODE's value: static text ("deny_mode", ...) */
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
 * does not stop the rest: the others are deleted one by one, the mode elements last with
 * @add's. Return: 0 or a negative errno (message in @err): -EOPNOTSUPP without libnftnl, the
 * kernel's (-ENOENT: no table or set; -EEXIST: an element clashes), -EPROTO when an
 * acknowledgement is missing.
 */
int nft_elems_commit(const struct nft_elems *del,
                     const struct nft_elems *add,
                     struct b4_error *err);

/*
 * nft_elems_format() - the record of @l: one line per element, "<set> <key hex>" or
 * "<set> <key hex>-<key_end hex>" (values are not recorded: a delete needs keys only).
 * *@ret is new text. Return: 0 or -ENOMEM.
 */
int nft_elems_format(const struct nft_elems *l, char **ret);

/* nft_elems_parse() - the list recorded in @text (nft_elems_format()), appended to @l.
 * Return: 0, -EINVAL (not such a record; @l unchanged), -ENOMEM. */
int nft_elems_parse(const char *text, struct nft_elems *l);
