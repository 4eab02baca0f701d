/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a sandbox's root is made from (docs/images.md): "host", "dir:/abs" or an image of the
 * store. The provider holds the app-wide one; a thread whose resolver chose another image
 * holds its own, as does every handle of that thread (a later acquire may move the thread to
 * another image while an older handle still runs commands with the first one's Env).
 */

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "native.h"

#define OCI_PREFIX "oci:"

/* "oci:REF": named by its config digest from here on, so a reference moved to another image
 * changes the keepers' identity. */
static int open_oci(struct native_image *img,
                    const char *state_dir,
                    const char *ref,
                    struct b4_error *err)
{
        int r = image_resolve(state_dir, ref, &img->oci, err);

        if (r < 0)
                return r;
        if (b4_asprintf(&img->name, OCI_PREFIX "%s", img->oci.digest) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        img->root = img->oci.root;
        return 0;
}

static int open_named(struct native_image *img,
                      const char *state_dir,
                      const char *name,
                      struct b4_error *err)
{
        struct stat st;

        if (strncmp(name, OCI_PREFIX, strlen(OCI_PREFIX)) == 0)
                return open_oci(img, state_dir, name + strlen(OCI_PREFIX), err);
        if (!(img->name = b4_strdup(name)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (strcmp(name, "host") == 0) {
                img->root = "/";
                img->host = true;
                return 0;
        }
        if (strncmp(name, "dir:/", 5) != 0)
                return b4_error_set(err, -EINVAL,
                                    "sandbox.provider.image for native must be \"host\", "
                                    "\"dir:/absolute/rootfs\" or \"oci:REF\" (got '%s')",
                                    name);
        img->root = img->name + 4;
        if (stat(img->root, &st) < 0 || !S_ISDIR(st.st_mode))
                return b4_error_set(err, -EINVAL, "rootfs '%s' is not a directory", img->root);
        return 0;
}

int native_image_open(const char *state_dir,
                      const char *name,
                      struct native_image **ret,
                      struct b4_error *err)
{
        struct native_image *img = b4_calloc(1, sizeof(*img));
        int r;

        if (!img)
                return b4_error_set(err, -ENOMEM, "out of memory");
        atomic_init(&img->refs, 1);
        r = open_named(img, state_dir, name && *name ? name : "host", err);
        if (r < 0) {
                native_image_unref(img);
                return r;
        }
        *ret = img;
        return 0;
}

struct native_image *native_image_ref(struct native_image *img)
{
        if (img)
                atomic_fetch_add(&img->refs, 1);
        return img;
}

void native_image_unref(struct native_image *img)
{
        if (!img || atomic_fetch_sub(&img->refs, 1) != 1)
                return;
        free(img->name);
        image_info_clear(&img->oci);
        free(img);
}

/* A pattern or reference without its "oci:" prefix: both spellings name a store image. */
static const char *bare(const char *s)
{
        return strncmp(s, OCI_PREFIX, strlen(OCI_PREFIX)) == 0 ? s + strlen(OCI_PREFIX) : s;
}

bool native_image_allowed(const char *app_image, char *const *patterns, const char *ref)
{
        const char *b = bare(ref);

        if (strcmp(app_image ? app_image : "host", ref) == 0)
                return true;
        STRV_FOREACH (pat, patterns)
                if (strcmp(*pat, ref) == 0 || fnmatch(bare(*pat), b, 0) == 0)
                        return true;
        return false;
}
