/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decision tables of the kubernetes provider, without a server: the wait for Running's
 * fail-fast verdicts (src/lib/kube/wait.c: which Pod statuses keep waiting, which run, which
 * fail and with what words) and the PVC reaper's mark / clear / delete (reap.c).
 */

#include <string.h>

#include "b4-test.h"
#include "base/macro.h"
#include "json/json.h"
#include "kube/pool.h"
#include "kube/provider.h"
#include "kube/reap.h"

static enum kube_pod_verdict verdict_of(const char *json, unsigned seen, char *why)
{
        struct jv *pod = NULL;
        enum kube_pod_verdict v;

        assert_int_equal(jv_parse(json, strlen(json), &pod, NULL), 0);
        why[0] = '\0';
        v = kube_pod_verdict(pod, seen, why);
        jv_unref(pod);
        return v;
}

#define WAITING(reason, msg)                                                        \
 "{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\"," \
 "\"state\":{\"waiting\":{\"reason\":\"" reason "\",\"message\":\"" msg "\"}}}]}}"

static void test_table(void **state)
{
        static const struct {
                const char *pod;
                unsigned seen;
                enum kube_pod_verdict want;
                const char *why; /* a substring of the reason kept, or NULL */
        } cases[] = {
                { "{}", 1, KUBE_POD_WAIT, NULL },
                { "{\"status\":{\"phase\":\"Pending\"}}", 1, KUBE_POD_WAIT, NULL },
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\","
                  "\"state\":{\"running\":{\"startedAt\":\"x\"}}}]}}",
                  1, KUBE_POD_RUNNING, NULL },
                /* phase Running alone is not enough: the container must run */
                { "{\"status\":{\"phase\":\"Running\"}}", 1, KUBE_POD_WAIT, NULL },
                /* a running container of another name does not count */
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"other\","
                  "\"state\":{\"running\":{}}}]}}",
                  1, KUBE_POD_WAIT, NULL },
                { WAITING("ContainerCreating", ""), 3, KUBE_POD_WAIT, "ContainerCreating" },
                { WAITING("ErrImagePull", "pull access denied"), 1, KUBE_POD_FAILED,
                  "ErrImagePull: pull access denied" },
                { WAITING("ImagePullBackOff", "Back-off pulling image"), 1, KUBE_POD_FAILED,
                  "ImagePullBackOff" },
                { WAITING("InvalidImageName", "bad"), 1, KUBE_POD_FAILED, "InvalidImageName" },
                { WAITING("CrashLoopBackOff", "back-off"), 1, KUBE_POD_FAILED, "CrashLoopBackOff" },
                { WAITING("CreateContainerError", "x"), 1, KUBE_POD_WAIT, "CreateContainerError" },
                { WAITING("CreateContainerError", "x"), 2, KUBE_POD_FAILED,
                  "CreateContainerError" },
                { "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"}}", 1, KUBE_POD_FAILED,
                  "Evicted: entered Failed" },
                { "{\"status\":{\"phase\":\"Succeeded\"}}", 1, KUBE_POD_FAILED,
                  "entered Succeeded" },
                { "{\"metadata\":{\"deletionTimestamp\":\"t\"},\"status\":{\"phase\":\"Running\"}}",
                  1, KUBE_POD_FAILED, "Terminating" },
                /* Unschedulable keeps waiting (an autoscaler may add a node), named for the
                 * timeout's message */
                { "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                  "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are "
                  "available\"}]}}",
                  5, KUBE_POD_WAIT, "Unschedulable: 0/3 nodes are available" },
                /* sleep infinity not understood: the container terminated */
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\","
                  "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},\"lastState\":{"
                  "\"terminated\":{\"exitCode\":1,\"message\":\"sleep: invalid number "
                  "'infinity'\"}}}]}}",
                  1, KUBE_POD_FAILED, "exit code 1, sleep: invalid number 'infinity'" },
                /* hostile: control characters in the message are replaced, wrong types ignored */
                { WAITING("ErrImagePull", "a\\nb\\u001bc"), 1, KUBE_POD_FAILED,
                  "ErrImagePull: a b c" },
                { "{\"status\":{\"phase\":7,\"containerStatuses\":{\"name\":\"sandbox\"}}}", 1,
                  KUBE_POD_WAIT, NULL },
        };

        char why[KUBE_WHY_MAX];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                enum kube_pod_verdict v = verdict_of(cases[i].pod, cases[i].seen, why);

                if (v != cases[i].want)
                        fail_msg("case %zu: verdict %d, want %d (%s)", i, v, cases[i].want, why);
                if (cases[i].why && !strstr(why, cases[i].why))
                        fail_msg("case %zu: why \"%s\" lacks \"%s\"", i, why, cases[i].why);
        }
}

static void test_reap_decide(void **state)
{
        /* now = 2026-12-01T12:00:00Z */
        static const time_t now = 1796126400;

        static const struct {
                const char *pvc;
                bool referenced;
                unsigned ttl;
                enum kube_reap_action want;
        } cases[] = {
                { "{}", false, 168, KUBE_REAP_MARK },
                { "{}", true, 168, KUBE_REAP_NONE },

#define MARKED(t) "{\"metadata\":{\"annotations\":{\"b4box.io/unreferenced-since\":\"" t "\"}}}"
                { MARKED("2026-12-01T11:00:00Z"), true, 168, KUBE_REAP_CLEAR },
                { MARKED("2026-12-01T11:00:00Z"), false, 168, KUBE_REAP_NONE },
                { MARKED("2026-11-24T11:59:59Z"), false, 168, KUBE_REAP_DELETE },
                { MARKED("2026-11-24T12:00:00Z"), false, 168, KUBE_REAP_NONE }, /* exactly 168 h */
                { MARKED("2026-12-01T10:59:59Z"), false, 1, KUBE_REAP_DELETE },
                /* not valid: re-marked */
                { MARKED("yesterday"), false, 168, KUBE_REAP_MARK },
                { MARKED("2026-12-01T11:00:00+01:00"), false, 168, KUBE_REAP_MARK },
                { MARKED("2026-12-01T12:05:01Z"), false, 1, KUBE_REAP_MARK }, /* > 5 min ahead */
                { MARKED("2026-12-01T12:04:59Z"), false, 1, KUBE_REAP_NONE },
                { "{\"metadata\":{\"annotations\":{\"b4box.io/unreferenced-since\":7}}}", false, 1,
                  KUBE_REAP_MARK },
                /* never touched: terminating, or a managed workspace's record */
                { "{\"metadata\":{\"deletionTimestamp\":\"x\"}}", false, 1, KUBE_REAP_NONE },
                { "{\"metadata\":{\"annotations\":{\"b4box.io/workspace-record\":\"{}\","
                  "\"b4box.io/unreferenced-since\":\"2020-01-01T00:00:00Z\"}}}",
                  false, 1, KUBE_REAP_NONE },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct jv *pvc = NULL;
                enum kube_reap_action a;

                assert_int_equal(jv_parse(cases[i].pvc, strlen(cases[i].pvc), &pvc, NULL), 0);
                a = kube_reap_decide(pvc, cases[i].referenced, now, cases[i].ttl);
                jv_unref(pvc);
                if (a != cases[i].want)
                        fail_msg("case %zu: action %d, want %d", i, a, cases[i].want);
        }
}

/* Managed threads' images must be pinned (managed.c): <name>@sha256:<64 lowercase hex>. */
static void test_image_pinned(void **state)
{
        static const char hex[] =
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

        static const struct {
                const char *name, *digest;
                bool pinned;
        } rows[] = {
                { "debian", "@sha256:", true },
                { "registry.example:5000/team/img:1.2", "@sha256:", true }, /* tag and digest */
                { "debian:12", "", false },
                { "debian", "@sha512:", false },
                { "", "@sha256:", false },        /* no name */
                { "deb ian", "@sha256:", false }, /* not a reference */
                { "debian", "@SHA256:", false },
        };

        char ref[256];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                (void)snprintf(ref, sizeof(ref), "%s%s%s", rows[i].name, rows[i].digest,
                               *rows[i].digest ? hex : "");
                if (kube_image_pinned(ref) != rows[i].pinned)
                        fail_msg("row %zu: %s", i, ref);
        }
        (void)snprintf(ref, sizeof(ref), "debian@sha256:%.63s", hex); /* 63 hex */
        assert_false(kube_image_pinned(ref));
        (void)snprintf(ref, sizeof(ref), "debian@sha256:%s0", hex); /* 65 */
        assert_false(kube_image_pinned(ref));
        (void)snprintf(ref, sizeof(ref), "debian@sha256:%.63sA", hex); /* upper case */
        assert_false(kube_image_pinned(ref));
        assert_false(kube_image_pinned(NULL));
}

/* Warm pool pairs whose owner is gone: never adopted and older than the TTL. */
static void test_reap_pool(void **state)
{
        static const time_t now = 1796126400; /* 2026-12-01T12:00:00Z */

#define POOL(labels, ts, extra) \
 "{\"metadata\":{\"labels\":{" labels "},\"creationTimestamp\":\"" ts "\"" extra "}}"
#define OWNER "\"b4box.io/pool-owner\":\"replica-1\""

        static const struct {
                const char *obj;
                unsigned ttl;
                bool want;
        } cases[] = {
                { POOL(OWNER, "2026-12-01T10:59:59Z", ""), 1, true },
                { POOL(OWNER, "2026-12-01T11:00:00Z", ""), 1, false }, /* exactly the TTL */
                { POOL(OWNER, "2026-11-24T11:59:59Z", ""), 168, true },
                { POOL(OWNER, "2026-11-30T12:00:00Z", ""), 168, false },
                /* adopted: the thread's, the PVC reaper's rules */
                { POOL(OWNER ",\"b4.run/thread\":\"abc\"", "2020-01-01T00:00:00Z", ""), 1, false },
                /* not a pool object */
                { POOL("\"b4.run/thread\":\"abc\"", "2020-01-01T00:00:00Z", ""), 1, false },
                /* being deleted, or a timestamp that does not parse */
                { POOL(OWNER, "2020-01-01T00:00:00Z", ",\"deletionTimestamp\":\"x\""), 1, false },
                { POOL(OWNER, "last year", ""), 1, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct jv *o = NULL;
                bool got;

                assert_int_equal(jv_parse(cases[i].obj, strlen(cases[i].obj), &o, NULL), 0);
                got = kube_reap_pool_expired(o, now, cases[i].ttl);
                jv_unref(o);
                if (got != cases[i].want)
                        fail_msg("case %zu: %d, want %d", i, got, cases[i].want);
        }
}

/* The duplicate rule (pool.c): the oldest creationTimestamp wins, then the name. */
static void test_pool_oldest(void **state)
{
        static const char *const objs[] = {
                "{\"metadata\":{\"name\":\"b\",\"creationTimestamp\":\"2026-12-01T10:00:01Z\"}}",
                "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"2026-12-01T10:00:00Z\"}}",
                "{\"metadata\":{\"name\":\"a\",\"creationTimestamp\":\"2026-12-01T10:00:00Z\"}}",
                "{\"metadata\":{\"name\":\"d\",\"creationTimestamp\":\"2026-12-02T00:00:00Z\"}}",
        };
        struct jv *v[ELEMENTSOF(objs)];

        for (size_t i = 0; i < ELEMENTSOF(objs); i++)
                assert_int_equal(jv_parse(objs[i], strlen(objs[i]), &v[i], NULL), 0);
        assert_int_equal(kube_pool_oldest((const struct jv *const *)v, 0), -ENOENT);
        assert_int_equal(kube_pool_oldest((const struct jv *const *)v, 1), 0);
        assert_int_equal(kube_pool_oldest((const struct jv *const *)v, 2), 1);
        assert_int_equal(kube_pool_oldest((const struct jv *const *)v, 4), 2); /* a before c */
        for (size_t i = 0; i < ELEMENTSOF(objs); i++)
                jv_unref(v[i]);
}

static struct jv *pod_of(const char *uid, const char *rv, const char *phase)
{
        struct jv *o = jv_pack("{s:{s:s,s:s,s:s},s:{s:s}}", "metadata", "name", "p", "uid", uid,
                               "resourceVersion", rv, "status", "phase", phase);

        assert_non_null(o);
        return o;
}

static enum kube_pod_verdict cached(struct kube_cached_pod *cp, struct jv *o)
{
        char why[KUBE_WHY_MAX] = "";
        enum kube_pod_verdict v = kube_cached_pod_verdict(cp, o, why);

        jv_unref(o);
        return v;
}

#define REGISTRY_POD(rv)                                                          \
 "{\"metadata\":{\"uid\":\"B\",\"resourceVersion\":\"" rv "\"},\"status\":{"      \
 "\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":{" \
 "\"waiting\":{\"reason\":\"RegistryUnavailable\"}}}]}}"

#define RUNNING_POD(uid, rv)                                                       \
 "{\"metadata\":{\"uid\":\"" uid "\",\"resourceVersion\":\"" rv "\"},\"status\":{" \
 "\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":{"  \
 "\"running\":{}}}]}}"

static struct jv *parsed(const char *json)
{
        struct jv *o = NULL;

        assert_int_equal(jv_parse(json, strlen(json), &o, NULL), 0);
        return o;
}

/* The shared informer's cache (kube_cached_pod_verdict()): an older Pod of the name the cache
 * still holds (running, even) is not ours; one made again is "gone"; absent before ours is
 * seen is lag, after it a deletion; the same version told twice is one observation. */
static void test_cached(void **state)
{
        struct kube_cached_pod cp = { .uid = "B", .rv = "100" };
        struct kube_cached_pod lag = { .uid = "B", .rv = "100" };
        struct kube_cached_pod opaque = { .uid = "B", .rv = "xyz" };
        struct kube_cached_pod twice = { .uid = "B", .rv = "100" };

        assert_int_equal(cached(&cp, NULL), KUBE_POD_WAIT); /* not in the cache yet */
        assert_int_equal(cached(&cp, parsed(RUNNING_POD("A", "90"))), KUBE_POD_WAIT); /* older */
        assert_int_equal(cached(&cp, parsed(RUNNING_POD("B", "100"))), KUBE_POD_RUNNING);
        assert_int_equal(cached(&cp, pod_of("B", "101", "Pending")), KUBE_POD_WAIT);
        assert_int_equal(cached(&cp, NULL), KUBE_POD_GONE); /* deleted after it was seen */
        assert_int_equal(cached(&cp, pod_of("C", "120", "Pending")), KUBE_POD_GONE);

        /* another uid past the create's version: ours was deleted and made again unseen */
        assert_int_equal(cached(&lag, pod_of("C", "130", "Pending")), KUBE_POD_GONE);
        /* opaque versions: not compared, waited past */
        assert_int_equal(cached(&opaque, pod_of("C", "130", "Pending")), KUBE_POD_WAIT);

        /* RegistryUnavailable fails from the second observation, a version repeated is not one */
        assert_int_equal(cached(&twice, parsed(REGISTRY_POD("100"))), KUBE_POD_WAIT);
        assert_int_equal(cached(&twice, parsed(REGISTRY_POD("100"))), KUBE_POD_WAIT);
        assert_int_equal(cached(&twice, parsed(REGISTRY_POD("101"))), KUBE_POD_FAILED);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),        cmocka_unit_test(test_reap_decide),
                cmocka_unit_test(test_image_pinned), cmocka_unit_test(test_reap_pool),
                cmocka_unit_test(test_pool_oldest),  cmocka_unit_test(test_cached),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
