/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box threads create|ls|show|rm|release: thread management through the server
 * (--server URL or $B4BOX_URL, bearer token from $B4BOX_TOKEN). Prints the server's JSON.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"
#include "client.h"
#include "http/http.h"
#include "json/json.h"

struct threads_args {
        const char *server;
        const char *id;
        const char *metadata;
        const char *parent;
        const char *source;   /* --source DIGEST: a staged workspace (reference §6.4) */
        char **links;         /* --link PATH=TARGET, repeated (strv) */
        const char *baseline; /* --baseline git */
};

static int usage(const char *what)
{
        cli_error("threads: %s", what);
        return CLI_USAGE;
}

static int parse(int argc, char **argv, struct threads_args *a)
{
        static const struct option opts[] = {
                { "server", required_argument, NULL, 's' },
                { "id", required_argument, NULL, 'i' },
                { "metadata", required_argument, NULL, 'm' },
                { "parent", required_argument, NULL, 'p' },
                { "source", required_argument, NULL, 'S' },
                { "link", required_argument, NULL, 'l' },
                { "baseline", required_argument, NULL, 'b' },
                { "json", no_argument, NULL, 'j' }, /* the answer is JSON already */
                {},
        };
        int c;

        optind = 1; /* options may come before or after the verb */
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                if (c == 's')
                        a->server = optarg;
                else if (c == 'i')
                        a->id = optarg;
                else if (c == 'm')
                        a->metadata = optarg;
                else if (c == 'p')
                        a->parent = optarg;
                else if (c == 'S')
                        a->source = optarg;
                else if (c == 'b')
                        a->baseline = optarg;
                else if (c == 'l' && strchr(optarg, '=') && strv_extend(&a->links, optarg) >= 0)
                        continue;
                else if (c == 'j')
                        continue;
                else
                        return -1;
        }
        return optind;
}

/* {sourceDigest, environmentLinks?, baseline?}; the server checks the rest. */
static struct jv *workspace_json(const struct threads_args *a)
{
        struct jv *links = a->links ? jv_array_new() : NULL;

        STRV_FOREACH (l, a->links) {
                const char *eq = strchr(*l, '=');
                if (links &&
                    jv_array_append_new(links, jv_pack("{s:s%, s:s}", "path", *l, (size_t)(eq - *l),
                                                       "target", eq + 1)) < 0)
                        links = jv_unref(links);
                if (!links)
                        return NULL;
        }
        return jv_pack("{s:s, s:o*, s:s*}", "sourceDigest", a->source, "environmentLinks", links,
                       "baseline", a->baseline);
}

static char *create_body(const struct threads_args *a)
{
        cleanup_(jv_unrefp) struct jv *o = NULL;
        struct jv *meta = NULL, *ws;
        char *s = NULL;

        if (a->metadata && jv_parse(a->metadata, strlen(a->metadata), &meta, NULL) < 0) {
                cli_error("--metadata is not valid JSON");
                return NULL;
        }
        ws = a->source ? workspace_json(a) : NULL;
        if (a->source && !ws) {
                jv_unref(meta);
                return NULL;
        }
        o = jv_pack("{s:s*, s:s*, s:o*, s:o*}", "thread_id", a->id, "parent_thread_id", a->parent,
                    "metadata", meta, "workspace", ws);
        return o && jv_dump(o, 0, &s) >= 0 ? s : NULL;
}

/* Build method + path (+ body) for @verb. Returns 0, or an exit code. */
static int plan(const char *verb,
                const char *id,
                const struct threads_args *a,
                const char **ret_method,
                char **ret_path,
                char **ret_body)
{
        cleanup_free char *eid = id ? http_escape(id) : NULL;
        bool needs_id = strcmp(verb, "show") == 0 || strcmp(verb, "rm") == 0 ||
                        strcmp(verb, "release") == 0;

        if (needs_id && !eid)
                return usage("needs a thread id");
        if (strcmp(verb, "create") == 0) {
                *ret_method = "POST";
                *ret_body = create_body(a);
                *ret_path = strdup("/threads");
                return *ret_body ? 0 : CLI_USAGE;
        }
        const char *suffix = "";
        if (strcmp(verb, "ls") == 0) {
                *ret_method = "GET";
                *ret_path = strdup("/threads");
                return *ret_path ? 0 : CLI_EXIT_FAILED;
        }
        if (strcmp(verb, "show") == 0) {
                *ret_method = "GET";
        } else if (strcmp(verb, "rm") == 0) {
                *ret_method = "DELETE";
        } else if (strcmp(verb, "release") == 0) {
                *ret_method = "POST";
                suffix = "/release";
        } else {
                return usage("the verb is create, ls, show, rm or release");
        }
        return asprintf(ret_path, "/threads/%s%s", eid, suffix) < 0 ? CLI_EXIT_FAILED : 0;
}

int cmd_threads(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct threads_args a = { 0 };
        cleanup_free char *path = NULL, *body = NULL, *resp = NULL;
        struct b4_error err = { 0 };
        const char *method = NULL;
        long status = 0;
        int i, r;

        i = parse(argc, argv, &a);
        cleanup_strv char **links = a.links; /* frees the --link list on every return */
        (void)links;
        if (i < 0)
                return CLI_USAGE; /* getopt said what */
        if (i >= argc || argc - i > 2)
                return usage("needs one verb and at most one thread id");
        if ((a.links || a.baseline) && !a.source)
                return usage("--link and --baseline need --source");
        struct cli_client c = { .url = cli_server_url(a.server),
                                .token = secure_getenv("B4BOX_TOKEN") };
        if (!c.url) {
                cli_error(
                        "threads needs a server: --server URL or B4BOX_URL (e.g. unix:/run/b4box.sock or http://127.0.0.1:4100)");
                return CLI_USAGE;
        }
        r = plan(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &a, &method, &path, &body);
        if (r != 0)
                return r;
        if (cli_http(&c, method, path, body, &status, &resp, &err) < 0)
                return cli_fail(&err);
        if (status >= 400)
                return cli_http_fail(status, resp);
        printf("%s\n", resp);
        return CLI_EXIT_OK;
}
