/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider's containers: its shared core object and the keeper's container and
 * volume (reference §3.4 steps 4-5), below both the provider (acquire) and the handles (PID
 * recovery), so neither calls the other.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "docker/docker.h"
#include "docker/internal.h"
#include "docker/net.h"
#include "json/json.h"

void docker_core_unref(struct docker_core *c)
{
        bool last;

        (void)pthread_mutex_lock(&c->lock);
        last = --c->refs == 0;
        (void)pthread_mutex_unlock(&c->lock);
        if (!last)
                return;
        docker_client_free(c->d);
        free(c->scope);
        free(c->image);
        strv_free(c->images);
        free(c->seccomp_opt);
        docker_net_free(c->net);
        (void)pthread_mutex_destroy(&c->lock);
        free(c);
}

int docker_remove_container(struct docker_core *c, const char *name, struct b4_error *err)
{
        cleanup_free char *path = NULL;
        int r;

        if (b4_asprintf(&path, "/containers/%s?force=1", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "DELETE", path, NULL, NULL, err);
        return r == -ENOENT ? 0 : r;
}

int docker_start_container(struct docker_core *c, const char *name, struct b4_error *err)
{
        cleanup_free char *path = NULL;

        if (b4_asprintf(&path, "/containers/%s/start", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return docker_call(c->d, "POST", path, NULL, NULL, err);
}

static int create_container(struct docker_core *c,
                            const char *name,
                            const struct jv *body,
                            struct b4_error *err)
{
        cleanup_free char *path = NULL;

        if (b4_asprintf(&path, "/containers/create?name=%s", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return docker_call(c->d, "POST", path, body, NULL, err);
}

/* One-time ownership init of a new volume (reference §3.4 step 4), as root, then removed. */
static int init_volume(struct docker_core *c,
                       const char *id,
                       const char *image,
                       const struct b4_policy *p,
                       struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        cleanup_(jv_unrefp) struct jv *resp = NULL;
        cleanup_free char *cmd = NULL, *bind = NULL, *name = NULL, *path = NULL;
        int status, r;

        if (b4_asprintf(&name, "b4-sbx-init-%s", id) < 0 ||
            b4_asprintf(&cmd, "mkdir -p /workspace && chown %u:%u /workspace", p->security.uid,
                        p->security.gid) < 0 ||
            b4_asprintf(&bind, "b4-sbx-vol-%s:/workspace", id) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        body = jv_pack("{s:s, s:s, s:[s], s:[s, s], s:{s:s}, s:{s:[s], s:s, s:[s]}}", "Image",
                       image, "User", "0:0", "Entrypoint", "sh", "Cmd", "-c", cmd, "Labels",
                       "b4.sandbox.init", id, "HostConfig", "Binds", bind, "NetworkMode", "none",
                       "SecurityOpt", c->seccomp_opt);
        if (!body)
                return b4_error_set(err, -ENOMEM, "out of memory");
        (void)docker_remove_container(c, name, NULL);
        r = create_container(c, name, body, err);
        if (r >= 0)
                r = docker_start_container(c, name, err);
        if (r >= 0 && b4_asprintf(&path, "/containers/%s/wait", name) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = docker_call(c->d, "POST", path, NULL, &resp, err);
        status = r >= 0 ? (int)jv_integer(jv_object_get(resp, "StatusCode")) : -1;
        if (r >= 0 && status != 0)
                r = b4_error_set(err, -EIO, "the ownership init exited %d", status);
        (void)docker_remove_container(c, name, NULL);
        return r;
}

int docker_ensure_volume(struct docker_core *c, const struct docker_state *s, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        cleanup_free char *path = NULL, *vol = NULL;
        struct b4_error e = { 0 };
        int r;

        if (b4_asprintf(&vol, "b4-sbx-vol-%s", s->id) < 0 ||
            b4_asprintf(&path, "/volumes/%s", vol) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "GET", path, NULL, NULL, &e);
        if (r == -ENOENT) {
                body = jv_pack("{s:s, s:{s:s, s:s}}", "Name", vol, "Labels", "b4.sandbox", s->id,
                               "b4.sandbox.scope", c->scope);
                if (!body)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                r = docker_call(c->d, "POST", "/volumes/create", body, NULL, &e);
                if (r >= 0 && s->policy.security.run_as_non_root) {
                        r = init_volume(c, s->id, s->image, &s->policy, &e);
                        if (r < 0)
                                return b4_error_set_code(
                                        err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                        "Sandbox unavailable: could not initialize workspace "
                                        "ownership for thread \"%s\": %s. Run `b4box check`.",
                                        s->thread_id, e.msg);
                }
        }
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: docker volume %s for thread \"%s\" "
                                         "failed: %s. Run `b4box check`.",
                                         vol, s->thread_id, e.msg);
        return 0;
}

int docker_create_keeper(struct docker_core *c, const struct docker_state *s, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        struct docker_net_spec net = { 0 };
        struct b4_error e = { 0 };
        int r;

        r = docker_net_prepare(c->net, s->id, s->thread_id, c->scope, &s->policy, &net, err);
        if (r < 0)
                return r;
        r = docker_keeper_body(s->image, &s->policy, s->id, s->identity,
                               &(struct docker_seccomp){ c->seccomp_opt, c->seccomp_digest }, &net,
                               &body);
        docker_net_spec_clear(&net);
        if (r < 0) {
                docker_net_detach(c->net, s->id);
                return b4_error_set(err, r, "out of memory");
        }
        r = create_container(c, s->name, body, &e);
        if (r >= 0)
                r = docker_start_container(c, s->name, &e);
        if (r < 0) {
                (void)docker_remove_container(c, s->name, NULL);
                docker_net_detach(c->net, s->id);
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: docker run failed for thread "
                                         "\"%s\": %s. Run `b4box check`.",
                                         s->thread_id, e.msg);
        }
        r = docker_net_attach(c->net, s->id, s->name, s->thread_id, &s->policy, err);
        if (r < 0) {
                (void)docker_remove_container(c, s->name, NULL);
                docker_net_detach(c->net, s->id);
        }
        return r;
}
