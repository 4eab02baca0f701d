/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy parts of `sandbox`: network (lists parsed into typed entries by net-entry.c,
 * DNS pinning options), env, resources and security (reference §2.1, §2.3), filling the
 * app's struct b4_policy. Env maps also follow the §2.4 limits
 * (at most 256 names, values at most 32768 bytes without NUL) and are kept sorted by name.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"
#include "net-entry.h"

#define MAX_NETWORK_LIST 256
#define MAX_ENTRY        256
#define MAX_PIN_S        86400ull
#define MAX_MEMORY_MB    4194304ull
#define MAX_CPUS         1024.0
#define MAX_TIMEOUT_MS   86400000ull
#define MAX_DISK_GB      65536ull
#define MAX_OUTPUT_CAP   (1024ull * 1024 * 1024)
#define MAX_PIDS         4194304ull
#define MAX_ID           4294967294ull

static const char *const network_keys[] = { "mode", "denylist", "allowlist", "dns", NULL };
static const char *const dns_keys[] = { "pinFloorSeconds", "pinCapSeconds", "upstream", NULL };
static const char *const resource_keys[] = { "memoryMb", "cpus",           "timeoutMs",
                                             "diskGb",   "outputCapBytes", NULL };
static const char *const security_keys[] = {
        "dropAllCapabilities", "noNewPrivileges", "readOnlyRootFilesystem",
        "runAsNonRoot",        "pidsLimit",       NULL
};
static const char *const identity_keys[] = { "uid", "gid", NULL };

static void parse_entry(struct cfg *c,
                        const struct jv *v,
                        const char *path,
                        bool allowlist,
                        struct b4_net_entry *ret,
                        size_t *n)
{
        cleanup_free char *s = NULL;
        const char *why = NULL;
        int r;

        if (!cfg_string(c, v, path, MAX_ENTRY, &s))
                return;
        if (strcmp(s, "*") == 0) {
                cfg_refuse(c, "b4box.json %s \"*\" would %s every name: use mode \"%s\" instead.",
                           path, allowlist ? "admit" : "deny", allowlist ? "allow" : "deny");
                return;
        }
        r = net_entry_parse(s, &ret[*n], &why);
        if (r == -EINVAL)
                cfg_refuse(c, "b4box.json %s %s (got: %s).", path, why, cfg_got(c, v));
        else if (r < 0)
                cfg_fail(c, r);
        else
                (*n)++;
}

void config_parse_net_list(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           bool allowlist,
                           struct b4_net_entry **ret,
                           size_t *ret_n)
{
        char at[CFG_PATH_MAX];
        struct b4_net_entry *l;
        size_t n = 0;

        if (!jv_is_array(v) || jv_array_size(v) > MAX_NETWORK_LIST) {
                cfg_refuse(c, "b4box.json %s must be an array of at most %d strings (got: %s).",
                           path, MAX_NETWORK_LIST, cfg_got(c, v));
                return;
        }
        l = b4_calloc(jv_array_size(v) + 1, sizeof(*l));
        if (!l) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (size_t i = 0; i < jv_array_size(v); i++)
                parse_entry(c, jv_array_get(v, i), cfg_index(at, path, i), allowlist, l, &n);
        b4_net_entries_free(*ret, *ret_n);
        *ret = l;
        *ret_n = n;
}

static void parse_upstream(struct cfg *c, const struct jv *v, struct b4_net_dns *d)
{
        char at[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) < 1 || jv_array_size(v) > B4_NET_MAX_UPSTREAM) {
                cfg_refuse(c,
                           "b4box.json sandbox.network.dns.upstream must be an array of 1 to %d "
                           "IP addresses (got: %s).",
                           B4_NET_MAX_UPSTREAM, cfg_got(c, v));
                return;
        }
        d->n_upstream = 0;
        for (size_t i = 0; i < jv_array_size(v); i++) {
                const struct jv *x = jv_array_get(v, i);

                if (!jv_string(x) || net_addr_parse(jv_string(x), &d->upstream[d->n_upstream]) < 0)
                        cfg_refuse(c, "b4box.json %s must be an IPv4 or IPv6 address (got: %s).",
                                   cfg_index(at, "sandbox.network.dns.upstream", i), cfg_got(c, x));
                else
                        d->n_upstream++;
        }
}

static void parse_dns(struct cfg *c, const struct jv *v, struct b4_net_dns *d)
{
        const struct jv *x;
        uint64_t floor_s = d->pin_floor_s, cap_s = d->pin_cap_s;

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.network.dns must be { pinFloorSeconds?, "
                           "pinCapSeconds?, upstream? } (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.network.dns", "a DNS option", dns_keys);
        if ((x = jv_object_get(v, "pinFloorSeconds")))
                (void)cfg_uint_range(c, x, "sandbox.network.dns.pinFloorSeconds", 1, MAX_PIN_S,
                                     &floor_s);
        if ((x = jv_object_get(v, "pinCapSeconds")))
                (void)cfg_uint_range(c, x, "sandbox.network.dns.pinCapSeconds", 1, MAX_PIN_S,
                                     &cap_s);
        if (cap_s < floor_s)
                cfg_refuse(c,
                           "b4box.json sandbox.network.dns.pinCapSeconds (%llu) must be at least "
                           "pinFloorSeconds (%llu).",
                           (unsigned long long)cap_s, (unsigned long long)floor_s);
        else {
                d->pin_floor_s = (uint32_t)floor_s;
                d->pin_cap_s = (uint32_t)cap_s;
        }
        if ((x = jv_object_get(v, "upstream")))
                parse_upstream(c, x, d);
}

void config_parse_network(struct cfg *c, const struct jv *v, struct b4_policy *p)
{
        const struct jv *mode = jv_object_get(v, "mode");
        const struct jv *deny = jv_object_get(v, "denylist");
        const struct jv *allow = jv_object_get(v, "allowlist");
        const struct jv *dns = jv_object_get(v, "dns");
        bool is_deny;

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.network must be { \"mode\": \"allow\" | \"deny\", "
                           "... } (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.network", "an option", network_keys);
        if (!jv_string(mode) ||
            (strcmp(jv_string(mode), "allow") != 0 && strcmp(jv_string(mode), "deny") != 0)) {
                cfg_refuse(c,
                           "b4box.json sandbox.network.mode must be \"allow\" or \"deny\" (got: "
                           "%s).",
                           cfg_got(c, mode));
                return;
        }
        is_deny = strcmp(jv_string(mode), "deny") == 0;
        p->network = is_deny ? B4_NETWORK_DENY : B4_NETWORK_ALLOW;
        if (deny && is_deny)
                cfg_refuse(c, "b4box.json sandbox.network.denylist applies only with mode "
                              "\"allow\".");
        if (allow && !is_deny)
                cfg_refuse(c, "b4box.json sandbox.network.allowlist applies only with mode "
                              "\"deny\".");
        if (deny && !is_deny)
                config_parse_net_list(c, deny, "sandbox.network.denylist", false, &p->network_list,
                                      &p->n_network_list);
        if (allow && is_deny)
                config_parse_net_list(c, allow, "sandbox.network.allowlist", true, &p->network_list,
                                      &p->n_network_list);
        if (dns)
                parse_dns(c, dns, &p->dns);
}

void config_env_free(struct b4_env_var *env, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(env[i].name);
                free(env[i].value);
        }
        free(env);
}

static int env_cmp(const void *a, const void *b)
{
        return strcmp(((const struct b4_env_var *)a)->name, ((const struct b4_env_var *)b)->name);
}

static bool env_entry_ok(struct cfg *c, const char *path, const char *name, const struct jv *val)
{
        bool ok = true;

        if (!b4_env_name_is_valid(name) || strlen(name) > CFG_MAX_ENV_NAME ||
            strcmp(name, "__proto__") == 0) {
                cfg_refuse(
                        c,
                        "b4box.json %s.%s is not a valid variable name (^[A-Za-z_][A-Za-z0-9_]*$, "
                        "at most %d characters, not __proto__).",
                        path, cfg_key(c, name), CFG_MAX_ENV_NAME);
                ok = false;
        }
        if (!jv_is_string(val) || strlen(jv_string(val)) != jv_string_length(val) ||
            jv_string_length(val) > CFG_MAX_ENV_VALUE) {
                cfg_refuse(c,
                           "b4box.json %s.%s must be a string of at most %d bytes without NUL "
                           "(got: %s).",
                           path, cfg_key(c, name), CFG_MAX_ENV_VALUE, cfg_got(c, val));
                ok = false;
        }
        return ok;
}

void config_parse_env(
        struct cfg *c, const struct jv *v, const char *path, struct b4_env_var **ret, size_t *ret_n)
{
        struct b4_env_var *env = NULL;
        size_t n = 0;

        if (!jv_is_object(v) || jv_object_size(v) > CFG_MAX_ENV) {
                cfg_refuse(c,
                           "b4box.json %s must be an object of at most %d variable names to "
                           "string values (got: %s).",
                           path, CFG_MAX_ENV, cfg_got(c, v));
                return;
        }
        env = b4_calloc(jv_object_size(v) + 1, sizeof(*env));
        if (!env) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (void *it = jv_object_iter(v); it; it = jv_object_next(v, it)) {
                const char *name = jv_iter_key(it);
                const struct jv *val = jv_iter_value(it);

                if (!env_entry_ok(c, path, name, val))
                        continue;
                env[n].name = b4_strdup(name);
                env[n].value = b4_strdup(jv_string(val));
                n++;
                if (!env[n - 1].name || !env[n - 1].value)
                        cfg_fail(c, -ENOMEM);
        }
        qsort_safe(env, n, sizeof(*env), env_cmp);
        config_env_free(*ret, *ret_n);
        *ret = env;
        *ret_n = n;
}

void config_parse_resources(struct cfg *c, const struct jv *v, struct b4_policy *p)
{
        struct b4_resources *r = &p->resources;
        const struct jv *x;
        uint64_t cap;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json sandbox.resources must be an object (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.resources", "a resource option", resource_keys);
        if ((x = jv_object_get(v, "memoryMb")))
                (void)cfg_positive_int(c, x, "sandbox.resources.memoryMb", MAX_MEMORY_MB,
                                       &r->memory_mb);
        if ((x = jv_object_get(v, "cpus")) &&
            cfg_positive_number(c, x, "sandbox.resources.cpus", &r->cpus) && r->cpus > MAX_CPUS) {
                cfg_refuse(c, "b4box.json sandbox.resources.cpus must be at most 1024 (got: %s).",
                           cfg_got(c, x));
                r->cpus = 0;
        }
        if ((x = jv_object_get(v, "timeoutMs")))
                (void)cfg_positive_int(c, x, "sandbox.resources.timeoutMs", MAX_TIMEOUT_MS,
                                       &r->timeout_ms);
        if ((x = jv_object_get(v, "diskGb")))
                (void)cfg_positive_int(c, x, "sandbox.resources.diskGb", MAX_DISK_GB, &r->disk_gb);
        if ((x = jv_object_get(v, "outputCapBytes")) &&
            cfg_positive_int(c, x, "sandbox.resources.outputCapBytes", MAX_OUTPUT_CAP, &cap))
                p->output_cap = (size_t)cap;
}

static void parse_identity(struct cfg *c, const struct jv *v, struct b4_security *s)
{
        static const char *const fields[] = { "uid", "gid" };
        uint32_t *slots[] = { &s->uid, &s->gid };
        char path[CFG_PATH_MAX];

        cfg_known_keys(c, v, "sandbox.security.runAsNonRoot", "an option", identity_keys);
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                const struct jv *x = jv_object_get(v, fields[i]);
                uint64_t id;

                cfg_path(path, "sandbox.security.runAsNonRoot", fields[i]);
                if (!jv_is_safe_integer(x) || jv_integer(x) < 0) {
                        cfg_refuse(c, "b4box.json %s must be a non-negative integer (got: %s).",
                                   path, cfg_got(c, x));
                        continue;
                }
                if (cfg_uint_range(c, x, path, 0, MAX_ID, &id))
                        *slots[i] = (uint32_t)id;
        }
}

static void parse_run_as(struct cfg *c, const struct jv *v, struct b4_security *s)
{
        if (jv_is_null(v)) {
                cfg_refuse(c, "b4box.json sandbox.security.runAsNonRoot may not be null: use "
                              "true, false or { uid, gid }.");
                return;
        }
        if (jv_is_bool(v)) {
                s->run_as_non_root = jv_is_true(v);
                return;
        }
        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.security.runAsNonRoot must be true, false or { "
                           "uid, gid } (got: %s).",
                           cfg_got(c, v));
                return;
        }
        s->run_as_non_root = true;
        parse_identity(c, v, s);
}

void config_parse_security(struct cfg *c, const struct jv *v, struct b4_security *s)
{
        const struct jv *x;
        uint64_t pids;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json sandbox.security must be an object (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.security", "a security option", security_keys);
        if ((x = jv_object_get(v, "dropAllCapabilities")))
                (void)cfg_bool(c, x, "sandbox.security.dropAllCapabilities",
                               &s->drop_all_capabilities);
        if ((x = jv_object_get(v, "noNewPrivileges")))
                (void)cfg_bool(c, x, "sandbox.security.noNewPrivileges", &s->no_new_privileges);
        if ((x = jv_object_get(v, "readOnlyRootFilesystem")))
                (void)cfg_bool(c, x, "sandbox.security.readOnlyRootFilesystem", &s->read_only_root);
        if ((x = jv_object_get(v, "runAsNonRoot")))
                parse_run_as(c, x, s);
        if ((x = jv_object_get(v, "pidsLimit")) &&
            cfg_positive_int(c, x, "sandbox.security.pidsLimit", MAX_PIDS, &pids))
                s->pids_limit = (uint32_t)pids;
}
