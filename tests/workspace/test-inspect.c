/* SPDX-License-Identifier: Apache-2.0 */
/* inspectWorkspace (reference §5.1): options, order, every refusal and its exact text. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/inspect.h"

#include "b4-test.h"
#include "memfs.h"

static struct b4_inspect_options opts(void)
{
        struct b4_inspect_options o;

        b4_inspect_options_init(&o);
        return o;
}

/* Inspect @m with @o and expect refusal @code with message @msg. */
static void expect_refusal(struct memfs *m,
                           const struct b4_inspect_options *o,
                           enum b4_inspect_code code,
                           const char *msg)
{
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };
        int r = b4_inspect_workspace(&m->fs, o, &insp, &fail, &err);

        if (r != -EPROTO || fail.code != code || strcmp(err.msg, msg) != 0)
                fail_msg("got r=%d code=%s msg='%s', want %s '%s'", r,
                         b4_inspect_code_name(fail.code), err.msg, b4_inspect_code_name(code), msg);
        assert_null(insp.files);
}

static struct memfs *sample(bool batched)
{
        struct memfs *m = memfs_new(batched);

        memfs_text(m, "b.txt", "bee");
        memfs_dir(m, "a");
        memfs_text(m, "a/z.md", "zed\n");
        memfs_dir(m, "a/b");
        memfs_text(m, "a/b/c", "");
        memfs_text(m, "a-c", "dash");
        memfs_dir(m, "empty");
        return m;
}

static void check_sample(struct memfs *m)
{
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };
        const char *want[] = { "a/b/c", "a/z.md", "a-c", "b.txt" };

        assert_int_equal(b4_inspect_workspace(&m->fs, NULL, &insp, NULL, &err), 0);
        assert_int_equal(insp.n_files, 4);
        for (size_t i = 0; i < 4; i++)
                assert_string_equal(insp.files[i].path, want[i]);
        assert_string_equal(insp.files[1].text, "zed\n");
        assert_int_equal(insp.entries, 7);
        assert_int_equal(insp.total_bytes, 3 + 4 + 4);
        assert_int_equal(insp.n_links, 0);
        b4_inspection_clear(&insp);
}

static void test_order_batched(void **state)
{
        struct memfs *m = sample(true);

        check_sample(m);
        assert_int_equal(m->walks, 1);
        assert_int_equal(m->batch_reads, 1);
        assert_int_equal(m->lists, 0);
        memfs_free(m);
}

static void test_order_fallback(void **state)
{
        struct memfs *m = sample(false);

        check_sample(m);
        assert_int_equal(m->batch_reads, 0);
        assert_int_equal(m->reads, 4);
        memfs_free(m);
}

static void test_defaults(void **state)
{
        struct b4_inspect_options o = opts();

        assert_int_equal(o.max_entries, 10000);
        assert_int_equal(o.max_file_bytes, 2 * 1024 * 1024);
        assert_int_equal(o.max_total_bytes, 16 * 1024 * 1024);
        assert_null(o.root);
        assert_null(o.exclude_root);
        assert_int_equal(o.n_expected, 0);
}

static void test_invalid_limits(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();

        o.max_entries = B4_INSPECT_MAX_SAFE_INTEGER + 1;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid entries limit");
        o = opts();
        o.max_file_bytes = UINT64_MAX;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid file bytes limit");
        o = opts();
        o.max_total_bytes = B4_INSPECT_MAX_SAFE_INTEGER + 1;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid total bytes limit");
        o = opts();
        o.max_total_bytes = B4_INSPECT_MAX_SAFE_INTEGER; /* the largest safe integer is fine */
        struct b4_inspection insp = { 0 };
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, NULL), 0);
        b4_inspection_clear(&insp);
        assert_int_equal(m->walks, 1); /* nothing read for the refusals */
        memfs_free(m);
}

static void test_invalid_names(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        char *bad_ex[] = { (char *)"a/b", NULL }, *dots[] = { (char *)"..", NULL };
        char *ok_ex[] = { (char *)"x", NULL };
        struct b4_root_symlink l_bad = { "a\\b", "t" }, l_conf = { "x", "t" },
                               l_empty = { "y", "" };
        struct b4_root_symlink dup[] = { { "y", "t" }, { "y", "u" } };

        o.exclude_root = bad_ex;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid excluded root directory: \"a/b\"");
        o.exclude_root = dots;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid excluded root directory: \"..\"");
        o = opts();
        o.expected = &l_bad;
        o.n_expected = 1;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid expected root symlink: \"a\\\\b\"");
        o.exclude_root = ok_ex;
        o.expected = &l_conf;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: x");
        o.expected = &l_empty;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid symlink target: y");
        o.expected = dup;
        o.n_expected = 2;
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: y");
        assert_int_equal(m->walks + m->lstats, 0);
        memfs_free(m);
}

static void test_invalid_root(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        char long_root[1100];
        const char *bad[] = { "", "/a", "a/", "a//b", "a/./b", "..", "a\\b", "a\x01", "a\x7f" };
        const char *good[] = { "a", "a/b", "é", "a b/c.d" };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_false(b4_inspect_root_is_canonical(bad[i]));
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_true(b4_inspect_root_is_canonical(good[i]));
        memset(long_root, 'a', 1024);
        long_root[1024] = '\0';
        assert_true(b4_inspect_root_is_canonical(long_root));
        long_root[1024] = 'a';
        long_root[1025] = '\0';
        assert_false(b4_inspect_root_is_canonical(long_root));
        o.root = "a//b";
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace inspection root: \"a//b\"");
        o.root = "..";
        expect_refusal(m, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace inspection root: \"..\"");
        m->fs.root = "/work/../space";
        expect_refusal(m, NULL, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace root: \"/work/../space\"");
        m->fs.root = "relative";
        expect_refusal(m, NULL, B4_INSPECT_INVALID_OPTIONS, "Invalid workspace root: \"relative\"");
        m->fs.root = B4_WORKSPACE_ROOT;
        memfs_free(m);
}

static void test_root(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspect_failure fail = { 0 };
        struct b4_inspection insp = { 0 };

        memfs_link(m, "ln", "a");
        o.root = "a";
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, NULL), 0);
        assert_int_equal(insp.n_files, 2);
        assert_string_equal(insp.files[0].path, "b/c");
        assert_string_equal(insp.files[1].path, "z.md");
        assert_int_equal(insp.entries, 3);
        b4_inspection_clear(&insp);

        o.root = "nope/deeper";
        expect_refusal(m, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"nope/deeper\" is missing (\"nope\" does not exist)");
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, &fail, NULL), -EPROTO);
        assert_int_equal(fail.kind, B4_ROOT_ABSENT);
        o.root = "a/missing";
        expect_refusal(m, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"a/missing\" is missing (\"a/missing\" does not exist)");
        o.root = "b.txt/x";
        expect_refusal(m, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"b.txt/x\" is not a directory (\"b.txt\" is not a "
                       "directory)");
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, &fail, NULL), -EPROTO);
        assert_int_equal(fail.kind, B4_ROOT_NOT_DIRECTORY);
        /* a symlink segment is never followed, even to a directory inside */
        o.root = "ln";
        expect_refusal(m, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"ln\" is not a directory (\"ln\" is not a directory)");
        memfs_free(m);
}

static void test_root_must_be_dir(void **state)
{
        struct memfs *m = memfs_new(true);

        memfs_text(m, "", "x"); /* the workspace root itself */
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Workspace root must be a directory");
        memfs_free(m);
}

static void test_refusals(void **state)
{
        struct b4_inspect_options o = opts();
        struct memfs *m;

        m = sample(true);
        memfs_link(m, "a/l", "../b.txt");
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Unsupported workspace entry (symlink): a/l");
        memfs_free(m);
        m = sample(true);
        memfs_other(m, "a/fifo");
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Unsupported workspace entry (other): a/fifo");
        memfs_free(m);
        m = sample(true);
        memfs_file(m, "a/run.sh", "x", 1, true);
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Executable workspace file: a/run.sh");
        memfs_free(m);
        m = sample(true);
        memfs_file(m, "bin", "a\0b", 3, false);
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Binary workspace file: bin");
        memfs_free(m);
        m = sample(true);
        memfs_text(m, "latin1", "caf\xe9");
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        memfs_text(m, "latin1", "\xed\xa0\x80"); /* a surrogate */
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        memfs_text(m, "latin1", "\xc0\xaf"); /* overlong */
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        memfs_free(m);
        m = sample(true);
        o.max_file_bytes = 3;
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: a/z.md");
        o = opts();
        o.max_total_bytes = 8; /* a/b/c 0, a/z.md 4, a-c 4, b.txt 3 */
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: b.txt");
        o = opts();
        o.max_entries = 6;
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        memfs_free(m);
        m = sample(false);
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        memfs_free(m);
}

static void test_limits_exact(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };

        o.max_entries = 7;
        o.max_file_bytes = 4;
        o.max_total_bytes = 11;
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, NULL), 0);
        b4_inspection_clear(&insp);
        o.max_entries = 0;
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        memfs_free(m);
}

static void test_refusal_order(void **state)
{
        struct memfs *m = memfs_new(true);

        /* the content of an earlier file is judged before a later structural refusal */
        memfs_file(m, "a", "\0", 1, false);
        memfs_file(m, "b", "x", 1, true);
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Binary workspace file: a");
        memfs_file(m, "a", "x", 1, true);
        memfs_file(m, "b", "\0", 1, false);
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Executable workspace file: a");
        memfs_free(m);
}

static void test_root_policy(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        char *ex[] = { (char *)"node_modules", NULL };
        struct b4_root_symlink links[] = { { "env", "/etc/shared" } };

        memfs_dir(m, "node_modules");
        memfs_file(m, "node_modules/x.bin", "\0\0", 2, true);
        memfs_link(m, "env", "/etc/shared");
        o.exclude_root = ex;
        o.expected = links;
        o.n_expected = 1;
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, NULL), 0);
        assert_int_equal(insp.n_files, 4);
        assert_int_equal(insp.n_links, 1);
        assert_string_equal(insp.links[0].name, "env");
        assert_string_equal(insp.links[0].target, "/etc/shared");
        assert_int_equal(insp.entries, 9); /* node_modules counted, its content pruned */
        b4_inspection_clear(&insp);

        memfs_link(m, "env", "/etc/shared/");
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Unexpected root symlink: env");
        memfs_text(m, "env", "/etc/shared");
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Unexpected root symlink: env");
        memfs_del(m, "env");
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Missing expected root symlink: env");
        memfs_link(m, "env", "/etc/shared");
        memfs_text(m, "node_modules", "not a dir");
        memfs_del(m, "node_modules/x.bin");
        expect_refusal(m, &o, B4_INSPECT_REFUSED, "Excluded root must be a directory");
        memfs_free(m);
}

static void test_walk_rules(void **state)
{
        struct memfs *m = sample(true);

        m->dup_walk = true;
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Workspace duplicate entry name");
        memfs_free(m);
        m = sample(true);
        memfs_text(m, "a\\b", "x");
        expect_refusal(m, NULL, B4_INSPECT_REFUSED, "Invalid workspace entry name: \"a\\\\b\"");
        memfs_free(m);
        m = memfs_new(true);
        memfs_text(m, "orphan/x", "x"); /* no "orphan" directory was walked */
        expect_refusal(m, NULL, B4_INSPECT_REFUSED,
                       "Workspace entry outside a walked directory: orphan/x");
        memfs_free(m);
}

static void grow(struct memfs *m, void *ud)
{
        memfs_text(m, "b.txt", ud);
}

static void vanish(struct memfs *m, void *ud)
{
        memfs_del(m, "b.txt");
}

static void test_changed(void **state)
{
        struct memfs *m = sample(true);

        m->before_read = grow;
        m->hook_data = (char *)"beeeee";
        expect_refusal(m, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt grew after it was measured");
        memfs_text(m, "b.txt", "bee");
        m->hook_data = (char *)"b";
        expect_refusal(m, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt shrank after it was measured");
        memfs_text(m, "b.txt", "bee");
        m->before_read = vanish;
        expect_refusal(m, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt changed after it was measured");
        memfs_free(m);
}

static void test_bom_and_cancel(void **state)
{
        struct memfs *m = memfs_new(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };

        memfs_text(m, "bom", "\xef\xbb\xbfhi");
        assert_int_equal(b4_inspect_workspace(&m->fs, NULL, &insp, NULL, NULL), 0);
        assert_int_equal(insp.files[0].len, 5);
        assert_memory_equal(insp.files[0].text, "\xef\xbb\xbfhi", 5);
        b4_inspection_clear(&insp);
        o.cancel = b4_cancel_new();
        b4_cancel_fire(o.cancel);
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, &err), -ECANCELED);
        assert_string_equal(err.msg, "Workspace inspection cancelled");
        assert_int_equal(m->walks, 1);
        b4_cancel_free(o.cancel);
        memfs_free(m);
}

static void test_json(void **state)
{
        struct memfs *m = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_root_symlink links[] = { { "env", "/e" } };
        char *ignore[] = { (char *)"a/", NULL };
        char *json = NULL;

        memfs_link(m, "env", "/e");
        o.expected = links;
        o.n_expected = 1;
        assert_int_equal(b4_inspect_workspace(&m->fs, &o, &insp, NULL, NULL), 0);
        assert_int_equal(b4_inspection_to_json(&insp, NULL, &json), 0);
        assert_string_equal(json, "{\"files\":{\"a/b/c\":\"\",\"a/z.md\":\"zed\\n\","
                                  "\"a-c\":\"dash\",\"b.txt\":\"bee\"},\"symlinks\":"
                                  "{\"env\":\"/e\"},\"totalBytes\":11,\"entries\":8}");
        free(json);
        assert_int_equal(b4_inspection_to_json(&insp, ignore, &json), 0);
        assert_non_null(strstr(json, "{\"files\":{\"a-c\":\"dash\",\"b.txt\":\"bee\"}"));
        assert_non_null(strstr(json, "\"totalBytes\":11")); /* ignored files still count */
        free(json);
        b4_inspection_clear(&insp);
        memfs_free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),       cmocka_unit_test(test_order_batched),
                cmocka_unit_test(test_order_fallback), cmocka_unit_test(test_invalid_limits),
                cmocka_unit_test(test_invalid_names),  cmocka_unit_test(test_invalid_root),
                cmocka_unit_test(test_root),           cmocka_unit_test(test_root_must_be_dir),
                cmocka_unit_test(test_refusals),       cmocka_unit_test(test_limits_exact),
                cmocka_unit_test(test_refusal_order),  cmocka_unit_test(test_root_policy),
                cmocka_unit_test(test_walk_rules),     cmocka_unit_test(test_changed),
                cmocka_unit_test(test_bom_and_cancel), cmocka_unit_test(test_json),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
