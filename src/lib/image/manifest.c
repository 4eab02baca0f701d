/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON an image import reads (image-internal.h): an OCI layout's index and image
 * manifest, a `docker save` manifest.json, the config's rootfs.diff_ids, and the names of
 * layer entries. Pure parsing of untrusted bytes (tests/fuzz/fuzz-image-manifest.c); reading
 * the files and checking digests is import.c's.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "image-internal.h"
#include "json/json.h"

void manifest_clear(struct manifest *m)
{
        free(m->config_path);
        for (size_t i = 0; i < m->n_layers; i++) {
                free(m->layers[i].path);
                free(m->layers[i].blob_hex);
        }
        strv_free(m->tags);
        *m = (struct manifest){ 0 };
}

bool manifest_digest_hex(const struct jv *v, char hex[65])
{
        const char *s = jv_string(v);

        if (!s || strncmp(s, "sha256:", 7) != 0 || !image_hex_valid(s + 7))
                return false;
        memcpy(hex, s + 7, 65);
        return true;
}

int manifest_blob_path(const char *hex, char **ret)
{
        return b4_asprintf(ret, "blobs/sha256/%s", hex) < 0 ? -ENOMEM : 0;
}

static int parse_object(const char *text, size_t len, struct jv **ret)
{
        if (jv_parse(text, len, ret, NULL) < 0)
                return -EINVAL;
        if (jv_is_object(*ret))
                return 0;
        *ret = jv_unref(*ret);
        return -EINVAL;
}

bool manifest_desc_is_index(const struct jv *desc)
{
        const char *mt = jv_string(jv_object_get(desc, "mediaType"));

        return mt && (strstr(mt, "image.index") || strstr(mt, "manifest.list"));
}

int manifest_index_first(const char *text,
                         size_t len,
                         bool nested,
                         struct manifest *m,
                         struct jv **ret_desc,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *index = NULL;
        const struct jv *desc;
        const char *name;

        if (parse_object(text, len, &index) < 0 ||
            !jv_array_size(jv_object_get(index, "manifests")))
                return b4_error_set(err, -EINVAL,
                                    nested ? "the nested index lists no manifest"
                                           : "index.json lists no manifest");
        desc = jv_array_get(jv_object_get(index, "manifests"), 0);
        if (!jv_is_object(desc))
                return b4_error_set(err, -EINVAL, "the index's first manifest is not a descriptor");
        if (nested && manifest_desc_is_index(desc)) /* one level of nesting only */
                return b4_error_set(err, -EINVAL, "the nested index has no image manifest");
        name = jv_string(jv_object_get(jv_object_get(desc, "annotations"),
                                       "org.opencontainers.image.ref.name"));
        if (!nested && name && image_ref_valid(name) && strv_extend(&m->tags, name) < 0)
                return -ENOMEM;
        *ret_desc = jv_ref((struct jv *)desc);
        return 0;
}

int manifest_oci_parse(const char *text, size_t len, struct manifest *m, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *man = NULL;
        const struct jv *layers;
        int r;

        if (parse_object(text, len, &man) < 0)
                return b4_error_set(err, -EINVAL, "the image manifest is not a JSON object");
        if (!manifest_digest_hex(jv_object_get(jv_object_get(man, "config"), "digest"),
                                 m->config_hex))
                return b4_error_set(err, -EINVAL, "the manifest names no config digest");
        layers = jv_object_get(man, "layers");
        if (!jv_is_array(layers) || jv_array_size(layers) > IMAGE_LAYERS_MAX)
                return b4_error_set(err, -EINVAL,
                                    "the manifest's layers are not a list of at most %d",
                                    IMAGE_LAYERS_MAX);
        r = manifest_blob_path(m->config_hex, &m->config_path);
        for (size_t i = 0; r >= 0 && i < jv_array_size(layers); i++) {
                char hex[65];

                if (!manifest_digest_hex(jv_object_get(jv_array_get(layers, i), "digest"), hex))
                        return b4_error_set(err, -EINVAL, "layer %zu has no sha256 digest", i);
                m->n_layers = i + 1;
                m->layers[i].blob_hex = b4_strdup(hex);
                r = m->layers[i].blob_hex ? manifest_blob_path(hex, &m->layers[i].path) : -ENOMEM;
        }
        return r;
}

/* The config's file name ends with its digest: "<hex>.json" (legacy) or
 * "blobs/sha256/<hex>" (newer Docker). */
static int docker_config(const char *cfg, struct manifest *m, struct b4_error *err)
{
        const char *base = cfg ? strrchr(cfg, '/') : NULL;

        base = base ? base + 1 : cfg;
        if (!cfg || strlen(base) < 64)
                return b4_error_set(err, -EINVAL, "manifest.json names no config");
        memcpy(m->config_hex, base, 64);
        m->config_hex[64] = '\0';
        if (!image_hex_valid(m->config_hex) || (base[64] && strcmp(base + 64, ".json") != 0))
                return b4_error_set(err, -EINVAL, "the config's name '%s' is not its digest", cfg);
        m->config_path = b4_strdup(cfg);
        return m->config_path ? 0 : -ENOMEM;
}

int manifest_docker_parse(const char *text, size_t len, struct manifest *m, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *doc = NULL;
        const struct jv *e, *layers, *tags;
        int r;

        if (jv_parse(text, len, &doc, NULL) < 0 || !jv_is_array(doc) || jv_array_size(doc) == 0)
                return b4_error_set(err, -EINVAL, "manifest.json lists no image");
        if (jv_array_size(doc) > 1)
                return b4_error_set(err, -EINVAL,
                                    "the archive holds %zu images; import one at a time "
                                    "(docker save one image)",
                                    jv_array_size(doc));
        e = jv_array_get(doc, 0);
        r = docker_config(jv_string(jv_object_get(e, "Config")), m, err);
        if (r < 0)
                return r;
        layers = jv_object_get(e, "Layers");
        if (!jv_is_array(layers) || jv_array_size(layers) > IMAGE_LAYERS_MAX)
                return b4_error_set(err, -EINVAL, "manifest.json: bad Layers");
        for (size_t i = 0; i < jv_array_size(layers); i++) {
                if (!jv_is_string(jv_array_get(layers, i)))
                        return b4_error_set(err, -EINVAL, "manifest.json: bad Layers");
                m->n_layers = i + 1;
                if (!(m->layers[i].path = b4_strdup(jv_string(jv_array_get(layers, i)))))
                        return -ENOMEM;
        }
        tags = jv_object_get(e, "RepoTags");
        for (size_t i = 0; jv_is_array(tags) && i < jv_array_size(tags); i++) {
                const char *t = jv_string(jv_array_get(tags, i));
                if (t && image_ref_valid(t) && strv_extend(&m->tags, t) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int manifest_diff_ids(const char *text,
                      size_t len,
                      const struct manifest *m,
                      char diff_ids[][65],
                      struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *c = NULL;
        const struct jv *ids;

        if (parse_object(text, len, &c) < 0)
                return b4_error_set(err, -EINVAL, "the config is not a JSON object");
        ids = jv_object_get(jv_object_get(c, "rootfs"), "diff_ids");
        if (!jv_is_array(ids) || jv_array_size(ids) != m->n_layers)
                return b4_error_set(
                        err, -EINVAL,
                        "the config lists %zu layers (rootfs.diff_ids), the manifest %zu",
                        jv_array_size(ids), m->n_layers);
        for (size_t i = 0; i < m->n_layers; i++)
                if (!manifest_digest_hex(jv_array_get(ids, i), diff_ids[i]))
                        return b4_error_set(err, -EINVAL,
                                            "rootfs.diff_ids[%zu] is not a sha256 digest", i);
        return 0;
}

bool image_path_clean(const char *name, char *out, size_t size)
{
        const char *p = name;
        size_t n;

        while (p[0] == '.' && p[1] == '/')
                p += 2;
        if (p[0] == '/' || strlen(p) >= size)
                return false;
        n = strlen(p);
        memcpy(out, p, n + 1);
        while (n > 0 && out[n - 1] == '/')
                out[--n] = '\0';
        for (const char *c = out; *c;) {
                const char *end = strchrnul(c, '/');
                if (end - c == 2 && c[0] == '.' && c[1] == '.')
                        return false;
                c = *end ? end + 1 : end;
        }
        return true;
}
