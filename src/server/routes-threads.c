/* SPDX-License-Identifier: Apache-2.0 */
/* Thread routes: create, list, get, delete, release, cancel. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "server-internal.h"

struct jv *thread_to_json(struct request *rq, const struct b4_thread_row *row)
{
        struct b4_runtime *rt = rq->srv->opts.runtime;
        cleanup_free char *source = NULL;
        struct jv *meta = NULL;
        int64_t paused_ms = 0;
        bool paused = b4_runtime_thread_paused(rt, row->id, &paused_ms);
        bool lost = false;
        struct jv *v;

        if (jv_parse(row->metadata_json, strlen(row->metadata_json), &meta, NULL) < 0)
                meta = jv_object_new();
        if (b4_runtime_thread_source(rt, row->id, &source, NULL) < 0)
                source = NULL; /* the view still answers; the digest is left out */
        v = jv_pack("{s:s, s:o, s:s?, s:s?, s:I, s:{s:s, s:s, s:b, s:b, s:o}, s:o*}", "thread_id",
                    row->id, "metadata", meta, "parent_thread_id", row->parent_id, "owner",
                    row->owner, "created_ms", (int64_t)row->created_ms, "sandbox", "provider",
                    rq->srv->opts.provider_name, "state",
                    paused ? "paused" : b4_runtime_thread_state(rt, row->id), "run_in_flight",
                    b4_runtime_thread_busy(rt, row->id), "paused", paused, "paused_ms",
                    paused ? jv_integer_new(paused_ms) : jv_null_new(), "workspace",
                    jv_opt(source != NULL, jv_pack("{s:s}", "sourceDigest", source), &lost));
        return lost ? jv_unref(v) : v;
}

static const char *opt_string(struct request *rq, struct jv *body, const char *key, bool *ok)
{
        struct jv *v = jv_object_get(body, key);

        if (!v || jv_is_null(v))
                return NULL;
        if (!jv_is_string(v)) {
                reply_error(rq, 400, "invalid_request", "%s must be a string", key);
                *ok = false;
                return NULL;
        }
        if (strlen(jv_string(v)) != jv_string_length(v)) { /* "\u0000" would cut the id */
                reply_error(rq, 400, "invalid_request", "%s must not contain a NUL character", key);
                *ok = false;
                return NULL;
        }
        return jv_string(v);
}

void route_thread_create(struct request *rq)
{
        static const char *const known[] = { "thread_id", "metadata", "parent_thread_id",
                                             "workspace", NULL };
        cleanup_(jv_unrefp) struct jv *body = NULL;
        cleanup_free char *meta = NULL;
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };
        bool ok = true;

        body = rq->body.len ? request_json_object(rq) : jv_object_new();
        if (!body || !request_known_keys(rq, body, known))
                return;
        const char *id = opt_string(rq, body, "thread_id", &ok);
        const char *parent = opt_string(rq, body, "parent_thread_id", &ok);
        struct jv *m = jv_object_get(body, "metadata");
        if (!ok)
                return;
        if (m && !jv_is_null(m) && !jv_is_object(m)) {
                reply_error(rq, 400, "invalid_request", "metadata must be an object");
                return;
        }
        if (m && jv_is_object(m) && jv_dump(m, 0, &meta) < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        if (jv_object_get(body, "workspace")) { /* reference §6.4: routes-staged.c */
                staged_thread_create(rq, jv_object_get(body, "workspace"), id, meta, parent);
                return;
        }
        if (parent) {
                struct b4_thread_row prow = { 0 };
                int pr = b4_runtime_thread_get(rq->srv->opts.runtime, parent, &prow, NULL);
                bool visible = pr >= 0 && access_may_see(rq, prow.owner);
                b4_thread_row_clear(&prow);
                if (!visible) {
                        reply_error(rq, 404, "thread_not_found", "parent thread '%s' not found",
                                    parent);
                        return;
                }
        }
        if (b4_runtime_thread_create(rq->srv->opts.runtime, id, meta, parent, rq->principal_name,
                                     &row, &err) < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 201, thread_to_json(rq, &row));
        b4_thread_row_clear(&row);
}

void route_thread_list(struct request *rq)
{
        struct b4_thread_row *rows = NULL;
        struct b4_error err = { 0 };
        size_t n = 0;
        struct jv *arr;

        if (b4_runtime_thread_list(rq->srv->opts.runtime, NULL, &rows, &n, &err) < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        arr = jv_array_new();
        for (size_t i = 0; arr && i < n; i++)
                if (access_may_see(rq, rows[i].owner) &&
                    jv_array_append_new(arr, thread_to_json(rq, &rows[i])) < 0)
                        arr = jv_unref(arr);
        b4_thread_rows_free(rows, n);
        reply_json(rq, 200, jv_pack("{s:o}", "threads", arr));
}

void route_thread_get(struct request *rq)
{
        reply_json(rq, 200, thread_to_json(rq, &rq->thread));
}

void route_thread_delete(struct request *rq)
{
        struct b4_error err = { 0 };

        readers_drop_thread(rq->srv->readers, rq->thread.id); /* before its storage goes */
        if (b4_runtime_thread_delete(rq->srv->opts.runtime, rq->thread.id, &err) < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 200, jv_pack("{s:b}", "deleted", true));
}

void route_thread_release(struct request *rq)
{
        struct b4_error err = { 0 };

        if (b4_runtime_thread_release(rq->srv->opts.runtime, rq->thread.id, &err) < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 200, thread_to_json(rq, &rq->thread));
}

void route_thread_cancel(struct request *rq)
{
        if (b4_runtime_thread_cancel(rq->srv->opts.runtime, rq->thread.id) < 0) {
                reply_error(rq, 409, "no_run_in_flight", "thread '%s' has no run in flight",
                            rq->thread.id);
                return;
        }
        reply_json(rq, 202, jv_pack("{s:b}", "cancelled", true));
}
