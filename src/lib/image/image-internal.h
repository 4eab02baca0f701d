/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by store.c, manifest.c and import.c. */

#include <stdbool.h>
#include <stddef.h>

#include "base/hash.h"
#include "image.h"

#define IMAGE_CONFIG_MAX (4u * 1024 * 1024) /* an image config or manifest blob */
#define IMAGE_LAYERS_MAX 256

bool image_hex_valid(const char *s);
/* @ref with ":latest" added when it has neither tag nor digest; *@ret is heap.
 * Return: 0, -EINVAL (malformed), -ENOMEM. */
int image_ref_normalize(const char *ref, char **ret);
/* <state>/images (@sub NULL) or <state>/images/<sub>, made when missing. */
int image_dir(const char *state_dir, const char *sub, int *ret_fd);
/* The file name of @ref (normalized) under refs/. */
void image_ref_file(const char *ref, char ret[SHA256_HEX_LEN + 1]);

/* ---- manifest.c: the JSON of an import (untrusted; tests/fuzz/fuzz-image-manifest.c) ---- */

struct jv;
struct b4_error;

struct image_layer {
        char *path;     /* under the input directory */
        char *blob_hex; /* the manifest's digest of the blob (OCI), or NULL (docker save) */
};

/* What an import reads from the manifest; manifest_clear() frees it. */
struct manifest {
        char *config_path; /* under the input directory */
        char config_hex[65];
        struct image_layer layers[IMAGE_LAYERS_MAX];
        size_t n_layers;
        char **tags; /* the archive's own references */
};

void manifest_clear(struct manifest *m);
/* "sha256:<hex>" -> hex, or false. */
bool manifest_digest_hex(const struct jv *v, char hex[65]);
/* "blobs/sha256/<hex>", heap. Return: 0, -ENOMEM. */
int manifest_blob_path(const char *hex, char **ret);
/* Whether a descriptor names an index (OCI image index, Docker manifest list). */
bool manifest_desc_is_index(const struct jv *desc);
/*
 * manifest_index_first() - an index's first manifest descriptor, *@ret_desc (a reference).
 * @nested: the index is the blob index.json named (its entry must not be an index again); an
 * outer index.json's ref.name annotation is recorded in @m->tags when it is a valid reference.
 * Return: 0, -EINVAL (message in @err), -ENOMEM.
 */
int manifest_index_first(const char *text,
                         size_t len,
                         bool nested,
                         struct manifest *m,
                         struct jv **ret_desc,
                         struct b4_error *err);
/* An OCI image manifest: the config digest and path, at most IMAGE_LAYERS_MAX layer blobs.
 * Return: 0, -EINVAL, -ENOMEM. */
int manifest_oci_parse(const char *text, size_t len, struct manifest *m, struct b4_error *err);
/* A `docker save` manifest.json with exactly one image: its Config (whose name ends with
 * its digest), Layers and valid RepoTags. Return: 0, -EINVAL, -ENOMEM. */
int manifest_docker_parse(const char *text, size_t len, struct manifest *m, struct b4_error *err);
/* The config's rootfs.diff_ids, exactly @m->n_layers sha256 digests, into @diff_ids.
 * Return: 0, -EINVAL. */
int manifest_diff_ids(const char *text,
                      size_t len,
                      const struct manifest *m,
                      char diff_ids[][65],
                      struct b4_error *err);
/* A layer entry's @name without "./" and "/" at its ends into @out; false for absolute and
 * ".." paths or one that does not fit @size. */
bool image_path_clean(const char *name, char *out, size_t size);
