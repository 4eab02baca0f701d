/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * File operations and commands of a Pod that cannot run b4box-agent (agent.c decides):
 * the reference's batched `sh -s` scripts (b4run-behaviour.md §1.5), one exec each, the
 * script on stdin (exec commands travel in the request URL). The sandbox answers, so every
 * reply is parsed as hostile: bounded (each exec's output capped at what an honest reply
 * can be), framing checked, names kept as bytes. The parsers are pure (tested in
 * tests/kubeprov/test-kube-shell.c, fuzzed by tests/fuzz/fuzz-kube-shell.c).
 *
 * What the scripts cannot do (docs/kubernetes-provider.md, "Without the agent"): no process
 * limit, no streaming of output (the capture goes whole at the end), no background
 * processes; cancel closes the exec, the command in the Pod may live on; confinement
 * (enum b4_fs_flags) is checked on the resolved path before the operation, so a symlink
 * swapped in between is not caught (as Docker's fallback); mtimes are whole seconds.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"
#include "b4box/provider-impl.h"

struct kube_agent;

#define KUBE_SHELL_FILE_MAX   (64u << 20)  /* one file read or written, at most */
#define KUBE_SHELL_SCRIPT_MAX (96u * 1024) /* a batched read's script, at most */
#define KUBE_SHELL_WALK_ENTRY 8448u        /* a walk's bytes per entry (the reference's) */
#define KUBE_SHELL_WALK_MAX   100000u      /* a walk's entries, at most */
#define KUBE_SHELL_OUT_MAX    (256u << 20) /* one exec's stdout, at most */
#define KUBE_SHELL_TIMEOUT_MS 60000u       /* one file operation's exec */
#define KUBE_SHELL_GRACE_MS   15000u       /* a command's exec past its `timeout` */

/* The exit codes of the scripts' own checks (any other failure is -EIO). */
enum kube_shell_exit {
        KUBE_SH_ENOENT = 90,
        KUBE_SH_EISDIR = 91,
        KUBE_SH_EINVAL = 92, /* not a regular file */
        KUBE_SH_ENOTDIR = 93,
        KUBE_SH_ELOOP = 94,
        KUBE_SH_EXDEV = 95,
        KUBE_SH_EEXIST = 96,
        KUBE_SH_EACCES = 97,
        KUBE_SH_ENOTEMPTY = 98,
};

/* -errno of one of those exit codes, or 0 for any other. */
int kube_shell_errno(int exit_code);

/* ---- the parsers: every input hostile ---- */

/*
 * kube_shell_decode_read() - a bounded read's reply: base64 (whitespace allowed) of the
 * file's first max+1 bytes, then the footer "\nB4_READ_STATUS_<head's status>\n".
 * Return: 0 with *ret (owned, NUL-terminated past *ret_len); -EFBIG over @max; -EIO a
 * non-zero status; -EPROTO anything malformed (no footer within the last 40 bytes, not
 * base64); -ENOMEM.
 */
int kube_shell_decode_read(const char *out, size_t len, uint64_t max, char **ret, size_t *ret_len);

/*
 * kube_shell_parse_stat() - "<hex mode> <size> <mtime s>\n", then for lstat of a symlink its
 * raw target (the rest of the reply, non-empty, no NUL). A size must be a safe integer
 * (at most 2^53-1). Return: 0 with *ret (ret->target owned); -EPROTO; -ENOMEM.
 */
int kube_shell_parse_stat(const char *out, size_t len, bool with_target, struct b4_stat *ret);

/*
 * kube_shell_parse_list() - `find DIR -mindepth 1 -maxdepth 1 -print0`: each record is
 * DIR/<name>\0 with a name of no '/' that is not "." or ".."; no duplicate.
 * Return: 0 with *ret (sorted bytewise, NULL-terminated, owned); -E2BIG over
 * B4_LIST_MAX_ENTRIES; -EPROTO; -ENOMEM.
 */
int kube_shell_parse_list(const char *out, size_t len, const char *dir, char ***ret);

/*
 * kube_shell_parse_walk() - the reference's walk reply, base64 (whitespace allowed) of:
 * batches of "<count>\n", count lines "<hex mode> <size> <mtime>\n", count paths each
 * NUL-terminated, count link targets each NUL-terminated (empty for non-links); then
 * "B4_WALK_STATUS_<find's status>\n". Decoded, it is at most
 * (max_entries + 1) * KUBE_SHELL_WALK_ENTRY bytes (more: -E2BIG). Each path is below
 * @base ("<base>/...", no empty, "." or ".." component), reported relative; entries are
 * sorted depth-first, children bytewise.
 * Return: 0 with *ret and *ret_n (owned); -E2BIG over @max_entries; -EIO a non-zero walk
 * status; -EPROTO; -ENOMEM.
 */
int kube_shell_parse_walk(const char *out,
                          size_t len,
                          const char *base,
                          size_t max_entries,
                          struct b4_walk_entry **ret,
                          size_t *ret_n);

/*
 * kube_shell_parse_batch() - a batched read's reply: per request, either a bounded read's
 * reply or a line "!<exit code>" (the script's checks), then a line "#"; exactly @n of them,
 * nothing but whitespace after. Fills @ret[0..n) (per-file errors in the blobs).
 * Return: 0; -EPROTO (the whole batch is refused); -ENOMEM. On error @ret holds nothing.
 */
int kube_shell_parse_batch(
        const char *out, size_t len, const struct b4_read_req *reqs, size_t n, struct b4_blob *ret);

/* kube_shell_parse_realpath() - `realpath -m`: an absolute path (newlines allowed: names
 * are bytes), then one newline; no NUL. Return: 0 with *ret (owned); -EPROTO; -ENOMEM. */
int kube_shell_parse_realpath(const char *out, size_t len, char **ret);

/* ---- the members ---- */

/*
 * The struct b4_fs_ops of the fallback: each member finds its Pod's link with
 * kube_fs_agent() (sandbox.c) and runs one script (a batched read: one per
 * KUBE_SHELL_SCRIPT_MAX of script). Errors are worded as the agent's calls word them
 * ("<op> <path>: <strerror>"). A failed exec (the Pod gone, the stream broken) is
 * -ENOTCONN: core recovers the keeper and retries the call once.
 */
extern const struct b4_fs_ops kube_shell_fs_ops;

/* A command (the handle's exec without the agent). */
struct kube_shell_cmd {
        const char *command;
        const char *cwd;     /* NULL = B4_WORKSPACE_ROOT */
        char *const *env;    /* "NAME=value", names already checked; may be NULL */
        uint64_t timeout_ms; /* 0 = none; else `timeout <ceil(s)>s` in the Pod */
        size_t output_cap;   /* per stream, the first bytes kept */
        int cancel_fd;       /* -EBADF = none */
};

/*
 * kube_shell_exec() - one exec: `cd <cwd> && <command>` under `sh -c` (stdin /dev/null),
 * wrapped in `timeout` when @c->timeout_ms is set (exit 124 is the timeout: ret->timed_out).
 * Return: 0 with *ret (a non-zero exit is a result); -ECANCELED; -ENOTCONN (the exec could
 * not start: retried after recovery); -EIO (it broke while the command ran: never retried);
 * -ENOEXEC (the exec ran nothing: no sh in the image); -EPERM/-EACCES (refused); -ENOMEM.
 */
int kube_shell_exec(struct kube_agent *a,
                    const struct kube_shell_cmd *c,
                    struct b4_exec_result *ret,
                    struct b4_error *err);

/* The script kube_shell_exec() sends (tests). Return: 0 with *ret (owned) or -ENOMEM. */
int kube_shell_exec_script(const struct kube_shell_cmd *c, char **ret);
