/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Streamed replies: Server-Sent Events or NDJSON, written by a producer thread while
 * libmicrohttpd sends them. The one event writer of the server (runBash's output, a
 * process's logs).
 *
 *   handler (pool thread, connection suspended)
 *     stream_format_of() -> refusals decided -> stream_open(): the 200 is the request's reply
 *     -> request_detach(rq, producer, ctx): the handler returns, the reply is queued
 *   producer (same pool thread, after the connection is resumed)
 *     stream_event() ... stream_end("exit"), or stream_close()
 *
 * Between the two sides sits a queue bounded by STREAM_QUEUE_MAX_BYTES: stream_event()
 * blocks while it is full (backpressure: a command's pipes fill and the command waits) until
 * libmicrohttpd drains it, the client goes away, or the abort token fires. While the queue
 * is empty the connection is suspended (no busy polling); a keepalive (an SSE comment, an
 * NDJSON {"event":"keepalive"} line) is queued every keepalive period without an event, and
 * that write is how a client that went away is noticed: libmicrohttpd then drops the
 * response, the stream is "gone" and the abort token fires (a running command dies), so a
 * disconnect is acted on within one keepalive period.
 *
 * Wire shapes (docs/http-api.md, "Streaming"):
 *   SSE     event: <name>\nid: <id>\ndata: <json>\n\n     (id: only when given)
 *   NDJSON  {"event":"<name>","id":<id>,"data":<json>}\n   (id only when given)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct request;
struct b4_cancel;
struct stream;

#define STREAM_QUEUE_MAX_BYTES (1024u * 1024u)
#define STREAM_KEEPALIVE_MS    15000u /* the default; server.streamKeepaliveMs */

enum stream_format {
        STREAM_NONE = 0, /* plain JSON: not streamed */
        STREAM_SSE,      /* Accept: text/event-stream */
        STREAM_NDJSON,   /* Accept: application/x-ndjson */
};

/* The format the request's Accept header asks for (the first of the two media types it
 * names wins; anything else is STREAM_NONE). */
enum stream_format stream_format_of(const struct request *rq);

/**
 * stream_open() - make @rq's reply a 200 stream of @format
 * @abort: optional, borrowed until stream_close(): fired once when the client goes away;
 *         while it is set stream_event() does not wait for room
 * @ret:   the producer's reference (stream_close())
 * Return: 0, or -ENOMEM with a 500 reply made.
 */
int stream_open(struct request *rq,
                enum stream_format format,
                struct b4_cancel *abort,
                struct stream **ret);

/**
 * stream_event() - queue one event
 * @name: the event name ("stdout", "exit", ...): [a-z]+
 * @id:   the SSE id (a byte offset), or -1 for none
 * @data: @len bytes of compact JSON (one line)
 * Blocks while the queue is full (see above). Return: 0, -EPIPE (the client is gone: the
 * event is dropped), -ECANCELED (the abort token fired: dropped), -ENOMEM.
 */
int stream_event(struct stream *s, const char *name, int64_t id, const char *data, size_t len);

/**
 * stream_end() - queue the last event (waiting for room even after the abort fired: only a
 * client that went away loses it), then stream_close(). Return: as stream_event().
 */
int stream_end(struct stream *s, const char *name, const char *data, size_t len);

/** stream_gone() - whether the client went away. */
bool stream_gone(struct stream *s);

/**
 * stream_close() - no more events: the response ends once the queue is sent. Drops the
 * producer's reference (the stream is freed when libmicrohttpd has dropped its own).
 * Return: NULL.
 */
struct stream *stream_close(struct stream *s);
