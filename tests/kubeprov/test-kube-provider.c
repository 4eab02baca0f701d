/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubernetes provider through the library against the fake API server (run by
 * with-fake.sh, which exports where it is): the API requests each lifecycle step and each
 * tool call costs (the fake's counters), two replicas racing for one thread, a command whose
 * exec stream drops (never retried) and a Pod deleted behind the provider's back (recovered,
 * the workspace kept), token rotation; the managed workspace record on the PVC (published
 * through a 409, read back, another intent's refused, the 256 KiB limit) and the policy's
 * owner when the PVC was there before.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "base/macro.h"
#include "json/json.h"

static const char *E_CONFIG, *E_NS, *E_IMAGE, *E_URL, *E_ADMIN, *E_STATE;

/* ---- the fake's control API (curl: not the code under test) ---- */

static struct jv *ctl(const char *method, const char *path, const char *json)
{
        cleanup_free char *cmd = NULL;
        char buf[65536];
        size_t len = 0, n;
        struct jv *v = NULL;
        FILE *f;

        assert_true(asprintf(&cmd,
                             "curl -sS --cacert '%s/ca.crt' -X %s -H 'Authorization: Bearer %s' "
                             "-H 'Content-Type: application/json' %s%s%s '%s%s'",
                             E_STATE, method, E_ADMIN, json ? "--data '" : "", json ? json : "",
                             json ? "'" : "", E_URL, path) > 0);
        f = popen(cmd, "r");
        assert_non_null(f);
        while ((n = fread(buf + len, 1, sizeof(buf) - 1 - len, f)) > 0)
                len += n;
        assert_int_equal(pclose(f), 0);
        buf[len] = '\0';
        if (len)
                assert_int_equal(jv_parse(buf, len, &v, NULL), 0);
        return v;
}

static char *pvc_path(const char *thread);

/* A GET as the kubeconfig's user. */
static struct jv *api_get(const char *path)
{
        cleanup_free char *cmd = NULL;
        char buf[1 << 20];
        size_t len = 0, n;
        struct jv *v = NULL;
        FILE *f;

        assert_true(asprintf(&cmd,
                             "curl -sS --cacert '%s/ca.crt' -H 'Authorization: Bearer '\"$(awk "
                             "'NR == 1 { print $1 }' '%s/token')\" '%s%s'",
                             E_STATE, E_STATE, E_URL, path) > 0);
        f = popen(cmd, "r");
        assert_non_null(f);
        while ((n = fread(buf + len, 1, sizeof(buf) - 1 - len, f)) > 0)
                len += n;
        assert_int_equal(pclose(f), 0);
        assert_int_equal(jv_parse(buf, len, &v, NULL), 0);
        return v;
}

/* @method @path as the kubeconfig's user with @json (from a file: it may be large) as a
 * merge patch (PATCH) or a body; the answer is dropped. */
static void api_send(const char *method, const char *path, const char *json)
{
        cleanup_free char *cmd = NULL, *body = NULL, *data = NULL;
        FILE *f;

        assert_true(asprintf(&body, "%s/body.json", E_STATE) > 0);
        f = fopen(body, "we");
        assert_non_null(f);
        fputs(json ? json : "", f);
        assert_int_equal(fclose(f), 0);
        assert_true(asprintf(&data, "--data-binary @'%s'", body) > 0);
        assert_true(asprintf(&cmd,
                             "curl -sS -f -o /dev/null --cacert '%s/ca.crt' -X %s -H "
                             "'Authorization: Bearer '\"$(awk 'NR == 1 { print $1 }' '%s/token')\" "
                             "-H 'Content-Type: application/merge-patch+json' %s '%s%s'",
                             E_STATE, method, E_STATE, json ? data : "", E_URL, path) > 0);
        assert_int_equal(system(cmd), 0);
}

struct counts {
        int64_t reads, writes, watches, execs;
};

static struct counts counters(bool reset)
{
        struct jv *v = ctl(reset ? "POST" : "GET",
                           reset ? "/_fake/counters/reset" : "/_fake/counters", NULL);
        struct counts c = { jv_integer(jv_object_get(v, "reads")),
                            jv_integer(jv_object_get(v, "writes")),
                            jv_integer(jv_object_get(v, "watches")),
                            jv_integer(jv_object_get(v, "execs")) };

        jv_unref(v);
        return c;
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the provider ---- */

/* @image NULL: the test image; @informer: as b4box serve sets it (one shared Pod watch). */
static struct b4_provider *provider_of(const char *kubeconfig,
                                       const char *api,
                                       const char *token,
                                       const char *image,
                                       bool informer)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_error err = { 0 };
        struct b4_provider *p = NULL;

        cfg.type = strdup("kubernetes");
        cfg.scope = strdup("kubeprov-lib");
        cfg.image = strdup(image ? image : E_IMAGE);
        cfg.kube_namespace = strdup(E_NS);
        if (kubeconfig)
                cfg.kubeconfig = strdup(kubeconfig);
        if (api) {
                cfg.kube_api = strdup(api);
                cfg.kube_token_file = strdup(token);
                assert_true(asprintf(&cfg.kube_ca_file, "%s/ca.crt", E_STATE) > 0);
        }
        cfg.kube_startup_timeout_ms = 20000;
        cfg.kube_informer = informer;
        if (b4_provider_new(&cfg, &p, &err) < 0)
                fail_msg("provider: %s", err.msg);
        b4_provider_config_clear(&cfg);
        return p;
}

static struct b4_provider *provider_with(const char *kubeconfig, const char *api, const char *token)
{
        return provider_of(kubeconfig, api, token, NULL, false);
}

static struct b4_provider *provider(void)
{
        return provider_with(E_CONFIG, NULL, NULL);
}

static struct b4_provider *provider_informed(const char *image)
{
        return provider_of(E_CONFIG, NULL, NULL, image, true);
}

/* The informer's list is done when the provider is made; its watch follows from the
 * informer's thread: wait (at most 2 s) until the fake counted a watch since the last reset,
 * so that the counts measured next lack it. */
static void await_watch(void)
{
        for (int i = 0; i < 200 && counters(false).watches < 1; i++)
                usleep(10 * 1000);
}

static struct b4_sandbox *acquire_in(struct b4_provider *p,
                                     const char *thread,
                                     enum b4_network_mode mode)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;

        b4_policy_init(&pol);
        pol.network = mode;
        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                fail_msg("acquire %s: %s", thread, err.msg);
        b4_policy_clear(&pol);
        return sb;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *thread)
{
        return acquire_in(p, thread, B4_NETWORK_ALLOW);
}

static int run(struct b4_sandbox *sb, const char *cmd, char **ret_out, struct b4_error *err)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result res = { 0 };
        int r = b4_sandbox_exec(sb, &req, &res, err);

        if (r < 0)
                return r;
        if (ret_out)
                *ret_out = strdup(res.out ? res.out : "");
        r = res.exit_code;
        b4_exec_result_clear(&res);
        return r;
}

/* ---- cases ---- */

/* Targets of the issue: cold acquire <= 3 writes and 0 reads; reattach 0; a tool call 0;
 * release 1. */
static void test_request_counts(void **state)
{
        struct b4_provider *p = provider();
        struct b4_error err = { 0 };
        struct b4_sandbox *sb, *again;
        cleanup_free char *out = NULL, *data = NULL;
        size_t len = 0;
        struct counts c;

        (void)counters(true);
        sb = acquire(p, "counts");
        c = counters(true);
        print_message("# cold acquire: %lld writes, %lld reads, %lld watches, %lld execs\n",
                      (long long)c.writes, (long long)c.reads, (long long)c.watches,
                      (long long)c.execs);
        assert_true(c.writes <= 3);
        assert_int_equal(c.reads, 0);
        assert_int_equal(c.watches, 1);
        assert_int_equal(c.execs, 1); /* the agent's copy; its session opens on first use */

        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/a.txt", "hello", 5, &err), 0);
        c = counters(true);
        assert_int_equal(c.execs, 1); /* the agent's session */
        assert_int_equal(b4_fs_read_file(&sb->fs, "/workspace/a.txt", 1024, &data, &len, &err), 0);
        assert_string_equal(data, "hello");
        assert_int_equal(run(sb, "cat /workspace/a.txt; echo; exit 7", &out, &err), 7);
        assert_string_equal(out, "hello\n");
        c = counters(true);
        assert_int_equal(c.reads + c.writes + c.watches + c.execs, 0); /* warm: 0 per tool call */

        again = acquire(p, "counts");
        c = counters(true);
        assert_int_equal(c.reads + c.writes + c.watches + c.execs, 0); /* reattach: 0 */
        b4_sandbox_unref(again);
        b4_sandbox_unref(sb);

        assert_int_equal(b4_provider_release(p, "counts", &err), 0);
        c = counters(true);
        assert_int_equal(c.writes, 1);
        assert_int_equal(c.reads, 0);

        /* the workspace survives the release */
        sb = acquire(p, "counts");
        free(data);
        data = NULL;
        assert_int_equal(b4_fs_read_file(&sb->fs, "/workspace/a.txt", 1024, &data, &len, &err), 0);
        assert_string_equal(data, "hello");
        b4_sandbox_unref(sb);
        (void)counters(true);
        assert_int_equal(b4_provider_destroy(p, "counts", &err), 0);
        c = counters(true);
        assert_true(c.writes <= 3);
        /* the PVC waited for until it is gone (a GET, and a watch while it terminates), so
         * that an acquire right after makes a new one */
        assert_true(c.reads <= 1);
        assert_true(c.watches <= 1);
        {
                cleanup_free char *path = pvc_path("counts");
                struct jv *v = api_get(path);

                assert_int_equal(jv_integer(jv_object_get(v, "code")), 404);
                jv_unref(v);
        }
        b4_provider_free(p);
}

/* A long-lived provider (b4box serve's flag): its LIST + WATCH of the scope's keeper Pods
 * are made once at construction; a cold acquire then waits on that cache: 3 writes, 0 reads,
 * 0 watches of its own (+ the agent's copy). A release and acquire again gets the new Pod,
 * not the old one the cache may still hold. */
static void test_informer_counts(void **state)
{
        struct b4_provider *p;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        cleanup_free char *out = NULL;
        struct counts c;

        (void)counters(true);
        p = provider_informed(NULL);
        await_watch();
        c = counters(true);
        print_message("# construction: %lld reads, %lld watches\n", (long long)c.reads,
                      (long long)c.watches);
        assert_int_equal(c.reads, 1);   /* the list */
        assert_int_equal(c.watches, 1); /* its watch */
        assert_int_equal(c.writes, 0);

        sb = acquire(p, "informed");
        c = counters(true);
        print_message("# cold acquire (informer): %lld writes, %lld reads, %lld watches, "
                      "%lld execs\n",
                      (long long)c.writes, (long long)c.reads, (long long)c.watches,
                      (long long)c.execs);
        assert_int_equal(c.writes, 3);
        assert_int_equal(c.reads, 0);
        assert_int_equal(c.watches, 0);
        assert_int_equal(c.execs, 1);
        b4_sandbox_unref(sb);

        assert_int_equal(b4_provider_release(p, "informed", &err), 0);
        sb = acquire(p, "informed");
        c = counters(true);
        assert_int_equal(c.reads, 0);
        assert_int_equal(c.watches, 0);
        assert_int_equal(run(sb, "echo again", &out, &err), 0);
        assert_string_equal(out, "again\n");
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "informed", &err), 0);
        b4_provider_free(p);
}

/* The fail-fast table through the informer: ErrImagePull named at once, no watch made. */
static void test_informer_fail_fast(void **state)
{
        struct b4_provider *p;
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = "informed-bad", .policy = &pol };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;
        uint64_t t0;
        struct counts c;

        (void)counters(true);
        p = provider_informed("bad/img:1");
        jv_unref(ctl("POST", "/_fake/pods",
                     "{\"failures\": [{\"image\": \"^bad/\", \"reason\": \"ErrImagePull\", "
                     "\"message\": \"pull access denied for bad/img\"}]}"));
        b4_policy_init(&pol);
        await_watch();
        (void)counters(true);
        t0 = now_ms();
        assert_true(b4_provider_acquire(p, &req, &sb, &err) < 0);
        print_message("# ErrImagePull through the informer: %s (%llu ms)\n", err.msg,
                      (unsigned long long)(now_ms() - t0));
        assert_non_null(strstr(err.msg, "ErrImagePull: pull access denied for bad/img"));
        assert_true(now_ms() - t0 < 5000); /* not the 20 s timeout */
        c = counters(true);
        assert_int_equal(c.watches, 0);
        jv_unref(ctl("POST", "/_fake/pods", "{\"failures\": []}"));
        b4_policy_clear(&pol);
        err = (struct b4_error){ 0 };
        (void)b4_provider_destroy(p, "informed-bad", &err);
        b4_provider_free(p);
}

struct starter {
        struct b4_provider *p;
        const char *thread;
        int r;
        char msg[512];
};

static void *start_one(void *arg)
{
        struct starter *s = arg;
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = s->thread, .policy = &pol };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;

        b4_policy_init(&pol);
        s->r = b4_provider_acquire(s->p, &req, &sb, &err);
        (void)snprintf(s->msg, sizeof(s->msg), "%s", err.msg);
        b4_sandbox_unref(sb);
        b4_policy_clear(&pol);
        return NULL;
}

/* The Pod deleted while the acquire waits on the informer: "disappeared while starting",
 * at once, not the startup timeout. */
static void test_informer_pod_deleted(void **state)
{
        struct b4_provider *p = provider_informed(NULL);
        struct starter s = { .p = p, .thread = "informed-gone" };
        cleanup_free char *cmd = NULL;
        struct b4_error err = { 0 };
        pthread_t t;
        uint64_t t0;
        char id[41];

        jv_unref(ctl("POST", "/_fake/pods", "{\"startDelayMs\": 3000}"));
        assert_int_equal(b4_resource_id("kubeprov-lib", s.thread, id), 0);
        assert_true(asprintf(&cmd,
                             "curl -sS -o /dev/null --cacert '%s/ca.crt' -X DELETE -H "
                             "'Authorization: Bearer '\"$(awk 'NR == 1 { print $1 }' '%s/token')\" "
                             "'%s/api/v1/namespaces/%s/pods/b4-sbx-%s?gracePeriodSeconds=0'",
                             E_STATE, E_STATE, E_URL, E_NS, id) > 0);
        t0 = now_ms();
        assert_int_equal(pthread_create(&t, NULL, start_one, &s), 0);
        usleep(1000 * 1000); /* created, seen by the informer, not running yet */
        assert_int_equal(system(cmd), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        print_message("# deleted while starting: %s (%llu ms)\n", s.msg,
                      (unsigned long long)(now_ms() - t0));
        jv_unref(ctl("POST", "/_fake/pods", "{\"startDelayMs\": 80}"));
        assert_true(s.r < 0);
        assert_non_null(strstr(s.msg, "disappeared while starting"));
        assert_true(now_ms() - t0 < 3000); /* neither the start delay nor the timeout */
        (void)b4_provider_destroy(p, s.thread, &err);
        b4_provider_free(p);
}

/* list refused (RBAC): the provider is made all the same, and each acquire watches its Pod. */
static void test_informer_fallback(void **state)
{
        struct b4_provider *p;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        struct counts c;

        jv_unref(
                ctl("POST", "/_fake/faults",
                    "{\"code\": 403, \"count\": 100, \"verb\": \"list\", \"resource\": \"pods\"}"));
        p = provider_informed(NULL);
        jv_unref(ctl("DELETE", "/_fake/faults", NULL));
        (void)counters(true);
        sb = acquire(p, "informed-fallback");
        c = counters(true);
        assert_int_equal(c.watches, 1); /* today's per-Pod watch */
        assert_int_equal(c.reads, 0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "informed-fallback", &err), 0);
        b4_provider_free(p);
}

struct racer {
        struct b4_provider *p;
        struct b4_sandbox *sb;
        int r;
        char msg[512];
};

static void *race(void *arg)
{
        struct racer *x = arg;
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = "race", .policy = &pol };
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        x->r = b4_provider_acquire(x->p, &req, &x->sb, &err);
        snprintf(x->msg, sizeof(x->msg), "%s", err.msg);
        b4_policy_clear(&pol);
        return NULL;
}

/* Two b4box replicas acquire one thread at once: both end on the one Pod (a 409 on create
 * is reattached), both can use it. */
static void test_two_replicas(void **state)
{
        struct racer a = { .p = provider() }, b = { .p = provider() };
        struct b4_error err = { 0 };
        cleanup_free char *out = NULL;
        pthread_t ta, tb;
        struct jv *pods;
        size_t n = 0;
        char id[41];

        assert_int_equal(b4_resource_id("kubeprov-lib", "race", id), 0);
        assert_int_equal(pthread_create(&ta, NULL, race, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        if (a.r < 0 || b.r < 0)
                fail_msg("racing acquires: %d %s / %d %s", a.r, a.msg, b.r, b.msg);
        assert_int_equal(b4_fs_write_file(&a.sb->fs, "/workspace/race", "a", 1, &err), 0);
        assert_int_equal(run(b.sb, "cat /workspace/race", &out, &err), 0);
        assert_string_equal(out, "a");
        pods = api_get("/api/v1/namespaces/b4-sandboxes/pods?labelSelector="
                       "b4box.io%2Frole%3Dkeeper");
        for (size_t i = 0; i < jv_array_size(jv_object_get(pods, "items")); i++) {
                const struct jv *it = jv_array_get(jv_object_get(pods, "items"), i);
                const char *thread = jv_string(jv_object_get(
                        jv_object_get(jv_object_get(it, "metadata"), "labels"), "b4.run/thread"));

                n += thread && strcmp(thread, id) == 0;
        }
        jv_unref(pods);
        assert_int_equal(n, 1);
        b4_sandbox_unref(a.sb);
        b4_sandbox_unref(b.sb);
        assert_int_equal(b4_provider_destroy(a.p, "race", &err), 0);
        assert_int_equal(b4_provider_destroy(b.p, "race", &err), 0);
        b4_provider_free(a.p);
        b4_provider_free(b.p);
}

/* A command whose exec stream drops is failed, never run again; the next call reconnects. */
static void test_exec_drop_not_retried(void **state)
{
        struct b4_provider *p = provider();
        struct b4_sandbox *sb = acquire(p, "drop");
        struct b4_error err = { 0 };
        cleanup_free char *out = NULL;
        struct b4_stat st;
        int r;

        /* the next exec stream, the agent's session the lstat opens, is cut 3 s after it
         * started: while the command runs */
        jv_unref(ctl("POST", "/_fake/exec/drop", "{\"count\": 1, \"afterMs\": 3000}"));
        assert_int_equal(b4_fs_lstat(&sb->fs, "/workspace", &st, &err), 0);
        r = run(sb, "echo x >> /workspace/ran; sleep 10", NULL, &err);
        assert_int_equal(r, -EIO);
        assert_non_null(strstr(err.msg, "not retried"));
        assert_int_equal(run(sb, "wc -l < /workspace/ran", &out, &err), 0);
        assert_string_equal(out, "1\n");
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "drop", &err), 0);
        b4_provider_free(p);
}

/* The Pod goes behind the provider's back: the next call recovers (a new Pod on the same
 * PVC, the agent copied again) and finds the workspace. */
static void test_pod_lost_recovered(void **state)
{
        struct b4_provider *p = provider();
        struct b4_sandbox *sb = acquire(p, "lost");
        struct b4_error err = { 0 };
        cleanup_free char *data = NULL, *cmd = NULL;
        char id[41];
        size_t len = 0;

        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/keep", "kept", 4, &err), 0);
        assert_int_equal(b4_resource_id("kubeprov-lib", "lost", id), 0);
        assert_true(asprintf(&cmd,
                             "curl -sS -o /dev/null --cacert '%s/ca.crt' -X DELETE -H "
                             "'Authorization: Bearer '\"$(awk 'NR == 1 { print $1 }' '%s/token')\" "
                             "'%s/api/v1/namespaces/%s/pods/b4-sbx-%s?gracePeriodSeconds=0'",
                             E_STATE, E_STATE, E_URL, E_NS, id) > 0);
        assert_int_equal(system(cmd), 0);
        usleep(500 * 1000); /* the fake's terminating time, and the exec streams cut */
        if (b4_fs_read_file(&sb->fs, "/workspace/keep", 1024, &data, &len, &err) < 0)
                fail_msg("read after the Pod went: %s", err.msg);
        assert_string_equal(data, "kept");
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "lost", &err), 0);
        b4_provider_free(p);
}

/* ---- the managed workspace record on the PVC (managed.c) ---- */

#define INTENT_1 "1111111111111111111111111111111111111111111111111111111111111111"
#define INTENT_2 "2222222222222222222222222222222222222222222222222222222222222222"
#define PINNED   "img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char *pvc_path(const char *thread)
{
        char id[41], *path = NULL;

        assert_int_equal(b4_resource_id("kubeprov-lib", thread, id), 0);
        assert_true(asprintf(&path, "/api/v1/namespaces/%s/persistentvolumeclaims/b4-sbx-vol-%s",
                             E_NS, id) > 0);
        return path;
}

static char *policy_path(const char *thread)
{
        char id[41], *path = NULL;

        assert_int_equal(b4_resource_id("kubeprov-lib", thread, id), 0);
        assert_true(asprintf(&path,
                             "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/"
                             "b4-sbx-net-%s",
                             E_NS, id) > 0);
        return path;
}

static const struct jv *annotation(const struct jv *obj, const char *key)
{
        return jv_object_get(jv_object_get(jv_object_get(obj, "metadata"), "annotations"), key);
}

/* The record as the PVC carries it (parsed), or NULL. */
static struct jv *record_on(const char *thread)
{
        cleanup_free char *path = pvc_path(thread);
        struct jv *pvc = api_get(path), *rec = NULL;
        const char *text = jv_string(annotation(pvc, "b4box.io/workspace-record"));

        if (text)
                assert_int_equal(jv_parse(text, strlen(text), &rec, NULL), 0);
        jv_unref(pvc);
        return rec;
}

static int64_t total(struct counts c)
{
        return c.reads + c.writes + c.watches + c.execs;
}

struct publisher {
        struct b4_provider *p;
        const struct b4_workspace_record *rec;
        struct b4_error err;
        int r;
};

static void *publisher(void *arg)
{
        struct publisher *x = arg;

        x->r = b4_provider_workspace_publish(x->p, "rec", x->rec, &x->err);
        return NULL;
}

/* Published with the PVC's resourceVersion: a PVC changed meanwhile answers 409, it is read
 * again and the record lands next to what the other writer added; a published record is
 * known without a request; another provider instance reads it once; another intent's
 * record is refused by name and left alone. */
static void test_record_published(void **state)
{
        struct b4_provider *p = provider(), *p2;
        struct b4_workspace_record rec = { .intent = INTENT_1,
                                           .source_digest = "sha256:source",
                                           .image = PINNED };
        struct b4_error err = { 0 };
        enum b4_storage_state st = B4_STORAGE_READY;
        cleanup_free char *path = pvc_path("rec");
        struct b4_sandbox *sb, *sb2;
        struct publisher pub = { 0 };
        struct jv *got;
        struct counts c;
        pthread_t t;

        assert_true(b4_provider_keeps_workspace_record(p));
        sb = acquire(p, "rec");
        (void)counters(true);
        assert_int_equal(b4_provider_workspace_check(p, "rec", INTENT_1, &st, &err), 0);
        assert_int_equal(st, B4_STORAGE_EMPTY); /* this acquire made the PVC */
        assert_int_equal(total(counters(true)), 0);

        /* the provider's PATCH held in the fake 1 s, another writer's lands meanwhile */
        jv_unref(ctl("POST", "/_fake/faults",
                     "{\"verb\": \"patch\", \"resource\": \"persistentvolumeclaims\", "
                     "\"delayMs\": 1000, \"count\": 1}"));
        (void)counters(true);
        pub.p = p;
        pub.rec = &rec;
        assert_int_equal(pthread_create(&t, NULL, publisher, &pub), 0);
        usleep(300 * 1000);
        api_send("PATCH", path, "{\"metadata\": {\"annotations\": {\"other\": \"kept\"}}}");
        pthread_join(t, NULL);
        if (pub.r < 0)
                fail_msg("publish: %s", pub.err.msg);
        c = counters(true);
        print_message("# publish through a 409: %lld writes, %lld reads (the other writer's "
                      "PATCH included)\n",
                      (long long)c.writes, (long long)c.reads);
        assert_int_equal(c.writes, 3); /* ours: the 409 and the one that landed */
        assert_int_equal(c.reads, 2);  /* ours: before each */
        got = api_get(path);
        assert_string_equal(jv_string(annotation(got, "other")), "kept");
        jv_unref(got);
        got = record_on("rec");
        assert_non_null(got);
        assert_string_equal(jv_string(jv_object_get(got, "intent")), INTENT_1);
        assert_true(jv_is_true(jv_object_get(got, "ready")));
        assert_string_equal(jv_string(jv_object_get(got, "sourceDigest")), "sha256:source");
        assert_string_equal(jv_string(jv_object_get(got, "image")), PINNED);
        jv_unref(got);

        (void)counters(true);
        assert_int_equal(b4_provider_workspace_check(p, "rec", INTENT_1, &st, &err), 0);
        assert_int_equal(st, B4_STORAGE_READY);
        assert_int_equal(b4_provider_workspace_publish(p, "rec", &rec, &err), 0); /* again: done */
        assert_int_equal(total(counters(true)), 0);

        /* another instance (a restart, another replica) reads the PVC once */
        p2 = provider();
        sb2 = acquire(p2, "rec");
        (void)counters(true);
        assert_int_equal(b4_provider_workspace_check(p2, "rec", INTENT_1, &st, &err), 0);
        assert_int_equal(st, B4_STORAGE_READY);
        c = counters(true);
        assert_int_equal(c.reads, 1);
        assert_int_equal(c.writes, 0);
        b4_sandbox_unref(sb2);
        b4_provider_free(p2);

        p2 = provider();
        sb2 = acquire(p2, "rec");
        assert_int_equal(b4_provider_workspace_check(p2, "rec", INTENT_2, &st, &err), -EEXIST);
        assert_non_null(strstr(err.msg, "Workspace conflict: persistentvolumeclaim"));
        rec.intent = INTENT_2;
        assert_int_equal(b4_provider_workspace_publish(p2, "rec", &rec, &err), -EEXIST);
        got = record_on("rec");
        assert_string_equal(jv_string(jv_object_get(got, "intent")), INTENT_1);
        jv_unref(got);
        b4_sandbox_unref(sb2);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "rec", &err), 0);
        b4_provider_free(p2);
        b4_provider_free(p);
}

/* A PVC being deleted under its running Pod (the pvc-protection finalizer holds it) is
 * reported gone to another instance, so the runtime makes it again. */
static void test_record_gone(void **state)
{
        struct b4_provider *p = provider(), *p2;
        struct b4_workspace_record rec = { .intent = INTENT_1 };
        cleanup_free char *path = pvc_path("recgone");
        enum b4_storage_state st = B4_STORAGE_READY;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = acquire(p, "recgone"), *sb2;

        assert_int_equal(b4_provider_workspace_publish(p, "recgone", &rec, &err), 0);
        api_send("DELETE", path, NULL);
        p2 = provider();
        sb2 = acquire(p2, "recgone");
        assert_int_equal(b4_provider_workspace_check(p2, "recgone", INTENT_1, &st, &err), 0);
        assert_int_equal(st, B4_STORAGE_GONE);
        b4_sandbox_unref(sb2);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p2, "recgone", &err), 0);
        b4_provider_free(p2);
        b4_provider_free(p);
}

/* Kubernetes keeps 256 KiB of annotations per object: a record past it, alone or with what
 * the PVC carries, is refused with the limit in the text and nothing written; a thread not
 * acquired has no record to write. */
static void test_record_limit(void **state)
{
        struct b4_provider *p = provider();
        cleanup_free char *path = pvc_path("recbig"), *big = malloc(300 * 1024 + 1), *filler = NULL;
        struct b4_workspace_record rec = { .intent = INTENT_1, .source_digest = big };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = acquire(p, "recbig");
        struct jv *got;

        assert_non_null(big);
        memset(big, 'x', 300 * 1024);
        big[300 * 1024] = '\0';
        assert_int_equal(b4_provider_workspace_publish(p, "recbig", &rec, &err), -E2BIG);
        assert_non_null(strstr(err.msg, "at most 262144 bytes (256 KiB) of annotations"));

        /* 160 KiB fits alone, not next to 100 KiB the PVC already carries */
        big[160 * 1024] = '\0';
        assert_true(asprintf(&filler, "{\"metadata\": {\"annotations\": {\"filler\": \"%0*d\"}}}",
                             100 * 1024, 0) > 0);
        api_send("PATCH", path, filler);
        assert_int_equal(b4_provider_workspace_publish(p, "recbig", &rec, &err), -E2BIG);
        assert_non_null(strstr(err.msg, "262144"));
        got = record_on("recbig");
        assert_null(got);

        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(p, "recbig", &err), 0);
        assert_int_equal(b4_provider_workspace_publish(p, "recbig", &rec, &err), -ENOTCONN);
        assert_int_equal(b4_provider_destroy(p, "recbig", &err), 0);
        b4_provider_free(p);
}

static const char *owner_of(const char *thread)
{
        static char uid[64];
        cleanup_free char *path = policy_path(thread);
        struct jv *pol = api_get(path);
        const struct jv *refs = jv_object_get(jv_object_get(pol, "metadata"), "ownerReferences");
        const char *u = jv_string(jv_object_get(jv_array_get(refs, 0), "uid"));

        (void)snprintf(uid, sizeof(uid), "%s", u ? u : "(none)");
        assert_true(jv_array_size(refs) <= 1);
        jv_unref(pol);
        return uid;
}

/* The PVC existed before the acquire (a release kept it), so its create answered 409 with
 * no uid: the policy is owned by it all the same. Read from the live policy where there is
 * one (no extra request: one GET instead of POST 409 + GET), from the PVC where the policy
 * is missing or has no owner. */
static void test_policy_owner_preexisting_pvc(void **state)
{
        struct b4_provider *p = provider();
        cleanup_free char *pvc = pvc_path("own"), *pol = policy_path("own");
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        struct counts c;
        char uid[64];
        struct jv *o;

        (void)counters(true);
        b4_sandbox_unref(acquire_in(p, "own", B4_NETWORK_DENY));
        c = counters(true);
        assert_int_equal(c.writes, 3); /* cold, deny mode: PVC, policy (with its owner), Pod */
        assert_int_equal(c.reads, 0);
        assert_int_equal(b4_provider_release(p, "own", &err), 0);
        o = api_get(pvc);
        (void)snprintf(uid, sizeof(uid), "%s",
                       jv_string(jv_object_get(jv_object_get(o, "metadata"), "uid")));
        jv_unref(o);
        assert_string_equal(owner_of("own"), uid);

        /* the usual reattach after a release: the policy read once, no PVC read */
        (void)counters(true);
        sb = acquire_in(p, "own", B4_NETWORK_DENY);
        c = counters(true);
        print_message("# acquire after release: %lld writes, %lld reads\n", (long long)c.writes,
                      (long long)c.reads);
        assert_int_equal(c.reads, 1);
        assert_int_equal(c.writes, 2); /* PVC POST (409), Pod POST */
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(p, "own", &err), 0);

        /* the policy gone behind b4box, the PVC kept */
        api_send("DELETE", pol, NULL);
        sb = acquire_in(p, "own", B4_NETWORK_DENY);
        assert_string_equal(owner_of("own"), uid);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(p, "own", &err), 0);

        /* a policy without an owner (an older b4box made it): given one */
        api_send("PATCH", pol, "{\"metadata\": {\"ownerReferences\": null}}");
        assert_string_equal(owner_of("own"), "(none)");
        sb = acquire_in(p, "own", B4_NETWORK_DENY);
        assert_string_equal(owner_of("own"), uid);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "own", &err), 0);
        b4_provider_free(p);
}

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

/* The token file is re-read when it changes: rotated on both sides, requests go on; a
 * token the server no longer takes fails the request (401), and the rotated file heals it. */
static void test_token_rotation(void **state)
{
        cleanup_free char *dir = b4_test_tmpdir(), *ours = NULL, *theirs = NULL, *line = NULL;
        struct b4_error err = { 0 };
        struct b4_provider *p;
        struct b4_sandbox *sb;
        char tok[128], user[128] = "fake-user";
        FILE *f;
        int r;

        assert_true(asprintf(&theirs, "%s/token", E_STATE) > 0);
        f = fopen(theirs, "re");
        assert_non_null(f);
        assert_true(fscanf(f, "%127s %127s", tok, user) >= 1);
        fclose(f);
        assert_true(asprintf(&ours, "%s/token", dir) > 0);
        write_text(ours, tok);
        p = provider_with(NULL, E_URL, ours);
        sb = acquire(p, "rotate");
        assert_int_equal(b4_provider_release(p, "rotate", &err), 0);
        b4_sandbox_unref(sb);

        /* the server takes only the new token now; ours is stale: a 401 */
        assert_true(asprintf(&line, "rotated-token-2 %s\n", user) > 0);
        write_text(theirs, line);
        {
                struct b4_policy pol;
                struct b4_acquire_req req = { .thread_id = "rotate", .policy = &pol };

                b4_policy_init(&pol);
                sb = NULL;
                r = b4_provider_acquire(p, &req, &sb, &err);
                b4_policy_clear(&pol);
                assert_true(r < 0);
                assert_null(sb);
        }
        /* rotated on our side too: the file is re-read, requests go through */
        write_text(ours, "rotated-token-2\n");
        sb = acquire(p, "rotate");
        assert_int_equal(run(sb, "true", NULL, &err), 0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "rotate", &err), 0);
        b4_provider_free(p);
        /* the token back for the other cases */
        free(line);
        assert_true(asprintf(&line, "%s %s\n", tok, user) > 0);
        write_text(theirs, line);
        b4_test_rmrf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_counts),
                cmocka_unit_test(test_informer_counts),
                cmocka_unit_test(test_informer_fail_fast),
                cmocka_unit_test(test_informer_pod_deleted),
                cmocka_unit_test(test_informer_fallback),
                cmocka_unit_test(test_two_replicas),
                cmocka_unit_test(test_exec_drop_not_retried),
                cmocka_unit_test(test_pod_lost_recovered),
                cmocka_unit_test(test_token_rotation),
                cmocka_unit_test(test_record_published),
                cmocka_unit_test(test_record_gone),
                cmocka_unit_test(test_record_limit),
                cmocka_unit_test(test_policy_owner_preexisting_pvc),
        };

        E_CONFIG = getenv("B4BOX_TEST_KUBE_CONFIG");
        E_NS = getenv("B4BOX_TEST_KUBE_NAMESPACE");
        E_IMAGE = getenv("B4BOX_TEST_KUBE_IMAGE");
        E_URL = getenv("KUBE_FAKE_URL");
        E_ADMIN = getenv("KUBE_FAKE_ADMIN");
        E_STATE = getenv("KUBE_FAKE_STATE");
        if (!E_CONFIG || !E_NS || !E_IMAGE || !E_URL || !E_ADMIN || !E_STATE) {
                fprintf(stderr, "run me through tests/kubeprov/with-fake.sh\n");
                return 1;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
