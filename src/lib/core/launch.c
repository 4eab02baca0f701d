/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch configuration a keeper is started with (reference §3.3): its compact JSON with
 * the fields in the reference's order (timeoutMs excluded) and the keeper identity, the
 * sha256 of {image, launchConfig}. One definition for every provider (native, docker), so a
 * policy means the same keeper everywhere.
 */

#include "core/launch.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "json/json.h"

static int cmp_env(const void *a, const void *b)
{
        return strcmp(((const struct b4_env_var *)a)->name, ((const struct b4_env_var *)b)->name);
}

struct jv *launch_env_json(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *arr = jv_array_new();
        cleanup_free struct b4_env_var *v = b4_calloc(p->n_env + 1, sizeof(*v));
        size_t n = 0;
        bool non_root = p->security.run_as_non_root;

        if (!arr || !v)
                return NULL;
        for (size_t i = 0; i < p->n_env; i++)
                if (!non_root || strcmp(p->env[i].name, "HOME") != 0)
                        v[n++] = p->env[i];
        if (non_root)
                v[n++] = (struct b4_env_var){ .name = (char *)"HOME",
                                              .value = (char *)"/workspace" };
        qsort_safe(v, n, sizeof(*v), cmp_env);
        for (size_t i = 0; i < n; i++)
                if (jv_array_append_new(arr, jv_pack("[s, s]", v[i].name, v[i].value)) < 0)
                        return NULL;
        return TAKE_PTR(arr);
}

static struct jv *user_json(const struct b4_policy *p)
{
        if (!p->security.run_as_non_root)
                return jv_null_new();
        return jv_pack("{s:I, s:I}", "uid", (int64_t)p->security.uid, "gid",
                       (int64_t)p->security.gid);
}

/* The fields in the reference's order; an unset limit is null (jv_null_new() cannot fail, so
 * a NULL here is an allocation failure and fails the document). */
static struct jv *launch_json(const struct b4_policy *p)
{
        const struct b4_security *s = &p->security;
        const struct b4_resources *res = &p->resources;

        return jv_pack("{s:s, s:o, s:o, s:o, s:b, s:b, s:b, s:I, s:o, s:b}", "networkMode",
                       p->network == B4_NETWORK_DENY ? "none" : "bridge", "env", launch_env_json(p),
                       "memoryMb",
                       res->memory_mb ? jv_integer_new((int64_t)res->memory_mb) : jv_null_new(),
                       "cpus", res->cpus > 0 ? jv_real_new(res->cpus) : jv_null_new(),
                       "dropAllCapabilities", s->drop_all_capabilities, "noNewPrivileges",
                       s->no_new_privileges, "readOnlyRootFilesystem", s->read_only_root,
                       "pidsLimit", (int64_t)s->pids_limit, "user", user_json(p), "init", true);
}

/* A policy's list and DNS options, in the identity only when it has a list (so identities
 * of policies without one stay what they were). */
static struct jv *lists_json(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *l = jv_array_new();
        struct jv *o;

        for (size_t i = 0; l && i < p->n_network_list; i++)
                if (jv_array_append_new(l, jv_string_new(p->network_list[i].text)) < 0)
                        return NULL;
        o = jv_pack("{s:o, s:I, s:I}", "entries", TAKE_PTR(l), "pinFloorSeconds",
                    (int64_t)p->dns.pin_floor_s, "pinCapSeconds", (int64_t)p->dns.pin_cap_s);
        for (size_t i = 0; o && i < p->dns.n_upstream; i++) {
                const char *key = i == 0 ? "upstream0" : i == 1 ? "upstream1" : "upstream2";
                char hex[33];

                for (size_t k = 0; k < 16; k++)
                        (void)snprintf(hex + 2 * k, 3, "%02x", p->dns.upstream[i].addr[k]);
                if (jv_object_set_new(o, key, jv_string_new(hex)) < 0)
                        o = jv_unref(o);
        }
        return o;
}

int launch_identity(const char *image, const struct b4_policy *p, char ret[65])
{
        cleanup_(jv_unrefp) struct jv *o = NULL;
        cleanup_free char *json = NULL;
        bool lost = false;
        int r;

        o = jv_pack("{s:s, s:o, s:o*}", "image", image, "launchConfig", launch_json(p),
                    "networkLists", jv_opt(p->n_network_list > 0, lists_json(p), &lost));
        if (!o || lost)
                return -ENOMEM;
        r = jv_dump(o, 0, &json);
        if (r < 0)
                return r;
        sha256_hex(json, strlen(json), ret);
        return 0;
}

int launch_config_json(const struct b4_policy *p, char **ret)
{
        cleanup_(jv_unrefp) struct jv *o = launch_json(p);

        return o ? jv_dump(o, 0, ret) : -ENOMEM;
}

bool launch_image_allowed(const char *dflt, char *const *patterns, const char *ref)
{
        if (!ref)
                return false;
        if (dflt && strcmp(dflt, ref) == 0)
                return true;
        for (char *const *pat = patterns; pat && *pat; pat++)
                if (strcmp(*pat, ref) == 0 || fnmatch(*pat, ref, 0) == 0)
                        return true;
        return false;
}
