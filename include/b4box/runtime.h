/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The thread runtime: threads (stored), their sandboxes (acquired at the first run, shared
 * with child threads, released when idle), one run slot per thread, cancellation, idle reap
 * and graceful shutdown. The HTTP server and the CLI both drive it.
 *
 * Thread-safe. A run holds the thread's slot from b4_runtime_run_begin() to b4_run_end().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"
#include "b4box/inspect.h"
#include "b4box/policy.h"
#include "b4box/provider.h"
#include "b4box/state.h"

/*
 * The longest thread id, in bytes. An id is 1 to this many bytes of UTF-8 without control
 * characters (NUL included) or '/', and is neither "." nor ".." (ids are path segments of
 * the HTTP API; the server sizes its path parsing from this).
 */
#define B4_THREAD_ID_MAX_BYTES 256

struct b4_runtime;
struct b4_run;
struct b4_config;

struct b4_permissions;
struct b4_tool_result;
struct b4_tools;
struct jv;

/* What a runtime reports to its observer (b4_runtime_options.observe), each with a duration. */
enum b4_runtime_event {
        B4_EVENT_ACQUIRE_COLD = 0, /* the provider started the thread's compute */
        B4_EVENT_ACQUIRE_REATTACH, /* ... found it running (a restart adopted it) */
        B4_EVENT_ADMISSION,        /* resolving and materialising a managed thread, the acquire
                                      included */
        B4_EVENT_RELEASE_IDLE,     /* released after idleTimeoutMs (duration: the release) */
        B4_EVENT_RELEASE_EXPLICIT, /* b4_runtime_thread_release() */
        B4_EVENT_RELEASE_SHUTDOWN, /* b4_runtime_free() */
        B4_EVENT__COUNT,
};

/* Called on the thread that did the work, with no runtime lock held; must be thread-safe. */
typedef void b4_runtime_observe_fn(void *data, enum b4_runtime_event ev, uint64_t usec);

struct b4_runtime_options {
        struct b4_provider *provider;   /* borrowed; outlives the runtime */
        struct b4_store *store;         /* b4_store_open(); borrowed; outlives the runtime */
        const struct b4_policy *policy; /* the app's policy; copied */
        uint64_t idle_timeout_ms;       /* 0 = B4_DEFAULT_IDLE_TIMEOUT_MS */
        uint64_t idle_pause_ms;         /* 0 = never; else a live thread idle this long is paused
                                           (b4_runtime_reap_idle()), released at idle_timeout_ms */
        /* Borrowed; outlives the runtime. Its permissions block gates the tools (none, or NULL:
         * no gate) and "Always" grants go to @store; managed workspaces (sandbox.workspace /
         * sandbox.thread) when set; NULL = provider storage. */
        const struct b4_config *config;
        /* The tools: borrowed permission lists (outliving the runtime) used instead of
         * @config's permissions block when set, their mode with them (the CLI's --mode,
         * --allow, --deny); the readFile/editFile cap in bytes, 0 = B4_TOOLS_DEFAULT_READ_CAP. */
        struct b4_permissions *permissions;
        uint64_t read_cap;
        b4_runtime_observe_fn *observe; /* optional */
        void *observe_data;
        bool local; /* one local command over a state dir that later commands share: the
                       sandboxes outlive the runtime (b4_runtime_free() leaves them acquired,
                       so the next command finds them warm) and b4_runtime_thread_release()
                       releases the provider's sandbox even when this runtime did not
                       acquire it */
};

struct b4_runtime_stats {
        size_t threads_live; /* threads whose sandbox is acquired */
        size_t runs_in_flight;
        uint64_t acquires; /* provider acquires since start */
        uint64_t releases; /* idle or explicit releases since start */
};

/**
 * b4_runtime_new() - a runtime over @opts, with the tools of its threads (the permission
 * lists of @opts->config, grants in @opts->store, pending permission requests)
 * Return: 0, -EINVAL (a missing option, a bad permission pattern; message set), -ENOMEM.
 */
B4_PUBLIC int b4_runtime_new(const struct b4_runtime_options *opts,
                             struct b4_runtime **ret,
                             struct b4_error *err);
/** b4_runtime_free() - release every live sandbox (errors ignored) and free. Return: NULL. */
B4_PUBLIC struct b4_runtime *b4_runtime_free(struct b4_runtime *rt);

/**
 * b4_runtime_thread_create() - record a new thread
 * @id:       NULL = generate one ("thr_" + 24 hex)
 * @metadata_json: a JSON object text, or NULL for {}
 * @parent:   NULL, or an existing thread whose sandbox this one shares
 * @owner:    principal name or NULL
 * @ret:      the stored row; caller clears
 * Return: 0, -EEXIST (id taken), -ENOENT (parent missing), -EINVAL (bad id, see
 * B4_THREAD_ID_MAX_BYTES), -EIO.
 */
B4_PUBLIC int b4_runtime_thread_create(struct b4_runtime *rt,
                                       const char *id,
                                       const char *metadata_json,
                                       const char *parent,
                                       const char *owner,
                                       struct b4_thread_row *ret,
                                       struct b4_error *err);
/**
 * b4_runtime_thread_create_staged() - record a new root thread and its staged workspace
 * reference in one transaction (reference §6.4); the first admission hands the reference to
 * the resolver as `staged`
 * @source_digest: must be held as an upload (b4_runtime_source_upload())
 * @staged_json:   {sourceDigest, environmentLinks, baseline?}, canonical JSON, validated
 * Return: as b4_runtime_thread_create(); -ENOENT also when the source is no longer held.
 */
B4_PUBLIC int b4_runtime_thread_create_staged(struct b4_runtime *rt,
                                              const char *id,
                                              const char *metadata_json,
                                              const char *owner,
                                              const char *source_digest,
                                              const char *staged_json,
                                              struct b4_thread_row *ret,
                                              struct b4_error *err);

struct b4_reconcile_stats {
        size_t deletions_finished; /* deletions a crash had interrupted, now done */
        size_t threads;            /* thread rows afterwards (the live set swept against) */
        int swept;                 /* threads whose leftovers the provider removed; -1 when
                                      the provider has no sweep */
};

/**
 * b4_runtime_reconcile() - make the store and the provider agree after a crash; call it once
 * at start, before serving: finish every deletion a crash interrupted (rows marked deleting:
 * destroy, then delete the rows), then have the provider remove whatever it holds for a
 * thread without a row (b4_provider_sweep(); a provider without sweep is left as it is)
 * @ret: may be NULL; filled on success
 * Return: 0; the first failure to finish a deletion or to sweep (-EIO, ...), nothing undone.
 */
B4_PUBLIC int b4_runtime_reconcile(struct b4_runtime *rt,
                                   struct b4_reconcile_stats *ret,
                                   struct b4_error *err);
/**
 * b4_runtime_thread_source() - the source digest a thread was created with (a staged
 * workspace, reference §6.4)
 * @ret: heap copy (the caller's), or NULL when the thread names none
 * Return: 0, -EIO, -ENOMEM.
 */
B4_PUBLIC int b4_runtime_thread_source(struct b4_runtime *rt,
                                       const char *id,
                                       char **ret,
                                       struct b4_error *err);
/**
 * b4_runtime_thread_state() - "live" (this runtime holds the thread's sandbox), "kept" (its
 * compute runs without a handle here: a restart left it, and the next call adopts it), or
 * "released". A static string.
 */
B4_PUBLIC const char *b4_runtime_thread_state(struct b4_runtime *rt, const char *id);
/** b4_runtime_thread_is_live() - whether the thread's sandbox is acquired right now. */
B4_PUBLIC bool b4_runtime_thread_is_live(struct b4_runtime *rt, const char *id);
/** b4_runtime_thread_busy() - whether a run or read holds the thread's slot. */
B4_PUBLIC bool b4_runtime_thread_busy(struct b4_runtime *rt, const char *id);
/**
 * b4_runtime_thread_delete() - destroy the thread's compute and storage (when it owns its
 * sandbox) and delete its rows and those of its child threads, so the id can be reused.
 * The row is marked deleting first: when the destroy fails (or the process dies) the thread
 * stays listed, refuses runs, reads and children (-ENOENT), and deleting it again (or
 * b4_runtime_reconcile()) finishes the job.
 * Return: 0, -ENOENT, -EBUSY (a run holds the slot of it or a child), -EIO.
 */
B4_PUBLIC int b4_runtime_thread_delete(struct b4_runtime *rt, const char *id, struct b4_error *err);
/**
 * b4_runtime_thread_release() - release the warm sandbox of the thread's root ancestor, keep
 * the workspace; with b4_runtime_options.local also one another process left warm.
 * Return: 0, -ENOENT (no thread), -EBUSY (a run holds it), provider errors.
 */
B4_PUBLIC int b4_runtime_thread_release(struct b4_runtime *rt,
                                        const char *id,
                                        struct b4_error *err);
/**
 * b4_runtime_thread_pause() - pause (@paused) the live sandbox of the thread's root ancestor
 * keeping its processes, or resume it (b4_provider_pause()); a run, a read or a background
 * process call on a paused thread resumes it transparently
 * Return: 0; -ENOENT (no thread); -ESRCH (no live sandbox to pause); -EBUSY (a run holds it,
 * when pausing); -EOPNOTSUPP (the provider cannot pause); provider errors.
 */
B4_PUBLIC int b4_runtime_thread_pause(struct b4_runtime *rt,
                                      const char *id,
                                      bool paused,
                                      struct b4_error *err);
/** b4_runtime_thread_paused() - whether the thread's sandbox is paused, since (realtime ms). */
B4_PUBLIC bool b4_runtime_thread_paused(struct b4_runtime *rt,
                                        const char *id,
                                        int64_t *ret_since_ms);
/** b4_runtime_thread_cancel() - cancel the run in flight. Return: 0, -ESRCH (no run). */
B4_PUBLIC int b4_runtime_thread_cancel(struct b4_runtime *rt, const char *id);

/**
 * b4_runtime_run_begin() - take the thread's run slot, acquire its sandbox and settle the
 * run's effective permissions once (the thread's own lists from its root ancestor's sandbox
 * record when it has them, else the app's); every call of the run uses them
 * @ret: the run; end it with b4_run_end()
 * Return: 0, -ENOENT (no thread), -EBUSY (run in flight), -ESHUTDOWN (shutting down),
 *         -ECANCELED, provider errors (B4_E2001).
 */
B4_PUBLIC int b4_runtime_run_begin(struct b4_runtime *rt,
                                   const char *id,
                                   struct b4_run **ret,
                                   struct b4_error *err);
/**
 * b4_run_call() - one tool call inside the run (b4_tools_call() over the run's sandbox)
 * @args: a JSON object (NULL = {}), borrowed
 * @ret:  the caller clears it (b4_tool_result_clear()); a permission request stays pending
 *        in the runtime for b4_run_resume() on a later run of the same thread
 * Return: 0 for every result, tool failures included; -EINVAL, -ENOMEM.
 */
B4_PUBLIC int b4_run_call(struct b4_run *run,
                          const char *tool,
                          const struct jv *args,
                          struct b4_tool_result *ret,
                          struct b4_error *err);
/**
 * b4_run_check() - b4_tools_check() over the run's sandbox: what b4_run_call() would refuse
 * about @args before running anything (a streamed reply answers that before its 200)
 * Return: 0 (@ret ok, or the refusal), -EINVAL, -ENOMEM.
 */
B4_PUBLIC int b4_run_check(struct b4_run *run,
                           const char *tool,
                           const struct jv *args,
                           struct b4_tool_result *ret,
                           struct b4_error *err);
/**
 * b4_run_tools() - a tools context over the run's sandbox with the run's permissions (those
 * of its b4_run_call()s), for the typed file operations of b4box/tools.h (b4_tools_fs_*)
 * @ret: owned by the caller; free it (b4_tools_free()) before b4_run_end()
 * Return: 0, -EINVAL, -ENOMEM.
 */
B4_PUBLIC int b4_run_tools(struct b4_run *run, struct b4_tools **ret, struct b4_error *err);
/**
 * b4_run_resume() - answer a permission request an earlier call of this thread raised
 * ("once", "always" or "deny") and finish that call inside this run
 * Return: 0, -ENOENT (no such request for this thread), -EINVAL (bad answer), -ENOMEM.
 */
B4_PUBLIC int b4_run_resume(struct b4_run *run,
                            const char *interrupt_id,
                            const char *answer,
                            struct b4_tool_result *ret,
                            struct b4_error *err);
/**
 * b4_runtime_procs_sandbox() - the sandbox of the thread's root ancestor for background
 * process calls (b4_sandbox_proc_*()), acquired (admitted) when not live, as a run's is, but
 * without the run slot: processes run beside runs. The call counts as activity for the idle
 * reaper. A release or deletion meanwhile makes later calls on @ret fail or see the records
 * the provider kept.
 * @ret: a reference (b4_sandbox_unref())
 * Return: 0, -ENOENT (no thread), -ESHUTDOWN, provider errors (B4_E2001).
 */
B4_PUBLIC int b4_runtime_procs_sandbox(struct b4_runtime *rt,
                                       const char *id,
                                       struct b4_sandbox **ret,
                                       struct b4_error *err);
/**
 * b4_runtime_proc_start() - start a background process in the thread's sandbox
 * (b4_runtime_procs_sandbox()) after the gates a runBash of @req->command would pass, with the
 * thread's effective permissions (b4_tools_gate_command(): approval, the cwd's jail, the
 * command gate); then b4_sandbox_proc_start() with the jailed cwd
 * Return: 0 with @ret (b4_proc_info_clear()); -EACCES, -EPERM (the gates); as
 * b4_runtime_procs_sandbox() and b4_sandbox_proc_start().
 */
B4_PUBLIC int b4_runtime_proc_start(struct b4_runtime *rt,
                                    const char *id,
                                    const struct b4_proc_req *req,
                                    struct b4_proc_info *ret,
                                    struct b4_error *err);
/** b4_run_sandbox() - the run's sandbox; borrowed until b4_run_end(). */
B4_PUBLIC struct b4_sandbox *b4_run_sandbox(struct b4_run *run);
/** b4_run_cancel_token() - fired by b4_runtime_thread_cancel(); borrowed. */
B4_PUBLIC struct b4_cancel *b4_run_cancel_token(struct b4_run *run);
/**
 * b4_run_set_output() - hand every later runBash command's output of this run to @fn as it
 * comes (b4_exec_req.on_output; called on the caller's thread, inside b4_run_call()); NULL
 * stops it. @userdata is borrowed.
 */
B4_PUBLIC void b4_run_set_output(struct b4_run *run, b4_exec_output_fn *fn, void *userdata);
/**
 * b4_run_interrupted_ms() - when the thread's previous run was cut short by a crash of the
 * process running it (its marker was left behind), that run's start, ms since the epoch;
 * else 0. Reported once: this run's marker replaces it.
 */
B4_PUBLIC int64_t b4_run_interrupted_ms(const struct b4_run *run);
/** b4_run_end() - free the slot (NULL ok). Return: NULL. */
B4_PUBLIC struct b4_run *b4_run_end(struct b4_run *run);

/* ---- workspace reads: the slot without the sandbox ---- */

/* b4_runtime_inspect() is the whole read; the slot calls below are its parts, for a caller
 * that reads through a reader of its own. */

struct b4_read;

/**
 * b4_runtime_read_begin() - take the thread's run slot for a workspace read, without
 * acquiring (or touching) its sandbox: a run started meanwhile, a deletion and a release of
 * the thread get -EBUSY, and b4_runtime_thread_cancel() fires @cancel
 * @cancel: the caller's token, borrowed until b4_read_end(); it may outlive the slot
 * Return: 0, -ENOENT (no thread), -EBUSY (run in flight), -ESHUTDOWN, -ENOMEM.
 */
B4_PUBLIC int b4_runtime_read_begin(struct b4_runtime *rt,
                                    const char *id,
                                    struct b4_cancel *cancel,
                                    struct b4_read **ret,
                                    struct b4_error *err);
/** b4_read_sandbox_key() - whose workspace to read: the thread's root ancestor. Borrowed. */
B4_PUBLIC const char *b4_read_sandbox_key(const struct b4_read *rd);
/** b4_read_end() - free the slot (NULL ok); the cancel token is not touched. Return: NULL. */
B4_PUBLIC struct b4_read *b4_read_end(struct b4_read *rd);
/**
 * b4_runtime_open_reader() - a reader of the thread's workspace (its root ancestor's), for a
 * caller that keeps one across calls: no run slot is taken and no compute acquired or kept,
 * so runs, releases and pauses go on while it is open (the reader must not be used after the
 * thread's deletion: close it first)
 * @cancel: borrowed while the open runs, NULL ok
 * @ret:    owned by the caller (b4_reader_free())
 * Return: 0, -ENOENT (no thread; with B4_E2001: no workspace storage), -EOPNOTSUPP (the
 * provider has no readers), the provider's errors.
 */
B4_PUBLIC int b4_runtime_open_reader(struct b4_runtime *rt,
                                     const char *id,
                                     struct b4_cancel *cancel,
                                     struct b4_reader **ret,
                                     struct b4_error *err);
/**
 * b4_runtime_reader_tools() - a tools context over @rd's read-only filesystem with the
 * thread's permission view: the typed reads (b4_tools_fs_stat() ...) pass the same path jail
 * and gates as b4_run_tools()'s; runBash fails -EROFS, the changes as the reader's fs does
 * @rd:  borrowed, must outlive the context
 * @ret: owned by the caller (b4_tools_free())
 * Return: 0, -ENOMEM, the permission store's errors.
 */
B4_PUBLIC int b4_runtime_reader_tools(struct b4_runtime *rt,
                                      struct b4_reader *rd,
                                      struct b4_tools **ret,
                                      struct b4_error *err);
/**
 * b4_runtime_inspect() - inspect the thread's workspace (its root ancestor's, reference §6.2)
 * holding its run slot, on a worker thread: a reader of the workspace, b4_inspect_workspace()
 * with @o and, with @consistent, the thread's processes frozen around it (b4_provider_freeze())
 * so it sees one instant; then the digests the thread's admission recorded
 * @o:          NULL = the defaults; copied (an abandoned read's worker outlives the call)
 * @timeout_ms: 0 = no deadline; at the deadline the read is abandoned (its worker stops at
 *              its next check, b4_runtime_free() waits for it) and the slot freed
 * @cancel:     optional, borrowed for the call; b4_runtime_thread_cancel() and
 *              b4_runtime_shutdown() cancel the read too
 * @ret:        zeroed first; on 0 the inspection and digests, on -EPROTO the refusal in
 *              ret->fail; the caller clears it (b4_workspace_read_clear())
 * Return: 0; -EPROTO (a refusal, err->msg the reference's text); -ETIMEDOUT; -ECANCELED;
 * as b4_runtime_read_begin(); as b4_inspect_workspace(), plus the reader's errors (-ENOENT
 * with B4_E2001 when the thread has no storage, -EOPNOTSUPP without a reader or, for
 * @consistent, a freeze).
 */
B4_PUBLIC int b4_runtime_inspect(struct b4_runtime *rt,
                                 const char *id,
                                 const struct b4_inspect_options *o,
                                 bool consistent,
                                 uint64_t timeout_ms,
                                 const struct b4_cancel *cancel,
                                 struct b4_workspace_read *ret,
                                 struct b4_error *err);

/* Where a thread's effective policy comes from. */
enum b4_policy_source {
        B4_POLICY_APP = 0,     /* no per-thread resolution: the app's policy */
        B4_POLICY_THREAD = 1,  /* the sandbox record its admission wrote (sandbox.thread) */
        B4_POLICY_PENDING = 2, /* sandbox.thread, not admitted yet: the app's for now, the
                                  resolver may narrow it at the first run */
};

/**
 * b4_runtime_thread_policy() - the effective policy of thread @id (its root ancestor's):
 * the app's, or the one its sandbox record holds; never runs a resolver or touches compute
 * @ret:        an initialised policy to fill (b4_policy_clear() it); on error left initialised
 * @ret_source: where it came from
 * Return: 0, -ENOENT (no thread), -EIO, -ENOMEM, -EINVAL (a record that does not parse).
 */
B4_PUBLIC int b4_runtime_thread_policy(struct b4_runtime *rt,
                                       const char *id,
                                       struct b4_policy *ret,
                                       enum b4_policy_source *ret_source,
                                       struct b4_error *err);
/** b4_runtime_provider() - the runtime's provider; borrowed. */
B4_PUBLIC struct b4_provider *b4_runtime_provider(struct b4_runtime *rt);

/**
 * b4_runtime_reap_idle() - pause sandboxes idle longer than idle_pause_ms (when set) and release
 * those idle longer than the idle timeout. Return: how many were released.
 */
B4_PUBLIC int b4_runtime_reap_idle(struct b4_runtime *rt, uint64_t now_ms);
/**
 * b4_runtime_shutdown() - refuse new runs (-ESHUTDOWN), wait up to @deadline_ms for runs in
 * flight (cancelling them at the deadline), then release every sandbox.
 */
B4_PUBLIC void b4_runtime_shutdown(struct b4_runtime *rt, uint64_t deadline_ms);
B4_PUBLIC void b4_runtime_stats(struct b4_runtime *rt, struct b4_runtime_stats *ret);

/* ---- the store, through the runtime: threads and staged sources (src/lib/runtime/stored.c) */

/* What the server and the CLI read and write in the runtime's store beyond runs and reads.
 * Every call is the store's, serialised on its mutex; @ret values are owned by the caller. */

/**
 * b4_runtime_thread_get() - the row of thread @id, a thread marked deleting included
 * @ret: filled on success; the caller clears it (b4_thread_row_clear())
 * Return: 0, -ENOENT, -EIO.
 */
B4_PUBLIC int b4_runtime_thread_get(struct b4_runtime *rt,
                                    const char *id,
                                    struct b4_thread_row *ret,
                                    struct b4_error *err);
/**
 * b4_runtime_thread_list() - every thread (only @owner's when non-NULL), oldest first
 * @ret: the rows (b4_thread_rows_free(*ret, *ret_n))
 * Return: 0, -EIO, -ENOMEM.
 */
B4_PUBLIC int b4_runtime_thread_list(struct b4_runtime *rt,
                                     const char *owner,
                                     struct b4_thread_row **ret,
                                     size_t *ret_n,
                                     struct b4_error *err);

/**
 * b4_runtime_source_upload() - keep an uploaded bundle (its canonical JSON) under @digest
 * (reference §6.4)
 * @uploader:    recorded as an uploader of the digest (principal name); NULL = none
 * @stamp:       kept with @uploader: the policy program's stamp (JSON object); NULL = none
 * @now_ms:      the upload time (refreshes the retention window of a held source)
 * @max_staged:  quota on the sum of uploaded payload bytes
 * @ret_created: true when the digest was not held as an upload before
 * Return: 0; -ENOSPC when the new bytes would exceed @max_staged (nothing changed); -EIO.
 */
B4_PUBLIC int b4_runtime_source_upload(struct b4_runtime *rt,
                                       const char *digest,
                                       const char *payload,
                                       size_t len,
                                       const char *uploader,
                                       const char *stamp,
                                       int64_t now_ms,
                                       uint64_t max_staged,
                                       bool *ret_created,
                                       struct b4_error *err);
/**
 * b4_runtime_sources_reclaim() - delete every held source no association references that
 * was never uploaded, or was last uploaded before @now_ms - @retention_ms (reference §6.5)
 * Return: the number deleted, or -EIO.
 */
B4_PUBLIC int b4_runtime_sources_reclaim(struct b4_runtime *rt,
                                         int64_t now_ms,
                                         uint64_t retention_ms,
                                         struct b4_error *err);
/**
 * b4_runtime_source_get() - the stored payload (a bundle's canonical JSON) of @digest
 * @ret: heap copy, NUL-terminated past @ret_len; @ret_uploaded_ms 0 when never uploaded
 * Return: 0, -ENOENT, -EIO.
 */
B4_PUBLIC int b4_runtime_source_get(struct b4_runtime *rt,
                                    const char *digest,
                                    char **ret,
                                    size_t *ret_len,
                                    int64_t *ret_uploaded_ms,
                                    struct b4_error *err);
/**
 * b4_runtime_source_uploaders() - the principals that uploaded @digest, sorted
 * @ret:        an owned strv (possibly empty)
 * @ret_stamps: optional; an owned strv parallel to @ret: each one's stamp, "" for none
 * Return: 0, -EIO, -ENOMEM.
 */
B4_PUBLIC int b4_runtime_source_uploaders(struct b4_runtime *rt,
                                          const char *digest,
                                          char ***ret,
                                          char ***ret_stamps,
                                          struct b4_error *err);
/**
 * b4_runtime_sources_list() - the sources held as uploads, by digest; only those
 * @uploader uploaded unless it is NULL
 * @ret: the caller's (b4_source_infos_free())
 * Return: 0, -EIO, -ENOMEM.
 */
B4_PUBLIC int b4_runtime_sources_list(struct b4_runtime *rt,
                                      const char *uploader,
                                      struct b4_source_info **ret,
                                      size_t *ret_n,
                                      struct b4_error *err);
/**
 * b4_runtime_source_delete() - forget an upload no thread's workspace names
 * Return: 0; -ENOENT when it is not held as an upload; -EBUSY when a thread's workspace
 * names it (message in @err); -EIO.
 */
B4_PUBLIC int b4_runtime_source_delete(struct b4_runtime *rt,
                                       const char *digest,
                                       struct b4_error *err);
