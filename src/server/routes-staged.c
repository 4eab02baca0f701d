/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PUT /workspace/sources/{digest} (reference §6.3), in its order of checks:
 *   headers phase: the policy (workspace.source.put, access.c) -> option off 404 -> digest
 *   not 64 lowercase hex 400 -> a second concurrent upload 429 upload_in_flight
 *   (retry-after: 1) -> declared Content-Length over maxUploadBytes 413;
 *   body phase: at most maxUploadBytes (413), within uploadTimeoutMs (408 upload_timeout;
 *   it is also the connection's inactivity timeout and its body deadline (conns.c), so a
 *   stalled or trickling client is cut);
 *   complete: not JSON 400 -> reclaim expired sources -> body digest != path 400
 *   digest_mismatch -> verification 422 workspace_source_invalid -> quota 507
 *   staged_quota_exceeded -> 200 held / 201 created. The stored payload is the bundle's
 *   canonical JSON. The upload slot is released when the request ends, whatever happened.
 *
 * POST /threads with `workspace: {sourceDigest, environmentLinks?, baseline?}` (reference
 * §6.4), after the policy (headers phase) and the 1 MiB body cap (the route's cap): malformed
 * field 400 -> option off 400 workspace_not_accepted -> more than STAGED_CREATES_MAX_IN_FLIGHT
 * creates naming a workspace 429 workspace_create_in_flight (retry-after: 1) -> the digest is
 * not held as an upload, or (threadAccess.stagedSources "own") the caller did not upload it
 * 422 workspace_source_not_held -> links refused against the held bundle 422 workspace_invalid
 * -> the thread row and its reference in one transaction (reclaimed meanwhile: 409
 * workspace_source_not_held). A caller that may not use a source is told it is not held, the
 * same answer as for a digest nobody uploaded, so a create cannot probe others' uploads.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/bundle.h"
#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "server-internal.h"

#define STAGED_CREATES_MAX_IN_FLIGHT 4
#define STAGED_LINKS_MAX             1024
#define STAGED_STRING_MAX            1024

static atomic_bool upload_busy;    /* one upload per process */
static atomic_uint creates_in_use; /* creates naming a workspace, now */

static bool is_digest(const char *s)
{
        return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

bool staged_put_begin(struct request *rq)
{
        const struct b4_staged_config *sc = &rq->srv->config->sandbox.staged;
        bool expected = false;

        if (!sc->enabled) {
                reply_error(rq, 404, "not_found", "Not found");
                return false;
        }
        if (!is_digest(rq->params[0])) {
                reply_error(rq, 400, "invalid_digest",
                            "the source digest must be 64 lowercase hex characters");
                return false;
        }
        if (!atomic_compare_exchange_strong(&upload_busy, &expected, true)) {
                reply_error(rq, 429, "upload_in_flight",
                            "another upload is in progress; retry in a second");
                return false;
        }
        rq->holds_upload_slot = true;
        (void)MHD_set_connection_option(rq->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                        (unsigned)((sc->upload_timeout_ms + 999) / 1000));
        return true;
}

void staged_put_end(struct request *rq)
{
        if (rq->holds_upload_slot)
                atomic_store(&upload_busy, false);
        rq->holds_upload_slot = false;
}

uint64_t staged_upload_cap(const struct request *rq)
{
        return rq->srv->config->sandbox.staged.max_upload_bytes;
}

static struct jv *status_body(const char *digest, const char *status)
{
        return jv_pack("{s:s, s:s}", "digest", digest, "status", status);
}

/* Parse, compare the claimed digest with the path, verify. Replies on failure. */
static struct b4_bundle *verify_upload(struct request *rq)
{
        cleanup_(jv_unrefp) struct jv *doc = NULL;
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };
        const char *claimed;

        if (jv_parse(rq->body.buf ? rq->body.buf : "", rq->body.len, &doc, &err) < 0) {
                reply_error(rq, 400, "invalid_request", "the body is not JSON: %s", err.msg);
                return NULL;
        }
        claimed = jv_string(jv_object_get(doc, "digest"));
        if (claimed && strcmp(claimed, rq->params[0]) != 0) {
                reply_error(rq, 400, "digest_mismatch",
                            "the bundle's digest differs from the digest in the path");
                return NULL;
        }
        doc = jv_unref(doc); /* b4_bundle_parse() parses again: keep one copy at a time */
        if (b4_bundle_parse(rq->body.buf, rq->body.len, &b, &err) < 0) {
                reply_error(rq, 422, "workspace_source_invalid", "%s", err.msg);
                return NULL;
        }
        if (strcmp(b->digest, rq->params[0]) != 0) {
                reply_error(rq, 400, "digest_mismatch",
                            "the bundle's digest differs from the digest in the path");
                return b4_bundle_free(b);
        }
        return b;
}

/* Who an upload is recorded under: the caller's name, else (a policy program that gives a
 * stamp but no identity) the stamp itself, so each distinct stamp is kept. */
static const char *uploader_key(const struct request *rq)
{
        return rq->principal_name ? rq->principal_name : rq->stamp;
}

static void store_upload(struct request *rq, const struct b4_bundle *b)
{
        const struct b4_staged_config *sc = &rq->srv->config->sandbox.staged;
        cleanup_free char *canon = NULL;
        struct b4_error err = { 0 };
        bool created = false;
        size_t len = 0;
        int r;

        r = b4_bundle_format(b, &canon, &len, &err);
        if (r >= 0)
                r = b4_runtime_source_upload(rq->srv->opts.runtime, b->digest, canon, len,
                                             uploader_key(rq), rq->stamp, (int64_t)realtime_msec(),
                                             sc->max_staged_bytes, &created, &err);
        if (r == -ENOSPC)
                reply_error(rq, 507, "staged_quota_exceeded", "%s", err.msg);
        else if (r < 0)
                reply_b4_error(rq, &err);
        else
                reply_json(rq, created ? 201 : 200,
                           status_body(b->digest, created ? "created" : "held"));
}

void route_source_put(struct request *rq)
{
        const struct b4_staged_config *sc = &rq->srv->config->sandbox.staged;
        struct b4_bundle *b;

        if (now_usec() - rq->started_us > sc->upload_timeout_ms * 1000) {
                reply_error(rq, 408, "upload_timeout", "the upload took longer than %llu ms",
                            (unsigned long long)sc->upload_timeout_ms);
                return;
        }
        b = verify_upload(rq);
        if (!b)
                return;
        (void)b4_runtime_sources_reclaim(rq->srv->opts.runtime, (int64_t)realtime_msec(),
                                         sc->retention_ms, NULL);
        strbuf_release(&rq->body); /* the verified bundle no longer needs the text */
        store_upload(rq, b);
        b4_bundle_free(b);
}

/* ---- POST /threads with a workspace (reference §6.4) -------------------------------------- */

static bool field_error(struct request *rq, const char *what)
{
        reply_error(rq, 400, "invalid_request", "workspace%s", what);
        return false;
}

static bool link_shape_ok(const struct jv *l)
{
        const struct jv *p = jv_object_get(l, "path"), *t = jv_object_get(l, "target");

        return jv_is_object(l) && jv_object_size(l) == 2 && jv_is_string(p) && jv_is_string(t) &&
               jv_string_length(p) <= STAGED_STRING_MAX &&
               jv_string_length(t) <= STAGED_STRING_MAX &&
               strlen(jv_string(p)) == jv_string_length(p) &&
               strlen(jv_string(t)) == jv_string_length(t);
}

/* The field's shape (stagedWorkspaceField); replies 400 when malformed. */
static bool staged_field_ok(struct request *rq, const struct jv *w)
{
        const struct jv *links = jv_object_get(w, "environmentLinks"), *b;

        if (!jv_is_object(w))
                return field_error(rq, " must be an object { sourceDigest, environmentLinks?, "
                                       "baseline? }");
        for (void *it = jv_object_iter(w); it; it = jv_object_next(w, it)) {
                const char *k = jv_iter_key(it);
                if (strcmp(k, "sourceDigest") != 0 && strcmp(k, "environmentLinks") != 0 &&
                    strcmp(k, "baseline") != 0)
                        return field_error(rq, " has an unknown key (known: sourceDigest, "
                                               "environmentLinks, baseline)");
        }
        if (!is_digest(jv_string(jv_object_get(w, "sourceDigest"))))
                return field_error(rq, ".sourceDigest must be 64 lowercase hex characters");
        if (links && (!jv_is_array(links) || jv_array_size(links) > STAGED_LINKS_MAX))
                return field_error(rq, ".environmentLinks must be an array of at most 1024 "
                                       "{ path, target }");
        for (size_t i = 0; links && i < jv_array_size(links); i++)
                if (!link_shape_ok(jv_array_get(links, i)))
                        return field_error(rq, ".environmentLinks entries must be exactly "
                                               "{ path, target }, strings of at most 1024 "
                                               "characters");
        b = jv_object_get(w, "baseline");
        if (b && !(jv_is_string(b) && strcmp(jv_string(b), "git") == 0 && jv_string_length(b) == 3))
                return field_error(rq, ".baseline must be \"git\"");
        return true;
}

static bool may_use(struct request *rq, const char *digest)
{
        cleanup_strv char **who = NULL;

        if (!rq->srv->config->thread_access.staged_sources_own || !rq->principal_name)
                return true;
        if (b4_runtime_source_uploaders(rq->srv->opts.runtime, digest, &who, NULL, NULL) < 0)
                return false;
        return strv_contains(who, rq->principal_name);
}

/* The held upload of @digest, parsed (verified again); replies 422/500 on failure. */
static struct b4_bundle *held_upload(struct request *rq, const char *digest)
{
        cleanup_free char *payload = NULL;
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };
        int64_t uploaded = 0;
        size_t len = 0;
        int r;

        r = b4_runtime_source_get(rq->srv->opts.runtime, digest, &payload, &len, &uploaded, &err);
        if (r == -ENOENT || (r >= 0 && uploaded <= 0) || (r >= 0 && !may_use(rq, digest))) {
                reply_error(rq, 422, "workspace_source_not_held",
                            "source %s is not held: upload it first", digest);
                return NULL;
        }
        if (r >= 0)
                r = b4_bundle_parse(payload, len, &b, &err);
        if (r < 0)
                reply_b4_error(rq, &err);
        return b;
}

/* Links and baseline against the held bundle (§7.2 rules); the sorted reference as JSON. */
static int staged_reference(const struct jv *w,
                            struct b4_bundle **b,
                            char **ret,
                            struct b4_error *err)
{
        const struct jv *links = jv_object_get(w, "environmentLinks");
        size_t n = jv_array_size(links);
        cleanup_free struct b4_captured_link *l = b4_calloc(n + 1, sizeof(*l));
        struct b4_captured_workspace *ws = NULL;
        cleanup_(jv_unrefp) struct jv *o = NULL, *arr = jv_array_new();
        int r;

        if (!l || !arr)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                l[i] = (struct b4_captured_link){
                        .path = (char *)jv_string(jv_object_get(jv_array_get(links, i), "path")),
                        .target =
                                (char *)jv_string(jv_object_get(jv_array_get(links, i), "target")),
                };
        r = b4_captured_workspace_make(b, l, n, jv_object_get(w, "baseline") != NULL, &ws, err);
        for (size_t i = 0; r >= 0 && i < ws->n_links; i++)
                r = jv_array_append_new(arr, jv_pack("{s:s, s:s}", "path", ws->links[i].path,
                                                     "target", ws->links[i].target));
        if (r >= 0 &&
            !(o = jv_pack("{s:s, s:O, s:s*}", "sourceDigest", ws->source->digest,
                          "environmentLinks", arr, "baseline", ws->baseline_git ? "git" : NULL)))
                r = -ENOMEM;
        if (r >= 0)
                r = jv_dump(o, JV_SORT_KEYS, ret);
        b4_captured_workspace_free(ws);
        return r;
}

static void create_held(struct request *rq, const struct jv *w, const char *id, const char *meta)
{
        const char *digest = jv_string(jv_object_get(w, "sourceDigest"));
        cleanup_free char *ref = NULL;
        struct b4_thread_row row = { 0 };
        struct b4_error err = { 0 };
        struct b4_bundle *b = held_upload(rq, digest);
        int r;

        if (!b)
                return;
        r = staged_reference(w, &b, &ref, &err);
        b4_bundle_free(b);
        if (r == -EINVAL) {
                reply_error(rq, 422, "workspace_invalid", "%s", err.msg);
                return;
        }
        if (r >= 0 && !access_check_workspace(rq, w))
                return; /* the policy program refused this caller this workspace */
        if (r >= 0)
                r = b4_runtime_thread_create_staged(rq->srv->opts.runtime, id, meta,
                                                    rq->principal_name, digest, ref, &row, &err);
        if (r == -ENOENT) {
                reply_error(rq, 409, "workspace_source_not_held",
                            "source %s was reclaimed meanwhile: upload it again and retry", digest);
                return;
        }
        if (r < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 201, thread_to_json(rq, &row));
        b4_thread_row_clear(&row);
}

void staged_thread_create(struct request *rq,
                          const struct jv *w,
                          const char *id,
                          const char *meta,
                          const char *parent)
{
        if (!staged_field_ok(rq, w))
                return;
        if (parent) {
                reply_error(rq, 400, "invalid_request",
                            "workspace cannot be given with parent_thread_id: a child thread "
                            "shares its parent's workspace");
                return;
        }
        if (!rq->srv->config->sandbox.staged.enabled) {
                reply_error(rq, 400, "workspace_not_accepted",
                            "this server does not accept staged workspaces");
                return;
        }
        if (atomic_fetch_add(&creates_in_use, 1) >= STAGED_CREATES_MAX_IN_FLIGHT) {
                atomic_fetch_sub(&creates_in_use, 1);
                reply_error(rq, 429, "workspace_create_in_flight",
                            "%d thread creates naming a workspace are in progress; retry in a "
                            "second",
                            STAGED_CREATES_MAX_IN_FLIGHT);
                return;
        }
        create_held(rq, w, id, meta);
        atomic_fetch_sub(&creates_in_use, 1);
}

/* ---- GET /workspace/sources, GET and DELETE /workspace/sources/{digest} ------------------ */

/* The caller's view: with stagedSources "own", only what it uploaded. */
static const char *listing_uploader(const struct request *rq)
{
        return rq->srv->config->thread_access.staged_sources_own ? uploader_key(rq) : NULL;
}

static struct jv *source_to_json(const struct b4_source_info *si)
{
        return jv_pack("{s:s, s:I, s:I, s:I}", "digest", si->digest, "size", (int64_t)si->size,
                       "uploadedMs", si->uploaded_ms, "references", (int64_t)si->references);
}

/* The one held upload @digest the caller may see, or a 404 (also when it may not see it). */
static bool find_source(struct request *rq, const char *digest, struct b4_source_info *ret)
{
        struct b4_source_info *l = NULL;
        struct b4_error err = { 0 };
        size_t n = 0;
        int r;

        if (!rq->srv->config->sandbox.staged.enabled) {
                reply_error(rq, 404, "not_found", "Not found");
                return false;
        }
        if (!is_digest(digest)) {
                reply_error(rq, 400, "invalid_digest",
                            "the source digest must be 64 lowercase hex characters");
                return false;
        }
        r = b4_runtime_sources_list(rq->srv->opts.runtime, listing_uploader(rq), &l, &n, &err);
        if (r < 0) {
                reply_b4_error(rq, &err);
                return false;
        }
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i].digest, digest) == 0) {
                        *ret = l[i];
                        l[i].digest = NULL;
                        b4_source_infos_free(l, n);
                        return true;
                }
        b4_source_infos_free(l, n);
        reply_error(rq, 404, "source_not_found", "source %s is not held", digest);
        return false;
}

void route_sources_list(struct request *rq)
{
        struct b4_source_info *l = NULL;
        struct b4_error err = { 0 };
        struct jv *arr;
        size_t n = 0;
        int r;

        if (!rq->srv->config->sandbox.staged.enabled) {
                reply_error(rq, 404, "not_found", "Not found");
                return;
        }
        r = b4_runtime_sources_list(rq->srv->opts.runtime, listing_uploader(rq), &l, &n, &err);
        if (r < 0) {
                reply_b4_error(rq, &err);
                return;
        }
        arr = jv_array_new();
        for (size_t i = 0; arr && i < n; i++)
                if (jv_array_append_new(arr, source_to_json(&l[i])) < 0)
                        arr = jv_unref(arr);
        b4_source_infos_free(l, n);
        reply_json(rq, 200, jv_pack("{s:o}", "sources", arr));
}

void route_source_get(struct request *rq)
{
        struct b4_source_info si = { 0 };

        if (!find_source(rq, rq->params[0], &si))
                return;
        reply_json(rq, 200, source_to_json(&si));
        free(si.digest);
}

void route_source_delete(struct request *rq)
{
        struct b4_source_info si = { 0 };
        struct b4_error err = { 0 };
        int r;

        if (!find_source(rq, rq->params[0], &si))
                return;
        r = b4_runtime_source_delete(rq->srv->opts.runtime, si.digest, &err);
        if (r == -ENOENT)
                reply_error(rq, 404, "source_not_found", "source %s is not held", si.digest);
        else if (r == -EBUSY)
                reply_error(rq, 409, "source_in_use", "%s", err.msg);
        else if (r < 0)
                reply_b4_error(rq, &err);
        else
                reply_json(rq, 200, status_body(si.digest, "deleted"));
        free(si.digest);
}
