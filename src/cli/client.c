/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl client for --server: http(s) URLs, or unix:/path for a local socket. */

#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/strbuf.h"
#include "cli.h"
#include "json/json.h"

const char *cli_server_url(const char *flag)
{
        const char *env = secure_getenv("B4BOX_URL");

        return flag ? flag : (env && *env ? env : NULL);
}

static size_t on_data(char *ptr, size_t size, size_t n, void *ud)
{
        return strbuf_add(ud, ptr, size * n) < 0 ? 0 : size * n;
}

static int setup(
        CURL *h, const struct cli_client *c, const char *method, const char *path, char **ret_url)
{
        const char *base = c->url;

        if (strncmp(base, "unix:", 5) == 0) {
                (void)curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, base + 5);
                base = "http://b4box";
        }
        if (asprintf(ret_url, "%s%s", base, path) < 0)
                return -ENOMEM;
        (void)curl_easy_setopt(h, CURLOPT_URL, *ret_url);
        (void)curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        (void)curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        return 0;
}

static int perform(CURL *h, const struct cli_client *c, struct strbuf *sb, struct b4_error *err)
{
        CURLcode rc = curl_easy_perform(h);

        if (rc == CURLE_WRITE_ERROR)
                return b4_error_set(err, -EFBIG, "response from %s is larger than %zu bytes",
                                    c->url, sb->max);
        if (rc != CURLE_OK)
                return b4_error_set(err, rc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO,
                                    "cannot reach the server at %s: %s", c->url,
                                    curl_easy_strerror(rc));
        return 0;
}

int cli_http_request(const struct cli_client *c,
                     const struct cli_http_req *req,
                     struct cli_http_resp *ret,
                     struct b4_error *err)
{
        struct curl_slist *hdrs = NULL;
        cleanup_free char *url = NULL, *auth = NULL;
        struct strbuf sb;
        CURL *h = curl_easy_init();
        curl_off_t retry = 0;
        int r;

        if (!h)
                return -ENOMEM;
        strbuf_init(&sb, req->max_response ? req->max_response : CLIENT_MAX_RESPONSE);
        r = setup(h, c, req->method, req->path, &url);
        if (r >= 0 && c->token && asprintf(&auth, "Authorization: Bearer %s", c->token) < 0)
                r = -ENOMEM;
        if (r < 0) {
                curl_easy_cleanup(h);
                return r;
        }
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        if (auth)
                hdrs = curl_slist_append(hdrs, auth);
        (void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        if (req->body) {
                (void)curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
                (void)curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
        }
        (void)curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        (void)curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
        r = perform(h, c, &sb, err);
        if (r >= 0) {
                (void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
                (void)curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry);
                ret->retry_after = (long)retry;
        }
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(h);
        if (r < 0) {
                strbuf_release(&sb);
                return r;
        }
        return strbuf_detach(&sb, &ret->body, NULL);
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

char *cli_path_escape(const char *s)
{
        char *e = curl_easy_escape(NULL, s, 0);
        char *r = e ? strdup(e) : NULL;

        curl_free(e);
        return r;
}

int cli_remote_tool(const char *url,
                    const char *thread,
                    const char *tool,
                    const char *args_json,
                    char **ret_json)
{
        struct cli_client c = { .url = url, .token = secure_getenv("B4BOX_TOKEN") };
        cleanup_free char *et = cli_path_escape(thread), *en = cli_path_escape(tool);
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
