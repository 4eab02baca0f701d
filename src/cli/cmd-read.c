/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box read THREAD: the thread's workspace inventory (docs/inspect.md). Through a server
 * (--server URL, else $B4BOX_URL; token $B4BOX_TOKEN) with POST /threads/{id}/workspace/
 * inspect, reading at most 64 MiB of answer and refusing one about another thread or
 * another source digest; or, without a server, locally through the runtime over the state
 * dir (the thread's root ancestor's workspace and its recorded digests, as a server reads
 * them; the same answer, checked the same way). URLs: unix:/path/to.sock or http://host:port.
 */

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"
#include "b4box/runtime.h"

#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "cli.h"

#define MAX_HEADER_BYTES (64u * 1024u)

struct read_args {
        const char *thread;
        const char *root;
        char **exclude; /* strv */
        const char *expect_source;
        const char *server;
        bool json, consistent;
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
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                if (c == 'r')
                        a->root = optarg;
                else if (c == 'x' && strv_extend(&a->exclude, optarg) < 0)
                        return -ENOMEM;
                else if (c == 's')
                        a->expect_source = optarg;
                else if (c == 'S')
                        a->server = optarg;
                else if (c == 'j')
                        a->json = true;
                else if (c == 'c')
                        a->consistent = true;
                else if (c != 'x')
                        return -EINVAL;
        }
        if (optind != argc - 1) {
                cli_error("read needs exactly one THREAD");
                return -EINVAL;
        }
        a->thread = argv[optind];
        return 0;
}

/* ---- JSON text, by hand (the CLI speaks the public API, not the json layer) ---- */

static int add_json_string(struct strbuf *sb, const char *s)
{
        int r = strbuf_addc(sb, '"');

        for (const unsigned char *c = (const unsigned char *)s; r >= 0 && *c; c++) {
                if (*c == '"' || *c == '\\')
                        r = strbuf_addf(sb, "\\%c", *c);
                else if (*c < 0x20)
                        r = strbuf_addf(sb, "\\u%04x", *c);
                else
                        r = strbuf_addc(sb, (char)*c);
        }
        return r < 0 ? r : strbuf_addc(sb, '"');
}

static int request_body(const struct read_args *a, struct strbuf *sb)
{
        int r = strbuf_adds(sb, "{");

        if (r >= 0 && a->root) {
                r = strbuf_adds(sb, "\"root\":");
                if (r >= 0)
                        r = add_json_string(sb, a->root);
        }
        if (r >= 0 && a->exclude) {
                r = strbuf_adds(sb, a->root ? ",\"excludeRootDirectories\":["
                                            : "\"excludeRootDirectories\":[");
                STRV_FOREACH (x, a->exclude) {
                        if (r >= 0 && x != a->exclude)
                                r = strbuf_addc(sb, ',');
                        if (r >= 0)
                                r = add_json_string(sb, *x);
                }
                if (r >= 0)
                        r = strbuf_addc(sb, ']');
        }
        if (r >= 0 && a->consistent)
                r = strbuf_adds(sb, a->root || a->exclude ? ",\"consistent\":true"
                                                          : "\"consistent\":true");
        return r < 0 ? r : strbuf_addc(sb, '}');
}

/* ---- a small HTTP/1.1 client: one request, Connection: close, bounded answer ---- */

static int connect_unix(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        cleanup_close int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int connect_tcp(const char *hostport)
{
        cleanup_free char *host = strdup(hostport);
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
        char *colon;
        int fd, r;

        if (!host)
                return -ENOMEM;
        colon = strrchr(host, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        if (getaddrinfo(host[0] == '[' ? host + 1 : host, colon + 1, &hints, &ai) != 0 || !ai)
                return -EHOSTUNREACH;
        if (host[0] == '[' && colon[-1] == ']')
                colon[-1] = '\0';
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        r = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : fd;
        if (r < 0 && fd >= 0)
                (void)close(fd);
        freeaddrinfo(ai);
        return r;
}

static int connect_url(const char *url)
{
        if (strncmp(url, "unix:", 5) == 0)
                return connect_unix(url + 5);
        if (strncmp(url, "http://", 7) == 0) {
                char hp[512];
                size_t n = strcspn(url + 7, "/");
                if (n >= sizeof(hp))
                        return -EINVAL;
                memcpy(hp, url + 7, n);
                hp[n] = '\0';
                return connect_tcp(hp);
        }
        return -EINVAL;
}

static int add_path(struct strbuf *sb, const char *thread)
{
        int r = strbuf_adds(sb, "POST /threads/");

        for (const unsigned char *c = (const unsigned char *)thread; r >= 0 && *c; c++)
                r = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                    (*c >= '0' && *c <= '9') || strchr("-._~", *c)
                            ? strbuf_addc(sb, (char)*c)
                            : strbuf_addf(sb, "%%%02X", *c);
        return r < 0 ? r : strbuf_adds(sb, "/workspace/inspect HTTP/1.1\r\n");
}

/* The Host header: the URL's host:port (a TCP server without threadAccess checks it). */
static void url_authority(const char *url, char *buf, size_t size)
{
        size_t n = strncmp(url, "http://", 7) == 0 ? strcspn(url + 7, "/") : 0;

        if (n == 0 || n >= size)
                (void)snprintf(buf, size, "localhost");
        else
                (void)snprintf(buf, size, "%.*s", (int)n, url + 7);
}

static int send_request(int fd, const char *url, const char *thread, const char *body)
{
        char host[512];
        const char *token = secure_getenv("B4BOX_TOKEN");
        struct strbuf sb;
        int r;

        url_authority(url, host, sizeof(host));
        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = add_path(&sb, thread);
        if (r >= 0)
                r = strbuf_addf(&sb,
                                "Host: %s\r\nContent-Type: application/json\r\n"
                                "Content-Length: %zu\r\nConnection: close\r\n",
                                host, strlen(body));
        if (r >= 0 && token)
                r = strbuf_addf(&sb, "Authorization: Bearer %s\r\n", token);
        if (r >= 0)
                r = strbuf_addf(&sb, "\r\n%s", body);
        if (r >= 0)
                r = write_all(fd, sb.buf, sb.len);
        if (sb.buf)
                explicit_bzero(sb.buf, sb.len);
        strbuf_release(&sb);
        return r;
}

/* Decode a chunked body in place. Return: 0 or -EBADMSG. */
static int dechunk(char *body, size_t len, size_t *ret_len)
{
        size_t in = 0, out = 0;

        for (;;) {
                char *end = NULL;
                unsigned long n = strtoul(body + in, &end, 16);
                char *crlf = memmem(body + in, len - in, "\r\n", 2);
                if (!crlf || end == body + in)
                        return -EBADMSG;
                in = (size_t)(crlf - body) + 2;
                if (n == 0)
                        break;
                if (n > len - in)
                        return -EBADMSG;
                memmove(body + out, body + in, n);
                out += n;
                in += n + 2;
                if (in > len)
                        return -EBADMSG;
        }
        body[out] = '\0';
        *ret_len = out;
        return 0;
}

struct http_answer {
        unsigned status;
        char *raw; /* owned; the body starts at body */
        char *body;
        size_t body_len;
};

static int parse_answer(struct http_answer *a, size_t len)
{
        char *sep = memmem(a->raw, len, "\r\n\r\n", 4);
        char *line_end;

        if (!sep || (size_t)(sep - a->raw) > MAX_HEADER_BYTES ||
            sscanf(a->raw, "HTTP/1.%*c %u", &a->status) != 1)
                return -EBADMSG;
        *sep = '\0';
        a->body = sep + 4;
        a->body_len = len - (size_t)(a->body - a->raw);
        for (char *h = strstr(a->raw, "\r\n"); h; h = line_end) {
                h += 2;
                line_end = strstr(h, "\r\n");
                if (strncasecmp(h, "transfer-encoding:", 18) == 0 && strcasestr(h, "chunked") &&
                    (!line_end || strcasestr(h, "chunked") < line_end))
                        return dechunk(a->body, a->body_len, &a->body_len);
        }
        return 0;
}

static int http_inspect(const char *url,
                        const char *thread,
                        const char *body,
                        struct http_answer *a)
{
        cleanup_close int fd = connect_url(url);
        size_t len = 0;
        int r;

        if (fd < 0)
                return fd;
        r = send_request(fd, url, thread, body);
        if (r >= 0)
                (void)shutdown(fd, SHUT_WR);
        if (r >= 0)
                r = read_full_fd(fd, B4_INSPECT_RESPONSE_MAX_BYTES + MAX_HEADER_BYTES, &a->raw,
                                 &len);
        if (r >= 0)
                r = parse_answer(a, len);
        return r;
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
}

static int over_server(const struct read_args *a, const char *url)
{
        struct http_answer ans = { 0 };
        struct b4_inspect_response res = { 0 };
        struct b4_error err = { 0 };
        struct strbuf body;
        int r;

        strbuf_init(&body, STRBUF_UNLIMITED);
        r = request_body(a, &body);
        if (r >= 0)
                r = http_inspect(url, a->thread, body.buf, &ans);
        strbuf_release(&body);
        if (r == -EFBIG)
                cli_error("response_too_large: the answer exceeds %u bytes",
                          B4_INSPECT_RESPONSE_MAX_BYTES);
        else if (r < 0)
                cli_error("cannot ask %s: %s", url, strerror(-r));
        if (r >= 0 && (ans.status < 200 || ans.status > 299)) {
                char *code = NULL, *msg = NULL;
                if (b4_inspect_error_parse(ans.body, ans.body_len, &code, &msg) >= 0)
                        cli_error("%s: %s (HTTP %u)", code, msg, ans.status);
                else
                        cli_error("HTTP %u from %s", ans.status, url);
                free(code);
                free(msg);
                r = -EIO;
        } else if (r >= 0) {
                r = b4_inspect_response_parse(ans.body, ans.body_len, a->thread, a->expect_source,
                                              &res, &err);
                if (r < 0)
                        (void)cli_fail(&err);
        }
        if (r >= 0 && a->json)
                printf("%.*s\n", (int)ans.body_len, ans.body);
        else if (r >= 0)
                print_human(a->thread, &res);
        b4_inspect_response_clear(&res);
        free(ans.raw);
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
                return CLI_USAGE;
        }
        url = a.server ? a.server : secure_getenv("B4BOX_URL");
        r = url && *url ? over_server(&a, url) : locally(&a, ctx);
        strv_free(a.exclude);
        return r;
}
