/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch configuration a keeper is started with (reference §3.3): its compact JSON with
 * the fields in the reference's order (timeoutMs excluded) and the keeper identity, the
 * sha256 of {image, launchConfig}. One definition for every provider (native, docker), so a
 * policy means the same keeper everywhere.
 */

#include "core/launch.h"

#include <errno.h>
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
        for (size_t i = 0; i < n; i++) {
                struct jv *pair = jv_array_new();
                if (!pair || jv_array_append_new(arr, pair) < 0 ||
                    jv_array_append_new(pair, jv_string_new(v[i].name)) < 0 ||
                    jv_array_append_new(pair, jv_string_new(v[i].value)) < 0)
                        return NULL;
        }
        return TAKE_PTR(arr);
}

static struct jv *user_json(const struct b4_policy *p)
{
        struct jv *u;

        if (!p->security.run_as_non_root)
                return jv_null_new();
        u = jv_object_new();
        if (!u || jv_object_set_new(u, "uid", jv_integer_new(p->security.uid)) < 0 ||
            jv_object_set_new(u, "gid", jv_integer_new(p->security.gid)) < 0)
                return jv_unref(u);
        return u;
}

static struct jv *launch_json(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        const struct b4_security *s = &p->security;
        int r;

        if (!o)
                return NULL;
        r = jv_object_set_new(o, "networkMode",
                              jv_string_new(p->network == B4_NETWORK_DENY ? "none" : "bridge"));
        if (r >= 0)
                r = jv_object_set_new(o, "env", launch_env_json(p));
        if (r >= 0)
                r = jv_object_set_new(o, "memoryMb",
                                      p->resources.memory_mb
                                              ? jv_integer_new((int64_t)p->resources.memory_mb)
                                              : jv_null_new());
        if (r >= 0)
                r = jv_object_set_new(o, "cpus",
                                      p->resources.cpus > 0 ? jv_real_new(p->resources.cpus)
                                                            : jv_null_new());
        if (r >= 0)
                r = jv_object_set_new(o, "dropAllCapabilities",
                                      jv_bool_new(s->drop_all_capabilities));
        if (r >= 0)
                r = jv_object_set_new(o, "noNewPrivileges", jv_bool_new(s->no_new_privileges));
        if (r >= 0)
                r = jv_object_set_new(o, "readOnlyRootFilesystem", jv_bool_new(s->read_only_root));
        if (r >= 0)
                r = jv_object_set_new(o, "pidsLimit", jv_integer_new(s->pids_limit));
        if (r >= 0)
                r = jv_object_set_new(o, "user", user_json(p));
        if (r >= 0)
                r = jv_object_set_new(o, "init", jv_bool_new(true));
        return r < 0 ? NULL : TAKE_PTR(o);
}

/* A policy's list and DNS options, in the identity only when it has a list (so identities
 * of policies without one stay what they were). */
static struct jv *lists_json(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        struct jv *l = jv_array_new();
        int r = o && l ? jv_object_set_new(o, "entries", l) : (jv_unref(l), -ENOMEM);

        for (size_t i = 0; r >= 0 && i < p->n_network_list; i++)
                r = jv_array_append_new(l, jv_string_new(p->network_list[i].text));
        if (r >= 0)
                r = jv_object_set_new(o, "pinFloorSeconds", jv_integer_new(p->dns.pin_floor_s));
        if (r >= 0)
                r = jv_object_set_new(o, "pinCapSeconds", jv_integer_new(p->dns.pin_cap_s));
        for (size_t i = 0; r >= 0 && i < p->dns.n_upstream; i++) {
                char hex[33];

                for (size_t k = 0; k < 16; k++)
                        (void)snprintf(hex + 2 * k, 3, "%02x", p->dns.upstream[i].addr[k]);
                r = jv_object_set_new(o,
                                      i == 0   ? "upstream0"
                                      : i == 1 ? "upstream1"
                                               : "upstream2",
                                      jv_string_new(hex));
        }
        return r < 0 ? NULL : TAKE_PTR(o);
}

int launch_identity(const char *image, const struct b4_policy *p, char ret[65])
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        cleanup_free char *json = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = jv_object_set_new(o, "image", jv_string_new(image));
        if (r >= 0)
                r = jv_object_set_new(o, "launchConfig", launch_json(p));
        if (r >= 0 && p->n_network_list > 0)
                r = jv_object_set_new(o, "networkLists", lists_json(p));
        if (r >= 0)
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
