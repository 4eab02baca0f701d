/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Syscall probes (each run by the in-sandbox helper: refused, allowed or unavailable) and
 * resource bombs: output, fork, memory, disk (docs/probe.md).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "probe.h"

#define EXIT_SIGSYS (128 + 31)

static const char *const syscall_probes[] = {
        "mount",          "unshare-mnt",     "unshare-uts",    "unshare-ipc",  "unshare-user",
        "unshare-pid",    "unshare-net",     "unshare-cgroup", "unshare-time", "clone-newuser",
        "ptrace-traceme", "ptrace-attach-1", "keyctl",         "add-key",      "bpf",
        "io-uring",       "vsock",           "personality",    "perf-event",   "userfaultfd",
};

/* The helper's last line, without its newline; borrowed from @o. */
static const char *last_line(struct probe_out *o)
{
        while (o->out_len && o->out[o->out_len - 1] == '\n')
                o->out[--o->out_len] = '\0';
        const char *nl = strrchr(o->out, '\n');
        return nl ? nl + 1 : o->out;
}

static void syscall_verdict(struct probe *p, const char *name, struct probe_out *o)
{
        const char *line = last_line(o);

        if (o->exit_code == EXIT_SIGSYS)
                probe_report(p, name, PROBE_PASS, "refused: killed by SIGSYS");
        else if (o->exit_code == 0 && strncmp(line, "refused ", 8) == 0)
                probe_report(p, name, PROBE_PASS, "refused: %s", line + 8);
        else if (o->exit_code == 0 && strncmp(line, "allowed ", 8) == 0)
                probe_report(p, name, PROBE_FAIL, "allowed: %s", line + 8);
        else if (o->exit_code == 0 && strncmp(line, "unavailable ", 12) == 0)
                probe_report(p, name, PROBE_SKIP, "not available on this host: %s", line + 12);
        else
                probe_report(p, name, PROBE_FAIL, "cannot verify: the helper exited %d: %.120s",
                             o->exit_code, o->err[0] ? o->err : line);
}

static void syscall_one(struct probe *p, const char *probe)
{
        cleanup_free char *name = NULL, *args = NULL;
        struct probe_out o = { 0 };
        struct b4_error err = { 0 };

        if (b4_asprintf(&name, "sys:%s", probe) < 0 || b4_asprintf(&args, "sys %s", probe) < 0)
                return;
        if (probe_helper(&p->a, args, &o, &err) < 0)
                probe_report(p, name, PROBE_FAIL, "cannot verify: %s", err.msg);
        else
                syscall_verdict(p, name, &o);
        probe_out_clear(&o);
}

void probe_syscalls(struct probe *p)
{
        for (size_t i = 0; i < ELEMENTSOF(syscall_probes) && !probe_interrupted(p); i++)
                syscall_one(p, syscall_probes[i]);
}

/* ---- resource bombs ---- */

/* Whether a trivial command works again (a few tries: a replaced keeper takes a moment). */
static bool recovered(struct probe *p)
{
        for (int i = 0; i < 5 && !probe_interrupted(p); i++) {
                struct probe_out o = { 0 };
                bool ok = probe_sh(&p->a, "echo b4box-recovered", &o, NULL) >= 0 &&
                          o.exit_code == 0 && strcmp(o.out, "b4box-recovered\n") == 0;
                probe_out_clear(&o);
                if (ok)
                        return true;
                (void)usleep(300 * 1000);
        }
        return false;
}

/* Run the helper with @args for bomb @name; FAIL rows for what cannot be verified. */
static int bomb_run(struct probe *p, const char *name, const char *args, struct probe_out *o)
{
        struct b4_error err = { 0 };

        if (probe_helper(&p->a, args, o, &err) < 0) {
                probe_report(p, name, PROBE_FAIL, "cannot verify: %s", err.msg);
                return -1;
        }
        return 0;
}

static void report_contained(struct probe *p, const char *name, bool contained, const char *how)
{
        if (!contained)
                probe_report(p, name, PROBE_FAIL, "not contained: %s", how);
        else if (!recovered(p))
                probe_report(p, name, PROBE_FAIL, "contained (%s) but the thread did not recover",
                             how);
        else
                probe_report(p, name, PROBE_PASS, "contained (%s); the thread recovered", how);
}

static void output_bomb(struct probe *p)
{
        size_t cap = p->policy->output_cap ? p->policy->output_cap : B4_DEFAULT_OUTPUT_CAP;
        struct probe_out o = { 0 };
        char args[64], how[160];

        (void)snprintf(args, sizeof(args), "output %zu", 2 * cap + 65536);
        if (bomb_run(p, "bomb:output", args, &o) < 0)
                return;
        bool ok = o.truncated && o.out_len <= cap + 256;
        (void)snprintf(how, sizeof(how), "%zu bytes written, %zu kept, truncated %s (cap %zu)",
                       2 * cap + 65536, o.out_len, o.truncated ? "yes" : "no", cap);
        probe_out_clear(&o);
        report_contained(p, "bomb:output", ok, how);
}

static void fork_bomb(struct probe *p)
{
        uint32_t limit = p->policy->security.pids_limit;
        unsigned long max = limit ? limit + 64ul : 4096, n = 0;
        struct probe_out o = { 0 };
        char args[64], how[160], why[32] = "";

        (void)snprintf(args, sizeof(args), "forkbomb %lu", max);
        if (bomb_run(p, "bomb:fork", args, &o) < 0)
                return;
        bool parsed = sscanf(last_line(&o), "forked %lu %31s", &n, why) == 2;
        bool ok = parsed && strcmp(why, "EAGAIN") == 0 && n < max;
        if (parsed)
                (void)snprintf(how, sizeof(how), "%lu forks, then %s (pidsLimit %u)", n, why,
                               limit);
        else
                (void)snprintf(how, sizeof(how), "the helper exited %d: %.100s", o.exit_code,
                               o.err);
        probe_out_clear(&o);
        report_contained(p, "bomb:fork", ok, how);
}

static void memory_bomb(struct probe *p)
{
        uint64_t mb = p->policy->resources.memory_mb;
        unsigned long want = 2 * mb + 64, got = 0;
        struct probe_out o = { 0 };
        char args[64], how[160];

        if (!mb) {
                probe_report(p, "bomb:memory", PROBE_SKIP, "memoryMb not set");
                return;
        }
        (void)snprintf(args, sizeof(args), "memory %lu", want);
        if (bomb_run(p, "bomb:memory", args, &o) < 0)
                return;
        const char *line = last_line(&o);
        bool done = sscanf(line, "done %lu", &got) == 1;
        if (!done)
                (void)sscanf(line, "%*s %lu", &got);
        (void)snprintf(how, sizeof(how), "touched %s%lu of %lu MiB (memoryMb %llu), exit %d",
                       done ? "" : "about ", got, want, (unsigned long long)mb, o.exit_code);
        probe_out_clear(&o);
        report_contained(p, "bomb:memory", !done && got <= mb, how);
}

static void disk_bomb(struct probe *p)
{
        uint64_t gb = p->policy->resources.disk_gb;
        unsigned long want = (unsigned long)gb * 1024 + 256, got = 0;
        struct probe_out o = { 0 };
        char args[96], how[160], why[32] = "";

        if (!gb) {
                probe_report(p, "bomb:disk", PROBE_SKIP, "diskGb not set");
                return;
        }
        (void)snprintf(args, sizeof(args), "disk " PROBE_HELPER_NAME "-disk %lu", want);
        if (bomb_run(p, "bomb:disk", args, &o) < 0)
                return;
        const char *line = last_line(&o);
        bool stopped = sscanf(line, "stopped %lu %31s", &got, why) == 2;
        (void)snprintf(how, sizeof(how), "wrote %lu of %lu MiB (diskGb %llu)%s%s", got, want,
                       (unsigned long long)gb, stopped ? ", then " : "", why);
        probe_out_clear(&o);
        report_contained(p, "bomb:disk",
                         stopped && (strcmp(why, "ENOSPC") == 0 || strcmp(why, "EDQUOT") == 0) &&
                                 got <= gb * 1024,
                         how);
}

void probe_bombs(struct probe *p)
{
        void (*const bombs[])(struct probe *) = { output_bomb, fork_bomb, memory_bomb, disk_bomb };

        for (size_t i = 0; i < ELEMENTSOF(bombs) && !probe_interrupted(p); i++)
                bombs[i](p);
}
