/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The b4box command line: main.c parses the global options and dispatches to one function
 * per subcommand (cmd-*.c). Exit codes: 0 ok, 1 refused/failed, 2 usage error, 3 `check
 * --strict` with a control NOT ENFORCED; `exec` exits with the command's own code.
 */

#include <stdbool.h>
#include <stdint.h>

#include "b4box/error.h"

enum {
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAILED = 1,
        CLI_EXIT_USAGE = 2,
        CLI_EXIT_STRICT = 3, /* check --strict: a control is NOT ENFORCED */
        /* A command's return after printing what was wrong with its arguments: main() adds
         * the command's usage line and exits CLI_EXIT_USAGE. Never an exit code itself. */
        CLI_USAGE = -2,
};

struct cli_ctx {
        const char *config_path; /* -c/--config, NULL = ./b4box.json if present, else defaults */
        const char *state_dir;   /* --state, NULL = ./.b4box */
};

/* A subcommand: argv[0] is its name, global options already removed. */
typedef int cli_cmd_fn(int argc, char **argv, const struct cli_ctx *ctx);

/* One subcommand: its usage text lives in main.c's table and nowhere else. */
struct cli_command {
        const char *name;
        cli_cmd_fn *fn;
        const char *summary;  /* one line, no final period */
        const char *synopsis; /* "b4box NAME ..." lines, '\n' between them */
        const char *options;  /* "  --opt ARG   what" lines, each ending in '\n'; may be "" */
        bool uses_provider;   /* builds the configured provider (handover.h) */
};

/* Print the running command's usage line to stderr; returns CLI_EXIT_USAGE. */
int cli_usage(void);

/* Print "b4box: <message>" to stderr. */
void cli_error(const char *fmt, ...) B4_PRINTF(1, 2);
/* Print "b4box: <err->msg>" (with " [B4_E2001]" when coded); returns CLI_EXIT_FAILED. */
int cli_fail(const struct b4_error *err);
/* The state directory to use: --state, else ./.b4box. Static string. */
const char *cli_state_dir(const struct cli_ctx *ctx);

struct b4_config;
/*
 * Load the configuration (-c FILE, else ./b4box.json, else defaults) with the provider's
 * state dir set. Refusals are printed. Return: 0 with *ret owned by the caller, or the exit
 * code to return (CLI_EXIT_FAILED). *ret_path (optional) is the file used, NULL for defaults;
 * it is set on a refusal too.
 */
int cli_load_config(const struct cli_ctx *ctx, struct b4_config **ret, const char **ret_path);
/* The same, with the refusals appended to *@collect (a strv) instead of printed, when
 * @collect is not NULL. A refused file's last refusal names it. */
int cli_load_config_collect(const struct cli_ctx *ctx,
                            struct b4_config **ret,
                            const char **ret_path,
                            char ***collect);

/* What a local command (no server) works with: the state dir is locked shared, so it
 * refuses while a server owns the dir, and a server refuses while it runs. The runtime is
 * the server's road (root-ancestor sandbox, managed admission, per-thread policy and image,
 * store rows) in its local mode: sandboxes stay warm for the next command. */
struct cli_local {
        struct b4_config *cfg;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
};

/* Load the config, lock the state dir, build the provider and the runtime over them.
 * Return: 0 or an exit code (the failure printed). */
int cli_local_open(const struct cli_ctx *ctx, struct cli_local *ret);
struct b4_permissions;

/* What a local command changes in the configured composition; zero = as configured. */
struct cli_local_options {
        const char *provider_type;          /* replaces sandbox.provider.type */
        struct b4_permissions *permissions; /* borrowed, outlives the runtime: replaces the
                                               config's permissions block */
        uint64_t read_cap;                  /* readFile/editFile cap; 0 = the default */
};

/* The same, changed by @o. */
int cli_local_open_with(const struct cli_ctx *ctx,
                        const struct cli_local_options *o,
                        struct cli_local *ret);
void cli_local_close(struct cli_local *l);
/* A local command's thread has a row like a server's, so a server's sweep (b4_runtime_
 * reconcile()) keeps its sandbox: insert it unless present. -ENOENT: being deleted. */
int cli_local_thread_register(struct cli_local *l, const char *thread_id, struct b4_error *err);

/* Subcommands (one file each). */
int cmd_version(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_help(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_conformance(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_probe(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_kube(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_check(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_tool(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_serve(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_threads(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_exec(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_release(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_destroy(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_bundle(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_read(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_network(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_upload(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_image(int argc, char **argv, const struct cli_ctx *ctx);
/* cmd-ps.c: background processes through a server */
int cmd_ps(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_logs(int argc, char **argv, const struct cli_ctx *ctx);
int cmd_kill(int argc, char **argv, const struct cli_ctx *ctx);
