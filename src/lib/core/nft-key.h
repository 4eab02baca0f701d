/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The keys of the `inet b4box` table's set elements (b4box.nft) in the layout nf_tables
 * stores them, the one encoding that b4box-netd's pins and the library's thread elements
 * share. nft registers are 4-byte aligned: iface_index is a host-order u32 in a hash set but
 * network order in an interval set (its ranges compare big-endian, and nft byte-swaps iif in
 * those lookups), ipv4_addr is 4 bytes in network order, inet_proto 1 byte padded to 4,
 * inet_service 2 bytes (network order) padded to 4. Pure functions.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NFT_KEY_MAX 16

/* One element's key; an interval element (@range) also has key_end, the range's last key. */
struct nft_key {
        uint8_t key[NFT_KEY_MAX], key_end[NFT_KEY_MAX];
        size_t len;
        bool range;
};

/* nft_key_iif() - `iface_index` (the maps mode and dnsport). */
void nft_key_iif(struct nft_key *k, unsigned ifindex);

/* nft_key_addr4() - `ipv4_addr` (masq4). */
void nft_key_addr4(struct nft_key *k, const uint8_t ip[4]);

/* nft_key_iif_addr4() - `iface_index . ipv4_addr` (src4, pin4). */
void nft_key_iif_addr4(struct nft_key *k, unsigned ifindex, const uint8_t ip[4]);

/* nft_key_iif_proto_port() - `iface_index . inet_proto . inet_service` (dnsin). */
void nft_key_iif_proto_port(struct nft_key *k, unsigned ifindex, uint8_t proto, uint16_t port);

/*
 * nft_key_net4_ports() - the interval `ipv4_addr . inet_proto . inet_service` from
 * @net/@prefix and ports @lo-@hi (a thread's own set cidrs_<ifindex>;
 * big-endian throughout, the end the last address). Host bits of @net are ignored.
 */
void nft_key_net4_ports(struct nft_key *k,
                        const uint8_t net[4],
                        unsigned prefix,
                        uint8_t proto,
                        uint16_t lo,
                        uint16_t hi);
