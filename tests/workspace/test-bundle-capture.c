/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capture of static workspace definitions (reference §7.2): the exact inventory, excluded
 * directories, extra files, symlinks and special files refused, links and the git baseline's
 * reserved .git, over a real temporary directory.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/bundle.h"
#include "b4box/config.h"

#include "b4-test.h"
#include "base/macro.h"

static char *root;

static void put(const char *rel, const char *text, mode_t mode)
{
        char p[4096];

        snprintf(p, sizeof(p), "%s/%s", root, rel);
        for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                (void)mkdir(p, 0755);
                *s = '/';
        }
        assert_int_equal(b4_test_write(p, text), 0);
        assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state)
{
        root = b4_test_tmpdir();
        put("app/main.txt", "x", 0644);
        put("app/bin/run.sh", "#!/bin/sh\n", 0755);
        put("app/node_modules/dep.js", "1", 0644);
        put("other.txt", "other", 0700);
        return 0;
}

static int teardown(void **state)
{
        b4_test_rmrf(root);
        free(root);
        return 0;
}

static char *inc_ok[] = { (char *)"main.txt", (char *)"bin/run.sh", NULL };
static char *excl[] = { (char *)"node_modules", NULL };

static int capture(struct b4_workspace_def *def,
                   struct b4_captured_workspace **w,
                   struct b4_error *err)
{
        return b4_workspace_capture(root, def, NULL, w, err);
}

static void expect_refused(struct b4_workspace_def *def, int code, const char *msg)
{
        struct b4_captured_workspace *w = NULL;
        struct b4_error err = { 0 };
        int r = capture(def, &w, &err);

        if (r != code || strcmp(err.msg, msg) != 0)
                print_error("got %d '%s'\n", r, err.msg);
        assert_int_equal(r, code);
        assert_string_equal(err.msg, msg);
        assert_null(w);
}

static void test_capture_ok(void **state)
{
        struct b4_workspace_file extra[] = {
                { .path = (char *)"copied.txt", .file = (char *)"other.txt" },
                { .path = (char *)"note.md", .text = (char *)"hello", .executable = true },
        };
        struct b4_environment_link links[] = {
                { .path = (char *)"z/deps", .target = (char *)"/opt/deps" },
                { .path = (char *)"a-link", .target = (char *)"/usr/lib" },
        };
        struct b4_workspace_def def = { .directory = (char *)"app",
                                        .include = inc_ok,
                                        .exclude_directories = excl,
                                        .files = extra,
                                        .n_files = 2,
                                        .links = links,
                                        .n_links = 2,
                                        .baseline_git = true };
        struct b4_captured_workspace *w = NULL;
        struct b4_error err = { 0 };

        assert_int_equal(capture(&def, &w, &err), 0);
        assert_int_equal(w->source->n_files, 4);
        assert_string_equal(w->source->files[0].path, "bin/run.sh");
        assert_true(w->source->files[0].executable);
        assert_string_equal(w->source->files[1].path, "copied.txt");
        assert_true(w->source->files[1].executable); /* 0700 on disk */
        assert_string_equal(w->source->files[2].path, "main.txt");
        assert_false(w->source->files[2].executable);
        assert_string_equal(w->source->files[3].path, "note.md");
        assert_true(w->source->files[3].executable);
        assert_int_equal(w->n_links, 2);
        assert_string_equal(w->links[0].path, "a-link");
        assert_true(w->baseline_git);

        /* same content, same digest */
        struct b4_captured_workspace *w2 = NULL;
        assert_int_equal(capture(&def, &w2, NULL), 0);
        assert_string_equal(w->source->digest, w2->source->digest);
        b4_captured_workspace_free(w2);
        b4_captured_workspace_free(w);
}

static void test_capture_inventory(void **state)
{
        char *missing[] = { (char *)"main.txt", NULL };
        char *extra[] = { (char *)"main.txt", (char *)"bin/run.sh", (char *)"nope.txt", NULL };
        char *twice[] = { (char *)"main.txt", (char *)"bin/run.sh", (char *)"main.txt", NULL };
        char *in_excl[] = { (char *)"main.txt", (char *)"bin/run.sh", (char *)"node_modules/dep.js",
                            NULL };
        struct b4_workspace_def def = { .directory = (char *)"app",
                                        .include = missing,
                                        .exclude_directories = excl };

        expect_refused(&def, -EINVAL,
                       "Source exact inventory mismatch: 'bin/run.sh' is not listed in include");
        def.include = extra;
        expect_refused(&def, -EINVAL,
                       "Source exact inventory mismatch: 'nope.txt' is listed in include but is "
                       "not a regular file of the source");
        def.include = twice;
        expect_refused(&def, -EINVAL,
                       "Source exact inventory mismatch: 'main.txt' is listed twice");
        def.include = in_excl;
        expect_refused(&def, -EINVAL,
                       "Source include 'node_modules/dep.js' lies in excluded directory "
                       "'node_modules'");
        def.include = inc_ok;
        def.exclude_directories = NULL;
        expect_refused(&def, -EINVAL,
                       "Source exact inventory mismatch: 'node_modules/dep.js' is not listed in "
                       "include");
        char *bad_excl[] = { (char *)"main.txt", NULL };
        def.exclude_directories = bad_excl;
        expect_refused(&def, -EINVAL,
                       "Source excluded directory 'main.txt' is not a directory of the source");
        def.exclude_directories = excl;
        def.directory = (char *)"missing";
        expect_refused(&def, -EINVAL, "Source directory 'missing' is not a directory of the app");
        def.directory = (char *)"../x";
        expect_refused(&def, -EINVAL,
                       "Source directory \"../x\" is not portable: it has a \".\" or \"..\" "
                       "segment");
}

static void test_capture_links_and_specials(void **state)
{
        char p[4096], q[4096];
        struct b4_workspace_def def = { .directory = (char *)"app",
                                        .include = inc_ok,
                                        .exclude_directories = excl };

        snprintf(p, sizeof(p), "%s/app/bin/link", root);
        assert_int_equal(symlink("../main.txt", p), 0);
        expect_refused(&def, -EINVAL, "Source may not contain symlinks: 'bin/link'");
        assert_int_equal(unlink(p), 0);
        snprintf(p, sizeof(p), "%s/app/fifo", root);
        assert_int_equal(mkfifo(p, 0644), 0);
        expect_refused(&def, -EINVAL, "Source may contain only regular files: 'fifo'");
        assert_int_equal(unlink(p), 0);

        /* a symlinked source directory is refused, not followed */
        snprintf(p, sizeof(p), "%s/applink", root);
        assert_int_equal(symlink("app", p), 0);
        def.directory = (char *)"applink";
        expect_refused(&def, -EINVAL, "Source directory 'applink' is not a directory of the app");
        assert_int_equal(unlink(p), 0);

        /* files[].file through a symlink is refused */
        snprintf(q, sizeof(q), "%s/ln.txt", root);
        assert_int_equal(symlink("other.txt", q), 0);
        struct b4_workspace_file extra = { .path = (char *)"x", .file = (char *)"ln.txt" };
        def.directory = (char *)"app";
        def.files = &extra;
        def.n_files = 1;
        expect_refused(&def, -EINVAL, "Source changed during capture: cannot open 'ln.txt'");
        assert_int_equal(unlink(q), 0);

        /* an extra file colliding with the inventory */
        extra = (struct b4_workspace_file){ .path = (char *)"MAIN.txt", .text = (char *)"x" };
        expect_refused(&def, -EINVAL,
                       "Source paths \"MAIN.txt\" and \"main.txt\" differ only in case");
}

static void test_capture_link_rules(void **state)
{
        struct b4_environment_link l = { .path = (char *)"main.txt", .target = (char *)"/opt" };
        struct b4_workspace_def def = { .directory = (char *)"app",
                                        .include = inc_ok,
                                        .exclude_directories = excl,
                                        .links = &l,
                                        .n_links = 1 };

        expect_refused(&def, -EINVAL, "Source path \"main.txt\" is repeated");
        l.path = (char *)"bin";
        expect_refused(&def, -EINVAL,
                       "Source path \"bin\" is a file and an ancestor of "
                       "\"bin/run.sh\"");
        l.path = (char *)"deps";
        l.target = (char *)"opt/deps";
        expect_refused(&def, -EINVAL,
                       "Environment link target for \"deps\" must be an absolute path of at most "
                       "1024 characters");
        l.target = (char *)"/opt/../etc";
        expect_refused(&def, -EINVAL,
                       "Environment link target \"opt/../etc\" is not portable: it has a \".\" or "
                       "\"..\" segment");
        l.path = (char *)".git";
        l.target = (char *)"/opt";
        def.baseline_git = true;
        expect_refused(&def, -EINVAL, "Source path \".git\" is reserved by the git baseline");
        def.baseline_git = false;
        struct b4_captured_workspace *w = NULL;
        assert_int_equal(capture(&def, &w, NULL), 0);
        b4_captured_workspace_free(w);
}

/* Capturing from "." must exclude the state dir .b4box when it exists. */
static void test_capture_dot(void **state)
{
        char p[4096];
        char *inc[] = { (char *)"a.txt", NULL };
        char *ex[] = { (char *)".b4box", NULL };
        char *saved = root;
        struct b4_workspace_def def = { .directory = (char *)".", .include = inc };
        struct b4_captured_workspace *w = NULL;

        root = b4_test_tmpdir();
        put("a.txt", "a", 0644);
        assert_int_equal(capture(&def, &w, NULL), 0);
        w = b4_captured_workspace_free(w);
        put(".b4box/b4box.db", "", 0600);
        expect_refused(&def, -EINVAL, "Source captured from \".\" must exclude \".b4box\"");
        def.exclude_directories = ex;
        assert_int_equal(capture(&def, &w, NULL), 0);
        assert_int_equal(w->source->n_files, 1);
        b4_captured_workspace_free(w);
        snprintf(p, sizeof(p), "%s", root);
        b4_test_rmrf(p);
        free(root);
        root = saved;
}

static void test_capture_cancel(void **state)
{
        struct b4_cancel *c = b4_cancel_new();
        struct b4_workspace_def def = { .directory = (char *)"app",
                                        .include = inc_ok,
                                        .exclude_directories = excl };
        struct b4_captured_workspace *w = NULL;
        struct b4_error err = { 0 };

        b4_cancel_fire(c);
        assert_int_equal(b4_workspace_capture(root, &def, c, &w, &err), -ECANCELED);
        assert_null(w);
        b4_cancel_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_capture_ok, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_inventory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_links_and_specials, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_link_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_dot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_cancel, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
