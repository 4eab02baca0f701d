/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The wire protocol between the provider (host side) and a thread's keeper (PID 1 of the
 * sandbox). Both ends are built from this tree, so the layout is native-endian and fixed.
 *
 * One connection per command on the keeper's listening unix socket:
 *   client -> keeper: struct keeper_req_hdr + data, with SCM_RIGHTS [stdout, stderr] or,
 *                     with KEEPER_CGROUP, [stdout, stderr, the command's own cgroup dir]
 *   keeper -> client: struct keeper_msg STARTED(pid), then EXITED(wait status),
 *                     or FAILED(errno) when the command could not be started
 *   client -> keeper: struct keeper_msg KILL(signal) at any time; closing the connection
 *                     before EXITED also kills the command's process group and session,
 *                     and everything in its cgroup when it has one.
 *
 * data = seccomp BPF (bpf_len struct sock_filter), then cwd, argv[] and envp[] as
 * NUL-terminated strings, back to back.
 *
 * Version 2 adds background commands (KEEPER_BACKGROUND; a version 1 request is still
 * served as before, and the provider sends 2 only for background commands, so a keeper
 * started by an older build keeps running commands and refuses only those):
 *   fds:   [spool, status] then the cgroup dir (KEEPER_CGROUP), then stdin (KEEPER_STDIN)
 *   data:  as above, then the timeout in ms as a decimal string ("0" = none)
 *   reply: STARTED(pid), and the keeper closes the connection: the command is the
 *          keeper's now. Its stdout and stderr go to one pipe the keeper copies into the
 *          spool (an O_APPEND file), KEEPER_SPOOL_MAX bytes at most (then discarded);
 *          stdin is the given fd or /dev/null. At its deadline the keeper kills it as a
 *          KILL would. When it is reaped the keeper writes to the status fd one line
 *          "<wait status> <timed out 0|1> <truncated 0|1>\n" and closes everything.
 */

#include <stdint.h>

#define KEEPER_MAGIC         0x6b346272u
#define KEEPER_PROTO_VERSION 2u                  /* 1: foreground only (still served) */
#define KEEPER_REQ_MAX       (4u * 1024 * 1024)  /* whole request, bytes */
#define KEEPER_ARGS_MAX      4096u               /* argv + envp entries */
#define KEEPER_BPF_MAX       4096u               /* BPF instructions */
#define KEEPER_LISTEN_FD     3                   /* where the keeper finds its socket */
#define KEEPER_SPOOL_MAX     (64u * 1024 * 1024) /* a background command's spool, bytes */

enum keeper_req_flags {
        KEEPER_SETUID = 1u << 0,    /* setgroups(0) + setresgid/setresuid to gid/uid */
        KEEPER_DROP_CAPS = 1u << 1, /* clear bounding, ambient, eff/perm/inh sets */
        KEEPER_NO_NEW_PRIVS = 1u << 2,
        KEEPER_SECCOMP = 1u << 3,      /* load the BPF in the request (implies no_new_privs) */
        KEEPER_NO_SETGROUPS = 1u << 4, /* rootless: setgroups() is denied in the user ns */
        KEEPER_CGROUP = 1u << 5,       /* a third fd: an empty cgroup dir the command joins */
        KEEPER_CG_FREEZER = 1u << 6,   /* ... a v1 freezer cgroup: freeze, kill, thaw */
        KEEPER_CG_KILL = 1u << 7,      /* ... a v2 cgroup: write cgroup.kill */
        KEEPER_BACKGROUND = 1u << 8,   /* v2: a background command (see above) */
        KEEPER_STDIN = 1u << 9,        /* v2, with KEEPER_BACKGROUND: a last fd, its stdin */
};

struct keeper_req_hdr {
        uint32_t magic;
        uint32_t version;
        uint32_t flags; /* enum keeper_req_flags */
        uint32_t uid, gid;
        uint32_t n_argv, n_env;
        uint32_t bpf_len;  /* instructions */
        uint32_t data_len; /* bytes after the header */
};

enum keeper_msg_type {
        KEEPER_MSG_STARTED = 1, /* value: pid inside the sandbox */
        KEEPER_MSG_EXITED = 2,  /* value: wait status */
        KEEPER_MSG_FAILED = 3,  /* value: positive errno */
        KEEPER_MSG_KILL = 4,    /* client -> keeper; value: signal */
};

struct keeper_msg {
        uint32_t type;
        int32_t value;
};
