/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/inspect-bench: in-process b4_inspect_thread() over a 1,214-entry workspace (mixed
 * sizes, ~10 MiB) and a 10,000-entry one, through the fake provider and, as root, the native
 * provider's reader. Prints the median of several runs per case. `meson test --benchmark`.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/inspect.h"

#include "b4-test.h"
#include "workspace/inspect-thread.h"

#define RUNS 15

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* @files files spread over @dirs directories; every 45th file is 200 KiB, others 1-8 KiB,
 * or all @flat bytes when @flat is set. Returns the bytes written. */
static size_t populate(struct b4_fs *fs, int dirs, int files, size_t flat)
{
        static char buf[200 * 1024];
        size_t total = 0;
        char path[128];

        memset(buf, 'a', sizeof(buf));
        for (size_t i = 63; i < sizeof(buf); i += 64)
                buf[i] = '\n';
        for (int i = 0; i < files; i++) {
                int d = i % dirs, f = i / dirs;
                size_t len = flat          ? flat
                             : i % 45 == 0 ? sizeof(buf)
                                           : 1024 + (size_t)(i * 613 % 7168);
                (void)snprintf(path, sizeof(path), "/workspace/d%03d/f%04d.txt", d, f);
                if (b4_fs_write_file(fs, path, buf, len, NULL) < 0) {
                        fprintf(stderr, "write %s failed\n", path);
                        exit(1);
                }
                total += len;
        }
        return total;
}

static void bench(struct b4_provider *p, const char *thread, const char *label)
{
        double t[RUNS];
        struct b4_inspect_options o;
        struct b4_inspection insp = { 0 };
        struct b4_error err = { 0 };

        b4_inspect_options_init(&o);
        for (int i = 0; i < RUNS; i++) {
                double t0 = now_ms();
                if (b4_inspect_thread(p, thread, &o, false, &insp, NULL, &err) < 0) {
                        fprintf(stderr, "%s: %s\n", label, err.msg);
                        exit(1);
                }
                t[i] = now_ms() - t0;
                if (i == RUNS - 1) {
                        qsort(t, RUNS, sizeof(double), cmp_double);
                        printf("%-8s %6llu entries %5.1f MiB  median %7.2f ms  min %7.2f ms\n",
                               label, (unsigned long long)insp.entries,
                               (double)insp.total_bytes / (1 << 20), t[RUNS / 2], t[0]);
                }
                b4_inspection_clear(&insp);
        }
}

static void run_provider(const char *type, const char *state)
{
        struct b4_provider_config cfg = { .type = (char *)type,
                                          .scope = (char *)"inspect-bench",
                                          .state_dir = (char *)state };
        struct b4_provider *p = NULL;
        struct b4_policy pol;
        struct b4_error err = { 0 };
        const char *threads[] = { "bench-1214", "bench-10000" };

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        if (b4_provider_new(&cfg, &p, &err) < 0) {
                printf("# %s: skipped (%s)\n", type, err.msg);
                return;
        }
        for (int k = 0; k < 2; k++) {
                struct b4_acquire_req req = { .thread_id = threads[k], .policy = &pol };
                struct b4_sandbox *sb = NULL;
                char label[32];
                if (b4_provider_acquire(p, &req, &sb, &err) < 0) {
                        printf("# %s: skipped (%s)\n", type, err.msg);
                        break;
                }
                if (k == 0)
                        populate(b4_sandbox_fs(sb), 110, 1104, 0); /* 1,214 entries */
                else
                        populate(b4_sandbox_fs(sb), 100, 9900, 1024); /* 10,000 entries */
                b4_sandbox_unref(sb);
                (void)snprintf(label, sizeof(label), "%s", type);
                bench(p, threads[k], label);
                (void)b4_provider_destroy(p, threads[k], NULL);
        }
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

int main(void)
{
        char *state = b4_test_tmpdir();

        run_provider("fake", state);
        if (b4_test_is_root())
                run_provider("native", state);
        else
                printf("# native: skipped (needs root)\n");
        b4_test_rmrf(state);
        free(state);
        return 0;
}
