/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Narrows", precisely. An allowlist entry opens what it matches, except that an IPv4 CIDR
 * opens a special range (private, loopback, link-local, ...) only when it lies inside it and
 * a metadata address only when it is that /32. A denylist entry drops what it matches, as
 * written. A thread's network narrows the app's when:
 *   app deny, thread deny:   every thread allowlist entry is covered by an app allowlist
 *                            entry (an app without a list covers nothing);
 *   app deny, thread allow:  never;
 *   app allow, thread allow: every app denylist entry is covered by a thread denylist entry;
 *   app allow, thread deny:  every thread allowlist entry is disjoint from every app denylist
 *                            entry, and no IPv4 CIDR lies inside what mode allow always
 *                            closes (net_closed4).
 * IPv6 CIDRs compare by prefix alone: a listed sandbox has no IPv6 (docs/native.md).
 */

#include "net-narrow.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net-entry.h"

const struct net_range4 net_special4[NET_N_SPECIAL4] = {
        { { 0, 0, 0, 0 }, 8 },    { { 10, 0, 0, 0 }, 8 },     { { 100, 64, 0, 0 }, 10 },
        { { 127, 0, 0, 0 }, 8 },  { { 169, 254, 0, 0 }, 16 }, { { 172, 16, 0, 0 }, 12 },
        { { 192, 0, 0, 0 }, 24 }, { { 192, 168, 0, 0 }, 16 }, { { 198, 18, 0, 0 }, 15 },
        { { 224, 0, 0, 0 }, 3 },
};
const struct net_range4 net_metadata4[NET_N_METADATA4] = { { { 169, 254, 169, 254 }, 32 },
                                                           { { 169, 254, 170, 2 }, 32 } };

const struct net_range4 net_closed4[NET_N_CLOSED4] = {
        { { 0, 0, 0, 0 }, 8 },
        { { 127, 0, 0, 0 }, 8 },
        { { 169, 254, 0, 0 }, 16 },
        { { 224, 0, 0, 0 }, 3 },
};

/* Whether the first @prefix bits of @a and @b are equal. */
static bool same_bits(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
        unsigned full = prefix / 8, rest = prefix % 8;

        if (memcmp(a, b, full) != 0)
                return false;
        return rest == 0 || ((a[full] ^ b[full]) & (uint8_t)(0xffu << (8 - rest))) == 0;
}

/* Whether @addr/@prefix lies inside @net/@net_prefix (same family). */
static bool inside(const uint8_t *addr, unsigned prefix, const uint8_t *net, unsigned net_prefix)
{
        return prefix >= net_prefix && same_bits(addr, net, net_prefix);
}

/* What net_entry_parse() guarantees; anything else covers nothing and is disjoint from
 * nothing, so the functions below are total over any struct b4_net_entry. */
static bool entry_ok(const struct b4_net_entry *e)
{
        if ((e->port_lo == 0) != (e->port_hi == 0) || e->port_lo > e->port_hi)
                return false;
        if (e->kind == B4_NET_CIDR)
                return (e->family == AF_INET && e->prefix <= 32) ||
                       (e->family == AF_INET6 && e->prefix <= 128);
        return (e->kind == B4_NET_NAME || e->kind == B4_NET_WILDCARD) && e->name;
}

static bool ports_cover(const struct b4_net_entry *outer, const struct b4_net_entry *inner)
{
        if (outer->port_lo == 0)
                return true;
        return inner->port_lo != 0 && outer->port_lo <= inner->port_lo &&
               inner->port_hi <= outer->port_hi;
}

static bool ports_overlap(const struct b4_net_entry *a, const struct b4_net_entry *b)
{
        return a->port_lo == 0 || b->port_lo == 0 ||
               (a->port_lo <= b->port_hi && b->port_lo <= a->port_hi);
}

static bool is_metadata(const struct b4_net_entry *e)
{
        for (size_t i = 0; i < NET_N_METADATA4; i++)
                if (e->prefix == 32 && memcmp(e->addr, net_metadata4[i].net, 4) == 0)
                        return true;
        return false;
}

/* An IPv4 allowlist @inner inside @outer: what @inner opens of the special ranges and the
 * metadata addresses, @outer opens too. */
static bool specials_cover(const struct b4_net_entry *outer, const struct b4_net_entry *inner)
{
        for (size_t i = 0; i < NET_N_SPECIAL4; i++) {
                const struct net_range4 *s = &net_special4[i];

                if (inside(inner->addr, inner->prefix, s->net, s->prefix) &&
                    !inside(outer->addr, outer->prefix, s->net, s->prefix))
                        return false;
        }
        return !is_metadata(inner) || outer->prefix == 32;
}

static bool cidr_covers(const struct b4_net_entry *outer,
                        const struct b4_net_entry *inner,
                        bool allowlist)
{
        if (outer->family != inner->family ||
            !inside(inner->addr, inner->prefix, outer->addr, outer->prefix))
                return false;
        return !allowlist || outer->family != AF_INET || specials_cover(outer, inner);
}

static bool name_covers(const struct b4_net_entry *outer, const struct b4_net_entry *inner)
{
        if (inner->kind == B4_NET_NAME)
                return net_entry_admits_name(outer, inner->name);
        /* a wildcard: only a wildcard at or above its suffix covers it */
        return outer->kind == B4_NET_WILDCARD &&
               (strcmp(outer->name, inner->name) == 0 || net_entry_admits_name(outer, inner->name));
}

bool net_entry_covers(const struct b4_net_entry *outer,
                      const struct b4_net_entry *inner,
                      bool allowlist)
{
        if (!entry_ok(outer) || !entry_ok(inner) || !ports_cover(outer, inner))
                return false;
        if (outer->kind == B4_NET_CIDR || inner->kind == B4_NET_CIDR)
                return outer->kind == inner->kind && cidr_covers(outer, inner, allowlist);
        return name_covers(outer, inner);
}

static bool names_meet(const struct b4_net_entry *a, const struct b4_net_entry *b)
{
        if (a->kind == B4_NET_NAME && b->kind == B4_NET_NAME)
                return strcmp(a->name, b->name) == 0;
        if (a->kind == B4_NET_NAME)
                return net_entry_admits_name(b, a->name);
        if (b->kind == B4_NET_NAME)
                return net_entry_admits_name(a, b->name);
        return name_covers(a, b) || name_covers(b, a);
}

bool net_entries_disjoint(const struct b4_net_entry *a, const struct b4_net_entry *b)
{
        unsigned p;

        if (!entry_ok(a) || !entry_ok(b))
                return false;
        if (!ports_overlap(a, b))
                return true;
        if (a->kind == B4_NET_CIDR && b->kind == B4_NET_CIDR) {
                p = a->prefix < b->prefix ? a->prefix : b->prefix;
                return a->family != b->family || !same_bits(a->addr, b->addr, p);
        }
        if (a->kind == B4_NET_CIDR || b->kind == B4_NET_CIDR)
                return false; /* a name may resolve into the CIDR */
        return !names_meet(a, b);
}

/* An allowlist entry opens part of what mode allow closes: only a CIDR inside such a range
 * does (a CIDR opens a special range only when it lies inside it; names resolving there are
 * refused unless such a CIDR admits them). */
static bool opens_closed(const struct b4_net_entry *e)
{
        if (e->kind != B4_NET_CIDR || e->family != AF_INET)
                return false;
        for (size_t i = 0; i < NET_N_CLOSED4; i++)
                if (inside(e->addr, e->prefix, net_closed4[i].net, net_closed4[i].prefix))
                        return true;
        return false;
}

static bool covered_by_any(const struct b4_net_entry *e,
                           const struct b4_net_entry *l,
                           size_t n,
                           bool allowlist)
{
        for (size_t i = 0; i < n; i++)
                if (net_entry_covers(&l[i], e, allowlist))
                        return true;
        return false;
}

bool net_narrow_check(const struct b4_policy *app,
                      enum b4_network_mode mode,
                      const struct b4_net_entry *list,
                      size_t n,
                      char *why,
                      size_t why_len)
{
        const struct b4_net_entry *al = app->network_list;
        size_t an = app->n_network_list;

        if (app->network == B4_NETWORK_DENY && mode == B4_NETWORK_ALLOW) {
                (void)snprintf(why, why_len, "may not open the network the app's policy denies");
                return false;
        }
        if (app->network == B4_NETWORK_ALLOW && mode == B4_NETWORK_ALLOW) {
                for (size_t j = 0; j < an; j++)
                        if (!covered_by_any(&al[j], list, n, false)) {
                                (void)snprintf(why, why_len,
                                               "network.denylist does not deny the app's "
                                               "sandbox.network.denylist[%zu] \"%s\": a thread "
                                               "may add entries, not remove them",
                                               j, al[j].text);
                                return false;
                        }
                return true;
        }
        for (size_t i = 0; i < n; i++) {
                if (app->network == B4_NETWORK_DENY && !covered_by_any(&list[i], al, an, true)) {
                        (void)snprintf(why, why_len,
                                       "network.allowlist[%zu] \"%s\" is not inside any entry of "
                                       "the app's sandbox.network.allowlist",
                                       i, list[i].text);
                        return false;
                }
                if (app->network == B4_NETWORK_ALLOW && opens_closed(&list[i])) {
                        (void)snprintf(why, why_len,
                                       "network.allowlist[%zu] \"%s\" opens what mode \"allow\" "
                                       "closes (this network, loopback, link-local and metadata, "
                                       "multicast)",
                                       i, list[i].text);
                        return false;
                }
                for (size_t j = 0; app->network == B4_NETWORK_ALLOW && j < an; j++)
                        if (!net_entries_disjoint(&list[i], &al[j])) {
                                (void)snprintf(why, why_len,
                                               "network.allowlist[%zu] \"%s\" may reach what the "
                                               "app's sandbox.network.denylist[%zu] \"%s\" denies",
                                               i, list[i].text, j, al[j].text);
                                return false;
                        }
        }
        return true;
}
