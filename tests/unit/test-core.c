/* SPDX-License-Identifier: Apache-2.0 */
/* Core: resource naming vectors (reference §3.2), policy defaults and env rules, and the
 * provider lifecycle every provider shares (registry, recover-and-retry-once, texts) over a
 * provider whose sandbox gets lost on demand. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/provider-impl.h"

#include "b4-test.h"
#include "core/launch.h"

static void test_resource_id_vectors(void **state)
{
        static const struct {
                const char *scope, *thread, *id;
        } v[] = {
                { "app", "thread", "93c4fcf034837c402e3d6f16f1ed08abda918380" },
                { "sandbox-test", "abc", "2b15794eccdd038fd62a47fecd25562bace17167" },
                { "sandbox-test", "t", "f4d51473b06dae3d6b54cf4e19b525b611857dc2" },
                { "sandbox-test", "t/1:x", "41a00726f986d0157225d6a0fa110c51019be3e4" },
                /* ours, computed with node's JSON.stringify + sha256: escapes and UTF-8 */
                { "app",
                  "a\x1f"
                  "b",
                  "eb4e612a96b58697ced59ebfb281faa8e630e2b0" },
                { "app", "tab\there", "ba35d2ae7c36384ced5860617ef0dd1d7e5fa189" },
                { "app", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                  "b81ec5afe01dab186b1b8f8f4e64386caa1e2293" },
        };

        char id[41];

        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                assert_int_equal(b4_resource_id(v[i].scope, v[i].thread, id), 0);
                assert_string_equal(id, v[i].id);
        }
}

static void test_resource_id_no_collisions(void **state)
{
        char a[41], b[41];

        assert_int_equal(b4_resource_id("a:b", "c", a), 0);
        assert_int_equal(b4_resource_id("a", "b:c", b), 0);
        assert_string_not_equal(a, b);
        assert_int_equal(b4_resource_id("App", "thread", a), 0);
        assert_int_equal(b4_resource_id("app", "thread", b), 0);
        assert_string_not_equal(a, b);
        assert_int_equal(b4_resource_id("app", "\xf0\x9f\x98\x80", a), 0);
        assert_int_equal(b4_resource_id("", "t", a), -EINVAL);
        assert_int_equal(b4_resource_id("app", "\xff", a), -EINVAL);
}

static void test_policy_defaults(void **state)
{
        struct b4_policy p, q;

        b4_policy_init(&p);
        assert_int_equal(p.network, B4_NETWORK_ALLOW);
        assert_true(p.security.drop_all_capabilities);
        assert_true(p.security.no_new_privileges);
        assert_true(p.security.read_only_root);
        assert_true(p.security.run_as_non_root);
        assert_int_equal(p.security.uid, 1000);
        assert_int_equal(p.security.gid, 1000);
        assert_int_equal(p.security.pids_limit, 512);
        assert_int_equal(b4_policy_set_env(&p, "A_1", "x"), 0);
        assert_int_equal(b4_policy_set_env(&p, "A_1", "y"), 0);
        assert_int_equal(b4_policy_set_env(&p, "1A", "x"), -EINVAL);
        assert_int_equal(p.n_env, 1);
        assert_int_equal(b4_policy_copy(&q, &p), 0);
        assert_string_equal(q.env[0].value, "y");
        b4_policy_clear(&p);
        b4_policy_clear(&q);
}

/* ---- the lifecycle, over a provider that loses its sandbox on demand ---- */

struct flaky {
        struct b4_provider base;
        int lose;         /* the next N raw operations fail -EAGAIN */
        bool lose_result; /* exec's lost attempts carry a failed result */
        bool fail_recover;
        int recovers;
        int raw_calls;
};

struct flaky_sb {
        struct b4_sandbox base;
        struct flaky *f;
};

static struct flaky *flaky_of_fs(struct b4_fs *fs)
{
        return ((struct flaky_sb *)fs->sb)->f;
}

static int raw(struct flaky *f, struct b4_error *err)
{
        f->raw_calls++;
        if (f->lose > 0) {
                f->lose--;
                return b4_error_set(err, -EAGAIN, "sandbox lost");
        }
        return 0;
}

static int fl_read_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        uint64_t max,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err)
{
        int r = raw(flaky_of_fs(fs), err);

        if (r < 0)
                return r;
        if (max < 2)
                return -EFBIG; /* core words it */
        *ret = strdup("ok");
        *ret_len = 2;
        return 0;
}

static int fl_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        return raw(flaky_of_fs(fs), err);
}

static const struct b4_fs_ops fl_fs_ops = { .read_file = fl_read_file, .lstat = fl_lstat };

static int fl_exec(struct b4_sandbox *sb,
                   const struct b4_exec_req *req,
                   struct b4_exec_result *ret,
                   struct b4_error *err)
{
        struct flaky *f = ((struct flaky_sb *)sb)->f;
        int r = raw(f, err);

        if (r < 0 && f->lose_result) {
                ret->errout = strdup("OCI runtime exec failed");
                ret->errout_len = strlen(ret->errout);
                ret->exit_code = 126;
        }
        if (r >= 0 && strcmp(req->command, "sleep") == 0) {
                ret->timed_out = true;
                ret->exit_code = 124;
                ret->timeout_ms = 1500;
        }
        return r;
}

static int fl_recover(struct b4_sandbox *sb, struct b4_error *err)
{
        struct flaky *f = ((struct flaky_sb *)sb)->f;

        f->recovers++;
        return f->fail_recover ? b4_error_set(err, -EIO, "recreate failed") : 0;
}

static void fl_free(struct b4_sandbox *sb)
{
        free(sb);
}

static const struct b4_sandbox_ops fl_ops = {
        .exec = fl_exec,
        .recover = fl_recover,
        .free = fl_free,
};

static int fl_acquire(struct b4_provider *p,
                      struct b4_entry *e,
                      const struct b4_acquire_req *req,
                      struct b4_sandbox **ret,
                      struct b4_error *err)
{
        struct flaky_sb *s = calloc(1, sizeof(*s));

        assert_non_null(s);
        assert_int_equal(b4_sandbox_init(&s->base, &fl_ops, &fl_fs_ops, req->thread_id), 0);
        s->f = (struct flaky *)p;
        if (!b4_entry_state(e))
                b4_entry_set_state(e, strdup("keeper"), free);
        *ret = &s->base;
        return 0;
}

static int fl_end(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return 0;
}

static void fl_provider_free(struct b4_provider *p)
{
        free(p->scope);
}

static const struct b4_provider_ops flaky_ops = {
        .name = "flaky",
        .acquire = fl_acquire,
        .release = fl_end,
        .destroy = fl_end,
        .free = fl_provider_free,
};

static struct b4_sandbox *flaky_acquire(struct flaky *f, const char *id)
{
        struct b4_policy pol;
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        assert_int_equal(
                b4_provider_acquire(&f->base,
                                    &(struct b4_acquire_req){ .thread_id = id, .policy = &pol },
                                    &sb, &err),
                0);
        return sb;
}

static uint64_t generation(struct flaky *f, const char *id)
{
        struct b4_entry *e = b4_provider_entry(&f->base, id);
        uint64_t g;

        assert_non_null(e);
        g = b4_entry_generation(e);
        b4_entry_unref(e);
        return g;
}

static void test_lifecycle_retry_once(void **state)
{
        struct flaky f = { 0 };
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        struct b4_sandbox *sb;
        char *data = NULL;
        size_t len;

        assert_int_equal(b4_provider_init(&f.base, &flaky_ops, "s"), 0);
        sb = flaky_acquire(&f, "t");
        f.lose = 1; /* lost once: recovered, retried, and the first failure is forgotten */
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(sb), "/workspace/a", 10, &data, &len, &err),
                         0);
        assert_string_equal(data, "ok");
        assert_string_equal(err.msg, "");
        assert_int_equal(f.recovers, 1);
        assert_int_equal(f.raw_calls, 2);
        assert_int_equal(generation(&f, "t"), 1);
        free(data);
        f.lose = 2; /* lost again after the recovery: retried once only */
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace/a", &st, &err), -EAGAIN);
        assert_int_equal(f.recovers, 2);
        assert_int_equal(f.raw_calls, 4);
        assert_int_equal(generation(&f, "t"), 2);
        f.lose = 0;
        b4_sandbox_unref(sb);
        b4_provider_free(&f.base);
}

static void test_lifecycle_stale_and_failed_recovery(void **state)
{
        struct flaky f = { 0 };
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        struct b4_sandbox *sb;
        struct b4_entry *e;

        assert_int_equal(b4_provider_init(&f.base, &flaky_ops, "s"), 0);
        sb = flaky_acquire(&f, "t");
        assert_int_equal(b4_provider_release(&f.base, "t", &err), 0);
        f.lose = 1; /* released since: a stale handle is not recovered */
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace", &st, &err), -EAGAIN);
        assert_int_equal(f.recovers, 0);
        b4_sandbox_unref(sb);
        /* freed with its last reference, not kept until the provider goes */
        assert_null(b4_provider_entry(&f.base, "t"));

        sb = flaky_acquire(&f, "t");
        f.lose = 1;
        f.fail_recover = true; /* the recovery's error is the answer; the state is dropped */
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace", &st, &err), -EIO);
        assert_string_equal(err.msg, "recreate failed");
        e = b4_provider_entry(&f.base, "t");
        assert_non_null(e);
        assert_null(b4_entry_state(e));
        b4_entry_unref(e);
        b4_sandbox_unref(sb);
        assert_null(b4_provider_entry(&f.base, "t"));
        b4_provider_free(&f.base);
}

static void test_lifecycle_exec_and_texts(void **state)
{
        struct flaky f = { 0 };
        struct b4_error err = { 0 };
        struct b4_exec_result res = { 0 };
        struct b4_sandbox *sb;
        char *data = NULL;
        size_t len;

        assert_int_equal(b4_provider_init(&f.base, &flaky_ops, "s"), 0);
        sb = flaky_acquire(&f, "t");
        f.lose = 2; /* an admission failure twice: the failed result stands */
        f.lose_result = true;
        assert_int_equal(
                b4_sandbox_exec(sb, &(struct b4_exec_req){ .command = "true" }, &res, &err), 0);
        assert_int_equal(res.exit_code, 126);
        assert_string_equal(res.errout, "OCI runtime exec failed");
        assert_int_equal(f.recovers, 1);
        b4_exec_result_clear(&res);
        /* the timeout line is core's */
        assert_int_equal(
                b4_sandbox_exec(sb, &(struct b4_exec_req){ .command = "sleep" }, &res, &err), 0);
        assert_string_equal(res.errout,
                            "Command timed out after 2s (resources.timeoutMs: 1500ms).");
        b4_exec_result_clear(&res);
        /* so is the too-large text */
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(sb), "/workspace/big", 1, &data, &len, &err),
                         -EFBIG);
        assert_string_equal(err.msg, "readFile /workspace/big: content exceeds maxBytes (1).");
        b4_sandbox_unref(sb);
        b4_provider_free(&f.base);
}

/* sandbox.provider.image and images: the one allowlist of docker and kubernetes. */
static void test_launch_image_allowed(void **state)
{
        char acme[] = "ghcr.io/acme/*", debian[] = "debian:12";
        char *pats[] = { acme, debian, NULL };

        assert_true(launch_image_allowed("node:24", pats, "node:24"));
        assert_true(launch_image_allowed("node:24", pats, "debian:12"));
        assert_true(launch_image_allowed(NULL, pats, "ghcr.io/acme/tool:1"));
        assert_false(launch_image_allowed("node:24", pats, "node:24-slim"));
        assert_false(launch_image_allowed("node:24", pats, "ghcr.io/other/tool:1"));
        assert_false(launch_image_allowed("node:24", NULL, "debian:12"));
        assert_false(launch_image_allowed(NULL, NULL, NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resource_id_vectors),
                cmocka_unit_test(test_resource_id_no_collisions),
                cmocka_unit_test(test_policy_defaults),
                cmocka_unit_test(test_lifecycle_retry_once),
                cmocka_unit_test(test_lifecycle_stale_and_failed_recovery),
                cmocka_unit_test(test_lifecycle_exec_and_texts),
                cmocka_unit_test(test_launch_image_allowed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
