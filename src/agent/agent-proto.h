/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The wire protocol between the host (src/lib/agent, the client) and b4box-agent (inside a
 * Docker or Kubernetes sandbox), over one byte stream: the agent's stdin (requests) and
 * stdout (replies). docs/agent-protocol.md is its description; this header is its
 * definition, shared by both ends. Unlike keeper-proto.h the two ends may run on different
 * machines, so every integer is little-endian and every layout is explicit.
 *
 * A frame is a 12-byte header and a payload of at most AGENT_FRAME_MAX bytes:
 *   u32 len    payload bytes after the header
 *   u32 id     the request it belongs to (chosen by the host, non-zero; 0 = the connection)
 *   u16 type   enum agent_type
 *   u16 flags  enum agent_frame_flags (0 unless the type says otherwise)
 * Payload fields follow one another with no padding: u32, u64, i32, i64 (little-endian) and
 * str = u32 length + that many bytes (no NUL inside; each field has its own cap).
 */

#include <stdint.h>
#include <string.h>

#define AGENT_MAGIC          0x61346262u /* "bb4a" */
#define AGENT_PROTO_VERSION  2u
#define AGENT_HDR_LEN        12u
#define AGENT_FRAME_MAX      (1024u * 1024)          /* payload bytes of one frame */
#define AGENT_DATA_CHUNK     (256u * 1024)           /* what a sender puts in one DATA frame */
#define AGENT_PATH_MAX       4096u                   /* a path or symlink target, bytes */
#define AGENT_NAME_MAX       255u                    /* one directory entry name */
#define AGENT_MSG_MAX        512u                    /* an ERROR's message */
#define AGENT_ARGS_MAX       4096u                   /* argv + env entries of one EXEC */
#define AGENT_BATCH_MAX      4096u                   /* files in one READ_BATCH */
#define AGENT_PRUNE_MAX      256u                    /* prune names in one WALK */
#define AGENT_INFLIGHT_MAX   256u                    /* requests the agent runs at once */
#define AGENT_FILE_MAX       (1024ull * 1024 * 1024) /* one file read or written, bytes */
#define AGENT_WRITE_PENDING  (512ull * 1024 * 1024)  /* WRITE data the agent holds at once */
#define AGENT_OUTPUT_MAX     (64ull * 1024 * 1024)   /* output_cap of one EXEC stream */
#define AGENT_WALK_MAX       1000000ull              /* max_entries of one WALK */
#define AGENT_WALK_BYTES_MAX (256ull * 1024 * 1024)  /* path bytes of one WALK's entries */
#define AGENT_KILL_GRACE_MS  10000u                  /* after a kill, until the exit is reported */

enum agent_type {
        /* connection */
        AGENT_HELLO = 1, /* host: u32 magic, u32 min_version, u32 max_version;
                          * agent: u32 magic, u32 version, u32 frame_max, u32 inflight_max,
                          *        str agent_version */
        AGENT_FATAL = 2, /* agent, id 0: str message; the agent then exits */
        /* requests (host -> agent) */
        AGENT_LSTAT = 16,      /* str path                                  -> STAT */
        AGENT_STAT = 17,       /* u32 fsflags, str path                     -> STAT */
        AGENT_REALPATH = 18,   /* str path                                  -> PATH */
        AGENT_READ = 19,       /* u32 fsflags, u64 max_bytes, str path      -> DATA*, DONE(len) */
        AGENT_READ_BATCH = 20, /* u32 n, n x (u64 max_bytes, str path)
                                * -> per file: FILE, DATA*; then DONE(n) */
        AGENT_LIST = 21,       /* u32 fsflags, str path                     -> NAMES*, DONE(n) */
        AGENT_WALK = 22,       /* u64 max_entries, str path, u32 n, n x str prune
                                *                                            -> ENTRIES*, DONE(n) */
        AGENT_WRITE = 23,      /* u32 fsflags, u64 len, str path; then the host's DATA frames
                                * carrying exactly len bytes                -> OK */
        AGENT_MKDIR_P = 24,    /* str path                                  -> OK */
        AGENT_REMOVE = 25,     /* str path                                  -> OK */
        AGENT_TOUCH = 26,      /* u32 fsflags, str path                     -> OK */
        AGENT_SYMLINK = 27,    /* str target, str path                      -> OK */
        AGENT_CHMOD = 28,      /* u32 mode, str path                        -> OK */
        AGENT_EXEC = 29,       /* u32 execflags, u64 timeout_ms, u64 output_cap, u32 max_procs,
                                * str cwd, u32 argc, argc x str, u32 envc, envc x str
                                *                      -> STARTED, DATA* (stream flags), EXIT */
        AGENT_CANCEL = 30,     /* (empty) with the id of a running EXEC: kill it; no reply of
                                * its own (the EXEC ends with EXIT, cancelled) */
        /* replies (agent -> host) */
        AGENT_OK = 64,      /* (empty) */
        AGENT_ERROR = 65,   /* u32 errno (positive), str message: the request failed */
        AGENT_STATR = 66,   /* stat: u32 kind, u32 executable, u64 size, i64 mtime_ms,
                             *       str symlink target (empty unless kind is symlink) */
        AGENT_PATH = 67,    /* str path */
        AGENT_DATA = 68,    /* raw bytes (the whole payload) */
        AGENT_FILE = 69,    /* u32 index, u32 errno (0 = ok), u64 len; len bytes of DATA follow */
        AGENT_NAMES = 70,   /* u32 n, n x str name */
        AGENT_ENTRIES = 71, /* u32 n, n x (str path, stat) */
        AGENT_DONE = 72,    /* u64 count */
        AGENT_STARTED = 73, /* u32 pid (inside the sandbox) */
        AGENT_EXIT = 74,    /* u32 exit_code (0..255), u32 exitflags, u64 dropped_stdout,
                             * u64 dropped_stderr, u64 duration_ms, u64 cpu_us (user +
                             * system of the command and what it waited for), u64 max_rss
                             * (bytes: the largest resident set of one of those processes) */
};

enum agent_frame_flags {
        AGENT_F_STDOUT = 1u << 0, /* DATA of an EXEC: stdout */
        AGENT_F_STDERR = 1u << 1, /* DATA of an EXEC: stderr */
        AGENT_F_TAIL = 1u << 2,   /* DATA of an EXEC: the tail kept past the head (at exit) */
};

enum agent_exec_flags {
        AGENT_EXEC_SHELL = 1u << 0, /* argv is { command }: /bin/sh -c "cd '<cwd>' && command" */
        AGENT_EXEC_CLEAR_ENV = 1u << 1, /* env replaces the agent's environment */
};

enum agent_exit_flags {
        AGENT_EXIT_TIMED_OUT = 1u << 0, /* the timeout fired: exit_code is 124 */
        AGENT_EXIT_CANCELLED = 1u << 1, /* a CANCEL killed it */
        AGENT_EXIT_SIGNALED = 1u << 2,  /* exit_code is 128 + the signal */
};

/* ---- little-endian helpers, shared by both ends ---- */

static inline void agent_put_u16(unsigned char *p, uint16_t v)
{
        p[0] = (unsigned char)v;
        p[1] = (unsigned char)(v >> 8);
}

static inline void agent_put_u32(unsigned char *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (unsigned char)(v >> (8 * i));
}

static inline void agent_put_u64(unsigned char *p, uint64_t v)
{
        for (int i = 0; i < 8; i++)
                p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t agent_get_u16(const unsigned char *p)
{
        return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t agent_get_u32(const unsigned char *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t agent_get_u64(const unsigned char *p)
{
        return (uint64_t)agent_get_u32(p) | (uint64_t)agent_get_u32(p + 4) << 32;
}

/* A frame header, decoded. */
struct agent_hdr {
        uint32_t len, id;
        uint16_t type, flags;
};

static inline void agent_hdr_encode(unsigned char *p, const struct agent_hdr *h)
{
        agent_put_u32(p, h->len);
        agent_put_u32(p + 4, h->id);
        agent_put_u16(p + 8, h->type);
        agent_put_u16(p + 10, h->flags);
}

static inline void agent_hdr_decode(const unsigned char *p, struct agent_hdr *h)
{
        h->len = agent_get_u32(p);
        h->id = agent_get_u32(p + 4);
        h->type = agent_get_u16(p + 8);
        h->flags = agent_get_u16(p + 10);
}

/* A cursor over a received payload: every get fails (returns -1) past the end, and once a
 * get failed the cursor stays failed. Strings are bounded by the caller's cap. */
struct agent_rd {
        const unsigned char *p;
        size_t left;
        int bad;
};

static inline int agent_rd_u32(struct agent_rd *r, uint32_t *v)
{
        if (r->bad || r->left < 4)
                return r->bad = -1;
        *v = agent_get_u32(r->p);
        r->p += 4;
        r->left -= 4;
        return 0;
}

static inline int agent_rd_u64(struct agent_rd *r, uint64_t *v)
{
        if (r->bad || r->left < 8)
                return r->bad = -1;
        *v = agent_get_u64(r->p);
        r->p += 8;
        r->left -= 8;
        return 0;
}

/* A str field of at most @max bytes, with no NUL inside: *ret points into the payload
 * (not NUL-terminated), *ret_len its length. */
static inline int agent_rd_str(struct agent_rd *r, size_t max, const char **ret, size_t *ret_len)
{
        uint32_t n;

        if (agent_rd_u32(r, &n) < 0 || n > max || n > r->left || memchr(r->p, 0, n))
                return r->bad = -1;
        *ret = (const char *)r->p;
        *ret_len = n;
        r->p += n;
        r->left -= n;
        return 0;
}

/* The whole payload was consumed and nothing failed. */
static inline int agent_rd_end(const struct agent_rd *r)
{
        return r->bad || r->left ? -1 : 0;
}
