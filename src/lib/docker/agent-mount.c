/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How keepers and readers get b4box-agent (docs/docker.md, "The agent"), decided per
 * provider:
 *   bind    the host's binary bound read-only at /.b4box/agent (the daemon sees b4box's
 *           files: the normal case, since the provider only speaks unix sockets);
 *   volume  when the daemon refuses that bind (another host or mount namespace), or
 *           B4BOX_DOCKER_AGENT=copy (tests): the binary copied in through the archive API,
 *           once per agent build and scope, into a volume mounted read-only at /.b4box;
 *   off     no agent (not found, the copy failed, or B4BOX_DOCKER_AGENT=off for tests):
 *           the archive endpoints and per-operation execs.
 *
 * dockerd's archive endpoints cannot write into a running keeper (its root is read-only and
 * they do not see its tmpfs mounts), but they write into a volume of a container that was
 * only created: so a never-started container of the keeper's image mounts the new volume,
 * takes the one-file tar, and is removed. The volume is named after the binary's sha256, so
 * a new build gets a new volume and a volume is never rewritten.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "docker/docker.h"
#include "docker/internal.h"
#include "json/json.h"

#define AGENT_BINARY_MAX (64u * 1024 * 1024)

/* ---- the copy ---- */

struct copy_spec {
        struct docker_client *d;
        const char *binary; /* host path */
        const char *scope;
        const char *image; /* a container of it takes the copy (never started) */
};

static int remove_container(struct docker_client *d, const char *name)
{
        cleanup_free char *path = NULL;

        if (b4_asprintf(&path, "/containers/%s?force=1", name) < 0)
                return -ENOMEM;
        return docker_call(d, "DELETE", path, NULL, NULL, NULL);
}

/* Create the volume and fill it through a created, never started container. */
static int fill_volume(const struct copy_spec *s,
                       const char *name,
                       const void *bin,
                       size_t len,
                       struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *vol = NULL, *body = NULL;
        cleanup_free char *cname = NULL, *path = NULL;
        struct tar_builder *tb = NULL;
        const void *tar = NULL;
        size_t tar_len = 0;
        int r;

        vol = jv_pack("{s:s, s:{s:s, s:s}}", "Name", name, "Labels", "b4.agent", name,
                      "b4.sandbox.scope", s->scope);
        body = jv_pack("{s:s, s:[s], s:{s:s}, s:{s:[{s:s, s:s, s:s}], s:s}}", "Image", s->image,
                       "Cmd", "true", "Labels", "b4.agent.copy", name, "HostConfig", "Mounts",
                       "Type", "volume", "Source", name, "Target", DOCKER_AGENT_DIR, "NetworkMode",
                       "none");
        if (!vol || !body || b4_asprintf(&cname, "%s-copy", name) < 0 ||
            b4_asprintf(&path, "/containers/create?name=%s", cname) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(s->d, "POST", "/volumes/create", vol, NULL, err);
        if (r >= 0) {
                (void)remove_container(s->d, cname);
                r = docker_call(s->d, "POST", path, body, NULL, err);
        }
        if (r >= 0) {
                r = tar_builder_new(&tb);
                if (r >= 0)
                        r = tar_builder_file(tb, "agent", bin, len, 0755, 0, 0);
                if (r >= 0)
                        r = tar_builder_finish(tb, &tar, &tar_len);
                if (r < 0)
                        r = b4_error_set(err, r, "cannot pack b4box-agent");
                else
                        r = docker_archive_put(s->d, cname, DOCKER_AGENT_DIR, tar, tar_len, err);
                tar_builder_free(tb);
        }
        (void)remove_container(s->d, cname);
        if (r < 0 && r != -EEXIST) { /* EEXIST: another process is filling it */
                /* never leave a volume without its binary: the next try fills a new one */
                free(path);
                path = NULL;
                if (b4_asprintf(&path, "/volumes/%s?force=1", name) >= 0)
                        (void)docker_call(s->d, "DELETE", path, NULL, NULL, NULL);
        }
        return r;
}

/* The volume holding this build of the agent, made and filled when absent. */
static int agent_volume(const struct copy_spec *s, char **ret_name, struct b4_error *err)
{
        cleanup_free char *bin = NULL, *name = NULL, *path = NULL;
        char hex[SHA256_HEX_LEN + 1], scope[41];
        size_t len = 0;
        int r;

        r = read_file_at(AT_FDCWD, s->binary, AGENT_BINARY_MAX, &bin, &len);
        if (r < 0)
                return b4_error_set(err, r, "cannot read %s: %s", s->binary, strerror(-r));
        sha256_hex(bin, len, hex);
        r = b4_resource_id(s->scope, "b4box-agent", scope);
        if (r < 0)
                return b4_error_set(err, r, "invalid scope");
        if (b4_asprintf(&name, "b4-sbx-agent-%.16s-%.16s", scope, hex) < 0 ||
            b4_asprintf(&path, "/volumes/%s", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(s->d, "GET", path, NULL, NULL, err);
        if (r == -ENOENT)
                r = fill_volume(s, name, bin, len, err);
        if (r < 0)
                return r;
        *ret_name = TAKE_PTR(name);
        return 0;
}

/* ---- the mode ---- */

static int set_reason(struct docker_core *c, const char *fmt, ...) B4_PRINTF(2, 3);

static int set_reason(struct docker_core *c, const char *fmt, ...)
{
        char *reason = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(c->agent_reason);
        c->agent_reason = reason;
        return 0;
}

int docker_agent_choose(struct docker_core *c)
{
        const char *env = secure_getenv("B4BOX_DOCKER_AGENT");
        int r;

        c->agent_mode = DOCKER_AGENT_OFF;
        if (env && strcmp(env, "off") == 0)
                return set_reason(c, "archive endpoints and per-operation execs: "
                                     "B4BOX_DOCKER_AGENT=off");
        r = agent_binary_path(&c->agent_path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return set_reason(c, "archive endpoints and per-operation execs: b4box-agent "
                                     "not found (set B4BOX_AGENT or install it)");
        if (env && strcmp(env, "copy") == 0) {
                c->agent_mode = DOCKER_AGENT_VOLUME;
                return set_reason(
                        c,
                        "b4box-agent %s, copied into a volume mounted read-only at " DOCKER_AGENT_DIR
                        ": B4BOX_DOCKER_AGENT=copy",
                        c->agent_path);
        }
        c->agent_mode = DOCKER_AGENT_BIND;
        return set_reason(c,
                          "b4box-agent %s, bound read-only at " DOCKER_AGENT_PATH
                          ", one attached exec per keeper",
                          c->agent_path);
}

void docker_agent_mount_of(struct docker_core *c, const char *image, struct docker_agent_mount *ret)
{
        struct b4_error e = { 0 };

        *ret = (struct docker_agent_mount){ 0 };
        (void)pthread_mutex_lock(&c->lock);
        if (c->agent_mode == DOCKER_AGENT_VOLUME && !c->agent_volume &&
            agent_volume(
                    &(struct copy_spec){
                            .d = c->d, .binary = c->agent_path, .scope = c->scope, .image = image },
                    &c->agent_volume, &e) < 0) {
                c->agent_mode = DOCKER_AGENT_OFF;
                (void)set_reason(c,
                                 "archive endpoints and per-operation execs: b4box-agent could "
                                 "not be copied in (%s)",
                                 e.msg);
        }
        ret->mode = c->agent_mode;
        if (c->agent_mode == DOCKER_AGENT_BIND)
                ret->bind = c->agent_path;
        else if (c->agent_mode == DOCKER_AGENT_VOLUME)
                ret->volume = c->agent_volume;
        (void)pthread_mutex_unlock(&c->lock);
}

void docker_agent_bind_refused(struct docker_core *c, const char *why)
{
        (void)pthread_mutex_lock(&c->lock);
        if (c->agent_mode == DOCKER_AGENT_BIND) {
                c->agent_mode = DOCKER_AGENT_VOLUME;
                (void)set_reason(
                        c,
                        "b4box-agent %s, copied into a volume mounted read-only at " DOCKER_AGENT_DIR
                        ": the daemon cannot bind it (%s)",
                        c->agent_path, why);
        }
        (void)pthread_mutex_unlock(&c->lock);
}
