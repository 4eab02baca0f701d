/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Host-side networking of a sandbox whose network namespace exists already (a native
 * keeper's, a Docker container's started with NetworkMode none): a veth pair plumbed into
 * it over rtnetlink, a /30 out of 10.233.0.0/16, the thread's elements in the host-side
 * `inet b4box` table (netpolicy.h) and, for a policy with a list, its b4box-netd; and the
 * teardown of all of it. Nothing is exec'd but netd. Used by the providers that run on
 * this host as root (docs/native.md §Network, docs/docker.md §Network); it knows no
 * provider.
 *
 * Every record lives under the caller's run directory: <id>.net (the subnet number),
 * <id>.nft (the delete commands), <id>.resolv (the nameserver file the sandbox binds over
 * /etc/resolv.conf), <id>.netd and <id>.netd.log (netd-run.c). A thread's host veth is
 * named b4h<12 hex of @hid>: @hid (40 hex, the caller's) must be unique on the host.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "b4box/error.h"
#include "b4box/policy.h"

/* Where a provider keeps a thread's network records; both borrowed, valid while in use. */
struct hostnet {
        int run_fd;          /* a directory only b4box writes */
        const char *run_dir; /* its path (the resolv.conf file is bound from there) */
};

/* hostnet_available() - whether this process can plumb a veth with NAT: root, and
 * net.ipv4.ip_forward=1 (checked, never changed). Return: 0, or -EPERM / -ENETDOWN with the
 * reason in *@ret_why (static text). */
int hostnet_available(const char **ret_why);

/* hostnet_forward_state() - how allow-mode traffic meets another FORWARD chain here: 0 no
 * policy of DROP, 1 b4box's accepts are in it, 2 they will be added at the first setup,
 * -EOPNOTSUPP a legacy iptables filter table b4box cannot reach. *@ret_what says it. */
int hostnet_forward_state(const char **ret_what);

struct b4_preflight;

/* hostnet_preflight() - the rows of `b4box check` for sandboxes plumbed through hostnet here:
 * network allow, network forward, network allowlist, network denylist, network dns, each
 * ENFORCED with what is or NOT ENFORCED with the first reason. Return: 0 or -ENOMEM. */
int hostnet_preflight(struct b4_preflight *p);

/* hostnet_listed() - whether @p has a network list (then a netd and a resolv.conf). */
bool hostnet_listed(const struct b4_policy *p);

/* hostnet_netns_open() - open /proc/@pid/ns/net. Return: an O_CLOEXEC fd, or -errno. */
int hostnet_netns_open(pid_t pid);

/*
 * hostnet_setup() - give the network namespace @netns_fd an eth0 with 10.233.<n>.2/30 and a
 * default route via the host side, the elements of @p (allow: open mode; a list: its mode,
 * then netd answering DNS on the gateway, whose address is written into <id>.resolv when
 * hostnet_resolv_prepare() made it). The namespace must have no eth0. On failure everything
 * made is removed before returning. Return: 0 or a negative errno (message in @err; the
 * host cannot do it: B4_CODE_SANDBOX_UNAVAILABLE).
 */
int hostnet_setup(const struct hostnet *hn,
                  const char *id,
                  const char *hid,
                  int netns_fd,
                  const struct b4_policy *p,
                  struct b4_error *err);

/* hostnet_resolv_prepare() - create the (empty) <id>.resolv the sandbox binds over
 * /etc/resolv.conf before its namespace exists; hostnet_setup() writes its nameserver.
 * *@ret is its path (new). Return: 0, -ENOMEM or -errno. */
int hostnet_resolv_prepare(const struct hostnet *hn, const char *id, char **ret);

/* hostnet_lists_revive() - restart thread @id's netd if it died (a new port: the elements
 * are swapped in one transaction). Return: 0, -ENOENT (no lists recorded), another negative
 * errno (message in @err). */
int hostnet_lists_revive(const struct hostnet *hn,
                         const char *id,
                         const char *hid,
                         const struct b4_policy *p,
                         struct b4_error *err);

/* hostnet_teardown() - remove what hostnet_setup() made for @id (a no-op when nothing was):
 * netd and the records at once; the veth, the elements, then the subnet claim by a detached
 * grandchild unless @wait (the namespace is gone or going, so they are inert; tens of ms). */
void hostnet_teardown(const struct hostnet *hn, const char *id, const char *hid, bool wait);
