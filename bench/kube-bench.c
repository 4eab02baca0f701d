/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubernetes provider against the fake API server (bench/kube-bench.sh runs it under
 * tests/kubeprov/with-fake.sh): API requests per lifecycle step and per tool call, from the
 * fake's counters, and wall times on loopback. Issue 15's targets: cold acquire <= 3 writes
 * and 0 reads, reattach 0, release 1, tool call 0.
 *
 * `kube-bench pool [ROUNDS]` (bench/kube-bench.sh BUILD_DIR pool): warm pool adoption
 * instead: a provider with warmPool {size 4}; each round waits for a ready pair, then times
 * the acquire of a new thread (an adoption) and its first tool call (the agent's session),
 * and counts the round's Pod patches and reads (the filler never patches a Pod nor reads:
 * 1 and 0 per adoption). Issue 15's target: <= 100 ms to the first tool call.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"

#define N_CALLS 200

static const char *E_URL, *E_ADMIN, *E_STATE;

static uint64_t now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct counts {
        long reads, writes, watches, execs;
};

/* POST /_fake/counters/reset: the counts since the last reset. */
static struct counts take_counts(void)
{
        struct counts c = { -1, -1, -1, -1 };
        char cmd[2048], buf[8192];
        size_t len;
        FILE *f;

        snprintf(cmd, sizeof(cmd),
                 "curl -sS --cacert '%s/ca.crt' -X POST -H 'Authorization: Bearer %s' "
                 "'%s/_fake/counters/reset'",
                 E_STATE, E_ADMIN, E_URL);
        f = popen(cmd, "r");
        if (!f)
                return c;
        len = fread(buf, 1, sizeof(buf) - 1, f);
        pclose(f);
        buf[len] = '\0';
        const char *keys[] = { "\"reads\":", "\"writes\":", "\"watches\":", "\"execs\":" };
        long *vals[] = { &c.reads, &c.writes, &c.watches, &c.execs };
        for (size_t i = 0; i < 4; i++) {
                const char *p = strstr(buf, keys[i]);

                if (p)
                        *vals[i] = strtol(p + strlen(keys[i]), NULL, 10);
        }
        return c;
}

/* The number after "@key": in the fake's counters (-1 when absent). */
static long counter(const char *buf, const char *key)
{
        const char *p = strstr(buf, key);

        return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* POST /_fake/counters/reset, raw. */
static void raw_counts(char *buf, size_t size)
{
        char cmd[2048];
        size_t len = 0;
        FILE *f;

        snprintf(cmd, sizeof(cmd),
                 "curl -sS --cacert '%s/ca.crt' -X POST -H 'Authorization: Bearer %s' "
                 "'%s/_fake/counters/reset'",
                 E_STATE, E_ADMIN, E_URL);
        buf[0] = '\0';
        f = popen(cmd, "r");
        if (!f)
                return;
        len = fread(buf, 1, size - 1, f);
        pclose(f);
        buf[len] = '\0';
}

/* Ready pairs of owner "bench": PVCs labelled b4box.io/pool (as the kubeconfig's user). */
static long ready_pairs(void)
{
        char cmd[2048], buf[1 << 16];
        size_t len;
        long n = 0;
        FILE *f;

        snprintf(cmd, sizeof(cmd),
                 "curl -sS --cacert '%s/ca.crt' -H \"Authorization: Bearer $(awk 'NR == 1 { "
                 "print $1 }' '%s/token')\" '%s/api/v1/namespaces/%s/persistentvolumeclaims?"
                 "labelSelector=b4box.io%%2Fpool,b4box.io%%2Fpool-owner%%3Dbench' | grep -o "
                 "'\"b4box.io/pool\":' | wc -l",
                 E_STATE, E_STATE, E_URL, getenv("B4BOX_TEST_KUBE_NAMESPACE"));
        f = popen(cmd, "r");
        if (!f)
                return 0;
        len = fread(buf, 1, sizeof(buf) - 1, f);
        pclose(f);
        buf[len] = '\0';
        n = strtol(buf, NULL, 10);
        return n;
}

static void row(const char *what, struct counts c, double ms)
{
        printf("%-28s %6ld %6ld %7ld %5ld %10.2f\n", what, c.writes, c.reads, c.watches, c.execs,
               ms);
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static double p50_ms(uint64_t *us, size_t n)
{
        qsort(us, n, sizeof(*us), cmp_u64);
        return us[n / 2] / 1000.0;
}

static double p90_ms(uint64_t *us, size_t n)
{
        qsort(us, n, sizeof(*us), cmp_u64);
        return us[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] / 1000.0;
}

#define POOL_ROUNDS_MAX 200

static int pool_bench(unsigned rounds)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_error err = { 0 };
        struct b4_provider *p = NULL;
        static uint64_t t_acq[POOL_ROUNDS_MAX], t_first[POOL_ROUNDS_MAX];
        long patch_pods = 0, reads = 0;
        char buf[8192];

        cfg.type = strdup("kubernetes");
        cfg.scope = strdup("kube-bench-pool");
        cfg.image = strdup(getenv("B4BOX_TEST_KUBE_IMAGE"));
        cfg.kubeconfig = strdup(getenv("B4BOX_TEST_KUBE_CONFIG"));
        cfg.kube_namespace = strdup(getenv("B4BOX_TEST_KUBE_NAMESPACE"));
        cfg.kube_pool = true;
        cfg.kube_pool_size = 4;
        cfg.kube_pool_fill = true;
        cfg.kube_pool_owner = strdup("bench");
        if (b4_provider_new(&cfg, &p, &err) < 0) {
                fprintf(stderr, "provider: %s\n", err.msg);
                return 1;
        }
        b4_provider_config_clear(&cfg);
        for (unsigned i = 0; i < rounds; i++) {
                struct b4_policy pol;
                char thread[32];
                struct b4_acquire_req req = { .thread_id = thread, .policy = &pol };
                struct b4_sandbox *sb = NULL;
                uint64_t t;

                for (int w = 0; w < 400 && ready_pairs() < 1; w++)
                        usleep(25 * 1000);
                snprintf(thread, sizeof(thread), "pool-%u", i);
                b4_policy_init(&pol);
                raw_counts(buf, sizeof(buf));
                t = now_us();
                if (b4_provider_acquire(p, &req, &sb, &err) < 0) {
                        fprintf(stderr, "acquire: %s\n", err.msg);
                        return 1;
                }
                t_acq[i] = now_us() - t;
                if (b4_fs_write_file(&sb->fs, "/workspace/w", "x", 1, &err) < 0) {
                        fprintf(stderr, "write: %s\n", err.msg);
                        return 1;
                }
                t_first[i] = now_us() - t;
                raw_counts(buf, sizeof(buf));
                patch_pods +=
                        counter(buf, "\"patch pods\":") > 0 ? counter(buf, "\"patch pods\":") : 0;
                reads += counter(buf, "\"reads\":");
                b4_sandbox_unref(sb);
                (void)b4_provider_destroy(p, thread, &err);
                b4_policy_clear(&pol);
        }
        printf("kube-bench pool (fake, loopback): %u adoptions, %ld Pod patches, %ld reads\n",
               rounds, patch_pods, reads);
        printf("  acquire (adoption)          p50 %8.2f ms  p90 %8.2f ms\n", p50_ms(t_acq, rounds),
               p90_ms(t_acq, rounds));
        printf("  to the first tool call      p50 %8.2f ms  p90 %8.2f ms\n",
               p50_ms(t_first, rounds), p90_ms(t_first, rounds));
        b4_provider_free(p);
        return 0;
}

int main(int argc, char **argv)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_error err = { 0 };
        struct b4_provider *p = NULL;
        struct b4_sandbox *sb = NULL, *again = NULL;
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = "bench", .policy = &pol };
        static uint64_t t_write[N_CALLS], t_read[N_CALLS], t_exec[N_CALLS];
        uint64_t t;

        E_URL = getenv("KUBE_FAKE_URL");
        E_ADMIN = getenv("KUBE_FAKE_ADMIN");
        E_STATE = getenv("KUBE_FAKE_STATE");
        if (!E_URL || !E_ADMIN || !E_STATE || !getenv("B4BOX_TEST_KUBE_CONFIG")) {
                fprintf(stderr, "run me through bench/kube-bench.sh\n");
                return 1;
        }
        if (argc > 1 && strcmp(argv[1], "pool") == 0) {
                unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 20;

                return pool_bench(rounds < 1 || rounds > POOL_ROUNDS_MAX ? 20 : rounds);
        }
        cfg.type = strdup("kubernetes");
        cfg.scope = strdup("kube-bench");
        cfg.image = strdup(getenv("B4BOX_TEST_KUBE_IMAGE"));
        cfg.kubeconfig = strdup(getenv("B4BOX_TEST_KUBE_CONFIG"));
        cfg.kube_namespace = strdup(getenv("B4BOX_TEST_KUBE_NAMESPACE"));
        if (b4_provider_new(&cfg, &p, &err) < 0) {
                fprintf(stderr, "provider: %s\n", err.msg);
                return 1;
        }
        b4_provider_config_clear(&cfg);
        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        printf("%-28s %6s %6s %7s %5s %10s\n", "kube-bench (fake, loopback)", "writes", "reads",
               "watches", "execs", "ms");
        (void)take_counts();

        t = now_us();
        if (b4_provider_acquire(p, &req, &sb, &err) < 0) {
                fprintf(stderr, "acquire: %s\n", err.msg);
                return 1;
        }
        row("cold acquire (deny mode)", take_counts(), (now_us() - t) / 1000.0);

        t = now_us();
        if (b4_fs_write_file(&sb->fs, "/workspace/w", "x", 1, &err) < 0) {
                fprintf(stderr, "write: %s\n", err.msg);
                return 1;
        }
        row("first tool call (session)", take_counts(), (now_us() - t) / 1000.0);

        char data[4096];
        memset(data, 'a', sizeof(data));
        for (size_t i = 0; i < N_CALLS; i++) {
                struct b4_exec_req er = { .command = "true" };
                struct b4_exec_result res = { 0 };
                char *got = NULL;
                size_t len = 0;

                t = now_us();
                (void)b4_fs_write_file(&sb->fs, "/workspace/w", data, sizeof(data), &err);
                t_write[i] = now_us() - t;
                t = now_us();
                (void)b4_fs_read_file(&sb->fs, "/workspace/w", 1 << 20, &got, &len, &err);
                t_read[i] = now_us() - t;
                free(got);
                t = now_us();
                (void)b4_sandbox_exec(sb, &er, &res, &err);
                t_exec[i] = now_us() - t;
                b4_exec_result_clear(&res);
        }
        struct counts warm = take_counts();
        row("600 warm tool calls", warm, 0);
        printf("%-28s %10.3f ms p50\n", "  writeFile 4 KiB", p50_ms(t_write, N_CALLS));
        printf("%-28s %10.3f ms p50\n", "  readFile 4 KiB", p50_ms(t_read, N_CALLS));
        printf("%-28s %10.3f ms p50\n", "  runBash true", p50_ms(t_exec, N_CALLS));

        t = now_us();
        (void)b4_provider_acquire(p, &req, &again, &err);
        row("reattach", take_counts(), (now_us() - t) / 1000.0);
        b4_sandbox_unref(again);
        b4_sandbox_unref(sb);

        t = now_us();
        (void)b4_provider_release(p, "bench", &err);
        row("release", take_counts(), (now_us() - t) / 1000.0);

        t = now_us();
        if (b4_provider_acquire(p, &req, &sb, &err) < 0) {
                fprintf(stderr, "acquire: %s\n", err.msg);
                return 1;
        }
        row("acquire after release", take_counts(), (now_us() - t) / 1000.0);
        b4_sandbox_unref(sb);

        t = now_us();
        (void)b4_provider_destroy(p, "bench", &err);
        row("destroy", take_counts(), (now_us() - t) / 1000.0);
        b4_policy_clear(&pol);
        b4_provider_free(p);
        return 0;
}
