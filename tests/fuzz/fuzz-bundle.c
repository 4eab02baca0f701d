/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: source bundles (src/lib/workspace/bundle.c). Trust boundary: a bundle is
 * uploaded by an HTTP client (POST /sources, staged threads) and read back from the store.
 *
 * First byte even: the rest is a bundle's JSON for b4_bundle_parse(). A refusal must carry a
 * message; an accepted bundle must be sorted, decode to its declared sizes and survive
 * b4_bundle_format() -> b4_bundle_parse() with the same digest.
 * First byte odd: the rest is files, one per line "path=content" (a leading '*' marks it
 * executable), for b4_bundle_create(); whatever it accepts must format, parse back to the
 * same digest and decode to the same bytes (the digest check cannot stop the fuzzer here).
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (64 * 1024)
#define FUZZ_MAX_FILES 64

static void check_refusal(int r, const struct b4_error *err)
{
        if (r >= 0 || err->error != r || !err->msg[0])
                abort();
}

/* Format @b, parse it back and compare; returns the reparsed bundle. */
static struct b4_bundle *roundtrip(const struct b4_bundle *b)
{
        struct b4_error err = { 0 };
        struct b4_bundle *again = NULL;
        char *json = NULL;
        size_t len = 0;

        if (b4_bundle_format(b, &json, &len, &err) < 0)
                return NULL; /* only ENOMEM */
        if (b4_bundle_parse(json, len, &again, &err) < 0 || strcmp(again->digest, b->digest) ||
            again->n_files != b->n_files || again->total_bytes != b->total_bytes)
                abort();
        free(json);
        return again;
}

static void check_bundle(const struct b4_bundle *b)
{
        for (size_t i = 0; i < b->n_files; i++) {
                const struct b4_bundle_file *f = &b->files[i];
                char *bytes = NULL;
                size_t len = 0;

                if (i && strcmp(b->files[i - 1].path, f->path) >= 0)
                        abort();
                if (b4_bundle_find(b, f->path) != f)
                        abort();
                if (b4_bundle_file_decode(f, &bytes, &len, NULL) == 0 && len != f->size)
                        abort();
                free(bytes);
        }
}

static void fuzz_parse(const char *json, size_t len)
{
        struct b4_error err = { 0 };
        struct b4_bundle *b = NULL, *again;
        int r;

        r = b4_bundle_parse(json, len, &b, &err);
        if (r < 0) {
                check_refusal(r, &err);
                return;
        }
        check_bundle(b);
        again = roundtrip(b);
        b4_bundle_free(again);
        b4_bundle_free(b);
}

static void fuzz_create(char *text)
{
        struct b4_bundle_input in[FUZZ_MAX_FILES] = { 0 };
        struct b4_error err = { 0 };
        struct b4_bundle *b = NULL, *again;
        size_t n = 0;
        int r;

        for (char *line = text, *next; line && n < FUZZ_MAX_FILES; line = next) {
                char *eq;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                eq = strchr(line, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                in[n].executable = line[0] == '*';
                in[n].path = line + in[n].executable;
                in[n].data = eq + 1;
                in[n].len = strlen(eq + 1);
                n++;
        }
        r = b4_bundle_create(in, n, &b, &err);
        if (r < 0) {
                check_refusal(r, &err);
                return;
        }
        check_bundle(b);
        again = roundtrip(b);
        for (size_t i = 0; again && i < n; i++) {
                const struct b4_bundle_file *f = b4_bundle_find(again, in[i].path);
                char *bytes = NULL;
                size_t len = 0;

                if (!f || b4_bundle_file_decode(f, &bytes, &len, NULL) < 0)
                        abort();
                /* a later duplicate path is refused by the collision rule, so this is it */
                if (len != in[i].len || memcmp(bytes, in[i].data, len) != 0 ||
                    f->executable != in[i].executable)
                        abort();
                free(bytes);
        }
        b4_bundle_free(again);
        b4_bundle_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text;

        if (size < 1 || size > FUZZ_MAX_INPUT)
                return 0;
        if ((data[0] & 1) == 0) {
                fuzz_parse((const char *)data + 1, size - 1);
                return 0;
        }
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        fuzz_create(text);
        free(text);
        return 0;
}
