/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The fake provider's in-memory workspace: a map of normalised absolute path to file
 * content, explicit directory or symlink. Directories also exist implicitly: every proper
 * prefix of a stored path, the workspace root and its ancestors. All functions expect the
 * caller to hold the provider's lock; all but fakefs_resolve() and fakefs_symlink() take a
 * path whose links are resolved already.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/provider-impl.h"

struct fake_sandbox;

struct fake_entry {
        char *path;       /* owned; normalised absolute path */
        char *data;       /* owned file content, NUL-terminated past len; NULL for a dir */
        char *target;     /* owned symlink text (never resolved when stored); NULL otherwise */
        size_t len;       /* content bytes */
        bool is_dir;      /* an explicitly created directory */
        bool executable;  /* chmod gave the file an 0111 bit (kept across writes) */
        int64_t mtime_ms; /* last write or touch */
};

struct fake_ws {
        char *thread_id;      /* owned */
        struct fake_entry *v; /* owned array, unsorted */
        size_t n;
        unsigned refs;      /* the provider's map, handles and readers */
        bool destroyed;     /* removed from the provider by destroy */
        unsigned instances; /* instances started and not released/destroyed since */
        bool frozen;        /* between freeze(true) and freeze(false) */
        unsigned freezes;   /* freeze(true) calls (consistent reads) */
};

/* Lexical normalisation of an absolute path: no "", "." or ".." components, no trailing '/'. */
int fakefs_normalize(const char *path, char **ret, struct b4_error *err);
void fakefs_clear(struct fake_ws *ws);
/*
 * Resolve @path's symlinks component by component, tolerating a missing tail (realpath -m);
 * the leaf is followed only with @follow_last. enum b4_fs_flags: B4_FS_NO_SYMLINKS refuses a
 * link on the way (-ELOOP), B4_FS_BENEATH an absolute link or a result outside the workspace
 * (-EXDEV); more than 40 links -ELOOP. @op names the call in messages. @ret: owned.
 */
int fakefs_resolve(struct fake_ws *ws,
                   const char *path,
                   bool follow_last,
                   unsigned flags,
                   const char *op,
                   char **ret,
                   struct b4_error *err);

int fakefs_read(struct fake_ws *ws,
                const char *path,
                uint64_t max_bytes,
                char **ret,
                size_t *ret_len,
                struct b4_error *err);
int fakefs_lstat(struct fake_ws *ws, const char *path, struct b4_stat *ret, struct b4_error *err);
int fakefs_list(struct fake_ws *ws, const char *path, char ***ret, struct b4_error *err);
int fakefs_write(
        struct fake_ws *ws, const char *path, const void *data, size_t len, struct b4_error *err);
int fakefs_mkdir(struct fake_ws *ws, const char *path, struct b4_error *err);
int fakefs_remove(struct fake_ws *ws, const char *path, struct b4_error *err);
int fakefs_touch(struct fake_ws *ws, const char *path, struct b4_error *err);
/* Only the executable bits are kept (files only); a symlink leaf is -ELOOP. */
int fakefs_chmod(struct fake_ws *ws, const char *path, uint32_t mode, struct b4_error *err);
/* Store @path as a symlink to @target (raw text); an existing @path is -EEXIST. */
int fakefs_symlink(struct fake_ws *ws, const char *target, const char *path, struct b4_error *err);
