/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PUT /workspace/sources/{digest} (reference §6.3), in its order of checks:
 *   headers phase: the policy (workspace.source.put, access.c) -> option off 404 -> digest
 *   not 64 lowercase hex 400 -> a second concurrent upload 429 upload_in_flight
 *   (retry-after: 1) -> declared Content-Length over maxUploadBytes 413;
 *   body phase: at most maxUploadBytes (413), within uploadTimeoutMs (408 upload_timeout;
 *   the connection's inactivity timeout is set to it as well, so a stalled client is cut);
 *   complete: not JSON 400 -> reclaim expired sources -> body digest != path 400
 *   digest_mismatch -> verification 422 workspace_source_invalid -> quota 507
 *   staged_quota_exceeded -> 200 held / 201 created. The stored payload is the bundle's
 *   canonical JSON. The upload slot is released when the request ends, whatever happened.
 */

#include <stdatomic.h>
#include <string.h>

#include "b4box/bundle.h"
#include "b4box/config.h"

#include "base/macro.h"
#include "base/time-util.h"
#include "server-internal.h"

static atomic_bool upload_busy; /* one upload per process */

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
        struct jv *o = jv_object_new();

        if (o && (jv_object_set_new(o, "digest", jv_string_new(digest)) < 0 ||
                  jv_object_set_new(o, "status", jv_string_new(status)) < 0))
                o = jv_unref(o);
        return o;
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
                r = b4_store_source_upload(rq->srv->opts.store, b->digest, canon, len,
                                           rq->principal_name, (int64_t)realtime_msec(),
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
        (void)b4_store_sources_reclaim(rq->srv->opts.store, (int64_t)realtime_msec(),
                                       sc->retention_ms, NULL);
        strbuf_release(&rq->body); /* the verified bundle no longer needs the text */
        store_upload(rq, b);
        b4_bundle_free(b);
}
