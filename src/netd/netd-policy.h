/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What b4box-netd decides for one thread (docs/native.md §Network): which questions go
 * upstream, which answers are refused as rebinding, and how long an answer is pinned.
 * Pure functions over the thread's parsed list.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/policy.h"

#include "dns-msg.h"

struct netd_policy {
        enum b4_network_mode mode; /* DENY: the list is an allowlist; ALLOW: a denylist */
        const struct b4_net_entry *entries;
        size_t n;
        uint32_t pin_floor_s, pin_cap_s;
};

enum netd_verdict {
        NETD_FORWARD,  /* ask upstream */
        NETD_NXDOMAIN, /* the name is not admitted: answered locally, nothing upstream */
        NETD_DENIED,   /* allow mode, a denylisted name's A question: asked upstream only to
                          pin its addresses into the thread's drop set; answered NXDOMAIN */
        NETD_NODATA,   /* AAAA, HTTPS, SVCB: NOERROR with no record (sandboxes are IPv4 only) */
        NETD_NOTIMP,   /* a type or class netd does not pass */
};

/* netd_query_verdict() - what to do with the question @q (docs/native.md §Network). */
enum netd_verdict netd_query_verdict(const struct netd_policy *p, const struct dns_query *q);

/*
 * netd_addr_refused() - whether the IPv4 answer @a (network order) is refused as rebinding:
 * in deny mode, an address in a private, loopback, link-local, multicast or reserved range
 * unless an allowlist CIDR lying wholly inside that range contains it, and a metadata
 * address (169.254.169.254, 169.254.170.2) unless listed exactly. Allow mode refuses none
 * (the table drops link-local and metadata whatever the name).
 */
bool netd_addr_refused(const struct netd_policy *p, const uint8_t a[4]);

/* netd_pin_life() - the pin lifetime (and TTL cap) for an answer whose least TTL is @ttl. */
uint32_t netd_pin_life(const struct netd_policy *p, uint32_t ttl);

/*
 * netd_name_ports() - the port ranges the entries admitting @name open: 0 when one of them
 * has no port (every port), else the number of ranges written to @lo/@hi (at most @max;
 * further ones are dropped, the narrow direction).
 */
size_t netd_name_ports(
        const struct netd_policy *p, const char *name, uint16_t *lo, uint16_t *hi, size_t max);
