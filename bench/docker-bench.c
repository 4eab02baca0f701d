/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Side by side, one workload: our Docker provider through b4box-agent, the same provider on
 * its archive/exec fallback (B4BOX_DOCKER_AGENT=off), the reference's approach (one
 * `docker exec` CLI call per operation, reference §3.4) and the native provider. Run it
 * through bench/docker-bench.sh (a daemon and a test image are provided by
 * tests/docker/with-dockerd.sh). Prints a table of milliseconds per operation, each the
 * median (p50) of its runs:
 *
 *   cold acquire       a thread's first acquire (keeper + volume + ownership), COLD_RUNS
 *                      threads interleaved with `docker run --rm ... true` (CLI column)
 *   cold + first true  the same acquire and its first runBash "true" (the agent starts)
 *   warm exec true     runBash "true" on a live sandbox
 *   write/read 4 KiB   one file
 *   inspect 1214       walk + read of a 1,214-entry workspace, INSPECT_RUNS times (CLI: one
 *                      call per entry, measured once on a sample and scaled)
 */

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/time-util.h"

#define WARM_RUNS    30
#define IO_RUNS      30
#define COLD_RUNS    5
#define INSPECT_RUNS 5
#define N_DIRS       34
#define N_PER_DIR    35 /* 34 dirs + 34*35 files = 1,224 entries; minus 10 = 1,214 */
#define CLI_SAMPLE   60

static const char *E_HOST, *E_IMAGE, *E_SCOPE, *CLI;
static char payload[4096];

static double ms_since(uint64_t t0_us)
{
        return (double)(now_usec() - t0_us) / 1000.0;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct b4_provider *make(const char *type, const char *state)
{
        struct b4_provider_config cfg = { .type = (char *)type,
                                          .scope = (char *)E_SCOPE,
                                          .image = strcmp(type, "docker") == 0 ? (char *)E_IMAGE
                                                                               : NULL,
                                          .docker_host = (char *)E_HOST,
                                          .state_dir = (char *)state };
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };

        if (b4_provider_new(&cfg, &p, &err) < 0) {
                fprintf(stderr, "%s provider: %s\n", type, err.msg);
                return NULL;
        }
        return p;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *thread, double *ret_ms)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };
        uint64_t t0;

        b4_policy_init(&pol);
        t0 = now_usec();
        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                fprintf(stderr, "acquire: %s\n", err.msg);
        *ret_ms = ms_since(t0);
        b4_policy_clear(&pol);
        return sb;
}

static int sh(struct b4_sandbox *sb, const char *cmd)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result x = { 0 };
        int r = b4_sandbox_exec(sb, &req, &x, NULL);

        r = r < 0 ? r : x.exit_code;
        b4_exec_result_clear(&x);
        return r;
}

struct row {
        double acquire, first, exec, write, read, inspect;
        bool inspect_scaled;
        double cold[COLD_RUNS], cold_first[COLD_RUNS];
};

/* One cold acquire of a new thread, then its first "true"; destroyed afterwards. */
static void cold_once(struct b4_provider *p, const char *tag, int i, struct row *row)
{
        struct b4_sandbox *sb;
        char thread[64];
        uint64_t t0 = now_usec();
        double ms;

        snprintf(thread, sizeof(thread), "bench-cold-%s-%d", tag, i);
        sb = acquire(p, thread, &ms);
        row->cold[i] = ms;
        if (sb)
                (void)sh(sb, "true");
        row->cold_first[i] = ms_since(t0);
        if (sb)
                b4_sandbox_unref(sb);
        (void)b4_provider_destroy(p, thread, NULL);
}

static void bench_provider(struct b4_provider *p, const char *thread, struct row *row)
{
        double unused, t[WARM_RUNS > IO_RUNS ? WARM_RUNS : IO_RUNS];
        struct b4_sandbox *sb = acquire(p, thread, &unused);
        struct b4_fs *fs;
        uint64_t t0;
        char *data;
        size_t len, n = 0;
        struct b4_walk_entry *w = NULL;
        struct b4_read_req *reqs;
        struct b4_blob *blobs = NULL;
        char(*paths)[128];
        size_t nf = 0;

        if (!sb)
                return;
        fs = b4_sandbox_fs(sb);
        (void)sh(sb, "true");
        for (int i = 0; i < WARM_RUNS; i++) {
                t0 = now_usec();
                (void)sh(sb, "true");
                t[i] = ms_since(t0);
        }
        row->exec = median(t, WARM_RUNS);
        for (int i = 0; i < IO_RUNS; i++) {
                t0 = now_usec();
                (void)b4_fs_write_file(fs, "/workspace/f4k", payload, sizeof(payload), NULL);
                t[i] = ms_since(t0);
        }
        row->write = median(t, IO_RUNS);
        for (int i = 0; i < IO_RUNS; i++) {
                t0 = now_usec();
                if (b4_fs_read_file(fs, "/workspace/f4k", 1 << 20, &data, &len, NULL) >= 0)
                        free(data);
                t[i] = ms_since(t0);
        }
        row->read = median(t, IO_RUNS);
        (void)sh(sb, "mkdir -p /workspace/tree && cd /workspace/tree && for d in $(seq 1 34); do "
                     "mkdir d$d; for f in $(seq 1 35); do echo $d$f > d$d/f$f; done; done; "
                     "rm d1/f1 d1/f2 d1/f3 d1/f4 d1/f5 d1/f6 d1/f7 d1/f8 d1/f9 d1/f10");
        for (int run = 0; run < INSPECT_RUNS; run++) {
                nf = 0;
                t0 = now_usec();
                if (b4_fs_walk(fs, "/workspace/tree", 5000, NULL, &w, &n, NULL) >= 0) {
                        reqs = calloc(n, sizeof(*reqs));
                        paths = calloc(n, sizeof(*paths));
                        for (size_t i = 0; i < n; i++)
                                if (w[i].st.kind == B4_FILE_REGULAR) {
                                        snprintf(paths[nf], sizeof(paths[nf]), "/workspace/tree/%s",
                                                 w[i].path);
                                        reqs[nf] = (struct b4_read_req){ paths[nf], 1 << 20 };
                                        nf++;
                                }
                        if (b4_fs_read_files(fs, reqs, nf, &blobs, NULL) >= 0)
                                b4_blobs_free(blobs, nf);
                        free(reqs);
                        free(paths);
                        b4_walk_entries_free(w, n);
                }
                t[run] = ms_since(t0);
        }
        row->inspect = median(t, INSPECT_RUNS);
        if (n != 1214)
                fprintf(stderr, "# walk saw %zu entries\n", n);
        b4_sandbox_unref(sb);
        (void)b4_provider_destroy(p, thread, NULL);
}

/* One docker CLI call; stdin from @in (NULL = /dev/null). Return: exit status. */
static int cli(const char *in, const char *const *args)
{
        char *argv[32];
        char host[512];
        char *envp[] = { host, NULL };
        posix_spawn_file_actions_t fa;
        int p[2] = { -1, -1 }, st = 0, n = 0;
        pid_t pid;

        snprintf(host, sizeof(host), "DOCKER_HOST=%s", E_HOST);
        argv[n++] = (char *)CLI;
        for (; *args && n < 31; args++)
                argv[n++] = (char *)*args;
        argv[n] = NULL;
        posix_spawn_file_actions_init(&fa);
        if (in && pipe2(p, O_CLOEXEC) == 0)
                posix_spawn_file_actions_adddup2(&fa, p[0], 0);
        else
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid, CLI, &fa, NULL, argv, envp) != 0)
                return -1;
        posix_spawn_file_actions_destroy(&fa);
        if (in) {
                close(p[0]);
                (void)!write(p[1], in, strlen(in));
                close(p[1]);
        }
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `docker run --rm` of "true" with the keeper's hardening: what a cold acquire competes with. */
static double docker_run_true(void)
{
        uint64_t t0 = now_usec();

        cli(NULL, (const char *const[]){ "run",
                                         "--rm",
                                         "--init",
                                         "--network",
                                         "none",
                                         "--cap-drop",
                                         "ALL",
                                         "--security-opt",
                                         "no-new-privileges",
                                         "--pids-limit",
                                         "512",
                                         "--read-only",
                                         "--tmpfs",
                                         "/tmp",
                                         "--tmpfs",
                                         "/run",
                                         "--user",
                                         "1000:1000",
                                         E_IMAGE,
                                         "true",
                                         NULL });
        return ms_since(t0);
}

static void bench_cli(struct b4_provider *p, struct row *row)
{
        struct b4_sandbox *sb;
        char id[41], name[64], path[64];
        uint64_t t0;
        double unused, t[WARM_RUNS > IO_RUNS ? WARM_RUNS : IO_RUNS];

        b4_resource_id(E_SCOPE, "bench-cli", id);
        snprintf(name, sizeof(name), "b4-sbx-%s", id);
        sb = acquire(p, "bench-cli", &unused); /* a keeper to exec into */
        if (!sb)
                return;
        for (int i = 0; i < WARM_RUNS; i++) {
                t0 = now_usec();
                cli(NULL, (const char *const[]){ "exec", "-i", name, "sh", "-c", "true", NULL });
                t[i] = ms_since(t0);
        }
        row->exec = median(t, WARM_RUNS);
        for (int i = 0; i < IO_RUNS; i++) {
                t0 = now_usec();
                cli(payload,
                    (const char *const[]){ "exec", "-i", name, "sh", "-c",
                                           "mkdir -p /workspace && cat > /workspace/f4k", NULL });
                t[i] = ms_since(t0);
        }
        row->write = median(t, IO_RUNS);
        for (int i = 0; i < IO_RUNS; i++) {
                t0 = now_usec();
                cli(NULL,
                    (const char *const[]){ "exec", "-i", name, "cat", "/workspace/f4k", NULL });
                t[i] = ms_since(t0);
        }
        row->read = median(t, IO_RUNS);
        /* per entry: a stat call and, for files, a read (reference §3.4 before batching) */
        t0 = now_usec();
        for (int i = 0; i < CLI_SAMPLE; i++) {
                snprintf(path, sizeof(path), "/workspace/f4k");
                cli(NULL,
                    (const char *const[]){ "exec", "-i", name, "stat", "-c", "%f %s", path, NULL });
                cli(NULL, (const char *const[]){ "exec", "-i", name, "cat", path, NULL });
        }
        row->inspect = ms_since(t0) / CLI_SAMPLE * 1214;
        row->inspect_scaled = true;
        b4_sandbox_unref(sb);
        (void)b4_provider_destroy(p, "bench-cli", NULL);
}

static void print_row(const char *what, double a, double b, double c, double d, bool scaled)
{
        printf("%-22s %12.1f %14.1f %16.1f%s %8.1f\n", what, a, b, c, scaled ? "*" : " ", d);
}

static struct b4_provider *make_docker(bool agent)
{
        struct b4_provider *p;

        if (!agent)
                setenv("B4BOX_DOCKER_AGENT", "off", 1);
        p = make("docker", NULL);
        unsetenv("B4BOX_DOCKER_AGENT");
        return p;
}

int main(void)
{
        struct row ag = { 0 }, ar = { 0 }, cli_row = { 0 }, native = { 0 };
        struct b4_provider *dp, *fp, *np = NULL;
        char state[] = "/tmp/b4box-bench.XXXXXX";
        bool have_cli;

        E_HOST = getenv("B4BOX_TEST_DOCKER_HOST");
        E_IMAGE = getenv("B4BOX_TEST_DOCKER_IMAGE");
        E_SCOPE = getenv("B4BOX_TEST_DOCKER_SCOPE");
        CLI = getenv("DOCKER_CLI") ? getenv("DOCKER_CLI") : "/usr/bin/docker";
        if (!E_HOST || !E_IMAGE || !E_SCOPE) {
                fprintf(stderr, "run me through bench/docker-bench.sh\n");
                return 2;
        }
        memset(payload, 'x', sizeof(payload));
        dp = make_docker(true);
        fp = make_docker(false);
        if (!dp || !fp)
                return 1;
        have_cli = access(CLI, X_OK) == 0;
        if (mkdtemp(state))
                np = make("native", state);
        (void)docker_run_true(); /* warm the daemon's image and layer caches */
        for (int i = 0; i < COLD_RUNS; i++) {
                cold_once(dp, "agent", i, &ag);
                cold_once(fp, "archive", i, &ar);
                if (have_cli)
                        cli_row.cold[i] = cli_row.cold_first[i] = docker_run_true();
                if (np)
                        cold_once(np, "native", i, &native);
        }
        bench_provider(dp, "bench-agent", &ag);
        bench_provider(fp, "bench-archive", &ar);
        if (have_cli)
                bench_cli(dp, &cli_row);
        if (np) {
                bench_provider(np, "bench-native", &native);
                b4_provider_free(np);
                rmdir(state);
        }
        b4_provider_free(dp);
        b4_provider_free(fp);
        printf("%-22s %12s %14s %17s %8s\n", "ms per operation (p50)", "docker agent",
               "docker archive", "docker CLI", "native");
        print_row("cold acquire", median(ag.cold, COLD_RUNS), median(ar.cold, COLD_RUNS),
                  median(cli_row.cold, COLD_RUNS), median(native.cold, COLD_RUNS), false);
        print_row("cold + first true", median(ag.cold_first, COLD_RUNS),
                  median(ar.cold_first, COLD_RUNS), median(cli_row.cold_first, COLD_RUNS),
                  median(native.cold_first, COLD_RUNS), false);
        print_row("warm exec true", ag.exec, ar.exec, cli_row.exec, native.exec, false);
        print_row("write 4 KiB", ag.write, ar.write, cli_row.write, native.write, false);
        print_row("read 4 KiB", ag.read, ar.read, cli_row.read, native.read, false);
        print_row("inspect 1214 entries", ag.inspect, ar.inspect, cli_row.inspect, native.inspect,
                  cli_row.inspect_scaled);
        printf("CLI cold rows: `docker run --rm <the keeper's hardening> IMAGE true`\n"
               "* CLI inspection: one stat + one read call per entry, timed on %d and scaled\n",
               CLI_SAMPLE);
        return 0;
}
