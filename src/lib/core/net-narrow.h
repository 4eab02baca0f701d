/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Whether a thread's network lists narrow the app's (docs/configuration.md "Per-thread
 * network lists"): entry coverage and disjointness, and the check of a whole thread
 * network against the app's policy. Pure and total: any parsed entries, any policies.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/policy.h"

/* The IPv4 ranges an allowlist CIDR opens only when it lies inside them (the table's never4
 * set), and the metadata addresses only an exact /32 entry opens. */
struct net_range4 {
        uint8_t net[4];
        uint8_t prefix;
};

#define NET_N_SPECIAL4  10
#define NET_N_METADATA4 2
#define NET_N_CLOSED4   4
extern const struct net_range4 net_special4[NET_N_SPECIAL4];
extern const struct net_range4 net_metadata4[NET_N_METADATA4];
/* What mode allow always closes: this network, loopback, link-local (metadata) and multicast
 * (the table's linklocal4 set; plain allow's iptables rules close 169.254.0.0/16 and the
 * host). */
extern const struct net_range4 net_closed4[NET_N_CLOSED4];

/*
 * net_entry_covers() - whether everything @inner admits, @outer admits too.
 * @allowlist: true: as allowlist entries (what a CIDR opens leaves out the special ranges it
 *             does not lie in and the metadata addresses it does not name exactly); false: as
 *             denylist entries (as written).
 * A name is never covered by a CIDR nor a CIDR by a name.
 */
bool net_entry_covers(const struct b4_net_entry *outer,
                      const struct b4_net_entry *inner,
                      bool allowlist);

/* net_entries_disjoint() - whether no destination can match both @a and @b: their ports do
 * not overlap, or both are CIDRs that do not overlap, or both are names no name matches. */
bool net_entries_disjoint(const struct b4_net_entry *a, const struct b4_net_entry *b);

/*
 * net_narrow_check() - whether a thread's network narrows @app's.
 * @mode: the thread's mode
 * @list, @n: its allowlist (mode deny) or denylist (mode allow)
 * @why, @why_len: on refusal, the reason (e.g. `network.allowlist[1] "x.example" is not
 *                 inside any entry of the app's allowlist`)
 * Return: true when it narrows.
 */
bool net_narrow_check(const struct b4_policy *app,
                      enum b4_network_mode mode,
                      const struct b4_net_entry *list,
                      size_t n,
                      char *why,
                      size_t why_len);
