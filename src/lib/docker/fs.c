/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct b4_fs over a container, without the docker CLI and without one request per file.
 * dockerd serves the archive endpoints as root with every capability, so nothing the sandbox
 * user could not see or do goes through them unchecked (audit H1): what the user can do is
 * decided inside the container by an exec as the user, or, for tar members, by the user's
 * DAC (dac.c) from their owner, group and mode.
 *
 *   read_file   one exec as the user (head -c max+1): EACCES where cat gets EACCES
 *   lstat/stat  one exec as the user (ls -d, the kernel's own lookup) that must succeed, then
 *               HEAD /archive (X-Docker-Container-Path-Stat); a link's raw target from the
 *               link's own tar entry
 *   walk        the user's identity and a search of the directory (one exec), then GET
 *               /archive of it, streamed through libarchive: names, types, sizes, modes and
 *               link targets of what the user could list, in one request
 *   write_file  one exec as the user creates the missing parents and an empty temporary file
 *               (so the user's permissions decide), PUT /archive fills it with a one-file tar
 *               owned by the sandbox uid/gid, one exec renames it over the target
 *   mkdir_p     one exec as the user (mkdir -p)
 *   realpath    HEAD per path component (Docker resolves each link inside the container);
 *               a path that cannot be resolved is an error
 *   confinement (enum b4_fs_flags) the same resolution first, refused when it followed a
 *               link (B4_FS_NO_SYMLINKS) or ended outside the workspace (B4_FS_BENEATH), and
 *               the operation then uses the resolved path and follows no further link. By
 *               review: Docker offers no openat2, so this narrows a swap race, it cannot close it
 *   list_dir, remove, touch, read_files
 *               one exec each (read_files batches every request into one script, or answers
 *               from one archive what the user's DAC allows and execs the rest)
 *
 * A container with an agent (agent.c) has every member sent to it instead, one request each
 * (src/lib/agent/agent-fs-ops.c, with these members as its fallback): the agent runs as the
 * sandbox user inside the container, so the kernel decides everything; what follows here is
 * the fallback when no agent can run.
 *
 * Exec-based members report PID exhaustion (reference §3.6, "started shell fork failure")
 * as -EAGAIN with the shell's message so the provider can recover and retry.
 */

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "docker/docker.h"
#include "http/http.h"

#define MAX_LINKS        40
#define FS_MARKER_WORD   "__B4_FILESYSTEM_STARTED__"
#define FS_MARKER        FS_MARKER_WORD "\n"
#define FS_OUTPUT_CAP    (64u * 1024 * 1024)
#define BATCH_SCRIPT_MAX (96u * 1024)

/* A tar entry's text: the UTF-8 form (pax records), else the raw bytes. */
static const char *entry_text(const char *utf8, const char *raw)
{
        return utf8 ? utf8 : raw;
}

/* ---- errors ---- */

static bool plain_errno(int r)
{
        return r == -ENOENT || r == -EISDIR || r == -ENOTDIR || r == -EACCES || r == -ENOTEMPTY ||
               r == -EEXIST || r == -ELOOP || r == -EXDEV || r == -EPERM || r == -EROFS ||
               r == -ENAMETOOLONG || r == -ENOSPC || r == -EINVAL;
}

/* strerror() texts of glibc and musl, as a shell, ls, mkdir or mv in the image print them. */
static const struct {
        const char *text;
        int error;
} errno_texts[] = {
        { "No such file or directory", ENOENT },
        { "Permission denied", EACCES },
        { "Not a directory", ENOTDIR },
        { "Is a directory", EISDIR },
        { "Too many levels of symbolic links", ELOOP },
        { "Symbolic link loop", ELOOP },
        { "File name too long", ENAMETOOLONG },
        { "Filename too long", ENAMETOOLONG },
        { "Operation not permitted", EPERM },
        { "Read-only file system", EROFS },
        { "No space left on device", ENOSPC },
        { "File exists", EEXIST },
};

/* The errno of a tool's message: the text after its last ": " (-EIO when unknown). */
static int text_errno(const char *msg, size_t n)
{
        const char *t = msg;

        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
                n--;
        for (size_t i = 0; i + 1 < n; i++)
                if (msg[i] == ':' && msg[i + 1] == ' ')
                        t = msg + i + 2;
        for (size_t i = 0; i < ELEMENTSOF(errno_texts); i++)
                if ((size_t)(msg + n - t) == strlen(errno_texts[i].text) &&
                    memcmp(t, errno_texts[i].text, (size_t)(msg + n - t)) == 0)
                        return -errno_texts[i].error;
        return -EIO;
}

/* "<op> <path>: <strerror>" for file errors (as native says them), else the Docker text. */
static int op_error(struct b4_error *err, int r, const char *op, const char *path)
{
        if (plain_errno(r))
                return b4_error_set(err, r, "%s %s: %s", op, path, strerror(-r));
        return b4_error_wrap(err, r, "%s %s", op, path);
}

static int confine(struct docker_fs_target *t,
                   const char *path,
                   unsigned flags,
                   char **ret,
                   struct b4_error *err);
static int fs_exec_capped(struct docker_fs_target *t,
                          const char *script,
                          char **args,
                          size_t cap,
                          struct b4_exec_result *ret,
                          struct b4_error *err);
static int fs_exec(struct docker_fs_target *t,
                   const char *script,
                   char **args,
                   struct b4_exec_result *ret,
                   struct b4_error *err);

static int user_step(struct docker_fs_target *t,
                     const char *script,
                     char **args,
                     struct b4_exec_result *ret,
                     struct b4_error *err);

/* The errno of a failed exec-based step from its stderr; an unknown text is -EIO with it. */
static int exec_errno(const struct b4_exec_result *x, struct b4_error *err)
{
        int r = text_errno(x->errout ?: "", x->errout_len);

        if (r == -EIO)
                return b4_error_set(err, r, "%.*s", (int)x->errout_len, x->errout ?: "");
        return r;
}

/* The kernel's own lookup of @path as the sandbox user (ls -d; -L follows links). */
static int user_lookup(struct docker_fs_target *t,
                       const char *path,
                       bool follow,
                       struct b4_error *err)
{
        struct b4_exec_result x = { 0 };
        int r;

        r = fs_exec(t, follow ? "ls -dL -- \"$1\" >/dev/null" : "ls -d -- \"$1\" >/dev/null",
                    (char *[]){ (char *)path, NULL }, &x, err);
        if (r >= 0 && x.exit_code != 0)
                r = exec_errno(&x, err);
        b4_exec_result_clear(&x);
        return r;
}

/* The user's identity (dac.c), once the kernel let the user search @dir and its ancestors. */
static int user_identity(struct docker_fs_target *t,
                         const char *dir,
                         struct docker_dac *ret,
                         struct b4_error *err)
{
        static const char script[] =
                "ls -d -- \"$1/.\" >/dev/null || exit 3; "
                "while read -r k v; do case $k in Uid:) set -- $v; echo \"U $4\";; "
                "Gid:) set -- $v; g=$4;; Groups:) s=$v;; CapEff:) c=$v;; esac; "
                "done </proc/self/status; echo \"G $g $s\"; echo \"C $c\"";
        struct b4_exec_result x = { 0 };
        int r;

        r = user_step(t, script, (char *[]){ (char *)dir, NULL }, &x, err);
        if (r < 0)
                return r;
        r = docker_dac_parse(x.out, ret);
        if (r < 0)
                r = b4_error_set(err, r, "invalid identity of the sandbox user");
        b4_exec_result_clear(&x);
        return r;
}

/* Would the user get @want on the inode of tar member @e? */
static bool entry_allows(const struct docker_dac *u, struct archive_entry *e, unsigned want)
{
        return docker_dac_allows(u, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
                                 archive_entry_perm(e), archive_entry_filetype(e) == AE_IFDIR,
                                 want);
}

/* Is @rel below one of @dirs ('/'-separated, relative like @rel)? */
static bool under_any(char *const *dirs, const char *rel)
{
        STRV_FOREACH (d, dirs) {
                size_t n = strlen(*d);
                if (strncmp(rel, *d, n) == 0 && rel[n] == '/')
                        return true;
        }
        return false;
}

/* ---- stat ---- */

static enum b4_file_kind go_kind(uint32_t mode)
{
        if (mode & GO_MODE_DIR)
                return B4_FILE_DIRECTORY;
        if (mode & GO_MODE_SYMLINK)
                return B4_FILE_SYMLINK;
        if (mode & GO_MODE_TYPE)
                return B4_FILE_OTHER;
        return B4_FILE_REGULAR;
}

/* The raw readlink text of @path, from its own tar entry. */
static int raw_link_target(struct docker_fs_target *t,
                           const char *path,
                           char **ret,
                           struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        struct archive *a = NULL;
        struct archive_entry *e;
        const char *target;
        int r, ar;

        r = docker_archive_get(t->d, t->container, path, &s, err);
        if (r < 0)
                return r;
        r = tar_reader_open(s, &a, err);
        if (r < 0)
                return r;
        ar = archive_read_next_header(a, &e);
        target = ar == ARCHIVE_OK || ar == ARCHIVE_WARN
                         ? entry_text(archive_entry_symlink_utf8(e), archive_entry_symlink(e))
                         : NULL;
        if (!target) {
                tar_reader_free(a);
                return b4_error_set(err, -EPROTO, "no link entry for '%s'", path);
        }
        *ret = b4_strdup(target);
        tar_reader_free(a);
        return *ret ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

static int lstat_raw(struct docker_fs_target *t,
                     const char *path,
                     struct b4_stat *ret,
                     char **ret_resolved,
                     struct b4_error *err)
{
        struct docker_path_stat ps = { 0 };
        struct b4_stat st = { 0 };
        int r;

        r = docker_archive_stat(t->d, t->container, path, &ps, err);
        if (r < 0)
                return r;
        st.kind = go_kind(ps.mode);
        st.size = ps.size;
        st.executable = (ps.mode & 0111) != 0;
        st.mtime_ms = ps.mtime_ms;
        if (st.kind == B4_FILE_SYMLINK && ret_resolved)
                *ret_resolved = TAKE_PTR(ps.link_target);
        docker_path_stat_clear(&ps);
        *ret = st;
        return 0;
}

static int archive_lstat(struct docker_fs_target *t,
                         const char *path,
                         struct b4_stat *ret,
                         struct b4_error *err)
{
        struct b4_stat st = { 0 };
        int r;

        r = user_lookup(t, path, false, err);
        if (r >= 0)
                r = lstat_raw(t, path, &st, NULL, err);
        if (r >= 0 && st.kind == B4_FILE_SYMLINK) {
                r = raw_link_target(t, path, &st.target, err);
                if (r >= 0)
                        st.size = strlen(st.target);
        }
        if (r < 0)
                return op_error(err, r, "lstat", path);
        *ret = st;
        return 0;
}

static int archive_stat(struct docker_fs_target *t,
                        const char *path,
                        unsigned flags,
                        struct b4_stat *ret,
                        struct b4_error *err)
{
        cleanup_free char *cur = NULL;
        int r;

        r = confine(t, path, flags, &cur, err);
        if (r >= 0) /* confined: a link is refused below, so the leaf's own lookup decides */
                r = user_lookup(t, cur, flags == 0, err);
        if (r < 0)
                return op_error(err, r, "stat", path);
        for (int i = 0; i < MAX_LINKS; i++) {
                char *next = NULL;
                struct b4_stat st = { 0 };

                r = lstat_raw(t, cur, &st, &next, err);
                if (r >= 0 && flags && st.kind == B4_FILE_SYMLINK)
                        r = -ELOOP; /* appeared after the confinement check */
                if (r < 0) {
                        free(next);
                        return op_error(err, r, "stat", path);
                }
                if (st.kind != B4_FILE_SYMLINK) {
                        *ret = st;
                        return 0;
                }
                if (!next)
                        return b4_error_set(err, -EPROTO, "stat %s: link without a target", path);
                free(cur);
                cur = next;
        }
        return op_error(err, -ELOOP, "stat", path);
}

/* ---- read_file ---- */

/* The buffer grows with the bytes that arrive: @size is the member header's claim. */
static int read_entry(struct archive *a, uint64_t size, char **ret, size_t *ret_len)
{
        cleanup_free char *buf = b4_malloc(1);
        size_t len = 0, cap = 0;

        if (!buf)
                return -ENOMEM;
        while (len < size) {
                if (len == cap) {
                        size_t want = cap ? cap * 2 : 65536;
                        char *nb = b4_realloc(buf, (want < size ? want : size) + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = want < size ? want : (size_t)size;
                }
                la_ssize_t n = archive_read_data(a, buf + len, cap - len);
                if (n < 0)
                        return -EIO;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

/*
 * The confinement check at the point of use (audit H3): a confined operation is handed the
 * path the host resolved (confine()), but a name swapped for a symlink after that would move
 * it. So the script opens first and then asks the kernel what it opened: b4c MODE PATH checks
 * what fd 0 (b4r) or the working directory (listDir, after cd -P) really is. MODE "s": exactly
 * PATH (no symlink anywhere on the way); "b": /workspace or below it. Nothing is read before
 * the check, and a mismatch is reported as a link in the way.
 */
#define CONFINED_FN                                                                       \
 "b4c() { if [ \"$3\" = cwd ]; then r=$(pwd -P) || return 1; "                            \
 "else r=$(readlink /proc/self/fd/0) || return 1; fi; "                                   \
 "if [ \"$1\" = s ]; then [ \"$r\" = \"$2\" ]; else case $r in /workspace|/workspace/*) " \
 "return 0;; *) return 1;; esac; fi; }\n"

/* The b4c mode for @flags ("" unconfined). */
static const char *confined_mode(unsigned flags)
{
        return (flags & B4_FS_NO_SYMLINKS) ? "s" : (flags & B4_FS_BENEATH) ? "b" : "";
}

/*
 * One file read as the sandbox user, shared by read_file (raw) and the exec batch (base64 of
 * the same record). b4r PATH COUNT NOFOLLOW prints a status line: F (then at most COUNT
 * bytes, all when COUNT is empty, and "\nB4_READ_STATUS_<head's status>\n"), D directory,
 * O not a regular file (never opened: no FIFO or /dev/zero reads), L a link under
 * confinement, A the open was refused, or "E <strerror>" when the user's lookup fails.
 */
#define READ_FN                                                                        \
 CONFINED_FN                                                                           \
 "b4r() { if [ -n \"$3\" ] && [ -L \"$1\" ]; then echo L; return; fi; "                \
 "if [ -d \"$1\" ]; then echo D; return; fi; "                                         \
 "if ! e=$(ls -dL -- \"$1\" 2>&1 >/dev/null); then echo \"E ${e##*: }\"; return; fi; " \
 "if [ ! -f \"$1\" ]; then echo O; return; fi; "                                       \
 "{ if [ -n \"$3\" ] && ! b4c \"$3\" \"$1\"; then echo L; else echo F; "               \
 "if [ -n \"$2\" ]; then head -c \"$2\"; else cat; fi; "                               \
 "printf '\\nB4_READ_STATUS_%s\\n' $?; fi; } 2>/dev/null <\"$1\" || echo A; }\n"
#define READ_FOOTER "\nB4_READ_STATUS_"

/* The last footer in @s (the file's own bytes may contain the text too). */
static const char *last_footer(const char *s, size_t n)
{
        size_t k = sizeof(READ_FOOTER) - 1;

        for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
                if (memcmp(s + i, READ_FOOTER, k) == 0)
                        return s + i;
        return NULL;
}

/* Decode one b4r record in @buf (taken: it becomes the blob's data or is freed) against
 * @max. Return: 0 with the per-file result in @b, or -EPROTO for a malformed record. */
static int read_record(char *buf, size_t n, uint64_t max, struct b4_blob *b)
{
        cleanup_free char *owned = buf;
        const char *nl = memchr(buf, '\n', n), *f;
        size_t len;

        *b = (struct b4_blob){ 0 };
        if (!nl || nl == buf)
                return -EPROTO;
        if (buf[0] == 'E' && nl - buf > 2 && buf[1] == ' ')
                return (b->error = text_errno(buf + 2, (size_t)(nl - buf - 2))), 0;
        if (nl - buf != 1)
                return -EPROTO;
        switch (buf[0]) {
        case 'D':
                return (b->error = -EISDIR), 0;
        case 'O':
                return (b->error = -EINVAL), 0;
        case 'L':
                return (b->error = -ELOOP), 0;
        case 'A':
                return (b->error = -EACCES), 0;
        case 'F':
                break;
        default:
                return -EPROTO;
        }
        f = last_footer(nl + 1, n - (size_t)(nl + 1 - buf));
        if (!f)
                return -EPROTO;
        if ((size_t)(buf + n - f) != sizeof(READ_FOOTER) + 1 ||
            memcmp(f + sizeof(READ_FOOTER) - 1, "0\n", 2) != 0)
                return (b->error = -EIO), 0; /* head or cat failed */
        len = (size_t)(f - (nl + 1));
        if (max != B4_UNBOUNDED && len > max)
                return (b->error = -EFBIG), 0;
        memmove(buf, nl + 1, len);
        buf[len] = '\0';
        b->data = TAKE_PTR(owned);
        b->len = len;
        return 0;
}

/* head's count for a cap: max + 1 bytes prove "over max" without reading further. */
static void read_count(uint64_t max, char out[24])
{
        if (max == B4_UNBOUNDED)
                out[0] = '\0';
        else
                (void)snprintf(out, 24, "%llu", (unsigned long long)max + 1);
}

/* Read @path as the sandbox user; per-file errors in @b. */
static int read_exec(struct docker_fs_target *t,
                     const char *path,
                     const char *mode,
                     uint64_t max,
                     struct b4_blob *b,
                     struct b4_error *err)
{
        struct b4_exec_result x = { 0 };
        size_t cap = max < FS_OUTPUT_CAP - 4096 ? (size_t)max + 4096 : FS_OUTPUT_CAP;
        char count[24];
        int r;

        read_count(max, count);
        r = fs_exec_capped(t, READ_FN "b4r \"$1\" \"$2\" \"$3\"",
                           (char *[]){ (char *)path, count, (char *)mode, NULL }, cap, &x, err);
        if (r < 0)
                return r;
        if (x.truncated)
                r = b4_error_set(err, -EIO, "more than %u bytes of read output", FS_OUTPUT_CAP);
        else if (x.exit_code != 0)
                r = b4_error_set(err, -EIO, "%.*s", (int)x.errout_len, x.errout ?: "");
        else if (read_record(TAKE_PTR(x.out), x.out_len, max, b) < 0)
                r = b4_error_set(err, -EPROTO, "invalid read response");
        b4_exec_result_clear(&x);
        return r;
}

static int archive_read_file(struct docker_fs_target *t,
                             const char *path,
                             unsigned flags,
                             uint64_t max,
                             char **ret,
                             size_t *ret_len,
                             struct b4_error *err)
{
        cleanup_free char *cur = NULL;
        struct b4_blob b = { 0 };
        int r;

        r = confine(t, path, flags, &cur, err);
        if (r >= 0) /* confined: a link leaf that appeared after the check is -ELOOP */
                r = read_exec(t, cur, confined_mode(flags), max, &b, err);
        if (r >= 0)
                r = b.error;
        if (r == -EFBIG)
                return r; /* core words it */
        if (r < 0)
                return op_error(err, r, "readFile", path);
        *ret = b.data;
        *ret_len = b.len;
        return 0;
}

/* ---- walk ---- */

/* Depth-first order: compare component by component ('/' sorts before everything). */
static int walk_cmp(const void *a, const void *b)
{
        const unsigned char *x = (const unsigned char *)((const struct b4_walk_entry *)a)->path;
        const unsigned char *y = (const unsigned char *)((const struct b4_walk_entry *)b)->path;

        for (; *x && *x == *y; x++, y++)
                ;
        if (*x == *y)
                return 0;
        if (*x == '/' || *x == '\0')
                return *y == '\0' ? 1 : -1;
        if (*y == '/' || *y == '\0')
                return *x == '\0' ? -1 : 1;
        return *x < *y ? -1 : 1;
}

struct walk {
        struct b4_walk_entry *v;
        size_t n, cap, max;
        char *const *prune;
        const struct docker_dac *user;
        char **hidden; /* directories the user cannot list: their members are skipped */
};

static int walk_add(struct walk *w, const char *rel, struct archive_entry *e)
{
        struct b4_walk_entry *x;
        const char *hard = entry_text(archive_entry_hardlink_utf8(e), archive_entry_hardlink(e));
        mode_t type = archive_entry_filetype(e);

        if (w->n >= w->max)
                return -E2BIG;
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 64;
                x = b4_reallocarray(w->v, cap, sizeof(*x));
                if (!x)
                        return -ENOMEM;
                w->v = x;
                w->cap = cap;
        }
        x = &w->v[w->n];
        *x = (struct b4_walk_entry){ 0 };
        x->path = b4_strdup(rel);
        if (!x->path)
                return -ENOMEM;
        x->st.kind = type == AE_IFDIR           ? B4_FILE_DIRECTORY
                     : type == AE_IFLNK         ? B4_FILE_SYMLINK
                     : type == AE_IFREG || hard ? B4_FILE_REGULAR
                                                : B4_FILE_OTHER;
        x->st.size = (uint64_t)archive_entry_size(e);
        x->st.executable = (archive_entry_perm(e) & 0111) != 0;
        x->st.mtime_ms =
                (int64_t)archive_entry_mtime(e) * 1000 + archive_entry_mtime_nsec(e) / 1000000;
        if (x->st.kind == B4_FILE_SYMLINK) {
                x->st.target = b4_strdup(
                        entry_text(archive_entry_symlink_utf8(e), archive_entry_symlink(e)) ?: "");
                if (!x->st.target)
                        return -ENOMEM;
                x->st.size = strlen(x->st.target);
        }
        w->n++;
        return 0;
}

/* A hard link entry carries no size: take it from the entry it links to. */
static void walk_fix_hardlink(struct walk *w, const char *prefix, struct archive_entry *e)
{
        const char *hard = entry_text(archive_entry_hardlink_utf8(e), archive_entry_hardlink(e));
        size_t plen = strlen(prefix);

        if (!hard || strncmp(hard, prefix, plen) != 0)
                return;
        for (size_t i = 0; i + 1 < w->n; i++)
                if (strcmp(w->v[i].path, hard + plen) == 0) {
                        w->v[w->n - 1].st.size = w->v[i].st.size;
                        return;
                }
}

static int walk_archive(struct archive *a, const char *prefix, struct walk *w, struct b4_error *err)
{
        cleanup_free char *rel = NULL;
        struct archive_entry *e;
        size_t plen = strlen(prefix);
        int r;

        for (;;) {
                int ar = archive_read_next_header(a, &e);
                const char *name;

                if (ar == ARCHIVE_EOF)
                        return 0;
                if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
                        return b4_error_set(err, -EIO, "unreadable archive: %s",
                                            archive_error_string(a));
                name = entry_text(archive_entry_pathname_utf8(e), archive_entry_pathname(e));
                if (!name || strncmp(name, prefix, plen) != 0)
                        continue;
                if (name[plen] == '\0') { /* the base itself */
                        if (!entry_allows(w->user, e, DOCKER_DAC_R | DOCKER_DAC_X))
                                return -EACCES;
                        continue;
                }
                free(rel);
                rel = b4_strdup(name + plen);
                if (!rel)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                for (size_t n = strlen(rel); n > 0 && rel[n - 1] == '/'; n--)
                        rel[n - 1] = '\0'; /* directories come as "d/" */
                if (under_any(w->prune, rel) || under_any(w->hidden, rel))
                        continue;
                if (archive_entry_filetype(e) == AE_IFDIR &&
                    !entry_allows(w->user, e, DOCKER_DAC_R | DOCKER_DAC_X) &&
                    strv_extend(&w->hidden, rel) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                r = walk_add(w, rel, e);
                if (r == -E2BIG)
                        return r; /* core words it */
                if (r < 0)
                        return b4_error_set(err, r, "out of memory");
                walk_fix_hardlink(w, prefix, e);
        }
}

static int archive_walk(struct docker_fs_target *t,
                        const char *path,
                        size_t max_entries,
                        char *const *prune,
                        struct b4_walk_entry **ret,
                        size_t *ret_n,
                        struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *prefix = NULL;
        struct docker_dac user = { 0 };
        struct walk w = { .max = max_entries, .prune = prune, .user = &user };
        struct archive *a = NULL;
        const char *base = strrchr(path, '/');
        int r;

        base = base && base[1] ? base + 1 : "";
        if (b4_asprintf(&prefix, "%s/", base) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = user_identity(t, path, &user, err);
        if (r >= 0)
                r = docker_archive_get(t->d, t->container, path, &s, err);
        if (r >= 0)
                r = tar_reader_open(s, &a, err);
        if (r >= 0)
                r = walk_archive(a, prefix, &w, err);
        tar_reader_free(a);
        strv_free(w.hidden);
        if (r < 0) {
                b4_walk_entries_free(w.v, w.n);
                return r == -E2BIG || r == -EAGAIN ? r : op_error(err, r, "walkTree", path);
        }
        if (w.n > 1)
                qsort_safe(w.v, w.n, sizeof(*w.v), walk_cmp);
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

/* ---- write_file, mkdir_p ---- */

/* PUT a tar of one file, owned by the sandbox uid/gid, into the existing directory @dir. */
static int put_file(struct docker_fs_target *t,
                    const char *dir,
                    const char *leaf,
                    const void *data,
                    size_t len,
                    unsigned mode,
                    struct b4_error *err)
{
        struct tar_builder *tb = NULL;
        const void *tar;
        size_t tar_len;
        int r;

        r = tar_builder_new(&tb);
        if (r >= 0)
                r = tar_builder_file(tb, leaf, data, len, mode, t->uid, t->gid);
        if (r >= 0)
                r = tar_builder_finish(tb, &tar, &tar_len);
        if (r < 0)
                r = b4_error_set(err, r, "cannot build the archive");
        else
                r = docker_archive_put(t->d, t->container, dir, tar, tar_len, err);
        tar_builder_free(tb);
        return r;
}

static int split_parent(const char *path, char **ret_dir, const char **ret_leaf)
{
        const char *slash = strrchr(path, '/');

        if (!slash || !slash[1])
                return -EINVAL;
        *ret_dir = slash == path ? b4_strdup("/") : b4_strndup(path, (size_t)(slash - path));
        *ret_leaf = slash + 1;
        return *ret_dir ? 0 : -ENOMEM;
}

/* Run @script as the user; a non-zero exit is the errno of its message. */
static int user_step(struct docker_fs_target *t,
                     const char *script,
                     char **args,
                     struct b4_exec_result *ret,
                     struct b4_error *err)
{
        struct b4_exec_result x = { 0 };
        int r;

        r = fs_exec(t, script, args, &x, err);
        if (r >= 0 && x.exit_code == 21)
                r = -EISDIR;
        else if (r >= 0 && x.exit_code != 0)
                r = exec_errno(&x, err);
        if (r >= 0 && ret)
                *ret = x;
        else
                b4_exec_result_clear(&x);
        return r;
}

/* Rename @tmp over @path inside the container, as the user: the replace is atomic (a reader
 * sees the old or the new file, never a half-written one) and a symlink leaf is replaced, not
 * followed. */
static int rename_into_place(struct docker_fs_target *t,
                             const char *tmp,
                             const char *path,
                             struct b4_error *err)
{
        return user_step(t, "mv -f -T -- \"$1\" \"$2\" || { rm -f -- \"$1\"; exit 1; }",
                         (char *[]){ (char *)tmp, (char *)path, NULL }, NULL, err);
}

/* The permission bits of a regular file's `ls -l` mode field ("-rwsr-x--T"). */
static bool ls_mode(const char *s, size_t n, unsigned *ret)
{
        static const char letters[] = "rwxrwxrwx";
        static const unsigned special[] = { 04000, 02000, 01000 };
        unsigned m = 0;

        if (n < 10 || s[0] != '-')
                return false;
        for (int i = 0; i < 9; i++) {
                char c = s[1 + i];
                bool xcol = i % 3 == 2;

                if (c == letters[i])
                        m |= 0400u >> i;
                else if (xcol && (c == 's' || c == 't'))
                        m |= (0400u >> i) | special[i / 3];
                else if (xcol && (c == 'S' || c == 'T'))
                        m |= special[i / 3];
                else if (c != '-')
                        return false;
        }
        *ret = m;
        return true;
}

/*
 * As the user: create the missing parents and the empty temporary file (refused exactly as
 * the user would be: EACCES in a directory the user cannot write), refuse a directory
 * leaf, and report the mode of an existing regular leaf (kept across the replace).
 */
static int prepare_write(struct docker_fs_target *t,
                         const char *dir,
                         const char *tmp_leaf,
                         const char *leaf,
                         unsigned *ret_mode,
                         struct b4_error *err)
{
        static const char script[] =
                "mkdir -p -- \"$1\" || exit 3; "
                "if [ -d \"$1/$3\" ] && [ ! -L \"$1/$3\" ]; then exit 21; fi; "
                "(set -C; : >\"$1/$2\") || exit 3; ls -ldn -- \"$1/$3\" 2>/dev/null; exit 0";
        struct b4_exec_result x = { 0 };
        unsigned mode = 0644;
        int r;

        r = user_step(t, script, (char *[]){ (char *)dir, (char *)tmp_leaf, (char *)leaf, NULL },
                      &x, err);
        if (r < 0)
                return r;
        if (ls_mode(x.out, x.out_len, &mode))
                *ret_mode = mode;
        b4_exec_result_clear(&x);
        return 0;
}

/*
 * The archive endpoint replaces a file by removing and recreating it, so the content goes to
 * a temporary name in the same directory first and is renamed over the target (the same
 * temp + rename as native), keeping an existing file's mode. dockerd writes as root, so the
 * user first creates that name itself: the PUT only fills a file the user could create.
 */
static int archive_write_file(struct docker_fs_target *t,
                              const char *path,
                              unsigned flags,
                              const void *data,
                              size_t len,
                              struct b4_error *err)
{
        cleanup_free char *dir = NULL, *tmp_path = NULL, *lexical = NULL, *confined = NULL;
        char tmp_leaf[32];
        uint32_t rnd = 0;
        const char *leaf;
        unsigned mode = 0644;
        int r;

        r = split_parent(path, &lexical, &leaf);
        if (r >= 0) /* the leaf is replaced, never followed: confine its parent */
                r = confine(t, lexical, flags, &dir, err);
        if (r >= 0 && flags)
                r = b4_asprintf(&confined, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, leaf);
        if (r < 0)
                return op_error(err, r, "writeFile", path);
        if (confined)
                path = confined;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = (uint32_t)getpid(); /* only has to differ from concurrent writers */
        (void)snprintf(tmp_leaf, sizeof(tmp_leaf), ".b4box-write-%08x", rnd);
        if (b4_asprintf(&tmp_path, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, tmp_leaf) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = prepare_write(t, dir, tmp_leaf, leaf, &mode, err);
        if (r >= 0) {
                r = put_file(t, dir, tmp_leaf, data, len, mode, err);
                if (r < 0)
                        (void)user_step(t, "rm -f -- \"$1\"", (char *[]){ tmp_path, NULL }, NULL,
                                        NULL);
        }
        if (r >= 0)
                r = rename_into_place(t, tmp_path, path, err);
        return r < 0 ? op_error(err, r, "writeFile", path) : 0;
}

static int archive_mkdir_p(struct docker_fs_target *t, const char *path, struct b4_error *err)
{
        int r = user_step(t, "mkdir -p -- \"$1\"", (char *[]){ (char *)path, NULL }, NULL, err);

        return r < 0 ? op_error(err, r, "mkdir", path) : 0;
}

/* ---- realpath ---- */

static int push_component(struct strbuf *sb, const char *c, size_t n)
{
        if (n == 0 || (n == 1 && c[0] == '.'))
                return 0;
        if (n == 2 && c[0] == '.' && c[1] == '.') {
                char *slash = sb->len ? strrchr(sb->buf, '/') : NULL;
                if (slash) {
                        sb->len = (size_t)(slash - sb->buf);
                        sb->buf[sb->len] = '\0';
                }
                return 0;
        }
        return strbuf_addc(sb, '/') < 0 ? -ENOMEM : strbuf_add(sb, c, n);
}

/* realpath -m inside the container; *ret_links: how many links it followed. */
static int resolve(struct docker_fs_target *t,
                   const char *path,
                   char **ret,
                   int *ret_links,
                   struct b4_error *err)
{
        struct strbuf sb;
        const char *p = path;
        int links = 0, r = 0;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        while (*p && r >= 0) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t)(end - p);
                char *target = NULL;
                struct b4_stat st = { 0 };
                size_t before = sb.len;

                r = push_component(&sb, p, n);
                p = *end ? end + 1 : end;
                if (r < 0 || sb.len <= before)
                        continue;
                r = lstat_raw(t, sb.buf, &st, &target, err);
                if (r == -ENOENT) {
                        for (r = 0; *p && r >= 0; p = *p ? p + 1 : p) {
                                end = strchrnul(p, '/');
                                r = push_component(&sb, p, (size_t)(end - p));
                                p = end;
                        }
                        break;
                }
                if (r >= 0 && target) {
                        if (++links > MAX_LINKS)
                                r = -ELOOP;
                        strbuf_reset(&sb);
                        if (r >= 0 && strcmp(target, "/") != 0)
                                r = strbuf_adds(&sb, target);
                        free(target);
                }
        }
        if (r >= 0)
                r = sb.len ? strbuf_detach(&sb, ret, NULL)
                           : ((*ret = b4_strdup("/")) ? 0 : -ENOMEM);
        strbuf_release(&sb);
        *ret_links = links;
        return r;
}

/* Fails closed: the reference returns the input unchanged, which let an unresolvable path
 * pass the jail as if it were canonical (audit H2). */
static int archive_realpath(struct docker_fs_target *t,
                            const char *path,
                            char **ret,
                            struct b4_error *err)
{
        int links = 0;
        int r = resolve(t, path, ret, &links, err);

        return r < 0 ? op_error(err, r, "realPath", path) : 0;
}

static bool in_workspace(const char *p)
{
        size_t n = strlen(B4_WORKSPACE_ROOT);

        return strncmp(p, B4_WORKSPACE_ROOT, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* The path an operation confined by @flags uses (a copy of @path when 0; see the top). */
static int confine(struct docker_fs_target *t,
                   const char *path,
                   unsigned flags,
                   char **ret,
                   struct b4_error *err)
{
        cleanup_free char *real = NULL;
        int links = 0, r;

        if (!flags) {
                *ret = b4_strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        r = resolve(t, path, &real, &links, err);
        if (r < 0)
                return r;
        if ((flags & B4_FS_NO_SYMLINKS) && links > 0)
                return -ELOOP;
        if ((flags & B4_FS_BENEATH) && !in_workspace(real))
                return -EXDEV;
        *ret = TAKE_PTR(real);
        return 0;
}

/* ---- exec-based members ---- */

static const char *const fork_failures[] = {
        "cannot fork",
        "can't fork",
        "cannot fork: resource temporarily unavailable",
        "can't fork: resource temporarily unavailable",
        "fork: resource temporarily unavailable",
        "fork: retry: resource temporarily unavailable",
};

/* Reference §3.6: every non-empty stderr line is "sh: [<digits>: ]<fork failure>" (busybox
 * ash writes "sh: line <digits>: "). */
bool docker_shell_fork_failure(const char *errout)
{
        bool any = false;

        for (const char *l = errout; *l;) {
                const char *end = strchrnul(l, '\n');
                const char *d = l;
                bool ok = false;

                if (end == l) {
                        l = *end ? end + 1 : end;
                        continue;
                }
                if (strncmp(d, "sh: ", 4) != 0)
                        return false;
                d += 4;
                if (strncmp(d, "line ", 5) == 0) /* busybox ash: "sh: line 0: can't fork..." */
                        d += 5;
                if (*d >= '0' && *d <= '9') {
                        while (*d >= '0' && *d <= '9')
                                d++;
                        if (strncmp(d, ": ", 2) != 0)
                                return false;
                        d += 2;
                }
                for (size_t i = 0; i < ELEMENTSOF(fork_failures); i++)
                        ok = ok || ((size_t)(end - d) == strlen(fork_failures[i]) &&
                                    strncasecmp(d, fork_failures[i], (size_t)(end - d)) == 0);
                if (!ok)
                        return false;
                any = true;
                l = *end ? end + 1 : end;
        }
        return any;
}

/* Reference §3.6: the exec never started (no marker) because runc could not fork. */
bool docker_admission_failure(const char *text)
{
        if (!strstr(text, "OCI runtime exec failed"))
                return false;
        return strstr(text, "Resource temporarily unavailable") ||
               strstr(text, "read init-p: connection reset by peer") ||
               (strstr(text, "unable to start container process") &&
                strstr(text, "procReady not received"));
}

/* Run @script (sh -c) with @args as the container's user, keeping up to @cap bytes of each
 * stream; -EAGAIN when PID exhaustion stopped it. */
static int fs_exec_capped(struct docker_fs_target *t,
                          const char *script,
                          char **args,
                          size_t cap,
                          struct b4_exec_result *ret,
                          struct b4_error *err)
{
        cleanup_strv char **argv = NULL;
        cleanup_free char *full = NULL;
        struct docker_exec_spec s = { .container = t->container, .output_cap = cap };
        struct b4_exec_result x = { 0 };
        bool started = false;
        int r;

        if (b4_asprintf(&full, "printf '%%s\\n' '%s'; %s", FS_MARKER_WORD, script) < 0 ||
            strv_extend(&argv, "sh") < 0 || strv_extend(&argv, "-c") < 0 ||
            strv_extend(&argv, full) < 0 || strv_extend(&argv, "sh") < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        STRV_FOREACH (a, args)
                if (strv_extend(&argv, *a) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        s.argv = argv;
        r = docker_exec_run_marked(t->d, &s, FS_MARKER, &started, &x, err);
        if (r < 0)
                return r;
        if (x.exit_code != 0 && ((started && docker_shell_fork_failure(x.errout)) ||
                                 (!started && (docker_admission_failure(x.out) ||
                                               docker_admission_failure(x.errout))))) {
                r = b4_error_set(err, -EAGAIN, "%s", started ? x.errout : x.out);
                b4_exec_result_clear(&x);
                return r;
        }
        *ret = x;
        return 0;
}

static int fs_exec(struct docker_fs_target *t,
                   const char *script,
                   char **args,
                   struct b4_exec_result *ret,
                   struct b4_error *err)
{
        return fs_exec_capped(t, script, args, FS_OUTPUT_CAP, ret, err);
}

static int archive_list_dir(struct docker_fs_target *t,
                            const char *path,
                            unsigned flags,
                            char ***ret,
                            struct b4_error *err)
{
        static const char script[] = CONFINED_FN
                "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 2; [ -d \"$1\" ] || exit 20; "
                "cd -P -- \"$1\" || exit 13; [ -z \"$2\" ] || b4c \"$2\" \"$1\" cwd || exit 40; "
                "for f in * .*; do case $f in .|..) continue;; esac; "
                "if [ -e \"$f\" ] || [ -L \"$f\" ]; then printf '%s\\0' \"$f\"; fi; done";
        struct b4_exec_result x = { 0 };
        cleanup_strv char **names = NULL;
        cleanup_free char *use = NULL;
        size_t n = 0;
        int r;

        r = confine(t, path, flags, &use, err);
        if (r < 0)
                return op_error(err, r, "listDir", path);
        r = fs_exec(t, script, (char *[]){ use, (char *)confined_mode(flags), NULL }, &x, err);
        if (r < 0)
                return r == -EAGAIN ? r : op_error(err, r, "listDir", path);
        r = x.exit_code == 0    ? 0
            : x.exit_code == 2  ? -ENOENT
            : x.exit_code == 20 ? -ENOTDIR
            : x.exit_code == 13 ? -EACCES
            : x.exit_code == 40 ? -ELOOP
                                : -EIO;
        if (r == -EIO)
                (void)b4_error_set(err, r, "listDir %s: %s", path, x.errout);
        for (size_t i = 0; r == 0 && i < x.out_len; i += strlen(x.out + i) + 1)
                if (x.out[i] && ++n > B4_LIST_MAX_ENTRIES)
                        r = -E2BIG;
                else if (x.out[i] && strv_extend(&names, x.out + i) < 0)
                        r = -ENOMEM;
        b4_exec_result_clear(&x);
        if (r == -E2BIG)
                return r; /* core words it */
        if (r < 0)
                return r == -EIO ? r : op_error(err, r, "listDir", path);
        if (!names && !(names = b4_calloc(1, sizeof(char *))))
                return b4_error_set(err, -ENOMEM, "out of memory");
        strv_sort(names);
        *ret = TAKE_PTR(names);
        return 0;
}

static int simple_exec(struct docker_fs_target *t,
                       const char *op,
                       const char *script,
                       const char *path,
                       struct b4_error *err)
{
        struct b4_exec_result x = { 0 };
        int r;

        r = fs_exec(t, script, (char *[]){ (char *)path, NULL }, &x, err);
        if (r < 0)
                return r == -EAGAIN ? r : op_error(err, r, op, path);
        if (x.exit_code != 0) {
                size_t n = x.errout_len;
                while (n > 0 && x.errout[n - 1] == '\n')
                        n--;
                r = b4_error_set(err,
                                 x.exit_code == 2    ? -ENOENT
                                 : x.exit_code == 20 ? -ENOTEMPTY
                                                     : -EIO,
                                 "%s %s: %.*s", op, path, (int)n, x.errout);
        }
        b4_exec_result_clear(&x);
        return r;
}

static int archive_remove(struct docker_fs_target *t, const char *path, struct b4_error *err)
{
        return simple_exec(t, "removeFile",
                           "if [ -d \"$1\" ] && [ ! -L \"$1\" ]; then rmdir -- \"$1\" 2>/dev/null "
                           "|| exit 20; else rm -f -- \"$1\"; fi",
                           path, err);
}

static int archive_touch(struct docker_fs_target *t,
                         const char *path,
                         unsigned flags,
                         struct b4_error *err)
{
        cleanup_free char *use = NULL;
        int r = confine(t, path, flags, &use, err);

        if (r < 0)
                return op_error(err, r, "touchFile", path);
        return simple_exec(t, "touchFile", "touch -- \"$1\"", use, err);
}

/* ---- read_files: one batched script per ~96 KiB ---- */

static int batch_line(struct strbuf *sb, const struct b4_read_req *q)
{
        cleanup_free char *qp = NULL;
        char count[24];

        if (docker_shell_quote(q->path, &qp) < 0)
                return -ENOMEM;
        read_count(q->max_bytes, count);
        return strbuf_addf(sb, "b4r %s '%s' '' | base64; echo '#'\n", qp, count);
}

static int decode_blob(const char *s, size_t n, const struct b4_read_req *q, struct b4_blob *b)
{
        char *data = NULL;
        size_t len;

        if (docker_base64_decode(s, n, &data, &len) < 0)
                return -EPROTO;
        return read_record(data, len, q->max_bytes, b);
}

/* Run one batch script answering reqs[sel[0..n)] into the same slots of @out. */
static int run_batch(struct docker_fs_target *t,
                     const char *script,
                     const struct b4_read_req *reqs,
                     const size_t *sel,
                     size_t n,
                     struct b4_blob *out,
                     struct b4_error *err)
{
        struct b4_exec_result x = { 0 };
        const char *p;
        size_t i = 0;
        int r;

        r = fs_exec(t, script, NULL, &x, err);
        if (r < 0)
                return r;
        if (x.exit_code != 0 || x.truncated) {
                r = b4_error_set(err, -EIO, "readBinaryFiles failed: %s",
                                 x.errout_len ? x.errout : "invalid read status");
                b4_exec_result_clear(&x);
                return r;
        }
        p = x.out;
        for (i = 0; r >= 0 && i < n; i++) {
                const char *q = p, *term = NULL;

                while (*q && !term) {
                        const char *e = strchrnul(q, '\n');
                        if (e - q == 1 && *q == '#')
                                term = q;
                        q = *e ? e + 1 : e;
                }
                if (!term)
                        break;
                r = decode_blob(p, (size_t)(term - p), &reqs[sel[i]], &out[sel[i]]);
                p = q;
        }
        b4_exec_result_clear(&x);
        if (r < 0 || i != n)
                return b4_error_set(err, -EPROTO, "Invalid readBinaryFiles response");
        return 0;
}

/* ---- read_files through one archive of the requests' common directory ---- */

#define ARCHIVE_BATCH_MIN   8
#define ARCHIVE_BATCH_SLACK (32u << 20) /* bytes of other files we accept to stream past */
#define ARCHIVE_PER_FILE    (16u << 20)

struct areq {
        const char *rel; /* the request's path below the common directory */
        size_t idx;
};

static int areq_cmp(const void *a, const void *b)
{
        return strcmp(((const struct areq *)a)->rel, ((const struct areq *)b)->rel);
}

/* The deepest directory holding every request, or NULL when that is "/" (never archive the
 * whole container). */
static char *common_dir(const struct b4_read_req *reqs, size_t n)
{
        const char *slash = strrchr(reqs[0].path, '/');
        char *dir;
        size_t len;

        if (!slash || slash == reqs[0].path)
                return NULL;
        dir = b4_strndup(reqs[0].path, (size_t)(slash - reqs[0].path));
        for (size_t i = 1; dir && i < n; i++) {
                for (;;) {
                        len = strlen(dir);
                        if (strncmp(reqs[i].path, dir, len) == 0 && reqs[i].path[len] == '/')
                                break;
                        slash = strrchr(dir, '/');
                        if (!slash || slash == dir) {
                                free(dir);
                                return NULL;
                        }
                        dir[slash - dir] = '\0';
                }
        }
        return dir;
}

/* One tar entry against a request: *pending is left set for what the archive cannot prove
 * (links, hard links, special files, a file the user may not read): the exec batch reads
 * those as the user. */
static int batch_entry(struct archive *a,
                       struct archive_entry *e,
                       const struct docker_dac *user,
                       const struct b4_read_req *q,
                       struct b4_blob *b,
                       bool *pending)
{
        mode_t type = archive_entry_filetype(e);
        uint64_t size = (uint64_t)archive_entry_size(e);

        *b = (struct b4_blob){ 0 };
        if (type == AE_IFDIR)
                return (b->error = -EISDIR), (*pending = false), 0;
        if (type != AE_IFREG || archive_entry_hardlink(e) || !entry_allows(user, e, DOCKER_DAC_R))
                return 0;
        *pending = false;
        if (q->max_bytes != B4_UNBOUNDED && size > q->max_bytes)
                return (b->error = -EFBIG), 0;
        return read_entry(a, size, &b->data, &b->len);
}

struct abatch {
        const char *prefix;
        struct areq *idx;
        size_t n;
        const struct b4_read_req *reqs;
        struct b4_blob *out;
        bool *pending;
        const struct docker_dac *user;
        char **hidden; /* directories the user cannot search: their members stay pending */
};

/* The requests that tar member @rel answers (the data of a member is read once). */
static int batch_member(struct abatch *ab, struct archive *a, struct archive_entry *e, char *rel)
{
        struct areq key = { .rel = rel }, *hit;
        int r = 0;

        if (under_any(ab->hidden, rel))
                return 0;
        if (archive_entry_filetype(e) == AE_IFDIR && !entry_allows(ab->user, e, DOCKER_DAC_X) &&
            strv_extend(&ab->hidden, rel) < 0)
                return -ENOMEM;
        hit = bsearch(&key, ab->idx, ab->n, sizeof(*ab->idx), areq_cmp);
        while (hit && hit > ab->idx && strcmp(hit[-1].rel, rel) == 0)
                hit--;
        for (; hit && hit < ab->idx + ab->n && strcmp(hit->rel, rel) == 0; hit++) {
                size_t i = hit->idx;
                r = batch_entry(a, e, ab->user, &ab->reqs[i], &ab->out[i], &ab->pending[i]);
                if (r < 0 || ab->out[i].data)
                        break; /* the data is consumed: a duplicate request stays pending */
        }
        return r;
}

static int batch_walk(struct abatch *ab, struct archive *a)
{
        size_t plen = strlen(ab->prefix);
        struct archive_entry *e;
        int r;

        for (;;) {
                int ar = archive_read_next_header(a, &e);
                const char *name;
                char *rel;

                if (ar == ARCHIVE_EOF)
                        return 0;
                if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
                        return archive_errno(a) == E2BIG ? -E2BIG : -EIO;
                name = entry_text(archive_entry_pathname_utf8(e), archive_entry_pathname(e));
                if (!name || strncmp(name, ab->prefix, plen) != 0)
                        continue;
                rel = b4_strdup(name + plen);
                if (!rel)
                        return -ENOMEM;
                for (size_t k = strlen(rel); k > 0 && rel[k - 1] == '/'; k--)
                        rel[k - 1] = '\0';
                r = batch_member(ab, a, e, rel);
                free(rel);
                if (r < 0)
                        return r;
        }
}

static void blobs_reset(struct b4_blob *out, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(out[i].data);
                out[i] = (struct b4_blob){ 0 };
        }
}

/* Answer from one archive of the common directory what the user's DAC allows; the rest stays
 * in @pending (all of it when not applicable or over budget). Return: 0 or -errno. */
static int archive_batch(struct docker_fs_target *t,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob *out,
                         bool *pending,
                         struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *s = NULL;
        cleanup_free char *dir = NULL, *prefix = NULL;
        cleanup_free struct areq *idx = NULL;
        struct docker_dac user = { 0 };
        struct abatch ab = { .n = n, .reqs = reqs, .out = out, .pending = pending, .user = &user };
        struct archive *a = NULL;
        uint64_t budget = ARCHIVE_BATCH_SLACK;
        size_t dlen;
        int r;

        if (n < ARCHIVE_BATCH_MIN || !(dir = common_dir(reqs, n)))
                return 0;
        dlen = strlen(dir);
        idx = b4_calloc(n, sizeof(*idx));
        if (!idx || b4_asprintf(&prefix, "%s/", strrchr(dir, '/') + 1) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                idx[i] = (struct areq){ .rel = reqs[i].path + dlen + 1, .idx = i };
                budget += 1024 + (reqs[i].max_bytes < ARCHIVE_PER_FILE ? reqs[i].max_bytes
                                                                       : ARCHIVE_PER_FILE);
        }
        qsort_safe(idx, n, sizeof(*idx), areq_cmp);
        ab.idx = idx;
        ab.prefix = prefix;
        r = user_identity(t, dir, &user, NULL);
        if (r == -EAGAIN)
                return b4_error_set(err, r, "readBinaryFiles: the sandbox is out of processes");
        if (r < 0) /* not searchable (or gone): the exec batch says what the user gets */
                return 0;
        r = docker_archive_get(t->d, t->container, dir, &s, NULL);
        if (r >= 0)
                r = tar_reader_open_budget(s, budget, &a, err);
        if (r >= 0)
                r = batch_walk(&ab, a);
        tar_reader_free(a);
        strv_free(ab.hidden);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r < 0) { /* over budget, gone or unreadable: all of it goes to the exec batch */
                blobs_reset(out, n);
                for (size_t i = 0; i < n; i++)
                        pending[i] = true;
        }
        return 0;
}

/* The exec batch over the pending requests, in scripts of at most BATCH_SCRIPT_MAX bytes. */
static int exec_batch(struct docker_fs_target *t,
                      const struct b4_read_req *reqs,
                      size_t n,
                      const bool *pending,
                      struct b4_blob *out,
                      struct b4_error *err)
{
        struct strbuf sb;
        int r = 0;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        for (size_t i = 0; r >= 0 && i < n;) {
                size_t sel[BATCH_SCRIPT_MAX / 32], m = 0;

                strbuf_reset(&sb);
                r = strbuf_adds(&sb, READ_FN);
                for (; r >= 0 && i < n && m < ELEMENTSOF(sel); i++) {
                        size_t before = sb.len;
                        if (!pending[i])
                                continue;
                        r = batch_line(&sb, &reqs[i]);
                        if (r >= 0 && sb.len > BATCH_SCRIPT_MAX && m > 0) {
                                sb.len = before;
                                sb.buf[before] = '\0';
                                break;
                        }
                        sel[m++] = i;
                }
                if (r >= 0 && m > 0)
                        r = run_batch(t, sb.buf, reqs, sel, m, out, err);
        }
        strbuf_release(&sb);
        return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
}

static int archive_read_files(struct docker_fs_target *t,
                              const struct b4_read_req *reqs,
                              size_t n,
                              struct b4_blob **ret,
                              struct b4_error *err)
{
        struct b4_blob *out = b4_calloc(n ? n : 1, sizeof(*out));
        cleanup_free bool *pending = b4_calloc(n ? n : 1, sizeof(*pending));
        int r;

        if (!out || !pending) {
                free(out);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++)
                pending[i] = true;
        r = archive_batch(t, reqs, n, out, pending, err);
        if (r >= 0)
                r = exec_batch(t, reqs, n, pending, out, err);
        if (r < 0) {
                b4_blobs_free(out, n);
                return r;
        }
        *ret = out;
        return 0;
}

/* ---- the members: the fallback of the agent-backed table (agent-fs-ops.h) ---- */

/*
 * A handle's or reader's agent-backed table hands a call to these when the container has no
 * agent, or when the agent answered -EIO: it could not start the request (no thread for it
 * at the keeper's pids limit, where the fallback's fork failure recovers the keeper), or
 * reported an errno outside the member's contract. The agent's walk (native's rules) also
 * stops at a directory the user cannot read (-EACCES); this provider's walk lists what
 * `ls -R` lists and goes on, which the archive walk does from the user's DAC: so such a
 * tree takes this path. A connection error (-ENOTCONN, -EAGAIN) is core's to recover.
 */
bool docker_fs_falls_back(enum agent_fs_op op, int r)
{
        return r == -EIO || (op == AGENT_FS_WALK && r == -EACCES);
}

int docker_fs_read_file(struct docker_fs_target *t,
                        const char *path,
                        unsigned flags,
                        uint64_t max_bytes,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        return archive_read_file(t, path, flags, max_bytes, ret, ret_len, err);
}

int docker_fs_lstat(struct docker_fs_target *t,
                    const char *path,
                    struct b4_stat *ret,
                    struct b4_error *err)
{
        return archive_lstat(t, path, ret, err);
}

int docker_fs_stat(struct docker_fs_target *t,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err)
{
        return archive_stat(t, path, flags, ret, err);
}

int docker_fs_list_dir(struct docker_fs_target *t,
                       const char *path,
                       unsigned flags,
                       char ***ret,
                       struct b4_error *err)
{
        return archive_list_dir(t, path, flags, ret, err);
}

int docker_fs_realpath(struct docker_fs_target *t,
                       const char *path,
                       char **ret,
                       struct b4_error *err)
{
        return archive_realpath(t, path, ret, err);
}

int docker_fs_walk(struct docker_fs_target *t,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        return archive_walk(t, path, max_entries, prune, ret, ret_n, err);
}

int docker_fs_read_files(struct docker_fs_target *t,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err)
{
        return archive_read_files(t, reqs, n, ret, err);
}

int docker_fs_write_file(struct docker_fs_target *t,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err)
{
        return archive_write_file(t, path, flags, data, len, err);
}

int docker_fs_mkdir_p(struct docker_fs_target *t, const char *path, struct b4_error *err)
{
        return archive_mkdir_p(t, path, err);
}

int docker_fs_remove(struct docker_fs_target *t, const char *path, struct b4_error *err)
{
        return archive_remove(t, path, err);
}

int docker_fs_touch(struct docker_fs_target *t,
                    const char *path,
                    unsigned flags,
                    struct b4_error *err)
{
        return archive_touch(t, path, flags, err);
}
