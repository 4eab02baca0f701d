/* SPDX-License-Identifier: Apache-2.0 */
/* Core: resource naming vectors (reference §3.2), policy defaults and env rules. */

#include <errno.h>
#include <string.h>

#include "b4box/b4.h"

#include "b4-test.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resource_id_vectors),
                cmocka_unit_test(test_resource_id_no_collisions),
                cmocka_unit_test(test_policy_defaults),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
