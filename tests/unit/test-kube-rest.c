/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kube client's REST side against a scripted loopback server (kube-server.c): Status
 * bodies to errnos (the table of kube.h), JSON in and out, the bearer token per request
 * and its rotation, a 401 re-reading the token once, Retry-After on 429/503 (bounded), the
 * head timeout and cancel, paginated lists, paths, and the token bucket.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube-server.h"
#include "kube/kube-internal.h"
#include "kube/kube.h"

static char *tmp;

static int setup(void **state)
{
        (void)state;
        tmp = b4_test_tmpdir();
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        b4_test_rmrf(tmp);
        free(tmp);
        return 0;
}

static struct kube_client *client_for(const struct ks *s,
                                      const char *token_file,
                                      double qps,
                                      unsigned burst)
{
        struct kube_config cfg = { .server = (char *)s->url,
                                   .namespace = (char *)"ns",
                                   .token_file = (char *)token_file,
                                   .token = (char *)"static",
                                   .qps = qps,
                                   .burst = burst };
        struct kube_client *c = NULL;
        struct b4_error err = { 0 };

        if (token_file)
                cfg.token = NULL;
        assert_int_equal(kube_client_new(&cfg, &c, &err), 0);
        return c;
}

static const char status_body[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}";

static char *status_json(int code, const char *reason, const char *message)
{
        char *b = NULL;

        assert_true(asprintf(&b, status_body, message, reason, code) > 0);
        return b;
}

static void test_status_table(void **state)
{
        static const struct {
                long code;
                const char *reason;
                int want;
        } rows[] = {
                { 404, "NotFound", -ENOENT },
                { 409, "AlreadyExists", -EEXIST },
                { 409, "Conflict", -EAGAIN },
                { 422, "Invalid", -EINVAL },
                { 400, "BadRequest", -EINVAL },
                { 403, "Forbidden", -EACCES },
                { 401, "Unauthorized", -EPERM },
                { 410, "Expired", -ESTALE },
                { 410, "Gone", -ESTALE },
                { 429, "TooManyRequests", -EBUSY },
                { 500, "InternalError", -EIO },
                { 503, "ServiceUnavailable", -EIO },
                { 504, "Timeout", -ETIMEDOUT },
                { 500, "Timeout", -ETIMEDOUT },
                { 405, "MethodNotAllowed", -EOPNOTSUPP },
                { 413, "RequestEntityTooLarge", -EFBIG },
        };
        struct b4_error err;

        (void)state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char *b = status_json((int)rows[i].code, rows[i].reason, "pods \\\"x\\\" says so");
                char want[256];
                err = (struct b4_error){ 0 };
                assert_int_equal(kube_status_decode(rows[i].code, b, strlen(b), &err),
                                 rows[i].want);
                (void)snprintf(want, sizeof(want), "pods \"x\" says so (%ld %s)", rows[i].code,
                               rows[i].reason);
                assert_string_equal(err.msg, want);
                free(b);
        }
        /* not a Status: the HTTP status alone */
        err = (struct b4_error){ 0 };
        assert_int_equal(kube_status_decode(502, "<html>bad gateway</html>", 24, &err), -EIO);
        assert_string_equal(err.msg, "the API server answered 502");
        /* JSON but another kind: its fields are not believed */
        assert_int_equal(kube_status_decode(409, "{\"kind\":\"Pod\",\"reason\":\"AlreadyExists\"}",
                                            40, &err),
                         -EAGAIN);
        /* control characters from the server never reach the message */
        char *b = status_json(403, "Forbidden", "evil\\u001b[31m\\nline");
        assert_int_equal(kube_status_decode(403, b, strlen(b), &err), -EACCES);
        assert_null(strchr(err.msg, '\033'));
        assert_null(strchr(err.msg, '\n'));
        free(b);
        /* NULL body, NULL err */
        assert_int_equal(kube_status_decode(404, NULL, 0, NULL), -ENOENT);
}

static void test_json_round_trip(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct jv *obj = jv_pack("{s:s}", "kind", "Pod"), *got = NULL;
        struct b4_error err = { 0 };

        (void)state;
        ks_add(&s,
               ks_resp(201, "Content-Type: application/json\r\n",
                       "{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"7\"}}"),
               false, NULL);
        ks_add(&s, ks_resp(200, NULL, "{\"kind\":\"Pod\"}"), false, NULL);
        ks_add(&s, ks_resp(200, NULL, "not json"), false, NULL);
        ks_add(&s, ks_resp(200, NULL, ""), false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        char *path = kube_path("v1", "ns", "pods", NULL, NULL);
        assert_int_equal(kube_create(c, path, obj, &got, &err), 0);
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(got, "metadata"), "resourceVersion")), "7");
        got = jv_unref(got);
        assert_int_equal(kube_patch(c, "/api/v1/namespaces/ns/pods/p", obj, NULL, &err), 0);
        assert_int_equal(kube_get(c, "/api/v1/namespaces/ns/pods/p", &got, &err), -EPROTO);
        assert_null(got);
        assert_int_equal(
                kube_delete(c, "/api/v1/namespaces/ns/pods/p", "gracePeriodSeconds=0", &err), 0);
        ks_stop(&s);
        /* what went on the wire */
        assert_non_null(strstr(s.requests[0], "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\n"));
        assert_non_null(strstr(s.requests[0], "Content-Type: application/json\r\n"));
        assert_non_null(strstr(s.requests[0], "Accept: application/json\r\n"));
        assert_non_null(strstr(s.requests[0], "Authorization: Bearer static\r\n"));
        assert_non_null(strstr(s.requests[0], "\r\n\r\n{\"kind\":\"Pod\"}"));
        assert_non_null(strstr(s.requests[1], "PATCH /api/v1/namespaces/ns/pods/p HTTP/1.1"));
        assert_non_null(strstr(s.requests[1], "Content-Type: application/merge-patch+json\r\n"));
        assert_non_null(strstr(s.requests[3], "DELETE /api/v1/namespaces/ns/pods/p?"
                                              "gracePeriodSeconds=0 HTTP/1.1"));
        free(path);
        jv_unref(obj);
        kube_client_free(c);
}

static void test_errors_named(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };

        (void)state;
        ks_add(&s,
               ks_resp(409, NULL,
                       "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\","
                       "\"message\":\"pods \\\"p\\\" already exists\"}"),
               false, NULL);
        ks_add(&s,
               ks_resp(404, NULL,
                       "{\"kind\":\"Status\",\"reason\":\"NotFound\","
                       "\"message\":\"pods \\\"q\\\" not found\"}"),
               false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        assert_int_equal(kube_create(c, "/api/v1/namespaces/ns/pods", NULL, NULL, &err), -EEXIST);
        assert_string_equal(err.msg, "POST /api/v1/namespaces/ns/pods: pods \"p\" already exists "
                                     "(409 AlreadyExists)");
        err = (struct b4_error){ 0 };
        assert_int_equal(kube_get(c, "/api/v1/namespaces/ns/pods/q", NULL, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "pods \"q\" not found (404 NotFound)"));
        ks_stop(&s);
        kube_client_free(c);
}

/* ---- tokens ---- */

static char token_path[1024];

static void write_token(const char *value)
{
        char next[1100];

        /* a new file renamed over the old one: a new inode, as the kubelet's swap gives */
        (void)snprintf(next, sizeof(next), "%s.next", token_path);
        assert_int_equal(b4_test_write(next, value), 0);
        assert_int_equal(rename(next, token_path), 0);
}

static void rotate_hook(struct ks *s, size_t i)
{
        (void)s;
        (void)i;
        write_token("token-new\n");
}

static void test_token_401_reread(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };

        (void)state;
        (void)snprintf(token_path, sizeof(token_path), "%s/token", tmp);
        write_token("token-old\n");
        /* the server rotates the token and answers 401: the client re-reads once, retries */
        ks_add(&s, ks_resp(401, NULL, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\"}"), false,
               rotate_hook);
        ks_add(&s, ks_resp(200, NULL, "{}"), false, NULL);
        /* twice 401: one retry only, then -EPERM */
        ks_add(&s, ks_resp(401, NULL, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\"}"), false,
               NULL);
        ks_add(&s, ks_resp(401, NULL, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\"}"), false,
               NULL);
        ks_add(&s, ks_resp(200, NULL, "{}"), false, NULL);
        ks_start(&s);
        c = client_for(&s, token_path, -1, 0);
        assert_int_equal(kube_get(c, "/version", NULL, &err), 0);
        assert_non_null(strstr(s.requests[0], "Authorization: Bearer token-old\r\n"));
        assert_non_null(strstr(s.requests[1], "Authorization: Bearer token-new\r\n"));
        assert_int_equal(kube_get(c, "/version", NULL, &err), -EPERM);
        assert_int_equal(ks_served(&s), 4);
        assert_non_null(strstr(err.msg, "401 Unauthorized"));
        /* rotation without a 401: the changed file is seen by the next request */
        write_token("token-third");
        assert_int_equal(kube_get(c, "/version", NULL, &err), 0);
        ks_stop(&s);
        assert_non_null(strstr(s.requests[4], "Authorization: Bearer token-third\r\n"));
        kube_client_free(c);
}

static void test_token_file_problems(void **state)
{
        struct kube_config cfg = { .server = (char *)"http://127.0.0.1:9",
                                   .namespace = (char *)"n" };
        struct kube_client *c = NULL;
        struct b4_error err = { 0 };
        char *tok = NULL;

        (void)state;
        (void)snprintf(token_path, sizeof(token_path), "%s/missing", tmp);
        cfg.token_file = token_path;
        assert_int_equal(kube_client_new(&cfg, &c, &err), -ENOENT);
        assert_non_null(strstr(err.msg, "missing"));
        (void)snprintf(token_path, sizeof(token_path), "%s/ctl", tmp);
        assert_int_equal(b4_test_write(token_path, "ab\001cd"), 0);
        assert_int_equal(kube_client_new(&cfg, &c, &err), 0);
        assert_int_equal(kube_client_token(c, &tok, &err), -EINVAL);
        assert_null(tok);
        assert_int_equal(b4_test_write(token_path, "\n"), 0);
        kube_client_token_invalidate(c);
        assert_int_equal(kube_client_token(c, &tok, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "is empty"));
        c = kube_client_free(c);
        /* a static token */
        cfg.token_file = NULL;
        cfg.token = (char *)"abc";
        assert_int_equal(kube_client_new(&cfg, &c, &err), 0);
        assert_int_equal(kube_client_token(c, &tok, &err), 0);
        assert_string_equal(tok, "abc");
        free(tok);
        kube_client_free(c);
}

/* ---- Retry-After ---- */

static void test_retry_after(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        uint64_t t0;

        (void)state;
        ks_add(&s,
               ks_resp(429, "Retry-After: 1\r\n",
                       "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}"),
               false, NULL);
        ks_add(&s, ks_resp(503, "Retry-After: 0\r\n", ""), false, NULL);
        ks_add(&s, ks_resp(200, NULL, "{}"), false, NULL);
        /* no Retry-After: not retried */
        ks_add(&s, ks_resp(503, NULL, ""), false, NULL);
        /* a Retry-After past the timeout: not waited for */
        ks_add(&s, ks_resp(429, "Retry-After: 5\r\n", ""), false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        t0 = now_msec();
        assert_int_equal(kube_get(c, "/a", NULL, &err), 0);
        assert_true(now_msec() - t0 >= 990);
        assert_int_equal(ks_served(&s), 3);
        assert_int_equal(kube_get(c, "/b", NULL, &err), -EIO);
        assert_int_equal(ks_served(&s), 4);
        struct kube_req req = {
                .method = "GET", .path = "/c", .timeout_ms = 1000, .cancel_fd = -EBADF
        };
        struct kube_reply reply = { 0 };
        t0 = now_msec();
        assert_int_equal(kube_request(c, &req, &reply, &err), -EBUSY);
        assert_true(now_msec() - t0 < 900);
        ks_stop(&s);
        kube_client_free(c);
}

static void test_retry_bound(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };

        (void)state;
        for (unsigned i = 0; i <= KUBE_RETRIES_MAX + 1; i++)
                ks_add(&s, ks_resp(429, "Retry-After: 0\r\n", ""), false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        assert_int_equal(kube_get(c, "/a", NULL, &err), -EBUSY);
        assert_int_equal(ks_served(&s), KUBE_RETRIES_MAX + 1);
        ks_stop(&s);
        kube_client_free(c);
}

/* ---- timeouts and cancel ---- */

static void test_timeout_and_cancel(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        struct kube_reply reply = { 0 };
        int fds[2];
        uint64_t t0;

        (void)state;
        ks_add(&s, strdup(""), true, NULL);
        ks_add(&s, strdup(""), true, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        struct kube_req req = {
                .method = "GET", .path = "/slow", .timeout_ms = 300, .cancel_fd = -EBADF
        };
        t0 = now_msec();
        assert_int_equal(kube_request(c, &req, &reply, &err), -ETIMEDOUT);
        assert_true(now_msec() - t0 < 3000);
        assert_int_equal(pipe(fds), 0);
        assert_int_equal(write(fds[1], "x", 1), 1);
        req.cancel_fd = fds[0];
        req.timeout_ms = 10000;
        t0 = now_msec();
        assert_int_equal(kube_request(c, &req, &reply, &err), -ECANCELED);
        assert_true(now_msec() - t0 < 3000);
        ks_stop(&s);
        (void)close(fds[0]);
        (void)close(fds[1]);
        kube_client_free(c);
}

/* ---- lists and paths ---- */

static void test_list_pages(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        struct jv *items = NULL;
        char *rv = NULL;

        (void)state;
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\","
                       "\"continue\":\"tok/1\"},\"items\":[{\"n\":1},{\"n\":2}]}"),
               false, NULL);
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\"},"
                       "\"items\":[{\"n\":3}]}"),
               false, NULL);
        ks_add(&s, ks_resp(200, NULL, "{\"kind\":\"PodList\",\"items\":{}}"), false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, -1, 0);
        assert_int_equal(kube_list(c, "/api/v1/namespaces/ns/pods", "b4box.io/scope=ab,x in (1,2)",
                                   NULL, &items, &rv, &err),
                         0);
        assert_int_equal(jv_array_size(items), 3);
        assert_string_equal(rv, "100");
        assert_non_null(strstr(s.requests[0],
                               "GET /api/v1/namespaces/ns/pods?limit=500&labelSelector="
                               "b4box.io%2Fscope%3Dab%2Cx%20in%20%281%2C2%29 HTTP/1.1"));
        assert_non_null(strstr(s.requests[1], "&continue=tok%2F1 HTTP/1.1"));
        assert_int_equal(kube_list(c, "/x", NULL, NULL, NULL, NULL, &err), -EPROTO);
        ks_stop(&s);
        jv_unref(items);
        free(rv);
        kube_client_free(c);
}

static void test_paths(void **state)
{
        char *p;

        (void)state;
        p = kube_path("v1", "b4-sandboxes", "pods", "b4-sbx-1", "exec");
        assert_string_equal(p, "/api/v1/namespaces/b4-sandboxes/pods/b4-sbx-1/exec");
        free(p);
        p = kube_path("networking.k8s.io/v1", "ns", "networkpolicies", NULL, NULL);
        assert_string_equal(p, "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies");
        free(p);
        p = kube_path("authorization.k8s.io/v1", NULL, "selfsubjectaccessreviews", NULL, NULL);
        assert_string_equal(p, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
        free(p);
        p = kube_path("v1", "a/b", "pods", "../x", NULL);
        assert_string_equal(p, "/api/v1/namespaces/a%2Fb/pods/..%2Fx");
        free(p);
}

/* ---- the token bucket ---- */

static void test_bucket(void **state)
{
        struct kube_bucket b;
        uint64_t t = 1000000;

        (void)state;
        kube_bucket_init(&b, 50, 100, t);
        for (int i = 0; i < 100; i++)
                assert_int_equal(kube_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_bucket_reserve(&b, t), 20000); /* one token per 20 ms */
        assert_int_equal(kube_bucket_reserve(&b, t), 40000); /* queued behind the last */
        /* two seconds later: 100 tokens came, 2 of them already promised */
        t += 2000000;
        for (int i = 0; i < 98; i++)
                assert_int_equal(kube_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_bucket_reserve(&b, t), 20000);
        /* a long idle fills it to the burst, not beyond */
        t += 60000000;
        for (int i = 0; i < 100; i++)
                assert_int_equal(kube_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_bucket_reserve(&b, t), 20000);
        kube_bucket_release(&b);
        /* unlimited */
        kube_bucket_init(&b, -1, 0, t);
        for (int i = 0; i < 1000; i++)
                assert_int_equal(kube_bucket_reserve(&b, t), 0);
        kube_bucket_release(&b);
}

static void test_bucket_end_to_end(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        uint64_t t0;

        (void)state;
        for (int i = 0; i < 4; i++)
                ks_add(&s, ks_resp(200, NULL, "{}"), false, NULL);
        ks_start(&s);
        c = client_for(&s, NULL, 10, 1); /* 10 per second, burst 1: 100 ms apart */
        t0 = now_msec();
        for (int i = 0; i < 4; i++)
                assert_int_equal(kube_get(c, "/x", NULL, &err), 0);
        assert_true(now_msec() - t0 >= 290);
        ks_stop(&s);
        kube_client_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_table),
                cmocka_unit_test(test_json_round_trip),
                cmocka_unit_test(test_errors_named),
                cmocka_unit_test(test_token_401_reread),
                cmocka_unit_test(test_token_file_problems),
                cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_retry_bound),
                cmocka_unit_test(test_timeout_and_cancel),
                cmocka_unit_test(test_list_pages),
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_bucket),
                cmocka_unit_test(test_bucket_end_to_end),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
