/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI's --server client: a thin layer over lib/http (URL, token, bounded JSON bodies). */

#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/time-util.h"
#include "cli.h"
#include "events.h"
#include "http/http.h"
#include "json/json.h"

const char *cli_server_url(const char *flag)
{
        const char *env = secure_getenv("B4BOX_URL");

        return flag ? flag : (env && *env ? env : NULL);
}

/* Seconds from a Retry-After header; an HTTP-date (which our server never sends) counts 0. */
static long retry_seconds(const char *v)
{
        char *end = NULL;
        long n = v ? strtol(v, &end, 10) : 0;

        return v && end != v && n > 0 ? n : 0;
}

int cli_http_request(const struct cli_client *c,
                     const struct cli_http_req *req,
                     struct cli_http_resp *ret,
                     struct b4_error *err)
{
        struct http_client *h = NULL;
        struct http_response resp = { 0 };
        struct http_req hr = { .method = req->method,
                               .path = req->path,
                               .content_type = req->body ? "application/json" : NULL,
                               .body = req->body,
                               .body_len = req->len,
                               .timeout_ms = HTTP_NO_TIMEOUT };
        int r;

        r = http_client_new(c->url, &h, err);
        if (r >= 0 && http_client_set_token(h, c->token) < 0)
                r = b4_error_set(err, -EINVAL, "$B4BOX_TOKEN cannot be sent in a header");
        if (r >= 0)
                r = http_request(h, &hr,
                                 req->max_response ? req->max_response : CLIENT_MAX_RESPONSE,
                                 "Retry-After", &resp, err);
        http_client_free(h);
        if (r < 0)
                return r;
        *ret = (struct cli_http_resp){ .status = resp.status,
                                       .retry_after = retry_seconds(resp.header_value),
                                       .body = TAKE_PTR(resp.body),
                                       .len = resp.len };
        http_response_clear(&resp);
        return 0;
}

int cli_http(const struct cli_client *c,
             const char *method,
             const char *path,
             const char *body,
             long *ret_status,
             char **ret_body,
             struct b4_error *err)
{
        struct cli_http_req req = {
                .method = method, .path = path, .body = body, .len = body ? strlen(body) : 0
        };
        struct cli_http_resp resp = { 0 };
        int r = cli_http_request(c, &req, &resp, err);

        if (r < 0)
                return r;
        *ret_status = resp.status;
        *ret_body = resp.body;
        return 0;
}

int cli_http_fail(long status, const char *body)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        struct jv *e = NULL;

        if (jv_parse(body, strlen(body), &v, NULL) >= 0)
                e = jv_object_get(v, "error");
        const char *msg = jv_string(jv_object_get(e, "message"));
        const char *code = jv_string(jv_object_get(jv_object_get(e, "details"), "code"));
        cli_error("%s (HTTP %ld%s%s)", msg ? msg : "request failed", status, code ? ", " : "",
                  code ? code : "");
        return CLI_EXIT_FAILED;
}

int cli_remote_tool(const char *url,
                    const char *thread,
                    const char *tool,
                    const char *args_json,
                    char **ret_json)
{
        struct cli_client c = { .url = url, .token = secure_getenv("B4BOX_TOKEN") };
        cleanup_free char *et = http_escape(thread), *en = http_escape(tool);
        cleanup_free char *path = NULL, *resp = NULL;
        struct b4_error err = { 0 };
        long status = 0;

        if (!et || !en || asprintf(&path, "/threads/%s/tools/%s", et, en) < 0) {
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        if (cli_http(&c, "POST", path, args_json, &status, &resp, &err) < 0)
                return cli_fail(&err);
        if (status != 200)
                return cli_http_fail(status, resp);
        *ret_json = TAKE_PTR(resp);
        return 0;
}

/* A refusal's whole body (bounded), as cli_http_fail() prints it. */
static int stream_refused(struct http_stream *st, long status)
{
        struct strbuf body;
        char buf[4096];
        ssize_t n;
        int r;

        strbuf_init(&body, CLIENT_MAX_RESPONSE);
        while ((n = http_stream_read(st, buf, sizeof(buf), 0, -EBADF, NULL)) > 0)
                if (strbuf_add(&body, buf, (size_t)n) < 0)
                        break;
        r = cli_http_fail(status, body.buf ? body.buf : "");
        strbuf_release(&body);
        return r;
}

static int stream_events(struct http_stream *st, int cancel_fd, cli_event_fn *fn, void *userdata)
{
        struct b4_error err = { 0 };
        struct events ev;
        char buf[65536];
        ssize_t n;
        int r = 0;

        events_init(&ev, EVENTS_LINE_MAX, fn, userdata);
        while (r >= 0 && (n = http_stream_read(st, buf, sizeof(buf), 0, cancel_fd, &err)) > 0)
                r = events_feed(&ev, buf, (size_t)n);
        if (r >= 0 && n < 0)
                r = (int)n;
        if (r >= 0)
                r = events_finish(&ev);
        events_release(&ev);
        if (r == -ECANCELED)
                return cli_error("cancelled"), CLI_EXIT_FAILED;
        if (r == -EBADMSG)
                return cli_error("malformed event stream from the server"), CLI_EXIT_FAILED;
        if (r < 0)
                return cli_fail(&err);
        return 0;
}

int cli_remote_tool_stream(const char *url,
                           const char *thread,
                           const char *tool,
                           const char *args_json,
                           int cancel_fd,
                           cli_event_fn *fn,
                           void *userdata)
{
        cleanup_free char *et = http_escape(thread), *en = http_escape(tool);
        cleanup_(http_stream_freep) struct http_stream *st = NULL;
        cleanup_free char *path = NULL;
        struct http_client *h = NULL;
        struct b4_error err = { 0 };
        struct http_req req = { .method = "POST",
                                .content_type = "application/json",
                                .body = args_json,
                                .body_len = strlen(args_json),
                                .timeout_ms = HTTP_NO_TIMEOUT,
                                .accept = "application/x-ndjson" };
        int r;

        if (!et || !en || asprintf(&path, "/threads/%s/tools/%s", et, en) < 0)
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        req.path = path;
        r = http_client_new(url, &h, &err);
        if (r >= 0 && http_client_set_token(h, secure_getenv("B4BOX_TOKEN")) < 0)
                r = b4_error_set(&err, -EINVAL, "$B4BOX_TOKEN cannot be sent in a header");
        if (r >= 0)
                r = http_stream_open(h, &req, cancel_fd, &st, &err);
        if (r >= 0 && http_stream_status(st) != 200)
                r = stream_refused(st, http_stream_status(st));
        else if (r >= 0)
                r = stream_events(st, cancel_fd, fn, userdata);
        else
                r = r == -ECANCELED ? (cli_error("cancelled"), CLI_EXIT_FAILED) : cli_fail(&err);
        st = http_stream_free(st);
        http_client_free(h);
        return r;
}
