/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box tool: run one workspace tool locally against a thread's sandbox and print the result
 * document (docs/tools.md), through the runtime as a server would (the thread's root
 * ancestor's sandbox, managed admission, per-thread permissions). --provider replaces the
 * configured provider type; --mode, --allow and --deny replace the configured permissions.
 * In interactive mode a permission request is asked on the terminal; without one it fails
 * closed like non-interactive mode would.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "base/macro.h"
#include "base/parse.h"
#include "cli.h"
#include "client.h"
#include "json/json.h"

#define MAX_RULES 64

struct tool_args {
        const char *thread;
        const char *provider;
        const char *server; /* --server URL; else $B4BOX_URL; else local */
        bool perm_flags;    /* --mode, --allow or --deny given: they replace the config's */
        enum b4_permission_mode mode;
        uint64_t read_cap;
        const char *rules[MAX_RULES]; /* "allow:key:pattern" / "deny:key:pattern" */
        size_t n_rules;
        const char *name;
        const char *json;
};

static int add_rule(struct tool_args *a, const char *list, const char *v)
{
        char *s = NULL;

        if (a->n_rules == MAX_RULES || !strchr(v, ':')) {
                cli_error("--%s needs KEY:PATTERN (at most %d rules)", list, MAX_RULES);
                return -EINVAL;
        }
        if (asprintf(&s, "%s:%s", list, v) < 0)
                return -ENOMEM;
        a->rules[a->n_rules++] = s;
        return 0;
}

/* One option of b4box tool. Return: 0 or -EINVAL (message printed). */
static int take_option(int c, const char *v, struct tool_args *a)
{
        switch (c) {
        case 't':
                a->thread = v;
                return 0;
        case 'p':
                a->provider = v;
                return 0;
        case 's':
                a->server = v;
                return 0;
        case 'm':
                a->perm_flags = true;
                if (b4_permission_mode_from_string(v, &a->mode) < 0) {
                        cli_error("unknown permission mode '%s'", v);
                        return -EINVAL;
                }
                return 0;
        case 'a':
        case 'd':
                a->perm_flags = true;
                return add_rule(a, c == 'a' ? "allow" : "deny", v);
        case 'r':
                if (safe_atou64(v, &a->read_cap) < 0 || a->read_cap == 0) {
                        cli_error("--read-cap needs a positive number of bytes");
                        return -EINVAL;
                }
                return 0;
        default:
                return -EINVAL;
        }
}

static int parse_tool_args(int argc, char **argv, struct tool_args *a)
{
        static const struct option opts[] = {
                { "thread", required_argument, NULL, 't' },
                { "provider", required_argument, NULL, 'p' },
                { "server", required_argument, NULL, 's' },
                { "mode", required_argument, NULL, 'm' },
                { "allow", required_argument, NULL, 'a' },
                { "deny", required_argument, NULL, 'd' },
                { "read-cap", required_argument, NULL, 'r' },
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+t:p:m:", opts, NULL)) >= 0) {
                int r = take_option(c, optarg, a);
                if (r != 0)
                        return r;
        }
        if (!a->thread || !*a->thread) {
                cli_error("tool: --thread ID is required");
                return -EINVAL;
        }
        if (optind >= argc || argc - optind > 2) {
                cli_error("tool: expected TOOL [ARGS_JSON]");
                return -EINVAL;
        }
        a->name = argv[optind];
        a->json = optind + 1 < argc ? argv[optind + 1] : "{}";
        return 0;
}

static int make_permissions(const struct tool_args *a,
                            struct b4_permissions **ret,
                            struct b4_error *err)
{
        struct b4_permissions *p = NULL;
        int r = b4_permissions_new(a->mode, &p);

        for (size_t i = 0; r >= 0 && i < a->n_rules; i++) {
                const char *rule = a->rules[i];
                bool deny = strncmp(rule, "deny:", 5) == 0;
                const char *kv = rule + (deny ? 5 : 6);
                const char *colon = strchr(kv, ':');
                char key[64];
                snprintf(key, sizeof(key), "%.*s", (int)(colon - kv), kv);
                r = b4_permissions_add(p, deny ? B4_PERMISSION_LIST_DENY : B4_PERMISSION_LIST_ALLOW,
                                       key, colon + 1, err);
        }
        if (r < 0) {
                b4_permissions_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

/* The thread's run from the runtime over the configured provider (--provider overrides its
 * type, --mode/--allow/--deny its permissions, --read-cap its cap): its root ancestor's
 * sandbox, admitted and gated as through a server. */
static int begin_run(const struct cli_ctx *ctx,
                     const struct tool_args *a,
                     struct b4_permissions *perms,
                     struct cli_local *l,
                     struct b4_run **ret,
                     struct b4_error *err)
{
        const struct cli_local_options o = { .provider_type = a->provider,
                                             .permissions = perms,
                                             .read_cap = a->read_cap };
        int r;

        r = cli_local_open_with(ctx, &o, l);
        if (r != 0)
                return b4_error_set(err, -EINVAL, "cannot open the local provider");
        r = cli_local_thread_register(l, a->thread, err);
        if (r < 0)
                return r;
        return b4_runtime_run_begin(l->rt, a->thread, ret, err);
}

/* Ask on the terminal about the result's permission request; "once", "always" or "deny". */
static const char *prompt(const struct jv *request)
{
        const struct jv *detail = jv_object_get(request, "detail");
        const char *kind = jv_string(jv_object_get(request, "kind"));
        const char *pattern = jv_string(jv_object_get(detail, "suggestedPattern"));
        const char *subject = NULL;
        char line[32];

        for (const char *const *k = (const char *const[]){ "command", "path", "toolName", NULL };
             *k && !subject; k++)
                subject = jv_string(jv_object_get(detail, *k));
        for (;;) {
                fprintf(stderr, "b4box: allow %s '%s'? [o]nce, [a]lways ('%s'), [d]eny: ",
                        kind ? kind : "?", subject ? subject : "?", pattern ? pattern : "?");
                if (!fgets(line, sizeof(line), stdin))
                        return "deny";
                if (line[0] == 'o')
                        return "once";
                if (line[0] == 'a')
                        return "always";
                if (line[0] == 'd')
                        return "deny";
        }
}

/* The pending request to answer on the terminal, or NULL. */
static const struct jv *wants_answer(const struct b4_tool_result *res, const struct tool_args *a)
{
        if (res->ok || strcmp(res->code, B4_TOOL_PERMISSION_REQUIRED) != 0 ||
            a->mode != B4_PERMISSION_INTERACTIVE || !isatty(STDIN_FILENO))
                return NULL;
        return jv_object_get(res->doc, "permissionRequest");
}

/* Print the result document; the exit code follows its ok. */
static int print_result(const struct b4_tool_result *res)
{
        cleanup_free char *json = NULL;

        if (jv_dump(res->doc, 0, &json) < 0)
                return -ENOMEM;
        puts(json);
        return res->ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int run_tool(struct b4_run *run,
                    const struct tool_args *a,
                    const struct jv *args,
                    struct b4_error *err)
{
        struct b4_tool_result res = { 0 };
        const struct jv *req;
        int r;

        r = b4_run_call(run, a->name, args, &res, err);
        while (r >= 0 && (req = wants_answer(&res, a))) {
                cleanup_free char *id = strdup(jv_string(jv_object_get(req, "interruptId")) ?: "");
                const char *answer = prompt(req);

                if (!id) {
                        r = -ENOMEM;
                        break;
                }
                b4_tool_result_clear(&res);
                r = b4_run_resume(run, id, answer, &res, err);
        }
        if (r >= 0)
                r = print_result(&res);
        b4_tool_result_clear(&res);
        return r == -ENOMEM ? b4_error_set(err, r, "out of memory") : r;
}

/* ARGS_JSON, parsed once here. Return: 0, or -EINVAL with the message printed. */
static int parse_call_args(const struct tool_args *a, struct jv **ret)
{
        struct b4_error e = { 0 };

        if (jv_parse(a->json, strlen(a->json), ret, &e) >= 0)
                return 0;
        cli_error("tool: ARGS_JSON is not valid JSON: %s", e.msg);
        return -EINVAL;
}

/* Through a server: the server's permissions apply; the flags that shape them locally are
 * refused rather than ignored. */
static int remote_tool(const char *url, const struct tool_args *a)
{
        struct jv *doc = NULL;
        char *json = NULL;
        int r;

        if (a->perm_flags || a->provider || a->read_cap) {
                cli_error("tool: --mode, --allow, --deny, --provider and --read-cap apply only "
                          "locally; the server uses its own configuration");
                return CLI_USAGE;
        }
        r = cli_remote_tool(url, a->thread, a->name, a->json, &json);
        if (r != 0)
                return r;
        puts(json);
        r = jv_parse(json, strlen(json), &doc, NULL) >= 0 && jv_is_true(jv_object_get(doc, "ok"))
                    ? CLI_EXIT_OK
                    : CLI_EXIT_FAILED;
        jv_unref(doc);
        free(json);
        return r;
}

static void tool_args_clear(struct tool_args *a)
{
        for (size_t i = 0; i < a->n_rules; i++)
                free((char *)a->rules[i]);
        a->n_rules = 0;
}

int cmd_tool(int argc, char **argv, const struct cli_ctx *ctx)
{
        cleanup_(tool_args_clear) struct tool_args a = { .mode = B4_PERMISSION_NON_INTERACTIVE };
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        cleanup_(jv_unrefp) struct jv *args = NULL;
        struct b4_permissions *perms = NULL;
        struct b4_run *run = NULL;
        struct b4_error err = { 0 };
        int r;

        if (parse_tool_args(argc, argv, &a) != 0)
                return CLI_USAGE;
        if (cli_server_url(a.server))
                return remote_tool(cli_server_url(a.server), &a);
        if (parse_call_args(&a, &args) < 0)
                return CLI_USAGE;
        r = a.perm_flags ? make_permissions(&a, &perms, &err) : 0;
        if (r >= 0)
                r = begin_run(ctx, &a, perms, &l, &run, &err);
        if (r >= 0)
                r = run_tool(run, &a, args, &err);
        if (run) {
                run = b4_run_end(run);
                (void)b4_runtime_thread_release(l.rt, a.thread, NULL);
        }
        cli_local_close(&l); /* the runtime borrows perms */
        b4_permissions_free(perms);
        return r < 0 ? cli_fail(&err) : r;
}
