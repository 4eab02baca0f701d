/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Engine API container-create body of a keeper, carrying every hardening flag of §3.4
 * step 5 and the seccomp profile (seccomp.c), whose digest is a label next to the identity
 * (the launch configuration and identity are core/launch.c, shared with native).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "core/launch.h"
#include "docker/docker.h"
#include "json/json.h"

int docker_policy_user(const struct b4_policy *p, char **ret)
{
        *ret = NULL;
        if (!p->security.run_as_non_root)
                return 0;
        return b4_asprintf(ret, "%u:%u", p->security.uid, p->security.gid) < 0 ? -ENOMEM : 0;
}

static struct jv *env_list(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *pairs = launch_env_json(p);
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

/* no-new-privileges when the policy asks, and always the profile */
static struct jv *security_opt(const struct b4_policy *p, const struct docker_seccomp *sc)
{
        return string_array(p->security.no_new_privileges
                                    ? (const char *const[]){ "no-new-privileges", sc->opt, NULL }
                                    : (const char *const[]){ sc->opt, NULL });
}

static struct jv *keeper_host_config(const struct b4_policy *p,
                                     const char *id,
                                     const struct docker_seccomp *sc)
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
        if (r >= 0)
                r = jv_object_set_new(h, "SecurityOpt", security_opt(p, sc));
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
                       const struct docker_seccomp *sc,
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
                r = jv_object_set_new(labels, "b4.sandbox.seccomp", jv_string_new(sc->digest));
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
                r = jv_object_set_new(o, "HostConfig", keeper_host_config(p, id, sc));
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}
