/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A Docker keeper's network (docs/docker.md §Network), net.c. Network "deny" without a list
 * is NetworkMode none everywhere. "allow", and any policy with a list, take one of two paths,
 * chosen once per provider:
 *   hostnet  b4box is root on the daemon's host (a unix socket to a daemon whose /info names
 *            this kernel and host name, hostnet_available()): NetworkMode none, then b4box
 *            plumbs its own veth into the container's namespace (hostnet/hostnet.h): the
 *            rules, netd and records are native's, so is what is enforced. The container's
 *            /etc/resolv.conf is bound from the thread's hostnet record (the gateway).
 *   bridge   otherwise: allow mode gets a per-thread bridge network b4-net-<id> (enable_icc
 *            off), never the default bridge; an allowlist gets NetworkMode none (nothing
 *            reachable: it cannot be enforced). The lists, the metadata address and DNS are
 *            not enforced on this path (preflight's rows say so).
 * B4BOX_DOCKER_HOSTNET=0 in the environment forces the bridge path (tests, operators).
 */

#include <stdbool.h>

#include "b4box/error.h"
#include "b4box/policy.h"
#include "b4box/provider-impl.h"

struct docker_client;
struct docker_net;

enum docker_net_path {
        DOCKER_NET_NONE,    /* NetworkMode none, nothing else */
        DOCKER_NET_HOSTNET, /* NetworkMode none + b4box's veth */
        DOCKER_NET_BRIDGE,  /* a per-thread bridge network */
        DOCKER_NET_UNKNOWN, /* the daemon's /info failed: not decided (prepare refuses) */
};

/* What a keeper's create body takes from its network (identity.c). */
struct docker_net_spec {
        char mode[64];     /* HostConfig.NetworkMode */
        char *resolv_bind; /* owned "<host path>:/etc/resolv.conf:ro", or NULL */
};

/* docker_net_new() - the network state of a provider talking to @d (borrowed, outlives it).
 * Return: 0 or -ENOMEM. */
int docker_net_new(struct docker_client *d, struct docker_net **ret);
void docker_net_free(struct docker_net *n);

/* docker_net_path() - the path a keeper with policy @p takes (the first call with a network
 * asks the daemon's /info once). */
enum docker_net_path docker_net_path(struct docker_net *n, const struct b4_policy *p);

/* docker_net_prepare() - before the keeper @id of thread @thread_id is created: on hostnet
 * the (empty) resolv.conf record a listed thread binds; on bridge in allow mode its network
 * (recreated).
 * *@ret is filled for the create body (docker_net_spec_clear() it). Errors carry B4_E2001. */
int docker_net_prepare(struct docker_net *n,
                       const char *id,
                       const char *thread_id,
                       const char *scope,
                       const struct b4_policy *p,
                       struct docker_net_spec *ret,
                       struct b4_error *err);
void docker_net_spec_clear(struct docker_net_spec *s);

/* docker_net_attach() - after the keeper @name (of @id) started: on hostnet, plumb the
 * container's network namespace (found by State.Pid, checked to be the container's by its
 * cgroup, and not this process's); nothing otherwise. On failure nothing of it is left.
 * Errors carry B4_E2001. */
int docker_net_attach(struct docker_net *n,
                      const char *id,
                      const char *name,
                      const char *thread_id,
                      const struct b4_policy *p,
                      struct b4_error *err);

/* docker_net_restart() - before a stopped keeper @id starts again (in a new network
 * namespace): on hostnet, its old plumbing removed and its resolv.conf record made again
 * (Docker binds the path at start); nothing otherwise. docker_net_attach() follows the start.
 * Errors carry B4_E2001. */
int docker_net_restart(struct docker_net *n,
                       const char *id,
                       const char *thread_id,
                       const struct b4_policy *p,
                       struct b4_error *err);

/* docker_net_revive() - a reused running keeper with a list: restart its netd if it died.
 * Return: 0, or a negative errno (then replace the keeper). */
int docker_net_revive(struct docker_net *n, const char *id, const struct b4_policy *p);

/* docker_net_detach() - after the keeper of @id is gone: its veth, elements, netd and records
 * (hostnet), or its bridge network. A no-op when it had none. */
void docker_net_detach(struct docker_net *n, const char *id);

/* docker_net_audit() - thread @id's network audit from its netd (hostnet path only; the
 * document of hostnet_audit_read()). Return: 0; -ENOENT with the reason in @err (the bridge
 * path, no list, no live keeper); -EIO; -ENOMEM. */
int docker_net_audit(struct docker_net *n, const char *id, char **ret_json, struct b4_error *err);

/* docker_net_preflight() - the network rows of `b4box check`: network allow, allowlist,
 * denylist, dns, with what is and is not enforced on this provider's path. */
int docker_net_preflight(struct docker_net *n, struct b4_preflight *ret);
