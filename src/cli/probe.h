/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box probe (docs/probe.md): escape and abuse probes run from inside throwaway threads.
 * cmd-probe.c drives the groups below and prints the rows; probe-run.c runs things in a
 * probe sandbox (runBash, the in-sandbox helper, file tools); each probe-<group>.c adds rows.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/b4.h"
#include "b4box/tools.h"

#include "cli.h"

enum probe_result {
        PROBE_PASS = 0,
        PROBE_FAIL = 1,
        PROBE_SKIP = 2, /* does not apply to this configuration or host; never a pass */
};

struct probe_row {
        char *name;
        enum probe_result result;
        char *detail;
};

/* One throwaway thread of the probe. */
struct probe_sandbox {
        char id[96];
        struct b4_sandbox *sb;
        struct b4_tools *tools; /* no permission store: what the provider itself allows */
        bool helper_ready;
        char helper_error[256]; /* why the helper cannot run; set when !helper_ready */
};

struct probe {
        struct cli_local local;
        const struct b4_policy *policy; /* borrowed from local.cfg */
        const char *provider;           /* "native", "docker", "fake" */
        struct b4_cancel *cancel;       /* fired by SIGINT/SIGTERM */
        const char *helper_path;        /* host path of b4box-probe-helper */
        char thread[96];                /* thread A's id, kept after its destruction */
        struct probe_sandbox a;         /* the probe thread */
        struct probe_sandbox b;         /* a second thread, acquired on first use */
        struct probe_row *rows;
        size_t n_rows;
};

/* The in-sandbox name of the helper, relative to the workspace root. */
#define PROBE_HELPER_NAME ".b4box-probe"

/* readFile cap of the probe's tools: big enough for /proc/kallsyms, so parity compares
 * permissions, not the size cap. */
#define PROBE_READ_CAP (64u * 1024 * 1024)

/* What a command printed and how it ended. */
struct probe_out {
        char *out; /* owned stdout, NUL-terminated */
        size_t out_len;
        char *err; /* owned stderr */
        int exit_code;
        bool timed_out;
        bool truncated;
};

void probe_out_clear(struct probe_out *o);

/* Add a row (name and detail copied). Out of memory is reported at the end. */
void probe_report(struct probe *p, const char *name, enum probe_result res, const char *fmt, ...)
        B4_PRINTF(4, 5);
/* Whether SIGINT/SIGTERM asked the probe to stop. */
bool probe_interrupted(const struct probe *p);

/* Acquire @s as thread @id with the configured policy and open its tools. Return: 0, -errno. */
int probe_sandbox_open(struct probe *p,
                       struct probe_sandbox *s,
                       const char *id,
                       struct b4_error *err);
/* Drop the handle and destroy the thread (compute and workspace), errors printed. */
void probe_sandbox_close(struct probe *p, struct probe_sandbox *s);
/* The second thread, acquired (with its helper) on first use. Return: 0, -errno. */
int probe_sandbox_b(struct probe *p, struct probe_sandbox **ret, struct b4_error *err);

/* Run @command with the runBash tool of @s. Return: 0 (see @ret), -errno (tool error). */
int probe_sh(struct probe_sandbox *s,
             const char *command,
             struct probe_out *ret,
             struct b4_error *err);
/* Run `./.b4box-probe <args>` in @s. -ENOEXEC when the helper is not ready (message set). */
int probe_helper(struct probe_sandbox *s,
                 const char *args,
                 struct probe_out *ret,
                 struct b4_error *err);
/* Copy the helper into @s and check that it runs; sets s->helper_ready / helper_error. */
void probe_helper_install(struct probe *p, struct probe_sandbox *s);
/*
 * Call a file tool of @t; *ret_ok says whether it succeeded, *ret_text (owned, may be NULL)
 * is the result (a string result, or the JSON of an array) or the error message.
 * Return: 0, -errno (no result document at all).
 */
int probe_tool(struct b4_tools *t,
               const char *tool,
               const char *args_json,
               bool *ret_ok,
               char **ret_text,
               struct b4_error *err);
/* The first line of @s (up to '\n' or the end), owned. NULL on OOM. */
char *probe_first_line(const char *s);

/* The probe groups, run in this order. */
void probe_fs_parity(struct probe *p);
void probe_syscalls(struct probe *p);
void probe_network(struct probe *p);
void probe_cross_thread(struct probe *p);
void probe_jail_race(struct probe *p);
void probe_bombs(struct probe *p);
