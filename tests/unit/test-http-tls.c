/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP client's TLS options (http_client_set_tls()) against `openssl s_server` on
 * 127.0.0.1 with certificates made here by the openssl tool: a CA as a file and as PEM bytes,
 * a client certificate and key as files and as bytes (the server requires one), a wrong CA
 * refused, `insecure` accepted, the refusals of the setter, and HTTP/1.1 kept although the
 * server offers h2 first through ALPN (an h2 connection could not read s_server's answer).
 * The parsed-CA cache (http_curl_trust()): a CA file rewritten is read again (no stale
 * store), and past the cache's 8 CAs libcurl's own parsing takes over, as strict.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/time-util.h"
#include "http/http.h"

static char *tmp;
static pid_t server_pid = -1;
static char url[64];

static const char certs_script[] =
        "set -e; cd \"$1\"; ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
        "for ca in ca other; do openssl req -x509 $ec -keyout $ca.key -out $ca.crt"
        "  -subj /CN=$ca -days 2 2>/dev/null; done;"
        "openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null;"
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext;"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
        "  -out server.crt -days 2 -extfile server.ext 2>/dev/null;"
        "openssl req $ec -keyout client.key -out client.csr -subj /CN=b4box 2>/dev/null;"
        "printf 'extendedKeyUsage=clientAuth\\n' > client.ext;"
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
        "  -out client.crt -days 2 -extfile client.ext 2>/dev/null";

static const char *in_tmp(const char *name)
{
        static char buf[4][1024];
        static int i;

        i = (i + 1) % 4;
        (void)snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmp, name);
        return buf[i];
}

static char *slurp(const char *name, size_t *len)
{
        FILE *f = fopen(in_tmp(name), "re");
        char *buf = calloc(1, 65536);

        assert_non_null(f);
        *len = fread(buf, 1, 65535, f);
        (void)fclose(f);
        return buf;
}

static int free_port(void)
{
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t n = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &n), 0);
        (void)close(fd);
        return ntohs(sa.sin_port);
}

static bool listening(int port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

        (void)close(fd);
        return ok;
}

static int setup(void **state)
{
        char port_s[16], accept_s[32];
        int status, port;
        pid_t pid;

        (void)state;
        tmp = b4_test_tmpdir();
        char *sh_argv[] = { (char *)"sh", (char *)"-c", (char *)certs_script,
                            (char *)"sh", tmp,          NULL };
        assert_int_equal(posix_spawnp(&pid, "sh", NULL, NULL, sh_argv, environ), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        port = free_port();
        (void)snprintf(port_s, sizeof(port_s), "%d", port);
        (void)snprintf(accept_s, sizeof(accept_s), "127.0.0.1:%d", port);
        (void)snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
        char *srv_argv[] = { (char *)"openssl",
                             (char *)"s_server",
                             (char *)"-quiet",
                             (char *)"-accept",
                             accept_s,
                             (char *)"-cert",
                             (char *)in_tmp("server.crt"),
                             (char *)"-key",
                             (char *)in_tmp("server.key"),
                             (char *)"-CAfile",
                             (char *)in_tmp("ca.crt"),
                             (char *)"-Verify",
                             (char *)"1",
                             (char *)"-alpn",
                             (char *)"h2,http/1.1",
                             (char *)"-www",
                             NULL };
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        assert_int_equal(posix_spawnp(&server_pid, "openssl", &fa, NULL, srv_argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        for (uint64_t end = now_msec() + 10000; !listening(port); usleep(20000))
                assert_true(now_msec() < end);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        if (server_pid > 0) {
                (void)kill(server_pid, SIGTERM);
                (void)waitpid(server_pid, NULL, 0);
        }
        b4_test_rmrf(tmp);
        free(tmp);
        return 0;
}

/* One GET / with @tls. Return: the status (> 0) or the error. */
static long get(const struct http_tls *tls)
{
        struct http_client *c = NULL;
        struct http_response resp = { 0 };
        struct http_req req = { .method = "GET", .path = "/", .timeout_ms = 5000 };
        struct b4_error err = { 0 };
        long r;

        assert_int_equal(http_client_new(url, &c, NULL), 0);
        if (tls)
                assert_int_equal(http_client_set_tls(c, tls, &err), 0);
        r = http_request(c, &req, 1 << 20, NULL, &resp, &err);
        if (r == 0)
                r = resp.status;
        http_response_clear(&resp);
        http_client_free(c);
        return r;
}

static void test_files(void **state)
{
        struct http_tls tls = { .ca_file = in_tmp("ca.crt"),
                                .cert_file = in_tmp("client.crt"),
                                .key_file = in_tmp("client.key") };

        (void)state;
        assert_int_equal(get(&tls), 200);
}

static void test_blobs(void **state)
{
        struct http_tls tls = { 0 };
        char *ca = slurp("ca.crt", &tls.ca_pem_len), *cert = slurp("client.crt", &tls.cert_pem_len),
             *key = slurp("client.key", &tls.key_pem_len);

        (void)state;
        tls.ca_pem = ca;
        tls.cert_pem = cert;
        tls.key_pem = key;
        assert_int_equal(get(&tls), 200);
        /* the client copied them: scribbling over ours changes nothing for a client made before */
        free(ca);
        free(cert);
        free(key);
}

static void test_refused(void **state)
{
        struct http_tls no_cert = { .ca_file = in_tmp("ca.crt") };
        struct http_tls wrong_ca = { .ca_file = in_tmp("other.crt"),
                                     .cert_file = in_tmp("client.crt"),
                                     .key_file = in_tmp("client.key") };
        struct http_tls insecure = wrong_ca;

        (void)state;
        assert_int_equal(get(&no_cert), -EIO);  /* the server requires a client certificate */
        assert_int_equal(get(&wrong_ca), -EIO); /* the server's chain is not ours */
        assert_int_equal(get(NULL), -EIO);      /* nor the system's */
        insecure.insecure = true;
        assert_int_equal(get(&insecure), 200);
}

static void write_file(const char *name, const char *data, size_t len)
{
        FILE *f = fopen(in_tmp(name), "we");

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static void test_ca_cache(void **state)
{
        size_t ca_len, other_len;
        char *ca = slurp("ca.crt", &ca_len), *other = slurp("other.crt", &other_len), pem[8192];
        char *rot = strdup(in_tmp("rot.crt")), *cert = strdup(in_tmp("client.crt")),
             *key = strdup(in_tmp("client.key")); /* in_tmp()'s buffers rotate */
        struct http_tls tls = { .ca_file = rot, .cert_file = cert, .key_file = key };

        (void)state;
        write_file("rot.crt", ca, ca_len);
        assert_int_equal(get(&tls), 200);
        write_file("rot.crt", other, other_len); /* rotated: the new CA, not a cached store */
        assert_int_equal(get(&tls), -EIO);
        write_file("rot.crt", ca, ca_len);
        assert_int_equal(get(&tls), 200);
        /* twelve more PEMs of the right CA (a distinct comment line each), then a wrong one:
         * the cache fills up, libcurl parses the rest, and is as strict */
        tls.ca_file = NULL;
        tls.ca_pem = pem;
        for (int i = 0; i < 13; i++) {
                bool right = i < 12;
                int n = snprintf(pem, sizeof(pem), "variant %d\n%.*s", i,
                                 (int)(right ? ca_len : other_len), right ? ca : other);
                tls.ca_pem_len = (size_t)n;
                assert_int_equal(get(&tls), right ? 200 : -EIO);
        }
        free(ca);
        free(other);
        free(rot);
        free(cert);
        free(key);
}

static void test_setter_refusals(void **state)
{
        struct http_client *c = NULL;
        struct b4_error err = { 0 };
        struct http_tls both = { .ca_file = "/x", .ca_pem = "y", .ca_pem_len = 1 };
        struct http_tls half = { .cert_file = "/c" };

        (void)state;
        assert_int_equal(http_client_new(url, &c, NULL), 0);
        assert_int_equal(http_client_set_tls(c, &both, &err), -EINVAL);
        assert_int_equal(http_client_set_tls(c, &half, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "needs its key"));
        http_client_free(c);
        assert_int_equal(http_client_new("http://127.0.0.1:1", &c, NULL), 0);
        assert_int_equal(http_client_set_tls(c, &half, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "not https://"));
        http_client_free(c);
}

static void test_bearer_per_request(void **state)
{
        struct http_client *c = NULL;
        struct http_response resp = { 0 };
        struct http_req req = { .method = "GET", .path = "/", .bearer = "bad\ntoken" };
        struct b4_error err = { 0 };

        (void)state;
        assert_int_equal(http_client_new(url, &c, NULL), 0);
        assert_int_equal(http_request(c, &req, 1024, NULL, &resp, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "control character"));
        http_client_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_files),           cmocka_unit_test(test_blobs),
                cmocka_unit_test(test_refused),         cmocka_unit_test(test_ca_cache),
                cmocka_unit_test(test_setter_refusals), cmocka_unit_test(test_bearer_per_request),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
