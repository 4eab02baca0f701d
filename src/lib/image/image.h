/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The image store (docs/images.md): OCI images imported under <state>/images, content
 * addressed by their config digest, each one's root filesystem unpacked once, read-only,
 * and shared by every thread that runs it.
 *
 *   images/roots/<config hex>/     the unpacked root filesystem
 *   images/configs/<config hex>    the image config (the blob as imported, verified)
 *   images/refs/<sha256 of ref>    "<ref>\n<config hex>\n": a name:tag pointing at an image
 *   images/tmp/                    imports in progress (removed on failure, swept at open)
 *
 * References are "name:tag" (":latest" when no tag is given), "name@sha256:<hex>" or
 * "sha256:<hex>" (the config digest: the identity recorded at admission).
 *
 * store.c reads and removes (no libarchive: the light b4box and native use it); import.c
 * (libarchive) imports. Errors: negative errno with @err set.
 */

#include <stdint.h>

#include "b4box/error.h"

#define IMAGE_REF_MAX 512

struct image_info {
        char digest[7 + 64 + 1]; /* "sha256:<hex>" of the config blob */
        char **refs;             /* owned strv: the names pointing at it, sorted */
        char **env;              /* owned strv of "K=V" (config.Env) */
        char *working_dir;       /* owned; NULL = none */
        char *user;              /* owned; NULL = none */
        char *root;              /* owned: the unpacked root filesystem's absolute path */
};

void image_info_clear(struct image_info *i);
void image_infos_free(struct image_info *l, size_t n);

/* Whether @ref is a well-formed reference (name:tag, name@sha256:hex, sha256:hex). */
bool image_ref_valid(const char *ref);

/*
 * image_resolve() - the image @ref names in the store under @state_dir
 * Return: 0; -ENOENT "image 'REF' is not in the store (b4box image import ...)"; -EINVAL
 * (a malformed reference); -EIO (a damaged store entry).
 */
int image_resolve(const char *state_dir,
                  const char *ref,
                  struct image_info *ret,
                  struct b4_error *err);

/* image_list() - every image, by digest. Return: 0, -ENOMEM, -EIO. */
int image_list(const char *state_dir, struct image_info **ret, size_t *ret_n, struct b4_error *err);

/*
 * image_remove() - drop @ref; an image no reference names any more goes with its root
 * filesystem. A digest reference drops every name of that image. Refused with -EBUSY while
 * a thread's sandbox uses it (image_use_begin()).
 * Return: 0, -ENOENT, -EBUSY, -EIO.
 */
int image_remove(const char *state_dir, const char *ref, struct b4_error *err);

/*
 * image_use_begin() / image_use_end() - record that thread resource @id (a provider's
 * resource id) runs image @digest, or that it runs none any more (whichever it ran);
 * image_remove() refuses an image in use. Return: 0 or -errno.
 */
int image_use_begin(const char *state_dir, const char *digest, const char *id);
void image_use_end(const char *state_dir, const char *id);

/*
 * image_import() - import a `docker save` archive or an OCI image layout (a directory or a
 * tar of one) at @path: every blob verified against its digest, the layers applied in order
 * with OCI whiteouts, setuid/setgid bits dropped, device nodes, paths leaving the root and
 * links pointing out of it refused. @name ("name:tag") is recorded as a reference too; the
 * archive's own tags always are. *@ret_digest: "sha256:<hex>" (64 + 8 bytes).
 * Return: 0; -EINVAL (not an image, a bad digest, a refused entry: message in @err); -EIO.
 */
int image_import(const char *state_dir,
                 const char *path,
                 const char *name,
                 char ret_digest[7 + 64 + 1],
                 struct b4_error *err);
