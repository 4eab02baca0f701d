/* SPDX-License-Identifier: Apache-2.0 */
/* The fake provider's own semantics (reference §8 plus our documented divergences). */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"
#include "b4box/conformance.h"

#include "b4-test.h"
#include "base/alloc.h"
#include "base/strv.h"
#include "fake/fake.h"
#include "providers.h"

struct fx {
        struct b4_provider *p;
        struct b4_policy policy;
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        struct b4_provider_config cfg = { .type = (char *)"fake", .scope = (char *)"test" };

        assert_non_null(f);
        assert_int_equal(b4_provider_new(&cfg, &f->p, NULL), 0);
        assert_string_equal(b4_provider_name(f->p), "fake");
        assert_string_equal(f->p->scope, "test");
        b4_policy_init(&f->policy);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        b4_provider_free(f->p);
        b4_policy_clear(&f->policy);
        free(f);
        return 0;
}

static struct b4_sandbox *acquire(struct fx *f, const char *id)
{
        struct b4_acquire_req req = { .thread_id = id, .policy = &f->policy };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        assert_int_equal(b4_provider_acquire(f->p, &req, &sb, &err), 0);
        assert_non_null(sb);
        assert_string_equal(sb->thread_id, id);
        assert_string_equal(sb->workspace_root, "/workspace");
        return sb;
}

static void put(struct b4_sandbox *sb, const char *path, const char *data)
{
        assert_int_equal(b4_fs_write_file(b4_sandbox_fs(sb), path, data, strlen(data), NULL), 0);
}

static void expect_content(struct b4_fs *fs, const char *path, const char *data)
{
        char *got = NULL;
        size_t len = 0;

        assert_int_equal(b4_fs_read_file(fs, path, B4_UNBOUNDED, &got, &len, NULL), 0);
        assert_int_equal(len, strlen(data));
        assert_string_equal(got, data);
        free(got);
}

static void expect_error(int r, int want, const struct b4_error *err, const char *msg)
{
        assert_int_equal(r, want);
        if (msg)
                assert_string_equal(err->msg, msg);
}

static char *list_joined(struct b4_fs *fs, const char *path)
{
        char **names = NULL;
        char buf[512] = "";

        assert_int_equal(b4_fs_list_dir(fs, path, &names, NULL), 0);
        assert_non_null(names);
        STRV_FOREACH (n, names) {
                strcat(buf, *n);  /* checksrc: allow (test) */
                strcat(buf, ","); /* checksrc: allow (test) */
        }
        strv_free(names);
        return strdup(buf);
}

static void test_acquire_is_idempotent(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *a = acquire(f, "t"), *b = acquire(f, "t");
        struct b4_acquire_req bad = { .thread_id = "", .policy = &f->policy };
        struct b4_sandbox *c = NULL;

        assert_ptr_equal(a, b);
        assert_int_equal(fake_provider_instances(f->p, "t"), 1);
        assert_int_equal(fake_provider_n_workspaces(f->p), 1);
        put(a, "/workspace/x", "1");
        expect_content(b4_sandbox_fs(b), "/workspace/x", "1");
        assert_int_equal(b4_provider_acquire(f->p, &bad, &c, NULL), -EINVAL);
        b4_sandbox_unref(a);
        b4_sandbox_unref(b);
}

static void test_read_errors(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_error err = { 0 };
        char *got = NULL;
        size_t len;

        put(sb, "/workspace/d/f", "hello");
        expect_error(b4_fs_read_file(fs, "/workspace/nope", 10, &got, &len, &err), -ENOENT, &err,
                     "ENOENT: /workspace/nope");
        expect_error(b4_fs_read_file(fs, "/workspace/d", 10, &got, &len, &err), -EISDIR, &err,
                     "EISDIR: /workspace/d");
        expect_error(b4_fs_read_file(fs, "/workspace/d/f", 4, &got, &len, &err), -EFBIG, &err,
                     "readFile /workspace/d/f: content exceeds maxBytes (4).");
        assert_null(got);
        assert_int_equal(b4_fs_read_file(fs, "/workspace/d/f", 5, &got, &len, NULL), 0);
        assert_int_equal(len, 5);
        free(got);
        expect_error(b4_fs_read_file(fs, "relative", 5, &got, &len, &err), -EINVAL, &err, NULL);
        b4_sandbox_unref(sb);
}

static void test_binary_content(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        static const char bin[] = { 'a', '\0', 'b', '\xff' };
        char *got = NULL;
        size_t len = 0;

        assert_int_equal(
                b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/bin", bin, sizeof(bin), NULL), 0);
        assert_int_equal(b4_fs_read_file(b4_sandbox_fs(sb), "/workspace/bin", B4_UNBOUNDED, &got,
                                         &len, NULL),
                         0);
        assert_int_equal(len, sizeof(bin));
        assert_memory_equal(got, bin, sizeof(bin));
        assert_int_equal(got[len], '\0');
        free(got);
        b4_sandbox_unref(sb);
}

static void test_list_dir(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_error err = { 0 };
        char **names = NULL;
        char *s;

        s = list_joined(fs, "/workspace");
        assert_string_equal(s, "");
        free(s);
        put(sb, "/workspace/b.txt", "");
        put(sb, "/workspace/a/one", "");
        put(sb, "/workspace/a/two", "");
        put(sb, "/workspace/B", "");
        assert_int_equal(b4_fs_mkdir_p(fs, "/workspace/empty", NULL), 0);
        s = list_joined(fs, "/workspace/");
        assert_string_equal(s, "B,a,b.txt,empty,");
        free(s);
        s = list_joined(fs, "/workspace/a");
        assert_string_equal(s, "one,two,");
        free(s);
        s = list_joined(fs, "/");
        assert_string_equal(s, "workspace,");
        free(s);
        expect_error(b4_fs_list_dir(fs, "/workspace/missing", &names, &err), -ENOENT, &err,
                     "ENOENT: /workspace/missing");
        expect_error(b4_fs_list_dir(fs, "/workspace/b.txt", &names, &err), -ENOTDIR, &err,
                     "ENOTDIR: /workspace/b.txt");
        assert_null(names);
        b4_sandbox_unref(sb);
}

static void test_stat_and_dirs(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };

        put(sb, "/workspace/d/f", "abc");
        assert_int_equal(b4_fs_lstat(fs, "/workspace/d/f", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        assert_int_equal(st.size, 3);
        assert_false(st.executable);
        assert_true(st.mtime_ms > 0);
        assert_null(st.target);
        assert_int_equal(b4_fs_stat(fs, "/workspace/d", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        assert_int_equal(b4_fs_lstat(fs, "/workspace", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        expect_error(b4_fs_lstat(fs, "/workspace/none", &st, &err), -ENOENT, &err,
                     "ENOENT: /workspace/none");
        /* parents that are files, directories that are written, removal rules */
        expect_error(b4_fs_write_file(fs, "/workspace/d/f/g", "x", 1, &err), -ENOTDIR, &err, NULL);
        expect_error(b4_fs_write_file(fs, "/workspace/d", "x", 1, &err), -EISDIR, &err,
                     "writeFile /workspace/d: is a directory");
        expect_error(b4_fs_mkdir_p(fs, "/workspace/d/f", &err), -EEXIST, &err, NULL);
        expect_error(b4_fs_remove(fs, "/workspace/d", &err), -ENOTEMPTY, &err,
                     "remove /workspace/d: directory not empty");
        assert_int_equal(b4_fs_remove(fs, "/workspace/d/f", NULL), 0);
        assert_int_equal(b4_fs_remove(fs, "/workspace/d/f", NULL), 0); /* missing is success */
        /* a parent only implied by its last child stays, as a real directory does (the fs
         * routes answer the same on every provider) */
        assert_int_equal(b4_fs_lstat(fs, "/workspace/d", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        assert_int_equal(b4_fs_remove(fs, "/workspace/d", NULL), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/d", &st, NULL), -ENOENT);
        assert_int_equal(b4_fs_mkdir_p(fs, "/workspace/e/f", NULL), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/e/f", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        assert_int_equal(b4_fs_remove(fs, "/workspace/e/f", NULL), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/e/f", &st, NULL), -ENOENT);
        b4_sandbox_unref(sb);
}

static void test_touch_realpath_walk(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_walk_entry *w = NULL;
        size_t n = 0;
        char *rp = NULL;

        assert_int_equal(b4_fs_touch(fs, "/workspace/new", NULL), 0);
        expect_content(fs, "/workspace/new", "");
        put(sb, "/workspace/keep", "data");
        assert_int_equal(b4_fs_touch(fs, "/workspace/keep", NULL), 0);
        expect_content(fs, "/workspace/keep", "data");
        assert_int_equal(b4_fs_realpath(fs, "/workspace/a/../b/./c//", &rp, NULL), 0);
        assert_string_equal(rp, "/workspace/b/c");
        free(rp);
        assert_int_equal(b4_fs_realpath(fs, "/../..", &rp, NULL), 0);
        assert_string_equal(rp, "/");
        free(rp);
        put(sb, "/workspace/d/x", "1");
        assert_int_equal(b4_fs_walk(fs, "/workspace", 100, NULL, &w, &n, NULL), 0);
        assert_int_equal(n, 4);
        assert_string_equal(w[0].path, "d");
        assert_int_equal(w[0].st.kind, B4_FILE_DIRECTORY);
        assert_string_equal(w[1].path, "d/x");
        assert_string_equal(w[2].path, "keep");
        assert_string_equal(w[3].path, "new");
        b4_walk_entries_free(w, n);
        assert_int_equal(b4_fs_walk(fs, "/workspace", 3, NULL, &w, &n, NULL), -E2BIG);
        b4_sandbox_unref(sb);
}

/* Symlinks: stored raw, reported by lstat, followed by everything else, confined by flags. */
static void test_symlinks(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char *rp = NULL, *got = NULL;
        size_t len = 0;

        /* without the member by default; handles started after the switch have it */
        assert_int_equal(b4_fs_symlink(fs, "sub", "/workspace/rel", &err), -EOPNOTSUPP);
        assert_int_equal(b4_provider_release(f->p, "t", NULL), 0);
        b4_sandbox_unref(sb);
        assert_int_equal(fake_provider_set_symlinks(f->p, true), 0);
        sb = acquire(f, "t");
        fs = b4_sandbox_fs(sb);
        put(sb, "/workspace/sub/f", "data");
        assert_int_equal(b4_fs_symlink(fs, "sub", "/workspace/rel", NULL), 0);
        assert_int_equal(b4_fs_symlink(fs, "/etc", "/workspace/out", NULL), 0);
        assert_int_equal(b4_fs_symlink(fs, "loop", "/workspace/loop", NULL), 0);
        assert_int_equal(b4_fs_symlink(fs, "x", "/workspace/rel", &err), -EEXIST);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/rel", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_SYMLINK);
        assert_string_equal(st.target, "sub");
        b4_stat_clear(&st);
        expect_content(fs, "/workspace/rel/f", "data");
        assert_int_equal(b4_fs_realpath(fs, "/workspace/rel/../out/passwd", &rp, NULL), 0);
        assert_string_equal(rp, "/etc/passwd"); /* ".." after the link, as the kernel */
        free(rp);
        assert_int_equal(b4_fs_realpath(fs, "/workspace/loop", &rp, &err), -ELOOP);
        assert_int_equal(b4_fs_read_file_flags(fs, "/workspace/out/passwd", B4_FS_BENEATH, 10, &got,
                                               &len, &err),
                         -EXDEV);
        assert_int_equal(b4_fs_read_file_flags(fs, "/workspace/rel/f", B4_FS_NO_SYMLINKS, 10, &got,
                                               &len, &err),
                         -ELOOP);
        assert_int_equal(
                b4_fs_read_file_flags(fs, "/workspace/rel/f", B4_FS_BENEATH, 10, &got, &len, NULL),
                0);
        free(got);
        /* a write replaces a link leaf, never follows it */
        assert_int_equal(b4_fs_write_file(fs, "/workspace/out", "x", 1, NULL), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/out", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        b4_stat_clear(&st);
        assert_int_equal(b4_fs_chmod(fs, "/workspace/rel", 0755, &err), -ELOOP);
        assert_int_equal(b4_fs_remove(fs, "/workspace/rel", NULL), 0);
        expect_content(fs, "/workspace/sub/f", "data");
        b4_sandbox_unref(sb);
}

/* The walk of @fs as "path:kind," for every entry. */
static char *walk_joined(struct b4_fs *fs, const char *path, char *const *prune)
{
        struct b4_walk_entry *w = NULL;
        size_t n = 0;
        char buf[512] = "";

        assert_int_equal(b4_fs_walk(fs, path, 100, prune, &w, &n, NULL), 0);
        for (size_t i = 0; i < n; i++)
                assert_true((size_t)snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s:%d,",
                                             w[i].path,
                                             (int)w[i].st.kind) < sizeof(buf) - strlen(buf));
        b4_walk_entries_free(w, n);
        return strdup(buf);
}

static void fill_tree(struct b4_sandbox *sb)
{
        put(sb, "/workspace/b", "bee");
        put(sb, "/workspace/a/z", "zed");
        put(sb, "/workspace/a/b/c", "");
        put(sb, "/workspace/a-c", "dash");
        put(sb, "/workspace/skip/deep", "x");
        assert_int_equal(b4_fs_mkdir_p(b4_sandbox_fs(sb), "/workspace/empty", NULL), 0);
}

/* The batched members answer what core's fallbacks answer, from one snapshot. */
static void test_batched(void **state)
{
        struct fx *f = *state;
        struct b4_reader_req rq = { .thread_id = "t" };
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_reader *rd = NULL;
        struct b4_walk_entry *w = NULL;
        struct b4_blob *b = NULL;
        struct b4_error err = { 0 };
        char *prune[] = { (char *)"skip", NULL };
        char *plain, *plain_pruned, *got;
        size_t n = 0;

        fill_tree(sb);
        assert_null(b4_sandbox_fs(sb)->ops->walk); /* not by default */
        assert_null(b4_sandbox_fs(sb)->ops->read_files);
        plain = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        plain_pruned = walk_joined(b4_sandbox_fs(sb), "/workspace", prune);
        assert_string_equal(plain_pruned, "a:1,a/b:1,a/b/c:0,a/z:0,a-c:0,b:0,empty:1,skip:1,");
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_release(f->p, "t", NULL), 0);

        assert_int_equal(fake_provider_set_batched(f->p, true), 0);
        sb = acquire(f, "t");
        assert_int_equal(b4_provider_open_reader(f->p, &rq, &rd, NULL), 0);
        assert_non_null(b4_sandbox_fs(sb)->ops->walk);
        assert_non_null(b4_reader_fs(rd)->ops->read_files);
        assert_null(b4_reader_fs(rd)->ops->write_file);
        assert_null(b4_sandbox_fs(sb)->ops->symlink); /* still opt-in on its own */
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, plain);
        free(got);
        got = walk_joined(b4_reader_fs(rd), "/workspace", prune);
        assert_string_equal(got, plain_pruned);
        free(got);
        got = walk_joined(b4_reader_fs(rd), "/workspace/a/../a", NULL);
        assert_string_equal(got, "b:1,b/c:0,z:0,");
        free(got);
        expect_error(b4_fs_walk(b4_reader_fs(rd), "/workspace", 8, NULL, &w, &n, &err), -E2BIG,
                     &err, "Workspace entries limit exceeded");
        expect_error(b4_fs_walk(b4_reader_fs(rd), "/workspace/b", 8, NULL, &w, &n, &err), -ENOTDIR,
                     &err, NULL);
        expect_error(b4_fs_walk(b4_reader_fs(rd), "/workspace/no", 8, NULL, &w, &n, &err), -ENOENT,
                     &err, NULL);

        struct b4_read_req reqs[] = { { "/workspace/a/z", B4_UNBOUNDED },
                                      { "/workspace/nope", B4_UNBOUNDED },
                                      { "/workspace/b", 2 },
                                      { "/workspace/a", B4_UNBOUNDED },
                                      { "/workspace/b", 3 } };
        assert_int_equal(b4_fs_read_files(b4_reader_fs(rd), reqs, 5, &b, NULL), 0);
        assert_int_equal(b[0].error, 0);
        assert_int_equal(b[0].len, 3);
        assert_string_equal(b[0].data, "zed");
        assert_int_equal(b[1].error, -ENOENT);
        assert_int_equal(b[2].error, -EFBIG);
        assert_int_equal(b[3].error, -EISDIR);
        assert_int_equal(b[4].error, 0);
        assert_string_equal(b[4].data, "bee");
        b4_blobs_free(b, 5);
        assert_int_equal(b4_fs_read_files(b4_reader_fs(rd), reqs, 0, &b, NULL), 0);
        b4_blobs_free(b, 0);
        free(plain);
        free(plain_pruned);
        b4_reader_free(rd);
        b4_sandbox_unref(sb);
}

/* Each fault breaks the batched walk its way, and only the batched one. */
static void test_walk_faults(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb;
        char *got;

        assert_int_equal(fake_provider_set_batched(f->p, true), 0);
        sb = acquire(f, "t");
        put(sb, "/workspace/a/x", "1");
        put(sb, "/workspace/b", "2");
        assert_int_equal(fake_provider_set_walk_faults(f->p, FAKE_WALK_REVERSED), 0);
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, "b:0,a/x:0,a:1,");
        free(got);
        assert_int_equal(fake_provider_set_walk_faults(f->p, FAKE_WALK_DUPLICATE), 0);
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, "a:1,a/x:0,b:0,a:1,");
        free(got);
        assert_int_equal(fake_provider_set_walk_faults(f->p, FAKE_WALK_NO_DIRS), 0);
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, "a/x:0,b:0,");
        free(got);
        assert_int_equal(fake_provider_set_walk_faults(f->p, FAKE_WALK_NO_DIRS |
                                                                     FAKE_WALK_REVERSED |
                                                                     FAKE_WALK_DUPLICATE),
                         0);
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, "b:0,a/x:0,b:0,");
        free(got);
        assert_int_equal(fake_provider_set_walk_faults(f->p, 0), 0);
        got = walk_joined(b4_sandbox_fs(sb), "/workspace", NULL);
        assert_string_equal(got, "a:1,a/x:0,b:0,");
        free(got);
        b4_sandbox_unref(sb);
}

struct race {
        struct b4_sandbox *sb;
        unsigned runs;
};

static void append_x(void *ud)
{
        struct race *race = ud;

        race->runs++;
        put(race->sb, "/workspace/f", race->runs == 1 ? "x" : "xx");
}

/* The read hook runs before every read_file and once per read_files, unlocked. */
static void test_read_hook(void **state)
{
        struct fx *f = *state;
        struct b4_reader_req rq = { .thread_id = "t" };
        struct race race = { .sb = acquire(f, "t") };
        struct b4_read_req reqs[] = { { "/workspace/f", 9 }, { "/workspace/f", 9 } };
        struct b4_reader *rd = NULL;
        struct b4_blob *b = NULL;

        put(race.sb, "/workspace/f", "");
        assert_int_equal(fake_provider_set_read_hook(f->p, append_x, &race), 0);
        assert_int_equal(b4_provider_open_reader(f->p, &rq, &rd, NULL), 0);
        expect_content(b4_reader_fs(rd), "/workspace/f", "x"); /* the write came first */
        assert_int_equal(race.runs, 1);
        assert_int_equal(b4_fs_read_files(b4_reader_fs(rd), reqs, 2, &b, NULL), 0); /* fallback */
        assert_int_equal(race.runs, 3);
        b4_blobs_free(b, 2);
        b4_reader_free(rd);
        assert_int_equal(fake_provider_set_batched(f->p, true), 0);
        assert_int_equal(b4_provider_open_reader(f->p, &rq, &rd, NULL), 0);
        assert_int_equal(b4_fs_read_files(b4_reader_fs(rd), reqs, 2, &b, NULL), 0);
        assert_int_equal(race.runs, 4); /* once per batch */
        assert_string_equal(b[0].data, "xx");
        b4_blobs_free(b, 2);
        assert_int_equal(fake_provider_set_read_hook(f->p, NULL, &race), 0);
        expect_content(b4_reader_fs(rd), "/workspace/f", "xx");
        assert_int_equal(race.runs, 4);
        b4_reader_free(rd);
        b4_sandbox_unref(race.sb);
}

static void test_calls(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_exec_req ex = { .command = "true" };
        struct b4_exec_result res = { 0 };
        struct b4_walk_entry *w = NULL;
        struct b4_stat st = { 0 };
        size_t n = 0;

        for (int c = 0; c < FAKE_CALL__COUNT; c++)
                assert_int_equal(fake_provider_calls(f->p, c), 0);
        put(sb, "/workspace/d/f", "1");
        assert_int_equal(b4_fs_lstat(b4_sandbox_fs(sb), "/workspace/nope", &st, NULL), -ENOENT);
        assert_int_equal(b4_fs_walk(b4_sandbox_fs(sb), "/workspace", 9, NULL, &w, &n, NULL), 0);
        b4_walk_entries_free(w, n);
        assert_int_equal(b4_sandbox_exec(sb, &ex, &res, NULL), 0);
        b4_exec_result_clear(&res);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_WRITE_FILE), 1);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_LSTAT), 3);    /* failed + d + d/f */
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_LIST_DIR), 2); /* the fallback */
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_WALK), 0);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_EXEC), 1);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_READ_FILE), 0);
        assert_int_equal(fake_provider_reset_calls(f->p), 0);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL_LSTAT), 0);
        assert_int_equal(fake_provider_calls(f->p, FAKE_CALL__COUNT), -EINVAL);
        assert_int_equal(fake_provider_calls(NULL, FAKE_CALL_LSTAT), -EINVAL);
        assert_int_equal(fake_provider_reset_calls(NULL), -EINVAL);
        b4_sandbox_unref(sb);
}

/* An "other" entry: what a FIFO is to the contract. */
static void test_other(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_fs *fs = b4_sandbox_fs(sb);
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char *got = NULL, **names = NULL;
        size_t len = 0;

        assert_int_equal(fake_provider_mkother(f->p, "t", "/workspace/d/fifo"), 0);
        assert_int_equal(fake_provider_mkother(f->p, "t", "/workspace/d/fifo"), -EEXIST);
        assert_int_equal(fake_provider_mkother(f->p, "t", "/workspace/d/fifo/x"), -ENOTDIR);
        assert_int_equal(fake_provider_mkother(f->p, "t", "relative"), -EINVAL);
        assert_int_equal(fake_provider_mkother(f->p, "nope", "/workspace/x"), -ENOENT);
        assert_int_equal(fake_provider_mkother(NULL, "t", "/workspace/x"), -EINVAL);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/d/fifo", &st, NULL), 0);
        assert_int_equal(st.kind, B4_FILE_OTHER);
        got = list_joined(fs, "/workspace/d");
        assert_string_equal(got, "fifo,");
        free(got);
        got = walk_joined(fs, "/workspace", NULL);
        assert_string_equal(got, "d:1,d/fifo:3,");
        free(got);
        got = NULL;
        expect_error(b4_fs_read_file(fs, "/workspace/d/fifo", 9, &got, &len, &err), -EINVAL, &err,
                     NULL);
        expect_error(b4_fs_list_dir(fs, "/workspace/d/fifo", &names, &err), -ENOTDIR, &err, NULL);
        assert_int_equal(b4_fs_chmod(fs, "/workspace/d/fifo", 0755, NULL), 0);
        put(sb, "/workspace/d/fifo", "now a file");
        expect_content(fs, "/workspace/d/fifo", "now a file");
        assert_int_equal(fake_provider_mkother(f->p, "t", "/workspace/o"), 0);
        assert_int_equal(b4_fs_remove(fs, "/workspace/o", NULL), 0);
        assert_int_equal(b4_fs_lstat(fs, "/workspace/o", &st, NULL), -ENOENT);
        b4_sandbox_unref(sb);
}

static int make_batched(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        struct b4_provider_config cfg = { .type = (char *)"fake", .scope = (char *)"conf" };
        int r = b4_provider_new(&cfg, ret, err);

        if (r >= 0)
                r = fake_provider_set_batched(*ret, true);
        if (r >= 0)
                r = fake_provider_set_symlinks(*ret, true);
        return r;
}

static int instances(struct b4_provider *p, const char *thread_id, void *userdata)
{
        return fake_provider_instances(p, thread_id);
}

/* With every opt-in member the fake still passes the contract's suite. */
static void test_conformance_batched(void **state)
{
        struct b4_conformance_opts o = { .make_provider = make_batched,
                                         .instances = instances,
                                         .concurrency = 4 };
        struct b4_conformance_summary sum = { 0 };
        struct b4_error err = { 0 };

        assert_int_equal(b4_conformance_run(&o, &sum, &err), 0);
        assert_int_equal(sum.passed, b4_conformance_n_cases());
        assert_int_equal(sum.failed + sum.skipped, 0);
}

static void test_release_keeps_destroy_deletes(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *a = acquire(f, "t"), *b;
        struct b4_error err = { 0 };
        char *got = NULL;
        size_t len;
        char *s;

        put(a, "/workspace/keep", "1");
        assert_int_equal(b4_provider_release(f->p, "t", NULL), 0);
        assert_int_equal(fake_provider_instances(f->p, "t"), 0);
        expect_content(b4_sandbox_fs(a), "/workspace/keep", "1"); /* old handle still reads */
        b = acquire(f, "t");
        assert_ptr_not_equal(a, b);
        assert_int_equal(fake_provider_instances(f->p, "t"), 1);
        expect_content(b4_sandbox_fs(b), "/workspace/keep", "1");
        b4_sandbox_unref(b);
        assert_int_equal(b4_provider_destroy(f->p, "t", NULL), 0);
        assert_int_equal(fake_provider_n_workspaces(f->p), 0);
        expect_error(b4_fs_read_file(b4_sandbox_fs(a), "/workspace/keep", 9, &got, &len, &err),
                     -ENOENT, &err,
                     "Sandbox unavailable: the workspace of thread \"t\" was destroyed.");
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        b4_sandbox_unref(a);
        b = acquire(f, "t");
        s = list_joined(b4_sandbox_fs(b), "/workspace");
        assert_string_equal(s, "");
        free(s);
        b4_sandbox_unref(b);
        assert_int_equal(b4_provider_destroy(f->p, "never", NULL), 0);
        assert_int_equal(b4_provider_release(f->p, "never", NULL), 0);
}

static void test_threads_isolated(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *a = acquire(f, "a"), *b = acquire(f, "b");
        char *s;

        put(a, "/workspace/secret", "s");
        s = list_joined(b4_sandbox_fs(b), "/workspace");
        assert_string_equal(s, "");
        free(s);
        assert_int_equal(fake_provider_n_workspaces(f->p), 2);
        b4_sandbox_unref(a);
        b4_sandbox_unref(b);
}

static void test_reader(void **state)
{
        struct fx *f = *state;
        struct b4_reader_req rq = { .thread_id = "t" };
        struct b4_reader *rd = NULL;
        struct b4_sandbox *sb;
        struct b4_error err = { 0 };
        struct b4_stat st;
        char *got = NULL, **names = NULL;
        size_t len;

        assert_true(b4_provider_has_reader(f->p));
        expect_error(b4_provider_open_reader(f->p, &rq, &rd, &err), -ENOENT, &err,
                     "Sandbox unavailable: no workspace storage for thread \"t\".");
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        sb = acquire(f, "t");
        put(sb, "/workspace/produced.txt", "out");
        assert_int_equal(b4_provider_open_reader(f->p, &rq, &rd, NULL), 0);
        assert_string_equal(rd->thread_id, "t");
        assert_string_equal(rd->workspace_root, "/workspace");
        assert_null(rd->fs.ops->write_file);
        assert_null(rd->fs.ops->mkdir_p);
        assert_null(rd->fs.ops->remove);
        assert_null(rd->fs.ops->touch);
        expect_error(b4_fs_write_file(b4_reader_fs(rd), "/workspace/x", "1", 1, &err), -EOPNOTSUPP,
                     &err, NULL);
        expect_content(b4_reader_fs(rd), "/workspace/produced.txt", "out");
        put(sb, "/workspace/later", "2"); /* a live view, not a snapshot */
        expect_content(b4_reader_fs(rd), "/workspace/later", "2");
        assert_int_equal(b4_reader_close(rd, NULL), 0);
        assert_int_equal(b4_reader_close(rd, NULL), 0);
        expect_error(b4_fs_read_file(b4_reader_fs(rd), "/workspace/later", 9, &got, &len, &err),
                     -EBADF, &err, "Workspace reader for thread \"t\" is closed");
        expect_error(b4_fs_list_dir(b4_reader_fs(rd), "/workspace", &names, &err), -EBADF, &err,
                     "Workspace reader for thread \"t\" is closed");
        expect_error(b4_fs_lstat(b4_reader_fs(rd), "/workspace", &st, &err), -EBADF, &err, NULL);
        b4_reader_free(rd);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(f->p, "t", NULL), 0);
        expect_error(b4_provider_open_reader(f->p, &rq, &rd, &err), -ENOENT, &err,
                     "Sandbox unavailable: no workspace storage for thread \"t\".");
}

struct exec_case {
        const char *command;
        int exit_code;
        const char *out;
        const char *err;
};

static void run(struct b4_sandbox *sb, const struct exec_case *c)
{
        struct b4_exec_req req = { .command = c->command };
        struct b4_exec_result res = { 0 };

        assert_int_equal(b4_sandbox_exec(sb, &req, &res, NULL), 0);
        if (res.exit_code != c->exit_code)
                fail_msg("'%s': exit %d, want %d", c->command, res.exit_code, c->exit_code);
        assert_string_equal(res.out, c->out);
        assert_string_equal(res.errout, c->err);
        assert_int_equal(res.out_len, strlen(c->out));
        b4_exec_result_clear(&res);
}

static void test_exec_builtin(void **state)
{
        static const struct exec_case cases[] = {
                { "true", 0, "", "" },
                { "  false  ", 1, "", "" },
                { "exit 7", 7, "", "" },
                { "exit", 0, "", "" },
                { "exit 256", 0, "", "" },
                { "exit 300", 44, "", "" },
                { "echo hi   there", 0, "hi there\n", "" },
                { "echo -n x", 0, "x", "" },
                { "echo 'a  b' \"c \\\"d\\\"\"", 0, "a  b c \"d\"\n", "" },
                { "printf 'a=%s\\n' 1", 0, "a=1\n", "" },
                { "printf '%s-%s|%%\\t' x", 0, "x-|%\t", "" },
                { "ls -l", 127, "", "fake: command not supported: ls -l\n" },
                { "echo a; rm x", 127, "", "fake: command not supported: echo a; rm x\n" },
                { "echo $HOME", 127, "", "fake: command not supported: echo $HOME\n" },
                { "exit x", 127, "", "fake: command not supported: exit x\n" },
                { "echo 'open", 127, "", "fake: command not supported: echo 'open\n" },
                { "", 127, "", "fake: command not supported: \n" },
        };
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                run(sb, &cases[i]);
        b4_sandbox_unref(sb);
}

static int exec_custom(struct b4_sandbox *sb,
                       const struct b4_exec_req *req,
                       struct b4_exec_result *ret,
                       void *userdata,
                       struct b4_error *err)
{
        int *calls = userdata;

        (*calls)++;
        ret->out = strdup(req->command);
        ret->out_len = strlen(req->command);
        ret->errout = strdup(sb->thread_id);
        ret->errout_len = strlen(sb->thread_id);
        ret->exit_code = 42;
        return 0;
}

static void test_exec_injected(void **state)
{
        static const struct exec_case custom = { "anything at all", 42, "anything at all", "t" };
        static const struct exec_case noop = { "ls -l", 0, "", "" };
        static const struct exec_case builtin = { "exit 3", 3, "", "" };
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_provider other = { .ops = f->p->ops };
        struct b4_provider_ops other_ops = *f->p->ops;
        struct b4_cancel *c = b4_cancel_new();
        struct b4_exec_req req = { .command = "true", .cancel = c };
        struct b4_exec_result res = { 0 };
        int calls = 0;

        assert_int_equal(fake_provider_set_exec(f->p, exec_custom, &calls), 0);
        run(sb, &custom);
        assert_int_equal(calls, 1);
        assert_int_equal(fake_provider_set_exec(f->p, fake_exec_noop, NULL), 0);
        run(sb, &noop);
        assert_int_equal(fake_provider_set_exec(f->p, NULL, NULL), 0);
        run(sb, &builtin);
        other.ops = &other_ops;
        assert_int_equal(fake_provider_set_exec(&other, NULL, NULL), -EINVAL);
        assert_int_equal(fake_provider_instances(&other, "t"), -EINVAL);
        b4_cancel_fire(c);
        assert_int_equal(b4_sandbox_exec(sb, &req, &res, NULL), -ECANCELED);
        b4_cancel_free(c);
        b4_sandbox_unref(sb);
}

static void test_preflight(void **state)
{
        struct fx *f = *state;
        struct b4_preflight pf = { 0 };

        assert_int_equal(b4_provider_preflight(f->p, &pf, NULL), 0);
        assert_true(pf.ok);
        assert_null(pf.warnings);
        b4_preflight_clear(&pf);
}

struct racer {
        struct fx *f;
        struct b4_sandbox *sb;
};

static void *race_acquire(void *arg)
{
        struct racer *r = arg;
        struct b4_acquire_req req = { .thread_id = "race", .policy = &r->f->policy };

        if (b4_provider_acquire(r->f->p, &req, &r->sb, NULL) < 0)
                r->sb = NULL;
        return NULL;
}

static void test_concurrent_acquire(void **state)
{
        struct fx *f = *state;
        struct racer r[8];
        pthread_t t[8];

        for (int i = 0; i < 8; i++) {
                r[i] = (struct racer){ .f = f };
                assert_int_equal(pthread_create(&t[i], NULL, race_acquire, &r[i]), 0);
        }
        for (int i = 0; i < 8; i++)
                pthread_join(t[i], NULL);
        for (int i = 0; i < 8; i++) {
                assert_non_null(r[i].sb);
                assert_ptr_equal(r[i].sb, r[0].sb);
        }
        assert_int_equal(fake_provider_instances(f->p, "race"), 1);
        for (int i = 0; i < 8; i++)
                b4_sandbox_unref(r[i].sb);
}

/* Handles and readers may outlive the provider object. */
static void test_handles_outlive_provider(void **state)
{
        struct fx *f = *state;
        struct b4_sandbox *sb = acquire(f, "t");
        struct b4_reader_req rq = { .thread_id = "t" };
        struct b4_reader *rd = NULL;

        put(sb, "/workspace/f", "v");
        assert_int_equal(b4_provider_open_reader(f->p, &rq, &rd, NULL), 0);
        f->p = b4_provider_free(f->p);
        expect_content(b4_sandbox_fs(sb), "/workspace/f", "v");
        expect_content(b4_reader_fs(rd), "/workspace/f", "v");
        b4_sandbox_unref(sb);
        b4_reader_free(rd);
}

/* One pass over most of the fake's paths; any failure must be a clean -ENOMEM. */
#define STEP(expr)               \
 do {                            \
  r = (expr);                    \
  if (r < 0) {                   \
   assert_int_equal(r, -ENOMEM); \
   goto out;                     \
  }                              \
 } while (0)

#ifdef B4_FAULT_INJECTION
static void oom_scenario(struct b4_policy *policy)
{
        struct b4_provider_config cfg = { .scope = (char *)"oom" };
        struct b4_acquire_req req = { .thread_id = "t", .policy = policy };
        struct b4_reader_req rq = { .thread_id = "t" };
        struct b4_exec_req ex = { .command = "echo 'a b' c" };
        struct b4_exec_result res = { 0 };
        struct b4_provider *p = NULL;
        struct b4_sandbox *sb = NULL;
        struct b4_reader *rd = NULL;
        struct b4_walk_entry *w = NULL;
        struct b4_stat st = { 0 };
        char *data = NULL, *data2 = NULL, **names = NULL, *rp = NULL;
        struct b4_read_req reqs[] = { { "/workspace/d/f", 10 }, { "/workspace/g", 10 } };
        struct b4_reader *rd2 = NULL;
        struct b4_walk_entry *w2 = NULL;
        struct b4_blob *blobs = NULL;
        size_t len = 0, n = 0, n2 = 0;
        int r;

        STEP(fake_provider_new(&cfg, &p, NULL));
        STEP(b4_provider_acquire(p, &req, &sb, NULL));
        STEP(b4_fs_write_file(&sb->fs, "/workspace/d/f", "abc", 3, NULL));
        STEP(b4_fs_mkdir_p(&sb->fs, "/workspace/e", NULL));
        STEP(b4_fs_touch(&sb->fs, "/workspace/g", NULL));
        STEP(b4_fs_read_file(&sb->fs, "/workspace/d/f", 10, &data, &len, NULL));
        STEP(b4_fs_list_dir(&sb->fs, "/workspace", &names, NULL));
        STEP(b4_fs_lstat(&sb->fs, "/workspace/d", &st, NULL));
        STEP(b4_fs_realpath(&sb->fs, "/workspace/d/../f", &rp, NULL));
        STEP(b4_fs_walk(&sb->fs, "/workspace", 100, NULL, &w, &n, NULL));
        STEP(b4_sandbox_exec(sb, &ex, &res, NULL));
        assert_string_equal(res.out, "a b c\n");
        STEP(b4_provider_open_reader(p, &rq, &rd, NULL));
        STEP(b4_fs_read_file(&rd->fs, "/workspace/d/f", 10, &data2, &len, NULL));
        STEP(fake_provider_mkother(p, "t", "/workspace/o"));
        STEP(fake_provider_set_batched(p, true));
        STEP(fake_provider_set_walk_faults(p, FAKE_WALK_NO_DIRS | FAKE_WALK_DUPLICATE));
        STEP(b4_provider_open_reader(p, &rq, &rd2, NULL));
        STEP(b4_fs_walk(&rd2->fs, "/workspace", 100, NULL, &w2, &n2, NULL));
        STEP(b4_fs_read_files(&rd2->fs, reqs, 2, &blobs, NULL));
        STEP(b4_provider_release(p, "t", NULL));
        STEP(b4_provider_destroy(p, "t", NULL));
out:
        b4_exec_result_clear(&res);
        b4_walk_entries_free(w, n);
        b4_walk_entries_free(w2, n2);
        b4_blobs_free(blobs, 2);
        b4_reader_free(rd2);
        free(data);
        free(data2);
        free(rp);
        strv_free(names);
        b4_reader_free(rd);
        b4_sandbox_unref(sb);
        b4_provider_free(p);
}

/*
 * Fail allocation 0, 1, 2, ... of the scenario until it completes: each run must end in a
 * clean -ENOMEM, and ASan's leak check proves nothing leaks on any of those paths. Only in
 * -Dfault_injection=true builds (cmocka's skip() reads as a failure under meson's TAP).
 */
static void test_out_of_memory(void **state)
{
        struct fx *f = *state;
        void *probe;

        for (long i = 0; i < 5000; i++) {
                alloc_fail_after(i);
                oom_scenario(&f->policy);
                probe = b4_malloc(1);
                alloc_fail_after(-1);
                if (probe) { /* the whole scenario ran without hitting the failure */
                        free(probe);
                        assert_true(i > 20);
                        return;
                }
        }
        fail_msg("the scenario never completed");
}
#endif

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_acquire_is_idempotent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_binary_content, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stat_and_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_touch_realpath_walk, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_batched, setup, teardown),
                cmocka_unit_test_setup_teardown(test_walk_faults, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_hook, setup, teardown),
                cmocka_unit_test_setup_teardown(test_calls, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other, setup, teardown),
                cmocka_unit_test(test_conformance_batched),
                cmocka_unit_test_setup_teardown(test_release_keeps_destroy_deletes, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_threads_isolated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_builtin, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_injected, setup, teardown),
                cmocka_unit_test_setup_teardown(test_preflight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_acquire, setup, teardown),
                cmocka_unit_test_setup_teardown(test_handles_outlive_provider, setup, teardown),
#ifdef B4_FAULT_INJECTION
                cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
#endif
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
