/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The fake provider's in-memory workspace: a map of normalised absolute path to file
 * content, explicit directory, symlink or "other" entry (what a FIFO, socket or device is to
 * lstat). Directories also exist implicitly: every proper prefix of a stored path, the
 * workspace root and its ancestors. All fakefs_* functions expect the caller to hold the
 * provider's lock; all but fakefs_resolve(), fakefs_symlink() and fakefs_mkother() take a path
 * whose links are resolved already. Below them: the provider's core and its views, shared by
 * fake.c and fake-view.c.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/provider-impl.h"

#include "fake.h"

enum fake_kind {
        FAKE_NONE = 0, /* kind_of() only: nothing at that path */
        FAKE_FILE,
        FAKE_DIR, /* stored: an explicitly created directory */
        FAKE_LINK,
        FAKE_OTHER, /* neither file, directory nor link (fake_provider_mkother()) */
};

struct fake_entry {
        char *path;          /* owned; normalised absolute path */
        enum fake_kind kind; /* never FAKE_NONE */
        char *data;          /* owned file content, NUL-terminated past len; NULL otherwise */
        char *target;        /* owned symlink text (never resolved when stored); NULL otherwise */
        size_t len;          /* content bytes */
        bool executable;     /* chmod gave the file an 0111 bit (kept across writes) */
        int64_t mtime_ms;    /* last write or touch */
};

struct fake_ws {
        char *thread_id;      /* owned */
        struct fake_entry *v; /* owned array, unsorted */
        size_t n;
        unsigned refs;            /* the provider's map, handles and readers */
        bool destroyed;           /* removed from the provider by destroy */
        unsigned instances;       /* instances started and not released/destroyed since */
        bool frozen;              /* between freeze(true) and freeze(false) */
        unsigned freezes;         /* freeze(true) calls (consistent reads) */
        struct fake_proc **procs; /* background processes (fake-procs.c), oldest first */
        size_t n_procs;
        uint64_t next_pid;
        size_t spool_max; /* B4_PROC_SPOOL_MAX unless fake_provider_set_spool_max() */
};

/* ---- background processes (fake-procs.c); the core's lock held ---- */
struct fake_proc;
extern const struct b4_proc_ops fake_proc_ops;
/* Kill the running ones (release, destroy): they end "released". */
void fake_procs_kill_all(struct fake_ws *ws);
/* Free every record (the workspace goes). */
void fake_procs_clear(struct fake_ws *ws);

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
/* At most @length bytes from @offset; *ret_size the file's size. Errors as fakefs_read. */
int fakefs_read_range(struct fake_ws *ws,
                      const char *path,
                      uint64_t offset,
                      uint64_t length,
                      char **ret,
                      size_t *ret_len,
                      uint64_t *ret_size,
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
/* Store @path as an "other" entry; an existing @path is -EEXIST. */
int fakefs_mkother(struct fake_ws *ws, const char *path, struct b4_error *err);
/* The walk member's contract (provider-impl.h) over @path: depth-first, children sorted,
 * @prune's direct children reported, not descended; over @max entries -E2BIG. */
int fakefs_walk(struct fake_ws *ws,
                const char *path,
                size_t max,
                char *const *prune,
                struct b4_walk_entry **ret,
                size_t *ret_n,
                struct b4_error *err);
/* Break a finished walk as enum fake_walk_faults @faults says (fake.h). Return: 0 or -ENOMEM
 * (then *@v and *@n still describe what is to be freed). */
int fakefs_walk_break(unsigned faults, struct b4_walk_entry **v, size_t *n);

/* ---- the provider's shared state and its views (fake.c, fake-view.c) ---- */

struct hashmap;

struct fake_core {
        pthread_mutex_t lock;
        struct hashmap *threads; /* thread id -> struct fake_ws (its reference) */
        fake_exec_fn *exec;      /* never NULL */
        bool symlinks;           /* new handles get the symlink member */
        bool batched;            /* new handles and readers get walk and read_files */
        void *exec_userdata;
        unsigned refs;             /* the provider, every handle and every reader */
        uint64_t read_delay_ms;    /* B4BOX_FAKE_READ_DELAY_MS: a slow reader open, for tests */
        unsigned walk_faults;      /* enum fake_walk_faults */
        fake_read_hook *read_hook; /* NULL = none; called unlocked */
        void *read_hook_data;
        unsigned calls[FAKE_CALL__COUNT];
};

struct fake_sandbox {
        struct b4_sandbox base;
        struct fake_core *core; /* a reference */
        struct fake_ws *ws;     /* a reference */
        struct b4_fs_ops ops;   /* base.fs's members (fake_view_ops()) */
};

struct fake_reader {
        struct b4_reader base;
        struct fake_core *core; /* a reference */
        struct fake_ws *ws;     /* a reference */
        struct b4_fs_ops ops;   /* base.fs's members (fake_view_ops()) */
};

/* The members of a new handle (@handle) or reader, as the core's switches say. Locked. */
void fake_view_ops(const struct fake_core *c, bool handle, struct b4_fs_ops *ret);
/* Lock the core behind @fs, count @call and return the workspace it may touch; a destroyed
 * one is "Sandbox unavailable" (then unlocked again). */
int fake_view_lock(struct b4_fs *fs,
                   enum fake_call call,
                   struct fake_core **ret_core,
                   struct fake_ws **ret_ws,
                   struct b4_error *err);
/* Unlock; returns @r. */
int fake_view_unlock(struct fake_core *c, int r);
