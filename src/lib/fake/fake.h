/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The fake provider (reference §8): per-thread in-memory workspaces, no isolation, for tests
 * of everything above the provider. Its constructor is fake_provider_new() (providers.h);
 * these are the test hooks it adds on top of the contract.
 *
 * Exec: a command runs through an injectable function. The default, fake_exec_builtin(),
 * is a tiny interpreter for exactly `true`, `false`, `exit [N]`, `echo [-n] ARGS...` and
 * `printf FORMAT [ARGS...]` (words split on blanks, '...' and "..." quoting, no expansion,
 * no operators); anything else exits 127 with "fake: command not supported: <cmd>" on
 * stderr. fake_exec_noop() is the reference fake's default: empty output, exit 0.
 *
 * B4BOX_FAKE_READ_DELAY_MS (read at construction) makes every reader open wait that long
 * (cancellable through the request's token), so tests can hold a workspace read in flight.
 */

#include "b4box/provider-impl.h"

/*
 * An exec implementation. @sb is the handle (its fs may be used); fill @ret (zeroed on entry)
 * and return 0, or -errno for a failure to run at all.
 */
typedef int fake_exec_fn(struct b4_sandbox *sb,
                         const struct b4_exec_req *req,
                         struct b4_exec_result *ret,
                         void *userdata,
                         struct b4_error *err);

int fake_exec_builtin(struct b4_sandbox *sb,
                      const struct b4_exec_req *req,
                      struct b4_exec_result *ret,
                      void *userdata,
                      struct b4_error *err);
int fake_exec_noop(struct b4_sandbox *sb,
                   const struct b4_exec_req *req,
                   struct b4_exec_result *ret,
                   void *userdata,
                   struct b4_error *err);

/**
 * fake_provider_set_exec() - replace how commands run
 * @fn:       NULL restores fake_exec_builtin()
 * @userdata: borrowed; must outlive every exec through @p
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_exec(struct b4_provider *p, fake_exec_fn *fn, void *userdata);

/**
 * fake_provider_instances() - how many compute instances the provider started for
 * @thread_id and has not released or destroyed since (so 0 or 1 when acquire is correct)
 * Return: the count, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_instances(struct b4_provider *p, const char *thread_id);

/** fake_provider_n_workspaces() - workspace maps alive. Return: count or -EINVAL. */
int fake_provider_n_workspaces(struct b4_provider *p);

/**
 * fake_provider_freezes() - how many times the thread was frozen (b4_provider_freeze()), and
 * whether it is frozen now (@ret_frozen, optional). The fake's freeze is a no-op that records.
 * Return: the count, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_freezes(struct b4_provider *p, const char *thread_id, bool *ret_frozen);

/**
 * fake_provider_set_spool_max() - the output bytes a background process of @thread_id keeps
 * (default B4_PROC_SPOOL_MAX), so the bound is tested without 64 MiB of output. The fake's
 * processes: fake-procs.c.
 * Return: 0, -EINVAL (not a fake), -ENOENT (no workspace for @thread_id).
 */
int fake_provider_set_spool_max(struct b4_provider *p, const char *thread_id, size_t max);

/**
 * fake_provider_set_symlinks() - whether handles started from now on have the symlink member
 * (default: not, so callers take their no-symlink paths, e.g. materialising links by exec).
 * Links are resolved either way; only making them needs the member.
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_symlinks(struct b4_provider *p, bool on);

/*
 * ---- hooks for the tests of callers that must survive a hostile or racing provider ----
 * (the workspace inspection's). Unset, they cost a branch.
 */

/**
 * fake_provider_set_batched() - whether handles and readers opened from now on have the
 * batched members walk and read_files (default: not, so b4_fs_walk() and b4_fs_read_files()
 * take core's per-entry fallbacks). The fake's walk answers from one snapshot of the
 * workspace, its read_files reads every file under one hold of the lock.
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_batched(struct b4_provider *p, bool on);

/* How the batched walk breaks its contract (applied in this order). */
enum fake_walk_faults {
        FAKE_WALK_NO_DIRS = 1 << 0,   /* directories left out, what is below them kept */
        FAKE_WALK_REVERSED = 1 << 1,  /* entries in reverse order: the caller must sort */
        FAKE_WALK_DUPLICATE = 1 << 2, /* the first entry reported once more, at the end */
};

/**
 * fake_provider_set_walk_faults() - make every batched walk from now on break its contract
 * as @faults (enum fake_walk_faults; 0 = keep it) says
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_walk_faults(struct b4_provider *p, unsigned faults);

/* Runs before a read; see fake_provider_set_read_hook(). */
typedef void fake_read_hook(void *userdata);

/**
 * fake_provider_set_read_hook() - run @fn(@userdata) at the start of every read_file and
 * read_files call (once per batch) of a handle or reader of @p: an injected writer racing a
 * read. It runs holding no fake lock, so it may change the workspace through a handle while
 * the read is on a reader. Its own reads run it again. Set it while no read runs on @p.
 * @fn:       NULL removes it
 * @userdata: borrowed; must outlive every read through @p while it is set
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_read_hook(struct b4_provider *p, fake_read_hook *fn, void *userdata);

/* The members of handles and readers (their filesystem's and exec), as counted by
 * fake_provider_calls(). */
enum fake_call {
        FAKE_CALL_READ_FILE,
        FAKE_CALL_LSTAT,
        FAKE_CALL_STAT,
        FAKE_CALL_LIST_DIR,
        FAKE_CALL_REALPATH,
        FAKE_CALL_WALK,
        FAKE_CALL_READ_FILES,
        FAKE_CALL_WRITE_FILE,
        FAKE_CALL_MKDIR_P,
        FAKE_CALL_REMOVE,
        FAKE_CALL_TOUCH,
        FAKE_CALL_CHMOD,
        FAKE_CALL_SYMLINK,
        FAKE_CALL_EXEC,
        FAKE_CALL_PROC, /* every background process call */
        FAKE_CALL__COUNT,
};

/**
 * fake_provider_calls() - how many times the member @call of a handle or reader of @p ran
 * (for every thread, failed calls included) since @p was made or fake_provider_reset_calls().
 * core's fallbacks count as the members they call (a fallback walk as list_dir and lstat).
 * Return: the count, or -EINVAL when @p is not a fake provider or @call is out of range.
 */
int fake_provider_calls(struct b4_provider *p, enum fake_call call);

/** fake_provider_reset_calls() - zero the counts. Return: 0, or -EINVAL (not a fake). */
int fake_provider_reset_calls(struct b4_provider *p);

/**
 * fake_provider_mkother() - put an "other" entry (lstat says B4_FILE_OTHER, as for a FIFO,
 * socket or device) at @path of @thread_id's workspace. It reads -EINVAL, lists -ENOTDIR,
 * is replaced by a write and removed by remove. @path is not resolved: its links are not
 * followed.
 * Return: 0, -EINVAL (not a fake, or @path not absolute), -ENOENT (no workspace for
 * @thread_id), -EEXIST (@path exists), -ENOTDIR (a parent is not a directory) or -ENOMEM.
 */
int fake_provider_mkother(struct b4_provider *p, const char *thread_id, const char *path);
