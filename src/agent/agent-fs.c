/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's file operations are native's (src/lib/native/fs.c, linked in): the same
 * openat2 resolution, confinement flags, atomic temp + rename writes that replace a symlink
 * leaf and keep a file's mode, bounded reads and walk bounds, so the rules live in one
 * place. Here the root is the agent's own "/" (or --root), files are created as the agent's
 * user (no chown), and each result is put on the wire: big ones as several frames.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "native/native.h"

static int root_fd = -EBADF;
static bool read_only;

int agent_fs_init(const char *root, bool ro)
{
        root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        read_only = ro;
        return root_fd < 0 ? -errno : 0;
}

/* What fs.c asks of its embedder (native's is sandbox.c). */
int native_fs_enter(struct b4_fs *fs, struct fsctx *ret, struct b4_error *err)
{
        *ret = (struct fsctx){ .root_fd = root_fd };
        return 0;
}

void native_fs_leave(struct b4_fs *fs, struct fsctx *c)
{
}

/* fs.c frees results with core's helpers; the agent links no core. */
void b4_stat_clear(struct b4_stat *st)
{
        free(st->target);
        st->target = NULL;
}

struct b4_walk_entry *b4_walk_entries_free(struct b4_walk_entry *e, size_t n)
{
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].path);
                b4_stat_clear(&e[i].st);
        }
        free(e);
        return NULL;
}

struct b4_blob *b4_blobs_free(struct b4_blob *b, size_t n)
{
        for (size_t i = 0; b && i < n; i++)
                free(b[i].data);
        free(b);
        return NULL;
}

/* ---- replies ---- */

static void reply_status(const struct agent_req *q, int r, const struct b4_error *err)
{
        if (r < 0)
                (void)agent_send_error(q->id, r, err->msg);
        else
                (void)agent_send(q->id, AGENT_OK, 0, NULL, 0);
}

static void reply_stat(const struct agent_req *q, int r, struct b4_stat *st, struct b4_error *e)
{
        struct strbuf sb;

        if (r < 0) {
                (void)agent_send_error(q->id, r, e->msg);
                return;
        }
        strbuf_init(&sb, AGENT_FRAME_MAX);
        r = agent_put_stat(&sb, st);
        if (r >= 0)
                (void)agent_send(q->id, AGENT_STATR, 0, sb.buf, sb.len);
        else
                (void)agent_send_error(q->id, r, "cannot encode the reply");
        strbuf_release(&sb);
        b4_stat_clear(st);
}

static void reply_path(const struct agent_req *q, const char *path)
{
        struct strbuf sb;

        strbuf_init(&sb, AGENT_FRAME_MAX);
        if (agent_put_strs(&sb, path, strlen(path)) >= 0)
                (void)agent_send(q->id, AGENT_PATH, 0, sb.buf, sb.len);
        else
                (void)agent_send_error(q->id, -ENOMEM, "out of memory");
        strbuf_release(&sb);
}

static int send_done(uint32_t id, uint64_t count)
{
        unsigned char p[8];

        agent_put_u64(p, count);
        return agent_send(id, AGENT_DONE, 0, p, sizeof(p));
}

/* @len bytes as DATA frames of AGENT_DATA_CHUNK. */
static int send_data(uint32_t id, const char *data, size_t len)
{
        int r = 0;

        for (size_t off = 0; off < len && r >= 0; off += AGENT_DATA_CHUNK) {
                size_t n = len - off < AGENT_DATA_CHUNK ? len - off : AGENT_DATA_CHUNK;
                r = agent_send(id, AGENT_DATA, 0, data + off, n);
        }
        return r;
}

static void reply_read(const struct agent_req *q, int r, char *data, size_t len, struct b4_error *e)
{
        if (r < 0)
                (void)agent_send_error(q->id, r, e->msg);
        else if (send_data(q->id, data, len) >= 0)
                (void)send_done(q->id, len);
        free(data);
}

/* Names in NAMES frames, each as full as the frame cap allows. */
static void reply_names(const struct agent_req *q, int r, char **names, struct b4_error *e)
{
        struct strbuf sb;
        size_t n = 0, in_frame = 0, mark;

        if (r < 0) {
                (void)agent_send_error(q->id, r, e->msg);
                return;
        }
        strbuf_init(&sb, AGENT_FRAME_MAX);
        r = agent_put_u32s(&sb, 0);
        for (char **s = names; r >= 0 && s && *s; s++, n++) {
                mark = sb.len;
                r = agent_put_strs(&sb, *s, strlen(*s));
                if (r == -E2BIG) {
                        sb.len = mark;
                        agent_put_u32(((unsigned char *)sb.buf), (uint32_t)in_frame);
                        r = agent_send(q->id, AGENT_NAMES, 0, sb.buf, sb.len);
                        strbuf_reset(&sb);
                        in_frame = 0;
                        if (r >= 0)
                                r = agent_put_u32s(&sb, 0);
                        if (r >= 0)
                                r = agent_put_strs(&sb, *s, strlen(*s));
                }
                in_frame++;
        }
        if (r >= 0 && in_frame) {
                agent_put_u32(((unsigned char *)sb.buf), (uint32_t)in_frame);
                r = agent_send(q->id, AGENT_NAMES, 0, sb.buf, sb.len);
        }
        if (r >= 0)
                (void)send_done(q->id, n);
        else
                (void)agent_send_error(q->id, r, "cannot send the names");
        strbuf_release(&sb);
        for (char **s = names; s && *s; s++)
                free(*s);
        free(names);
}

static int put_entry(struct strbuf *sb, const struct b4_walk_entry *w)
{
        int r = agent_put_strs(sb, w->path, strlen(w->path));

        return r < 0 ? r : agent_put_stat(sb, &w->st);
}

static void reply_walk(
        const struct agent_req *q, int r, struct b4_walk_entry *v, size_t n, struct b4_error *e)
{
        struct strbuf sb;
        size_t in_frame = 0, mark;

        if (r < 0) {
                (void)agent_send_error(q->id, r, e->msg);
                return;
        }
        strbuf_init(&sb, AGENT_FRAME_MAX);
        r = agent_put_u32s(&sb, 0);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                mark = sb.len;
                r = put_entry(&sb, &v[i]);
                if (r == -E2BIG) {
                        sb.len = mark;
                        agent_put_u32(((unsigned char *)sb.buf), (uint32_t)in_frame);
                        r = agent_send(q->id, AGENT_ENTRIES, 0, sb.buf, sb.len);
                        strbuf_reset(&sb);
                        in_frame = 0;
                        if (r >= 0)
                                r = agent_put_u32s(&sb, 0);
                        if (r >= 0)
                                r = put_entry(&sb, &v[i]);
                }
                in_frame++;
        }
        if (r >= 0 && in_frame) {
                agent_put_u32(((unsigned char *)sb.buf), (uint32_t)in_frame);
                r = agent_send(q->id, AGENT_ENTRIES, 0, sb.buf, sb.len);
        }
        if (r >= 0)
                (void)send_done(q->id, n);
        else
                (void)agent_send_error(q->id, r, "cannot send the entries");
        strbuf_release(&sb);
        b4_walk_entries_free(v, n);
}

static void reply_batch(const struct agent_req *q, int r, struct b4_blob *b, struct b4_error *e)
{
        if (r < 0) {
                (void)agent_send_error(q->id, r, e->msg);
                return;
        }
        for (size_t i = 0; r >= 0 && i < q->n_reads; i++) {
                unsigned char p[16];
                agent_put_u32(p, (uint32_t)i);
                agent_put_u32(p + 4, (uint32_t)(b[i].error < 0 ? -b[i].error : 0));
                agent_put_u64(p + 8, b[i].error < 0 ? 0 : b[i].len);
                r = agent_send(q->id, AGENT_FILE, 0, p, sizeof(p));
                if (r >= 0 && b[i].error >= 0)
                        r = send_data(q->id, b[i].data, b[i].len);
        }
        if (r >= 0)
                (void)send_done(q->id, q->n_reads);
        b4_blobs_free(b, q->n_reads);
}

static bool is_write(uint16_t type)
{
        return type == AGENT_WRITE || type == AGENT_MKDIR_P || type == AGENT_REMOVE ||
               type == AGENT_TOUCH || type == AGENT_SYMLINK || type == AGENT_CHMOD;
}

/* ---- dispatch ---- */

void agent_fs_serve(const struct agent_req *q, const void *data, size_t len)
{
        struct b4_fs fs = { .ops = &native_fs_ops, .root = B4_WORKSPACE_ROOT };
        const struct b4_fs_ops *o = &native_fs_ops;
        struct b4_error e = { 0 };
        struct b4_stat st = { 0 };
        char *s = NULL, **names = NULL;
        struct b4_walk_entry *v = NULL;
        struct b4_blob *b = NULL;
        size_t n = 0;
        int r;

        if (read_only && is_write(q->type)) {
                (void)agent_send_error(q->id, -EROFS, "this agent is read-only");
                return;
        }
        switch ((enum agent_type)q->type) {
        case AGENT_LSTAT:
                r = o->lstat(&fs, q->path, &st, &e);
                return reply_stat(q, r, &st, &e);
        case AGENT_STAT:
                r = o->stat(&fs, q->path, q->fsflags, &st, &e);
                return reply_stat(q, r, &st, &e);
        case AGENT_REALPATH:
                r = o->realpath(&fs, q->path, &s, &e);
                if (r >= 0 && strlen(s) > AGENT_PATH_MAX)
                        r = b4_error_set(&e, -ENAMETOOLONG, "realpath: too long");
                if (r < 0)
                        (void)agent_send_error(q->id, r, e.msg);
                else
                        reply_path(q, s);
                free(s);
                return;
        case AGENT_READ:
                r = o->read_file(&fs, q->path, q->fsflags, q->max, &s, &n, &e);
                return reply_read(q, r, s, n, &e);
        case AGENT_READ_BATCH:
                r = o->read_files(&fs, q->reads, q->n_reads, &b, &e);
                return reply_batch(q, r, b, &e);
        case AGENT_LIST:
                r = o->list_dir(&fs, q->path, q->fsflags, &names, &e);
                return reply_names(q, r, names, &e);
        case AGENT_WALK:
                r = o->walk(&fs, q->path, (size_t)q->max, q->prune, &v, &n, &e);
                return reply_walk(q, r, v, n, &e);
        case AGENT_WRITE:
                r = o->write_file(&fs, q->path, q->fsflags, data ? data : "", len, &e);
                return reply_status(q, r, &e);
        case AGENT_MKDIR_P:
                return reply_status(q, o->mkdir_p(&fs, q->path, &e), &e);
        case AGENT_REMOVE:
                return reply_status(q, o->remove(&fs, q->path, &e), &e);
        case AGENT_TOUCH:
                return reply_status(q, o->touch(&fs, q->path, q->fsflags, &e), &e);
        case AGENT_SYMLINK:
                return reply_status(q, o->symlink(&fs, q->target, q->path, &e), &e);
        case AGENT_CHMOD:
                return reply_status(q, o->chmod(&fs, q->path, q->mode, &e), &e);
        case AGENT_HELLO:
        case AGENT_FATAL:
        case AGENT_EXEC:
        case AGENT_CANCEL:
        case AGENT_OK:
        case AGENT_ERROR:
        case AGENT_STATR:
        case AGENT_PATH:
        case AGENT_DATA:
        case AGENT_FILE:
        case AGENT_NAMES:
        case AGENT_ENTRIES:
        case AGENT_DONE:
        case AGENT_STARTED:
        case AGENT_EXIT:
                break;
        }
        (void)agent_send_error(q->id, -EOPNOTSUPP, "not a file request");
}
