/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latency of b4box-agent calls over a local socketpair (no Docker): p50 and p99 of lstat, a
 * 4 KiB read, a 4 KiB write, `true` as a command, and a walk of 1,214 entries. The figures
 * are the agent's own cost, the floor of what Docker and Kubernetes add their stream to.
 *   build-dbg/tests/agent/agent-bench [ROUNDS]     (B4BOX_AGENT or the build tree's agent)
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent-client.h"
#include "base/alloc.h"

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
        qsort(v, (size_t)n, sizeof(double), cmp); /* checksrc: allow */
        printf("%-28s p50 %8.1f us   p99 %8.1f us\n", name, v[n / 2], v[n * 99 / 100]);
}

int main(int argc, char **argv)
{
        int rounds = argc > 1 ? atoi(argv[1]) : 200; /* checksrc: allow */
        char tmpl[] = "/tmp/agent-bench-XXXXXX", path[512], *data = NULL;
        char *args[] = { (char *)"--root", tmpl, NULL };
        double *v = calloc((size_t)rounds, sizeof(double));
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        char block[4096];
        size_t len;
        pid_t pid;

        if (!mkdtemp(tmpl) || !v)
                return 1;
        (void)snprintf(path, sizeof(path), "%s/workspace", tmpl);
        (void)mkdir(path, 0755);
        if (agent_spawn(NULL, args, NULL, &c, &pid, &err) < 0) {
                fprintf(stderr, "agent-bench: %s\n", err.msg);
                return 1;
        }
        memset(block, 'x', sizeof(block));
        if (agent_write_file(c, "/workspace/f", 0, block, sizeof(block), &err) < 0)
                return 1;
        for (int i = 0; i < rounds; i++) {
                struct b4_stat st = { 0 };
                double t = now_us();
                (void)agent_lstat(c, "/workspace/f", &st, &err);
                v[i] = now_us() - t;
        }
        report("lstat", v, rounds);
        for (int i = 0; i < rounds; i++) {
                double t = now_us();
                (void)agent_read_file(c, "/workspace/f", 0, 65536, &data, &len, &err);
                v[i] = now_us() - t;
                free(data);
        }
        report("read 4 KiB", v, rounds);
        for (int i = 0; i < rounds; i++) {
                double t = now_us();
                (void)agent_write_file(c, "/workspace/f", 0, block, sizeof(block), &err);
                v[i] = now_us() - t;
        }
        report("write 4 KiB", v, rounds);
        for (int i = 0; i < rounds; i++) {
                struct b4_exec_result res = { 0 };
                struct agent_exec_req q = { .command = "true", .cwd = "/", .output_cap = 65536 };
                double t = now_us();
                (void)agent_exec(c, &q, &res, &err);
                v[i] = now_us() - t;
                b4_exec_result_clear(&res);
        }
        report("exec sh -c true", v, rounds);
        /* 1,214 entries: 34 directories of 34 files, and 24 files beside them */
        for (int d = 0; d < 34; d++)
                for (int f = 0; f < 34; f++) {
                        char p[64];
                        (void)snprintf(p, sizeof(p), "/workspace/t/d%02d/f%02d", d, f);
                        (void)agent_write_file(c, p, 0, "x", 1, &err);
                }
        for (int f = 0; f < 24; f++) {
                char p[64];
                (void)snprintf(p, sizeof(p), "/workspace/t/top%02d", f);
                (void)agent_write_file(c, p, 0, "x", 1, &err);
        }
        int wr = rounds < 50 ? rounds : 50;
        size_t n = 0;
        for (int i = 0; i < wr; i++) {
                struct b4_walk_entry *e = NULL;
                double t = now_us();
                (void)agent_walk(c, "/workspace/t", 10000, NULL, &e, &n, &err);
                v[i] = now_us() - t;
                b4_walk_entries_free(e, n);
        }
        printf("(walk: %zu entries)\n", n);
        report("walk", v, wr);
        agent_conn_free(c);
        (void)waitpid(pid, NULL, 0);
        (void)snprintf(path, sizeof(path), "rm -rf '%s'", tmpl);
        return system(path) == 0 ? 0 : 1; /* checksrc: allow */
}
