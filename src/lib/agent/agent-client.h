/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host side of b4box-agent (docs/agent-protocol.md): one connection to one agent over
 * one byte stream, many calls in flight from many threads, typed calls that mirror
 * b4_fs_ops and exec with the same errno meanings (provider-impl.h).
 *
 * The byte stream is pluggable (struct agent_transport): a pair of fds (a local child, a
 * socketpair in tests), Docker's hijacked attach stream, a Kubernetes WebSocket channel.
 *
 * The agent is untrusted: it lives where the sandbox can replace it. Every reply is parsed
 * as hostile input: frame and field caps are checked before anything is allocated, a reply
 * never makes the host hold more than the call asked for (max_bytes, max_entries,
 * output_cap), and every call has a deadline, so a lying or stuck agent can make a call
 * fail, never overflow or hang the host. A protocol violation kills the connection.
 *
 * Errors of every call: negative errno with @err set, and
 *   -ENOTCONN   the connection is dead (the agent exited, the stream dropped, a violation
 *               happened before or during the call): core's recover-and-retry replaces it;
 *   -EPROTO     the agent broke the protocol during this call (the connection is dead too);
 *   -ETIMEDOUT  no reply before the call's deadline (the connection stays up);
 *   -ECANCELED  the call's cancel token fired (fs calls: before the reply came);
 *   the operation's own errors as the agent reported them, kept only when they are in the
 *   errno set the operation may return (else -EIO).
 * Thread safety: every call may run from any thread at the same time on one connection.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b4box/cancel.h"
#include "b4box/error.h"
#include "b4box/provider.h"

#include "agent-proto.h" /* src/agent: the limits (AGENT_*_MAX) and the wire */

struct agent_conn;

/* The byte stream a connection runs over. The connection owns @userdata from
 * agent_conn_open() on (even when it fails) and releases it with close. */
struct agent_transport {
        /* Write all @len bytes, or fail: 0 or -errno. Never called by two threads at once.
         * May block (backpressure); must return once close has started. */
        int (*write)(void *userdata, const void *buf, size_t len);
        /* Read up to @len bytes: the count (> 0), 0 at end of stream, or -errno. Called from
         * the connection's reader thread only; may block; must return once shutdown ran. */
        ssize_t (*read)(void *userdata, void *buf, size_t len);
        /* Make a blocked read and write return (e.g. shutdown(2)); idempotent, any thread. */
        void (*shutdown)(void *userdata);
        /* Release the stream; called once, after the reader thread has ended. */
        void (*close)(void *userdata);
        void *userdata;
};

struct agent_conn_opts {
        /* Deadline of one fs call, ms; 0 = AGENT_REPLY_TIMEOUT_MS. */
        uint64_t reply_timeout_ms;
        /* Deadline of the version handshake, ms; 0 = AGENT_HELLO_TIMEOUT_MS. */
        uint64_t hello_timeout_ms;
};

#define AGENT_REPLY_TIMEOUT_MS 60000u
#define AGENT_HELLO_TIMEOUT_MS 10000u

/**
 * agent_conn_open() - start a connection over @t and run the version handshake
 * @t:    copied; its userdata is owned by the connection from now on (closed on failure)
 * @opts: optional (NULL = defaults)
 * Return: 0 with *ret set (agent_conn_free()), or -errno: -EPROTO (not an agent, or no
 * common version), -ETIMEDOUT (no HELLO), -ENOTCONN (the stream ended), -ENOMEM.
 */
int agent_conn_open(const struct agent_transport *t,
                    const struct agent_conn_opts *opts,
                    struct agent_conn **ret,
                    struct b4_error *err);

/**
 * agent_transport_fds() - a transport over @rfd (read) and @wfd (write): pipes, or the
 * same fd (a socket); both are owned by the transport (closed by its close). Its shutdown
 * wakes a blocked read or write whatever the fds are.
 * Return: 0 or -errno (the fds are closed then).
 */
int agent_transport_fds(int rfd, int wfd, struct agent_transport *ret);

/**
 * agent_conn_free() - shut the stream down, fail every call still in flight with
 * -ENOTCONN, wait for them to leave, release everything. NULL ok. Return: NULL.
 * No call may start on @c once this has started.
 */
struct agent_conn *agent_conn_free(struct agent_conn *c);

/** agent_conn_alive() - false once the stream ended or the agent broke the protocol. */
bool agent_conn_alive(struct agent_conn *c);

/** agent_conn_version() - the protocol version agreed in the handshake. */
uint32_t agent_conn_version(struct agent_conn *c);

/* ---- a kept connection (agent-slot.c) ---- */

/*
 * The connection a provider keeps per keeper (Docker's container, a Kubernetes Pod): made on
 * first use, kept until lost, replaced only by agent_slot_reset() (which the caller runs
 * under the thread's exclusive lease, so no operation runs on a connection being freed).
 */
struct agent_slot {
        pthread_mutex_t lock;    /* conn: set from NULL under it; replaced only by reset */
        struct agent_conn *conn; /* owned */
};

/* Make a connection for agent_slot_get(): 0 with *@ret, or -errno with @err set. */
typedef int agent_connect_fn(void *userdata, struct agent_conn **ret, struct b4_error *err);

void agent_slot_init(struct agent_slot *s);
/* agent_slot_clear() - free the kept connection and the lock. */
void agent_slot_clear(struct agent_slot *s);
/**
 * agent_slot_get() - the kept connection, made by @connect(@userdata) when there is none
 * (under the slot's lock: one connect at a time, the others wait for it)
 * Return: 0 with *@ret (borrowed until agent_slot_reset()/clear(); it may have died since:
 * agent_conn_alive()), or @connect's error with its message in @err.
 */
int agent_slot_get(struct agent_slot *s,
                   agent_connect_fn *connect,
                   void *userdata,
                   struct agent_conn **ret,
                   struct b4_error *err);
/** agent_slot_lost() - whether the kept connection has died (none kept: false). */
bool agent_slot_lost(struct agent_slot *s);
/** agent_slot_reset() - drop the kept connection; the next get makes a new one. */
void agent_slot_reset(struct agent_slot *s);

/* ---- finding and starting a local agent ---- */

/**
 * agent_binary_path() - the b4box-agent to use: $B4BOX_AGENT (secure_getenv), else the
 * installed one (libexecdir), else the build tree's; the first that exists. *ret is owned.
 * Return: 0 or -ENOENT, -ENOMEM.
 */
int agent_binary_path(char **ret);

/**
 * agent_spawn() - run @path (NULL = agent_binary_path()) as a child over a socketpair
 * (its stdin and stdout), with @argv_extra (NULL-terminated, may be NULL) after argv[0],
 * and connect to it. The child's stderr is the caller's. *ret_pid: the child (the caller
 * reaps it after agent_conn_free()). Return: 0 or -errno.
 */
int agent_spawn(const char *path,
                char *const *argv_extra,
                const struct agent_conn_opts *opts,
                struct agent_conn **ret,
                pid_t *ret_pid,
                struct b4_error *err);

/* ---- filesystem calls: the b4_fs_ops contracts (provider-impl.h) ---- */
/* @flags: enum b4_fs_flags. Paths are absolute in-sandbox paths of at most AGENT_PATH_MAX
 * bytes. Ownership: every ret_* value is the caller's. */

/* -EFBIG over @max_bytes (B4_UNBOUNDED allowed: capped at AGENT_FILE_MAX), -ENOENT,
 * -EISDIR, -EINVAL (not regular), -EXDEV/-ELOOP (confinement), -EACCES. */
int agent_read_file(struct agent_conn *c,
                    const char *path,
                    unsigned flags,
                    uint64_t max_bytes,
                    char **ret,
                    size_t *ret_len,
                    struct b4_error *err);
int agent_lstat(struct agent_conn *c, const char *path, struct b4_stat *ret, struct b4_error *err);
int agent_stat(struct agent_conn *c,
               const char *path,
               unsigned flags,
               struct b4_stat *ret,
               struct b4_error *err);
/* Sorted names; -E2BIG over B4_LIST_MAX_ENTRIES; *ret_names NULL-terminated. */
int agent_list_dir(struct agent_conn *c,
                   const char *path,
                   unsigned flags,
                   char ***ret_names,
                   struct b4_error *err);
int agent_realpath(struct agent_conn *c, const char *path, char **ret, struct b4_error *err);
/* Depth-first, children sorted; -E2BIG over @max_entries (at most AGENT_WALK_MAX). */
int agent_walk(struct agent_conn *c,
               const char *path,
               size_t max_entries,
               char *const *prune,
               struct b4_walk_entry **ret,
               size_t *ret_n,
               struct b4_error *err);
/* Results in request order, per-file errors in the blobs; @n at most AGENT_BATCH_MAX. */
int agent_read_files(struct agent_conn *c,
                     const struct b4_read_req *reqs,
                     size_t n,
                     struct b4_blob **ret,
                     struct b4_error *err);
/* Parents created, temp + rename, an existing file's mode kept, a symlink leaf replaced. */
int agent_write_file(struct agent_conn *c,
                     const char *path,
                     unsigned flags,
                     const void *data,
                     size_t len,
                     struct b4_error *err);
int agent_mkdir_p(struct agent_conn *c, const char *path, struct b4_error *err);
int agent_remove(struct agent_conn *c, const char *path, struct b4_error *err);
int agent_touch(struct agent_conn *c, const char *path, unsigned flags, struct b4_error *err);
int agent_symlink(struct agent_conn *c, const char *target, const char *path, struct b4_error *err);
int agent_chmod(struct agent_conn *c, const char *path, uint32_t mode, struct b4_error *err);

/* ---- commands ---- */

enum agent_stream {
        AGENT_STREAM_STDOUT = 1,
        AGENT_STREAM_STDERR = 2,
};

/* Output as it arrives: the head of each stream live, the kept tail at exit (@tail). Runs
 * on the connection's reader thread: be quick, do not call the connection. */
typedef void agent_output_fn(
        enum agent_stream stream, const char *data, size_t len, bool tail, void *userdata);

struct agent_exec_req {
        const char *command; /* /bin/sh -c "cd '<cwd>' && command" (as native); or NULL */
        char *const *argv;   /* NULL-terminated; argv[0] searched in PATH */
        const char *cwd;     /* NULL = B4_WORKSPACE_ROOT */
        char *const *env;    /* "NAME=value", NULL-terminated, may be NULL: over the
                              * agent's environment (or instead of it: clear_env) */
        bool clear_env;
        uint64_t timeout_ms;        /* 0 = none */
        size_t output_cap;          /* per stream, 1 .. AGENT_OUTPUT_MAX (head and tail kept) */
        uint32_t max_procs;         /* RLIMIT_NPROC of the command, or the agent's pids cgroup;
                                     * 0 = none */
        struct b4_cancel *cancel;   /* optional: kills the command's whole tree */
        agent_output_fn *on_output; /* optional */
        void *userdata;
};

/**
 * agent_exec() - run a command through the agent and wait for it
 * Fills @ret like a provider's exec: out/errout (capped, head and tail around core's
 * marker), exit_code (128+N for signal N), timed_out with exit_code 124 and timeout_ms set
 * (core adds the timeout line; nothing here words it), cancelled, truncated, duration_ms.
 * A non-zero exit is a result. Errors: -ECANCELED (cancelled before it started), -E2BIG
 * (command and environment too large), -ENOENT/-EACCES/... (could not start: cwd or
 * program), -EAGAIN (the agent could not fork: pid exhaustion), -ENOTCONN (the agent went
 * away), -ETIMEDOUT (no exit report within timeout + AGENT_KILL_GRACE_MS, or that long
 * after a cancel), -EPROTO. On error @ret is empty: an in-flight command is never retried
 * here (the caller decides).
 */
int agent_exec(struct agent_conn *c,
               const struct agent_exec_req *req,
               struct b4_exec_result *ret,
               struct b4_error *err);
