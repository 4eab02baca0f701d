/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Warm pools of the kubernetes provider (src/lib/kube/pool.c) through the library against
 * the fake API server (run by with-fake.sh): the requests of an adopting acquire and of the
 * first tool call (the fake's request log), the race of two providers sharing one pool,
 * the reattach of an adopted thread by a new provider instance (found by label), release
 * and acquire keeping the workspace, destroy removing the adopted PVC, the refill, and
 * duplicates after a crash mid-adoption (the oldest wins).
 *
 * While a step is measured the filler is held off by an injected 500 on PVC creation (its
 * first request for a new pair), and requests that met an injected fault are not counted:
 * what is left is the step's own.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/kube.h"

#include "b4-test.h"
#include "base/macro.h"
#include "json/json.h"

#define SCOPE "kubeprov-pool"
#define NS    "/api/v1/namespaces/b4-sandboxes"

static const char *E_CONFIG, *E_NS, *E_IMAGE, *E_URL, *E_ADMIN, *E_STATE;

/* ---- the fake (curl: not the code under test) ---- */

static struct jv *curl_json(const char *cmd)
{
        size_t cap = 4u << 20, len = 0, n;
        cleanup_free char *buf = malloc(cap);
        struct jv *v = NULL;
        FILE *f = popen(cmd, "r");

        assert_non_null(buf);
        assert_non_null(f);
        while ((n = fread(buf + len, 1, cap - 1 - len, f)) > 0)
                len += n;
        assert_int_equal(pclose(f), 0);
        buf[len] = '\0';
        if (len)
                assert_int_equal(jv_parse(buf, len, &v, NULL), 0);
        return v;
}

static struct jv *ctl(const char *method, const char *path, const char *json)
{
        cleanup_free char *cmd = NULL;

        assert_true(asprintf(&cmd,
                             "curl -sS --cacert '%s/ca.crt' -X %s -H 'Authorization: Bearer %s' "
                             "-H 'Content-Type: application/json' %s%s%s '%s%s'",
                             E_STATE, method, E_ADMIN, json ? "--data '" : "", json ? json : "",
                             json ? "'" : "", E_URL, path) > 0);
        return curl_json(cmd);
}

/* As the kubeconfig's user: GET, or PATCH with a merge patch. */
static struct jv *api(const char *method, const char *path, const char *patch)
{
        cleanup_free char *cmd = NULL;

        assert_true(
                asprintf(&cmd,
                         "curl -sS --cacert '%s/ca.crt' -X %s -H 'Authorization: Bearer '\"$(awk "
                         "'NR == 1 { print $1 }' '%s/token')\" %s%s%s '%s%s'",
                         E_STATE, method, E_STATE,
                         patch ? "-H 'Content-Type: application/merge-patch+json' --data '" : "",
                         patch ? patch : "", patch ? "'" : "", E_URL, path) > 0);
        return curl_json(cmd);
}

static const char *label_of(const struct jv *o, const char *key)
{
        return jv_string(jv_object_get(jv_object_get(jv_object_get(o, "metadata"), "labels"), key));
}

static const char *name_of(const struct jv *o)
{
        return jv_string(jv_object_get(jv_object_get(o, "metadata"), "name"));
}

static bool terminating(const struct jv *o)
{
        return jv_object_get(jv_object_get(o, "metadata"), "deletionTimestamp") != NULL;
}

/* The live (not terminating) objects of @resource matching @selector (URL-encoded). */
static struct jv *live(const char *resource, const char *selector)
{
        cleanup_free char *path = NULL;
        struct jv *all, *out = jv_array_new();

        assert_true(asprintf(&path, NS "/%s?labelSelector=%s", resource, selector) > 0);
        all = api("GET", path, NULL);
        for (size_t i = 0; i < jv_array_size(jv_object_get(all, "items")); i++) {
                struct jv *it = jv_array_get(jv_object_get(all, "items"), i);

                if (!terminating(it))
                        assert_int_equal(jv_array_append_new(out, jv_ref(it)), 0);
        }
        jv_unref(all);
        return out;
}

/* Ready pairs of @owner: PVCs labelled b4box.io/pool (set once the Pod runs with the
 * agent in it). */
static size_t ready(const char *owner)
{
        cleanup_free char *sel = NULL;
        struct jv *l;
        size_t n;

        assert_true(asprintf(&sel, "b4box.io%%2Fpool,b4box.io%%2Fpool-owner%%3D%s", owner) > 0);
        l = live("persistentvolumeclaims", sel);
        n = jv_array_size(l);
        jv_unref(l);
        return n;
}

static void wait_ready(const char *owner, size_t want)
{
        for (int i = 0; i < 600; i++) {
                if (ready(owner) >= want)
                        return;
                usleep(50 * 1000);
        }
        fail_msg("the pool of %s did not reach %zu ready pairs (%zu)", owner, want, ready(owner));
}

static void thread_id(const char *thread, char id[41])
{
        assert_int_equal(b4_resource_id(SCOPE, thread, id), 0);
}

/* The thread's live objects of @resource by its label. */
static struct jv *of_thread(const char *resource, const char *thread)
{
        cleanup_free char *sel = NULL;
        char id[41];

        thread_id(thread, id);
        assert_true(asprintf(&sel, "b4.run%%2Fthread%%3D%s", id) > 0);
        return live(resource, sel);
}

/* ---- counting a step: the fake's request log ---- */

static void hold_filler(bool hold)
{
        if (hold)
                jv_unref(ctl("POST", "/_fake/faults",
                             "{\"code\": 500, \"count\": 100000, \"verb\": \"create\", "
                             "\"resource\": \"persistentvolumeclaims\"}"));
        else
                jv_unref(ctl("DELETE", "/_fake/faults", NULL));
}

/* Each case starts with no fault left by one that failed. */
static int release_filler(void **state)
{
        (void)state;
        hold_filler(false);
        return 0;
}

static void log_reset(void)
{
        jv_unref(ctl("POST", "/_fake/log/reset", NULL));
        jv_unref(ctl("POST", "/_fake/counters/reset", NULL));
}

/* Exec streams started since the last reset (the log has an exec once its stream ends; the
 * counters count it when it starts). */
static int64_t execs_started(void)
{
        struct jv *v = ctl("GET", "/_fake/counters", NULL);
        int64_t n = jv_integer(jv_object_get(v, "execs"));

        jv_unref(v);
        return n;
}

struct tally {
        int patch_pvc, patch_pod, policy, reads, creates, deletes, execs, watches, total;
};

static struct tally tally(void)
{
        struct jv *l = ctl("GET", "/_fake/log?since=0", NULL);
        const struct jv *es = jv_object_get(l, "entries");
        struct tally t = { 0 };

        for (size_t i = 0; i < jv_array_size(es); i++) {
                const struct jv *e = jv_array_get(es, i);
                const char *verb = jv_string(jv_object_get(e, "verb")) ?: "";
                const char *res = jv_string(jv_object_get(e, "resource")) ?: "";

                if (jv_object_get(e, "fault") || !*verb)
                        continue;
                /* an exec is logged when its stream ends: execs_started() counts them */
                t.total += strcmp(verb, "exec") != 0;
                print_message("#   %s %s %s -> %lld\n", verb, res,
                              jv_string(jv_object_get(e, "name")) ?: "",
                              (long long)jv_integer(jv_object_get(e, "code")));
                if (strcmp(verb, "patch") == 0 && strcmp(res, "persistentvolumeclaims") == 0)
                        t.patch_pvc++;
                else if (strcmp(verb, "patch") == 0 && strcmp(res, "pods") == 0)
                        t.patch_pod++;
                else if (strcmp(res, "networkpolicies") == 0)
                        t.policy++;
                else if (strcmp(verb, "get") == 0 || strcmp(verb, "list") == 0)
                        t.reads++;
                else if (strcmp(verb, "create") == 0)
                        t.creates++;
                else if (strcmp(verb, "delete") == 0)
                        t.deletes++;
                else if (strcmp(verb, "exec") == 0)
                        t.execs++;
                else if (strcmp(verb, "watch") == 0)
                        t.watches++;
        }
        jv_unref(l);
        log_reset();
        return t;
}

/* ---- the provider ---- */

static struct b4_provider *pool_provider_filling(const char *owner, unsigned size, bool fill)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_error err = { 0 };
        struct b4_provider *p = NULL;

        cfg.type = strdup("kubernetes");
        cfg.scope = strdup(SCOPE);
        cfg.image = strdup(E_IMAGE);
        cfg.kube_namespace = strdup(E_NS);
        cfg.kubeconfig = strdup(E_CONFIG);
        cfg.kube_startup_timeout_ms = 20000;
        cfg.kube_pool = true;
        cfg.kube_pool_size = size;
        cfg.kube_pool_fill = fill;
        cfg.kube_pool_owner = strdup(owner);
        if (b4_provider_new(&cfg, &p, &err) < 0)
                fail_msg("provider: %s", err.msg);
        b4_provider_config_clear(&cfg);
        return p;
}

static struct b4_provider *pool_provider(const char *owner, unsigned size)
{
        return pool_provider_filling(owner, size, true);
}

static int try_acquire(struct b4_provider *p,
                       const char *thread,
                       struct b4_sandbox **ret,
                       struct b4_error *err)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
        int r;

        b4_policy_init(&pol);
        r = b4_provider_acquire(p, &req, ret, err);
        b4_policy_clear(&pol);
        return r;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *thread)
{
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;

        if (try_acquire(p, thread, &sb, &err) < 0)
                fail_msg("acquire %s: %s", thread, err.msg);
        return sb;
}

static char *read_text(struct b4_sandbox *sb, const char *path)
{
        struct b4_error err = { 0 };
        char *data = NULL;
        size_t len = 0;

        if (b4_fs_read_file(&sb->fs, path, 1 << 16, &data, &len, &err) < 0)
                fail_msg("read %s: %s", path, err.msg);
        return data;
}

static uint64_t now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- cases ---- */

/* A pool pair before adoption: managed by b4 (the chart's deny-all selects it), no thread
 * label (no per-thread policy opens it), the owner's label. */
static void check_pool_pod(const char *owner)
{
        cleanup_free char *sel = NULL;
        struct jv *pods;

        assert_true(asprintf(&sel, "b4box.io%%2Fpool,b4box.io%%2Fpool-owner%%3D%s", owner) > 0);
        pods = live("pods", sel);
        assert_true(jv_array_size(pods) > 0);
        for (size_t i = 0; i < jv_array_size(pods); i++) {
                const struct jv *pod = jv_array_get(pods, i);

                assert_string_equal(label_of(pod, "app.kubernetes.io/managed-by"), "b4");
                assert_null(label_of(pod, "b4.run/thread"));
                assert_string_equal(label_of(pod, "b4box.io/role"), "keeper");
        }
        jv_unref(pods);
}

/* Adoption: 2 patches + the policy step, 0 reads; the first tool call only the agent's
 * session; the pod then the thread's; release 1 write; a returning thread keeps its
 * workspace and never takes a pair; destroy removes the adopted PVC; the refill. */
static void test_adopt(void **state)
{
        struct b4_provider *p = pool_provider("owner-a", 2);
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        cleanup_free char *data = NULL;
        struct jv *pvcs, *pods;
        uint64_t t0, t1, t2;
        int64_t execs;
        struct tally t;

        wait_ready("owner-a", 2);
        check_pool_pod("owner-a");
        hold_filler(true);
        log_reset();
        t0 = now_us();
        sb = acquire(p, "adopt");
        t1 = now_us();
        t = tally();
        print_message("# adopting acquire: %d requests (%d PVC patch, %d Pod patch, %d policy, "
                      "%d reads), %.1f ms\n",
                      t.total, t.patch_pvc, t.patch_pod, t.policy, t.reads,
                      (double)(t1 - t0) / 1000.0);
        assert_int_equal(t.patch_pvc, 1);
        assert_int_equal(t.patch_pod, 1);
        assert_int_equal(t.policy, 1); /* allow mode: the DELETE of a stale deny policy */
        assert_int_equal(t.reads, 0);
        assert_int_equal(t.total, 3);
        /* the adopted PVC is new to the thread: a managed workspace materialises into it
         * (as into one this acquire created), with no request to say so */
        {
                enum b4_storage_state ss = B4_STORAGE_READY;

                assert_int_equal(b4_provider_workspace_check(p, "adopt", "intent", &ss, &err), 0);
                assert_int_equal(ss, B4_STORAGE_EMPTY);
        }

        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/kept", "kept", 4, &err), 0);
        t2 = now_us();
        execs = execs_started();
        t = tally();
        print_message("# first tool call: %d other requests, %lld execs; acquire to first call "
                      "%.1f ms\n",
                      t.total, (long long)execs, (double)(t2 - t0) / 1000.0);
        assert_int_equal(execs, 1); /* the agent's session: the filler copied the agent */
        assert_int_equal(t.total, 0);

        /* the pair is the thread's now, one PVC and one Pod, no longer in the pool */
        pvcs = of_thread("persistentvolumeclaims", "adopt");
        pods = of_thread("pods", "adopt");
        assert_int_equal(jv_array_size(pvcs), 1);
        assert_int_equal(jv_array_size(pods), 1);
        assert_non_null(strstr(name_of(jv_array_get(pvcs, 0)), "-pool-"));
        assert_null(label_of(jv_array_get(pvcs, 0), "b4box.io/pool"));
        assert_null(label_of(jv_array_get(pods, 0), "b4box.io/pool"));
        jv_unref(pvcs);
        jv_unref(pods);
        /* a workspace reader finds the adopted PVC (not the deterministic name) */
        {
                struct b4_reader_req rq = {
                        .thread_id = "adopt", .run_as_non_root = true, .uid = 1000, .gid = 1000
                };
                struct b4_reader *rd = NULL;
                char *got = NULL;
                size_t len = 0;

                if (b4_provider_open_reader(p, &rq, &rd, &err) < 0)
                        fail_msg("reader: %s", err.msg);
                assert_int_equal(b4_fs_read_file(b4_reader_fs(rd), "/workspace/kept", 1024, &got,
                                                 &len, &err),
                                 0);
                assert_string_equal(got, "kept");
                free(got);
                b4_reader_free(rd);
        }
        hold_filler(false);
        wait_ready("owner-a", 2); /* refilled */

        /* release: the Pod only; a returning thread never adopts and finds its workspace */
        b4_sandbox_unref(sb);
        hold_filler(true);
        log_reset();
        assert_int_equal(b4_provider_release(p, "adopt", &err), 0);
        t = tally();
        assert_int_equal(t.deletes, 1);
        assert_int_equal(t.total, 1);
        sb = acquire(p, "adopt");
        t = tally();
        assert_int_equal(t.patch_pvc + t.patch_pod, 0);
        data = read_text(sb, "/workspace/kept");
        assert_string_equal(data, "kept");
        pvcs = of_thread("persistentvolumeclaims", "adopt");
        assert_int_equal(jv_array_size(pvcs), 1); /* no second PVC */
        jv_unref(pvcs);
        b4_sandbox_unref(sb);
        hold_filler(false);

        /* destroy: the adopted PVC goes */
        assert_int_equal(b4_provider_destroy(p, "adopt", &err), 0);
        pvcs = of_thread("persistentvolumeclaims", "adopt");
        pods = of_thread("pods", "adopt");
        assert_int_equal(jv_array_size(pvcs), 0);
        assert_int_equal(jv_array_size(pods), 0);
        jv_unref(pvcs);
        jv_unref(pods);
        wait_ready("owner-a", 2);

        /* acquired again at once: a new thread, a fresh workspace (never the destroyed PVC) */
        sb = acquire(p, "adopt");
        {
                struct b4_stat st;

                assert_int_equal(b4_fs_lstat(&sb->fs, "/workspace/kept", &st, &err), -ENOENT);
        }
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "adopt", &err), 0);
        wait_ready("owner-a", 2);
        b4_provider_free(p);
        assert_int_equal(ready("owner-a"), 0); /* free deletes its own pool */
}

/* A new provider instance (a restart) finds an adopted thread by label: same workspace, no
 * second PVC, no pair taken. */
static void test_reattach_after_restart(void **state)
{
        struct b4_provider *p = pool_provider("owner-r", 1);
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        cleanup_free char *data = NULL;
        struct jv *pvcs;
        struct tally t;

        wait_ready("owner-r", 1);
        sb = acquire(p, "restart");
        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/f", "before", 6, &err), 0);
        b4_sandbox_unref(sb);
        b4_provider_free(p);

        p = pool_provider("owner-r", 1);
        wait_ready("owner-r", 1);
        hold_filler(true);
        log_reset();
        sb = acquire(p, "restart");
        t = tally();
        print_message("# reattach of an adopted thread after a restart: %d requests (%d "
                      "reads)\n",
                      t.total, t.reads);
        assert_int_equal(t.patch_pvc + t.patch_pod, 0);
        data = read_text(sb, "/workspace/f");
        assert_string_equal(data, "before");
        pvcs = of_thread("persistentvolumeclaims", "restart");
        assert_int_equal(jv_array_size(pvcs), 1);
        jv_unref(pvcs);
        assert_int_equal(ready("owner-r"), 1); /* the pool's pair untouched */
        hold_filler(false);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "restart", &err), 0);
        b4_provider_free(p);
}

struct racer {
        struct b4_provider *p;
        char thread[32];
        struct b4_sandbox *sb;
        int r;
        char msg[512];
};

static void *race(void *arg)
{
        struct racer *x = arg;
        struct b4_error err = { 0 };

        x->r = try_acquire(x->p, x->thread, &x->sb, &err);
        snprintf(x->msg, sizeof(x->msg), "%s", err.msg);
        return NULL;
}

/* Two providers sharing one pool (one owner), 6 new threads at once on 4 pairs: every
 * thread gets exactly one PVC and one Pod, none shared; 409 losers took the next pair or
 * went cold. */
static void test_race(void **state)
{
        struct b4_provider *a = pool_provider("owner-shared", 4),
                           *b = pool_provider("owner-shared", 4);
        struct racer x[6];
        pthread_t th[6];
        struct jv *seen = jv_object_new();
        struct b4_error err = { 0 };
        size_t adopted = 0;

        wait_ready("owner-shared", 4);
        for (size_t i = 0; i < ELEMENTSOF(x); i++) {
                x[i] = (struct racer){ .p = i % 2 ? b : a };
                snprintf(x[i].thread, sizeof(x[i].thread), "race-%zu", i);
        }
        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                assert_int_equal(pthread_create(&th[i], NULL, race, &x[i]), 0);
        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                pthread_join(th[i], NULL);
        for (size_t i = 0; i < ELEMENTSOF(x); i++) {
                struct jv *pvcs, *pods;
                cleanup_free char *path = NULL;

                if (x[i].r < 0)
                        fail_msg("%s: %s", x[i].thread, x[i].msg);
                pvcs = of_thread("persistentvolumeclaims", x[i].thread);
                pods = of_thread("pods", x[i].thread);
                assert_int_equal(jv_array_size(pvcs), 1);
                assert_int_equal(jv_array_size(pods), 1);
                assert_null(jv_object_get(seen, name_of(jv_array_get(pvcs, 0))));
                assert_null(jv_object_get(seen, name_of(jv_array_get(pods, 0))));
                assert_int_equal(
                        jv_object_set_new(seen, name_of(jv_array_get(pvcs, 0)), jv_bool_new(true)),
                        0);
                assert_int_equal(
                        jv_object_set_new(seen, name_of(jv_array_get(pods, 0)), jv_bool_new(true)),
                        0);
                adopted += strstr(name_of(jv_array_get(pvcs, 0)), "-pool-") != NULL;
                /* each its own workspace */
                assert_true(asprintf(&path, "/workspace/%s", x[i].thread) > 0);
                assert_int_equal(b4_fs_write_file(&x[i].sb->fs, path, "x", 1, &err), 0);
                jv_unref(pvcs);
                jv_unref(pods);
        }
        print_message("# race: %zu of %zu threads adopted a pair, the rest went cold\n", adopted,
                      ELEMENTSOF(x));
        assert_true(adopted >= 1);
        for (size_t i = 0; i < ELEMENTSOF(x); i++) {
                b4_sandbox_unref(x[i].sb);
                assert_int_equal(b4_provider_destroy(x[i].p, x[i].thread, &err), 0);
        }
        jv_unref(seen);
        b4_provider_free(a);
        b4_provider_free(b);
}

/* A crash mid-adoption left the thread two adopted PVCs: a new instance takes the oldest
 * and deletes the other (never attached: only its pool Pod ever mounted it). */
static void test_duplicates(void **state)
{
        struct b4_provider *p = pool_provider("owner-d", 2);
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        struct jv *pvcs, *mine;
        cleanup_free char *patch = NULL, *oldest = NULL;
        char id[41];

        wait_ready("owner-d", 2);
        b4_provider_free(p); /* its pool is deleted: make the duplicates by hand first */
        p = pool_provider("owner-d", 2);
        wait_ready("owner-d", 2);
        hold_filler(true);
        thread_id("dup", id);
        assert_true(asprintf(&patch,
                             "{\"metadata\": {\"labels\": {\"b4.run/thread\": \"%s\", "
                             "\"b4box.io/pool\": null}}}",
                             id) > 0);
        pvcs = live("persistentvolumeclaims", "b4box.io%2Fpool,b4box.io%2Fpool-owner%3Downer-d");
        assert_int_equal(jv_array_size(pvcs), 2);
        for (size_t i = 0; i < 2; i++) {
                const struct jv *pvc = jv_array_get(pvcs, i);
                const char *ts = jv_string(
                        jv_object_get(jv_object_get(pvc, "metadata"), "creationTimestamp"));
                cleanup_free char *path = NULL;

                if (!oldest || strcmp(ts, oldest) < 0) {
                        free(oldest);
                        oldest = strdup(ts);
                }
                assert_true(asprintf(&path, NS "/persistentvolumeclaims/%s", name_of(pvc)) > 0);
                jv_unref(api("PATCH", path, patch)); /* crashed before the Pod's patch */
        }
        b4_provider_free(p);

        p = pool_provider("owner-d", 0);
        sb = acquire(p, "dup");
        mine = of_thread("persistentvolumeclaims", "dup");
        assert_int_equal(jv_array_size(mine), 1);
        assert_string_equal(
                jv_string(jv_object_get(jv_object_get(jv_array_get(mine, 0), "metadata"),
                                        "creationTimestamp")),
                oldest);
        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/d", "d", 1, &err), 0);
        jv_unref(mine);
        jv_unref(pvcs);
        b4_sandbox_unref(sb);
        hold_filler(false);
        assert_int_equal(b4_provider_destroy(p, "dup", &err), 0);
        b4_provider_free(p);
}

/* A cold provider (no warmPool): deterministic names. */
static struct b4_provider *cold_provider(void)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_error err = { 0 };
        struct b4_provider *p = NULL;

        cfg.type = strdup("kubernetes");
        cfg.scope = strdup(SCOPE);
        cfg.image = strdup(E_IMAGE);
        cfg.kube_namespace = strdup(E_NS);
        cfg.kubeconfig = strdup(E_CONFIG);
        cfg.kube_startup_timeout_ms = 20000;
        if (b4_provider_new(&cfg, &p, &err) < 0)
                fail_msg("provider: %s", err.msg);
        b4_provider_config_clear(&cfg);
        return p;
}

/* A duplicate that was attached is not deleted: the acquire is refused. Here the thread's
 * own cold PVC (made by a provider without a pool) is younger than a pool PVC that also got
 * its label: the pool PVC is the oldest, the cold one may hold work. */
static void test_duplicate_in_use_refused(void **state)
{
        struct b4_provider *p = pool_provider("owner-d2", 1), *q;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = NULL;
        cleanup_free char *patch = NULL, *path = NULL;
        struct jv *pvcs, *mine;
        char id[41];
        int r;

        wait_ready("owner-d2", 1);
        sleep(1); /* creationTimestamp has whole seconds */
        q = cold_provider();
        sb = acquire(q, "dup2");
        assert_int_equal(b4_fs_write_file(&sb->fs, "/workspace/work", "w", 1, &err), 0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(q, "dup2", &err), 0);
        b4_provider_free(q);

        thread_id("dup2", id);
        pvcs = live("persistentvolumeclaims", "b4box.io%2Fpool,b4box.io%2Fpool-owner%3Downer-d2");
        assert_int_equal(jv_array_size(pvcs), 1);
        assert_true(asprintf(&path, NS "/persistentvolumeclaims/%s",
                             name_of(jv_array_get(pvcs, 0))) > 0);
        assert_true(asprintf(&patch,
                             "{\"metadata\": {\"labels\": {\"b4.run/thread\": \"%s\", "
                             "\"b4box.io/pool\": null}}}",
                             id) > 0);
        jv_unref(api("PATCH", path, patch));
        jv_unref(pvcs);
        b4_provider_free(p);

        p = pool_provider("owner-d2", 0);
        sb = NULL;
        r = try_acquire(p, "dup2", &sb, &err);
        assert_true(r < 0);
        assert_null(sb);
        assert_non_null(strstr(err.msg, "two workspace claims in use"));
        mine = of_thread("persistentvolumeclaims", "dup2");
        assert_int_equal(jv_array_size(mine), 2); /* nothing deleted */
        jv_unref(mine);
        assert_int_equal(b4_provider_destroy(p, "dup2", &err), 0);
        mine = of_thread("persistentvolumeclaims", "dup2");
        assert_int_equal(jv_array_size(mine), 0); /* destroy takes every labelled PVC */
        jv_unref(mine);
        b4_provider_free(p);
}

/* Two replicas, each its own owner and pool: each thread adopts from its provider's pool. */
static void test_two_owners(void **state)
{
        struct b4_provider *a = pool_provider("owner-x", 2), *b = pool_provider("owner-y", 2);
        struct racer x[4];
        pthread_t th[4];
        struct b4_error err = { 0 };

        wait_ready("owner-x", 2);
        wait_ready("owner-y", 2);
        for (size_t i = 0; i < ELEMENTSOF(x); i++) {
                x[i] = (struct racer){ .p = i % 2 ? b : a };
                snprintf(x[i].thread, sizeof(x[i].thread), "owners-%zu", i);
                assert_int_equal(pthread_create(&th[i], NULL, race, &x[i]), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                pthread_join(th[i], NULL);
        for (size_t i = 0; i < ELEMENTSOF(x); i++) {
                struct jv *pvcs;

                if (x[i].r < 0)
                        fail_msg("%s: %s", x[i].thread, x[i].msg);
                pvcs = of_thread("persistentvolumeclaims", x[i].thread);
                assert_int_equal(jv_array_size(pvcs), 1);
                assert_string_equal(label_of(jv_array_get(pvcs, 0), "b4box.io/pool-owner"),
                                    i % 2 ? "owner-y" : "owner-x");
                jv_unref(pvcs);
                b4_sandbox_unref(x[i].sb);
                assert_int_equal(b4_provider_destroy(x[i].p, x[i].thread, &err), 0);
        }
        b4_provider_free(a);
        b4_provider_free(b);
}

static void reap_line(const char *line, void *userdata)
{
        size_t *n = userdata;

        print_message("# reap: %s\n", line);
        *n += strstr(line, "pool") != NULL || strstr(line, "-pool-") != NULL;
}

/* `b4box kube reap` within the TTL leaves a live pool alone: its PVCs are mounted by their
 * Pods (never marked) and younger than the TTL (kube_reap_pool_expired(), tested row by
 * row in kube-verdict). */
static void test_reap_keeps_live_pool(void **state)
{
        struct b4_provider *p = pool_provider("owner-reap", 1);
        struct b4_provider_config cfg = { 0 };
        struct b4_kube_reap_opts o = { .provider = &cfg, .ttl_hours = 1 };
        struct b4_error err = { 0 };
        size_t pool_lines = 0;

        wait_ready("owner-reap", 1);
        /* a one-shot command of the same owner (b4box check, a local run) neither fills the
         * pool nor, at its end, empties it */
        b4_provider_free(pool_provider_filling("owner-reap", 3, false));
        assert_int_equal(ready("owner-reap"), 1);
        cfg.type = strdup("kubernetes");
        cfg.kubeconfig = strdup(E_CONFIG);
        cfg.kube_namespace = strdup(E_NS);
        if (b4_kube_reap(&o, reap_line, &pool_lines, &err) < 0)
                fail_msg("reap: %s", err.msg);
        b4_provider_config_clear(&cfg);
        assert_int_equal(pool_lines, 0);
        assert_int_equal(ready("owner-reap"), 1);
        b4_provider_free(p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_adopt, release_filler),
                cmocka_unit_test_setup(test_reattach_after_restart, release_filler),
                cmocka_unit_test_setup(test_race, release_filler),
                cmocka_unit_test_setup(test_duplicates, release_filler),
                cmocka_unit_test_setup(test_duplicate_in_use_refused, release_filler),
                cmocka_unit_test_setup(test_two_owners, release_filler),
                cmocka_unit_test_setup(test_reap_keeps_live_pool, release_filler),
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
