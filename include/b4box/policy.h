/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The sandbox policy a provider receives at acquire (the seeds' SandboxPolicy), with the
 * secure defaults of reference §2.1 filled in by b4_policy_init().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

enum b4_network_mode {
        B4_NETWORK_ALLOW = 0, /* outbound allowed but for the denylist */
        B4_NETWORK_DENY = 1,  /* loopback, plus the allowlist when there is one */
};

/*
 * One allowlist/denylist entry, `target[:port[-port]]` (docs/configuration.md
 * §sandbox.network): an address or CIDR, an exact name, or a wildcard `*.suffix` (subdomains
 * at any depth, not the apex).
 */
enum b4_net_kind {
        B4_NET_CIDR = 0,     /* family, addr, prefix */
        B4_NET_NAME = 1,     /* name, exactly */
        B4_NET_WILDCARD = 2, /* any name ending in "." + name */
};

#define B4_NET_NAME_MAX     253 /* a DNS name in text, without the final dot */
#define B4_NET_MAX_UPSTREAM 3   /* resolv.conf's MAXNS */

struct b4_net_entry {
        char *text; /* owned: the entry as configured */
        enum b4_net_kind kind;
        int family;       /* AF_INET or AF_INET6 (B4_NET_CIDR), else 0 */
        uint8_t addr[16]; /* B4_NET_CIDR: network address, host bits zero (IPv4: 4 bytes) */
        uint8_t prefix;   /* B4_NET_CIDR: 0..32 or 0..128 */
        /* lowercased, no final dot; B4_NET_WILDCARD: the suffix after "*."; NULL for CIDR */
        char *name;       /* owned */
        uint16_t port_lo; /* 0 with port_hi 0: every port; else 1 <= lo <= hi */
        uint16_t port_hi;
};

struct b4_net_addr {
        int family; /* AF_INET or AF_INET6 */
        uint8_t addr[16];
};

/* `sandbox.network.dns`: how names in the lists are resolved and pinned. */
struct b4_net_dns {
        uint32_t pin_floor_s; /* default 30, >= 1 */
        uint32_t pin_cap_s;   /* default 3600, >= pin_floor_s */
        struct b4_net_addr upstream[B4_NET_MAX_UPSTREAM];
        size_t n_upstream; /* 0: the host's resolvers */
};

#define B4_DEFAULT_PIN_FLOOR_S 30
#define B4_DEFAULT_PIN_CAP_S   3600

struct b4_env_var {
        char *name;  /* owned; matches ^[A-Za-z_][A-Za-z0-9_]*$ */
        char *value; /* owned */
};

struct b4_resources {
        uint64_t memory_mb;  /* 0 = unset */
        double cpus;         /* 0 = unset */
        uint64_t timeout_ms; /* 0 = unset: no command timeout */
        uint64_t disk_gb;    /* 0 = unset (Kubernetes PVC size) */
};

struct b4_security {
        bool drop_all_capabilities; /* default true */
        bool no_new_privileges;     /* default true */
        bool read_only_root;        /* default true */
        bool run_as_non_root;       /* default true; false = the image's default user */
        uint32_t uid, gid;          /* with run_as_non_root; default 1000:1000 */
        uint32_t pids_limit;        /* default 512 */
};

#define B4_DEFAULT_UID             1000
#define B4_DEFAULT_GID             1000
#define B4_DEFAULT_PIDS_LIMIT      512
#define B4_DEFAULT_OUTPUT_CAP      (10u * 1024 * 1024)
#define B4_DEFAULT_IDLE_TIMEOUT_MS 600000u

struct b4_policy {
        enum b4_network_mode network;
        /* owned: denylist (allow) or allowlist (deny), in config order; may be NULL */
        struct b4_net_entry *network_list;
        size_t n_network_list;
        struct b4_net_dns dns;
        struct b4_env_var *env; /* owned array; the ONLY environment a command gets */
        size_t n_env;
        struct b4_resources resources;
        struct b4_security security;
        size_t output_cap; /* per stream, bytes; default B4_DEFAULT_OUTPUT_CAP */
};

/** b4_policy_init() - fill @p with the secure defaults (network allow, no env). */
B4_PUBLIC void b4_policy_init(struct b4_policy *p);
/** b4_policy_clear() - free what @p owns and re-init it. */
B4_PUBLIC void b4_policy_clear(struct b4_policy *p);
/** b4_policy_copy() - deep copy. Return: 0 or -ENOMEM (@dst left initialised). */
B4_PUBLIC int b4_policy_copy(struct b4_policy *dst, const struct b4_policy *src);
/** b4_policy_set_env() - add or replace one variable. Return: 0, -EINVAL (bad name), -ENOMEM. */
B4_PUBLIC int b4_policy_set_env(struct b4_policy *p, const char *name, const char *value);
/** b4_net_entries_free() - free @n entries and the array @l (NULL is fine). */
B4_PUBLIC void b4_net_entries_free(struct b4_net_entry *l, size_t n);
/** b4_env_name_is_valid() - whether @name matches ^[A-Za-z_][A-Za-z0-9_]*$. */
B4_PUBLIC bool b4_env_name_is_valid(const char *name);
