/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box read THREAD: the thread's workspace inventory (docs/inspect.md). Through a server
 * (--server URL, else $B4BOX_URL; token $B4BOX_TOKEN) with POST /threads/{id}/workspace/
 * inspect, reading at most 64 MiB of answer and refusing one about another thread or
 * another source digest; or, without a server, locally through the runtime over the state
 * dir (the thread's root ancestor's workspace and its recorded digests, as a server reads
 * them; the same answer, checked the same way). URLs: unix:/path/to.sock, http://host:port or
 * https://...; the transfer is lib/http's (client.h).
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"
#include "b4box/runtime.h"

#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"
#include "client.h"
#include "http/http.h"
#include "json/json.h"

struct read_args {
        const char *thread;
        const char *root;
        char **exclude;       /* strv */
        char **exclude_paths; /* strv */
        const char *expect_source;
        const char *server;
        bool json, consistent, skip_unsupported;
};

static int parse_args(int argc, char **argv, struct read_args *a)
{
        static const struct option opts[] = {
                { "root", required_argument, NULL, 'r' },
                { "exclude", required_argument, NULL, 'x' },
                { "expect-source", required_argument, NULL, 's' },
                { "server", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },
                { "consistent", no_argument, NULL, 'c' },
                { "exclude-path", required_argument, NULL, 'p' },
                { "skip-unsupported", no_argument, NULL, 'u' },
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                if (c == 'r')
                        a->root = optarg;
                else if (c == 'x' && strv_extend(&a->exclude, optarg) < 0)
                        return -ENOMEM;
                else if (c == 'p' && strv_extend(&a->exclude_paths, optarg) < 0)
                        return -ENOMEM;
                else if (c == 'u')
                        a->skip_unsupported = true;
                else if (c == 's')
                        a->expect_source = optarg;
                else if (c == 'S')
                        a->server = optarg;
                else if (c == 'j')
                        a->json = true;
                else if (c == 'c')
                        a->consistent = true;
                else if (c != 'x' && c != 'p')
                        return -EINVAL;
        }
        if (optind != argc - 1) {
                cli_error("read needs exactly one THREAD");
                return -EINVAL;
        }
        a->thread = argv[optind];
        return 0;
}

/* ---- through a server ---- */

/* {root?, excludeRootDirectories?, excludePaths?, unsupported?, consistent}: an absent member
 * is the server's default. */
static struct jv *request_body(const struct read_args *a)
{
        struct jv *ex = a->exclude ? jv_string_array_new(a->exclude) : NULL;
        struct jv *xp = a->exclude_paths ? jv_string_array_new(a->exclude_paths) : NULL;

        if ((a->exclude && !ex) || (a->exclude_paths && !xp)) {
                jv_unref(ex);
                jv_unref(xp);
                return NULL;
        }
        return jv_pack("{s:s*, s:o*, s:o*, s:s*, s:b}", "root", a->root, "excludeRootDirectories",
                       ex, "excludePaths", xp, "unsupported", a->skip_unsupported ? "skip" : NULL,
                       "consistent", a->consistent);
}

/* POST /threads/{id}/workspace/inspect with the answer bounded to the inspect cap. */
static int ask(const char *url,
               const struct read_args *a,
               struct cli_http_resp *ret,
               struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = request_body(a);
        cleanup_free char *text = NULL, *id = http_escape(a->thread), *path = NULL;
        struct cli_client c = { .url = url, .token = secure_getenv("B4BOX_TOKEN") };
        struct cli_http_req req = { .method = "POST",
                                    .max_response = B4_INSPECT_RESPONSE_MAX_BYTES };

        if (!body || !id || jv_dump(body, 0, &text) < 0 ||
            asprintf(&path, "/threads/%s/workspace/inspect", id) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        req.path = path;
        req.body = text;
        req.len = strlen(text);
        return cli_http_request(&c, &req, ret, err);
}

/* ---- output ---- */

static void print_human(const char *thread, const struct b4_inspect_response *res)
{
        printf("thread %s: %llu files, %llu bytes, %llu entries%s%s\n", thread,
               (unsigned long long)res->n_files, (unsigned long long)res->total_bytes,
               (unsigned long long)res->entries, res->root ? ", root " : "",
               res->root ? res->root : "");
        printf("source: %s\n", res->source_digest ? res->source_digest : "(none recorded)");
        STRV_FOREACH (p, res->paths)
                printf("  %s\n", *p);
        if (res->skipped_paths)
                printf("skipped: %zu\n", strv_length(res->skipped_paths));
        for (size_t i = 0; res->skipped_paths && res->skipped_paths[i]; i++)
                printf("  %s (%s)\n", res->skipped_paths[i], res->skipped_reasons[i]);
}

static int over_server(const struct read_args *a, const char *url)
{
        struct cli_http_resp ans = { 0 };
        struct b4_inspect_response res = { 0 };
        struct b4_error err = { 0 };
        int r;

        r = ask(url, a, &ans, &err);
        if (r == -EFBIG)
                cli_error("response_too_large: the answer exceeds %u bytes",
                          B4_INSPECT_RESPONSE_MAX_BYTES);
        else if (r < 0)
                (void)cli_fail(&err);
        if (r >= 0 && (ans.status < 200 || ans.status > 299)) {
                char *code = NULL, *msg = NULL;
                if (b4_inspect_error_parse(ans.body, ans.len, &code, &msg) >= 0)
                        cli_error("%s: %s (HTTP %ld)", code, msg, ans.status);
                else
                        cli_error("HTTP %ld from %s", ans.status, url);
                free(code);
                free(msg);
                r = -EIO;
        } else if (r >= 0) {
                r = b4_inspect_response_parse(ans.body, ans.len, a->thread, a->expect_source, &res,
                                              &err);
                if (r < 0)
                        (void)cli_fail(&err);
        }
        if (r >= 0 && a->json)
                printf("%.*s\n", (int)ans.len, ans.body);
        else if (r >= 0)
                print_human(a->thread, &res);
        b4_inspect_response_clear(&res);
        free(ans.body);
        return r < 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

/* ---- locally, through the runtime (as the server reads) ---- */

/* The server's answer, built and checked as a client of the server checks it. */
static int print_local(const struct read_args *a, const struct b4_workspace_read *rd)
{
        struct b4_inspect_response res = { 0 };
        struct b4_error err = { 0 };
        cleanup_free char *text = NULL;
        size_t len = 0;
        int r;

        r = b4_inspect_response_format(a->thread, a->root, rd, NULL, &text, &len);
        if (r < 0) {
                if (r == -E2BIG)
                        cli_error("response_too_large: the answer exceeds %u bytes",
                                  B4_INSPECT_RESPONSE_MAX_BYTES);
                else
                        cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        r = b4_inspect_response_parse(text, len, a->thread, a->expect_source, &res, &err);
        if (r < 0)
                return cli_fail(&err);
        if (a->json)
                printf("%s\n", text);
        else
                print_human(a->thread, &res);
        b4_inspect_response_clear(&res);
        return CLI_EXIT_OK;
}

static int locally(const struct read_args *a, const struct cli_ctx *ctx)
{
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        struct b4_workspace_read rd = { 0 };
        struct b4_inspect_options o;
        struct b4_error err = { 0 };
        int r;

        r = cli_local_open(ctx, &l);
        if (r != 0)
                return r;
        b4_inspect_options_init(&o);
        o.root = a->root;
        o.exclude_root = a->exclude;
        o.exclude_paths = a->exclude_paths;
        if (a->skip_unsupported)
                o.unsupported = B4_INSPECT_UNSUPPORTED_SKIP;
        r = b4_runtime_inspect(l.rt, a->thread, &o, a->consistent,
                               l.cfg->sandbox.workspace_read_timeout_ms, NULL, &rd, &err);
        if (r == -EPROTO)
                cli_error("%s: %s", b4_inspect_code_name(rd.fail.code), err.msg);
        else if (r < 0)
                (void)cli_fail(&err);
        else
                r = print_local(a, &rd);
        b4_workspace_read_clear(&rd);
        return r < 0 ? CLI_EXIT_FAILED : r;
}

int cmd_read(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct read_args a = { 0 };
        const char *url;
        int r;

        if (parse_args(argc, argv, &a) < 0) {
                strv_free(a.exclude);
                strv_free(a.exclude_paths);
                return CLI_USAGE;
        }
        url = a.server ? a.server : secure_getenv("B4BOX_URL");
        r = url && *url ? over_server(&a, url) : locally(&a, ctx);
        strv_free(a.exclude);
        strv_free(a.exclude_paths);
        return r;
}
