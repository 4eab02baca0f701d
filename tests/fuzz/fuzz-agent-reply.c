/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the host's reply parser for b4box-agent, agent_call_feed()
 * (src/lib/agent/agent-reply.c). Trust boundary: the agent runs where the sandbox can
 * replace it, so it controls every byte of every reply.
 *
 * Input: byte 0 picks the call (a request type), byte 1 its limits; then frames (12-byte
 * headers, lengths cut to what is left) fed in order until the call ends or refuses one.
 * Whatever ends must respect the limits the call was made with.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t types[] = { AGENT_LSTAT,      AGENT_STAT,    AGENT_REALPATH, AGENT_READ,
                                  AGENT_READ_BATCH, AGENT_LIST,    AGENT_WALK,     AGENT_WRITE,
                                  AGENT_MKDIR_P,    AGENT_SYMLINK, AGENT_EXEC };

static void check(const struct agent_call *c)
{
        if (c->type == AGENT_READ && c->data.len > c->max_bytes)
                abort();
        if (c->n_names > c->max_entries || c->n_entries > c->max_entries)
                abort();
        if (c->got_out > c->output_cap || c->got_err > c->output_cap)
                abort();
        for (size_t i = 0; c->blobs && i < c->n_files; i++)
                if (c->blobs[i].data && c->blobs[i].len > c->file_max[i])
                        abort();
        if (c->done && c->error > 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const uint64_t file_max[4] = { 0, 3, 100, 1 << 20 };
        struct agent_call c;

        if (size < 2 || size > 256 * 1024)
                return 0;
        uint16_t type = types[data[0] % (sizeof(types) / sizeof(types[0]))];
        size_t cap = 1 + (data[1] & 63);
        if (agent_call_init(&c, type, cap) < 0)
                return 0;
        c.max_bytes = data[1];
        c.max_entries = 1 + (data[1] >> 4);
        c.n_files = 4;
        c.file_max = file_max;
        c.cur = 4;
        if (type == AGENT_READ_BATCH)
                c.blobs = calloc(4, sizeof(*c.blobs));
        for (size_t off = 2; off + AGENT_HDR_LEN <= size && !c.done;) {
                struct agent_hdr h;
                const char *why = NULL;
                agent_hdr_decode(data + off, &h);
                off += AGENT_HDR_LEN;
                if (h.len > size - off)
                        h.len = (uint32_t)(size - off);
                unsigned char *p = malloc(h.len ? h.len : 1);
                if (!p)
                        break;
                memcpy(p, data + off, h.len);
                off += h.len;
                int r = agent_call_feed(&c, &h, p, &why);
                free(p);
                if (r < 0 && r != -EPROTO && r != -ENOMEM)
                        abort();
                if (r == -EPROTO && !why)
                        abort(); /* a refusal always says why */
                check(&c);
                if (r < 0)
                        break;
        }
        agent_call_release(&c);
        return 0;
}
