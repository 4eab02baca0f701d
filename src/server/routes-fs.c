/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handle's filesystem: POST /threads/{id}/fs/{op} with a JSON body {path, ...}
 * (docs/http-api.md, "Filesystem"). Every op answers to thread.run, as the tools do; the
 * changes (write, mkdir, remove, touch) have a route of their own each, before the reads'
 * (stat, lstat, realPath, list, walk, read), whose refusal is a read's (404).
 *
 * Order: access policy and thread -> body (reads: server.maxBodyBytes, changes:
 * server.maxToolBodyBytes) -> fields (400) -> the thread's run slot (409 run_in_flight) and
 * its sandbox -> the tools layer's typed operation (b4_tools_fs_*: the path jail and the
 * permission gates, b4box/tools.h) -> the reply, bounded by the operation's own bound.
 * Every failure is a named code (fs_refusals below), the one table of them.
 *
 * The reads are shared with a reader's routes (routes-readers.c): fs_route_read() parses and
 * answers the same way over whatever tools context its struct fs_host opens.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "base/alloc.h"
#include "base/base64.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "server-internal.h"

#define FS_PATH_MAX_BYTES 4096  /* PATH_MAX: a longer path cannot name anything */
#define FS_PRUNE_MAX      64    /* as inspect's lists */
#define FS_NAME_MAX_BYTES 255   /* NAME_MAX */
#define FS_WALK_MAX       10000 /* the inspection bound (reference maxEntries) */

enum fs_encoding {
        FS_UTF8 = 0,
        FS_BASE64,
};

/* One request's fields; what they point at is borrowed from the body. */
struct fs_call {
        const char *path;
        const struct jv *body;
        enum fs_encoding encoding;
        uint64_t offset, length; /* read; length UINT64_MAX = to the end (bounded) */
        size_t max_entries;      /* walk */
        char **prune;            /* walk; owned */
        char *data;              /* write: the decoded bytes when base64; owned */
        const char *content;     /* write: the bytes */
        size_t content_len;
};

static void fs_call_clear(struct fs_call *q)
{
        strv_free(q->prune);
        free(q->data);
}

typedef int fs_run_fn(struct b4_tools *t,
                      const struct fs_call *q,
                      struct jv **ret,
                      struct b4_error *err);
typedef bool fs_parse_fn(struct request *rq, struct fs_call *q);

struct fs_op {
        const char *name;
        bool change;              /* on its own route, thread.run only */
        const char *const *known; /* the body's fields */
        fs_parse_fn *parse;       /* the fields beyond path; NULL = none */
        fs_run_fn *run;
};

/* ---- replies ---- */

static const char *kind_name(enum b4_file_kind k)
{
        switch (k) {
        case B4_FILE_REGULAR:
                return "file";
        case B4_FILE_DIRECTORY:
                return "directory";
        case B4_FILE_SYMLINK:
                return "symlink";
        case B4_FILE_OTHER:
                break;
        }
        return "other";
}

/* @key: @s when it is UTF-8, else @key + "Base64": its bytes (names are bytes on Linux). */
static int set_name(struct jv *o, const char *key, const char *s)
{
        cleanup_free char *b64 = NULL, *k64 = NULL;
        size_t n = 0;

        if (utf8_is_valid(s, strlen(s)))
                return jv_object_set_new(o, key, jv_string_new(s));
        if (base64_encode(s, strlen(s), &b64, &n) < 0 || b4_asprintf(&k64, "%sBase64", key) < 0)
                return -ENOMEM;
        return jv_object_set_new(o, k64, jv_string_new(b64));
}

/* The stat fields every kind of answer shares. Size and executable are a regular file's
 * (0 and false otherwise: a directory's size is its filesystem's, not the workspace's). */
static struct jv *stat_json(const struct b4_stat *st)
{
        bool file = st->kind == B4_FILE_REGULAR;

        return jv_pack("{s:s, s:I, s:b, s:I, s:s*}", "kind", kind_name(st->kind), "size",
                       file ? (int64_t)st->size : 0, "executable", file && st->executable,
                       "mtimeMs", (int64_t)st->mtime_ms, "target", st->target);
}

/* ---- the operations ---- */

static int run_stat_as(struct b4_tools *t,
                       const struct fs_call *q,
                       bool follow,
                       struct jv **ret,
                       struct b4_error *err)
{
        struct b4_stat st = { 0 };
        int r = b4_tools_fs_stat(t, q->path, follow, &st, err);

        if (r < 0)
                return r;
        *ret = stat_json(&st);
        b4_stat_clear(&st);
        return *ret && jv_object_set_new(*ret, "path", jv_string_new(q->path)) >= 0 ? 0 : -ENOMEM;
}

static int run_stat(struct b4_tools *t,
                    const struct fs_call *q,
                    struct jv **ret,
                    struct b4_error *err)
{
        return run_stat_as(t, q, true, ret, err);
}

static int run_lstat(struct b4_tools *t,
                     const struct fs_call *q,
                     struct jv **ret,
                     struct b4_error *err)
{
        return run_stat_as(t, q, false, ret, err);
}

static int run_realpath(struct b4_tools *t,
                        const struct fs_call *q,
                        struct jv **ret,
                        struct b4_error *err)
{
        cleanup_free char *real = NULL;
        int r = b4_tools_fs_realpath(t, q->path, &real, err);

        if (r < 0)
                return r;
        *ret = jv_object_new();
        return *ret && set_name(*ret, "path", real) >= 0 ? 0 : -ENOMEM;
}

static int run_list(struct b4_tools *t,
                    const struct fs_call *q,
                    struct jv **ret,
                    struct b4_error *err)
{
        struct b4_tools_dirent *d = NULL;
        cleanup_(jv_unrefp) struct jv *a = NULL;
        size_t n = 0;
        int r = b4_tools_fs_list(t, q->path, &d, &n, err);

        if (r < 0)
                return r;
        a = jv_array_new();
        for (size_t i = 0; a && r >= 0 && i < n; i++) {
                struct jv *e = jv_pack("{s:s}", "kind", kind_name(d[i].kind));
                r = e ? set_name(e, "name", d[i].name) : -ENOMEM;
                r = r >= 0 ? jv_array_append_new(a, e) : (jv_unref(e), r);
        }
        b4_tools_dirents_free(d, n);
        if (!a || r < 0)
                return -ENOMEM;
        *ret = jv_pack("{s:s, s:O}", "path", q->path, "entries", a);
        return *ret ? 0 : -ENOMEM;
}

static int run_walk(struct b4_tools *t,
                    const struct fs_call *q,
                    struct jv **ret,
                    struct b4_error *err)
{
        struct b4_walk_entry *w = NULL;
        cleanup_(jv_unrefp) struct jv *a = NULL;
        size_t n = 0;
        int r = b4_tools_fs_walk(t, q->path, q->max_entries, q->prune, &w, &n, err);

        if (r < 0)
                return r;
        a = jv_array_new();
        for (size_t i = 0; a && r >= 0 && i < n; i++) {
                struct jv *e = stat_json(&w[i].st);
                r = e ? set_name(e, "path", w[i].path) : -ENOMEM;
                r = r >= 0 ? jv_array_append_new(a, e) : (jv_unref(e), r);
        }
        b4_walk_entries_free(w, n);
        if (!a || r < 0)
                return -ENOMEM;
        *ret = jv_pack("{s:s, s:O}", "path", q->path, "entries", a);
        return *ret ? 0 : -ENOMEM;
}

static int read_content(const struct fs_call *q,
                        const char *data,
                        size_t len,
                        struct jv **ret,
                        struct b4_error *err)
{
        cleanup_free char *b64 = NULL;
        size_t n = 0;

        if (q->encoding == FS_UTF8) {
                if (!utf8_is_valid(data, len))
                        return b4_error_set(err, -EILSEQ,
                                            "read %s: the bytes are not UTF-8; ask for "
                                            "encoding \"base64\"",
                                            q->path);
                *ret = jv_stringn_new(data, len);
        } else {
                if (base64_encode(data, len, &b64, &n) < 0)
                        return -ENOMEM;
                *ret = jv_stringn_new(b64, n);
        }
        return *ret ? 0 : -ENOMEM;
}

static int run_read(struct b4_tools *t,
                    const struct fs_call *q,
                    struct jv **ret,
                    struct b4_error *err)
{
        cleanup_free char *data = NULL;
        struct jv *content = NULL;
        uint64_t size = 0;
        size_t len = 0;
        int r = b4_tools_fs_read(t, q->path, q->offset, q->length, &data, &len, &size, err);

        if (r >= 0)
                r = read_content(q, data, len, &content, err);
        if (r < 0)
                return r;
        *ret = jv_pack("{s:s, s:I, s:I, s:I, s:b, s:s, s:o}", "path", q->path, "offset",
                       (int64_t)q->offset, "length", (int64_t)len, "size", (int64_t)size, "eof",
                       q->offset + len >= size, "encoding",
                       q->encoding == FS_UTF8 ? "utf8" : "base64", "content", content);
        return *ret ? 0 : -ENOMEM;
}

static int run_write(struct b4_tools *t,
                     const struct fs_call *q,
                     struct jv **ret,
                     struct b4_error *err)
{
        int r = b4_tools_fs_write(t, q->path, q->content, q->content_len, err);

        if (r < 0)
                return r;
        *ret = jv_pack("{s:s, s:I}", "path", q->path, "bytes", (int64_t)q->content_len);
        return *ret ? 0 : -ENOMEM;
}

static int path_only(struct jv **ret, const struct fs_call *q, int r)
{
        if (r < 0)
                return r;
        *ret = jv_pack("{s:s}", "path", q->path);
        return *ret ? 0 : -ENOMEM;
}

static int run_mkdir(struct b4_tools *t,
                     const struct fs_call *q,
                     struct jv **ret,
                     struct b4_error *err)
{
        return path_only(ret, q, b4_tools_fs_mkdir(t, q->path, err));
}

static int run_remove(struct b4_tools *t,
                      const struct fs_call *q,
                      struct jv **ret,
                      struct b4_error *err)
{
        return path_only(ret, q, b4_tools_fs_remove(t, q->path, err));
}

static int run_touch(struct b4_tools *t,
                     const struct fs_call *q,
                     struct jv **ret,
                     struct b4_error *err)
{
        return path_only(ret, q, b4_tools_fs_touch(t, q->path, err));
}

/* ---- the fields ---- */

static bool bad(struct request *rq, const char *msg)
{
        reply_error(rq, 400, "invalid_request", "%s", msg);
        return false;
}

static bool encoding_field(struct request *rq, struct fs_call *q)
{
        const struct jv *v = jv_object_get(q->body, "encoding");
        const char *s = jv_string(v);

        if (!v)
                return true;
        if (s && strcmp(s, "utf8") == 0)
                q->encoding = FS_UTF8;
        else if (s && strcmp(s, "base64") == 0)
                q->encoding = FS_BASE64;
        else
                return bad(rq, "encoding must be \"utf8\" or \"base64\"");
        return true;
}

/* An optional integer field from 0 to @max. */
static bool number_field(
        struct request *rq, const struct fs_call *q, const char *key, uint64_t max, uint64_t *ret)
{
        const struct jv *v = jv_object_get(q->body, key);

        if (!v)
                return true;
        if (!jv_is_safe_integer(v) || jv_integer(v) < 0 || (uint64_t)jv_integer(v) > max) {
                reply_error(rq, 400, "invalid_request", "%s must be an integer from 0 to %llu", key,
                            (unsigned long long)max);
                return false;
        }
        *ret = (uint64_t)jv_integer(v);
        return true;
}

static bool parse_read(struct request *rq, struct fs_call *q)
{
        q->length = UINT64_MAX;
        return encoding_field(rq, q) &&
               number_field(rq, q, "offset", (uint64_t)INT64_MAX, &q->offset) &&
               number_field(rq, q, "length", B4_TOOLS_FS_READ_MAX, &q->length);
}

static bool parse_write(struct request *rq, struct fs_call *q)
{
        const struct jv *c = jv_object_get(q->body, "content");
        int r;

        if (!jv_is_string(c))
                return bad(rq, "content must be a string");
        if (!encoding_field(rq, q))
                return false;
        if (q->encoding == FS_UTF8) {
                q->content = jv_string(c);
                q->content_len = jv_string_length(c);
                return true;
        }
        r = base64_decode(jv_string(c), jv_string_length(c), &q->data, &q->content_len);
        if (r == -ENOMEM) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return false;
        }
        if (r < 0)
                return bad(rq, "content is not canonical base64 (padded, no whitespace)");
        q->content = q->data;
        return true;
}

static bool prune_field(struct request *rq, struct fs_call *q)
{
        const struct jv *v = jv_object_get(q->body, "prune");
        size_t n = jv_array_size(v);

        if (!v)
                return true;
        if (!jv_is_array(v) || n > FS_PRUNE_MAX)
                goto bad;
        for (size_t i = 0; i < n; i++) {
                const struct jv *s = jv_array_get(v, i);
                const char *name = jv_string(s);
                if (!name || !*name || jv_string_length(s) != strlen(name) ||
                    strlen(name) > FS_NAME_MAX_BYTES || strchr(name, '/'))
                        goto bad;
                if (strv_extend(&q->prune, name) < 0) {
                        reply_error(rq, 500, "internal_error", "out of memory");
                        return false;
                }
        }
        return true;
bad:
        reply_error(rq, 400, "invalid_request",
                    "prune must be an array of at most %d names (non-empty, no '/', at most %d "
                    "bytes)",
                    FS_PRUNE_MAX, FS_NAME_MAX_BYTES);
        return false;
}

static bool parse_walk(struct request *rq, struct fs_call *q)
{
        uint64_t max = FS_WALK_MAX;

        if (!number_field(rq, q, "maxEntries", FS_WALK_MAX, &max))
                return false;
        q->max_entries = (size_t)max;
        return prune_field(rq, q);
}

static const char *const keys_path[] = { "path", NULL };
static const char *const keys_read[] = { "path", "offset", "length", "encoding", NULL };
static const char *const keys_write[] = { "path", "content", "encoding", NULL };
static const char *const keys_walk[] = { "path", "maxEntries", "prune", NULL };

static const struct fs_op fs_ops[] = {
        { "stat", false, keys_path, NULL, run_stat },
        { "lstat", false, keys_path, NULL, run_lstat },
        { "realPath", false, keys_path, NULL, run_realpath },
        { "list", false, keys_path, NULL, run_list },
        { "walk", false, keys_walk, parse_walk, run_walk },
        { "read", false, keys_read, parse_read, run_read },
        { "write", true, keys_write, parse_write, run_write },
        { "mkdir", true, keys_path, NULL, run_mkdir },
        { "remove", true, keys_path, NULL, run_remove },
        { "touch", true, keys_path, NULL, run_touch },
};

static const struct fs_op *find_op(const char *name, bool change)
{
        for (size_t i = 0; name && i < ELEMENTSOF(fs_ops); i++)
                if (strcmp(fs_ops[i].name, name) == 0 && fs_ops[i].change == change)
                        return &fs_ops[i];
        return NULL;
}

static bool parse_call(struct request *rq, const struct fs_op *op, struct fs_call *q)
{
        const struct jv *p = jv_object_get(q->body, "path");

        if (!request_known_keys(rq, q->body, op->known))
                return false;
        q->path = jv_string(p);
        if (!q->path || !*q->path || jv_string_length(p) != strlen(q->path) ||
            strlen(q->path) > FS_PATH_MAX_BYTES) {
                reply_error(rq, 400, "invalid_path",
                            "path must be a non-empty string without NUL of at most %d bytes",
                            FS_PATH_MAX_BYTES);
                return false;
        }
        return !op->parse || op->parse(rq, q);
}

/* ---- refusals: the one table from the tools' errno to a status and a code ---- */

static const struct {
        int error;
        unsigned status;
        const char *code;
} fs_refusals[] = {
        { -EINVAL, 409, "not_regular_file" },
        { -ENAMETOOLONG, 400, "invalid_path" },
        { -ENOENT, 404, "not_found" },
        { -EISDIR, 409, "is_directory" },
        { -ENOTDIR, 409, "not_directory" },
        { -ENOTEMPTY, 409, "not_empty" },
        { -EEXIST, 409, "exists" },
        { -ELOOP, 403, "path_refused" },
        { -EXDEV, 403, "path_refused" },
        { -EAGAIN, 403, "permission_required" },
        { -EACCES, 403, "permission_denied" },
        { -EPERM, 403, "permission_denied" },
        { -EROFS, 403, "read_only" },
        { -EFBIG, 413, "too_large" },
        { -E2BIG, 413, "too_large" },
        { -EILSEQ, 422, "not_utf8" },
        { -ENOSPC, 507, "no_space" },
        { -EOPNOTSUPP, 501, "not_supported" },
};

static void refuse(struct request *rq, int r, const struct b4_error *err)
{
        const char *msg = err->msg[0] ? err->msg : strerror(-r);

        if (r == -EACCES && err->code == B4_CODE_TOOL_DENIED) {
                reply_error(rq, 403, "permission_denied", "%s", msg);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(fs_refusals); i++)
                if (fs_refusals[i].error == r) {
                        reply_error(rq, fs_refusals[i].status, fs_refusals[i].code, "%s", msg);
                        return;
                }
        if (r == -ENOMEM)
                reply_error(rq, 500, "internal_error", "out of memory");
        else
                reply_b4_error(rq, err);
}

/* ---- the route ---- */

/* Run @op on the tools @host opens; reply. */
static void serve(struct request *rq,
                  const struct fs_op *op,
                  const struct fs_call *q,
                  const struct fs_host *host)
{
        struct b4_error err = { 0 };
        struct b4_tools *t = NULL;
        struct jv *doc = NULL;
        void *held = NULL;
        int r;

        if (!host->open(rq, host->ctx, &t, &held))
                return;
        r = op->run(t, q, &doc, &err);
        b4_tools_free(t);
        host->close(host->ctx, held);
        if (r < 0)
                refuse(rq, r, &err);
        else
                reply_json(rq, 200, doc);
}

static void route_fs_op(struct request *rq, const struct fs_op *op, const struct fs_host *host)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        struct fs_call q = { 0 };

        body = request_json_object(rq);
        if (!body)
                return;
        q.body = body;
        if (parse_call(rq, op, &q))
                serve(rq, op, &q, host);
        fs_call_clear(&q);
}

static void unknown_op(struct request *rq, const char *name, bool reads_only)
{
        reply_error(rq, 404, "unknown_fs_op", "unknown filesystem operation '%s' (known: %s)",
                    name ? name : "",
                    reads_only ? "stat, lstat, realPath, list, walk, read"
                               : "stat, lstat, realPath, list, walk, read, write, mkdir, "
                                 "remove, touch");
}

void fs_route_read(struct request *rq, const char *name, const struct fs_host *host)
{
        const struct fs_op *op = find_op(name, false);

        if (!op)
                unknown_op(rq, name, host->reads_only);
        else
                route_fs_op(rq, op, host);
}

/* The handle's own: the thread's run slot and its sandbox, per call. */
static bool run_open(struct request *rq, void *ctx, struct b4_tools **ret, void **held)
{
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        int r;

        (void)ctx;
        r = b4_runtime_run_begin(rq->srv->opts.runtime, rq->thread.id, &run, &err);
        if (r >= 0)
                r = b4_run_tools(run, ret, &err);
        if (r < 0) {
                b4_run_end(run);
                reply_b4_error(rq, &err);
                return false;
        }
        *held = run;
        return true;
}

static void run_close(void *ctx, void *held)
{
        (void)ctx;
        b4_run_end(held);
}

static const struct fs_host run_host = { .open = run_open, .close = run_close };

void route_fs(struct request *rq)
{
        fs_route_read(rq, rq->params[1], &run_host);
}

void route_fs_change(struct request *rq)
{
        const char *dot = strrchr(rq->route->name, '.');
        const struct fs_op *op = find_op(dot ? dot + 1 : NULL, true);

        if (!op)
                unknown_op(rq, dot ? dot + 1 : NULL, false);
        else
                route_fs_op(rq, op, &run_host);
}
