/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Local use without a server, in-process against the state dir:
 *   b4box exec --thread ID [--timeout MS] [--max-output BYTES] [--cwd DIR] [--env K=V]...
 *              -- CMD...                            run CMD in the thread's sandbox
 * With --server URL (or $B4BOX_URL) exec goes through the HTTP API instead (runBash, streamed
 * as NDJSON; --timeout is the call's timeoutMs there).
 *   b4box release ID                                 drop its compute, keep the workspace
 *   b4box destroy ID                                 drop compute and workspace
 * Locally every command goes through the runtime as the server does (cli_local_open()): a
 * thread's sandbox is its root ancestor's, admitted at the first run when managed, and
 * destroy deletes the thread's rows with its children's. The provider and policy come from
 * the configuration (-c FILE, ./b4box.json, else the defaults: native, scope "b4box"). One
 * CMD argument is a shell command line; several are quoted and joined, so
 * `-- sh -c 'echo $HOME'` means what it says. stdout and stderr are passed through as they
 * come and exec exits with the command's own code (124 on timeout, 128+N when killed by
 * signal N). SIGINT/SIGTERM cancel the command (through a server: the connection is dropped,
 * which cancels it there).
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "cli.h"
#include "client.h"
#include "json/json.h"

#define EXEC_ENV_MAX 64 /* --env options */

struct exec_args {
        const char *thread;
        const char *server; /* --server URL; else $B4BOX_URL; else local */
        uint64_t timeout_ms;
        uint64_t max_output;           /* --max-output BYTES; 0 = the policy's */
        const char *cwd;               /* --cwd DIR, relative to the workspace; NULL = its root */
        const char *env[EXEC_ENV_MAX]; /* --env NAME=VALUE, borrowed from argv (unsplit:
                                        * a handover passes argv on as it came) */
        size_t n_env;
        char **cmd; /* borrowed from argv */
        int n_cmd;
};

/* --env NAME=VALUE. Return: 0, or -1 after a usage error. */
static int parse_env(struct exec_args *a, const char *v)
{
        const char *eq = strchr(v, '=');

        if (!eq || eq == v || a->n_env == EXEC_ENV_MAX) {
                cli_error("exec: --env needs NAME=VALUE (at most %d)", EXEC_ENV_MAX);
                return -1;
        }
        a->env[a->n_env++] = v;
        return 0;
}

/* The --env options as variables: names copied into @names (freed by the caller with
 * free_names()), values borrowed. Return: 0, -ENOMEM. */
static int env_vars(const struct exec_args *a, struct b4_env_var *vars, char **names)
{
        for (size_t i = 0; i < a->n_env; i++) {
                const char *eq = strchr(a->env[i], '=');
                names[i] = b4_strndup(a->env[i], (size_t)(eq - a->env[i]));
                if (!names[i])
                        return -ENOMEM;
                vars[i] = (struct b4_env_var){ .name = names[i], .value = (char *)eq + 1 };
        }
        return 0;
}

static void free_names(char **names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(names[i]);
}

static struct b4_cancel *arg_cancel;

static void on_signal(int sig)
{
        b4_cancel_fire(arg_cancel);
}

/* Return: 0, or -1 after printing a usage error. */
static int parse_exec(int argc, char **argv, struct exec_args *a)
{
        int i;

        for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i += 2) { /* option + value */
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(argv[i], "--thread") == 0 && v)
                        a->thread = v;
                else if (strcmp(argv[i], "--server") == 0 && v)
                        a->server = v;
                else if (strcmp(argv[i], "--cwd") == 0 && v && *v)
                        a->cwd = v;
                else if (strcmp(argv[i], "--env") == 0 && v) {
                        if (parse_env(a, v) < 0)
                                return -1;
                } else if (strcmp(argv[i], "--timeout") == 0 && v) {
                        if (safe_atou64(v, &a->timeout_ms) < 0 || a->timeout_ms == 0) {
                                cli_error("exec: --timeout needs a positive number of ms");
                                return -1;
                        }
                } else if (strcmp(argv[i], "--max-output") == 0 && v) {
                        if (safe_atou64(v, &a->max_output) < 0 || a->max_output == 0) {
                                cli_error("exec: --max-output needs a positive number of bytes");
                                return -1;
                        }
                } else {
                        cli_error("exec: unexpected argument '%s'", argv[i]);
                        return -1;
                }
        }
        if (!a->thread || !*a->thread || i + 1 >= argc) {
                cli_error("exec: needs --thread ID and a command after '--'");
                return -1;
        }
        a->cmd = argv + i + 1;
        a->n_cmd = argc - i - 1;
        return 0;
}

static int join_command(const struct exec_args *a, char **ret)
{
        struct strbuf sb;
        int r = 0;

        if (a->n_cmd == 1) {
                *ret = b4_strdup(a->cmd[0]);
                return *ret ? 0 : -ENOMEM;
        }
        strbuf_init(&sb, STRBUF_UNLIMITED);
        for (int i = 0; r >= 0 && i < a->n_cmd; i++) {
                r = strbuf_adds(&sb, i ? " '" : "'");
                for (const char *p = a->cmd[i]; r >= 0 && *p; p++)
                        r = *p == '\'' ? strbuf_adds(&sb, "'\\''") : strbuf_addc(&sb, *p);
                if (r >= 0)
                        r = strbuf_addc(&sb, '\'');
        }
        if (r >= 0)
                r = strbuf_detach(&sb, ret, NULL);
        strbuf_release(&sb);
        return r;
}

/* b4_exec_output_fn: the command's output as it comes, passed through. */
static void pass_output(void *userdata, enum b4_exec_stream stream, const char *p, size_t n)
{
        (void)write_all(stream == B4_EXEC_STDERR ? STDERR_FILENO : STDOUT_FILENO, p, n);
}

/* In the thread's sandbox as the runtime gives it (its root ancestor's, admitted). */
static int run_exec(struct b4_runtime *rt, const struct exec_args *a, const char *command)
{
        cleanup_free char *cwd = NULL;
        struct b4_env_var vars[EXEC_ENV_MAX];
        char *names[EXEC_ENV_MAX] = { 0 };
        struct b4_exec_req req = { .command = command,
                                   .env = vars,
                                   .n_env = a->n_env,
                                   .timeout_ms = a->timeout_ms,
                                   .output_cap = (size_t)a->max_output,
                                   .cancel = arg_cancel,
                                   .on_output = pass_output };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        int r;

        if (a->cwd) { /* the operator's own sandbox: relative to the workspace, no jail */
                if (b4_asprintf(&cwd, "%s%s", a->cwd[0] == '/' ? "" : B4_WORKSPACE_ROOT "/",
                                a->cwd) < 0)
                        return cli_error("out of memory"), CLI_EXIT_FAILED;
                req.cwd = cwd;
        }
        if (env_vars(a, vars, names) < 0) {
                free_names(names, a->n_env);
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        }
        r = b4_runtime_run_begin(rt, a->thread, &run, &err);
        if (r >= 0) {
                (void)fflush(stdout);
                r = b4_sandbox_exec(b4_run_sandbox(run), &req, &res, &err);
        }
        run = b4_run_end(run);
        free_names(names, a->n_env);
        if (r < 0)
                return cli_fail(&err);
        if (res.timed_out)
                (void)write_all(STDERR_FILENO, "\n", 1);
        r = res.exit_code;
        b4_exec_result_clear(&res);
        return r;
}

struct remote_run {
        int exit_code; /* -1 until the exit event */
};

/* cli_event_fn: chunks passed through as they come; the exit event's document decides. */
static int remote_event(void *userdata, const char *name, const struct jv *data)
{
        struct remote_run *rr = userdata;
        const struct jv *text = jv_object_get(data, "text");

        if (strcmp(name, "stdout") == 0 || strcmp(name, "stderr") == 0) {
                if (jv_is_string(text))
                        (void)write_all(name[3] == 'o' ? STDOUT_FILENO : STDERR_FILENO,
                                        jv_string(text), jv_string_length(text));
                return 0;
        }
        if (strcmp(name, "error") == 0) {
                const char *m = jv_string(jv_object_get(data, "message"));
                cli_error("%s", m ? m : "runBash failed");
                return -EIO;
        }
        if (strcmp(name, "exit") != 0)
                return 0; /* an event this client does not know */
        if (!jv_is_true(jv_object_get(data, "ok"))) {
                const char *m = jv_string(jv_object_get(jv_object_get(data, "error"), "message"));
                cli_error("%s", m ? m : "runBash failed");
                return -EIO;
        }
        rr->exit_code = (int)jv_integer(jv_object_get(jv_object_get(data, "result"), "exitCode"));
        return 0;
}

/* Through a server: runBash streamed (NDJSON), output passed through as it comes, the
 * command's exit code. --timeout is the call's timeoutMs (at most the server's policy's). */
static int remote_exec(const char *url, const struct exec_args *a, const char *command)
{
        cleanup_(jv_unrefp) struct jv *args = NULL;
        cleanup_free char *args_json = NULL;
        struct remote_run rr = { .exit_code = -1 };
        int r;

        struct jv *env = a->n_env ? jv_object_new() : NULL;
        for (size_t i = 0; env && i < a->n_env; i++) {
                const char *eq = strchr(a->env[i], '=');
                cleanup_free char *name = b4_strndup(a->env[i], (size_t)(eq - a->env[i]));
                if (!name || jv_object_set_new(env, name, jv_string_new(eq + 1)) < 0)
                        env = jv_unref(env);
        }
        args = jv_pack("{s:s, s:o*, s:o*, s:s*, s:o*}", "command", command, "timeoutMs",
                       a->timeout_ms ? jv_integer_new((int64_t)a->timeout_ms) : NULL,
                       "maxOutputBytes",
                       a->max_output ? jv_integer_new((int64_t)a->max_output) : NULL, "cwd", a->cwd,
                       "env", env);
        if (!args || (a->n_env && !jv_object_get(args, "env")) || jv_dump(args, 0, &args_json) < 0)
                return cli_error("exec: out of memory, or an argument is not UTF-8"),
                       CLI_EXIT_FAILED;
        r = cli_remote_tool_stream(url, a->thread, "runBash", args_json,
                                   arg_cancel ? b4_cancel_fd(arg_cancel) : -EBADF, remote_event,
                                   &rr);
        if (r != 0)
                return r;
        if (rr.exit_code < 0)
                return cli_error("the server's stream ended without a result"), CLI_EXIT_FAILED;
        return rr.exit_code;
}

int cmd_exec(int argc, char **argv, const struct cli_ctx *ctx)
{
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        cleanup_free char *command = NULL;
        struct exec_args a = { 0 };
        struct sigaction sa = { .sa_handler = on_signal };
        int r;

        if (parse_exec(argc, argv, &a) < 0)
                return CLI_USAGE;
        if (join_command(&a, &command) < 0)
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        const char *url = cli_server_url(a.server);
        if (!url) {
                r = cli_local_open(ctx, &l);
                if (r != 0)
                        return r;
        }
        arg_cancel = b4_cancel_new();
        if (!arg_cancel)
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        (void)sigaction(SIGINT, &sa, NULL);
        (void)sigaction(SIGTERM, &sa, NULL);
        struct b4_error err = { 0 };
        if (url)
                r = remote_exec(url, &a, command);
        else if (cli_local_thread_register(&l, a.thread, &err) < 0)
                r = cli_fail(&err);
        else
                r = run_exec(l.rt, &a, command);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(SIGINT, &sa, NULL);
        (void)sigaction(SIGTERM, &sa, NULL);
        arg_cancel = b4_cancel_free(arg_cancel);
        return r;
}

/* As through the server (the thread and its children); a sandbox no row names (a state
 * dir from before local commands recorded their threads) is destroyed by its id.
 * Return: 0, 1 (a child thread: its root's sandbox and workspace stay), -errno. */
static int local_destroy(struct cli_local *l, const char *id, struct b4_error *err)
{
        struct b4_thread_row row = { 0 };
        bool child;
        int r;

        if (b4_runtime_thread_get(l->rt, id, &row, NULL) == -ENOENT)
                return b4_provider_destroy(l->provider, id, err);
        child = row.parent_id != NULL;
        b4_thread_row_clear(&row);
        r = b4_runtime_thread_delete(l->rt, id, err);
        return r < 0 ? r : child;
}

static int lifecycle(int argc, char **argv, const struct cli_ctx *ctx, bool destroy)
{
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        struct b4_error err = { 0 };
        int r;

        if (argc != 2 || !*argv[1]) {
                cli_error("%s: needs exactly one thread id", argv[0]);
                return CLI_USAGE;
        }
        r = cli_local_open(ctx, &l);
        if (r != 0)
                return r;
        r = destroy ? local_destroy(&l, argv[1], &err)
                    : b4_runtime_thread_release(l.rt, argv[1], &err);
        if (r < 0)
                return cli_fail(&err);
        printf(!destroy ? "released thread '%s': its sandbox is released, its workspace kept\n"
               : r == 0 ? "destroyed thread '%s': its sandbox and workspace are gone\n"
                        : "destroyed thread '%s': a child thread, its root's sandbox and "
                          "workspace are kept\n",
               argv[1]);
        return CLI_EXIT_OK;
}

int cmd_release(int argc, char **argv, const struct cli_ctx *ctx)
{
        return lifecycle(argc, argv, ctx, false);
}

int cmd_destroy(int argc, char **argv, const struct cli_ctx *ctx)
{
        return lifecycle(argc, argv, ctx, true);
}
