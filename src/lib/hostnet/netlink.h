/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Netlink for a sandbox's network (net.c): the veth pair, its addresses, the default route
 * and link state, over one NETLINK_ROUTE socket each side, no spawned `ip`; and one nf_tables
 * query (netpolicy.c). Every call waits for the kernel's acknowledgement and returns 0 or its
 * negative errno.
 */

#include <stdint.h>

struct nl_sock;

/* rtnl_open() - a NETLINK_ROUTE socket in the calling thread's network namespace (close it with
 * rtnl_close()). Return: the socket, or NULL with errno set. */
struct nl_sock *rtnl_open(void);
void rtnl_close(struct nl_sock *nl);

/* rtnl_veth_add() - create the veth pair @host here and @peer directly in the network
 * namespace @netns_fd (both down). Return: 0, -EEXIST, or another negative errno. */
int rtnl_veth_add(struct nl_sock *nl, const char *host, const char *peer, int netns_fd);

/* rtnl_link_del() - delete link @name (a veth takes its peer along). Return: 0, -ENODEV. */
int rtnl_link_del(struct nl_sock *nl, const char *name);

/* rtnl_link_up() - set link @ifindex up. */
int rtnl_link_up(struct nl_sock *nl, unsigned ifindex);

/* rtnl_addr4_add() - add @addr/@prefix (IPv4, network order) to link @ifindex. */
int rtnl_addr4_add(struct nl_sock *nl, unsigned ifindex, const uint8_t addr[4], unsigned prefix);

/* rtnl_route4_default() - add the IPv4 default route via @gw (network order) on link @ifindex. */
int rtnl_route4_default(struct nl_sock *nl, unsigned ifindex, const uint8_t gw[4]);

/* nft_inet_set_exists() - whether the inet table @table has the set @set. Return: 0 when it
 * has, -ENOENT when it (or the table) has not, another negative errno. */
int nft_inet_set_exists(const char *table, const char *set);
