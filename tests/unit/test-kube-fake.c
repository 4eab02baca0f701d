/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kube client against tests/fakes/kube-apiserver.py (kube-fake's Python fake: its own
 * code, over TLS with its own CA) offering h2 first in ALPN: the fake's kubeconfig resolved
 * (certificate-authority-data, the token context and the client-certificate context), CRUD
 * with the real Status answers (201, 409 AlreadyExists, 409 Conflict on a stale
 * resourceVersion, 404, 422), a paginated list with a label selector, a watch from a
 * create's resourceVersion until the Pod runs, a 429 with Retry-After answered by waiting,
 * token rotation and revocation, and the fake's counters (no h2 ever negotiated). Kept
 * connections, counted by the fake: many requests from one thread or four on few
 * connections, new ones resuming TLS; a kept connection lost before the answer (a GET and a
 * DELETE sent again, a POST not) and halfway through it (a GET sent again).
 * Needs root (the fake's exec sandbox) and /usr/bin/python3; skips otherwise.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4-test.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube/kube.h"

static char *state;
static pid_t fake_pid = -1;
static char url[128], admin[128];
static bool have_fake;

static const char *in_state(const char *name)
{
        static char buf[4][1024];
        static int i;

        i = (i + 1) % 4;
        (void)snprintf(buf[i], sizeof(buf[i]), "%s/%s", state, name);
        return buf[i];
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf;
        size_t n;

        if (!f)
                return NULL;
        buf = calloc(1, 65536);
        n = fread(buf, 1, 65535, f);
        (void)fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return buf;
}

static int setup(void **unused)
{
        const char *src = getenv("B4BOX_SRCDIR");
        char fake[2048], *json = NULL;
        struct jv *v = NULL;

        (void)unused;
        (void)snprintf(fake, sizeof(fake), "%s/tests/fakes/kube-apiserver.py", src ? src : ".");
        if (geteuid() != 0 || access("/usr/bin/python3", X_OK) < 0 || access(fake, R_OK) < 0)
                return 0;
        state = b4_test_tmpdir();
        char *argv[] = { (char *)"python3",
                         fake,
                         (char *)"--state",
                         state,
                         (char *)"--alpn",
                         (char *)"h2,http/1.1",
                         (char *)"--namespace",
                         (char *)"b4-sandboxes",
                         NULL };
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, in_state("stderr"), O_WRONLY | O_CREAT, 0600);
        assert_int_equal(posix_spawn(&fake_pid, "/usr/bin/python3", &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        for (uint64_t end = now_msec() + 20000; !(json = slurp(in_state("server.json")));
             usleep(20000))
                assert_true(now_msec() < end);
        assert_int_equal(jv_parse(json, strlen(json), &v, NULL), 0);
        (void)snprintf(url, sizeof(url), "%s", jv_string(jv_object_get(v, "url")));
        (void)snprintf(admin, sizeof(admin), "%s", jv_string(jv_object_get(v, "adminToken")));
        jv_unref(v);
        free(json);
        have_fake = true;
        return 0;
}

static int teardown(void **unused)
{
        (void)unused;
        if (fake_pid > 0) {
                (void)kill(fake_pid, SIGTERM);
                (void)waitpid(fake_pid, NULL, 0);
        }
        if (state)
                b4_test_rmrf(state);
        free(state);
        return 0;
}

#define NEED_FAKE()                             \
 do {                                           \
  if (!have_fake)                               \
   skip(); /* not root, or no python3 / fake */ \
 } while (0)

static struct kube_client *client_from(const struct kube_options *o)
{
        struct kube_config cfg = { 0 };
        struct kube_client *c = NULL;
        struct b4_error err = { 0 };

        if (kube_config_resolve(o, &cfg, &err) < 0)
                fail_msg("%s", err.msg);
        if (kube_client_new(&cfg, &c, &err) < 0)
                fail_msg("%s", err.msg);
        kube_config_release(&cfg);
        return c;
}

/* The fake's control API as admin (a static token, the fake's CA as a file). */
static struct jv *control(const char *method, const char *path, const char *body)
{
        struct kube_config cfg = { .server = url,
                                   .namespace = (char *)"default",
                                   .token = admin,
                                   .ca_file = (char *)in_state("ca.crt"),
                                   .qps = -1 };
        struct kube_client *c = NULL;
        struct kube_reply reply = { 0 };
        struct jv *b = NULL, *ret;
        struct b4_error err = { 0 };

        assert_int_equal(kube_client_new(&cfg, &c, &err), 0);
        if (body)
                assert_int_equal(jv_parse(body, strlen(body), &b, NULL), 0);
        struct kube_req req = { .method = method, .path = path, .body = b, .cancel_fd = -EBADF };
        if (kube_request(c, &req, &reply, &err) < 0)
                fail_msg("%s %s: %s", method, path, err.msg);
        ret = reply.body;
        jv_unref(b);
        kube_client_free(c);
        return ret;
}

static int64_t counter(const char *name)
{
        struct jv *v = control("GET", "/_fake/counters", NULL);
        int64_t n = jv_integer(jv_object_get(v, name));

        jv_unref(v);
        return n;
}

/* byVerb["<verb> pods"] of the fake's counters */
static int64_t pod_verb(const char *verb)
{
        struct jv *v = control("GET", "/_fake/counters", NULL);
        char key[64];
        int64_t n;

        (void)snprintf(key, sizeof(key), "%s pods", verb);
        n = jv_integer(jv_object_get(jv_object_get(v, "byVerb"), key));
        jv_unref(v);
        return n;
}

/* byVerb[@key] of the fake's counters ("get persistentvolumeclaims") */
static int64_t verb_count(const char *key)
{
        struct jv *v = control("GET", "/_fake/counters", NULL);
        int64_t n = jv_integer(jv_object_get(jv_object_get(v, "byVerb"), key));

        jv_unref(v);
        return n;
}

static struct jv *pvc_named(const char *name)
{
        struct jv *pvc =
                jv_pack("{s:s,s:s,s:{s:s},s:{s:[s],s:{s:{s:s}}}}", "apiVersion", "v1", "kind",
                        "PersistentVolumeClaim", "metadata", "name", name, "spec", "accessModes",
                        "ReadWriteOnce", "resources", "requests", "storage", "1Gi");

        assert_non_null(pvc);
        return pvc;
}

#define REUSE_THREADS 4
#define REUSE_EACH    25

static void *get_versions(void *userdata)
{
        struct kube_client *c = userdata;
        struct b4_error err = { 0 };

        for (int i = 0; i < REUSE_EACH; i++)
                if (kube_get(c, "/version", NULL, &err) < 0)
                        return (void *)1;
        return NULL;
}

static void test_connection_reuse(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig"), .qps = -1 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        pthread_t th[REUSE_THREADS];
        char name[64];

        (void)unused;
        NEED_FAKE();
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        c = client_from(&o);
        char *coll = kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", NULL, NULL);
        /* 50 GETs, then 10 x (POST, GET, DELETE): 80 requests on one connection */
        for (int i = 0; i < 50; i++)
                assert_int_equal(kube_get(c, "/version", NULL, &err), 0);
        for (int i = 0; i < 10; i++) {
                (void)snprintf(name, sizeof(name), "b4-sbx-vol-reuse%d", i);
                char *one = kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", name, NULL);
                struct jv *pvc = pvc_named(name);
                assert_int_equal(kube_create(c, coll, pvc, NULL, &err), 0);
                assert_int_equal(kube_get(c, one, NULL, &err), 0);
                assert_int_equal(kube_delete(c, one, NULL, &err), 0);
                jv_unref(pvc);
                free(one);
        }
        assert_int_equal(counter("connections"), 1);
        assert_int_equal(kube_client_connections(c), 1);
        /* four threads at once: at most one connection each, every new one resumed */
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        for (int i = 0; i < REUSE_THREADS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, get_versions, c), 0);
        for (int i = 0; i < REUSE_THREADS; i++) {
                void *failed = NULL;
                assert_int_equal(pthread_join(th[i], &failed), 0);
                assert_null(failed);
        }
        assert_true(kube_client_connections(c) <= REUSE_THREADS);
        assert_true(counter("connections") <= REUSE_THREADS - 1); /* the first was counted */
        assert_true(counter("tlsResumed") >= 1);
        /* another client of the process: its first connection resumes the session */
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        o.kubeconfig = in_state("kubeconfig"); /* in_state()'s buffers rotate */
        struct kube_client *c2 = client_from(&o);
        assert_int_equal(kube_get(c2, "/version", NULL, &err), 0);
        assert_int_equal(counter("connections"), 1);
        assert_int_equal(counter("tlsResumed"), 1);
        kube_client_free(c2);
        free(coll);
        kube_client_free(c);
}

static void test_lost_connection(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig"), .qps = -1 };
        struct kube_client *c;
        struct b4_error err = { 0 };
        struct jv *got = NULL, *pvc = pvc_named("b4-sbx-vol-lost");

        (void)unused;
        NEED_FAKE();
        c = client_from(&o);
        char *coll = kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", NULL, NULL);
        char *one =
                kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", "b4-sbx-vol-lost", NULL);
        assert_int_equal(kube_get(c, "/version", NULL, &err), 0);
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        /* a POST whose answer is lost on the kept connection: applied, failed, not re-sent */
        jv_unref(control("POST", "/_fake/faults",
                         "{\"verb\":\"create\",\"resource\":\"persistentvolumeclaims\","
                         "\"loseAnswer\":true,\"keptOnly\":true}"));
        assert_int_equal(kube_create(c, coll, pvc, NULL, &err), -ECONNRESET);
        assert_non_null(strstr(err.msg, "not sent again (it may have been applied)"));
        assert_int_equal(verb_count("create persistentvolumeclaims"), 1);
        /* the next request opens a new connection; the POST had been applied */
        assert_int_equal(kube_get(c, one, &got, &err), 0);
        assert_string_equal(jv_string(jv_object_get(jv_object_get(got, "metadata"), "name")),
                            "b4-sbx-vol-lost");
        got = jv_unref(got);
        assert_int_equal(counter("connections"), 1);
        /* a GET whose answer is lost: sent again on a new connection (libcurl), answered */
        jv_unref(control("POST", "/_fake/faults",
                         "{\"verb\":\"get\",\"resource\":\"persistentvolumeclaims\","
                         "\"loseAnswer\":true,\"keptOnly\":true}"));
        assert_int_equal(kube_get(c, one, &got, &err), 0);
        assert_non_null(jv_object_get(got, "spec"));
        got = jv_unref(got);
        assert_int_equal(verb_count("get persistentvolumeclaims"), 3);
        assert_int_equal(counter("connections"), 2);
        /* a GET cut halfway through its answer: sent once more (kube_request) */
        jv_unref(control("POST", "/_fake/faults",
                         "{\"verb\":\"get\",\"resource\":\"persistentvolumeclaims\","
                         "\"cutAnswer\":true,\"keptOnly\":true}"));
        assert_int_equal(kube_get(c, one, &got, &err), 0);
        assert_non_null(jv_object_get(got, "spec"));
        got = jv_unref(got);
        assert_int_equal(verb_count("get persistentvolumeclaims"), 5);
        assert_int_equal(counter("connections"), 3);
        /* ... but only once: cut twice, the second failure is the answer */
        jv_unref(control("POST", "/_fake/faults",
                         "{\"verb\":\"get\",\"resource\":\"persistentvolumeclaims\","
                         "\"cutAnswer\":true,\"count\":2}"));
        assert_int_equal(kube_get(c, one, NULL, &err), -EIO);
        assert_int_equal(verb_count("get persistentvolumeclaims"), 7);
        /* a DELETE whose answer is lost: sent again; the second finds it being deleted or gone */
        assert_int_equal(kube_get(c, "/version", NULL, &err), 0);
        jv_unref(control("POST", "/_fake/faults",
                         "{\"verb\":\"delete\",\"resource\":\"persistentvolumeclaims\","
                         "\"loseAnswer\":true,\"keptOnly\":true}"));
        int r = kube_delete(c, one, NULL, &err);
        assert_true(r == 0 || r == -ENOENT);
        assert_int_equal(verb_count("delete persistentvolumeclaims"), 2);
        jv_unref(pvc);
        free(one);
        free(coll);
        kube_client_free(c);
}

static void test_kubeconfig_contexts(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig") };
        struct kube_client *c;
        struct jv *v = NULL;
        struct b4_error err = { 0 };

        (void)unused;
        NEED_FAKE();
        /* current-context "fake": certificate-authority-data and a token */
        c = client_from(&o);
        assert_string_equal(kube_client_namespace(c), "b4-sandboxes");
        assert_int_equal(kube_get(c, "/version", &v, &err), 0);
        assert_non_null(jv_string(jv_object_get(v, "gitVersion")));
        v = jv_unref(v);
        kube_client_free(c);
        /* "fake-cert": a client certificate and key from files */
        o.context = "fake-cert";
        c = client_from(&o);
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods", &v, &err), 0);
        assert_true(jv_is_array(jv_object_get(v, "items")));
        jv_unref(v);
        kube_client_free(c);
        /* ALPN offered h2 first; the client never took it */
        assert_int_equal(counter("h2Negotiated"), 0);
}

static void test_crud_statuses(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig") };
        struct kube_client *c;
        struct jv *pvc, *got = NULL, *items = NULL;
        struct b4_error err = { 0 };
        char *rv = NULL;

        (void)unused;
        NEED_FAKE();
        c = client_from(&o);
        char *coll = kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", NULL, NULL);
        char *one =
                kube_path("v1", "b4-sandboxes", "persistentvolumeclaims", "b4-sbx-vol-t1", NULL);
        pvc = jv_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:[s],s:{s:{s:s}}}}", "apiVersion", "v1", "kind",
                      "PersistentVolumeClaim", "metadata", "name", "b4-sbx-vol-t1", "labels",
                      "app.kubernetes.io/managed-by", "b4", "spec", "accessModes", "ReadWriteOnce",
                      "resources", "requests", "storage", "1Gi");
        assert_non_null(pvc);
        assert_int_equal(kube_create(c, coll, pvc, &got, &err), 0);
        assert_non_null(jv_string(jv_object_get(jv_object_get(got, "metadata"), "uid")));
        got = jv_unref(got);
        err = (struct b4_error){ 0 };
        assert_int_equal(kube_create(c, coll, pvc, NULL, &err), -EEXIST);
        assert_non_null(strstr(err.msg, "already exists (409 AlreadyExists)"));
        /* a stale resourceVersion: 409 Conflict, the optimistic lock */
        assert_int_equal(jv_object_set_new(jv_object_get(pvc, "metadata"), "resourceVersion",
                                           jv_string_new("1")),
                         0);
        assert_int_equal(kube_replace(c, one, pvc, NULL, &err), -EAGAIN);
        assert_non_null(strstr(err.msg, "Conflict"));
        /* a merge patch, then a list by label */
        struct jv *patch = jv_pack("{s:{s:{s:s}}}", "metadata", "labels", "b4.run/thread", "t1");
        assert_int_equal(kube_patch(c, one, patch, NULL, &err), 0);
        jv_unref(patch);
        assert_int_equal(kube_list(c, coll, "b4.run/thread=t1,app.kubernetes.io/managed-by=b4",
                                   NULL, &items, &rv, &err),
                         0);
        assert_int_equal(jv_array_size(items), 1);
        assert_non_null(rv);
        /* 404 and 422 */
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods/nope", NULL, &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "not found (404 NotFound)"));
        struct jv *bad = jv_pack("{s:s,s:s,s:{s:s},s:{s:[]}}", "apiVersion", "v1", "kind", "Pod",
                                 "metadata", "name", "bad", "spec", "containers");
        char *pods = kube_path("v1", "b4-sandboxes", "pods", NULL, NULL);
        assert_int_equal(kube_create(c, pods, bad, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "422 Invalid"));
        jv_unref(bad);
        /* a NetworkPolicy deleted twice: the second is -ENOENT */
        char *nps =
                kube_path("networking.k8s.io/v1", "b4-sandboxes", "networkpolicies", NULL, NULL);
        char *np1 = kube_path("networking.k8s.io/v1", "b4-sandboxes", "networkpolicies",
                              "b4-sbx-net-t1", NULL);
        struct jv *np = jv_pack("{s:s,s:s,s:{s:s},s:{s:{},s:[s]}}", "apiVersion",
                                "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata", "name",
                                "b4-sbx-net-t1", "spec", "podSelector", "policyTypes", "Egress");
        assert_int_equal(kube_create(c, nps, np, NULL, &err), 0);
        assert_int_equal(kube_delete(c, np1, NULL, &err), 0);
        assert_int_equal(kube_delete(c, np1, NULL, &err), -ENOENT);
        jv_unref(np);
        free(nps);
        free(np1);
        free(pods);
        jv_unref(items);
        free(rv);
        jv_unref(pvc);
        free(coll);
        free(one);
        kube_client_free(c);
}

struct until_running {
        int events;
        bool running;
};

static int on_pod(enum kube_event_type type, struct jv *pod, void *userdata)
{
        struct until_running *u = userdata;
        const char *phase = jv_string(jv_object_get(jv_object_get(pod, "status"), "phase"));

        u->events++;
        if (type == KUBE_EVENT_MODIFIED && phase && strcmp(phase, "Running") == 0) {
                u->running = true;
                return -EALREADY; /* done: stop the watch */
        }
        return 0;
}

static void test_watch_until_running(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig") };
        struct kube_client *c;
        struct jv *pod, *got = NULL;
        struct b4_error err = { 0 };
        struct until_running u = { 0 };
        char *rv = NULL;

        (void)unused;
        NEED_FAKE();
        c = client_from(&o);
        char *pods = kube_path("v1", "b4-sandboxes", "pods", NULL, NULL);
        pod = jv_pack("{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:[s,s]}]}}", "apiVersion", "v1", "kind",
                      "Pod", "metadata", "name", "b4-sbx-w1", "spec", "containers", "name",
                      "sandbox", "image", "node:24-slim", "command", "sleep", "infinity");
        assert_int_equal(kube_create(c, pods, pod, &got, &err), 0);
        const char *created =
                jv_string(jv_object_get(jv_object_get(got, "metadata"), "resourceVersion"));
        assert_non_null(created);
        struct kube_watch_req req = { .path = pods,
                                      .field_selector = "metadata.name=b4-sbx-w1",
                                      .resource_version = created,
                                      .timeout_s = 10,
                                      .cancel_fd = -EBADF };
        int r = kube_watch(c, &req, on_pod, &u, &rv, &err);
        if (r != -EALREADY)
                fail_msg("%d: %s", r, err.msg);
        assert_true(u.running);
        /* stopped by the callback: the version of the event it stopped at */
        assert_non_null(rv);
        free(rv);
        rv = NULL;
        /* a compacted history: 410 → -ESTALE, the caller lists again */
        jv_unref(control("POST", "/_fake/compact", "{}"));
        req.resource_version = created;
        r = kube_watch(c, &req, on_pod, &u, &rv, &err);
        assert_int_equal(r, -ESTALE);
        free(rv);
        jv_unref(got);
        jv_unref(pod);
        free(pods);
        kube_client_free(c);
}

static void test_retry_after(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig") };
        struct kube_client *c;
        struct b4_error err = { 0 };
        uint64_t t0;

        (void)unused;
        NEED_FAKE();
        c = client_from(&o);
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        jv_unref(control(
                "POST", "/_fake/faults",
                "{\"code\":429,\"retryAfter\":1,\"count\":1,\"verb\":\"list\",\"resource\":\"pods\"}"));
        t0 = now_msec();
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods", NULL, &err), 0);
        assert_true(now_msec() - t0 >= 950);
        assert_int_equal(counter("reads"), 2);
        kube_client_free(c);
}

static void test_token_rotation(void **unused)
{
        char *old = slurp(in_state("token")), mine[1100], line[256];
        struct kube_options o = { .api_server = url,
                                  .ca_file = in_state("ca.crt"),
                                  .token_file = mine,
                                  .namespace = "b4-sandboxes",
                                  .sa_dir = "/nonexistent" };
        struct kube_client *c;
        struct b4_error err = { 0 };

        (void)unused;
        NEED_FAKE();
        (void)snprintf(mine, sizeof(mine), "%s/my-token", state);
        /* the fake's file is "TOKEN USER": ours holds the token alone */
        *strchr(old, ' ') = '\0';
        assert_int_equal(b4_test_write(mine, old), 0);
        c = client_from(&o);
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods", NULL, &err), 0);
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        /* rotation: the server's and our file change; the next request carries the new one */
        (void)snprintf(line, sizeof(line), "rotated-%d fake-user\n", (int)getpid());
        assert_int_equal(b4_test_write(in_state("token.new"), line), 0);
        assert_int_equal(rename(in_state("token.new"), in_state("token")), 0);
        *strchr(line, ' ') = '\0';
        assert_int_equal(b4_test_write(in_state("my-token.new"), line), 0);
        assert_int_equal(rename(in_state("my-token.new"), mine), 0);
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods", NULL, &err), 0);
        assert_int_equal(counter("unauthorized"), 0);
        /* revocation: only the server's file changes; one re-read, one retry, -EPERM */
        assert_int_equal(b4_test_write(in_state("token.new"), "other fake-user\n"), 0);
        assert_int_equal(rename(in_state("token.new"), in_state("token")), 0);
        assert_int_equal(kube_get(c, "/api/v1/namespaces/b4-sandboxes/pods", NULL, &err), -EPERM);
        assert_int_equal(counter("unauthorized"), 2);
        free(old);
        kube_client_free(c);
}

/* ---- the informer ---- */

static int is_running(const struct jv *pod, void *userdata, struct b4_error *err)
{
        const char *phase = jv_string(jv_object_get(jv_object_get(pod, "status"), "phase"));

        (void)userdata;
        (void)err;
        return phase && strcmp(phase, "Running") == 0 ? 1 : 0;
}

static int is_absent(const struct jv *pod, void *userdata, struct b4_error *err)
{
        (void)userdata;
        (void)err;
        return pod ? 0 : 1;
}

static int is_present(const struct jv *pod, void *userdata, struct b4_error *err)
{
        (void)userdata;
        (void)err;
        return pod ? 1 : 0;
}

struct told {
        pthread_mutex_t lock;
        int added, deleted;
};

static void on_change(enum kube_event_type type, const struct jv *o, void *userdata)
{
        struct told *t = userdata;

        (void)o;
        pthread_mutex_lock(&t->lock);
        t->added += type == KUBE_EVENT_ADDED;
        t->deleted += type == KUBE_EVENT_DELETED;
        pthread_mutex_unlock(&t->lock);
}

static void create_pod(struct kube_client *c, const char *name)
{
        char *pods = kube_path("v1", "b4-sandboxes", "pods", NULL, NULL);
        struct jv *pod = jv_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1",
                                 "kind", "Pod", "metadata", "name", name, "labels", "app", "inf",
                                 "spec", "containers", "name", "sandbox", "image", "busybox");
        struct b4_error err = { 0 };

        if (kube_create(c, pods, pod, NULL, &err) < 0)
                fail_msg("%s", err.msg);
        jv_unref(pod);
        free(pods);
}

/*
 * Each wait's own deadline. The test once computed one (now + 10 s) before its first wait and
 * gave it to all four: the Pod's start, two watch cuts with their resume pauses, a relist and
 * a deletion all had to fit in it, so the last waits failed whenever a loaded machine had
 * spent the 10 s on the first steps. A wait ends as soon as the informer has what it waits
 * for, so a bound per step costs nothing when it passes. 4 x 15 s stays within meson's 90 s.
 */
static uint64_t deadline(void)
{
        return now_msec() + 15000;
}

static void test_informer(void **unused)
{
        struct kube_options o = { .kubeconfig = in_state("kubeconfig") };
        struct kube_client *c;
        struct kube_informer *inf = NULL;
        struct told told = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct b4_error err = { 0 };
        struct jv *got = NULL;

        (void)unused;
        NEED_FAKE();
        c = client_from(&o);
        char *pods = kube_path("v1", "b4-sandboxes", "pods", NULL, NULL);
        assert_int_equal(kube_informer_new(c, pods, "app=inf", on_change, &told, &inf, &err), 0);
        assert_int_equal(kube_informer_wait_synced(inf, deadline(), &err), 0);
        create_pod(c, "inf-1");
        /* waiting costs no API request: the informer's watch brings the changes */
        jv_unref(control("POST", "/_fake/counters/reset", NULL));
        assert_int_equal(
                kube_informer_wait(inf, "inf-1", is_running, NULL, deadline(), -EBADF, &got, &err),
                1);
        assert_string_equal(jv_string(jv_object_get(jv_object_get(got, "status"), "phase")),
                            "Running");
        got = jv_unref(got);
        assert_int_equal(counter("reads"), 0);
        assert_int_equal(counter("writes"), 0);
        /* a dropped watch is resumed */
        jv_unref(control("POST", "/_fake/watch/drop", "{\"count\":1}"));
        create_pod(c, "inf-2");
        assert_int_equal(
                kube_informer_wait(inf, "inf-2", is_present, NULL, deadline(), -EBADF, NULL, &err),
                1);
        assert_int_equal(pod_verb("list"), 0); /* resumed from its version, not listed */
        /* changes while the watch is down, then compaction: the resume is most likely 410
         * and lists again (else it catches up from its version); either way inf-3 is seen.
         * The 410 relist itself is proven deterministically in test-kube-watch. */
        jv_unref(control("POST", "/_fake/watch/drop", "{\"count\":1}"));
        create_pod(c, "inf-3");
        jv_unref(control("POST", "/_fake/compact", "{}"));
        assert_int_equal(
                kube_informer_wait(inf, "inf-3", is_present, NULL, deadline(), -EBADF, NULL, &err),
                1);
        assert_true(pod_verb("list") <= 1);
        /* a deletion is seen (the fake's Pods terminate within its grace bound) */
        assert_int_equal(kube_delete(c, "/api/v1/namespaces/b4-sandboxes/pods/inf-1",
                                     "gracePeriodSeconds=0", &err),
                         0);
        assert_int_equal(
                kube_informer_wait(inf, "inf-1", is_absent, NULL, deadline(), -EBADF, NULL, &err),
                1);
        /* a wait that cannot end: the deadline, then cancel */
        assert_int_equal(kube_informer_wait(inf, "never", is_present, NULL, now_msec() + 100,
                                            -EBADF, NULL, &err),
                         -ETIMEDOUT);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        assert_int_equal(write(fds[1], "x", 1), 1);
        assert_int_equal(kube_informer_wait(inf, "never", is_present, NULL, now_msec() + 10000,
                                            fds[0], NULL, &err),
                         -ECANCELED);
        (void)close(fds[0]);
        (void)close(fds[1]);
        inf = kube_informer_free(inf);
        assert_int_equal(told.added, 3);
        assert_int_equal(told.deleted, 1);
        free(pods);
        kube_client_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kubeconfig_contexts),
                cmocka_unit_test(test_crud_statuses),
                cmocka_unit_test(test_watch_until_running),
                cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_connection_reuse),
                cmocka_unit_test(test_lost_connection),
                cmocka_unit_test(test_informer),
                cmocka_unit_test(test_token_rotation), /* last: it revokes the token */
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
