/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kube client against an API server (bench/kube-client.sh starts the fake): the latency
 * of one GET on the client's kept connection, the connections N GETs took and the client's
 * CPU per GET, and the rate four threads get through the default token bucket (50 per
 * second, burst 100) and the connections they took.
 * Usage: kube-client-bench KUBECONFIG [N]
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/time-util.h"
#include "kube/kube.h"

#define THREADS 4

static double cpu_ms(void)
{
        struct rusage ru;

        (void)getrusage(RUSAGE_SELF, &ru);
        return (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
               (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
}

static int cmp(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static struct kube_client *client(const char *kubeconfig, double qps)
{
        struct kube_options o = { .kubeconfig = kubeconfig, .qps = qps };
        struct kube_config cfg = { 0 };
        struct kube_client *c = NULL;
        struct b4_error err = { 0 };

        if (kube_config_resolve(&o, &cfg, &err) < 0 || kube_client_new(&cfg, &c, &err) < 0) {
                fprintf(stderr, "kube-client-bench: %s\n", err.msg);
                exit(1);
        }
        kube_config_release(&cfg);
        return c;
}

struct worker {
        struct kube_client *c;
        int n, failed;
};

static void *work(void *userdata)
{
        struct worker *w = userdata;

        for (int i = 0; i < w->n; i++)
                w->failed += kube_get(w->c, "/version", NULL, NULL) < 0;
        return NULL;
}

int main(int argc, char **argv)
{
        int n = argc > 2 ? atoi(argv[2]) : 300;
        struct kube_client *c;
        uint64_t *us, t0;
        pthread_t th[THREADS];
        struct worker w[THREADS];
        int failed = 0;

        if (argc < 2 || n <= 0) {
                fprintf(stderr, "usage: kube-client-bench KUBECONFIG [N]\n");
                return 2;
        }
        us = calloc((size_t)n, sizeof(*us));
        c = client(argv[1], -1);
        double cpu0 = cpu_ms();
        for (int i = 0; i < n; i++) {
                t0 = now_usec();
                failed += kube_get(c, "/version", NULL, NULL) < 0;
                us[i] = now_usec() - t0;
        }
        double cpu = (cpu_ms() - cpu0) / n;
        qsort(us, (size_t)n, sizeof(*us), cmp);
        printf("| GET /version, unthrottled, %d sequential | p50 %.2f ms | p90 %.2f ms | p99 %.2f ms "
               "| %llu connection(s), client CPU %.3f ms per GET |\n",
               n, us[n / 2] / 1e3, us[n * 9 / 10] / 1e3, us[n * 99 / 100] / 1e3,
               (unsigned long long)kube_client_connections(c), cpu);
        kube_client_free(c);
        c = client(argv[1], 0);
        t0 = now_usec();
        for (int i = 0; i < THREADS; i++) {
                w[i] = (struct worker){ .c = c, .n = n / THREADS };
                pthread_create(&th[i], NULL, work, &w[i]);
        }
        for (int i = 0; i < THREADS; i++) {
                pthread_join(th[i], NULL);
                failed += w[i].failed;
        }
        double s = (now_usec() - t0) / 1e6;
        int total = THREADS * (n / THREADS);
        printf("| GET /version, default bucket, %d threads x %d | %.2f s | %.1f req/s overall | "
               "expected >= %.2f s (burst %u, then %.0f/s) | %llu connection(s) |\n",
               THREADS, n / THREADS, s, total / s,
               total > (int)KUBE_DEFAULT_BURST ? (total - KUBE_DEFAULT_BURST) / KUBE_DEFAULT_QPS
                                               : 0,
               KUBE_DEFAULT_BURST, KUBE_DEFAULT_QPS,
               (unsigned long long)kube_client_connections(c));
        kube_client_free(c);
        free(us);
        if (failed)
                fprintf(stderr, "kube-client-bench: %d requests failed\n", failed);
        return failed ? 1 : 0;
}
