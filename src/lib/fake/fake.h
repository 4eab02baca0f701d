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
 * fake_provider_set_symlinks() - whether handles started from now on have the symlink member
 * (default: not, so callers take their no-symlink paths, e.g. materialising links by exec).
 * Links are resolved either way; only making them needs the member.
 * Return: 0, or -EINVAL when @p is not a fake provider.
 */
int fake_provider_set_symlinks(struct b4_provider *p, bool on);
