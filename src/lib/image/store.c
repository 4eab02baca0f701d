/* SPDX-License-Identifier: Apache-2.0 */
/* The image store's reads, references and removal (image.h); import.c adds images. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/rm-rf.h"
#include "base/strv.h"
#include "image-internal.h"
#include "json/json.h"

void image_info_clear(struct image_info *i)
{
        strv_free(i->refs);
        strv_free(i->env);
        free(i->working_dir);
        free(i->user);
        free(i->root);
        *i = (struct image_info){ 0 };
}

void image_infos_free(struct image_info *l, size_t n)
{
        for (size_t i = 0; l && i < n; i++)
                image_info_clear(&l[i]);
        free(l);
}

bool image_hex_valid(const char *s)
{
        return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* A name: [a-z0-9] and the separators of the distribution spec, 1-255 bytes. */
static bool name_valid(const char *s, size_t n)
{
        if (n == 0 || n > 255)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-/", s[i]) &&
                    !(i > 0 && s[i] == ':' && memchr(s, '/', n))) /* a registry port */
                        return false;
        return s[0] != '/' && s[n - 1] != '/';
}

/* The tag's ':' : the last one after the last '/', or NULL. */
static const char *tag_colon(const char *ref)
{
        const char *slash = strrchr(ref, '/'), *colon = strrchr(ref, ':');

        return colon && (!slash || colon > slash) ? colon : NULL;
}

bool image_ref_valid(const char *ref)
{
        const char *at, *colon;

        if (!ref || strlen(ref) > IMAGE_REF_MAX)
                return false;
        if (strncmp(ref, "sha256:", 7) == 0)
                return image_hex_valid(ref + 7);
        if ((at = strchr(ref, '@')))
                return strncmp(at + 1, "sha256:", 7) == 0 && image_hex_valid(at + 8) &&
                       name_valid(ref, (size_t)(at - ref));
        colon = tag_colon(ref);
        if (!colon)
                return name_valid(ref, strlen(ref));
        size_t tl = strlen(colon + 1);
        return name_valid(ref, (size_t)(colon - ref)) && tl > 0 && tl <= 128 &&
               strspn(colon + 1,
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == tl;
}

int image_ref_normalize(const char *ref, char **ret)
{
        if (!image_ref_valid(ref))
                return -EINVAL;
        if (strncmp(ref, "sha256:", 7) == 0 || strchr(ref, '@') || tag_colon(ref))
                *ret = b4_strdup(ref);
        else if (b4_asprintf(ret, "%s:latest", ref) < 0)
                return -ENOMEM;
        return *ret ? 0 : -ENOMEM;
}

int image_dir(const char *state_dir, const char *sub, int *ret_fd)
{
        cleanup_close int top = -EBADF, images = -EBADF;
        int r;

        r = state_dir_open(state_dir, &top, NULL); /* made 0700 when missing, checked */
        if (r >= 0)
                r = open_private_dir_at(top, "images", 0700, &images);
        if (r < 0)
                return r;
        if (!sub) {
                *ret_fd = TAKE_FD(images);
                return 0;
        }
        if (mkdirat(images, sub, 0755) < 0 && errno != EEXIST)
                return -errno;
        *ret_fd = openat(images, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return *ret_fd < 0 ? -errno : 0;
}

void image_ref_file(const char *ref, char ret[SHA256_HEX_LEN + 1])
{
        sha256_hex(ref, strlen(ref), ret);
}

/* The config hex a reference file names, and its reference. */
static int read_ref(int refs_fd, const char *file, char **ret_ref, char hex[65])
{
        cleanup_free char *text = NULL;
        size_t len = 0;
        char *nl;
        int r = read_file_at(refs_fd, file, IMAGE_REF_MAX + 80, &text, &len);

        if (r < 0)
                return r;
        nl = strchr(text, '\n');
        if (!nl || strlen(nl + 1) < 64)
                return -EIO;
        *nl = '\0';
        memcpy(hex, nl + 1, 64);
        hex[64] = '\0';
        if (!image_hex_valid(hex))
                return -EIO;
        if (ret_ref && !(*ret_ref = b4_strdup(text)))
                return -ENOMEM;
        return 0;
}

/* The config hex @ref names. */
static int ref_hex(const char *state_dir, const char *ref, char hex[65], struct b4_error *err)
{
        cleanup_free char *norm = NULL;
        cleanup_close int refs = -EBADF;
        char file[SHA256_HEX_LEN + 1];
        const char *at;
        int r = image_ref_normalize(ref, &norm);

        if (r == -EINVAL)
                return b4_error_set(err, r,
                                    "'%s' is not an image reference (name:tag, "
                                    "name@sha256:HEX or sha256:HEX)",
                                    ref);
        if (r < 0)
                return r;
        if (strncmp(norm, "sha256:", 7) == 0 || (at = strchr(norm, '@'))) {
                memcpy(hex, strrchr(norm, ':') + 1, 65);
                return 0;
        }
        r = image_dir(state_dir, "refs", &refs);
        if (r >= 0) {
                image_ref_file(norm, file);
                r = read_ref(refs, file, NULL, hex);
        }
        if (r == -ENOENT)
                return b4_error_set(err, r,
                                    "image '%s' is not in the store (b4box image import FILE "
                                    "--name %s)",
                                    ref, norm);
        return r < 0 ? b4_error_set(err, r, "cannot read image reference '%s'", ref) : 0;
}

static int take_strings(const struct jv *arr, char ***ret)
{
        *ret = b4_calloc(1, sizeof(char *));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; jv_is_array(arr) && i < jv_array_size(arr); i++)
                if (jv_is_string(jv_array_get(arr, i)) &&
                    strv_extend(ret, jv_string(jv_array_get(arr, i))) < 0)
                        return -ENOMEM;
        return 0;
}

static int opt_string(const struct jv *v, char **ret)
{
        if (!jv_is_string(v) || !*jv_string(v))
                return 0;
        *ret = b4_strdup(jv_string(v));
        return *ret ? 0 : -ENOMEM;
}

/* Fill @ret from configs/<hex> and the root's path (refs are the caller's). */
static int load(const char *state_dir,
                const char *hex,
                struct image_info *ret,
                struct b4_error *err)
{
        cleanup_close int configs = -EBADF;
        cleanup_free char *text = NULL;
        cleanup_(jv_unrefp) struct jv *c = NULL;
        struct jv *cfg;
        size_t len = 0;
        int r = image_dir(state_dir, "configs", &configs);

        if (r >= 0)
                r = read_file_at(configs, hex, IMAGE_CONFIG_MAX, &text, &len);
        if (r == -ENOENT)
                return b4_error_set(err, r, "image sha256:%s is not in the store", hex);
        if (r < 0 || jv_parse(text, len, &c, NULL) < 0 || !jv_is_object(c))
                return b4_error_set(err, -EIO, "image sha256:%s: its config cannot be read", hex);
        (void)snprintf(ret->digest, sizeof(ret->digest), "sha256:%s", hex);
        cfg = jv_object_get(c, "config");
        r = take_strings(jv_object_get(cfg, "Env"), &ret->env);
        if (r >= 0)
                r = opt_string(jv_object_get(cfg, "WorkingDir"), &ret->working_dir);
        if (r >= 0)
                r = opt_string(jv_object_get(cfg, "User"), &ret->user);
        if (r >= 0 && b4_asprintf(&ret->root, "%s/images/roots/%s", state_dir, hex) < 0)
                r = -ENOMEM;
        return r;
}

/* Every reference naming @hex, sorted. */
static int refs_of(const char *state_dir, const char *hex, char ***ret)
{
        cleanup_close int refs = -EBADF;
        cleanup_strv char **l = b4_calloc(1, sizeof(char *));
        DIR *d;
        struct dirent *de;
        int r = image_dir(state_dir, "refs", &refs);

        if (r < 0 || !l)
                return r < 0 ? r : -ENOMEM;
        d = fdopendir(fcntl(refs, F_DUPFD_CLOEXEC, 3));
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                cleanup_free char *ref = NULL;
                char h[65];

                if (de->d_name[0] == '.' || read_ref(refs, de->d_name, &ref, h) < 0)
                        continue;
                if (strcmp(h, hex) == 0 && strv_extend(&l, ref) < 0) {
                        (void)closedir(d);
                        return -ENOMEM;
                }
        }
        (void)closedir(d);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int image_resolve(const char *state_dir,
                  const char *ref,
                  struct image_info *ret,
                  struct b4_error *err)
{
        char hex[65];
        int r = ref_hex(state_dir, ref, hex, err);

        *ret = (struct image_info){ 0 };
        if (r >= 0)
                r = load(state_dir, hex, ret, err);
        if (r >= 0)
                r = refs_of(state_dir, hex, &ret->refs);
        if (r < 0)
                image_info_clear(ret);
        return r;
}

int image_list(const char *state_dir, struct image_info **ret, size_t *ret_n, struct b4_error *err)
{
        cleanup_close int configs = -EBADF;
        struct image_info *l = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d;
        int r = image_dir(state_dir, "configs", &configs);

        if (r < 0)
                return b4_error_set(err, r, "cannot open the image store");
        d = fdopendir(fcntl(configs, F_DUPFD_CLOEXEC, 3));
        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d))) {
                struct image_info *nl;

                if (!image_hex_valid(de->d_name))
                        continue;
                nl = b4_reallocarray(l, n + 1, sizeof(*l));
                if (!nl) {
                        r = -ENOMEM;
                        break;
                }
                l = nl;
                l[n] = (struct image_info){ 0 };
                r = load(state_dir, de->d_name, &l[n], err);
                if (r >= 0)
                        r = refs_of(state_dir, de->d_name, &l[n].refs);
                n++;
        }
        (void)closedir(d);
        if (r < 0) {
                image_infos_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* Whether a thread's sandbox uses @hex (users/<hex>/ holds an entry). */
static bool in_use(const char *state_dir, const char *hex)
{
        cleanup_close int users = -EBADF;
        struct dirent *de;
        bool used = false;
        DIR *d;

        int fd;

        if (image_dir(state_dir, "users", &users) < 0)
                return false;
        fd = openat(users, hex, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                safe_close(fd);
                return false;
        }
        while (!used && (de = readdir(d)))
                used = de->d_name[0] != '.';
        (void)closedir(d);
        return used;
}

int image_remove(const char *state_dir, const char *ref, struct b4_error *err)
{
        cleanup_strv char **names = NULL;
        cleanup_close int refs = -EBADF, roots = -EBADF, configs = -EBADF;
        cleanup_free char *norm = NULL;
        bool by_digest;
        char hex[65], file[SHA256_HEX_LEN + 1];
        int r = ref_hex(state_dir, ref, hex, err);

        if (r < 0)
                return r;
        r = image_ref_normalize(ref, &norm);
        if (r >= 0)
                r = refs_of(state_dir, hex, &names);
        if (r >= 0)
                r = image_dir(state_dir, "refs", &refs);
        if (r < 0)
                return b4_error_set(err, r, "cannot open the image store");
        by_digest = strncmp(norm, "sha256:", 7) == 0 || strchr(norm, '@');
        bool last = by_digest || strv_length(names) <= 1;
        if (last && in_use(state_dir, hex))
                return b4_error_set(err, -EBUSY,
                                    "image sha256:%s is used by a thread's sandbox: release or "
                                    "delete the thread first",
                                    hex);
        STRV_FOREACH (n, names)
                if (by_digest || strcmp(*n, norm) == 0) {
                        image_ref_file(*n, file);
                        (void)unlinkat(refs, file, 0);
                }
        if (!last)
                return 0;
        r = image_dir(state_dir, "configs", &configs);
        if (r >= 0 && unlinkat(configs, hex, 0) < 0 && errno != ENOENT)
                r = -errno;
        if (r >= 0)
                r = image_dir(state_dir, "roots", &roots);
        if (r >= 0)
                r = rm_rf_at(roots, hex);
        return r < 0 ? b4_error_set(err, r, "cannot remove image sha256:%s", hex) : 0;
}

int image_use_begin(const char *state_dir, const char *digest, const char *id)
{
        cleanup_close int users = -EBADF, dir = -EBADF;
        const char *hex = strncmp(digest, "sha256:", 7) == 0 ? digest + 7 : digest;
        int r = image_dir(state_dir, "users", &users);

        if (r < 0 || !image_hex_valid(hex))
                return r < 0 ? r : -EINVAL;
        if (mkdirat(users, hex, 0700) < 0 && errno != EEXIST)
                return -errno;
        dir = openat(users, hex, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dir < 0)
                return -errno;
        return write_file_atomic_at(dir, id, "", 0, 0600);
}

void image_use_end(const char *state_dir, const char *id)
{
        cleanup_close int users = -EBADF;
        struct dirent *de;
        DIR *d;

        if (image_dir(state_dir, "users", &users) < 0)
                return;
        d = fdopendir(fcntl(users, F_DUPFD_CLOEXEC, 3));
        while (d && (de = readdir(d))) {
                int dir = image_hex_valid(de->d_name)
                                  ? openat(users, de->d_name,
                                           O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
                                  : -EBADF;
                if (dir >= 0)
                        (void)unlinkat(dir, id, 0);
                safe_close(dir);
        }
        if (d)
                (void)closedir(d);
}
