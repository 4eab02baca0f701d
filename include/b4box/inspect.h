/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Workspace inspection (reference §5.1): a bounded, read-only inventory of a workspace seen
 * through a struct b4_fs (a reader's or a sandbox handle's), refused loudly when it holds
 * anything but plain UTF-8 text files and directories (plus the root symlinks the caller
 * expects). One walk (b4_fs_walk) and one batched read (b4_fs_read_files) per inspection.
 *
 *   b4_inspect_options_init(&o);  o.root = "draft";  ...
 *   r = b4_inspect_workspace(fs, &o, &insp, &fail, &err);
 *   r == -EPROTO: a refusal, fail.code says which (invalid_options / root_missing / refused /
 *                 changed) and err.msg carries the reference's exact text.
 *
 * docs/inspect.md describes the JSON shapes and the HTTP endpoint built on top.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/cancel.h"
#include "b4box/error.h"
#include "b4box/provider.h"

#define B4_INSPECT_DEFAULT_MAX_ENTRIES     10000u
#define B4_INSPECT_DEFAULT_MAX_FILE_BYTES  (2u * 1024u * 1024u)
#define B4_INSPECT_DEFAULT_MAX_TOTAL_BYTES (16u * 1024u * 1024u)
#define B4_INSPECT_MAX_SAFE_INTEGER        9007199254740991ull /* 2^53 - 1 */
#define B4_INSPECT_ROOT_MAX_CHARS          1024u

enum b4_inspect_code {
        B4_INSPECT_NONE = 0,
        B4_INSPECT_INVALID_OPTIONS = 1, /* nothing was read */
        B4_INSPECT_ROOT_MISSING = 2,    /* see b4_inspect_failure.kind */
        B4_INSPECT_REFUSED = 3,         /* the workspace holds something not admitted */
        B4_INSPECT_CHANGED = 4,         /* the workspace changed during the read */
};

enum b4_root_missing_kind {
        B4_ROOT_ABSENT = 0,
        B4_ROOT_NOT_DIRECTORY = 1,
};

/* Why an inspection was refused; filled when b4_inspect_workspace() returns -EPROTO. */
struct b4_inspect_failure {
        enum b4_inspect_code code;
        enum b4_root_missing_kind kind; /* with B4_INSPECT_ROOT_MISSING */
};

struct b4_root_symlink {
        const char *name;   /* a root leaf name */
        const char *target; /* exact, unnormalised readlink text */
};

/* What an inspection does with an entry it cannot return as text (issue 16 item 7). */
enum b4_inspect_unsupported {
        B4_INSPECT_UNSUPPORTED_REFUSE = 0, /* the reference's: the whole read is refused */
        B4_INSPECT_UNSUPPORTED_SKIP = 1,   /* left out of files, listed in skipped */
};

struct b4_inspect_options {
        struct b4_cancel *cancel;  /* optional; checked before and after every backend call */
        uint64_t max_entries;      /* every entry, directories and excluded roots included */
        uint64_t max_file_bytes;   /* per file */
        uint64_t max_total_bytes;  /* sum of the file bytes read */
        char *const *exclude_root; /* strv (may be NULL): root directories skipped */
        const struct b4_root_symlink *expected; /* root symlinks that must exist, exactly */
        size_t n_expected;
        const char *root; /* NULL = the workspace root; else a canonical relative path */
        enum b4_inspect_unsupported unsupported; /* default refuse */
        /* strv (may be NULL): canonical paths relative to root, each left out with all below
         * it (not read, not listed; walked, so counted in max_entries, unless a single
         * segment: that one is not descended, as an excluded root); any kind, absent ok */
        char *const *exclude_paths;
};

/** b4_inspect_options_init() - the reference's defaults (10,000 entries, 2 MiB, 16 MiB). */
B4_PUBLIC void b4_inspect_options_init(struct b4_inspect_options *o);

struct b4_inspected_file {
        char *path; /* owned; relative to the inspection root, '/'-separated */
        char *text; /* owned UTF-8 (BOM kept), NUL-terminated past len */
        size_t len;
};

struct b4_inspected_link {
        char *name;   /* owned root leaf name */
        char *target; /* owned readlink text */
};

/* Why a skipped entry was left out (B4_INSPECT_UNSUPPORTED_SKIP). */
enum b4_skip_reason {
        B4_SKIP_EXECUTABLE = 0, /* a regular file with an x bit: not read */
        B4_SKIP_BINARY = 1,     /* read (under the byte limits), holds a NUL byte */
        B4_SKIP_NOT_UTF8 = 2,   /* read (under the byte limits), not strict UTF-8 */
        B4_SKIP_SYMLINK = 3,    /* a link not named in expected: not followed */
        B4_SKIP_OTHER = 4,      /* a fifo, socket, device: not opened */
};

/** b4_skip_reason_name() - "executable", "binary", "not_utf8", "symlink", "other". */
B4_PUBLIC const char *b4_skip_reason_name(enum b4_skip_reason r);

struct b4_skipped_entry {
        char *path; /* owned; relative to the inspection root */
        enum b4_skip_reason reason;
};

/* The result (reference WorkspaceInspection). Files are in depth-first, bytewise order. */
struct b4_inspection {
        struct b4_inspected_file *files;
        size_t n_files;
        struct b4_inspected_link *links; /* in the order of b4_inspect_options.expected */
        size_t n_links;
        uint64_t total_bytes; /* sum of the files' bytes */
        uint64_t entries;     /* entries seen below the root (the root itself excluded) */
        /* B4_INSPECT_UNSUPPORTED_SKIP only: what was left out, depth-first; lists_skipped
         * says the JSON carries "skipped" (also when empty) */
        struct b4_skipped_entry *skipped;
        size_t n_skipped;
        bool lists_skipped;
};

/** b4_inspection_clear() - free what @insp owns and zero it. */
B4_PUBLIC void b4_inspection_clear(struct b4_inspection *insp);

/**
 * b4_inspect_workspace() - inspect the workspace behind @fs
 * @fs:       a reader's or handle's filesystem; fs->root is the workspace root
 * @o:        options (b4_inspect_options_init() first); NULL = defaults
 * @ret:      on success, the inventory; the caller clears it
 * @ret_fail: optional; on -EPROTO, which refusal
 * @err:      the message (the reference's exact text for refusals)
 *
 * Return: 0; -EPROTO (a refusal, see @ret_fail); -ECANCELED; -ENOMEM; any other backend
 * error as the backend reported it (untyped).
 */
B4_PUBLIC int b4_inspect_workspace(struct b4_fs *fs,
                                   const struct b4_inspect_options *o,
                                   struct b4_inspection *ret,
                                   struct b4_inspect_failure *ret_fail,
                                   struct b4_error *err);

/**
 * b4_inspect_root_is_canonical() - the reference's isCanonicalWorkspaceRoot: 1 to 1024
 * chars, '/'-separated non-empty segments, none "." or "..", no '\\', no char < 32 or 127.
 */
B4_PUBLIC bool b4_inspect_root_is_canonical(const char *root);

/** b4_inspect_code_name() - "invalid_options", "root_missing", "refused", "changed". */
B4_PUBLIC const char *b4_inspect_code_name(enum b4_inspect_code code);

/**
 * b4_inspection_to_json() - the inspection object {files, symlinks, totalBytes, entries}
 * @ignore: strv of key prefixes left out of files (they still count); may be NULL
 * @ret:    compact JSON, heap
 * Return: 0, -ENOMEM.
 */
B4_PUBLIC int b4_inspection_to_json(const struct b4_inspection *insp,
                                    char *const *ignore,
                                    char **ret);

/* ---- the client side of POST /threads/{id}/workspace/inspect ---- */

#define B4_INSPECT_RESPONSE_MAX_BYTES (64u * 1024u * 1024u)

/* A thread's workspace read (b4_runtime_inspect()): the inventory, or why it was refused,
 * and the digests its admission recorded. */
struct b4_workspace_read {
        struct b4_inspection inspection; /* on success */
        struct b4_inspect_failure fail;  /* on -EPROTO */
        char *source_digest;             /* NULL when none was recorded (provider storage) */
        char *intent_digest;             /* NULL likewise */
};

/** b4_workspace_read_clear() - free what @rd owns and zero it. */
B4_PUBLIC void b4_workspace_read_clear(struct b4_workspace_read *rd);

/**
 * b4_inspect_response_format() - the 200 answer {threadId, sourceDigest, intentDigest, root?,
 * inspection} that b4_inspect_response_parse() checks
 * @root:   the root the request named, or NULL (no "root" key)
 * @ignore: as b4_inspection_to_json()
 * @ret:    compact JSON, heap; @ret_len (optional) its length
 * Return: 0; -E2BIG past B4_INSPECT_RESPONSE_MAX_BYTES; -EINVAL (a string not UTF-8); -ENOMEM.
 */
B4_PUBLIC int b4_inspect_response_format(const char *thread_id,
                                         const char *root,
                                         const struct b4_workspace_read *rd,
                                         char *const *ignore,
                                         char **ret,
                                         size_t *ret_len);

struct b4_inspect_response {
        char *thread_id;
        char *source_digest;   /* NULL when the server recorded none (provider storage) */
        char *intent_digest;   /* NULL likewise */
        char *root;            /* NULL when the request named none */
        char *inspection_json; /* the inspection object, compact JSON */
        char **paths;          /* strv: the keys of inspection.files, in order */
        uint64_t n_files, total_bytes, entries;
        char **skipped_paths;   /* strv: inspection.skipped's paths, in order; NULL: none */
        char **skipped_reasons; /* strv: their reasons, one per path */
};

B4_PUBLIC void b4_inspect_response_clear(struct b4_inspect_response *r);

/**
 * b4_inspect_response_parse() - strictly check a 200 answer (reference readThreadWorkspace):
 * exact keys, 64-hex digests or null, file keys relative paths, symlink keys single leaves,
 * counts safe integers; then the thread and (when @expect_source) the source digest.
 * Return: 0; -EBADMSG (malformed_response); -ESRCH (thread_mismatch); -EXDEV
 * (source_mismatch); -ENOMEM. The message names the refusal code first.
 */
B4_PUBLIC int b4_inspect_response_parse(const char *text,
                                        size_t len,
                                        const char *expect_thread,
                                        const char *expect_source,
                                        struct b4_inspect_response *ret,
                                        struct b4_error *err);

/**
 * b4_inspect_error_parse() - the details.code and message of a refusal body, for clients.
 * Return: 0 (both heap), -EBADMSG when @text is not the error shape, -ENOMEM.
 */
B4_PUBLIC int b4_inspect_error_parse(const char *text,
                                     size_t len,
                                     char **ret_code,
                                     char **ret_message);
