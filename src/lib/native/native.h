/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the native provider, one section per module:
 *   child.c    the only code that runs between clone and exec (executes a child_op list)
 *   mount.c    builds the op list for the sandbox's root filesystem (parent side)
 *   cgroup.c   per-thread cgroups, v1 and v2, behind a cgroupfs-root dirfd
 *   seccomp.c  the syscall filter, compiled once to raw BPF
 *   spawn.c    clone3 into new namespaces, cgroup attach, hand-off to the keeper binary
 *   keeper.c   keeper records in the state dir, adoption (pidfd + start time), kill
 *   exec.c     the keeper client: one command, output capture, timeout and cancel
 *   fs.c       host-side file operations through openat2() inside the keeper's root
 *   preflight.c  what this host can enforce
 *   provider.c the provider object: thread table, acquire/release/destroy
 *   idmap.c    per-thread host id blocks for the user namespaces (as root)
 *   creds.c    the sandbox's identity for host-side file operations
 */

#include <linux/capability.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b4box/error.h"
#include "b4box/provider-impl.h"

#include "hostnet/hostnet.h"
#include "image/image.h"

/* ---- child.c ---------------------------------------------------------------------------- */

enum child_op_type {
        CHILD_OP_MOUNT,   /* mount(src, dst, fstype, flags, data) */
        CHILD_OP_MKDIR,   /* mkdir(dst, mode) */
        CHILD_OP_SYMLINK, /* symlink(src, dst) */
        CHILD_OP_MKFILE,  /* create an empty regular file dst with mode */
        CHILD_OP_UNLINK,  /* unlink(dst) */
        CHILD_OP_PIVOT,   /* pivot_root into dst, detach the old root */
        CHILD_OP_LO_UP,   /* bring up the loopback interface */
        CHILD_OP_HOSTNAME /* sethostname(src) */
};

struct child_op {
        enum child_op_type type;
        const char *src; /* borrowed from the plan's pool */
        const char *dst;
        const char *fstype;
        const char *data;
        unsigned long flags;
        unsigned int mode;
        bool optional; /* ENOENT is not a failure */
};

/* What the clone child needs; everything precomputed, all fds CLOEXEC. */
struct child_plan {
        const struct child_op *ops;
        size_t n_ops;
        int sync_fd;           /* read end: one byte arrives once the cgroups hold the child */
        int err_fd;            /* write end: struct child_failure on failure, EOF on exec */
        int listen_fd;         /* the keeper's socket, becomes KEEPER_LISTEN_FD */
        int exe_fd;            /* the keeper binary, exec'd with AT_EMPTY_PATH */
        bool drop_bounding;    /* rootless, non-root inside: empty the bounding set before exec */
        bool late_userns;      /* as root: after the ops, enter a user namespace of our own, let
                                  the parent map it (sync_fd both ways), become its root */
        uint32_t userns_owner; /* the host uid that owns it: the block's base, never 0 */
        const int *cg_procs;   /* cgroup.procs files to write "0" to after "go", then close */
        size_t n_cg_procs;     /* at most CGROUP_V1_MAX + 2 */
        uint64_t *trace;       /* trace_child_page() to stamp (TRACE_CHILD_*), or NULL */
};

#define CHILD_STEP_USERNS (-2) /* entering the user namespace */
#define CHILD_STEP_CGROUP (-3) /* writing itself into its cgroups */

struct child_failure {
        int step; /* index into ops; -1 = before the ops, n_ops = the exec, CHILD_STEP_* */
        int error;
};

/* The clone child: async-signal-safe only; never returns. */
_Noreturn void child_main(const struct child_plan *p);

/* ---- mount.c ---------------------------------------------------------------------------- */

struct mount_plan {
        struct child_op *ops; /* owned */
        size_t n_ops;
        char **pool; /* owned strv: every string the ops point to */
};

struct mount_spec {
        const char *stage;     /* absolute host dir the new root is assembled on */
        const char *image;     /* "/" for the host image, else the rootfs dir */
        bool host_image;       /* bind only the system dirs of @image */
        const char *workspace; /* host dir bound read-write at /workspace */
        bool read_only_root;
        bool network_lo_only;    /* a fresh netns: bring lo up */
        const char *resolv_conf; /* host file bound over etc/resolv.conf, or NULL (lists) */
};

int mount_plan_build(const struct mount_spec *spec, struct mount_plan *ret, struct b4_error *err);
void mount_plan_release(struct mount_plan *p);
/* A human description of op @i for error messages ("mount /usr on ..."). */
int mount_plan_describe(const struct mount_plan *p, int step, char **ret);

/* ---- freeze.c: stop or resume a thread's processes (consistent reads) ---- */
int native_freeze(struct b4_provider *p, const char *thread_id, bool frozen, struct b4_error *err);

/* ---- cgroup.c --------------------------------------------------------------------------- */

enum cgroup_mode {
        CGROUP_NONE = 0,
        CGROUP_V1 = 1,
        CGROUP_V2 = 2,
};

#define CGROUP_V1_MAX 4

struct cgroup_limits {
        uint64_t memory_bytes; /* 0 = none */
        double cpus;           /* 0 = none */
        uint32_t pids;         /* 0 = none */
};

/* One thread's cgroup: a dir named by the resource id under "b4box" in each hierarchy. */
struct cgroup {
        enum cgroup_mode mode;
        int dirfd[CGROUP_V1_MAX]; /* v1: pids, memory, cpu, freezer (-EBADF = absent); v2: [0] */
        int unified_fd;           /* v1 on a hybrid host: <unified>/b4box/<id>, else -EBADF */
        char id[41];
};

/* What this host offers, probed under @root_fd (a cgroupfs root such as /sys/fs/cgroup). */
struct cgroup_host {
        enum cgroup_mode mode;
        int root_fd;             /* owned; the cgroupfs root */
        int v2_fd;               /* owned; the unified hierarchy (v2 mode), else -EBADF */
        int unified_fd;          /* owned; v1 mode: the controller-less cgroup2 hierarchy
                                  * (hybrid host) the commands' own cgroups go in, else -EBADF */
        bool has[CGROUP_V1_MAX]; /* v1 pids/memory/cpu/freezer, or v2 pids/memory/cpu/(kill) */
        bool rootless;           /* has[] was narrowed to what is delegated to us */
};

extern const char *const cgroup_v1_names[CGROUP_V1_MAX];

/* Probe @root_fd (taken). Never fails: CGROUP_NONE when nothing usable. */
void cgroup_host_probe(int root_fd, struct cgroup_host *ret);
/* Rootless: keep only the controllers whose <hierarchy>/b4box the invoking user may write
 * (delegated by an admin); CGROUP_NONE when nothing is. */
void cgroup_host_restrict_to_delegated(struct cgroup_host *h);
void cgroup_host_release(struct cgroup_host *h);
/* Create the thread's dirs and set @lim. On a hybrid host also <unified>/b4box/<id>, kept
 * only when it offers cgroup.kill (kernel >= 5.14). Return: 0 or -errno (@err set). */
int cgroup_create(const struct cgroup_host *h,
                  const char *id,
                  const struct cgroup_limits *lim,
                  struct cgroup *ret,
                  struct b4_error *err);
/* Open the existing cgroup of @id (for kill/remove after a restart). */
int cgroup_open(const struct cgroup_host *h, const char *id, struct cgroup *ret);

/* How a new keeper enters the thread's cgroup @cg. v2: born in it (clone3 with
 * CLONE_INTO_CGROUP: no write, no grace period). v1: it writes "0" (itself) to each v1 dir's
 * cgroup.procs and the hybrid host's unified one. The files are opened here, by the
 * provider: the kernel checks the opener's credentials on a write, so the clone child may
 * write them. */
struct cgroup_placement {
        int clone_fd;                 /* borrowed from @cg (v2), or -EBADF */
        int clone_procs;              /* owned: @clone_fd's cgroup.procs, for a kernel without
                                       * CLONE_INTO_CGROUP (< 5.7), or -EBADF */
        int procs[CGROUP_V1_MAX + 1]; /* owned: cgroup.procs files, @n_procs of them */
        size_t n_procs;
};

/* Return: 0 or -errno (nothing left open). */
int cgroup_placement_open(const struct cgroup *cg, struct cgroup_placement *ret);
void cgroup_placement_close(struct cgroup_placement *pl);

/* On a v1 (or hybrid) host as root: start, on a thread of its own, the RCU grace period the
 * keeper's v1 cgroup.procs writes would wait for, with a no-op write (the process into its
 * own v1 cgroup), so it runs while the rest of a cold start does (docs/native.md, "What a
 * cold acquire costs"). Join it (cheap by then) before the acquire returns. */
struct cgroup_primer {
        pthread_t thread;
        bool running;
};

void cgroup_primer_start(const struct cgroup_host *h, struct cgroup_primer *ret);
void cgroup_primer_join(struct cgroup_primer *pr);
/* SIGKILL everything in the cgroup until it is empty (bounded wait). */
int cgroup_kill_all(const struct cgroup *cg);
bool cgroup_is_empty(const struct cgroup *cg);
/* Each command's own cgroup: the thread's dir it is created in (v2: the thread's cgroup; v1:
 * the unified one on a hybrid host with cgroup.kill, so the keeper clone3()s straight into
 * it, else freezer, else pids) and the KEEPER_CG_* flags that say how to kill one.
 * @ret_fd is the caller's. -EOPNOTSUPP when there is none (no cgroups, e.g. rootless
 * without delegation). */
int cgroup_exec_parent(const struct cgroup_host *h,
                       const char *id,
                       int *ret_fd,
                       uint32_t *ret_flags);
/* mkdir a fresh command cgroup under @parent_fd; @name receives its name. */
int cgroup_exec_create(int parent_fd, char name[32], int *ret_fd);
/* Hand the cgroup dir @fd's control files (cgroup.procs, cgroup.kill, freezer.state, tasks)
 * to @uid:@gid, the keeper's host ids in its user namespace, so it can place and kill its
 * commands there. Return: 0 or -errno. */
int cgroup_delegate(int fd, uint32_t uid, uint32_t gid);
/* rmdir it when empty; a command's background jobs keep it alive until release. @killed: it
 * was just killed, so wait (bounded, 1 s) for its last processes to exit first. */
void cgroup_exec_remove(int parent_fd, const char *name, bool killed);

/*
 * One command's accounting (struct b4_exec_usage): cgroup_usage_begin() before it starts
 * takes the baselines, cgroup_usage_end() after it reads the figures and closes what begin
 * opened. CPU comes from the command's own cgroup2 cpu.stat (else the thread's cgroup2
 * cpu.stat, else v1 cpuacct.usage); memory peak and OOM kills from the command's cgroup when
 * it has the memory controller, else from the thread's (memory.peak or
 * memory.max_usage_in_bytes reset at begin; memory.events or memory.oom_control oom_kill);
 * the process peak from the command's own pids.peak only. What no file gives stays unknown.
 */
struct cgroup_usage {
        int cmd_fd;           /* borrowed: the command's own cgroup, or -EBADF */
        struct cgroup thread; /* the thread's cgroup, opened by begin */
        int cpu_fd, mem_fd;   /* borrowed (cmd_fd or one of thread's), or -EBADF */
        int peak_fd;          /* owned: the reset peak file, or -EBADF */
        bool cpuacct;         /* cpu_fd is v1 cpuacct.usage (ns), not cpu.stat usage_usec */
        bool v1;              /* mem_fd is a v1 memory cgroup */
        uint64_t cpu0, oom0;  /* the baselines */
};

void cgroup_usage_begin(const struct cgroup_host *h,
                        const char *id,
                        int cmd_fd,
                        struct cgroup_usage *u);
void cgroup_usage_end(struct cgroup_usage *u, struct b4_exec_usage *ret);
/* Whether a command cgroup has pids.peak (which cannot be reset: such a cgroup is never
 * kept as the spare, so the figure is always the command's own). */
bool cgroup_has_pids_peak(int cmd_fd);
/* Remove the cgroup dirs, the unified ones of a hybrid host too (they must be empty; the
 * commands' child cgroups go first). */
int cgroup_remove(const struct cgroup_host *h, const char *id);
void cgroup_close(struct cgroup *cg);

/* ---- seccomp.c -------------------------------------------------------------------------- */

/* The sandbox's filter as raw BPF (struct sock_filter[]), compiled. */
int seccomp_build(void **ret_bpf, size_t *ret_len, struct b4_error *err);
/* The same from the cache under @dir_fd (a private state directory) when it was compiled
 * from the same inputs, else compiled and cached (a failed cache write is ignored). */
int native_seccomp_filter(int dir_fd, void **ret_bpf, size_t *ret_len, struct b4_error *err);

/* ---- spawn.c ---------------------------------------------------------------------------- */

struct keeper_proc {
        pid_t pid;
        int pidfd;          /* owned */
        uint64_t starttime; /* /proc/<pid>/stat field 22 */
};

/* Rootless mode: the one uid/gid the sandbox sees, mapped to the invoking user's. */
struct userns_map {
        uint32_t inside_uid, inside_gid;
        uint32_t outside_uid, outside_gid;
};

struct spawn_args {
        const struct mount_plan *plan; /* borrowed until spawn_keeper_finish() */
        int exe_fd;                    /* the keeper binary */
        int listen_fd;                 /* its socket */
        const struct cgroup *cg;       /* the thread's cgroup (created, limits set) */
        const struct userns_map *um;   /* NULL as root; else clone a user namespace too and
                                        * map it (rootless) */
        uint32_t host_base; /* as root, nonzero = the keeper enters a user namespace of its own
                             * once its root is built, ids 0..65535 mapped to @host_base..
                             * (idmap.c); 0 = none (the kernel allows none) */
};

/* A keeper on its way: cloned and let go, not yet exec'd. */
struct keeper_spawn {
        const struct mount_plan *plan;
        uint32_t late_base; /* the block to map once it asks, or 0 */
        pid_t pid;
        int pidfd, sync_w, err_r; /* owned */
        uint64_t *trace;          /* trace_child_page(), or NULL */
};

/* Clone the keeper and let it set itself up; the caller may plumb its network namespace
 * (/proc/<ret->pid>/ns/net) before spawn_keeper_finish(), which must follow in any case.
 * Return: 0 with @ret, or -errno (@err set; nothing left running). */
int spawn_keeper_start(const struct spawn_args *a, struct keeper_spawn *ret, struct b4_error *err);
/* Map its late user namespace, wait for its exec. Consumes @sp; on failure the child is
 * killed and its own report (what step failed) is in @err. Return: 0 with @ret, or -errno. */
int spawn_keeper_finish(struct keeper_spawn *sp, struct keeper_proc *ret, struct b4_error *err);

/* ---- keeper.c --------------------------------------------------------------------------- */

#define KEEPER_RECORD_VERSION 3 /* only keepers of this version are adopted (3: user ns) */

struct keeper_record {
        int version;
        pid_t pid;
        uint64_t starttime;
        char identity[65];
};

int keeper_record_write(int dirfd, const char *id, const struct keeper_record *rec);
int keeper_record_read(int dirfd, const char *id, struct keeper_record *ret);
/* Open a pidfd to the recorded process if it is provably the same one. */
int keeper_verify(const struct keeper_record *rec, int *ret_pidfd);
/* Kill via pidfd and reap if it is our child; waits until it is gone (bounded). */
void keeper_kill(int pidfd);
/* Whether the process behind @pidfd has exited (and reap it if it is our child). */
bool keeper_is_dead(int pidfd);
/* Connect to the keeper's socket at @dirfd/<id>.sock. */
int keeper_connect(int dirfd, const char *run_dir, const char *id, int *ret_fd);
/* Create the listening socket at @dirfd/<id>.sock (replacing a stale one). */
int keeper_listen(int dirfd, const char *run_dir, const char *id, int *ret_fd);

/* ---- exec.c ----------------------------------------------------------------------------- */

struct exec_spec {
        const char *command;
        const char *cwd;
        char **env; /* "K=V" strv, exactly the command's environment */
        uint32_t uid, gid;
        uint32_t flags; /* enum keeper_req_flags */
        int cg_fd;      /* the command's own cgroup dir (KEEPER_CGROUP), else -EBADF */
        const void *bpf;
        size_t bpf_len; /* bytes */
        uint64_t timeout_ms;
        size_t output_cap;
        struct b4_cancel *cancel;
        b4_exec_output_fn *on_output; /* optional, b4_exec_req's */
        void *output_userdata;
};

/* Send a request for @s over @sock with @fds (the header's version @version); @trailer, when
 * set, is one more NUL-terminated string after envp (version 2's background timeout). */
int keeper_send(int sock,
                const struct exec_spec *s,
                const int *fds,
                size_t nfd,
                uint32_t version,
                const char *trailer);

/* Run one command through the connected keeper socket @sock (taken).
 * Return: 0 with @ret filled, -EAGAIN when the keeper could not fork (pids exhausted),
 * -EIO when the keeper went away, -errno. */
int exec_run(int sock,
             const struct exec_spec *spec,
             struct b4_exec_result *ret,
             struct b4_error *err);

/* ---- creds.c: the calling thread takes the sandbox user's identity for one operation ---- */

struct creds_saved {
        bool switched;
        uint32_t fsuid, fsgid;
        struct __user_cap_data_struct caps[2];
};

/* fsuid/fsgid @uid/@gid, no groups, no effective capabilities, on this thread only. On
 * failure nothing is changed. Return: 0 or -errno. */
int creds_enter(uint32_t uid, uint32_t gid, struct creds_saved *ret);
/* Become the server again; aborts the process if that is impossible. */
void creds_leave(struct creds_saved *s);

/* ---- fs.c ------------------------------------------------------------------------------- */

/* Where a filesystem operation resolves: a root dirfd plus the in-sandbox prefix stripped. */
struct fsctx {
        int root_fd;       /* borrowed for the operation */
        const char *strip; /* NULL, or "/workspace" for a view rooted at the workspace itself */
        uint32_t uid, gid; /* owner of what we create */
        bool chown;        /* fchown what we create */
        struct creds_saved creds; /* the thread's identity while the operation runs */
        /* Set by fs.c per operation, after native_fs_enter(): */
        unsigned confine; /* enum b4_fs_flags of the operation */
        int ws_fd;        /* owned by fs.c: the workspace dirfd, opened on first need */
};

extern const struct b4_fs_ops native_fs_ops;      /* sandbox: read + write */
extern const struct b4_fs_ops native_fs_read_ops; /* reader: read only */

/* Implemented by sandbox.c: resolve @fs (a sandbox or reader) to a context (core's shared
 * lease keeps a sandbox's keeper stable) until native_fs_leave(). */
int native_fs_enter(struct b4_fs *fs, struct fsctx *ret, struct b4_error *err);
void native_fs_leave(struct b4_fs *fs, struct fsctx *c);

/* ---- idmap.c ---------------------------------------------------------------------------- */

#define IDMAP_BLOCK          65536u
#define IDMAP_DEFAULT_START  2147483648u /* 2^31: far above login and system ids */
#define IDMAP_DEFAULT_BLOCKS 4096u
struct native_provider;

/* The host base of thread @id's ids (what its 0 maps to): the recorded block, or with
 * @create a newly allocated and recorded one. -ENOENT: none recorded and !@create. */
int idmap_get(struct native_provider *np,
              const char *id,
              bool create,
              uint32_t *ret_base,
              struct b4_error *err);
/* As root: whether this kernel gives us user namespaces (probed once per process, on first
 * need: the probe forks). @ret_why (may be NULL): why not, a static string. */
bool idmap_userns_works(const char **ret_why);
/* Whether @np gives each thread a user namespace of its own: as root, when the kernel
 * allows (idmap_userns_works()). */
bool native_userns(const struct native_provider *np);
/* Whether thread @id has a recorded block (it was started in its own user namespace). */
bool idmap_recorded(const struct native_provider *np, const char *id);
/* Destroy: drop the record and the host-wide claim (also a claim whose record a crash
 * never wrote). */
void idmap_forget(struct native_provider *np, const char *id);
/* Append to @ret (a strv) the id of every host-wide claim that names this state dir. */
int idmap_claimed_ids(struct native_provider *np, char ***ret);

/* ---- disk.c: a filesystem of its own per workspace (resources.diskGb) ---- */

/* Root with loop devices and mkfs.ext4. @ret_why (may be NULL): why not, a static string. */
bool disk_available(const char **ret_why);
/* Mount thread @id's workspace filesystem on its workspace dir unless it is mounted; first
 * make one of @gib GiB owned by @uid:@gid when @gib is set, there is none and the dir is
 * empty. @gib 0 (readers) only mounts an existing one. A workspace without one stays a plain
 * directory. Return: 0 or -errno (with @err). */
int disk_attach(struct native_provider *np,
                const char *id,
                uint64_t gib,
                uint32_t uid,
                uint32_t gid,
                struct b4_error *err);
/* Destroy: unmount it (detached) and remove its image. */
void disk_remove(struct native_provider *np, const char *id);

/* ---- preflight.c ------------------------------------------------------------------------ */

/* The per-thread tmpfs sizes, in MiB: mount.c mounts them, preflight reports them. */
#define NATIVE_TMP_MIB 256
#define NATIVE_RUN_MIB 64
#define NATIVE_SHM_MIB 64
#define B4_STR_(x)     #x
#define B4_STR(x)      B4_STR_(x)
#define NATIVE_TMPFS_SIZES                                                                     \
 "/tmp " B4_STR(NATIVE_TMP_MIB) " MiB, /run " B4_STR(NATIVE_RUN_MIB) " MiB, /dev/shm " B4_STR( \
         NATIVE_SHM_MIB) " MiB"

/* Rootless mode can run here: user namespaces are not switched off by sysctl. @ret_why:
 * which knob is 0 (static string). */
bool native_userns_allowed(const char **ret_why);
int native_preflight_run(const struct cgroup_host *cg,
                         struct b4_preflight *ret,
                         struct b4_error *err);

/* ---- identity.c ------------------------------------------------------------------------- */

/* The command environment: policy env, then @extra over it, HOME (non-root), PATH default. */
int native_build_env(char *const *base,
                     const struct b4_policy *p,
                     const struct b4_env_var *extra,
                     size_t n_extra,
                     char ***ret,
                     struct b4_error *err);

/* ---- provider.c / thread.c / sandbox.c -------------------------------------------------- */

#include <pthread.h>
#include <stdatomic.h>

/* What a sandbox's root is made from (image-ref.c, docs/images.md). Immutable once open;
 * shared by the provider (the app-wide image), the threads running it and their handles. */
struct native_image {
        atomic_int refs;
        char *name;            /* "host", "dir:/abs" or "oci:sha256:<hex>": the identity */
        const char *root;      /* "/" for the host image, else the rootfs dir */
        bool host;             /* bind only the system dirs of @root */
        struct image_info oci; /* an "oci:" image's config and root (zeroed otherwise) */
};

/*
 * native_image_open() - the image @name names: "host" (also for NULL or ""), "dir:/abs" (a
 * directory) or "oci:REF" (REF resolved in the store under @state_dir, image/image.h).
 * Return: 0 with *@ret (native_image_unref()); -EINVAL (another form, not a directory),
 * -ENOENT (not in the store), -EIO, -ENOMEM, with @err set.
 */
int native_image_open(const char *state_dir,
                      const char *name,
                      struct native_image **ret,
                      struct b4_error *err);
struct native_image *native_image_ref(struct native_image *img); /* NULL ok */
void native_image_unref(struct native_image *img);               /* NULL ok */

static inline void native_image_unrefp(struct native_image **img)
{
        native_image_unref(*img);
}

/* Whether a thread may name image @ref: the app's own image as configured (@app_image, NULL =
 * "host"), or a match of one of @patterns (sandbox.provider.images: exact or fnmatch(3);
 * "oci:" is optional on both sides). */
bool native_image_allowed(const char *app_image, char *const *patterns, const char *ref);

struct native_provider {
        struct b4_provider p;       /* first */
        atomic_int refs;            /* the owner + every live handle/reader */
        struct native_image *image; /* the app-wide image */
        char *image_cfg;            /* sandbox.provider.image as configured (NULL = host) */
        char **images;              /* sandbox.provider.images: what a thread may name */
        char *state_dir;            /* the provider's (the image store is under it) */
        char *native_dir;           /* <state>/native */
        char *run_dir;              /* .../run: sockets, records, locks */
        char *ws_dir;               /* .../workspaces */
        char *stage_dir;            /* .../root: where each new root is assembled (own mount ns) */
        char *real_dir;             /* realpath of native_dir: keys the host-global names */
        int run_fd, ws_fd;
        int exe_fd; /* the keeper binary */
        struct cgroup_host cg;
        bool rootless;              /* not root: a user namespace maps the sandbox user to us */
        uint32_t id_start, id_size; /* the range blocks come from (sandbox.provider.idRange) */
        int ids_fd;                 /* native/ids: the blocks' records */
        int disks_fd;               /* native/disks: workspace filesystem images (diskGb) */
        int owners_fd;              /* native/owners: the scope each workspace was made for */
        uint32_t host_uid, host_gid;
        void *bpf;
        size_t bpf_len;
};

/* A thread's keeper: the state of its lifecycle entry (core's), shared with its handles. */
struct native_thread {
        atomic_int refs; /* the entry's + handles' */
        char *thread_id;
        char id[41];
        char hid[41];    /* native_host_id() of id */
        bool live;       /* this process holds a keeper for it; under cg_lock */
        bool reattached; /* the last acquire found its keeper running (not started) */
        char identity[65];
        struct keeper_proc kp;
        int root_fd;             /* /proc/<keeper>/root */
        int cg_fd;               /* where each command's own cgroup is made, or -EBADF */
        uint32_t cg_flags;       /* KEEPER_CG_* for those cgroups */
        pthread_mutex_t cg_lock; /* live, generation and the spare (an empty command cgroup
                                  * ready for reuse) */
        int cg_spare_fd;
        char cg_spare_name[32];
        uint64_t generation;         /* bumped on every new keeper */
        uint32_t host_base;          /* userns: the host id the sandbox's 0 is; else 0 */
        struct b4_policy policy;     /* the launch policy (for recovery) */
        struct native_image *image;  /* what its keeper's root is made from (set by acquire) */
        struct native_stdin *stdins; /* procs.c: background stdin pipes held; under cg_lock */
};

/* A handle (sandbox.c). */
struct native_sandbox {
        struct b4_sandbox sb; /* first: &sb.fs is what the fs ops receive */
        struct native_provider *np;
        struct native_thread *t;
        struct native_image *image; /* its thread's image when the handle was made */
        struct b4_policy policy;    /* this handle's policy: env, timeout, output cap */
};

/* A command's own cgroup: the thread's spare (an empty one a finished command left) or a
 * fresh one; after the command it becomes the spare again when empty, else it stays with
 * the background jobs in it until release. */
struct exec_cg {
        int parent_fd, fd;
        uint32_t flags;
        char name[32];
};

#define KEEPER_CG_MASK (KEEPER_CGROUP | KEEPER_CG_FREEZER | KEEPER_CG_KILL)

/* sandbox.c, for procs.c too: a command's spec from the handle's policy (*ret_env owned,
 * ret's strings borrowed from @req and it), and its own cgroup (fds -EBADF when none). */
int native_exec_spec(struct native_sandbox *s,
                     const struct b4_exec_req *req,
                     char ***ret_env,
                     struct exec_spec *ret,
                     struct b4_error *err);
void exec_cg_make(struct native_thread *t, struct exec_cg *cg);

/* ---- procs.c: background processes (b4_proc_ops), owned by the keeper, spooled under
 * <state>/native/procs/<host id>/ (docs/native.md) ---- */
extern const struct b4_proc_ops native_proc_ops;
/* Remove a thread's records and spools (destroy). */
void native_procs_remove(struct native_provider *np, const char *hid);
/* Close the stdin pipes this process holds for @t's processes (its keeper is gone). */
void native_procs_forget_stdin(struct native_thread *t);

/* ---- state-dir.c ---- */
struct native_provider *native_provider_ref(struct native_provider *np);
/* The name of a thread's host-global objects (cgroup dirs, veth, firewall tag), unique per
 * state dir: the first 40 hex of sha256(realpath(<state>/native) + "/" + id). */
void native_host_id(const struct native_provider *np, const char *id, char ret[41]);
void native_provider_unref(struct native_provider *np);

/* A new entry for @thread_id (nothing live), one reference. Return: 0, -EINVAL, -ENOMEM. */
int native_thread_new(struct native_provider *np,
                      const char *thread_id,
                      struct native_thread **ret);
struct native_thread *native_thread_ref(struct native_thread *t);
/* Drop a reference (NULL ok); frees at zero. */
void native_thread_unref(struct native_thread *t);

/* With the thread's exclusive lease and flock held: */
int native_thread_ensure(struct native_provider *np,
                         struct native_thread *t,
                         struct native_image *img,
                         const char *identity,
                         const struct b4_policy *policy,
                         struct b4_error *err);
void native_thread_stop(struct native_provider *np, struct native_thread *t);
/* Kill whatever runs for resource id @id (our keeper @pidfd, else a recorded one that is
 * provably the same process, and everything in its cgroup), remove its cgroups, veth and
 * rules, its keeper record and socket; the intent record last, once the cgroups are gone.
 * With the thread's flock held (and its exclusive lease, when this process has an entry). */
void native_thread_stop_id(struct native_provider *np, const char *id, int pidfd);
/* run/<id>.host: written before a thread's host-global objects are made (thread.c). */
#define NATIVE_INTENT_SUFFIX ".host"

/* ---- sweep.c: remove what belongs to no live thread (b4_provider_sweep()) ---- */
int native_sweep(struct b4_provider *p, char *const *live_thread_ids, struct b4_error *err);
/* Kill the keeper and everything in the cgroup, then start a fresh one (same policy). */
int native_thread_recover(struct native_provider *np,
                          struct native_thread *t,
                          struct b4_error *err);
/* Serialise lifecycle across processes: flock on run/<id>.lock. */
int native_thread_flock(struct native_provider *np, const char *id, int *ret_fd);

int native_sandbox_new(struct native_provider *np,
                       struct native_thread *t,
                       const struct b4_policy *policy,
                       struct b4_sandbox **ret,
                       struct b4_error *err);
int native_reader_open(struct native_provider *np,
                       const struct b4_reader_req *req,
                       struct b4_reader **ret,
                       struct b4_error *err);
/* state-dir.c: write the record @name under @dirfd (0600) as @text: a temporary file
 * renamed over it, so a reader sees the old or the new text, never a mix. Not fsync()ed:
 * for records whose loss in a power cut costs nothing (what they describe is gone too, or a
 * reader takes a missing or empty one for absent). Return: 0 or -errno. */
int native_record_write(int dirfd, const char *name, const char *text);
/* state-dir.c: record that workspace @id was made (or used) for a thread of this
 * provider's scope, so a sweep may remove it once its thread is gone (and never one it
 * cannot tell is ours). Not fsync()ed: a mark lost in a power cut leaves the workspace
 * unswept (never someone else's removed) until its thread's next acquire marks it again. */
int native_owner_mark(struct native_provider *np, const char *id);
bool native_owner_is_ours(struct native_provider *np, const char *id);
/* Destroy's storage part, with the thread stopped and its flock held: the diskGb image and
 * mount, the workspace, then the id block record and claim. Return: 0 or -errno. */
int native_remove_storage(struct native_provider *np, const char *id);

/* ---- the network (hostnet/hostnet.h): veth, elements and netd under run/ ---------------- */

/* What hostnet needs of @np: its run directory. */
static inline struct hostnet native_hostnet(const struct native_provider *np)
{
        return (struct hostnet){ .run_fd = np->run_fd, .run_dir = np->run_dir };
}

/* ---- trace.c: B4BOX_TRACE_ACQUIRE=1, one acquire's phases on stderr ---- */

/* Whether the environment asks for traces. */
bool trace_wanted(void);
/* Whether this thread is tracing an acquire now. */
bool trace_on(void);
/* Start tracing on this thread (a no-op unless trace_wanted() and none runs). */
void trace_begin(const char *thread_id);
/* The phase @phase (a static string) ends now: it gets the time since the last mark. */
void trace_mark(const char *phase);
/* Print the line ("b4box trace acquire <thread> ok|failed total=<us> <phase>=<us>...") and
 * stop. @r: the acquire's result. */
void trace_end(int r);

/* The child's stamps: slots of a shared page (CLOCK_MONOTONIC ns; 0 = not reached). The
 * child runs while the provider goes on (the network), so its phases (child.*) are its own
 * timeline from the "go" the provider sent; the provider's phases alone add up to the total. */
enum {
        TRACE_CHILD_GO = 0,         /* the parent's "go" arrived */
        TRACE_CHILD_USERNS_ASK = 1, /* unshared its user namespace, about to ask for maps */
        TRACE_CHILD_USERNS = 2,     /* mapped and its root */
        TRACE_CHILD_EXEC = 3,       /* about to execveat the keeper */
        TRACE_CHILD_CGROUP = 4,     /* in its cgroups */
        TRACE_CHILD_SENT = 5,       /* (the parent's) the "go" was sent */
        TRACE_CHILD_OP0 = 6,        /* OP0: after unshare(CGROUP); OP0+k+1: after op k */
        TRACE_CHILD_SLOTS = 256,
        TRACE_CHILD_OPS_MAX = TRACE_CHILD_SLOTS - TRACE_CHILD_OP0,
};

/* A shared page for the clone child's stamps when tracing, else NULL. */
uint64_t *trace_child_page(void);
/* Stamp slot @slot of @page now (NULL: nothing). */
void trace_child_stamp(uint64_t *page, size_t slot);
/* After the exec (now): the stamps as child.* phases (@page NULL: nothing). */
void trace_child_fold(const uint64_t *page, const struct child_op *ops, size_t n_ops);
void trace_child_page_free(uint64_t *page); /* NULL ok */
