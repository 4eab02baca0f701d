/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File probes: file-tool / runBash permission parity, cross-thread isolation and the path
 * jail under a symlink swap race (docs/probe.md).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "json/json.h"
#include "probe.h"

#define SECRET_SH    PROBE_HELPER_NAME "-0000-sh"
#define SECRET_FS    PROBE_HELPER_NAME "-0000-fs"
#define RACE_DIR     PROBE_HELPER_NAME "-race"
#define RACE_INSIDE  "b4box-probe-inside"
#define RACE_MAX     4000
#define RACE_SECONDS "3"
#define SHOWN        60 /* bytes of content shown in a detail */

/* Paths whose readFile/listDir result must match cat/ls as the sandbox user. */
static const char *const parity_paths[] = {
        "/etc/shadow",
        "/etc/ssl/private",
        "/proc/1/maps",
        "/proc/1/fd",
        "/proc/1/environ",
        "/proc/kallsyms",
        "/proc/iomem",
        "/proc/keys",
        "/root",
        B4_WORKSPACE_ROOT "/" SECRET_SH,
        B4_WORKSPACE_ROOT "/" SECRET_FS,
};

/* What the sandbox user sees: a directory listing's or a file's first line's success. */
struct shell_view {
        bool dir;
        bool ok;
        char *first_line; /* owned; files that opened */
};

static int shell_view(struct probe_sandbox *s,
                      const char *path,
                      struct shell_view *ret,
                      struct b4_error *err)
{
        struct strbuf sb;
        cleanup_free char *cmd = NULL;
        struct probe_out o = { 0 };
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_adds(&sb, "p=");
        if (r >= 0)
                r = strbuf_add_shell_quoted(&sb, path);
        if (r >= 0)
                r = strbuf_adds(&sb,
                                "; if [ -d \"$p\" ]; then echo dir; ls -1a -- \"$p\" >/dev/null "
                                "2>&1; echo $?; else echo file; out=$(head -n1 -- \"$p\" "
                                "2>/dev/null); echo $?; printf '%s' \"$out\"; fi");
        if (r >= 0)
                r = strbuf_detach(&sb, &cmd, NULL);
        strbuf_release(&sb);
        if (r >= 0)
                r = probe_sh(s, cmd, &o, err);
        if (r < 0)
                return r;
        bool dir = strncmp(o.out, "dir\n", 4) == 0, file = strncmp(o.out, "file\n", 5) == 0;
        if (o.exit_code != 0 || (!dir && !file)) {
                r = b4_error_set(err, -EIO, "the shell check exited %d: %.120s", o.exit_code,
                                 o.err[0] ? o.err : o.out);
                probe_out_clear(&o);
                return r;
        }
        const char *rest = o.out + (dir ? 4 : 5);
        *ret = (struct shell_view){ .dir = dir, .ok = strncmp(rest, "0\n", 2) == 0 };
        if (file && ret->ok)
                ret->first_line = probe_first_line(rest + 2);
        probe_out_clear(&o);
        return file && ret->ok && !ret->first_line ? -ENOMEM : 0;
}

static int tool_view(struct probe_sandbox *s,
                     const char *path,
                     bool dir,
                     bool *ret_ok,
                     char **ret_text,
                     struct b4_error *err)
{
        cleanup_free char *q = NULL, *args = NULL;
        int r;

        r = jv_quote(path, &q);
        if (r < 0)
                return r;
        if (b4_asprintf(&args, "{\"path\":%s}", q) < 0)
                return -ENOMEM;
        return probe_tool(s->tools, dir ? "listDir" : "readFile", args, ret_ok, ret_text, err);
}

static void parity_one(struct probe *p, const char *path)
{
        cleanup_free char *name = NULL, *text = NULL, *line = NULL;
        struct shell_view sv = { 0 };
        struct b4_error err = { 0 };
        bool ok = false;
        int r;

        if (b4_asprintf(&name, "parity:%s", path) < 0)
                return;
        r = shell_view(&p->a, path, &sv, &err);
        if (r >= 0)
                r = tool_view(&p->a, path, sv.dir, &ok, &text, &err);
        if (r < 0) {
                probe_report(p, name, PROBE_FAIL, "cannot compare: %s", err.msg);
                free(sv.first_line);
                return;
        }
        const char *tool = sv.dir ? "listDir" : "readFile", *sh = sv.dir ? "ls" : "cat";
        if (ok && !sv.ok)
                probe_report(p, name, PROBE_FAIL, "%s succeeds but %s fails (a leak)%s%.*s", tool,
                             sh, sv.dir ? "" : ": readFile returned ", sv.dir ? 0 : SHOWN, text);
        else if (!ok && sv.ok)
                probe_report(
                        p, name, PROBE_FAIL,
                        "%s fails but %s succeeds (stricter than the sandbox, not a leak): %.*s",
                        tool, sh, SHOWN, text ? text : "");
        else if (ok && !sv.dir &&
                 strcmp((line = probe_first_line(text)) ? line : "", sv.first_line) != 0)
                probe_report(p, name, PROBE_FAIL, "first lines differ: readFile '%.*s', cat '%.*s'",
                             SHOWN, line ? line : "", SHOWN, sv.first_line);
        else
                probe_report(p, name, PROBE_PASS, "%s and %s both %s", tool, sh,
                             !ok      ? "fail"
                             : sv.dir ? "succeed"
                                      : "succeed (same first line)");
        free(sv.first_line);
}

/* A file its owner cannot read, made once by the sandbox user and once through the fs API. */
static void make_secrets(struct probe *p)
{
        struct b4_fs *fs = b4_sandbox_fs(p->a.sb);
        struct probe_out o = { 0 };
        static const char secret[] = "b4box-probe-secret\n";

        if (probe_sh(&p->a, "printf 'b4box-probe-secret\\n' >" SECRET_SH " && chmod 000 " SECRET_SH,
                     &o, NULL) >= 0)
                probe_out_clear(&o);
        if (b4_fs_write_file(fs, B4_WORKSPACE_ROOT "/" SECRET_FS, secret, sizeof(secret) - 1,
                             NULL) < 0)
                return;
        if (b4_fs_chmod(fs, B4_WORKSPACE_ROOT "/" SECRET_FS, 0, NULL) < 0 &&
            probe_sh(&p->a, "chmod 000 " SECRET_FS, &o, NULL) >= 0)
                probe_out_clear(&o);
}

void probe_fs_parity(struct probe *p)
{
        make_secrets(p);
        for (size_t i = 0; i < ELEMENTSOF(parity_paths) && !probe_interrupted(p); i++)
                parity_one(p, parity_paths[i]);
}

/* ---- cross-thread isolation ---- */

/* Whether the marker process shows up in @s's /proc; the regex never matches its own argv. */
static int sees_marker(struct probe_sandbox *s, const char *marker, bool *ret, struct b4_error *err)
{
        cleanup_free char *cmd = NULL;
        struct probe_out o = { 0 };
        int r;

        if (b4_asprintf(&cmd, "grep -l '%.*s[%c]%s' /proc/[0-9]*/cmdline 2>/dev/null; echo end", 4,
                        marker, marker[4], marker + 5) < 0)
                return -ENOMEM;
        r = probe_sh(s, cmd, &o, err);
        if (r < 0)
                return r;
        if (o.exit_code != 0 || !strstr(o.out, "end\n")) {
                r = b4_error_set(err, -EIO, "the process scan exited %d: %.120s", o.exit_code,
                                 o.err);
                probe_out_clear(&o);
                return r;
        }
        *ret = strncmp(o.out, "end\n", 4) != 0;
        probe_out_clear(&o);
        return 0;
}

static int reads_peer_file(struct probe_sandbox *s,
                           const char *marker,
                           bool *ret,
                           struct b4_error *err)
{
        cleanup_free char *text = NULL;
        bool ok = false;
        int r;

        r = probe_tool(s->tools, "readFile",
                       "{\"path\":\"" B4_WORKSPACE_ROOT "/" PROBE_HELPER_NAME "-peer\"}", &ok,
                       &text, err);
        if (r < 0)
                return r;
        *ret = ok && strstr(text, marker);
        return 0;
}

static int plant_peer(struct probe_sandbox *b, const char *marker, struct b4_error *err)
{
        cleanup_free char *args = NULL;
        struct probe_out o = { 0 };
        int r;

        r = b4_fs_write_file(b4_sandbox_fs(b->sb), B4_WORKSPACE_ROOT "/" PROBE_HELPER_NAME "-peer",
                             marker, strlen(marker), err);
        if (r < 0)
                return r;
        if (b4_asprintf(&args, "hold 120 %s", marker) < 0)
                return -ENOMEM;
        r = probe_helper(b, args, &o, err);
        probe_out_clear(&o);
        return r;
}

static int cross_check(struct probe *p,
                       const char *marker,
                       char *detail,
                       size_t n,
                       bool *ret_isolated,
                       struct b4_error *err)
{
        struct probe_sandbox *b = NULL;
        bool b_proc = false, b_file = false, a_proc = true, a_file = true;
        int r;

        r = probe_sandbox_b(p, &b, err);
        if (r >= 0)
                r = plant_peer(b, marker, err);
        if (r >= 0)
                r = sees_marker(b, marker, &b_proc, err);
        if (r >= 0)
                r = reads_peer_file(b, marker, &b_file, err);
        if (r < 0)
                return r;
        if (!b_proc || !b_file)
                return b4_error_set(err, -EIO, "positive control failed: thread B %s",
                                    !b_proc ? "cannot see its own marker process"
                                            : "cannot read its own marker file");
        r = sees_marker(&p->a, marker, &a_proc, err);
        if (r >= 0)
                r = reads_peer_file(&p->a, marker, &a_file, err);
        if (r < 0)
                return r;
        (void)snprintf(detail, n, "thread A %s B's process and %s B's workspace file",
                       a_proc ? "SEES" : "does not see", a_file ? "READS" : "does not read");
        *ret_isolated = !a_proc && !a_file;
        return 0;
}

void probe_cross_thread(struct probe *p)
{
        struct b4_error err = { 0 };
        char marker[64], detail[160];
        bool isolated = false;

        if (probe_interrupted(p))
                return;
        (void)snprintf(marker, sizeof(marker), "b4probepeer%ld%d", (long)getpid(), rand());
        if (cross_check(p, marker, detail, sizeof(detail), &isolated, &err) < 0)
                probe_report(p, "cross-thread", PROBE_FAIL, "cannot verify: %s", err.msg);
        else
                probe_report(p, "cross-thread", isolated ? PROBE_PASS : PROBE_FAIL, "%s", detail);
}

/* ---- path jail under a symlink swap race ---- */

struct race_count {
        unsigned reads, inside, refused, outside;
        char first_outside[SHOWN + 1];
};

static bool swapper_done(struct probe_sandbox *s)
{
        struct b4_stat st = { 0 };
        bool done = b4_fs_lstat(b4_sandbox_fs(s->sb), B4_WORKSPACE_ROOT "/" RACE_DIR "/done", &st,
                                NULL) >= 0;

        b4_stat_clear(&st);
        return done;
}

static int race_reads(struct probe *p,
                      struct b4_tools *jailed,
                      struct race_count *c,
                      struct b4_error *err)
{
        for (unsigned i = 0; i < RACE_MAX && !probe_interrupted(p); i++) {
                cleanup_free char *text = NULL;
                bool ok = false;
                int r = probe_tool(jailed, "readFile", "{\"path\":\"" RACE_DIR "/real/hostname\"}",
                                   &ok, &text, err);
                if (r < 0)
                        return r;
                c->reads++;
                if (!ok)
                        c->refused++;
                else if (strcmp(text, RACE_INSIDE "\n") == 0)
                        c->inside++;
                else if (c->outside++ == 0)
                        (void)snprintf(c->first_outside, sizeof(c->first_outside), "%s", text);
                if (i % 64 == 63 && swapper_done(&p->a))
                        break;
        }
        return 0;
}

static int race_setup(struct probe *p, struct b4_error *err)
{
        struct probe_out o = { 0 };
        int r;

        r = probe_sh(&p->a,
                     "rm -rf " RACE_DIR " && mkdir -p " RACE_DIR "/real && printf '" RACE_INSIDE
                     "\\n' >" RACE_DIR "/real/hostname && ln -s /etc " RACE_DIR "/lnk",
                     &o, err);
        if (r >= 0 && o.exit_code != 0)
                r = b4_error_set(err, -EIO, "setup exited %d: %.120s", o.exit_code, o.err);
        probe_out_clear(&o);
        if (r >= 0)
                r = probe_helper(&p->a,
                                 "swap " RACE_DIR "/real " RACE_DIR "/lnk " RACE_SECONDS
                                 " " RACE_DIR "/done",
                                 &o, err);
        probe_out_clear(&o);
        return r;
}

static int race_swaps(struct probe *p, unsigned long *ret)
{
        cleanup_free char *text = NULL;
        size_t len = 0;

        for (int i = 0; i < 50 && !swapper_done(&p->a); i++)
                (void)usleep(100 * 1000);
        if (b4_fs_read_file(b4_sandbox_fs(p->a.sb), B4_WORKSPACE_ROOT "/" RACE_DIR "/done", 64,
                            &text, &len, NULL) < 0)
                return -ENOENT;
        *ret = strtoul(text, NULL, 10);
        return 0;
}

static void race_verdict(struct probe *p, const struct race_count *c, unsigned long swaps)
{
        if (c->outside)
                probe_report(
                        p, "jail-race", PROBE_FAIL,
                        "%u of %u reads returned a file outside the workspace (%lu swaps): '%s'",
                        c->outside, c->reads, swaps, c->first_outside);
        else if (swaps == 0 || c->inside == 0)
                probe_report(p, "jail-race", PROBE_FAIL,
                             "cannot verify: %lu swaps, %u inside reads of %u", swaps, c->inside,
                             c->reads);
        else
                probe_report(p, "jail-race", PROBE_PASS,
                             "%u reads during %lu swaps: %u inside, %u refused, none outside",
                             c->reads, swaps, c->inside, c->refused);
}

void probe_jail_race(struct probe *p)
{
        struct b4_permissions *perms = NULL;
        struct b4_tools *jailed = NULL;
        struct race_count c = { 0 };
        struct b4_error err = { 0 };
        unsigned long swaps = 0;
        int r;

        if (probe_interrupted(p))
                return;
        r = b4_permissions_new(B4_PERMISSION_NON_INTERACTIVE, &perms);
        if (r >= 0)
                r = b4_tools_new(p->a.sb,
                                 &(struct b4_tools_options){ .app = perms, .cancel = p->cancel },
                                 &jailed, &err);
        if (r >= 0)
                r = race_setup(p, &err);
        if (r >= 0)
                r = race_reads(p, jailed, &c, &err);
        if (r >= 0 && race_swaps(p, &swaps) < 0)
                r = b4_error_set(&err, -EIO, "the swapper left no count");
        if (r < 0)
                probe_report(p, "jail-race", PROBE_FAIL, "cannot verify: %s", err.msg);
        else
                race_verdict(p, &c, swaps);
        b4_tools_free(jailed);
        b4_permissions_free(perms);
}
