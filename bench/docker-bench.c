/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Side by side, one workload: our Docker provider (Engine API), the reference's approach
 * (one `docker exec` CLI call per operation, reference §3.4) and the native provider.
 * Run it through bench/docker-bench.sh (a daemon and a test image are provided by
 * tests/docker/with-dockerd.sh). Prints a table of milliseconds per operation.
 *
 *   cold acquire       a thread's first acquire (keeper + volume + ownership init)
 *   warm exec true     runBash "true" on a live sandbox
 *   write/read 4 KiB   one file
 *   inspect 1214       walk + read of a 1,214-entry workspace (CLI: one call per entry,
 *                      measured on a sample and scaled)
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

#define WARM_RUNS  20
#define IO_RUNS    20
#define N_DIRS     34
#define N_PER_DIR  35 /* 34 dirs + 34*35 files = 1,224 entries; minus 10 = 1,214 */
#define CLI_SAMPLE 60

static const char *E_HOST, *E_IMAGE, *E_SCOPE, *CLI;
static char payload[4096];

static double ms_since(uint64_t t0_us)
{
        return (double)(now_usec() - t0_us) / 1000.0;
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
        double acquire, exec, write, read, inspect;
        bool inspect_scaled;
};

static void bench_provider(struct b4_provider *p, const char *thread, struct row *row)
{
        struct b4_sandbox *sb = acquire(p, thread, &row->acquire);
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
        t0 = now_usec();
        for (int i = 0; i < WARM_RUNS; i++)
                (void)sh(sb, "true");
        row->exec = ms_since(t0) / WARM_RUNS;
        t0 = now_usec();
        for (int i = 0; i < IO_RUNS; i++)
                (void)b4_fs_write_file(fs, "/workspace/f4k", payload, sizeof(payload), NULL);
        row->write = ms_since(t0) / IO_RUNS;
        t0 = now_usec();
        for (int i = 0; i < IO_RUNS; i++)
                if (b4_fs_read_file(fs, "/workspace/f4k", 1 << 20, &data, &len, NULL) >= 0)
                        free(data);
        row->read = ms_since(t0) / IO_RUNS;
        (void)sh(sb, "mkdir -p /workspace/tree && cd /workspace/tree && for d in $(seq 1 34); do "
                     "mkdir d$d; for f in $(seq 1 35); do echo $d$f > d$d/f$f; done; done; "
                     "rm d1/f1 d1/f2 d1/f3 d1/f4 d1/f5 d1/f6 d1/f7 d1/f8 d1/f9 d1/f10");
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
        row->inspect = ms_since(t0);
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

static void bench_cli(struct b4_provider *p, struct row *row)
{
        struct b4_sandbox *sb;
        char id[41], name[64], path[64];
        uint64_t t0;
        double unused;

        b4_resource_id(E_SCOPE, "bench-cli", id);
        snprintf(name, sizeof(name), "b4-sbx-%s", id);
        t0 = now_usec();
        cli(NULL, (const char *const[]){ "run",
                                         "-d",
                                         "--name",
                                         "b4-bench-cli-cold",
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
                                         "sleep",
                                         "infinity",
                                         NULL });
        row->acquire = ms_since(t0);
        cli(NULL, (const char *const[]){ "rm", "-f", "b4-bench-cli-cold", NULL });
        sb = acquire(p, "bench-cli", &unused); /* a keeper to exec into */
        if (!sb)
                return;
        t0 = now_usec();
        for (int i = 0; i < WARM_RUNS; i++)
                cli(NULL, (const char *const[]){ "exec", "-i", name, "sh", "-c", "true", NULL });
        row->exec = ms_since(t0) / WARM_RUNS;
        t0 = now_usec();
        for (int i = 0; i < IO_RUNS; i++)
                cli(payload,
                    (const char *const[]){ "exec", "-i", name, "sh", "-c",
                                           "mkdir -p /workspace && cat > /workspace/f4k", NULL });
        row->write = ms_since(t0) / IO_RUNS;
        t0 = now_usec();
        for (int i = 0; i < IO_RUNS; i++)
                cli(NULL,
                    (const char *const[]){ "exec", "-i", name, "cat", "/workspace/f4k", NULL });
        row->read = ms_since(t0) / IO_RUNS;
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

int main(void)
{
        struct row ours = { 0 }, cli_row = { 0 }, native = { 0 };
        struct b4_provider *dp, *np;
        char state[] = "/tmp/b4box-bench.XXXXXX";

        E_HOST = getenv("B4BOX_TEST_DOCKER_HOST");
        E_IMAGE = getenv("B4BOX_TEST_DOCKER_IMAGE");
        E_SCOPE = getenv("B4BOX_TEST_DOCKER_SCOPE");
        CLI = getenv("DOCKER_CLI") ? getenv("DOCKER_CLI") : "/usr/bin/docker";
        if (!E_HOST || !E_IMAGE || !E_SCOPE) {
                fprintf(stderr, "run me through bench/docker-bench.sh\n");
                return 2;
        }
        memset(payload, 'x', sizeof(payload));
        dp = make("docker", NULL);
        if (!dp)
                return 1;
        bench_provider(dp, "bench-ours", &ours);
        if (access(CLI, X_OK) == 0)
                bench_cli(dp, &cli_row);
        if (mkdtemp(state) && (np = make("native", state))) {
                bench_provider(np, "bench-native", &native);
                b4_provider_free(np);
                rmdir(state);
        }
        b4_provider_free(dp);
        printf("%-22s %14s %18s %10s\n", "ms per operation", "docker (API)", "docker exec CLI",
               "native");
        printf("%-22s %14.1f %18.1f %10.1f\n", "cold acquire", ours.acquire, cli_row.acquire,
               native.acquire);
        printf("%-22s %14.1f %18.1f %10.1f\n", "warm exec true", ours.exec, cli_row.exec,
               native.exec);
        printf("%-22s %14.1f %18.1f %10.1f\n", "write 4 KiB", ours.write, cli_row.write,
               native.write);
        printf("%-22s %14.1f %18.1f %10.1f\n", "read 4 KiB", ours.read, cli_row.read, native.read);
        printf("%-22s %14.1f %17.1f%s %10.1f\n", "inspect 1214 entries", ours.inspect,
               cli_row.inspect, cli_row.inspect_scaled ? "*" : " ", native.inspect);
        printf("* CLI inspection: one stat + one read call per entry, timed on %d and scaled\n",
               CLI_SAMPLE);
        return 0;
}
