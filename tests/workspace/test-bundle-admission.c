/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed admission over the fake provider: a static definition materialised at the first
 * run; a thread resolver run exactly once across concurrent first runs (a thread and its
 * child share one sandbox) and across a restart; declarative targets; network widening
 * refused; a resolver's network lists narrowing the app's; a hanging resolver hits its deadline;
 * failures leave nothing stored; a thread with a workspace but no record is refused.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "b4-test.h"
#include "runtime/runtime-internal.h"
#include "store/store.h"
#include "tools/tools.h"

struct fx {
        char *dir;
        char *state;
        struct b4_config *cfg;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
};

static struct fx F;

static void put(const char *rel, const char *text, mode_t mode)
{
        char p[4096];

        snprintf(p, sizeof(p), "%s/%s", F.dir, rel);
        for (char *s = p + strlen(F.dir) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                (void)mkdir(p, 0755);
                *s = '/';
        }
        assert_int_equal(b4_test_write(p, text), 0);
        assert_int_equal(chmod(p, mode), 0);
}

static void runtime_up(void)
{
        struct b4_error err = { 0 };
        struct b4_runtime_options o = { .provider = F.provider,
                                        .store = F.store,
                                        .policy = b4_config_policy(F.cfg),
                                        .config = F.cfg };

        if (b4_runtime_new(&o, &F.rt, &err) < 0)
                fail_msg("runtime: %s", err.msg);
}

/* Start with @sandbox_json as the config's sandbox block (base dir = the temp dir). */
static void start(const char *sandbox_json)
{
        char *json = NULL, **errors = NULL;
        struct b4_error err = { 0 };

        assert_true(asprintf(&json, "{\"sandbox\": %s}", sandbox_json) > 0);
        if (b4_config_parse(json, strlen(json), F.dir, &F.cfg, &errors, &err) < 0)
                fail_msg("config: %s", errors ? errors[0] : err.msg);
        free(json);
        assert_int_equal(b4_store_open(F.state, B4_STORE_EXCLUSIVE, &F.store, NULL), 0);
        assert_int_equal(b4_provider_new(&F.cfg->sandbox.provider, &F.provider, NULL), 0);
        runtime_up();
}

static int setup(void **state)
{
        char p[4096];

        F.dir = b4_test_tmpdir();
        snprintf(p, sizeof(p), "%s/state", F.dir);
        F.state = strdup(p);
        put("ws/main.txt", "hello", 0644);
        put("ws/bin/run.sh", "#!/bin/sh\n", 0755);
        return 0;
}

static int teardown(void **state)
{
        b4_runtime_free(F.rt);
        b4_provider_free(F.provider);
        b4_store_close(F.store);
        b4_config_free(F.cfg);
        b4_test_rmrf(F.dir);
        free(F.dir);
        free(F.state);
        memset(&F, 0, sizeof(F));
        return 0;
}

static void create_thread(const char *id, const char *meta, const char *parent)
{
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };

        if (b4_runtime_thread_create(F.rt, id, meta, parent, NULL, &row, &err) < 0)
                fail_msg("create: %s", err.msg);
        b4_thread_row_clear(&row);
}

static int run_once(const char *id, struct b4_error *err)
{
        struct b4_run *run = NULL;
        int r = b4_runtime_run_begin(F.rt, id, &run, err);

        b4_run_end(run);
        return r;
}

static void expect_file(const char *id, const char *path, const char *text, bool exec)
{
        struct b4_run *run = NULL;
        struct b4_stat st = { 0 };
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(b4_runtime_run_begin(F.rt, id, &run, NULL), 0);
        struct b4_fs *fs = b4_sandbox_fs(b4_run_sandbox(run));
        assert_int_equal(b4_fs_read_file(fs, path, B4_UNBOUNDED, &data, &len, NULL), 0);
        assert_string_equal(data, text);
        assert_int_equal(b4_fs_lstat(fs, path, &st, NULL), 0);
        assert_int_equal(st.executable, exec);
        b4_stat_clear(&st);
        free(data);
        b4_run_end(run);
}

static bool has_association(const char *id)
{
        struct b4_association a = { 0 };
        int r = b4_store_association_get(F.store, id, &a, NULL);

        b4_association_clear(&a);
        return r == 0;
}

#define STATIC_WS                                                                      \
 "{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"workspace\": {\"source\": " \
 "{\"directory\": \"ws\", \"include\": [\"main.txt\", \"bin/run.sh\"]}}}"

static void test_static(void **state)
{
        start(STATIC_WS);
        create_thread("t1", NULL, NULL);
        assert_false(has_association("t1"));
        expect_file("t1", "/workspace/main.txt", "hello", false);
        expect_file("t1", "/workspace/bin/run.sh", "#!/bin/sh\n", true);

        struct b4_association a = { 0 };
        assert_int_equal(b4_store_association_get(F.store, "t1", &a, NULL), 0);
        assert_string_equal(a.state, "ready");
        assert_int_equal(a.revision, 2);
        b4_association_clear(&a);

        /* the source changes: a released, restarted thread keeps what it was admitted with */
        put("ws/main.txt", "changed", 0644);
        assert_int_equal(b4_runtime_thread_release(F.rt, "t1", NULL), 0);
        b4_runtime_free(F.rt);
        runtime_up();
        expect_file("t1", "/workspace/main.txt", "hello", false);

        /* a new thread is captured afresh, and an inventory mismatch refuses it */
        put("ws/extra.txt", "x", 0644);
        create_thread("t2", NULL, NULL);
        struct b4_error err = { 0 };
        assert_int_equal(run_once("t2", &err), -EINVAL);
        assert_string_equal(
                err.msg, "Source exact inventory mismatch: 'extra.txt' is not listed in include");
        assert_false(has_association("t2"));

        /* deletion forgets the association: the id is admissible again */
        assert_int_equal(b4_runtime_thread_delete(F.rt, "t1", NULL), 0);
        assert_false(has_association("t1"));
}

/* A thread resolver that counts its runs in <dir>/count and answers @answer. */
static void resolver(const char *answer, const char *extra)
{
        char *s = NULL;

        assert_true(
                asprintf(
                        &s,
                        "#!/bin/sh\nread -r input\necho \"$input\" >> \"$(dirname \"$0\")/count\"\n"
                        "%s\ncat <<'EOF'\n%s\nEOF\n",
                        extra, answer) > 0);
        put("resolve.sh", s, 0755);
        free(s);
}

static int count_runs(void)
{
        char p[4096], line[4096];
        FILE *f;
        int n = 0;

        snprintf(p, sizeof(p), "%s/count", F.dir);
        f = fopen(p, "r");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                n++;
        fclose(f);
        return n;
}

#define THREAD_ANSWER                                                                    \
 "{\"workspace\": {\"source\": {\"directory\": \"ws\", \"include\": [\"main.txt\", "     \
 "\"bin/run.sh\"]}}, \"policy\": {\"network\": {\"mode\": \"deny\"}, \"env\": {\"A\": "  \
 "\"1\"}, \"resources\": {\"memoryMb\": 256}}, \"permissions\": {\"allow\": {\"bash\": " \
 "[\"ls\"]}}}"

/* A first run: the record its admission writes already gives the run its permissions. */
static void *first_run(void *arg)
{
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        int r = b4_runtime_run_begin(F.rt, arg, &run, &err);

        if (r < 0)
                print_error("run %s: %d %s\n", (char *)arg, r, err.msg);
        else if (!run->perms)
                r = b4_error_set(&err, -EPROTO, "run %s: no permissions from the record",
                                 (char *)arg);
        b4_run_end(run);
        return (void *)(intptr_t)r;
}

static void test_thread_resolver_once(void **state)
{
        void *r1, *r2;
        pthread_t a, b;

        resolver(THREAD_ANSWER, "sleep 0.3");
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"thread\": {\"command\": "
              "[\"./resolve.sh\"], \"timeoutMs\": 5000}}");
        create_thread("p", "{\"tier\":\"x\"}", NULL);
        create_thread("c", NULL, "p"); /* shares p's sandbox */
        pthread_create(&a, NULL, first_run, (void *)"p");
        pthread_create(&b, NULL, first_run, (void *)"c");
        pthread_join(a, &r1);
        pthread_join(b, &r2);
        assert_int_equal((intptr_t)r1, 0);
        assert_int_equal((intptr_t)r2, 0);
        assert_int_equal(count_runs(), 1);
        expect_file("p", "/workspace/main.txt", "hello", false);

        /* it saw the thread id and metadata on stdin */
        char p[4096], *in = NULL;
        size_t len = 0;
        snprintf(p, sizeof(p), "%s/count", F.dir);
        FILE *f = fopen(p, "r");
        assert_non_null(f);
        assert_true(getline(&in, &len, f) > 0);
        fclose(f);
        assert_non_null(strstr(in, "\"threadId\":\"p\""));
        assert_non_null(strstr(in, "\"metadata\":{\"tier\":\"x\"}"));
        assert_non_null(strstr(in, "\"staged\":null"));
        free(in);

        /* the record holds the choice, canonical */
        char *digest = NULL, *payload = NULL;
        assert_int_equal(b4_store_record_get(F.store, "p", &digest, &payload, NULL), 0);
        assert_string_equal(payload,
                            "{\"permissions\":{\"allow\":{\"bash\":[\"ls\"]}},\"policy\":{\"env\":"
                            "{\"A\":\"1\"},\"network\":{\"mode\":\"deny\"},\"resources\":{"
                            "\"memoryMb\":256}},\"version\":1}");
        free(digest);
        free(payload);

        /* the record's permissions are the thread's (and its child's) lists, for the run */
        struct b4_run *run = NULL;
        assert_int_equal(b4_runtime_run_begin(F.rt, "c", &run, NULL), 0);
        assert_non_null(run->perms);
        assert_int_equal(b4_permissions_match(run->perms, "bash", "ls x"), B4_PERMISSION_ALLOW);
        assert_int_equal(b4_permissions_match(run->perms, "bash", "rm x"), B4_PERMISSION_UNKNOWN);
        b4_run_end(run);

        /* across a restart: the resolver is not run again */
        assert_int_equal(b4_runtime_thread_release(F.rt, "p", NULL), 0);
        b4_runtime_free(F.rt);
        runtime_up();
        assert_int_equal(run_once("c", NULL), 0);
        assert_int_equal(count_runs(), 1);
}

static void test_targets(void **state)
{
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"thread\": {\"targets\": "
              "{\"key\": \"tier\", \"values\": {\"big\": {\"workspace\": {\"source\": "
              "{\"directory\": \"ws\", \"include\": [\"main.txt\", \"bin/run.sh\"]}}, "
              "\"policy\": {\"resources\": {\"memoryMb\": 4096}}}}}}}");
        create_thread("big", "{\"tier\":\"big\"}", NULL);
        create_thread("none", "{\"tier\":\"small\"}", NULL);
        expect_file("big", "/workspace/main.txt", "hello", false);
        struct b4_error err = { 0 };
        assert_int_equal(run_once("none", &err), -EINVAL);
        assert_string_equal(err.msg, "Thread none: metadata \"tier\" selects no sandbox target "
                                     "and there is no default");
        assert_false(has_association("none"));
}

static void test_network_widening(void **state)
{
        struct b4_error err = { 0 };

        resolver("{\"workspace\": {\"source\": {\"directory\": \"ws\", \"include\": "
                 "[\"main.txt\", \"bin/run.sh\"]}}, \"policy\": {\"network\": {\"mode\": "
                 "\"allow\"}}}",
                 "");
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"network\": {\"mode\": "
              "\"deny\"}, \"thread\": {\"command\": [\"./resolve.sh\"]}}");
        create_thread("w", NULL, NULL);
        assert_int_equal(run_once("w", &err), -EPERM);
        assert_int_equal(err.code, B4_CODE_THREAD_REFUSED);
        assert_string_equal(err.msg, "A thread's sandbox policy may not open the network the "
                                     "app's policy denies");
        assert_false(has_association("w"));
        char *d = NULL, *p = NULL;
        assert_int_equal(b4_store_record_get(F.store, "w", &d, &p, NULL), -ENOENT);
}

/* A resolver's thread lists: one that narrows the app's is recorded and applied again after a
 * restart; one that does not is a thread_refused with the entry and the reason. */
static void test_network_lists(void **state)
{
        static const char ws[] = "{\"workspace\": {\"source\": {\"directory\": \"ws\", "
                                 "\"include\": [\"main.txt\", \"bin/run.sh\"]}}, \"policy\": "
                                 "{\"network\": "
                                 "{\"mode\": \"deny\", \"allowlist\": ";
        struct b4_error err = { 0 };
        char *answer = NULL, *d = NULL, *p = NULL;

        assert_true(asprintf(&answer, "%s[\"api.example.com:443\", \"10.1.0.0/16\"]}}}", ws) > 0);
        resolver(answer, "");
        free(answer);
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"network\": {\"mode\": "
              "\"deny\", \"allowlist\": [\"*.example.com:443\", \"10.0.0.0/8\"]}, \"thread\": "
              "{\"command\": [\"./resolve.sh\"]}}");
        create_thread("in", NULL, NULL);
        assert_int_equal(run_once("in", NULL), 0);
        assert_int_equal(b4_store_record_get(F.store, "in", &d, &p, NULL), 0);
        assert_non_null(strstr(p, "\"network\":{\"allowlist\":[\"api.example.com:443\","
                                  "\"10.1.0.0/16\"],\"mode\":\"deny\"}"));
        free(d);
        free(p);
        assert_int_equal(b4_runtime_thread_release(F.rt, "in", NULL), 0);
        b4_runtime_free(F.rt);
        runtime_up();
        assert_int_equal(run_once("in", NULL), 0);

        assert_true(asprintf(&answer, "%s[\"10.1.0.0/16\", \"api.example.com\"]}}}", ws) > 0);
        resolver(answer, "");
        free(answer);
        create_thread("out", NULL, NULL);
        assert_int_equal(run_once("out", &err), -EPERM);
        assert_int_equal(err.code, B4_CODE_THREAD_REFUSED);
        assert_string_equal(err.msg, "A thread's sandbox policy network.allowlist[1] "
                                     "\"api.example.com\" is not inside any entry of the app's "
                                     "sandbox.network.allowlist");
        assert_false(has_association("out"));
        assert_int_equal(b4_store_record_get(F.store, "out", &d, &p, NULL), -ENOENT);
}

static void test_resolver_deadline(void **state)
{
        struct b4_error err = { 0 };

        resolver("{}", "sleep 30");
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"thread\": {\"command\": "
              "[\"./resolve.sh\"], \"timeoutMs\": 1000}}");
        create_thread("h", NULL, NULL);
        assert_int_equal(run_once("h", &err), -ETIMEDOUT);
        assert_string_equal(err.msg, "Thread sandbox resolver for thread h: timed out after 1000 "
                                     "ms");
        assert_false(has_association("h"));
        assert_int_equal(count_runs(), 1);
}

static void test_resolver_refusals(void **state)
{
        struct b4_error err = { 0 };

        resolver("{\"workspace\": {\"source\": {\"directory\": \"ws\", \"include\": []}}, "
                 "\"shell\": true}",
                 "echo oops >&2");
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"thread\": {\"command\": "
              "[\"./resolve.sh\"]}}");
        create_thread("x", NULL, NULL);
        assert_int_equal(run_once("x", &err), -EINVAL);
        assert_string_equal(err.msg, "Thread sandbox resolver for thread x: b4box.json "
                                     "sandbox.thread result.shell is not a thread sandbox option "
                                     "(known: workspace, environment, policy, permissions).");
        resolver("not json", "echo secret >&2; exit 3");
        assert_int_equal(run_once("x", &err), -EIO);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_string_equal(err.msg, "Thread sandbox resolver for thread x: exited with status 3 "
                                     "without a valid {\"refuse\": ...} answer (details are in "
                                     "the server log)");
        resolver("", "echo '{\"refuse\": \"over quota\"}'; echo secret >&2; exit 3");
        assert_int_equal(run_once("x", &err), -EPERM);
        assert_int_equal(err.code, B4_CODE_THREAD_REFUSED);
        assert_string_equal(err.msg, "over quota");
        resolver("", "echo '{\"refuse\": \"over quota\", \"x\": 1}'; exit 3");
        assert_int_equal(run_once("x", &err), -EIO);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_false(has_association("x"));
}

static void test_no_record_refused(void **state)
{
        struct b4_error err = { 0 };

        resolver(THREAD_ANSWER, "");
        start("{\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}, \"thread\": {\"command\": "
              "[\"./resolve.sh\"]}}");
        create_thread("n", NULL, NULL);
        struct b4_admission_rows rows = {
                .thread_id = "n",
                .source_digest = "3d9d0af9e730ee18680a9e2bf15ccdf8f17a192782f68"
                                 "29efa157e95d9da7b06",
                .source_payload = "{}",
                .source_len = 2,
                .intent_digest = "i",
                .association_payload = "{}",
        };
        assert_int_equal(b4_store_admit(F.store, &rows, NULL), 0);
        assert_int_equal(run_once("n", &err), -ENOTRECOVERABLE);
        assert_non_null(strstr(err.msg, "Thread n has no sandbox record"));
        assert_int_equal(count_runs(), 0);
        assert_int_equal(b4_store_admit(F.store, &rows, &err), -EEXIST);
}

/* Quota and retention at the store, with the clock in the test's hands (reference §6.5). */
static void test_staged_retention(void **state)
{
        static const char d1[] = "1111111111111111111111111111111111111111111111111111111111111111";
        static const char d2[] = "2222222222222222222222222222222222222222222222222222222222222222";
        struct b4_error err = { 0 };
        bool created = false;
        char *p = NULL, **up = NULL;
        size_t len = 0;
        int64_t at = 0;

        start(STATIC_WS);
        assert_int_equal(b4_store_source_upload(F.store, d1, "0123456789", 10, "alice", NULL, 1000,
                                                15, &created, NULL),
                         0);
        assert_true(created);
        assert_int_equal(b4_store_source_upload(F.store, d2, "0123456789", 10, "bob", NULL, 1000,
                                                15, &created, &err),
                         -ENOSPC);
        assert_string_equal(err.msg, "staged sources would exceed maxStagedBytes (15 bytes)");
        assert_int_equal(b4_store_source_upload(F.store, d1, "0123456789", 10, "bob", NULL, 5000,
                                                15, &created, NULL),
                         0);
        assert_false(created);
        assert_int_equal(b4_store_source_uploaders(F.store, d1, &up, NULL, NULL), 0);
        assert_string_equal(up[0], "alice");
        assert_string_equal(up[1], "bob");
        assert_null(up[2]);
        for (char **u = up; *u; u++)
                free(*u);
        free(up);
        /* the re-upload at 5000 refreshed the window */
        assert_int_equal(b4_store_sources_reclaim(F.store, 5000 + 60000, 60000, NULL), 0);
        assert_int_equal(b4_store_sources_reclaim(F.store, 5001 + 60000, 60000, NULL), 1);
        assert_int_equal(b4_store_source_get(F.store, d1, &p, &len, &at, NULL), -ENOENT);

        /* an admission's source is kept while its association exists, and goes at once after */
        create_thread("r", NULL, NULL);
        assert_int_equal(run_once("r", NULL), 0);
        struct b4_association a = { 0 };
        assert_int_equal(b4_store_association_get(F.store, "r", &a, NULL), 0);
        assert_int_equal(b4_store_sources_reclaim(F.store, 1LL << 50, 60000, NULL), 0);
        assert_int_equal(b4_store_source_get(F.store, a.source_digest, &p, &len, &at, NULL), 0);
        assert_int_equal(at, 0);
        free(p);
        assert_int_equal(b4_runtime_thread_delete(F.rt, "r", NULL), 0);
        assert_int_equal(b4_store_sources_reclaim(F.store, 0, 60000, NULL), 1);
        b4_association_clear(&a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_static, setup, teardown),
                cmocka_unit_test_setup_teardown(test_thread_resolver_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_targets, setup, teardown),
                cmocka_unit_test_setup_teardown(test_network_widening, setup, teardown),
                cmocka_unit_test_setup_teardown(test_network_lists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resolver_deadline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resolver_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_record_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_staged_retention, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
