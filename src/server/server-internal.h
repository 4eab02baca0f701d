/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the server's files: the request context, routes, replies, access, metrics. */

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "json/json.h"
#include "server.h"
#include "stream.h"

#define RESPONSE_MAX_BYTES     (256u * 1024u * 1024u) /* a run's results, all calls */
#define INSPECT_BODY_MAX_BYTES (64u * 1024u)          /* reference INSPECT_BODY_MAX_BYTES */
#define MAX_PATH_PARAMS        3
#define TRACEPARENT_LEN        55 /* "00-" 32 hex "-" 16 hex "-" 2 hex */

struct principal;
struct access_program;
struct metrics;
struct conns;
struct conn;

/* ---- workers.c: the handlers' threads (a pool that grows with demand, shrinks when idle) ---- */
struct worker_job {
        struct worker_job *next;
        void (*fn)(struct worker_job *job); /* runs on a pool thread; may free the job */
};

struct workers {
        pthread_mutex_t lock;
        pthread_cond_t work, gone;
        struct worker_job *head, *tail; /* FIFO of jobs no thread took yet */
        unsigned threads, idle, queued;
        bool stopping;
};

void workers_init(struct workers *w);
/* Run @job->fn on a pool thread (an idle one, else a new one). -ESHUTDOWN after stop;
 * -errno when no thread exists and none can be made (the job was not queued). */
int workers_submit(struct workers *w, struct worker_job *job);
/* Let every thread finish its job and exit; then the pool is gone. */
void workers_stop(struct workers *w);

struct server {
        struct MHD_Daemon *mhd;
        struct server_options opts;
        const struct b4_config *config;
        struct principal *principals; /* loaded tokens; NULL without threadAccess */
        size_t n_principals;
        struct access_program *program; /* threadAccess.command; NULL = none */
        struct metrics *metrics;
        struct conns *conns; /* deadlines and the per-address cap (conns.c) */
        char *address;
        char *unix_path; /* unlinked at free */
        int listen_fd;
        bool tcp;          /* a TCP listener: the browser checks apply (guard.c) */
        char *listen_host; /* the listen address's host, brackets removed */
        char *bound_host;  /* the numeric address bound, brackets removed */
        char *bound_port;  /* the port bound */
        pthread_mutex_t workers_lock;
        pthread_cond_t workers_done;
        unsigned workers;              /* handlers in flight (their connections suspended) */
        struct workers pool;           /* the threads they run on */
        struct mcp_server *mcp;        /* POST /mcp (routes-mcp.c) */
        struct mcp_session *mcp_calls; /* its calls in flight, for notifications/cancelled */
        struct readers *readers;       /* open workspace readers (routes-readers.c) */
};

struct request;
struct readers;
typedef void route_fn(struct request *rq);

/* A refusal recorded instead of replied (request.capture: routes-mcp.c asks the access
 * check about a thread a tool call names, and answers the model, not the HTTP client). */
struct reply_capture {
        bool set;
        unsigned status;
        char code[64];
        char message[512];
};

enum route_body {
        ROUTE_BODY_DEFAULT = 0, /* server.maxBodyBytes */
        ROUTE_BODY_TOOL,        /* server.maxToolBodyBytes */
        ROUTE_BODY_UPLOAD,      /* sandbox.stagedWorkspaces.maxUploadBytes */
        ROUTE_BODY_INSPECT,     /* INSPECT_BODY_MAX_BYTES (reference §6.2: 64 KiB) */
};

#define ROUTE_OP_ANY (~0u) /* route.op: any authenticated principal */

struct route {
        const char *method;
        const char *pattern;  /* "/threads/{}/tools/{}": {} matches one segment */
        unsigned op;          /* enum b4_access_op bit, 0 = no policy check */
        bool thread_scoped;   /* the first parameter is a thread id to authorise */
        bool read_op;         /* a refusal answers 404, never 403 */
        enum route_body body; /* which configured cap bounds the request body */
        route_fn *handler;
        const char *name;                  /* for metrics and logs */
        bool (*begin)(struct request *rq); /* optional headers-phase check after the policy;
                                              false = it replied */
        void (*end)(struct request *rq);   /* optional; when the request is freed */
};

struct request {
        struct server *srv;
        struct MHD_Connection *conn;
        const struct route *route;
        char *params[MAX_PATH_PARAMS];         /* owned, decoded path parameters */
        const struct principal *principal;     /* NULL without principals */
        const char *principal_name;            /* NULL without a policy (or an identity) */
        char *identity;                        /* owned: the policy program's identity answer */
        char *stamp;                           /* owned JSON object: its stamp for an upload */
        bool see_all;                          /* the caller sees every thread (list, parents) */
        bool begin_deferred;                   /* the headers phase runs on the pool */
        const char *url;                       /* libmicrohttpd's, valid while rq lives */
        char traceparent[TRACEPARENT_LEN + 1]; /* a valid W3C traceparent header, or "" */
        int64_t interrupted_ms;        /* the thread's previous run, cut short by a crash, began */
        struct b4_thread_row thread;   /* loaded for thread-scoped routes */
        struct conn *track;            /* the connection's deadlines; NULL if untracked */
        struct worker_job job;         /* its handler's turn on the pool */
        struct MHD_Response *response; /* the reply, until the access handler queues it */
        struct strbuf body;
        bool began;        /* the headers phase ran */
        bool completed;    /* the body is in: phase 3 ran */
        bool path_has_nul; /* the raw request target has %00 */
        bool body_too_large;
        bool holds_upload_slot; /* routes-staged.c */
        bool replied;
        uint64_t started_us;
        char method[8]; /* for the request log */
        char path[256]; /* for the request log, truncated */
        unsigned status;
        struct reply_capture *capture; /* set: refusals land here, no reply is made */
        void (*after)(void *ctx);      /* request_detach() */
        void *after_ctx;
};

/*
 * Run @fn(@ctx) on the handler's pool thread once the handler returned and its reply was
 * handed to libmicrohttpd: a streamed reply's producer (stream.h). @fn must not touch @rq;
 * the server's stop waits for it.
 */
void request_detach(struct request *rq, void (*fn)(void *ctx), void *ctx);

/* ---- logs (log.c; server_log() is in server.h) ---- */
/* The traceparent added to this thread's lines (borrowed; NULL = none), while it handles a
 * request. */
void log_set_trace(const char *traceparent);
/* runBash's @args with env.TRACEPARENT = @traceparent added (a new reference; @args itself,
 * referenced, for other tools, without a traceparent, or when the call sets its own). NULL on
 * OOM. */
struct jv *trace_tool_args(const char *traceparent, const char *tool, const struct jv *args);
/* Copy @h into @rq->traceparent when it is a valid W3C traceparent (version 00-fe, non-zero
 * ids, lowercase hex); else leave it empty. */
void trace_accept(struct request *rq, const char *h);

/* ---- replies (http-status.c) ---- */
/* Keep @resp (taken) as the reply, unless one was made already. */
void reply_response(struct request *rq, unsigned status, struct MHD_Response *resp);
/* Append the newline every JSON reply ends with; takes @text, NULL on OOM; updates *@len. */
char *json_text_terminate(char *text, size_t *len);
/* Reply with JSON text already built in @sb (its buffer is taken). */
void reply_text(struct request *rq, unsigned status, struct strbuf *sb);
/* Reply with @body (reference taken). */
void reply_json(struct request *rq, unsigned status, struct jv *body);
/* {"error":{"message","kind":"request_error","details":{"code"}}}; counted in metrics. */
void reply_error(struct request *rq, unsigned status, const char *code, const char *fmt, ...)
        B4_PRINTF(4, 5);
/* As reply_error(), with the members of @details (taken; NULL = none) next to details.code. */
void reply_error_details(
        struct request *rq, unsigned status, const char *code, struct jv *details, const char *msg);
/* {"error":{"message"}} alone: a switched-off route answers as the reference's 404 does. */
void reply_error_bare(struct request *rq, unsigned status, const char *message);
/* Map a library error (negative errno + registry code) to a status and code, and reply. */
void reply_b4_error(struct request *rq, const struct b4_error *err);
/* Parse the body as a JSON object, or reply 400 invalid_request and return NULL. */
struct jv *request_json_object(struct request *rq);
/* Refuse keys of @obj not in @known (NULL-terminated); replies 400 and returns false. */
bool request_known_keys(struct request *rq, const struct jv *obj, const char *const *known);

/* ---- browser-origin checks (guard.c) ---- */
/* Remember the addresses the Host and Origin checks accept. Return: 0 or -ENOMEM. */
int guard_init(struct server *s, const char *listen_host, const char *bound);
void guard_free(struct server *s);
/* Host and Origin (TCP without threadAccess); replies and returns false on refusal. */
bool guard_browser(struct request *rq);
/* An Origin that is not this server's own, on any listener with or without threadAccess
 * (POST /mcp: Streamable HTTP's MUST); replies 403 and returns false. */
bool guard_origin(struct request *rq);
/* A body needs Content-Type: application/json; replies 415 and returns false. */
bool guard_content_type(struct request *rq);

/* ---- connections (conns.c) ---- */
enum conn_phase {
        CONN_HEADERS, /* waiting for a request's headers: server.headerTimeoutMs */
        CONN_BODY,    /* receiving its body: the given timeout */
        CONN_BUSY,    /* a handler runs or the reply is sent: no deadline */
};

int conns_new(unsigned max_per_addr, uint64_t header_timeout_ms, struct conns **ret);
struct conns *conns_free(struct conns *cs);
/* libmicrohttpd's connection notifications. */
void conns_opened(struct conns *cs, struct MHD_Connection *mc, void **socket_context);
void conns_closed(struct conns *cs, void **socket_context);
/* Enter @phase (@timeout_ms for CONN_BODY); @k may be NULL. */
void conns_phase(struct conns *cs, struct conn *k, enum conn_phase phase, uint64_t timeout_ms);
/* The record of @mc, or NULL. */
struct conn *conns_of(struct MHD_Connection *mc);

/* ---- access (access.c) ---- */
int access_load(struct server *s, struct b4_error *err);
void access_free(struct server *s);
/* Authenticate and authorise @rq for its route; replies and returns false on refusal. */
bool access_check(struct request *rq);
/* Whether the caller may see @owner's thread (list filtering). */
bool access_may_see(const struct request *rq, const char *owner);
/* Whether the headers phase of @rq asks the policy program (so it must leave the poll
 * thread: it may wait up to decisionTimeoutMs). */
bool access_defers(const struct request *rq);
/* Ask the policy program about a create naming a workspace, with @requested (borrowed:
 * {sourceDigest, environmentLinks?, baseline?}; uploadedBy is added here). true = allowed;
 * false = it replied. true at once without a program. */
bool access_check_workspace(struct request *rq, const struct jv *requested);

/* ---- the policy program (access-program.c) ---- */
struct access_decision {
        bool allow;
        unsigned status;  /* 400-499 from the answer; 0 = the default refusal */
        char *message;    /* owned; NULL = the default text */
        char *identity;   /* owned; NULL = none */
        char *stamp;      /* owned JSON object text; NULL = none */
        bool threads_set; /* the answer said "threads" */
        bool see_all;     /* ... and it was "all" */
};

void access_decision_clear(struct access_decision *d);
/* A program running @argv (borrowed; started at the first decision), @timeout_ms per
 * decision. Return: 0 or -ENOMEM. */
int access_program_new(char **argv, uint64_t timeout_ms, struct access_program **ret);
/* Close its stdin, give it a second to exit, kill it; NULL ok. Return: NULL. */
struct access_program *access_program_free(struct access_program *p);
/* Send @req (an object; "id" is set here) and read the decision into @d (cleared first; the
 * caller's on success). Return: 0; -ETIMEDOUT, -EBADMSG, -EMSGSIZE, -EPIPE, -EAGAIN (it is
 * being restarted), -ENOMEM or a spawn error: then the request is denied. */
int access_program_ask(struct access_program *p, struct jv *req, struct access_decision *d);

/* ---- routes ---- */
extern const struct route server_routes[];
extern const size_t server_n_routes;
void route_healthz(struct request *rq);
void route_metrics(struct request *rq);
void route_openapi(struct request *rq);
void route_thread_create(struct request *rq);
void route_thread_list(struct request *rq);
void route_thread_get(struct request *rq);
void route_thread_network(struct request *rq); /* routes-network.c */
void route_thread_delete(struct request *rq);
void route_thread_release(struct request *rq);
void route_thread_cancel(struct request *rq);
void route_runs(struct request *rq);
void route_tool(struct request *rq);
void route_permissions(struct request *rq);
/* routes-processes.c, routes-proc-logs.c: background processes */
void route_proc_start(struct request *rq);
void route_proc_list(struct request *rq);
void route_proc_get(struct request *rq);
void route_proc_logs(struct request *rq);
void route_proc_stdin(struct request *rq);
void route_proc_signal(struct request *rq);
void route_proc_wait(struct request *rq);
void route_proc_delete(struct request *rq);
struct b4_proc_info;
/* The JSON view of a process record. */
struct jv *proc_to_json(const struct b4_proc_info *i);
/* Reply with a process call's error (501 processes_unsupported, 404 process_not_found, ...). */
void reply_proc_error(struct request *rq, const struct b4_error *err);
/* The thread's sandbox for process calls, or NULL with a reply made. */
struct b4_sandbox *proc_sandbox(struct request *rq);
/* The {pid} parameter (404 and false when it is not one). */
bool proc_path_pid(struct request *rq, uint64_t *ret);
/* A query integer in [0, @max], @def when absent (400 and false when bad). */
bool proc_query_u64(
        struct request *rq, const char *name, uint64_t max, uint64_t def, uint64_t *ret);
/* routes-pause.c */
void route_thread_pause(struct request *rq);
void route_thread_resume(struct request *rq);
/* routes-staged.c */
void route_source_put(struct request *rq);
void route_sources_list(struct request *rq);
void route_source_get(struct request *rq);
void route_source_delete(struct request *rq);
bool staged_put_begin(struct request *rq);
void staged_put_end(struct request *rq);
uint64_t staged_upload_cap(const struct request *rq);
/* POST /threads naming a workspace (@w, borrowed): checks, creates and replies. */
void staged_thread_create(struct request *rq,
                          const struct jv *w,
                          const char *id,
                          const char *meta,
                          const char *parent);
/* routes-mcp.c: POST /mcp */
int mcp_route_init(struct server *s);
void mcp_route_free(struct server *s);
void route_mcp(struct request *rq);
bool route_mcp_begin(struct request *rq);
/* routes-check.c: GET /threads/{id}/check */
void route_thread_check(struct request *rq);
/* routes-readers.c: workspace readers over HTTP */
int readers_new(struct readers **ret);
/* Close every reader (server stop). NULL ok. Return: NULL. */
struct readers *readers_free(struct readers *rs);
/* Close the readers opened on @thread_id or reading its workspace (before its deletion). */
void readers_drop_thread(struct readers *rs, const char *thread_id);
void route_reader_open(struct request *rq);
void route_reader_fs(struct request *rq);
void route_reader_close(struct request *rq);

/* routes-fs.c: POST /threads/{id}/fs/{op} (reads) and its changes' own routes */
/* Where one filesystem read runs (routes-fs.c): @open replies and returns false on refusal,
 * else fills *ret (freed by the caller) and *held (handed to @close after the op). */
struct fs_host {
        bool (*open)(struct request *rq, void *ctx, struct b4_tools **ret, void **held);
        void (*close)(void *ctx, void *held);
        void *ctx;
        bool reads_only; /* the unknown-op refusal names the reads alone */
};

/* POST .../fs/@name: the read @name's body parsed (400), run on @host's tools, answered. */
void fs_route_read(struct request *rq, const char *name, const struct fs_host *host);
void route_fs(struct request *rq);
void route_fs_change(struct request *rq);
void route_workspace_inspect(struct request *rq);
/* The inspect route's headers-phase checks (its .begin hook); replies and returns false. */
bool route_inspect_admit(struct request *rq);
/* The JSON view of a thread row. */
struct jv *thread_to_json(struct request *rq, const struct b4_thread_row *row);

/* A call after its run was cancelled (routes-runs.c, run-events.c). */
#define RUN_CANCELLED_RESULT                                                  \
 "{\"ok\":false,\"error\":{\"code\":\"cancelled\",\"message\":\"the run was " \
 "cancelled\"}}"

/* ---- streamed runs (run-events.c) ---- */
/*
 * Answer @rq with a @format stream of @run's @calls ([{tool, args}], a reference is taken):
 * the 200 is its reply, the calls run after the handler returns, and the run (taken) ends
 * with them. @single: the one-call route (exit carries the call's document, not
 * {"results":[...]}). Return: 0, or -errno with a reply made and @run still the caller's.
 */
int run_events_start(struct request *rq,
                     enum stream_format format,
                     struct b4_run *run,
                     struct jv *calls,
                     bool single);

/* ---- metrics (metrics.c) ---- */
enum metrics_gauge {
        METRICS_GAUGE_STREAM_CLIENTS = 0,  /* stream.c: a streamed response, created to dropped */
        METRICS_COUNTER_PROCESSES_STARTED, /* routes-processes.c: background processes started */
        METRICS_GAUGE__COUNT,
};
struct metrics *metrics_new(void);
struct metrics *metrics_free(struct metrics *m);
/* The controls @pf (borrowed; NULL ok) reports NOT ENFORCED become gauges. */
void metrics_controls(struct metrics *m, const struct b4_preflight *pf);
void metrics_request(struct metrics *m, const char *route, unsigned status, uint64_t usec);
void metrics_refusal(struct metrics *m, const char *code);
/* @code: the failed call's code (NULL when ok). */
void metrics_tool_call(
        struct metrics *m, const char *tool, bool ok, const char *code, uint64_t usec);
/* A runtime event (b4_runtime_options.observe, through server_observe()). */
void metrics_event(struct metrics *m, enum b4_runtime_event ev, uint64_t usec);
void metrics_gauge_add(struct metrics *m, enum metrics_gauge g, int64_t delta);
/* Prometheus text exposition; *ret is heap. */
int metrics_render(struct metrics *m, struct b4_runtime *rt, char **ret);
/* The network audit's totals over every thread (routes-network.c), for metrics_render(). */
void network_metrics_render(struct b4_runtime *rt, struct strbuf *sb);
