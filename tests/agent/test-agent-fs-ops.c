/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one agent-backed struct b4_fs_ops (src/lib/agent/agent-fs-ops.c) with a real
 * b4box-agent over a socketpair (agent_spawn(), $B4BOX_AGENT, its root a temp dir): calls go
 * to the agent when the getter gives a connection; to the fallback members when it gives
 * none or when the provider's rule takes the agent's answer; a getter's error is the
 * answer; a missing fallback member is -EOPNOTSUPP; a batch larger than one agent request
 * comes back whole and in order.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "agent/agent-client.h"
#include "agent/agent-fs-ops.h"
#include "b4-test.h"
#include "base/alloc.h"
#include "base/macro.h"

/* What the getter answers: a connection, none, or an error. */
static struct {
        struct agent_conn *c;
        int answer; /* 1, 0 or -errno */
        unsigned fallback_calls;
        int takes; /* the agent's answer the rule hands to the fallback (0: none) */
} g;

static int conn(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        if (g.answer < 0)
                return b4_error_set(err, g.answer, "the getter failed");
        *ret = g.c;
        return g.answer;
}

static bool falls_back(enum agent_fs_op op, int r)
{
        return g.takes && r == g.takes;
}

static int fb_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err)
{
        g.fallback_calls++;
        *ret = (struct b4_stat){ .kind = B4_FILE_OTHER, .size = 4242 };
        return 0;
}

static const struct b4_fs_ops fallback = { .lstat = fb_lstat };

static const struct agent_fs_ops table = {
        .ops = { AGENT_FS_READ_MEMBERS, AGENT_FS_WRITE_MEMBERS, AGENT_FS_LINK_MEMBERS },
        .conn = conn,
        .fallback = &fallback,
        .falls_back = falls_back,
};

struct fx {
        char *tmp;
        pid_t pid;
        struct b4_fs fs;
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        struct b4_error err = { 0 };
        char *argv[] = { (char *)"--root", NULL, NULL };
        cleanup_free char *ws = NULL;

        f->tmp = b4_test_tmpdir();
        assert_true(b4_asprintf(&ws, "%s/workspace", f->tmp) > 0);
        assert_int_equal(mkdir(ws, 0755), 0);
        argv[1] = f->tmp;
        assert_int_equal(agent_spawn(NULL, argv, NULL, &g.c, &f->pid, &err), 0);
        f->fs = (struct b4_fs){ .ops = &table.ops, .root = "/workspace" };
        g.answer = 1;
        g.fallback_calls = 0;
        g.takes = 0;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        g.c = agent_conn_free(g.c);
        if (f->pid > 0)
                (void)waitpid(f->pid, NULL, 0);
        b4_test_rmrf(f->tmp);
        free(f->tmp);
        free(f);
        return 0;
}

static void test_through_the_agent(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(table.ops.write_file(&f->fs, "/workspace/a.txt", 0, "hello", 5, &err), 0);
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace/a.txt", &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        assert_int_equal(st.size, 5);
        assert_int_equal(table.ops.read_file(&f->fs, "/workspace/a.txt", 0, 100, &data, &len, &err),
                         0);
        assert_int_equal(len, 5);
        assert_memory_equal(data, "hello", 5);
        free(data);
        /* the agent's errors are the answer when the rule does not take them */
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace/missing", &st, &err), -ENOENT);
        assert_int_equal(g.fallback_calls, 0);
}

static void test_fallback(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char **names = NULL;

        /* no agent: the fallback serves */
        g.answer = 0;
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace", &st, &err), 0);
        assert_int_equal(st.size, 4242);
        assert_int_equal(g.fallback_calls, 1);
        /* a member the fallback lacks */
        assert_int_equal(table.ops.list_dir(&f->fs, "/workspace", 0, &names, &err), -EOPNOTSUPP);
        assert_int_equal(table.ops.symlink(&f->fs, "x", "/workspace/l", &err), -EOPNOTSUPP);
        /* the rule takes the agent's answer */
        g.answer = 1;
        g.takes = -ENOENT;
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace/missing", &st, &err), 0);
        assert_int_equal(st.size, 4242);
        assert_int_equal(g.fallback_calls, 2);
        /* the getter's error is the answer, unless the rule takes it too */
        g.answer = -ENOTCONN;
        g.takes = -EIO;
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace", &st, &err), -ENOTCONN);
        assert_string_equal(err.msg, "the getter failed");
        g.takes = -ENOTCONN;
        assert_int_equal(table.ops.lstat(&f->fs, "/workspace", &st, &err), 0);
        assert_int_equal(g.fallback_calls, 3);
}

/* More files than one agent request carries: several requests, one answer in order. */
static void test_read_files_chunked(void **state)
{
        struct fx *f = *state;
        size_t n = AGENT_BATCH_MAX + 3;
        struct b4_read_req *reqs = calloc(n, sizeof(*reqs));
        char **paths = calloc(n, sizeof(*paths));
        struct b4_error err = { 0 };
        struct b4_blob *out = NULL;

        assert_non_null(reqs);
        assert_non_null(paths);
        assert_int_equal(table.ops.write_file(&f->fs, "/workspace/x", 0, "x", 1, &err), 0);
        for (size_t i = 0; i < n; i++) {
                assert_true(b4_asprintf(&paths[i], "/workspace/%s", i % 2 ? "x" : "none") > 0);
                reqs[i] = (struct b4_read_req){ .path = paths[i], .max_bytes = 10 };
        }
        assert_int_equal(table.ops.read_files(&f->fs, reqs, n, &out, &err), 0);
        for (size_t i = 0; i < n; i++) {
                if (i % 2) {
                        assert_int_equal(out[i].error, 0);
                        assert_int_equal(out[i].len, 1);
                } else {
                        assert_int_equal(out[i].error, -ENOENT);
                }
        }
        b4_blobs_free(out, n);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        free(reqs);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_through_the_agent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_files_chunked, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
