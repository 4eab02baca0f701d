/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client's reply parser: every frame the agent sends for a call is checked here before
 * anything is kept. The agent is where the sandbox can replace it, so each reply is hostile
 * input: a count is bounded before it is trusted, a byte is kept only within what the call
 * asked for (max_bytes, max_entries, output_cap), names and paths must be well formed
 * (sorted names, relative walk paths without "." or ".."), an errno is kept only when the
 * operation may return it. Any breach is -EPROTO: the call fails and the connection dies.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"
#include "base/alloc.h"
#include "base/macro.h"

int agent_call_init(struct agent_call *c, uint16_t type, size_t output_cap)
{
        int r = 0;

        *c = (struct agent_call){ .type = type, .efd = -EBADF, .output_cap = output_cap };
        strbuf_init(&c->data, (size_t)AGENT_FILE_MAX);
        if (type == AGENT_EXEC) {
                r = capture_init(&c->out, output_cap);
                if (r >= 0)
                        r = capture_init(&c->err, output_cap);
        }
        if (r < 0)
                agent_call_release(c);
        return r;
}

void agent_call_release(struct agent_call *c)
{
        strbuf_release(&c->data);
        b4_stat_clear(&c->st);
        free(c->path);
        for (size_t i = 0; i < c->n_names; i++)
                free(c->names[i]);
        free(c->names);
        b4_walk_entries_free(c->entries, c->n_entries);
        b4_blobs_free(c->blobs, c->blobs ? c->n_files : 0);
        capture_release(&c->out);
        capture_release(&c->err);
        int efd = c->efd;
        *c = (struct agent_call){ .efd = efd };
}

/* ---- errno ---- */

static bool in(int v, const int *set, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (set[i] == v)
                        return true;
        return false;
}

int agent_errno_filter(uint16_t type, uint32_t e)
{
        static const int common[] = { ENOENT,       EACCES, EPERM,      ENOTDIR, ELOOP, EXDEV,
                                      ENAMETOOLONG, EROFS,  ENOMEM,     EIO,     EBUSY, EINVAL,
                                      ENOSPC,       EDQUOT, EOPNOTSUPP, EMFILE,  ENFILE };
        static const int read_x[] = { EFBIG, EISDIR };
        static const int list_x[] = { E2BIG };
        static const int write_x[] = { EISDIR, EEXIST, ENOTEMPTY, EFBIG };
        static const int exec_x[] = { ENOEXEC, E2BIG, EAGAIN, ETXTBSY };
        int v = e > 4095 ? 0 : (int)e;

        if (v == 0)
                return -EIO;
        if (in(v, common, ELEMENTSOF(common)))
                return -v;
        switch (type) {
        case AGENT_READ:
        case AGENT_READ_BATCH:
                return in(v, read_x, ELEMENTSOF(read_x)) ? -v : -EIO;
        case AGENT_LIST:
        case AGENT_WALK:
                return in(v, list_x, ELEMENTSOF(list_x)) ? -v : -EIO;
        case AGENT_WRITE:
        case AGENT_MKDIR_P:
        case AGENT_REMOVE:
        case AGENT_TOUCH:
        case AGENT_SYMLINK:
        case AGENT_CHMOD:
                return in(v, write_x, ELEMENTSOF(write_x)) ? -v : -EIO;
        case AGENT_EXEC:
                return in(v, exec_x, ELEMENTSOF(exec_x)) ? -v : -EIO;
        default:
                return -EIO;
        }
}

/* ---- fields ---- */

static int proto(const char **why, const char *what)
{
        *why = what;
        return -EPROTO;
}

static int end(struct agent_call *c, int error)
{
        c->error = error;
        c->done = true;
        return 1;
}

static int get_stat(struct agent_rd *rd, bool may_link, struct b4_stat *st, const char **why)
{
        uint32_t kind, exe;
        uint64_t size, mtime;
        const char *t;
        size_t tn;

        if (agent_rd_u32(rd, &kind) < 0 || agent_rd_u32(rd, &exe) < 0 ||
            agent_rd_u64(rd, &size) < 0 || agent_rd_u64(rd, &mtime) < 0 ||
            agent_rd_str(rd, AGENT_PATH_MAX, &t, &tn) < 0)
                return proto(why, "truncated stat");
        if (kind > B4_FILE_OTHER || exe > 1)
                return proto(why, "bad stat fields");
        if (tn && (kind != B4_FILE_SYMLINK || !may_link))
                return proto(why, "a link target for what is not a symlink");
        *st = (struct b4_stat){ .kind = (enum b4_file_kind)kind,
                                .size = size,
                                .executable = exe == 1,
                                .mtime_ms = (int64_t)mtime };
        if (kind == B4_FILE_SYMLINK && may_link) {
                st->target = b4_strndup(t, tn);
                if (!st->target)
                        return -ENOMEM;
        }
        return 0;
}

/* A directory entry name: 1..255 bytes, no '/', not "." or "..". */
static bool name_ok(const char *s, size_t n)
{
        if (n == 0 || n > AGENT_NAME_MAX || memchr(s, '/', n))
                return false;
        return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* A walk path: relative, '/'-separated names that are each name_ok(). */
static bool rel_path_ok(const char *s, size_t n)
{
        size_t i = 0;

        if (n == 0)
                return false;
        while (i <= n) {
                const char *e = memchr(s + i, '/', n - i);
                size_t len = e ? (size_t)(e - (s + i)) : n - i;
                if (!name_ok(s + i, len))
                        return false;
                i += len + 1;
        }
        return true;
}

/* ---- per request type ---- */

static int on_done(struct agent_call *c, struct agent_rd *rd, uint64_t expect, const char **why)
{
        uint64_t n;

        if (agent_rd_u64(rd, &n) < 0 || agent_rd_end(rd) < 0)
                return proto(why, "bad DONE");
        if (n != expect)
                return proto(why, "DONE does not match what was sent");
        return end(c, 0);
}

static int feed_read(struct agent_call *c,
                     const struct agent_hdr *h,
                     const unsigned char *p,
                     struct agent_rd *rd,
                     const char **why)
{
        if (h->type == AGENT_DATA) {
                if (h->len > c->max_bytes - c->data.len)
                        return proto(why, "more data than max_bytes");
                return strbuf_add(&c->data, p, h->len) < 0 ? -ENOMEM : 0;
        }
        if (h->type == AGENT_DONE)
                return on_done(c, rd, c->data.len, why);
        return proto(why, "unexpected reply to READ");
}

static int add_name(struct agent_call *c, const char *s, size_t n, const char **why)
{
        if (!name_ok(s, n))
                return proto(why, "bad name");
        if (c->n_names) {
                const char *prev = c->names[c->n_names - 1];
                size_t pn = strlen(prev);
                int k = memcmp(prev, s, pn < n ? pn : n);
                if (k > 0 || (k == 0 && pn >= n))
                        return proto(why, "names not sorted");
        }
        if (c->n_names + 2 > c->names_cap) {
                size_t cap = c->names_cap ? c->names_cap * 2 : 64;
                char **v = b4_reallocarray(c->names, cap, sizeof(char *));
                if (!v)
                        return -ENOMEM;
                c->names = v;
                c->names_cap = cap;
        }
        c->names[c->n_names] = b4_strndup(s, n);
        if (!c->names[c->n_names])
                return -ENOMEM;
        c->names[++c->n_names] = NULL;
        return 0;
}

static int feed_list(struct agent_call *c,
                     const struct agent_hdr *h,
                     struct agent_rd *rd,
                     const char **why)
{
        uint32_t n;
        int r = 0;

        if (h->type == AGENT_DONE)
                return on_done(c, rd, c->n_names, why);
        if (h->type != AGENT_NAMES)
                return proto(why, "unexpected reply to LIST");
        if (agent_rd_u32(rd, &n) < 0 || n > c->max_entries - c->n_names)
                return proto(why, "more names than the cap");
        for (uint32_t i = 0; i < n && r >= 0; i++) {
                const char *s;
                size_t len;
                if (agent_rd_str(rd, AGENT_NAME_MAX, &s, &len) < 0)
                        return proto(why, "truncated name");
                r = add_name(c, s, len, why);
        }
        if (r >= 0 && agent_rd_end(rd) < 0)
                return proto(why, "trailing bytes in NAMES");
        return r;
}

static int feed_walk(struct agent_call *c,
                     const struct agent_hdr *h,
                     struct agent_rd *rd,
                     const char **why)
{
        uint32_t n;

        if (h->type == AGENT_DONE)
                return on_done(c, rd, c->n_entries, why);
        if (h->type != AGENT_ENTRIES)
                return proto(why, "unexpected reply to WALK");
        if (agent_rd_u32(rd, &n) < 0 || n > c->max_entries - c->n_entries)
                return proto(why, "more entries than max_entries");
        if (c->n_entries + n > c->entries_cap) {
                size_t cap = c->entries_cap ? c->entries_cap : 256;
                while (cap < c->n_entries + n)
                        cap *= 2;
                struct b4_walk_entry *v = b4_reallocarray(c->entries, cap, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                c->entries = v;
                c->entries_cap = cap;
        }
        for (uint32_t i = 0; i < n; i++) {
                struct b4_walk_entry *w = &c->entries[c->n_entries];
                const char *s;
                size_t len;
                int r;
                if (agent_rd_str(rd, AGENT_PATH_MAX, &s, &len) < 0 || !rel_path_ok(s, len))
                        return proto(why, "bad walk path");
                c->walk_bytes += len;
                if (c->walk_bytes > AGENT_WALK_BYTES_MAX)
                        return proto(why, "walk paths over the byte cap");
                *w = (struct b4_walk_entry){ .path = b4_strndup(s, len) };
                if (!w->path)
                        return -ENOMEM;
                c->n_entries++;
                r = get_stat(rd, true, &w->st, why);
                if (r < 0)
                        return r;
        }
        return agent_rd_end(rd) < 0 ? proto(why, "trailing bytes in ENTRIES") : 0;
}

/* The current file's bytes are complete: they become its blob. */
static int file_done(struct agent_call *c)
{
        struct b4_blob *b = &c->blobs[c->cur];

        c->cur = c->n_files; /* no current file: more DATA is a breach */
        return strbuf_detach(&c->data, &b->data, &b->len) < 0 ? -ENOMEM : 0;
}

static int feed_batch(struct agent_call *c,
                      const struct agent_hdr *h,
                      const unsigned char *p,
                      struct agent_rd *rd,
                      const char **why)
{
        uint32_t idx, e;
        uint64_t len;

        if (h->type == AGENT_DATA) {
                if (c->cur >= c->n_files || h->len > c->cur_left)
                        return proto(why, "DATA beyond the file's length");
                c->cur_left -= h->len;
                /* grown as bytes arrive (never sized on the agent's word), capped at len */
                if (strbuf_add(&c->data, p, h->len) < 0)
                        return -ENOMEM;
                return c->cur_left ? 0 : file_done(c);
        }
        if (c->cur_left)
                return proto(why, "a file's data is incomplete");
        if (h->type == AGENT_DONE)
                return c->n_seen != c->n_files ? proto(why, "files missing")
                                               : on_done(c, rd, c->n_files, why);
        if (h->type != AGENT_FILE)
                return proto(why, "unexpected reply to READ_BATCH");
        if (agent_rd_u32(rd, &idx) < 0 || agent_rd_u32(rd, &e) < 0 || agent_rd_u64(rd, &len) < 0 ||
            agent_rd_end(rd) < 0)
                return proto(why, "bad FILE");
        if (idx != c->n_seen || idx >= c->n_files)
                return proto(why, "FILE out of order");
        if ((e && len) || len > c->file_max[idx] || len > AGENT_FILE_MAX)
                return proto(why, "FILE length over its cap");
        c->n_seen++;
        c->cur = e ? c->n_files : idx;
        c->cur_left = len;
        if (e) {
                c->blobs[idx].error = agent_errno_filter(AGENT_READ_BATCH, e);
                return 0;
        }
        strbuf_release(&c->data);
        strbuf_init(&c->data, (size_t)len);
        return len ? 0 : file_done(c);
}

static int feed_exec_data(struct agent_call *c,
                          const struct agent_hdr *h,
                          const unsigned char *p,
                          const char **why)
{
        uint16_t s = h->flags & (AGENT_F_STDOUT | AGENT_F_STDERR);
        bool tail = h->flags & AGENT_F_TAIL;
        uint64_t *got = s == AGENT_F_STDOUT ? &c->got_out : &c->got_err;

        if (!c->started || (s != AGENT_F_STDOUT && s != AGENT_F_STDERR) ||
            (h->flags & ~(uint16_t)(AGENT_F_STDOUT | AGENT_F_STDERR | AGENT_F_TAIL)))
                return proto(why, "bad output frame");
        if (h->len > c->output_cap - *got)
                return proto(why, "more output than output_cap");
        *got += h->len;
        capture_add(s == AGENT_F_STDOUT ? &c->out : &c->err, (const char *)p, h->len);
        if (c->on_output)
                c->on_output(s == AGENT_F_STDOUT ? AGENT_STREAM_STDOUT : AGENT_STREAM_STDERR,
                             (const char *)p, h->len, tail, c->userdata);
        return 0;
}

static int feed_exit(struct agent_call *c, struct agent_rd *rd, const char **why)
{
        const uint32_t known = AGENT_EXIT_TIMED_OUT | AGENT_EXIT_CANCELLED | AGENT_EXIT_SIGNALED;
        uint64_t drop_out, drop_err;

        if (!c->started)
                return proto(why, "EXIT before STARTED");
        if (agent_rd_u32(rd, &c->exit_code) < 0 || agent_rd_u32(rd, &c->exit_flags) < 0 ||
            agent_rd_u64(rd, &drop_out) < 0 || agent_rd_u64(rd, &drop_err) < 0 ||
            agent_rd_u64(rd, &c->duration_ms) < 0 || agent_rd_u64(rd, &c->cpu_us) < 0 ||
            agent_rd_u64(rd, &c->max_rss) < 0 || agent_rd_end(rd) < 0)
                return proto(why, "bad EXIT");
        if (c->exit_code > 255 || (c->exit_flags & ~known) ||
            ((c->exit_flags & AGENT_EXIT_TIMED_OUT) && c->exit_code != 124))
                return proto(why, "bad EXIT fields");
        if ((drop_out && c->got_out < c->output_cap) || (drop_err && c->got_err < c->output_cap))
                return proto(why, "dropped output below the cap");
        capture_skip(&c->out, drop_out);
        capture_skip(&c->err, drop_err);
        return end(c, 0);
}

static int feed_exec(struct agent_call *c,
                     const struct agent_hdr *h,
                     const unsigned char *p,
                     struct agent_rd *rd,
                     const char **why)
{
        switch (h->type) {
        case AGENT_STARTED:
                if (c->started || agent_rd_u32(rd, &c->pid) < 0 || agent_rd_end(rd) < 0)
                        return proto(why, "bad STARTED");
                c->started = true;
                return 0;
        case AGENT_DATA:
                return feed_exec_data(c, h, p, why);
        case AGENT_EXIT:
                return feed_exit(c, rd, why);
        default:
                return proto(why, "unexpected reply to EXEC");
        }
}

static int feed_error(struct agent_call *c, struct agent_rd *rd, const char **why)
{
        uint32_t e;
        const char *msg;
        size_t n;

        if (agent_rd_u32(rd, &e) < 0 || agent_rd_str(rd, AGENT_MSG_MAX, &msg, &n) < 0 ||
            agent_rd_end(rd) < 0)
                return proto(why, "bad ERROR");
        return end(c, agent_errno_filter(c->type, e));
}

static int feed_single(struct agent_call *c,
                       const struct agent_hdr *h,
                       struct agent_rd *rd,
                       const char **why)
{
        const char *s;
        size_t n;
        int r;

        switch (c->type) {
        case AGENT_LSTAT:
        case AGENT_STAT:
                if (h->type != AGENT_STATR)
                        return proto(why, "unexpected reply to STAT");
                r = get_stat(rd, c->type == AGENT_LSTAT, &c->st, why);
                if (r >= 0 && agent_rd_end(rd) < 0)
                        r = proto(why, "trailing bytes in STAT");
                return r < 0 ? r : end(c, 0);
        case AGENT_REALPATH:
                if (h->type != AGENT_PATH || agent_rd_str(rd, AGENT_PATH_MAX, &s, &n) < 0 ||
                    agent_rd_end(rd) < 0 || n == 0 || s[0] != '/')
                        return proto(why, "bad PATH");
                c->path = b4_strndup(s, n);
                return c->path ? end(c, 0) : -ENOMEM;
        default:
                if (h->type != AGENT_OK || h->len != 0)
                        return proto(why, "unexpected reply");
                return end(c, 0);
        }
}

int agent_call_feed(struct agent_call *c,
                    const struct agent_hdr *h,
                    const unsigned char *payload,
                    const char **why)
{
        struct agent_rd rd = { .p = payload, .left = h->len };

        *why = NULL;
        if (c->done)
                return proto(why, "a reply after the last one");
        if (h->flags && !(c->type == AGENT_EXEC && h->type == AGENT_DATA))
                return proto(why, "unknown frame flags");
        if (h->type == AGENT_ERROR)
                return feed_error(c, &rd, why);
        switch (c->type) {
        case AGENT_READ:
                return feed_read(c, h, payload, &rd, why);
        case AGENT_LIST:
                return feed_list(c, h, &rd, why);
        case AGENT_WALK:
                return feed_walk(c, h, &rd, why);
        case AGENT_READ_BATCH:
                return feed_batch(c, h, payload, &rd, why);
        case AGENT_EXEC:
                return feed_exec(c, h, payload, &rd, why);
        default:
                return feed_single(c, h, &rd, why);
        }
}
