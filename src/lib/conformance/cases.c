/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance cases: 1-8 are the reference's (§8), in its order and with its names;
 * 9-12 are ours. Each body returns 0 (pass), 1 (skipped, reason set) or -1 (failed, message
 * set). Policy everywhere: network allow, as in the reference.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "suite.h"

#define CONCURRENCY_DEFAULT 4
#define CONCURRENCY_MAX     16
#define INSPECT_MAX_ENTRIES 10000

static int case_idempotent(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t1");
        struct b4_sandbox *a = NULL, *b = NULL;

        if (suite_acquire(c, t, &a) < 0 || suite_write(c, &a->fs, "x", "1") < 0 ||
            suite_acquire(c, t, &b) < 0)
                return -1;
        return suite_expect_file(c, &b->fs, "x", "1");
}

static int case_isolated(struct suite_ctx *c)
{
        const char *ta = suite_thread(c, "a"), *tb = suite_thread(c, "b");
        struct b4_sandbox *a = NULL, *b = NULL;
        bool has = false;

        if (suite_acquire(c, ta, &a) < 0 || suite_write(c, &a->fs, "secret", "s") < 0 ||
            suite_acquire(c, tb, &b) < 0 || suite_root_has(c, &b->fs, "secret", &has) < 0)
                return -1;
        if (has)
                return suite_fail(c, "thread '%s' lists 'secret' written by thread '%s'", tb, ta);
        return 0;
}

static int case_release_destroy(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_sandbox *sb = NULL;
        bool has = true;

        if (suite_acquire(c, t, &sb) < 0 || suite_write(c, &sb->fs, "keep", "1") < 0)
                return -1;
        suite_put(c, sb);
        if (suite_release(c, t) < 0 || suite_acquire(c, t, &sb) < 0 ||
            suite_expect_file(c, &sb->fs, "keep", "1") < 0)
                return -1;
        suite_put(c, sb);
        if (suite_destroy(c, t) < 0 || suite_acquire(c, t, &sb) < 0 ||
            suite_root_has(c, &sb->fs, "keep", &has) < 0)
                return -1;
        if (has)
                return suite_fail(c, "'keep' survived destroy of thread '%s'", t);
        return 0;
}

static int case_exec_numeric(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_sandbox *sb = NULL;
        int code = -1;

        if (suite_acquire(c, t, &sb) < 0 || suite_exec(c, sb, "true", &code) < 0)
                return -1;
        if (code != 0)
                return suite_fail(c, "'true' exited %d, want 0", code);
        return 0;
}

static int need_reader(struct suite_ctx *c)
{
        if (b4_provider_has_reader(c->p))
                return 0;
        return suite_skip(c, "provider \"%s\" has no workspace reader", b4_provider_name(c->p));
}

/*
 * Minimal inspection until inspectWorkspace lands: walk the reader's tree, require
 * produced.txt as a regular file, and read it.
 */
static int inspect_produced(struct b4_reader *rd, void *userdata, struct b4_error *err)
{
        struct suite_ctx *c = userdata;
        struct b4_walk_entry *w = NULL;
        bool found = false;
        size_t n = 0;
        int r;

        r = b4_fs_walk(b4_reader_fs(rd), rd->workspace_root, INSPECT_MAX_ENTRIES, NULL, &w, &n,
                       err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (strcmp(w[i].path, "produced.txt") == 0 && w[i].st.kind == B4_FILE_REGULAR)
                        found = true;
        b4_walk_entries_free(w, n);
        if (!found)
                return b4_error_set(err, -ENOENT, "walk of %s has no regular produced.txt",
                                    rd->workspace_root);
        return suite_expect_file(c, b4_reader_fs(rd), "produced.txt", "out") < 0 ? -EPROTO : 0;
}

static int case_reader_sees(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_reader_req rq = {
                .thread_id = t, .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        if (need_reader(c) || suite_acquire(c, t, &sb) < 0 ||
            suite_write(c, &sb->fs, "produced.txt", "out") < 0)
                return c->result == B4_CONFORMANCE_SKIP ? 1 : -1;
        if (b4_with_reader(c->p, &rq, inspect_produced, c, &err) < 0)
                return suite_fail(c, "reader of '%s': %s", t, err.msg);
        return 0;
}

static int check_read_only(struct suite_ctx *c, struct b4_reader *rd)
{
        const struct b4_fs_ops *ops = rd->fs.ops;
        struct b4_fs *fs = b4_reader_fs(rd);
        struct b4_error err = { 0 };

        if (ops->write_file || ops->mkdir_p || ops->remove || ops->touch || ops->symlink ||
            ops->chmod)
                return suite_fail(c, "reader filesystem has a write member");
        if (b4_fs_write_file(fs, "/workspace/x", "1", 1, &err) != -EOPNOTSUPP ||
            b4_fs_mkdir_p(fs, "/workspace/d", &err) != -EOPNOTSUPP ||
            b4_fs_remove(fs, "/workspace/x", &err) != -EOPNOTSUPP ||
            b4_fs_touch(fs, "/workspace/x", &err) != -EOPNOTSUPP)
                return suite_fail(c, "a write through the reader did not fail -EOPNOTSUPP");
        /* struct b4_reader has no exec member at all: nothing to probe at run time */
        return 0;
}

static int case_reader_no_write(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_reader_req rq = {
                .thread_id = t, .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        struct b4_sandbox *sb = NULL;
        struct b4_reader *rd = NULL;
        struct b4_error err = { 0 };
        int r;

        if (need_reader(c) || suite_acquire(c, t, &sb) < 0 || suite_write(c, &sb->fs, "f", "1") < 0)
                return c->result == B4_CONFORMANCE_SKIP ? 1 : -1;
        if (b4_provider_open_reader(c->p, &rq, &rd, &err) < 0)
                return suite_fail(c, "open reader of '%s': %s", t, err.msg);
        r = check_read_only(c, rd);
        if (b4_reader_close(rd, &err) < 0 && r == 0)
                r = suite_fail(c, "close reader of '%s': %s", t, err.msg);
        b4_reader_free(rd);
        return r;
}

static int case_reader_rejects(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_reader_req rq = {
                .thread_id = t, .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        struct b4_sandbox *sb = NULL;
        struct b4_reader *rd = NULL;
        struct b4_error err = { 0 };
        int r;

        if (need_reader(c) || suite_acquire(c, t, &sb) < 0)
                return c->result == B4_CONFORMANCE_SKIP ? 1 : -1;
        suite_put(c, sb);
        if (suite_destroy(c, t) < 0)
                return -1;
        r = b4_provider_open_reader(c->p, &rq, &rd, &err);
        if (r >= 0) {
                b4_reader_free(rd);
                return suite_fail(c, "opening a reader of destroyed thread '%s' succeeded", t);
        }
        if (r != -ENOENT || err.code != B4_CODE_SANDBOX_UNAVAILABLE)
                return suite_fail(c,
                                  "reader of destroyed thread rejected with %d (%s), want "
                                  "-ENOENT with B4_E2001",
                                  r, err.msg);
        return 0;
}

static int read_before(struct b4_reader *rd, void *userdata, struct b4_error *err)
{
        struct suite_ctx *c = userdata;

        return suite_expect_file(c, b4_reader_fs(rd), "before", "before") < 0 ? -EPROTO : 0;
}

static int case_reader_leaves_usable(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_reader_req rq = {
                .thread_id = t, .run_as_non_root = true, .uid = 1000, .gid = 1000
        };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };
        int code = -1;

        if (need_reader(c) || suite_acquire(c, t, &sb) < 0 ||
            suite_write(c, &sb->fs, "before", "before") < 0)
                return c->result == B4_CONFORMANCE_SKIP ? 1 : -1;
        if (b4_with_reader(c->p, &rq, read_before, c, &err) < 0)
                return suite_fail(c, "reader of '%s': %s", t, err.msg);
        if (suite_expect_file(c, &sb->fs, "before", "before") < 0 ||
            suite_write(c, &sb->fs, "after", "after") < 0 ||
            suite_expect_file(c, &sb->fs, "after", "after") < 0 ||
            suite_exec(c, sb, "true", &code) < 0)
                return -1;
        if (code != 0)
                return suite_fail(c, "'true' exited %d after a read, want 0", code);
        return 0;
}

/* ---- ours ---- */

struct racer {
        struct suite_ctx *c;
        const char *thread_id;
        struct b4_sandbox *sb;
        struct b4_error err;
        int r;
};

static void *race_acquire(void *arg)
{
        struct racer *r = arg;
        struct b4_acquire_req req = { .thread_id = r->thread_id, .policy = &r->c->policy };

        r->r = b4_provider_acquire(r->c->p, &req, &r->sb, &r->err);
        return NULL;
}

/* Start @n acquirers of @t at once; keep every handle in @c. */
static int race(struct suite_ctx *c, const char *t, struct racer *rs, unsigned n)
{
        pthread_t tid[CONCURRENCY_MAX];
        unsigned started = 0;

        for (; started < n; started++) {
                rs[started] = (struct racer){ .c = c, .thread_id = t };
                if (pthread_create(&tid[started], NULL, race_acquire, &rs[started]) != 0)
                        break;
        }
        for (unsigned i = 0; i < started; i++)
                (void)pthread_join(tid[i], NULL);
        for (unsigned i = 0; i < started; i++)
                if (rs[i].r >= 0 && rs[i].sb && c->n_handles < SUITE_MAX_HANDLES)
                        c->handles[c->n_handles++] = rs[i].sb;
        if (started < n)
                return suite_fail(c, "could not start %u acquiring threads", n);
        for (unsigned i = 0; i < n; i++)
                if (rs[i].r < 0 || !rs[i].sb)
                        return suite_fail(c, "concurrent acquire %u of '%s': %s", i, t,
                                          rs[i].err.msg);
        return 0;
}

static int case_concurrent_acquire(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        unsigned n = c->o->concurrency ? c->o->concurrency : CONCURRENCY_DEFAULT;
        struct racer rs[CONCURRENCY_MAX];
        char name[32], want[32];
        int live;

        if (!t)
                return -1;
        if (n > CONCURRENCY_MAX)
                n = CONCURRENCY_MAX;
        if (race(c, t, rs, n) < 0)
                return -1;
        for (unsigned i = 0; i < n; i++) {
                (void)snprintf(name, sizeof(name), "c%u", i);
                (void)snprintf(want, sizeof(want), "%u", i);
                if (suite_write(c, &rs[i].sb->fs, name, want) < 0)
                        return -1;
        }
        for (unsigned i = 0; i < n; i++) {
                for (unsigned j = 0; j < n; j++) {
                        (void)snprintf(name, sizeof(name), "c%u", j);
                        (void)snprintf(want, sizeof(want), "%u", j);
                        if (suite_expect_file(c, &rs[i].sb->fs, name, want) < 0)
                                return suite_fail(c, "handle %u does not see c%u", i, j);
                }
        }
        if (!c->o->instances)
                return 0;
        live = c->o->instances(c->p, t, c->o->userdata);
        if (live != 1)
                return suite_fail(c,
                                  "%d live instances of '%s' after %u concurrent acquires, "
                                  "want 1",
                                  live, t, n);
        return 0;
}

static int case_exit_code(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "t");
        struct b4_sandbox *sb = NULL;
        int code = -1;

        if (suite_acquire(c, t, &sb) < 0 || suite_exec(c, sb, "exit 7", &code) < 0)
                return -1;
        if (code != 7)
                return suite_fail(c, "'exit 7' exited %d, want 7", code);
        return 0;
}

static int case_destroy_unknown(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "never");

        if (!t || suite_destroy(c, t) < 0 || suite_destroy(c, t) < 0)
                return -1;
        return 0;
}

static int failing_body(struct suite_ctx *c)
{
        const char *t = suite_thread(c, "victim");
        struct b4_sandbox *sb = NULL;

        if (suite_acquire(c, t, &sb) < 0 || suite_write(c, &sb->fs, "marker", "1") < 0)
                return -1;
        return suite_fail(c, "deliberate failure");
}

static int case_cleanup_after_failure(struct suite_ctx *c)
{
        struct suite_ctx inner;
        const char *t = suite_thread(c, "victim");
        struct b4_sandbox *sb = NULL;
        bool has = true;

        if (!t || suite_ctx_init(&inner, c->o, c->p, c->prefix) < 0)
                return suite_fail(c, "could not set up the inner case");
        suite_run_body(&inner, failing_body);
        if (inner.result != B4_CONFORMANCE_FAIL || strcmp(inner.msg, "deliberate failure") != 0) {
                (void)suite_fail(c, "inner failing case reported: %s", inner.msg);
                suite_ctx_release(&inner);
                return -1;
        }
        suite_ctx_release(&inner);
        if (suite_acquire(c, t, &sb) < 0 || suite_root_has(c, &sb->fs, "marker", &has) < 0)
                return -1;
        if (has)
                return suite_fail(c, "thread '%s' of a failed case was not destroyed", t);
        return 0;
}

const struct suite_case suite_cases[] = {
        { "acquire is idempotent per thread and reattaches the workspace", case_idempotent },
        { "threads are isolated", case_isolated },
        { "release keeps the volume, destroy clears it", case_release_destroy },
        { "exec returns a numeric exit code", case_exec_numeric },
        { "a workspace reader sees what the thread produced", case_reader_sees },
        { "a workspace reader exposes no write and no exec surface", case_reader_no_write },
        { "opening a reader for a thread with no workspace storage rejects", case_reader_rejects },
        { "reading a workspace leaves the thread's sandbox usable", case_reader_leaves_usable },
        { "concurrent acquires of one thread yield one live sandbox", case_concurrent_acquire },
        { "a non-zero exit code comes back exactly", case_exit_code },
        { "destroy of a thread never acquired succeeds", case_destroy_unknown },
        { "a failed case still destroys the threads it used", case_cleanup_after_failure },
};

const size_t suite_n_cases = ELEMENTSOF(suite_cases);
