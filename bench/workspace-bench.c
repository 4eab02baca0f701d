/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/workspace-bench: managed workspaces in-process, per provider.
 *   - first admission of a FILES-file static workspace (capture + record + materialise +
 *     acquire), over THREADS fresh threads;
 *   - a warm managed call (run begin/end on a live thread) against the same call without a
 *     managed workspace: the difference is the managed overhead per call.
 * Prints "name p50_us p99_us n" lines; bench/workspace.sh turns them into a table.
 * Usage: workspace-bench PROVIDER WORK_DIR [FILES] [THREADS] [WARM_CALLS]
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/store.h"

struct env {
        struct b4_config *cfg;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
};

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

static double report(const char *name, double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        printf("%s %.2f %.2f %d\n", name, v[n / 2], v[(n * 99) / 100], n);
        fflush(stdout);
        return v[n / 2];
}

static void die(const char *what, const char *msg)
{
        fprintf(stderr, "workspace-bench: %s: %s\n", what, msg);
        exit(1);
}

/* @n small files (64-575 bytes) in 40 folders under @dir/src; returns the include list. */
static char *make_files(const char *dir, int n)
{
        size_t cap = (size_t)n * 32 + 16, len = 0;
        char *inc = malloc(cap), p[4096], buf[600];

        snprintf(p, sizeof(p), "%s/src", dir);
        mkdir(p, 0755);
        len += (size_t)snprintf(inc + len, cap - len, "[");
        for (int i = 0; i < n; i++) {
                snprintf(p, sizeof(p), "%s/src/d%02d", dir, i % 40);
                mkdir(p, 0755);
                snprintf(p, sizeof(p), "%s/src/d%02d/f%04d.txt", dir, i % 40, i);
                FILE *f = fopen(p, "w");
                size_t sz = 64 + (size_t)(i * 37) % 512;
                memset(buf, 'a' + i % 26, sz);
                if (!f || fwrite(buf, 1, sz, f) != sz || fclose(f) != 0)
                        die("write", p);
                len += (size_t)snprintf(inc + len, cap - len, "%s\"d%02d/f%04d.txt\"", i ? "," : "",
                                        i % 40, i);
        }
        snprintf(inc + len, cap - len, "]");
        return inc;
}

static void env_up(struct env *e,
                   const char *dir,
                   const char *state,
                   const char *provider,
                   const char *include)
{
        char *json = NULL, **errors = NULL;
        struct b4_error err = { 0 };
        const char *ws = include ? ", \"workspace\": {\"source\": {\"directory\": \"src\", "
                                   "\"include\": "
                                 : "";

        if (asprintf(&json,
                     "{\"sandbox\": {\"provider\": {\"type\": \"%s\", \"scope\": "
                     "\"wsbench\"}, \"network\": {\"mode\": \"deny\"}%s%s%s}}",
                     provider, ws, include ? include : "", include ? "}}" : "") < 0)
                die("config", "oom");
        if (b4_config_parse(json, strlen(json), dir, &e->cfg, &errors, &err) < 0)
                die("config", errors ? errors[0] : err.msg);
        free(json);
        free(e->cfg->sandbox.provider.state_dir);
        e->cfg->sandbox.provider.state_dir = strdup(state);
        if (b4_store_open(state, B4_STORE_EXCLUSIVE, &e->store, &err) < 0)
                die("store", err.msg);
        if (b4_provider_new(&e->cfg->sandbox.provider, &e->provider, &err) < 0)
                die("provider", err.msg);
        struct b4_runtime_options o = { .provider = e->provider,
                                        .store = e->store,
                                        .policy = b4_config_policy(e->cfg),
                                        .config = include ? e->cfg : NULL };
        if (b4_runtime_new(&o, &e->rt, &err) < 0)
                die("runtime", err.msg);
}

static void env_down(struct env *e, int threads)
{
        char id[32];

        for (int i = 0; i < threads; i++) {
                snprintf(id, sizeof(id), "t%d", i);
                (void)b4_runtime_thread_delete(e->rt, id, NULL);
        }
        b4_runtime_free(e->rt);
        b4_provider_free(e->provider);
        b4_store_close(e->store);
        b4_config_free(e->cfg);
}

static double one_run(struct env *e, const char *id)
{
        struct b4_error err = { 0 };
        struct b4_run *run = NULL;
        double t0 = now_us();

        if (b4_runtime_run_begin(e->rt, id, &run, &err) < 0)
                die("run", err.msg);
        b4_run_end(run);
        return now_us() - t0;
}

/* First runs of @threads fresh threads, then @warm runs on the first; returns warm p50. */
static double measure(struct env *e, const char *label, int threads, int warm)
{
        double *v = calloc((size_t)(threads > warm ? threads : warm), sizeof(double));
        char id[32], name[96];

        for (int i = 0; i < threads; i++) {
                struct b4_thread_row row = { 0 };
                snprintf(id, sizeof(id), "t%d", i);
                if (b4_runtime_thread_create(e->rt, id, NULL, NULL, NULL, &row, NULL) < 0)
                        die("thread", id);
                b4_thread_row_clear(&row);
                v[i] = one_run(e, id);
        }
        snprintf(name, sizeof(name), "%s_first_run", label);
        report(name, v, threads);
        for (int i = 0; i < warm; i++)
                v[i] = one_run(e, "t0");
        snprintf(name, sizeof(name), "%s_warm_run", label);
        double p50 = report(name, v, warm);
        free(v);
        return p50;
}

int main(int argc, char **argv)
{
        const char *provider = argc > 1 ? argv[1] : "fake";
        const char *work = argc > 2 ? argv[2] : NULL;
        int files = argc > 3 ? atoi(argv[3]) : 1214, threads = argc > 4 ? atoi(argv[4]) : 10;
        int warm = argc > 5 ? atoi(argv[5]) : 20000;
        char sm[4096], su[4096];
        struct env m = { 0 }, u = { 0 };

        if (!work || files < 1 || threads < 1 || warm < 100)
                die("usage", "workspace-bench PROVIDER WORK_DIR [FILES] [THREADS] [WARM_CALLS]");
        char *include = make_files(work, files);
        snprintf(sm, sizeof(sm), "%s/state-managed-%s", work, provider);
        snprintf(su, sizeof(su), "%s/state-plain-%s", work, provider);
        env_up(&m, work, sm, provider, include);
        double pm = measure(&m, "managed", threads, warm);
        env_down(&m, threads);
        env_up(&u, work, su, provider, NULL);
        double pu = measure(&u, "plain", threads, warm);
        env_down(&u, threads);
        printf("managed_warm_overhead %.3f %.3f 0\n", pm - pu, pm - pu);
        free(include);
        return 0;
}
