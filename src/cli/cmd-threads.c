/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box threads create|ls|show|rm|release: thread management through the server
 * (--server URL or $B4BOX_URL, bearer token from $B4BOX_TOKEN). Prints the server's JSON.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "cli.h"
#include "client.h"
#include "json/json.h"

struct threads_args {
        const char *server;
        const char *id;
        const char *metadata;
        const char *parent;
};

static int usage(void)
{
        cli_error("usage: b4box threads create [--id ID] [--metadata JSON] [--parent ID] | ls | "
                  "show ID | rm ID | release ID  [--server URL]");
        return CLI_EXIT_USAGE;
}

static int parse(int argc, char **argv, struct threads_args *a)
{
        static const struct option opts[] = {
                { "server", required_argument, NULL, 's' },
                { "id", required_argument, NULL, 'i' },
                { "metadata", required_argument, NULL, 'm' },
                { "parent", required_argument, NULL, 'p' },
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
                else
                        return -1;
        }
        return optind;
}

static char *create_body(const struct threads_args *a)
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        struct jv *meta = NULL;
        char *s = NULL;

        if (!o)
                return NULL;
        if (a->id)
                (void)jv_object_set_new(o, "thread_id", jv_string_new(a->id));
        if (a->parent)
                (void)jv_object_set_new(o, "parent_thread_id", jv_string_new(a->parent));
        if (a->metadata) {
                if (jv_parse(a->metadata, strlen(a->metadata), &meta, NULL) < 0) {
                        cli_error("--metadata is not valid JSON");
                        return NULL;
                }
                (void)jv_object_set_new(o, "metadata", meta);
        }
        return jv_dump(o, 0, &s) < 0 ? NULL : s;
}

/* Build method + path (+ body) for @verb. Returns 0, or an exit code. */
static int plan(const char *verb,
                const char *id,
                const struct threads_args *a,
                const char **ret_method,
                char **ret_path,
                char **ret_body)
{
        cleanup_free char *eid = id ? cli_path_escape(id) : NULL;
        bool needs_id = strcmp(verb, "show") == 0 || strcmp(verb, "rm") == 0 ||
                        strcmp(verb, "release") == 0;

        if (needs_id && !eid)
                return usage();
        if (strcmp(verb, "create") == 0) {
                *ret_method = "POST";
                *ret_body = create_body(a);
                *ret_path = strdup("/threads");
                return *ret_body ? 0 : CLI_EXIT_USAGE;
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
                return usage();
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
        if (i < 0 || i >= argc || argc - i > 2)
                return usage();
        struct cli_client c = { .url = cli_server_url(a.server),
                                .token = secure_getenv("B4BOX_TOKEN") };
        if (!c.url) {
                cli_error(
                        "threads needs a server: --server URL or B4BOX_URL (e.g. unix:/run/b4box.sock or http://127.0.0.1:4100)");
                return CLI_EXIT_USAGE;
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
