/* SPDX-License-Identifier: Apache-2.0 */
/* The jansson wrapper: parse refusals, safe integers, dump forms. */

#include <errno.h>
#include <string.h>

#include "b4-test.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "json/json.h"

static void test_parse_rejects_duplicates(void **state)
{
        struct b4_error err = { 0 };
        struct jv *v = NULL;

        assert_int_equal(jv_parse("{\"a\":1,\"a\":2}", 13, &v, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "duplicate"));
        assert_int_equal(jv_parse("[1,", 3, &v, &err), -EINVAL);
}

static void test_safe_integer(void **state)
{
        struct jv *v = NULL;

        assert_int_equal(jv_parse("[1, 1.0, 1.5, 9007199254740992, \"1\"]", 36, &v, NULL), 0);
        assert_true(jv_is_safe_integer(jv_array_get(v, 0)));
        assert_true(jv_is_safe_integer(jv_array_get(v, 1)));
        assert_false(jv_is_safe_integer(jv_array_get(v, 2)));
        assert_false(jv_is_safe_integer(jv_array_get(v, 3)));
        assert_false(jv_is_safe_integer(jv_array_get(v, 4)));
        assert_string_equal(jv_type_name(jv_array_get(v, 4)), "string");
        jv_unref(v);
}

static void test_dump_sorted_compact(void **state)
{
        cleanup_(jv_unrefp) struct jv *o = jv_object_new();
        cleanup_free char *s = NULL;

        assert_int_equal(jv_object_set_new(o, "b", jv_integer_new(1)), 0);
        assert_int_equal(jv_object_set_new(o, "a", jv_string_new("h\xc3\xa9\n")), 0);
        assert_int_equal(jv_dump(o, JV_SORT_KEYS, &s), 0);
        assert_string_equal(s, "{\"a\":\"h\xc3\xa9\\n\",\"b\":1}");
}

static void test_quote_controls(void **state)
{
        cleanup_free char *s = NULL;

        assert_int_equal(jv_quote("a\"\\\x01\t/", &s), 0);
        assert_string_equal(s, "\"a\\\"\\\\\\u0001\\t/\"");
        assert_int_equal(jv_quote("\xff", &s), -EINVAL);
}

/* The fast writer escapes as JSON.stringify does (lowercase \u00xx, 0x7f and UTF-8 raw). */
static void test_append_string_escapes(void **state)
{
        static const struct {
                const char *in, *want;
        } cases[] = {
                { "", "\"\"" },
                { "plain", "\"plain\"" },
                { "q\"b\\s/", "\"q\\\"b\\\\s/\"" },
                { "\x01\x1f\b\f\n\r\t", "\"\\u0001\\u001f\\b\\f\\n\\r\\t\"" },
                { "h\xc3\xa9 \xf0\x9f\x98\x80\x7f", "\"h\xc3\xa9 \xf0\x9f\x98\x80\x7f\"" },
        };
        struct strbuf sb;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                strbuf_init(&sb, STRBUF_UNLIMITED);
                assert_int_equal(jv_append_string(&sb, cases[i].in, strlen(cases[i].in)), 0);
                assert_string_equal(sb.buf, cases[i].want);
                strbuf_release(&sb);
        }
        strbuf_init(&sb, STRBUF_UNLIMITED);
        assert_int_equal(jv_append_string(&sb, "\xff", 1), -EINVAL);
        assert_int_equal(sb.len, 0);
        assert_int_equal(jv_append_string(&sb, "a\0b", 3), 0);
        assert_string_equal(sb.buf, "\"a\\u0000b\"");
        strbuf_release(&sb);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_rejects_duplicates),
                cmocka_unit_test(test_safe_integer),
                cmocka_unit_test(test_dump_sorted_compact),
                cmocka_unit_test(test_quote_controls),
                cmocka_unit_test(test_append_string_escapes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
