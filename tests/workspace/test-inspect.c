/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspectWorkspace (reference §5.1): options, order, every refusal and its exact text. Over
 * the fake provider: written through a handle, inspected through a reader of the thread, the
 * batched walk reversed (the inspection must sort) and broken on purpose where a case says.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"

#include "b4-test.h"
#include "fake/fake.h"

/* One thread's fake workspace. */
struct ws {
        struct b4_provider *p;
        struct b4_policy policy;
        struct b4_sandbox *sb; /* writes */
        struct b4_reader *rd;
        struct b4_fs *fs;      /* the reader's: what is inspected */
        const char *hook_text; /* what grow() writes */
};

/* @batched: the fake offers walk + read_files; otherwise core's generic fallbacks run. */
static struct ws *ws_new(bool batched)
{
        struct ws *w = calloc(1, sizeof(*w));
        struct b4_provider_config pc = { .type = (char *)"fake", .scope = (char *)"insp" };
        struct b4_acquire_req aq = { .thread_id = "t" };
        struct b4_reader_req rq = { .thread_id = "t" };

        assert_non_null(w);
        b4_policy_init(&w->policy);
        aq.policy = &w->policy;
        assert_int_equal(b4_provider_new(&pc, &w->p, NULL), 0);
        assert_int_equal(fake_provider_set_batched(w->p, batched), 0);
        assert_int_equal(fake_provider_set_symlinks(w->p, true), 0);
        assert_int_equal(fake_provider_set_walk_faults(w->p, FAKE_WALK_REVERSED), 0);
        assert_int_equal(b4_provider_acquire(w->p, &aq, &w->sb, NULL), 0);
        assert_int_equal(b4_provider_open_reader(w->p, &rq, &w->rd, NULL), 0);
        w->fs = b4_reader_fs(w->rd);
        return w;
}

static void ws_free(struct ws *w)
{
        b4_reader_free(w->rd);
        b4_sandbox_unref(w->sb);
        b4_provider_free(w->p);
        b4_policy_clear(&w->policy);
        free(w);
}

static unsigned calls(struct ws *w, enum fake_call call)
{
        int n = fake_provider_calls(w->p, call);

        assert_true(n >= 0);
        return (unsigned)n;
}

/* @rel's absolute path, in @buf. */
static const char *at(char *buf, size_t size, const char *rel)
{
        assert_true((size_t)snprintf(buf, size, "%s/%s", B4_WORKSPACE_ROOT, rel) < size);
        return buf;
}

#define AT(rel) at((char[1024]){ 0 }, 1024, (rel))

static void ws_dir(struct ws *w, const char *rel)
{
        assert_int_equal(b4_fs_mkdir_p(b4_sandbox_fs(w->sb), AT(rel), NULL), 0);
}

/* Write (or replace) a file, executable or not. */
static void ws_file(struct ws *w, const char *rel, const char *data, size_t len, bool exec)
{
        struct b4_fs *fs = b4_sandbox_fs(w->sb);

        assert_int_equal(b4_fs_write_file(fs, AT(rel), data, len, NULL), 0);
        assert_int_equal(b4_fs_chmod(fs, AT(rel), exec ? 0755 : 0644, NULL), 0);
}

static void ws_text(struct ws *w, const char *rel, const char *text)
{
        ws_file(w, rel, text, strlen(text), false);
}

static void ws_del(struct ws *w, const char *rel)
{
        assert_int_equal(b4_fs_remove(b4_sandbox_fs(w->sb), AT(rel), NULL), 0);
}

/* Make (or replace) a symlink. */
static void ws_link(struct ws *w, const char *rel, const char *target)
{
        ws_del(w, rel);
        assert_int_equal(b4_fs_symlink(b4_sandbox_fs(w->sb), target, AT(rel), NULL), 0);
}

static void ws_other(struct ws *w, const char *rel)
{
        assert_int_equal(fake_provider_mkother(w->p, "t", AT(rel)), 0);
}

static struct b4_inspect_options opts(void)
{
        struct b4_inspect_options o;

        b4_inspect_options_init(&o);
        return o;
}

/* Inspect @w with @o and expect refusal @code with message @msg. */
static void expect_refusal(struct ws *w,
                           const struct b4_inspect_options *o,
                           enum b4_inspect_code code,
                           const char *msg)
{
        struct b4_inspection insp = { 0 };
        struct b4_inspect_failure fail = { 0 };
        struct b4_error err = { 0 };
        int r = b4_inspect_workspace(w->fs, o, &insp, &fail, &err);

        if (r != -EPROTO || fail.code != code || strcmp(err.msg, msg) != 0)
                fail_msg("got r=%d code=%s msg='%s', want %s '%s'", r,
                         b4_inspect_code_name(fail.code), err.msg, b4_inspect_code_name(code), msg);
        assert_null(insp.files);
}

static struct ws *sample(bool batched)
{
        struct ws *w = ws_new(batched);

        ws_text(w, "b.txt", "bee");
        ws_dir(w, "a");
        ws_text(w, "a/z.md", "zed\n");
        ws_dir(w, "a/b");
        ws_text(w, "a/b/c", "");
        ws_text(w, "a-c", "dash");
        ws_dir(w, "empty");
        return w;
}

static void check_sample(struct ws *w)
{
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };
        const char *want[] = { "a/b/c", "a/z.md", "a-c", "b.txt" };

        assert_int_equal(b4_inspect_workspace(w->fs, NULL, &insp, NULL, &err), 0);
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
        struct ws *w = sample(true);

        check_sample(w);
        assert_int_equal(calls(w, FAKE_CALL_WALK), 1);
        assert_int_equal(calls(w, FAKE_CALL_READ_FILES), 1);
        assert_int_equal(calls(w, FAKE_CALL_LIST_DIR), 0);
        ws_free(w);
}

static void test_order_fallback(void **state)
{
        struct ws *w = sample(false);

        check_sample(w);
        assert_int_equal(calls(w, FAKE_CALL_READ_FILES), 0);
        assert_int_equal(calls(w, FAKE_CALL_READ_FILE), 4);
        ws_free(w);
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
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();

        o.max_entries = B4_INSPECT_MAX_SAFE_INTEGER + 1;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid entries limit");
        o = opts();
        o.max_file_bytes = UINT64_MAX;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid file bytes limit");
        o = opts();
        o.max_total_bytes = B4_INSPECT_MAX_SAFE_INTEGER + 1;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid total bytes limit");
        o = opts();
        o.max_total_bytes = B4_INSPECT_MAX_SAFE_INTEGER; /* the largest safe integer is fine */
        struct b4_inspection insp = { 0 };
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, NULL), 0);
        b4_inspection_clear(&insp);
        assert_int_equal(calls(w, FAKE_CALL_WALK), 1); /* nothing read for the refusals */
        ws_free(w);
}

static void test_invalid_names(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        char *bad_ex[] = { (char *)"a/b", NULL }, *dots[] = { (char *)"..", NULL };
        char *ok_ex[] = { (char *)"x", NULL };
        struct b4_root_symlink l_bad = { "a\\b", "t" }, l_conf = { "x", "t" },
                               l_empty = { "y", "" };
        struct b4_root_symlink dup[] = { { "y", "t" }, { "y", "u" } };

        o.exclude_root = bad_ex;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid excluded root directory: \"a/b\"");
        o.exclude_root = dots;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid excluded root directory: \"..\"");
        o = opts();
        o.expected = &l_bad;
        o.n_expected = 1;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid expected root symlink: \"a\\\\b\"");
        o.exclude_root = ok_ex;
        o.expected = &l_conf;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: x");
        o.expected = &l_empty;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid symlink target: y");
        o.expected = dup;
        o.n_expected = 2;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: y");
        assert_int_equal(calls(w, FAKE_CALL_WALK) + calls(w, FAKE_CALL_LSTAT), 0);
        ws_free(w);
}

static void test_invalid_root(void **state)
{
        struct ws *w = sample(true);
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
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace inspection root: \"a//b\"");
        o.root = "..";
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace inspection root: \"..\"");
        w->fs->root = "/work/../space";
        expect_refusal(w, NULL, B4_INSPECT_INVALID_OPTIONS,
                       "Invalid workspace root: \"/work/../space\"");
        w->fs->root = "relative";
        expect_refusal(w, NULL, B4_INSPECT_INVALID_OPTIONS, "Invalid workspace root: \"relative\"");
        w->fs->root = w->rd->workspace_root;
        ws_free(w);
}

static void test_root(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspect_failure fail = { 0 };
        struct b4_inspection insp = { 0 };

        ws_link(w, "ln", "a");
        o.root = "a";
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, NULL), 0);
        assert_int_equal(insp.n_files, 2);
        assert_string_equal(insp.files[0].path, "b/c");
        assert_string_equal(insp.files[1].path, "z.md");
        assert_int_equal(insp.entries, 3);
        b4_inspection_clear(&insp);

        o.root = "nope/deeper";
        expect_refusal(w, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"nope/deeper\" is missing (\"nope\" does not exist)");
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, &fail, NULL), -EPROTO);
        assert_int_equal(fail.kind, B4_ROOT_ABSENT);
        o.root = "a/missing";
        expect_refusal(w, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"a/missing\" is missing (\"a/missing\" does not exist)");
        o.root = "b.txt/x";
        expect_refusal(w, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"b.txt/x\" is not a directory (\"b.txt\" is not a "
                       "directory)");
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, &fail, NULL), -EPROTO);
        assert_int_equal(fail.kind, B4_ROOT_NOT_DIRECTORY);
        /* a symlink segment is never followed, even to a directory inside */
        o.root = "ln";
        expect_refusal(w, &o, B4_INSPECT_ROOT_MISSING,
                       "Workspace root \"ln\" is not a directory (\"ln\" is not a directory)");
        ws_free(w);
}

static void test_root_must_be_dir(void **state)
{
        struct ws *w = ws_new(true);

        ws_text(w, "root", "x");
        w->fs->root = B4_WORKSPACE_ROOT "/root"; /* the workspace root itself is a file */
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Workspace root must be a directory");
        w->fs->root = w->rd->workspace_root;
        ws_free(w);
}

static void test_refusals(void **state)
{
        struct b4_inspect_options o = opts();
        struct ws *w;

        w = sample(true);
        ws_link(w, "a/l", "../b.txt");
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Unsupported workspace entry (symlink): a/l");
        ws_free(w);
        w = sample(true);
        ws_other(w, "a/fifo");
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Unsupported workspace entry (other): a/fifo");
        ws_free(w);
        w = sample(true);
        ws_file(w, "a/run.sh", "x", 1, true);
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Executable workspace file: a/run.sh");
        ws_free(w);
        w = sample(true);
        ws_file(w, "bin", "a\0b", 3, false);
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Binary workspace file: bin");
        ws_free(w);
        w = sample(true);
        ws_text(w, "latin1", "caf\xe9");
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        ws_text(w, "latin1", "\xed\xa0\x80"); /* a surrogate */
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        ws_text(w, "latin1", "\xc0\xaf"); /* overlong */
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Workspace file is not UTF-8 text: latin1");
        ws_free(w);
        w = sample(true);
        o.max_file_bytes = 3;
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: a/z.md");
        o = opts();
        o.max_total_bytes = 8; /* a/b/c 0, a/z.md 4, a-c 4, b.txt 3 */
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: b.txt");
        o = opts();
        o.max_entries = 6;
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        ws_free(w);
        w = sample(false);
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        ws_free(w);
}

static void test_limits_exact(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };

        o.max_entries = 7;
        o.max_file_bytes = 4;
        o.max_total_bytes = 11;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, NULL), 0);
        b4_inspection_clear(&insp);
        o.max_entries = 0;
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        ws_free(w);
}

static void test_refusal_order(void **state)
{
        struct ws *w = ws_new(true);

        /* the content of an earlier file is judged before a later structural refusal */
        ws_file(w, "a", "\0", 1, false);
        ws_file(w, "b", "x", 1, true);
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Binary workspace file: a");
        ws_file(w, "a", "x", 1, true);
        ws_file(w, "b", "\0", 1, false);
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Executable workspace file: a");
        ws_free(w);
}

static void test_root_policy(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        char *ex[] = { (char *)"node_modules", NULL };
        struct b4_root_symlink links[] = { { "env", "/etc/shared" } };

        ws_dir(w, "node_modules");
        ws_file(w, "node_modules/x.bin", "\0\0", 2, true);
        ws_link(w, "env", "/etc/shared");
        o.exclude_root = ex;
        o.expected = links;
        o.n_expected = 1;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, NULL), 0);
        assert_int_equal(insp.n_files, 4);
        assert_int_equal(insp.n_links, 1);
        assert_string_equal(insp.links[0].name, "env");
        assert_string_equal(insp.links[0].target, "/etc/shared");
        assert_int_equal(insp.entries, 9); /* node_modules counted, its content pruned */
        b4_inspection_clear(&insp);

        ws_link(w, "env", "/etc/shared/");
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Unexpected root symlink: env");
        ws_text(w, "env", "/etc/shared");
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Unexpected root symlink: env");
        ws_del(w, "env");
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Missing expected root symlink: env");
        ws_link(w, "env", "/etc/shared");
        ws_del(w, "node_modules/x.bin");
        ws_del(w, "node_modules");
        ws_text(w, "node_modules", "not a dir");
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Excluded root must be a directory");
        ws_free(w);
}

static void test_walk_rules(void **state)
{
        struct ws *w = sample(true);

        assert_int_equal(
                fake_provider_set_walk_faults(w->p, FAKE_WALK_REVERSED | FAKE_WALK_DUPLICATE), 0);
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Workspace duplicate entry name");
        ws_free(w);
        w = sample(true);
        ws_text(w, "a\\b", "x");
        expect_refusal(w, NULL, B4_INSPECT_REFUSED, "Invalid workspace entry name: \"a\\\\b\"");
        ws_free(w);
        w = ws_new(true);
        ws_text(w, "orphan/x", "x");
        assert_int_equal(
                fake_provider_set_walk_faults(w->p, FAKE_WALK_REVERSED | FAKE_WALK_NO_DIRS), 0);
        /* no "orphan" directory was walked */
        expect_refusal(w, NULL, B4_INSPECT_REFUSED,
                       "Workspace entry outside a walked directory: orphan/x");
        ws_free(w);
}

/* Injected writers: they run before the read, through the handle, while the walk is done. */
static void grow(void *ud)
{
        struct ws *w = ud;

        ws_text(w, "b.txt", w->hook_text);
}

static void vanish(void *ud)
{
        ws_del(ud, "b.txt");
}

static void test_changed(void **state)
{
        struct ws *w = sample(true);

        assert_int_equal(fake_provider_set_read_hook(w->p, grow, w), 0);
        w->hook_text = "beeeee";
        expect_refusal(w, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt grew after it was measured");
        ws_text(w, "b.txt", "bee");
        w->hook_text = "b";
        expect_refusal(w, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt shrank after it was measured");
        ws_text(w, "b.txt", "bee");
        assert_int_equal(fake_provider_set_read_hook(w->p, vanish, w), 0);
        expect_refusal(w, NULL, B4_INSPECT_CHANGED,
                       "Workspace changed: b.txt changed after it was measured");
        ws_free(w);
}

static void test_bom_and_cancel(void **state)
{
        struct ws *w = ws_new(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };

        ws_text(w, "bom", "\xef\xbb\xbfhi");
        assert_int_equal(b4_inspect_workspace(w->fs, NULL, &insp, NULL, NULL), 0);
        assert_int_equal(insp.files[0].len, 5);
        assert_memory_equal(insp.files[0].text, "\xef\xbb\xbfhi", 5);
        b4_inspection_clear(&insp);
        o.cancel = b4_cancel_new();
        b4_cancel_fire(o.cancel);
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), -ECANCELED);
        assert_string_equal(err.msg, "Workspace inspection cancelled");
        assert_int_equal(calls(w, FAKE_CALL_WALK), 1);
        b4_cancel_free(o.cancel);
        ws_free(w);
}

static void test_json(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_root_symlink links[] = { { "env", "/e" } };
        char *ignore[] = { (char *)"a/", NULL };
        char *json = NULL;

        ws_link(w, "env", "/e");
        o.expected = links;
        o.n_expected = 1;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, NULL), 0);
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
        ws_free(w);
}

/* unsupported: "skip": every kind the refuse mode refuses is left out and listed, in walk
 * order, with its reason; the limits still count what was skipped. */
static void test_skip_unsupported(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };
        char *json = NULL;

        struct {
                const char *path, *reason;
        } want[] = { { "a/fifo", "other" },
                     { "a/l", "symlink" },
                     { "a/run.sh", "executable" },
                     { "bin", "binary" },
                     { "latin1", "not_utf8" } };

        ws_link(w, "a/l", "../b.txt");
        ws_other(w, "a/fifo");
        ws_file(w, "a/run.sh", "#!/bin/sh\n", 10, true);
        ws_file(w, "bin", "a\0b", 3, false);
        ws_text(w, "latin1", "caf\xe9");
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Unsupported workspace entry (other): a/fifo");
        o.unsupported = B4_INSPECT_UNSUPPORTED_SKIP;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), 0);
        assert_int_equal(insp.n_files, 4); /* the sample's text files */
        assert_int_equal(insp.total_bytes, 11);
        assert_int_equal(insp.entries, 12);
        assert_true(insp.lists_skipped);
        assert_int_equal(insp.n_skipped, 5);
        for (size_t i = 0; i < 5; i++) {
                assert_string_equal(insp.skipped[i].path, want[i].path);
                assert_string_equal(b4_skip_reason_name(insp.skipped[i].reason), want[i].reason);
        }
        assert_int_equal(b4_inspection_to_json(&insp, NULL, &json), 0);
        assert_non_null(strstr(json, "\"skipped\":[{\"path\":\"a/fifo\",\"reason\":\"other\"},"
                                     "{\"path\":\"a/l\",\"reason\":\"symlink\"},"));
        free(json);
        b4_inspection_clear(&insp);

        /* still counted: a skipped binary was read under the byte limits */
        o.max_total_bytes = 11 + 3 + 3; /* text 11 + bin 3 + latin1 4: one byte short */
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace file bytes limit exceeded: latin1");
        o.max_total_bytes = B4_INSPECT_DEFAULT_MAX_TOTAL_BYTES;
        o.max_entries = 11;
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Workspace entries limit exceeded");
        o.max_entries = B4_INSPECT_DEFAULT_MAX_ENTRIES;
        /* what skip does not relax: expected links, excluded roots */
        struct b4_root_symlink links[] = { { "env", "/e" } };
        ws_link(w, "env", "/other");
        o.expected = links;
        o.n_expected = 1;
        expect_refusal(w, &o, B4_INSPECT_REFUSED, "Unexpected root symlink: env");
        ws_link(w, "env", "/e");
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), 0);
        assert_int_equal(insp.n_links, 1);
        assert_int_equal(insp.n_skipped, 5); /* the expected link is not skipped */
        b4_inspection_clear(&insp);
        ws_free(w);

        /* refuse mode keeps the reference's JSON: no skipped key */
        w = sample(true);
        o = opts();
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), 0);
        assert_false(insp.lists_skipped);
        assert_int_equal(b4_inspection_to_json(&insp, NULL, &json), 0);
        assert_null(strstr(json, "skipped"));
        free(json);
        b4_inspection_clear(&insp);
        o.unsupported = B4_INSPECT_UNSUPPORTED_SKIP;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), 0);
        assert_int_equal(b4_inspection_to_json(&insp, NULL, &json), 0);
        assert_non_null(strstr(json, "\"skipped\":[]"));
        free(json);
        b4_inspection_clear(&insp);
        o.unsupported = (enum b4_inspect_unsupported)7;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Invalid unsupported policy");
        ws_free(w);
}

/* excludePaths: nested paths (and all below them) left out, walked, never read; a single
 * segment is pruned like an excluded root, but may be any kind. */
static void test_exclude_paths(void **state)
{
        struct ws *w = sample(true);
        struct b4_inspect_options o = opts();
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };
        char *ex[] = { (char *)"a/b", (char *)"b.txt", (char *)"none/such", NULL };
        char *bad[][2] = { { (char *)"/abs", NULL },
                           { (char *)"a/../b", NULL },
                           { (char *)"a//b", NULL },
                           { (char *)"", NULL } };
        char *conflict[] = { (char *)"env", NULL };
        struct b4_root_symlink links[] = { { "env", "/e" } };

        ws_dir(w, "a/b/deep");
        ws_file(w, "a/b/deep/x", "\0", 1, true);
        ws_file(w, "a/b/y", "\xff", 1, false);
        o.exclude_paths = ex;
        assert_int_equal(b4_inspect_workspace(w->fs, &o, &insp, NULL, &err), 0);
        assert_int_equal(insp.n_files, 2); /* a/z.md, a-c */
        assert_string_equal(insp.files[0].path, "a/z.md");
        assert_string_equal(insp.files[1].path, "a-c");
        assert_int_equal(insp.entries, 10); /* a/b and below walked (3 more), b.txt counted */
        assert_int_equal(fake_provider_calls(w->p, FAKE_CALL_READ_FILES), 1);
        b4_inspection_clear(&insp);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char msg[128];
                o.exclude_paths = bad[i];
                snprintf(msg, sizeof(msg), "Invalid excluded path: \"%s\"", bad[i][0]);
                expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, msg);
        }
        o.exclude_paths = conflict;
        o.expected = links;
        o.n_expected = 1;
        expect_refusal(w, &o, B4_INSPECT_INVALID_OPTIONS, "Conflicting root policy: env");
        ws_free(w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_order_batched),
                cmocka_unit_test(test_order_fallback),
                cmocka_unit_test(test_invalid_limits),
                cmocka_unit_test(test_invalid_names),
                cmocka_unit_test(test_invalid_root),
                cmocka_unit_test(test_root),
                cmocka_unit_test(test_root_must_be_dir),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_limits_exact),
                cmocka_unit_test(test_refusal_order),
                cmocka_unit_test(test_root_policy),
                cmocka_unit_test(test_walk_rules),
                cmocka_unit_test(test_changed),
                cmocka_unit_test(test_bom_and_cancel),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_skip_unsupported),
                cmocka_unit_test(test_exclude_paths),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
