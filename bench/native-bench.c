/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/native-bench: latency of the native provider's hot paths, in-process, plus a
 * one-shot `bwrap --unshare-all` (and `docker exec` into a running container when one is
 * named) for comparison. Prints one "name p50_us p99_us n" line per measurement; bench/run
 * turns them into a table. Not a test: nothing here pass/fails.
 * Usage: native-bench STATE_DIR [docker-container|-] [idle-threads]
 */

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"

extern char **environ;

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        printf("%s %.1f %.1f %d\n", name, v[n / 2], v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
               n);
        fflush(stdout);
}

static void die(const char *what, const struct b4_error *err)
{
        fprintf(stderr, "native-bench: %s: %s\n", what, err ? err->msg : "");
        exit(1);
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *id)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = id, .policy = &pol };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                die("acquire", &err);
        return sb;
}

static void exec_true(struct b4_sandbox *sb)
{
        struct b4_exec_req req = { .command = "true" };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };

        if (b4_sandbox_exec(sb, &req, &res, &err) < 0 || res.exit_code != 0)
                die("exec", &err);
        b4_exec_result_clear(&res);
}

static void bench_cold(struct b4_provider *p, int n)
{
        double *v = calloc((size_t)n, sizeof(*v));
        struct b4_error err = { 0 };
        char id[64];

        for (int i = 0; i < n; i++) {
                snprintf(id, sizeof(id), "bench-cold-%d", i);
                double t0 = now_us();
                struct b4_sandbox *sb = acquire(p, id);
                exec_true(sb);
                v[i] = now_us() - t0;
                b4_sandbox_unref(sb);
                if (b4_provider_destroy(p, id, &err) < 0)
                        die("destroy", &err);
        }
        report("cold_acquire_to_first_true", v, n);
        free(v);
}

static void bench_warm(struct b4_sandbox *sb, int n)
{
        double *v = calloc((size_t)n, sizeof(*v));

        for (int i = 0; i < n; i++) {
                double t0 = now_us();
                exec_true(sb);
                v[i] = now_us() - t0;
        }
        report("warm_exec_true", v, n);
        free(v);
}

static void bench_files(struct b4_sandbox *sb, int n)
{
        struct b4_fs *fs = b4_sandbox_fs(sb);
        double *w = calloc((size_t)n, sizeof(*w)), *r = calloc((size_t)n, sizeof(*r));
        struct b4_error err = { 0 };
        char data[4096], *out = NULL;
        size_t len;

        memset(data, 'x', sizeof(data));
        for (int i = 0; i < n; i++) {
                double t0 = now_us();
                if (b4_fs_write_file(fs, "/workspace/bench-4k", data, sizeof(data), &err) < 0)
                        die("write", &err);
                w[i] = now_us() - t0;
                t0 = now_us();
                if (b4_fs_read_file(fs, "/workspace/bench-4k", 1 << 20, &out, &len, &err) < 0)
                        die("read", &err);
                r[i] = now_us() - t0;
                free(out);
        }
        report("write_4k", w, n);
        report("read_4k", r, n);
        free(w);
        free(r);
}

static void bench_listdir(struct b4_sandbox *sb, int n)
{
        struct b4_fs *fs = b4_sandbox_fs(sb);
        double *v = calloc((size_t)n, sizeof(*v));
        struct b4_error err = { 0 };
        char path[128], **names = NULL;

        for (int i = 0; i < 100; i++) {
                snprintf(path, sizeof(path), "/workspace/ls/f%03d", i);
                if (b4_fs_write_file(fs, path, "x", 1, &err) < 0)
                        die("write", &err);
        }
        for (int i = 0; i < n; i++) {
                double t0 = now_us();
                if (b4_fs_list_dir(fs, "/workspace/ls", &names, &err) < 0)
                        die("listdir", &err);
                v[i] = now_us() - t0;
                for (char **s = names; *s; s++)
                        free(*s);
                free(names);
        }
        report("listdir_100", v, n);
        free(v);
}

/* VmRSS (kB) of every keeper recorded in the state dir's run/ folder, summed. */
static long keepers_rss_kb(const char *state, int *ret_n)
{
        char cmd[512], line[256];
        long total = 0;
        FILE *f;

        *ret_n = 0;
        snprintf(cmd, sizeof(cmd),
                 "for k in %s/native/run/*.keeper; do awk '{print $2}' \"$k\"; done", state);
        f = popen(cmd, "r"); /* checksrc: allow (bench tool, not library code) */
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                char path[64], buf[4096];
                snprintf(path, sizeof(path), "/proc/%d/status", atoi(line)); /* checksrc: allow */
                FILE *st = fopen(path, "re");
                if (!st)
                        continue;
                while (fgets(buf, sizeof(buf), st))
                        if (strncmp(buf, "VmRSS:", 6) == 0) {
                                total += strtol(buf + 6, NULL, 10);
                                (*ret_n)++;
                        }
                fclose(st);
        }
        pclose(f);
        return total;
}

static void bench_idle(struct b4_provider *p, const char *state, int n)
{
        struct b4_error err = { 0 };
        char id[64];
        double t0 = now_us();
        int k;

        for (int i = 0; i < n; i++) {
                snprintf(id, sizeof(id), "bench-idle-%d", i);
                b4_sandbox_unref(acquire(p, id));
        }
        printf("idle_threads_acquired %d %.0f_ms_total %d\n", n, (now_us() - t0) / 1000, n);
        long kb = keepers_rss_kb(state, &k);
        printf("idle_keeper_rss_kb %.0f %.0f %d\n", k ? (double)kb / k : -1.0, (double)kb, k);
        for (int i = 0; i < n; i++) {
                snprintf(id, sizeof(id), "bench-idle-%d", i);
                if (b4_provider_destroy(p, id, &err) < 0)
                        die("destroy", &err);
        }
}

/* Time a command run to completion via posix_spawn; returns -1 when it fails. */
static double spawn_us(char *const argv[])
{
        pid_t pid;
        int st;
        double t0 = now_us();

        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                return -1;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return -1;
        return now_us() - t0;
}

static void bench_spawn(const char *name, char *const argv[], int n)
{
        double *v = calloc((size_t)n, sizeof(*v));

        for (int i = 0; i < n; i++) {
                v[i] = spawn_us(argv);
                if (v[i] < 0) {
                        printf("%s - - 0\n", name);
                        free(v);
                        return;
                }
        }
        report(name, v, n);
        free(v);
}

int main(int argc, char **argv)
{
        struct b4_provider_config cfg = { .type = (char *)"native", .scope = (char *)"bench" };
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };
        char *const bwrap[] = { (char *)"bwrap",
                                (char *)"--unshare-all",
                                (char *)"--ro-bind",
                                (char *)"/",
                                (char *)"/",
                                (char *)"--dev",
                                (char *)"/dev",
                                (char *)"--proc",
                                (char *)"/proc",
                                (char *)"true",
                                NULL };

        if (argc < 2 || argv[1][0] != '/') {
                fprintf(stderr, "usage: native-bench /abs/state-dir [docker-container]\n");
                return 2;
        }
        cfg.state_dir = argv[1];
        if (b4_provider_new(&cfg, &p, &err) < 0)
                die("provider", &err);
        bench_cold(p, 50);
        struct b4_sandbox *sb = acquire(p, "bench-warm");
        bench_warm(sb, 1000);
        bench_files(sb, 2000);
        bench_listdir(sb, 1000);
        b4_sandbox_unref(sb);
        if (b4_provider_destroy(p, "bench-warm", &err) < 0)
                die("destroy", &err);
        bench_idle(p, argv[1], argc > 3 ? atoi(argv[3]) : 500); /* checksrc: allow */
        b4_provider_free(p);
        bench_spawn("bwrap_oneshot_true", bwrap, 100);
        if (argc > 2 && strcmp(argv[2], "-") != 0) {
                char *const docker[] = { (char *)"docker", (char *)"exec", argv[2], (char *)"true",
                                         NULL };
                bench_spawn("docker_exec_true", docker, 50);
        }
        return 0;
}
