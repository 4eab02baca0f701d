/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches: the NDJSON parser fed hostile input (any split, blank lines, unknown types,
 * non-objects, a line over the cap, ERROR events with 410 and others, a stopping callback)
 * and kube_watch() against the scripted loopback server (the request it sends, chunked
 * bodies, resourceVersion tracking, 410 as the HTTP status, cancel).
 */

#include <errno.h>
#include <pthread.h>
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

struct seen {
        int n;
        enum kube_event_type types[16];
        char names[16][32];
        int stop_at;  /* return -EINTR on this event (1-based); 0 = never */
        int cancel_w; /* > 0: written on every event (a cancel mid-stream) */
};

static int on_event(enum kube_event_type type, struct jv *object, void *userdata)
{
        struct seen *s = userdata;
        const char *name = jv_string(jv_object_get(jv_object_get(object, "metadata"), "name"));

        if (s->n < 16) {
                s->types[s->n] = type;
                (void)snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name ? name : "");
        }
        s->n++;
        if (s->cancel_w > 0)
                assert_int_equal(write(s->cancel_w, "x", 1), 1);
        return s->stop_at && s->n == s->stop_at ? -EINTR : 0;
}

static const char events[] =
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
        "\"resourceVersion\":\"11\"}}}\n"
        "\r\n"
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
        "\"resourceVersion\":\"12\"},\"status\":{\"phase\":\"Running\"}}}\r\n"
        "\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
        "\"resourceVersion\":\"15\"}}}\n"
        "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
        "\"resourceVersion\":\"16\"}}}";

static void check_events(const struct seen *s, const struct kube_watch_parser *p)
{
        assert_int_equal(s->n, 4);
        assert_int_equal(s->types[0], KUBE_EVENT_ADDED);
        assert_int_equal(s->types[1], KUBE_EVENT_MODIFIED);
        assert_int_equal(s->types[2], KUBE_EVENT_BOOKMARK);
        assert_int_equal(s->types[3], KUBE_EVENT_DELETED);
        assert_string_equal(s->names[1], "a");
        assert_string_equal(p->rv, "16");
}

static void test_any_split(void **state)
{
        size_t len = strlen(events);

        (void)state;
        /* in one piece, byte by byte, and split at every offset */
        for (size_t step = 1; step <= len; step = step == 1 ? 7 : step * 3) {
                struct kube_watch_parser p;
                struct seen s = { 0 };
                kube_watch_parser_init(&p);
                for (size_t off = 0; off < len; off += step) {
                        size_t n = len - off < step ? len - off : step;
                        assert_int_equal(
                                kube_watch_parser_feed(&p, events + off, n, on_event, &s, NULL), 0);
                }
                /* the last line has no newline: only the end of the body completes it */
                assert_int_equal(s.n, 3);
                assert_int_equal(kube_watch_parser_finish(&p, on_event, &s, NULL), 0);
                check_events(&s, &p);
                kube_watch_parser_release(&p);
        }
        for (size_t cut = 1; cut < len; cut++) {
                struct kube_watch_parser p;
                struct seen s = { 0 };
                kube_watch_parser_init(&p);
                assert_int_equal(kube_watch_parser_feed(&p, events, cut, on_event, &s, NULL), 0);
                assert_int_equal(
                        kube_watch_parser_feed(&p, events + cut, len - cut, on_event, &s, NULL), 0);
                assert_int_equal(kube_watch_parser_finish(&p, on_event, &s, NULL), 0);
                check_events(&s, &p);
                kube_watch_parser_release(&p);
        }
}

/* Feeding @line (plus "\n") fails with @want and a message containing @msg. */
static void bad(const char *line, int want, const char *msg)
{
        struct kube_watch_parser p;
        struct seen s = { 0 };
        struct b4_error err = { 0 };

        kube_watch_parser_init(&p);
        assert_int_equal(kube_watch_parser_feed(&p, line, strlen(line), on_event, &s, &err), 0);
        assert_int_equal(kube_watch_parser_feed(&p, "\n", 1, on_event, &s, &err), want);
        if (msg && !strstr(err.msg, msg))
                fail_msg("'%s': '%s' does not say '%s'", line, err.msg, msg);
        assert_int_equal(s.n, 0);
        kube_watch_parser_release(&p);
}

static void test_hostile_events(void **state)
{
        (void)state;
        bad("not json", -EPROTO, "not a JSON object");
        bad("[1,2]", -EPROTO, "not a JSON object");
        bad("{\"type\":\"ADDED\"}", -EPROTO, "without a type or an object");
        bad("{\"type\":\"ADDED\",\"object\":[]}", -EPROTO, "without a type or an object");
        bad("{\"type\":7,\"object\":{}}", -EPROTO, "without a type or an object");
        bad("{\"type\":\"SPLICED\\u001b[0m\",\"object\":{}}", -EPROTO,
            "unknown type 'SPLICED?[0m'");
        bad("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":5}}}", -EPROTO,
            "bad resourceVersion");
        bad("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"a b\"}}}", -EPROTO,
            "bad resourceVersion");
        bad("{\"type\":\"ADDED\",\"object\":{},\"type\":\"DELETED\"}", -EPROTO, NULL);
        /* ERROR events carry a Status */
        bad("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
            "\"too old resource version: 5 (90)\",\"reason\":\"Expired\",\"code\":410}}",
            -ESTALE, "too old resource version: 5 (90) (410 Expired)");
        bad("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Forbidden\","
            "\"code\":403}}",
            -EACCES, "403 Forbidden");
        bad("{\"type\":\"ERROR\",\"object\":{}}", -EIO, "500");
}

static void test_line_cap(void **state)
{
        struct kube_watch_parser p;
        struct seen s = { 0 };
        struct b4_error err = { 0 };
        char *big = malloc(KUBE_WATCH_EVENT_MAX);
        int r = 0;

        (void)state;
        memset(big, ' ', KUBE_WATCH_EVENT_MAX);
        kube_watch_parser_init(&p);
        /* exactly the cap is fine (and blank); one byte more is refused before it is kept */
        assert_int_equal(kube_watch_parser_feed(&p, big, KUBE_WATCH_EVENT_MAX, on_event, &s, &err),
                         0);
        r = kube_watch_parser_feed(&p, " ", 1, on_event, &s, &err);
        assert_int_equal(r, -EPROTO);
        assert_non_null(strstr(err.msg, "larger than"));
        assert_true(p.cap <= KUBE_WATCH_EVENT_MAX);
        kube_watch_parser_release(&p);
        free(big);
}

static void test_callback_stops(void **state)
{
        struct kube_watch_parser p;
        struct seen s = { .stop_at = 2 };

        (void)state;
        kube_watch_parser_init(&p);
        assert_int_equal(kube_watch_parser_feed(&p, events, strlen(events), on_event, &s, NULL),
                         -EINTR);
        assert_int_equal(s.n, 2);
        assert_string_equal(p.rv, "12");
        kube_watch_parser_release(&p);
}

/* ---- over the wire ---- */

static char *chunked(const char *body)
{
        char *r = NULL;
        size_t n = strlen(body), half = n / 2;

        /* two chunks, the cut inside an event */
        assert_true(asprintf(&r,
                             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                             "%zx\r\n%.*s\r\n%zx\r\n%s\r\n0\r\n\r\n",
                             half, (int)half, body, n - half, body + half) > 0);
        return r;
}

static struct kube_client *client_for(const struct ks *s)
{
        struct kube_config cfg = {
                .server = (char *)s->url, .namespace = (char *)"ns", .token = (char *)"t", .qps = -1
        };
        struct kube_client *c = NULL;

        assert_int_equal(kube_client_new(&cfg, &c, NULL), 0);
        return c;
}

static void test_watch_wire(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct seen seen = { 0 };
        struct b4_error err = { 0 };
        char *rv = NULL;

        (void)state;
        ks_add(&s, chunked(events), false, NULL);
        ks_add(&s,
               ks_resp(410, NULL,
                       "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,"
                       "\"message\":\"too old resource version\"}"),
               false, NULL);
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"type\":\"ADDED\",\"object\":{\"metadata\":{"
                       "\"resourceVersion\":\"20\"}}}\n"
                       "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
                       "\"reason\":\"Expired\",\"code\":410}}\n"),
               false, NULL);
        /* cut after an event, no final chunk: -EIO, and the version to resume from */
        ks_add(&s,
               strdup("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "44\r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":"
                      "{\"resourceVersion\":\"31\"}}}    \n\r\n"),
               false, NULL);
        ks_start(&s);
        c = client_for(&s);
        struct kube_watch_req req = { .path = "/api/v1/namespaces/ns/pods",
                                      .field_selector = "metadata.name=b4-sbx-1",
                                      .resource_version = "10",
                                      .timeout_s = 30,
                                      .cancel_fd = -EBADF };
        assert_int_equal(kube_watch(c, &req, on_event, &seen, &rv, &err), 0);
        assert_int_equal(seen.n, 4);
        assert_string_equal(rv, "16");
        free(rv);
        assert_non_null(strstr(s.requests[0],
                               "GET /api/v1/namespaces/ns/pods?watch=1&allowWatchBookmarks=true&"
                               "timeoutSeconds=30&resourceVersion=10&fieldSelector=metadata.name%3D"
                               "b4-sbx-1 HTTP/1.1\r\n"));
        assert_non_null(strstr(s.requests[0], "Authorization: Bearer t\r\n"));
        /* 410 as the HTTP status: relist */
        rv = (char *)"unchanged";
        assert_int_equal(kube_watch(c, &req, on_event, &seen, &rv, &err), -ESTALE);
        assert_null(rv);
        /* 410 as an ERROR event after an event: the last version seen is kept */
        assert_int_equal(kube_watch(c, &req, on_event, &seen, &rv, &err), -ESTALE);
        assert_string_equal(rv, "20");
        free(rv);
        assert_int_equal(kube_watch(c, &req, on_event, &seen, &rv, &err), -EIO);
        assert_string_equal(rv, "31");
        free(rv);
        ks_stop(&s);
        kube_client_free(c);
}

static void test_watch_cancel(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct seen seen = { 0 };
        struct b4_error err = { 0 };
        int fds[2];
        uint64_t t0;

        (void)state;
        /* the head and one event, then nothing: a quiet watch, cancelled */
        ks_add(&s,
               strdup("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "1d\r\n{\"type\":\"ADDED\",\"object\":{}}\n\r\n"),
               true, NULL);
        ks_start(&s);
        c = client_for(&s);
        assert_int_equal(pipe(fds), 0);
        struct kube_watch_req req = { .path = "/api/v1/namespaces/ns/pods", .cancel_fd = fds[0] };
        t0 = now_msec();
        /* the event first: the callback writes the cancel fd, the next read sees it */
        seen.cancel_w = fds[1];
        int r = kube_watch(c, &req, on_event, &seen, NULL, &err);
        if (r != -ECANCELED)
                fail_msg("%d: %s", r, err.msg);
        assert_int_equal(seen.n, 1);
        assert_true(now_msec() - t0 < 5000);
        ks_stop(&s);
        (void)close(fds[0]);
        (void)close(fds[1]);
        kube_client_free(c);
}

/* ---- the informer over the scripted server ---- */

struct told {
        pthread_mutex_t lock;
        char log[256];
};

static void on_change(enum kube_event_type type, const struct jv *o, void *userdata)
{
        static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
        struct told *t = userdata;
        const char *name = jv_string(jv_object_get(jv_object_get(o, "metadata"), "name"));
        size_t n;

        pthread_mutex_lock(&t->lock);
        n = strlen(t->log);
        (void)snprintf(t->log + n, sizeof(t->log) - n, "%s %s;", names[type], name ? name : "?");
        pthread_mutex_unlock(&t->lock);
}

static int has_b(const struct jv *o, void *userdata, struct b4_error *err)
{
        (void)userdata;
        (void)err;
        return o ? 1 : 0;
}

static void test_informer_relists_on_410(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct kube_informer *inf = NULL;
        struct told told = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct b4_error err = { 0 };
        struct jv *a = NULL;

        (void)state;
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                       "\"items\":[{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"9\"}},"
                       "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"8\"}}]}"),
               false, NULL);
        ks_add(&s,
               chunked("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\","
                       "\"resourceVersion\":\"11\"}}}\n"
                       "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                       "\"reason\":\"Expired\"}}\n"),
               false, NULL);
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},"
                       "\"items\":[{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"19\"}},"
                       "{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"8\"}}]}"),
               false, NULL);
        ks_add(&s, strdup("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), true, NULL);
        ks_start(&s);
        c = client_for(&s);
        assert_int_equal(kube_informer_new(c, "/api/v1/namespaces/ns/pods", "app=x", on_change,
                                           &told, &inf, &err),
                         0);
        assert_int_equal(kube_informer_wait_synced(inf, now_msec() + 5000, &err), 0);
        assert_int_equal(
                kube_informer_wait(inf, "b", has_b, NULL, now_msec() + 5000, -EBADF, NULL, &err),
                1);
        a = kube_informer_get(inf, "a");
        assert_null(a);
        a = kube_informer_get(inf, "c");
        assert_non_null(a);
        a = jv_unref(a);
        /* the watch from the new list's version opens; freeing cancels it */
        for (uint64_t end = now_msec() + 5000; ks_served(&s) < 4; usleep(10000))
                assert_true(now_msec() < end);
        inf = kube_informer_free(inf);
        pthread_mutex_lock(&told.lock);
        assert_string_equal(told.log, "ADDED a;ADDED c;MODIFIED a;ADDED b;DELETED a;");
        pthread_mutex_unlock(&told.lock);
        assert_non_null(strstr(s.requests[0],
                               "GET /api/v1/namespaces/ns/pods?limit=500&labelSelector=app%3Dx "));
        assert_non_null(strstr(s.requests[1], "resourceVersion=10&labelSelector=app%3Dx "));
        assert_non_null(strstr(s.requests[2], "GET /api/v1/namespaces/ns/pods?limit=500&"));
        assert_non_null(strstr(s.requests[3], "resourceVersion=20&"));
        ks_stop(&s);
        kube_client_free(c);
}

static int b_at_12(const struct jv *o, void *userdata, struct b4_error *err)
{
        const char *rv = jv_string(jv_object_get(jv_object_get(o, "metadata"), "resourceVersion"));

        (void)userdata;
        (void)err;
        return rv && strcmp(rv, "12") == 0 ? 1 : 0;
}

/*
 * A watch cut after an event (no final chunk, -EIO) resumes from that event's version, and a
 * replay of what the cache holds is not told again: what test_informer in
 * unit-kube-client-fake once depended on the timing of its watch cuts for (a cut watch
 * resumed from the list's version replayed ADDED, told twice).
 */
static void test_informer_resumes_cut_watch(void **state)
{
        struct ks s = { 0 };
        struct kube_client *c;
        struct kube_informer *inf = NULL;
        struct told told = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct b4_error err = { 0 };

        (void)state;
        ks_add(&s,
               ks_resp(200, NULL,
                       "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                       "\"items\":[{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"9\"}}]}"),
               false, NULL);
        ks_add(&s,
               strdup("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "4b\r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
                      "\"resourceVersion\":\"11\"}}}\n\r\n"),
               false, NULL);
        ks_add(&s,
               strdup("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "4b\r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
                      "\"resourceVersion\":\"11\"}}}\n\r\n"
                      "4e\r\n{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\","
                      "\"resourceVersion\":\"12\"}}}\n\r\n"),
               true, NULL);
        ks_start(&s);
        c = client_for(&s);
        assert_int_equal(kube_informer_new(c, "/api/v1/namespaces/ns/pods", "app=x", on_change,
                                           &told, &inf, &err),
                         0);
        assert_int_equal(
                kube_informer_wait(inf, "b", b_at_12, NULL, now_msec() + 10000, -EBADF, NULL, &err),
                1);
        inf = kube_informer_free(inf);
        pthread_mutex_lock(&told.lock);
        assert_string_equal(told.log, "ADDED a;ADDED b;MODIFIED b;");
        pthread_mutex_unlock(&told.lock);
        assert_int_equal(ks_served(&s), 3);
        assert_non_null(strstr(s.requests[1], "resourceVersion=10&"));
        assert_non_null(strstr(s.requests[2], "resourceVersion=11&"));
        ks_stop(&s);
        kube_client_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_any_split),
                cmocka_unit_test(test_hostile_events),
                cmocka_unit_test(test_line_cap),
                cmocka_unit_test(test_callback_stops),
                cmocka_unit_test(test_watch_wire),
                cmocka_unit_test(test_watch_cancel),
                cmocka_unit_test(test_informer_relists_on_410), /* one per line: clang-format */
                cmocka_unit_test(test_informer_resumes_cut_watch),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
