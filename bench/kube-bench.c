/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubernetes provider against the fake API server (bench/kube-bench.sh runs it under
 * tests/kubeprov/with-fake.sh): API requests per lifecycle step and per tool call, from the
 * fake's counters, and wall times on loopback. Issue 15's targets: cold acquire <= 3 writes
 * and 0 reads, reattach 0, release 1, tool call 0.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(void)
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
