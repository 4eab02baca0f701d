/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source bundles (reference §7.1): the two digest vectors, canonical JSON, round trips and
 * every verification refusal with its text.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/bundle.h"

#include "b4-test.h"
#include "base/macro.h"

#define EMPTY_DIGEST "3d9d0af9e730ee18680a9e2bf15ccdf8f17a192782f6829efa157e95d9da7b06"
#define MAIN_DIGEST  "379f2f39f1fd899ffb6f46be37fabac5de1b0e25a53fbad2262ca5e3de9b7997"

static void test_vector_empty(void **state)
{
        struct b4_bundle *b = NULL;
        char *json = NULL;
        size_t len = 0;

        assert_int_equal(b4_bundle_create(NULL, 0, &b, NULL), 0);
        assert_string_equal(b->digest, EMPTY_DIGEST);
        assert_int_equal(b4_bundle_format(b, &json, &len, NULL), 0);
        assert_string_equal(json, "{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\",\"files\":[]}");
        b4_bundle_free(b);
        assert_int_equal(b4_bundle_parse(json, len, &b, NULL), 0);
        assert_int_equal(b->n_files, 0);
        b4_bundle_free(b);
        free(json);
}

static void test_vector_main(void **state)
{
        struct b4_bundle_input in = { .path = "main.txt", .data = "x", .len = 1 };
        struct b4_bundle *b = NULL;
        char *json = NULL, *bytes = NULL;
        size_t len = 0, n = 0;

        assert_int_equal(b4_bundle_create(&in, 1, &b, NULL), 0);
        assert_string_equal(b->digest, MAIN_DIGEST);
        assert_string_equal(b->files[0].base64, "eA==");
        assert_int_equal(b4_bundle_format(b, &json, &len, NULL), 0);
        assert_string_equal(json,
                            "{\"version\":1,\"digest\":\"" MAIN_DIGEST "\",\"files\":"
                            "[{\"path\":\"main.txt\",\"base64\":\"eA==\",\"executable\":false}]}");
        b4_bundle_free(b);
        assert_int_equal(b4_bundle_parse(json, len, &b, NULL), 0);
        assert_string_equal(b->digest, MAIN_DIGEST);
        assert_int_equal(b4_bundle_file_decode(&b->files[0], &bytes, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_memory_equal(bytes, "x", 1);
        b4_bundle_free(b);
        free(bytes);
        free(json);
}

/* Build, sort and round-trip several files (binary bytes, every padding length). */
static void test_create_roundtrip(void **state)
{
        static const char bin[] = { 0, 1, 2, (char)0xff, (char)0xfe };
        struct b4_bundle_input in[] = {
                { .path = "z/b.bin", .data = bin, .len = 5, .executable = true },
                { .path = "a", .data = "ab", .len = 2 },
                { .path = "z/a b.txt", .data = "abc", .len = 3 },
                { .path = "empty", .data = "", .len = 0 },
        };
        struct b4_bundle *b = NULL, *c = NULL;
        char *json = NULL, *json2 = NULL, *bytes = NULL;
        size_t len = 0, len2 = 0, n = 0;

        assert_int_equal(b4_bundle_create(in, 4, &b, NULL), 0);
        assert_string_equal(b->files[0].path, "a");
        assert_string_equal(b->files[1].path, "empty");
        assert_string_equal(b->files[2].path, "z/a b.txt");
        assert_string_equal(b->files[3].path, "z/b.bin");
        assert_int_equal(b->total_bytes, 10);
        assert_int_equal(b4_bundle_format(b, &json, &len, NULL), 0);
        assert_int_equal(b4_bundle_parse(json, len, &c, NULL), 0);
        assert_string_equal(b->digest, c->digest);
        assert_int_equal(b4_bundle_format(c, &json2, &len2, NULL), 0);
        assert_string_equal(json, json2);
        assert_non_null(b4_bundle_find(c, "z/b.bin"));
        assert_null(b4_bundle_find(c, "z"));
        assert_int_equal(b4_bundle_file_decode(b4_bundle_find(c, "z/b.bin"), &bytes, &n, NULL), 0);
        assert_int_equal(n, 5);
        assert_memory_equal(bytes, bin, 5);
        assert_true(b4_bundle_find(c, "z/b.bin")->executable);
        free(bytes);
        free(json);
        free(json2);
        b4_bundle_free(b);
        b4_bundle_free(c);
}

static void expect_parse(const char *json, int code, const char *msg)
{
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };
        int r = b4_bundle_parse(json, strlen(json), &b, &err);

        if (r != code || strcmp(err.msg, msg) != 0)
                print_error("for %s\n got %d '%s'\n", json, r, err.msg);
        assert_int_equal(r, code);
        assert_string_equal(err.msg, msg);
        assert_null(b);
}

/* A one-file bundle text with @path, @b64 and @exec, and the given digest. */
static char *one(const char *digest, const char *path, const char *b64, const char *exec)
{
        char *s = NULL;

        assert_true(asprintf(&s,
                             "{\"version\":1,\"digest\":\"%s\",\"files\":[{\"path\":%s,"
                             "\"base64\":%s,\"executable\":%s}]}",
                             digest, path, b64, exec) > 0);
        return s;
}

static void expect_one(const char *path, const char *b64, const char *exec, const char *msg)
{
        char *s = one(MAIN_DIGEST, path, b64, exec);

        expect_parse(s, -EINVAL, msg);
        free(s);
}

static void test_refusals_shape(void **state)
{
        expect_parse("[", -EINVAL,
                     "Source bundle is not JSON: ']' expected near end of file at line 1 column 1");
        expect_parse("[]", -EINVAL,
                     "Source bundle must be an object with exactly version, digest and files");
        expect_parse("{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\"}", -EINVAL,
                     "Source bundle must be an object with exactly version, digest and files");
        expect_parse("{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\",\"files\":[],\"x\":1}",
                     -EINVAL,
                     "Source bundle must be an object with exactly version, digest and files");
        expect_parse("{\"version\":2,\"digest\":\"" EMPTY_DIGEST "\",\"files\":[]}", -EINVAL,
                     "Source bundle version must be 1");
        expect_parse("{\"version\":\"1\",\"digest\":\"" EMPTY_DIGEST "\",\"files\":[]}", -EINVAL,
                     "Source bundle version must be 1");
        expect_parse("{\"version\":1,\"digest\":\"3D9D\",\"files\":[]}", -EINVAL,
                     "Source bundle digest must be 64 lowercase hex characters");
        expect_parse("{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\",\"files\":{}}", -EINVAL,
                     "Source bundle files must be an array");
        expect_parse("{\"version\":1,\"digest\":\"" MAIN_DIGEST "\",\"files\":[]}", -EINVAL,
                     "Source bundle digest mismatch");
        expect_parse("{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\",\"files\":[1]}", -EINVAL,
                     "Source bundle file 0 must be an object with exactly path, base64 and "
                     "executable");
        expect_one("\"main.txt\"", "\"eA==\"", "0",
                   "Source bundle file 0 executable must be a "
                   "boolean");
        expect_one("7", "\"eA==\"", "false", "Source bundle file 0 path must be a string");
        expect_one("\"main.txt\"", "\"eA==\"", "true", "Source bundle digest mismatch");
        expect_one("\"main.txt\"", "\"eQ==\"", "false", "Source bundle digest mismatch");
}

static void test_refusals_base64(void **state)
{
        static const char *const bad[] = {
                "\"eA=\"",  /* length not a multiple of 4 */
                "\"eB==\"", /* non-zero padding bits */
                "\"eAA\"",  /* missing padding */
                "\"e-==\"", /* URL alphabet */
                "\"eA==eA==\"", "\"====\"", "\"e===\"", "\"eA =\"", "\"eAB=\"", NULL,
        };
        for (size_t i = 0; i + 1 < ELEMENTSOF(bad); i++)
                expect_one("\"main.txt\"", bad[i], "false",
                           "Source bundle file 0 base64 is not canonical standard base64");
        expect_one("\"main.txt\"", "1", "false",
                   "Source bundle file 0 base64 is not canonical standard base64");
}

static void expect_path(const char *path, const char *why)
{
        struct b4_error err = { 0 };
        char want[1200];

        snprintf(want, sizeof(want), "Source path \"%s\" is not portable: %s", path, why);
        assert_int_equal(b4_portable_path_check("Source path", path, &err), -EINVAL);
        assert_string_equal(err.msg, want);
}

static void test_refusals_paths(void **state)
{
        char long_seg[300], long_path[1100];

        memset(long_seg, 'a', 256);
        long_seg[256] = '\0';
        memset(long_path, 'a', 1025);
        for (size_t i = 100; i < 1025; i += 100)
                long_path[i] = '/';
        long_path[1025] = '\0';
        expect_path("", "it must be 1 to 1024 characters");
        struct b4_error e = { 0 };
        assert_int_equal(b4_portable_path_check("Source path", long_path, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "... is not portable: it must be 1 to 1024 characters"));
        expect_path("a*b", "only A-Z a-z 0-9 . _ - space and / are allowed");
        expect_path("caf\xc3\xa9", "only A-Z a-z 0-9 . _ - space and / are allowed");
        expect_path("a:b", "only A-Z a-z 0-9 . _ - space and / are allowed");
        expect_path("/abs", "it has an empty segment");
        expect_path("a//b", "it has an empty segment");
        expect_path("a/", "it has an empty segment");
        expect_path(long_seg, "a segment is longer than 255 characters");
        expect_path("./a", "it has a \".\" or \"..\" segment");
        expect_path("a/..", "it has a \".\" or \"..\" segment");
        expect_path(" a", "a segment starts with a space");
        expect_path("a ", "a segment ends with a space or a dot");
        expect_path("a/b.", "a segment ends with a space or a dot");
        expect_path("a  b", "a segment has a double space");
        static const char *const dev[] = { "CON",  "con",    "prn.txt", "x/Aux", "NUL.tar.gz",
                                           "COM1", "com9.c", "LPT1",    "lpt5.x" };
        for (size_t i = 0; i < ELEMENTSOF(dev); i++)
                expect_path(dev[i], "a segment is a Windows device name");
        static const char *const good[] = { "a",   "a b/c.d", "CONSOLE", "COM0", "COM10",
                                            "LPT", "x.CON",   ".hidden", "a..b", "-_.x" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_int_equal(b4_portable_path_check("Source path", good[i], NULL), 0);
        memset(long_seg, 'a', 255);
        long_seg[255] = '\0';
        assert_int_equal(b4_portable_path_check("Source path", long_seg, NULL), 0);
        expect_one("\"../x\"", "\"eA==\"", "false",
                   "Source path \"../x\" is not portable: it has a \".\" or \"..\" segment");
}

static void expect_collision(const char *a, const char *b, const char *msg)
{
        const char *paths[] = { a, b };
        struct b4_error err = { 0 };

        assert_int_equal(b4_bundle_check_paths(paths, 2, &err), -EINVAL);
        assert_string_equal(err.msg, msg);
}

static void test_refusals_collisions(void **state)
{
        const char *ok[] = { "a/b", "a/c", "b", "A.txt", "ab/c" };

        assert_int_equal(b4_bundle_check_paths(ok, ELEMENTSOF(ok), NULL), 0);
        expect_collision("x", "x", "Source path \"x\" is repeated");
        expect_collision("x", "X", "Source paths \"X\" and \"x\" differ only in case");
        expect_collision("d/x", "d/X", "Source paths \"d/X\" and \"d/x\" differ only in case");
        expect_collision("a", "a/b", "Source path \"a\" is a file and an ancestor of \"a/b\"");
        expect_collision("a/b/c", "A", "Source path \"A\" is a file and an ancestor of \"a/b/c\"");
        expect_collision("Dir/a", "dir/b",
                         "Source paths \"Dir/a\" and \"dir/b\" spell the directory \"Dir\" with "
                         "different casing");

        /* the same rules through parse, and the order rule */
        struct b4_bundle_input in[] = { { .path = "a", .data = "", .len = 0 },
                                        { .path = "b", .data = "", .len = 0 } };
        struct b4_bundle *b = NULL;
        char *json = NULL, *sw = NULL;
        size_t len = 0;

        assert_int_equal(b4_bundle_create(in, 2, &b, NULL), 0);
        assert_int_equal(b4_bundle_format(b, &json, &len, NULL), 0);
        sw = strdup(json);
        char *pa = strstr(sw, "\"path\":\"a\""), *pb = strstr(sw, "\"path\":\"b\"");
        pa[8] = 'b';
        pb[8] = 'a';
        expect_parse(sw, -EINVAL,
                     "Source bundle files are not sorted by path (\"b\" before \"a\")");
        pa[8] = 'b';
        pb[8] = 'b';
        expect_parse(sw, -EINVAL, "Source path \"b\" is repeated");
        pa[8] = 'B';
        expect_parse(sw, -EINVAL, "Source paths \"B\" and \"b\" differ only in case");
        struct b4_bundle_input dup[] = { { .path = "a", .data = "", .len = 0 },
                                         { .path = "a/x", .data = "", .len = 0 } };
        struct b4_bundle *d = NULL;
        struct b4_error err = { 0 };
        assert_int_equal(b4_bundle_create(dup, 2, &d, &err), -EINVAL);
        assert_string_equal(err.msg, "Source path \"a\" is a file and an ancestor of \"a/x\"");
        free(sw);
        free(json);
        b4_bundle_free(b);
}

static void test_refusals_limits(void **state)
{
        struct b4_bundle_input *in = calloc(B4_BUNDLE_MAX_ENTRIES + 1, sizeof(*in));
        char(*names)[16] = calloc(B4_BUNDLE_MAX_ENTRIES + 1, 16);
        char *big = calloc(1, B4_BUNDLE_MAX_FILE_BYTES + 1);
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };

        for (size_t i = 0; i <= B4_BUNDLE_MAX_ENTRIES; i++) {
                snprintf(names[i], 16, "f%05zu", i);
                in[i] = (struct b4_bundle_input){ .path = names[i], .data = "", .len = 0 };
        }
        assert_int_equal(b4_bundle_create(in, B4_BUNDLE_MAX_ENTRIES + 1, &b, &err), -E2BIG);
        assert_string_equal(err.msg, "Source bundle has more than 10000 entries");
        assert_int_equal(b4_bundle_create(in, B4_BUNDLE_MAX_ENTRIES, &b, NULL), 0);
        b = b4_bundle_free(b);

        in[0] = (struct b4_bundle_input){ .path = "big",
                                          .data = big,
                                          .len = B4_BUNDLE_MAX_FILE_BYTES + 1 };
        assert_int_equal(b4_bundle_create(in, 1, &b, &err), -E2BIG);
        assert_string_equal(err.msg, "Source bundle file \"big\" exceeds 16777216 bytes");
        for (size_t i = 0; i < 5; i++)
                in[i] = (struct b4_bundle_input){ .path = names[i],
                                                  .data = big,
                                                  .len = B4_BUNDLE_MAX_FILE_BYTES };
        assert_int_equal(b4_bundle_create(in, 5, &b, &err), -E2BIG);
        assert_string_equal(err.msg, "Source bundle exceeds 67108864 bytes in total");
        assert_int_equal(b4_bundle_create(in, 4, &b, NULL), 0);
        assert_int_equal(b->total_bytes, 4 * (uint64_t)B4_BUNDLE_MAX_FILE_BYTES);
        b4_bundle_free(b);
        free(big);
        free(names);
        free(in);
}

/* A parsed bundle of more than 10000 entries is refused before any file is looked at. */
static void test_refusals_parse_entries(void **state)
{
        size_t n = B4_BUNDLE_MAX_ENTRIES + 1;
        char *s = malloc(256 + n * 2), *p = s;

        p += sprintf(p, "{\"version\":1,\"digest\":\"" EMPTY_DIGEST "\",\"files\":[");
        for (size_t i = 0; i < n; i++)
                p += sprintf(p, "%s1", i ? "," : "");
        strcpy(p, "]}");
        expect_parse(s, -E2BIG, "Source bundle has more than 10000 entries");
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vector_empty),
                cmocka_unit_test(test_vector_main),
                cmocka_unit_test(test_create_roundtrip),
                cmocka_unit_test(test_refusals_shape),
                cmocka_unit_test(test_refusals_base64),
                cmocka_unit_test(test_refusals_paths),
                cmocka_unit_test(test_refusals_collisions),
                cmocka_unit_test(test_refusals_limits),
                cmocka_unit_test(test_refusals_parse_entries),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
