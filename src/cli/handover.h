/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Two binaries, one CLI (docs/ARCHITECTURE.md, "A CLI that starts fast"). `b4box` holds the
 * local commands with the native and fake providers and loads none of the Docker, HTTP-client
 * or server libraries; `b4box-full` (in libexecdir) is the same CLI with everything. A
 * command b4box cannot run here (serve, threads, upload, anything through --server, a
 * configured provider it lacks) it hands over: it execs b4box-full with its own argv, so
 * the process, its pid and its file descriptors stay the same.
 */

#include <stdbool.h>

#include "cli.h"

/* Keep a copy of main()'s argv as it came (main then moves the global options). */
void cli_handover_init(int argc, char **argv);

/* Whether command @c runs in this binary; false: call cli_handover(). Loads the config
 * (quietly) only for a command that uses a provider. */
bool cli_runs_here(const struct cli_command *c, const struct cli_ctx *ctx);

/* Exec b4box-full with the kept argv. Returns only on failure, after printing why, with
 * CLI_EXIT_FAILED. */
int cli_handover(void);
