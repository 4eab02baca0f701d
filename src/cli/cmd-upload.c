/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box upload BUNDLE.json [--server URL]: stage a source bundle on a server (reference §6.3).
 *
 * The bundle is verified locally first (the same rules and digest the server applies), then
 * its canonical JSON is PUT to /workspace/sources/<digest>. Prints "<digest> created" (201)
 * or "<digest> held" (200). An answer naming another digest is refused. A 429 (another
 * upload in progress) is retried after its Retry-After (1 to 5 s), at most UPLOAD_ATTEMPTS
 * times. The response is read up to UPLOAD_RESPONSE_MAX bytes.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/bundle.h"

#include "base/fd-util.h"
#include "base/macro.h"
#include "cli.h"
#include "client.h"
#include "json/json.h"

#define UPLOAD_FILE_MAX     (96u * 1024u * 1024u)
#define UPLOAD_RESPONSE_MAX (64u * 1024u)
#define UPLOAD_ATTEMPTS     5
#define UPLOAD_RETRY_MAX_S  5

/* Read and verify @path; *ret is the canonical JSON to send, *ret_digest its digest. */
static int load_bundle(const char *path, char **ret, size_t *ret_len, char ret_digest[65])
{
        cleanup_free char *text = NULL;
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };
        size_t len = 0;
        int r;

        r = read_file_at(AT_FDCWD, path, UPLOAD_FILE_MAX, &text, &len);
        if (r < 0) {
                cli_error("cannot read '%s': %s", path, strerror(-r));
                return CLI_EXIT_FAILED;
        }
        r = b4_bundle_parse(text, len, &b, &err);
        if (r >= 0)
                r = b4_bundle_format(b, ret, ret_len, &err);
        if (r >= 0)
                memcpy(ret_digest, b->digest, 65);
        b4_bundle_free(b);
        if (r < 0) {
                cli_error("%s: %s", path, err.msg[0] ? err.msg : strerror(-r));
                return CLI_EXIT_FAILED;
        }
        return CLI_EXIT_OK;
}

/* 200/201: the answer must name our digest. */
static int report(const struct cli_http_resp *resp, const char *digest, bool json)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const char *d, *status;

        if (jv_parse(resp->body, strlen(resp->body), &v, NULL) < 0) {
                cli_error("the server's answer is not JSON");
                return CLI_EXIT_FAILED;
        }
        d = jv_string(jv_object_get(v, "digest"));
        status = jv_string(jv_object_get(v, "status"));
        if (!d || strcmp(d, digest) != 0) {
                cli_error("the server answered for digest %s, not %s", d ? d : "(none)", digest);
                return CLI_EXIT_FAILED;
        }
        if (!status || strcmp(status, resp->status == 201 ? "created" : "held") != 0) {
                cli_error("unexpected answer from the server (HTTP %ld)", resp->status);
                return CLI_EXIT_FAILED;
        }
        if (json)
                printf("{\"digest\": \"%s\", \"status\": \"%s\"}\n", digest, status);
        else
                printf("%s %s\n", digest, status);
        return CLI_EXIT_OK;
}

static int put(
        const struct cli_client *c, const char *body, size_t len, const char *digest, bool json)
{
        cleanup_free char *path = NULL;
        struct cli_http_resp resp = { 0 };
        struct b4_error err = { 0 };
        int rc = CLI_EXIT_FAILED;

        if (asprintf(&path, "/workspace/sources/%s", digest) < 0)
                return CLI_EXIT_FAILED;
        struct cli_http_req req = { .method = "PUT",
                                    .path = path,
                                    .body = body,
                                    .len = len,
                                    .max_response = UPLOAD_RESPONSE_MAX };
        for (int attempt = 1; attempt <= UPLOAD_ATTEMPTS; attempt++) {
                free(resp.body);
                resp = (struct cli_http_resp){ 0 };
                if (cli_http_request(c, &req, &resp, &err) < 0)
                        return cli_fail(&err);
                if (resp.status != 429 || attempt == UPLOAD_ATTEMPTS)
                        break;
                long wait = resp.retry_after < 1 ? 1 : resp.retry_after;
                (void)sleep((unsigned)(wait > UPLOAD_RETRY_MAX_S ? UPLOAD_RETRY_MAX_S : wait));
        }
        if (resp.status == 200 || resp.status == 201)
                rc = report(&resp, digest, json);
        else
                rc = cli_http_fail(resp.status, resp.body);
        free(resp.body);
        return rc;
}

int cmd_upload(int argc, char **argv, const struct cli_ctx *ctx)
{
        static const struct option opts[] = { { "server", required_argument, NULL, 's' },
                                              { "json", no_argument, NULL, 'j' },
                                              {} };
        bool json = false;
        cleanup_free char *body = NULL;
        const char *server = NULL;
        char digest[65];
        size_t len = 0;
        int c, rc;

        optind = 1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                if (c == 'j')
                        json = true;
                else if (c == 's')
                        server = optarg;
                else
                        return CLI_USAGE;
        }
        if (argc - optind != 1) {
                cli_error("upload needs exactly one BUNDLE.json");
                return CLI_USAGE;
        }
        struct cli_client cl = { .url = cli_server_url(server),
                                 .token = secure_getenv("B4BOX_TOKEN") };
        if (!cl.url) {
                cli_error("upload needs a server: --server URL or B4BOX_URL");
                return CLI_USAGE;
        }
        rc = load_bundle(argv[optind], &body, &len, digest);
        if (rc != CLI_EXIT_OK)
                return rc;
        return put(&cl, body, len, digest, json);
}
