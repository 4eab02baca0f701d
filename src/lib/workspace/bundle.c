/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source bundles (reference §7.1): verification, canonical JSON and the digest.
 *
 * Invariant: a struct b4_bundle exists only after every rule passed, so later code (the
 * store, materialisation) never re-checks shape. Parsed bundles borrow their strings from the
 * parsed document (one copy of the payload in memory); created ones own them.
 */

#include "b4box/bundle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "json/json.h"
#include "workspace.h"

int b4_bundle_file_decode(const struct b4_bundle_file *f,
                          char **ret,
                          size_t *ret_len,
                          struct b4_error *err)
{
        int r = base64_decode(f->base64, f->base64_len, ret, ret_len);

        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r < 0 || NEVER(*ret_len != f->size)) {
                if (r >= 0)
                        free(*ret);
                return b4_error_set(err, -EPROTO, "base64 decode length");
        }
        return 0;
}

/* ---- portable paths ------------------------------------------------------------------ */

static bool is_device_name(const char *seg, size_t len)
{
        static const char *const names[] = { "CON", "PRN", "AUX", "NUL" };
        const char *dot = memchr(seg, '.', len);
        size_t stem = dot ? (size_t)(dot - seg) : len;

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (stem == 3 && strncasecmp(seg, names[i], 3) == 0)
                        return true;
        return stem == 4 && (strncasecmp(seg, "COM", 3) == 0 || strncasecmp(seg, "LPT", 3) == 0) &&
               seg[3] >= '1' && seg[3] <= '9';
}

static const char *segment_problem(const char *seg, size_t len)
{
        if (len == 0)
                return "it has an empty segment";
        if (len > B4_BUNDLE_MAX_SEGMENT)
                return "a segment is longer than 255 characters";
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                return "it has a \".\" or \"..\" segment";
        if (seg[0] == ' ')
                return "a segment starts with a space";
        if (seg[len - 1] == ' ' || seg[len - 1] == '.')
                return "a segment ends with a space or a dot";
        if (memmem(seg, len, "  ", 2))
                return "a segment has a double space";
        if (is_device_name(seg, len))
                return "a segment is a Windows device name";
        return NULL;
}

static const char *path_problem(const char *path)
{
        size_t len = strlen(path);

        if (len < 1 || len > B4_BUNDLE_MAX_PATH)
                return "it must be 1 to 1024 characters";
        if (strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._ /-") !=
            len)
                return "only A-Z a-z 0-9 . _ - space and / are allowed";
        for (const char *s = path;;) {
                const char *slash = strchr(s, '/');
                size_t n = slash ? (size_t)(slash - s) : strlen(s);
                const char *why = segment_problem(s, n);

                if (why)
                        return why;
                if (!slash)
                        return NULL;
                s = slash + 1;
        }
}

int b4_portable_path_check(const char *what, const char *path, struct b4_error *err)
{
        const char *why = path ? path_problem(path) : "it is missing";
        cleanup_free char *q = NULL;

        if (!why)
                return 0;
        if (!path || jv_quote(path, &q) < 0)
                return b4_error_set(err, -EINVAL, "%s is not portable: %s", what, why);
        if (strlen(q) > 300)
                return b4_error_set(err, -EINVAL, "%s %.300s... is not portable: %s", what, q, why);
        return b4_error_set(err, -EINVAL, "%s %s is not portable: %s", what, q, why);
}

/* ---- collisions ------------------------------------------------------------------------ */

struct pkey {
        char *lower;      /* owned: the lowercased path or directory prefix */
        const char *orig; /* borrowed: the leaf path it came from */
        size_t len;       /* length of the prefix within orig */
        bool leaf;
};

static int pkey_cmp(const void *a, const void *b)
{
        const struct pkey *x = a, *y = b;
        int c = strcmp(x->lower, y->lower);

        if (c)
                return c;
        if (x->leaf != y->leaf)
                return (int)y->leaf - (int)x->leaf; /* leaves first among equals */
        return strcmp(x->orig, y->orig);            /* deterministic messages */
}

static int pkey_add(struct pkey *keys, size_t *n, const char *orig, size_t len, bool leaf)
{
        char *l = b4_strndup(orig, len);

        if (!l)
                return -ENOMEM;
        for (char *p = l; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        keys[(*n)++] = (struct pkey){ .lower = l, .orig = orig, .len = len, .leaf = leaf };
        return 0;
}

static void pkeys_free(struct pkey *keys, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(keys[i].lower);
        free(keys);
}

/* Two keys with the same lowercase spelling: say why they collide. */
static int collision(const struct pkey *a, const struct pkey *b, struct b4_error *err)
{
        if (a->leaf && b->leaf && strcmp(a->orig, b->orig) == 0)
                return b4_error_set(err, -EINVAL, "Source path \"%s\" is repeated", a->orig);
        if (a->leaf && b->leaf)
                return b4_error_set(err, -EINVAL,
                                    "Source paths \"%s\" and \"%s\" differ only in case", a->orig,
                                    b->orig);
        if (a->leaf)
                return b4_error_set(err, -EINVAL,
                                    "Source path \"%s\" is a file and an ancestor of \"%s\"",
                                    a->orig, b->orig);
        if (strncmp(a->orig, b->orig, a->len) != 0)
                return b4_error_set(err, -EINVAL,
                                    "Source paths \"%s\" and \"%s\" spell the directory \"%.*s\" "
                                    "with different casing",
                                    a->orig, b->orig, (int)a->len, a->orig);
        return 0;
}

static size_t count_keys(const char *const *paths, size_t n)
{
        size_t k = n;

        for (size_t i = 0; i < n; i++)
                for (const char *p = paths[i]; *p; p++)
                        k += *p == '/';
        return k;
}

int b4_bundle_check_paths(const char *const *paths, size_t n, struct b4_error *err)
{
        size_t nk = 0, cap = count_keys(paths, n);
        struct pkey *keys = b4_calloc(cap ? cap : 1, sizeof(*keys));
        int r = 0;

        if (!keys)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n && r >= 0; i++) {
                r = pkey_add(keys, &nk, paths[i], strlen(paths[i]), true);
                for (const char *p = paths[i]; *p && r >= 0; p++)
                        if (*p == '/')
                                r = pkey_add(keys, &nk, paths[i], (size_t)(p - paths[i]), false);
        }
        if (r < 0) {
                pkeys_free(keys, nk);
                return b4_error_set(err, r, "out of memory");
        }
        qsort_safe(keys, nk, sizeof(*keys), pkey_cmp);
        for (size_t i = 1; i < nk && r >= 0; i++)
                if (strcmp(keys[i - 1].lower, keys[i].lower) == 0)
                        r = collision(&keys[i - 1], &keys[i], err);
        pkeys_free(keys, nk);
        return r;
}

/* ---- the bundle object ----------------------------------------------------------------- */

struct b4_bundle *b4_bundle_free(struct b4_bundle *b)
{
        if (!b)
                return NULL;
        jv_unref(b->priv_doc);
        strv_free(b->priv_strings);
        free(b->files);
        free(b);
        return NULL;
}

static int file_cmp(const void *a, const void *b)
{
        return strcmp(((const struct b4_bundle_file *)a)->path,
                      ((const struct b4_bundle_file *)b)->path);
}

const struct b4_bundle_file *b4_bundle_find(const struct b4_bundle *b, const char *path)
{
        struct b4_bundle_file key = { .path = path };

        if (!b || !b->n_files)
                return NULL;
        return bsearch(&key, b->files, b->n_files, sizeof(key), file_cmp);
}

/* The §7.1 digest over the (already verified) files. */
static void bundle_digest(const struct b4_bundle *b, char ret_hex[SHA256_HEX_LEN + 1])
{
        struct sha256_ctx *c = sha256_new();
        static const char head[] = "[\"b4-workspace-source-v1\",[";

        if (!c) {
                ret_hex[0] = '\0'; /* never equals a claimed digest: refused as a mismatch */
                return;
        }
        sha256_update(c, head, sizeof(head) - 1);
        for (size_t i = 0; i < b->n_files; i++) {
                const struct b4_bundle_file *f = &b->files[i];
                const char *tail = f->executable ? "\",true]" : "\",false]";

                sha256_update(c, i ? ",[\"" : "[\"", i ? 3 : 2);
                sha256_update(c, f->path, strlen(f->path));
                sha256_update(c, "\",\"", 3);
                sha256_update(c, f->base64, f->base64_len);
                sha256_update(c, tail, strlen(tail));
        }
        sha256_update(c, "]]", 2);
        sha256_final_hex(c, ret_hex);
}

/* The rules that apply to a file list: sizes, paths, order and collisions. */
static int verify_files(struct b4_bundle *b, bool sorted_input, struct b4_error *err)
{
        cleanup_free const char **paths = b4_calloc(b->n_files + 1, sizeof(char *));
        int r;

        if (!paths)
                return b4_error_set(err, -ENOMEM, "out of memory");
        b->total_bytes = 0;
        for (size_t i = 0; i < b->n_files; i++) {
                const struct b4_bundle_file *f = &b->files[i];

                r = b4_portable_path_check("Source path", f->path, err);
                if (r < 0)
                        return r;
                if (f->size > B4_BUNDLE_MAX_FILE_BYTES)
                        return b4_error_set(err, -E2BIG,
                                            "Source bundle file \"%s\" exceeds %u bytes", f->path,
                                            B4_BUNDLE_MAX_FILE_BYTES);
                b->total_bytes += f->size;
                if (b->total_bytes > B4_BUNDLE_MAX_TOTAL)
                        return b4_error_set(err, -E2BIG, "Source bundle exceeds %u bytes in total",
                                            B4_BUNDLE_MAX_TOTAL);
                paths[i] = f->path;
        }
        r = b4_bundle_check_paths(paths, b->n_files, err);
        if (r < 0)
                return r;
        if (!sorted_input)
                qsort_safe(b->files, b->n_files, sizeof(*b->files), file_cmp);
        for (size_t i = 1; i < b->n_files; i++)
                if (strcmp(b->files[i - 1].path, b->files[i].path) >= 0)
                        return b4_error_set(err, -EINVAL,
                                            "Source bundle files are not sorted by path (\"%s\" "
                                            "before \"%s\")",
                                            b->files[i - 1].path, b->files[i].path);
        return 0;
}

static struct b4_bundle *bundle_alloc(size_t n)
{
        struct b4_bundle *b = b4_calloc(1, sizeof(*b));

        if (!b)
                return NULL;
        b->files = b4_calloc(n ? n : 1, sizeof(*b->files));
        if (!b->files)
                return b4_bundle_free(b);
        b->n_files = n;
        return b;
}

DEFINE_CLEANUP_FUNC(struct b4_bundle, b4_bundle_free);

static int create_file(struct b4_bundle *b, size_t i, const struct b4_bundle_input *in)
{
        char *path = NULL, *b64 = NULL;
        size_t n = 0;
        int r;

        if (!in->path || (in->len && !in->data))
                return -EINVAL;
        path = b4_strdup(in->path);
        if (!path || strv_consume(&b->priv_strings, path) < 0)
                return -ENOMEM;
        r = base64_encode(in->data, in->len, &b64, &n);
        if (r < 0 || strv_consume(&b->priv_strings, b64) < 0)
                return -ENOMEM;
        b->files[i] = (struct b4_bundle_file){
                .path = path,
                .base64 = b64,
                .base64_len = n,
                .size = in->len,
                .executable = in->executable,
        };
        return 0;
}

int b4_bundle_create(const struct b4_bundle_input *in,
                     size_t n,
                     struct b4_bundle **ret,
                     struct b4_error *err)
{
        cleanup_(b4_bundle_freep) struct b4_bundle *b = NULL;
        int r;

        if (n > B4_BUNDLE_MAX_ENTRIES)
                return b4_error_set(err, -E2BIG, "Source bundle has more than %u entries",
                                    B4_BUNDLE_MAX_ENTRIES);
        b = bundle_alloc(n);
        if (!b)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                if (in[i].len > B4_BUNDLE_MAX_FILE_BYTES)
                        return b4_error_set(err, -E2BIG,
                                            "Source bundle file \"%s\" exceeds %u bytes",
                                            in[i].path, B4_BUNDLE_MAX_FILE_BYTES);
                r = create_file(b, i, &in[i]);
                if (r < 0)
                        return b4_error_set(err, r, "cannot encode source file");
        }
        r = verify_files(b, false, err);
        if (r < 0)
                return r;
        bundle_digest(b, b->digest);
        *ret = TAKE_PTR(b);
        return 0;
}

int b4_bundle_format(const struct b4_bundle *b, char **ret, size_t *ret_len, struct b4_error *err)
{
        struct strbuf sb;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_addf(&sb, "{\"version\":1,\"digest\":\"%s\",\"files\":[", b->digest);
        for (size_t i = 0; i < b->n_files && r >= 0; i++) {
                const struct b4_bundle_file *f = &b->files[i];

                r = strbuf_addf(&sb, "%s{\"path\":\"%s\",\"base64\":\"", i ? "," : "", f->path);
                if (r >= 0)
                        r = strbuf_add(&sb, f->base64, f->base64_len);
                if (r >= 0)
                        r = strbuf_addf(&sb, "\",\"executable\":%s}",
                                        f->executable ? "true" : "false");
        }
        if (r >= 0)
                r = strbuf_adds(&sb, "]}");
        if (r >= 0)
                r = strbuf_detach(&sb, ret, ret_len);
        strbuf_release(&sb);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        return 0;
}

/* ---- parsing --------------------------------------------------------------------------- */

static bool has_exactly(const struct jv *o, const char *const *keys)
{
        size_t n = 0;

        if (!jv_is_object(o))
                return false;
        for (; keys[n]; n++)
                if (!jv_object_get(o, keys[n]))
                        return false;
        return jv_object_size(o) == n;
}

static bool is_hex64(const struct jv *v)
{
        const char *s = jv_string(v);

        return s && jv_string_length(v) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static int parse_file(struct b4_bundle *b, size_t i, const struct jv *o, struct b4_error *err)
{
        static const char *const keys[] = { "path", "base64", "executable", NULL };
        const struct jv *p = jv_object_get(o, "path"), *d = jv_object_get(o, "base64");
        const struct jv *x = jv_object_get(o, "executable");
        ssize_t size;

        if (!has_exactly(o, keys))
                return b4_error_set(err, -EINVAL,
                                    "Source bundle file %zu must be an object with exactly path, "
                                    "base64 and executable",
                                    i);
        if (!jv_is_string(p) || strlen(jv_string(p)) != jv_string_length(p))
                return b4_error_set(err, -EINVAL, "Source bundle file %zu path must be a string",
                                    i);
        if (!jv_is_bool(x))
                return b4_error_set(err, -EINVAL,
                                    "Source bundle file %zu executable must be a boolean", i);
        size = jv_is_string(d) ? base64_decoded_len(jv_string(d), jv_string_length(d)) : -1;
        if (size < 0)
                return b4_error_set(err, -EINVAL,
                                    "Source bundle file %zu base64 is not canonical standard "
                                    "base64",
                                    i);
        b->files[i] = (struct b4_bundle_file){
                .path = jv_string(p),
                .base64 = jv_string(d),
                .base64_len = jv_string_length(d),
                .size = (size_t)size,
                .executable = jv_is_true(x),
        };
        return 0;
}

static int parse_doc(struct jv *doc, struct b4_bundle **ret, struct b4_error *err)
{
        static const char *const keys[] = { "version", "digest", "files", NULL };
        const struct jv *files = jv_object_get(doc, "files"), *v = jv_object_get(doc, "version");
        cleanup_(b4_bundle_freep) struct b4_bundle *b = NULL;
        int r;

        if (!has_exactly(doc, keys))
                return b4_error_set(err, -EINVAL,
                                    "Source bundle must be an object with exactly "
                                    "version, digest and files");
        if (!jv_is_safe_integer(v) || jv_integer(v) != 1)
                return b4_error_set(err, -EINVAL, "Source bundle version must be 1");
        if (!is_hex64(jv_object_get(doc, "digest")))
                return b4_error_set(err, -EINVAL,
                                    "Source bundle digest must be 64 lowercase hex characters");
        if (!jv_is_array(files))
                return b4_error_set(err, -EINVAL, "Source bundle files must be an array");
        if (jv_array_size(files) > B4_BUNDLE_MAX_ENTRIES)
                return b4_error_set(err, -E2BIG, "Source bundle has more than %u entries",
                                    B4_BUNDLE_MAX_ENTRIES);
        b = bundle_alloc(jv_array_size(files));
        if (!b)
                return b4_error_set(err, -ENOMEM, "out of memory");
        b->priv_doc = jv_ref(doc);
        for (size_t i = 0; i < b->n_files; i++) {
                r = parse_file(b, i, jv_array_get(files, i), err);
                if (r < 0)
                        return r;
        }
        r = verify_files(b, true, err);
        if (r < 0)
                return r;
        bundle_digest(b, b->digest);
        if (strcmp(b->digest, jv_string(jv_object_get(doc, "digest"))) != 0)
                return b4_error_set(err, -EINVAL, "Source bundle digest mismatch");
        *ret = TAKE_PTR(b);
        return 0;
}

int b4_bundle_parse(const char *json, size_t len, struct b4_bundle **ret, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *doc = NULL;
        int r;

        r = jv_parse(json, len, &doc, err);
        if (r < 0)
                return b4_error_wrap(err, r, "Source bundle is not JSON");
        return parse_doc(doc, ret, err);
}

/* ---- captured definitions ------------------------------------------------------------ */

struct b4_captured_workspace *b4_captured_workspace_free(struct b4_captured_workspace *w)
{
        if (!w)
                return NULL;
        b4_bundle_free(w->source);
        for (size_t i = 0; i < w->n_links; i++) {
                free(w->links[i].path);
                free(w->links[i].target);
        }
        free(w->links);
        free(w);
        return NULL;
}

DEFINE_CLEANUP_FUNC(struct b4_captured_workspace, b4_captured_workspace_free);

static int link_cmp(const void *a, const void *b)
{
        return strcmp(((const struct b4_captured_link *)a)->path,
                      ((const struct b4_captured_link *)b)->path);
}

static bool is_git_path(const char *p)
{
        return strncasecmp(p, ".git", 4) == 0 && (p[4] == '\0' || p[4] == '/');
}

static int check_link(const struct b4_captured_link *l, struct b4_error *err)
{
        int r = b4_portable_path_check("Environment link path", l->path, err);

        if (r < 0)
                return r;
        if (!l->target || l->target[0] != '/' || strlen(l->target) > B4_BUNDLE_MAX_PATH)
                return b4_error_set(err, -EINVAL,
                                    "Environment link target for \"%s\" must be an absolute path "
                                    "of at most 1024 characters",
                                    l->path);
        return b4_portable_path_check("Environment link target", l->target + 1, err);
}

/* Files and links together obey the collision rule; .git is reserved under a git baseline. */
static int check_leaves(const struct b4_captured_workspace *w, struct b4_error *err)
{
        size_t n = w->source->n_files + w->n_links;
        cleanup_free const char **paths = b4_calloc(n + 1, sizeof(char *));

        if (!paths)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < w->source->n_files; i++)
                paths[i] = w->source->files[i].path;
        for (size_t i = 0; i < w->n_links; i++)
                paths[w->source->n_files + i] = w->links[i].path;
        for (size_t i = 0; w->baseline_git && i < n; i++)
                if (is_git_path(paths[i]))
                        return b4_error_set(err, -EINVAL,
                                            "Source path \"%s\" is reserved by the git baseline",
                                            paths[i]);
        return b4_bundle_check_paths(paths, n, err);
}

int b4_captured_workspace_make(struct b4_bundle **source,
                               const struct b4_captured_link *links,
                               size_t n_links,
                               bool baseline_git,
                               struct b4_captured_workspace **ret,
                               struct b4_error *err)
{
        cleanup_(b4_captured_workspace_freep) struct b4_captured_workspace *w = NULL;
        int r;

        if (!source || !*source)
                return b4_error_set(err, -EINVAL, "no source bundle");
        if (n_links > B4_BUNDLE_MAX_LINKS)
                return b4_error_set(err, -E2BIG, "More than %u environment links",
                                    B4_BUNDLE_MAX_LINKS);
        w = b4_calloc(1, sizeof(*w));
        if (w)
                w->links = b4_calloc(n_links ? n_links : 1, sizeof(*w->links));
        if (!w || !w->links)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n_links; i++) {
                r = check_link(&links[i], err);
                if (r < 0)
                        return r;
                w->links[i].path = b4_strdup(links[i].path);
                w->links[i].target = b4_strdup(links[i].target);
                w->n_links++;
                if (!w->links[i].path || !w->links[i].target)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        }
        qsort_safe(w->links, w->n_links, sizeof(*w->links), link_cmp);
        w->baseline_git = baseline_git;
        w->source = *source;
        r = check_leaves(w, err);
        if (r < 0) {
                w->source = NULL; /* stays the caller's */
                return r;
        }
        *source = NULL;
        *ret = TAKE_PTR(w);
        return 0;
}
