/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a hostnet sandbox's network enforces on this host, as `b4box check` rows (the same
 * for every provider that plumbs through hostnet): network allow, forward, allowlist,
 * denylist, dns. Probes: root and forwarding (hostnet_available()), b4box-netd found, a dry
 * run of the b4box table through libnftables.
 */

#include <stddef.h>

#include "b4box/provider-impl.h"

#include "hostnet.h"
#include "netpolicy.h"

static int allow_row(struct b4_preflight *p)
{
        const char *why = NULL, *fwd = NULL;
        int r, f;

        if (hostnet_available(&why) < 0 || netpolicy_probe(&why) < 0)
                return b4_preflight_control(p, "network allow", B4_NOT_ENFORCED,
                                            "%s: allow-mode sandboxes cannot start here", why);
        r = b4_preflight_control(p, "network allow", B4_ENFORCED,
                                 "per-thread veth (rtnetlink) + NAT (nft table inet b4box), "
                                 "IPv4 only (IPv6 disabled on the veth and rejected by the "
                                 "table); 169.254.0.0/16, the host's own addresses (IPv4 and "
                                 "IPv6) and other sandboxes unreachable");
        f = hostnet_forward_state(&fwd);
        if (r >= 0)
                r = b4_preflight_control(p, "network forward",
                                         f < 0 ? B4_NOT_ENFORCED : B4_ENFORCED, "%s", fwd);
        return r;
}

/* Network lists (netpolicy.c): what is enforced, or the first reason it cannot be here. */
static int lists_rows(struct b4_preflight *p)
{
        const char *why = NULL;
        int r;

        if (hostnet_available(&why) >= 0 && !netd_exe_path())
                why = "b4box-netd is not installed (set B4BOX_NETD)";
        if (!why)
                (void)netpolicy_probe(&why);
        if (why) {
                r = b4_preflight_control(p, "network allowlist", B4_NOT_ENFORCED,
                                         "%s: sandboxes with an allowlist cannot start here", why);
                if (r >= 0)
                        r = b4_preflight_control(p, "network denylist", B4_NOT_ENFORCED,
                                                 "%s: sandboxes with a denylist cannot start here",
                                                 why);
                if (r >= 0)
                        r = b4_preflight_control(p, "network dns", B4_NOT_ENFORCED,
                                                 "%s: no b4box DNS filter here", why);
                return r;
        }
        r = b4_preflight_control(
                p, "network allowlist", B4_ENFORCED,
                "CIDR[:port] and DNS-pinned names (nft table inet b4box, pins for the answer's TTL "
                "clamped to dns.pinFloorSeconds..pinCapSeconds); DNS confined: every :53 packet "
                "goes to the thread's b4box-netd, unlisted names NXDOMAIN and never sent "
                "upstream; rebinding answers refused; metadata only when named exactly; IPv6 "
                "rejected (IPv6 entries are inert). Residual risk: a pinned address serves every "
                "name hosted on it (no SNI/Host check)");
        if (r >= 0)
                r = b4_preflight_control(
                        p, "network denylist", B4_ENFORCED,
                        "best-effort by nature: listed CIDRs dropped, listed names NXDOMAIN and "
                        "their addresses dropped for the thread (dpin4: exact names resolved by "
                        "b4box-netd at start and at each pin's end, any listed name when the "
                        "thread asks), DoT (853) rejected; an address the upstream does not give "
                        "netd stays reachable by IP, and DoH or a proxy gets around any name");
        if (r >= 0)
                r = b4_preflight_control(
                        p, "network dns", B4_ENFORCED,
                        "with a list: every packet to port 53 (UDP and TCP, any address) reaches "
                        "the thread's b4box-netd, which asks dns.upstream (else the host's "
                        "resolvers; a list naming hosts needs one) from the host side; deny "
                        "without a list has no DNS; allow without a list uses the image's "
                        "resolv.conf, unfiltered");
        return r;
}

int hostnet_preflight(struct b4_preflight *p)
{
        int r = allow_row(p);

        return r < 0 ? r : lists_rows(p);
}
