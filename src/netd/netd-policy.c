/* SPDX-License-Identifier: Apache-2.0 */
/* b4box-netd's decisions: admitted names, rebinding, pin lifetimes. */

#include "netd-policy.h"

#include <string.h>
#include <sys/socket.h>

#include "base/macro.h"
#include "core/net-entry.h"

struct range4 {
        uint8_t net[4];
        uint8_t prefix;
};

/* Answers a deny-mode thread may not receive unless its allowlist opens them. */
static const struct range4 never4[] = {
        { { 0, 0, 0, 0 }, 8 },    { { 10, 0, 0, 0 }, 8 },     { { 100, 64, 0, 0 }, 10 },
        { { 127, 0, 0, 0 }, 8 },  { { 169, 254, 0, 0 }, 16 }, { { 172, 16, 0, 0 }, 12 },
        { { 192, 0, 0, 0 }, 24 }, { { 192, 168, 0, 0 }, 16 }, { { 198, 18, 0, 0 }, 15 },
        { { 224, 0, 0, 0 }, 3 },
};

static const uint8_t metadata4[][4] = { { 169, 254, 169, 254 }, { 169, 254, 170, 2 } };

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
        for (unsigned i = 0; i < prefix; i++) {
                uint8_t m = (uint8_t)(0x80u >> (i % 8));

                if ((a[i / 8] & m) != (net[i / 8] & m))
                        return false;
        }
        return true;
}

static bool admits_name(const struct netd_policy *p, const char *name)
{
        for (size_t i = 0; i < p->n; i++)
                if (net_entry_admits_name(&p->entries[i], name))
                        return true;
        return false;
}

enum netd_verdict netd_query_verdict(const struct netd_policy *p, const struct dns_query *q)
{
        bool listed = admits_name(p, q->name);

        if (q->qclass != DNS_CLASS_IN)
                return NETD_NOTIMP;
        if (p->mode == B4_NETWORK_ALLOW && listed)
                return q->qtype == DNS_T_A ? NETD_DENIED : NETD_NXDOMAIN;
        if (p->mode == B4_NETWORK_DENY && !listed)
                return NETD_NXDOMAIN;
        switch (q->qtype) {
        case DNS_T_A:
        case DNS_T_CNAME:
        case DNS_T_MX:
        case DNS_T_TXT:
        case DNS_T_SRV:
                return NETD_FORWARD;
        case DNS_T_AAAA:
        case DNS_T_HTTPS:
        case DNS_T_SVCB:
                return NETD_NODATA;
        default:
                return NETD_NOTIMP;
        }
}

static bool is_metadata(const uint8_t a[4])
{
        for (size_t i = 0; i < ELEMENTSOF(metadata4); i++)
                if (memcmp(a, metadata4[i], 4) == 0)
                        return true;
        return false;
}

/* Whether an IPv4 CIDR entry lying wholly inside @r contains @a (exactly, for metadata). */
static bool opened_by_entry(const struct netd_policy *p, const struct range4 *r, const uint8_t a[4])
{
        for (size_t i = 0; i < p->n; i++) {
                const struct b4_net_entry *e = &p->entries[i];

                if (e->kind != B4_NET_CIDR || e->family != AF_INET ||
                    !in_prefix(a, e->addr, e->prefix))
                        continue;
                if (is_metadata(a)
                            ? e->prefix == 32
                            : e->prefix >= r->prefix && in_prefix(e->addr, r->net, r->prefix))
                        return true;
        }
        return false;
}

bool netd_addr_refused(const struct netd_policy *p, const uint8_t a[4])
{
        if (p->mode != B4_NETWORK_DENY)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(never4); i++)
                if (in_prefix(a, never4[i].net, never4[i].prefix))
                        return !opened_by_entry(p, &never4[i], a);
        return false;
}

uint32_t netd_pin_life(const struct netd_policy *p, uint32_t ttl)
{
        return ttl < p->pin_floor_s ? p->pin_floor_s : ttl > p->pin_cap_s ? p->pin_cap_s : ttl;
}

size_t netd_name_ports(
        const struct netd_policy *p, const char *name, uint16_t *lo, uint16_t *hi, size_t max)
{
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++) {
                const struct b4_net_entry *e = &p->entries[i];

                if (!net_entry_admits_name(e, name))
                        continue;
                if (e->port_lo == 0)
                        return 0;
                if (n < max) {
                        lo[n] = e->port_lo;
                        hi[n] = e->port_hi;
                        n++;
                }
        }
        return n;
}
