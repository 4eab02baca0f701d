/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box: global options (accepted before or after the command), then one subcommand from
 * the table below. A usage error names what was wrong and never prints the full help.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "b4box/b4.h"

#include "cli.h"

static const struct {
        const char *name;
        cli_cmd_fn *fn;
        const char *summary;
} commands[] = {
        { "serve", cmd_serve, "serve the HTTP API" },
        { "threads", cmd_threads, "create|ls|show|rm|release threads through a server" },
        { "exec", cmd_exec, "run a command in a thread's sandbox (--thread ID -- CMD...)" },
        { "tool", cmd_tool, "run one workspace tool locally: tool --thread ID NAME [ARGS_JSON]" },
        { "read", cmd_read, "a thread's workspace inventory: read THREAD [--root R] [--json]" },
        { "release", cmd_release, "release a thread's sandbox, keeping its workspace" },
        { "destroy", cmd_destroy, "destroy a thread's sandbox and workspace" },
        { "bundle", cmd_bundle, "bundle create DIR -o OUT | bundle verify FILE" },
        { "upload", cmd_upload, "stage a source bundle on a server (upload BUNDLE.json)" },
        { "check", cmd_check, "validate the configuration and run the provider's preflight" },
        { "conformance", cmd_conformance, "run the provider conformance suite" },
        { "probe", cmd_probe, "escape and abuse probes against the provider: probe [--json]" },
        { "help", cmd_help, "show this help" },
        { "version", cmd_version, "print the version" },
};

void cli_error(const char *fmt, ...)
{
        va_list ap;

        fputs("b4box: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int cli_fail(const struct b4_error *err)
{
        const char *code = b4_code_name(err->code);

        if (code)
                cli_error("%s [%s]", err->msg, code);
        else
                cli_error("%s", err->msg[0] ? err->msg : "failed");
        return CLI_EXIT_FAILED;
}

const char *cli_state_dir(const struct cli_ctx *ctx)
{
        return ctx->state_dir ? ctx->state_dir : ".b4box";
}

int cmd_version(int argc, char **argv, const struct cli_ctx *ctx)
{
        printf("b4box %s\n", b4_version());
        return CLI_EXIT_OK;
}

int cmd_help(int argc, char **argv, const struct cli_ctx *ctx)
{
        printf("Usage: b4box [-c|--config FILE] [--state DIR] <command> [args...]\n\n"
               "An execution sandbox for AI-agent threads.\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                printf("  %-12s %s\n", commands[i].name, commands[i].summary);
        printf("\nGlobal options may come before or after the command.\n");
        return CLI_EXIT_OK;
}

/* Take a global option at argv[*i]; returns 1 taken, 0 not global, -1 usage error. */
static int take_global(int argc, char **argv, int *i, struct cli_ctx *ctx)
{
        const char *a = argv[*i];
        const char **slot = NULL;
        const char *v = NULL;

        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0)
                slot = &ctx->config_path;
        else if (strcmp(a, "--state") == 0)
                slot = &ctx->state_dir;
        else if (strncmp(a, "--config=", 9) == 0)
                slot = &ctx->config_path, v = a + 9;
        else if (strncmp(a, "--state=", 8) == 0)
                slot = &ctx->state_dir, v = a + 8;
        else
                return 0;
        if (!v) {
                if (*i + 1 >= argc) {
                        cli_error("option '%s' needs a value", a);
                        return -1;
                }
                v = argv[++*i];
        }
        *slot = v;
        return 1;
}

/* Move global options out of argv (up to "--"), leaving the command and its arguments. */
static int split_globals(int argc, char **argv, struct cli_ctx *ctx, int *ret_argc)
{
        int n = 0;
        bool rest = false;

        for (int i = 1; i < argc; i++) {
                if (!rest && strcmp(argv[i], "--") == 0)
                        rest = true;
                int r = rest ? 0 : take_global(argc, argv, &i, ctx);
                if (r < 0)
                        return r;
                if (r == 0)
                        argv[n++] = argv[i];
        }
        argv[n] = NULL;
        *ret_argc = n;
        return 0;
}

int main(int argc, char **argv)
{
        struct cli_ctx ctx = { 0 };
        int n = 0;

        if (split_globals(argc, argv, &ctx, &n) < 0)
                return CLI_EXIT_USAGE;
        if (n == 0) {
                cli_error("no command given (try 'b4box help')");
                return CLI_EXIT_USAGE;
        }
        if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)
                return cmd_help(n, argv, &ctx);
        if (strcmp(argv[0], "--version") == 0)
                return cmd_version(n, argv, &ctx);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, argv[0]) == 0)
                        return commands[i].fn(n, argv, &ctx);
        cli_error("unknown command '%s' (try 'b4box help')", argv[0]);
        return CLI_EXIT_USAGE;
}
