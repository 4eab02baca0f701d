/* SPDX-License-Identifier: Apache-2.0 */
/* The NDJSON event reader of a streamed reply (events.h). */

#include "events.h"

#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "json/json.h"

void events_init(struct events *e, size_t line_max, events_fn *fn, void *userdata)
{
        strbuf_init(&e->line, line_max);
        e->fn = fn;
        e->userdata = userdata;
}

void events_release(struct events *e)
{
        strbuf_release(&e->line);
}

/* One whole line (without its newline). */
static int one_line(struct events *e, const char *p, size_t n)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        const struct jv *name, *data;

        if (n == 0)
                return 0;
        if (jv_parse(p, n, &v, NULL) < 0 || !jv_is_object(v))
                return -EBADMSG;
        name = jv_object_get(v, "event");
        data = jv_object_get(v, "data");
        if (!jv_is_string(name) || strlen(jv_string(name)) != jv_string_length(name))
                return -EBADMSG;
        if (strcmp(jv_string(name), "keepalive") == 0)
                return 0;
        if (!data)
                return -EBADMSG;
        return e->fn(e->userdata, jv_string(name), data);
}

int events_feed(struct events *e, const char *p, size_t n)
{
        while (n > 0) {
                const char *nl = memchr(p, '\n', n);
                size_t k = nl ? (size_t)(nl - p) : n;
                int r;

                r = strbuf_add(&e->line, p, k);
                if (r < 0)
                        return r == -E2BIG ? -EBADMSG : r;
                if (!nl)
                        return 0;
                r = one_line(e, e->line.buf ? e->line.buf : "", e->line.len);
                e->line.len = 0;
                if (r < 0)
                        return r;
                p += k + 1;
                n -= k + 1;
        }
        return 0;
}

int events_finish(struct events *e)
{
        return e->line.len > 0 ? -EBADMSG : 0;
}
