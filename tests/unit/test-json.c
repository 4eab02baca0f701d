/* SPDX-License-Identifier: Apache-2.0 */
/* The jansson wrapper: parse refusals, safe integers, dump forms, the pack builder. */

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

static char *dumped(struct jv *v)
{
        char *s = NULL;

        assert_non_null(v);
        assert_int_equal(jv_dump(v, 0, &s), 0);
        jv_unref(v);
        return s;
}

/* Every format letter once, in an object and in an array. */
static void test_pack_letters(void **state)
{
        cleanup_free char *obj = NULL, *arr = NULL;

        obj = dumped(jv_pack("{s:s, s:s#, s:s%, s:n, s:b, s:b, s:i, s:I, s:f, s:[i,s], s:{}}", "s",
                             "h\xc3\xa9", "s#", "abcdef", 3, "s%", "xyz", (size_t)2, "n", "t", true,
                             "f", false, "i", -7, "I", (int64_t)9007199254740993LL, "r", 0.5, "a",
                             1, "x", "o"));
        assert_string_equal(obj, "{\"s\":\"h\xc3\xa9\",\"s#\":\"abc\",\"s%\":\"xy\",\"n\":null,"
                                 "\"t\":true,\"f\":false,\"i\":-7,\"I\":9007199254740993,"
                                 "\"r\":0.5,\"a\":[1,\"x\"],\"o\":{}}");
        arr = dumped(jv_pack("[s, n, b, I, [], {s:i}]", "a", 0, (int64_t)-1, "k", 2));
        assert_string_equal(arr, "[\"a\",null,false,-1,[],{\"k\":2}]");
}

/* '?' gives null for a NULL pointer; '*' leaves the member or element out. */
static void test_pack_optional(void **state)
{
        cleanup_free char *q = NULL, *star = NULL, *arr = NULL;

        q = dumped(jv_pack("{s:s?, s:o?, s:O?}", "a", NULL, "b", NULL, "c", NULL));
        assert_string_equal(q, "{\"a\":null,\"b\":null,\"c\":null}");
        star = dumped(jv_pack("{s:s*, s:o*, s:O*, s:s*, s:i}", "a", NULL, "b", NULL, "c", NULL, "d",
                              "kept", "e", 1));
        assert_string_equal(star, "{\"d\":\"kept\",\"e\":1}");
        arr = dumped(jv_pack("[s*, o*, i]", NULL, NULL, 3));
        assert_string_equal(arr, "[3]");
}

/* jv_opt(): a member wanted, left out, or lost (a NULL it was wanted with) for `o*`. */
static void test_pack_opt(void **state)
{
        cleanup_free char *out = NULL;
        bool lost = false;
        struct jv *v;

        out = dumped(jv_pack("{s:o*, s:o*}", "kept", jv_opt(true, jv_integer_new(1), &lost), "out",
                             jv_opt(false, jv_string_new("x"), &lost)));
        assert_string_equal(out, "{\"kept\":1}");
        assert_false(lost);
        assert_null(jv_opt(false, NULL, &lost));
        assert_false(lost);
        v = jv_pack("{s:i, s:o*}", "a", 1, "b", jv_opt(true, NULL, &lost));
        assert_true(lost); /* the document without "b" is not the one asked for */
        jv_unref(v);
}

/*
 * o steals (the caller releases nothing), O borrows (the caller keeps its reference).
 * A wrong count would show as a leak or a double free under ASan, and in the dump of
 * the borrowed value after the result is gone.
 */
static void test_pack_ownership(void **state)
{
        struct jv *kept = jv_pack("{s:i}", "k", 1);
        cleanup_free char *out = NULL, *after = NULL;
        struct jv *v;

        v = jv_pack("{s:o, s:O, s:O}", "stolen", jv_string_new("x"), "b1", kept, "b2", kept);
        out = dumped(v);
        assert_string_equal(out, "{\"stolen\":\"x\",\"b1\":{\"k\":1},\"b2\":{\"k\":1}}");
        after = dumped(kept); /* still ours: the result took its own references */
        assert_string_equal(after, "{\"k\":1}");
}

/* Failures return NULL and release the o arguments, before and after the failing one. */
static void test_pack_errors(void **state)
{
        assert_null(jv_pack("{s:s}", "k", NULL));
        assert_null(jv_pack("{s:o}", "k", NULL));
        assert_null(jv_pack("{s:O}", "k", NULL));
        assert_null(jv_pack("[s]", "\xff"));
        assert_null(jv_pack("{s:o, s:s, s:o}", "a", jv_string_new("a"), "b", NULL, "c",
                            jv_string_new("c")));
        assert_null(jv_pack("[o, s#]", jv_integer_new(1), "\xc3", 1));
        assert_null(jv_pack("{s:i", "k", 1)); /* unterminated */
        assert_null(jv_pack("{i:i}", 1, 1));  /* a key that is not a string */
        assert_null(jv_pack("[x]", 1));       /* an unknown letter */
        assert_null(jv_pack("", 0));
        /* a failed constructor passed to o fails the pack instead of being dropped */
        assert_null(jv_pack("{s:o}", "k", jv_string_new("\xff")));
}

static void test_string_array(void **state)
{
        char a[] = "a", b[] = "b\"", x[] = "\xff";
        char *l[] = { a, b, NULL }, *bad[] = { x, NULL };
        cleanup_free char *two = dumped(jv_string_array_new(l));
        cleanup_free char *none = dumped(jv_string_array_new(NULL));

        assert_string_equal(two, "[\"a\",\"b\\\"\"]");
        assert_string_equal(none, "[]");
        assert_null(jv_string_array_new(bad));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_rejects_duplicates),
                cmocka_unit_test(test_safe_integer),
                cmocka_unit_test(test_dump_sorted_compact),
                cmocka_unit_test(test_quote_controls),
                cmocka_unit_test(test_append_string_escapes),
                cmocka_unit_test(test_pack_letters),
                cmocka_unit_test(test_pack_optional),
                cmocka_unit_test(test_pack_opt),
                cmocka_unit_test(test_pack_ownership),
                cmocka_unit_test(test_pack_errors),
                cmocka_unit_test(test_string_array),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
