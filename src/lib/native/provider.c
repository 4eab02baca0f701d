/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native provider: one keeper per thread (see keeper-main.c), no daemon. This file holds
 * the provider object (state dir layout, keeper binary, cgroup host, seccomp BPF built once),
 * the per-process thread table and the contract's entry points. State dir layout:
 *   <state>/native/workspaces/<id>   the thread's workspace (kept by release)
 *   <state>/native/run/<id>.{sock,keeper,lock}  control socket, keeper record, flock
 *   <state>/native/run/<id>.host     intent record: host-global objects may exist (sweep.c)
 *   <state>/native/root              empty dir each new root is assembled on (own mount ns)
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "core/launch.h"
#include "native.h"
#include "netpolicy.h"
#include "providers.h"

#ifndef B4_KEEPER_INSTALL_PATH
# define B4_KEEPER_INSTALL_PATH "/usr/local/libexec/b4box-keeper"
#endif
#ifndef B4_KEEPER_BUILD_PATH
# define B4_KEEPER_BUILD_PATH ""
#endif

void native_host_id(const struct native_provider *np, const char *id, char ret[41])
{
        char hex[SHA256_HEX_LEN + 1];
        struct sha256_ctx *c = sha256_new();

        if (!c) { /* OOM: fall back to the id itself, still deterministic */
                (void)snprintf(ret, 41, "%s", id);
                return;
        }
        sha256_update(c, np->real_dir, strlen(np->real_dir));
        sha256_update(c, "/", 1);
        sha256_update(c, id, strlen(id));
        sha256_final_hex(c, hex);
        memcpy(ret, hex, 40);
        ret[40] = '\0';
}

struct native_provider *native_provider_ref(struct native_provider *np)
{
        atomic_fetch_add(&np->refs, 1);
        return np;
}

static void thread_free(struct thread *t)
{
        safe_close(t->root_fd);
        safe_close(t->cg_fd);
        safe_close(t->cg_spare_fd);
        safe_close(t->kp.pidfd);
        (void)pthread_mutex_destroy(&t->cg_lock);
        b4_policy_clear(&t->policy);
        (void)pthread_rwlock_destroy(&t->lock);
        free(t->thread_id);
        free(t);
}

void native_provider_unref(struct native_provider *np)
{
        if (!np || atomic_fetch_sub(&np->refs, 1) != 1)
                return;
        for (struct thread *t = np->threads, *n; t; t = n) {
                n = t->next;
                thread_free(t);
        }
        (void)pthread_mutex_destroy(&np->lock);
        cgroup_host_release(&np->cg);
        safe_close(np->run_fd);
        safe_close(np->ws_fd);
        safe_close(np->ids_fd);
        safe_close(np->owners_fd);
        safe_close(np->disks_fd);
        safe_close(np->exe_fd);
        free(np->bpf);
        free(np->image);
        free(np->native_dir);
        free(np->run_dir);
        free(np->ws_dir);
        free(np->stage_dir);
        free(np->real_dir);
        free(np->p.scope);
        free(np);
}

int thread_get(struct native_provider *np, const char *thread_id, struct thread **ret)
{
        struct thread *t;
        int r = 0;

        (void)pthread_mutex_lock(&np->lock);
        for (t = np->threads; t; t = t->next)
                if (strcmp(t->thread_id, thread_id) == 0)
                        break;
        if (!t) {
                t = b4_calloc(1, sizeof(*t));
                if (!t || !(t->thread_id = b4_strdup(thread_id)))
                        r = -ENOMEM;
                else
                        r = b4_resource_id(np->p.scope, thread_id, t->id);
                if (r < 0 && t) {
                        free(t->thread_id);
                        free(t);
                }
                if (r >= 0) {
                        t->root_fd = t->kp.pidfd = t->cg_fd = t->cg_spare_fd = -EBADF;
                        (void)pthread_mutex_init(&t->cg_lock, NULL);
                        b4_policy_init(&t->policy);
                        (void)pthread_rwlock_init(&t->lock, NULL);
                        atomic_init(&t->refs, 1);
                        t->next = np->threads;
                        np->threads = t;
                }
        }
        if (r >= 0) {
                atomic_fetch_add(&t->refs, 1);
                *ret = t;
        }
        (void)pthread_mutex_unlock(&np->lock);
        return r;
}

void thread_unref(struct native_provider *np, struct thread *t)
{
        /* The list keeps one reference until the provider goes; entries are small. */
        if (t)
                atomic_fetch_sub(&t->refs, 1);
}

static struct native_provider *np_of(struct b4_provider *p)
{
        return (struct native_provider *)p;
}

static int check_rootless(const struct b4_policy *policy, struct b4_error *err)
{
        const char *why = NULL;

        if (!native_userns_allowed(&why))
                return b4_error_set_code(err, -EPERM, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: not root and user namespaces are "
                                         "disabled (%s), so rootless mode cannot run. Run as "
                                         "root or enable them. Run `b4box check`.",
                                         why);
        if ((policy->network == B4_NETWORK_ALLOW || netpolicy_listed(policy)) &&
            net_available(&why) < 0)
                return b4_error_set_code(err, -EPERM, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: network \"allow\" needs a veth and "
                                         "NAT but %s. Use network \"deny\" or run as root. Run "
                                         "`b4box check`.",
                                         why);
        return 0;
}

static int check_acquire(struct native_provider *np,
                         const struct b4_acquire_req *req,
                         const struct b4_policy *policy,
                         struct b4_error *err)
{
        if (req->image && strcmp(req->image, np->image) != 0)
                return b4_error_set(err, -EINVAL,
                                    "image '%s' is not available: this native provider runs '%s'",
                                    req->image, np->image);
        if (np->rootless) {
                int r = check_rootless(policy, err);
                if (r < 0)
                        return r;
        }
        if (np->exe_fd < 0)
                return b4_error_set_code(err, -ENOENT, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: the b4box-keeper binary was not "
                                         "found (set B4BOX_KEEPER). Run `b4box check`.");
        return 0;
}

static int np_acquire(struct b4_provider *p,
                      const struct b4_acquire_req *req,
                      struct b4_sandbox **ret,
                      struct b4_error *err)
{
        struct native_provider *np = np_of(p);
        struct b4_policy defaults;
        const struct b4_policy *policy = req->policy;
        struct thread *t = NULL;
        char identity[65];
        int lock_fd = -EBADF;
        int r;

        b4_policy_init(&defaults);
        if (!policy)
                policy = &defaults;
        r = check_acquire(np, req, policy, err);
        if (r < 0)
                return r;
        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "acquire cancelled");
        r = launch_identity(np->image, policy, identity);
        if (r < 0)
                return b4_error_set(err, r, "cannot compute the keeper identity");
        r = thread_get(np, req->thread_id, &t);
        if (r < 0)
                return b4_error_set(err, r, "invalid thread id");
        (void)pthread_rwlock_wrlock(&t->lock);
        r = thread_flock(np, t->id, &lock_fd);
        if (r < 0)
                b4_error_set(err, r, "cannot lock thread '%s'", req->thread_id);
        else
                r = thread_ensure(np, t, identity, policy, err);
        safe_close(lock_fd);
        (void)pthread_rwlock_unlock(&t->lock);
        if (r >= 0)
                r = native_sandbox_new(np, t, policy, ret, err);
        thread_unref(np, t);
        if (r < 0 && err && err->code == B4_CODE_NONE)
                return b4_error_wrap(err, r,
                                     "Sandbox unavailable: cannot start the sandbox of "
                                     "thread \"%s\"",
                                     req->thread_id);
        return r;
}

int native_owner_mark(struct native_provider *np, const char *id)
{
        const char *scope = np->p.scope;
        cleanup_free char *have = NULL;
        size_t len;

        if (read_file_at(np->owners_fd, id, 4096, &have, &len) >= 0 && len == strlen(scope) &&
            memcmp(have, scope, len) == 0)
                return 0;
        return write_file_atomic_at(np->owners_fd, id, scope, strlen(scope), 0600);
}

bool native_owner_is_ours(struct native_provider *np, const char *id)
{
        cleanup_free char *have = NULL;
        size_t len;

        return read_file_at(np->owners_fd, id, 4096, &have, &len) >= 0 &&
               len == strlen(np->p.scope) && memcmp(have, np->p.scope, len) == 0;
}

int native_remove_storage(struct native_provider *np, const char *id)
{
        int r;

        disk_remove(np, id);
        r = rm_rf_at(np->ws_fd, id);
        if (r >= 0) {
                idmap_forget(np, id);
                (void)unlinkat(np->owners_fd, id, 0);
        }
        return r;
}

static int stop(struct native_provider *np,
                const char *thread_id,
                bool destroy,
                struct b4_error *err)
{
        struct thread *t = NULL;
        int lock_fd = -EBADF;
        int r;

        r = thread_get(np, thread_id, &t);
        if (r < 0)
                return b4_error_set(err, r, "invalid thread id");
        (void)pthread_rwlock_wrlock(&t->lock);
        r = thread_flock(np, t->id, &lock_fd);
        if (r >= 0) {
                thread_stop(np, t);
                if (destroy)
                        r = native_remove_storage(np, t->id);
        }
        safe_close(lock_fd);
        (void)pthread_rwlock_unlock(&t->lock);
        thread_unref(np, t);
        if (r < 0)
                return b4_error_set(err, r, "cannot %s thread '%s'",
                                    destroy ? "destroy" : "release", thread_id);
        return 0;
}

static int np_release(struct b4_provider *p, const char *thread_id, struct b4_error *err)
{
        return stop(np_of(p), thread_id, false, err);
}

static int np_destroy(struct b4_provider *p, const char *thread_id, struct b4_error *err)
{
        return stop(np_of(p), thread_id, true, err);
}

/* As root, each thread's own user namespace and host id block (idmap.c). */
static int userns_row(const struct native_provider *np, struct b4_preflight *ret)
{
        cleanup_free char *what = NULL;
        const char *why = NULL;

        if (!np->userns) {
                (void)idmap_userns_works(&why);
                return b4_preflight_control(ret, "user namespaces", B4_NOT_ENFORCED,
                                            "%s: sandboxes share host uid 1000 and uid 0 is the "
                                            "host's root without capabilities",
                                            why ? why : "user namespaces are unavailable");
        }
        if (b4_asprintf(&what,
                        "ids 0-65535 of each thread map to a host block of its own from %u "
                        "(%u blocks): the sandbox's root is a nobody on the host",
                        np->id_start, np->id_size / IDMAP_BLOCK) < 0)
                return -ENOMEM;
        return b4_preflight_control(ret, "user namespaces", B4_ENFORCED, "%s", what);
}

static int np_preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        struct native_provider *np = np_of(p);
        int r;

        r = native_preflight_run(&np->cg, ret, err);
        if (r >= 0 && !np->rootless)
                r = userns_row(np, ret);
        if (r >= 0 && np->exe_fd < 0) {
                ret->ok = false;
                r = b4_preflight_control(ret, "keeper binary", B4_NOT_ENFORCED,
                                         "b4box-keeper not found (set B4BOX_KEEPER)");
        }
        return r;
}

static int np_open_reader(struct b4_provider *p,
                          const struct b4_reader_req *req,
                          struct b4_reader **ret,
                          struct b4_error *err)
{
        return native_reader_open(np_of(p), req, ret, err);
}

static void np_free(struct b4_provider *p)
{
        native_provider_unref(np_of(p));
}

static const struct b4_provider_ops native_ops = {
        .name = "native",
        .acquire = np_acquire,
        .release = np_release,
        .destroy = np_destroy,
        .preflight = np_preflight,
        .open_reader = np_open_reader,
        .freeze = native_freeze,
        .sweep = native_sweep,
        .free = np_free,
};

static int open_keeper_exe(void)
{
        const char *paths[] = { secure_getenv("B4BOX_KEEPER"), B4_KEEPER_INSTALL_PATH,
                                B4_KEEPER_BUILD_PATH };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i] || !*paths[i])
                        continue;
                int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                        return fd;
        }
        return -ENOENT;
}

static int setup_dirs(struct native_provider *np, const char *state_dir, struct b4_error *err)
{
        cleanup_close int state_fd = -EBADF, native_fd = -EBADF, stage_fd = -EBADF;
        int r;

        r = state_dir_open(state_dir, &state_fd, err);
        if (r < 0)
                return r;
        r = open_private_dir_at(state_fd, "native", 0700, &native_fd);
        if (r >= 0)
                r = open_private_dir_at(native_fd, "run", 0700, &np->run_fd);
        if (r >= 0)
                r = open_private_dir_at(native_fd, "workspaces", 0711, &np->ws_fd);
        if (r >= 0)
                r = open_private_dir_at(native_fd, "root", 0700, &stage_fd);
        if (r >= 0)
                r = open_private_dir_at(native_fd, "ids", 0700, &np->ids_fd);
        if (r >= 0)
                r = open_private_dir_at(native_fd, "owners", 0700, &np->owners_fd);
        if (r >= 0 && !np->rootless)
                r = open_private_dir_at(native_fd, "disks", 0700, &np->disks_fd);
        if (r < 0)
                return b4_error_set(err, r,
                                    "cannot set up '%s/native' (%s): its directories must be "
                                    "real directories owned by uid %u, not writable by group "
                                    "or others",
                                    state_dir, strerror(-r), (unsigned)geteuid());
        if (b4_asprintf(&np->native_dir, "%s/native", state_dir) < 0 ||
            b4_asprintf(&np->run_dir, "%s/run", np->native_dir) < 0 ||
            b4_asprintf(&np->ws_dir, "%s/workspaces", np->native_dir) < 0 ||
            b4_asprintf(&np->stage_dir, "%s/root", np->native_dir) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        np->real_dir = realpath(np->native_dir, NULL); /* checksrc: allow (libc allocates) */
        if (!np->real_dir)
                return b4_error_set(err, -errno, "cannot resolve '%s'", np->native_dir);
        return 0;
}

static int parse_image(struct native_provider *np, const char *image, struct b4_error *err)
{
        struct stat st;

        np->image = b4_strdup(image && *image ? image : "host");
        if (!np->image)
                return -ENOMEM;
        if (strcmp(np->image, "host") == 0) {
                np->image_root = "/";
                np->host_image = true;
                return 0;
        }
        if (strncmp(np->image, "dir:/", 5) != 0)
                return b4_error_set(err, -EINVAL,
                                    "sandbox.provider.image for native must be \"host\" or "
                                    "\"dir:/absolute/rootfs\" (got '%s')",
                                    np->image);
        np->image_root = np->image + 4;
        if (stat(np->image_root, &st) < 0 || !S_ISDIR(st.st_mode))
                return b4_error_set(err, -EINVAL, "rootfs '%s' is not a directory", np->image_root);
        return 0;
}

int native_provider_new(const struct b4_provider_config *cfg,
                        struct b4_provider **ret,
                        struct b4_error *err)
{
        struct native_provider *np;
        int r;

        if (!cfg || !cfg->scope || !*cfg->scope)
                return b4_error_set(err, -EINVAL, "sandbox.provider.scope is required");
        if (!cfg->state_dir || cfg->state_dir[0] != '/')
                return b4_error_set(err, -EINVAL,
                                    "the native provider needs an absolute state dir");
        np = b4_calloc(1, sizeof(*np));
        if (!np)
                return b4_error_set(err, -ENOMEM, "out of memory");
        *np = (struct native_provider){
                .p = { .ops = &native_ops },
                .run_fd = -EBADF,
                .ws_fd = -EBADF,
                .ids_fd = -EBADF,
                .owners_fd = -EBADF,
                .disks_fd = -EBADF,
                .rootless = geteuid() != 0,
                .id_start = cfg->id_start ? cfg->id_start : IDMAP_DEFAULT_START,
                .id_size = cfg->id_size ? cfg->id_size : IDMAP_DEFAULT_BLOCKS * IDMAP_BLOCK,
                .exe_fd = -EBADF,
                .cg = { .root_fd = -EBADF, .v2_fd = -EBADF }
        };
        atomic_init(&np->refs, 1);
        (void)pthread_mutex_init(&np->lock, NULL);
        np->p.scope = b4_strdup(cfg->scope);
        r = np->p.scope ? parse_image(np, cfg->image, err) : -ENOMEM;
        if (r >= 0)
                r = setup_dirs(np, cfg->state_dir, err);
        if (r >= 0)
                r = seccomp_build(&np->bpf, &np->bpf_len, err);
        if (r < 0) {
                native_provider_unref(np);
                return err && err->error ? err->error : b4_error_set(err, r, "out of memory");
        }
        np->exe_fd = open_keeper_exe();
        np->userns = !np->rootless && idmap_userns_works(NULL);
        np->host_uid = (uint32_t)geteuid();
        np->host_gid = (uint32_t)getegid();
        cgroup_host_probe(open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &np->cg);
        if (np->rootless)
                cgroup_host_restrict_to_delegated(&np->cg);
        *ret = &np->p;
        return 0;
}
