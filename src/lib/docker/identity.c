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
#include "docker/net.h"
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

/* no-new-privileges when the policy asks, and always the profile */
static struct jv *security_opt(const struct b4_policy *p, const struct docker_seccomp *sc)
{
        if (p->security.no_new_privileges)
                return jv_pack("[s, s]", "no-new-privileges", sc->opt);
        return jv_pack("[s]", sc->opt);
}

/* The workspace volume as a Mounts entry: the create makes an absent volume with its labels
 * (no separate volume create). NoCopy unless @o->copy_image: a new volume gets the image's
 * /workspace (what the reference's ownership init copied); a later mount of a still-empty,
 * already chowned volume must not copy the image directory's owner back over the chown. */
static struct jv *workspace_mount(const char *id, const struct docker_keeper_opts *o)
{
        cleanup_free char *vol = NULL;

        if (b4_asprintf(&vol, "b4-sbx-vol-%s", id) < 0)
                return NULL;
        return jv_pack("{s:s, s:s, s:s, s:{s:b, s:{s:s, s:s}}}", "Type", "volume", "Source", vol,
                       "Target", B4_WORKSPACE_ROOT, "VolumeOptions", "NoCopy", !o->copy_image,
                       "Labels", "b4.sandbox", id, "b4.sandbox.scope", o->scope);
}

struct jv *docker_agent_mount_json(const char *bind, const char *volume)
{
        if (bind)
                return jv_pack("{s:s, s:s, s:s, s:b}", "Type", "bind", "Source", bind, "Target",
                               DOCKER_AGENT_PATH, "ReadOnly", true);
        return jv_pack("{s:s, s:s, s:s, s:b, s:{s:b}}", "Type", "volume", "Source", volume,
                       "Target", DOCKER_AGENT_DIR, "ReadOnly", true, "VolumeOptions", "NoCopy",
                       true);
}

static struct jv *keeper_mounts(const char *id, const struct docker_keeper_opts *o)
{
        if (!o->agent && !o->agent_volume)
                return jv_pack("[o]", workspace_mount(id, o));
        return jv_pack("[o, o]", workspace_mount(id, o),
                       docker_agent_mount_json(o->agent, o->agent_volume));
}

static struct jv *keeper_host_config(const struct b4_policy *p,
                                     const char *id,
                                     const struct docker_seccomp *sc,
                                     const struct docker_keeper_opts *o)
{
        const struct b4_security *s = &p->security;
        const struct b4_resources *res = &p->resources;
        bool lost = false;
        struct jv *h;

        h = jv_pack(
                "{s:o, s:o*, s:s, s:o*, s:o*, s:b, s:o*, s:o, s:I, s:o*, s:o*}", "Mounts",
                keeper_mounts(id, o), "Binds",
                jv_opt(o->net->resolv_bind != NULL, jv_pack("[s]", o->net->resolv_bind), &lost),
                "NetworkMode", o->net->mode, "Memory",
                jv_opt(res->memory_mb, jv_integer_new((int64_t)res->memory_mb << 20), &lost),
                "NanoCpus",
                jv_opt(res->cpus > 0, jv_integer_new((int64_t)(res->cpus * 1e9)), &lost), "Init",
                true, "CapDrop", jv_opt(s->drop_all_capabilities, jv_pack("[s]", "ALL"), &lost),
                "SecurityOpt", security_opt(p, sc), "PidsLimit", (int64_t)s->pids_limit,
                "ReadonlyRootfs", jv_opt(s->read_only_root, jv_bool_new(true), &lost), "Tmpfs",
                jv_opt(s->read_only_root, jv_pack("{s:s, s:s}", "/tmp", "", "/run", ""), &lost));
        return lost ? jv_unref(h) : h;
}

int docker_keeper_body(const char *image,
                       const struct b4_policy *p,
                       const char *id,
                       const char *identity,
                       const struct docker_seccomp *sc,
                       const struct docker_keeper_opts *o,
                       struct jv **ret)
{
        cleanup_free char *user = NULL;
        struct jv *b;

        if (docker_policy_user(p, &user) < 0)
                return -ENOMEM;
        b = jv_pack("{s:s, s:[s, s], s:o, s:s*, s:{s:s, s:s, s:s}, s:o}", "Image", image, "Cmd",
                    "sleep", "infinity", "Env", env_list(p), "User", user, "Labels", "b4.sandbox",
                    id, "b4.sandbox.identity", identity, "b4.sandbox.seccomp", sc->digest,
                    "HostConfig", keeper_host_config(p, id, sc, o));
        if (!b)
                return -ENOMEM;
        *ret = b;
        return 0;
}
