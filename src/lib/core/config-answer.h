/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The config loader's entry point for the runtime: a resolver's answer (sandbox.thread or
 * sandbox.workspace command output) is parsed by the same block parsers as b4box.json, so it
 * is refused with the same texts. Lib-internal (takes the json layer's value).
 */

#include <stdbool.h>

#include "b4box/config.h"
#include "b4box/error.h"

struct jv;

/*
 * config_parse_resolver_answer() - parse a resolver's answer
 * @v: the answer (borrowed)
 * @thread: true: a thread sandbox (sandbox.thread result) into @t; false: a workspace
 *          definition (sandbox.workspace result) into t->workspace
 * @base_dir: what relative paths are joined to (the config file's directory)
 * @t: filled; the caller clears it with config_thread_sandbox_clear(), on failure too
 *
 * Return: 0; -EINVAL with the first refusal in @err; -ENOMEM.
 */
int config_parse_resolver_answer(const struct jv *v,
                                 bool thread,
                                 const char *base_dir,
                                 struct b4_thread_sandbox *t,
                                 struct b4_error *err);

/* Free what a thread sandbox owns and zero it. */
void config_thread_sandbox_clear(struct b4_thread_sandbox *t);

struct b4_policy;

/* The sandbox record's "network" object of thread policy @p: {mode, allowlist | denylist?},
 * entries as configured. Return: a new object, or NULL (out of memory). */
struct jv *config_thread_network_json(const struct b4_thread_policy *p);

/*
 * config_thread_network_apply() - a recorded thread network over the app's
 * @app: the app's policy
 * @net: the record's policy.network (borrowed), or NULL: the app's network
 * @p: a copy of @app; on success its mode and list are the thread's narrowed ones
 *
 * Return: 0; -EPERM (B4_CODE_THREAD_REFUSED) when @net does not narrow @app's network, with
 * `A thread's sandbox policy <reason>` in @err; -EBADMSG when @net is malformed; -ENOMEM.
 */
int config_thread_network_apply(const struct b4_policy *app,
                                const struct jv *net,
                                struct b4_policy *p,
                                struct b4_error *err);
