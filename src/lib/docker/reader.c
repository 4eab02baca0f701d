/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace readers (reference §3.8): a throwaway container with the volume's host directory
 * bind-mounted read-only at /workspace (a bind, never the named volume, so a destroyed volume
 * is not silently recreated), no network, every capability dropped, no_new_privs, a read-only
 * root, pids 128, labelled b4.sandbox.reader=<id>. It never touches the thread's keeper and
 * takes no lifecycle lease. The reader owns its own API client, so it may outlive the
 * provider. With the provider's agent, b4box-agent is bound in read-only too and runs with
 * --read-only (it refuses every write; the container is read-only anyway); the reader
 * serves every read over it.
 */

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "docker/docker.h"
#include "json/json.h"

struct docker_reader {
        struct b4_reader base;
        struct docker_client *d; /* owned */
        char name[96];
        struct docker_fs_target t;
        struct docker_agent *agent; /* owned; NULL: the archive/exec fallback */
        pthread_mutex_t lock;
        bool closed; /* the container is removed (close is idempotent) */
};

static const struct agent_fs_ops reader_fs_ops;

/* Core refuses reads after close, so a read always has the reader's container. */
static struct docker_fs_target *target_of(struct b4_fs *fs)
{
        return &container_of(fs, struct docker_reader, base.fs)->t;
}

static int r_read_file(struct b4_fs *fs,
                       const char *path,
                       unsigned flags,
                       uint64_t max,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err)
{
        return docker_fs_read_file(target_of(fs), path, flags, max, ret, ret_len, err);
}

static int r_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return docker_fs_lstat(target_of(fs), path, ret, err);
}

static int r_stat(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  struct b4_stat *ret,
                  struct b4_error *err)
{
        return docker_fs_stat(target_of(fs), path, flags, ret, err);
}

static int r_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        return docker_fs_list_dir(target_of(fs), path, flags, ret, err);
}

static int r_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        return docker_fs_realpath(target_of(fs), path, ret, err);
}

static int r_walk(struct b4_fs *fs,
                  const char *path,
                  size_t max,
                  char *const *prune,
                  struct b4_walk_entry **ret,
                  size_t *ret_n,
                  struct b4_error *err)
{
        return docker_fs_walk(target_of(fs), path, max, prune, ret, ret_n, err);
}

static int r_read_files(struct b4_fs *fs,
                        const struct b4_read_req *reqs,
                        size_t n,
                        struct b4_blob **ret,
                        struct b4_error *err)
{
        return docker_fs_read_files(target_of(fs), reqs, n, ret, err);
}

static const struct b4_fs_ops fallback_fs_ops = {
        .read_file = r_read_file,
        .lstat = r_lstat,
        .stat = r_stat,
        .list_dir = r_list_dir,
        .realpath = r_realpath,
        .walk = r_walk,
        .read_files = r_read_files,
};

/* agent_fs_ops' getter: the reader's own agent, when it has one. */
static int r_conn(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        struct docker_reader *rd = container_of(fs, struct docker_reader, base.fs);
        int r;

        if (!rd->agent)
                return 0;
        r = docker_agent_conn(rd->agent, ret, err);
        return r < 0 ? r : 1;
}

static const struct agent_fs_ops reader_fs_ops = {
        .ops = { AGENT_FS_READ_MEMBERS },
        .conn = r_conn,
        .fallback = &fallback_fs_ops,
        .falls_back = docker_fs_falls_back,
};

static int remove_container(struct docker_client *d, const char *name, struct b4_error *err)
{
        cleanup_free char *path = NULL;
        int r;

        if (b4_asprintf(&path, "/containers/%s?force=1", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(d, "DELETE", path, NULL, NULL, err);
        /* gone already, or AutoRemove is removing it ("removal ... already in progress") */
        return r == -ENOENT || r == -EEXIST ? 0 : r;
}

static int reader_close(struct b4_reader *r, struct b4_error *err)
{
        struct docker_reader *rd = container_of(r, struct docker_reader, base);
        struct b4_error e = { 0 };
        int ret = 0;

        (void)pthread_mutex_lock(&rd->lock);
        if (!rd->closed) {
                ret = remove_container(rd->d, rd->name, &e);
                if (ret < 0)
                        ret = b4_error_set_code(
                                err, ret, B4_CODE_SANDBOX_UNAVAILABLE,
                                "Sandbox unavailable: could not remove the workspace reader for "
                                "thread \"%s\": %s. Container \"%s\" may still be running.",
                                r->thread_id, e.msg, rd->name);
                else
                        rd->closed = true;
        }
        (void)pthread_mutex_unlock(&rd->lock);
        return ret;
}

static void reader_free(struct b4_reader *r)
{
        struct docker_reader *rd = container_of(r, struct docker_reader, base);

        docker_agent_free(rd->agent);
        docker_client_free(rd->d);
        (void)pthread_mutex_destroy(&rd->lock);
        free(rd);
}

static const struct b4_reader_ops reader_ops = {
        .close = reader_close,
        .free = reader_free,
};

static int volume_mountpoint(struct docker_client *d,
                             const struct docker_reader_spec *s,
                             char **ret,
                             struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *path = NULL;
        const char *mp;
        int r;

        if (b4_asprintf(&path, "/volumes/%s", s->volume) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(d, "GET", path, NULL, &v, err);
        mp = r >= 0 ? jv_string(jv_object_get(v, "Mountpoint")) : NULL;
        if (r < 0 || !mp || !*mp)
                return b4_error_set_code(err, r < 0 && r != -ENOENT ? r : -ENOENT,
                                         B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: no workspace storage for thread "
                                         "\"%s\". It was never created, or it was destroyed.",
                                         s->thread_id);
        if (mp[0] != '/' || strchr(mp, ','))
                return b4_error_set_code(err, -EOPNOTSUPP, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: no workspace storage for thread "
                                         "\"%s\" has no readable host path (\"%s\"). Reading a "
                                         "thread workspace needs a local-driver volume.",
                                         s->thread_id, mp);
        *ret = b4_strdup(mp);
        return *ret ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static struct jv *reader_mounts(const struct docker_reader_spec *s, const char *mountpoint)
{
        if (!s->agent_bind && !s->agent_volume)
                return jv_pack("[{s:s, s:s, s:s, s:b}]", "Type", "bind", "Source", mountpoint,
                               "Target", B4_WORKSPACE_ROOT, "ReadOnly", true);
        return jv_pack("[{s:s, s:s, s:s, s:b}, o]", "Type", "bind", "Source", mountpoint, "Target",
                       B4_WORKSPACE_ROOT, "ReadOnly", true,
                       docker_agent_mount_json(s->agent_bind, s->agent_volume));
}

static struct jv *reader_body(const struct docker_reader_spec *s, const char *mountpoint)
{
        cleanup_free char *user = NULL;

        if (s->run_as_non_root && b4_asprintf(&user, "%u:%u", s->uid, s->gid) < 0)
                return NULL;
        return jv_pack("{s:s, s:[s, s], s:s*, s:{s:s},"
                       " s:{s:o, s:s, s:[s], s:[s, s], s:i, s:b,"
                       " s:{s:s, s:s}, s:b}}",
                       "Image", s->image, "Cmd", "sleep", "infinity", "User", user, "Labels",
                       "b4.sandbox.reader", s->resource_id, "HostConfig", "Mounts",
                       reader_mounts(s, mountpoint), "NetworkMode", "none", "CapDrop", "ALL",
                       "SecurityOpt", "no-new-privileges", s->seccomp_opt, "PidsLimit", 128,
                       "ReadonlyRootfs", true, "Tmpfs", "/tmp", "", "/run", "", "AutoRemove", true);
}

static int start_reader(struct docker_reader *rd,
                        const struct docker_reader_spec *s,
                        const char *mountpoint,
                        struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = reader_body(s, mountpoint);
        cleanup_free char *path = NULL;
        struct b4_error e = { 0 };
        int r;

        if (!body || b4_asprintf(&path, "/containers/create?name=%s", rd->name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(rd->d, "POST", path, body, NULL, &e);
        free(path);
        path = NULL;
        if (r >= 0 && b4_asprintf(&path, "/containers/%s/start", rd->name) < 0)
                r = b4_error_set(&e, -ENOMEM, "out of memory");
        if (r >= 0)
                r = docker_call(rd->d, "POST", path, NULL, NULL, &e);
        if (r < 0) {
                (void)remove_container(rd->d, rd->name, NULL);
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: could not open a workspace reader "
                                         "for thread \"%s\": %s",
                                         s->thread_id, e.msg);
        }
        return 0;
}

int docker_reader_open(const struct docker_reader_spec *s,
                       struct b4_reader **ret,
                       struct b4_error *err)
{
        cleanup_free char *mp = NULL;
        struct docker_reader *rd = NULL;
        uint32_t rnd = 0;
        int r;

        rd = b4_calloc(1, sizeof(*rd));
        if (!rd)
                return b4_error_set(err, -ENOMEM, "out of memory");
        (void)pthread_mutex_init(&rd->lock, NULL);
        r = docker_client_new(docker_client_socket(s->d), &rd->d, err);
        if (r >= 0 && b4_reader_init(&rd->base, &reader_ops, &reader_fs_ops.ops, s->thread_id) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r < 0) {
                docker_client_free(rd->d);
                free(rd);
                return r;
        }
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = (uint32_t)now_usec();
        (void)snprintf(rd->name, sizeof(rd->name), "%s%s-%08x", s->name_prefix, s->resource_id,
                       rnd);
        if ((s->agent_bind || s->agent_volume) &&
            docker_agent_new(rd->d, rd->name, NULL, true, &rd->agent) < 0) {
                rd->closed = true;
                b4_reader_free(&rd->base);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        rd->t = (struct docker_fs_target){ .d = rd->d, .container = rd->name };
        r = volume_mountpoint(rd->d, s, &mp, err);
        if (r >= 0)
                r = start_reader(rd, s, mp, err);
        if (r < 0) {
                rd->closed = true;
                b4_reader_free(&rd->base);
                return r;
        }
        *ret = &rd->base;
        return 0;
}
