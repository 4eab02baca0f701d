/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-agent and its host client, end to end on the host: the real agent as a child over a
 * socketpair (agent_spawn(), found through $B4BOX_AGENT), its root a temp dir; and a lying
 * agent played by a thread, to prove the client fails calls instead of trusting replies.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agent/agent-client.h"
#include "b4-test.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "core/capture.h"

struct fx {
        char *tmp;  /* the agent's root */
        char *root; /* --root argument */
        struct agent_conn *c;
        pid_t pid;
};

static char *fx_path(const struct fx *f, const char *rel)
{
        char *p = NULL;

        assert_true(b4_asprintf(&p, "%s%s", f->tmp, rel) > 0);
        return p;
}

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        struct b4_error err = { 0 };
        char *argv[] = { (char *)"--root", NULL, NULL };
        cleanup_free char *ws = NULL;

        f->tmp = b4_test_tmpdir();
        ws = fx_path(f, "/workspace");
        assert_int_equal(mkdir(ws, 0755), 0);
        argv[1] = f->tmp;
        assert_int_equal(agent_spawn(NULL, argv, NULL, &f->c, &f->pid, &err), 0);
        assert_int_equal(agent_conn_version(f->c), AGENT_PROTO_VERSION);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        agent_conn_free(f->c);
        if (f->pid > 0)
                (void)waitpid(f->pid, NULL, 0);
        b4_test_rmrf(f->tmp);
        free(f->tmp);
        free(f);
        return 0;
}

/* ---- file operations ---- */

static void test_write_read_stat(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        char *data = NULL, *rp = NULL;
        size_t len = 0;

        assert_int_equal(agent_write_file(f->c, "/workspace/a/b/c.txt", 0, "hello", 5, &err), 0);
        assert_int_equal(agent_read_file(f->c, "/workspace/a/b/c.txt", 0, 100, &data, &len, &err),
                         0);
        assert_int_equal(len, 5);
        assert_string_equal(data, "hello");
        free(data);
        assert_int_equal(agent_lstat(f->c, "/workspace/a/b/c.txt", &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_REGULAR);
        assert_int_equal(st.size, 5);
        assert_false(st.executable);
        assert_true(st.mtime_ms > 0);
        b4_stat_clear(&st);
        assert_int_equal(agent_stat(f->c, "/workspace/a", B4_FS_BENEATH, &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        assert_int_equal(agent_realpath(f->c, "/workspace/a/../a/b/./c.txt", &rp, &err), 0);
        assert_string_equal(rp, "/workspace/a/b/c.txt");
        free(rp);
        assert_int_equal(agent_realpath(f->c, "/workspace/missing/x", &rp, &err), 0);
        assert_string_equal(rp, "/workspace/missing/x");
        free(rp);
        /* an empty file */
        assert_int_equal(agent_write_file(f->c, "/workspace/empty", 0, "", 0, &err), 0);
        assert_int_equal(agent_read_file(f->c, "/workspace/empty", 0, 10, &data, &len, &err), 0);
        assert_int_equal(len, 0);
        assert_string_equal(data, "");
        free(data);
}

static void test_read_errors(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        cleanup_free char *fifo = fx_path(f, "/workspace/fifo");
        char *data = NULL;
        size_t len = 0;

        assert_int_equal(agent_read_file(f->c, "/workspace/nope", 0, 10, &data, &len, &err),
                         -ENOENT);
        assert_non_null(strstr(err.msg, "/workspace/nope"));
        assert_int_equal(agent_read_file(f->c, "/workspace", 0, 10, &data, &len, &err), -EISDIR);
        assert_int_equal(agent_write_file(f->c, "/workspace/ten", 0, "0123456789", 10, &err), 0);
        assert_int_equal(agent_read_file(f->c, "/workspace/ten", 0, 10, &data, &len, &err), 0);
        free(data);
        assert_int_equal(agent_read_file(f->c, "/workspace/ten", 0, 9, &data, &len, &err), -EFBIG);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        assert_int_equal(agent_read_file(f->c, "/workspace/fifo", 0, 10, &data, &len, &err),
                         -EINVAL);
        assert_int_equal(agent_read_file(f->c, "relative", 0, 10, &data, &len, &err), -EINVAL);
        assert_int_equal(agent_lstat(f->c, "/workspace/nope", &(struct b4_stat){ 0 }, &err),
                         -ENOENT);
}

static void test_big_file(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        size_t n = 3 * 1024 * 1024 + 17;
        cleanup_free char *big = malloc(n);
        char *data = NULL;
        size_t len = 0;

        for (size_t i = 0; i < n; i++)
                big[i] = (char)(i * 7 + i / 4096);
        assert_int_equal(agent_write_file(f->c, "/workspace/big", 0, big, n, &err), 0);
        assert_int_equal(
                agent_read_file(f->c, "/workspace/big", 0, B4_UNBOUNDED, &data, &len, &err), 0);
        assert_int_equal(len, n);
        assert_memory_equal(data, big, n);
        free(data);
}

static void test_write_keeps_mode(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        cleanup_free char *p = fx_path(f, "/workspace/run.sh");
        struct stat st;

        assert_int_equal(b4_test_write(p, "#!/bin/sh\n"), 0);
        assert_int_equal(chmod(p, 0750), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/run.sh", 0, "echo\n", 5, &err), 0);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0750);
        assert_int_equal(agent_chmod(f->c, "/workspace/run.sh", 0600, &err), 0);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
}

/* A symlink leaf is replaced, never written through; a symlinked parent is refused when
 * the write is confined. */
static void test_symlink_leaf_attack(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        cleanup_free char *outside = fx_path(f, "/secret");
        cleanup_free char *link = fx_path(f, "/workspace/link");
        cleanup_free char *dirlink = fx_path(f, "/workspace/dir");
        cleanup_free char *outdir = fx_path(f, "/outdir");
        char buf[64] = { 0 };
        struct stat st;
        int fd;

        assert_int_equal(b4_test_write(outside, "keep"), 0);
        assert_int_equal(symlink("/secret", link), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/link", 0, "evil", 4, &err), 0);
        fd = open(outside, O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof(buf)), 4);
        close(fd);
        assert_string_equal(buf, "keep");
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        /* a parent that leaves the workspace */
        assert_int_equal(mkdir(outdir, 0755), 0);
        assert_int_equal(symlink("/outdir", dirlink), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/dir/x", B4_FS_BENEATH, "x", 1, &err),
                         -EXDEV);
        assert_int_equal(
                agent_write_file(f->c, "/workspace/dir/x", B4_FS_NO_SYMLINKS, "x", 1, &err),
                -ELOOP);
        /* the symlink itself is seen by lstat with its target */
        struct b4_stat ls = { 0 };
        assert_int_equal(agent_lstat(f->c, "/workspace/dir", &ls, &err), 0);
        assert_int_equal(ls.kind, B4_FILE_SYMLINK);
        assert_string_equal(ls.target, "/outdir");
        b4_stat_clear(&ls);
        /* symlink() makes one, refuses an existing path */
        assert_int_equal(agent_symlink(f->c, "target", "/workspace/l2", &err), 0);
        assert_int_equal(agent_symlink(f->c, "target", "/workspace/l2", &err), -EEXIST);
        assert_int_equal(agent_chmod(f->c, "/workspace/l2", 0644, &err), -ELOOP);
}

static void test_dirs(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        char **names = NULL;
        struct b4_stat st = { 0 };

        assert_int_equal(agent_mkdir_p(f->c, "/workspace/d/e/f", &err), 0);
        assert_int_equal(agent_touch(f->c, "/workspace/d/zz", 0, &err), 0);
        assert_int_equal(agent_touch(f->c, "/workspace/d/Aa", 0, &err), 0);
        assert_int_equal(agent_list_dir(f->c, "/workspace/d", 0, &names, &err), 0);
        assert_string_equal(names[0], "Aa");
        assert_string_equal(names[1], "e");
        assert_string_equal(names[2], "zz");
        assert_null(names[3]);
        for (char **s = names; *s; s++)
                free(*s);
        free(names);
        assert_int_equal(agent_list_dir(f->c, "/workspace/none", 0, &names, &err), -ENOENT);
        assert_int_equal(agent_remove(f->c, "/workspace/d/zz", &err), 0);
        assert_int_equal(agent_remove(f->c, "/workspace/d/zz", &err), 0); /* missing = ok */
        assert_int_equal(agent_lstat(f->c, "/workspace/d/zz", &st, &err), -ENOENT);
        assert_int_equal(agent_remove(f->c, "/workspace/d/e", &err), -ENOTEMPTY);
}

static void test_list_cap(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        cleanup_free char *d = fx_path(f, "/workspace/many");
        char **names = NULL;

        assert_int_equal(mkdir(d, 0755), 0);
        for (int i = 0; i <= B4_LIST_MAX_ENTRIES; i++) {
                char p[512];
                (void)snprintf(
                        p, sizeof(p),
                        "%s/n%05d-with-a-longer-name-to-fill-frames-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        d, i);
                int fd = open(p, O_CREAT | O_WRONLY, 0644);
                assert_true(fd >= 0);
                close(fd);
        }
        assert_int_equal(agent_list_dir(f->c, "/workspace/many", 0, &names, &err), -E2BIG);
        char p[512];
        (void)snprintf(
                p, sizeof(p),
                "%s/n%05d-with-a-longer-name-to-fill-frames-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                d, 0);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(agent_list_dir(f->c, "/workspace/many", 0, &names, &err), 0);
        size_t n = 0;
        for (char **s = names; *s; s++, n++)
                free(*s);
        free(names);
        assert_int_equal(n, B4_LIST_MAX_ENTRIES);
        /* names and entries over several frames (~1.5 MiB of names) */
        struct b4_walk_entry *v = NULL;
        size_t nv = 0;
        assert_int_equal(agent_walk(f->c, "/workspace/many", 20000, NULL, &v, &nv, &err), 0);
        assert_int_equal(nv, B4_LIST_MAX_ENTRIES);
        for (size_t i = 1; i < nv; i++)
                assert_true(strcmp(v[i - 1].path, v[i].path) < 0);
        b4_walk_entries_free(v, nv);
}

static void test_walk_bounds(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_walk_entry *v = NULL;
        size_t n = 0;
        char *prune[] = { (char *)"node_modules", NULL };

        assert_int_equal(agent_write_file(f->c, "/workspace/w/a/1", 0, "1", 1, &err), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/w/b", 0, "22", 2, &err), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/w/node_modules/x/y", 0, "3", 1, &err),
                         0);
        assert_int_equal(agent_symlink(f->c, "b", "/workspace/w/c", &err), 0);
        /* w/: a, a/1, b, c, node_modules, node_modules/x, node_modules/x/y = 7 */
        assert_int_equal(agent_walk(f->c, "/workspace/w", 100, NULL, &v, &n, &err), 0);
        assert_int_equal(n, 7);
        assert_string_equal(v[0].path, "a");
        assert_string_equal(v[1].path, "a/1");
        assert_string_equal(v[2].path, "b");
        assert_int_equal(v[2].st.size, 2);
        assert_string_equal(v[3].path, "c");
        assert_int_equal(v[3].st.kind, B4_FILE_SYMLINK);
        assert_string_equal(v[3].st.target, "b");
        b4_walk_entries_free(v, n);
        assert_int_equal(agent_walk(f->c, "/workspace/w", 7, NULL, &v, &n, &err), 0);
        b4_walk_entries_free(v, n);
        assert_int_equal(agent_walk(f->c, "/workspace/w", 6, NULL, &v, &n, &err), -E2BIG);
        assert_int_equal(agent_walk(f->c, "/workspace/w", 100, prune, &v, &n, &err), 0);
        assert_int_equal(n, 5);
        assert_string_equal(v[4].path, "node_modules");
        b4_walk_entries_free(v, n);
}

static void test_read_files(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_blob *b = NULL;
        struct b4_read_req reqs[] = { { "/workspace/r1", 10 },
                                      { "/workspace/none", 10 },
                                      { "/workspace/r2", 2 },
                                      { "/workspace", 10 },
                                      { "/workspace/r2", B4_UNBOUNDED } };

        assert_int_equal(agent_write_file(f->c, "/workspace/r1", 0, "one", 3, &err), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/r2", 0, "three", 5, &err), 0);
        assert_int_equal(agent_read_files(f->c, reqs, 5, &b, &err), 0);
        assert_int_equal(b[0].error, 0);
        assert_string_equal(b[0].data, "one");
        assert_int_equal(b[1].error, -ENOENT);
        assert_null(b[1].data);
        assert_int_equal(b[2].error, -EFBIG);
        assert_int_equal(b[3].error, -EISDIR);
        assert_int_equal(b[4].error, 0);
        assert_int_equal(b[4].len, 5);
        b4_blobs_free(b, 5);
        assert_int_equal(agent_read_files(f->c, reqs, 0, &b, &err), 0);
        b4_blobs_free(b, 0);
}

/* ---- commands ---- */

static int run(struct fx *f, struct agent_exec_req *q, struct b4_exec_result *res)
{
        struct b4_error err = { 0 };

        if (!q->output_cap)
                q->output_cap = 65536;
        if (!q->cwd)
                q->cwd = f->tmp;
        return agent_exec(f->c, q, res, &err);
}

static void test_exec_basic(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        char *env[] = { (char *)"B4_X=hello world", NULL };
        char *argv[] = { (char *)"printf", (char *)"%s|", (char *)"a b", (char *)"", NULL };
        struct b4_error err = { 0 };

        assert_int_equal(
                run(f, &(struct agent_exec_req){ .command = "echo out; echo err >&2; exit 3" },
                    &res),
                0);
        assert_string_equal(res.out, "out\n");
        assert_string_equal(res.errout, "err\n");
        assert_int_equal(res.exit_code, 3);
        assert_false(res.timed_out);
        b4_exec_result_clear(&res);
        /* accounting: the command's CPU and its largest resident set (getrusage of what the
         * supervisor reaped), a CPU-bound loop in a child of the shell included */
        assert_int_equal(
                run(f,
                    &(struct agent_exec_req){
                            .command = "sh -c 'i=0; while [ $i -lt 300000 ]; do "
                                       "i=$((i+1)); done'; "
                                       "head -c 4000000 /dev/zero | tail -c 1 >/dev/null" },
                    &res),
                0);
        assert_int_equal(res.usage.known, B4_USAGE_CPU | B4_USAGE_PEAK_MEMORY);
        assert_true(res.usage.cpu_ms >= 50);
        assert_true(res.usage.peak_memory_bytes >= 1024 * 1024);
        b4_exec_result_clear(&res);
        assert_int_equal(
                run(f, &(struct agent_exec_req){ .command = "pwd; echo \"$B4_X\"", .env = env },
                    &res),
                0);
        char want[4200];
        (void)snprintf(want, sizeof(want), "%s\nhello world\n", f->tmp);
        assert_string_equal(res.out, want);
        b4_exec_result_clear(&res);
        assert_int_equal(run(f, &(struct agent_exec_req){ .argv = argv }, &res), 0);
        assert_string_equal(res.out, "a b||");
        b4_exec_result_clear(&res);
        assert_int_equal(run(f, &(struct agent_exec_req){ .command = "kill -TERM $$" }, &res), 0);
        assert_int_equal(res.exit_code, 128 + SIGTERM);
        b4_exec_result_clear(&res);
        /* could not start */
        char *nope[] = { (char *)"/no/such/program", NULL };
        assert_int_equal(run(f, &(struct agent_exec_req){ .argv = nope }, &res), -ENOENT);
        assert_int_equal(run(f, &(struct agent_exec_req){ .argv = argv, .cwd = "/no/dir" }, &res),
                         -ENOENT);
        /* the shell form reports a missing cwd itself, as native does (cd '<cwd>' && ...) */
        assert_int_equal(
                run(f, &(struct agent_exec_req){ .command = "echo never", .cwd = "/no/dir" }, &res),
                0);
        assert_int_not_equal(res.exit_code, 0);
        assert_non_null(strstr(res.errout, "/no/dir"));
        assert_string_equal(res.out, "");
        b4_exec_result_clear(&res);
        /* a cwd with a quote in it */
        cleanup_free char *odd = fx_path(f, "/it's here");
        assert_int_equal(mkdir(odd, 0755), 0);
        assert_int_equal(run(f, &(struct agent_exec_req){ .command = "pwd", .cwd = odd }, &res), 0);
        char want2[4200];
        (void)snprintf(want2, sizeof(want2), "%s\n", odd);
        assert_string_equal(res.out, want2);
        b4_exec_result_clear(&res);
        /* an empty shell command is the shell's to judge (as on native: a result), an empty
         * program is refused */
        assert_int_equal(run(f, &(struct agent_exec_req){ .command = "" }, &res), 0);
        b4_exec_result_clear(&res);
        char *empty[] = { (char *)"", NULL };
        assert_true(run(f, &(struct agent_exec_req){ .argv = empty }, &res) < 0);
        assert_true(agent_conn_alive(f->c));
        /* env cleared */
        char *path[] = { (char *)"PATH=/usr/bin:/bin", NULL };
        assert_int_equal(run(f,
                             &(struct agent_exec_req){ .command = "env | grep -c . ",
                                                       .env = path,
                                                       .clear_env = true },
                             &res),
                         0);
        assert_true(atoi(res.out) <= 3); /* checksrc: allow (PATH, PWD, SHLVL from sh) */
        b4_exec_result_clear(&res);
        /* bad requests never reach the agent */
        assert_int_equal(
                agent_exec(f->c, &(struct agent_exec_req){ .command = "true" }, &res, &err),
                -EINVAL);
}

static void test_exec_timeout(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        uint64_t t0 = now_msec();

        assert_int_equal(run(f,
                             &(struct agent_exec_req){ .command = "echo before; sleep 30",
                                                       .timeout_ms = 300 },
                             &res),
                         0);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, 124);
        assert_int_equal(res.timeout_ms, 300);
        assert_string_equal(res.out, "before\n");
        /* no wording here: core adds the line (msg_append_timeout) */
        assert_null(strstr(res.errout, "timed out"));
        assert_true(now_msec() - t0 < 5000);
        b4_exec_result_clear(&res);
}

static void read_pids(struct fx *f, pid_t *a, pid_t *b)
{
        cleanup_free char *p = fx_path(f, "/pids");
        for (int i = 0; i < 300; i++) {
                FILE *fp = fopen(p, "r");
                int n = fp ? fscanf(fp, "%d %d", a, b) : 0;
                if (fp)
                        fclose(fp);
                if (n == 2)
                        return;
                usleep(10000);
        }
        fail_msg("no pids written");
}

struct canceller {
        struct b4_cancel *cancel;
        int delay_ms;
};

static void *cancel_later(void *arg)
{
        struct canceller *c = arg;

        usleep((useconds_t)c->delay_ms * 1000);
        b4_cancel_fire(c->cancel);
        return NULL;
}

/* A background job and one that left the process group with setsid: both die. */
#define TREE "sleep 100 & a=$!; setsid sleep 100 & b=$!; echo $a $b > ../pids; wait"

static void test_cancel_kills_tree(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        struct canceller c = { .cancel = b4_cancel_new(), .delay_ms = 300 };
        cleanup_free char *cwd = fx_path(f, "/workspace");
        pthread_t t;
        pid_t a = 0, b = 0;

        pthread_create(&t, NULL, cancel_later, &c);
        assert_int_equal(
                run(f, &(struct agent_exec_req){ .command = TREE, .cancel = c.cancel, .cwd = cwd },
                    &res),
                0);
        pthread_join(t, NULL);
        assert_true(res.cancelled);
        assert_false(res.timed_out);
        read_pids(f, &a, &b);
        /* gone when the call returns: EXIT comes after the supervisor emptied the tree */
        assert_int_equal(kill(a, 0), -1);
        assert_int_equal(kill(b, 0), -1);
        b4_exec_result_clear(&res);
        b4_cancel_free(c.cancel);
}

static void test_timeout_kills_tree(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        cleanup_free char *cwd = fx_path(f, "/workspace");
        pid_t a = 0, b = 0;

        assert_int_equal(
                run(f, &(struct agent_exec_req){ .command = TREE, .timeout_ms = 400, .cwd = cwd },
                    &res),
                0);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, 124);
        read_pids(f, &a, &b);
        assert_int_equal(kill(a, 0), -1);
        assert_int_equal(kill(b, 0), -1);
        b4_exec_result_clear(&res);
}

/* After a normal exit a background job lives on (as on native) and the call returns. */
static void test_background_survives(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        cleanup_free char *cwd = fx_path(f, "/workspace");
        uint64_t t0 = now_msec();
        pid_t a = 0, b = 0;

        assert_int_equal(run(f,
                             &(struct agent_exec_req){ .command = "sleep 100 & a=$!; "
                                                                  "echo $a $a > ../pids",
                                                       .cwd = cwd },
                             &res),
                         0);
        assert_true(now_msec() - t0 < 3000);
        read_pids(f, &a, &b);
        assert_int_equal(kill(a, 0), 0);
        (void)kill(a, SIGKILL);
        b4_exec_result_clear(&res);
}

static void expect_capture(const char *got, size_t got_len, const char *all, size_t n, size_t cap)
{
        struct capture c;
        char *want = NULL;
        size_t want_len = 0;
        bool truncated = false;

        assert_int_equal(capture_init(&c, cap), 0);
        capture_add(&c, all, n);
        assert_int_equal(capture_finish(&c, &want, &want_len, &truncated), 0);
        capture_release(&c);
        assert_int_equal(got_len, want_len);
        assert_memory_equal(got, want, want_len);
        free(want);
}

static void test_output_cap(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        size_t n = 200000;
        cleanup_free char *all = malloc(n + 1);

        for (size_t i = 0; i < n; i++)
                all[i] = (char)('a' + (i * 31 / 7) % 26);
        all[n] = '\0';
        cleanup_free char *p = fx_path(f, "/out.txt");
        assert_int_equal(b4_test_write(p, all), 0);
        char cmd[4300];
        (void)snprintf(cmd, sizeof(cmd), "cat %s; cat %s >&2", p, p);
        for (size_t cap = 1; cap <= 300000; cap = cap * 7 + 3) {
                assert_int_equal(
                        run(f, &(struct agent_exec_req){ .command = cmd, .output_cap = cap }, &res),
                        0);
                expect_capture(res.out, res.out_len, all, n, cap);
                expect_capture(res.errout, res.errout_len, all, n, cap);
                assert_true(res.truncated == (cap < n));
                b4_exec_result_clear(&res);
        }
}

struct seen {
        size_t live, tail;
};

static void on_out(enum agent_stream s, const char *d, size_t len, bool tail, void *u)
{
        struct seen *x = u;

        if (s == AGENT_STREAM_STDOUT) {
                if (tail)
                        x->tail += len;
                else
                        x->live += len;
        }
}

static void test_streamed_output(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        struct seen x = { 0 };

        assert_int_equal(run(f,
                             &(struct agent_exec_req){ .command = "head -c 5000 /dev/zero",
                                                       .output_cap = 1000,
                                                       .on_output = on_out,
                                                       .userdata = &x },
                             &res),
                         0);
        assert_int_equal(x.live, 500);
        assert_int_equal(x.tail, 500);
        b4_exec_result_clear(&res);
}

/* max_procs is the command's RLIMIT_NPROC: proven with the agent as an unprivileged user
 * (root with CAP_SYS_RESOURCE is not limited by it), through setpriv. */
static void test_max_procs(void **state)
{
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        pid_t pid = 0;
        const char *agent = getenv("B4BOX_AGENT"); /* checksrc: allow */
        char *argv[] = { (char *)"--reuid=61234", (char *)"--regid=61234", (char *)"--clear-groups",
                         (char *)agent, NULL };
        const char *cmd = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
                          "sleep 1 & done; echo ok";

        if (!b4_test_is_root() || access("/usr/bin/setpriv", X_OK) < 0)
                skip();
        assert_int_equal(agent_spawn("/usr/bin/setpriv", argv, NULL, &c, &pid, &err), 0);
        struct agent_exec_req q = {
                .command = cmd, .cwd = "/", .output_cap = 4096, .max_procs = 8
        };
        assert_int_equal(agent_exec(c, &q, &res, &err), 0);
        assert_int_not_equal(res.exit_code, 0); /* sh: "Cannot fork" */
        assert_null(strstr(res.out, "ok"));
        b4_exec_result_clear(&res);
        /* the same without a limit forks them all */
        q.max_procs = 0;
        q.command = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
                    "sleep 0.2 & done; wait; echo ok";
        assert_int_equal(agent_exec(c, &q, &res, &err), 0);
        assert_string_equal(res.out, "ok\n");
        assert_int_equal(res.errout_len, 0);
        b4_exec_result_clear(&res);
        agent_conn_free(c);
        (void)waitpid(pid, NULL, 0);
}

/* A reader's agent: reads work, every write is refused -EROFS. */
static void test_read_only_agent(void **state)
{
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        cleanup_free char *tmp = b4_test_tmpdir();
        cleanup_free char *ws = NULL, *file = NULL;
        char *argv[] = { (char *)"--root", tmp, (char *)"--read-only", NULL };
        char *data = NULL;
        size_t len = 0;
        pid_t pid = 0;

        assert_true(b4_asprintf(&ws, "%s/workspace", tmp) > 0);
        assert_true(b4_asprintf(&file, "%s/workspace/f", tmp) > 0);
        assert_int_equal(mkdir(ws, 0755), 0);
        assert_int_equal(b4_test_write(file, "data"), 0);
        assert_int_equal(agent_spawn(NULL, argv, NULL, &c, &pid, &err), 0);
        assert_int_equal(agent_read_file(c, "/workspace/f", 0, 10, &data, &len, &err), 0);
        assert_string_equal(data, "data");
        free(data);
        assert_int_equal(agent_write_file(c, "/workspace/f", 0, "x", 1, &err), -EROFS);
        assert_int_equal(agent_write_file(c, "/workspace/g", 0, "", 0, &err), -EROFS);
        assert_int_equal(agent_mkdir_p(c, "/workspace/d", &err), -EROFS);
        assert_int_equal(agent_remove(c, "/workspace/f", &err), -EROFS);
        assert_int_equal(agent_touch(c, "/workspace/f", 0, &err), -EROFS);
        assert_int_equal(agent_symlink(c, "x", "/workspace/l", &err), -EROFS);
        assert_int_equal(agent_chmod(c, "/workspace/f", 0600, &err), -EROFS);
        assert_true(agent_conn_alive(c));
        agent_conn_free(c);
        (void)waitpid(pid, NULL, 0);
        b4_test_rmrf(tmp);
}

/* --cgroup: each command in a child cgroup of its own, removed after; a timeout kills it. */
static void test_cgroup(void **state)
{
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        char dir[256];
        char *argv[] = { (char *)"--cgroup", dir, NULL };
        pid_t pid = 0;

        (void)snprintf(dir, sizeof(dir), "/sys/fs/cgroup/unified/b4-agent-test-%d", (int)getpid());
        if (!b4_test_is_root() || mkdir(dir, 0755) < 0)
                skip();
        assert_int_equal(agent_spawn(NULL, argv, NULL, &c, &pid, &err), 0);
        struct agent_exec_req q = { .command = "grep '^0::' /proc/self/cgroup",
                                    .cwd = "/",
                                    .output_cap = 4096 };
        assert_int_equal(agent_exec(c, &q, &res, &err), 0);
        assert_non_null(strstr(res.out, "/b4-agent-test-"));
        assert_non_null(strstr(res.out, "/b4-agent-"));
        b4_exec_result_clear(&res);
        q.command = "sleep 100 & setsid sleep 100 & wait";
        q.timeout_ms = 300;
        assert_int_equal(agent_exec(c, &q, &res, &err), 0);
        assert_true(res.timed_out);
        b4_exec_result_clear(&res);
        agent_conn_free(c);
        (void)waitpid(pid, NULL, 0);
        assert_int_equal(rmdir(dir), 0); /* every per-command child is gone */
}

/* Over two pipes (no socket): calls work, and freeing the connection while the agent is
 * alive and silent returns at once (the transport wakes its blocked reader). */
static void test_pipes(void **state)
{
        const char *agent = getenv("B4BOX_AGENT"); /* checksrc: allow */
        struct agent_transport tr;
        struct agent_conn *c = NULL;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        int in[2], out[2], status = 0;
        pid_t pid;

        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        pid = fork();
        if (pid == 0) {
                dup2(in[0], 0);  /* checksrc: allow */
                dup2(out[1], 1); /* checksrc: allow */
                execl(agent, "b4box-agent", (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        assert_int_equal(agent_transport_fds(out[0], in[1], &tr), 0);
        assert_int_equal(agent_conn_open(&tr, NULL, &c, &err), 0);
        assert_int_equal(agent_stat(c, "/", 0, &st, &err), 0);
        assert_int_equal(st.kind, B4_FILE_DIRECTORY);
        uint64_t t0 = now_msec();
        agent_conn_free(c);
        assert_true(now_msec() - t0 < 2000);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0); /* end of stdin: a clean exit */
}

/* As PID 1 of its own PID namespace (the container's init), the agent reaps the orphans a
 * command leaves: no zombie stays behind. */
static void test_pid1_reaps(void **state)
{
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        const char *agent = getenv("B4BOX_AGENT"); /* checksrc: allow */
        char *argv[] = { (char *)"--pid",        (char *)"--fork", (char *)"--mount-proc",
                         (char *)"--kill-child", (char *)agent,    NULL };
        pid_t pid = 0;

        if (!b4_test_is_root() || access("/usr/bin/unshare", X_OK) < 0 ||
            agent_spawn("/usr/bin/unshare", argv, NULL, &c, &pid, &err) < 0)
                skip();
        struct agent_exec_req q = { .command = "echo $PPID; (sleep 0.2 &) ; sleep 0.1 & exit 0",
                                    .cwd = "/",
                                    .output_cap = 4096 };
        assert_int_equal(agent_exec(c, &q, &res, &err), 0);
        b4_exec_result_clear(&res);
        /* zombies, and sleeps dead or alive: "0 0" once both orphans ended and were reaped.
         * Polled, not after a fixed 600 ms: on a loaded machine the sleeps may not have ended
         * yet, and "no zombie" then proved nothing; unreaped ones never reach "0 0". */
        q.command = "z=0 s=0; for f in /proc/[0-9]*/stat; do set -- $(cat $f 2>/dev/null); "
                    "[ \"$3\" = Z ] && z=$((z+1)); [ \"$2\" = '(sleep)' ] && s=$((s+1)); "
                    "done; echo $z $s; cat /proc/1/comm";
        for (uint64_t end = now_msec() + 10000;; usleep(50 * 1000)) {
                assert_int_equal(agent_exec(c, &q, &res, &err), 0);
                if (strncmp(res.out, "0 0\n", 4) == 0 || now_msec() > end)
                        break;
                b4_exec_result_clear(&res);
        }
        /* no zombie; we are PID 1 (the sanitized build's comm is "b4box-agent-san") */
        if (strncmp(res.out, "0 0\nb4box-agent", 15) != 0 || res.out[strlen(res.out) - 1] != '\n')
                fail_msg("%s", res.out);
        b4_exec_result_clear(&res);
        agent_conn_free(c);
        (void)waitpid(pid, NULL, 0);
}

static void test_binary_path(void **state)
{
        char *p = NULL;

        assert_int_equal(agent_binary_path(&p), 0);
        assert_string_equal(p, getenv("B4BOX_AGENT")); /* checksrc: allow */
        free(p);
        assert_int_equal(agent_spawn("/nonexistent/agent", NULL, NULL,
                                     &(struct agent_conn *){ NULL }, &(pid_t){ 0 },
                                     &(struct b4_error){ 0 }),
                         -ENOTCONN);
}

#ifdef B4_FAULT_INJECTION
/* Fail the client's allocation 1, 2, ... N of each call (the reader thread's too): every
 * attempt succeeds or fails -ENOMEM, leaks nothing, and the connection stays usable. */
static int one_of_each(struct fx *f, int which)
{
        struct b4_error err = { 0 };
        struct b4_read_req reqs[] = { { "/workspace/t/a", 100 }, { "/workspace/none", 10 } };
        struct b4_walk_entry *v = NULL;
        struct b4_exec_result res = { 0 };
        struct b4_blob *b = NULL;
        struct b4_stat st = { 0 };
        char *data = NULL, **names = NULL;
        size_t len = 0, n = 0;
        int r;

        switch (which) {
        case 0:
                r = agent_read_file(f->c, "/workspace/t/a", 0, 100, &data, &len, &err);
                free(data);
                return r;
        case 1:
                r = agent_list_dir(f->c, "/workspace/t", 0, &names, &err);
                for (char **s = r >= 0 ? names : NULL; s && *s; s++)
                        free(*s);
                free(r >= 0 ? names : NULL);
                return r;
        case 2:
                r = agent_walk(f->c, "/workspace/t", 100, NULL, &v, &n, &err);
                if (r >= 0)
                        b4_walk_entries_free(v, n);
                return r;
        case 3:
                r = agent_read_files(f->c, reqs, 2, &b, &err);
                if (r >= 0)
                        b4_blobs_free(b, 2);
                return r;
        case 4:
                r = agent_lstat(f->c, "/workspace/t/l", &st, &err);
                b4_stat_clear(&st);
                return r;
        case 5:
                r = run(f,
                        &(struct agent_exec_req){ .command = "echo out; echo err >&2",
                                                  .output_cap = 4 },
                        &res);
                b4_exec_result_clear(&res);
                return r;
        default:
                return agent_write_file(f->c, "/workspace/t/w", 0, "data", 4, &err);
        }
}

static void test_alloc_failures(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };

        assert_int_equal(agent_write_file(f->c, "/workspace/t/a", 0, "aaaa", 4, &err), 0);
        assert_int_equal(agent_write_file(f->c, "/workspace/t/b", 0, "bb", 2, &err), 0);
        assert_int_equal(agent_symlink(f->c, "a", "/workspace/t/l", &err), 0);
        for (int which = 0; which <= 6; which++) {
                int r = -ENOMEM;
                for (long n = 0; r == -ENOMEM && n < 1000; n++) {
                        alloc_fail_after(n);
                        r = one_of_each(f, which);
                        alloc_fail_after(-1);
                        assert_true(r == 0 || r == -ENOMEM);
                        if (n == 0)
                                assert_int_equal(r, -ENOMEM); /* the injection works */
                }
                assert_int_equal(r, 0);
                assert_true(agent_conn_alive(f->c));
        }
}
#endif

/* ---- many in flight ---- */

struct worker {
        struct fx *f;
        int n;
        int failures;
};

static void *work(void *arg)
{
        struct worker *w = arg;
        struct b4_error err = { 0 };

        for (int i = 0; i < 40; i++) {
                char path[64], body[64], *data = NULL;
                size_t len = 0;
                (void)snprintf(path, sizeof(path), "/workspace/mt/%d/%d", w->n, i);
                (void)snprintf(body, sizeof(body), "%d-%d", w->n, i);
                if (agent_write_file(w->f->c, path, 0, body, strlen(body), &err) < 0 ||
                    agent_read_file(w->f->c, path, 0, 64, &data, &len, &err) < 0 ||
                    strcmp(data, body) != 0)
                        w->failures++;
                free(data);
                if (i % 10 == 0) {
                        struct b4_exec_result res = { 0 };
                        char cmd[64];
                        (void)snprintf(cmd, sizeof(cmd), "sleep 0.0%d; echo %d", i % 7, w->n);
                        struct agent_exec_req q = { .command = cmd, .output_cap = 100, .cwd = "/" };
                        if (agent_exec(w->f->c, &q, &res, &err) < 0 ||
                            atoi(res.out) != w->n) /* checksrc: allow */
                                w->failures++;
                        b4_exec_result_clear(&res);
                }
        }
        return NULL;
}

static void test_many_in_flight(void **state)
{
        struct fx *f = *state;
        struct worker w[24];
        pthread_t t[24];

        for (int i = 0; i < 24; i++) {
                w[i] = (struct worker){ .f = f, .n = i };
                pthread_create(&t[i], NULL, work, &w[i]);
        }
        for (int i = 0; i < 24; i++) {
                pthread_join(t[i], NULL);
                assert_int_equal(w[i].failures, 0);
        }
}

/* A slow command does not hold up file calls behind it: replies leave out of order. */
static atomic_bool slow_done;

static void *slow_exec(void *arg)
{
        struct fx *f = arg;
        struct b4_exec_result res = { 0 };

        (void)run(f, &(struct agent_exec_req){ .command = "sleep 3; echo slow" }, &res);
        b4_exec_result_clear(&res);
        atomic_store(&slow_done, true);
        return NULL;
}

static void test_out_of_order(void **state)
{
        struct fx *f = *state;
        struct b4_error err = { 0 };
        struct b4_stat st = { 0 };
        pthread_t t;

        atomic_store(&slow_done, false);
        pthread_create(&t, NULL, slow_exec, f);
        usleep(100000);
        for (int i = 0; i < 20; i++)
                assert_int_equal(agent_stat(f->c, "/workspace", 0, &st, &err), 0);
        assert_false(atomic_load(&slow_done));
        pthread_join(t, NULL);
        assert_true(atomic_load(&slow_done));
}

/* ---- a killed agent ---- */

static void *kill_later(void *arg)
{
        struct fx *f = arg;

        usleep(300000);
        (void)kill(f->pid, SIGKILL);
        return NULL;
}

static void test_killed_agent(void **state)
{
        struct fx *f = *state;
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        pthread_t t;

        pthread_create(&t, NULL, kill_later, f);
        assert_int_equal(run(f, &(struct agent_exec_req){ .command = "sleep 20" }, &res),
                         -ENOTCONN);
        pthread_join(t, NULL);
        assert_false(agent_conn_alive(f->c));
        assert_int_equal(agent_mkdir_p(f->c, "/workspace/x", &err), -ENOTCONN);
        assert_int_equal(agent_read_file(f->c, "/workspace/x", 0, 1, &(char *){ NULL },
                                         &(size_t){ 0 }, &err),
                         -ENOTCONN);
}

/* ---- the agent's side of the protocol: raw frames ---- */

struct raw {
        int sock;
        pid_t pid;
        char *tmp;
};

static void raw_send(int sock, uint32_t id, uint16_t type, uint16_t flags, const void *p, size_t n)
{
        unsigned char h[AGENT_HDR_LEN];

        agent_hdr_encode(h, &(struct agent_hdr){
                                    .len = (uint32_t)n, .id = id, .type = type, .flags = flags });
        assert_int_equal(write(sock, h, sizeof(h)), sizeof(h));
        if (n)
                assert_int_equal(write(sock, p, n), (ssize_t)n);
}

static int raw_recv(int sock, struct agent_hdr *h, unsigned char *buf, size_t max)
{
        unsigned char hb[AGENT_HDR_LEN];
        struct pollfd p = { .fd = sock, .events = POLLIN };

        if (poll(&p, 1, 5000) != 1 || recv(sock, hb, sizeof(hb), MSG_WAITALL) != sizeof(hb))
                return -1;
        agent_hdr_decode(hb, h);
        if (h->len > max)
                return -1;
        if (h->len && recv(sock, buf, h->len, MSG_WAITALL) != (ssize_t)h->len)
                return -1;
        return 0;
}

static void raw_start(struct raw *r)
{
        const char *agent = getenv("B4BOX_AGENT"); /* checksrc: allow */
        int sv[2];
        unsigned char hello[12], buf[4096];
        struct agent_hdr h;

        r->tmp = b4_test_tmpdir();
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        r->pid = fork();
        if (r->pid == 0) {
                dup2(sv[1], 0); /* checksrc: allow */
                dup2(sv[1], 1); /* checksrc: allow */
                execl(agent, "b4box-agent", "--root", r->tmp, (char *)NULL);
                _exit(127);
        }
        close(sv[1]);
        r->sock = sv[0];
        agent_put_u32(hello, AGENT_MAGIC);
        agent_put_u32(hello + 4, 1);
        agent_put_u32(hello + 8, 7);
        raw_send(r->sock, 0, AGENT_HELLO, 0, hello, sizeof(hello));
        assert_int_equal(raw_recv(r->sock, &h, buf, sizeof(buf)), 0);
        assert_int_equal(h.type, AGENT_HELLO);
        assert_int_equal(agent_get_u32(buf + 4), AGENT_PROTO_VERSION);
}

static int raw_stop(struct raw *r)
{
        int st = 0;

        close(r->sock);
        (void)waitpid(r->pid, &st, 0);
        b4_test_rmrf(r->tmp);
        free(r->tmp);
        return st;
}

static uint32_t expect_error(int sock, uint32_t id)
{
        unsigned char buf[4096];
        struct agent_hdr h;

        assert_int_equal(raw_recv(sock, &h, buf, sizeof(buf)), 0);
        assert_int_equal(h.id, id);
        assert_int_equal(h.type, AGENT_ERROR);
        return agent_get_u32(buf);
}

static void test_agent_refuses_garbage(void **state)
{
        struct raw r;
        unsigned char p[64] = { 0 }, buf[4096];
        struct agent_hdr h;

        raw_start(&r);
        raw_send(r.sock, 5, 999, 0, NULL, 0);
        assert_int_equal(expect_error(r.sock, 5), EOPNOTSUPP);
        raw_send(r.sock, 6, AGENT_LSTAT, 0, p, 3); /* truncated */
        assert_int_equal(expect_error(r.sock, 6), EPROTO);
        agent_put_u32(p, 4);
        memcpy(p + 4, "rel/", 4);
        raw_send(r.sock, 7, AGENT_LSTAT, 0, p, 8); /* not absolute */
        assert_int_equal(expect_error(r.sock, 7), EPROTO);
        agent_put_u32(p, 2);
        memcpy(p + 4, "/\0", 2);
        raw_send(r.sock, 8, AGENT_LSTAT, 0, p, 6); /* NUL inside */
        assert_int_equal(expect_error(r.sock, 8), EPROTO);
        agent_put_u32(p, 1);
        memcpy(p + 4, "/x", 2);
        raw_send(r.sock, 9, AGENT_LSTAT, 0, p, 6); /* trailing byte */
        assert_int_equal(expect_error(r.sock, 9), EPROTO);
        raw_send(r.sock, 0, AGENT_LSTAT, 0, NULL, 0); /* id 0 */
        assert_int_equal(expect_error(r.sock, 0), EPROTO);
        /* still serving */
        agent_put_u32(p, 1);
        memcpy(p + 4, "/", 1);
        raw_send(r.sock, 10, AGENT_LSTAT, 0, p, 5);
        assert_int_equal(raw_recv(r.sock, &h, buf, sizeof(buf)), 0);
        assert_int_equal(h.type, AGENT_STATR);
        /* an oversized frame is fatal */
        unsigned char hb[AGENT_HDR_LEN];
        agent_hdr_encode(hb, &(struct agent_hdr){
                                     .len = AGENT_FRAME_MAX + 1, .id = 11, .type = AGENT_LSTAT });
        assert_int_equal(write(r.sock, hb, sizeof(hb)), sizeof(hb));
        assert_int_equal(raw_recv(r.sock, &h, buf, sizeof(buf)), 0);
        assert_int_equal(h.type, AGENT_FATAL);
        int st = raw_stop(&r);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
}

/* ---- a lying agent ---- */

typedef void liar_fn(int sock, const struct agent_hdr *req, const unsigned char *p);

struct liar {
        int sock;
        liar_fn *fn;
        bool bad_hello;
};

static void *liar_main(void *arg)
{
        struct liar *l = arg;
        unsigned char *buf = malloc(AGENT_FRAME_MAX);
        struct agent_hdr h;

        while (raw_recv(l->sock, &h, buf, AGENT_FRAME_MAX) == 0) {
                if (h.type == AGENT_HELLO) {
                        unsigned char p[20];
                        agent_put_u32(p, l->bad_hello ? 0x12345678 : AGENT_MAGIC);
                        agent_put_u32(p + 4, AGENT_PROTO_VERSION);
                        agent_put_u32(p + 8, AGENT_FRAME_MAX);
                        agent_put_u32(p + 12, AGENT_INFLIGHT_MAX);
                        agent_put_u32(p + 16, 0);
                        unsigned char hb[AGENT_HDR_LEN];
                        agent_hdr_encode(hb, &(struct agent_hdr){ .len = 20, .type = AGENT_HELLO });
                        (void)!write(l->sock, hb, sizeof(hb));
                        (void)!write(l->sock, p, sizeof(p));
                        continue;
                }
                if (h.type != AGENT_DATA)
                        l->fn(l->sock, &h, buf);
        }
        free(buf);
        return NULL;
}

static int liar_open(struct liar *l, pthread_t *t, struct agent_conn **c, uint64_t timeout_ms)
{
        struct agent_transport tr;
        struct agent_conn_opts o = { .reply_timeout_ms = timeout_ms, .hello_timeout_ms = 2000 };
        struct b4_error err = { 0 };
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        l->sock = sv[1];
        pthread_create(t, NULL, liar_main, l);
        assert_int_equal(agent_transport_fds(sv[0], sv[0], &tr), 0);
        return agent_conn_open(&tr, &o, c, &err);
}

static void liar_close(struct liar *l, pthread_t t, struct agent_conn *c)
{
        agent_conn_free(c);
        pthread_join(t, NULL);
        close(l->sock);
}

static void say(int sock, uint32_t id, uint16_t type, uint16_t flags, const void *p, size_t n)
{
        raw_send(sock, id, type, flags, p, n);
}

static void lie_too_much_data(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        say(sock, h->id, AGENT_DATA, 0, "0123456789ABCDEF", 16); /* asked: 8 */
}

static void lie_silent(int sock, const struct agent_hdr *h, const unsigned char *p)
{
}

static void lie_unsorted(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        unsigned char b[32];
        agent_put_u32(b, 2);
        agent_put_u32(b + 4, 1);
        b[8] = 'b';
        agent_put_u32(b + 9, 1);
        b[13] = 'a';
        say(sock, h->id, AGENT_NAMES, 0, b, 14);
}

static void lie_dotdot(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        struct strbuf sb;
        strbuf_init(&sb, 4096);
        unsigned char b[8];
        agent_put_u32(b, 1);
        strbuf_add(&sb, b, 4);
        agent_put_u32(b, 5);
        strbuf_add(&sb, b, 4);
        strbuf_add(&sb, "a/../", 5);
        memset(b, 0, sizeof(b));
        strbuf_add(&sb, b, 8); /* kind, exe */
        strbuf_add(&sb, b, 8); /* size */
        strbuf_add(&sb, b, 8); /* mtime */
        strbuf_add(&sb, b, 4); /* target */
        say(sock, h->id, AGENT_ENTRIES, 0, sb.buf, sb.len);
        strbuf_release(&sb);
}

static void lie_errno(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        unsigned char b[8];
        agent_put_u32(b, ENOTCONN); /* the client's own meaning: must not pass */
        agent_put_u32(b + 4, 0);
        say(sock, h->id, AGENT_ERROR, 0, b, 8);
}

static void lie_exec_flood(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        char out[100] = { 0 };
        unsigned char b[4] = { 0 };
        say(sock, h->id, AGENT_STARTED, 0, b, 4);
        say(sock, h->id, AGENT_DATA, AGENT_F_STDOUT, out, sizeof(out)); /* cap: 10 */
}

static void lie_late_then_ok(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        if (h->type == AGENT_MKDIR_P)
                return; /* never answered: times out */
        say(sock, h->id, AGENT_OK, 0, NULL, 0);
}

static void lie_started_then_silent(int sock, const struct agent_hdr *h, const unsigned char *p)
{
        unsigned char b[4] = { 0 };

        if (h->type == AGENT_EXEC)
                say(sock, h->id, AGENT_STARTED, 0, b, 4);
}

/* A command the agent never reports ended: the call ends at timeout + the kill grace. */
static void test_lying_agent_exec_hang(void **state)
{
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        struct liar l = { .fn = lie_started_then_silent };
        pthread_t t;
        uint64_t t0;

        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        t0 = now_msec();
        assert_int_equal(agent_exec(c,
                                    &(struct agent_exec_req){
                                            .command = "x", .output_cap = 10, .timeout_ms = 100 },
                                    &res, &err),
                         -ETIMEDOUT);
        assert_true(now_msec() - t0 >= 100 + AGENT_KILL_GRACE_MS);
        assert_true(now_msec() - t0 < 100 + AGENT_KILL_GRACE_MS + 3000);
        assert_null(res.out);
        liar_close(&l, t, c);
}

static void test_lying_agent(void **state)
{
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        struct liar l = { 0 };
        pthread_t t;
        char *data = NULL, **names = NULL;
        size_t len = 0;

        l.fn = lie_too_much_data;
        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        assert_int_equal(agent_read_file(c, "/x", 0, 8, &data, &len, &err), -EPROTO);
        assert_false(agent_conn_alive(c));
        assert_int_equal(agent_touch(c, "/x", 0, &err), -ENOTCONN);
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_silent };
        assert_int_equal(liar_open(&l, &t, &c, 200), 0);
        uint64_t t0 = now_msec();
        assert_int_equal(agent_touch(c, "/x", 0, &err), -ETIMEDOUT);
        assert_true(now_msec() - t0 < 2000);
        assert_true(agent_conn_alive(c));
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_unsorted };
        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        assert_int_equal(agent_list_dir(c, "/x", 0, &names, &err), -EPROTO);
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_dotdot };
        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        struct b4_walk_entry *v = NULL;
        size_t n = 0;
        assert_int_equal(agent_walk(c, "/x", 10, NULL, &v, &n, &err), -EPROTO);
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_errno };
        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        assert_int_equal(agent_touch(c, "/x", 0, &err), -EIO);
        assert_true(agent_conn_alive(c));
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_exec_flood };
        assert_int_equal(liar_open(&l, &t, &c, 2000), 0);
        struct b4_exec_result res = { 0 };
        assert_int_equal(agent_exec(c, &(struct agent_exec_req){ .command = "x", .output_cap = 10 },
                                    &res, &err),
                         -EPROTO);
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_late_then_ok };
        assert_int_equal(liar_open(&l, &t, &c, 200), 0);
        assert_int_equal(agent_mkdir_p(c, "/x", &err), -ETIMEDOUT);
        assert_int_equal(agent_touch(c, "/x", 0, &err), 0);
        liar_close(&l, t, c);

        l = (struct liar){ .fn = lie_silent, .bad_hello = true };
        assert_int_equal(liar_open(&l, &t, &c, 200), -EPROTO);
        pthread_join(t, NULL);
        close(l.sock);
}

/* An exec whose agent never reports the end fails after timeout + grace: not tested at
 * full length (10 s); the deadline arithmetic is the reply timeout's, tested above. */

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_write_read_stat, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_big_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_keeps_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink_leaf_attack, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_walk_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_basic, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_kills_tree, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout_kills_tree, setup, teardown),
                cmocka_unit_test_setup_teardown(test_background_survives, setup, teardown),
                cmocka_unit_test_setup_teardown(test_output_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_streamed_output, setup, teardown),
#ifdef B4_FAULT_INJECTION
                cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
#endif
                cmocka_unit_test_setup_teardown(test_many_in_flight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_out_of_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_killed_agent, setup, teardown),
                cmocka_unit_test(test_agent_refuses_garbage),
                cmocka_unit_test(test_max_procs),
                cmocka_unit_test(test_binary_path),
                cmocka_unit_test(test_pid1_reaps),
                cmocka_unit_test(test_pipes),
                cmocka_unit_test(test_cgroup),
                cmocka_unit_test(test_read_only_agent),
                cmocka_unit_test(test_lying_agent_exec_hang),
                cmocka_unit_test(test_lying_agent),
        };

        signal(SIGPIPE, SIG_IGN); /* checksrc: allow */
        return cmocka_run_group_tests(tests, NULL, NULL);
}
