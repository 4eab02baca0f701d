/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch configuration a keeper is created with (reference §3.3): its compact JSON with
 * the fields in the reference's order (timeoutMs excluded), hashed with the image into the
 * keeper identity, and the Engine API container-create body carrying every hardening flag of
 * §3.4 step 5. The JSON is the same as the native provider's (identity.c there).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "docker/docker.h"
#include "json/json.h"

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

int docker_launch_config_json(const struct b4_policy *p, char **ret)
{
        cleanup_(jv_unrefp) struct jv *o = launch_json(p);

        if (!o)
                return -ENOMEM;
        return jv_dump(o, 0, ret);
}

int docker_launch_identity(const char *image, const struct b4_policy *p, char ret[65])
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

int docker_policy_user(const struct b4_policy *p, char **ret)
{
        *ret = NULL;
        if (!p->security.run_as_non_root)
                return 0;
        return b4_asprintf(ret, "%u:%u", p->security.uid, p->security.gid) < 0 ? -ENOMEM : 0;
}

static struct jv *env_list(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *pairs = env_json(p);
        cleanup_(jv_unrefp) struct jv *out = jv_array_new();

        if (!pairs || !out)
                return NULL;
        for (size_t i = 0; i < jv_array_size(pairs); i++) {
                struct jv *pair = jv_array_get(pairs, i);
                cleanup_free char *kv = NULL;
                if (b4_asprintf(&kv, "%s=%s", jv_string(jv_array_get(pair, 0)),
                                jv_string(jv_array_get(pair, 1))) < 0 ||
                    jv_array_append_new(out, jv_string_new(kv)) < 0)
                        return NULL;
        }
        return TAKE_PTR(out);
}

static struct jv *string_array(const char *const *v)
{
        struct jv *a = jv_array_new();

        for (; a && *v; v++)
                if (jv_array_append_new(a, jv_string_new(*v)) < 0)
                        return jv_unref(a);
        return a;
}

static struct jv *keeper_host_config(const struct b4_policy *p, const char *id)
{
        cleanup_(jv_unrefp) struct jv *h = jv_object_new();
        cleanup_(jv_unrefp) struct jv *tmpfs = jv_object_new();
        cleanup_free char *bind = NULL;
        const struct b4_security *s = &p->security;
        int r;

        /* Non-root: the ownership init already copied the image's /workspace into the new
         * volume; nocopy keeps a later mount of a still-empty volume from copying the image
         * directory's owner back over the chown. */
        if (!h || !tmpfs ||
            b4_asprintf(&bind, "b4-sbx-vol-%s:/workspace%s", id,
                        s->run_as_non_root ? ":nocopy" : "") < 0)
                return NULL;
        r = jv_object_set_new(h, "Binds", string_array((const char *const[]){ bind, NULL }));
        if (r >= 0)
                r = jv_object_set_new(
                        h, "NetworkMode",
                        jv_string_new(p->network == B4_NETWORK_DENY ? "none" : "bridge"));
        if (r >= 0 && p->resources.memory_mb)
                r = jv_object_set_new(h, "Memory",
                                      jv_integer_new((int64_t)p->resources.memory_mb << 20));
        if (r >= 0 && p->resources.cpus > 0)
                r = jv_object_set_new(h, "NanoCpus",
                                      jv_integer_new((int64_t)(p->resources.cpus * 1e9)));
        if (r >= 0)
                r = jv_object_set_new(h, "Init", jv_bool_new(true));
        if (r >= 0 && s->drop_all_capabilities)
                r = jv_object_set_new(h, "CapDrop",
                                      string_array((const char *const[]){ "ALL", NULL }));
        if (r >= 0 && s->no_new_privileges)
                r = jv_object_set_new(
                        h, "SecurityOpt",
                        string_array((const char *const[]){ "no-new-privileges", NULL }));
        if (r >= 0)
                r = jv_object_set_new(h, "PidsLimit", jv_integer_new(s->pids_limit));
        if (r >= 0 && s->read_only_root) {
                r = jv_object_set_new(h, "ReadonlyRootfs", jv_bool_new(true));
                if (r >= 0)
                        r = jv_object_set_new(tmpfs, "/tmp", jv_string_new(""));
                if (r >= 0)
                        r = jv_object_set_new(tmpfs, "/run", jv_string_new(""));
                if (r >= 0)
                        r = jv_object_set_new(h, "Tmpfs", TAKE_PTR(tmpfs));
        }
        return r < 0 ? NULL : TAKE_PTR(h);
}

int docker_keeper_body(const char *image,
                       const struct b4_policy *p,
                       const char *id,
                       const char *identity,
                       struct jv **ret)
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        cleanup_(jv_unrefp) struct jv *labels = jv_object_new();
        cleanup_free char *user = NULL;
        int r;

        if (!o || !labels || docker_policy_user(p, &user) < 0)
                return -ENOMEM;
        r = jv_object_set_new(labels, "b4.sandbox", jv_string_new(id));
        if (r >= 0)
                r = jv_object_set_new(labels, "b4.sandbox.identity", jv_string_new(identity));
        if (r >= 0)
                r = jv_object_set_new(o, "Image", jv_string_new(image));
        if (r >= 0)
                r = jv_object_set_new(
                        o, "Cmd", string_array((const char *const[]){ "sleep", "infinity", NULL }));
        if (r >= 0)
                r = jv_object_set_new(o, "Env", env_list(p));
        if (r >= 0 && user)
                r = jv_object_set_new(o, "User", jv_string_new(user));
        if (r >= 0)
                r = jv_object_set_new(o, "Labels", TAKE_PTR(labels));
        if (r >= 0)
                r = jv_object_set_new(o, "HostConfig", keeper_host_config(p, id));
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}
