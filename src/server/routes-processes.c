/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background processes of a thread (docs/http-api.md, "Background processes"):
 *   POST   /threads/{id}/processes                 start: 201 {pid, tag, startedMs}
 *   GET    /threads/{id}/processes                 {processes: [view...]}
 *   GET    /threads/{id}/processes/{pid}           view
 *   GET    /threads/{id}/processes/{pid}/logs      ?from=OFFSET&follow=1; SSE or NDJSON by
 *                                                  Accept (follow), else text/plain bytes
 *   POST   /threads/{id}/processes/{pid}/stdin     {text | b64, eof?}
 *   POST   /threads/{id}/processes/{pid}/signal    {signal: "TERM"|"KILL"|"INT"|"HUP"|...}
 *   POST   /threads/{id}/processes/{pid}/wait      ?timeoutMs= (long poll): the view
 *   DELETE /threads/{id}/processes/{pid}           kill and forget (record and spool)
 * They hold no run slot: the sandbox comes from b4_runtime_procs_sandbox().
 */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/macro.h"
#include "server-internal.h"

#define WAIT_MAX_MS    600000u /* the longest ?timeoutMs= of wait */
#define PROC_ENV_MAX   1024u
#define PROC_STDIN_MAX (1024u * 1024)

struct jv *proc_to_json(const struct b4_proc_info *i)
{
        return jv_pack("{s:I, s:s?, s:s, s:s, s:o, s:b, s:b, s:b, s:b, s:I, s:o, s:I}", "pid",
                       (int64_t)i->pid, "tag", i->tag, "command", i->command, "state",
                       i->running ? "running" : "exited", "exitCode",
                       i->running ? jv_null_new() : jv_integer_new(i->exit_code), "timedOut",
                       i->timed_out, "released", i->released, "stdinOpen", i->stdin_open,
                       "truncated", i->truncated, "startedMs", (int64_t)i->started_ms, "endedMs",
                       i->running ? jv_null_new() : jv_integer_new(i->ended_ms), "bytes",
                       (int64_t)i->bytes);
}

/* Reply with @err, naming a provider without processes and an unknown pid. */
void reply_proc_error(struct request *rq, const struct b4_error *err)
{
        if (err->error == -EOPNOTSUPP)
                reply_error(rq, 501, "processes_unsupported", "%s", err->msg);
        else if (err->error == -ESRCH)
                reply_error(rq, 404, "process_not_found", "%s", err->msg);
        else if (err->error == -EPIPE)
                reply_error(rq, 409, "stdin_closed", "%s", err->msg);
        else if (err->error == -ENOSPC)
                reply_error(rq, 409, "too_many_processes", "%s", err->msg);
        else if (err->error == -EACCES)
                reply_error(rq, 403, "permission_denied", "%s", err->msg);
        else if (err->error == -EPERM)
                reply_error(rq, 403, "permission_required", "%s", err->msg);
        else if (err->error == -ENOTDIR || err->error == -EINVAL)
                reply_error(rq, 400, "invalid_request", "%s", err->msg);
        else
                reply_b4_error(rq, err);
}

/* The thread's sandbox, or a reply made and NULL. */
struct b4_sandbox *proc_sandbox(struct request *rq)
{
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        if (b4_runtime_procs_sandbox(rq->srv->opts.runtime, rq->thread.id, &sb, &err) < 0) {
                reply_b4_error(rq, &err);
                return NULL;
        }
        if (!b4_sandbox_has_procs(sb)) {
                reply_error(rq, 501, "processes_unsupported",
                            "Sandbox provider \"%s\" does not support background processes",
                            rq->srv->opts.provider_name);
                return b4_sandbox_unref(sb);
        }
        return sb;
}

/* The {pid} path parameter, or a 404 reply and false. */
bool proc_path_pid(struct request *rq, uint64_t *ret)
{
        const char *s = rq->params[1];
        char *end = NULL;

        errno = 0;
        *ret = s && *s >= '1' && *s <= '9' ? strtoull(s, &end, 10) : 0;
        if (!*ret || errno || !end || *end) {
                reply_error(rq, 404, "process_not_found", "no background process '%s'", s ? s : "");
                return false;
        }
        return true;
}

/* A non-negative integer query argument, @def when absent; false with a 400 reply. */
bool proc_query_u64(struct request *rq, const char *name, uint64_t max, uint64_t def, uint64_t *ret)
{
        const char *s = MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
        char *end = NULL;

        *ret = def;
        if (!s)
                return true;
        errno = 0;
        *ret = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
        if (!end || *end || errno || *ret > max) {
                reply_error(rq, 400, "invalid_request", "%s must be an integer from 0 to %llu",
                            name, (unsigned long long)max);
                return false;
        }
        return true;
}

/* ---- start ---- */

/* The start body's members as a request; strings borrowed from @body. */
static bool parse_start(struct request *rq,
                        const struct jv *body,
                        struct b4_proc_req *req,
                        struct b4_env_var **ret_env)
{
        static const char *const known[] = { "command", "cwd",       "env", "stdin",
                                             "tag",     "timeoutMs", NULL };
        const struct jv *cmd = jv_object_get(body, "command"), *cwd = jv_object_get(body, "cwd");
        const struct jv *env = jv_object_get(body, "env"), *in = jv_object_get(body, "stdin");
        const struct jv *tag = jv_object_get(body, "tag"), *to = jv_object_get(body, "timeoutMs");
        size_t i = 0;

        if (!request_known_keys(rq, body, known))
                return false;
        if (!cmd || !jv_is_string(cmd) || !*jv_string(cmd) ||
            strlen(jv_string(cmd)) != jv_string_length(cmd)) {
                reply_error(rq, 400, "invalid_request", "command must be a non-empty string");
                return false;
        }
        if ((cwd && !jv_is_string(cwd)) || (tag && !jv_is_string(tag)) || (in && !jv_is_bool(in)) ||
            (env && !jv_is_object(env)) ||
            (to && (!jv_is_safe_integer(to) || jv_integer(to) < 0))) {
                reply_error(rq, 400, "invalid_request",
                            "cwd and tag are strings, stdin a boolean, env an object of strings, "
                            "timeoutMs a non-negative integer");
                return false;
        }
        if (env && jv_object_size(env) > PROC_ENV_MAX) {
                reply_error(rq, 400, "invalid_request", "env has more than %u variables",
                            PROC_ENV_MAX);
                return false;
        }
        *ret_env = env ? b4_calloc(jv_object_size(env) + 1, sizeof(**ret_env)) : NULL;
        for (void *it = env ? jv_object_iter(env) : NULL; it; it = jv_object_next(env, it), i++) {
                if (!jv_is_string(jv_iter_value(it))) {
                        reply_error(rq, 400, "invalid_request", "env values must be strings");
                        return false;
                }
                (*ret_env)[i] =
                        (struct b4_env_var){ .name = (char *)jv_iter_key(it),
                                             .value = (char *)jv_string(jv_iter_value(it)) };
        }
        *req = (struct b4_proc_req){ .command = jv_string(cmd),
                                     .cwd = cwd ? jv_string(cwd) : NULL,
                                     .env = *ret_env,
                                     .n_env = i,
                                     .stdin_pipe = in && jv_is_true(in),
                                     .tag = tag ? jv_string(tag) : NULL,
                                     .timeout_ms = to ? (uint64_t)jv_integer(to) : 0 };
        return true;
}

void route_proc_start(struct request *rq)
{
        cleanup_(jv_unrefp) struct jv *body = request_json_object(rq);
        cleanup_free struct b4_env_var *env = NULL;
        struct b4_proc_info info = { 0 };
        struct b4_error err = { 0 };
        struct b4_proc_req req;
        struct b4_sandbox *sb;

        if (!body || !parse_start(rq, body, &req, &env) || !(sb = proc_sandbox(rq)))
                return;
        if (b4_runtime_proc_start(rq->srv->opts.runtime, rq->thread.id, &req, &info, &err) < 0) {
                reply_proc_error(rq, &err);
        } else {
                metrics_gauge_add(rq->srv->metrics, METRICS_COUNTER_PROCESSES_STARTED, 1);
                reply_json(rq, 201,
                           jv_pack("{s:I, s:s?, s:I}", "pid", (int64_t)info.pid, "tag", info.tag,
                                   "startedMs", (int64_t)info.started_ms));
        }
        b4_proc_info_clear(&info);
        b4_sandbox_unref(sb);
}

/* ---- views ---- */

void route_proc_list(struct request *rq)
{
        struct b4_proc_info *v = NULL;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb = proc_sandbox(rq);
        size_t n = 0;

        if (!sb)
                return;
        if (b4_sandbox_proc_list(sb, &v, &n, &err) < 0) {
                reply_proc_error(rq, &err);
        } else {
                struct jv *arr = jv_array_new();
                for (size_t i = 0; arr && i < n; i++)
                        if (jv_array_append_new(arr, proc_to_json(&v[i])) < 0)
                                arr = jv_unref(arr);
                reply_json(rq, 200, jv_pack("{s:o}", "processes", arr));
        }
        b4_proc_infos_free(v, n);
        b4_sandbox_unref(sb);
}

void route_proc_get(struct request *rq)
{
        struct b4_proc_info info = { 0 };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        uint64_t pid;

        if (!proc_path_pid(rq, &pid) || !(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_get(sb, pid, &info, &err) < 0)
                reply_proc_error(rq, &err);
        else
                reply_json(rq, 200, proc_to_json(&info));
        b4_proc_info_clear(&info);
        b4_sandbox_unref(sb);
}

void route_proc_wait(struct request *rq)
{
        struct b4_proc_info info = { 0 };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        uint64_t pid, timeout;

        if (!proc_path_pid(rq, &pid) ||
            !proc_query_u64(rq, "timeoutMs", WAIT_MAX_MS, 30000, &timeout) ||
            !(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_wait(sb, pid, timeout, NULL, &info, &err) < 0)
                reply_proc_error(rq, &err);
        else
                reply_json(rq, 200, proc_to_json(&info));
        b4_proc_info_clear(&info);
        b4_sandbox_unref(sb);
}

/* ---- stdin, signal, delete ---- */

/* The bytes of a stdin body: "text" (a string) or "b64" (canonical base64), not both; none
 * with eof alone. *ret heap (NULL for none). False with a reply made. */
static bool stdin_bytes(struct request *rq, const struct jv *body, char **ret, size_t *ret_len)
{
        const struct jv *text = jv_object_get(body, "text"), *b64 = jv_object_get(body, "b64");
        const struct jv *eof = jv_object_get(body, "eof");

        *ret = NULL;
        *ret_len = 0;
        if ((text && !jv_is_string(text)) || (b64 && !jv_is_string(b64)) || (text && b64) ||
            (eof && !jv_is_bool(eof)) || (!text && !b64 && !eof)) {
                reply_error(rq, 400, "invalid_request",
                            "stdin takes text (a string) or b64 (base64), and/or eof (a boolean)");
                return false;
        }
        if (b64 && base64_decode(jv_string(b64), jv_string_length(b64), ret, ret_len) < 0) {
                reply_error(rq, 400, "invalid_request", "b64 is not canonical base64");
                return false;
        }
        if (text) {
                *ret = b4_memdup(jv_string(text), jv_string_length(text) + 1);
                *ret_len = jv_string_length(text);
                if (!*ret) {
                        reply_error(rq, 500, "internal_error", "out of memory");
                        return false;
                }
        }
        if (*ret_len > PROC_STDIN_MAX) {
                reply_error(rq, 413, "payload_too_large", "stdin data is over %u bytes",
                            PROC_STDIN_MAX);
                free(*ret);
                return false;
        }
        return true;
}

void route_proc_stdin(struct request *rq)
{
        static const char *const known[] = { "text", "b64", "eof", NULL };
        cleanup_(jv_unrefp) struct jv *body = request_json_object(rq);
        cleanup_free char *data = NULL;
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        size_t len = 0;
        uint64_t pid;

        if (!body || !request_known_keys(rq, body, known) || !proc_path_pid(rq, &pid) ||
            !stdin_bytes(rq, body, &data, &len) || !(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_stdin(sb, pid, data, len, jv_is_true(jv_object_get(body, "eof")),
                                  &err) < 0)
                reply_proc_error(rq, &err);
        else
                reply_json(rq, 200, jv_pack("{s:b}", "written", true));
        b4_sandbox_unref(sb);
}

static const struct {
        const char *name;
        int sig;
} signals[] = {
        { "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT },
        { "HUP", SIGHUP },   { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 },
        { "USR2", SIGUSR2 }, { "STOP", SIGSTOP }, { "CONT", SIGCONT },
};

static int signal_of(const char *name)
{
        if (strncmp(name, "SIG", 3) == 0)
                name += 3;
        for (size_t i = 0; i < ELEMENTSOF(signals); i++)
                if (strcmp(signals[i].name, name) == 0)
                        return signals[i].sig;
        return -EINVAL;
}

void route_proc_signal(struct request *rq)
{
        static const char *const known[] = { "signal", NULL };
        cleanup_(jv_unrefp) struct jv *body = request_json_object(rq);
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        const struct jv *s;
        uint64_t pid;
        int sig;

        if (!body || !request_known_keys(rq, body, known) || !proc_path_pid(rq, &pid))
                return;
        s = jv_object_get(body, "signal");
        sig = s && jv_is_string(s) ? signal_of(jv_string(s)) : -EINVAL;
        if (sig < 0) {
                reply_error(rq, 400, "invalid_request",
                            "signal must be one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, "
                            "CONT");
                return;
        }
        if (!(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_signal(sb, pid, sig, &err) < 0)
                reply_proc_error(rq, &err);
        else
                reply_json(rq, 200, jv_pack("{s:b}", "signalled", true));
        b4_sandbox_unref(sb);
}

void route_proc_delete(struct request *rq)
{
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        uint64_t pid;

        if (!proc_path_pid(rq, &pid) || !(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_forget(sb, pid, &err) < 0)
                reply_proc_error(rq, &err);
        else
                reply_json(rq, 200, jv_pack("{s:b}", "deleted", true));
        b4_sandbox_unref(sb);
}
