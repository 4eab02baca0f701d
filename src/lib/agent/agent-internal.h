/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Inside the agent client: a call (one request and what its replies built so far) and the
 * reply parser that feeds it (agent-reply.c, fuzzed), the connection's submit/wait
 * (agent-conn.c) used by the typed calls (agent-fs.c, agent-exec.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-client.h"
#include "base/strbuf.h"
#include "core/capture.h"

/* What a call's replies fill. Everything owned; freed by agent_call_release(). */
struct agent_call {
        uint32_t id;
        uint16_t type; /* the request's enum agent_type */
        int efd;       /* eventfd written when the call ends; owned by agent-conn.c */
        bool done;     /* a final reply (or the connection's end) arrived */
        int error;     /* the outcome: 0 or -errno (the agent's, validated, or ours) */

        /* limits the replies must respect (set by the caller before submitting) */
        uint64_t max_bytes;       /* READ: the cap asked */
        size_t max_entries;       /* WALK / LIST */
        size_t n_files;           /* READ_BATCH: how many FILE replies */
        const uint64_t *file_max; /* READ_BATCH: each file's cap (n_files) */

        /* READ / STAT / PATH */
        struct strbuf data;
        struct b4_stat st;
        char *path;
        /* LIST */
        char **names;
        size_t n_names, names_cap;
        /* WALK */
        struct b4_walk_entry *entries;
        size_t n_entries, entries_cap;
        uint64_t walk_bytes; /* path bytes held, at most AGENT_WALK_BYTES_MAX */
        /* READ_BATCH */
        struct b4_blob *blobs;
        size_t cur;        /* the file DATA goes to, or n_files when none */
        uint64_t cur_left; /* bytes still due for it */
        size_t n_seen;     /* FILE replies seen */
        /* EXEC */
        struct capture out, err;
        uint64_t got_out, got_err; /* bytes per stream (head + tail), at most output_cap */
        size_t output_cap;
        bool started, tail_seen;
        uint32_t pid;
        uint32_t exit_code, exit_flags;
        uint64_t duration_ms, cpu_us, max_rss;
        agent_output_fn *on_output;
        void *userdata;
};

/* Prepare @c for a request of @type; limits are set by the caller after. -ENOMEM. */
int agent_call_init(struct agent_call *c, uint16_t type, size_t output_cap);
void agent_call_release(struct agent_call *c);

/**
 * agent_call_feed() - one reply frame for @c (h->id == c->id), parsed as hostile input
 * Return: 0 (more to come), 1 (the call has ended: c->error holds the outcome) or -EPROTO
 * (the frame breaks the protocol for this call: @why names it; the connection must die).
 */
int agent_call_feed(struct agent_call *c,
                    const struct agent_hdr *h,
                    const unsigned char *payload,
                    const char **why);

/* The errno an agent's ERROR may carry for @type: anything else becomes -EIO. */
int agent_errno_filter(uint16_t type, uint32_t agent_errno);

/* ---- agent-conn.c ---- */

/* Give @c an id, register it and send its request frame (@payload of @len bytes). Further
 * frames of the request (WRITE's DATA) go with agent_conn_send(). Return: 0 or -errno
 * (-ENOTCONN, -EBUSY when AGENT_INFLIGHT_MAX calls are in flight, -EIO). */
int agent_conn_submit(struct agent_conn *conn,
                      struct agent_call *c,
                      const void *payload,
                      size_t len);
int agent_conn_send(struct agent_conn *conn,
                    uint32_t id,
                    uint16_t type,
                    uint16_t flags,
                    const void *payload,
                    size_t len);
/* Wait for @c to end until @deadline_ms (monotonic; 0 = none) or @cancel (optional: calls
 * @on_cancel once, which may extend *deadline_ms). Unregisters @c. Return: c->error, or
 * -ETIMEDOUT, -ECANCELED (no on_cancel) when the wait ended first. */
typedef void agent_cancel_fn(struct agent_conn *conn, struct agent_call *c, uint64_t *deadline);
int agent_conn_wait(struct agent_conn *conn,
                    struct agent_call *c,
                    uint64_t deadline_ms,
                    struct b4_cancel *cancel,
                    agent_cancel_fn *on_cancel);
/* The fs calls' deadline from now. */
uint64_t agent_conn_fs_deadline(struct agent_conn *conn);

/* Payload builders (capped at AGENT_FRAME_MAX). */
int agent_buf_u32(struct strbuf *sb, uint32_t v);
int agent_buf_u64(struct strbuf *sb, uint64_t v);
int agent_buf_str(struct strbuf *sb, const char *s);
