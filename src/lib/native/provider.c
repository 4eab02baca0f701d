/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native provider: one keeper per thread (see keeper-main.c), no daemon. This file holds
 * the provider's construction (state dir layout, keeper binary, cgroup host, seccomp BPF
 * built once) and the contract's entry points; the object's lifetime and the state dir's
 * records are state-dir.c's, the per-thread keeper is thread.c's. State dir layout:
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
#include "base/macro.h"
#include "base/strv.h"
#include "core/launch.h"
#include "hostnet/audit.h"
#include "hostnet/hostnet.h"
#include "native.h"
#include "providers.h"

#ifndef B4_KEEPER_INSTALL_PATH
# define B4_KEEPER_INSTALL_PATH "/usr/local/libexec/b4box-keeper"
#endif
#ifndef B4_KEEPER_BUILD_PATH
# define B4_KEEPER_BUILD_PATH ""
#endif

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
        if ((policy->network == B4_NETWORK_ALLOW || hostnet_listed(policy)) &&
            hostnet_available(&why) < 0)
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

/* The image a thread runs: the app's, or the identity its resolver recorded (resolve_image()
 * below: "oci:sha256:<hex>", "host" or "dir:/abs"): the one the thread already holds (@t may
 * be NULL; acquire is exclusive on the thread's gate, so nothing swaps t->image meanwhile),
 * else opened again from the store. */
static int acquire_image(struct native_provider *np,
                         const struct native_thread *t,
                         const char *identity,
                         struct native_image **ret,
                         struct b4_error *err)
{
        if (!identity || strcmp(identity, np->image->name) == 0) {
                *ret = native_image_ref(np->image);
                return 0;
        }
        if (t && t->image && strcmp(identity, t->image->name) == 0) {
                *ret = native_image_ref(t->image);
                return 0;
        }
        int r = native_image_open(np->state_dir, identity, ret, err);
        if (r < 0)
                return b4_error_wrap(err, r, "Sandbox unavailable: the image of this thread");
        return 0;
}

static void state_free(void *state)
{
        native_thread_unref(state);
}

static int acquire(struct b4_provider *p,
                   struct b4_entry *e,
                   const struct b4_acquire_req *req,
                   struct b4_sandbox **ret,
                   struct b4_error *err)
{
        struct native_provider *np = np_of(p);
        struct native_thread *t = b4_entry_state(e);
        struct b4_policy defaults;
        const struct b4_policy *policy = req->policy;
        cleanup_(native_image_unrefp) struct native_image *img = NULL;
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
        r = acquire_image(np, t, req->image, &img, err);
        if (r < 0)
                return r;
        r = launch_identity(img->name, policy, identity);
        if (r < 0)
                return b4_error_set(err, r, "cannot compute the keeper identity");
        trace_mark("identity");
        if (!t) {
                r = native_thread_new(np, req->thread_id, &t);
                if (r < 0)
                        return b4_error_set(err, r, "invalid thread id");
                b4_entry_set_state(e, t, state_free);
        }
        r = native_thread_flock(np, t->id, &lock_fd); /* another process on this state dir */
        trace_mark("flock");
        if (r < 0)
                b4_error_set(err, r, "cannot lock thread '%s'", req->thread_id);
        else
                r = native_thread_ensure(np, t, img, identity, policy, err);
        safe_close(lock_fd);
        if (r >= 0)
                r = native_sandbox_new(np, t, policy, ret, err);
        trace_mark("handle");
        if (r < 0 && !t->live)
                b4_entry_set_state(e, NULL, NULL); /* nothing to keep */
        if (r < 0 && err && err->code == B4_CODE_NONE)
                return b4_error_wrap(err, r,
                                     "Sandbox unavailable: cannot start the sandbox of "
                                     "thread \"%s\"",
                                     req->thread_id);
        return r;
}

static int np_acquire(struct b4_provider *p,
                      struct b4_entry *e,
                      const struct b4_acquire_req *req,
                      struct b4_sandbox **ret,
                      struct b4_error *err)
{
        int r;

        trace_begin(req->thread_id);
        r = acquire(p, e, req, ret, err);
        trace_end(r);
        return r;
}

/* Under the exclusive lease; core then drops the entry's state. A thread this process
 * never acquired still stops what another left (its record, cgroups, ...). */
static int stop(struct native_provider *np, struct b4_entry *e, bool destroy, struct b4_error *err)
{
        const char *thread_id = b4_entry_thread_id(e);
        struct native_thread *t = b4_entry_state(e);
        int lock_fd = -EBADF;
        int r;

        r = t ? 0 : native_thread_new(np, thread_id, &t);
        if (r < 0)
                return b4_error_set(err, r, "invalid thread id");
        if (t == b4_entry_state(e))
                native_thread_ref(t);
        r = native_thread_flock(np, t->id, &lock_fd);
        if (r >= 0) {
                native_thread_stop(np, t);
                native_procs_forget_stdin(t); /* the keeper took its processes with it */
                if (destroy)
                        native_procs_remove(np, t->hid);
                if (destroy)
                        r = native_remove_storage(np, t->id);
        }
        safe_close(lock_fd);
        native_thread_unref(t);
        if (r < 0)
                return b4_error_set(err, r, "cannot %s thread '%s'",
                                    destroy ? "destroy" : "release", thread_id);
        return 0;
}

static int np_release(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return stop(np_of(p), e, false, err);
}

static int np_destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return stop(np_of(p), e, true, err);
}

/* A recorded keeper that is provably the same process still runs. */
static bool np_kept(struct b4_provider *p, const char *thread_id)
{
        struct native_provider *np = np_of(p);
        struct keeper_record rec;
        cleanup_close int pidfd = -EBADF;
        char id[41];

        return b4_resource_id(p->scope, thread_id, id) >= 0 &&
               keeper_record_read(np->run_fd, id, &rec) >= 0 && keeper_verify(&rec, &pidfd) >= 0;
}

/* As root, each thread's own user namespace and host id block (idmap.c). */
static int userns_row(const struct native_provider *np, struct b4_preflight *ret)
{
        cleanup_free char *what = NULL;
        const char *why = NULL;

        if (!native_userns(np)) {
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

/* What the sandbox sees of the host's files (docs/images.md): the row is "enforced" for an
 * image with a root of its own, "not set" for the host image (nothing keeps the host's /etc
 * out, by configuration). */
static int image_row(const struct native_provider *np, struct b4_preflight *ret)
{
        const struct native_image *img = np->image;
        const char *threads =
                np->images ? "; threads may name their own (sandbox.provider.images)" : "";

        if (img->host)
                return b4_preflight_control(ret, "image", B4_NOT_SET,
                                            "host: the host's /usr, /bin, /sbin, /lib*, and /etc "
                                            "read-only (its users and configuration; shadow, "
                                            "gshadow, sudoers and ssh host keys masked)%s; an "
                                            "\"oci:REF\" image keeps the host's /etc out",
                                            threads);
        return b4_preflight_control(ret, "image", B4_ENFORCED,
                                    "%s: its own root and /etc read-only, none of the host's files "
                                    "but the workspace%s",
                                    img->name, threads);
}

static int np_preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        struct native_provider *np = np_of(p);
        int r;

        r = native_preflight_run(&np->cg, ret, err);
        if (r >= 0)
                r = image_row(np, ret);
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

/* Only a listed thread has a netd, and so an audit (docs/native.md §Audit). */
static int np_network_audit(struct b4_provider *p,
                            const char *thread_id,
                            char **ret_json,
                            struct b4_error *err)
{
        struct hostnet hn = native_hostnet(np_of(p));
        char id[41]; /* the run records are named by the resource id */
        size_t len;
        int r = b4_resource_id(p->scope, thread_id, id);

        if (r < 0)
                return b4_error_set(err, r, "thread '%s' has no resource id", thread_id);
        r = hostnet_audit_read(&hn, id, ret_json, &len, err);

        if (r == -ENOENT)
                return b4_error_set(err, -ENOENT,
                                    "no b4box-netd runs for this thread: it has no network list "
                                    "(only listed threads are audited), or no live sandbox");
        return r;
}

static void np_free(struct b4_provider *p)
{
        native_provider_unref(np_of(p));
}

/* A thread's own image (docs/images.md, "Per-thread images"): allowed by the app's image or
 * sandbox.provider.images, and in the store; its identity names the content (the config
 * digest), so moving a name later does not move an admitted thread. */
static int np_resolve_image(struct b4_provider *p,
                            const char *ref,
                            char **ret_identity,
                            struct b4_error *err)
{
        struct native_provider *np = np_of(p);
        cleanup_(native_image_unrefp) struct native_image *img = NULL;
        cleanup_free char *name = NULL;
        bool store;
        int r;

        if (!ref || !*ref || !native_image_allowed(np->image_cfg, np->images, ref))
                return b4_error_set_code(err, -EACCES, B4_CODE_IMAGE_NOT_ALLOWED,
                                         "Image %s is not one this provider may run: allow it with "
                                         "sandbox.provider.images",
                                         ref ? ref : "");
        store = strcmp(ref, "host") != 0 && strncmp(ref, "dir:", 4) != 0 &&
                strncmp(ref, "oci:", 4) != 0;
        if (b4_asprintf(&name, "%s%s", store ? "oci:" : "", ref) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = native_image_open(np->state_dir, name, &img, err);
        if (r == -ENOENT && err)
                err->code = B4_CODE_IMAGE_NOT_ALLOWED;
        if (r < 0)
                return r;
        *ret_identity = b4_strdup(img->name);
        return *ret_identity ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static const struct b4_provider_ops native_ops = {
        .name = "native",
        .acquire = np_acquire,
        .release = np_release,
        .destroy = np_destroy,
        .preflight = np_preflight,
        .open_reader = np_open_reader,
        .resolve_image = np_resolve_image,
        .freeze = native_freeze,
        .sweep = native_sweep,
        .kept = np_kept,
        .network_audit = np_network_audit,
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
        if (!(np->state_dir = b4_strdup(state_dir)) ||
            b4_asprintf(&np->native_dir, "%s/native", state_dir) < 0 ||
            b4_asprintf(&np->run_dir, "%s/run", np->native_dir) < 0 ||
            b4_asprintf(&np->ws_dir, "%s/workspaces", np->native_dir) < 0 ||
            b4_asprintf(&np->stage_dir, "%s/root", np->native_dir) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        np->real_dir = realpath(np->native_dir, NULL); /* checksrc: allow (libc allocates) */
        if (!np->real_dir)
                return b4_error_set(err, -errno, "cannot resolve '%s'", np->native_dir);
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
        r = b4_provider_init(&np->p, &native_ops, cfg->scope);
        if (r >= 0)
                r = native_image_open(cfg->state_dir, cfg->image, &np->image, err);
        if (r >= 0 && ((cfg->image && !(np->image_cfg = b4_strdup(cfg->image))) ||
                       (cfg->images && !(np->images = strv_copy(cfg->images)))))
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = setup_dirs(np, cfg->state_dir, err);
        if (r >= 0)
                r = native_seccomp_filter(np->run_fd, &np->bpf, &np->bpf_len, err);
        if (r < 0) {
                b4_provider_clear(&np->p);
                native_provider_unref(np);
                return err && err->error ? err->error : b4_error_set(err, r, "out of memory");
        }
        np->exe_fd = open_keeper_exe();
        np->host_uid = (uint32_t)geteuid();
        np->host_gid = (uint32_t)getegid();
        cgroup_host_probe(open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &np->cg);
        if (np->rootless)
                cgroup_host_restrict_to_delegated(&np->cg);
        *ret = &np->p;
        return 0;
}
