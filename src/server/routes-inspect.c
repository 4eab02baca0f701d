/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /threads/{id}/workspace/inspect (reference §6.2), served with sandbox.workspaceRead.
 *
 * Order: access policy and thread (access_check) -> option off: 404 {"error":{"message":
 * "Not found"}} (route_inspect_admit, still before the body) -> body <= 64 KiB -> options
 * (refused, never lowered) -> the thread's run slot (409 run_in_flight both ways) -> the
 * read on a worker thread, bounded by workspaceReadTimeoutMs (504, slot freed) and
 * POST /threads/{id}/cancel (409 read_cancelled, slot freed) -> ignorePrefixes -> the 64 MiB
 * answer cap (422) -> 200 with cache-control: no-store.
 *
 * The worker owns everything it touches (a context shared by reference count), so an
 * abandoned read finishes in the background with nothing freed under it; server_free()
 * waits for such workers (inspect_workers_drain()).
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/inspect.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "server-internal.h"

#define MAX_LIST_ITEMS     64
#define MAX_NAME_CHARS     1024
#define MAX_TARGET_CHARS   4096
#define MAX_ENTRIES_CAP    10000
#define MAX_FILE_BYTES_CAP (16u * 1024u * 1024u)
#define MAX_TOTAL_CAP      (32u * 1024u * 1024u)

/* What one read needs; shared by the handler and the worker (refs). */
struct inspect_job {
        pthread_mutex_t lock;
        unsigned refs;
        struct b4_provider *provider;
        char *key; /* whose workspace: the thread's root ancestor */
        char *root;
        char **exclude;
        char **ignore;
        struct b4_root_symlink *links;
        size_t n_links;
        struct b4_inspect_options o;
        bool consistent;
        struct b4_cancel *cancel; /* fired by thread cancel, the deadline, or shutdown */
        struct b4_cancel *done;   /* fired by the worker */
        int r;
        struct b4_inspection insp;
        struct b4_inspect_failure fail;
        struct b4_error err;
};

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t workers_cond = PTHREAD_COND_INITIALIZER;
static unsigned workers;

static void job_unref(struct inspect_job *j)
{
        bool last;

        (void)pthread_mutex_lock(&j->lock);
        last = --j->refs == 0;
        (void)pthread_mutex_unlock(&j->lock);
        if (!last)
                return;
        for (size_t i = 0; i < j->n_links; i++) {
                free((char *)j->links[i].name);
                free((char *)j->links[i].target);
        }
        free(j->links);
        free(j->key);
        free(j->root);
        strv_free(j->exclude);
        strv_free(j->ignore);
        b4_inspection_clear(&j->insp);
        b4_cancel_free(j->cancel);
        b4_cancel_free(j->done);
        (void)pthread_mutex_destroy(&j->lock);
        free(j);
}

static struct inspect_job *job_new(void)
{
        struct inspect_job *j = b4_calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        (void)pthread_mutex_init(&j->lock, NULL);
        j->refs = 1;
        b4_inspect_options_init(&j->o);
        j->cancel = b4_cancel_new();
        j->done = b4_cancel_new();
        if (!j->cancel || !j->done) {
                job_unref(j);
                return NULL;
        }
        j->o.cancel = j->cancel;
        return j;
}

static void *worker_main(void *arg)
{
        struct inspect_job *j = arg;

        j->r = b4_inspect_thread(j->provider, j->key, &j->o, j->consistent, &j->insp, &j->fail,
                                 &j->err);
        b4_cancel_fire(j->done);
        job_unref(j);
        (void)pthread_mutex_lock(&workers_lock);
        workers--;
        (void)pthread_cond_broadcast(&workers_cond);
        (void)pthread_mutex_unlock(&workers_lock);
        return NULL;
}

void inspect_workers_drain(uint64_t timeout_ms)
{
        uint64_t deadline = now_msec() + timeout_ms;

        (void)pthread_mutex_lock(&workers_lock);
        while (workers > 0 && now_msec() < deadline) {
                struct timespec ts;
                (void)clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 50 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                (void)pthread_cond_timedwait(&workers_cond, &workers_lock, &ts);
        }
        (void)pthread_mutex_unlock(&workers_lock);
}

/* ---- replies ---- */

/* The error shape with extra details (root/kind, maxBytes). Takes @details. */
static void refuse_with(
        struct request *rq, unsigned status, const char *code, struct jv *details, const char *msg)
{
        reply_error_details(rq, status, code, details, msg);
}

bool route_inspect_admit(struct request *rq)
{
        if (rq->srv->config->sandbox.workspace_read)
                return true;
        reply_error_bare(rq, 404, "Not found");
        return false;
}

/* The 200: compact JSON with cache-control: no-store. Takes @text. */
static void reply_no_store(struct request *rq, char *text)
{
        size_t len = strlen(text);
        struct MHD_Response *resp = NULL;

        text = json_text_terminate(text, &len);
        if (text)
                resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(text);
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        (void)MHD_add_response_header(resp, "Content-Type", "application/json");
        (void)MHD_add_response_header(resp, "Cache-Control", "no-store");
        reply_response(rq, 200, resp);
}

/* ---- the body ---- */

/* Length in UTF-16 code units (JavaScript's String.length). */
static size_t js_length(const char *s)
{
        size_t n = 0;

        for (const unsigned char *c = (const unsigned char *)s; *c; c++)
                if ((*c & 0xc0) != 0x80)
                        n += *c >= 0xf0 ? 2 : 1;
        return n;
}

static bool bounded_string(const struct jv *v, size_t max)
{
        const char *s = jv_string(v);

        return s && *s && jv_string_length(v) == strlen(s) && js_length(s) <= max;
}

/* An array of at most 64 non-empty strings of at most 1024 chars into *ret. */
static bool string_list(struct request *rq, const struct jv *v, const char *key, char ***ret)
{
        size_t n = jv_array_size(v);

        if (!jv_is_array(v) || n > MAX_LIST_ITEMS)
                goto bad;
        for (size_t i = 0; i < n; i++) {
                const struct jv *s = jv_array_get(v, i);
                if (!bounded_string(s, MAX_NAME_CHARS))
                        goto bad;
                if (strcmp(key, "ignorePrefixes") == 0 && jv_string(s)[0] == '/') {
                        reply_error(rq, 400, "invalid_request",
                                    "ignorePrefixes must be relative to the root (got: %s)",
                                    jv_string(s));
                        return false;
                }
                if (strv_extend(ret, jv_string(s)) < 0) {
                        reply_error(rq, 500, "internal_error", "out of memory");
                        return false;
                }
        }
        return true;
bad:
        reply_error(rq, 400, "invalid_request",
                    "%s must be an array of at most %d non-empty strings of at most %d characters",
                    key, MAX_LIST_ITEMS, MAX_NAME_CHARS);
        return false;
}

static bool links_option(struct request *rq, const struct jv *v, struct inspect_job *j)
{
        size_t n = jv_object_size(v), k = 0;

        if (!jv_is_object(v) || n > MAX_LIST_ITEMS) {
                reply_error(rq, 400, "invalid_request",
                            "expectedRootSymlinks must be an object of at most %d names",
                            MAX_LIST_ITEMS);
                return false;
        }
        j->links = b4_calloc(n ? n : 1, sizeof(*j->links));
        if (!j->links)
                return false;
        for (void *it = jv_object_iter(v); it; it = jv_object_next(v, it), k++) {
                const struct jv *t = jv_iter_value(it);
                if (!bounded_string(t, MAX_TARGET_CHARS)) {
                        reply_error(rq, 400, "invalid_request",
                                    "Invalid symlink target: %s (a non-empty string of at most "
                                    "%d characters)",
                                    jv_iter_key(it), MAX_TARGET_CHARS);
                        return false;
                }
                j->links[k].name = b4_strdup(jv_iter_key(it));
                j->links[k].target = b4_strdup(jv_string(t));
                j->n_links++;
                if (!j->links[k].name || !j->links[k].target)
                        return false;
        }
        j->o.expected = j->links;
        j->o.n_expected = j->n_links;
        return true;
}

static bool limit_option(
        struct request *rq, const struct jv *v, const char *key, uint64_t max, uint64_t *ret)
{
        if (!jv_is_safe_integer(v) || jv_integer(v) < 0 || (uint64_t)jv_integer(v) > max) {
                reply_error(rq, 400, "invalid_request", "%s must be an integer from 0 to %llu", key,
                            (unsigned long long)max);
                return false;
        }
        *ret = (uint64_t)jv_integer(v);
        return true;
}

static bool root_option(struct request *rq, const struct jv *v, struct inspect_job *j)
{
        cleanup_free char *q = NULL;

        if (jv_is_string(v) && jv_string_length(v) == strlen(jv_string(v)) &&
            b4_inspect_root_is_canonical(jv_string(v))) {
                j->root = b4_strdup(jv_string(v));
                j->o.root = j->root;
                return j->root != NULL;
        }
        (void)jv_dump(v, 0, &q);
        reply_error(rq, 400, "invalid_request", "Invalid workspace inspection root: %s",
                    q ? q : "?");
        return false;
}

static bool one_option(struct request *rq, const char *k, const struct jv *v, struct inspect_job *j)
{
        if (strcmp(k, "root") == 0)
                return root_option(rq, v, j);
        if (strcmp(k, "excludeRootDirectories") == 0)
                return string_list(rq, v, k, &j->exclude) && ((j->o.exclude_root = j->exclude), 1);
        if (strcmp(k, "expectedRootSymlinks") == 0)
                return links_option(rq, v, j);
        if (strcmp(k, "ignorePrefixes") == 0)
                return string_list(rq, v, k, &j->ignore);
        if (strcmp(k, "maxEntries") == 0)
                return limit_option(rq, v, k, MAX_ENTRIES_CAP, &j->o.max_entries);
        if (strcmp(k, "maxFileBytes") == 0)
                return limit_option(rq, v, k, MAX_FILE_BYTES_CAP, &j->o.max_file_bytes);
        if (strcmp(k, "maxTotalBytes") == 0)
                return limit_option(rq, v, k, MAX_TOTAL_CAP, &j->o.max_total_bytes);
        if (strcmp(k, "consistent") == 0) {
                if (!jv_is_bool(v)) {
                        reply_error(rq, 400, "invalid_request", "consistent must be a boolean");
                        return false;
                }
                j->consistent = jv_is_true(v);
                return true;
        }
        reply_error(rq, 400, "invalid_request", "Unknown workspace read option: %s", k);
        return false;
}

static bool parse_options(struct request *rq, struct inspect_job *j)
{
        cleanup_(jv_unrefp) struct jv *body =
                rq->body.len ? request_json_object(rq) : jv_object_new();

        if (!body)
                return false;
        for (void *it = jv_object_iter(body); it; it = jv_object_next(body, it))
                if (!one_option(rq, jv_iter_key(it), jv_iter_value(it), j)) {
                        if (!rq->replied)
                                reply_error(rq, 500, "internal_error", "out of memory");
                        return false;
                }
        return true;
}

/* ---- the read ---- */

enum outcome {
        OUTCOME_DONE,
        OUTCOME_CANCELLED,
        OUTCOME_TIMED_OUT,
};

static enum outcome wait_job(struct inspect_job *j, uint64_t timeout_ms)
{
        uint64_t deadline = now_msec() + timeout_ms;

        for (;;) {
                struct pollfd p[2] = { { .fd = b4_cancel_fd(j->done), .events = POLLIN },
                                       { .fd = b4_cancel_fd(j->cancel), .events = POLLIN } };
                uint64_t now = now_msec();

                if (b4_cancel_is_set(j->done))
                        return OUTCOME_DONE;
                if (b4_cancel_is_set(j->cancel))
                        return OUTCOME_CANCELLED;
                if (now >= deadline)
                        return OUTCOME_TIMED_OUT;
                (void)poll(p, 2, (int)(deadline - now > 1000 ? 1000 : deadline - now));
        }
}

static bool start_worker(struct inspect_job *j)
{
        pthread_attr_t attr;
        pthread_t tid;
        int r;

        j->refs++; /* the worker's; no other thread sees j yet */
        (void)pthread_mutex_lock(&workers_lock);
        workers++;
        (void)pthread_mutex_unlock(&workers_lock);
        (void)pthread_attr_init(&attr);
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&tid, &attr, worker_main, j);
        (void)pthread_attr_destroy(&attr);
        if (r == 0)
                return true;
        j->refs--;
        (void)pthread_mutex_lock(&workers_lock);
        workers--;
        (void)pthread_mutex_unlock(&workers_lock);
        return false;
}

static int add_quoted(struct strbuf *sb, const char *key, const char *value)
{
        cleanup_free char *q = NULL;

        if (!value)
                return strbuf_addf(sb, ",\"%s\":null", key);
        if (jv_quote(value, &q) < 0)
                return -ENOMEM;
        return strbuf_addf(sb, ",\"%s\":%s", key, q);
}

/* {threadId, sourceDigest, intentDigest, root?, inspection}; -E2BIG past the 64 MiB cap. */
static int answer_text(struct request *rq, struct inspect_job *j, struct strbuf *sb)
{
        cleanup_free char *insp = NULL, *id = NULL;
        int r;

        r = b4_inspection_to_json(&j->insp, j->ignore, &insp);
        if (r >= 0)
                r = jv_quote(rq->thread.id, &id);
        if (r >= 0)
                r = strbuf_addf(sb, "{\"threadId\":%s", id);
        /* The digests recorded at admission; provider-storage mode has none (null). */
        struct b4_association a = { 0 };
        (void)b4_store_association_get(rq->srv->opts.store, j->key, &a, NULL);
        if (r >= 0)
                r = add_quoted(sb, "sourceDigest", a.source_digest);
        if (r >= 0)
                r = add_quoted(sb, "intentDigest", a.intent_digest);
        b4_association_clear(&a);
        if (r >= 0 && j->root)
                r = add_quoted(sb, "root", j->root);
        if (r >= 0)
                r = strbuf_adds(sb, ",\"inspection\":");
        if (r >= 0)
                r = strbuf_adds(sb, insp);
        if (r >= 0)
                r = strbuf_addc(sb, '}');
        return r;
}

static void answer_ok(struct request *rq, struct inspect_job *j)
{
        struct strbuf sb;
        int r;

        strbuf_init(&sb, B4_INSPECT_RESPONSE_MAX_BYTES);
        r = answer_text(rq, j, &sb);
        if (r == -E2BIG) {
                struct jv *d = jv_object_new();
                if (d)
                        (void)jv_object_set_new(d, "maxBytes",
                                                jv_integer_new(B4_INSPECT_RESPONSE_MAX_BYTES));
                refuse_with(rq, 422, "workspace_response_too_large", d,
                            "The workspace inspection exceeds the response limit of 67108864 "
                            "bytes");
        } else if (r < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
        } else {
                char *text = NULL;
                size_t len = 0;
                if (strbuf_detach(&sb, &text, &len) < 0)
                        reply_error(rq, 500, "internal_error", "out of memory");
                else
                        reply_no_store(rq, text);
        }
        strbuf_release(&sb);
}

static void answer_refusal(struct request *rq, struct inspect_job *j)
{
        struct jv *d = NULL;

        switch (j->fail.code) {
        case B4_INSPECT_ROOT_MISSING:
                d = jv_object_new();
                if (d) {
                        (void)jv_object_set_new(d, "root", jv_string_new(j->root));
                        (void)jv_object_set_new(d, "kind",
                                                jv_string_new(j->fail.kind == B4_ROOT_ABSENT
                                                                      ? "absent"
                                                                      : "not_directory"));
                }
                refuse_with(rq, 422, "workspace_root_missing", d, j->err.msg);
                return;
        case B4_INSPECT_REFUSED:
                refuse_with(rq, 422, "workspace_inspection_refused", NULL, j->err.msg);
                return;
        case B4_INSPECT_CHANGED:
                refuse_with(rq, 409, "workspace_changed", NULL, j->err.msg);
                return;
        case B4_INSPECT_INVALID_OPTIONS:
        case B4_INSPECT_NONE:
                break;
        }
        refuse_with(rq, 400, "invalid_request", NULL, j->err.msg);
}

static void answer(struct request *rq, struct inspect_job *j, enum outcome out)
{
        if (out == OUTCOME_TIMED_OUT)
                refuse_with(rq, 504, "workspace_read_timeout", NULL,
                            "The workspace read did not finish within workspaceReadTimeoutMs");
        else if (out == OUTCOME_CANCELLED || j->r == -ECANCELED)
                refuse_with(rq, 409, "read_cancelled", NULL, "The workspace read was cancelled");
        else if (j->r == 0)
                answer_ok(rq, j);
        else if (j->r == -EPROTO)
                answer_refusal(rq, j);
        else if (j->r == -ENOENT && j->err.code == B4_CODE_SANDBOX_UNAVAILABLE)
                refuse_with(rq, 404, "workspace_not_found", NULL, j->err.msg);
        else
                reply_b4_error(rq, &j->err);
}

void route_workspace_inspect(struct request *rq)
{
        struct b4_runtime *rt = rq->srv->opts.runtime;
        struct inspect_job *j = job_new();
        struct b4_error err = { 0 };
        struct b4_read *rd = NULL;
        enum outcome out;

        if (!j) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        if (!parse_options(rq, j))
                goto out;
        if (b4_runtime_read_begin(rt, rq->thread.id, j->cancel, &rd, &err) < 0) {
                reply_b4_error(rq, &err);
                goto out;
        }
        j->provider = b4_runtime_provider(rt);
        j->key = b4_strdup(b4_read_sandbox_key(rd));
        if (!j->key || !start_worker(j)) {
                b4_read_end(rd);
                reply_error(rq, 500, "internal_error", "cannot start the workspace read");
                goto out;
        }
        out = wait_job(j, rq->srv->config->sandbox.workspace_read_timeout_ms);
        if (out != OUTCOME_DONE)
                b4_cancel_fire(j->cancel); /* abandon: the worker stops at its next check */
        b4_read_end(rd);
        answer(rq, j, out);
out:
        job_unref(j);
}
