/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: b4box-agent's request parser, agent_req_parse() (src/agent/agent-req.c).
 * Trust boundary: the agent parses every frame the host side sends; a confused or replaced
 * host must not crash it.
 *
 * Input: a frame header (12 bytes, agent-proto.h; its length is cut to what follows) and
 * the payload. An accepted request must satisfy the caps the parser promises.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct agent_req *r)
{
        size_t n = 0;

        if (r->path && (r->path[0] != '/' || strlen(r->path) > AGENT_PATH_MAX))
                abort();
        if (r->n_reads > AGENT_BATCH_MAX)
                abort();
        for (size_t i = 0; i < r->n_reads; i++)
                if (!r->reads[i].path || r->reads[i].path[0] != '/')
                        abort();
        for (char **s = r->prune; s && *s; s++, n++)
                if (!**s || strchr(*s, '/') || strlen(*s) > AGENT_NAME_MAX)
                        abort();
        if (n > AGENT_PRUNE_MAX)
                abort();
        if (r->type == AGENT_EXEC) {
                size_t argc = 0, envc = 0;
                while (r->argv[argc])
                        argc++;
                while (r->env[envc])
                        if (!strchr(r->env[envc++], '='))
                                abort();
                if (!argc || argc + envc > AGENT_ARGS_MAX || !r->cwd || r->output_cap == 0 ||
                    r->output_cap > AGENT_OUTPUT_MAX)
                        abort();
        }
        if ((r->type == AGENT_READ || r->type == AGENT_WRITE) && r->max > AGENT_FILE_MAX)
                abort();
        if (r->type == AGENT_CHMOD && r->mode > 07777)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct agent_hdr h;
        struct agent_req r;
        const char *why = NULL;

        if (size < AGENT_HDR_LEN || size > AGENT_HDR_LEN + AGENT_FRAME_MAX)
                return 0;
        agent_hdr_decode(data, &h);
        if (h.len > size - AGENT_HDR_LEN)
                h.len = (uint32_t)(size - AGENT_HDR_LEN);
        /* A copy of exactly h.len bytes, so a read past it is caught by ASan. */
        unsigned char *p = malloc(h.len ? h.len : 1);
        if (!p)
                return 0;
        memcpy(p, data + AGENT_HDR_LEN, h.len);
        if (agent_req_parse(&h, p, &r, &why) == 0) {
                check(&r);
                agent_req_clear(&r);
        } else if (!why) {
                abort(); /* a refusal always says why */
        }
        free(p);
        return 0;
}
