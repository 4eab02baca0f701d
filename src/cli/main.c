/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box: global options (accepted before or after the command), then one subcommand from
 * the table below. `CMD --help`/`-h` is answered here, before the command sees its
 * arguments. A usage error names what was wrong, then prints the command's usage line.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "b4box/b4.h"

#include "cli.h"
#include "handover.h"

/*
 * The one table of subcommands. A command's synopsis and options live here and nowhere else:
 * `CMD --help`, `CMD -h`, `help CMD`, the usage line of a usage error, docs/cli.md and the
 * completions test all come from it. Options are "--name ARG  what it does" lines.
 */
static const struct cli_command commands[] = {
        { "serve", cmd_serve, "serve the HTTP API",
          "b4box serve [--listen ADDR] [--reap-interval-ms MS] [--log-format logfmt|json]",
          "  --listen ADDR            host:port, unix:PATH or systemd (default: server.listen)\n"
          "  --reap-interval-ms MS    how often idle sandboxes are reaped\n"
          "  --log-format FORMAT      logfmt (default) or json: one object per line\n",
          .uses_provider = false },
        { "threads", cmd_threads, "create, list, show, remove or release threads through a server",
          "b4box threads create [--id ID] [--metadata JSON] [--parent ID] [--source DIGEST "
          "[--link PATH=TARGET]... [--baseline git]] [--server URL] [--json]\n"
          "b4box threads ls|show ID|rm ID|release ID [--server URL] [--json]",
          "  --server URL             the server (default: $B4BOX_URL)\n"
          "  --id ID                  the new thread's id\n"
          "  --metadata JSON          the new thread's metadata object\n"
          "  --parent ID              the parent thread\n"
          "  --source DIGEST          a staged workspace source (see upload)\n"
          "  --link PATH=TARGET       a link in the staged workspace, repeatable\n"
          "  --baseline git           record a git baseline of the staged workspace\n"
          "  --json                   the server's JSON answer (the only output format)\n",
          .uses_provider = false },
        { "exec", cmd_exec, "run a command in a thread's sandbox",
          "b4box exec --thread ID [--timeout MS] [--max-output BYTES] [--cwd DIR] "
          "[--env NAME=VALUE]... [--server URL] -- CMD...",
          "  --thread ID              the thread (its sandbox is created on first use)\n"
          "  --timeout MS             kill the command after MS milliseconds (a server:\n"
          "                           at most its resources.timeoutMs)\n"
          "  --max-output BYTES       capture at most BYTES per stream (head and tail kept;\n"
          "                           a server: at most its resources.outputCapBytes)\n"
          "  --cwd DIR                run in DIR, relative to /workspace\n"
          "  --env NAME=VALUE         add a variable to the policy's environment\n"
          "  --server URL             run through a server (default: $B4BOX_URL)\n",
          .uses_provider = true },
        { "tool", cmd_tool, "run one workspace tool",
          "b4box tool --thread ID [--server URL] [--provider native|fake] [--mode MODE] "
          "[--allow KEY:PATTERN]... [--deny KEY:PATTERN]... [--read-cap BYTES] TOOL [ARGS_JSON]",
          "  --thread ID              the thread\n"
          "  --server URL             run through a server (default: $B4BOX_URL)\n"
          "  --provider TYPE          native or fake instead of the configured provider\n"
          "  --mode MODE              non-interactive (default), interactive or bypass\n"
          "  --allow KEY:PATTERN      allow rule; KEY: bash readFile writeFile listDir tool\n"
          "  --deny KEY:PATTERN       deny rule\n"
          "  --read-cap BYTES         cap on bytes a read returns\n"
          "TOOL: readFile writeFile editFile listDir runBash; ARGS_JSON defaults to {}.\n",
          .uses_provider = true },
        { "read", cmd_read, "a thread's workspace inventory",
          "b4box read THREAD [--root R] [--exclude DIR]... [--exclude-path P]... "
          "[--skip-unsupported] [--expect-source DIGEST] [--consistent] [--json] [--server URL]",
          "  --root R                 the directory to read (default: the workspace)\n"
          "  --exclude DIR            skip a root directory, repeatable\n"
          "  --exclude-path P         skip a path below the root (and all under it), repeatable\n"
          "  --skip-unsupported       list executables, binaries, non-UTF-8 files and links as\n"
          "                           skipped instead of refusing the read\n"
          "  --expect-source DIGEST   refuse unless the workspace came from this source\n"
          "  --consistent             freeze the sandbox while reading\n"
          "  --json                   one JSON document\n"
          "  --server URL             read through a server (default: $B4BOX_URL, else local)\n",
          .uses_provider = true },
        { "network", cmd_network, "a thread's network audit (DNS, destinations, denials)",
          "b4box network THREAD [--json] [--server URL]",
          "  --json                   the audit document (docs/http-api.md)\n"
          "  --server URL             read through a server (default: $B4BOX_URL, else local)\n",
          .uses_provider = true },
        { "release", cmd_release, "release a thread's sandbox, keeping its workspace",
          "b4box release ID", "", .uses_provider = true },
        { "destroy", cmd_destroy, "destroy a thread's sandbox and workspace", "b4box destroy ID",
          "", .uses_provider = true },
        { "bundle", cmd_bundle, "create or verify a source bundle",
          "b4box bundle create DIR [--include-from FILE] [--exclude-dir D]... -o OUT [--json]\n"
          "b4box bundle verify FILE [--json]",
          "  --include-from FILE      the files to include, one a line\n"
          "  --exclude-dir D          skip a directory, repeatable\n"
          "  -o, --output OUT         the bundle file ('-' = stdout)\n"
          "  --json                   {digest, files, bytes} instead of the digest\n",
          .uses_provider = false },
        { "ps", cmd_ps, "list a thread's background processes through a server",
          "b4box ps --thread ID [PID] [--server URL] [--json]",
          "  --thread ID              the thread\n"
          "  --server URL             the server (default: $B4BOX_URL)\n"
          "  --json                   the server's JSON answer (the only output format)\n",
          .uses_provider = false },
        { "logs", cmd_logs, "print a background process's output through a server",
          "b4box logs --thread ID PID [--from N] [--follow] [--server URL]",
          "  --thread ID              the thread\n"
          "  --from N                 from byte N of its output\n"
          "  --follow                 keep printing until it exits\n"
          "  --server URL             the server (default: $B4BOX_URL)\n",
          .uses_provider = false },
        { "kill", cmd_kill, "signal or forget a background process through a server",
          "b4box kill --thread ID PID [--signal SIG] [--rm] [--server URL]",
          "  --thread ID              the thread\n"
          "  --signal SIG             TERM (default), KILL, INT, HUP, ...\n"
          "  --rm                     kill it and forget its record and output\n"
          "  --server URL             the server (default: $B4BOX_URL)\n",
          .uses_provider = false },
        { "upload", cmd_upload, "stage a source bundle on a server",
          "b4box upload BUNDLE.json [--server URL] [--json]",
          "  --server URL             the server (default: $B4BOX_URL)\n"
          "  --json                   {digest, status} instead of text\n",
          .uses_provider = false },
        { "image", cmd_image, "import, list, inspect or remove OCI images in the state dir",
          "b4box image import FILE|--from-docker REF [--docker-host H] [--name NAME:TAG] [--json]\n"
          "b4box image ls|inspect REF|rm REF [--json]",
          "  --name NAME:TAG          a reference for the imported image (besides its own tags)\n"
          "  --from-docker REF        take the image from a local Docker daemon (its `docker save`)\n"
          "  --docker-host H          that daemon's unix:// socket (default: $DOCKER_HOST, else\n"
          "                           /var/run/docker.sock)\n"
          "  --json                   one JSON document\n"
          "FILE: a `docker save` archive, or an OCI image layout (directory or tar).\n"
          "REF: name:tag, name@sha256:HEX or sha256:HEX (the image's config digest).\n",
          .uses_provider = false },
        { "check", cmd_check, "validate the configuration and run the provider's preflight",
          "b4box check [--json] [--strict]",
          "  --json                   one document: {config, provider, ok, refusals, controls}\n"
          "  --strict                 exit 3 when a control is NOT ENFORCED\n"
          "Exit: 0 ok, 1 refused, 2 usage, 3 NOT ENFORCED with --strict.\n",
          .uses_provider = true },
        { "conformance", cmd_conformance, "run the provider conformance suite",
          "b4box conformance [--provider fake|native]",
          "  --provider TYPE          the provider to test instead of the configured one\n",
          .uses_provider = true },
        { "kube", cmd_kube, "Kubernetes operations: the PVC reaper",
          "b4box kube reap [--namespace NS] [--ttl-hours N] [--dry-run]",
          "  --namespace NS           the sandbox namespace (default: the provider's, else\n"
          "                           b4-sandboxes)\n"
          "  --ttl-hours N            delete PVCs unreferenced for longer (default 168)\n"
          "  --dry-run                say what would be done, change nothing\n",
          .uses_provider = false },
        { "probe", cmd_probe, "escape and abuse probes against the provider",
          "b4box probe [--json]", "  --json                   one JSON document\n",
          .uses_provider = true },
        { "help", cmd_help, "show the help of b4box or of one command", "b4box help [COMMAND]", "",
          .uses_provider = false },
        { "version", cmd_version, "print the version", "b4box version [--json]",
          "  --json                   {\"version\": V}\n", .uses_provider = false },
};

static const struct cli_command *current; /* the command being run */

static const struct cli_command *find_command(const char *name)
{
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, name) == 0)
                        return &commands[i];
        return NULL;
}

/* The synopsis, "Usage: " before the first line and its width before the others. */
static void print_synopsis(FILE *f, const struct cli_command *c)
{
        const char *s = c->synopsis;

        fputs("Usage: ", f);
        for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
                fprintf(f, "%.*s\n       ", (int)(nl - s), s);
        fprintf(f, "%s\n", s);
}

static void print_command_help(const struct cli_command *c)
{
        print_synopsis(stdout, c);
        printf("\n%s.\n", c->summary);
        if (c->options[0])
                printf("\nOptions:\n%s", c->options);
        printf("\nGlobal options: -c, --config FILE; --state DIR.\n");
}

int cli_usage(void)
{
        if (current)
                print_synopsis(stderr, current);
        return CLI_EXIT_USAGE;
}

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
        bool json = argc == 2 && strcmp(argv[1], "--json") == 0;

        if (argc > 1 && !json) {
                cli_error("version: unexpected argument '%s'", argv[1]);
                return CLI_USAGE;
        }
        if (json)
                printf("{\"version\": \"%s\"}\n", b4_version());
        else
                printf("b4box %s\n", b4_version());
        return CLI_EXIT_OK;
}

int cmd_help(int argc, char **argv, const struct cli_ctx *ctx)
{
        if (argc > 2) {
                cli_error("help takes at most one command");
                return CLI_USAGE;
        }
        if (argc == 2) {
                const struct cli_command *c = find_command(argv[1]);
                if (!c) {
                        cli_error("help: unknown command '%s' (try 'b4box help')", argv[1]);
                        return CLI_USAGE;
                }
                print_command_help(c);
                return CLI_EXIT_OK;
        }
        printf("Usage: b4box [-c|--config FILE] [--state DIR] <command> [args...]\n\n"
               "An execution sandbox for AI-agent threads.\n\nCommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                printf("  %-12s %s\n", commands[i].name, commands[i].summary);
        printf("\nGlobal options may come before or after the command.\n"
               "'b4box help COMMAND' or 'b4box COMMAND --help' shows a command's help.\n");
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

/* --help or -h anywhere before "--" asks for the command's help: it is never an argument. */
static bool wants_help(int argc, char **argv)
{
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                        return true;
        return false;
}

int main(int argc, char **argv)
{
        struct cli_ctx ctx = { 0 };
        int n = 0;

        cli_handover_init(argc, argv);
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
        current = find_command(argv[0]);
        if (!current) {
                cli_error("unknown command '%s' (try 'b4box help')", argv[0]);
                return CLI_EXIT_USAGE;
        }
        if (wants_help(n, argv)) {
                print_command_help(current);
                return CLI_EXIT_OK;
        }
        if (!cli_runs_here(current, &ctx))
                return cli_handover();
        int rc = current->fn(n, argv, &ctx);
        return rc == CLI_USAGE ? cli_usage() : rc;
}
