/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-thread cgroups. Every path is resolved under a cgroupfs-root dirfd (normally
 * /sys/fs/cgroup) so the logic runs unchanged against a fake tree in unit tests.
 *   v2: <root>[/unified]/b4box/<id>, when the unified hierarchy offers pids and memory
 *       (controllers enabled through cgroup.subtree_control on the way down);
 *   v1: <root>/<ctrl>/b4box/<id> for ctrl in pids, memory, cpu, freezer (those present),
 *       and on a hybrid host <root>/unified/b4box/<id> when that cgroup2 hierarchy offers
 *       cgroup.kill: it holds no controller, only the commands' own cgroups.
 * Limits: pids.max; memory.max / memory.limit_in_bytes (swap pinned to the same budget);
 * cpu.max / cfs quota. Killing freezes first (v1 freezer) or uses cgroup.kill (v2) so a fork
 * bomb cannot outrun the loop. Each command gets its own child cgroup (<id>/c<pid>-<n>: v2 in
 * the thread's dir; v1 in the unified one of a hybrid host, else the freezer hierarchy, else
 * pids) so a timeout or cancel kills everything it started, including processes that left
 * its session; limits stay the thread's (hierarchical; on a hybrid host the command simply
 * stays in the keeper's v1 cgroups). A cgroup2 command cgroup lets the keeper clone3() the
 * command straight into it, where a v1 one costs a cgroup.procs write (an RCU grace period,
 * milliseconds). The children are swept and removed with the thread's cgroup. The keeper
 * itself is born in its cgroup on v2 (CLONE_INTO_CGROUP) and writes itself into its dirs on
 * v1 (cgroup_placement_open()), while the provider goes on (spawn.c), after the primer
 * (cgroup_primer_start()) started the grace period those writes wait for.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "keeper-proto.h"
#include "native.h"

const char *const cgroup_v1_names[CGROUP_V1_MAX] = { "pids", "memory", "cpu", "freezer" };
static const char *const v2_ctrls[CGROUP_V1_MAX] = { "pids", "memory", "cpu", NULL };

enum {
        CG_PIDS = 0,
        CG_MEMORY = 1,
        CG_CPU = 2,
        CG_FREEZER = 3
};

#define PARENT "b4box"

static bool file_exists_at(int dirfd, const char *path)
{
        return faccessat(dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool word_in(const char *list, const char *word)
{
        size_t n = strlen(word);

        for (const char *p = list; (p = strstr(p, word)); p += n)
                if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
                        return true;
        return false;
}

static bool probe_v2(struct cgroup_host *h, const char *sub)
{
        cleanup_free char *ctrls = NULL;
        cleanup_close int fd = -EBADF;
        size_t len;

        fd = openat(h->root_fd, sub, O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || read_file_at(fd, "cgroup.controllers", 4096, &ctrls, &len) < 0)
                return false;
        if (!word_in(ctrls, "pids") || !word_in(ctrls, "memory"))
                return false;
        for (size_t i = 0; i < CGROUP_V1_MAX; i++)
                h->has[i] = v2_ctrls[i] && word_in(ctrls, v2_ctrls[i]);
        h->has[CG_FREEZER] = true; /* cgroup.kill or the procs loop */
        h->v2_fd = TAKE_FD(fd);
        h->mode = CGROUP_V2;
        return true;
}

/* Hybrid host: the controller-less cgroup2 hierarchy next to the v1 ones, if mounted. */
static int probe_unified(int root_fd)
{
        int fd = openat(root_fd, "unified", O_DIRECTORY | O_CLOEXEC);

        if (fd >= 0 && !file_exists_at(fd, "cgroup.controllers"))
                fd = safe_close(fd);
        return fd;
}

void cgroup_host_probe(int root_fd, struct cgroup_host *ret)
{
        struct cgroup_host h = { .root_fd = root_fd, .v2_fd = -EBADF, .unified_fd = -EBADF };

        if (root_fd >= 0 && !probe_v2(&h, ".") && !probe_v2(&h, "unified")) {
                for (size_t i = 0; i < CGROUP_V1_MAX; i++) {
                        char p[64];
                        (void)snprintf(p, sizeof(p), "%s/cgroup.procs", cgroup_v1_names[i]);
                        h.has[i] = file_exists_at(root_fd, p);
                }
                if (h.has[CG_PIDS]) {
                        h.mode = CGROUP_V1;
                        h.unified_fd = probe_unified(root_fd);
                }
        }
        *ret = h;
}

/* Whether the invoking user may create and fill cgroups under @hier/b4box. */
static bool delegated(int hier)
{
        return faccessat(hier, PARENT, W_OK | X_OK, AT_EACCESS) == 0 &&
               faccessat(hier, PARENT "/cgroup.procs", W_OK, AT_EACCESS) == 0;
}

void cgroup_host_restrict_to_delegated(struct cgroup_host *h)
{
        bool any = false;

        h->rootless = true;
        if (h->mode == CGROUP_V2) {
                /* moving the keeper in needs the common ancestor (the root) writable too */
                if (!delegated(h->v2_fd) ||
                    faccessat(h->v2_fd, "cgroup.procs", W_OK, AT_EACCESS) < 0)
                        memset(h->has, 0, sizeof(h->has));
        } else {
                for (size_t i = 0; i < CGROUP_V1_MAX; i++) {
                        cleanup_close int hier = -EBADF;
                        if (!h->has[i])
                                continue;
                        hier = openat(h->root_fd, cgroup_v1_names[i], O_DIRECTORY | O_CLOEXEC);
                        h->has[i] = hier >= 0 && delegated(hier);
                }
                /* as in v2 mode: moving the keeper in needs the root writable too */
                if (h->unified_fd >= 0 &&
                    (!delegated(h->unified_fd) ||
                     faccessat(h->unified_fd, "cgroup.procs", W_OK, AT_EACCESS) < 0))
                        h->unified_fd = safe_close(h->unified_fd);
        }
        for (size_t i = 0; i < CGROUP_V1_MAX; i++)
                any = any || h->has[i];
        if (!any) {
                h->mode = CGROUP_NONE;
                h->unified_fd = safe_close(h->unified_fd);
        }
}

void cgroup_host_release(struct cgroup_host *h)
{
        safe_close(h->root_fd);
        safe_close(h->v2_fd);
        safe_close(h->unified_fd);
        *h = (struct cgroup_host){ .root_fd = -EBADF, .v2_fd = -EBADF, .unified_fd = -EBADF };
}

void cgroup_close(struct cgroup *cg)
{
        for (size_t i = 0; i < CGROUP_V1_MAX; i++)
                cg->dirfd[i] = safe_close(cg->dirfd[i]);
        cg->unified_fd = safe_close(cg->unified_fd);
}

static void cgroup_reset(struct cgroup *cg, const char *id, enum cgroup_mode mode)
{
        *cg = (struct cgroup){ .mode = mode, .unified_fd = -EBADF };
        for (size_t i = 0; i < CGROUP_V1_MAX; i++)
                cg->dirfd[i] = -EBADF;
        (void)snprintf(cg->id, sizeof(cg->id), "%s", id);
}

/* The hierarchy dirfd for slot @i: v2 uses one tree, v1 one per controller. */
static int hier_open(const struct cgroup_host *h, size_t i)
{
        if (h->mode == CGROUP_V2)
                return fcntl(h->v2_fd, F_DUPFD_CLOEXEC, 3);
        return openat(h->root_fd, cgroup_v1_names[i], O_DIRECTORY | O_CLOEXEC);
}

static int mkdir_open(int dirfd, const char *name, bool create)
{
        if (create && mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(dirfd, name, O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* "+pids +memory +cpu", limited to the controllers the hierarchy offers. */
static void v2_enable_string(const struct cgroup_host *h, char *buf, size_t size)
{
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < CGROUP_V1_MAX && off < size; i++)
                if (v2_ctrls[i] && h->has[i])
                        off += (size_t)snprintf(buf + off, size - off, "%s+%s", off ? " " : "",
                                                v2_ctrls[i]);
}

/* <unified>/b4box/<id> of a hybrid host, or -EBADF: absent, or (@create) no cgroup.kill on
 * this kernel, when the dir goes again and the commands' cgroups stay v1. Best effort, as
 * it only makes commands start faster. */
static int open_unified(const struct cgroup_host *h, const char *id, bool create)
{
        cleanup_close int parent = -EBADF;
        int fd;

        if (h->mode != CGROUP_V1 || h->unified_fd < 0)
                return -EBADF;
        parent = mkdir_open(h->unified_fd, PARENT, create);
        if (parent < 0)
                return -EBADF;
        fd = mkdir_open(parent, id, create);
        if (fd >= 0 && create && !file_exists_at(fd, "cgroup.kill")) {
                fd = safe_close(fd);
                (void)unlinkat(parent, id, AT_REMOVEDIR);
        }
        return fd < 0 ? -EBADF : fd;
}

static int open_all(const struct cgroup_host *h, const char *id, bool create, struct cgroup *cg)
{
        size_t n = h->mode == CGROUP_V2 ? 1 : CGROUP_V1_MAX;
        char enable[64];

        v2_enable_string(h, enable, sizeof(enable));

        cgroup_reset(cg, id, h->mode);
        for (size_t i = 0; i < n; i++) {
                cleanup_close int hier = -EBADF, parent = -EBADF;
                if (h->mode == CGROUP_V1 && !h->has[i])
                        continue;
                hier = hier_open(h, i);
                if (hier < 0)
                        return -errno;
                if (create && h->mode == CGROUP_V2)
                        (void)write_string_at(hier, "cgroup.subtree_control", enable);
                parent = mkdir_open(hier, PARENT, create);
                if (parent < 0)
                        return parent;
                if (create && h->mode == CGROUP_V2)
                        (void)write_string_at(parent, "cgroup.subtree_control", enable);
                cg->dirfd[i] = mkdir_open(parent, id, create);
                if (cg->dirfd[i] < 0)
                        return cg->dirfd[i];
        }
        cg->unified_fd = open_unified(h, id, create);
        return 0;
}

static int write_u64(int dirfd, const char *file, uint64_t v)
{
        char buf[32];

        (void)snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return write_string_at(dirfd, file, buf);
}

static int set_limits_v1(const struct cgroup *cg, const struct cgroup_limits *lim)
{
        int r = 0;

        if (lim->pids && cg->dirfd[CG_PIDS] >= 0)
                r = write_u64(cg->dirfd[CG_PIDS], "pids.max", lim->pids);
        if (r >= 0 && lim->memory_bytes && cg->dirfd[CG_MEMORY] >= 0) {
                r = write_u64(cg->dirfd[CG_MEMORY], "memory.limit_in_bytes", lim->memory_bytes);
                (void)write_u64(cg->dirfd[CG_MEMORY], "memory.memsw.limit_in_bytes",
                                lim->memory_bytes);
        }
        if (r >= 0 && lim->cpus > 0 && cg->dirfd[CG_CPU] >= 0) {
                r = write_u64(cg->dirfd[CG_CPU], "cpu.cfs_period_us", 100000);
                if (r >= 0)
                        r = write_u64(cg->dirfd[CG_CPU], "cpu.cfs_quota_us",
                                      (uint64_t)(lim->cpus * 100000.0));
        }
        return r;
}

static int set_limits_v2(const struct cgroup *cg, const struct cgroup_limits *lim)
{
        int fd = cg->dirfd[0];
        int r = 0;

        if (lim->pids)
                r = write_u64(fd, "pids.max", lim->pids);
        if (r >= 0 && lim->memory_bytes) {
                r = write_u64(fd, "memory.max", lim->memory_bytes);
                (void)write_string_at(fd, "memory.swap.max", "0");
        }
        if (r >= 0 && lim->cpus > 0) {
                char buf[64];
                (void)snprintf(buf, sizeof(buf), "%" PRIu64 " 100000",
                               (uint64_t)(lim->cpus * 100000.0));
                r = write_string_at(fd, "cpu.max", buf);
        }
        return r;
}

int cgroup_create(const struct cgroup_host *h,
                  const char *id,
                  const struct cgroup_limits *lim,
                  struct cgroup *ret,
                  struct b4_error *err)
{
        struct cgroup cg;
        int r;

        if (h->mode == CGROUP_NONE) {
                cgroup_reset(ret, id, CGROUP_NONE);
                return 0;
        }
        r = open_all(h, id, true, &cg);
        if (r >= 0)
                r = h->mode == CGROUP_V2 ? set_limits_v2(&cg, lim) : set_limits_v1(&cg, lim);
        if (r < 0) {
                cgroup_close(&cg);
                return b4_error_set(err, r, "cannot set up the cgroup of sandbox %s", id);
        }
        *ret = cg;
        return 0;
}

int cgroup_open(const struct cgroup_host *h, const char *id, struct cgroup *ret)
{
        int r;

        if (h->mode == CGROUP_NONE) {
                cgroup_reset(ret, id, CGROUP_NONE);
                return 0;
        }
        r = open_all(h, id, false, ret);
        if (r < 0)
                cgroup_close(ret);
        return r;
}

int cgroup_placement_open(const struct cgroup *cg, struct cgroup_placement *ret)
{
        struct cgroup_placement pl = { .clone_fd = -EBADF, .clone_procs = -EBADF };
        int dirs[CGROUP_V1_MAX + 1];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(pl.procs); i++)
                pl.procs[i] = -EBADF;
        if (cg->mode == CGROUP_V2 && cg->dirfd[0] >= 0) {
                pl.clone_fd = cg->dirfd[0];
                pl.clone_procs =
                        openat(cg->dirfd[0], "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                return pl.clone_procs < 0 ? -errno : (*ret = pl, 0);
        }
        /* v1: every dir by a write, the hybrid host's unified one too (CLONE_INTO_CGROUP
         * would take the kernel's cgroup_mutex, which the primer holds through its wait) */
        for (size_t i = 0; cg->mode == CGROUP_V1 && i < CGROUP_V1_MAX; i++)
                if (cg->dirfd[i] >= 0)
                        dirs[n++] = cg->dirfd[i];
        if (cg->mode == CGROUP_V1 && cg->unified_fd >= 0)
                dirs[n++] = cg->unified_fd;
        for (size_t i = 0; i < n; i++) {
                int fd = openat(dirs[i], "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        int r = -errno;
                        cgroup_placement_close(&pl);
                        return r;
                }
                pl.procs[pl.n_procs++] = fd;
        }
        *ret = pl;
        return 0;
}

/*
 * The primer. A v1 cgroup.procs write waits for an RCU grace period (percpu_down_write() of
 * the kernel's cgroup_threadgroup_rwsem: rcu_sync_enter()) unless another write ran within
 * the last one; the keeper's own writes (child.c) then ride on this one. It moves the
 * process into the v1 pids (else first) cgroup it is in already: a no-op migration, read
 * from /proc/self/cgroup just before.
 */
static void *prime(void *arg)
{
        const struct cgroup_host *h = arg;
        cleanup_free char *self = NULL;
        char path[4096];
        size_t len;

        if (read_file_at(AT_FDCWD, "/proc/self/cgroup", 1u << 16, &self, &len) < 0)
                return NULL;
        for (size_t i = 0; i < CGROUP_V1_MAX; i++) {
                char key[32];
                if (!h->has[i])
                        continue;
                (void)snprintf(key, sizeof(key), ":%s:/", cgroup_v1_names[i]);
                const char *at = strstr(self, key);
                if (!at)
                        continue;
                at += strlen(key) - 1;
                int n = (int)strcspn(at, "\n");
                if (snprintf(path, sizeof(path), "%s%.*s/cgroup.procs", cgroup_v1_names[i], n,
                             at) >= (int)sizeof(path))
                        return NULL;
                (void)write_string_at(h->root_fd, path, "0");
                return NULL;
        }
        return NULL;
}

void cgroup_primer_start(const struct cgroup_host *h, struct cgroup_primer *ret)
{
        ret->running = h->mode == CGROUP_V1 && !h->rootless && h->root_fd >= 0 &&
                       pthread_create(&ret->thread, NULL, prime, (void *)h) == 0;
}

void cgroup_primer_join(struct cgroup_primer *pr)
{
        if (pr->running)
                (void)pthread_join(pr->thread, NULL);
        pr->running = false;
}

void cgroup_placement_close(struct cgroup_placement *pl)
{
        for (size_t i = 0; i < pl->n_procs; i++)
                pl->procs[i] = safe_close(pl->procs[i]);
        pl->n_procs = 0;
        pl->clone_procs = safe_close(pl->clone_procs);
        pl->clone_fd = -EBADF;
}

static int procs_fd(const struct cgroup *cg)
{
        for (size_t i = 0; i < CGROUP_V1_MAX; i++)
                if (cg->dirfd[i] >= 0)
                        return cg->dirfd[i];
        return -EBADF;
}

/* @fn on @dirfd, then on each child cgroup dir (one level: the commands' own cgroups, which
 * nothing inside a sandbox can nest further); the results are summed. */
static int for_tree(int dirfd, int (*fn)(int fd))
{
        __attribute__((cleanup(closedirp))) DIR *d = NULL;
        int fd, n = fn(dirfd);
        struct dirent *de;

        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return n;
        }
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                cleanup_close int sub =
                        openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (sub >= 0)
                        n += fn(sub);
        }
        return n;
}

/* Kill every pid listed; return how many were listed. */
static int kill_listed(int dirfd)
{
        cleanup_free char *procs = NULL;
        size_t len;
        int n = 0;

        if (read_file_at(dirfd, "cgroup.procs", 16u << 20, &procs, &len) < 0)
                return 0;
        for (char *p = procs; *p;) {
                char *end;
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0) {
                        (void)kill((pid_t)pid, SIGKILL);
                        n++;
                }
                p = end;
                while (*p == '\n')
                        p++;
        }
        return n;
}

/* 1 when @dirfd's cgroup.procs lists anything. */
static int populated(int dirfd)
{
        cleanup_free char *procs = NULL;
        size_t len = 0;

        if (read_file_at(dirfd, "cgroup.procs", 16u << 20, &procs, &len) < 0)
                return 0;
        return len > 0;
}

bool cgroup_is_empty(const struct cgroup *cg)
{
        int fd = procs_fd(cg);

        return fd < 0 || for_tree(fd, populated) == 0;
}

int cgroup_kill_all(const struct cgroup *cg)
{
        int fd = procs_fd(cg);
        int freezer = cg->mode == CGROUP_V1 ? cg->dirfd[CG_FREEZER] : -EBADF;

        if (fd < 0)
                return 0;
        if (cg->mode == CGROUP_V2)
                (void)write_string_at(fd, "cgroup.kill", "1");
        for (int i = 0; i < 400; i++) {
                if (freezer >= 0)
                        (void)write_string_at(freezer, "freezer.state", "FROZEN");
                int n = for_tree(fd, kill_listed);
                if (freezer >= 0)
                        (void)write_string_at(freezer, "freezer.state", "THAWED");
                if (n == 0 && cgroup_is_empty(cg))
                        return 0;
                (void)nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000 * 1000 }, NULL);
        }
        return -EBUSY;
}

/* rmdir @name under @dirfd, waiting out EBUSY while its last processes exit (bounded). */
static int rmdir_wait(int dirfd, const char *name)
{
        for (int i = 0; i < 200; i++) {
                if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                (void)nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000 * 1000 }, NULL);
        }
        return -EBUSY;
}

/* Remove the commands' cgroups under @dirfd (they must be empty). */
static int remove_children(int dirfd)
{
        __attribute__((cleanup(closedirp))) DIR *d = NULL;
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent *de;

        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return 0;
        }
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.')
                        (void)rmdir_wait(dirfd, de->d_name);
        return 0;
}

static int remove_one(int hier, const char *id)
{
        cleanup_close int parent = openat(hier, PARENT, O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        cleanup_close int self = -EBADF;

        if (parent < 0)
                return errno == ENOENT ? 0 : -errno;
        self = openat(parent, id, O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (self >= 0)
                (void)remove_children(self);
        return rmdir_wait(parent, id);
}

int cgroup_exec_parent(const struct cgroup_host *h,
                       const char *id,
                       int *ret_fd,
                       uint32_t *ret_flags)
{
        cleanup_close int hier = -EBADF, parent = -EBADF;
        size_t slot = h->mode == CGROUP_V2 ? 0 : h->has[CG_FREEZER] ? CG_FREEZER : CG_PIDS;
        int fd = open_unified(h, id, false);

        if (fd >= 0 && file_exists_at(fd, "cgroup.kill")) {
                *ret_flags = KEEPER_CG_KILL;
                *ret_fd = fd;
                return 0;
        }
        safe_close(fd);
        if (h->mode == CGROUP_NONE || (h->mode == CGROUP_V1 && !h->has[slot]))
                return -EOPNOTSUPP;
        hier = hier_open(h, slot);
        if (hier < 0)
                return -errno;
        parent = mkdir_open(hier, PARENT, false);
        if (parent < 0)
                return parent;
        fd = mkdir_open(parent, id, false);
        if (fd < 0)
                return fd;
        *ret_flags = h->mode == CGROUP_V2 ? (file_exists_at(fd, "cgroup.kill") ? KEEPER_CG_KILL : 0)
                     : slot == CG_FREEZER ? KEEPER_CG_FREEZER
                                          : 0;
        *ret_fd = fd;
        return 0;
}

int cgroup_exec_create(int parent_fd, char name[32], int *ret_fd)
{
        static atomic_uint seq;
        int fd;

        (void)snprintf(name, 32, "c%d-%u", (int)getpid(), atomic_fetch_add(&seq, 1));
        fd = mkdir_open(parent_fd, name, true);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        return 0;
}

int cgroup_delegate(int fd, uint32_t uid, uint32_t gid)
{
        static const char *const files[] = { "cgroup.procs", "cgroup.kill", "freezer.state",
                                             "tasks" };

        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (fchownat(fd, files[i], uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

void cgroup_exec_remove(int parent_fd, const char *name, bool killed)
{
        if (killed) /* cgroup.kill returns before its processes are gone */
                (void)rmdir_wait(parent_fd, name);
        else
                (void)unlinkat(parent_fd, name, AT_REMOVEDIR); /* EBUSY: jobs live on */
}

int cgroup_remove(const struct cgroup_host *h, const char *id)
{
        size_t n = h->mode == CGROUP_V2 ? 1 : CGROUP_V1_MAX;
        int r = 0;

        for (size_t i = 0; h->mode != CGROUP_NONE && i < n; i++) {
                cleanup_close int hier = -EBADF;
                if (h->mode == CGROUP_V1 && !h->has[i])
                        continue;
                hier = hier_open(h, i);
                if (hier < 0)
                        continue;
                int k = remove_one(hier, id);
                if (k < 0 && r == 0)
                        r = k;
        }
        if (h->mode == CGROUP_V1 && h->unified_fd >= 0) {
                int k = remove_one(h->unified_fd, id);
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

/* ---- per-command accounting (docs/tools.md "Accounting") ---- */

/* The value of "@key N" in the key-value file @file at @dirfd (cpu.stat, memory.events,
 * memory.oom_control), or a lone number when @key is NULL (memory.peak, pids.peak). */
static int read_stat_at(int dirfd, const char *file, const char *key, uint64_t *ret)
{
        cleanup_free char *text = NULL;
        size_t klen = key ? strlen(key) : 0;
        int r;

        if (dirfd < 0)
                return -EBADF;
        r = read_file_at(dirfd, file, 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                if (key && (strncmp(p, key, klen) != 0 || p[klen] != ' '))
                        continue;
                return sscanf(p + klen, "%" SCNu64, ret) == 1 ? 0 : -EINVAL;
        }
        return -ENOENT;
}

/* Open @file at @dirfd and write "0" to it through that descriptor: memory.peak (cgroup2,
 * a per-descriptor reset) and memory.max_usage_in_bytes (v1) read the peak since then. */
static int open_reset(int dirfd, const char *file)
{
        int fd;

        if (dirfd < 0)
                return -EBADF;
        fd = openat(dirfd, file, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, "0\n", 2) != 2) {
                safe_close(fd);
                return -EIO;
        }
        return fd;
}

static int read_peak_fd(int fd, uint64_t *ret)
{
        char buf[32] = { 0 };

        if (fd < 0 || pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
                return -EIO;
        return sscanf(buf, "%" SCNu64, ret) == 1 ? 0 : -EINVAL;
}

void cgroup_usage_begin(const struct cgroup_host *h,
                        const char *id,
                        int cmd_fd,
                        struct cgroup_usage *u)
{
        int mem = -EBADF, cpu = -EBADF;

        *u = (struct cgroup_usage){ .cmd_fd = cmd_fd, .peak_fd = -EBADF };
        cgroup_reset(&u->thread, id, CGROUP_NONE);
        if (h->mode != CGROUP_NONE)
                (void)cgroup_open(h, id, &u->thread);
        mem = u->thread.mode == CGROUP_V2 ? u->thread.dirfd[0] : u->thread.dirfd[CG_MEMORY];
        cpu = u->thread.mode == CGROUP_V2 ? u->thread.dirfd[0] : -EBADF;
        /* CPU: the command's own cgroup2 cpu.stat, else the thread's (pure v2 only: a v1 cpu
         * hierarchy has no usage figure unless cpuacct is mounted with it) */
        u->cpu_fd = read_stat_at(cmd_fd, "cpu.stat", "usage_usec", &u->cpu0) >= 0 ? cmd_fd : cpu;
        if (u->cpu_fd >= 0 && u->cpu_fd != cmd_fd &&
            read_stat_at(u->cpu_fd, "cpu.stat", "usage_usec", &u->cpu0) < 0)
                u->cpu_fd = -EBADF;
        if (u->cpu_fd < 0 && u->thread.mode == CGROUP_V1 &&
            read_stat_at(u->thread.dirfd[CG_CPU], "cpuacct.usage", NULL, &u->cpu0) >= 0) {
                u->cpu_fd = u->thread.dirfd[CG_CPU];
                u->cpuacct = true;
        }
        /* memory and OOM kills: the command's cgroup when it has the memory controller, else
         * the thread's (which then counts its background jobs too) */
        u->mem_fd = read_stat_at(cmd_fd, "memory.events", "oom_kill", &u->oom0) >= 0 ? cmd_fd : mem;
        if (u->mem_fd == mem && u->thread.mode == CGROUP_V1) {
                u->v1 = true;
                if (read_stat_at(mem, "memory.oom_control", "oom_kill", &u->oom0) < 0)
                        u->mem_fd = -EBADF;
                u->peak_fd = open_reset(mem, "memory.max_usage_in_bytes");
        } else if (u->mem_fd >= 0) {
                if (u->mem_fd != cmd_fd &&
                    read_stat_at(u->mem_fd, "memory.events", "oom_kill", &u->oom0) < 0)
                        u->mem_fd = -EBADF;
                u->peak_fd = open_reset(u->mem_fd, "memory.peak");
        }
}

void cgroup_usage_end(struct cgroup_usage *u, struct b4_exec_usage *ret)
{
        uint64_t v;

        *ret = (struct b4_exec_usage){ 0 };
        if (u->cpu_fd >= 0 && read_stat_at(u->cpu_fd, u->cpuacct ? "cpuacct.usage" : "cpu.stat",
                                           u->cpuacct ? NULL : "usage_usec", &v) >= 0) {
                ret->cpu_ms = (v > u->cpu0 ? v - u->cpu0 : 0) / (u->cpuacct ? 1000000 : 1000);
                ret->known |= B4_USAGE_CPU;
        }
        if (u->mem_fd >= 0 &&
            read_stat_at(u->mem_fd, u->v1 ? "memory.oom_control" : "memory.events", "oom_kill",
                         &v) >= 0) {
                ret->oom_killed = v > u->oom0;
                ret->known |= B4_USAGE_OOM;
        }
        if (read_peak_fd(u->peak_fd, &v) >= 0) {
                ret->peak_memory_bytes = v;
                ret->known |= B4_USAGE_PEAK_MEMORY;
        }
        /* the command's own cgroup is fresh (never a reused spare when it has pids.peak) */
        if (read_stat_at(u->cmd_fd, "pids.peak", NULL, &v) >= 0) {
                ret->max_processes = v;
                ret->known |= B4_USAGE_MAX_PROCESSES;
        }
        u->peak_fd = safe_close(u->peak_fd);
        cgroup_close(&u->thread);
}

bool cgroup_has_pids_peak(int cmd_fd)
{
        return cmd_fd >= 0 && faccessat(cmd_fd, "pids.peak", F_OK, 0) == 0;
}
