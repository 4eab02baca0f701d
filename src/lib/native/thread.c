/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One thread's compute: make sure a keeper with the wanted identity is running (reuse the one
 * this process holds, adopt a recorded one that is provably the same process, or start a new
 * one), stop it (kill the keeper, which takes its whole PID namespace with it, then sweep and
 * remove the cgroup), and recover from a keeper that can no longer fork. The workspace is
 * never touched here except to create it. Callers hold the thread's exclusive lease (core's
 * gate) and its flock, so concurrent threads and processes serialise per thread. The entry
 * itself (struct native_thread) is the state of the thread's lifecycle entry, shared with handles
 * by reference and freed with the last one.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "hostnet/hostnet.h"
#include "keeper-proto.h"
#include "native.h"

int native_thread_new(struct native_provider *np, const char *thread_id, struct native_thread **ret)
{
        struct native_thread *t = b4_calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        t->root_fd = t->kp.pidfd = t->cg_fd = t->cg_spare_fd = -EBADF;
        (void)pthread_mutex_init(&t->cg_lock, NULL);
        b4_policy_init(&t->policy);
        atomic_init(&t->refs, 1);
        t->thread_id = b4_strdup(thread_id);
        r = t->thread_id ? b4_resource_id(np->p.scope, thread_id, t->id) : -ENOMEM;
        if (r < 0) {
                native_thread_unref(t);
                return r;
        }
        native_host_id(np, t->id, t->hid);
        *ret = t;
        return 0;
}

struct native_thread *native_thread_ref(struct native_thread *t)
{
        atomic_fetch_add(&t->refs, 1);
        return t;
}

void native_thread_unref(struct native_thread *t)
{
        if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
                return;
        safe_close(t->root_fd);
        safe_close(t->cg_fd);
        safe_close(t->cg_spare_fd);
        safe_close(t->kp.pidfd);
        native_procs_forget_stdin(t);
        (void)pthread_mutex_destroy(&t->cg_lock);
        b4_policy_clear(&t->policy);
        native_image_unref(t->image);
        free(t->thread_id);
        free(t);
}

/* live and generation change under cg_lock: a command's end reads them without a lease. */
static void set_live(struct native_thread *t, bool live)
{
        (void)pthread_mutex_lock(&t->cg_lock);
        if (!live)
                t->cg_spare_fd = safe_close(t->cg_spare_fd); /* its dir goes with the thread's */
        t->live = live;
        t->generation += live;
        (void)pthread_mutex_unlock(&t->cg_lock);
}

int native_thread_flock(struct native_provider *np, const char *id, int *ret_fd)
{
        char name[64];
        int fd;

        (void)snprintf(name, sizeof(name), "%s.lock", id);
        fd = openat(np->run_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR) {
                        int r = -errno;
                        safe_close(fd);
                        return r;
                }
        *ret_fd = fd;
        return 0;
}

static void forget(struct native_thread *t)
{
        t->root_fd = safe_close(t->root_fd);
        t->cg_fd = safe_close(t->cg_fd);
        t->cg_flags = 0;
        set_live(t, false);
        t->kp.pidfd = safe_close(t->kp.pidfd);
        t->kp = (struct keeper_proc){ .pidfd = -EBADF };
}

static void unlink_run_file(struct native_provider *np, const char *id, const char *suffix)
{
        char name[64];

        (void)snprintf(name, sizeof(name), "%s%s", id, suffix);
        (void)unlinkat(np->run_fd, name, 0);
}

/* The intent record run/<id>.host (the host id as text) exists before any host-global
 * object of the thread (cgroup dirs, veth, rules, subnet) is made and goes only once they
 * are all gone, so a crash of the process at any point leaves a record the sweep finds
 * (sweep.c). Not fsync()ed: everything it stands for lives in the kernel and goes with it
 * (docs/native.md, "What a cold acquire costs"). */
static int write_intent(struct native_provider *np, const char *id, const char *hid)
{
        char name[64], text[48];

        (void)snprintf(name, sizeof(name), "%s" NATIVE_INTENT_SUFFIX, id);
        (void)snprintf(text, sizeof(text), "%s\n", hid);
        return native_record_write(np->run_fd, name, text);
}

void native_thread_stop_id(struct native_provider *np, const char *id, int pidfd)
{
        struct keeper_record rec;
        struct cgroup cg;
        int rec_fd = -EBADF;
        char hid[41];

        native_host_id(np, id, hid);
        image_use_end(np->state_dir, id); /* whichever image it ran */

        if (pidfd >= 0)
                keeper_kill(pidfd);
        else if (keeper_record_read(np->run_fd, id, &rec) >= 0 &&
                 keeper_verify(&rec, &rec_fd) >= 0) {
                keeper_kill(rec_fd);
                safe_close(rec_fd);
        }
        if (cgroup_open(&np->cg, hid, &cg) >= 0) {
                (void)cgroup_kill_all(&cg);
                cgroup_close(&cg);
        }
        int r = cgroup_remove(&np->cg, hid);
        struct hostnet hn = native_hostnet(np);
        hostnet_teardown(&hn, id, hid, false);
        unlink_run_file(np, id, ".keeper");
        unlink_run_file(np, id, ".sock");
        if (r >= 0) /* a cgroup still busy keeps its intent record for the next sweep */
                unlink_run_file(np, id, NATIVE_INTENT_SUFFIX);
}

void native_thread_stop(struct native_provider *np, struct native_thread *t)
{
        native_thread_stop_id(np, t->id, t->live ? t->kp.pidfd : -EBADF);
        forget(t);
}

/* A workspace made before this thread had a block of its own (or before b4box used user
 * namespaces as root) belongs to host ids below 65536: move every such owner into the block,
 * so the sandbox finds its files its own. The thread is stopped, so nothing changes the tree
 * under the walk: nftw() by path (never following a link, never leaving the filesystem)
 * reaches any depth with a bounded number of fds. */
static _Thread_local uint32_t shift_base;

static int shift_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        uid_t uid = st->st_uid < IDMAP_BLOCK ? shift_base + st->st_uid : st->st_uid;
        gid_t gid = st->st_gid < IDMAP_BLOCK ? shift_base + st->st_gid : st->st_gid;

        if ((uid != st->st_uid || gid != st->st_gid) && lchown(path, uid, gid) < 0)
                return errno;
        return 0;
}

static int shift_tree(struct native_provider *np, const char *id, uint32_t base)
{
        cleanup_free char *path = NULL;
        int r;

        if (b4_asprintf(&path, "%s/%s", np->ws_dir, id) < 0)
                return -ENOMEM;
        shift_base = base;
        r = nftw(path, shift_one, 16, FTW_PHYS | FTW_MOUNT);
        return r == 0 ? 0 : r > 0 ? -r : -errno;
}

/* The thread's workspace dir, made for the sandbox user's host ids @uid:@gid, or verified
 * (audit M1): a real directory (never a symlink planted in its place) whose owner is the
 * sandbox user's, shifted into the thread's block when it predates it. */
static int ensure_workspace(struct native_provider *np,
                            const struct native_thread *t,
                            uint64_t disk_gib,
                            uint32_t uid,
                            uint32_t gid,
                            struct b4_error *err)
{
        struct stat st;
        int r;

        if (mkdirat(np->ws_fd, t->id, 0755) == 0) {
                if (np->rootless)
                        return 0; /* ours already: the sandbox user is mapped to us */
                if (fchownat(np->ws_fd, t->id, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return b4_error_set(err, -errno,
                                            "cannot chown the workspace of thread '%s'",
                                            t->thread_id);
                return disk_attach(np, t->id, disk_gib, uid, gid, err);
        }
        if (errno != EEXIST)
                return b4_error_set(err, -errno, "cannot create the workspace of thread '%s'",
                                    t->thread_id);
        if (fstatat(np->ws_fd, t->id, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return b4_error_set(err, -errno, "cannot stat the workspace of thread '%s'",
                                    t->thread_id);
        if (!S_ISDIR(st.st_mode))
                return b4_error_set(err, -ENOTDIR,
                                    "the workspace of thread '%s' (%s/%s) is not a directory; "
                                    "refusing to use it",
                                    t->thread_id, np->ws_dir, t->id);
        r = disk_attach(np, t->id, disk_gib, uid, gid, err);
        if (r < 0)
                return r;
        if (fstatat(np->ws_fd, t->id, &st, AT_SYMLINK_NOFOLLOW) < 0) /* the mounted root */
                return b4_error_set(err, -errno, "cannot stat the workspace of thread '%s'",
                                    t->thread_id);
        if (!t->host_base || st.st_uid >= IDMAP_BLOCK)
                return 0; /* never re-chown a populated workspace of the right ids */
        r = shift_tree(np, t->id, t->host_base);
        if (r < 0)
                return b4_error_set(err, r,
                                    "cannot move the workspace of thread '%s' to its host ids",
                                    t->thread_id);
        return 0;
}

/* Where each command's own cgroup goes; none (process-group kill only) when unavailable. */
static void open_exec_cgroup(struct native_provider *np, struct native_thread *t)
{
        t->cg_fd = safe_close(t->cg_fd);
        t->cg_flags = 0;
        if (cgroup_exec_parent(&np->cg, t->hid, &t->cg_fd, &t->cg_flags) < 0 ||
            (t->host_base && cgroup_delegate(t->cg_fd, t->host_base, t->host_base) < 0))
                t->cg_fd = safe_close(t->cg_fd);
}

static int open_root(pid_t pid, int *ret)
{
        char path[64];
        int fd;

        (void)snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret = fd;
        return 0;
}

static int build_plan(struct native_provider *np,
                      const struct native_thread *t,
                      const struct b4_policy *p,
                      struct mount_plan *ret,
                      struct b4_error *err)
{
        cleanup_free char *ws = NULL, *resolv = NULL;
        struct mount_spec spec = {
                .stage = np->stage_dir,
                .image = t->image->root,
                .host_image = t->image->host,
                .read_only_root = p->security.read_only_root,
                .network_lo_only = true,
        };

        if (b4_asprintf(&ws, "%s/%s", np->ws_dir, t->id) < 0)
                return -ENOMEM;
        spec.workspace = ws;
        struct hostnet hn = native_hostnet(np);
        if (hostnet_listed(p) && hostnet_resolv_prepare(&hn, t->id, &resolv) < 0)
                return b4_error_set(err, -EIO, "cannot prepare the resolv.conf of thread '%s'",
                                    t->thread_id);
        spec.resolv_conf = resolv;
        return mount_plan_build(&spec, ret, err);
}

/* The keeper @pid's namespace gets eth0 + default route + NAT (network "allow", or a policy
 * with a list: then its elements and a b4box-netd too), hostnet/hostnet.h. */
static int net_setup(struct native_provider *np,
                     struct native_thread *t,
                     pid_t pid,
                     const struct b4_policy *p,
                     struct b4_error *err)
{
        struct hostnet hn = native_hostnet(np);
        cleanup_close int nsfd = hostnet_netns_open(pid);

        if (nsfd < 0)
                return b4_error_set(err, nsfd, "cannot open the network namespace of thread '%s'",
                                    t->thread_id);
        return hostnet_setup(&hn, t->id, t->hid, nsfd, p, err);
}

/* An adopted or live listed sandbox: restart its b4box-netd if it died. */
static int lists_revive(struct native_provider *np,
                        const struct native_thread *t,
                        const struct b4_policy *p)
{
        struct hostnet hn = native_hostnet(np);

        return hostnet_lists_revive(&hn, t->id, t->hid, p, NULL);
}

static int set_policy(struct native_thread *t, const char *identity, const struct b4_policy *p)
{
        struct b4_policy copy;
        int r;

        if (p == &t->policy)
                return 0;
        r = b4_policy_copy(&copy, p);
        if (r < 0)
                return r;
        b4_policy_clear(&t->policy);
        t->policy = copy;
        memcpy(t->identity, identity, sizeof(t->identity));
        return 0;
}

/* The workspace (and its diskGb filesystem: after the intent record, like every
 * host-global object) and its owner mark. */
static int prepare_workspace(struct native_provider *np,
                             const struct native_thread *t,
                             const struct b4_policy *p,
                             struct b4_error *err)
{
        bool non_root = p->security.run_as_non_root;
        int r;

        r = ensure_workspace(np, t, p->resources.disk_gb,
                             t->host_base + (non_root ? p->security.uid : 0),
                             t->host_base + (non_root ? p->security.gid : 0), err);
        trace_mark("workspace");
        if (r >= 0 && (r = native_owner_mark(np, t->id)) < 0)
                b4_error_set(err, r, "cannot record the owner of thread '%s'", t->thread_id);
        trace_mark("owner_mark");
        return r;
}

static bool needs_net(const struct b4_policy *p)
{
        return p->network == B4_NETWORK_ALLOW || hostnet_listed(p);
}

/* The keeper's cgroup, root and socket, then its start: the network (when the policy has
 * one) is plumbed while the child sets itself up, so its cgroup's RCU wait (spawn.c) and the
 * netlink work overlap. */
static int launch(struct native_provider *np,
                  struct native_thread *t,
                  const struct b4_policy *p,
                  struct keeper_proc *kp,
                  struct b4_error *err)
{
        struct cgroup_limits lim = { .memory_bytes = p->resources.memory_mb * 1024 * 1024,
                                     .cpus = p->resources.cpus,
                                     .pids = p->security.pids_limit };
        struct mount_plan plan = { 0 };
        struct cgroup_primer primer;
        struct keeper_spawn sp;
        struct cgroup cg;
        cleanup_close int lfd = -EBADF;
        int r, rn = 0;

        r = cgroup_create(&np->cg, t->hid, &lim, &cg, err);
        trace_mark("cgroup_create");
        if (r < 0)
                return r;
        /* From here on nothing takes the kernel's cgroup_mutex, which the primer holds
         * through its grace period (a mkdir would wait it out) */
        cgroup_primer_start(&np->cg, &primer);
        trace_mark("primer");
        r = prepare_workspace(np, t, p, err);
        if (r >= 0)
                r = build_plan(np, t, p, &plan, err);
        trace_mark("mount_plan");
        if (r >= 0) {
                r = keeper_listen(np->run_fd, np->run_dir, t->id, &lfd);
                trace_mark("listen");
                if (r < 0)
                        b4_error_set(err, r, "cannot create the keeper socket in '%s'",
                                     np->run_dir);
        }
        bool non_root = p->security.run_as_non_root;
        struct userns_map um = { .inside_uid = non_root ? p->security.uid : 0,
                                 .inside_gid = non_root ? p->security.gid : 0,
                                 .outside_uid = np->host_uid,
                                 .outside_gid = np->host_gid };
        struct spawn_args a = { .plan = &plan,
                                .exe_fd = np->exe_fd,
                                .listen_fd = lfd,
                                .cg = &cg,
                                .um = np->rootless ? &um : NULL,
                                .host_base = t->host_base };

        if (r >= 0)
                r = spawn_keeper_start(&a, &sp, err);
        if (r >= 0) {
                if (needs_net(p)) {
                        rn = net_setup(np, t, sp.pid, p, err);
                        trace_mark("net");
                }
                /* a child that failed says why, over the network's error */
                r = spawn_keeper_finish(&sp, kp, err);
        }
        if (r >= 0 && rn < 0)
                r = rn; /* start_keeper() kills the keeper (*kp) */
        cgroup_primer_join(&primer);
        trace_mark("primer_join");
        mount_plan_release(&plan);
        cgroup_close(&cg);
        return r;
}

static int start_keeper(struct native_provider *np,
                        struct native_thread *t,
                        const char *identity,
                        const struct b4_policy *p,
                        struct b4_error *err)
{
        struct keeper_proc kp = { .pidfd = -EBADF };
        struct keeper_record rec = { 0 };
        int root_fd = -EBADF;
        int r;

        const struct image_info *oci = &t->image->oci;

        if (oci->root && (r = image_use_begin(np->state_dir, oci->digest, t->id)) < 0)
                return b4_error_set(err, r, "cannot record that thread '%s' uses image %s",
                                    t->thread_id, oci->digest);
        trace_mark("image_use");
        r = write_intent(np, t->id, t->hid);
        trace_mark("intent");
        if (r < 0)
                return b4_error_set(err, r, "cannot record the sandbox of thread '%s'",
                                    t->thread_id);
        r = launch(np, t, p, &kp, err);
        if (r >= 0) {
                rec = (struct keeper_record){ .pid = kp.pid, .starttime = kp.starttime };
                memcpy(rec.identity, identity, sizeof(rec.identity));
                r = keeper_record_write(np->run_fd, t->id, &rec);
                if (r < 0)
                        b4_error_set(err, r, "cannot record the keeper of thread '%s'",
                                     t->thread_id);
                trace_mark("keeper_record");
        }
        if (r >= 0 && (r = open_root(kp.pid, &root_fd)) < 0)
                b4_error_set(err, r, "cannot open the keeper's root");
        if (r >= 0)
                r = set_policy(t, identity, p);
        trace_mark("root_policy");
        if (r < 0) {
                safe_close(root_fd);
                native_thread_stop_id(np, t->id, kp.pidfd);
                safe_close(kp.pidfd);
                return r;
        }
        t->kp = kp;
        t->root_fd = root_fd;
        open_exec_cgroup(np, t);
        set_live(t, true);
        trace_mark("exec_cgroup");
        return 0;
}

/* Adopt the recorded keeper when it is provably the same process with our identity. */
static bool try_adopt(struct native_provider *np,
                      struct native_thread *t,
                      const char *identity,
                      const struct b4_policy *p)
{
        struct keeper_record rec;
        cleanup_close int pidfd = -EBADF, root_fd = -EBADF, sock = -EBADF;

        if (keeper_record_read(np->run_fd, t->id, &rec) < 0 || keeper_verify(&rec, &pidfd) < 0)
                return false;
        if (rec.version != KEEPER_RECORD_VERSION || strcmp(rec.identity, identity) != 0 ||
            open_root(rec.pid, &root_fd) < 0 ||
            keeper_connect(np->run_fd, np->run_dir, t->id, &sock) < 0 ||
            (hostnet_listed(p) && lists_revive(np, t, p) < 0) || set_policy(t, identity, p) < 0) {
                native_thread_stop_id(np, t->id, pidfd);
                return false;
        }
        t->kp = (struct keeper_proc){ .pid = rec.pid,
                                      .pidfd = TAKE_FD(pidfd),
                                      .starttime = rec.starttime };
        t->root_fd = TAKE_FD(root_fd);
        open_exec_cgroup(np, t);
        set_live(t, true);
        /* A server that died with the thread paused left it frozen; this one has no pause
         * for it (the flag is core's, in memory), so it thaws what it adopts. */
        (void)native_freeze(&np->p, t->thread_id, false, NULL);
        return true;
}

/* Not live here: adopt the recorded keeper, else start a new one. */
static int adopt_or_start(struct native_provider *np,
                          struct native_thread *t,
                          struct native_image *img,
                          const char *identity,
                          const struct b4_policy *policy,
                          struct b4_error *err)
{
        if (t->image != img) { /* not live: no keeper or recovery reads it now */
                native_image_unref(t->image);
                t->image = native_image_ref(img);
        }
        /* A recorded block says the thread runs in its own user namespace: adopting its
         * keeper needs no probe of the kernel (a fork), only starting one does. */
        if (idmap_recorded(np, t->id) || native_userns(np)) {
                int r = idmap_get(np, t->id, true, &t->host_base, err);
                trace_mark("idmap");
                if (r < 0)
                        return r;
        }
        t->reattached = try_adopt(np, t, identity, policy);
        trace_mark("adopt");
        if (t->reattached)
                return 0;
        native_thread_stop_id(np, t->id, -EBADF);
        trace_mark("stop_stale");
        return start_keeper(np, t, identity, policy, err);
}

int native_thread_ensure(struct native_provider *np,
                         struct native_thread *t,
                         struct native_image *img,
                         const char *identity,
                         const struct b4_policy *policy,
                         struct b4_error *err)
{
        if (t->live && keeper_is_dead(t->kp.pidfd))
                native_thread_stop(np, t);
        if (t->live && hostnet_listed(&t->policy) && lists_revive(np, t, &t->policy) < 0)
                native_thread_stop(np, t); /* its lists cannot be served: recreate it */
        if (t->live && strcmp(t->identity, identity) != 0)
                return b4_error_set_code(
                        err, -EBUSY, B4_CODE_SANDBOX_UNAVAILABLE,
                        "Sandbox unavailable: thread \"%s\" already has a different keeper "
                        "configuration. Release the thread sandbox first, then acquire it with a "
                        "different policy.",
                        t->thread_id);
        t->reattached = t->live;
        trace_mark("ensure.live");
        if (t->live)
                return 0;
        return adopt_or_start(np, t, img, identity, policy, err);
}

int native_thread_recover(struct native_provider *np, struct native_thread *t, struct b4_error *err)
{
        char identity[65];

        memcpy(identity, t->identity, sizeof(identity));
        native_thread_stop(np, t);
        return start_keeper(np, t, identity, &t->policy, err);
}
