/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch configuration a keeper is started with, hashed into its identity (reference
 * §3.3, fields in that order, timeoutMs excluded), and the exact environment of a command:
 * the policy's env, the request's over it, HOME=/workspace when non-root, and a default PATH
 * when none is given. The host's environment is never consulted.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/strv.h"
#include "json/json.h"
#include "native.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static int cmp_env(const void *a, const void *b)
{
        return strcmp(((const struct b4_env_var *)a)->name, ((const struct b4_env_var *)b)->name);
}

static struct jv *env_json(const struct b4_policy *p)
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
                r = jv_object_set_new(o, "env", env_json(p));
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
        if (r >= 0)
                r = jv_dump(o, 0, &json);
        if (r < 0)
                return r;
        sha256_hex(json, strlen(json), ret);
        return 0;
}

static int env_set(char ***env, const char *name, const char *value)
{
        size_t n = strlen(name);
        char *kv = NULL;

        if (b4_asprintf(&kv, "%s=%s", name, value) < 0)
                return -ENOMEM;
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
                        free(*e);
                        *e = kv;
                        return 0;
                }
        return strv_consume(env, kv);
}

static bool env_has(char **env, const char *name)
{
        size_t n = strlen(name);

        STRV_FOREACH (e, env)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return true;
        return false;
}

int build_env(const struct b4_policy *p,
              const struct b4_env_var *extra,
              size_t n_extra,
              char ***ret,
              struct b4_error *err)
{
        cleanup_strv char **env = NULL;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = env_set(&env, p->env[i].name, p->env[i].value);
        if (r >= 0 && p->security.run_as_non_root)
                r = env_set(&env, "HOME", "/workspace");
        for (size_t i = 0; r >= 0 && i < n_extra; i++) {
                if (!b4_env_name_is_valid(extra[i].name))
                        return b4_error_set(err, -EINVAL,
                                            "Invalid environment variable name \"%s\": keys must "
                                            "match /^[A-Za-z_][A-Za-z0-9_]*$/",
                                            extra[i].name ? extra[i].name : "");
                r = env_set(&env, extra[i].name, extra[i].value ? extra[i].value : "");
        }
        if (r >= 0 && !env_has(env, "PATH"))
                r = env_set(&env, "PATH", DEFAULT_PATH);
        if (r < 0)
                return b4_error_set(err, r, "cannot build the command environment");
        *ret = TAKE_PTR(env);
        return 0;
}
