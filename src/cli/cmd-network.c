/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box network THREAD: the thread's network audit (docs/cli.md, docs/native.md §Audit):
 * DNS events and totals, destinations with packets and bytes, denials. Through a server
 * (--server URL, else $B4BOX_URL; token $B4BOX_TOKEN) with GET /threads/{id}/network, or
 * locally through the configured provider (b4_provider_network_audit()): the same document.
 * --json prints it as it came; else a summary, "not audited: <reason>" when nothing is.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/provider.h"
#include "b4box/runtime.h"

#include "base/macro.h"
#include "cli.h"
#include "client.h"
#include "http/http.h"
#include "json/json.h"

#define NETWORK_MAX_RESPONSE (4u << 20)

struct network_args {
        const char *thread, *server;
        bool json;
};

static int parse_args(int argc, char **argv, struct network_args *a)
{
        static const struct option opts[] = {
                { "server", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                if (c == 'S')
                        a->server = optarg;
                else if (c == 'j')
                        a->json = true;
                else
                        return -EINVAL;
        }
        if (optind != argc - 1) {
                cli_error("network needs exactly one THREAD");
                return -EINVAL;
        }
        a->thread = argv[optind];
        return 0;
}

static int64_t num(const struct jv *o, const char *key)
{
        const struct jv *v = jv_object_get(o, key);

        return v && jv_is_number(v) ? jv_integer(v) : 0;
}

static const char *str(const struct jv *o, const char *key)
{
        const char *s = jv_string(jv_object_get(o, key));

        return s ? s : "?";
}

static void print_event(const struct jv *e)
{
        const struct jv *ans = jv_object_get(e, "answers");

        printf("  %s  %s %s  %s", str(e, "time"), str(e, "name"), str(e, "type"),
               str(e, "verdict"));
        for (size_t i = 0; i < jv_array_size(ans); i++)
                printf("%s%s", i ? ", " : " -> ", jv_string(jv_array_get(ans, i)));
        if (num(e, "pinSeconds"))
                printf(" (pinned %lld s)", (long long)num(e, "pinSeconds"));
        printf("\n");
}

static void print_counted(const char *title, const struct jv *arr, bool bytes)
{
        printf("%s: %zu\n", title, jv_array_size(arr));
        for (size_t i = 0; i < jv_array_size(arr); i++) {
                const struct jv *x = jv_array_get(arr, i);

                printf("  %s %s/%lld  %lld packets", str(x, "address"), str(x, "protocol"),
                       (long long)num(x, "port"), (long long)num(x, "packets"));
                if (bytes)
                        printf("  %lld bytes", (long long)num(x, "bytes"));
                printf("\n");
        }
}

static void print_human(const struct jv *doc)
{
        const struct jv *dns = jv_object_get(doc, "dns"), *ev = jv_object_get(dns, "events");

        if (!jv_is_true(jv_object_get(doc, "enforced"))) {
                printf("thread %s (%s): not audited: %s\n", str(doc, "thread"),
                       str(doc, "provider"), str(doc, "reason"));
                return;
        }
        printf("thread %s (%s): mode %s\n", str(doc, "thread"), str(doc, "provider"),
               str(doc, "mode"));
        printf("dns: %lld queries: %lld admitted, %lld refused, %lld failed, %lld dropped\n",
               (long long)num(dns, "queries"), (long long)num(dns, "admitted"),
               (long long)num(dns, "refused"), (long long)num(dns, "failed"),
               (long long)num(dns, "dropped"));
        for (size_t i = 0; i < jv_array_size(ev); i++)
                print_event(jv_array_get(ev, i));
        print_counted("destinations", jv_object_get(doc, "destinations"), true);
        print_counted("denials", jv_object_get(doc, "denials"), false);
}

/* Print @text (a JSON audit document) as asked. */
static int print_doc(const struct network_args *a, const char *text, size_t len)
{
        cleanup_(jv_unrefp) struct jv *doc = NULL;
        struct b4_error err = { 0 };

        if (jv_parse(text, len, &doc, &err) < 0 || !jv_is_object(doc)) {
                cli_error("the network audit is not a JSON object");
                return CLI_EXIT_FAILED;
        }
        if (a->json)
                printf("%.*s\n", (int)len, text);
        else
                print_human(doc);
        return CLI_EXIT_OK;
}

static int over_server(const struct network_args *a, const char *url)
{
        cleanup_free char *id = http_escape(a->thread), *path = NULL;
        struct cli_client c = { .url = url, .token = secure_getenv("B4BOX_TOKEN") };
        struct cli_http_req req = { .method = "GET", .max_response = NETWORK_MAX_RESPONSE };
        struct cli_http_resp ans = { 0 };
        struct b4_error err = { 0 };
        int r;

        if (!id || asprintf(&path, "/threads/%s/network", id) < 0) {
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        req.path = path;
        if (cli_http_request(&c, &req, &ans, &err) < 0)
                return cli_fail(&err);
        if (ans.status < 200 || ans.status > 299)
                r = cli_http_fail(ans.status, ans.body);
        else
                r = print_doc(a, ans.body, ans.len);
        free(ans.body);
        return r;
}

static int locally(const struct network_args *a, const struct cli_ctx *ctx)
{
        cleanup_(cli_local_close) struct cli_local l = { 0 };
        cleanup_free char *text = NULL;
        struct b4_error err = { 0 };
        int r;

        r = cli_local_open(ctx, &l);
        if (r != 0)
                return r;
        if (b4_provider_network_audit(l.provider, a->thread, &text, &err) < 0)
                return cli_fail(&err);
        return print_doc(a, text, strlen(text));
}

int cmd_network(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct network_args a = { 0 };
        const char *url;

        if (parse_args(argc, argv, &a) < 0)
                return CLI_USAGE;
        url = cli_server_url(a.server);
        return url ? over_server(&a, url) : locally(&a, ctx);
}
