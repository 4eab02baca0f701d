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
 * Parse -> b4_runtime_inspect() (slot, worker, deadline, cancel, digests) -> reply.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/inspect.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/utf8.h"
#include "server-internal.h"

#define MAX_LIST_ITEMS     64
#define MAX_NAME_CHARS     1024
#define MAX_TARGET_CHARS   4096
#define MAX_ENTRIES_CAP    10000
#define MAX_FILE_BYTES_CAP (16u * 1024u * 1024u)
#define MAX_TOTAL_CAP      (32u * 1024u * 1024u)

/* The request's options; what they point at is owned here. */
struct read_request {
        char *root;
        char **exclude;
        char **exclude_paths;
        char **ignore;
        struct b4_root_symlink *links;
        size_t n_links;
        struct b4_inspect_options o;
        bool consistent;
};

static void read_request_clear(struct read_request *q)
{
        for (size_t i = 0; i < q->n_links; i++) {
                free((char *)q->links[i].name);
                free((char *)q->links[i].target);
        }
        free(q->links);
        free(q->root);
        strv_free(q->exclude);
        strv_free(q->exclude_paths);
        strv_free(q->ignore);
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

static bool bounded_string(const struct jv *v, size_t max)
{
        const char *s = jv_string(v);

        return s && *s && jv_string_length(v) == strlen(s) && utf8_js_length(s) <= max;
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

static bool links_option(struct request *rq, const struct jv *v, struct read_request *q)
{
        size_t n = jv_object_size(v), k = 0;

        if (!jv_is_object(v) || n > MAX_LIST_ITEMS) {
                reply_error(rq, 400, "invalid_request",
                            "expectedRootSymlinks must be an object of at most %d names",
                            MAX_LIST_ITEMS);
                return false;
        }
        q->links = b4_calloc(n ? n : 1, sizeof(*q->links));
        if (!q->links)
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
                q->links[k].name = b4_strdup(jv_iter_key(it));
                q->links[k].target = b4_strdup(jv_string(t));
                q->n_links++;
                if (!q->links[k].name || !q->links[k].target)
                        return false;
        }
        q->o.expected = q->links;
        q->o.n_expected = q->n_links;
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

static bool root_option(struct request *rq, const struct jv *v, struct read_request *q)
{
        cleanup_free char *dump = NULL;

        if (jv_is_string(v) && jv_string_length(v) == strlen(jv_string(v)) &&
            b4_inspect_root_is_canonical(jv_string(v))) {
                q->root = b4_strdup(jv_string(v));
                q->o.root = q->root;
                return q->root != NULL;
        }
        (void)jv_dump(v, 0, &dump);
        reply_error(rq, 400, "invalid_request", "Invalid workspace inspection root: %s",
                    dump ? dump : "?");
        return false;
}

static bool unsupported_option(struct request *rq, const struct jv *v, struct read_request *q)
{
        const char *s = jv_string(v);

        if (s && strcmp(s, "refuse") == 0)
                q->o.unsupported = B4_INSPECT_UNSUPPORTED_REFUSE;
        else if (s && strcmp(s, "skip") == 0)
                q->o.unsupported = B4_INSPECT_UNSUPPORTED_SKIP;
        else {
                reply_error(rq, 400, "invalid_request",
                            "unsupported must be \"refuse\" or \"skip\"");
                return false;
        }
        return true;
}

static bool one_option(struct request *rq,
                       const char *k,
                       const struct jv *v,
                       struct read_request *q)
{
        if (strcmp(k, "root") == 0)
                return root_option(rq, v, q);
        if (strcmp(k, "excludeRootDirectories") == 0)
                return string_list(rq, v, k, &q->exclude) && ((q->o.exclude_root = q->exclude), 1);
        if (strcmp(k, "excludePaths") == 0)
                return string_list(rq, v, k, &q->exclude_paths) &&
                       ((q->o.exclude_paths = q->exclude_paths), 1);
        if (strcmp(k, "unsupported") == 0)
                return unsupported_option(rq, v, q);
        if (strcmp(k, "expectedRootSymlinks") == 0)
                return links_option(rq, v, q);
        if (strcmp(k, "ignorePrefixes") == 0)
                return string_list(rq, v, k, &q->ignore);
        if (strcmp(k, "maxEntries") == 0)
                return limit_option(rq, v, k, MAX_ENTRIES_CAP, &q->o.max_entries);
        if (strcmp(k, "maxFileBytes") == 0)
                return limit_option(rq, v, k, MAX_FILE_BYTES_CAP, &q->o.max_file_bytes);
        if (strcmp(k, "maxTotalBytes") == 0)
                return limit_option(rq, v, k, MAX_TOTAL_CAP, &q->o.max_total_bytes);
        if (strcmp(k, "consistent") == 0) {
                if (!jv_is_bool(v)) {
                        reply_error(rq, 400, "invalid_request", "consistent must be a boolean");
                        return false;
                }
                q->consistent = jv_is_true(v);
                return true;
        }
        reply_error(rq, 400, "invalid_request", "Unknown workspace read option: %s", k);
        return false;
}

static bool parse_options(struct request *rq, struct read_request *q)
{
        cleanup_(jv_unrefp) struct jv *body =
                rq->body.len ? request_json_object(rq) : jv_object_new();

        if (!body)
                return false;
        for (void *it = jv_object_iter(body); it; it = jv_object_next(body, it))
                if (!one_option(rq, jv_iter_key(it), jv_iter_value(it), q)) {
                        if (!rq->replied)
                                reply_error(rq, 500, "internal_error", "out of memory");
                        return false;
                }
        return true;
}

/* ---- the answer ---- */

static void answer_ok(struct request *rq,
                      const struct read_request *q,
                      struct b4_workspace_read *rd)
{
        char *text = NULL, msg[96];
        int r;

        r = b4_inspect_response_format(rq->thread.id, q->root, rd, q->ignore, &text, NULL);
        if (r == -E2BIG) {
                struct jv *d = jv_object_new();
                if (d)
                        (void)jv_object_set_new(d, "maxBytes",
                                                jv_integer_new(B4_INSPECT_RESPONSE_MAX_BYTES));
                (void)snprintf(msg, sizeof(msg),
                               "The workspace inspection exceeds the response limit of %u bytes",
                               B4_INSPECT_RESPONSE_MAX_BYTES);
                refuse_with(rq, 422, "workspace_response_too_large", d, msg);
        } else if (r < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
        } else {
                reply_no_store(rq, text);
        }
}

static void answer_refusal(struct request *rq,
                           const struct read_request *q,
                           const struct b4_workspace_read *rd,
                           const struct b4_error *err)
{
        struct jv *d = NULL;

        switch (rd->fail.code) {
        case B4_INSPECT_ROOT_MISSING:
                d = jv_object_new();
                if (d) {
                        (void)jv_object_set_new(d, "root", jv_string_new(q->root));
                        (void)jv_object_set_new(d, "kind",
                                                jv_string_new(rd->fail.kind == B4_ROOT_ABSENT
                                                                      ? "absent"
                                                                      : "not_directory"));
                }
                refuse_with(rq, 422, "workspace_root_missing", d, err->msg);
                return;
        case B4_INSPECT_REFUSED:
                refuse_with(rq, 422, "workspace_inspection_refused", NULL, err->msg);
                return;
        case B4_INSPECT_CHANGED:
                refuse_with(rq, 409, "workspace_changed", NULL, err->msg);
                return;
        case B4_INSPECT_INVALID_OPTIONS:
        case B4_INSPECT_NONE:
                break;
        }
        refuse_with(rq, 400, "invalid_request", NULL, err->msg);
}

static void answer(struct request *rq,
                   const struct read_request *q,
                   struct b4_workspace_read *rd,
                   int r,
                   const struct b4_error *err)
{
        if (r == -ETIMEDOUT)
                refuse_with(rq, 504, "workspace_read_timeout", NULL,
                            "The workspace read did not finish within workspaceReadTimeoutMs");
        else if (r == -ECANCELED)
                refuse_with(rq, 409, "read_cancelled", NULL, "The workspace read was cancelled");
        else if (r == 0)
                answer_ok(rq, q, rd);
        else if (r == -EPROTO)
                answer_refusal(rq, q, rd, err);
        else if (r == -ENOENT && err->code == B4_CODE_SANDBOX_UNAVAILABLE)
                refuse_with(rq, 404, "workspace_not_found", NULL, err->msg);
        else
                reply_b4_error(rq, err);
}

void route_workspace_inspect(struct request *rq)
{
        struct read_request q = { 0 };
        struct b4_workspace_read rd = { 0 };
        struct b4_error err = { 0 };
        int r;

        b4_inspect_options_init(&q.o);
        if (parse_options(rq, &q)) {
                r = b4_runtime_inspect(rq->srv->opts.runtime, rq->thread.id, &q.o, q.consistent,
                                       rq->srv->config->sandbox.workspace_read_timeout_ms, NULL,
                                       &rd, &err);
                answer(rq, &q, &rd, r, &err);
        }
        b4_workspace_read_clear(&rd);
        read_request_clear(&q);
}
