/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image_import() (image.h): a `docker save` archive or an OCI image layout into the store.
 *
 *   1. A tar is unpacked into images/tmp/imp-XXXXXX/in (regular files, directories and
 *      relative symlinks only); a directory is read in place. Every later open is
 *      openat2(RESOLVE_BENEATH) from that directory, so no name in it reaches outside.
 *   2. The manifest: an OCI layout's index.json (one level of nested index), else a docker
 *      save's manifest.json. The config blob's sha256 must be its digest (its file name);
 *      every OCI layer blob's sha256 its manifest digest; every layer's *uncompressed*
 *      sha256 the config's rootfs.diff_ids entry (a first pass through libarchive's raw
 *      reader), so the config digest, the identity, pins the content.
 *   3. The layers are applied in order into tmp/root: whiteouts (.wh.NAME) remove NAME from
 *      the layers below, an opaque marker (.wh..wh..opq) empties its directory of them;
 *      setuid/setgid bits are dropped; device nodes, absolute paths, ".." and hard links
 *      leaving the root are refused. libarchive writes with SECURE_SYMLINKS (no symlink in a
 *      written path is followed) and SECURE_NODOTDOT, into the root's canonical path.
 *   4. tmp/root is renamed to roots/<hex> (kept when that image is already there), the
 *      config copied to configs/<hex>, then the references written.
 */

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/rm-rf.h"
#include "base/strv.h"
#include "image-internal.h"
#include "json/json.h"

#define READ_CHUNK (256u * 1024u)
#define WH_PREFIX  ".wh."
#define WH_OPAQUE  ".wh..wh..opq"
#define EXTRACT_FLAGS                                                                            \
 (ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_UNLINK | \
  ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT)

static int open_beneath(int dirfd, const char *path)
{
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

        return fd < 0 ? -errno : (int)fd;
}

static int read_beneath(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
        int fd = open_beneath(dirfd, path), r;

        if (fd < 0)
                return fd;
        r = read_full_fd(fd, max, ret, ret_len);
        (void)close(fd);
        return r;
}

/* "@a/@b" (or @b when @a is empty) into @buf; false when it does not fit. */
static bool path_join(char *buf, size_t size, const char *a, const char *b)
{
        int n = snprintf(buf, size, "%s%s%s", a, *a ? "/" : "", b);

        return n >= 0 && (size_t)n < size;
}

/* ---- reading the manifest ----------------------------------------------------------------- */

/* A blob named by @desc ({digest}), its digest verified; *@ret_text heap. */
static int oci_blob(
        int in, const struct jv *desc, char **ret_text, size_t *ret_len, struct b4_error *err)
{
        cleanup_free char *path = NULL;
        char hex[65], got[65];
        int r;

        if (!manifest_digest_hex(jv_object_get(desc, "digest"), hex))
                return b4_error_set(err, -EINVAL, "a descriptor has no sha256 digest");
        r = manifest_blob_path(hex, &path);
        if (r >= 0)
                r = read_beneath(in, path, IMAGE_CONFIG_MAX, ret_text, ret_len);
        if (r < 0)
                return b4_error_set(err, r == -ENOMEM ? r : -EINVAL, "blob sha256:%s: %s", hex,
                                    strerror(-r));
        sha256_hex(*ret_text, *ret_len, got);
        if (strcmp(got, hex) != 0)
                return b4_error_set(err, -EINVAL, "blob sha256:%s does not match its digest", hex);
        return 0;
}

/* index.json (one level of nested index) to the image manifest. */
static int oci_manifest(int in, struct manifest *m, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *desc = NULL, *inner = NULL;
        cleanup_free char *text = NULL, *nested = NULL, *man = NULL;
        size_t len = 0, nested_len = 0, man_len = 0;
        int r = read_beneath(in, "index.json", IMAGE_CONFIG_MAX, &text, &len);

        if (r < 0)
                return b4_error_set(err, -EINVAL, "index.json lists no manifest");
        r = manifest_index_first(text, len, false, m, &desc, err);
        if (r >= 0 && manifest_desc_is_index(desc)) {
                r = oci_blob(in, desc, &nested, &nested_len, err);
                if (r >= 0)
                        r = manifest_index_first(nested, nested_len, true, m, &inner, err);
        }
        if (r >= 0)
                r = oci_blob(in, inner ? inner : desc, &man, &man_len, err);
        if (r >= 0)
                r = manifest_oci_parse(man, man_len, m, err);
        return r;
}

static int docker_manifest(int in, struct manifest *m, struct b4_error *err)
{
        cleanup_free char *text = NULL;
        size_t len = 0;
        int r = read_beneath(in, "manifest.json", IMAGE_CONFIG_MAX, &text, &len);

        if (r < 0)
                return b4_error_set(err, -EINVAL, "manifest.json lists no image");
        return manifest_docker_parse(text, len, m, err);
}

/* The config blob verified; its rootfs.diff_ids (one per layer) into @diff_ids. */
static int check_config(int in,
                        const struct manifest *m,
                        char **ret_text,
                        size_t *ret_len,
                        char diff_ids[][65],
                        struct b4_error *err)
{
        char got[65];
        int r = read_beneath(in, m->config_path, IMAGE_CONFIG_MAX, ret_text, ret_len);

        if (r < 0)
                return b4_error_set(err, r == -ENOMEM ? r : -EINVAL, "the config '%s': %s",
                                    m->config_path, strerror(-r));
        sha256_hex(*ret_text, *ret_len, got);
        if (strcmp(got, m->config_hex) != 0)
                return b4_error_set(err, -EINVAL, "the config does not match its digest sha256:%s",
                                    m->config_hex);
        return manifest_diff_ids(*ret_text, *ret_len, m, diff_ids, err);
}

/* ---- verifying and applying a layer --------------------------------------------------- */

struct layer_src {
        int fd;
        struct sha256_ctx *blob; /* the raw bytes, as stored */
        char buf[READ_CHUNK];
};

static la_ssize_t src_read(struct archive *a, void *data, const void **buf)
{
        struct layer_src *s = data;
        ssize_t n = read(s->fd, s->buf, sizeof(s->buf));

        (void)a;
        if (n > 0 && s->blob)
                sha256_update(s->blob, s->buf, (size_t)n);
        *buf = s->buf;
        return n;
}

static struct archive *open_layer(struct layer_src *s, bool raw)
{
        struct archive *a = archive_read_new();

        if (!a)
                return NULL;
        (void)archive_read_support_filter_all(a);
        if (raw)
                (void)archive_read_support_format_raw(a);
        else
                (void)archive_read_support_format_tar(a);
        if (archive_read_open(a, s, NULL, src_read, NULL) != ARCHIVE_OK) {
                (void)archive_read_free(a);
                return NULL;
        }
        return a;
}

/* Pass 1: the blob's digest and the uncompressed stream's (the diff id). */
static int verify_layer(int in,
                        const struct image_layer *l,
                        const char *diff_hex,
                        struct b4_error *err)
{
        struct layer_src *s = b4_calloc(1, sizeof(*s));
        struct sha256_ctx *diff = sha256_new();
        struct archive_entry *e;
        struct archive *a = NULL;
        char blob_got[65] = "", diff_got[65];
        const void *buf;
        size_t len;
        la_int64_t off;
        int r = 0;

        if (!s || !diff || !(s->blob = sha256_new()))
                r = -ENOMEM;
        if (r >= 0 && (s->fd = open_beneath(in, l->path)) < 0)
                r = b4_error_set(err, -EINVAL, "layer '%s': %s", l->path, strerror(-s->fd));
        if (r >= 0 && !(a = open_layer(s, true)))
                r = b4_error_set(err, -EINVAL, "layer '%s' cannot be read", l->path);
        if (r >= 0 && archive_read_next_header(a, &e) != ARCHIVE_OK)
                r = b4_error_set(err, -EINVAL, "layer '%s' cannot be read", l->path);
        while (r >= 0) {
                int ar = archive_read_data_block(a, &buf, &len, &off);
                if (ar == ARCHIVE_EOF)
                        break;
                if (ar != ARCHIVE_OK)
                        r = b4_error_set(err, -EINVAL, "layer '%s': %s", l->path,
                                         archive_error_string(a));
                else
                        sha256_update(diff, buf, len);
        }
        if (a)
                (void)archive_read_free(a);
        if (diff)
                sha256_final_hex(diff, diff_got);
        if (s && s->blob)
                sha256_final_hex(s->blob, blob_got);
        if (s && s->fd > 0)
                (void)close(s->fd);
        free(s);
        if (r < 0)
                return r;
        if (l->blob_hex && strcmp(blob_got, l->blob_hex) != 0)
                return b4_error_set(err, -EINVAL, "layer blob sha256:%s does not match its digest",
                                    l->blob_hex);
        if (strcmp(diff_got, diff_hex) != 0)
                return b4_error_set(err, -EINVAL,
                                    "layer '%s' does not match the config's diff id sha256:%s",
                                    l->path, diff_hex);
        return 0;
}

struct apply {
        int root_fd;
        const char *root;     /* canonical path */
        char **written;       /* paths this layer wrote (opaque markers keep them) */
        struct archive *disk; /* archive_write_disk */
};

static bool written_here(const struct apply *ap, const char *path)
{
        return strv_contains(ap->written, path);
}

/* Remove what lower layers put in @dir (relative; "" = the root), not this layer's. */
static int opaque(struct apply *ap, const char *dir)
{
        cleanup_close int fd = -EBADF;
        struct dirent *de;
        DIR *d;
        int r = 0;

        fd = *dir ? openat(ap->root_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                  : fcntl(ap->root_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(TAKE_FD(fd));
        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d))) {
                char path[PATH_MAX];

                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (!path_join(path, sizeof(path), dir, de->d_name))
                        r = -ENAMETOOLONG;
                else if (!written_here(ap, path))
                        r = rm_rf_at(dirfd(d), de->d_name);
        }
        (void)closedir(d);
        return r;
}

static int whiteout(struct apply *ap, const char *rel, struct b4_error *err)
{
        const char *slash = strrchr(rel, '/');
        const char *base = slash ? slash + 1 : rel;
        char dir[PATH_MAX] = "", victim[PATH_MAX];
        cleanup_close int dfd = -EBADF;

        if (slash)
                (void)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
        if (strcmp(base, WH_OPAQUE) == 0)
                return opaque(ap, dir);
        if (!path_join(victim, sizeof(victim), dir, base + strlen(WH_PREFIX)))
                return b4_error_set(err, -ENAMETOOLONG, "whiteout '%s'", rel);
        if (!*(base + strlen(WH_PREFIX)) || written_here(ap, victim))
                return 0;
        dfd = *dir ? openat(ap->root_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                   : fcntl(ap->root_fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return errno == ENOENT ? 0 : b4_error_set(err, -errno, "whiteout '%s'", rel);
        return rm_rf_at(dfd, base + strlen(WH_PREFIX));
}

/* One entry: refused, a whiteout, or written under the root with its path prefixed. */
static int apply_entry(struct apply *ap,
                       struct archive *a,
                       struct archive_entry *e,
                       struct b4_error *err)
{
        char rel[PATH_MAX], full[PATH_MAX], link[PATH_MAX];
        mode_t type = archive_entry_filetype(e);
        const char *hl = archive_entry_hardlink(e);
        const char *base;
        int r;

        if (!image_path_clean(archive_entry_pathname(e), rel, sizeof(rel)))
                return b4_error_set(err, -EINVAL, "refused: the entry '%s' leaves the image root",
                                    archive_entry_pathname(e));
        if (!*rel)
                return 0; /* the root itself */
        if (type == AE_IFCHR || type == AE_IFBLK)
                return b4_error_set(err, -EINVAL, "refused: '%s' is a device node", rel);
        base = strrchr(rel, '/');
        base = base ? base + 1 : rel;
        if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0)
                return whiteout(ap, rel, err);
        if (hl) {
                if (!image_path_clean(hl, link, sizeof(link)) || !*link)
                        return b4_error_set(err, -EINVAL,
                                            "refused: the hard link '%s' points out of the image "
                                            "root",
                                            rel);
                if (!path_join(full, sizeof(full), ap->root, link))
                        return b4_error_set(err, -ENAMETOOLONG, "'%s': path too long", rel);
                archive_entry_copy_hardlink(e, full);
        }
        archive_entry_set_perm(e, archive_entry_perm(e) & ~(mode_t)06000);
        if (!path_join(full, sizeof(full), ap->root, rel))
                return b4_error_set(err, -ENAMETOOLONG, "'%s': path too long", rel);
        archive_entry_copy_pathname(e, full);
        if (strv_extend(&ap->written, rel) < 0)
                return -ENOMEM;
        r = archive_read_extract2(a, e, ap->disk);
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
                return b4_error_set(err, -EINVAL, "refused: '%s': %s", rel,
                                    archive_error_string(ap->disk));
        return 0;
}

/* Pass 2: apply one verified layer. */
static int apply_layer(struct apply *ap, int in, const struct image_layer *l, struct b4_error *err)
{
        struct layer_src *s = b4_calloc(1, sizeof(*s));
        struct archive_entry *e;
        struct archive *a = NULL;
        int r = s ? 0 : -ENOMEM, ar;

        if (r >= 0 && (s->fd = open_beneath(in, l->path)) < 0)
                r = s->fd;
        if (r >= 0 && !(a = open_layer(s, false)))
                r = b4_error_set(err, -EINVAL, "layer '%s' cannot be read", l->path);
        while (r >= 0 && (ar = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
                if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
                        r = b4_error_set(err, -EINVAL, "layer '%s': %s", l->path,
                                         archive_error_string(a));
                else
                        r = apply_entry(ap, a, e, err);
        }
        if (a)
                (void)archive_read_free(a);
        if (s && s->fd > 0)
                (void)close(s->fd);
        free(s);
        strv_free(ap->written);
        ap->written = NULL;
        return r;
}

/* ---- the outer archive ------------------------------------------------------------------ */

/* A docker save or OCI layout tar into @dir: files, directories and relative symlinks. */
static int unpack_outer(const char *path, const char *dir, struct b4_error *err)
{
        struct archive *a = archive_read_new(), *disk = archive_write_disk_new();
        struct archive_entry *e;
        char rel[PATH_MAX], full[PATH_MAX];
        int r = a && disk ? 0 : -ENOMEM, ar;

        if (r >= 0) {
                (void)archive_read_support_filter_all(a);
                (void)archive_read_support_format_tar(a);
                (void)archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                                   ARCHIVE_EXTRACT_SECURE_NODOTDOT);
                if (archive_read_open_filename(a, path, READ_CHUNK) != ARCHIVE_OK)
                        r = b4_error_set(err, -EINVAL, "cannot read '%s': %s", path,
                                         archive_error_string(a));
        }
        while (r >= 0 && (ar = archive_read_next_header(a, &e)) != ARCHIVE_EOF) {
                mode_t t = archive_entry_filetype(e);
                const char *target = archive_entry_symlink(e);

                if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
                        r = b4_error_set(err, -EINVAL, "'%s' is not a tar archive: %s", path,
                                         archive_error_string(a));
                else if (!image_path_clean(archive_entry_pathname(e), rel, sizeof(rel)) ||
                         (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) ||
                         (t == AE_IFLNK && (!target || target[0] == '/')))
                        r = b4_error_set(err, -EINVAL, "refused: the archive entry '%s'",
                                         archive_entry_pathname(e));
                else if (*rel && !path_join(full, sizeof(full), dir, rel))
                        r = b4_error_set(err, -ENAMETOOLONG, "'%s': path too long", rel);
                else if (*rel) {
                        archive_entry_copy_pathname(e, full);
                        archive_entry_set_perm(e, t == AE_IFDIR ? 0700 : 0600);
                        ar = archive_read_extract2(a, e, disk);
                        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
                                r = b4_error_set(err, -EINVAL, "cannot unpack '%s': %s", rel,
                                                 archive_error_string(disk));
                }
        }
        if (a)
                (void)archive_read_free(a);
        if (disk)
                (void)archive_write_free(disk);
        return r;
}

/* ---- the import ------------------------------------------------------------------------- */

static int write_ref(int refs, const char *ref, const char *hex)
{
        cleanup_free char *norm = NULL, *text = NULL;
        char file[SHA256_HEX_LEN + 1];
        int r = image_ref_normalize(ref, &norm);

        if (r < 0)
                return r;
        if (strncmp(norm, "sha256:", 7) == 0 || strchr(norm, '@'))
                return 0; /* a digest names the image already */
        image_ref_file(norm, file);
        if (b4_asprintf(&text, "%s\n%s\n", norm, hex) < 0)
                return -ENOMEM;
        return write_file_atomic_at(refs, file, text, strlen(text), 0644);
}

/* The archive's tags, then @name (NULL ok). */
static int write_refs(const char *state_dir, char **tags, const char *name, const char *hex)
{
        cleanup_close int refs = -EBADF;
        int r = image_dir(state_dir, "refs", &refs);

        STRV_FOREACH (t, r >= 0 ? tags : NULL)
                if ((r = write_ref(refs, *t, hex)) < 0)
                        return r;
        if (r >= 0 && name)
                r = write_ref(refs, name, hex);
        return r;
}

struct import {
        char tmp[PATH_MAX]; /* images/tmp/imp-XXXXXX */
        int in;             /* the input directory */
        struct manifest m;
        char *config;
        size_t config_len;
        char diff_ids[IMAGE_LAYERS_MAX][65];
};

static int unpack_root(struct import *im, const char *state_dir, struct b4_error *err)
{
        char root[PATH_MAX], canon[PATH_MAX];
        struct apply ap = { .root_fd = -EBADF };
        cleanup_close int roots = -EBADF;
        int r;

        if (!path_join(root, sizeof(root), im->tmp, "root") || mkdir(root, 0755) < 0 ||
            !realpath(root, canon))
                return b4_error_set(err, -errno, "cannot make '%s'", root);
        ap.root = canon;
        ap.root_fd = open(canon, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ap.disk = archive_write_disk_new();
        r = ap.root_fd >= 0 && ap.disk ? 0 : -ENOMEM;
        if (r >= 0)
                (void)archive_write_disk_set_options(ap.disk, EXTRACT_FLAGS);
        for (size_t i = 0; r >= 0 && i < im->m.n_layers; i++)
                r = verify_layer(im->in, &im->m.layers[i], im->diff_ids[i], err);
        for (size_t i = 0; r >= 0 && i < im->m.n_layers; i++)
                r = apply_layer(&ap, im->in, &im->m.layers[i], err);
        if (ap.disk) {
                if (r >= 0 && archive_write_close(ap.disk) != ARCHIVE_OK)
                        r = b4_error_set(err, -EIO, "cannot finish the root: %s",
                                         archive_error_string(ap.disk));
                (void)archive_write_free(ap.disk);
        }
        safe_close(ap.root_fd);
        if (r >= 0)
                r = image_dir(state_dir, "roots", &roots);
        if (r >= 0 && renameat(AT_FDCWD, canon, roots, im->m.config_hex) < 0 && errno != EEXIST &&
            errno != ENOTEMPTY)
                r = b4_error_set(err, -errno, "cannot keep the root of sha256:%s",
                                 im->m.config_hex);
        return r;
}

static bool root_exists(const char *state_dir, const char *hex)
{
        cleanup_close int roots = -EBADF;
        struct stat st;

        return image_dir(state_dir, "roots", &roots) >= 0 && fstatat(roots, hex, &st, 0) == 0 &&
               S_ISDIR(st.st_mode);
}

static int import_from(struct import *im,
                       const char *state_dir,
                       const char *name,
                       struct b4_error *err)
{
        cleanup_close int configs = -EBADF;
        struct stat st;
        int r;

        if (fstatat(im->in, "index.json", &st, 0) == 0)
                r = oci_manifest(im->in, &im->m, err);
        else if (fstatat(im->in, "manifest.json", &st, 0) == 0)
                r = docker_manifest(im->in, &im->m, err);
        else
                return b4_error_set(err, -EINVAL,
                                    "not an image: neither an OCI layout (index.json) nor a docker "
                                    "save archive (manifest.json)");
        if (r >= 0)
                r = check_config(im->in, &im->m, &im->config, &im->config_len, im->diff_ids, err);
        if (r >= 0 && !root_exists(state_dir, im->m.config_hex))
                r = unpack_root(im, state_dir, err);
        if (r >= 0)
                r = image_dir(state_dir, "configs", &configs);
        if (r >= 0)
                r = write_file_atomic_at(configs, im->m.config_hex, im->config, im->config_len,
                                         0644);
        if (r >= 0)
                r = write_refs(state_dir, im->m.tags, name, im->m.config_hex);
        return r;
}

int image_import(const char *state_dir,
                 const char *path,
                 const char *name,
                 char ret_digest[7 + 64 + 1],
                 struct b4_error *err)
{
        struct import im = { .in = -EBADF };
        cleanup_close int tmpdir = -EBADF;
        struct stat st;
        int r;

        if (name && !image_ref_valid(name))
                return b4_error_set(err, -EINVAL, "'%s' is not an image name (name:tag)", name);
        if (stat(path, &st) < 0)
                return b4_error_set(err, -errno, "cannot read '%s'", path);
        r = image_dir(state_dir, "tmp", &tmpdir);
        if (r < 0)
                return b4_error_set(err, r, "cannot open the image store under '%s'", state_dir);
        (void)snprintf(im.tmp, sizeof(im.tmp), "%s/images/tmp/imp-XXXXXX", state_dir);
        if (!mkdtemp(im.tmp))
                return b4_error_set(err, -errno, "cannot make a directory for the import");
        if (S_ISDIR(st.st_mode)) {
                im.in = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                r = im.in >= 0 ? 0 : b4_error_set(err, -errno, "cannot open '%s'", path);
        } else {
                char in[PATH_MAX];

                r = !path_join(in, sizeof(in), im.tmp, "in") ? -ENAMETOOLONG
                    : mkdir(in, 0700) < 0                    ? -errno
                                                             : unpack_outer(path, in, err);
                if (r >= 0 && (im.in = open(in, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        r = -errno;
        }
        if (r >= 0)
                r = import_from(&im, state_dir, name, err);
        if (r >= 0)
                (void)snprintf(ret_digest, 7 + 64 + 1, "sha256:%s", im.m.config_hex);
        safe_close(im.in);
        (void)rm_rf_at(tmpdir, strrchr(im.tmp, '/') + 1);
        manifest_clear(&im.m);
        free(im.config);
        return r;
}
