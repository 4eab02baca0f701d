/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The CLI's reader of a streamed reply in NDJSON (docs/http-api.md, "Streaming"): bytes from
 * the server in, one callback per event out. Each line is {"event":NAME[,"id":N],"data":V};
 * keepalive lines are dropped. A line is bounded (EVENTS_LINE_MAX): a server that sends a
 * longer one, or a line that is not such an object, ends the stream -EBADMSG. Untrusted
 * bytes: tests/fuzz/fuzz-cli-events.c.
 */

#include <stddef.h>

#include "base/strbuf.h"

struct jv;

#define EVENTS_LINE_MAX (256u * 1024 * 1024) /* the server's RESPONSE_MAX_BYTES */

/* One event: @name and @data borrowed for the call. Return: 0 to go on, < 0 to stop. */
typedef int events_fn(void *userdata, const char *name, const struct jv *data);

struct events {
        struct strbuf line; /* the line so far */
        events_fn *fn;
        void *userdata;
};

void events_init(struct events *e, size_t line_max, events_fn *fn, void *userdata);
/* Feed @n bytes. Return: 0, -EBADMSG (a malformed or too long line), -ENOMEM, or the
 * callback's negative return. */
int events_feed(struct events *e, const char *p, size_t n);
/* The end of the body: 0, or -EBADMSG when a partial line is left. */
int events_finish(struct events *e);
void events_release(struct events *e);
