/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: a watch's NDJSON body (src/lib/kube/watch.c) and Status bodies
 * (src/lib/kube/status.c). Trust boundary: the Kubernetes API server and anything between
 * it and b4box: watch events decide when a sandbox is ready or failed, Status bodies become
 * errnos and messages.
 *
 * The input is a body. It is fed to the watch parser whole and byte by byte: both give the
 * same events and the same result; every event delivered is an object of a known type;
 * the tracked resourceVersion is short and printable. The body is also decoded as a Status
 * for a few HTTP statuses: always a negative errno, a message without control characters.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kube/kube-internal.h"
#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (256 * 1024)

struct seen {
        unsigned n;
        unsigned long hash;
};

static int on_event(enum kube_event_type type, struct jv *object, void *userdata)
{
        struct seen *s = userdata;

        if (type > KUBE_EVENT_BOOKMARK || !jv_is_object(object))
                abort();
        s->n++;
        s->hash = s->hash * 31 + (unsigned long)type + jv_object_size(object);
        return 0;
}

static int run(const uint8_t *data, size_t size, size_t step, struct seen *s, char **ret_rv)
{
        struct kube_watch_parser p;
        int r = 0;

        kube_watch_parser_init(&p);
        for (size_t off = 0; r >= 0 && off < size; off += step)
                r = kube_watch_parser_feed(&p, (const char *)data + off,
                                           size - off < step ? size - off : step, on_event, s,
                                           NULL);
        if (r >= 0)
                r = kube_watch_parser_finish(&p, on_event, s, NULL);
        *ret_rv = p.rv;
        p.rv = NULL;
        kube_watch_parser_release(&p);
        return r;
}

static void check_rv(const char *rv)
{
        if (!rv)
                return;
        if (strlen(rv) == 0 || strlen(rv) > 256)
                abort();
        for (const char *c = rv; *c; c++)
                if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
                        abort();
}

static void status(const uint8_t *data, size_t size)
{
        static const long codes[] = { 400, 401, 403, 404, 409, 410, 422, 429, 500, 504 };

        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
                struct b4_error err = { 0 };
                int r = kube_status_decode(codes[i], (const char *)data, size, &err);
                if (r >= 0 || err.error != r || !err.msg[0])
                        abort();
                for (const char *c = err.msg; *c; c++)
                        if ((unsigned char)*c < 0x20)
                                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct seen whole = { 0 }, bytes = { 0 };
        char *rv1 = NULL, *rv2 = NULL;
        int r1, r2;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        r1 = run(data, size, size ? size : 1, &whole, &rv1);
        r2 = run(data, size, 1, &bytes, &rv2);
        if (r1 != r2 || whole.n != bytes.n || whole.hash != bytes.hash)
                abort();
        if ((rv1 == NULL) != (rv2 == NULL) || (rv1 && strcmp(rv1, rv2) != 0))
                abort();
        check_rv(rv1);
        free(rv1);
        free(rv2);
        status(data, size);
        return 0;
}
