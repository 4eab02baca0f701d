/* SPDX-License-Identifier: Apache-2.0 */
/* Set element keys of the inet b4box table (nft-key.h has the layout). */

#include "nft-key.h"

#include <string.h>

static void start(struct nft_key *k)
{
        memset(k, 0, sizeof(*k));
}

static void put_u32_host(uint8_t *at, uint32_t v)
{
        memcpy(at, &v, 4);
}

static void put_u32_be(uint8_t *at, uint32_t v)
{
        at[0] = (uint8_t)(v >> 24);
        at[1] = (uint8_t)(v >> 16);
        at[2] = (uint8_t)(v >> 8);
        at[3] = (uint8_t)v;
}

static void put_port(uint8_t *at, uint16_t port)
{
        at[0] = (uint8_t)(port >> 8);
        at[1] = (uint8_t)port;
}

void nft_key_iif(struct nft_key *k, unsigned ifindex)
{
        start(k);
        put_u32_host(k->key, ifindex);
        k->len = 4;
}

void nft_key_addr4(struct nft_key *k, const uint8_t ip[4])
{
        start(k);
        memcpy(k->key, ip, 4);
        k->len = 4;
}

void nft_key_iif_addr4(struct nft_key *k, unsigned ifindex, const uint8_t ip[4])
{
        start(k);
        put_u32_host(k->key, ifindex);
        memcpy(k->key + 4, ip, 4);
        k->len = 8;
}

void nft_key_iif_proto_port(struct nft_key *k, unsigned ifindex, uint8_t proto, uint16_t port)
{
        start(k);
        put_u32_host(k->key, ifindex);
        k->key[4] = proto;
        put_port(k->key + 8, port);
        k->len = 12;
}

/* @net/@prefix . @proto . @lo-@hi at @k's bytes from @at on (12 of them). */
static void put_net4_ports(struct nft_key *k,
                           size_t at,
                           const uint8_t net[4],
                           unsigned prefix,
                           uint8_t proto,
                           uint16_t lo,
                           uint16_t hi)
{
        uint32_t a =
                (uint32_t)net[0] << 24 | (uint32_t)net[1] << 16 | (uint32_t)net[2] << 8 | net[3];
        uint32_t m = prefix == 0 ? 0 : prefix >= 32 ? ~0u : ~0u << (32 - prefix);

        put_u32_be(k->key + at, a & m);
        k->key[at + 4] = proto;
        put_port(k->key + at + 8, lo);
        put_u32_be(k->key_end + at, (a & m) | ~m);
        k->key_end[at + 4] = proto;
        put_port(k->key_end + at + 8, hi);
        k->len = at + 12;
        k->range = true;
}

void nft_key_net4_ports(struct nft_key *k,
                        const uint8_t net[4],
                        unsigned prefix,
                        uint8_t proto,
                        uint16_t lo,
                        uint16_t hi)
{
        start(k);
        put_net4_ports(k, 0, net, prefix, proto, lo, hi);
}
