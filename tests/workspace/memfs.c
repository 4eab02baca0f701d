/* SPDX-License-Identifier: Apache-2.0 */
#include "memfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/provider-impl.h"

struct mnode {
        char *path; /* absolute */
        enum b4_file_kind kind;
        char *data;
        size_t len;
        bool exec;
        char *target;
};

static struct memfs *M(struct b4_fs *fs)
{
        return (struct memfs *)fs;
}

static struct mnode *find(struct memfs *m, const char *abs)
{
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->v[i].path, abs) == 0)
                        return &m->v[i];
        return NULL;
}

static int m_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        struct mnode *n = find(M(fs), path);

        M(fs)->lstats++;
        if (!n)
                return b4_error_set(err, -ENOENT, "lstat failed: %s: no such file", path);
        *ret = (struct b4_stat){ .kind = n->kind, .size = n->len, .executable = n->exec };
        if (n->target)
                ret->target = strdup(n->target);
        return 0;
}

static int m_read(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  uint64_t max,
                  char **ret,
                  size_t *ret_len,
                  struct b4_error *err)
{
        struct mnode *n = find(M(fs), path);

        M(fs)->reads++;
        if (!n)
                return b4_error_set(err, -ENOENT, "readFile failed: %s", path);
        if (n->kind != B4_FILE_REGULAR)
                return b4_error_set(err, -EISDIR, "readFile failed: %s", path);
        if (n->len > max)
                return b4_error_set(err, -EFBIG, "readFile %s: content exceeds maxBytes (%llu).",
                                    path, (unsigned long long)max);
        *ret = malloc(n->len + 1);
        memcpy(*ret, n->data, n->len);
        (*ret)[n->len] = '\0';
        *ret_len = n->len;
        return 0;
}

static int cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int m_stat(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  struct b4_stat *ret,
                  struct b4_error *err)
{
        return m_lstat(fs, path, ret, err);
}

static int m_list(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct memfs *m = M(fs);
        size_t pl = strlen(path), k = 0;
        char **names = calloc(m->n + 1, sizeof(char *));

        m->lists++;
        if (!find(m, path)) {
                free(names);
                return b4_error_set(err, -ENOENT, "listDir failed: %s", path);
        }
        for (size_t i = 0; i < m->n; i++) {
                const char *p = m->v[i].path;
                if (strncmp(p, path, pl) == 0 && p[pl] == '/' && !strchr(p + pl + 1, '/'))
                        names[k++] = strdup(p + pl + 1);
        }
        qsort(names, k, sizeof(char *), cmp);
        *ret = names;
        return 0;
}

static int m_walk(struct b4_fs *fs,
                  const char *path,
                  size_t max,
                  char *const *prune,
                  struct b4_walk_entry **ret,
                  size_t *ret_n,
                  struct b4_error *err)
{
        struct memfs *m = M(fs);
        size_t pl = strlen(path), k = 0;
        struct b4_walk_entry *v = calloc(m->n + 2, sizeof(*v));

        m->walks++;
        for (size_t i = m->n; i-- > 0;) {
                const char *rel = m->v[i].path + pl + 1;
                bool pruned = false;
                if (strncmp(m->v[i].path, path, pl) != 0 || m->v[i].path[pl] != '/')
                        continue;
                for (char *const *p = prune; p && *p; p++)
                        pruned |= strncmp(rel, *p, strlen(*p)) == 0 && rel[strlen(*p)] == '/';
                if (pruned)
                        continue;
                if (k >= max) {
                        b4_walk_entries_free(v, k);
                        return b4_error_set(err, -E2BIG, "Workspace entries limit exceeded");
                }
                v[k].path = strdup(rel);
                (void)m_lstat(fs, m->v[i].path, &v[k].st, NULL);
                k++;
        }
        if (m->dup_walk && k > 0) {
                v[k].path = strdup(v[0].path);
                v[k].st = v[0].st;
                v[k].st.target = v[0].st.target ? strdup(v[0].st.target) : NULL;
                k++;
        }
        *ret = v;
        *ret_n = k;
        return 0;
}

static int m_read_files(struct b4_fs *fs,
                        const struct b4_read_req *reqs,
                        size_t n,
                        struct b4_blob **ret,
                        struct b4_error *err)
{
        struct memfs *m = M(fs);
        struct b4_blob *b = calloc(n + 1, sizeof(*b));

        m->batch_reads++;
        if (m->before_read)
                m->before_read(m, m->hook_data);
        for (size_t i = 0; i < n; i++)
                b[i].error =
                        m_read(fs, reqs[i].path, 0, reqs[i].max_bytes, &b[i].data, &b[i].len, NULL);
        *ret = b;
        return 0;
}

static const struct b4_fs_ops batched_ops = {
        .read_file = m_read,
        .lstat = m_lstat,
        .stat = m_stat,
        .list_dir = m_list,
        .walk = m_walk,
        .read_files = m_read_files,
};

static const struct b4_fs_ops plain_ops = {
        .read_file = m_read,
        .lstat = m_lstat,
        .stat = m_stat,
        .list_dir = m_list,
};

struct memfs *memfs_new(bool batched)
{
        struct memfs *m = calloc(1, sizeof(*m));

        m->fs.ops = batched ? &batched_ops : &plain_ops;
        m->fs.root = B4_WORKSPACE_ROOT;
        memfs_dir(m, "");
        return m;
}

static void node_clear(struct mnode *n)
{
        free(n->path);
        free(n->data);
        free(n->target);
}

void memfs_free(struct memfs *m)
{
        for (size_t i = 0; i < m->n; i++)
                node_clear(&m->v[i]);
        free(m->v);
        free(m);
}

static struct mnode *add(struct memfs *m, const char *rel, enum b4_file_kind kind)
{
        char *abs = malloc(strlen(rel) + sizeof(B4_WORKSPACE_ROOT) + 1);
        struct mnode *n;

        strcpy(abs, B4_WORKSPACE_ROOT);
        if (*rel) {
                strcat(abs, "/");
                strcat(abs, rel);
        }
        n = find(m, abs);
        if (n) {
                node_clear(n);
        } else {
                m->v = realloc(m->v, (m->n + 1) * sizeof(*m->v));
                n = &m->v[m->n++];
        }
        *n = (struct mnode){ .path = abs, .kind = kind };
        return n;
}

void memfs_dir(struct memfs *m, const char *path)
{
        add(m, path, B4_FILE_DIRECTORY);
}

void memfs_file(struct memfs *m, const char *path, const char *data, size_t len, bool exec)
{
        struct mnode *n = add(m, path, B4_FILE_REGULAR);

        n->data = malloc(len + 1);
        memcpy(n->data, data, len);
        n->len = len;
        n->exec = exec;
}

void memfs_text(struct memfs *m, const char *path, const char *text)
{
        memfs_file(m, path, text, strlen(text), false);
}

void memfs_link(struct memfs *m, const char *path, const char *target)
{
        add(m, path, B4_FILE_SYMLINK)->target = strdup(target);
}

void memfs_other(struct memfs *m, const char *path)
{
        add(m, path, B4_FILE_OTHER);
}

void memfs_del(struct memfs *m, const char *path)
{
        char abs[4096];

        strcpy(abs, B4_WORKSPACE_ROOT "/");
        strcat(abs, path);
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->v[i].path, abs) == 0) {
                        node_clear(&m->v[i]);
                        m->v[i] = m->v[--m->n];
                        return;
                }
}
