/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/pause-bench: native pause and resume latency (b4_provider_pause(), the cgroup
 * freezer) of a thread whose sandbox runs a few busy background loops, and the cost of the
 * transparent resume: `true` on a paused thread against `true` on a running one, and a
 * background start (b4_sandbox_proc_start() of `true`, its record forgotten after). Prints one
 * "name p50_us p99_us n" line per measurement (bench/pause.sh makes the table). Not a test.
 * Usage: pause-bench /abs/state-dir [rounds]
 */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "b4box/b4.h"

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

#define THREAD "pause-bench"

static struct b4_provider *provider; /* destroyed on the way out, so no busy loop is left */

static void die(const char *what, const struct b4_error *err)
{
        fprintf(stderr, "pause-bench: %s: %s\n", what, err ? err->msg : "");
        if (provider)
                (void)b4_provider_destroy(provider, THREAD, NULL);
        exit(1);
}

static void run(struct b4_sandbox *sb, const char *command)
{
        struct b4_exec_req req = { .command = command };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };

        if (b4_sandbox_exec(sb, &req, &res, &err) < 0 || res.exit_code != 0)
                die(command, &err);
        b4_exec_result_clear(&res);
}

static void pause_or_die(struct b4_provider *p, const char *id, bool paused, double *ret_us)
{
        struct b4_error err = { 0 };
        double t0 = now_us();

        if (b4_provider_pause(p, id, paused, &err) < 0)
                die(paused ? "pause" : "resume", &err);
        if (ret_us)
                *ret_us = now_us() - t0;
}

int main(int argc, char **argv)
{
        struct b4_provider_config cfg = { .type = (char *)"native", .scope = (char *)"pbench" };
        int n = argc > 2 ? atoi(argv[2]) : 200; /* checksrc: allow */
        double *pv, *rv, *tv, *wv, *bv;
        struct b4_acquire_req req = { .thread_id = THREAD };
        struct b4_provider *p = NULL;
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };
        struct b4_policy pol;

        if (argc < 2 || argv[1][0] != '/' || n < 1) {
                fprintf(stderr, "usage: pause-bench /abs/state-dir [rounds]\n");
                return 2;
        }
        pv = calloc((size_t)n, sizeof(double));
        rv = calloc((size_t)n, sizeof(double));
        tv = calloc((size_t)n, sizeof(double));
        wv = calloc((size_t)n, sizeof(double));
        bv = calloc((size_t)n, sizeof(double));
        cfg.state_dir = argv[1];
        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        req.policy = &pol;
        if (!pv || !rv || !tv || !wv || !bv || b4_provider_new(&cfg, &p, &err) < 0)
                die("setup", &err);
        provider = p;
        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                die("acquire", &err);
        /* four processes that keep running: two busy loops, two sleepers */
        run(sb, "for i in 1 2; do setsid sh -c 'while :; do :; done' >/dev/null 2>&1 </dev/null & "
                "setsid sh -c 'while :; do sleep 0.01; done' >/dev/null 2>&1 </dev/null & done");
        for (int i = 0; i < n; i++) {
                pause_or_die(p, req.thread_id, true, &pv[i]);
                pause_or_die(p, req.thread_id, false, &rv[i]);
        }
        for (int i = 0; i < n; i++) {
                double t0 = now_us();
                run(sb, "true");
                wv[i] = now_us() - t0;
                pause_or_die(p, req.thread_id, true, NULL);
                t0 = now_us();
                run(sb, "true"); /* resumes first */
                tv[i] = now_us() - t0;
        }
        for (int i = 0; i < n; i++) { /* background start: the record and the keeper's fork */
                struct b4_proc_req preq = { .command = "true" };
                struct b4_proc_info info = { 0 };
                double t0 = now_us();
                if (b4_sandbox_proc_start(sb, &preq, &info, &err) < 0)
                        die("background start", &err);
                bv[i] = now_us() - t0;
                if (b4_sandbox_proc_forget(sb, info.pid, &err) < 0)
                        die("forget", &err);
                b4_proc_info_clear(&info);
        }
        report("pause", pv, n);
        report("resume", rv, n);
        report("exec_true_running", wv, n);
        report("exec_true_paused", tv, n);
        report("background_start", bv, n);
        b4_sandbox_unref(sb);
        if (b4_provider_destroy(p, req.thread_id, &err) < 0)
                die("destroy", &err);
        b4_provider_free(p);
        return 0;
}
