/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus metrics: requests by route and status, refusals by code, tool calls and their
 * latency histogram by tool, threads by state, acquires and releases, pause and resume latency.
 * Label sets are bounded: tools are the five built-ins plus "other", codes at most MAX_CODES
 * distinct names.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strbuf.h"
#include "server-internal.h"

#define MAX_CODES  64
#define MAX_ROUTES 32

static const char *const tool_names[] = { "readFile", "writeFile", "editFile",
                                          "listDir",  "runBash",   "other" };
#define N_TOOLS (sizeof(tool_names) / sizeof(tool_names[0]))

static const double buckets[] = { 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                  0.1,    0.25,   0.5,   1,      2.5,   5,    10 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct tool_stats {
        uint64_t ok, failed;
        uint64_t bucket[N_BUCKETS]; /* cumulative at render time, per-bucket here */
        double sum_s;
};

struct counter {
        char name[64];
        unsigned status;
        uint64_t n;
};

struct metrics {
        pthread_mutex_t lock;
        struct tool_stats tools[N_TOOLS];
        struct counter codes[MAX_CODES];
        size_t n_codes;
        struct counter requests[MAX_ROUTES * 5];
        size_t n_requests;
};

struct metrics *metrics_new(void)
{
        struct metrics *m = b4_calloc(1, sizeof(*m));

        if (m)
                (void)pthread_mutex_init(&m->lock, NULL);
        return m;
}

struct metrics *metrics_free(struct metrics *m)
{
        if (m) {
                (void)pthread_mutex_destroy(&m->lock);
                free(m);
        }
        return NULL;
}

static void bump(struct counter *v, size_t *n, size_t max, const char *name, unsigned status)
{
        for (size_t i = 0; i < *n; i++)
                if (v[i].status == status && strcmp(v[i].name, name) == 0) {
                        v[i].n++;
                        return;
                }
        if (*n == max)
                return;
        (void)snprintf(v[*n].name, sizeof(v[*n].name), "%s", name);
        v[*n].status = status;
        v[(*n)++].n = 1;
}

void metrics_request(struct metrics *m, const char *route, unsigned status)
{
        (void)pthread_mutex_lock(&m->lock);
        bump(m->requests, &m->n_requests, MAX_ROUTES * 5, route, status / 100 * 100);
        (void)pthread_mutex_unlock(&m->lock);
}

void metrics_refusal(struct metrics *m, const char *code)
{
        (void)pthread_mutex_lock(&m->lock);
        bump(m->codes, &m->n_codes, MAX_CODES, code, 0);
        (void)pthread_mutex_unlock(&m->lock);
}

void metrics_tool_call(struct metrics *m, const char *tool, bool ok, uint64_t usec)
{
        size_t t = N_TOOLS - 1;
        double s = (double)usec / 1e6;

        for (size_t i = 0; i + 1 < N_TOOLS; i++)
                if (strcmp(tool_names[i], tool) == 0)
                        t = i;
        (void)pthread_mutex_lock(&m->lock);
        struct tool_stats *ts = &m->tools[t];
        if (ok)
                ts->ok++;
        else
                ts->failed++;
        ts->sum_s += s;
        for (size_t b = 0; b < N_BUCKETS; b++)
                if (s <= buckets[b]) {
                        ts->bucket[b]++;
                        break;
                }
        (void)pthread_mutex_unlock(&m->lock);
}

static void render_tools(struct metrics *m, struct strbuf *sb)
{
        (void)strbuf_adds(sb, "# HELP b4box_tool_calls_total Tool calls by tool and outcome.\n"
                              "# TYPE b4box_tool_calls_total counter\n");
        for (size_t t = 0; t < N_TOOLS; t++)
                (void)strbuf_addf(sb,
                                  "b4box_tool_calls_total{tool=\"%s\",ok=\"true\"} %llu\n"
                                  "b4box_tool_calls_total{tool=\"%s\",ok=\"false\"} %llu\n",
                                  tool_names[t], (unsigned long long)m->tools[t].ok, tool_names[t],
                                  (unsigned long long)m->tools[t].failed);
        (void)strbuf_adds(sb, "# HELP b4box_tool_call_duration_seconds Tool call latency.\n"
                              "# TYPE b4box_tool_call_duration_seconds histogram\n");
        for (size_t t = 0; t < N_TOOLS; t++) {
                struct tool_stats *ts = &m->tools[t];
                uint64_t cum = 0;
                for (size_t b = 0; b < N_BUCKETS; b++) {
                        cum += ts->bucket[b];
                        (void)strbuf_addf(
                                sb,
                                "b4box_tool_call_duration_seconds_bucket{tool=\"%s\",le=\"%g\"} %llu\n",
                                tool_names[t], buckets[b], (unsigned long long)cum);
                }
                (void)strbuf_addf(
                        sb,
                        "b4box_tool_call_duration_seconds_bucket{tool=\"%s\",le=\"+Inf\"} %llu\n"
                        "b4box_tool_call_duration_seconds_sum{tool=\"%s\"} %.6f\n"
                        "b4box_tool_call_duration_seconds_count{tool=\"%s\"} %llu\n",
                        tool_names[t], (unsigned long long)(ts->ok + ts->failed), tool_names[t],
                        ts->sum_s, tool_names[t], (unsigned long long)(ts->ok + ts->failed));
        }
}

static void render_counters(struct metrics *m, struct strbuf *sb)
{
        (void)strbuf_adds(sb, "# HELP b4box_refusals_total Refused requests by code.\n"
                              "# TYPE b4box_refusals_total counter\n");
        for (size_t i = 0; i < m->n_codes; i++)
                (void)strbuf_addf(sb, "b4box_refusals_total{code=\"%s\"} %llu\n", m->codes[i].name,
                                  (unsigned long long)m->codes[i].n);
        (void)strbuf_adds(sb,
                          "# HELP b4box_http_requests_total Requests by route and status class.\n"
                          "# TYPE b4box_http_requests_total counter\n");
        for (size_t i = 0; i < m->n_requests; i++)
                (void)strbuf_addf(sb,
                                  "b4box_http_requests_total{route=\"%s\",status=\"%uxx\"} %llu\n",
                                  m->requests[i].name, m->requests[i].status / 100,
                                  (unsigned long long)m->requests[i].n);
}

static void render_runtime(struct b4_runtime *rt, struct strbuf *sb)
{
        struct b4_runtime_stats st;
        struct b4_thread_row *rows = NULL;
        size_t n = 0;

        b4_runtime_stats(rt, &st);
        if (b4_runtime_thread_list(rt, NULL, &rows, &n, NULL) >= 0)
                b4_thread_rows_free(rows, n);
        (void)strbuf_addf(sb,
                          "# HELP b4box_threads Threads by sandbox state.\n"
                          "# TYPE b4box_threads gauge\n"
                          "b4box_threads{state=\"live\"} %zu\n"
                          "b4box_threads{state=\"released\"} %zu\n"
                          "# HELP b4box_runs_in_flight Runs holding a thread's slot.\n"
                          "# TYPE b4box_runs_in_flight gauge\n"
                          "b4box_runs_in_flight %zu\n"
                          "# HELP b4box_acquires_total Sandbox acquires.\n"
                          "# TYPE b4box_acquires_total counter\n"
                          "b4box_acquires_total %llu\n"
                          "# HELP b4box_releases_total Sandbox releases (idle or explicit).\n"
                          "# TYPE b4box_releases_total counter\n"
                          "b4box_releases_total %llu\n",
                          st.threads_live, n > st.threads_live ? n - st.threads_live : 0,
                          st.runs_in_flight, (unsigned long long)st.acquires,
                          (unsigned long long)st.releases);
}

static void render_latency(struct strbuf *sb, const char *name, const struct b4_pause_latency *l)
{
        for (size_t b = 0; b < B4_PAUSE_BUCKETS; b++)
                (void)strbuf_addf(sb, "b4box_%s_duration_seconds_bucket{le=\"%g\"} %llu\n", name,
                                  (double)b4_pause_bucket_us[b] / 1e6,
                                  (unsigned long long)l->buckets[b]);
        (void)strbuf_addf(sb,
                          "b4box_%s_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                          "b4box_%s_duration_seconds_sum %.6f\n"
                          "b4box_%s_duration_seconds_count %llu\n",
                          name, (unsigned long long)l->count, name, (double)l->sum_us / 1e6, name,
                          (unsigned long long)l->count);
}

/* Pause and resume latency (resumes count the transparent ones), from core's stats. */
static void render_pause(struct b4_runtime *rt, struct strbuf *sb)
{
        struct b4_pause_stats st;

        b4_provider_pause_stats(b4_runtime_provider(rt), &st);
        (void)strbuf_adds(sb, "# HELP b4box_pause_duration_seconds Thread pause latency.\n"
                              "# TYPE b4box_pause_duration_seconds histogram\n");
        render_latency(sb, "pause", &st.pause);
        (void)strbuf_adds(sb, "# HELP b4box_resume_duration_seconds Thread resume latency "
                              "(transparent resumes included).\n"
                              "# TYPE b4box_resume_duration_seconds histogram\n");
        render_latency(sb, "resume", &st.resume);
}

int metrics_render(struct metrics *m, struct b4_runtime *rt, char **ret)
{
        struct strbuf sb;

        strbuf_init(&sb, 4u * 1024 * 1024);
        render_runtime(rt, &sb);
        render_pause(rt, &sb);
        (void)pthread_mutex_lock(&m->lock);
        render_tools(m, &sb);
        render_counters(m, &sb);
        (void)pthread_mutex_unlock(&m->lock);
        return strbuf_detach(&sb, ret, NULL);
}
