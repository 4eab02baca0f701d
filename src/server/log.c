/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's log lines (server_log()): logfmt (`key=value`, values quoted when they hold
 * a space, '=', '"' or nothing) or JSON objects, one line per event on stderr. Control bytes
 * in values are replaced by '?' (logfmt) or escaped (JSON), so a request path cannot forge a
 * line. The traceparent of the request a thread is handling (log_set_trace()) is added as
 * `traceparent`.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/macro.h"
#include "base/strbuf.h"
#include "server-internal.h"

#define LINE_MAX_BYTES (16u * 1024u)

static enum server_log_format log_format;
static _Thread_local const char *log_trace; /* borrowed from the request being handled */

void server_log_set_format(enum server_log_format f)
{
        log_format = f;
}

void log_set_trace(const char *traceparent)
{
        log_trace = traceparent;
}

static bool needs_quotes(const char *v)
{
        return !*v || strpbrk(v, " =\"\\\t") != NULL;
}

static void add_logfmt(struct strbuf *sb, const char *key, const char *v)
{
        bool q = needs_quotes(v);

        (void)strbuf_addf(sb, " %s=%s", key, q ? "\"" : "");
        for (const char *p = v; *p; p++) {
                if (*p == '"' || *p == '\\')
                        (void)strbuf_add(sb, "\\", 1);
                (void)strbuf_add(sb, (unsigned char)*p < 0x20 || *p == 0x7f ? "?" : p, 1);
        }
        if (q)
                (void)strbuf_add(sb, "\"", 1);
}

static void add_json(struct strbuf *sb, const char *key, const char *v)
{
        (void)strbuf_add(sb, ",", 1);
        (void)jv_append_string(sb, key, strlen(key));
        (void)strbuf_add(sb, ":", 1);
        (void)jv_append_string(sb, v, strlen(v));
}

static void add(struct strbuf *sb, const char *key, const char *v)
{
        if (log_format == SERVER_LOG_JSON)
                add_json(sb, key, v);
        else
                add_logfmt(sb, key, v);
}

static void timestamp(char buf[40])
{
        struct timeval tv;
        struct tm tm;
        size_t n;

        (void)gettimeofday(&tv, NULL);
        (void)gmtime_r(&tv.tv_sec, &tm);
        n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        (void)snprintf(buf + n, 40 - n, ".%03dZ", (int)(tv.tv_usec / 1000) % 1000);
}

static void begin(struct strbuf *sb, const char *level, const char *msg)
{
        char ts[40];

        timestamp(ts);
        if (log_format == SERVER_LOG_JSON) {
                (void)strbuf_adds(sb, "{\"ts\":\"");
                (void)strbuf_adds(sb, ts);
                (void)strbuf_add(sb, "\"", 1);
                add_json(sb, "level", level);
                add_json(sb, "msg", msg);
                return;
        }
        (void)strbuf_addf(sb, "ts=%s level=%s", ts, level);
        add_logfmt(sb, "msg", msg);
}

void server_log(const char *level, const char *msg, ...)
{
        struct strbuf sb;
        const char *k;
        va_list ap;
        char *line = NULL;
        size_t len = 0;

        strbuf_init(&sb, LINE_MAX_BYTES);
        begin(&sb, level, msg);
        va_start(ap, msg);
        while ((k = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);

                if (v)
                        add(&sb, k, v);
        }
        va_end(ap);
        if (log_trace)
                add(&sb, "traceparent", log_trace);
        (void)strbuf_adds(&sb, log_format == SERVER_LOG_JSON ? "}\n" : "\n");
        if (strbuf_detach(&sb, &line, &len) < 0) /* over the cap or out of memory */
                return;
        (void)fwrite(line, 1, len, stderr);
        free(line);
}

/* @n lowercase hex digits; *@zero when all are '0'. */
static bool hex_only(const char *s, size_t n, bool *zero)
{
        *zero = true;
        for (size_t i = 0; i < n; i++) {
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
                *zero = *zero && s[i] == '0';
        }
        return true;
}

void trace_accept(struct request *rq, const char *h)
{
        bool zero;

        rq->traceparent[0] = '\0';
        if (!h || strlen(h) != TRACEPARENT_LEN || h[2] != '-' || h[35] != '-' || h[52] != '-')
                return;
        if (!hex_only(h, 2, &zero) || strncmp(h, "ff", 2) == 0) /* version; ff is invalid */
                return;
        if (!hex_only(h + 3, 32, &zero) || zero) /* trace-id */
                return;
        if (!hex_only(h + 36, 16, &zero) || zero) /* parent-id */
                return;
        if (!hex_only(h + 53, 2, &zero)) /* flags */
                return;
        memcpy(rq->traceparent, h, TRACEPARENT_LEN + 1);
}

struct jv *trace_tool_args(const char *traceparent, const char *tool, const struct jv *args)
{
        struct jv *copy, *env;

        if (!traceparent || !*traceparent || strcmp(tool, "runBash") != 0 || !jv_is_object(args))
                return jv_ref((struct jv *)args);
        env = jv_object_get(args, "env");
        if (env && (!jv_is_object(env) || jv_object_get(env, "TRACEPARENT")))
                return jv_ref((struct jv *)args); /* the caller's own, or its error, stands */
        copy = jv_object_new();
        for (void *it = jv_object_iter(args); copy && it; it = jv_object_next(args, it))
                if (strcmp(jv_iter_key(it), "env") != 0 &&
                    jv_object_set_new(copy, jv_iter_key(it), jv_ref(jv_iter_value(it))) < 0)
                        copy = jv_unref(copy);
        env = jv_object_new();
        for (void *it = jv_object_iter(jv_object_get(args, "env")); env && it;
             it = jv_object_next(jv_object_get(args, "env"), it))
                if (jv_object_set_new(env, jv_iter_key(it), jv_ref(jv_iter_value(it))) < 0)
                        env = jv_unref(env);
        if (!copy || !env ||
            jv_object_set_new(env, "TRACEPARENT", jv_string_new(traceparent)) < 0 ||
            jv_object_set_new(copy, "env", env) < 0) {
                jv_unref(copy);
                return NULL;
        }
        return copy;
}
