/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the replies of the reference's sh scripts (src/lib/kube/shell-fs.c), which
 * serve a Pod that cannot run b4box-agent. Trust boundary: the sandbox itself (it can
 * replace sh, head, base64, find and stat), so every byte of a reply is hostile.
 *
 * The first byte picks the parser (and a limit), the rest is the reply. Whatever the input,
 * a parser either refuses it with a negative errno or answers within its contract: a read
 * no larger than its cap, stat sizes safe integers, listed names sorted, unique, without
 * '/' and never "." or "..", walk entries relative below the base, no more than the limit,
 * batched blobs either data or an error.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strv.h"
#include "kube/shell-fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (1024 * 1024)

static void check_name(const char *s)
{
        if (!*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
                abort();
}

static void fuzz_read(const char *s, size_t n, uint64_t max)
{
        char *out = NULL;
        size_t len = 0;
        int r = kube_shell_decode_read(s, n, max, &out, &len);

        if (r >= 0 && (len > max || !out || out[len] != '\0'))
                abort();
        if (r < 0 && r != -EFBIG && r != -EIO && r != -EPROTO && r != -ENOMEM)
                abort();
        free(out);
}

static void fuzz_stat(const char *s, size_t n, bool with_target)
{
        struct b4_stat st = { 0 };

        if (kube_shell_parse_stat(s, n, with_target, &st) >= 0) {
                if (st.size > 9007199254740991ull || (st.target && st.kind != B4_FILE_SYMLINK) ||
                    (st.target && !with_target))
                        abort();
                b4_stat_clear(&st);
        }
}

static void fuzz_list(const char *s, size_t n)
{
        char **names = NULL;

        if (kube_shell_parse_list(s, n, "/workspace", &names) < 0)
                return;
        for (size_t i = 0; names[i]; i++) {
                check_name(names[i]);
                if (i > 0 && strcmp(names[i - 1], names[i]) >= 0)
                        abort();
        }
        strv_free(names);
}

static void fuzz_walk(const char *s, size_t n, size_t max)
{
        struct b4_walk_entry *e = NULL;
        size_t en = 0;

        if (kube_shell_parse_walk(s, n, "/workspace", max, &e, &en) < 0)
                return;
        if (en > max)
                abort();
        for (size_t i = 0; i < en; i++) {
                char *dup = strdup(e[i].path), *save = NULL;

                if (!dup || e[i].path[0] == '/')
                        abort();
                for (char *c = strtok_r(dup, "/", &save); c; c = strtok_r(NULL, "/", &save))
                        check_name(c);
                free(dup);
                if (e[i].st.target && e[i].st.kind != B4_FILE_SYMLINK)
                        abort();
        }
        b4_walk_entries_free(e, en);
}

static void fuzz_batch(const char *s, size_t n, uint8_t k)
{
        struct b4_read_req reqs[4] = { { "/workspace/a", 0 },
                                       { "/workspace/b", 16 },
                                       { "/workspace/c", 4096 },
                                       { "/workspace/d", B4_UNBOUNDED } };
        size_t count = (size_t)(k % 4) + 1;
        struct b4_blob out[4];

        if (kube_shell_parse_batch(s, n, reqs, count, out) < 0)
                return;
        for (size_t i = 0; i < count; i++) {
                if ((out[i].error < 0) == (out[i].data != NULL))
                        abort();
                if (out[i].data && out[i].len > reqs[i].max_bytes)
                        abort();
                free(out[i].data);
        }
}

static void fuzz_realpath(const char *s, size_t n)
{
        char *p = NULL;

        if (kube_shell_parse_realpath(s, n, &p) >= 0) {
                if (p[0] != '/')
                        abort();
                free(p);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *s = (const char *)data + 1;
        size_t n = size ? size - 1 : 0;

        if (size == 0 || size > FUZZ_MAX_INPUT)
                return 0;
        switch (data[0] % 8) {
        case 0:
                fuzz_read(s, n, data[0] >> 3);
                break;
        case 1:
                fuzz_stat(s, n, true);
                break;
        case 2:
                fuzz_stat(s, n, false);
                break;
        case 3:
                fuzz_list(s, n);
                break;
        case 4:
                fuzz_walk(s, n, data[0] >> 3);
                break;
        case 5:
                fuzz_batch(s, n, data[0] >> 3);
                break;
        case 6:
                fuzz_realpath(s, n);
                break;
        default:
                fuzz_read(s, n, B4_UNBOUNDED);
                break;
        }
        return 0;
}
