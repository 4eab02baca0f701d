/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sh scripts' reply parsers (src/lib/kube/shell-fs.c) fed hostile replies, without a
 * server: truncated, oversized and forged frames are refused (never a partial answer), the
 * limits hold at their edge, names stay bytes. And the command script's quoting.
 */

#include <stdlib.h>
#include <string.h>

#include "b4-test.h"
#include "base/base64.h"
#include "base/macro.h"
#include "base/strv.h"
#include "kube/shell-fs.h"

/* base64 of @raw (@n bytes), wrapped as base64(1) wraps it. */
static char *b64(const char *raw, size_t n)
{
        char *enc = NULL, *out;
        size_t len = 0, k = 0;

        assert_int_equal(base64_encode(raw, n, &enc, &len), 0);
        out = malloc(len + len / 76 + 2);
        assert_non_null(out);
        for (size_t i = 0; i < len; i++) {
                out[k++] = enc[i];
                if (i % 76 == 75)
                        out[k++] = '\n';
        }
        out[k++] = '\n';
        out[k] = '\0';
        free(enc);
        return out;
}

static int read_of(const char *raw, size_t n, uint64_t max, char **ret, size_t *ret_len)
{
        cleanup_free char *enc = b64(raw, n);

        return kube_shell_decode_read(enc, strlen(enc), max, ret, ret_len);
}

#define FOOT(s) "\nB4_READ_STATUS_" s "\n"

static void test_read(void **state)
{
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(read_of("hello" FOOT("0"), 5 + 18, 5, &data, &len), 0);
        assert_int_equal(len, 5);
        assert_string_equal(data, "hello");
        free(data);
        /* one byte past the cap (head -c max+1): too large */
        assert_int_equal(read_of("hello!" FOOT("0"), 6 + 18, 5, &data, &len), -EFBIG);
        /* the empty file */
        assert_int_equal(read_of(FOOT("0"), 18, 0, &data, &len), 0);
        assert_int_equal(len, 0);
        free(data);
        /* bytes are bytes: NUL and a forged footer inside the content */
        {
                const char raw[] = "a\0b" FOOT("1") "c" FOOT("0");
                assert_int_equal(read_of(raw, sizeof(raw) - 1, 100, &data, &len), 0);
                assert_int_equal(len, 3 + 18 + 1);
                assert_memory_equal(data, "a\0b", 3);
                free(data);
        }
        /* head failed */
        assert_int_equal(read_of("x" FOOT("1"), 1 + 18, 5, &data, &len), -EIO);
        /* truncated: no footer, a cut footer, no final newline, a forged status */
        assert_int_equal(read_of("hello", 5, 5, &data, &len), -EPROTO);
        assert_int_equal(read_of("hello\nB4_READ_STATUS_", 21, 5, &data, &len), -EPROTO);
        assert_int_equal(read_of("hello\nB4_READ_STATUS_0", 22, 5, &data, &len), -EPROTO);
        assert_int_equal(read_of("h" FOOT("256"), 1 + 20, 5, &data, &len), -EPROTO);
        assert_int_equal(read_of("h" FOOT("-1"), 1 + 19, 5, &data, &len), -EPROTO);
        assert_int_equal(read_of("h" FOOT("0x"), 1 + 19, 5, &data, &len), -EPROTO);
        /* a footer outside the last 40 bytes does not count */
        {
                char raw[128];
                memcpy(raw, FOOT("0"), 18);
                memset(raw + 18, 'z', 60);
                assert_int_equal(read_of(raw, 78, 100, &data, &len), -EPROTO);
        }
        /* not base64, a cut base64 */
        assert_int_equal(kube_shell_decode_read("!!!!", 4, 5, &data, &len), -EPROTO);
        assert_int_equal(kube_shell_decode_read("aGVsbG8K\nQjRf", 13, 5, &data, &len), -EPROTO);
        assert_int_equal(kube_shell_decode_read("", 0, 5, &data, &len), -EPROTO);
}

static void test_stat(void **state)
{
        struct b4_stat st;

        assert_int_equal(kube_shell_parse_stat("81ed 12 1700000000\n", 19, true, &st), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        assert_int_equal(st.size, 12);
        assert_true(st.executable);
        assert_int_equal(st.mtime_ms, 1700000000000LL);
        assert_int_equal(kube_shell_parse_stat("41c0 4096 -5\n", 13, false, &st), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        assert_false(st.executable & 0);
        assert_int_equal(st.mtime_ms, -5000);
        /* a link's raw target, newline included */
        assert_int_equal(kube_shell_parse_stat("a1ff 7 1\n../a\nb", 15, true, &st), 0);
        assert_int_equal(st.kind, B4_FILE_SYMLINK);
        assert_string_equal(st.target, "../a\nb");
        b4_stat_clear(&st);
        /* forged: a target after a regular file, a link without one, a NUL in it */
        assert_int_equal(kube_shell_parse_stat("81a4 1 1\nx", 10, true, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("a1ff 1 1\n", 9, true, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("a1ff 1 1\na\0b", 12, true, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("a1ff 1 1\nx", 10, false, &st), -EPROTO);
        /* sizes past 2^53-1, bad hex, missing fields, no newline */
        assert_int_equal(kube_shell_parse_stat("81a4 9007199254740992 1\n", 24, false, &st),
                         -EPROTO);
        assert_int_equal(kube_shell_parse_stat("81a4 9007199254740991 1\n", 24, false, &st), 0);
        assert_int_equal(kube_shell_parse_stat("81g4 1 1\n", 9, false, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("81a4 1\n", 7, false, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("81a4 1 1", 8, false, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("81a4 -1 1\n", 10, false, &st), -EPROTO);
        assert_int_equal(kube_shell_parse_stat("181a4000 1 1\n", 13, false, &st), 0);
        assert_int_equal(kube_shell_parse_stat("1181a4000 1 1\n", 14, false, &st), -EPROTO);
}

static void test_list(void **state)
{
        char **names = NULL;

#define LIST(s, dir) kube_shell_parse_list(s, sizeof(s) - 1, dir, &names)
        assert_int_equal(LIST("/w/b\0/w/a\n1\0/w/.x\0", "/w"), 0);
        assert_string_equal(names[0], ".x");
        assert_string_equal(names[1], "a\n1");
        assert_string_equal(names[2], "b");
        assert_null(names[3]);
        names = strv_free(names);
        assert_int_equal(LIST("/bin\0/etc\0", "/"), 0);
        assert_string_equal(names[0], "bin");
        names = strv_free(names);
        assert_int_equal(kube_shell_parse_list("", 0, "/w", &names), 0);
        assert_null(names[0]);
        names = strv_free(names);
        /* forged: outside the directory, a nested name, dot names, duplicates, a cut record */
        assert_int_equal(LIST("/v/a\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/wa\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/a/b\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/..\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/.\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/a\0/w/a\0", "/w"), -EPROTO);
        assert_int_equal(LIST("/w/a\0/w/b", "/w"), -EPROTO);
#undef LIST
        /* one more than B4_LIST_MAX_ENTRIES: refused, never truncated */
        {
                size_t n = (size_t)B4_LIST_MAX_ENTRIES + 1, k = 0;
                char *big = malloc(n * 12);

                assert_non_null(big);
                for (size_t i = 0; i < n; i++)
                        k += (size_t)sprintf(big + k, "/w/%zu", i) + 1;
                assert_int_equal(kube_shell_parse_list(big, k, "/w", &names), -E2BIG);
                free(big);
        }
}

/* A walk reply from its decoded bytes. */
static int walk_of(const char *raw, size_t n, size_t max, struct b4_walk_entry **e, size_t *en)
{
        cleanup_free char *enc = b64(raw, n);

        return kube_shell_parse_walk(enc, strlen(enc), "/w", max, e, en);
}

#define BATCH2                \
 "2\n41ed 4096 1\n81a4 3 2\n" \
 "/w/d\0/w/d/f\0"             \
 "\0\0"
#define BATCH1   "1\na1ff 1 3\n/w/a\0x\0"
#define WFOOT(s) "B4_WALK_STATUS_" s "\n"

static void test_walk(void **state)
{
        struct b4_walk_entry *e = NULL;
        size_t en = 0;

        {
                const char raw[] = BATCH2 BATCH1 WFOOT("0");
                assert_int_equal(walk_of(raw, sizeof(raw) - 1, 10, &e, &en), 0);
                assert_int_equal(en, 3);
                assert_string_equal(e[0].path, "a");
                assert_string_equal(e[0].st.target, "x");
                assert_string_equal(e[1].path, "d");
                assert_int_equal(e[1].st.kind, B4_FILE_DIRECTORY);
                assert_string_equal(e[2].path, "d/f");
                assert_int_equal(e[2].st.size, 3);
                e = b4_walk_entries_free(e, en);
                /* the limit: exactly max is fine, one fewer is refused */
                assert_int_equal(walk_of(raw, sizeof(raw) - 1, 3, &e, &en), 0);
                e = b4_walk_entries_free(e, en);
                assert_int_equal(walk_of(raw, sizeof(raw) - 1, 2, &e, &en), -E2BIG);
        }
        /* an empty tree */
        assert_int_equal(walk_of(WFOOT("0"), sizeof(WFOOT("0")) - 1, 10, &e, &en), 0);
        assert_int_equal(en, 0);
        free(e);
        /* find failed */
        {
                const char raw[] = BATCH1 WFOOT("1");
                assert_int_equal(walk_of(raw, sizeof(raw) - 1, 10, &e, &en), -EIO);
        }
        /* forged and truncated frames */
        {
                const char *bad[] = {
                        BATCH1,                                /* no footer */
                        BATCH1 WFOOT("0") "x",                 /* after the footer */
                        "2\n81a4 1 1\n/w/a\0\0" WFOOT("0"),    /* count says 2 */
                        "1\n81a4 1 1\n/v/a\0\0" WFOOT("0"),    /* outside the base */
                        "1\n81a4 1 1\n/w\0\0" WFOOT("0"),      /* the base itself */
                        "1\n81a4 1 1\n/w/../x\0\0" WFOOT("0"), /* a ".." */
                        "1\n81a4 1 1\n/w/a//b\0\0" WFOOT("0"), /* an empty component */
                        "1\n81a4 1 1\n/w/a/\0\0" WFOOT("0"),   /* a trailing '/' */
                        "1\n81a4 1 1\n/w/a\0t\0" WFOOT("0"),   /* a target on a file */
                        "1\n81a4 1\n/w/a\0\0" WFOOT("0"),      /* a short stat line */
                        "0\n" WFOOT("0"),                      /* an empty batch */
                        "1\n81a4 1 1\n/w/a\0\0"
                        "1\n81a4 1 1\n/w/a\0\0" WFOOT("0"), /* twice */
                        "x\n" WFOOT("0"),
                };
                size_t lens[] = { sizeof(BATCH1) - 1,
                                  sizeof(BATCH1 WFOOT("0") "x") - 1,
                                  sizeof("2\n81a4 1 1\n/w/a\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/v/a\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w/../x\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w/a//b\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w/a/\0\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w/a\0t\0" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1\n/w/a\0\0" WFOOT("0")) - 1,
                                  sizeof("0\n" WFOOT("0")) - 1,
                                  sizeof("1\n81a4 1 1\n/w/a\0\0"
                                         "1\n81a4 1 1\n/w/a\0\0" WFOOT("0")) -
                                          1,
                                  sizeof("x\n" WFOOT("0")) - 1 };

                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        int r = walk_of(bad[i], lens[i], 10, &e, &en);
                        if (r != -EPROTO)
                                fail_msg("forged walk %zu: %d", i, r);
                }
        }
        /* oversized: more bytes than (max+1) * 8448 decoded */
        {
                size_t n = 2 * KUBE_SHELL_WALK_ENTRY + 1;
                char *raw = malloc(n);

                assert_non_null(raw);
                memset(raw, 'z', n);
                assert_int_equal(walk_of(raw, n, 1, &e, &en), -E2BIG);
                free(raw);
        }
        assert_int_equal(kube_shell_parse_walk("@@@@", 4, "/w", 10, &e, &en), -EPROTO);
}

static void test_batch(void **state)
{
        struct b4_read_req reqs[3] = { { "/w/a", 10 }, { "/w/b", 10 }, { "/w/c", 2 } };
        struct b4_blob out[3];
        cleanup_free char *a = b64("hi" FOOT("0"), 2 + 18), *c = b64("abc" FOOT("0"), 3 + 18);
        cleanup_free char *good = NULL, *extra = NULL, *cut = NULL, *junk = NULL, *bad = NULL;

        assert_true(asprintf(&good, "%s#\n!90\n#\n%s#\n", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(good, strlen(good), reqs, 3, out), 0);
        assert_int_equal(out[0].error, 0);
        assert_int_equal(out[0].len, 2);
        assert_string_equal(out[0].data, "hi");
        assert_int_equal(out[1].error, -ENOENT);
        assert_null(out[1].data);
        assert_int_equal(out[2].error, -EFBIG); /* its own cap */
        free(out[0].data);
        /* one blob too many, one too few, garbage after, an unknown error code */
        assert_true(asprintf(&extra, "%s#\n!90\n#\n%s#\n!90\n#\n", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(extra, strlen(extra), reqs, 3, out), -EPROTO);
        assert_true(asprintf(&cut, "%s#\n!90\n#\n%s", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(cut, strlen(cut), reqs, 3, out), -EPROTO);
        assert_true(asprintf(&junk, "%s#\n!90\n#\n%s#\nx", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(junk, strlen(junk), reqs, 3, out), -EPROTO);
        assert_true(asprintf(&bad, "%s#\n!5\n#\n%s#\n", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(bad, strlen(bad), reqs, 3, out), -EPROTO);
        assert_int_equal(kube_shell_parse_batch("#\n#\n#\n", 6, reqs, 3, out), -EPROTO);
        /* trailing whitespace is fine */
        free(good);
        assert_true(asprintf(&good, "%s#\n!91\n#\n%s#\n \n", a, c) > 0);
        assert_int_equal(kube_shell_parse_batch(good, strlen(good), reqs, 3, out), 0);
        assert_int_equal(out[1].error, -EISDIR);
        free(out[0].data);
}

static void test_realpath(void **state)
{
        char *p = NULL;

        assert_int_equal(kube_shell_parse_realpath("/w/a\nb\n", 7, &p), 0);
        assert_string_equal(p, "/w/a\nb");
        free(p);
        assert_int_equal(kube_shell_parse_realpath("w/a\n", 4, &p), -EPROTO);
        assert_int_equal(kube_shell_parse_realpath("/w/a", 4, &p), -EPROTO);
        assert_int_equal(kube_shell_parse_realpath("/w\0a\n", 5, &p), -EPROTO);
        assert_int_equal(kube_shell_parse_realpath("\n", 1, &p), -EPROTO);
}

static void test_exec_script(void **state)
{
        char *env[] = { (char *)"A=it's", (char *)"B=", NULL };
        struct kube_shell_cmd c = {
                .command = "echo \"$A\"", .cwd = "/w/d ir", .env = env, .timeout_ms = 1001
        };
        char *s = NULL;

        assert_int_equal(kube_shell_exec_script(&c, &s), 0);
        assert_string_equal(s, "A='it'\\''s' B='' timeout 2s sh -c 'cd '\\''/w/d ir'\\'' && echo "
                               "\"$A\"' </dev/null\n");
        free(s);
        c = (struct kube_shell_cmd){ .command = "true" };
        assert_int_equal(kube_shell_exec_script(&c, &s), 0);
        assert_string_equal(s, "sh -c 'cd '\\''/workspace'\\'' && true' </dev/null\n");
        free(s);
}

static void test_errno(void **state)
{
        assert_int_equal(kube_shell_errno(KUBE_SH_ENOENT), -ENOENT);
        assert_int_equal(kube_shell_errno(KUBE_SH_ENOTEMPTY), -ENOTEMPTY);
        assert_int_equal(kube_shell_errno(1), 0);
        assert_int_equal(kube_shell_errno(127), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read),        cmocka_unit_test(test_stat),
                cmocka_unit_test(test_list),        cmocka_unit_test(test_walk),
                cmocka_unit_test(test_batch),       cmocka_unit_test(test_realpath),
                cmocka_unit_test(test_exec_script), cmocka_unit_test(test_errno),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
