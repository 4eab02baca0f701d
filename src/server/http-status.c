/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies: the JSON error shape, and the one table mapping library errors (negative errno
 * plus registry code) to HTTP statuses and named codes.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/time-util.h"
#include "server-internal.h"

/*
 * Replies are kept in the request and handed to libmicrohttpd by the access handler
 * (request_flush() in server.c): a handler runs on a worker thread while its connection is
 * suspended, and MHD_queue_response() may only be called from the access handler.
 */
void reply_response(struct request *rq, unsigned status, struct MHD_Response *resp)
{
        if (rq->replied) {
                MHD_destroy_response(resp);
                return;
        }
        if (status == 401)
                (void)MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
        if (rq->traceparent[0]) /* echoed (W3C trace context) */
                (void)MHD_add_response_header(resp, "traceparent", rq->traceparent);
        if (rq->interrupted_ms) {
                char ms[24];

                (void)snprintf(ms, sizeof(ms), "%lld", (long long)rq->interrupted_ms);
                (void)MHD_add_response_header(resp, "B4box-Interrupted-Run", ms);
        }
        rq->response = resp;
        rq->replied = true;
        rq->status = status;
}

/* Every JSON reply ends with a newline. Takes @text (NULL: nothing to send, or out of memory). */
char *json_text_terminate(char *text, size_t *len)
{
        char *t;

        if (!text || (*len > 0 && text[*len - 1] == '\n'))
                return text;
        t = realloc(text, *len + 2);
        if (!t) {
                free(text);
                return NULL;
        }
        t[(*len)++] = '\n';
        t[*len] = '\0';
        return t;
}

static void queue(struct request *rq, unsigned status, char *text, size_t len)
{
        struct MHD_Response *resp;

        text = json_text_terminate(text, &len);
        if (!text)
                resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        else
                resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(text);
                return;
        }
        (void)MHD_add_response_header(resp, "Content-Type", "application/json");
        reply_response(rq, status, resp);
}

void reply_text(struct request *rq, unsigned status, struct strbuf *sb)
{
        char *text = NULL;
        size_t len = 0;

        if (rq->replied)
                return;
        if (strbuf_detach(sb, &text, &len) < 0)
                status = 500;
        queue(rq, status, text, len);
}

void reply_json(struct request *rq, unsigned status, struct jv *body)
{
        char *text = NULL;

        if (rq->replied) {
                jv_unref(body); /* taken, whatever happens */
                return;
        }
        if (!body || jv_dump(body, 0, &text) < 0) {
                text = NULL;
                status = 500;
        }
        jv_unref(body);
        queue(rq, status, text, text ? strlen(text) : 0);
}

/*
 * The one place the error shape is built: {"error":{"message", "kind":"request_error",
 * "code" (registry, when set), "details":{"code", ...@details}}}. Takes @details.
 */
static struct jv *error_body(const char *code,
                             const char *message,
                             enum b4_code reg,
                             struct jv *details)
{
        details = details ? details : jv_object_new();
        if (!details || jv_object_set_new(details, "code", jv_string_new(code)) < 0) {
                jv_unref(details);
                return NULL;
        }
        return jv_pack("{s:{s:s, s:s, s:s*, s:o}}", "error", "message", message, "kind",
                       "request_error", "code", reg != B4_CODE_NONE ? b4_code_name(reg) : NULL,
                       "details", details);
}

/* Refusals a retry soon may clear, and the Retry-After (seconds) they carry: the one place. */
static const struct {
        const char *code;
        const char *seconds;
} retry_after[] = {
        { "run_in_flight", "1" },
        { "upload_in_flight", "1" },
        { "workspace_create_in_flight", "1" },
};

static void reply_retry_after(struct request *rq, const char *code)
{
        for (size_t i = 0; rq->response && i < ELEMENTSOF(retry_after); i++)
                if (strcmp(retry_after[i].code, code) == 0)
                        (void)MHD_add_response_header(rq->response, "Retry-After",
                                                      retry_after[i].seconds);
}

static void reply_error_coded(struct request *rq,
                              unsigned status,
                              const char *code,
                              enum b4_code reg,
                              struct jv *details,
                              const char *message)
{
        if (rq->replied) {
                jv_unref(details);
                return;
        }
        if (rq->capture) {
                *rq->capture = (struct reply_capture){ .set = true, .status = status };
                (void)snprintf(rq->capture->code, sizeof(rq->capture->code), "%s", code);
                (void)snprintf(rq->capture->message, sizeof(rq->capture->message), "%s", message);
                jv_unref(details);
                return;
        }
        metrics_refusal(rq->srv->metrics, code);
        reply_json(rq, status, error_body(code, message, reg, details));
        reply_retry_after(rq, code);
}

void reply_error_details(
        struct request *rq, unsigned status, const char *code, struct jv *details, const char *msg)
{
        reply_error_coded(rq, status, code, B4_CODE_NONE, details, msg);
}

void reply_error_bare(struct request *rq, unsigned status, const char *message)
{
        if (!rq->replied)
                reply_json(rq, status, jv_pack("{s:{s:s}}", "error", "message", message));
}

void reply_error(struct request *rq, unsigned status, const char *code, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        reply_error_coded(rq, status, code, B4_CODE_NONE, NULL, msg);
}

static const struct {
        int error;
        unsigned status;
        const char *code;
} errno_map[] = {
        { -EINVAL, 400, "invalid_request" },  { -ENOENT, 404, "thread_not_found" },
        { -EEXIST, 409, "thread_exists" },    { -EBUSY, 409, "run_in_flight" },
        { -EACCES, 403, "forbidden" },        { -EPERM, 403, "forbidden" },
        { -E2BIG, 413, "payload_too_large" }, { -EFBIG, 413, "payload_too_large" },
        { -ESHUTDOWN, 503, "shutting_down" }, { -ECANCELED, 409, "cancelled" },
        { -ETIMEDOUT, 504, "timeout" },       { -EOPNOTSUPP, 501, "not_supported" },
};

/* Registry codes decide the answer before the errno does. */
static const struct {
        enum b4_code reg;
        unsigned status;
        const char *code;
} code_map[] = {
        { B4_CODE_SANDBOX_UNAVAILABLE, 503, "sandbox_unavailable" },
        { B4_CODE_THREAD_REFUSED, 422, "thread_refused" },
        { B4_CODE_IMAGE_NOT_ALLOWED, 422, "image_not_allowed" },
        { B4_CODE_NO_TARGET, 422, "no_target" },
        { B4_CODE_IMAGE_UNSUPPORTED, 422, "image_unsupported" },
};

void reply_b4_error(struct request *rq, const struct b4_error *err)
{
        const char *msg = err->msg[0] ? err->msg : strerror(-err->error);

        for (size_t i = 0; i < ELEMENTSOF(code_map); i++)
                if (code_map[i].reg == err->code) {
                        reply_error_coded(rq, code_map[i].status, code_map[i].code, err->code, NULL,
                                          msg);
                        return;
                }
        for (size_t i = 0; i < ELEMENTSOF(errno_map); i++)
                if (errno_map[i].error == err->error) {
                        reply_error_coded(rq, errno_map[i].status, errno_map[i].code, err->code,
                                          NULL, msg);
                        return;
                }
        reply_error_coded(rq, 500, "internal_error", err->code, NULL, msg);
}

struct jv *request_json_object(struct request *rq)
{
        struct b4_error err = { 0 };
        struct jv *v = NULL;
        const char *body = rq->body.buf ? rq->body.buf : "";

        if (rq->body.len == 0) {
                reply_error(rq, 400, "invalid_request", "request body must be a JSON object");
                return NULL;
        }
        if (jv_parse(body, rq->body.len, &v, &err) < 0) {
                reply_error(rq, 400, "invalid_request", "malformed JSON: %s", err.msg);
                return NULL;
        }
        if (!jv_is_object(v)) {
                jv_unref(v);
                reply_error(rq, 400, "invalid_request", "request body must be a JSON object");
                return NULL;
        }
        return v;
}

bool request_known_keys(struct request *rq, const struct jv *obj, const char *const *known)
{
        for (void *it = jv_object_iter(obj); it; it = jv_object_next(obj, it)) {
                const char *k = jv_iter_key(it);
                bool ok = false;
                for (const char *const *kk = known; *kk && !ok; kk++)
                        ok = strcmp(*kk, k) == 0;
                if (!ok) {
                        char list[512] = "";
                        for (const char *const *kk = known; *kk; kk++)
                                (void)snprintf(list + strlen(list), sizeof(list) - strlen(list),
                                               "%s%s", kk == known ? "" : ", ", *kk);
                        reply_error(rq, 400, "invalid_request", "unknown field '%s' (known: %s)", k,
                                    list);
                        return false;
                }
        }
        return true;
}
