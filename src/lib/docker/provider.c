/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Docker provider (reference §3) over the Engine API.
 *
 *   provider ─ core (API client, image policy; refcounted, container.c) ─ state per thread
 *   handle   ─ holds a core reference; its fs/exec talk to the keeper b4-sbx-<id> (sandbox.c)
 *
 * Core runs the lifecycle (reference §3.5): acquire/release/destroy and PID recovery
 * exclusive, every handle operation shared. The per-thread state {launch config, identity,
 * image} is the thread's lifecycle entry state and exists only for keepers this provider
 * instance created, so a fresh provider never adopts a keeper it finds (it replaces it; the
 * volume is kept).
 */

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "core/launch.h"
#include "docker/docker.h"
#include "docker/internal.h"
#include "docker/net.h"
#include "json/json.h"
#include "providers.h"

static const struct b4_provider_ops docker_provider_ops;

/* ---- core and lifecycle states ---- */

static void state_free(void *state)
{
        struct docker_state *s = state;

        if (!s)
                return;
        free(s->thread_id);
        free(s->image);
        free(s->launch_json);
        b4_policy_clear(&s->policy);
        docker_agent_free(s->agent);
        free(s);
}

/* ---- acquire ---- */

static int state_new(struct docker_core *c,
                     const struct b4_acquire_req *req,
                     const char *image,
                     struct docker_state **ret,
                     struct b4_error *err)
{
        const char *scope = c->scope;
        struct docker_state *s = b4_calloc(1, sizeof(*s));
        int r;

        if (!s)
                return b4_error_set(err, -ENOMEM, "out of memory");
        b4_policy_init(&s->policy);
        r = b4_resource_id(scope, req->thread_id, s->id);
        if (r < 0) {
                state_free(s);
                return b4_error_set(err, r, "invalid thread id or scope");
        }
        (void)snprintf(s->name, sizeof(s->name), "b4-sbx-%s", s->id);
        s->thread_id = b4_strdup(req->thread_id);
        s->image = b4_strdup(image);
        r = !s->thread_id || !s->image ? -ENOMEM : b4_policy_copy(&s->policy, req->policy);
        if (r >= 0)
                r = launch_config_json(&s->policy, &s->launch_json);
        if (r >= 0)
                r = launch_identity(s->image, &s->policy, s->identity);
        if (r >= 0)
                docker_agent_mount_of(c, image, &s->mount);
        if (r >= 0 && s->mount.mode != DOCKER_AGENT_OFF)
                r = docker_agent_new(c->d, s->name, NULL, false, &s->agent);
        if (r < 0) {
                state_free(s);
                return b4_error_set(err, r, "out of memory");
        }
        *ret = s;
        return 0;
}

struct keeper_info {
        bool exists, running;
        bool same_seccomp; /* its b4.sandbox.seccomp label is this provider's profile */
        char *identity;    /* the label */
};

static int inspect_keeper(struct docker_core *c,
                          const char *name,
                          struct keeper_info *ret,
                          struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *path = NULL;
        struct jv *labels;
        const char *label;
        int r;

        *ret = (struct keeper_info){ 0 };
        if (b4_asprintf(&path, "/containers/%s/json", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "GET", path, NULL, &v, err);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        ret->exists = true;
        ret->running = jv_is_true(jv_object_get(jv_object_get(v, "State"), "Running"));
        labels = jv_object_get(jv_object_get(v, "Config"), "Labels");
        label = jv_string(jv_object_get(labels, "b4.sandbox.seccomp"));
        ret->same_seccomp = label && strcmp(label, c->seccomp_digest) == 0;
        label = jv_string(jv_object_get(labels, "b4.sandbox.identity"));
        if (label && !(ret->identity = b4_strdup(label)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

/* Steps 2-3: reuse (only a keeper this instance made, same identity and seccomp profile),
 * start, or replace. */
static int reuse_or_replace(struct docker_core *c,
                            const struct docker_state *s,
                            bool had_state,
                            bool *ret_ready,
                            struct b4_error *err)
{
        struct keeper_info k;
        struct b4_error e = { 0 };
        int r;

        *ret_ready = false;
        r = inspect_keeper(c, s->name, &k, &e);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: %s. Run `b4box check`.", e.msg);
        if (!k.exists)
                return 0;
        if (had_state && k.same_seccomp && k.identity && strcmp(k.identity, s->identity) == 0 &&
            (!k.running || docker_net_revive(c->net, s->id, &s->policy) >= 0)) {
                free(k.identity);
                if (k.running) {
                        *ret_ready = true;
                        return 0;
                }
                /* it starts in a new network namespace: plumbed again (net.h) */
                r = docker_net_restart(c->net, s->id, s->thread_id, &s->policy, err);
                if (r < 0)
                        return r;
                r = docker_start_container(c, s->name, &e);
                if (r < 0)
                        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                                 "Sandbox unavailable: could not start keeper for "
                                                 "thread \"%s\": %s. Run `b4box check`.",
                                                 s->thread_id, e.msg);
                r = docker_net_attach(c->net, s->id, s->name, s->thread_id, &s->policy, err);
                if (r < 0)
                        return r;
                *ret_ready = true;
                return 0;
        }
        free(k.identity);
        r = docker_remove_container(c, s->name, &e);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: could not replace stale keeper for "
                                         "thread \"%s\": %s. Run `b4box check`.",
                                         s->thread_id, e.msg);
        docker_net_detach(c->net, s->id);
        return 0;
}

static struct docker_core *core_of(struct b4_provider *p)
{
        return container_of(p, struct docker_provider, base)->core;
}

/* Create the keeper; when the daemon refuses the agent's bind, again with the agent copied
 * in (or without it, when that fails too). */
static int create_keeper(struct docker_core *c, struct docker_state *s, struct b4_error *err)
{
        struct b4_error e = { 0 };
        int r = docker_create_keeper(c, s, true, &e);

        if (r < 0 && s->mount.mode == DOCKER_AGENT_BIND && strstr(e.msg, "bind source path")) {
                docker_agent_bind_refused(c, e.msg);
                docker_agent_mount_of(c, s->image, &s->mount);
                if (s->mount.mode == DOCKER_AGENT_OFF)
                        s->agent = docker_agent_free(s->agent);
                return docker_create_keeper(c, s, true, err);
        }
        if (r < 0 && err)
                *err = e;
        return r;
}

/* Under the exclusive lease: make the keeper live and record its state in @e. */
static int acquire_locked(struct docker_core *c,
                          struct b4_entry *e,
                          const struct b4_acquire_req *req,
                          const char *image,
                          struct b4_error *err)
{
        const struct docker_state *have = b4_entry_state(e);
        struct docker_state *want = NULL;
        bool ready = false;
        int r;

        r = state_new(c, req, image, &want, err);
        if (r < 0)
                return r;
        if (have && strcmp(have->launch_json, want->launch_json) != 0) {
                state_free(want);
                return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: thread \"%s\" already has a "
                                         "different keeper configuration. Release the thread "
                                         "sandbox first, then acquire it with a different policy.",
                                         req->thread_id);
        }
        r = reuse_or_replace(c, want, have != NULL, &ready, err);
        if (r >= 0 && !ready)
                r = create_keeper(c, want, err);
        if (r >= 0 && (!have || !ready))
                b4_entry_set_state(e, TAKE_PTR(want), state_free);
        state_free(want);
        return r < 0 ? r : 0;
}

static int acquire(struct b4_provider *p,
                   struct b4_entry *e,
                   const struct b4_acquire_req *req,
                   struct b4_sandbox **ret,
                   struct b4_error *err)
{
        struct docker_core *c = core_of(p);
        const char *image = req->image ? req->image : c->image;
        int r;

        if (!image)
                return b4_error_set_code(err, -EINVAL, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: this Docker provider has no default "
                                         "image. Configure sandbox.thread so each thread names "
                                         "one.");
        r = acquire_locked(c, e, req, image, err);
        if (r < 0)
                return r;
        r = docker_sandbox_new(c, b4_entry_state(e), ret);
        return r < 0 ? b4_error_set(err, r, "acquire of thread \"%s\" failed", req->thread_id) : 0;
}

/* ---- release, destroy ---- */

/* Core drops the state; the reference ignores removal errors here (§3.4). */
static int remove_thread(struct docker_core *c, const char *thread_id, bool volume)
{
        cleanup_free char *path = NULL;
        char id[41], name[64];

        if (b4_resource_id(c->scope, thread_id, id) < 0)
                return 0;
        (void)snprintf(name, sizeof(name), "b4-sbx-%s", id);
        (void)docker_remove_container(c, name, NULL);
        docker_net_detach(c->net, id);
        if (volume && b4_asprintf(&path, "/volumes/b4-sbx-vol-%s", id) >= 0)
                (void)docker_call(c->d, "DELETE", path, NULL, NULL, NULL);
        return 0;
}

static int release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return remove_thread(core_of(p), b4_entry_thread_id(e), false);
}

static int destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return remove_thread(core_of(p), b4_entry_thread_id(e), true);
}

/* ---- preflight ---- */

/* What the Docker provider enforces, as `b4box check` lists it. */
static const struct {
        const char *name;
        enum b4_enforcement state;
        const char *detail;
} controls[] = {
        { "network deny", B4_ENFORCED, "NetworkMode none" },
        { "capabilities", B4_ENFORCED, "CapDrop ALL" },
        { "no_new_privs", B4_ENFORCED, "no-new-privileges" },
        { "read-only root", B4_ENFORCED, "ReadonlyRootfs with tmpfs /tmp and /run" },
        { "pids limit", B4_ENFORCED, "PidsLimit" },
        { "memory limit", B4_ENFORCED, "HostConfig.Memory" },
        { "seccomp", B4_ENFORCED, "b4box's syscall policy as the profile, native arch only" },
};

static int preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        struct docker_core *c = core_of(p);
        cleanup_free char *ver = NULL;
        struct b4_error e = { 0 };
        int r;

        r = docker_server_version(c->d, &ver, &e);
        if (r < 0) {
                ret->ok = false;
                r = b4_asprintf(&ret->detail,
                                "Docker daemon not reachable (`GET /version` on %s failed: %s)",
                                docker_client_socket(c->d), e.msg);
                return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
        }
        ret->ok = true;
        if (b4_asprintf(&ret->detail, "Docker %s", ver) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < ELEMENTSOF(controls); i++)
                if (b4_preflight_control(ret, controls[i].name, controls[i].state, "%s",
                                         controls[i].detail) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        if (docker_net_preflight(c->net, ret) < 0) /* allow, allowlist, denylist, dns */
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = b4_preflight_control(ret, "pause", B4_ENFORCED, "docker pause (the daemon's freezer)");
        if (r >= 0)
                r = b4_preflight_control(ret, "background processes", B4_NOT_APPLICABLE,
                                         "not on Docker yet: the process routes answer 501 "
                                         "processes_unsupported");
        (void)pthread_mutex_lock(&c->lock);
        if (r >= 0)
                r = b4_preflight_control(ret, "operations", B4_NOT_APPLICABLE, "%s",
                                         c->agent_reason);
        (void)pthread_mutex_unlock(&c->lock);
        return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}

/* ---- readers and images ---- */

static int open_reader(struct b4_provider *p,
                       const struct b4_reader_req *req,
                       struct b4_reader **ret,
                       struct b4_error *err)
{
        struct docker_core *c = core_of(p);
        struct docker_agent_mount m;
        char id[41], vol[64];
        struct docker_reader_spec s;

        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "cancelled");
        if (!c->image)
                return b4_error_set_code(err, -EINVAL, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: this Docker provider has no default "
                                         "image. Configure sandbox.thread so each thread names "
                                         "one.");
        if (b4_resource_id(c->scope, req->thread_id, id) < 0)
                return b4_error_set(err, -EINVAL, "invalid thread id");
        (void)snprintf(vol, sizeof(vol), "b4-sbx-vol-%s", id);
        docker_agent_mount_of(c, c->image, &m);
        s = (struct docker_reader_spec){ .d = c->d,
                                         .image = c->image,
                                         .volume = vol,
                                         .resource_id = id,
                                         .thread_id = req->thread_id,
                                         .name_prefix = "b4-sbx-rdr-",
                                         .seccomp_opt = c->seccomp_opt,
                                         .agent_bind = m.bind,
                                         .agent_volume = m.volume,
                                         .run_as_non_root = req->run_as_non_root,
                                         .uid = req->uid,
                                         .gid = req->gid };
        return docker_reader_open(&s, ret, err);
}

static int resolve_image(struct b4_provider *p,
                         const char *ref,
                         char **ret_identity,
                         struct b4_error *err)
{
        struct docker_core *c = core_of(p);
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *enc = NULL, *path = NULL;
        regex_t re;
        const char *id;
        bool ok;
        int r;

        if (!ref || !*ref || !launch_image_allowed(c->image, c->images, ref))
                return b4_error_set_code(err, -EACCES, B4_CODE_IMAGE_NOT_ALLOWED,
                                         "Image %s is not one this provider may run: allow it with "
                                         "sandbox.provider.images",
                                         ref ? ref : "");
        if (docker_urlencode(ref, &enc) < 0 || b4_asprintf(&path, "/images/%s/json", enc) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(c->d, "GET", path, NULL, &v, err);
        if (r < 0)
                return b4_error_wrap(err, r, "Docker daemon/image identity unavailable for '%s'",
                                     ref);
        id = jv_string(jv_object_get(v, "Id"));
        if (regcomp(&re, "^sha256:[0-9a-f]{64}$", REG_EXTENDED | REG_NOSUB) != 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        ok = id && regexec(&re, id, 0, NULL, 0) == 0;
        regfree(&re);
        if (!ok)
                return b4_error_set(err, -EPROTO, "Docker daemon/image identity unavailable");
        *ret_identity = b4_strdup(id);
        return *ret_identity ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static void provider_free(struct b4_provider *p)
{
        struct docker_provider *dp = container_of(p, struct docker_provider, base);

        free(p->scope);
        docker_core_unref(dp->core);
        free(dp);
}

static int freeze(struct b4_provider *p, const char *thread_id, bool frozen, struct b4_error *err)
{
        return docker_pause_container(core_of(p), thread_id, frozen, err);
}

/* The keepers are named by their resource id (docker_state's id), as their network records. */
static int network_audit(struct b4_provider *p,
                         const char *thread_id,
                         char **ret_json,
                         struct b4_error *err)
{
        char id[41];
        int r = b4_resource_id(p->scope, thread_id, id);

        if (r < 0)
                return b4_error_set(err, r, "thread '%s' has no resource id", thread_id);
        return docker_net_audit(core_of(p)->net, id, ret_json, err);
}

static const struct b4_provider_ops docker_provider_ops = {
        .name = "docker",
        .acquire = acquire,
        .release = release,
        .destroy = destroy,
        .preflight = preflight,
        .open_reader = open_reader,
        .resolve_image = resolve_image,
        .freeze = freeze,
        .network_audit = network_audit,
        .free = provider_free,
};

/* ---- construction ---- */

static int check_config(const struct b4_provider_config *cfg, struct b4_error *err)
{
        const char *s = cfg ? cfg->scope : NULL;

        while (s && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
                s++;
        if (!s || !*s)
                return b4_error_set(err, -EINVAL,
                                    "Sandbox scope must be a non-empty application/environment "
                                    "identifier");
        if (cfg->image && !*cfg->image)
                return b4_error_set(err, -EINVAL, "docker provider image must be non-empty");
        if (!cfg->image && !cfg->images)
                return b4_error_set(err, -EINVAL,
                                    "dockerSandbox needs an image, or an images predicate when "
                                    "every thread names its own image");
        return 0;
}

static struct docker_core *core_new(const struct b4_provider_config *cfg, struct b4_error *err)
{
        struct docker_core *c = b4_calloc(1, sizeof(*c));
        int r;

        if (!c) {
                (void)b4_error_set(err, -ENOMEM, "out of memory");
                return NULL;
        }
        c->refs = 1;
        (void)pthread_mutex_init(&c->lock, NULL);
        c->scope = b4_strdup(cfg->scope);
        c->image = cfg->image ? b4_strdup(cfg->image) : NULL;
        c->images = cfg->images ? strv_copy(cfg->images) : NULL;
        if (!c->scope || (cfg->image && !c->image) || (cfg->images && !c->images)) {
                (void)b4_error_set(err, -ENOMEM, "out of memory");
                docker_core_unref(c);
                return NULL;
        }
        r = docker_seccomp_opt(&c->seccomp_opt, c->seccomp_digest);
        if (r < 0) {
                (void)b4_error_set(err, r, "cannot build the seccomp profile%s",
                                   r == -EAFNOSUPPORT ? " for this architecture" : "");
                docker_core_unref(c);
                return NULL;
        }
        if (docker_client_new(cfg->docker_host, &c->d, err) < 0 || docker_agent_choose(c) < 0) {
                if (!err || !err->error)
                        (void)b4_error_set(err, -ENOMEM, "out of memory");
                docker_core_unref(c);
                return NULL;
        }
        if (docker_net_new(c->d, &c->net) < 0) {
                (void)b4_error_set(err, -ENOMEM, "out of memory");
                docker_core_unref(c);
                return NULL;
        }
        return c;
}

int docker_provider_new(const struct b4_provider_config *cfg,
                        struct b4_provider **ret,
                        struct b4_error *err)
{
        struct docker_provider *dp;
        int r;

        if (!ret)
                return b4_error_set(err, -EINVAL, "docker provider needs a result pointer");
        r = check_config(cfg, err);
        if (r < 0)
                return r;
        dp = b4_calloc(1, sizeof(*dp));
        if (!dp)
                return b4_error_set(err, -ENOMEM, "out of memory");
        dp->core = core_new(cfg, err);
        if (!dp->core) {
                free(dp);
                return err && err->error ? err->error : -ENOMEM;
        }
        if (b4_provider_init(&dp->base, &docker_provider_ops, cfg->scope) < 0) {
                docker_core_unref(dp->core);
                free(dp);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret = &dp->base;
        return 0;
}

struct docker_client *docker_provider_client(struct b4_provider *p)
{
        return p && p->ops == &docker_provider_ops ? core_of(p)->d : NULL;
}
