/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drivers of the data-driven cases that need no provider: tests/data/pathjail/NAME.test (path
 * jail arithmetic and gate decisions over a test-double filesystem with symlinks) and
 * tests/data/permissions/NAME.test (matching, suggested patterns, per-thread store, grants).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/provider-impl.h"
#include "b4box/tools.h"

#include "b4-test.h"
#include "base/alloc.h"
#include "casefile.h"
#include "fake/fake.h"
#include "json/json.h"
#include "tool-call.h"
#include "tools/tools-internal.h"

static int failures;

#define CHECK(cond, file, blk, ...)                       \
 do {                                                     \
  if (!(cond)) {                                          \
   fprintf(stderr, "%s:%d: ", (file)->name, (blk)->line); \
   fprintf(stderr, __VA_ARGS__);                          \
   fputc('\n', stderr);                                   \
   failures++;                                            \
  }                                                       \
 } while (0)

static bool yes(const char *s)
{
        return s && strcmp(s, "yes") == 0;
}

/* "key pattern": split at the first space. */
static void split_entry(const char *v, char *key, size_t keysz, const char **pattern)
{
        const char *sp = strchr(v, ' ');

        assert_non_null(sp);
        snprintf(key, keysz, "%.*s", (int)(sp - v), v);
        *pattern = sp + 1;
}

static void add_entries(struct b4_permissions *p,
                        const struct case_block *b,
                        const char *name,
                        enum b4_permission_list list)
{
        for (size_t i = 0; i < b->n; i++) {
                char key[64];
                const char *pattern;
                if (strcmp(b->fields[i].key, name) != 0)
                        continue;
                split_entry(b->fields[i].value, key, sizeof(key), &pattern);
                assert_int_equal(b4_permissions_add(p, list, key, pattern, NULL), 0);
        }
}

static enum b4_permission_mode block_mode(const struct case_block *b)
{
        enum b4_permission_mode mode = B4_PERMISSION_NON_INTERACTIVE;
        const char *m = case_str(b, "mode");

        if (m)
                assert_int_equal(b4_permission_mode_from_string(m, &mode), 0);
        return mode;
}

/* ---- pathjail ---- */

/* "beneath,no-symlinks", "no-symlinks", "none": the flags the backend gets. */
static const char *flags_name(unsigned flags)
{
        static const char *const names[] = { "none", "beneath", "no-symlinks",
                                             "beneath,no-symlinks" };

        return names[flags & 3];
}

static void jail_gate(const struct case_file *f, const struct case_block *b, struct b4_sandbox *sb)
{
        struct b4_permissions *app = NULL;
        struct b4_tools *t = NULL;
        struct b4_error err = { 0 };
        struct jail_target jt = { 0 };
        const char *want = case_str(b, "expect");
        int r;

        assert_int_equal(b4_permissions_new(block_mode(b), &app), 0);
        add_entries(app, b, "allow", B4_PERMISSION_LIST_ALLOW);
        add_entries(app, b, "deny", B4_PERMISSION_LIST_DENY);
        assert_int_equal(b4_tools_new(sb, &(struct b4_tools_options){ .app = app }, &t, NULL), 0);
        r = gate_path(t, case_str(b, "op"), case_str(b, "path"), &jt, &err);
        if (strcmp(want, "allowed") == 0)
                CHECK(r == 0, f, b, "gate: want allowed, got %d '%s'", r, err.msg);
        else
                CHECK(r < 0 && strcmp(err.msg, want) == 0, f, b, "gate: want '%s', got %d '%s'",
                      want, r, err.msg);
        if (case_str(b, "code"))
                CHECK(err.code != B4_CODE_NONE &&
                              strcmp(b4_code_name(err.code), case_str(b, "code")) == 0,
                      f, b, "gate: want code %s", case_str(b, "code"));
        if (r == 0 && case_str(b, "use"))
                CHECK(strcmp(jt.path, case_str(b, "use")) == 0, f, b, "use: want '%s', got '%s'",
                      case_str(b, "use"), jt.path);
        if (r == 0 && case_str(b, "flags"))
                CHECK(strcmp(flags_name(jt.flags), case_str(b, "flags")) == 0, f, b,
                      "flags: want %s, got %s", case_str(b, "flags"), flags_name(jt.flags));
        jail_target_clear(&jt);
        b4_tools_free(t);
        b4_permissions_free(app);
}

static void jail_case(const struct case_file *f, const struct case_block *b, struct b4_sandbox *sb)
{
        const char *root = case_str(b, "root") ? case_str(b, "root") : B4_WORKSPACE_ROOT;
        const char *path = case_str(b, "path");
        char *abs = NULL, *real = NULL, *real_root = NULL;

        assert_int_equal(jail_resolve(root, path, &abs), 0);
        if (case_str(b, "abs"))
                CHECK(strcmp(abs, case_str(b, "abs")) == 0, f, b, "abs: want '%s', got '%s'",
                      case_str(b, "abs"), abs);
        /* "real: unresolvable": the fs realpath fails (the jail then refuses, H2) */
        if (b4_fs_realpath(b4_sandbox_fs(sb), abs, &real, NULL) < 0)
                real = strdup("unresolvable");
        assert_int_equal(b4_fs_realpath(b4_sandbox_fs(sb), root, &real_root, NULL), 0);
        if (case_str(b, "real"))
                CHECK(strcmp(real, case_str(b, "real")) == 0, f, b, "real: want '%s', got '%s'",
                      case_str(b, "real"), real);
        if (case_str(b, "inside"))
                CHECK(jail_is_inside(real_root, real) == yes(case_str(b, "inside")), f, b,
                      "inside: want %s for '%s'", case_str(b, "inside"), real);
        if (case_str(b, "tool-output"))
                CHECK(jail_is_tool_output(root, abs) == yes(case_str(b, "tool-output")), f, b,
                      "tool-output: want %s for '%s'", case_str(b, "tool-output"), abs);
        if (case_str(b, "op"))
                jail_gate(f, b, sb);
        free(abs);
        free(real);
        free(real_root);
}

/* A fake sandbox (its provider freed: the handle outlives it) with /etc/passwd beside the
 * workspace, so the jail's decisions are tested over the fake's symlinks. */
static struct b4_sandbox *fake_sandbox(const char *thread_id)
{
        struct b4_provider_config cfg = { .type = (char *)"fake", .scope = (char *)"tools-data" };
        struct b4_provider *p = NULL;
        struct b4_sandbox *sb = NULL;
        struct b4_policy pol;

        b4_policy_init(&pol);
        assert_int_equal(b4_provider_new(&cfg, &p, NULL), 0);
        assert_int_equal(fake_provider_set_symlinks(p, true), 0);
        assert_int_equal(b4_provider_acquire(
                                 p,
                                 &(struct b4_acquire_req){ .thread_id = thread_id, .policy = &pol },
                                 &sb, NULL),
                         0);
        b4_provider_free(p);
        assert_int_equal(
                b4_fs_write_file(b4_sandbox_fs(sb), "/etc/passwd", "root:x:0:0\n", 11, NULL), 0);
        return sb;
}

static void test_pathjail_cases(void **state)
{
        struct case_file *files = NULL;
        size_t n = case_files_load("pathjail", NULL, &files);
        size_t cases = 0;

        assert_true(n > 0);
        failures = 0;
        for (size_t i = 0; i < n; i++) {
                struct b4_sandbox *sb = fake_sandbox("jail");
                for (size_t k = 0; k < files[i].n; k++) {
                        const struct case_block *b = &files[i].blocks[k];
                        if (!case_get(b, "path")) {
                                for (size_t j = 0; j < b->n; j++) {
                                        char *arrow = strstr(b->fields[j].value, " -> ");
                                        assert_string_equal(b->fields[j].key, "link");
                                        assert_non_null(arrow);
                                        *arrow = '\0';
                                        assert_int_equal(b4_fs_symlink(b4_sandbox_fs(sb), arrow + 4,
                                                                       b->fields[j].value, NULL),
                                                         0);
                                        *arrow = ' ';
                                }
                                continue;
                        }
                        jail_case(&files[i], b, sb);
                        cases++;
                }
                b4_sandbox_unref(sb);
        }
        case_files_free(files, n);
        print_message("# %zu pathjail cases\n", cases);
        assert_int_equal(failures, 0);
}

/* ---- permissions ---- */

static const char *decision_name(enum b4_permission_decision d)
{
        return d == B4_PERMISSION_ALLOW ? "allow" : d == B4_PERMISSION_DENY ? "deny" : "unknown";
}

static void perm_match_case(const struct case_file *f, const struct case_block *b)
{
        struct b4_permissions *app = NULL, *thread = NULL;
        struct b4_grant_store *grants = NULL;
        enum b4_permission_decision d = B4_PERMISSION_UNKNOWN;
        bool per_thread = case_get(b, "thread-allow") || case_get(b, "thread-deny") ||
                          yes(case_str(b, "thread"));
        char key[64];
        const char *cand;

        assert_int_equal(b4_permissions_new(block_mode(b), &app), 0);
        add_entries(app, b, "allow", B4_PERMISSION_LIST_ALLOW);
        add_entries(app, b, "deny", B4_PERMISSION_LIST_DENY);
        assert_int_equal(b4_grant_store_memory_new(&grants), 0);
        for (size_t i = 0; i < b->n; i++) {
                const char *pattern;
                if (strcmp(b->fields[i].key, "runtime") == 0) {
                        split_entry(b->fields[i].value, key, sizeof(key), &pattern);
                        assert_int_equal(b4_permissions_add_runtime(app, key, pattern, NULL), 0);
                } else if (strcmp(b->fields[i].key, "grant") == 0) {
                        split_entry(b->fields[i].value, key, sizeof(key), &pattern);
                        assert_int_equal(b4_grant_store_add(grants, "t1", key, pattern, NULL), 0);
                }
        }
        if (per_thread) {
                assert_int_equal(b4_permissions_new(B4_PERMISSION_BYPASS, &thread), 0);
                add_entries(thread, b, "thread-allow", B4_PERMISSION_LIST_ALLOW);
                add_entries(thread, b, "thread-deny", B4_PERMISSION_LIST_DENY);
        }
        split_entry(case_str(b, "match"), key, sizeof(key), &cand);
        struct perm_view v = { .app = app, .thread = thread, .grants = grants, .thread_id = "t1" };
        assert_int_equal(perm_view_match(&v, key, cand, &d, NULL), 0);
        CHECK(strcmp(decision_name(d), case_str(b, "expect")) == 0, f, b,
              "match %s: want %s, got %s", case_str(b, "match"), case_str(b, "expect"),
              decision_name(d));
        b4_grant_store_free(grants);
        b4_permissions_free(thread);
        b4_permissions_free(app);
}

static void perm_case(const struct case_file *f, const struct case_block *b)
{
        const struct case_field *rec = case_get(b, "recordable");
        const char *want = case_str(b, "expect");
        char *got = NULL;

        if (case_get(b, "match")) {
                perm_match_case(f, b);
                return;
        }
        if (rec) {
                bool ok = b4_grant_is_recordable(rec->value, rec->len);
                CHECK(ok == yes(want), f, b, "recordable: want %s", want);
                return;
        }
        if (case_get(b, "suggest-command"))
                assert_int_equal(
                        b4_permission_suggest_command(case_str(b, "suggest-command"), &got), 0);
        else if (case_get(b, "suggest-path"))
                assert_int_equal(b4_permission_suggest_path(case_str(b, "suggest-path"), &got), 0);
        else
                fail_msg("%s:%d: unknown permissions case", f->name, b->line);
        CHECK(strcmp(got, want) == 0, f, b, "suggest: want '%s', got '%s'", want, got);
        free(got);
}

static void test_permissions_cases(void **state)
{
        struct case_file *files = NULL;
        size_t n = case_files_load("permissions", NULL, &files);
        size_t cases = 0;

        assert_true(n > 0);
        failures = 0;
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < files[i].n; k++, cases++)
                        perm_case(&files[i], &files[i].blocks[k]);
        case_files_free(files, n);
        print_message("# %zu permissions cases\n", cases);
        assert_int_equal(failures, 0);
}

/* ---- allocation failures ---- */

struct torture_call {
        const char *tool;
        const char *args;
        enum b4_permission_mode mode;
        const char *answer; /* resume a permission request with this */
};

/* Run @c with the Nth allocation failing for N = 0, 1, ... until it completes: every run
 * must end in a result document or -ENOMEM, without leaks (ASan) or crashes. */
static void torture_one(const struct torture_call *c)
{
        char *want = NULL;

        for (long n = 0;; n++) {
                struct b4_sandbox *sb = fake_sandbox("torture");
                struct b4_permissions *app = NULL;
                struct b4_tool_result res = { 0 };
                struct b4_tools *t = NULL;
                struct jv *args = NULL;
                const char *id = NULL;
                char *json = NULL;
                int r;

                assert_int_equal(jv_parse(c->args, strlen(c->args), &args, NULL), 0);
                assert_int_equal(b4_permissions_new(c->mode, &app), 0);
                assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/f.txt",
                                                  "a\nb\na\n", 6, NULL),
                                 0);
                assert_int_equal(
                        b4_tools_new(sb, &(struct b4_tools_options){ .app = app }, &t, NULL), 0);
                if (c->answer) {
                        assert_int_equal(tool_call_text(t, c->tool, c->args, &json, NULL), 0);
                        free(json);
                        json = NULL;
                        assert_int_equal(b4_tools_last_request(t, &id, NULL, NULL, NULL), 0);
                }
                alloc_fail_after(n);
                r = c->answer ? b4_tools_resume(t, id, c->answer, &res, NULL)
                              : b4_tools_call(t, c->tool, args, &res, NULL);
                alloc_fail_after(-1);
                assert_true(r == 0 || r == -ENOMEM);
                if (r == 0)
                        json = tool_result_text(&res);
                b4_tool_result_clear(&res);
                jv_unref(args);
                b4_tools_free(t);
                b4_permissions_free(app);
                b4_sandbox_unref(sb);
                if (r == 0) {
                        assert_null(strstr(json, "ENOMEM"));
                        print_message("# %s %s: %ld allocation failures survived\n", c->tool,
                                      c->answer ? c->answer : "call", n);
                        want = json;
                        break;
                }
                free(json);
                assert_true(n < 5000);
        }
        free(want);
}

static bool fault_injection_active(void)
{
        void *p;

        alloc_fail_after(0);
        p = b4_malloc(1);
        alloc_fail_after(-1);
        free(p);
        return p == NULL;
}

static void test_torture(void **state)
{
        static const struct torture_call calls[] = {
                { "readFile", "{\"path\":\"f.txt\",\"startLine\":2}", B4_PERMISSION_NON_INTERACTIVE,
                  NULL },
                { "writeFile", "{\"path\":\"d/g.txt\",\"content\":\"x\"}",
                  B4_PERMISSION_NON_INTERACTIVE, NULL },
                { "editFile",
                  "{\"path\":\"f.txt\",\"oldText\":\"a\",\"newText\":\"c\",\"replaceAll\":true}",
                  B4_PERMISSION_NON_INTERACTIVE, NULL },
                { "listDir", "{}", B4_PERMISSION_NON_INTERACTIVE, NULL },
                { "readFile", "{\"path\":\"tool-outputs/none\"}", B4_PERMISSION_NON_INTERACTIVE,
                  NULL },
                { "writeFile", "{\"path\":\"/etc/x\",\"content\":\"x\"}",
                  B4_PERMISSION_NON_INTERACTIVE, NULL },
                { "runBash", "{\"command\":\"echo hi\"}", B4_PERMISSION_BYPASS, NULL },
                { "readFile", "{\"path\":\"/etc/passwd\",\"bad\":1}", B4_PERMISSION_NON_INTERACTIVE,
                  NULL },
                { "readFile", "{\"path\":\"/etc/passwd\"}", B4_PERMISSION_NON_INTERACTIVE, NULL },
                { "readFile", "{\"path\":\"/etc/passwd\"}", B4_PERMISSION_INTERACTIVE, NULL },
                { "readFile", "{\"path\":\"/etc/passwd\"}", B4_PERMISSION_INTERACTIVE, "always" },
                { "runBash", "{\"command\":\"echo a b\"}", B4_PERMISSION_INTERACTIVE, "once" },
                { "runBash", "{\"command\":\"echo a b\"}", B4_PERMISSION_INTERACTIVE, "deny" },
        };

        if (!fault_injection_active()) {
                print_message("# not a fault-injection build: nothing to torture\n");
                return;
        }
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
                torture_one(&calls[i]);
}

/* readFile's range over a file read in pieces equals the range over the whole file: every
 * text, every range (absent, past the end, reversed), fed in pieces of every size. */
static void test_line_scan_equals_slice(void **state)
{
        static const char *const texts[] = { "",          "a",    "a\n", "a\nb",
                                             "a\nb\n",    "\n\n", "\n",  "one\ntwo\nthree\n\nfive",
                                             "x\r\ny\r\n" };
        static const int64_t ranges[][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 2, 3 }, { 3, 2 },
                                             { 1, 1 }, { 2, 0 }, { 5, 9 }, { 4, 4 }, { 6, 0 } };

        (void)state;
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
                for (size_t j = 0; j < sizeof(ranges) / sizeof(ranges[0]); j++)
                        for (size_t step = 1; step <= 4; step++) {
                                const char *d = texts[i];
                                size_t len = strlen(d), n1 = 0, n2 = 0;
                                int64_t a = ranges[j][0], b = ranges[j][1];
                                struct b4_error e1 = { 0 }, e2 = { 0 };
                                char *o1 = NULL, *o2 = NULL;
                                struct line_scan sc;
                                int r1, r2 = 0;

                                r1 = text_slice_lines("f", d, len, a, b, &o1, &n1, &e1);
                                line_scan_init(&sc, a, b, 1024);
                                for (size_t k = 0; r2 >= 0 && k < len; k += step)
                                        r2 = line_scan_feed(&sc, "f", d + k,
                                                            len - k < step ? len - k : step, &e2);
                                if (r2 >= 0)
                                        r2 = line_scan_finish(&sc, "f", &o2, &n2, &e2);
                                line_scan_release(&sc);
                                if (r1 != r2 || (r1 >= 0 && (n1 != n2 || memcmp(o1, o2, n1))) ||
                                    (r1 < 0 && strcmp(e1.msg, e2.msg)))
                                        fail_msg("text %zu range %lld-%lld step %zu: '%s' vs '%s'",
                                                 i, (long long)a, (long long)b, step,
                                                 r1 < 0 ? e1.msg : o1, r2 < 0 ? e2.msg : o2);
                                free(o1);
                                free(o2);
                        }
}

/* The range is what the cap bounds: a range over it is refused, naming the cap. */
static void test_line_scan_cap(void **state)
{
        struct b4_error e = { 0 };
        struct line_scan sc;
        char *o = NULL;
        size_t n = 0;

        (void)state;
        line_scan_init(&sc, 2, 3, 5); /* exactly the range: "ab\ncd" */
        const char *text = "xxxxxxxx\nab\ncd\nyyyyyyyy\n";
        assert_int_equal(line_scan_feed(&sc, "f", text, strlen(text), &e), 0);
        assert_int_equal(line_scan_finish(&sc, "f", &o, &n, &e), 0);
        assert_string_equal(o, "[f lines 2-3 of 4]\nab\ncd");
        free(o);
        line_scan_release(&sc);
        line_scan_init(&sc, 1, 0, 4);
        assert_int_equal(line_scan_feed(&sc, "f", "abcdef\n", 7, &e), -EFBIG);
        assert_string_equal(e.msg, "readFile: lines 1-end of f are more than 4 bytes (the size "
                                   "cap); ask for fewer lines");
        line_scan_release(&sc);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pathjail_cases),
                cmocka_unit_test(test_permissions_cases),
                cmocka_unit_test(test_torture),
                cmocka_unit_test(test_line_scan_equals_slice),
                cmocka_unit_test(test_line_scan_cap),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
