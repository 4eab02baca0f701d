/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Source bundles (reference §7.1): a content-addressed set of files,
 *
 *   {"version":1,"digest":"<64 hex>","files":[{"path":..,"base64":..,"executable":..},...]}
 *
 * with files sorted by path and digest = sha256 of the compact JSON
 * ["b4-workspace-source-v1",[[path,base64,executable],...]]. Every bundle this API hands out
 * has passed every verification rule; the canonical JSON is the only stored form.
 *
 * Captured workspace definitions (reference §7.2) pair a bundle with environment links and
 * an optional git baseline; the runtime writes one into a sandbox's workspace at a managed
 * admission (workspace/materialize.h, library-internal).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

struct b4_workspace_def;
struct b4_cancel;

#define B4_BUNDLE_MAX_ENTRIES    10000u
#define B4_BUNDLE_MAX_FILE_BYTES (16u * 1024u * 1024u)
#define B4_BUNDLE_MAX_TOTAL      (64u * 1024u * 1024u)
#define B4_BUNDLE_MAX_PATH       1024u
#define B4_BUNDLE_MAX_SEGMENT    255u
#define B4_BUNDLE_MAX_LINKS      1024u

struct b4_bundle_file {
        const char *path;   /* borrowed from the bundle; a portable path */
        const char *base64; /* borrowed; canonical standard base64 */
        size_t base64_len;
        size_t size; /* decoded bytes */
        bool executable;
};

struct b4_bundle {
        char digest[65];              /* 64 lowercase hex + NUL */
        struct b4_bundle_file *files; /* owned array, sorted by path (bytewise) */
        size_t n_files;
        uint64_t total_bytes; /* decoded bytes of all files */
        void *priv_doc;       /* private: the parsed document the strings live in */
        char **priv_strings;  /* private: strings owned when built by b4_bundle_create() */
};

struct b4_bundle_input {
        const char *path; /* borrowed */
        const void *data; /* borrowed, @len bytes */
        size_t len;
        bool executable;
};

/**
 * b4_bundle_create() - build a verified bundle from files in any order
 * @in:  @n entries, borrowed for the call (bytes are base64-encoded into the bundle)
 * @ret: on success owned by the caller (b4_bundle_free())
 * Return: 0, -EINVAL (a verification rule; message says which), -E2BIG (limits), -ENOMEM.
 */
B4_PUBLIC int b4_bundle_create(const struct b4_bundle_input *in,
                               size_t n,
                               struct b4_bundle **ret,
                               struct b4_error *err);

/**
 * b4_bundle_parse() - parse a bundle's JSON and apply every verification rule
 * @json: @len bytes, borrowed
 * @ret:  on success owned by the caller (b4_bundle_free())
 *
 * Refusals (all -EINVAL unless said): not JSON; shape ("Source bundle ..."); more than 10000
 * entries, a file over 16 MiB, a total over 64 MiB (-E2BIG); non-canonical base64; a path
 * that is not portable; duplicate or case-colliding paths, a directory spelled in two
 * casings, a file that is an ancestor of another path; files out of order; and
 * "Source bundle digest mismatch" when the content does not hash to the claimed digest.
 */
B4_PUBLIC int b4_bundle_parse(const char *json,
                              size_t len,
                              struct b4_bundle **ret,
                              struct b4_error *err);

/**
 * b4_bundle_format() - the canonical JSON (no whitespace, keys and files in order)
 * @ret: NUL-terminated heap text owned by the caller; @ret_len its length
 * Return: 0 or -ENOMEM.
 */
B4_PUBLIC int b4_bundle_format(const struct b4_bundle *b,
                               char **ret,
                               size_t *ret_len,
                               struct b4_error *err);

/**
 * b4_bundle_file_decode() - the bytes of one file
 * @ret: heap buffer owned by the caller (NUL-terminated past @ret_len)
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_bundle_file_decode(const struct b4_bundle_file *f,
                                    char **ret,
                                    size_t *ret_len,
                                    struct b4_error *err);

/** b4_bundle_find() - the file at @path, borrowed; NULL when absent (binary search). */
B4_PUBLIC const struct b4_bundle_file *b4_bundle_find(const struct b4_bundle *b, const char *path);

/** b4_bundle_free() - NULL ok. Return: NULL. */
B4_PUBLIC struct b4_bundle *b4_bundle_free(struct b4_bundle *b);

/**
 * b4_portable_path_check() - the portable path rule of §7.1 (1-1024 chars of
 * [A-Za-z0-9._ /-]; segments 1-255, not . or .., no leading space, no trailing space or dot,
 * no double space, not a Windows device name)
 * @what: "Source path", "Environment link path", ... used in the message
 * Return: 0 or -EINVAL with "<what> \"<path>\" is not portable: <reason>".
 */
B4_PUBLIC int b4_portable_path_check(const char *what, const char *path, struct b4_error *err);

/**
 * b4_bundle_check_paths() - the collision rule of §7.1 over leaf paths (files and links)
 * @paths: @n portable paths, borrowed
 * Return: 0 or -EINVAL naming the two colliding paths.
 */
B4_PUBLIC int b4_bundle_check_paths(const char *const *paths, size_t n, struct b4_error *err);

/* ---- captured workspace definitions (§7.2) --------------------------------------------- */

struct b4_captured_link {
        char *path;   /* owned; portable relative path */
        char *target; /* owned; absolute portable path */
};

struct b4_captured_workspace {
        struct b4_bundle *source;       /* owned */
        struct b4_captured_link *links; /* owned, sorted by path */
        size_t n_links;
        bool baseline_git;
};

/** b4_captured_workspace_free() - NULL ok. Return: NULL. */
B4_PUBLIC struct b4_captured_workspace *b4_captured_workspace_free(struct b4_captured_workspace *w);

/**
 * b4_workspace_capture() - capture a static definition (reference §7.2)
 * @app_root: the folder `directory` is relative to (the config file's folder); borrowed
 * @def:      the parsed definition; borrowed
 * @cancel:   optional
 * @ret:      on success owned by the caller
 *
 * `include` must equal the regular files under `directory` (excluded directories pruned):
 * "Source exact inventory mismatch: ..."; symlinks and special files are refused; every file
 * is opened without following links and re-checked ("Source changed during capture: ...").
 * A NULL `include` (never produced by the config loader) takes every regular file found.
 * Return: 0, -EINVAL (refused, message says why), -ECANCELED, -E2BIG, -errno, -ENOMEM.
 */
B4_PUBLIC int b4_workspace_capture(const char *app_root,
                                   const struct b4_workspace_def *def,
                                   struct b4_cancel *cancel,
                                   struct b4_captured_workspace **ret,
                                   struct b4_error *err);

/**
 * b4_captured_workspace_make() - pair a verified bundle with links and a baseline, applying
 * the link rules of §7.2 (absolute portable targets <= 1024, links join the collision check
 * with the files, .git reserved under a git baseline)
 * @source: taken over by the result on success (the caller's pointer is set to NULL)
 * @links:  @n_links {path, target} pairs, copied
 * Return: 0 or -EINVAL, -ENOMEM.
 */
B4_PUBLIC int b4_captured_workspace_make(struct b4_bundle **source,
                                         const struct b4_captured_link *links,
                                         size_t n_links,
                                         bool baseline_git,
                                         struct b4_captured_workspace **ret,
                                         struct b4_error *err);
