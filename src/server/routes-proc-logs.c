/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /threads/{id}/processes/{pid}/logs?from=OFFSET&follow=1: a background process's
 * spooled output from byte OFFSET (default 0).
 *   Accept: text/event-stream or application/x-ndjson: events through the server's one
 *     event writer (stream.h): "stdout" {"offset":N,"text":"..."} (id: N; stdout and stderr
 *     interleaved as the spool holds them), then, once the process has exited and the spool
 *     is read to its end, "exit" with the process view. Without follow=1 the events stop at
 *     the spool's current end (then "exit" only if it has exited, else "end" {"offset":N}).
 *   any other Accept: the bytes from OFFSET (at most LOG_PLAIN_MAX) as
 *     application/octet-stream, X-B4box-Next-Offset the offset to ask for next and
 *     X-B4box-Process-State running|exited. follow=1 needs a streamed Accept (400).
 * A follow polls the spool every LOG_POLL_MS and ends when the client goes away.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/cancel.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/utf8.h"
#include "server-internal.h"
#include "stream.h"

#define LOG_CHUNK_MAX (64u * 1024)       /* bytes per streamed event */
#define LOG_PLAIN_MAX (4u * 1024 * 1024) /* bytes per plain reply (ask again from there) */
#define LOG_POLL_MS   50                 /* how often a follow looks for more output */

struct log_follow {
        struct b4_sandbox *sb; /* a reference */
        uint64_t pid, offset;
        bool follow;
        struct stream *st;
        struct b4_cancel *abort; /* fired when the client goes away */
};

/* @p[0..n) as JSON text with every byte that is not part of valid UTF-8 as U+FFFD. */
static struct jv *text_of(const char *p, size_t n)
{
        struct jv *v = utf8_is_valid(p, n) ? jv_stringn_new(p, n) : NULL;
        cleanup_free char *fixed = NULL;
        size_t k = 0;

        if (v || utf8_is_valid(p, n))
                return v;
        fixed = b4_malloc(n * 3 + 1);
        if (!fixed)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t len = 1;
                while (len <= 4 && i + len <= n && !utf8_is_valid(p + i, len))
                        len++;
                if (len <= 4 && i + len <= n) {
                        memcpy(fixed + k, p + i, len);
                        k += len;
                        i += len;
                } else {
                        memcpy(fixed + k, "\xef\xbf\xbd", 3);
                        k += 3;
                        i++;
                }
        }
        return jv_stringn_new(fixed, k);
}

static int emit(struct log_follow *lf, const char *name, struct jv *data, int64_t id, bool last)
{
        cleanup_free char *json = NULL;
        int r = data && jv_dump(data, 0, &json) >= 0 ? 0 : -ENOMEM;

        jv_unref(data);
        if (r < 0)
                return r;
        return last ? stream_end(lf->st, name, json, strlen(json))
                    : stream_event(lf->st, name, id, json, strlen(json));
}

/* One round: send what the spool has past the offset. 1 = ended (the stream is closed). */
static int follow_round(struct log_follow *lf)
{
        struct b4_proc_info info = { 0 };
        cleanup_free char *buf = NULL;
        size_t n = 0;
        int r;

        r = b4_sandbox_proc_read(lf->sb, lf->pid, lf->offset, LOG_CHUNK_MAX, &buf, &n, &info, NULL);
        if (r < 0) {
                (void)emit(lf, "error", jv_pack("{s:s}", "message", "the process is gone"), -1,
                           true);
                return 1;
        }
        if (n > 0) {
                r = emit(lf, "stdout",
                         jv_pack("{s:I, s:o}", "offset", (int64_t)lf->offset, "text",
                                 text_of(buf, n)),
                         (int64_t)lf->offset, false);
                lf->offset += n;
        } else if (!info.running) {
                (void)emit(lf, "exit", proc_to_json(&info), -1, true);
                r = 1;
        } else if (!lf->follow) {
                (void)emit(lf, "end", jv_pack("{s:I}", "offset", (int64_t)lf->offset), -1, true);
                r = 1;
        }
        b4_proc_info_clear(&info);
        if (r < 0)
                (void)stream_close(lf->st);
        return r < 0 ? 1 : r;
}

static void follow_main(void *ctx)
{
        struct log_follow *lf = ctx;

        for (;;) {
                size_t before = lf->offset;
                if (follow_round(lf))
                        break;
                if (lf->offset == before) { /* nothing new: wait a little, or the client left */
                        struct pollfd pfd = { .fd = b4_cancel_fd(lf->abort), .events = POLLIN };
                        (void)poll(&pfd, 1, LOG_POLL_MS);
                        if (b4_cancel_is_set(lf->abort)) {
                                (void)stream_close(lf->st);
                                break;
                        }
                }
        }
        b4_sandbox_unref(lf->sb);
        b4_cancel_free(lf->abort);
        free(lf);
}

static void reply_plain(struct request *rq, struct b4_sandbox *sb, uint64_t pid, uint64_t from)
{
        struct b4_proc_info info = { 0 };
        struct b4_error err = { 0 };
        struct MHD_Response *resp;
        char *buf = NULL, next[32];
        size_t n = 0;

        if (b4_sandbox_proc_read(sb, pid, from, LOG_PLAIN_MAX, &buf, &n, &info, &err) < 0) {
                reply_proc_error(rq, &err);
                return;
        }
        (void)snprintf(next, sizeof(next), "%llu", (unsigned long long)(from + n));
        resp = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(buf);
                b4_proc_info_clear(&info);
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        (void)MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
        (void)MHD_add_response_header(resp, "X-B4box-Next-Offset", next);
        (void)MHD_add_response_header(resp, "X-B4box-Process-State",
                                      info.running ? "running" : "exited");
        b4_proc_info_clear(&info);
        reply_response(rq, 200, resp);
}

static void start_follow(struct request *rq,
                         enum stream_format format,
                         struct b4_sandbox *sb,
                         uint64_t pid,
                         uint64_t from,
                         bool follow)
{
        struct log_follow *lf = b4_calloc(1, sizeof(*lf));

        if (lf)
                lf->abort = b4_cancel_new();
        if (!lf || !lf->abort) {
                free(lf);
                b4_sandbox_unref(sb);
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        *lf = (struct log_follow){
                .sb = sb, .pid = pid, .offset = from, .follow = follow, .abort = lf->abort
        };
        if (stream_open(rq, format, lf->abort, &lf->st) < 0) {
                b4_sandbox_unref(sb);
                b4_cancel_free(lf->abort);
                free(lf);
                return;
        }
        request_detach(rq, follow_main, lf);
}

void route_proc_logs(struct request *rq)
{
        enum stream_format format = stream_format_of(rq);
        struct b4_proc_info info = { 0 };
        struct b4_error err = { 0 };
        struct b4_sandbox *sb;
        uint64_t pid, from, follow;

        if (!proc_path_pid(rq, &pid) || !proc_query_u64(rq, "from", UINT64_MAX, 0, &from) ||
            !proc_query_u64(rq, "follow", 1, 0, &follow))
                return;
        if (follow && format == STREAM_NONE) {
                reply_error(rq, 400, "invalid_request",
                            "follow=1 needs Accept: text/event-stream or application/x-ndjson");
                return;
        }
        if (!(sb = proc_sandbox(rq)))
                return;
        if (b4_sandbox_proc_get(sb, pid, &info, &err) < 0) { /* refusals before the 200 */
                reply_proc_error(rq, &err);
                b4_sandbox_unref(sb);
                return;
        }
        b4_proc_info_clear(&info);
        if (format == STREAM_NONE) {
                reply_plain(rq, sb, pid, from);
                b4_sandbox_unref(sb);
                return;
        }
        start_follow(rq, format, sb, pid, from, follow != 0);
}
