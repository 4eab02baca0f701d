/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus metrics (docs/http-api.md "Metrics"): requests by route and status and their
 * durations, refusals by code, tool calls, their latency and their errors by code, command
 * durations up to 10 minutes, acquires (cold, reattach) and admissions with their
 * durations, releases by reason, threads by state, one gauge per control the provider cannot
 * enforce, pause and resume latency, build info and the standard process_* metrics. Label sets are
 * bounded: tools are the five built-ins plus "other", routes the route table's names, codes and
 * controls at most MAX_CODES / MAX_CONTROLS distinct names.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "b4box/version.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "server-internal.h"

#define MAX_CODES    64
#define MAX_ROUTES   32
#define MAX_CONTROLS 32

static const char *const tool_names[] = { "readFile", "writeFile", "editFile",
                                          "listDir",  "runBash",   "other" };
#define N_TOOLS (sizeof(tool_names) / sizeof(tool_names[0]))

static const double buckets[] = { 0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                  0.1,    0.25,   0.5,   1,      2.5,   5,    10 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

/* Commands print for minutes: buckets up to 10 minutes. */
static const double long_buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                       2.5,   5,    10,    30,   60,  120,  300, 600 };
#define N_LONG (sizeof(long_buckets) / sizeof(long_buckets[0]))

struct hist {
        uint64_t bucket[N_LONG]; /* per bucket here, cumulative when rendered */
        uint64_t count;
        double sum_s;
};

struct tool_stats {
        uint64_t ok, failed;
        uint64_t bucket[N_BUCKETS]; /* cumulative at render time, per-bucket here */
        double sum_s;
};

static const char *const event_names[B4_EVENT__COUNT] = {
        [B4_EVENT_ACQUIRE_COLD] = "cold",         [B4_EVENT_ACQUIRE_REATTACH] = "reattach",
        [B4_EVENT_ADMISSION] = "admission",       [B4_EVENT_RELEASE_IDLE] = "idle",
        [B4_EVENT_RELEASE_EXPLICIT] = "explicit", [B4_EVENT_RELEASE_SHUTDOWN] = "shutdown",
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
        struct counter tool_errors[MAX_CODES]; /* name "tool\tcode" */
        size_t n_tool_errors;
        struct hist exec;                    /* runBash calls */
        struct hist events[B4_EVENT__COUNT]; /* acquire, admission, release durations */
        struct hist routes[MAX_ROUTES];      /* request durations by route */
        char route_names[MAX_ROUTES][64];
        size_t n_routes;
        char not_enforced[MAX_CONTROLS][64]; /* controls the provider cannot enforce */
        size_t n_not_enforced;
        int64_t gauges[METRICS_GAUGE__COUNT];
        double start_time_s; /* the process's, since the epoch */
};

/* The process's start time from /proc/self/stat (field 22, clock ticks since boot). */
static double process_start_time(void)
{
        cleanup_free char *stat = NULL, *up = NULL;
        size_t len = 0;
        unsigned long long ticks = 0;
        double uptime = 0;
        const char *p;

        if (read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &stat, &len) < 0 ||
            read_file_at(AT_FDCWD, "/proc/uptime", 256, &up, &len) < 0)
                return 0;
        p = strrchr(stat, ')');
        if (!p ||
            sscanf(p + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                   "%*d %*d %*d %llu",
                   &ticks) != 1 ||
            sscanf(up, "%lf", &uptime) != 1)
                return 0;
        struct timespec now;
        (void)clock_gettime(CLOCK_REALTIME, &now);
        return (double)now.tv_sec + (double)now.tv_nsec / 1e9 - uptime +
               (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

struct metrics *metrics_new(void)
{
        struct metrics *m = b4_calloc(1, sizeof(*m));

        if (m) {
                (void)pthread_mutex_init(&m->lock, NULL);
                m->start_time_s = process_start_time();
        }
        return m;
}

void metrics_controls(struct metrics *m, const struct b4_preflight *pf)
{
        for (size_t i = 0; pf && i < pf->n_controls && m->n_not_enforced < MAX_CONTROLS; i++)
                if (pf->controls[i].state == B4_NOT_ENFORCED)
                        (void)snprintf(m->not_enforced[m->n_not_enforced++],
                                       sizeof(m->not_enforced[0]), "%s", pf->controls[i].name);
}

static void hist_observe(struct hist *h, double s)
{
        h->count++;
        h->sum_s += s;
        for (size_t b = 0; b < N_LONG; b++)
                if (s <= long_buckets[b]) {
                        h->bucket[b]++;
                        break;
                }
}

void metrics_event(struct metrics *m, enum b4_runtime_event ev, uint64_t usec)
{
        if ((unsigned)ev >= B4_EVENT__COUNT)
                return;
        (void)pthread_mutex_lock(&m->lock);
        hist_observe(&m->events[ev], (double)usec / 1e6);
        (void)pthread_mutex_unlock(&m->lock);
}

void metrics_gauge_add(struct metrics *m, enum metrics_gauge g, int64_t delta)
{
        (void)pthread_mutex_lock(&m->lock);
        m->gauges[g] += delta;
        (void)pthread_mutex_unlock(&m->lock);
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

static struct hist *route_hist(struct metrics *m, const char *route)
{
        for (size_t i = 0; i < m->n_routes; i++)
                if (strcmp(m->route_names[i], route) == 0)
                        return &m->routes[i];
        if (m->n_routes == MAX_ROUTES)
                return NULL;
        (void)snprintf(m->route_names[m->n_routes], sizeof(m->route_names[0]), "%s", route);
        return &m->routes[m->n_routes++];
}

void metrics_request(struct metrics *m, const char *route, unsigned status, uint64_t usec)
{
        struct hist *h;

        (void)pthread_mutex_lock(&m->lock);
        bump(m->requests, &m->n_requests, MAX_ROUTES * 5, route, status / 100 * 100);
        if ((h = route_hist(m, route)))
                hist_observe(h, (double)usec / 1e6);
        (void)pthread_mutex_unlock(&m->lock);
}

void metrics_refusal(struct metrics *m, const char *code)
{
        (void)pthread_mutex_lock(&m->lock);
        bump(m->codes, &m->n_codes, MAX_CODES, code, 0);
        (void)pthread_mutex_unlock(&m->lock);
}

void metrics_tool_call(
        struct metrics *m, const char *tool, bool ok, const char *code, uint64_t usec)
{
        size_t t = N_TOOLS - 1;
        double s = (double)usec / 1e6;
        char key[64];

        for (size_t i = 0; i + 1 < N_TOOLS; i++)
                if (strcmp(tool_names[i], tool) == 0)
                        t = i;
        (void)snprintf(key, sizeof(key), "%s\t%s", tool_names[t], code ? code : "unknown");
        (void)pthread_mutex_lock(&m->lock);
        struct tool_stats *ts = &m->tools[t];
        if (ok)
                ts->ok++;
        else
                ts->failed++;
        if (!ok)
                bump(m->tool_errors, &m->n_tool_errors, MAX_CODES, key, 0);
        if (strcmp(tool_names[t], "runBash") == 0)
                hist_observe(&m->exec, s);
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

/* One histogram's series; @labels is "" or `k="v",` (with the comma). */
static void render_hist(struct strbuf *sb,
                        const char *name,
                        const char *labels,
                        const struct hist *h)
{
        uint64_t cum = 0;

        for (size_t b = 0; b < N_LONG; b++) {
                cum += h->bucket[b];
                (void)strbuf_addf(sb, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels,
                                  long_buckets[b], (unsigned long long)cum);
        }
        (void)strbuf_addf(sb, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels,
                          (unsigned long long)h->count);
        size_t n = strlen(labels);
        (void)strbuf_addf(sb, "%s_sum%s%.*s%s %.6f\n%s_count%s%.*s%s %llu\n", name, n ? "{" : "",
                          (int)(n ? n - 1 : 0), labels, n ? "}" : "", h->sum_s, name, n ? "{" : "",
                          (int)(n ? n - 1 : 0), labels, n ? "}" : "", (unsigned long long)h->count);
}

static void render_lifecycle(struct metrics *m, struct strbuf *sb)
{
        char labels[96];

        (void)strbuf_adds(sb, "# HELP b4box_exec_duration_seconds Duration of runBash commands.\n"
                              "# TYPE b4box_exec_duration_seconds histogram\n");
        render_hist(sb, "b4box_exec_duration_seconds", "", &m->exec);
        (void)strbuf_adds(sb, "# HELP b4box_acquire_duration_seconds Provider acquires, by kind.\n"
                              "# TYPE b4box_acquire_duration_seconds histogram\n");
        for (int ev = B4_EVENT_ACQUIRE_COLD; ev <= B4_EVENT_ACQUIRE_REATTACH; ev++) {
                (void)snprintf(labels, sizeof(labels), "kind=\"%s\",", event_names[ev]);
                render_hist(sb, "b4box_acquire_duration_seconds", labels, &m->events[ev]);
        }
        (void)strbuf_adds(sb, "# HELP b4box_admission_duration_seconds Admissions of managed "
                              "threads (resolve, acquire, materialise).\n"
                              "# TYPE b4box_admission_duration_seconds histogram\n");
        render_hist(sb, "b4box_admission_duration_seconds", "", &m->events[B4_EVENT_ADMISSION]);
        (void)strbuf_adds(sb, "# HELP b4box_releases_by_reason_total Sandbox releases by reason.\n"
                              "# TYPE b4box_releases_by_reason_total counter\n");
        for (int ev = B4_EVENT_RELEASE_IDLE; ev <= B4_EVENT_RELEASE_SHUTDOWN; ev++)
                (void)strbuf_addf(sb, "b4box_releases_by_reason_total{reason=\"%s\"} %llu\n",
                                  event_names[ev], (unsigned long long)m->events[ev].count);
        (void)strbuf_adds(sb, "# HELP b4box_http_request_duration_seconds Request durations by "
                              "route.\n"
                              "# TYPE b4box_http_request_duration_seconds histogram\n");
        for (size_t i = 0; i < m->n_routes; i++) {
                (void)snprintf(labels, sizeof(labels), "route=\"%s\",", m->route_names[i]);
                render_hist(sb, "b4box_http_request_duration_seconds", labels, &m->routes[i]);
        }
        (void)strbuf_adds(sb, "# HELP b4box_tool_errors_total Failed tool calls by tool and code.\n"
                              "# TYPE b4box_tool_errors_total counter\n");
        for (size_t i = 0; i < m->n_tool_errors; i++) {
                const char *tab = strchr(m->tool_errors[i].name, '\t');
                (void)strbuf_addf(sb, "b4box_tool_errors_total{tool=\"%.*s\",code=\"%s\"} %llu\n",
                                  (int)(tab - m->tool_errors[i].name), m->tool_errors[i].name,
                                  tab + 1, (unsigned long long)m->tool_errors[i].n);
        }
}

static void render_gauges(struct metrics *m, struct strbuf *sb)
{
        (void)strbuf_adds(sb, "# HELP b4box_stream_clients Clients reading a streamed response.\n"
                              "# TYPE b4box_stream_clients gauge\n");
        (void)strbuf_addf(sb, "b4box_stream_clients %lld\n",
                          (long long)m->gauges[METRICS_GAUGE_STREAM_CLIENTS]);
        (void)strbuf_addf(sb,
                          "# HELP b4box_background_processes_started_total Background processes "
                          "started.\n"
                          "# TYPE b4box_background_processes_started_total counter\n"
                          "b4box_background_processes_started_total %lld\n",
                          (long long)m->gauges[METRICS_COUNTER_PROCESSES_STARTED]);
        (void)strbuf_adds(sb, "# HELP b4box_control_not_enforced A control b4box check reports NOT "
                              "ENFORCED for this provider (1 each).\n"
                              "# TYPE b4box_control_not_enforced gauge\n");
        for (size_t i = 0; i < m->n_not_enforced; i++) {
                (void)strbuf_adds(sb, "b4box_control_not_enforced{control=\"");
                for (const char *c = m->not_enforced[i]; *c; c++) /* label-value escapes */
                        (void)strbuf_add(sb, *c == '"' || *c == '\\' ? "_" : c, 1);
                (void)strbuf_adds(sb, "\"} 1\n");
        }
        (void)strbuf_addf(sb,
                          "# HELP b4box_build_info The b4box build.\n"
                          "# TYPE b4box_build_info gauge\n"
                          "b4box_build_info{version=\"%s\"} 1\n",
                          b4_version());
}

static unsigned count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        if (!d)
                return 0;
        while (readdir(d))
                n++;
        (void)closedir(d);
        return n > 3 ? n - 3 : 0; /* ".", ".." and the directory's own fd */
}

/* The standard process_* metrics of Prometheus client libraries. */
static void render_process(const struct metrics *m, struct strbuf *sb)
{
        cleanup_free char *stat = NULL;
        unsigned long utime = 0, stime = 0, vsize = 0;
        long rss = 0;
        struct rlimit rl = { 0 };
        size_t len = 0;
        const char *p = NULL;
        double tck = (double)sysconf(_SC_CLK_TCK);

        if (read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &stat, &len) >= 0)
                p = strrchr(stat, ')');
        if (p)
                (void)sscanf(p + 2,
                             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d "
                             "%*d %*d %*d %*d %*u %lu %ld",
                             &utime, &stime, &vsize, &rss);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
        (void)strbuf_addf(sb,
                          "# HELP process_cpu_seconds_total Total user and system CPU time spent "
                          "in seconds.\n"
                          "# TYPE process_cpu_seconds_total counter\n"
                          "process_cpu_seconds_total %.2f\n"
                          "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                          "# TYPE process_resident_memory_bytes gauge\n"
                          "process_resident_memory_bytes %lld\n"
                          "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                          "# TYPE process_virtual_memory_bytes gauge\n"
                          "process_virtual_memory_bytes %lu\n"
                          "# HELP process_open_fds Number of open file descriptors.\n"
                          "# TYPE process_open_fds gauge\n"
                          "process_open_fds %u\n"
                          "# HELP process_max_fds Maximum number of open file descriptors.\n"
                          "# TYPE process_max_fds gauge\n"
                          "process_max_fds %llu\n"
                          "# HELP process_start_time_seconds Start time of the process since "
                          "unix epoch in seconds.\n"
                          "# TYPE process_start_time_seconds gauge\n"
                          "process_start_time_seconds %.2f\n",
                          ((double)utime + (double)stime) / tck,
                          (long long)rss * (long long)sysconf(_SC_PAGESIZE), vsize, count_fds(),
                          (unsigned long long)rl.rlim_cur, m->start_time_s);
}

static void render_latency(struct strbuf *sb, const char *name, const struct b4_pause_latency *l)
{
        for (size_t b = 0; b < B4_PAUSE_BUCKETS; b++)
                (void)strbuf_addf(sb, "b4box_%s_duration_seconds_bucket{le=\"%g\"} %llu\n", name,
                                  (double)b4_pause_bucket_us(b) / 1e6,
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
        network_metrics_render(rt, &sb);
        render_pause(rt, &sb);
        (void)pthread_mutex_lock(&m->lock);
        render_tools(m, &sb);
        render_counters(m, &sb);
        render_lifecycle(m, &sb);
        render_gauges(m, &sb);
        (void)pthread_mutex_unlock(&m->lock);
        render_process(m, &sb);
        return strbuf_detach(&sb, ret, NULL);
}
