/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory test double of a sandbox (see memsb.h). Test code: plain libc allocation. */

#include "memsb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/provider-impl.h"

#include "base/macro.h"

enum kind {
        K_FILE,
        K_DIR,
        K_LINK
};

struct node {
        char *path;
        enum kind kind;
        char *data; /* file content or link target */
        size_t len;
};

struct memsb {
        struct b4_sandbox sb;
        struct node *nodes;
        size_t n;
};

#define MEM(fs) container_of(fs, struct memsb, sb.fs)

static struct node *lookup(struct memsb *m, const char *path)
{
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->nodes[i].path, path) == 0)
                        return &m->nodes[i];
        return NULL;
}

static struct node *add(struct memsb *m, const char *path, enum kind k, const char *d, size_t len)
{
        struct node *n = lookup(m, path);

        if (!n) {
                m->nodes = realloc(m->nodes, (m->n + 1) * sizeof(*m->nodes));
                n = &m->nodes[m->n++];
                n->path = strdup(path);
                n->data = NULL;
        }
        free(n->data);
        n->kind = k;
        n->data = malloc(len + 1);
        if (len)
                memcpy(n->data, d, len);
        n->data[len] = '\0';
        n->len = len;
        return n;
}

/* realpath -m: resolve links component by component, tolerating missing tails. *links:
 * how many links were followed. */
static int resolve_links(struct memsb *m, const char *path, char *out, size_t outsz, int *links)
{
        char rest[4096], cur[4096] = "";
        char tmp[8300];
        int hops = 0;

        snprintf(rest, sizeof(rest), "%s", path);
        while (rest[0]) {
                char comp[4096];
                size_t n = strcspn(rest, "/");
                memcpy(comp, rest, n);
                comp[n] = '\0';
                memmove(rest, rest + n + (rest[n] == '/'), strlen(rest + n + (rest[n] == '/')) + 1);
                if (n == 0 || strcmp(comp, ".") == 0)
                        continue;
                if (strcmp(comp, "..") == 0) {
                        char *s = strrchr(cur, '/');
                        if (s)
                                *s = '\0';
                        continue;
                }
                snprintf(tmp, sizeof(tmp), "%s/%s", cur, comp);
                struct node *l = lookup(m, tmp);
                if (l && l->kind == K_LINK) {
                        if (++hops > 40)
                                return -ELOOP;
                        snprintf(tmp, sizeof(tmp), "%s/%s", l->data, rest);
                        snprintf(rest, sizeof(rest), "%.4000s", tmp);
                        if (l->data[0] == '/')
                                cur[0] = '\0';
                        continue;
                }
                snprintf(cur, sizeof(cur), "%.4000s", tmp);
        }
        snprintf(out, outsz, "%s", cur[0] ? cur : "/");
        *links = hops;
        return 0;
}

static int resolve(struct memsb *m, const char *path, char *out, size_t outsz)
{
        int links;

        return resolve_links(m, path, out, outsz, &links);
}

/* enum b4_fs_flags over the double: decided on the resolution (as native's openat2 does). */
static int confine(struct memsb *m, const char *path, unsigned flags, struct b4_error *err)
{
        char real[4096];
        int links = 0;
        int r = resolve_links(m, path, real, sizeof(real), &links);

        if (r < 0)
                return b4_error_set(err, r, "cannot resolve");
        if ((flags & B4_FS_NO_SYMLINKS) && links > 0)
                return b4_error_set(err, -ELOOP, "symlink in the way");
        if ((flags & B4_FS_BENEATH) && strcmp(real, "/workspace") != 0 &&
            strncmp(real, "/workspace/", 11) != 0)
                return b4_error_set(err, -EXDEV, "outside the workspace");
        return 0;
}

static struct node *follow(struct memsb *m, const char *path)
{
        char real[4096];

        if (resolve(m, path, real, sizeof(real)) < 0)
                return NULL;
        return lookup(m, real);
}

static int m_read_file(struct b4_fs *fs,
                       const char *path,
                       unsigned flags,
                       uint64_t max,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err)
{
        struct node *n = follow(MEM(fs), path);
        int r = confine(MEM(fs), path, flags, err);

        if (r < 0)
                return r;
        if (!n)
                return b4_error_set(err, -ENOENT, "no such file");
        if (n->kind == K_DIR)
                return b4_error_set(err, -EISDIR, "is a directory");
        if (n->len > max)
                return b4_error_set(err, -EFBIG, "readFile %s: content exceeds maxBytes (%llu).",
                                    path, (unsigned long long)max);
        *ret = malloc(n->len + 1);
        memcpy(*ret, n->data, n->len + 1);
        *ret_len = n->len;
        return 0;
}

static int m_stat(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  struct b4_stat *ret,
                  struct b4_error *err)
{
        struct node *n = follow(MEM(fs), path);
        int r = confine(MEM(fs), path, flags, err);

        if (r < 0)
                return r;
        if (!n)
                return b4_error_set(err, -ENOENT, "no such file");
        *ret = (struct b4_stat){ .kind = n->kind == K_DIR ? B4_FILE_DIRECTORY : B4_FILE_REGULAR,
                                 .size = n->kind == K_DIR ? 4096 : n->len };
        return 0;
}

static int m_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct memsb *m = MEM(fs);
        struct node *d = follow(m, path);
        char real[4096];
        char **names = NULL;
        size_t k = 0, pl;
        int r = confine(m, path, flags, err);

        if (r < 0)
                return r;
        names = calloc(m->n + 1, sizeof(char *));
        if (!d || d->kind != K_DIR) {
                free(names);
                return b4_error_set(err, d ? -ENOTDIR : -ENOENT, "cannot list");
        }
        (void)resolve(m, path, real, sizeof(real));
        pl = strcmp(real, "/") == 0 ? 0 : strlen(real);
        for (size_t i = 0; i < m->n; i++) {
                const char *p = m->nodes[i].path;
                if (strncmp(p, real, pl) == 0 && p[pl] == '/' && p[pl + 1] &&
                    !strchr(p + pl + 1, '/'))
                        names[k++] = strdup(p + pl + 1);
        }
        *ret = names;
        return 0;
}

static int m_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        char real[4096];
        int r = resolve(MEM(fs), path, real, sizeof(real));

        if (r < 0)
                return b4_error_set(err, r, "realpath failed");
        *ret = strdup(real);
        return 0;
}

static void mkdirs(struct memsb *m, const char *path)
{
        char tmp[4096];

        snprintf(tmp, sizeof(tmp), "%s", path);
        for (char *s = strchr(tmp + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (!lookup(m, tmp))
                        add(m, tmp, K_DIR, "", 0);
                *s = '/';
        }
}

/* The leaf is replaced, never followed: confine the parent. */
static int confine_parent(struct memsb *m, const char *path, unsigned flags, struct b4_error *err)
{
        char parent[4096];
        const char *slash = strrchr(path, '/');

        snprintf(parent, sizeof(parent), "%.*s", slash > path ? (int)(slash - path) : 1, path);
        return confine(m, parent, flags, err);
}

static int m_write_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        const void *data,
                        size_t len,
                        struct b4_error *err)
{
        struct memsb *m = MEM(fs);
        struct node *n = lookup(m, path);
        int r = confine_parent(m, path, flags, err);

        if (r < 0)
                return r;

        if (n && n->kind == K_DIR)
                return b4_error_set(err, -EISDIR, "is a directory");
        mkdirs(m, path);
        add(m, path, K_FILE, data, len);
        return 0;
}

static int m_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        char tmp[4096];

        snprintf(tmp, sizeof(tmp), "%s/x", path);
        mkdirs(MEM(fs), tmp);
        return 0;
}

static int m_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return m_stat(fs, path, 0, ret, err);
}

static int m_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        int r = confine(MEM(fs), path, flags, err);

        if (r < 0)
                return r;
        if (!follow(MEM(fs), path))
                return m_write_file(fs, path, 0, "", 0, err);
        return 0;
}

static const struct b4_fs_ops m_fs_ops = {
        .read_file = m_read_file,
        .lstat = m_lstat,
        .stat = m_stat,
        .list_dir = m_list_dir,
        .realpath = m_realpath,
        .write_file = m_write_file,
        .mkdir_p = m_mkdir_p,
        .touch = m_touch,
};

/* "echo <text>" prints text; anything else prints nothing and exits 0. */
static int m_exec(struct b4_sandbox *sb,
                  const struct b4_exec_req *req,
                  struct b4_exec_result *ret,
                  struct b4_error *err)
{
        const char *out = strncmp(req->command, "echo ", 5) == 0 ? req->command + 5 : "";

        if (asprintf(&ret->out, "%s%s", out, *out ? "\n" : "") < 0)
                return -ENOMEM;
        ret->out_len = strlen(ret->out);
        ret->errout = strdup("");
        ret->exit_code = 0;
        return 0;
}

static void m_free(struct b4_sandbox *sb)
{
        struct memsb *m = (struct memsb *)sb;

        for (size_t i = 0; i < m->n; i++) {
                free(m->nodes[i].path);
                free(m->nodes[i].data);
        }
        free(m->nodes);
        free(m);
}

static const struct b4_sandbox_ops m_ops = { .exec = m_exec, .free = m_free };

struct b4_sandbox *memsb_new(const char *thread_id)
{
        struct memsb *m = calloc(1, sizeof(*m));

        if (b4_sandbox_init(&m->sb, &m_ops, &m_fs_ops, thread_id) < 0) {
                free(m);
                return NULL;
        }
        add(m, "/etc", K_DIR, "", 0);
        add(m, "/etc/passwd", K_FILE, "root:x:0:0\n", 11);
        add(m, "/workspace", K_DIR, "", 0);
        return &m->sb;
}

void memsb_symlink(struct b4_sandbox *sb, const char *path, const char *target)
{
        add((struct memsb *)sb, path, K_LINK, target, strlen(target));
}
