/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box-agent's parts: the request parser (agent-req.c, fuzzed), the framed writer and the
 * request table (agent-main.c), the file operations (agent-fs.c, over native's fs.c: one
 * place for the file rules) and the commands (agent-exec.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/provider.h"

#include "agent-proto.h"
#include "base/strbuf.h"

/* A request, parsed and validated: every string is owned and NUL-terminated. */
struct agent_req {
        uint32_t id;
        uint16_t type;    /* enum agent_type */
        uint32_t fsflags; /* enum b4_fs_flags (only the known bits) */
        uint64_t max;     /* READ max_bytes, WALK max_entries, WRITE len */
        uint32_t mode;    /* CHMOD */
        char *path;
        char *target;              /* SYMLINK */
        struct b4_read_req *reads; /* READ_BATCH: n_reads, paths owned */
        size_t n_reads;
        char **prune; /* WALK: NULL-terminated, or NULL */
        /* EXEC */
        uint32_t execflags;
        uint64_t timeout_ms, output_cap;
        uint32_t max_procs;
        char *cwd;
        char **argv, **env; /* NULL-terminated; env may be empty */
        /* HELLO */
        uint32_t min_version, max_version;
};

/**
 * agent_req_parse() - decode the request in the frame (@h, @payload of h->len bytes)
 * Every field is checked against its cap (agent-proto.h) and the payload must be consumed
 * whole. Return: 0, or -EPROTO (malformed: *ret_why names the problem), -EOPNOTSUPP
 * (unknown type), -ENOMEM. On failure nothing is held.
 */
int agent_req_parse(const struct agent_hdr *h,
                    const unsigned char *payload,
                    struct agent_req *ret,
                    const char **ret_why);
void agent_req_clear(struct agent_req *r);

/* ---- agent-main.c: replies ---- */

/* Send one frame on stdout (whole, under the writer's lock). Return: 0 or -errno. */
int agent_send(uint32_t id, uint16_t type, uint16_t flags, const void *payload, size_t len);
/* Send ERROR(-@r, @msg) for @id. */
int agent_send_error(uint32_t id, int r, const char *msg);

/* Payload builders over a strbuf capped at AGENT_FRAME_MAX. Return: 0, -E2BIG, -ENOMEM. */
int agent_put_u32s(struct strbuf *sb, uint32_t v);
int agent_put_u64s(struct strbuf *sb, uint64_t v);
int agent_put_strs(struct strbuf *sb, const char *s, size_t len);
int agent_put_stat(struct strbuf *sb, const struct b4_stat *st);

/* Whether @id has a CANCEL pending (agent-exec.c polls agent_cancel_fd()). */

/* ---- agent-fs.c ---- */

/* The root every path resolves in ("/" or --root) and whether writes are refused. */
int agent_fs_init(const char *root, bool read_only);
/* Run a file request and send its reply. @data: WRITE's bytes (owned by the caller). */
void agent_fs_serve(const struct agent_req *r, const void *data, size_t len);

/* ---- agent-exec.c ---- */

/* Optional pids cgroup (v2) under which each command gets its own child. */
void agent_exec_init(const char *cgroup_dir);
/* Run an EXEC request to its end, sending STARTED, DATA and EXIT (or ERROR). @cancel_fd:
 * readable once the host cancelled it (or the agent is shutting down). */
void agent_exec_serve(const struct agent_req *r, int cancel_fd);
