/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handles: a sandbox (exec + the full filesystem over the keeper's root) and a reader (the
 * read-only filesystem over a detached, kernel-read-only clone of the workspace mount, which
 * never touches the thread's keeper). Core runs file operations and the start of a command
 * (connect, its cgroup) under the thread's shared lease; the command itself runs with none,
 * so a release kills it instead of waiting. A keeper that died or can no longer fork (pids
 * limit reached) fails -ENOTCONN / -EAGAIN, and core has recover replace it under the
 * exclusive lease, once per generation, then retries the command once (reference §3.6).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "keeper-proto.h"
#include "native.h"

struct native_reader {
        struct b4_reader r; /* first */
        struct native_provider *np;
        int mnt_fd;        /* read-only detached clone of the workspace */
        uint32_t uid, gid; /* host ids the reads run as: the thread's user's */
};

static int unavailable(struct b4_error *err, const struct native_thread *t)
{
        return b4_error_set_code(err, -EIO, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: thread \"%s\" has been released. Acquire "
                                 "it again. Run `b4box check`.",
                                 t->thread_id);
}

/* The identity an operation runs with: the sandbox user's host ids (audit H1). Rootless
 * needs no switch: the sandbox user is mapped to us, and we hold no capabilities. */
static int take_identity(struct native_provider *np,
                         uint32_t uid,
                         uint32_t gid,
                         struct fsctx *c,
                         struct b4_error *err)
{
        int r;

        if (np->rootless)
                return 0;
        r = creds_enter(uid, gid, &c->creds);
        if (r < 0)
                return b4_error_set(err, r, "cannot take the sandbox's identity (%u:%u)", uid, gid);
        return 0;
}

int native_fs_enter(struct b4_fs *fs, struct fsctx *ret, struct b4_error *err)
{
        if (fs->ops == &native_fs_ops) {
                struct native_sandbox *s = (struct native_sandbox *)fs;
                const struct b4_security *sec = &s->t->policy.security;
                if (!s->t->live) /* stable: the shared lease is held */
                        return unavailable(err, s->t);
                uint32_t base = s->t->host_base;
                *ret = (struct fsctx){ .root_fd = s->t->root_fd,
                                       .uid = base + (sec->run_as_non_root ? sec->uid : 0),
                                       .gid = base + (sec->run_as_non_root ? sec->gid : 0),
                                       .chown = !s->np->rootless /* ours = theirs */ };
                return take_identity(s->np, ret->uid, ret->gid, ret, err);
        }
        struct native_reader *rd = (struct native_reader *)fs;
        *ret = (struct fsctx){ .root_fd = rd->mnt_fd, .strip = B4_WORKSPACE_ROOT };
        return take_identity(rd->np, rd->uid, rd->gid, ret, err);
}

void native_fs_leave(struct b4_fs *fs, struct fsctx *c)
{
        creds_leave(&c->creds);
}

static uint32_t keeper_flags(const struct b4_security *s)
{
        uint32_t f = KEEPER_SECCOMP;

        if (s->run_as_non_root)
                f |= KEEPER_SETUID;
        if (s->drop_all_capabilities)
                f |= KEEPER_DROP_CAPS;
        if (s->no_new_privileges)
                f |= KEEPER_NO_NEW_PRIVS;
        return f;
}

/* Under the shared lease. Without one the keeper still kills the session (reported in
 * preflight). */
void exec_cg_make(struct native_thread *t, struct exec_cg *cg)
{
        if (t->cg_fd < 0)
                return;
        cg->parent_fd = fcntl(t->cg_fd, F_DUPFD_CLOEXEC, 3);
        if (cg->parent_fd < 0)
                return;
        (void)pthread_mutex_lock(&t->cg_lock);
        cg->fd = TAKE_FD(t->cg_spare_fd);
        memcpy(cg->name, t->cg_spare_name, sizeof(cg->name));
        (void)pthread_mutex_unlock(&t->cg_lock);
        if (cg->fd < 0 &&
            (cgroup_exec_create(cg->parent_fd, cg->name, &cg->fd) < 0 ||
             (t->host_base && cgroup_delegate(cg->fd, t->host_base, t->host_base) < 0))) {
                cg->fd = safe_close(cg->fd);
                cgroup_exec_remove(cg->parent_fd, cg->name, false);
                cg->parent_fd = safe_close(cg->parent_fd);
                return;
        }
        cg->flags = KEEPER_CGROUP | t->cg_flags;
}

static bool cg_empty(int fd)
{
        cleanup_close int procs = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        char c;

        return procs >= 0 && read(procs, &c, 1) == 0;
}

/* Keep @cg as the spare when it is empty, still belongs to keeper generation @gen, has no
 * pids.peak (a figure no write resets: cgroup_usage_end()) and was not @killed: a cgroup2 one whose
 * cgroup.kill was written kills every process clone3() starts in it from then on (the kernel
 * compares the kill counts of the parent's and the target cgroup), so a killed command's cgroup is
 * never reused. */
static void exec_cg_done(struct native_thread *t, uint64_t gen, struct exec_cg *cg, bool killed)
{
        bool kept = false;

        if (cg->fd < 0)
                return;
        if (!killed && !cgroup_has_pids_peak(cg->fd) && cg_empty(cg->fd)) {
                (void)pthread_mutex_lock(&t->cg_lock);
                if (t->live && t->generation == gen && t->cg_spare_fd < 0) {
                        t->cg_spare_fd = TAKE_FD(cg->fd);
                        memcpy(t->cg_spare_name, cg->name, sizeof(cg->name));
                        kept = true;
                }
                (void)pthread_mutex_unlock(&t->cg_lock);
        }
        if (!kept) {
                cg->fd = safe_close(cg->fd);
                cgroup_exec_remove(cg->parent_fd, cg->name, killed); /* EBUSY: jobs live on */
        }
        cg->parent_fd = safe_close(cg->parent_fd);
}

/* A command between its start and its end: what exec_finish needs. */
struct started {
        char **env; /* owned */
        struct exec_spec spec;
        struct exec_cg cg;
        struct cgroup_usage usage;
        int sock;
        uint64_t gen; /* the keeper generation it started on */
};

static void started_free(struct started *st)
{
        strv_free(st->env);
        safe_close(st->sock);
        safe_close(st->cg.fd);
        safe_close(st->cg.parent_fd);
        free(st);
}

int native_exec_spec(struct native_sandbox *s,
                     const struct b4_exec_req *req,
                     char ***ret_env,
                     struct exec_spec *ret,
                     struct b4_error *err)
{
        const struct b4_policy *p = &s->policy;
        int r;

        r = native_build_env(s->image->oci.env, p, req->env, req->n_env, ret_env, err);
        if (r < 0)
                return r;
        *ret = (struct exec_spec){
                .command = req->command,
                .cwd = req->cwd ? req->cwd : B4_WORKSPACE_ROOT,
                .env = *ret_env,
                .uid = p->security.run_as_non_root ? p->security.uid : 0,
                .gid = p->security.run_as_non_root ? p->security.gid : 0,
                .flags = keeper_flags(&p->security) | (s->np->rootless ? KEEPER_NO_SETGROUPS : 0),
                .cg_fd = -EBADF,
                .bpf = s->np->bpf,
                .bpf_len = s->np->bpf_len,
                .timeout_ms = req->timeout_ms ? req->timeout_ms : p->resources.timeout_ms,
                .output_cap = req->output_cap
                                      ? req->output_cap
                                      : (p->output_cap ? p->output_cap : B4_DEFAULT_OUTPUT_CAP),
                .cancel = req->cancel,
                .on_output = req->on_output,
                .output_userdata = req->output_userdata,
        };
        return 0;
}

/* Under the shared lease (a stable keeper): connect and pick the command's cgroup.
 * -ENOTCONN: no keeper to talk to. */
static int sb_exec_start(struct b4_sandbox *sb,
                         const struct b4_exec_req *req,
                         void **ret_started,
                         struct b4_error *err)
{
        struct native_sandbox *s = (struct native_sandbox *)sb;
        struct native_thread *t = s->t;
        struct started *st = b4_calloc(1, sizeof(*st));
        int r;

        if (!st)
                return b4_error_set(err, -ENOMEM, "out of memory");
        st->sock = st->cg.parent_fd = st->cg.fd = -EBADF;
        r = native_exec_spec(s, req, &st->env, &st->spec, err);
        if (r >= 0 && !t->live)
                r = unavailable(err, t);
        if (r < 0) {
                started_free(st);
                return r;
        }
        st->gen = t->generation;
        r = keeper_connect(s->np->run_fd, s->np->run_dir, t->id, &st->sock);
        if (r < 0) {
                started_free(st);
                return b4_error_set(err, -ENOTCONN, "cannot reach the keeper of thread '%s'",
                                    t->thread_id);
        }
        exec_cg_make(t, &st->cg);
        cgroup_usage_begin(&s->np->cg, t->hid, st->cg.fd, &st->usage);
        st->spec.cg_fd = st->cg.fd;
        st->spec.flags = (st->spec.flags & ~(uint32_t)KEEPER_CG_MASK) | st->cg.flags;
        *ret_started = st;
        return 0;
}

/* With no lease: a release meanwhile kills the keeper and the command ends -EIO. -EAGAIN:
 * the keeper could not fork (core recovers and retries). */
static int sb_exec_finish(struct b4_sandbox *sb,
                          void *started,
                          struct b4_exec_result *ret,
                          struct b4_error *err)
{
        struct native_sandbox *s = (struct native_sandbox *)sb;
        struct started *st = started;
        int r;

        r = exec_run(TAKE_FD(st->sock), &st->spec, ret, err);
        cgroup_usage_end(&st->usage, r >= 0 ? &ret->usage : &(struct b4_exec_usage){ 0 });
        exec_cg_done(s->t, st->gen, &st->cg, r >= 0 && (ret->timed_out || ret->cancelled));
        started_free(st);
        return r;
}

/* Under the exclusive lease, the failed attempt's keeper generation still current. */
static int sb_recover(struct b4_sandbox *sb, struct b4_error *err)
{
        struct native_sandbox *s = (struct native_sandbox *)sb;
        struct native_thread *t = s->t;
        int lock_fd = -EBADF;
        int r;

        if (t != b4_entry_state(b4_sandbox_entry(sb)) || !t->live)
                return 0; /* a handle of a thread since released: the retry says so */
        r = native_thread_flock(s->np, t->id, &lock_fd);
        if (r >= 0)
                r = native_thread_recover(s->np, t, err);
        safe_close(lock_fd);
        if (r < 0)
                return b4_error_wrap(err, r,
                                     "Sandbox unavailable: keeper recovery failed for "
                                     "thread \"%s\"",
                                     sb->thread_id);
        return 0;
}

static void sb_free(struct b4_sandbox *sb)
{
        struct native_sandbox *s = (struct native_sandbox *)sb;

        b4_policy_clear(&s->policy);
        native_image_unref(s->image);
        native_thread_unref(s->t);
        native_provider_unref(s->np);
        free(s);
}

static const struct b4_sandbox_ops sandbox_ops = {
        .exec_start = sb_exec_start,
        .exec_finish = sb_exec_finish,
        .recover = sb_recover,
        .free = sb_free,
        .procs = &native_proc_ops,
};

int native_sandbox_new(struct native_provider *np,
                       struct native_thread *t,
                       const struct b4_policy *policy,
                       struct b4_sandbox **ret,
                       struct b4_error *err)
{
        struct native_sandbox *s = b4_calloc(1, sizeof(*s));
        int r;

        if (!s)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = b4_policy_copy(&s->policy, policy);
        if (r >= 0 && (r = b4_sandbox_init(&s->sb, &sandbox_ops, &native_fs_ops, t->thread_id)) < 0)
                b4_policy_clear(&s->policy);
        if (r < 0) {
                free(s);
                return b4_error_set(err, r, "out of memory");
        }
        s->t = native_thread_ref(t);
        s->image = native_image_ref(t->image);
        s->np = native_provider_ref(np);
        s->sb.reattached = t->reattached;
        *ret = &s->sb;
        return 0;
}

/* ---- reader ---- */

static int rd_close(struct b4_reader *r, struct b4_error *err)
{
        struct native_reader *rd = (struct native_reader *)r;

        rd->mnt_fd = safe_close(rd->mnt_fd); /* core refuses reads from now on */
        return 0;
}

static void rd_free(struct b4_reader *r)
{
        struct native_reader *rd = (struct native_reader *)r;

        safe_close(rd->mnt_fd);
        native_provider_unref(rd->np);
        free(rd);
}

static const struct b4_reader_ops reader_ops = {
        .close = rd_close,
        .free = rd_free,
};

/* Rootless: open_tree() needs CAP_SYS_ADMIN, so the view is the workspace dir itself; the
 * reader's ops have no write member, reads resolve inside it all the same. */
static int open_ro_clone(int ws_fd, const char *id, bool rootless, int *ret)
{
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                                               MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
        int fd = open_tree(ws_fd, id, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);

        if (fd < 0 && errno == EPERM && rootless) {
                fd = openat(ws_fd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                *ret = fd;
                return 0;
        }
        if (fd < 0)
                return -errno;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        *ret = fd;
        return 0;
}

int native_reader_open(struct native_provider *np,
                       const struct b4_reader_req *req,
                       struct b4_reader **ret,
                       struct b4_error *err)
{
        char id[41];
        struct native_reader *rd;
        uint32_t base = 0; /* no block recorded: the workspace's ids are the host's */
        int fd = -EBADF;
        int r;

        if (b4_resource_id(np->p.scope, req->thread_id, id) < 0)
                return b4_error_set(err, -EINVAL, "invalid thread id");
        if ((r = idmap_get(np, id, false, &base, err)) < 0 && r != -ENOENT)
                return r;
        if (faccessat(np->ws_fd, id, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
            (r = disk_attach(np, id, 0, 0, 0, err)) < 0) /* after a reboot: mount it again */
                return r;
        r = open_ro_clone(np->ws_fd, id, np->rootless, &fd);
        if (r == -ENOENT)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: no workspace storage for thread "
                                         "\"%s\".",
                                         req->thread_id);
        if (r < 0)
                return b4_error_set(err, r,
                                    "cannot open a read-only view of the workspace of "
                                    "thread '%s'",
                                    req->thread_id);
        rd = b4_calloc(1, sizeof(*rd));
        if (!rd || b4_reader_init(&rd->r, &reader_ops, &native_fs_read_ops, req->thread_id) < 0) {
                free(rd);
                safe_close(fd);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        rd->mnt_fd = fd;
        rd->uid = base + (req->run_as_non_root ? req->uid : 0);
        rd->gid = base + (req->run_as_non_root ? req->gid : 0);
        rd->np = native_provider_ref(np);
        *ret = &rd->r;
        return 0;
}
