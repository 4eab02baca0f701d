/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: inspection answers (src/lib/workspace/inspect-json.c). Trust boundary: a
 * client (b4box read, a controller) reads POST /threads/{id}/workspace/inspect from a server
 * it does not control, and the answer describes a workspace a sandboxed thread wrote.
 *
 * The input is an answer body, checked three ways: without expectations, expecting thread
 * "t" and a fixed source digest, and as a refusal body. An accepted answer must hold exactly
 * what the JSON said (no string cut at a NUL, one path per files key, canonical paths) and
 * its inspection must be JSON again; a refusal must carry the refusal code first.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/inspect.h"

#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)
#define FUZZ_SOURCE    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* @s is the whole of the JSON string at @key, or both are absent / null. */
static bool same_text(const struct jv *o, const char *key, const char *s)
{
        const struct jv *v = jv_object_get(o, key);

        if (!jv_is_string(v))
                return !s;
        return s && strlen(s) == jv_string_length(v) && strcmp(s, jv_string(v)) == 0;
}

static void check_accepted(const char *text, size_t len, const struct b4_inspect_response *res)
{
        struct jv *o = NULL, *insp = NULL;
        size_t n = 0;

        if (jv_parse(text, len, &o, NULL) < 0)
                abort();
        if (!same_text(o, "threadId", res->thread_id) ||
            !same_text(o, "sourceDigest", res->source_digest) ||
            !same_text(o, "intentDigest", res->intent_digest) || !same_text(o, "root", res->root))
                abort();
        for (; res->paths && res->paths[n]; n++)
                if (!b4_inspect_root_is_canonical(res->paths[n]))
                        abort();
        if (n != res->n_files || !res->inspection_json ||
            jv_parse(res->inspection_json, strlen(res->inspection_json), &insp, NULL) < 0 ||
            jv_object_size(jv_object_get(insp, "files")) != n)
                abort();
        jv_unref(insp);
        jv_unref(o);
}

static void check_refused(int r, const struct b4_error *err)
{
        static const char *const codes[] = { "malformed_response:", "thread_mismatch:",
                                             "source_mismatch:", "response_too_large:",
                                             "out of memory" };
        bool known = false;

        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
                known = known || strncmp(err->msg, codes[i], strlen(codes[i])) == 0;
        if (err->error != r || !known)
                abort();
}

static void parse(const char *text, size_t len, const char *thread, const char *source)
{
        struct b4_inspect_response res = { 0 };
        struct b4_error err = { 0 };
        int r;

        r = b4_inspect_response_parse(text, len, thread, source, &res, &err);
        if (r < 0) {
                check_refused(r, &err);
                return;
        }
        check_accepted(text, len, &res);
        if ((thread && strcmp(res.thread_id, thread)) ||
            (source && (!res.source_digest || strcmp(res.source_digest, source))))
                abort();
        b4_inspect_response_clear(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        char *code = NULL, *message = NULL;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        parse(text, size, NULL, NULL);
        parse(text, size, "t", FUZZ_SOURCE);
        if (b4_inspect_error_parse(text, size, &code, &message) == 0) {
                if (!code || !message)
                        abort();
                free(code);
                free(message);
        }
        return 0;
}
