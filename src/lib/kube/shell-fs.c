/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference's `sh -s` scripts (shell-fs.h): builders of the scripts, the pure parsers of
 * their replies, and the struct b4_fs_ops and command that run them, one exec each.
 *
 * Every path is single-quoted into the script (strbuf_add_shell_quoted); the scripts' own
 * checks exit with enum kube_shell_exit, so errno survives the trip; anything else the
 * sandbox prints is only ever parsed, bounded, never trusted.
 */

#include "kube/shell-fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "kube/exec.h"
#include "kube/provider.h"

#define READ_FOOTER     "\nB4_READ_STATUS_"
#define READ_FOOTER_WIN 40u
#define WALK_FOOTER     "B4_WALK_STATUS_"
#define SAFE_INT_MAX    9007199254740991ull /* 2^53 - 1 */

int kube_shell_errno(int exit_code)
{
        switch (exit_code) {
        case KUBE_SH_ENOENT:
                return -ENOENT;
        case KUBE_SH_EISDIR:
                return -EISDIR;
        case KUBE_SH_EINVAL:
                return -EINVAL;
        case KUBE_SH_ENOTDIR:
                return -ENOTDIR;
        case KUBE_SH_ELOOP:
                return -ELOOP;
        case KUBE_SH_EXDEV:
                return -EXDEV;
        case KUBE_SH_EEXIST:
                return -EEXIST;
        case KUBE_SH_EACCES:
                return -EACCES;
        case KUBE_SH_ENOTEMPTY:
                return -ENOTEMPTY;
        default:
                return 0;
        }
}

/* ---- parsers ---- */

static bool is_space(char c)
{
        return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Decode base64 with whitespace anywhere (base64(1) wraps its lines). */
static int decode_b64(const char *s, size_t n, char **ret, size_t *ret_len)
{
        cleanup_free char *packed = b4_malloc(n + 1);
        size_t k = 0;

        if (!packed)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!is_space(s[i]))
                        packed[k++] = s[i];
        if (base64_decoded_len(packed, k) < 0)
                return -EPROTO;
        return base64_decode(packed, k, ret, ret_len) == -ENOMEM ? -ENOMEM : *ret ? 0 : -EPROTO;
}

/* Digits only, at most @max_digits, value at most @max: 0 with *ret or -EPROTO. */
static int parse_u64(const char *s, size_t n, size_t max_digits, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;

        if (n == 0 || n > max_digits)
                return -EPROTO;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EPROTO;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (v > max)
                return -EPROTO;
        *ret = v;
        return 0;
}

int kube_shell_decode_read(const char *out, size_t len, uint64_t max, char **ret, size_t *ret_len)
{
        cleanup_free char *raw = NULL;
        size_t n = 0, from, foot = SIZE_MAX;
        uint64_t status;
        int r;

        if (max > KUBE_SHELL_FILE_MAX)
                max = KUBE_SHELL_FILE_MAX; /* what the script read at most (read_count()) */
        r = decode_b64(out, len, &raw, &n);
        if (r < 0)
                return r;
        /* the last footer within the last READ_FOOTER_WIN bytes */
        from = n > READ_FOOTER_WIN ? n - READ_FOOTER_WIN : 0;
        for (size_t i = from; i + strlen(READ_FOOTER) <= n; i++)
                if (memcmp(raw + i, READ_FOOTER, strlen(READ_FOOTER)) == 0)
                        foot = i;
        if (foot == SIZE_MAX || n < foot + strlen(READ_FOOTER) + 2 || raw[n - 1] != '\n')
                return -EPROTO;
        r = parse_u64(raw + foot + strlen(READ_FOOTER), n - 1 - foot - strlen(READ_FOOTER), 3, 255,
                      &status);
        if (r < 0)
                return r;
        if (status != 0)
                return -EIO;
        if (foot > max)
                return -EFBIG;
        raw[foot] = '\0';
        *ret_len = foot;
        *ret = TAKE_PTR(raw);
        return 0;
}

static enum b4_file_kind kind_of(uint64_t mode)
{
        switch (mode & 0xF000) {
        case 0xA000:
                return B4_FILE_SYMLINK;
        case 0x8000:
                return B4_FILE_REGULAR;
        case 0x4000:
                return B4_FILE_DIRECTORY;
        default:
                return B4_FILE_OTHER;
        }
}

/* "<hex mode> <size> <mtime>" (the line without its newline). */
static int parse_stat_line(const char *s, size_t n, struct b4_stat *ret)
{
        const char *sp1 = memchr(s, ' ', n), *sp2;
        uint64_t mode = 0, size, mtime;
        bool neg;

        if (!sp1)
                return -EPROTO;
        sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - s));
        if (!sp2 || sp1 == s || sp1 - s > 8)
                return -EPROTO;
        for (const char *p = s; p < sp1; p++) {
                int d = *p >= '0' && *p <= '9'   ? *p - '0'
                        : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                                 : -1;
                if (d < 0)
                        return -EPROTO;
                mode = mode * 16 + (uint64_t)d;
        }
        if (parse_u64(sp1 + 1, (size_t)(sp2 - sp1 - 1), 16, SAFE_INT_MAX, &size) < 0)
                return -EPROTO;
        neg = sp2 + 1 < s + n && sp2[1] == '-';
        if (parse_u64(sp2 + 1 + neg, (size_t)(s + n - sp2 - 1 - neg), 12, 999999999999ull, &mtime) <
            0)
                return -EPROTO;
        *ret = (struct b4_stat){ .kind = kind_of(mode),
                                 .size = size,
                                 .executable = (mode & 0111) != 0,
                                 .mtime_ms = (neg ? -1 : 1) * (int64_t)mtime * 1000 };
        return 0;
}

int kube_shell_parse_stat(const char *out, size_t len, bool with_target, struct b4_stat *ret)
{
        const char *nl = memchr(out, '\n', len);
        size_t rest;
        struct b4_stat st;
        int r;

        if (!nl)
                return -EPROTO;
        r = parse_stat_line(out, (size_t)(nl - out), &st);
        if (r < 0)
                return r;
        rest = len - (size_t)(nl + 1 - out);
        if (with_target && st.kind == B4_FILE_SYMLINK) {
                if (rest == 0 || rest > 4096 || memchr(nl + 1, '\0', rest))
                        return -EPROTO;
                st.target = b4_strndup(nl + 1, rest);
                if (!st.target)
                        return -ENOMEM;
        } else if (rest != 0) {
                return -EPROTO;
        }
        *ret = st;
        return 0;
}

/* "<dir>/" ("/" for the root): what every child's path starts with. */
static char *child_prefix(const char *dir)
{
        char *p = NULL;

        if (strcmp(dir, "/") == 0)
                return b4_strdup("/");
        return b4_asprintf(&p, "%s/", dir) < 0 ? NULL : p;
}

static bool name_ok(const char *s, size_t n)
{
        return n > 0 && n <= 255 && !memchr(s, '/', n) && !(n == 1 && s[0] == '.') &&
               !(n == 2 && s[0] == '.' && s[1] == '.');
}

int kube_shell_parse_list(const char *out, size_t len, const char *dir, char ***ret)
{
        cleanup_free char *prefix = child_prefix(dir);
        char **names = NULL;
        size_t k = 0, pl, count = 0;

        if (!prefix)
                return -ENOMEM;
        pl = strlen(prefix);
        if (len > 0 && out[len - 1] != '\0')
                return -EPROTO;
        while (k < len) {
                const char *rec = out + k;
                size_t n = strlen(rec); /* NUL-terminated: checked above */

                k += n + 1;
                if (n <= pl || memcmp(rec, prefix, pl) != 0 || !name_ok(rec + pl, n - pl))
                        goto proto;
                if (++count > B4_LIST_MAX_ENTRIES) {
                        strv_free(names);
                        return -E2BIG;
                }
                if (strv_extend(&names, rec + pl) < 0) {
                        strv_free(names);
                        return -ENOMEM;
                }
        }
        if (!names && !(names = b4_calloc(1, sizeof(*names))))
                return -ENOMEM;
        strv_sort(names);
        for (size_t i = 1; names[0] && names[i]; i++)
                if (strcmp(names[i - 1], names[i]) == 0)
                        goto proto;
        *ret = names;
        return 0;
proto:
        strv_free(names);
        return -EPROTO;
}

/* Depth-first with children sorted: bytewise, '/' before every other byte. */
static int walk_cmp(const void *a, const void *b)
{
        const unsigned char *x = (const unsigned char *)((const struct b4_walk_entry *)a)->path;
        const unsigned char *y = (const unsigned char *)((const struct b4_walk_entry *)b)->path;

        for (;; x++, y++) {
                unsigned cx = *x == '/' ? 1 : *x == 0 ? 0 : (unsigned)*x + 1;
                unsigned cy = *y == '/' ? 1 : *y == 0 ? 0 : (unsigned)*y + 1;

                if (cx != cy)
                        return cx < cy ? -1 : 1;
                if (!cx)
                        return 0;
        }
}

static bool rel_ok(const char *s, size_t n)
{
        size_t i = 0;

        while (i < n) {
                const char *slash = memchr(s + i, '/', n - i);
                size_t c = slash ? (size_t)(slash - s) - i : n - i;

                if (!name_ok(s + i, c))
                        return false;
                i += c + 1;
                if (slash && i == n)
                        return false; /* a trailing '/' */
        }
        return n > 0;
}

/* One NUL-terminated field at *pos: its start and length, or NULL. */
static const char *nul_field(const char *raw, size_t n, size_t *pos, size_t *ret_len)
{
        const char *f = raw + *pos, *z;

        if (*pos >= n || !(z = memchr(f, '\0', n - *pos)))
                return NULL;
        *ret_len = (size_t)(z - f);
        *pos += *ret_len + 1;
        return f;
}

/* One '\n'-terminated line at *pos, or NULL. */
static const char *nl_field(const char *raw, size_t n, size_t *pos, size_t *ret_len)
{
        const char *f = raw + *pos, *z;

        if (*pos >= n || !(z = memchr(f, '\n', n - *pos)))
                return NULL;
        *ret_len = (size_t)(z - f);
        *pos += *ret_len + 1;
        return f;
}

struct walk_acc {
        struct b4_walk_entry *e;
        size_t n;
};

/* One batch at *pos (its count line already read: @count entries). */
static int walk_batch(const char *raw,
                      size_t n,
                      size_t *pos,
                      size_t count,
                      const char *prefix,
                      struct walk_acc *w)
{
        size_t pl = strlen(prefix), first = w->n, fl;
        const char *f;

        for (size_t i = 0; i < count; i++) {
                struct b4_walk_entry *e = &w->e[w->n + i];

                f = nl_field(raw, n, pos, &fl);
                if (!f || memchr(f, '\0', fl) || parse_stat_line(f, fl, &e->st) < 0)
                        return -EPROTO;
        }
        w->n += count; /* from here the entries are the accumulator's to free */
        for (size_t i = 0; i < count; i++) {
                struct b4_walk_entry *e = &w->e[first + i];

                f = nul_field(raw, n, pos, &fl);
                if (!f || fl <= pl || memcmp(f, prefix, pl) != 0 || !rel_ok(f + pl, fl - pl))
                        return -EPROTO;
                e->path = b4_strndup(f + pl, fl - pl);
                if (!e->path)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < count; i++) {
                struct b4_walk_entry *e = &w->e[first + i];

                f = nul_field(raw, n, pos, &fl);
                if (!f || fl > 4096 || (fl && e->st.kind != B4_FILE_SYMLINK))
                        return -EPROTO;
                if (fl && !(e->st.target = b4_strndup(f, fl)))
                        return -ENOMEM;
        }
        return 0;
}

static int walk_parse(
        const char *raw, size_t n, const char *prefix, size_t max_entries, struct walk_acc *w)
{
        size_t pos = 0, fl;
        uint64_t count, status;
        const char *f;
        int r;

        for (;;) {
                f = nl_field(raw, n, &pos, &fl);
                if (!f)
                        return -EPROTO;
                if (fl > strlen(WALK_FOOTER) && memcmp(f, WALK_FOOTER, strlen(WALK_FOOTER)) == 0) {
                        r = parse_u64(f + strlen(WALK_FOOTER), fl - strlen(WALK_FOOTER), 3, 255,
                                      &status);
                        if (r < 0 || pos != n)
                                return -EPROTO;
                        return status ? -EIO : 0;
                }
                if (parse_u64(f, fl, 7, KUBE_SHELL_WALK_MAX, &count) < 0 || count == 0)
                        return -EPROTO;
                if (w->n + count > max_entries)
                        return -E2BIG;
                r = walk_batch(raw, n, &pos, count, prefix, w);
                if (r < 0)
                        return r;
        }
}

int kube_shell_parse_walk(const char *out,
                          size_t len,
                          const char *base,
                          size_t max_entries,
                          struct b4_walk_entry **ret,
                          size_t *ret_n)
{
        cleanup_free char *raw = NULL, *prefix = child_prefix(base);
        struct walk_acc w = { 0 };
        size_t n = 0;
        int r;

        if (!prefix)
                return -ENOMEM;
        if (max_entries > KUBE_SHELL_WALK_MAX)
                max_entries = KUBE_SHELL_WALK_MAX;
        r = decode_b64(out, len, &raw, &n);
        if (r < 0)
                return r;
        if (n > (max_entries + 1) * (size_t)KUBE_SHELL_WALK_ENTRY)
                return -E2BIG;
        w.e = b4_calloc(max_entries + 1, sizeof(*w.e));
        if (!w.e)
                return -ENOMEM;
        r = walk_parse(raw, n, prefix, max_entries, &w);
        if (r >= 0) {
                qsort_safe(w.e, w.n, sizeof(*w.e), walk_cmp);
                for (size_t i = 1; i < w.n; i++)
                        if (strcmp(w.e[i - 1].path, w.e[i].path) == 0)
                                r = -EPROTO;
        }
        if (r < 0) {
                b4_walk_entries_free(w.e, w.n);
                return r;
        }
        *ret = w.e;
        *ret_n = w.n;
        return 0;
}

static void blobs_clear(struct b4_blob *b, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(b[i].data);
                b[i] = (struct b4_blob){ 0 };
        }
}

static int batch_blob(const char *s, size_t n, const struct b4_read_req *q, struct b4_blob *b)
{
        uint64_t code;
        int r;

        *b = (struct b4_blob){ 0 };
        if (n > 0 && s[0] == '!') {
                size_t k = n;

                while (k > 1 && is_space(s[k - 1]))
                        k--;
                if (parse_u64(s + 1, k - 1, 3, 255, &code) < 0 || !kube_shell_errno((int)code))
                        return -EPROTO;
                b->error = kube_shell_errno((int)code);
                return 0;
        }
        r = kube_shell_decode_read(s, n, q->max_bytes, &b->data, &b->len);
        if (r == -EFBIG || r == -EIO) {
                b->error = r;
                return 0;
        }
        return r;
}

int kube_shell_parse_batch(
        const char *out, size_t len, const struct b4_read_req *reqs, size_t n, struct b4_blob *ret)
{
        size_t pos = 0, start = 0, got = 0, fl;
        const char *f;
        int r;

        while ((f = nl_field(out, len, &pos, &fl))) {
                if (fl != 1 || f[0] != '#')
                        continue;
                if (got == n) {
                        r = -EPROTO;
                        goto fail;
                }
                r = batch_blob(out + start, (size_t)(f - out) - start, &reqs[got], &ret[got]);
                if (r < 0)
                        goto fail;
                got++;
                start = pos;
        }
        r = got == n ? 0 : -EPROTO;
        for (size_t i = start; r >= 0 && i < len; i++)
                if (!is_space(out[i]))
                        r = -EPROTO;
        if (r >= 0)
                return 0;
fail:
        blobs_clear(ret, got);
        return r;
}

int kube_shell_parse_realpath(const char *out, size_t len, char **ret)
{
        if (len < 2 || out[0] != '/' || out[len - 1] != '\n' || memchr(out, '\0', len) ||
            len - 1 > 4096)
                return -EPROTO;
        *ret = b4_strndup(out, len - 1);
        return *ret ? 0 : -ENOMEM;
}

/* ---- running a script ---- */

/* Output an honest bounded read of @max bytes can have: base64 of max+1+footer, wrapped. */
static size_t read_reply_cap(uint64_t max)
{
        uint64_t raw = (max > KUBE_SHELL_FILE_MAX ? KUBE_SHELL_FILE_MAX : max) + 1 + 24;
        uint64_t b64 = (raw + 2) / 3 * 4;

        return (size_t)(b64 + b64 / 76 + 8);
}

static uint64_t read_count(uint64_t max)
{
        return (max > KUBE_SHELL_FILE_MAX ? KUBE_SHELL_FILE_MAX : max) + 1;
}

/* A failed exec of a file operation: a lost Pod or stream is core's to recover (the
 * operations are idempotent, a write atomic); what a retry cannot mend is not. */
static int exec_failed(struct b4_error *err, int r, const char *op, const char *path)
{
        switch (r) {
        case -ENOMEM:
        case -ECANCELED:
        case -ETIMEDOUT:
        case -EPERM:
        case -EACCES:
                break;
        case -ENOEXEC: /* the exec ran nothing: no sh in the image */
        case -EPROTO:
        case -E2BIG:
                r = -EIO;
                break;
        default:
                r = -ENOTCONN;
        }
        return b4_error_wrap(err, r, "%s %s", op, path);
}

/* Run @script of a file operation on @fs's Pod, stdout capped at @cap; @built is its
 * builder's result (< 0: out of memory, nothing runs). @script is released in every case.
 * Return: 0 with @res (any exit), or -errno with @err set. */
static int run_script(struct b4_fs *fs,
                      const char *op,
                      const char *path,
                      struct strbuf *script,
                      int built,
                      size_t cap,
                      struct kube_exec_result *res,
                      struct b4_error *err)
{
        struct kube_agent *a = kube_fs_agent(fs);
        int r;

        if (built < 0) {
                strbuf_release(script);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        if (!a) {
                strbuf_release(script);
                return b4_error_set(err, -ENOTCONN, "%s %s: no live sandbox", op, path);
        }
        r = kube_agent_shell_run(a, script->buf, script->len,
                                 &(struct kube_shell_run){ .output_cap = cap,
                                                           .timeout_ms = KUBE_SHELL_TIMEOUT_MS,
                                                           .cancel_fd = -EBADF },
                                 res, err);
        strbuf_release(script);
        if (r < 0)
                return exec_failed(err, r, op, path);
        if (res->truncated) {
                kube_exec_result_clear(res);
                return b4_error_set(err, -EPROTO, "%s %s: the sandbox's reply is too long", op,
                                    path);
        }
        return 0;
}

/* The errno of a script that exited non-zero: its own checks, else -EIO with stderr's
 * first line (sanitised, bounded). */
static int exit_error(struct b4_error *err,
                      const struct kube_exec_result *res,
                      const char *op,
                      const char *path)
{
        int e = kube_shell_errno(res->exit_code);
        char line[160] = "";
        size_t k = 0;

        if (e == -EFBIG || e == -E2BIG)
                return e;
        if (e)
                return b4_error_set(err, e, "%s %s: %s", op, path, strerror(-e));
        for (size_t i = 0; res->errout && i < res->errout_len && k + 1 < sizeof(line); i++) {
                unsigned char c = (unsigned char)res->errout[i];
                if (c == '\n')
                        break;
                line[k++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        }
        line[k] = '\0';
        return b4_error_set(err, -EIO, "%s %s: %s", op, path,
                            k ? line : "the sandbox's script failed");
}

static int proto_error(struct b4_error *err, int r, const char *op, const char *path)
{
        if (r == -EFBIG || r == -E2BIG || r == -ENOMEM)
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
        if (r == -EIO)
                return b4_error_set(err, r, "%s %s: invalid read status", op, path);
        return b4_error_set(err, -EPROTO, "%s %s: invalid response from the sandbox", op, path);
}

/* `p=<path>`, then the confinement of @flags: `r` becomes the resolved path, used after. */
static int add_path(struct strbuf *sb, const char *var, const char *path, unsigned flags)
{
        int r = strbuf_addf(sb, "%s=", var);

        if (r >= 0)
                r = strbuf_add_shell_quoted(sb, path);
        if (r >= 0)
                r = strbuf_adds(sb, "\n");
        if (r >= 0 && flags)
                r = strbuf_addf(sb, "r=$(realpath -m -- \"$%s\") || exit %d\n", var,
                                KUBE_SH_ENOENT);
        if (r >= 0 && (flags & B4_FS_NO_SYMLINKS))
                r = strbuf_addf(sb, "[ \"$r\" = \"$%s\" ] || exit %d\n", var, KUBE_SH_ELOOP);
        if (r >= 0 && (flags & B4_FS_BENEATH))
                r = strbuf_addf(sb,
                                "case \"$r/\" in " B4_WORKSPACE_ROOT "/*) ;; *) exit %d ;; esac\n",
                                KUBE_SH_EXDEV);
        if (r >= 0 && flags)
                r = strbuf_addf(sb, "%s=$r\n", var);
        return r;
}

static void script_init(struct strbuf *sb)
{
        strbuf_init(sb, STRBUF_UNLIMITED);
}

/* ---- the members ---- */

static int sh_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, flags);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "[ -e \"$p\" ] || exit %d\n[ -d \"$p\" ] && exit %d\n"
                                "[ -f \"$p\" ] || exit %d\n[ -r \"$p\" ] || exit %d\n"
                                "{ head -c %llu <\"$p\"; printf '\\nB4_READ_STATUS_%%s\\n' \"$?\"; "
                                "} | base64\n",
                                KUBE_SH_ENOENT, KUBE_SH_EISDIR, KUBE_SH_EINVAL, KUBE_SH_EACCES,
                                (unsigned long long)read_count(max));
        r = run_script(fs, "readFile", path, &sb, r, read_reply_cap(max), &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "readFile", path);
        else if ((r = kube_shell_decode_read(res.out, res.out_len, max, ret, ret_len)) < 0)
                r = proto_error(err, r, "readFile", path);
        kube_exec_result_clear(&res);
        return r;
}

static int stat_common(struct b4_fs *fs,
                       const char *op,
                       const char *path,
                       unsigned flags,
                       bool follow,
                       struct b4_stat *ret,
                       struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, flags);
        if (r >= 0 && follow)
                r = strbuf_addf(&sb,
                                "[ -e \"$p\" ] || exit %d\nstat -L -c '%%f %%s %%Y' -- \"$p\"\n",
                                KUBE_SH_ENOENT);
        else if (r >= 0)
                r = strbuf_addf(&sb,
                                "[ -e \"$p\" ] || [ -L \"$p\" ] || exit %d\n"
                                "stat -c '%%f %%s %%Y' -- \"$p\" || exit 1\n"
                                "if [ -L \"$p\" ]; then readlink -n -- \"$p\"; fi\n",
                                KUBE_SH_ENOENT);
        r = run_script(fs, op, path, &sb, r, 8192, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, op, path);
        else if ((r = kube_shell_parse_stat(res.out, res.out_len, !follow, ret)) < 0)
                r = proto_error(err, r, op, path);
        kube_exec_result_clear(&res);
        return r;
}

static int sh_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return stat_common(fs, "lstat", path, 0, false, ret, err);
}

static int sh_stat(struct b4_fs *fs,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        return stat_common(fs, "stat", path, flags, true, ret, err);
}

static int sh_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        struct strbuf sb;
        size_t cap = (B4_LIST_MAX_ENTRIES + 1) * (strlen(path) + 258);
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, flags);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "[ -e \"$p\" ] || exit %d\n[ -d \"$p\" ] || exit %d\n"
                                "[ -r \"$p\" ] && [ -x \"$p\" ] || exit %d\n"
                                "find \"$p\" -mindepth 1 -maxdepth 1 -print0 | head -c %zu\n",
                                KUBE_SH_ENOENT, KUBE_SH_ENOTDIR, KUBE_SH_EACCES, cap + 1);
        r = run_script(fs, "listDir", path, &sb, r, cap + 1, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "listDir", path);
        else if (res.out_len > cap)
                r = -E2BIG; /* more names than any listing of the cap's entries */
        else if ((r = kube_shell_parse_list(res.out, res.out_len, path, ret)) < 0)
                r = proto_error(err, r, "listDir", path);
        kube_exec_result_clear(&res);
        return r;
}

static int sh_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, 0);
        if (r >= 0)
                r = strbuf_adds(&sb, "realpath -m -- \"$p\"\n");
        r = run_script(fs, "realpath", path, &sb, r, 8192, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "realpath", path);
        else if ((r = kube_shell_parse_realpath(res.out, res.out_len, ret)) < 0)
                r = proto_error(err, r, "realpath", path);
        kube_exec_result_clear(&res);
        return r;
}

/* Every byte backslash-escaped: a literal find -path pattern. */
static int add_pattern(struct strbuf *sb, const char *s)
{
        cleanup_free char *esc = b4_malloc(2 * strlen(s) + 1);
        size_t k = 0;

        if (!esc)
                return -ENOMEM;
        for (const char *p = s; *p; p++) {
                esc[k++] = '\\';
                esc[k++] = *p;
        }
        esc[k] = '\0';
        return strbuf_add_shell_quoted(sb, esc);
}

/* The reference's walk: find hands batches to a helper that prints the frames. */
#define WALK_HELPER                                                           \
 "printf '%s\\n' \"$#\"; "                                                    \
 "for p; do stat -c '%f %s %Y' -- \"$p\" 2>/dev/null || echo '0 0 0'; done; " \
 "for p; do printf '%s\\0' \"$p\"; done; "                                    \
 "for p; do readlink -n -- \"$p\" 2>/dev/null; printf '\\0'; done"

static int walk_script(struct strbuf *sb, const char *base, char *const *prune, size_t cap)
{
        int r = add_path(sb, "b", base, 0);

        if (r >= 0)
                r = strbuf_addf(sb, "[ -e \"$b\" ] || exit %d\n[ -d \"$b\" ] || exit %d\n",
                                KUBE_SH_ENOENT, KUBE_SH_ENOTDIR);
        if (r >= 0)
                r = strbuf_adds(sb, "{ find \"$b\" -mindepth 1 ");
        if (r >= 0 && prune && prune[0]) {
                cleanup_free char *prefix = child_prefix(base);

                r = prefix ? strbuf_adds(sb, "\\( \\( ") : -ENOMEM;
                for (size_t i = 0; r >= 0 && prune[i]; i++) {
                        cleanup_free char *full = NULL;

                        r = b4_asprintf(&full, "%s%s", prefix, prune[i]) < 0 ? -ENOMEM : 0;
                        if (r >= 0 && i > 0)
                                r = strbuf_adds(sb, " -o ");
                        if (r >= 0)
                                r = strbuf_adds(sb, "-path ");
                        if (r >= 0)
                                r = add_pattern(sb, full);
                }
                if (r >= 0)
                        r = strbuf_adds(sb, " \\) -prune -o -true \\) ");
        }
        if (r >= 0)
                r = strbuf_adds(sb, "-exec sh -c ");
        if (r >= 0)
                r = strbuf_add_shell_quoted(sb, WALK_HELPER);
        if (r >= 0)
                r = strbuf_addf(sb,
                                " sh {} +; printf 'B4_WALK_STATUS_%%s\\n' \"$?\"; } "
                                "| head -c %zu | base64\n",
                                cap + 1);
        return r;
}

static int sh_walk(struct b4_fs *fs,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        size_t max = max_entries > KUBE_SHELL_WALK_MAX ? KUBE_SHELL_WALK_MAX : max_entries;
        size_t cap = (max + 1) * (size_t)KUBE_SHELL_WALK_ENTRY, b64;
        struct strbuf sb;
        int r;

        for (size_t i = 0; prune && prune[i]; i++)
                if (!prune[i][0] || strchr(prune[i], '/'))
                        return b4_error_set(err, -EINVAL, "walk: invalid prune name");
        script_init(&sb);
        r = walk_script(&sb, path, prune, cap);
        b64 = (cap + 1 + 2) / 3 * 4;
        r = run_script(fs, "walk", path, &sb, r, b64 + b64 / 76 + 8, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "walk", path);
        else if ((r = kube_shell_parse_walk(res.out, res.out_len, path, max, ret, ret_n)) < 0)
                r = r == -EIO      ? b4_error_set(err, r, "walkTree failed: %s", path)
                    : r == -EPROTO ? b4_error_set(err, r, "Invalid walkTree response")
                                   : proto_error(err, r, "walk", path);
        kube_exec_result_clear(&res);
        return r;
}

static int batch_line(struct strbuf *sb, const struct b4_read_req *q)
{
        int r = strbuf_adds(sb, "p=");

        if (r >= 0)
                r = strbuf_add_shell_quoted(sb, q->path);
        if (r >= 0)
                r = strbuf_addf(sb,
                                "; if [ ! -e \"$p\" ]; then echo '!%d'; elif [ -d \"$p\" ]; then "
                                "echo '!%d'; elif [ ! -f \"$p\" ]; then echo '!%d'; elif [ ! -r "
                                "\"$p\" ]; then echo '!%d'; else { head -c %llu <\"$p\"; printf "
                                "'\\nB4_READ_STATUS_%%s\\n' \"$?\"; } </dev/null 2>/dev/null | "
                                "base64; fi; echo '#'\n",
                                KUBE_SH_ENOENT, KUBE_SH_EISDIR, KUBE_SH_EINVAL, KUBE_SH_EACCES,
                                (unsigned long long)read_count(q->max_bytes));
        return r;
}

/* One script of @reqs[0..*n) packed to at most KUBE_SHELL_SCRIPT_MAX (at least one). */
static int run_batch(struct b4_fs *fs,
                     const struct b4_read_req *reqs,
                     size_t n,
                     size_t *ret_done,
                     struct b4_blob *out,
                     struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        struct strbuf sb;
        size_t k = 0, cap = 0;
        int r = 0;

        script_init(&sb);
        while (k < n && r >= 0) {
                size_t before = sb.len;

                r = batch_line(&sb, &reqs[k]);
                if (r >= 0 && k > 0 && sb.len > KUBE_SHELL_SCRIPT_MAX) {
                        sb.len = before;
                        sb.buf[before] = '\0';
                        break;
                }
                cap += read_reply_cap(reqs[k++].max_bytes) + 4;
                if (cap > KUBE_SHELL_OUT_MAX)
                        cap = KUBE_SHELL_OUT_MAX;
        }
        r = run_script(fs, "readFiles", reqs[0].path, &sb, r, cap, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "readFiles", reqs[0].path);
        else if ((r = kube_shell_parse_batch(res.out, res.out_len, reqs, k, out)) < 0)
                r = r == -ENOMEM ? b4_error_set(err, r, "out of memory")
                                 : b4_error_set(err, -EPROTO, "Invalid readBinaryFiles response");
        kube_exec_result_clear(&res);
        *ret_done = k;
        return r;
}

static int sh_read_files(struct b4_fs *fs,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        struct b4_blob *out = b4_calloc(n ? n : 1, sizeof(*out));
        size_t done = 0;

        if (!out)
                return b4_error_set(err, -ENOMEM, "out of memory");
        while (done < n) {
                size_t k = 0;
                int r = run_batch(fs, reqs + done, n - done, &k, out + done, err);

                if (r < 0) {
                        b4_blobs_free(out, n);
                        return r;
                }
                done += k;
        }
        *ret = out;
        return 0;
}

/* The payload as a here-document of wrapped base64 (never the delimiter: it has '_'). */
static int add_heredoc(struct strbuf *sb, const void *data, size_t len)
{
        cleanup_free char *b64 = NULL;
        size_t n = 0;
        int r = base64_encode(data, len, &b64, &n);

        for (size_t i = 0; r >= 0 && i < n; i += 76) {
                r = strbuf_add(sb, b64 + i, n - i < 76 ? n - i : 76);
                if (r >= 0)
                        r = strbuf_addc(sb, '\n');
        }
        if (r >= 0)
                r = strbuf_adds(sb, "B4_EOF\n");
        return r;
}

static int sh_write_file(struct b4_fs *fs,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        cleanup_free char *dir = NULL;
        struct kube_exec_result res = { 0 };
        const char *slash = strrchr(path, '/');
        uint64_t rnd = 0;
        struct strbuf sb;
        int r;

        if (!slash || path[0] != '/' || !slash[1])
                return b4_error_set(err, -EINVAL, "writeFile %s: %s", path, strerror(EINVAL));
        if (len > KUBE_SHELL_FILE_MAX)
                return b4_error_set(err, -EFBIG, "writeFile %s: more than %u bytes", path,
                                    KUBE_SHELL_FILE_MAX);
        dir = slash == path ? b4_strdup("/") : b4_strndup(path, (size_t)(slash - path));
        if (!dir)
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = now_usec();
        script_init(&sb);
        r = add_path(&sb, "d", dir, flags);
        if (r >= 0)
                r = strbuf_adds(&sb, "p=\"${d%/}/\"");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, slash + 1);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "\nmkdir -p -- \"$d\" || exit 1\n"
                                "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then exit %d; fi\n"
                                "t=\"${d%%/}/.b4box-write.%016llx\"\n"
                                "base64 -d >\"$t\" <<'B4_EOF' || { rm -f -- \"$t\"; exit 1; }\n",
                                KUBE_SH_EISDIR, (unsigned long long)rnd);
        if (r >= 0)
                r = add_heredoc(&sb, data, len);
        if (r >= 0)
                r = strbuf_adds(&sb, "if [ -f \"$p\" ] && [ ! -L \"$p\" ]; then "
                                     "chmod \"$(stat -c %a -- \"$p\")\" \"$t\"; fi\n"
                                     "if [ -L \"$p\" ]; then rm -f -- \"$p\"; fi\n"
                                     "mv -f -- \"$t\" \"$p\" || { rm -f -- \"$t\"; exit 1; }\n");
        r = run_script(fs, "writeFile", path, &sb, r, 4096, &res, err);
        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, "writeFile", path);
        else if (res.out_len)
                r = proto_error(err, -EPROTO, "writeFile", path);
        kube_exec_result_clear(&res);
        return r;
}

/* A script with no output: 0 or its exit's error. */
/* Run the script @sb built (@built: the builder's result, < 0 out of memory); released. */
static int run_simple(struct b4_fs *fs,
                      const char *op,
                      const char *path,
                      struct strbuf *sb,
                      int built,
                      struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        int r = run_script(fs, op, path, sb, built, 4096, &res, err);

        if (r < 0)
                return r;
        if (res.exit_code != 0)
                r = exit_error(err, &res, op, path);
        kube_exec_result_clear(&res);
        return r;
}

static int sh_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, 0);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "if [ -e \"$p\" ] && [ ! -d \"$p\" ]; then exit %d; fi\n"
                                "mkdir -p -- \"$p\" >/dev/null\n",
                                KUBE_SH_EEXIST);
        return run_simple(fs, "mkdir", path, &sb, r, err);
}

static int sh_remove(struct b4_fs *fs, const char *path, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, 0);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then\n"
                                "  [ -z \"$(ls -A -- \"$p\")\" ] || exit %d\n"
                                "  rmdir -- \"$p\" >/dev/null\n"
                                "else rm -f -- \"$p\" >/dev/null; fi\n",
                                KUBE_SH_ENOTEMPTY);
        return run_simple(fs, "remove", path, &sb, r, err);
}

static int sh_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, flags);
        if (r >= 0)
                r = strbuf_adds(&sb, "touch -- \"$p\" >/dev/null\n");
        return run_simple(fs, "touch", path, &sb, r, err);
}

static int sh_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        script_init(&sb);
        r = add_path(&sb, "p", path, 0);
        if (r >= 0)
                r = strbuf_adds(&sb, "t=");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, target);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "\nif [ -e \"$p\" ] || [ -L \"$p\" ]; then exit %d; fi\n"
                                "mkdir -p -- \"$(dirname -- \"$p\")\" && ln -s -- \"$t\" \"$p\"\n",
                                KUBE_SH_EEXIST);
        return run_simple(fs, "symlink", path, &sb, r, err);
}

static int sh_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        if (mode & ~07777u)
                return b4_error_set(err, -EINVAL, "chmod %s: %s", path, strerror(EINVAL));
        script_init(&sb);
        r = add_path(&sb, "p", path, 0);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "[ -e \"$p\" ] || [ -L \"$p\" ] || exit %d\n"
                                "[ -L \"$p\" ] && exit %d\nchmod %o -- \"$p\"\n",
                                KUBE_SH_ENOENT, KUBE_SH_ELOOP, mode);
        return run_simple(fs, "chmod", path, &sb, r, err);
}

const struct b4_fs_ops kube_shell_fs_ops = {
        .read_file = sh_read_file,
        .lstat = sh_lstat,
        .stat = sh_stat,
        .list_dir = sh_list_dir,
        .realpath = sh_realpath,
        .walk = sh_walk,
        .read_files = sh_read_files,
        .write_file = sh_write_file,
        .mkdir_p = sh_mkdir_p,
        .remove = sh_remove,
        .touch = sh_touch,
        .symlink = sh_symlink,
        .chmod = sh_chmod,
};

/* ---- commands ---- */

int kube_shell_exec_script(const struct kube_shell_cmd *c, char **ret)
{
        struct strbuf sb, inner;
        size_t len = 0;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        strbuf_init(&inner, STRBUF_UNLIMITED);
        r = strbuf_adds(&inner, "cd ");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&inner, c->cwd ? c->cwd : B4_WORKSPACE_ROOT);
        if (r >= 0)
                r = strbuf_addf(&inner, " && %s", c->command);
        for (size_t i = 0; r >= 0 && c->env && c->env[i]; i++) {
                const char *eq = strchr(c->env[i], '=');

                if (!eq)
                        continue;
                r = strbuf_add(&sb, c->env[i], (size_t)(eq - c->env[i]) + 1);
                if (r >= 0)
                        r = strbuf_add_shell_quoted(&sb, eq + 1);
                if (r >= 0)
                        r = strbuf_addc(&sb, ' ');
        }
        if (r >= 0 && c->timeout_ms)
                r = strbuf_addf(&sb, "timeout %llus ",
                                (unsigned long long)((c->timeout_ms + 999) / 1000));
        if (r >= 0)
                r = strbuf_adds(&sb, "sh -c ");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, inner.buf ? inner.buf : "");
        if (r >= 0)
                r = strbuf_adds(&sb, " </dev/null\n");
        if (r >= 0)
                r = strbuf_detach(&sb, ret, &len);
        strbuf_release(&inner);
        strbuf_release(&sb);
        return r < 0 ? -ENOMEM : 0;
}

int kube_shell_exec(struct kube_agent *a,
                    const struct kube_shell_cmd *c,
                    struct b4_exec_result *ret,
                    struct b4_error *err)
{
        cleanup_free char *script = NULL;
        struct kube_exec_result res = { 0 };
        uint64_t start = now_msec();
        int r;

        if (kube_shell_exec_script(c, &script) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_agent_shell_run(
                a, script, strlen(script),
                &(struct kube_shell_run){
                        .output_cap = c->output_cap ? c->output_cap : B4_DEFAULT_OUTPUT_CAP,
                        .timeout_ms = c->timeout_ms ? c->timeout_ms + KUBE_SHELL_GRACE_MS : 0,
                        .cancel_fd = c->cancel_fd },
                &res, err);
        switch (r) {
        case 0:
                break;
        case -ECANCELED:
                return b4_error_set(err, r, "command cancelled");
        case -ECONNRESET: /* the stream broke mid-way: it may have run */
        case -ETIMEDOUT:
        case -EPROTO:
                return b4_error_wrap(err, -EIO, "the exec broke while the command ran");
        case -ENOMEM:
        case -ENOEXEC: /* the exec ran nothing (no sh): message set */
        case -EPERM:
        case -EACCES:
                return r;
        default: /* the upgrade failed: nothing ran */
                return b4_error_wrap(err, -ENOTCONN, "the exec did not start");
        }
        *ret = (struct b4_exec_result){ .out = TAKE_PTR(res.out),
                                        .out_len = res.out_len,
                                        .errout = TAKE_PTR(res.errout),
                                        .errout_len = res.errout_len,
                                        .exit_code = res.exit_code,
                                        .truncated = res.truncated,
                                        .duration_ms = now_msec() - start };
        if (c->timeout_ms && res.exit_code == 124) {
                ret->timed_out = true;
                ret->timeout_ms = c->timeout_ms; /* core adds the timeout line */
        }
        if (!ret->out)
                ret->out = b4_strdup("");
        if (!ret->errout)
                ret->errout = b4_strdup("");
        kube_exec_result_clear(&res);
        if (!ret->out || !ret->errout) {
                b4_exec_result_clear(ret);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        return 0;
}
