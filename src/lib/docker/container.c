/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider's containers: its shared core object and the keeper's container and
 * volume (reference §3.4 steps 4-5), below both the provider (acquire) and the handles (PID
 * recovery), so neither calls the other.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
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
        free(c->agent_path);
        free(c->agent_volume);
        free(c->agent_reason);
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

int docker_container_running(struct docker_core *c,
                             const char *name,
                             bool *ret,
                             struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *path = NULL;
        int r;

        *ret = false;
        if (b4_asprintf(&path, "/containers/%s/json", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "GET", path, NULL, &v, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        *ret = jv_is_true(jv_object_get(jv_object_get(v, "State"), "Running"));
        return 0;
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

/* One-time ownership init of a new volume (reference §3.4 step 4), as root, then removed:
 * the fallback when the volume's directory is not reachable from here (own_on_host()). */
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

static int volume_path(const char *id, char **ret)
{
        return b4_asprintf(ret, "/volumes/b4-sbx-vol-%s", id) < 0 ? -ENOMEM : 0;
}

/* Whether the workspace volume exists (GET /volumes/{name}). */
static int volume_exists(struct docker_core *c, const char *id, bool *ret, struct b4_error *err)
{
        cleanup_free char *path = NULL;
        int r;

        if (volume_path(id, &path) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "GET", path, NULL, NULL, err);
        *ret = r >= 0;
        return r == -ENOENT ? 0 : r;
}

/*
 * Hand a new volume's root to the sandbox user from this side when b4box and the daemon
 * share a host (the volume's Mountpoint is a directory here and we may chown it): no
 * container at all. Return: 0, or -errno when it cannot be done here (the caller then runs
 * the ownership init container).
 */
static int own_on_host(struct docker_core *c, const struct docker_state *s)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *path = NULL;
        cleanup_close int fd = -EBADF;
        const char *mp;

        if (volume_path(s->id, &path) < 0)
                return -ENOMEM;
        if (docker_call(c->d, "GET", path, NULL, &v, NULL) < 0)
                return -EIO;
        mp = jv_string(jv_object_get(v, "Mountpoint"));
        if (!mp || mp[0] != '/')
                return -ENOENT;
        fd = open(mp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fchown(fd, s->policy.security.uid, s->policy.security.gid) < 0 ? -errno : 0;
}

static int own_workspace(struct docker_core *c, const struct docker_state *s, struct b4_error *err)
{
        struct b4_error e = { 0 };
        int r;

        if (own_on_host(c, s) >= 0)
                return 0;
        r = init_volume(c, s->id, s->image, &s->policy, &e);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: could not initialize workspace "
                                         "ownership for thread \"%s\": %s. Run `b4box check`.",
                                         s->thread_id, e.msg);
        return 0;
}

int docker_create_keeper(struct docker_core *c,
                         const struct docker_state *s,
                         bool first,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        bool non_root = s->policy.security.run_as_non_root, had_volume = true;
        struct docker_net_spec net = { 0 };
        struct b4_error e = { 0 };
        int r;

        r = first ? volume_exists(c, s->id, &had_volume, &e) : 0;
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: docker volume b4-sbx-vol-%s for "
                                         "thread \"%s\" failed: %s. Run `b4box check`.",
                                         s->id, s->thread_id, e.msg);
        r = docker_net_prepare(c->net, s->id, s->thread_id, c->scope, &s->policy, &net, err);
        if (r < 0)
                return r;
        r = docker_keeper_body(
                s->image, &s->policy, s->id, s->identity,
                &(struct docker_seccomp){ c->seccomp_opt, c->seccomp_digest },
                &(struct docker_keeper_opts){ .scope = c->scope,
                                              .copy_image = !non_root || !had_volume,
                                              .agent = s->agent ? s->mount.bind : NULL,
                                              .agent_volume = s->agent ? s->mount.volume : NULL,
                                              .net = &net },
                &body);
        docker_net_spec_clear(&net);
        if (r < 0) {
                docker_net_detach(c->net, s->id);
                return b4_error_set(err, r, "out of memory");
        }
        r = create_container(c, s->name, body, &e);
        if (r >= 0 && non_root && !had_volume) {
                r = own_workspace(c, s, err);
                if (r < 0) {
                        (void)docker_remove_container(c, s->name, NULL);
                        docker_net_detach(c->net, s->id);
                        return r;
                }
        }
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
