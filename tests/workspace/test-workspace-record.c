/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime's side of a provider that keeps the managed workspace's record with its
 * storage (provider.h, b4_provider_workspace_check/publish(); Kubernetes' PVC annotation):
 * the fake provider given a workspace_record member that keeps the record next to its
 * in-memory workspace, as the PVC does. The record is published at materialisation;
 * storage deleted behind b4box is materialised again (not an empty workspace taken as
 * ready; the row "creating" meanwhile, so an interruption is made afresh); storage being
 * deleted is destroyed and made again; storage without a record, and another workspace's
 * record, are refused; a tag image is refused for a managed thread
 * before anything is stored. Without the member (every other test) nothing changes.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "b4box/b4.h"
#include "b4box/provider-impl.h"
#include "b4box/runtime.h"

#include "b4-test.h"
#include "fake/fake.h"
#include "runtime/runtime-internal.h"
#include "store/store.h"

/* The record "on the storage" of one thread, as the test's provider keeps it. */
struct storage {
        char key[128];
        char intent[128]; /* "" = no record */
        char image[256];
        bool gone;         /* no storage: never made, or destroyed */
        bool made;         /* the last acquire made the storage */
        bool going;        /* being deleted (until destroyed) */
        bool fail_publish; /* the next publish fails */
        unsigned publishes, checks;
};

static struct {
        char *dir, *state;
        struct b4_config *cfg;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
        struct b4_provider_ops ops; /* the fake's, plus workspace_record */
        const struct b4_provider_ops *fake_ops;
        struct storage s; /* one thread per test */
} F;

static int rec_acquire(struct b4_provider *p,
                       struct b4_entry *e,
                       const struct b4_acquire_req *req,
                       struct b4_sandbox **ret,
                       struct b4_error *err)
{
        int r = F.fake_ops->acquire(p, e, req, ret, err);

        if (r >= 0) { /* as a PVC: made by the first acquire after none was there */
                F.s.made = F.s.gone;
                F.s.gone = false;
        }
        return r;
}

static int rec_destroy(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        F.s.intent[0] = '\0'; /* the record goes with the storage */
        F.s.gone = true;
        F.s.going = false;
        return F.fake_ops->destroy(p, e, err);
}

static int rec_op(struct b4_provider *p,
                  struct b4_entry *e,
                  enum b4_workspace_verb verb,
                  const struct b4_workspace_record *rec,
                  enum b4_storage_state *ret,
                  struct b4_error *err)
{
        (void)snprintf(F.s.key, sizeof(F.s.key), "%s", b4_entry_thread_id(e));
        if (F.s.intent[0] && strcmp(F.s.intent, rec->intent) != 0)
                return b4_error_set_code(err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Workspace conflict: the test's storage holds another "
                                         "record");
        if (verb == B4_WORKSPACE_PUBLISH && F.s.fail_publish) {
                F.s.fail_publish = false;
                return b4_error_set(err, -EIO, "the test's publish fails");
        }
        if (verb == B4_WORKSPACE_PUBLISH) {
                F.s.publishes++;
                (void)snprintf(F.s.intent, sizeof(F.s.intent), "%s", rec->intent);
                (void)snprintf(F.s.image, sizeof(F.s.image), "%s", rec->image ? rec->image : "");
                F.s.made = false;
                return 0;
        }
        F.s.checks++;
        if (F.s.going)
                *ret = B4_STORAGE_GONE;
        else if (F.s.intent[0])
                *ret = B4_STORAGE_READY;
        else
                *ret = F.s.made ? B4_STORAGE_EMPTY : B4_STORAGE_PENDING;
        return 0;
}

static int rec_resolve_image(struct b4_provider *p,
                             const char *ref,
                             char **ret,
                             struct b4_error *err)
{
        if (!ref || !strstr(ref, "@sha256:"))
                return b4_error_set_code(err, -EOPNOTSUPP, B4_CODE_IMAGE_UNSUPPORTED,
                                         "Image %s is not pinned by digest", ref ? ref : "");
        *ret = strdup(ref);
        return *ret ? 0 : -ENOMEM;
}

/* The fake's own count (its hooks know it by its ops table). */
static int n_workspaces(void)
{
        const struct b4_provider_ops *ops = F.provider->ops;
        int n;

        F.provider->ops = F.fake_ops ? F.fake_ops : ops;
        n = fake_provider_n_workspaces(F.provider);
        F.provider->ops = ops;
        return n;
}

#define PINNED "img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void put(const char *rel, const char *text)
{
        char p[4096];

        snprintf(p, sizeof(p), "%s/%s", F.dir, rel);
        (void)mkdir(p, 0755); /* rel's directory: one level */
        snprintf(p, sizeof(p), "%s/ws", F.dir);
        (void)mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/%s", F.dir, rel);
        assert_int_equal(b4_test_write(p, text), 0);
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

/* The fake provider with (@hooked) or without the workspace_record member. */
static void start(const char *image, bool hooked)
{
        char *json = NULL, **errors = NULL;
        struct b4_error err = { 0 };

        assert_true(
                asprintf(
                        &json,
                        "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"%s%s%s}, "
                        "\"workspace\": {\"source\": {\"directory\": \"ws\", \"include\": "
                        "[\"main.txt\"]}}}}",
                        image ? ", \"image\": \"" : "", image ? image : "", image ? "\"" : "") > 0);
        if (b4_config_parse(json, strlen(json), F.dir, &F.cfg, &errors, &err) < 0)
                fail_msg("config: %s", errors ? errors[0] : err.msg);
        free(json);
        assert_int_equal(b4_store_open(F.state, B4_STORE_EXCLUSIVE, &F.store, NULL), 0);
        assert_int_equal(b4_provider_new(&F.cfg->sandbox.provider, &F.provider, NULL), 0);
        if (hooked) {
                F.fake_ops = F.provider->ops;
                F.ops = *F.fake_ops;
                F.ops.acquire = rec_acquire;
                F.ops.destroy = rec_destroy;
                F.ops.workspace_record = rec_op;
                F.ops.resolve_image = rec_resolve_image;
                F.provider->ops = &F.ops;
        }
        runtime_up();
}

static int setup(void **state)
{
        char p[4096];

        F.dir = b4_test_tmpdir();
        F.s.gone = true;
        snprintf(p, sizeof(p), "%s/state", F.dir);
        F.state = strdup(p);
        put("ws/main.txt", "hello");
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

static void create_thread(const char *id)
{
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };

        if (b4_runtime_thread_create(F.rt, id, NULL, NULL, NULL, &row, &err) < 0)
                fail_msg("create: %s", err.msg);
        b4_thread_row_clear(&row);
}

/* Run @id once: @path's content (NULL when it is missing); the run's error in @err. */
static int read_in_run(const char *id, const char *path, char **ret, struct b4_error *err)
{
        struct b4_run *run = NULL;
        size_t len = 0;
        int r = b4_runtime_run_begin(F.rt, id, &run, err);

        *ret = NULL;
        if (r >= 0 && b4_fs_read_file(b4_sandbox_fs(b4_run_sandbox(run)), path, B4_UNBOUNDED, ret,
                                      &len, NULL) < 0)
                *ret = NULL;
        b4_run_end(run);
        return r;
}

static void expect_file(const char *id, const char *path, const char *text)
{
        struct b4_error err = { 0 };
        char *data = NULL;

        if (read_in_run(id, path, &data, &err) < 0)
                fail_msg("run %s: %s", id, err.msg);
        if (!text) {
                assert_null(data);
                return;
        }
        if (!data)
                fail_msg("%s is missing in %s's workspace", path, id);
        assert_string_equal(data, text);
        free(data);
}

/* Release the thread and restart the runtime: the next run acquires afresh. */
static void restart(const char *id)
{
        assert_int_equal(b4_runtime_thread_release(F.rt, id, NULL), 0);
        b4_runtime_free(F.rt);
        F.rt = NULL;
        runtime_up();
}

static void stored_intent(const char *id, char ret[128])
{
        struct b4_association a = { 0 };

        assert_int_equal(b4_store_association_get(F.store, id, &a, NULL), 0);
        assert_string_equal(a.state, "ready");
        (void)snprintf(ret, 128, "%s", a.intent_digest);
        b4_association_clear(&a);
}

/* The record is published with the association's intent and the pinned image. */
static void test_published(void **state)
{
        char intent[128];

        start("img@sha256:"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
              true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        stored_intent("t", intent);
        assert_int_equal(F.s.publishes, 1);
        assert_string_equal(F.s.intent, intent);
        assert_non_null(strstr(F.s.image, "@sha256:")); /* the default image, pinned */

        /* released and restarted: the storage says ready, nothing is materialised again */
        restart("t");
        expect_file("t", "/workspace/main.txt", "hello");
        assert_int_equal(F.s.publishes, 1);
        assert_true(F.s.checks >= 1);
}

/* The storage goes behind b4box (the reaper): the next acquire makes it empty, and the
 * runtime materialises it again from the held source instead of trusting its store. */
static void test_reaped_storage_materialised_again(void **state)
{
        start("img@sha256:"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
              true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        assert_int_equal(b4_provider_destroy(F.provider, F.s.key, NULL), 0);
        put("ws/main.txt", "changed"); /* the held source, not the directory, is what comes back */
        expect_file("t", "/workspace/main.txt", "hello");
        assert_int_equal(F.s.publishes, 2);
}

/* Put a stray file on the thread's storage, behind the runtime. */
static void stray_file(void)
{
        struct b4_acquire_req req = { .thread_id = F.s.key };
        struct b4_policy pol;
        struct b4_sandbox *sb = NULL;

        b4_policy_init(&pol);
        req.policy = &pol;
        assert_int_equal(b4_provider_acquire(F.provider, &req, &sb, NULL), 0);
        assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/stray", "x", 1, NULL), 0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(F.provider, F.s.key, NULL), 0);
        b4_policy_clear(&pol);
}

/* Storage without a record that this acquire did not make (a b4box from before records, a
 * claim made by hand): refused by name, neither trusted nor wiped. */
static void test_unrecorded_storage_refused(void **state)
{
        struct b4_error err = { 0 };
        char *data = NULL;

        start(PINNED, true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        stray_file();
        F.s.intent[0] = '\0';
        assert_int_equal(read_in_run("t", "/workspace/main.txt", &data, &err), -ENOTRECOVERABLE);
        assert_non_null(strstr(err.msg, "carries no record of its workspace"));
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        assert_int_equal(F.s.publishes, 1);
        assert_null(data);
        stray_file(); /* still there: nothing was destroyed (the write replaces it) */
}

/* Storage being deleted: destroyed and made again, then materialised. */
static void test_gone_storage_remade(void **state)
{
        start(PINNED, true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        stray_file();
        F.s.going = true;
        expect_file("t", "/workspace/main.txt", "hello");
        expect_file("t", "/workspace/stray", NULL);
        assert_int_equal(F.s.publishes, 2);
}

/* A materialisation again that does not finish (here its publish fails) leaves the row
 * "creating": the next run destroys what it left and materialises afresh. */
static void test_interrupted_rematerialisation(void **state)
{
        struct b4_association a = { 0 };
        struct b4_error err = { 0 };
        char *data = NULL;

        start(PINNED, true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        assert_int_equal(b4_provider_destroy(F.provider, F.s.key, NULL), 0);
        F.s.fail_publish = true;
        assert_int_equal(read_in_run("t", "/workspace/main.txt", &data, &err), -EIO);
        assert_int_equal(b4_store_association_get(F.store, "t", &a, NULL), 0);
        assert_string_equal(a.state, "creating");
        b4_association_clear(&a);
        assert_string_equal(F.s.intent, "");
        expect_file("t", "/workspace/main.txt", "hello");
        assert_int_equal(F.s.publishes, 2);
        free(data);
}

/* Another workspace's record on the storage: refused by name, nothing overwritten. */
static void test_other_record_refused(void **state)
{
        struct b4_error err = { 0 };
        char *data = NULL;

        start("img@sha256:"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
              true);
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        (void)snprintf(F.s.intent, sizeof(F.s.intent), "another");
        assert_int_equal(read_in_run("t", "/workspace/main.txt", &data, &err), -EEXIST);
        assert_non_null(strstr(err.msg, "Workspace conflict"));
        assert_string_equal(F.s.intent, "another");
        free(data);
}

/* A managed thread's image (the default one too) must be pinned: refused before anything
 * is stored or acquired. */
static void test_tag_image_refused(void **state)
{
        struct b4_association a = { 0 };
        struct b4_error err = { 0 };
        char *data = NULL;

        start("img:latest", true);
        create_thread("t");
        assert_true(read_in_run("t", "/workspace/main.txt", &data, &err) < 0);
        assert_int_equal(err.code, B4_CODE_IMAGE_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "not pinned by digest"));
        assert_int_equal(b4_store_association_get(F.store, "t", &a, NULL), -ENOENT);
        assert_int_equal(n_workspaces(), 0);
        assert_int_equal(F.s.checks + F.s.publishes, 0);
}

/* Without the member the store is the record, as before: a tag image runs, and storage
 * deleted behind b4box is not noticed (what the member is for). */
static void test_without_member(void **state)
{
        start("img:latest", false);
        assert_false(b4_provider_keeps_workspace_record(F.provider));
        create_thread("t");
        expect_file("t", "/workspace/main.txt", "hello");
        restart("t");
        assert_int_equal(b4_provider_destroy(F.provider, "t", NULL), 0);
        expect_file("t", "/workspace/main.txt", NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_published, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reaped_storage_materialised_again, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_unrecorded_storage_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gone_storage_remade, setup, teardown),
                cmocka_unit_test_setup_teardown(test_interrupted_rematerialisation, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_other_record_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tag_image_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_without_member, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
