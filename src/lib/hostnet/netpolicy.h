/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Network lists (docs/native.md §Network, docs/docker.md §Network): the host-side `inet b4box`
 * table (b4box.nft, installed idempotently through libnftables), a thread's elements compiled from
 * its policy, and its b4box-netd. Used by veth.c for threads whose policy has a list.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"
#include "b4box/policy.h"

struct hostnet;
struct nft_elems;

/* What one listed thread's elements are keyed by and point to. */
struct netpolicy_thread {
        unsigned ifindex;   /* the host veth */
        uint8_t sandbox[4]; /* the sandbox's address (src4) */
        uint16_t netd_port; /* b4box-netd's port on the gateway address */
};

/* netpolicy_listed() - whether @p has a list (and so a veth, the table and a netd). */
bool netpolicy_listed(const struct b4_policy *p);

/* netpolicy_has_upstream() - whether @p's names can be resolved: it has none, it sets
 * dns.upstream, or the host's /etc/resolv.conf has a nameserver. */
bool netpolicy_has_upstream(const struct b4_policy *p);

/*
 * netpolicy_cidr4() - the IPv4 prefixes an allowlist CIDR @e opens: @e minus every special
 * range (private, loopback, link-local, multicast, reserved) not containing @e, and minus
 * the metadata addresses unless @e is exactly one. Calls @fn for each prefix, in order.
 */
void netpolicy_cidr4(const struct b4_net_entry *e,
                     void (*fn)(const uint8_t net[4], unsigned prefix, void *data),
                     void *data);

/*
 * netpolicy_thread_elems() - append thread @t's elements under policy @p to @ret (in the
 * order nft_elems_commit() adds them, the mode element last): masq4 and src4 for every
 * thread with a veth; a listed thread's dnsport, dnsin and, when its list has IPv4 CIDRs,
 * its own set cidrs_<ifindex> (allowlist minus the special ranges, or denylist as written),
 * the set's elements, its own chain thread_<ifindex> and its `own` element (jump there); mode
 * (goto open_mode, allow_mode or deny_mode). Return: 0 or -ENOMEM.
 */
int netpolicy_thread_elems(const struct b4_policy *p,
                           const struct netpolicy_thread *t,
                           struct nft_elems *ret);

/* netpolicy_run() - run nft commands @text in one transaction. Return: 0, -EIO (message in @err).
 */
int netpolicy_run(const char *text, struct b4_error *err);

/* netpolicy_table_install() - create or refresh the `inet b4box` table, unless it already has
 * this b4box.nft's marker set (one netlink query). Return: 0, -ENOMEM, -EIO. */
int netpolicy_table_install(struct b4_error *err);

/* netpolicy_probe() - whether libnftables can install the table here; @ret_why when not. */
int netpolicy_probe(const char **ret_why);

/*
 * netd_start() - start thread @id's b4box-netd (found like the keeper: $B4BOX_NETD, the
 * install path, the build path) listening on @gateway for the veth @ifindex, with @p's list
 * and dns options; record it as run/<id>.netd ("<pid> <starttime>"), its log run/<id>.netd.log.
 * Return: 0 with *@ret_port, or a negative errno (message in @err).
 */
int netd_start(const struct hostnet *hn,
               const char *id,
               const struct b4_policy *p,
               unsigned ifindex,
               const char *gateway,
               uint16_t *ret_port,
               struct b4_error *err);

/* netd_stop() - stop the netd recorded for @id (checked by start time), drop its record and
 * its log. */
void netd_stop(const struct hostnet *hn, const char *id);

/* netd_exe_path() - the b4box-netd that netd_start() would run, or NULL. */
const char *netd_exe_path(void);
