/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the JSON and names an image import reads (src/lib/image/manifest.c). Trust
 * boundary: the `docker save` archive or OCI layout given to `b4box image import` (or sent by
 * a Docker daemon for --from-docker): its index.json, manifest.json, image manifest, config
 * and layer entry names decide which files are read and where layers are written.
 *
 * The first byte picks the parser (mod 6): docker manifest.json, outer index, nested index,
 * OCI image manifest, config rootfs.diff_ids (the second byte is the layer count), a layer
 * entry name. Invariants: a refusal has a message; an accepted manifest has a 64-hex config
 * digest, a config path, at most IMAGE_LAYERS_MAX layers each with a path (OCI: the blob's
 * own path), valid references only; a cleaned name is relative, has no ".." component and no
 * trailing '/', and cleans to itself.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/error.h"

#include "image/image-internal.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

static void check_refusal(int r, const struct b4_error *err)
{
        if (r < 0 && r != -ENOMEM && (r != -EINVAL || !err->msg[0]))
                abort();
}

static void check_manifest(const struct manifest *m, bool oci)
{
        char path[80];

        if (!image_hex_valid(m->config_hex) || !m->config_path || m->n_layers > IMAGE_LAYERS_MAX)
                abort();
        for (size_t i = 0; i < m->n_layers; i++) {
                const struct image_layer *l = &m->layers[i];
                if (!l->path || (oci && (!l->blob_hex || !image_hex_valid(l->blob_hex))))
                        abort();
                (void)snprintf(path, sizeof(path), "blobs/sha256/%s", oci ? l->blob_hex : "");
                if (oci && strcmp(path, l->path) != 0)
                        abort();
        }
        for (char **t = m->tags; t && *t; t++)
                if (!image_ref_valid(*t))
                        abort();
}

static void check_clean(const char *name)
{
        char out[256], again[256];

        if (!image_path_clean(name, out, sizeof(out)))
                return;
        size_t n = strlen(out);
        if (out[0] == '/' || (n && out[n - 1] == '/') || strcmp(out, "..") == 0 ||
            strncmp(out, "../", 3) == 0 || strstr(out, "/../") ||
            (n >= 3 && strcmp(out + n - 3, "/..") == 0))
                abort();
        if (!image_path_clean(out, again, sizeof(again)) || strcmp(out, again) != 0)
                abort();
}

static void parse(unsigned kind, const char *text, size_t len, unsigned layers)
{
        struct manifest m = { 0 };
        struct b4_error err = { 0 };
        struct jv *desc = NULL;
        char diff_ids[8][65];
        int r = 0;

        switch (kind) {
        case 0:
                r = manifest_docker_parse(text, len, &m, &err);
                if (r >= 0)
                        check_manifest(&m, false);
                break;
        case 1:
        case 2:
                r = manifest_index_first(text, len, kind == 2, &m, &desc, &err);
                if (r >= 0 && (!jv_is_object(desc) || (kind == 2 && manifest_desc_is_index(desc))))
                        abort();
                jv_unref(desc);
                break;
        case 3:
                r = manifest_oci_parse(text, len, &m, &err);
                if (r >= 0)
                        check_manifest(&m, true);
                break;
        case 4:
                m.n_layers = layers % 8;
                r = manifest_diff_ids(text, len, &m, diff_ids, &err);
                for (size_t i = 0; r >= 0 && i < m.n_layers; i++)
                        if (!image_hex_valid(diff_ids[i]))
                                abort();
                m.n_layers = 0;
                break;
        default:
                check_clean(text);
                break;
        }
        check_refusal(r, &err);
        manifest_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text;

        if (size < 2 || size > FUZZ_MAX_INPUT)
                return 0;
        text = malloc(size - 1); /* NUL-terminated copy of data[2..] */
        if (!text)
                return 0;
        memcpy(text, data + 2, size - 2);
        text[size - 2] = '\0';
        parse(data[0] % 6, text, strlen(text), data[1]);
        free(text);
        return 0;
}
