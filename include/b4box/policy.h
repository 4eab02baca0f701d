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
        B4_NETWORK_ALLOW = 0, /* outbound allowed (denylist not enforced yet) */
        B4_NETWORK_DENY = 1,  /* no network but loopback (allowlist not enforced yet) */
};

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
        char **network_list;    /* owned strv: denylist (allow) or allowlist (deny); may be NULL */
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
/** b4_env_name_is_valid() - whether @name matches ^[A-Za-z_][A-Za-z0-9_]*$. */
B4_PUBLIC bool b4_env_name_is_valid(const char *name);
