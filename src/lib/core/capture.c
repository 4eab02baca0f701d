/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capped capture of one output stream (every provider's exec): the first cap - cap/2 bytes,
 * a ring of the last cap/2, and the count of bytes dropped between them, joined at the end
 * with the marker "\n[... N bytes truncated ...]\n".
 */

#include "core/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strbuf.h"

int capture_init(struct capture *c, size_t cap)
{
        *c = (struct capture){ .cap = cap };
        c->head = b4_malloc(cap - cap / 2 + 1);
        c->tail = b4_malloc(cap / 2 + 1);
        if (!c->head || !c->tail) {
                capture_release(c);
                return -ENOMEM;
        }
        return 0;
}

void capture_release(struct capture *c)
{
        free(c->head);
        free(c->tail);
        *c = (struct capture){ 0 };
}

void capture_add(struct capture *c, const char *p, size_t n)
{
        size_t head_cap = c->cap - c->cap / 2, tail_cap = c->cap / 2;
        size_t k = head_cap - c->head_len < n ? head_cap - c->head_len : n;

        memcpy(c->head + c->head_len, p, k);
        c->head_len += k;
        p += k;
        n -= k;
        for (; n > 0 && tail_cap > 0; p++, n--) {
                if (c->tail_len == tail_cap)
                        c->dropped++;
                else
                        c->tail_len++;
                c->tail[c->tail_pos] = *p;
                c->tail_pos = (c->tail_pos + 1) % tail_cap;
        }
        c->dropped += n;
}

void capture_skip(struct capture *c, uint64_t n)
{
        c->dropped += n;
}

int capture_finish(struct capture *c, char **ret, size_t *ret_len, bool *truncated)
{
        size_t tail_cap = c->cap / 2;
        size_t start = c->tail_len == tail_cap ? c->tail_pos : 0;
        struct strbuf sb;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_add(&sb, c->head, c->head_len);
        if (r >= 0 && c->dropped > 0) {
                r = strbuf_addf(&sb, "\n[... %llu bytes truncated ...]\n",
                                (unsigned long long)c->dropped);
                *truncated = true;
        }
        for (size_t i = 0; r >= 0 && i < c->tail_len; i++)
                r = strbuf_addc(&sb, c->tail[(start + i) % tail_cap]);
        if (r >= 0)
                r = strbuf_detach(&sb, ret, ret_len);
        strbuf_release(&sb);
        return r;
}
