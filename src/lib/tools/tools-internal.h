/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the tools module: path arithmetic, text logic, permission view, the context,
 * pending permission requests, gates.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/provider.h"

#include "base/strbuf.h"
#include "tools/tools.h"

/* ---- path.c ---- */

/*
 * Lexical resolve of @path against the absolute @root (POSIX path.resolve): an absolute
 * @path discards the root, "." and empty segments vanish, ".." pops a segment (never above
 * "/"). Return: 0, -EINVAL (@root not absolute), -ENOMEM.
 */
int jail_resolve(const char *root, const char *path, char **ret);
/* Equal to @root or under "@root/" (so "<root>-evil" is outside). */
bool jail_is_inside(const char *root, const char *path);
/* @abs relative to @root is "tool-outputs" or starts with "tool-outputs/". */
bool jail_is_tool_output(const char *root, const char *abs);

/* ---- text.c ---- */

/* Lossy UTF-8 (U+FFFD per maximal invalid subpart, as a non-fatal TextDecoder). */
int text_utf8_lossy(const char *s, size_t len, char **ret, size_t *ret_len);

/*
 * readFile's range: @start/@end 0 = absent. Fails -EINVAL with the reference's texts.
 * *ret is "[<path> lines a-b of N]\n<lines>".
 */
int text_slice_lines(const char *path,
                     const char *data,
                     size_t len,
                     int64_t start,
                     int64_t end,
                     char **ret,
                     size_t *ret_len,
                     struct b4_error *err);

/*
 * The same range over a file read in pieces (readFile on a file over the size cap): feed every
 * byte in order, then finish. Holds only the range's bytes, at most @cap of them (a range
 * over it fails -EFBIG at the feed that crosses it). finish gives what text_slice_lines()
 * gives for the whole file, texts included.
 */
struct line_scan {
        int64_t start, end; /* as given (0 = absent) */
        uint64_t line;      /* the line the next byte belongs to (1-based) */
        uint64_t newlines;  /* '\n' seen */
        bool last_was_nl;   /* the last byte fed was '\n' */
        uint64_t bytes;     /* fed so far */
        size_t cap;
        struct strbuf range; /* bytes of lines start..end, the '\n' after each */
};

void line_scan_init(struct line_scan *s, int64_t start, int64_t end, size_t cap);
void line_scan_release(struct line_scan *s);
/* Return: 0, -EFBIG (the range passed @cap; message set), -ENOMEM. */
int line_scan_feed(
        struct line_scan *s, const char *path, const char *p, size_t n, struct b4_error *err);
int line_scan_finish(
        struct line_scan *s, const char *path, char **ret, size_t *ret_len, struct b4_error *err);

struct text_edit {
        char *content; /* the edited bytes, NUL-terminated past len */
        size_t len;
        uint64_t *lines; /* 1-based line of each replaced occurrence, in the original */
        size_t n_lines;
};

void text_edit_clear(struct text_edit *e);

/*
 * editFile's splice over strictly valid UTF-8 @content (the caller checked it). Fails
 * -ENOENT (not found, with the CRLF hint) or -EEXIST (ambiguous) with the reference's texts.
 */
int text_apply_edit(const char *path,
                    const char *content,
                    size_t len,
                    const char *old_text,
                    size_t old_len,
                    const char *new_text,
                    size_t new_len,
                    bool replace_all,
                    struct text_edit *ret,
                    struct b4_error *err);

/* "replaced <k> occurrence(s) in <path> at line(s) ..." */
int text_describe_edit(const char *path, const uint64_t *lines, size_t n, char **ret);

/* ---- permissions.c ---- */

enum perm_key {
        PERM_BASH = 0,
        PERM_READ_FILE,
        PERM_WRITE_FILE,
        PERM_LIST_DIR,
        PERM_TOOL,
        PERM__COUNT,
};

int perm_key_from_string(const char *key);
const char *perm_key_to_string(enum perm_key key);

/* The store the gates consult: the app's, or the per-thread one over it. */
struct perm_view {
        struct b4_permissions *app;    /* NULL = no store: allow everything */
        struct b4_permissions *thread; /* NULL = app store semantics */
        struct b4_grant_store *grants;
        const char *thread_id;
};

bool perm_view_is_open(const struct perm_view *v); /* no store, or bypass */
enum b4_permission_mode perm_view_mode(const struct perm_view *v);
int perm_view_match(const struct perm_view *v,
                    const char *key,
                    const char *candidate,
                    enum b4_permission_decision *ret,
                    struct b4_error *err);
/* "Always": record @pattern for @key where this view records. Return: 1 recorded, 0 not
 * recordable (allowed once, warning logged), -errno. */
int perm_view_add_allow(const struct perm_view *v,
                        const char *key,
                        const char *pattern,
                        struct b4_error *err);

/* ---- what a gate asks (permission-gate.c) ---- */

struct jv;

enum ask_kind {
        ASK_COMMAND = 0,
        ASK_PATH,
        ASK_TOOL,
};

/* What a gate wants the user asked about. */
struct ask {
        bool set;
        enum ask_kind kind;
        char *key;       /* bash, readFile, writeFile, listDir, tool */
        char *candidate; /* the command, canonical path, or tool name */
        char *pattern;   /* suggested pattern */
};

void ask_clear(struct ask *a);

/* ---- pending.c: parked permission requests ---- */

/* A call parked on a permission request, until its answer. */
struct pending {
        char *id;    /* the interrupt id */
        char *owner; /* whose request: only the same owner may answer it */
        char *tool;
        struct jv *args;  /* a reference */
        char **once_keys; /* answered "once"/"always" so far in this call's chain */
        char **once_cands;
        struct ask ask;
};

void pending_release(struct pending *p);

/* At most this many requests stay pending in one store; the oldest goes past it. */
#define TOOLS_MAX_PENDING 256

/* The one store of pending requests: a standalone context's own, or its host's. Thread-safe. */
struct pending_store;

int pending_store_new(struct pending_store **ret);
struct pending_store *pending_store_free(struct pending_store *s);
/* A fresh interrupt id ("perm-<ms>-<6 base36>"). Return: 0, -ENOMEM. */
int pending_new_id(char **ret);
/* Park *p (moved in, *p zeroed, also on failure). Return: 0, -ENOMEM. */
int pending_park(struct pending_store *s, struct pending *p);
/* Take @owner's request @id out of the store into *ret. Return: 0, -ENOENT. */
int pending_take(struct pending_store *s, const char *owner, const char *id, struct pending *ret);
/* @owner's newest request, borrowed until the store next changes; NULL when none. */
const struct pending *pending_newest(struct pending_store *s, const char *owner);

/* ---- result.c: the result documents ---- */

/* {"ok":true,"result":@value}; @value is consumed. Return: 0, -ENOMEM. */
int result_ok(struct jv *value, struct b4_tool_result *ret);
/* The error.code of @e: its registry code, "permission_required" (-EAGAIN) or "tool_error". */
const char *result_error_code(const struct b4_error *e);
/* {"ok":false,"error":{code, [errno,] message}[,"permissionRequest":@request]}; @code is a
 * static string; @request (or NULL) is consumed. Return: 0, -ENOMEM. */
int result_error(const char *code,
                 const struct b4_error *e,
                 struct jv *request,
                 struct b4_tool_result *ret);
/* The permissionRequest object of @p. Return: 0, -ENOMEM. */
int result_request(const struct pending *p, struct jv **ret);
/* "command", "path" or "tool". */
const char *ask_kind_name(enum ask_kind kind);

/* ---- the context (context.c; used by dispatch.c, tools.c, permission-gate.c) ---- */

struct b4_tools {
        struct b4_sandbox *sb; /* NULL over a reader: no shell, no writes */
        struct b4_fs *fs;
        struct b4_permissions *own_perms; /* a reader context's thread lists, or NULL */
        char *root;
        char *real_root; /* lazily, the fs realpath of root */
        char *thread_id; /* the sandbox's thread: whose grants apply */
        char *owner;     /* whose permission requests this context parks and answers */
        struct perm_view view;
        uint64_t read_cap;
        char **approve;
        struct b4_cancel *cancel;
        b4_exec_output_fn *on_output; /* runBash's output as it comes, or NULL */
        void *output_userdata;
        struct pending_store *pending; /* borrowed from the host, or own_pending */
        struct pending_store *own_pending;
        /* During one call: the one-shot answers in force and the request a gate raised. */
        char *const *once_keys;
        char *const *once_cands;
        struct ask ask;
};

/*
 * A context that parks its requests in @store (borrowed, must outlive it) under @owner; a
 * NULL @store makes the context its own. See b4_tools_new() for the rest.
 */
int tools_context_new(struct b4_sandbox *sb,
                      const struct b4_tools_options *opts,
                      struct pending_store *store,
                      const char *owner,
                      struct b4_tools **ret,
                      struct b4_error *err);

/*
 * A context over @rd's read-only filesystem (no sandbox: runBash and the changes fail), with
 * @perms (may be NULL) as the thread's lists, taken (freed with the context, or on failure).
 */
int tools_context_new_reader(struct b4_reader *rd,
                             const struct b4_tools_options *opts,
                             struct pending_store *store,
                             struct b4_permissions *perms,
                             struct b4_tools **ret,
                             struct b4_error *err);

/* ---- permission-gate.c ---- */

/* What a tool operates on, decided once by the jail (gate_path). */
struct jail_target {
        char *abs;        /* the lexical absolute path: what messages show */
        char *path;       /* the path the backend is called with */
        unsigned flags;   /* enum b4_fs_flags the backend must resolve @path under */
        bool tool_output; /* @abs is under tool-outputs/ */
};

void jail_target_clear(struct jail_target *jt);

/* Gates: 0 allowed; -EACCES denied (B4_E3001, message set); -EAGAIN ask (t->ask filled). */
int gate_command(struct b4_tools *t, const char *command, struct b4_error *err);
int gate_tool(struct b4_tools *t, const char *name, struct b4_error *err);
/*
 * The jail (docs/tools.md, "Path jail"): lexical resolve, then one of
 *   - under tool-outputs/: the lexical path itself, beneath the workspace, no symlinks;
 *   - no permission store (or bypass): the lexical path, unconfined;
 *   - else the canonical path (the fs realpath; one that cannot be resolved is refused),
 *     gated when outside the workspace, used with B4_FS_NO_SYMLINKS (+ B4_FS_BENEATH inside),
 *     so the backend operates on exactly the path that was decided on or fails.
 * Return: 0 and *ret filled; a gate's result; -ENAMETOOLONG, -ELOOP ... (unresolvable).
 */
int gate_path(struct b4_tools *t,
              const char *key,
              const char *path,
              struct jail_target *ret,
              struct b4_error *err);

/* gate_path() with the leaf kept or canonicalised as asked (gate_path keeps it for
 * writeFile only): an lstat or a remove acts on a symlink leaf, never through it. */
int gate_path_leaf(struct b4_tools *t,
                   const char *key,
                   const char *path,
                   bool keep_leaf,
                   struct jail_target *ret,
                   struct b4_error *err);

/* A failure of the backend on @jt in the tools' words, shown with the lexical path (tools.c). */
int jail_failed(const char *op,
                const struct jail_target *jt,
                int r,
                const struct b4_error *inner,
                struct b4_error *err);

/* The five tools: @args validated by the dispatcher. *ret = the result value. */
typedef int tool_fn(struct b4_tools *t,
                    const struct jv *args,
                    struct jv **ret,
                    struct b4_error *err);
int tool_read_file(struct b4_tools *t,
                   const struct jv *args,
                   struct jv **ret,
                   struct b4_error *err);
int tool_write_file(struct b4_tools *t,
                    const struct jv *args,
                    struct jv **ret,
                    struct b4_error *err);
int tool_edit_file(struct b4_tools *t,
                   const struct jv *args,
                   struct jv **ret,
                   struct b4_error *err);
int tool_list_dir(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err);
int tool_run_bash(struct b4_tools *t, const struct jv *args, struct jv **ret, struct b4_error *err);
/* runBash's per-call options against the policy's bounds (b4_sandbox_exec_bounds()), and
 * the env names: 0, or -EINVAL with the message naming the bound. */
int run_bash_check(struct b4_tools *t, const struct jv *args, struct b4_error *err);
