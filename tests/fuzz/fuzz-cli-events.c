/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the CLI's NDJSON event reader (src/cli/events.c, included here: the CLI is
 * not part of the library). Trust boundary: `b4box exec --server` reads a streamed runBash
 * reply from whatever answers at the URL.
 *
 * Input: byte 0 picks the line cap (64 << (b & 7) bytes) and a split point; the rest is the
 * body. Checked beyond "no crash": feeding the body whole and in two pieces, and byte by byte,
 * gives the same events and the same outcome (so a line over the cap is refused wherever the
 * reads cut it); every event has data and a name that is not "keepalive".
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/events.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)

struct seen {
        struct strbuf log; /* "name\tdata\n" per event */
};

static int record(void *userdata, const char *name, const struct jv *data)
{
        struct seen *s = userdata;
        char *json = NULL;

        if (strcmp(name, "keepalive") == 0 || !data)
                abort();
        if (jv_dump(data, 0, &json) < 0)
                return -ENOMEM;
        (void)strbuf_addf(&s->log, "%s\t%s\n", name, json);
        free(json);
        return 0;
}

/* Feed @p in pieces of at most @step bytes (0 = whole); the outcome and the log. */
static int run(const char *p, size_t n, size_t step, size_t line_max, struct seen *s)
{
        struct events ev;
        int r = 0;

        strbuf_init(&s->log, STRBUF_UNLIMITED);
        events_init(&ev, line_max, record, s);
        for (size_t i = 0; r >= 0 && i < n;) {
                size_t k = step && n - i > step ? step : n - i;
                r = events_feed(&ev, p + i, k);
                i += k;
        }
        if (r >= 0)
                r = events_finish(&ev);
        events_release(&ev);
        return r;
}

static void same(int ra, const struct seen *a, int rb, const struct seen *b)
{
        if (ra != rb || a->log.len != b->log.len ||
            (a->log.len && memcmp(a->log.buf, b->log.buf, a->log.len) != 0))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct seen whole = { 0 }, halves = { 0 }, bytes = { 0 };
        size_t line_max, split;
        const char *p;
        int rw, rh, rb;

        if (size < 1 || size > FUZZ_MAX_INPUT)
                return 0;
        line_max = (size_t)64 << (data[0] & 7);
        p = (const char *)data + 1;
        size--;
        split = size ? (size_t)data[0] * size / 256 + 1 : 0;
        rw = run(p, size, 0, line_max, &whole);
        rh = run(p, size, split, line_max, &halves);
        rb = run(p, size, 1, line_max, &bytes);
        same(rw, &whole, rh, &halves);
        same(rw, &whole, rb, &bytes);
        strbuf_release(&whole.log);
        strbuf_release(&halves.log);
        strbuf_release(&bytes.log);
        return 0;
}
