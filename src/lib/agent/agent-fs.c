/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The typed file calls: each builds its request, submits it, waits for its end under the
 * connection's reply deadline, and hands over what agent-reply.c validated. Messages are
 * worded here from the errno alone ("<op> <path>: <strerror>", as native words them): no
 * text from the agent reaches a user. -EFBIG and -E2BIG are left for core to word.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"
#include "base/alloc.h"
#include "base/macro.h"

/* Submit @req for @c and wait. Return: the call's outcome. */
static int run(struct agent_conn *conn, struct agent_call *c, struct strbuf *req)
{
        int r = agent_conn_submit(conn, c, req->buf, req->len);

        if (r >= 0)
                r = agent_conn_wait(conn, c, agent_conn_fs_deadline(conn), NULL, NULL);
        return r;
}

static int fail(struct b4_error *err, int r, const char *op, const char *path)
{
        if (r == -EFBIG || r == -E2BIG)
                return r; /* core words them */
        return b4_error_set(err, r, "%s %s: %s", op, path ? path : "",
                            r == -EPROTO      ? "the sandbox agent broke the protocol"
                            : r == -ENOTCONN  ? "the sandbox agent is gone"
                            : r == -ETIMEDOUT ? "the sandbox agent did not answer in time"
                                              : strerror(-r));
}

static int check_path(const char *path)
{
        if (!path || path[0] != '/')
                return -EINVAL;
        return strlen(path) > AGENT_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Build @req: [u32 flags,] [u64 n,] str path. */
static int req_path(struct strbuf *req, const unsigned *flags, const uint64_t *n, const char *path)
{
        int r = check_path(path);

        strbuf_init(req, AGENT_FRAME_MAX);
        if (r >= 0 && flags && (*flags & ~(unsigned)(B4_FS_BENEATH | B4_FS_NO_SYMLINKS)))
                r = -EINVAL;
        if (r >= 0 && flags)
                r = agent_buf_u32(req, *flags);
        if (r >= 0 && n)
                r = agent_buf_u64(req, *n);
        if (r >= 0)
                r = agent_buf_str(req, path);
        return r;
}

/* One request whose answer is OK, STAT or PATH. */
static int simple(struct agent_conn *conn,
                  uint16_t type,
                  const unsigned *flags,
                  const char *path,
                  const char *op,
                  struct agent_call *c,
                  struct b4_error *err)
{
        struct strbuf req;
        int r = agent_call_init(c, type, 0);

        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        r = req_path(&req, flags, NULL, path);
        if (r >= 0)
                r = run(conn, c, &req);
        strbuf_release(&req);
        if (r < 0) {
                agent_call_release(c);
                return fail(err, r, op, path);
        }
        return 0;
}

int agent_read_file(struct agent_conn *conn,
                    const char *path,
                    unsigned flags,
                    uint64_t max_bytes,
                    char **ret,
                    size_t *ret_len,
                    struct b4_error *err)
{
        uint64_t max = max_bytes > AGENT_FILE_MAX ? AGENT_FILE_MAX : max_bytes;
        struct agent_call c;
        struct strbuf req;
        int r = agent_call_init(&c, AGENT_READ, 0);

        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        c.max_bytes = max;
        r = req_path(&req, &flags, &max, path);
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        if (r >= 0)
                r = strbuf_detach(&c.data, ret, ret_len);
        agent_call_release(&c);
        return r < 0 ? fail(err, r, "readFile", path) : 0;
}

int agent_lstat(struct agent_conn *conn,
                const char *path,
                struct b4_stat *ret,
                struct b4_error *err)
{
        struct agent_call c;
        int r = simple(conn, AGENT_LSTAT, NULL, path, "lstat", &c, err);

        if (r < 0)
                return r;
        *ret = c.st;
        c.st.target = NULL;
        agent_call_release(&c);
        return 0;
}

int agent_stat(struct agent_conn *conn,
               const char *path,
               unsigned flags,
               struct b4_stat *ret,
               struct b4_error *err)
{
        struct agent_call c;
        int r = simple(conn, AGENT_STAT, &flags, path, "stat", &c, err);

        if (r < 0)
                return r;
        *ret = c.st;
        c.st.target = NULL;
        agent_call_release(&c);
        return 0;
}

int agent_realpath(struct agent_conn *conn, const char *path, char **ret, struct b4_error *err)
{
        struct agent_call c;
        int r = simple(conn, AGENT_REALPATH, NULL, path, "realPath", &c, err);

        if (r < 0)
                return r;
        *ret = TAKE_PTR(c.path);
        agent_call_release(&c);
        return 0;
}

int agent_list_dir(struct agent_conn *conn,
                   const char *path,
                   unsigned flags,
                   char ***ret_names,
                   struct b4_error *err)
{
        struct agent_call c;
        struct strbuf req;
        int r = agent_call_init(&c, AGENT_LIST, 0);

        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        c.max_entries = B4_LIST_MAX_ENTRIES;
        r = req_path(&req, &flags, NULL, path);
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        if (r >= 0 && !c.names && !(c.names = b4_calloc(1, sizeof(char *))))
                r = -ENOMEM;
        if (r >= 0) {
                *ret_names = TAKE_PTR(c.names);
                c.n_names = 0;
        }
        agent_call_release(&c);
        return r < 0 ? fail(err, r, "listDir", path) : 0;
}

int agent_walk(struct agent_conn *conn,
               const char *path,
               size_t max_entries,
               char *const *prune,
               struct b4_walk_entry **ret,
               size_t *ret_n,
               struct b4_error *err)
{
        uint64_t max = max_entries > AGENT_WALK_MAX ? AGENT_WALK_MAX : max_entries;
        uint32_t n_prune = 0;
        struct agent_call c;
        struct strbuf req;
        int r = agent_call_init(&c, AGENT_WALK, 0);

        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        c.max_entries = (size_t)max;
        while (prune && prune[n_prune])
                n_prune++;
        r = n_prune > AGENT_PRUNE_MAX ? -EINVAL : req_path(&req, NULL, &max, path);
        if (n_prune > AGENT_PRUNE_MAX)
                strbuf_init(&req, 0);
        if (r >= 0)
                r = agent_buf_u32(&req, n_prune);
        for (uint32_t i = 0; r >= 0 && i < n_prune; i++)
                r = agent_buf_str(&req, prune[i]);
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        if (r >= 0) {
                *ret = TAKE_PTR(c.entries);
                *ret_n = c.n_entries;
                c.n_entries = 0;
        }
        agent_call_release(&c);
        if (r == -E2BIG)
                return r; /* core words it */
        return r < 0 ? fail(err, r, "walk", path) : 0;
}

int agent_read_files(struct agent_conn *conn,
                     const struct b4_read_req *reqs,
                     size_t n,
                     struct b4_blob **ret,
                     struct b4_error *err)
{
        cleanup_free uint64_t *caps = b4_calloc(n ? n : 1, sizeof(uint64_t));
        struct agent_call c;
        struct strbuf req;
        int r;

        if (n > AGENT_BATCH_MAX)
                return b4_error_set(err, -E2BIG, "read_files: more than %u files", AGENT_BATCH_MAX);
        r = caps ? agent_call_init(&c, AGENT_READ_BATCH, 0) : -ENOMEM;
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        c.n_files = n;
        c.file_max = caps;
        c.cur = n;
        c.blobs = b4_calloc(n ? n : 1, sizeof(*c.blobs));
        strbuf_init(&req, AGENT_FRAME_MAX);
        r = c.blobs ? agent_buf_u32(&req, (uint32_t)n) : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                caps[i] = reqs[i].max_bytes > AGENT_FILE_MAX ? AGENT_FILE_MAX : reqs[i].max_bytes;
                r = check_path(reqs[i].path);
                if (r >= 0)
                        r = agent_buf_u64(&req, caps[i]);
                if (r >= 0)
                        r = agent_buf_str(&req, reqs[i].path);
        }
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        if (r >= 0) {
                *ret = TAKE_PTR(c.blobs);
        }
        agent_call_release(&c);
        return r < 0 ? fail(err, r, "readFiles", n ? reqs[0].path : "") : 0;
}

int agent_write_file(struct agent_conn *conn,
                     const char *path,
                     unsigned flags,
                     const void *data,
                     size_t len,
                     struct b4_error *err)
{
        uint64_t n = len;
        struct agent_call c;
        struct strbuf req;
        int r;

        if (len > AGENT_FILE_MAX)
                return b4_error_set(err, -EFBIG, "writeFile %s: more than %llu bytes", path,
                                    (unsigned long long)AGENT_FILE_MAX);
        r = agent_call_init(&c, AGENT_WRITE, 0);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        r = req_path(&req, &flags, &n, path);
        if (r >= 0)
                r = agent_conn_submit(conn, &c, req.buf, req.len);
        strbuf_release(&req);
        bool submitted = r >= 0;
        for (size_t off = 0; r >= 0 && off < len; off += AGENT_DATA_CHUNK) {
                size_t k = len - off < AGENT_DATA_CHUNK ? len - off : AGENT_DATA_CHUNK;
                r = agent_conn_send(conn, c.id, AGENT_DATA, 0, (const char *)data + off, k);
        }
        if (submitted) {
                int w = agent_conn_wait(conn, &c, agent_conn_fs_deadline(conn), NULL, NULL);
                r = r < 0 ? r : w;
        }
        agent_call_release(&c);
        return r < 0 ? b4_error_set(err, r == -EFBIG ? -EIO : r, "writeFile %s: %s", path,
                                    strerror(r == -EFBIG ? EIO : -r))
                     : 0;
}

static int status_call(struct agent_conn *conn,
                       uint16_t type,
                       const unsigned *flags,
                       const char *path,
                       const char *op,
                       struct b4_error *err)
{
        struct agent_call c;
        int r = simple(conn, type, flags, path, op, &c, err);

        if (r >= 0)
                agent_call_release(&c);
        return r;
}

int agent_mkdir_p(struct agent_conn *conn, const char *path, struct b4_error *err)
{
        return status_call(conn, AGENT_MKDIR_P, NULL, path, "mkdir", err);
}

int agent_remove(struct agent_conn *conn, const char *path, struct b4_error *err)
{
        return status_call(conn, AGENT_REMOVE, NULL, path, "removeFile", err);
}

int agent_touch(struct agent_conn *conn, const char *path, unsigned flags, struct b4_error *err)
{
        return status_call(conn, AGENT_TOUCH, &flags, path, "touchFile", err);
}

int agent_symlink(struct agent_conn *conn,
                  const char *target,
                  const char *path,
                  struct b4_error *err)
{
        struct agent_call c;
        struct strbuf req;
        int r;

        if (!target || !*target || strlen(target) > AGENT_PATH_MAX)
                return b4_error_set(err, -EINVAL, "symlink %s: bad target", path ? path : "");
        r = agent_call_init(&c, AGENT_SYMLINK, 0);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        strbuf_init(&req, AGENT_FRAME_MAX);
        r = agent_buf_str(&req, target);
        if (r >= 0)
                r = check_path(path);
        if (r >= 0)
                r = agent_buf_str(&req, path);
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        agent_call_release(&c);
        return r < 0 ? fail(err, r, "symlink", path) : 0;
}

int agent_chmod(struct agent_conn *conn, const char *path, uint32_t mode, struct b4_error *err)
{
        struct agent_call c;
        struct strbuf req;
        int r;

        if (mode > 07777)
                return b4_error_set(err, -EINVAL, "chmod %s: bad mode", path ? path : "");
        r = agent_call_init(&c, AGENT_CHMOD, 0);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        strbuf_init(&req, AGENT_FRAME_MAX);
        r = agent_buf_u32(&req, mode);
        if (r >= 0)
                r = check_path(path);
        if (r >= 0)
                r = agent_buf_str(&req, path);
        if (r >= 0)
                r = run(conn, &c, &req);
        strbuf_release(&req);
        agent_call_release(&c);
        return r < 0 ? fail(err, r, "chmod", path) : 0;
}
