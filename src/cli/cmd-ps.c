/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box ps | logs | kill: a thread's background processes through the server (--server URL
 * or $B4BOX_URL, token from $B4BOX_TOKEN; docs/http-api.md "Background processes").
 *   ps --thread ID [PID]                 the records (the server's JSON)
 *   logs --thread ID PID [--from N] [--follow]
 *                                        the output from byte N; --follow prints as it comes
 *                                        (polling the plain logs route) until it exits
 *   kill --thread ID PID [--signal SIG] [--rm]
 *                                        SIG (default TERM) to its whole tree; --rm forgets it
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "cli.h"
#include "client.h"
#include "http/http.h"
#include "json/json.h"

#define FOLLOW_POLL_MS 200

struct ps_args {
        const char *server, *thread, *signal, *from;
        bool follow, rm;
        const char *pid;
};

static int parse(const char *cmd, int argc, char **argv, struct ps_args *a)
{
        static const struct option opts[] = {
                { "server", required_argument, NULL, 's' },
                { "thread", required_argument, NULL, 't' },
                { "signal", required_argument, NULL, 'k' },
                { "from", required_argument, NULL, 'f' },
                { "follow", no_argument, NULL, 'F' },
                { "rm", no_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                if (c == 's')
                        a->server = optarg;
                else if (c == 't')
                        a->thread = optarg;
                else if (c == 'k')
                        a->signal = optarg;
                else if (c == 'f')
                        a->from = optarg;
                else if (c == 'F')
                        a->follow = true;
                else if (c == 'r')
                        a->rm = true;
                else if (c != 'j')
                        return CLI_USAGE;
        }
        a->pid = optind < argc ? argv[optind] : NULL;
        if (!a->thread || optind + 1 < argc || (strcmp(cmd, "ps") != 0 && !a->pid)) {
                cli_error("%s: needs --thread ID%s", cmd, strcmp(cmd, "ps") ? " and a PID" : "");
                return CLI_USAGE;
        }
        return 0;
}

static int client(const struct ps_args *a, struct cli_client *ret)
{
        *ret = (struct cli_client){ .url = cli_server_url(a->server),
                                    .token = secure_getenv("B4BOX_TOKEN") };
        if (ret->url)
                return 0;
        cli_error("background processes need a server: --server URL or B4BOX_URL");
        return CLI_USAGE;
}

/* One request; prints the refusal and returns an exit code, or 0 with *ret_body. */
static int call(const struct cli_client *c,
                const char *method,
                const char *path,
                const char *body,
                char **ret_body,
                size_t *ret_len)
{
        struct cli_http_req req = {
                .method = method, .path = path, .body = body, .len = body ? strlen(body) : 0
        };
        struct cli_http_resp resp = { 0 };
        struct b4_error err = { 0 };

        if (cli_http_request(c, &req, &resp, &err) < 0)
                return cli_fail(&err);
        if (resp.status >= 400) {
                int r = cli_http_fail(resp.status, resp.body);
                free(resp.body);
                return r;
        }
        *ret_body = resp.body;
        if (ret_len)
                *ret_len = resp.len;
        return 0;
}

static char *proc_path(const struct ps_args *a, const char *suffix)
{
        cleanup_free char *t = http_escape(a->thread), *p = a->pid ? http_escape(a->pid) : NULL;
        char *path = NULL;

        if (!t || (a->pid && !p))
                return NULL;
        if (asprintf(&path, "/threads/%s/processes%s%s%s", t, p ? "/" : "", p ? p : "", suffix) < 0)
                return NULL;
        return path;
}

int cmd_ps(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct ps_args a = { 0 };
        cleanup_free char *path = NULL, *body = NULL;
        struct cli_client c;
        int r = parse("ps", argc, argv, &a);

        if (r == 0)
                r = client(&a, &c);
        if (r != 0)
                return r;
        path = proc_path(&a, "");
        if (!path)
                return CLI_EXIT_FAILED;
        r = call(&c, "GET", path, NULL, &body, NULL);
        if (r == 0)
                printf("%s\n", body);
        return r;
}

/* Whether the process has exited and its spool is read up to @offset. */
static int finished(const struct cli_client *c, const struct ps_args *a, uint64_t offset, bool *ret)
{
        cleanup_free char *path = proc_path(a, ""), *body = NULL;
        cleanup_(jv_unrefp) struct jv *v = NULL;
        int r = path ? call(c, "GET", path, NULL, &body, NULL) : CLI_EXIT_FAILED;

        if (r != 0)
                return r;
        if (jv_parse(body, strlen(body), &v, NULL) < 0)
                return CLI_EXIT_FAILED;
        *ret = strcmp(jv_string(jv_object_get(v, "state")) ?: "", "exited") == 0 &&
               (uint64_t)jv_integer(jv_object_get(v, "bytes")) <= offset;
        return 0;
}

int cmd_logs(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct ps_args a = { 0 };
        struct cli_client c;
        uint64_t offset;
        int r = parse("logs", argc, argv, &a);

        if (r == 0)
                r = client(&a, &c);
        if (r != 0)
                return r;
        offset = a.from ? strtoull(a.from, NULL, 10) : 0;
        for (bool done = false; !done;) {
                cleanup_free char *q = NULL, *path = NULL, *body = NULL;
                size_t len = 0;
                if (asprintf(&q, "/logs?from=%llu", (unsigned long long)offset) < 0 ||
                    !(path = proc_path(&a, q)))
                        return CLI_EXIT_FAILED;
                r = call(&c, "GET", path, NULL, &body, &len);
                if (r != 0)
                        return r;
                (void)fwrite(body, 1, len, stdout);
                (void)fflush(stdout);
                offset += len;
                if (!a.follow)
                        break;
                r = finished(&c, &a, offset, &done);
                if (r != 0)
                        return r;
                if (!done && len == 0)
                        (void)nanosleep(&(struct timespec){ .tv_nsec = FOLLOW_POLL_MS * 1000000L },
                                        NULL);
        }
        return CLI_EXIT_OK;
}

int cmd_kill(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct ps_args a = { 0 };
        cleanup_free char *path = NULL, *body = NULL, *req = NULL, *sig = NULL;
        struct cli_client c;
        int r = parse("kill", argc, argv, &a);

        if (r == 0)
                r = client(&a, &c);
        if (r != 0)
                return r;
        if (a.rm) {
                path = proc_path(&a, "");
                r = path ? call(&c, "DELETE", path, NULL, &body, NULL) : CLI_EXIT_FAILED;
        } else {
                path = proc_path(&a, "/signal");
                if (!path || jv_quote(a.signal ? a.signal : "TERM", &sig) < 0 ||
                    asprintf(&req, "{\"signal\":%s}", sig) < 0)
                        return CLI_EXIT_FAILED;
                r = call(&c, "POST", path, req, &body, NULL);
        }
        if (r == 0)
                printf("%s\n", body);
        return r;
}
