/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `inet b4box` table and a listed thread's elements (docs/native.md §Network). The
 * table text is b4box.nft, embedded at build time; it only ever `add`s and `flush`es its own
 * chains, so installing it again is harmless. A thread's elements are one transaction:
 *   mode    deny (allowlist) or allow (denylist)
 *   dnsport, dnsin  its netd's port
 *   src4    the sandbox's address
 *   its own set cidrs_<ifindex> and chain thread_<ifindex>, when its list has IPv4 CIDRs:
 *           allowlist CIDRs minus the special ranges they do not lie in (netpolicy_cidr4),
 *           a match goes to `passed`; denylist CIDRs as written, a match goes to `denied`;
 *           the map `own` jumps there from deny_mode / allow_mode
 *   its own sets pins_<ifindex> (a hash: `name:port`) and pinsr_<ifindex> (interval:
 *           `name:port-port`), empty (netd writes them), and the chain, when its allowlist
 *           has such entries: a pin outside never4 goes to `passed`
 * Names go to netd; IPv6 entries are inert (a listed sandbox's IPv6 is rejected entirely).
 */

#include "netpolicy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "core/net-narrow.h"
#include "core/nft-key.h"
#include "netlink.h"
#include "nft-dl.h"
#include "nft-elems.h"

extern const char netpolicy_table_nft[];

bool netpolicy_listed(const struct b4_policy *p)
{
        return p->n_network_list > 0;
}

bool netpolicy_has_upstream(const struct b4_policy *p)
{
        char line[256], addr[64];
        bool names = false, found = false;
        FILE *f;

        for (size_t i = 0; i < p->n_network_list; i++)
                names = names || p->network_list[i].kind != B4_NET_CIDR;
        if (!names || p->dns.n_upstream > 0)
                return true;
        f = fopen("/etc/resolv.conf", "re");
        if (!f)
                return false;
        while (!found && fgets(line, sizeof(line), f))
                found = sscanf(line, " nameserver %63s", addr) == 1;
        (void)fclose(f);
        return found;
}

static uint32_t be32(const uint8_t a[4])
{
        return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

static uint32_t mask(unsigned prefix)
{
        return prefix == 0 ? 0 : ~0u << (32 - prefix);
}

/* Whether a/ap lies inside b/bp. */
static bool inside(uint32_t a, unsigned ap, uint32_t b, unsigned bp)
{
        return ap >= bp && (a & mask(bp)) == (b & mask(bp));
}

struct cut {
        uint32_t net[NET_N_SPECIAL4 + NET_N_METADATA4];
        unsigned prefix[NET_N_SPECIAL4 + NET_N_METADATA4];
        size_t n;
};

static void emit(const struct cut *c,
                 uint32_t net,
                 unsigned prefix,
                 void (*fn)(const uint8_t net[4], unsigned prefix, void *data),
                 void *data)
{
        bool overlaps = false;

        for (size_t i = 0; i < c->n; i++) {
                if (inside(net, prefix, c->net[i], c->prefix[i]))
                        return; /* wholly cut */
                if (inside(c->net[i], c->prefix[i], net, prefix))
                        overlaps = true;
        }
        if (!overlaps) {
                uint8_t a[4] = { (uint8_t)(net >> 24), (uint8_t)(net >> 16), (uint8_t)(net >> 8),
                                 (uint8_t)net };

                fn(a, prefix, data);
                return;
        }
        emit(c, net, prefix + 1, fn, data);
        emit(c, net | (1u << (31 - prefix)), prefix + 1, fn, data);
}

void netpolicy_cidr4(const struct b4_net_entry *e,
                     void (*fn)(const uint8_t net[4], unsigned prefix, void *data),
                     void *data)
{
        uint32_t net = be32(e->addr);
        struct cut c = { .n = 0 };

        for (size_t i = 0; i < NET_N_SPECIAL4; i++) {
                uint32_t s = be32(net_special4[i].net);

                if (!inside(net, e->prefix, s, net_special4[i].prefix)) {
                        c.net[c.n] = s;
                        c.prefix[c.n++] = net_special4[i].prefix;
                }
        }
        for (size_t i = 0; i < NET_N_METADATA4; i++) {
                uint32_t m = be32(net_metadata4[i].net);

                if (!(e->prefix == 32 && net == m)) {
                        c.net[c.n] = m;
                        c.prefix[c.n++] = 32;
                }
        }
        emit(&c, net, e->prefix, fn, data);
}

struct cidr_out {
        struct nft_elems *l;
        const struct netpolicy_thread *t;
        const struct b4_net_entry *e;
        int r;
};

static void add_cidr(const uint8_t net[4], unsigned prefix, void *data)
{
        static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP };
        struct cidr_out *o = data;
        uint16_t lo = o->e->port_lo ? o->e->port_lo : 0;
        uint16_t hi = o->e->port_lo ? o->e->port_hi : 65535;

        for (size_t i = 0; i < ELEMENTSOF(protos) && o->r >= 0; i++) {
                struct nft_elem x = { .set = NFT_SET_OWN4, .ifindex = o->t->ifindex };

                nft_key_net4_ports(&x.k, net, prefix, protos[i], lo, hi);
                o->r = nft_elems_push(o->l, &x);
        }
}

static bool cidr4_entry(const struct b4_net_entry *e)
{
        return e->kind == B4_NET_CIDR && e->family == AF_INET;
}

/* Whether @p's list has IPv4 CIDRs (and so the thread a CIDR set and a chain of its own). */
static bool has_cidr4(const struct b4_policy *p)
{
        for (size_t i = 0; i < p->n_network_list; i++)
                if (cidr4_entry(&p->network_list[i]))
                        return true;
        return false;
}

/* Whether @p is an allowlist with `name:port` entries (@ranges: `name:port-port`), and so
 * the thread a pin set and a chain of its own: b4box-netd pins such a name's addresses with
 * their ports there. */
static bool has_port_names(const struct b4_policy *p, bool ranges)
{
        if (p->network != B4_NETWORK_DENY)
                return false; /* a denylisted name's pins (dpin4) have no ports */
        for (size_t i = 0; i < p->n_network_list; i++) {
                const struct b4_net_entry *e = &p->network_list[i];

                if (e->kind != B4_NET_CIDR && e->port_lo != 0 &&
                    (e->port_hi != e->port_lo) == ranges)
                        return true;
        }
        return false;
}

/* The thread's own sets (cidrs_<ifindex> with its elements for every IPv4 CIDR entry,
 * allowlist: minus the special ranges, denylist: as written; pins_<ifindex>, pinsr_<ifindex>,
 * empty), its own
 * chain and the `own` element that jumps there; nothing without CIDRs or `name:port`. */
static int own_elements(struct nft_elems *l,
                        const struct b4_policy *p,
                        const struct netpolicy_thread *t)
{
        bool deny = p->network == B4_NETWORK_DENY, cidrs = has_cidr4(p);
        bool pins = has_port_names(p, false), pinsr = has_port_names(p, true);
        struct cidr_out o = { .l = l, .t = t };
        struct nft_elem obj = { .set = NFT_OWN_SET, .ifindex = t->ifindex };

        if (!cidrs && !pins && !pinsr)
                return 0;
        nft_key_iif(&obj.k, t->ifindex);
        if (cidrs)
                o.r = nft_elems_push(l, &obj);
        for (size_t i = 0; cidrs && i < p->n_network_list && o.r >= 0; i++) {
                const struct b4_net_entry *e = &p->network_list[i];

                if (!cidr4_entry(e))
                        continue;
                o.e = e;
                if (deny)
                        netpolicy_cidr4(e, add_cidr, &o);
                else
                        add_cidr(e->addr, e->prefix, &o);
        }
        obj.set = NFT_OWN_PINS;
        if (o.r >= 0 && pins)
                o.r = nft_elems_push(l, &obj);
        obj.set = NFT_OWN_PINSR;
        if (o.r >= 0 && pinsr)
                o.r = nft_elems_push(l, &obj);
        obj.set = NFT_OWN_CHAIN;
        obj.match = !cidrs ? NULL : deny ? "passed" : "denied";
        obj.pins = pins;
        obj.pinsr = pinsr;
        if (o.r >= 0)
                o.r = nft_elems_push(l, &obj);
        obj.set = NFT_SET_OWN;
        obj.match = NULL;
        obj.pins = obj.pinsr = false;
        if (o.r >= 0)
                o.r = nft_elems_push(l, &obj);
        return o.r;
}

static int push(struct nft_elems *l, enum nft_set set, const struct nft_key *k, uint16_t port)
{
        struct nft_elem e = { .set = set, .k = *k, .port = port };

        return nft_elems_push(l, &e);
}

int netpolicy_thread_elems(const struct b4_policy *p,
                           const struct netpolicy_thread *t,
                           struct nft_elems *ret)
{
        bool listed = netpolicy_listed(p);
        const char *chain = !listed                         ? "open_mode"
                            : p->network == B4_NETWORK_DENY ? "deny_mode"
                                                            : "allow_mode";
        struct nft_key k;
        int r;

        nft_key_addr4(&k, t->sandbox);
        r = push(ret, NFT_SET_MASQ4, &k, 0);
        nft_key_iif_addr4(&k, t->ifindex, t->sandbox);
        if (r >= 0)
                r = push(ret, NFT_SET_SRC4, &k, 0);
        if (listed) {
                nft_key_iif(&k, t->ifindex);
                if (r >= 0)
                        r = push(ret, NFT_SET_DNSPORT, &k, t->netd_port);
                nft_key_iif_proto_port(&k, t->ifindex, IPPROTO_UDP, t->netd_port);
                if (r >= 0)
                        r = push(ret, NFT_SET_DNSIN, &k, 0);
                nft_key_iif_proto_port(&k, t->ifindex, IPPROTO_TCP, t->netd_port);
                if (r >= 0)
                        r = push(ret, NFT_SET_DNSIN, &k, 0);
                if (r >= 0)
                        r = own_elements(ret, p, t);
        }
        /* the mode element last (nft_elems_commit() deletes it first) */
        nft_key_iif(&k, t->ifindex);
        if (r >= 0) {
                struct nft_elem e = {
                        .set = NFT_SET_MODE, .k = k, .chain = chain, .ifindex = t->ifindex
                };

                r = nft_elems_push(ret, &e);
        }
        return r;
}

int netpolicy_run(const char *text, struct b4_error *err)
{
        const char *why = NULL;
        const struct nft_dl *nft = nft_dl(&why);
        struct nft_ctx *ctx;
        int r = 0;

        if (!nft)
                return b4_error_set(err, -EOPNOTSUPP, "%s", why);
        ctx = nft->ctx_new(NFT_CTX_DEFAULT);
        if (!ctx)
                return b4_error_set(err, -ENOMEM, "cannot create an nftables context");
        (void)nft->buffer_output(ctx);
        (void)nft->buffer_error(ctx);
        if (nft->run_cmd_from_buffer(ctx, text) != 0) {
                const char *e = nft->get_error_buffer(ctx);

                r = b4_error_set(err, -EIO, "nftables refused the b4box table: %.300s",
                                 e ? e : "no message");
        }
        nft->ctx_free(ctx);
        return r;
}

/* The set that marks the table as installed from this b4box.nft: "v" and the text's FNV-1a. */
static void table_marker(char out[24])
{
        uint64_t h = 0xcbf29ce484222325ull;

        for (const char *c = netpolicy_table_nft; *c; c++)
                h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
        (void)snprintf(out, 24, "v%016llx", (unsigned long long)h);
}

/* Installing commits every chain's rules again (≈ 8 ms); a table that has this text's marker
 * is current, and one netlink query (≈ 50 µs) says so. */
int netpolicy_table_install(struct b4_error *err)
{
        cleanup_free char *text = NULL;
        char marker[24];

        table_marker(marker);
        if (nft_inet_set_exists("b4box", marker) == 0)
                return 0;
        if (b4_asprintf(&text, "%sadd set inet b4box %s { type ipv4_addr; }\n", netpolicy_table_nft,
                        marker) < 0)
                return b4_error_set(err, -ENOMEM, "cannot compile the b4box table");
        return netpolicy_run(text, err);
}

int netpolicy_probe(const char **ret_why)
{
        const struct nft_dl *nft = nft_dl(ret_why);
        struct nft_ctx *ctx;
        int r;

        if (!nft)
                return -EOPNOTSUPP;
        ctx = nft->ctx_new(NFT_CTX_DEFAULT);
        if (!ctx)
                return *ret_why = "libnftables cannot create a context", -ENOMEM;
        (void)nft->buffer_output(ctx);
        (void)nft->buffer_error(ctx);
        nft->set_dry_run(ctx, true);
        r = nft->run_cmd_from_buffer(ctx, netpolicy_table_nft) == 0 ? 0 : -EOPNOTSUPP;
        nft->ctx_free(ctx);
        *ret_why = r < 0 ? "nf_tables refuses the b4box table (sets with timeouts, "
                           "concatenated intervals, iface_index maps, redirect)"
                         : NULL;
        return r;
}
