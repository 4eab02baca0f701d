/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dispatch for the provider contract: argument checks, optional-member probing, reference
 * counting of handles, the generic fallbacks (walk, batched reads) for backends that only
 * implement the required filesystem members, and the lifecycle every provider shares
 * (lifecycle.h): acquire/release/destroy exclusive on the thread's gate, every handle
 * operation shared with recover-and-retry-once, the reference's texts (messages.h).
 */

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "b4box/provider-impl.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "core/lifecycle.h"
#include "core/messages.h"

void b4_stat_clear(struct b4_stat *st)
{
        free(st->target);
        *st = (struct b4_stat){ 0 };
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

void b4_exec_result_clear(struct b4_exec_result *r)
{
        free(r->out);
        free(r->errout);
        *r = (struct b4_exec_result){ 0 };
}

static int unsupported(struct b4_error *err, const char *op)
{
        return b4_error_set(err, -EOPNOTSUPP, "%s is not supported here", op);
}

/* The member exists and the reader (if @fs is one) is open. */
static int fs_ready(struct b4_fs *fs, bool has, const char *op, struct b4_error *err)
{
        if (!fs || !has)
                return unsupported(err, op);
        if (fs->rd && atomic_load(&fs->rd->closed))
                return msg_reader_closed(err, fs->rd->thread_id);
        return 0;
}

/* Run @call (an expression over @fs) under @fs's handle lease, retried once after a
 * recovery (lifecycle.h); readers and bare filesystems run it once. */
#define FS_RUN(fs, err, call)                \
 (                                           \
         {                                   \
   struct attempt a_ = { .sb = (fs)->sb };   \
   int r_;                                   \
   do {                                      \
    r_ = attempt_begin(&a_, (err));          \
    if (r_ >= 0)                             \
     r_ = (call);                            \
   } while (attempt_again(&a_, &r_, (err))); \
   r_;                                       \
         })

#define FS_CALL(fs, member, err, ...)                       \
 (fs_ready((fs), (fs) && (fs)->ops->member, #member, (err)) \
          ?: FS_RUN((fs), (err), (fs)->ops->member((fs), __VA_ARGS__, (err))))

bool b4_fs_can_read_tree(const struct b4_fs *fs)
{
        return fs && fs->ops && fs->ops->lstat && fs->ops->list_dir && fs->ops->read_file;
}

bool b4_fs_has_read_range(const struct b4_fs *fs)
{
        return fs && fs->ops && fs->ops->read_range;
}

int b4_fs_read_file_flags(struct b4_fs *fs,
                          const char *path,
                          unsigned flags,
                          uint64_t max_bytes,
                          char **ret,
                          size_t *ret_len,
                          struct b4_error *err)
{
        int r = FS_CALL(fs, read_file, err, path, flags, max_bytes, ret, ret_len);

        return r == -EFBIG ? msg_file_too_large(err, path, max_bytes) : r;
}

int b4_fs_read_file(struct b4_fs *fs,
                    const char *path,
                    uint64_t max_bytes,
                    char **ret,
                    size_t *ret_len,
                    struct b4_error *err)
{
        return b4_fs_read_file_flags(fs, path, 0, max_bytes, ret, ret_len, err);
}

/* The fallback of a provider without read_range: the whole file (bounded), then the slice. */
static int read_range_whole(struct b4_fs *fs,
                            const char *path,
                            unsigned flags,
                            uint64_t offset,
                            uint64_t length,
                            char **ret,
                            size_t *ret_len,
                            uint64_t *ret_size,
                            struct b4_error *err)
{
        cleanup_free char *data = NULL;
        size_t len = 0, n;
        int r;

        r = FS_CALL(fs, read_file, err, path, flags, B4_FS_RANGE_FALLBACK_MAX, &data, &len);
        if (r == -EFBIG)
                return b4_error_set(err, r,
                                    "readRange %s: no ranged read here and the file exceeds %u "
                                    "bytes",
                                    path, B4_FS_RANGE_FALLBACK_MAX);
        if (r < 0)
                return r;
        n = offset >= len ? 0 : len - (size_t)offset;
        if ((uint64_t)n > length)
                n = (size_t)length;
        if (n > 0 && offset > 0)
                memmove(data, data + offset, n);
        data[n] = '\0';
        *ret = TAKE_PTR(data);
        *ret_len = n;
        *ret_size = len;
        return 0;
}

int b4_fs_read_range_flags(struct b4_fs *fs,
                           const char *path,
                           unsigned flags,
                           uint64_t offset,
                           uint64_t length,
                           char **ret,
                           size_t *ret_len,
                           uint64_t *ret_size,
                           struct b4_error *err)
{
        if (fs && fs->ops && !fs->ops->read_range)
                return read_range_whole(fs, path, flags, offset, length, ret, ret_len, ret_size,
                                        err);
        return FS_CALL(fs, read_range, err, path, flags, offset, length, ret, ret_len, ret_size);
}

int b4_fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return FS_CALL(fs, lstat, err, path, ret);
}

int b4_fs_stat_flags(struct b4_fs *fs,
                     const char *path,
                     unsigned flags,
                     struct b4_stat *ret,
                     struct b4_error *err)
{
        return FS_CALL(fs, stat, err, path, flags, ret);
}

int b4_fs_stat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return b4_fs_stat_flags(fs, path, 0, ret, err);
}

int b4_fs_list_dir_flags(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret_names, struct b4_error *err)
{
        int r = FS_CALL(fs, list_dir, err, path, flags, ret_names);

        return r == -E2BIG ? msg_too_many_names(err, path) : r;
}

int b4_fs_list_dir(struct b4_fs *fs, const char *path, char ***ret_names, struct b4_error *err)
{
        return b4_fs_list_dir_flags(fs, path, 0, ret_names, err);
}

int b4_fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        return FS_CALL(fs, realpath, err, path, ret);
}

int b4_fs_write_file_flags(struct b4_fs *fs,
                           const char *path,
                           unsigned flags,
                           const void *data,
                           size_t len,
                           struct b4_error *err)
{
        return FS_CALL(fs, write_file, err, path, flags, data, len);
}

int b4_fs_write_file(
        struct b4_fs *fs, const char *path, const void *data, size_t len, struct b4_error *err)
{
        return b4_fs_write_file_flags(fs, path, 0, data, len, err);
}

int b4_fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        return FS_CALL(fs, mkdir_p, err, path);
}

int b4_fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        return FS_CALL(fs, remove, err, path);
}

int b4_fs_touch_flags(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        return FS_CALL(fs, touch, err, path, flags);
}

int b4_fs_touch(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        return b4_fs_touch_flags(fs, path, 0, err);
}

int b4_fs_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err)
{
        return FS_CALL(fs, symlink, err, target, path);
}

int b4_fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err)
{
        return FS_CALL(fs, chmod, err, path, mode);
}

/* Generic walk over list_dir + lstat, for backends without a batched one. */
struct walk_state {
        struct b4_fs *fs;
        size_t max;
        struct b4_walk_entry *v;
        size_t n;
};

static int walk_push(struct walk_state *w, const char *rel, struct b4_stat *st)
{
        struct b4_walk_entry *nv;

        if (w->n >= w->max)
                return -E2BIG;
        nv = b4_reallocarray(w->v, w->n + 1, sizeof(*nv));
        if (!nv)
                return -ENOMEM;
        w->v = nv;
        nv[w->n].path = b4_strdup(rel);
        if (!nv[w->n].path)
                return -ENOMEM;
        nv[w->n].st = *st;
        *st = (struct b4_stat){ 0 };
        w->n++;
        return 0;
}

static int walk_dir(struct walk_state *w,
                    const char *abs,
                    const char *rel,
                    char *const *prune,
                    struct b4_error *err);

static int walk_child(struct walk_state *w,
                      const char *abs,
                      const char *rel,
                      const char *name,
                      char *const *prune,
                      struct b4_error *err)
{
        cleanup_free char *cabs = NULL, *crel = NULL;
        struct b4_stat st = { 0 };
        int r;

        if (b4_asprintf(&cabs, "%s/%s", strcmp(abs, "/") == 0 ? "" : abs, name) < 0 ||
            b4_asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", name) < 0)
                return -ENOMEM;
        r = w->fs->ops->lstat(w->fs, cabs, &st, err);
        if (r < 0)
                return r;
        bool is_dir = st.kind == B4_FILE_DIRECTORY;
        r = walk_push(w, crel, &st);
        b4_stat_clear(&st);
        if (r < 0)
                return r;
        if (!is_dir || (!*rel && strv_contains(prune, name)))
                return 0;
        return walk_dir(w, cabs, crel, NULL, err);
}

static int walk_dir(struct walk_state *w,
                    const char *abs,
                    const char *rel,
                    char *const *prune,
                    struct b4_error *err)
{
        cleanup_strv char **names = NULL;
        int r;

        r = w->fs->ops->list_dir(w->fs, abs, 0, &names, err);
        if (r < 0)
                return r;
        STRV_FOREACH (name, names) {
                r = walk_child(w, abs, rel, *name, prune, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int walk_raw(struct b4_fs *fs,
                    const char *path,
                    size_t max_entries,
                    char *const *prune,
                    struct b4_walk_entry **ret,
                    size_t *ret_n,
                    struct b4_error *err)
{
        struct walk_state w = { .fs = fs, .max = max_entries };
        int r;

        if (fs->ops->walk)
                return fs->ops->walk(fs, path, max_entries, prune, ret, ret_n, err);
        r = walk_dir(&w, path, "", prune, err);
        if (r < 0) {
                b4_walk_entries_free(w.v, w.n);
                return r;
        }
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

int b4_fs_walk(struct b4_fs *fs,
               const char *path,
               size_t max_entries,
               char *const *prune,
               struct b4_walk_entry **ret,
               size_t *ret_n,
               struct b4_error *err)
{
        int r;

        if (!fs || !path || path[0] != '/')
                return b4_error_set(err, -EINVAL, "walk needs an absolute path");
        r = fs_ready(fs, true, "walk", err);
        if (r >= 0)
                r = FS_RUN(fs, err, walk_raw(fs, path, max_entries, prune, ret, ret_n, err));
        return r == -E2BIG ? msg_entries_limit(err) : r;
}

static int read_files_raw(struct b4_fs *fs,
                          const struct b4_read_req *reqs,
                          size_t n,
                          struct b4_blob **ret,
                          struct b4_error *err)
{
        struct b4_blob *b;

        if (fs->ops->read_files)
                return fs->ops->read_files(fs, reqs, n, ret, err);
        b = b4_calloc(n ? n : 1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct b4_error e = { 0 };
                int r = fs->ops->read_file(fs, reqs[i].path, 0, reqs[i].max_bytes, &b[i].data,
                                           &b[i].len, &e);
                if (r == -ENOMEM) {
                        b4_blobs_free(b, n);
                        return r;
                }
                b[i].error = r < 0 ? r : 0;
        }
        *ret = b;
        return 0;
}

int b4_fs_read_files(struct b4_fs *fs,
                     const struct b4_read_req *reqs,
                     size_t n,
                     struct b4_blob **ret,
                     struct b4_error *err)
{
        if (!fs)
                return -EINVAL;
        return fs_ready(fs, true, "read_files", err)
                       ?: FS_RUN(fs, err, read_files_raw(fs, reqs, n, ret, err));
}

/* ---- handles ---- */

int b4_sandbox_init(struct b4_sandbox *sb,
                    const struct b4_sandbox_ops *ops,
                    const struct b4_fs_ops *fs_ops,
                    const char *thread_id)
{
        sb->core = b4_calloc(1, sizeof(*sb->core));
        sb->thread_id = b4_strdup(thread_id);
        sb->workspace_root = b4_strdup(B4_WORKSPACE_ROOT);
        if (!sb->core || !sb->thread_id || !sb->workspace_root) {
                free(sb->core);
                free(sb->thread_id);
                free(sb->workspace_root);
                return -ENOMEM;
        }
        sb->core->ops = ops;
        atomic_init(&sb->core->refs, 1);
        sb->fs = (struct b4_fs){ .ops = fs_ops, .root = sb->workspace_root, .sb = sb };
        return 0;
}

struct b4_sandbox *b4_sandbox_ref(struct b4_sandbox *sb)
{
        if (sb)
                atomic_fetch_add(&sb->core->refs, 1);
        return sb;
}

struct b4_sandbox *b4_sandbox_unref(struct b4_sandbox *sb)
{
        struct b4_sandbox_core *core;
        char *thread_id, *root;

        if (!sb || atomic_fetch_sub(&sb->core->refs, 1) != 1)
                return NULL;
        core = sb->core;
        thread_id = sb->thread_id;
        root = sb->workspace_root;
        core->ops->free(sb); /* may still read thread_id */
        b4_entry_unref(core->entry);
        free(core);
        free(thread_id);
        free(root);
        return NULL;
}

struct b4_entry *b4_sandbox_entry(struct b4_sandbox *sb)
{
        return sb->core->entry;
}

struct b4_exec_bounds b4_sandbox_exec_bounds(const struct b4_sandbox *sb)
{
        return sb->core->bounds;
}

struct b4_fs *b4_sandbox_fs(struct b4_sandbox *sb)
{
        return &sb->fs;
}

/* One attempt: whole under the lease, or its start only (exec_start/exec_finish). */
static int exec_raw(struct attempt *a,
                    struct b4_sandbox *sb,
                    const struct b4_exec_req *req,
                    struct b4_exec_result *ret,
                    struct b4_error *err)
{
        const struct b4_sandbox_ops *ops = sb->core->ops;
        void *started = NULL;
        int r;

        if (!ops->exec_start)
                return ops->exec(sb, req, ret, err);
        r = ops->exec_start(sb, req, &started, err);
        attempt_unlease(a);
        return r < 0 ? r : ops->exec_finish(sb, started, ret, err);
}

/* Core's side of b4_exec_req.on_output: counts what the provider streamed, so a provider
 * that never calls it gets its captured output delivered at the end (exec_stream_rest()). */
struct exec_tap {
        b4_exec_output_fn *fn;
        void *userdata;
        uint64_t streamed;
};

static void exec_tap_output(void *userdata, enum b4_exec_stream stream, const char *p, size_t n)
{
        struct exec_tap *tap = userdata;

        if (n == 0)
                return;
        tap->streamed += n;
        tap->fn(tap->userdata, stream, p, n);
}

/* After the command: what the stream has not carried yet. A provider that streamed nothing
 * gets its capture sent whole; the timeout line core appends to stderr always goes. */
static void exec_stream_rest(struct exec_tap *tap,
                             const struct b4_exec_result *ret,
                             size_t errout_before)
{
        if (!tap->fn)
                return;
        if (tap->streamed == 0) {
                exec_tap_output(tap, B4_EXEC_STDOUT, ret->out, ret->out_len);
                exec_tap_output(tap, B4_EXEC_STDERR, ret->errout, errout_before);
        }
        if (ret->errout_len > errout_before)
                exec_tap_output(tap, B4_EXEC_STDERR, ret->errout + errout_before,
                                ret->errout_len - errout_before);
}

int b4_sandbox_exec(struct b4_sandbox *sb,
                    const struct b4_exec_req *req,
                    struct b4_exec_result *ret,
                    struct b4_error *err)
{
        struct attempt a = { .sb = sb, .cancel = req ? req->cancel : NULL };
        struct exec_tap tap = { 0 };
        struct b4_exec_req q;
        size_t errout_before;
        int r;

        if (!sb || !req || !req->command)
                return b4_error_set(err, -EINVAL, "exec needs a command");
        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "command cancelled before it started");
        q = *req;
        if (req->on_output) {
                tap = (struct exec_tap){ .fn = req->on_output, .userdata = req->output_userdata };
                q.on_output = exec_tap_output;
                q.output_userdata = &tap;
        }
        *ret = (struct b4_exec_result){ 0 };
        do {
                r = attempt_begin(&a, err);
                if (r >= 0) {
                        b4_exec_result_clear(ret);
                        r = exec_raw(&a, sb, &q, ret, err);
                }
        } while (attempt_again(&a, &r, err));
        if ((r == -EAGAIN || r == -ENOTCONN) && (ret->out || ret->errout))
                r = 0; /* no retry (declined or failed again): the failed result stands */
        errout_before = ret->errout_len;
        if (r >= 0 && ret->timed_out && msg_append_timeout(ret, ret->timeout_ms) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                exec_stream_rest(&tap, ret, errout_before);
        if (r < 0)
                b4_exec_result_clear(ret);
        return r;
}

/* ---- readers ---- */

int b4_reader_init(struct b4_reader *r,
                   const struct b4_reader_ops *ops,
                   const struct b4_fs_ops *fs_ops,
                   const char *thread_id)
{
        if (NEVER(fs_ops->write_file || fs_ops->mkdir_p || fs_ops->remove || fs_ops->touch ||
                  fs_ops->symlink || fs_ops->chmod))
                return -EINVAL;
        r->ops = ops;
        r->thread_id = b4_strdup(thread_id);
        r->workspace_root = b4_strdup(B4_WORKSPACE_ROOT);
        if (!r->thread_id || !r->workspace_root) {
                free(r->thread_id);
                free(r->workspace_root);
                return -ENOMEM;
        }
        r->fs = (struct b4_fs){ .ops = fs_ops, .root = r->workspace_root, .rd = r };
        atomic_init(&r->closed, false);
        return 0;
}

struct b4_fs *b4_reader_fs(struct b4_reader *r)
{
        return &r->fs;
}

int b4_reader_close(struct b4_reader *r, struct b4_error *err)
{
        atomic_store(&r->closed, true);
        return r->ops->close ? r->ops->close(r, err) : 0;
}

struct b4_reader *b4_reader_free(struct b4_reader *r)
{
        char *thread_id, *root;

        if (!r)
                return NULL;
        (void)b4_reader_close(r, NULL);
        thread_id = r->thread_id;
        root = r->workspace_root;
        r->ops->free(r);
        free(thread_id);
        free(root);
        return NULL;
}

/* ---- preflight ---- */

void b4_preflight_clear(struct b4_preflight *p)
{
        free(p->detail);
        strv_free(p->warnings);
        for (size_t i = 0; i < p->n_controls; i++) {
                free(p->controls[i].name);
                free(p->controls[i].detail);
        }
        free(p->controls);
        *p = (struct b4_preflight){ 0 };
}

int b4_preflight_warn(struct b4_preflight *p, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = b4_vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return strv_consume(&p->warnings, s);
}

int b4_preflight_control(
        struct b4_preflight *p, const char *name, enum b4_enforcement state, const char *fmt, ...)
{
        struct b4_control *n;
        char *detail = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = b4_vasprintf(&detail, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        n = b4_reallocarray(p->controls, p->n_controls + 1, sizeof(*n));
        if (!n) {
                free(detail);
                return -ENOMEM;
        }
        p->controls = n;
        n[p->n_controls] =
                (struct b4_control){ .name = b4_strdup(name), .state = state, .detail = detail };
        if (!n[p->n_controls].name) {
                free(detail);
                return -ENOMEM;
        }
        p->n_controls++;
        if (state == B4_NOT_ENFORCED)
                return b4_preflight_warn(p, "%s: %s", name, detail);
        return 0;
}

/* ---- provider ---- */

int b4_provider_init(struct b4_provider *p, const struct b4_provider_ops *ops, const char *scope)
{
        p->ops = ops;
        p->scope = b4_strdup(scope);
        p->lifecycle = p->scope ? lifecycle_new() : NULL;
        if (!p->lifecycle) {
                free(p->scope);
                p->scope = NULL;
                return -ENOMEM;
        }
        pause_init(p);
        return 0;
}

void b4_provider_clear(struct b4_provider *p)
{
        p->lifecycle = lifecycle_unref(p->lifecycle);
        free(p->scope);
        p->scope = NULL;
}

struct b4_entry *b4_provider_entry(struct b4_provider *p, const char *thread_id)
{
        return p && thread_id ? lifecycle_find(p->lifecycle, thread_id) : NULL;
}

int b4_provider_foreach_state(struct b4_provider *p, b4_entry_state_fn *fn, void *userdata)
{
        return lifecycle_foreach_state(p->lifecycle, fn, userdata);
}

const char *b4_provider_name(const struct b4_provider *p)
{
        return p->ops->name;
}

static int check_thread_id(const char *thread_id, struct b4_error *err)
{
        if (!thread_id || !*thread_id)
                return b4_error_set(err, -EINVAL, "thread id must be a non-empty string");
        return 0;
}

int b4_provider_acquire(struct b4_provider *p,
                        const struct b4_acquire_req *req,
                        struct b4_sandbox **ret,
                        struct b4_error *err)
{
        struct gate_lease *lease = NULL;
        struct b4_entry *e = NULL;
        int r;

        if (!p || !req || !req->policy)
                return b4_error_set(err, -EINVAL, "acquire needs a thread id and a policy");
        r = check_thread_id(req->thread_id, err);
        if (r < 0)
                return r;
        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "acquire cancelled");
        r = lifecycle_enter(p->lifecycle, req->thread_id, GATE_EXCLUSIVE, req->cancel, "acquire",
                            &e, &lease, err);
        if (r < 0)
                return r;
        r = p->ops->acquire(p, e, req, ret, err);
        if (r >= 0 && !(*ret)->core->entry)
                (*ret)->core->entry = entry_ref(e);
        if (r >= 0)
                (*ret)->core->bounds = (struct b4_exec_bounds){
                        .timeout_ms = req->policy->resources.timeout_ms,
                        .output_cap = req->policy->output_cap ? req->policy->output_cap
                                                              : B4_DEFAULT_OUTPUT_CAP,
                };
        lifecycle_leave(e, lease);
        return r;
}

typedef int end_fn(struct b4_provider *p, struct b4_entry *e, struct b4_error *err);

/* release and destroy: exclusive, then the entry's state is gone whatever the outcome. */
static int end_thread(struct b4_provider *p,
                      const char *thread_id,
                      end_fn *fn,
                      const char *what,
                      struct b4_error *err)
{
        struct gate_lease *lease = NULL;
        struct b4_entry *e = NULL;
        int r = check_thread_id(thread_id, err);

        if (r >= 0)
                r = lifecycle_enter(p->lifecycle, thread_id, GATE_EXCLUSIVE, NULL, what, &e, &lease,
                                    err);
        if (r < 0)
                return r;
        pause_end(p, e);
        r = fn(p, e, err);
        b4_entry_set_state(e, NULL, NULL);
        lifecycle_leave(e, lease);
        return r;
}

int b4_provider_release(struct b4_provider *p, const char *thread_id, struct b4_error *err)
{
        return end_thread(p, thread_id, p->ops->release, "release", err);
}

int b4_provider_destroy(struct b4_provider *p, const char *thread_id, struct b4_error *err)
{
        return end_thread(p, thread_id, p->ops->destroy, "destroy", err);
}

int b4_provider_sweep(struct b4_provider *p, char *const *live_thread_ids, struct b4_error *err)
{
        if (!p || !live_thread_ids)
                return b4_error_set(err, -EINVAL, "sweep needs a provider and a live thread list");
        if (!p->ops->sweep)
                return b4_error_set(err, -EOPNOTSUPP, "Sandbox provider \"%s\" cannot sweep",
                                    p->ops->name);
        return p->ops->sweep(p, live_thread_ids, err);
}

bool b4_provider_kept(struct b4_provider *p, const char *thread_id)
{
        return p->ops->kept && thread_id && *thread_id && p->ops->kept(p, thread_id);
}

int b4_provider_preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        *ret = (struct b4_preflight){ .ok = true };
        if (!p->ops->preflight)
                return 0;
        return p->ops->preflight(p, ret, err);
}

bool b4_provider_has_reader(const struct b4_provider *p)
{
        return p->ops->open_reader != NULL;
}

int b4_provider_open_reader(struct b4_provider *p,
                            const struct b4_reader_req *req,
                            struct b4_reader **ret,
                            struct b4_error *err)
{
        int r;

        if (!p->ops->open_reader)
                return b4_error_set(
                        err, -EOPNOTSUPP,
                        "Sandbox provider \"%s\" does not support reading a thread workspace",
                        p->ops->name);
        r = check_thread_id(req->thread_id, err);
        if (r < 0)
                return r;
        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "reader open cancelled");
        return p->ops->open_reader(p, req, ret, err);
}

int b4_provider_resolve_image(struct b4_provider *p,
                              const char *reference,
                              char **ret_identity,
                              struct b4_error *err)
{
        if (!p->ops->resolve_image)
                return b4_error_set_code(err, -EOPNOTSUPP, B4_CODE_IMAGE_UNSUPPORTED,
                                         "Sandbox provider \"%s\" cannot run a per-thread image",
                                         p->ops->name);
        return p->ops->resolve_image(p, reference, ret_identity, err);
}

bool b4_provider_keeps_workspace_record(const struct b4_provider *p)
{
        return p && p->ops->workspace_record != NULL;
}

/* Both verbs of workspace_record: the exclusive lease, an acquired entry. */
static int workspace_record(struct b4_provider *p,
                            const char *thread_id,
                            enum b4_workspace_verb verb,
                            const struct b4_workspace_record *rec,
                            enum b4_storage_state *ret,
                            struct b4_error *err)
{
        struct gate_lease *lease = NULL;
        struct b4_entry *e = NULL;
        int r;

        if (!b4_provider_keeps_workspace_record(p))
                return b4_error_set(err, -EOPNOTSUPP,
                                    "Sandbox provider \"%s\" keeps no workspace record",
                                    p ? p->ops->name : "?");
        r = check_thread_id(thread_id, err);
        if (r >= 0 && (!rec || !rec->intent || !*rec->intent))
                r = b4_error_set(err, -EINVAL, "a workspace record needs an intent");
        if (r >= 0)
                r = lifecycle_enter(p->lifecycle, thread_id, GATE_EXCLUSIVE, NULL,
                                    "workspace record", &e, &lease, err);
        if (r < 0)
                return r;
        if (!b4_entry_state(e))
                r = b4_error_set(err, -ENOTCONN,
                                 "thread \"%s\" is not acquired: its workspace record is "
                                 "read and written after an acquire",
                                 thread_id);
        else
                r = p->ops->workspace_record(p, e, verb, rec, ret, err);
        lifecycle_leave(e, lease);
        return r;
}

int b4_provider_workspace_check(struct b4_provider *p,
                                const char *thread_id,
                                const char *intent,
                                enum b4_storage_state *ret,
                                struct b4_error *err)
{
        struct b4_workspace_record rec = { .intent = intent };

        if (!ret)
                return b4_error_set(err, -EINVAL, "workspace check needs a result pointer");
        return workspace_record(p, thread_id, B4_WORKSPACE_CHECK, &rec, ret, err);
}

int b4_provider_workspace_publish(struct b4_provider *p,
                                  const char *thread_id,
                                  const struct b4_workspace_record *rec,
                                  struct b4_error *err)
{
        return workspace_record(p, thread_id, B4_WORKSPACE_PUBLISH, rec, NULL, err);
}

int b4_provider_freeze(struct b4_provider *p,
                       const char *thread_id,
                       bool frozen,
                       struct b4_error *err)
{
        if (!p || !thread_id || !*thread_id)
                return b4_error_set(err, -EINVAL, "freeze needs a provider and a thread id");
        if (!p->ops->freeze)
                return b4_error_set(err, -EOPNOTSUPP,
                                    "Sandbox provider \"%s\" cannot freeze a thread for a "
                                    "consistent read",
                                    p->ops->name);
        if (b4_provider_paused(p, thread_id, NULL))
                return 0; /* paused: frozen already, and it stays so after the read */
        return p->ops->freeze(p, thread_id, frozen, err);
}

struct b4_provider *b4_provider_free(struct b4_provider *p)
{
        struct b4_lifecycle *lc;

        if (!p)
                return NULL;
        lc = p->lifecycle;
        lifecycle_set_resume(lc, NULL, NULL); /* handles may outlive @p */
        lifecycle_clear(lc);
        p->ops->free(p);
        lifecycle_unref(lc); /* live handles keep it until they go */
        return NULL;
}

int b4_with_reader(struct b4_provider *p,
                   const struct b4_reader_req *req,
                   b4_reader_fn *fn,
                   void *userdata,
                   struct b4_error *err)
{
        struct b4_reader *rd = NULL;
        struct b4_error body = { 0 }, close_err = { 0 };
        int r, rc;

        r = b4_provider_open_reader(p, req, &rd, err);
        if (r < 0)
                return r;
        r = fn(rd, userdata, &body);
        rc = b4_reader_close(rd, &close_err);
        rd = b4_reader_free(rd);
        if (r < 0 && rc < 0)
                return b4_error_set(err, r, "Workspace read and reader close failed: %s; %s",
                                    body.msg, close_err.msg);
        if (r < 0) {
                if (err)
                        *err = body;
                return r;
        }
        if (rc < 0) {
                if (err)
                        *err = close_err;
                return rc;
        }
        return 0;
}
