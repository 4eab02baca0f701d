/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's root filesystem as a precomputed op list (bubblewrap's SetupOp idea), built in
 * the parent and executed by child.c in the new mount namespace:
 *   a fresh tmpfs at the stage dir; read-only binds of the image's system dirs (the host's
 *   /usr /bin /sbin /lib* /etc, or every top-level entry of a "dir:" rootfs), every submount
 *   remounted read-only too; secrets under /etc masked with empty files/dirs; the workspace
 *   bound read-write at /workspace; fresh /proc (kernel knobs read-only), a minimal /dev,
 *   size-capped tmpfs /tmp and /run; the root remounted read-only; pivot_root.
 * Symlinked top-level dirs (/bin -> usr/bin) are recreated as the same symlinks. Sockets and
 * other special files at the top level are never bound.
 */

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "native.h"

#define TMP_OPTS   "mode=1777,size=" B4_STR(NATIVE_TMP_MIB) "m"
#define RUN_OPTS   "mode=1777,size=" B4_STR(NATIVE_RUN_MIB) "m"
#define SHM_OPTS   "mode=1777,size=" B4_STR(NATIVE_SHM_MIB) "m"
#define DEV_OPTS   "mode=0755,size=64k"
#define ROOT_OPTS  "mode=0755,size=1m"
#define EMPTY_FILE "/.b4box-mask"
#define RO_BIND    (MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)

static const char *const host_dirs[] = { "usr",   "bin",   "sbin",   "lib",
                                         "lib32", "lib64", "libx32", "etc" };
static const char *const skip_dirs[] = { "proc", "dev", "sys", "tmp", "run", "workspace" };
static const char *const masked_files[] = { "etc/shadow", "etc/gshadow", "etc/shadow-",
                                            "etc/gshadow-", "etc/sudoers" };
static const char *const masked_dirs[] = { "etc/sudoers.d" };
static const char *const devices[] = { "null", "zero", "full", "random", "urandom", "tty" };
static const char *const proc_ro[] = { "sys", "sysrq-trigger", "irq", "bus" };

struct builder {
        struct mount_plan *p;
        size_t cap;
        const struct mount_spec *spec;
        char **mountinfo; /* mount points of this namespace, from /proc/self/mountinfo */
};

static const char *pool(struct builder *b, char *s)
{
        if (!s || strv_consume(&b->p->pool, s) < 0)
                return NULL;
        return s;
}

static const char *fmt(struct builder *b, const char *a, const char *c)
{
        char *s = NULL;

        if (b4_asprintf(&s, "%s%s%s", a, *c == '/' || !*c ? "" : "/", c) < 0)
                return NULL;
        return pool(b, s);
}

static int add(struct builder *b, struct child_op op)
{
        struct child_op *n;

        if (b->p->n_ops == b->cap) {
                n = b4_reallocarray(b->p->ops, b->cap ? b->cap * 2 : 64, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                b->p->ops = n;
                b->cap = b->cap ? b->cap * 2 : 64;
        }
        b->p->ops[b->p->n_ops++] = op;
        return 0;
}

static int add_mount(struct builder *b,
                     const char *src,
                     const char *dst,
                     const char *fstype,
                     unsigned long flags,
                     const char *data)
{
        if (!dst)
                return -ENOMEM;
        return add(b, (struct child_op){ .type = CHILD_OP_MOUNT,
                                         .src = src,
                                         .dst = dst,
                                         .fstype = fstype,
                                         .flags = flags,
                                         .data = data });
}

static int add_path_op(struct builder *b, enum child_op_type t, const char *dst, unsigned int mode)
{
        if (!dst)
                return -ENOMEM;
        return add(b, (struct child_op){ .type = t, .dst = dst, .mode = mode });
}

static int add_tmpfs(struct builder *b, const char *rel, unsigned long flags, const char *opts)
{
        const char *dst = fmt(b, b->spec->stage, rel);
        int r;

        r = add_path_op(b, CHILD_OP_MKDIR, dst, 0755);
        if (r < 0)
                return r;
        return add_mount(b, "tmpfs", dst, "tmpfs", flags, opts);
}

static int read_mountinfo(char ***ret)
{
        cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
        cleanup_strv char **l = NULL;
        char line[4096], mp[4096];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strv_extend(&l, mp) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

/* The flags of the mount at @path a read-only remount must keep: inside a user namespace
 * (rootless) the kernel locks noexec and the atime mode of mounts it inherited, and a
 * remount that drops them fails with EPERM. Keeping them as root changes nothing. */
static unsigned long kept_flags(const char *path)
{
        struct statvfs v;
        unsigned long f = 0;

        if (statvfs(path, &v) < 0)
                return 0;
        if (v.f_flag & ST_NOEXEC)
                f |= MS_NOEXEC;
        if (v.f_flag & ST_NOATIME)
                f |= MS_NOATIME;
        if (v.f_flag & ST_NODIRATIME)
                f |= MS_NODIRATIME;
        if (v.f_flag & ST_RELATIME)
                f |= MS_RELATIME;
        return f;
}

/* Read-only bind of host @src at stage-relative @rel, and every submount below it. */
static int add_ro_bind(struct builder *b, const char *src, const char *rel)
{
        const char *dst = fmt(b, b->spec->stage, rel);
        const char *copy = pool(b, b4_strdup(src));
        size_t n = strlen(src);
        int r;

        if (!copy)
                return -ENOMEM;
        r = add_mount(b, copy, dst, NULL, MS_BIND | MS_REC, NULL);
        if (r >= 0)
                r = add_mount(b, NULL, dst, NULL, RO_BIND | kept_flags(src), NULL);
        STRV_FOREACH (m, b->mountinfo) {
                if (r < 0 || strncmp(*m, src, n) != 0 || (*m)[n] != '/')
                        continue;
                r = add_mount(b, NULL, fmt(b, dst, *m + n), NULL, RO_BIND | kept_flags(*m), NULL);
        }
        return r;
}

static int add_entry(struct builder *b, const char *name)
{
        cleanup_free char *src = NULL;
        char target[4096];
        struct stat st;
        const char *dst;
        ssize_t n;

        if (b4_asprintf(&src, "%s/%s", strcmp(b->spec->image, "/") ? b->spec->image : "", name) < 0)
                return -ENOMEM;
        if (lstat(src, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        dst = fmt(b, b->spec->stage, name);
        if (S_ISLNK(st.st_mode)) {
                n = readlink(src, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                if (!dst)
                        return -ENOMEM;
                return add(b, (struct child_op){ .type = CHILD_OP_SYMLINK,
                                                 .src = pool(b, b4_strdup(target)),
                                                 .dst = dst });
        }
        if (S_ISDIR(st.st_mode))
                n = add_path_op(b, CHILD_OP_MKDIR, dst, 0755);
        else if (S_ISREG(st.st_mode))
                n = add_path_op(b, CHILD_OP_MKFILE, dst, 0644);
        else
                return 0; /* sockets, fifos, devices: never */
        if (n < 0)
                return (int)n;
        return add_ro_bind(b, src, name);
}

static int add_image(struct builder *b)
{
        cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int r;

        if (b->spec->host_image) {
                for (size_t i = 0; i < ELEMENTSOF(host_dirs); i++) {
                        r = add_entry(b, host_dirs[i]);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        d = opendir(b->spec->image);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                bool skip = de->d_name[0] == '.';
                for (size_t i = 0; i < ELEMENTSOF(skip_dirs); i++)
                        skip = skip || strcmp(de->d_name, skip_dirs[i]) == 0;
                r = skip ? 0 : add_entry(b, de->d_name);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_mask(struct builder *b, const char *rel, bool dir)
{
        cleanup_free char *src = NULL;
        struct stat st;
        const char *dst;
        int r;

        if (b4_asprintf(&src, "%s/%s", strcmp(b->spec->image, "/") ? b->spec->image : "", rel) < 0)
                return -ENOMEM;
        if (lstat(src, &st) < 0 || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) != dir)
                return 0;
        dst = fmt(b, b->spec->stage, rel);
        if (dir)
                return add_mount(b, "tmpfs", dst, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                                 "mode=0755,size=4k");
        r = add_mount(b, fmt(b, b->spec->stage, EMPTY_FILE), dst, NULL, MS_BIND, NULL);
        if (r < 0)
                return r;
        return add_mount(b, NULL, dst, NULL, RO_BIND, NULL);
}

static int add_ssh_masks(struct builder *b)
{
        cleanup_free char *dir = NULL;
        cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int r;

        if (b4_asprintf(&dir, "%s/etc/ssh", strcmp(b->spec->image, "/") ? b->spec->image : "") < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                cleanup_free char *rel = NULL;
                if (fnmatch("ssh_host_*key", de->d_name, 0) != 0)
                        continue;
                if (b4_asprintf(&rel, "etc/ssh/%s", de->d_name) < 0)
                        return -ENOMEM;
                r = add_mask(b, rel, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_masks(struct builder *b)
{
        const char *empty = fmt(b, b->spec->stage, EMPTY_FILE);
        int r;

        r = add_path_op(b, CHILD_OP_MKFILE, empty, 0);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(masked_files); i++)
                r = add_mask(b, masked_files[i], false);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(masked_dirs); i++)
                r = add_mask(b, masked_dirs[i], true);
        if (r >= 0)
                r = add_ssh_masks(b);
        if (r >= 0)
                r = add_path_op(b, CHILD_OP_UNLINK, empty, 0);
        return r;
}

/* Network lists: the generated resolv.conf over the image's (a regular file only: a
 * symlinked one keeps pointing where it points, and its stub is caught by the redirect only
 * when it is not on loopback). */
static int add_resolv_conf(struct builder *b)
{
        cleanup_free char *src = NULL;
        const char *copy, *dst;
        struct stat st;
        int r;

        if (!b->spec->resolv_conf)
                return 0;
        if (b4_asprintf(&src, "%s/etc/resolv.conf",
                        strcmp(b->spec->image, "/") ? b->spec->image : "") < 0)
                return -ENOMEM;
        if (lstat(src, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        copy = pool(b, b4_strdup(b->spec->resolv_conf));
        dst = fmt(b, b->spec->stage, "etc/resolv.conf");
        if (!copy || !dst)
                return -ENOMEM;
        r = add_mount(b, copy, dst, NULL, MS_BIND, NULL);
        return r < 0 ? r : add_mount(b, NULL, dst, NULL, RO_BIND, NULL);
}

static int add_workspace_and_proc(struct builder *b)
{
        const char *ws = fmt(b, b->spec->stage, "workspace");
        const char *proc = fmt(b, b->spec->stage, "proc");
        const char *src = pool(b, b4_strdup(b->spec->workspace));
        int r;

        if (!src)
                return -ENOMEM;
        r = add_path_op(b, CHILD_OP_MKDIR, ws, 0755);
        if (r >= 0)
                r = add_mount(b, src, ws, NULL, MS_BIND, NULL);
        if (r >= 0)
                r = add_mount(b, NULL, ws, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, NULL);
        if (r >= 0)
                r = add_path_op(b, CHILD_OP_MKDIR, proc, 0555);
        if (r >= 0)
                r = add_mount(b, "proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(proc_ro); i++) {
                const char *k = fmt(b, proc, proc_ro[i]);
                r = add_mount(b, k, k, NULL, MS_BIND | MS_REC, NULL);
                if (r >= 0)
                        b->p->ops[b->p->n_ops - 1].optional = true;
                if (r >= 0)
                        r = add_mount(b, NULL, k, NULL, RO_BIND | MS_NOEXEC, NULL);
                if (r >= 0)
                        b->p->ops[b->p->n_ops - 1].optional = true;
        }
        return r;
}

static int add_symlink(struct builder *b, const char *target, const char *rel)
{
        const char *dst = fmt(b, b->spec->stage, rel);

        if (!dst)
                return -ENOMEM;
        return add(b, (struct child_op){ .type = CHILD_OP_SYMLINK, .src = target, .dst = dst });
}

static int add_dev(struct builder *b)
{
        int r;

        r = add_tmpfs(b, "dev", MS_NOSUID | MS_NOEXEC, DEV_OPTS);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(devices); i++) {
                cleanup_free char *rel = NULL;
                if (b4_asprintf(&rel, "dev/%s", devices[i]) < 0)
                        return -ENOMEM;
                const char *dst = fmt(b, b->spec->stage, rel);
                r = add_path_op(b, CHILD_OP_MKFILE, dst, 0666);
                if (r >= 0)
                        r = add_mount(b, fmt(b, "/dev", devices[i]), dst, NULL, MS_BIND, NULL);
                if (r >= 0)
                        r = add_mount(b, NULL, dst, NULL,
                                      MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC, NULL);
        }
        if (r >= 0)
                r = add_path_op(b, CHILD_OP_MKDIR, fmt(b, b->spec->stage, "dev/pts"), 0755);
        if (r >= 0)
                r = add_mount(b, "devpts", fmt(b, b->spec->stage, "dev/pts"), "devpts",
                              MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
        if (r >= 0)
                r = add_symlink(b, "pts/ptmx", "dev/ptmx");
        if (r >= 0)
                r = add_tmpfs(b, "dev/shm", MS_NOSUID | MS_NODEV | MS_NOEXEC, SHM_OPTS);
        if (r >= 0)
                r = add_symlink(b, "/proc/self/fd", "dev/fd");
        if (r >= 0)
                r = add_symlink(b, "/proc/self/fd/0", "dev/stdin");
        if (r >= 0)
                r = add_symlink(b, "/proc/self/fd/1", "dev/stdout");
        if (r >= 0)
                r = add_symlink(b, "/proc/self/fd/2", "dev/stderr");
        if (r >= 0)
                r = add_mount(b, NULL, fmt(b, b->spec->stage, "dev"), NULL,
                              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL);
        return r;
}

static int add_finish(struct builder *b)
{
        const char *stage = b->spec->stage;
        int r;

        r = add_tmpfs(b, "tmp", MS_NOSUID | MS_NODEV, TMP_OPTS);
        if (r >= 0)
                r = add_tmpfs(b, "run", MS_NOSUID | MS_NODEV, RUN_OPTS);
        if (r >= 0)
                r = add(b, (struct child_op){ .type = CHILD_OP_HOSTNAME, .src = "b4box" });
        if (r >= 0 && b->spec->network_lo_only)
                r = add(b, (struct child_op){ .type = CHILD_OP_LO_UP });
        if (r >= 0 && b->spec->read_only_root)
                r = add_mount(b, NULL, stage, NULL, RO_BIND, NULL);
        if (r >= 0)
                r = add_path_op(b, CHILD_OP_PIVOT, stage, 0);
        return r;
}

int mount_plan_build(const struct mount_spec *spec, struct mount_plan *ret, struct b4_error *err)
{
        struct mount_plan p = { 0 };
        struct builder b = { .p = &p, .spec = spec };
        int r;

        r = read_mountinfo(&b.mountinfo);
        if (r < 0)
                return b4_error_set(err, r, "cannot read /proc/self/mountinfo");
        r = add_mount(&b, NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
        if (r >= 0)
                r = add_mount(&b, "tmpfs", spec->stage, "tmpfs", MS_NOSUID | MS_NODEV, ROOT_OPTS);
        if (r >= 0)
                r = add_image(&b);
        if (r >= 0)
                r = add_masks(&b);
        if (r >= 0)
                r = add_resolv_conf(&b);
        if (r >= 0)
                r = add_workspace_and_proc(&b);
        if (r >= 0)
                r = add_dev(&b);
        if (r >= 0)
                r = add_finish(&b);
        strv_free(b.mountinfo);
        if (r < 0) {
                mount_plan_release(&p);
                return b4_error_set(err, r, "cannot plan the sandbox root from '%s'", spec->image);
        }
        *ret = p;
        return 0;
}

void mount_plan_release(struct mount_plan *p)
{
        free(p->ops);
        strv_free(p->pool);
        *p = (struct mount_plan){ 0 };
}

static const char *op_name(enum child_op_type t)
{
        static const char *const names[] = {
                [CHILD_OP_MOUNT] = "mount",       [CHILD_OP_MKDIR] = "mkdir",
                [CHILD_OP_SYMLINK] = "symlink",   [CHILD_OP_MKFILE] = "create",
                [CHILD_OP_UNLINK] = "unlink",     [CHILD_OP_PIVOT] = "pivot_root",
                [CHILD_OP_LO_UP] = "bring up lo", [CHILD_OP_HOSTNAME] = "sethostname",
        };
        return names[t];
}

int mount_plan_describe(const struct mount_plan *p, int step, char **ret)
{
        const struct child_op *op;

        if (step == CHILD_STEP_USERNS)
                return b4_asprintf(ret, "enter the keeper's user namespace");
        if (step == CHILD_STEP_CGROUP)
                return b4_asprintf(ret, "move the keeper into its cgroup");
        if (step < 0)
                return b4_asprintf(ret, "unshare the cgroup namespace");
        if ((size_t)step >= p->n_ops)
                return b4_asprintf(ret, "exec the keeper");
        op = &p->ops[step];
        return b4_asprintf(ret, "%s %s%s%s", op_name(op->type), op->src ? op->src : "",
                           op->src ? " -> " : "", op->dst ? op->dst : "");
}
