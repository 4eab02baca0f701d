/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tool suite: one table of tool calls with their exact result documents, plus the
 * editFile case files (tests/data/editfile/NAME.test) and the permission-request flows, run
 * against every provider available here (fake always, native when it can start; docker when
 * tests/docker runs it under a daemon) so that the results are proven identical. runBash's
 * durationMs, wallMs and accounting (cpuMs, peakMemoryBytes, maxProcesses, oomKilled) are
 * dropped, after checking each one present has its type (a number, or null where the
 * provider cannot know; oomKilled a boolean or null; the expected documents leave them out).
 */

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/provider-impl.h" /* b4_fs_ops: a handle without read_range */
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "b4-test.h"
#include "casefile.h"
#include "json/json.h"
#include "tool-call.h"
#include "tools/host.h"

/* The case table leaves trailing fields to their zero defaults. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct env {
        const char *type;
        struct b4_provider *prov;
        struct b4_sandbox *sb;
        char *state;
        bool shared_state; /* the caller's (B4BOX_TEST_NATIVE_STATE): not removed */
        char thread[64];
};

/* ---- helpers ---- */

static struct env *need(void **state)
{
        return *state;
}

static void put(struct env *e, const char *rel, const char *data, size_t len)
{
        char abs[4096];
        struct b4_error err = { 0 };

        snprintf(abs, sizeof(abs), "%s/%s", B4_WORKSPACE_ROOT, rel);
        if (b4_fs_write_file(b4_sandbox_fs(e->sb), abs, data, len, &err) < 0)
                fail_msg("[%s] cannot write '%s': %s", e->type, abs, err.msg);
}

static char *get(struct env *e, const char *rel, size_t *len)
{
        char abs[4096];
        char *data = NULL;

        snprintf(abs, sizeof(abs), "%s/%s", B4_WORKSPACE_ROOT, rel);
        if (b4_fs_read_file(b4_sandbox_fs(e->sb), abs, B4_UNBOUNDED, &data, len, NULL) < 0)
                return NULL;
        return data;
}

/* runBash's per-provider figures: typed, then dropped. */
static void drop_figures(struct jv *res)
{
        static const char *const numbers[] = { "durationMs", "wallMs", "cpuMs", "peakMemoryBytes",
                                               "maxProcesses" };
        struct jv *oom = jv_object_get(res, "oomKilled");

        for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
                struct jv *n = jv_object_get(res, numbers[i]);
                if (n && !(jv_is_null(n) || jv_is_safe_integer(n)))
                        fail_msg("runBash result: %s not a number/null", numbers[i]);
                (void)jv_object_del(res, numbers[i]);
        }
        if (oom && !(jv_is_null(oom) || jv_is_bool(oom)))
                fail_msg("runBash result: oomKilled not a boolean/null");
        (void)jv_object_del(res, "oomKilled");
}

/* Parse, drop runBash's figures (drop_figures()), dump with sorted keys. */
static char *normalise(const char *json)
{
        struct jv *v = NULL, *res;
        char *out = NULL;

        if (jv_parse(json, strlen(json), &v, NULL) < 0)
                fail_msg("not JSON: %s", json);
        res = jv_object_get(v, "result");
        if (res && jv_is_object(res))
                drop_figures(res);
        assert_int_equal(jv_dump(v, JV_SORT_KEYS, &out), 0);
        jv_unref(v);
        return out;
}

struct opts {
        enum b4_permission_mode mode;
        const char *allow[4]; /* "key pattern" */
        const char *deny[4];
        uint64_t read_cap;
        const char *approve[2];
};

static struct b4_permissions *make_perms(const struct opts *o)
{
        struct b4_permissions *p = NULL;

        assert_int_equal(b4_permissions_new(o->mode, &p), 0);
        for (int l = 0; l < 2; l++)
                for (int i = 0; i < 4; i++) {
                        const char *s = l ? o->deny[i] : o->allow[i];
                        char key[32];
                        if (!s)
                                break;
                        snprintf(key, sizeof(key), "%.*s", (int)strcspn(s, " "), s);
                        assert_int_equal(b4_permissions_add(p, l, key, s + strlen(key) + 1, NULL),
                                         0);
                }
        return p;
}

static char *call(struct env *e, const struct opts *o, const char *tool, const char *args)
{
        struct b4_permissions *p = make_perms(o);
        struct b4_tools_options to = { .app = p,
                                       .read_cap = o->read_cap,
                                       .approve_tools = o->approve[0] ? o->approve : NULL };
        struct b4_tools *t = NULL;
        char *json = NULL;

        assert_int_equal(b4_tools_new(e->sb, &to, &t, NULL), 0);
        assert_int_equal(tool_call_text(t, tool, args, &json, NULL), 0);
        b4_tools_free(t);
        b4_permissions_free(p);
        return json;
}

/* ---- the table ---- */

struct file {
        const char *path;
        const char *data;
        size_t len; /* 0 = strlen */
};

struct tool_case {
        const char *name;
        struct file files[3];
        const char *tool;
        const char *args;
        const char *expect; /* the whole result document */
        struct opts o;
        struct file after; /* expected content afterwards */
};

#define NI                              \
 {                                      \
  .mode = B4_PERMISSION_NON_INTERACTIVE \
 }
#define ALLOW_ECHO                                                                            \
 {                                                                                            \
  .mode = B4_PERMISSION_NON_INTERACTIVE, .allow = { "bash echo", "bash exit", "bash printf" } \
 }
#define OK(s)          "{\"ok\":true,\"result\":" s "}"
#define ERR(code, msg) "{\"ok\":false,\"error\":{\"code\":\"" code "\",\"message\":\"" msg "\"}}"
#define ERRNO(e, msg) \
 "{\"ok\":false,\"error\":{\"code\":\"tool_error\",\"errno\":\"" e "\",\"message\":\"" msg "\"}}"

static const struct tool_case cases[] = {
        /* readFile */
        { "read whole",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\"}",
          OK("\"hello\\nworld\\n\""),
          NI },
        { "read absolute inside",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"/workspace/r1.txt\"}",
          OK("\"hello\\nworld\\n\""),
          NI },
        { "read dotdot inside",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"sub/../r1.txt\"}",
          OK("\"hello\\nworld\\n\""),
          NI },
        { "read range",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":2,\"endLine\":2}",
          OK("\"[r1.txt lines 2-2 of 2]\\nworld\""),
          NI },
        { "read startLine only",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":2}",
          OK("\"[r1.txt lines 2-2 of 2]\\nworld\""),
          NI },
        { "read endLine only",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"endLine\":1}",
          OK("\"[r1.txt lines 1-1 of 2]\\nhello\""),
          NI },
        { "read endLine past end",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":1,\"endLine\":99}",
          OK("\"[r1.txt lines 1-2 of 2]\\nhello\\nworld\""),
          NI },
        { "read null range",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":null,\"endLine\":null}",
          OK("\"hello\\nworld\\n\""),
          NI },
        { "read start > end",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":3,\"endLine\":2}",
          ERRNO("EINVAL", "readFile: startLine (3) is greater than endLine (2)"),
          NI },
        { "read start past end",
          { { "r1.txt", "hello\nworld\n" } },
          "readFile",
          "{\"path\":\"r1.txt\",\"startLine\":5}",
          ERRNO("EINVAL", "readFile: startLine 5 is past the end of r1.txt (2 lines)"),
          NI },
        { "read no trailing newline",
          { { "nt.txt", "a\nb" } },
          "readFile",
          "{\"path\":\"nt.txt\",\"startLine\":2}",
          OK("\"[nt.txt lines 2-2 of 2]\\nb\""),
          NI },
        { "read crlf keeps cr",
          { { "crlf.txt", "a\r\nb\r\n" } },
          "readFile",
          "{\"path\":\"crlf.txt\",\"startLine\":1,\"endLine\":1}",
          OK("\"[crlf.txt lines 1-1 of 2]\\na\\r\""),
          NI },
        { "read blank lines",
          { { "bl.txt", "\n\n\n" } },
          "readFile",
          "{\"path\":\"bl.txt\",\"startLine\":2,\"endLine\":3}",
          OK("\"[bl.txt lines 2-3 of 3]\\n\\n\""),
          NI },
        { "read empty",
          { { "empty.txt", "" } },
          "readFile",
          "{\"path\":\"empty.txt\"}",
          OK("\"\""),
          NI },
        { "read empty range",
          { { "empty.txt", "" } },
          "readFile",
          "{\"path\":\"empty.txt\",\"startLine\":1}",
          ERRNO("EINVAL", "readFile: startLine 1 is past the end of empty.txt (0 lines)"),
          NI },
        { "read missing",
          { { 0 } },
          "readFile",
          "{\"path\":\"missing.txt\"}",
          ERRNO("ENOENT", "readFile /workspace/missing.txt: No such file or directory"),
          NI },
        { "read directory",
          { { "d/x", "1" } },
          "readFile",
          "{\"path\":\"d\"}",
          ERRNO("EISDIR", "readFile /workspace/d: Is a directory"),
          NI },
        { "read spaces",
          { { "name with spaces.txt", "s" } },
          "readFile",
          "{\"path\":\"name with spaces.txt\"}",
          OK("\"s\""),
          NI },
        { "read newline name",
          { { "line\nbreak.txt", "n" } },
          "readFile",
          "{\"path\":\"line\\nbreak.txt\"}",
          OK("\"n\""),
          NI },
        { "read utf8 name",
          { { "caf\xc3\xa9/\xe6\x97\xa5.md", "\xe6\x97\xa5\xe6\x9c\xac" } },
          "readFile",
          "{\"path\":\"caf\\u00e9/\\u65e5.md\"}",
          OK("\"\xe6\x97\xa5\xe6\x9c\xac\""),
          NI },
        { "read binary lossy",
          { { "bin.dat",
              "\xff\xfe"
              "A\xc3",
              4 } },
          "readFile",
          "{\"path\":\"bin.dat\"}",
          OK("\"\\ufffd\\ufffdA\\ufffd\""),
          NI },
        { "read nul byte",
          { { "nul.dat", "a\0b", 3 } },
          "readFile",
          "{\"path\":\"nul.dat\"}",
          OK("\"a\\u0000b\""),
          NI },
        { "read cap custom",
          { { "c11.txt", "0123456789X" } },
          "readFile",
          "{\"path\":\"c11.txt\"}",
          ERRNO("EFBIG", "File too large: 11 bytes (max 10) at /workspace/c11.txt"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 } },
        { "read cap exact",
          { { "c10.txt", "0123456789" } },
          "readFile",
          "{\"path\":\"c10.txt\"}",
          OK("\"0123456789\""),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 } },
        { "read cap bounds a range's bytes on a file over it",
          { { "c11.txt", "0123456789X" } },
          "readFile",
          "{\"path\":\"c11.txt\",\"startLine\":1}",
          ERRNO("EFBIG",
                "readFile: lines 1-end of c11.txt are more than 10 bytes (the size "
                "cap); ask for fewer lines"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 } },
        { "a range that fits is read from a file over the cap",
          { { "c12.txt", "0123456789\nX\n" } },
          "readFile",
          "{\"path\":\"c12.txt\",\"startLine\":2}",
          OK("\"[c12.txt lines 2-2 of 2]\\nX\""),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 } },
        { "a range past the end of a file over the cap",
          { { "c13.txt", "0123456789\nX\n" } },
          "readFile",
          "{\"path\":\"c13.txt\",\"startLine\":3}",
          ERRNO("EINVAL", "readFile: startLine 3 is past the end of c13.txt (2 lines)"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 } },
        { "read outside fail-closed",
          { { 0 } },
          "readFile",
          "{\"path\":\"../etc/passwd\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /etc/passwd"),
          NI },
        { "read absolute outside",
          { { 0 } },
          "readFile",
          "{\"path\":\"/etc/passwd\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /etc/passwd"),
          NI },
        { "read sibling outside",
          { { 0 } },
          "readFile",
          "{\"path\":\"/workspace-evil/x\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /workspace-evil/x"),
          NI },
        { "read outside denied",
          { { 0 } },
          "readFile",
          "{\"path\":\"/etc/passwd\"}",
          ERR("B4_E3001", "Permission denied by user: /etc/passwd"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE,
            .allow = { "readFile /" },
            .deny = { "readFile /etc/" } } },
        /* writeFile */
        { "write",
          { { 0 } },
          "writeFile",
          "{\"path\":\"w1.txt\",\"content\":\"h\\u00e9llo\"}",
          OK("\"wrote 6 bytes to w1.txt\""),
          NI,
          { "w1.txt", "h\xc3\xa9llo" } },
        { "write creates parents",
          { { 0 } },
          "writeFile",
          "{\"path\":\"deep/er/w.txt\",\"content\":\"x\\n\"}",
          OK("\"wrote 2 bytes to deep/er/w.txt\""),
          NI,
          { "deep/er/w.txt", "x\n" } },
        { "write replaces",
          { { "w2.txt", "old old old" } },
          "writeFile",
          "{\"path\":\"w2.txt\",\"content\":\"new\"}",
          OK("\"wrote 3 bytes to w2.txt\""),
          NI,
          { "w2.txt", "new" } },
        { "write empty",
          { { 0 } },
          "writeFile",
          "{\"path\":\"we.txt\",\"content\":\"\"}",
          OK("\"wrote 0 bytes to we.txt\""),
          NI,
          { "we.txt", "" } },
        { "write nul",
          { { 0 } },
          "writeFile",
          "{\"path\":\"wn.txt\",\"content\":\"a\\u0000b\"}",
          OK("\"wrote 3 bytes to wn.txt\""),
          NI,
          { "wn.txt", "a\0b", 3 } },
        { "write outside",
          { { 0 } },
          "writeFile",
          "{\"path\":\"/tmp/x\",\"content\":\"\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /tmp/x"),
          NI },
        { "write over a directory",
          { { "wd/x", "1" } },
          "writeFile",
          "{\"path\":\"wd\",\"content\":\"\"}",
          ERRNO("EISDIR", "writeFile /workspace/wd: Is a directory"),
          NI },
        /* editFile (more in tests/data/editfile) */
        { "edit outside",
          { { 0 } },
          "editFile",
          "{\"path\":\"/etc/passwd\",\"oldText\":\"a\",\"newText\":\"b\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /etc/passwd"),
          NI },
        { "edit missing",
          { { 0 } },
          "editFile",
          "{\"path\":\"nope.txt\",\"oldText\":\"a\",\"newText\":\"b\"}",
          ERRNO("ENOENT", "readFile /workspace/nope.txt: No such file or directory"),
          NI },
        { "edit directory",
          { { "ed/x", "1" } },
          "editFile",
          "{\"path\":\"ed\",\"oldText\":\"a\",\"newText\":\"b\"}",
          ERRNO("EISDIR", "readFile /workspace/ed: Is a directory"),
          NI },
        { "edit over cap",
          { { "e11.txt", "0123456789X" } },
          "editFile",
          "{\"path\":\"e11.txt\",\"oldText\":\"0\",\"newText\":\"b\"}",
          ERRNO("EFBIG", "File too large: 11 bytes (max 10) at /workspace/e11.txt"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .read_cap = 10 },
          { "e11.txt", "0123456789X" } },
        /* listDir */
        { "list sorted",
          { { "ls/b", "" }, { "ls/a", "" }, { "ls/c/d", "" } },
          "listDir",
          "{\"path\":\"ls\"}",
          OK("[\"a\",\"b\",\"c\"]"),
          NI },
        { "list odd names",
          { { "ls2/line\nbreak", "" }, { "ls2/caf\xc3\xa9", "" }, { "ls2/a b", "" } },
          "listDir",
          "{\"path\":\"ls2\"}",
          OK("[\"a b\",\"caf\\u00e9\",\"line\\nbreak\"]"),
          NI },
        { "list missing",
          { { 0 } },
          "listDir",
          "{\"path\":\"nope\"}",
          ERRNO("ENOENT", "listDir /workspace/nope: No such file or directory"),
          NI },
        { "list outside",
          { { 0 } },
          "listDir",
          "{\"path\":\"/etc\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /etc"),
          NI },
        { "list root dotdot",
          { { 0 } },
          "listDir",
          "{\"path\":\"..\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): /"),
          NI },
        /* runBash */
        { "bash fail-closed",
          { { 0 } },
          "runBash",
          "{\"command\":\"rm -rf /\"}",
          ERR("B4_E3001", "Permission denied (fail-closed): rm -rf /"),
          NI },
        { "bash denied",
          { { 0 } },
          "runBash",
          "{\"command\":\"rm -rf x\"}",
          ERR("B4_E3001", "Permission denied by user: rm -rf x"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE,
            .allow = { "bash rm" },
            .deny = { "bash rm -rf" } } },
        { "bash echo",
          { { 0 } },
          "runBash",
          "{\"command\":\"echo hi there\"}",
          OK("{\"exitCode\":0,\"stderr\":\"\",\"stdout\":\"hi there\\n\",\"cancelled\":false,\"timedOut\":false,\"truncated\":false}"),
          ALLOW_ECHO },
        { "bash exit code",
          { { 0 } },
          "runBash",
          "{\"command\":\"exit 7\"}",
          OK("{\"exitCode\":7,\"stderr\":\"\",\"stdout\":\"\",\"cancelled\":false,\"timedOut\":false,\"truncated\":false}"),
          ALLOW_ECHO },
        { "bash printf",
          { { 0 } },
          "runBash",
          "{\"command\":\"printf '%s-%s' a b\"}",
          OK("{\"exitCode\":0,\"stderr\":\"\",\"stdout\":\"a-b\",\"cancelled\":false,\"timedOut\":false,\"truncated\":false}"),
          ALLOW_ECHO },
        { "bash bypass",
          { { 0 } },
          "runBash",
          "{\"command\":\"echo by\"}",
          OK("{\"exitCode\":0,\"stderr\":\"\",\"stdout\":\"by\\n\",\"cancelled\":false,\"timedOut\":false,\"truncated\":false}"),
          { .mode = B4_PERMISSION_BYPASS, .deny = { "bash echo" } } },
        /* tool gate (tools.approve) */
        { "tool gate fail-closed",
          { { 0 } },
          "listDir",
          "{}",
          ERR("B4_E3001", "Permission denied (fail-closed): tool listDir"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE, .approve = { "listDir" } } },
        { "tool gate denied",
          { { 0 } },
          "listDir",
          "{}",
          ERR("B4_E3001", "Permission denied by user: tool listDir"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE,
            .approve = { "listDir" },
            .deny = { "tool listDir" } } },
        { "tool gate exact",
          { { 0 } },
          "listDir",
          "{}",
          ERR("B4_E3001", "Permission denied (fail-closed): tool listDir"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE,
            .approve = { "listDir" },
            .allow = { "tool list" } } },
        { "tool gate allowed",
          { { "tg/a", "" } },
          "listDir",
          "{\"path\":\"tg\"}",
          OK("[\"a\"]"),
          { .mode = B4_PERMISSION_NON_INTERACTIVE,
            .approve = { "listDir" },
            .allow = { "tool listDir" } } },
        /* argument validation */
        { "unknown tool",
          { { 0 } },
          "rmrf",
          "{}",
          ERR("unknown_tool",
              "unknown tool 'rmrf' (known: readFile, writeFile, editFile, listDir, runBash)"),
          NI },
        { "unknown argument",
          { { 0 } },
          "readFile",
          "{\"path\":\"x\",\"foo\":1}",
          ERR("invalid_arguments",
              "readFile: unknown argument 'foo' (allowed: path, startLine, endLine)"),
          NI },
        { "missing argument",
          { { 0 } },
          "writeFile",
          "{\"path\":\"x\"}",
          ERR("invalid_arguments", "writeFile: missing required argument 'content'"),
          NI },
        { "missing path",
          { { 0 } },
          "readFile",
          "{}",
          ERR("invalid_arguments", "readFile: missing required argument 'path'"),
          NI },
        { "path wrong type",
          { { 0 } },
          "readFile",
          "{\"path\":1}",
          ERR("invalid_arguments",
              "readFile: argument 'path' must be a non-empty string (got number)"),
          NI },
        { "path empty",
          { { 0 } },
          "readFile",
          "{\"path\":\"\"}",
          ERR("invalid_arguments",
              "readFile: argument 'path' must be a non-empty string (got string)"),
          NI },
        { "path null",
          { { 0 } },
          "listDir",
          "{\"path\":null}",
          ERR("invalid_arguments", "listDir: argument 'path' must be a string (got null)"),
          NI },
        { "path nul",
          { { 0 } },
          "readFile",
          "{\"path\":\"a\\u0000b\"}",
          ERR("invalid_arguments", "readFile: argument 'path' must not contain NUL"),
          NI },
        { "startLine zero",
          { { 0 } },
          "readFile",
          "{\"path\":\"x\",\"startLine\":0}",
          ERR("invalid_arguments",
              "readFile: argument 'startLine' must be an integer >= 1 or null (got number)"),
          NI },
        { "startLine fraction",
          { { 0 } },
          "readFile",
          "{\"path\":\"x\",\"endLine\":1.5}",
          ERR("invalid_arguments",
              "readFile: argument 'endLine' must be an integer >= 1 or null (got number)"),
          NI },
        { "startLine string",
          { { 0 } },
          "readFile",
          "{\"path\":\"x\",\"startLine\":\"1\"}",
          ERR("invalid_arguments",
              "readFile: argument 'startLine' must be an integer >= 1 or null (got string)"),
          NI },
        { "replaceAll type",
          { { 0 } },
          "editFile",
          "{\"path\":\"x\",\"oldText\":\"a\",\"newText\":\"b\",\"replaceAll\":\"yes\"}",
          ERR("invalid_arguments",
              "editFile: argument 'replaceAll' must be a boolean or null (got string)"),
          NI },
        { "oldText empty",
          { { 0 } },
          "editFile",
          "{\"path\":\"x\",\"oldText\":\"\",\"newText\":\"b\"}",
          ERR("invalid_arguments",
              "editFile: argument 'oldText' must be a non-empty string (got string)"),
          NI },
        { "content type",
          { { 0 } },
          "writeFile",
          "{\"path\":\"x\",\"content\":[]}",
          ERR("invalid_arguments", "writeFile: argument 'content' must be a string (got array)"),
          NI },
        { "command empty",
          { { 0 } },
          "runBash",
          "{\"command\":\"\"}",
          ERR("invalid_arguments",
              "runBash: argument 'command' must be a non-empty string (got string)"),
          NI },
        { "args not object",
          { { 0 } },
          "readFile",
          "[]",
          ERR("invalid_arguments", "readFile: arguments must be a JSON object (got array)"),
          NI },
};

static void run_case(struct env *e, const struct tool_case *c)
{
        char *json, *got, *want;

        for (int i = 0; i < 3 && c->files[i].path; i++)
                put(e, c->files[i].path, c->files[i].data,
                    c->files[i].len ? c->files[i].len : strlen(c->files[i].data));
        json = call(e, &c->o, c->tool, c->args);
        got = normalise(json);
        want = normalise(c->expect);
        if (strcmp(got, want) != 0)
                fail_msg("[%s] %s:\n  want %s\n  got  %s", e->type, c->name, want, got);
        if (c->after.path) {
                size_t len = 0, wl = c->after.len ? c->after.len : strlen(c->after.data);
                char *data = get(e, c->after.path, &len);
                assert_non_null(data);
                if (len != wl || memcmp(data, c->after.data, wl) != 0)
                        fail_msg("[%s] %s: file content after differs", e->type, c->name);
                free(data);
        }
        free(json);
        free(got);
        free(want);
}

static void test_tool_table(void **state)
{
        struct env *e = need(state);

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                run_case(e, &cases[i]);
        print_message("# [%s] %zu tool cases\n", e->type, sizeof(cases) / sizeof(cases[0]));
}

/* ---- large files ---- */

static void test_read_cap_default(void **state)
{
        struct env *e = need(state);
        size_t n = 300 * 1024;
        char *big = malloc(n);
        const struct opts o = NI;
        char *json;

        memset(big, 'x', n);
        for (size_t i = 79; i < n; i += 80)
                big[i] = '\n';
        put(e, "big.txt", big, n);
        json = call(e, &o, "readFile", "{\"path\":\"big.txt\"}");
        assert_string_equal(
                json,
                ERRNO("EFBIG", "File too large: 307200 bytes (max 262144) at /workspace/big.txt"));
        free(json);
        /* a range of a file over the cap is scanned: only the range must fit */
        json = call(e, &o, "readFile",
                    "{\"path\":\"big.txt\",\"startLine\":3000,\"endLine\":3000}");
        assert_non_null(strstr(json, "\"[big.txt lines 3000-3000 of 3840]\\nxxxxxxxxxx"));
        free(json);
        /* tool-outputs/ reads go past the read cap (up to B4_TOOLS_TOOL_OUTPUT_CAP) */
        put(e, "tool-outputs/call-1.txt", big, n);
        json = call(e, &o, "readFile", "{\"path\":\"tool-outputs/call-1.txt\",\"startLine\":3840}");
        assert_string_equal(
                json,
                OK("\"[tool-outputs/call-1.txt lines 3840-3840 of 3840]\\n"
                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""));
        free(json);
        json = call(e, &o, "readFile", "{\"path\":\"tool-outputs/call-1.txt\"}");
        assert_true(strncmp(json, "{\"ok\":true", 10) == 0);
        assert_true(strlen(json) > n);
        free(json);
        free(big);
}

/* ---- editFile case files ---- */

static void edit_case(struct env *e, const struct case_file *f, const struct case_block *b)
{
        const struct case_field *content = case_get(b, "content");
        const struct case_field *after = case_get(b, "after");
        const char *file = case_str(b, "file") ? case_str(b, "file") : "f.txt";
        const char *res = case_str(b, "result"), *error = case_str(b, "error");
        struct opts o = NI;
        char *json, *got;
        struct jv *v = NULL, *ok;

        if (content)
                put(e, file, content->value, content->len);
        json = call(e, &o, "editFile", case_str(b, "args"));
        assert_int_equal(jv_parse(json, strlen(json), &v, NULL), 0);
        ok = jv_object_get(v, "ok");
        if (res) {
                got = (char *)jv_string(jv_object_get(v, "result"));
                if (!jv_is_true(ok) || strcmp(got, res) != 0)
                        fail_msg("[%s] %s:%d: want result '%s', got %s", e->type, f->name, b->line,
                                 res, json);
        } else {
                const struct jv *err = jv_object_get(v, "error");
                got = (char *)jv_string(jv_object_get(err, "message"));
                if (jv_is_true(ok) || !got || strcmp(got, error) != 0)
                        fail_msg("[%s] %s:%d: want error '%s', got %s", e->type, f->name, b->line,
                                 error, json);
                if (case_str(b, "code") &&
                    strcmp(jv_string(jv_object_get(err, "code")), case_str(b, "code")) != 0)
                        fail_msg("[%s] %s:%d: want code %s, got %s", e->type, f->name, b->line,
                                 case_str(b, "code"), json);
        }
        if (after) {
                size_t len = 0;
                char *data = get(e, file, &len);
                if (!data || len != after->len || memcmp(data, after->value, len) != 0)
                        fail_msg("[%s] %s:%d: content after differs", e->type, f->name, b->line);
                free(data);
        }
        jv_unref(v);
        free(json);
}

static void test_editfile_cases(void **state)
{
        static const char *const raw[] = { "args", NULL };
        struct env *e = need(state);
        struct case_file *files = NULL;
        size_t n = case_files_load("editfile", raw, &files), count = 0;

        assert_true(n > 0);
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < files[i].n; k++, count++)
                        edit_case(e, &files[i], &files[i].blocks[k]);
        case_files_free(files, n);
        print_message("# [%s] %zu editFile cases\n", e->type, count);
}

/* ---- permission requests and answers ---- */

struct ctx {
        struct b4_permissions *app, *thread;
        struct b4_grant_store *grants;
        struct b4_tools *t;
};

static void ctx_open(struct ctx *c, struct env *e, enum b4_permission_mode mode, bool per_thread)
{
        *c = (struct ctx){ 0 };
        assert_int_equal(b4_permissions_new(mode, &c->app), 0);
        if (per_thread) {
                assert_int_equal(b4_permissions_new(mode, &c->thread), 0);
                assert_int_equal(b4_grant_store_memory_new(&c->grants), 0);
        }
        struct b4_tools_options o = { .app = c->app, .thread = c->thread, .grants = c->grants };
        assert_int_equal(b4_tools_new(e->sb, &o, &c->t, NULL), 0);
}

static void ctx_close(struct ctx *c)
{
        b4_tools_free(c->t);
        b4_grant_store_free(c->grants);
        b4_permissions_free(c->thread);
        b4_permissions_free(c->app);
}

/* Call and expect a permission request; returns its id (caller frees) and checks its shape. */
static char *expect_request(
        struct ctx *c, const char *tool, const char *args, const char *kind, const char *detail)
{
        char *json = NULL, *det = NULL;
        struct jv *v = NULL, *req;
        regex_t re;
        char *id;

        assert_int_equal(tool_call_text(c->t, tool, args, &json, NULL), 0);
        assert_int_equal(jv_parse(json, strlen(json), &v, NULL), 0);
        assert_false(jv_is_true(jv_object_get(v, "ok")));
        assert_string_equal(jv_string(jv_object_get(jv_object_get(v, "error"), "code")),
                            "permission_required");
        req = jv_object_get(v, "permissionRequest");
        assert_non_null(req);
        assert_string_equal(jv_string(jv_object_get(req, "type")), "permission-request");
        assert_string_equal(jv_string(jv_object_get(req, "kind")), kind);
        assert_int_equal(jv_dump(jv_object_get(req, "detail"), JV_SORT_KEYS, &det), 0);
        assert_string_equal(det, detail);
        id = strdup(jv_string(jv_object_get(req, "interruptId")));
        assert_int_equal(regcomp(&re, "^perm-[0-9]+-[0-9a-z]{6}$", REG_EXTENDED | REG_NOSUB), 0);
        assert_int_equal(regexec(&re, id, 0, NULL, 0), 0);
        regfree(&re);
        free(det);
        free(json);
        jv_unref(v);
        return id;
}

static char *resume(struct ctx *c, const char *id, const char *answer)
{
        char *json = NULL;

        assert_int_equal(tool_resume_text(c->t, id, answer, &json, NULL), 0);
        return json;
}

static void test_interactive_command(void **state)
{
        struct env *e = need(state);
        struct ctx c;
        char *id, *json;

        ctx_open(&c, e, B4_PERMISSION_INTERACTIVE, false);
        id = expect_request(
                &c, "runBash", "{\"command\":\"echo  one   two three\"}", "command",
                "{\"command\":\"echo  one   two three\",\"suggestedPattern\":\"echo one\"}");
        json = resume(&c, id, "once");
        assert_non_null(strstr(json, "\"stdout\":\"one two three\\n\""));
        free(json);
        /* an id answers once */
        assert_int_equal(tool_resume_text(c.t, id, "once", &json, NULL), -ENOENT);
        free(id);
        /* "once" recorded nothing: asks again; "deny" refuses with the user text */
        id = expect_request(
                &c, "runBash", "{\"command\":\"echo  one   two three\"}", "command",
                "{\"command\":\"echo  one   two three\",\"suggestedPattern\":\"echo one\"}");
        json = resume(&c, id, "deny");
        assert_string_equal(json,
                            ERR("B4_E3001", "Permission denied by user: echo  one   two three"));
        free(json);
        free(id);
        /* "always" records the suggested pattern in the app's runtime list */
        id = expect_request(&c, "runBash", "{\"command\":\"echo one x\"}", "command",
                            "{\"command\":\"echo one x\",\"suggestedPattern\":\"echo one\"}");
        assert_int_equal(tool_resume_text(c.t, id, "sometimes", &json, NULL), -EINVAL);
        json = resume(&c, id, "always");
        assert_non_null(strstr(json, "\"stdout\":\"one x\\n\""));
        free(json);
        free(id);
        assert_int_equal(b4_permissions_match(c.app, "bash", "echo one y"), B4_PERMISSION_ALLOW);
        assert_int_equal(
                tool_call_text(c.t, "runBash", "{\"command\":\"echo one z\"}", &json, NULL), 0);
        assert_non_null(strstr(json, "\"ok\":true"));
        free(json);
        ctx_close(&c);
}

static void test_interactive_path(void **state)
{
        struct env *e = need(state);
        struct ctx c;
        char *id, *json;

        ctx_open(&c, e, B4_PERMISSION_INTERACTIVE, false);
        id = expect_request(
                &c, "listDir", "{\"path\":\"../etc\"}", "path",
                "{\"operation\":\"listDir\",\"path\":\"/etc\",\"suggestedPattern\":\"/\"}");
        json = resume(&c, id, "deny");
        assert_string_equal(json, ERR("B4_E3001", "Permission denied by user: /etc"));
        free(json);
        free(id);
        id = expect_request(
                &c, "writeFile", "{\"path\":\"/tmp/b4-tools-x/y.txt\",\"content\":\"\"}", "path",
                "{\"operation\":\"writeFile\",\"path\":\"/tmp/b4-tools-x/y.txt\",\"suggestedPattern\":\"/tmp/b4-tools-x/\"}");
        json = resume(&c, id, "once");
        assert_null(strstr(json, "permission_required"));
        assert_null(strstr(json, "Permission denied"));
        free(json);
        free(id);
        ctx_close(&c);
}

static void test_thread_grants(void **state)
{
        struct env *e = need(state);
        struct ctx c;
        char *id, *json;

        ctx_open(&c, e, B4_PERMISSION_INTERACTIVE, true);
        /* the app's allow list is not consulted for a thread with its own permissions */
        assert_int_equal(b4_permissions_add(c.app, B4_PERMISSION_LIST_ALLOW, "bash", "echo", NULL),
                         0);
        id = expect_request(&c, "runBash", "{\"command\":\"echo a b c\"}", "command",
                            "{\"command\":\"echo a b c\",\"suggestedPattern\":\"echo a\"}");
        json = resume(&c, id, "always");
        assert_non_null(strstr(json, "\"ok\":true"));
        free(json);
        free(id);
        assert_int_equal(b4_grant_store_match(c.grants, e->sb->thread_id, "bash", "echo a z", NULL),
                         1);
        assert_int_equal(b4_grant_store_match(c.grants, "other-thread", "bash", "echo a z", NULL),
                         0);
        assert_int_equal(b4_permissions_match(c.app, "bash", "echo a z"), B4_PERMISSION_ALLOW);
        assert_int_equal(tool_call_text(c.t, "runBash", "{\"command\":\"echo a z\"}", &json, NULL),
                         0);
        assert_non_null(strstr(json, "\"ok\":true"));
        free(json);
        /* a blank suggested pattern is not recorded: allowed once */
        id = expect_request(&c, "runBash", "{\"command\":\" \"}", "command",
                            "{\"command\":\" \",\"suggestedPattern\":\"\"}");
        json = resume(&c, id, "always");
        assert_null(strstr(json, "permission_required"));
        free(json);
        free(id);
        assert_int_equal(b4_grant_store_match(c.grants, e->sb->thread_id, "bash", " ", NULL), 0);
        /* grants vanish with the thread */
        assert_int_equal(b4_grant_store_forget(c.grants, e->sb->thread_id, NULL), 0);
        assert_int_equal(b4_grant_store_match(c.grants, e->sb->thread_id, "bash", "echo a z", NULL),
                         0);
        ctx_close(&c);
}

static void test_interactive_tool(void **state)
{
        struct env *e = need(state);
        const char *approve[] = { "listDir", NULL };
        struct b4_permissions *app = NULL;
        struct b4_tools *t = NULL;
        struct ctx c = { 0 };
        char *id, *json;

        assert_int_equal(b4_permissions_new(B4_PERMISSION_INTERACTIVE, &app), 0);
        struct b4_tools_options o = { .app = app, .approve_tools = approve };
        assert_int_equal(b4_tools_new(e->sb, &o, &t, NULL), 0);
        c.t = t;
        id = expect_request(&c, "listDir", "{}", "tool",
                            "{\"suggestedPattern\":\"listDir\",\"toolName\":\"listDir\"}");
        json = resume(&c, id, "deny");
        assert_string_equal(json, ERR("B4_E3001", "Permission denied by user: tool listDir"));
        free(json);
        free(id);
        b4_tools_free(t);
        b4_permissions_free(app);
}

/* ---- the runtime's tools host ---- */

/* One host call in thread @thread_id with @perms; *ret_json the result document. */
static int host_call(struct tools_host *h,
                     struct b4_sandbox *sb,
                     const char *thread_id,
                     struct b4_permissions *perms,
                     const char *args_json,
                     char **ret_json)
{
        struct tools_host_call c = { .sb = sb, .thread_id = thread_id, .perms = perms };
        struct b4_tool_result res = { 0 };
        struct jv *args = NULL;
        int r;

        assert_int_equal(jv_parse(args_json, strlen(args_json), &args, NULL), 0);
        r = tools_host_call(h, &c, "runBash", args, &res, NULL);
        jv_unref(args);
        if (r == 0)
                *ret_json = tool_result_text(&res);
        b4_tool_result_clear(&res);
        return r;
}

static int host_resume(struct tools_host *h,
                       struct b4_sandbox *sb,
                       const char *thread_id,
                       const char *id,
                       const char *answer,
                       char **ret_json)
{
        struct tools_host_call c = { .sb = sb, .thread_id = thread_id };
        struct b4_tool_result res = { 0 };
        int r;

        r = tools_host_resume(h, &c, id, answer, &res, NULL);
        if (r == 0)
                *ret_json = tool_result_text(&res);
        b4_tool_result_clear(&res);
        return r;
}

static void test_host_dispatch(void **state)
{
        struct env *e = need(state);
        struct b4_permissions *app = NULL, *own = NULL;
        struct b4_grant_store *grants = NULL;
        struct tools_host *h = NULL;
        struct jv *v = NULL;
        char *json = NULL;
        char *id;

        assert_int_equal(b4_permissions_new(B4_PERMISSION_INTERACTIVE, &app), 0);
        assert_int_equal(b4_grant_store_memory_new(&grants), 0);
        struct tools_host_options o = { .app = app, .grants = grants };
        assert_int_equal(tools_host_new(&o, &h), 0);
        /* a thread with its own allow list */
        assert_int_equal(b4_permissions_new(B4_PERMISSION_BYPASS, &own), 0);
        assert_int_equal(
                b4_permissions_add(own, B4_PERMISSION_LIST_ALLOW, "bash", "echo own", NULL), 0);
        assert_int_equal(host_call(h, e->sb, "with-own", own, "{\"command\":\"echo own\"}", &json),
                         0);
        assert_non_null(strstr(json, "\"stdout\":\"own\\n\""));
        free(json);
        /* a request survives between calls, keyed by thread */
        assert_int_equal(host_call(h, e->sb, "t-a", NULL, "{\"command\":\"echo hey\"}", &json), 0);
        assert_int_equal(jv_parse(json, strlen(json), &v, NULL), 0);
        id = strdup(jv_string(jv_object_get(jv_object_get(v, "permissionRequest"), "interruptId")));
        jv_unref(v);
        free(json);
        assert_int_equal(host_resume(h, e->sb, "t-b", id, "once", &json), -ENOENT);
        assert_int_equal(host_resume(h, e->sb, "t-a", id, "maybe", &json), -EINVAL);
        assert_int_equal(host_resume(h, e->sb, "t-a", id, "once", &json), 0);
        assert_non_null(strstr(json, "\"stdout\":\"hey\\n\""));
        free(json);
        assert_int_equal(host_resume(h, e->sb, "t-a", id, "once", &json), -ENOENT);
        free(id);
        tools_host_free(h);
        b4_permissions_free(own);
        b4_grant_store_free(grants);
        b4_permissions_free(app);
}

/* ---- providers ---- */

static struct env *env_open(const char *type)
{
        struct b4_provider_config cfg = { 0 };
        struct b4_acquire_req req = { 0 };
        struct b4_policy pol;
        struct b4_error err = { 0 };
        struct env *e = calloc(1, sizeof(*e));
        int r;

        e->type = type;
        /* tests/image runs this binary against native on an imported image, whose store is
         * in B4BOX_TEST_NATIVE_STATE (the caller's, left in place) */
        e->shared_state = strcmp(type, "native") == 0 && getenv("B4BOX_TEST_NATIVE_IMAGE");
        e->state = e->shared_state ? strdup(getenv("B4BOX_TEST_NATIVE_STATE")) : b4_test_tmpdir();
        if (e->shared_state)
                cfg.image = strdup(getenv("B4BOX_TEST_NATIVE_IMAGE"));
        snprintf(e->thread, sizeof(e->thread), "tools-suite-%d", (int)getpid());
        cfg.type = strdup(type);
        cfg.scope = strdup("b4-tools-test");
        cfg.state_dir = strdup(e->state);
        if (strcmp(type, "docker") == 0) { /* under tests/docker/with-dockerd.sh */
                free(cfg.scope);
                cfg.scope = strdup(getenv("B4BOX_TEST_DOCKER_SCOPE"));
                cfg.image = strdup(getenv("B4BOX_TEST_DOCKER_IMAGE"));
                cfg.docker_host = strdup(getenv("B4BOX_TEST_DOCKER_HOST"));
        }
        if (strcmp(type, "kubernetes") == 0) { /* under tests/kubeprov/with-fake.sh */
                cfg.image = strdup(getenv("B4BOX_TEST_KUBE_IMAGE"));
                cfg.kubeconfig = strdup(getenv("B4BOX_TEST_KUBE_CONFIG"));
                cfg.kube_namespace = strdup(getenv("B4BOX_TEST_KUBE_NAMESPACE"));
        }
        r = b4_provider_new(&cfg, &e->prov, &err);
        b4_provider_config_clear(&cfg);
        if (r >= 0) {
                b4_policy_init(&pol);
                pol.network = B4_NETWORK_DENY; /* never veth/NAT in the host's namespace */
                req = (struct b4_acquire_req){ .thread_id = e->thread, .policy = &pol };
                r = b4_provider_acquire(e->prov, &req, &e->sb, &err);
                b4_policy_clear(&pol);
        }
        if (r < 0)
                printf("# SKIP %s provider unavailable here: %s\n", type, err.msg);
        return e;
}

static void env_close(struct env *e)
{
        b4_sandbox_unref(e->sb);
        if (e->prov)
                (void)b4_provider_destroy(e->prov, e->thread, NULL);
        b4_provider_free(e->prov);
        if (!e->shared_state)
                b4_test_rmrf(e->state);
        free(e->state);
        free(e);
}

/* Native only (the links are made by `ln -s`, which the fake cannot run; tests/data/pathjail
 * covers the decision over the fake): a symlink inside the workspace that points out of it is
 * outside. */
static void test_symlink_escape(void **state)
{
        struct env *e = need(state);
        struct b4_exec_req req = {
                .command =
                        "ln -s /etc /workspace/out && ln -s /workspace/in-target /workspace/in && mkdir -p /workspace/in-target && echo ok > /workspace/in-target/f"
        };
        struct b4_exec_result x = { 0 };
        const struct opts o = NI;
        char *json;

        assert_int_equal(b4_sandbox_exec(e->sb, &req, &x, NULL), 0);
        assert_int_equal(x.exit_code, 0);
        b4_exec_result_clear(&x);
        json = call(e, &o, "readFile", "{\"path\":\"out/passwd\"}");
        assert_string_equal(json, ERR("B4_E3001", "Permission denied (fail-closed): /etc/passwd"));
        free(json);
        json = call(e, &o, "listDir", "{\"path\":\"out\"}");
        assert_string_equal(json, ERR("B4_E3001", "Permission denied (fail-closed): /etc"));
        free(json);
        json = call(e, &o, "readFile", "{\"path\":\"in/f\"}");
        assert_string_equal(json, OK("\"ok\\n\""));
        free(json);
}

/* ---- audit regressions: the jail checks what it uses, and everything is bounded ---- */

static void run_ok(struct env *e, const char *command)
{
        struct b4_exec_req req = { .command = command };
        struct b4_exec_result x = { 0 };
        struct b4_error err = { 0 };

        assert_int_equal(b4_sandbox_exec(e->sb, &req, &x, &err), 0);
        if (x.exit_code != 0)
                fail_msg("[%s] '%s' exited %d: %s", e->type, command, x.exit_code, x.errout);
        b4_exec_result_clear(&x);
}

/* A call with no permission store: the jail's open mode (the server's default). */
static char *call_open(struct env *e, const char *tool, const char *args)
{
        struct b4_tools *t = NULL;
        char *json = NULL;

        assert_int_equal(b4_tools_new(e->sb, &(struct b4_tools_options){ 0 }, &t, NULL), 0);
        assert_int_equal(tool_call_text(t, tool, args, &json, NULL), 0);
        b4_tools_free(t);
        return json;
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long maxrss_kib(void)
{
        struct rusage ru;

        assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
        return ru.ru_maxrss;
}

/* H5: tool-outputs/ reads are capped (B4_TOOLS_TOOL_OUTPUT_CAP), in every mode. */
static void test_h5_tool_output_cap(void **state)
{
        struct env *e = need(state);
        size_t n = B4_TOOLS_TOOL_OUTPUT_CAP + 1;
        char *big = malloc(n);
        char *json;

        memset(big, 'y', n);
        put(e, "tool-outputs/h5-big", big, n);
        free(big);
        json = call_open(e, "readFile", "{\"path\":\"tool-outputs/h5-big\",\"endLine\":1}");
        assert_string_equal(json, ERRNO("EFBIG", "readFile: lines 1-1 of tool-outputs/h5-big are "
                                                 "more than 33554432 bytes (the size cap); ask "
                                                 "for fewer lines"));
        free(json);
        json = call_open(e, "readFile", "{\"path\":\"tool-outputs/h5-big\"}");
        assert_string_equal(json, ERRNO("EFBIG", "File too large: 33554433 bytes (max 33554432) "
                                                 "at /workspace/tool-outputs/h5-big"));
        free(json);
        put(e, "tool-outputs/h5-big", "", 0);
}

/* The range scan holds at most the 32 MiB cap (plus its growth and one 256 KiB read); ASan's
 * quarantine keeps every freed block resident for a while, so its builds get more room. */
#if defined(__SANITIZE_ADDRESS__)
# define H5_SPARSE_RSS_KIB (192 * 1024)
#else
# define H5_SPARSE_RSS_KIB (64 * 1024)
#endif

/* H5: a sparse 400 MiB tool output is refused from its size without a range, and a range of
 * it is refused once the range passes the cap: never read whole, never held. */
static void test_h5_sparse_tool_output(void **state)
{
        struct env *e = need(state);
        long rss = maxrss_kib();
        double t0;
        char *json;

        run_ok(e,
               "mkdir -p /workspace/tool-outputs && truncate -s 400M /workspace/tool-outputs/h5-sparse");
        t0 = now_s();
        json = call_open(e, "readFile",
                         "{\"path\":\"tool-outputs/h5-sparse\",\"startLine\":1,\"endLine\":1}");
        /* scanned, but the one 400 MiB line is refused once it passes the cap */
        assert_string_equal(json, ERRNO("EFBIG", "readFile: lines 1-1 of tool-outputs/h5-sparse "
                                                 "are more than 33554432 bytes (the size cap); "
                                                 "ask for fewer lines"));
        free(json);
        json = call_open(e, "readFile", "{\"path\":\"tool-outputs/h5-sparse\"}");
        assert_string_equal(json, ERRNO("EFBIG", "File too large: 419430400 bytes (max 33554432) "
                                                 "at /workspace/tool-outputs/h5-sparse"));
        free(json);
        assert_true(now_s() - t0 < 5.0);
        assert_true(maxrss_kib() - rss < H5_SPARSE_RSS_KIB);
        run_ok(e, "rm -f /workspace/tool-outputs/h5-sparse");
}

/* H5: a symlink in tool-outputs/ is refused (never followed), also with no permission store. */
static void test_h5_tool_output_symlink(void **state)
{
        struct env *e = need(state);
        char *json;

        run_ok(e,
               "mkdir -p /workspace/tool-outputs && ln -sfn /proc/kallsyms /workspace/tool-outputs/h5-ks && ln -sfn /etc /workspace/tool-outputs/h5-etc");
        json = call_open(e, "readFile",
                         "{\"path\":\"tool-outputs/h5-ks\",\"startLine\":1,\"endLine\":3}");
        assert_string_equal(json, ERRNO("ELOOP", "readFile /workspace/tool-outputs/h5-ks: refused: "
                                                 "a symbolic link is in the way"));
        free(json);
        json = call_open(e, "readFile", "{\"path\":\"tool-outputs/h5-etc/hostname\"}");
        assert_string_equal(json,
                            ERRNO("ELOOP", "readFile /workspace/tool-outputs/h5-etc/hostname: "
                                           "refused: a symbolic link is in the way"));
        free(json);
        run_ok(e, "rm -f /workspace/tool-outputs/h5-ks /workspace/tool-outputs/h5-etc");
}

/* L10: listDir holds at most B4_LIST_MAX_ENTRIES names. */
static void test_l10_list_dir_cap(void **state)
{
        struct env *e = need(state);
        char *json;

        if (strcmp(e->type, "fake") == 0) {
                for (int i = 1; i <= B4_LIST_MAX_ENTRIES + 1; i++) {
                        char rel[64];
                        snprintf(rel, sizeof(rel), "l10/%d", i);
                        put(e, rel, "", 0);
                }
        } else {
                run_ok(e,
                       "mkdir -p /workspace/l10 && cd /workspace/l10 && seq 10001 | xargs touch");
        }
        json = call_open(e, "listDir", "{\"path\":\"l10\"}");
        assert_string_equal(json,
                            ERRNO("E2BIG", "listDir /workspace/l10: more than 10000 entries"));
        free(json);
        assert_int_equal(b4_fs_remove(b4_sandbox_fs(e->sb), "/workspace/l10/1", NULL), 0);
        json = call_open(e, "listDir", "{\"path\":\"l10\"}");
        assert_true(strncmp(json, "{\"ok\":true", 10) == 0);
        free(json);
}

/* H2 (native): a symlink chain whose resolution passes 64 KiB (the audit's mk.py) cannot be
 * canonicalised; the jail refuses it instead of judging the lexical path. */
static void test_h2_unresolvable_chain(void **state)
{
        struct env *e = need(state);
        const struct opts o = NI;
        char *json;

        run_ok(e,
               "cd /workspace && python3 -c '\n"
               "import os\n"
               "X = \"x\" * 200; T = (X + \"/\") * 20\n"
               "os.symlink(T + \"s1\", \"s0\")\n"
               "for hop in range(1, 18):\n"
               "    for i in range(20):\n"
               "        os.mkdir(X); os.chdir(X)\n"
               "    os.symlink(T + \"s%d\" % (hop + 1) if hop < 17 else \"/etc\", \"s%d\" % hop)\n"
               "'");
        json = call(e, &o, "readFile", "{\"path\":\"s0/hostname\"}");
        /* first remove the tree: deeper than the provider's destroy walks (audit L2) */
        run_ok(e,
               "cd /workspace && python3 -c 'import shutil; shutil.rmtree(\"x\" * 200)' && rm s0");
        assert_string_equal(json, ERRNO("ENAMETOOLONG", "readFile /workspace/s0/hostname: cannot "
                                                        "resolve the path: File name too long"));
        free(json);
}

/* H3 (native): a helper in the sandbox swaps a real directory and a symlink to /etc
 * (renameat2 RENAME_EXCHANGE) while readFile runs; no read may return the outside file. */
static void test_h3_swap_race(void **state)
{
        struct env *e = need(state);
        const struct opts o = NI;
        int outside = 0, dummy = 0, refused = 0;

        run_ok(e,
               "cd /workspace && mkdir -p real && echo dummy > real/hostname && ln -sfn /etc lnk");
        run_ok(e, "cd /workspace && (setsid python3 -c '\n"
                  "import ctypes, os, time\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  "open(\"swap.pid\", \"w\").write(str(os.getpid()))\n"
                  "end = time.time() + 120\n"
                  "while time.time() < end:\n"
                  "    libc.renameat2(-100, b\"real\", -100, b\"lnk\", 2)\n"
                  "' >/dev/null 2>&1 &) ; sleep 0.3");
        /* at least 300 reads, and on until the swapper (a python started in the sandbox,
         * slow to start on a loaded host) has been seen 20 times */
        for (int i = 0; i < 20000 && (i < 300 || refused < 20); i++) {
                char *json = call(e, &o, "readFile", "{\"path\":\"real/hostname\"}");
                if (strcmp(json, OK("\"dummy\\n\"")) == 0)
                        dummy++;
                else if (strncmp(json, "{\"ok\":true", 10) == 0)
                        outside++;
                else
                        refused++;
                free(json);
        }
        run_ok(e, "cd /workspace && kill $(cat swap.pid) && rm -rf swap.pid real lnk");
        print_message("# H3 race: %d dummy, %d refused, %d outside\n", dummy, refused, outside);
        assert_int_equal(outside, 0);
        assert_true(refused > 0); /* the swapper ran */
}

/* ---- the handle's filesystem (b4_tools_fs_*): the same jail, ranged reads ---- */

static struct b4_tools *fs_tools(struct env *e, struct b4_permissions *p)
{
        struct b4_tools *t = NULL;

        assert_int_equal(b4_tools_new(e->sb, &(struct b4_tools_options){ .app = p }, &t, NULL), 0);
        return t;
}

static void expect_range(struct b4_tools *t,
                         const char *path,
                         uint64_t offset,
                         uint64_t length,
                         const char *want,
                         size_t want_len,
                         uint64_t want_size)
{
        struct b4_error err = { 0 };
        char *data = NULL;
        uint64_t size = 0;
        size_t len = 0;

        assert_int_equal(b4_tools_fs_read(t, path, offset, length, &data, &len, &size, &err), 0);
        assert_int_equal(len, want_len);
        assert_int_equal(size, want_size);
        assert_memory_equal(data, want, want_len);
        assert_int_equal(data[len], '\0');
        free(data);
}

/* Every byte value through write and ranged reads, on the provider's read_range and on
 * core's fallback (a copy of the handle's fs without it). */
static void test_fs_ranges(void **state)
{
        struct env *e = need(state);
        struct b4_permissions *p = make_perms(&(struct opts)NI);
        struct b4_tools *t = fs_tools(e, p);
        struct b4_fs *fs = b4_sandbox_fs(e->sb);
        const struct b4_fs_ops *ops = fs->ops;
        struct b4_fs_ops no_range = *ops;
        char every[1024];
        struct b4_error err = { 0 };
        char *data = NULL;
        uint64_t size = 0;
        size_t len = 0;

        for (size_t i = 0; i < sizeof(every); i++)
                every[i] = (char)(i & 0xff);
        assert_int_equal(b4_tools_fs_write(t, "bin/every", every, sizeof(every), &err), 0);
        expect_range(t, "bin/every", 0, UINT64_MAX, every, sizeof(every), sizeof(every));
        expect_range(t, "/workspace/bin/every", 250, 10, every + 250, 10, sizeof(every));
        expect_range(t, "bin/every", 1020, 100, every + 1020, 4, sizeof(every));
        expect_range(t, "bin/every", 1024, 1, "", 0, sizeof(every));
        expect_range(t, "bin/every", UINT64_MAX - 1, 5, "", 0, sizeof(every));
        expect_range(t, "bin/every", 3, 0, "", 0, sizeof(every));
        /* core's fallback, over the fake (whose views do not tell handles by their ops): the
         * handle's ops swapped in place for the calls, restored before any assert */
        if (strcmp(e->type, "fake") == 0) {
                int rs[11], dir;
                size_t lens[11];
                char *got[11] = { NULL };
                uint64_t sizes[11];

                no_range.read_range = NULL;
                fs->ops = &no_range;
                for (size_t k = 0; k < 11; k++)
                        rs[k] = b4_fs_read_range_flags(fs, "/workspace/bin/every", 0, k * 103, 77,
                                                       &got[k], &lens[k], &sizes[k], &err);
                dir = b4_fs_read_range_flags(fs, "/workspace/bin", 0, 0, 1, &data, &len, &size,
                                             &err);
                fs->ops = ops;
                for (size_t k = 0; k < 11; k++) {
                        uint64_t off = k * 103;
                        assert_int_equal(rs[k], 0);
                        assert_int_equal(sizes[k], sizeof(every));
                        assert_int_equal(lens[k], off >= 1024       ? 0
                                                  : 1024 - off < 77 ? 1024 - off
                                                                    : 77);
                        assert_memory_equal(got[k], every + (off < 1024 ? off : 0), lens[k]);
                        free(got[k]);
                }
                assert_int_equal(dir, -EISDIR);
        }
        assert_int_equal(b4_tools_fs_read(t, "bin", 0, 1, &data, &len, &size, &err), -EISDIR);
        assert_int_equal(b4_tools_fs_read(t, "bin/none", 0, 1, &data, &len, &size, &err), -ENOENT);
        assert_string_equal(err.msg, "read /workspace/bin/none: No such file or directory");
        assert_int_equal(b4_tools_fs_read(t, "", 0, 1, &data, &len, &size, &err), -EINVAL);
        b4_tools_free(t);
        b4_permissions_free(p);
}

/* The gates of the tools: outside the workspace denied fail-closed for every operation,
 * under the key of what it does; an "ask" in interactive mode parks nothing. */
static void test_fs_gates(void **state)
{
        struct env *e = need(state);
        struct b4_permissions *ni = make_perms(&(struct opts)NI);
        struct b4_permissions *ia = make_perms(&(struct opts){ .mode = B4_PERMISSION_INTERACTIVE });
        struct b4_permissions *al = make_perms(
                &(struct opts){ .mode = B4_PERMISSION_NON_INTERACTIVE, .allow = { "listDir /" } });
        struct b4_tools *t = fs_tools(e, ni);
        struct b4_tools_dirent *d = NULL;
        struct b4_walk_entry *w = NULL;
        struct b4_stat st = { 0 };
        struct b4_error err = { 0 };
        char *s = NULL;
        size_t n = 0;

        assert_int_equal(b4_tools_fs_stat(t, "/etc/passwd", true, &st, &err), -EACCES);
        assert_int_equal(err.code, B4_CODE_TOOL_DENIED);
        assert_string_equal(err.msg, "Permission denied (fail-closed): /etc/passwd");
        assert_int_equal(b4_tools_fs_stat(t, "../etc/passwd", false, &st, &err), -EACCES);
        assert_int_equal(b4_tools_fs_realpath(t, "/etc", &s, &err), -EACCES);
        assert_int_equal(b4_tools_fs_list(t, "/", &d, &n, &err), -EACCES);
        assert_string_equal(err.msg, "Permission denied (fail-closed): /");
        assert_int_equal(b4_tools_fs_walk(t, "/tmp", 10, NULL, &w, &n, &err), -EACCES);
        assert_int_equal(b4_tools_fs_write(t, "/tmp/x", "x", 1, &err), -EACCES);
        assert_int_equal(b4_tools_fs_mkdir(t, "/tmp/d", &err), -EACCES);
        assert_int_equal(b4_tools_fs_remove(t, "/tmp/x", &err), -EACCES);
        assert_int_equal(b4_tools_fs_touch(t, "/workspace/../tmp/x", &err), -EACCES);
        assert_string_equal(err.msg, "Permission denied (fail-closed): /tmp/x");
        assert_int_equal(b4_tools_fs_remove(t, ".", &err), -EPERM);
        assert_int_equal(b4_tools_fs_remove(t, "/workspace", &err), -EPERM);
        b4_tools_free(t);

        t = fs_tools(e, ia);
        assert_int_equal(b4_tools_fs_stat(t, "/etc/passwd", true, &st, &err), -EAGAIN);
        assert_string_equal(err.msg, "permission required: /etc/passwd");
        assert_int_equal(b4_tools_last_request(t, NULL, NULL, NULL, NULL), -ENOENT);
        b4_tools_free(t);

        /* a listDir allow opens list and walk, not read */
        t = fs_tools(e, al);
        assert_int_equal(b4_tools_fs_list(t, "/", &d, &n, &err), 0);
        assert_true(n > 0);
        b4_tools_dirents_free(d, n);
        assert_int_equal(
                b4_tools_fs_read(t, "/etc/hostname", 0, 10, &s, &n, &(uint64_t){ 0 }, &err),
                -EACCES);
        b4_tools_free(t);
        b4_permissions_free(ni);
        b4_permissions_free(ia);
        b4_permissions_free(al);
}

/* H3 for the handle's read: a directory swapped for a link out of the workspace while the
 * reads run never gives an outside byte (the provider uses the path decided on). */
static void test_fs_swap_race(void **state)
{
        struct env *e = need(state);
        struct b4_permissions *p = make_perms(&(struct opts)NI);
        struct b4_tools *t = fs_tools(e, p);
        int outside = 0, dummy = 0, refused = 0;

        run_ok(e,
               "cd /workspace && mkdir -p real && echo dummy > real/hostname && ln -sfn /etc lnk");
        run_ok(e, "cd /workspace && (setsid python3 -c '\n"
                  "import ctypes, os, time\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  "open(\"swap.pid\", \"w\").write(str(os.getpid()))\n"
                  "end = time.time() + 120\n"
                  "while time.time() < end:\n"
                  "    libc.renameat2(-100, b\"real\", -100, b\"lnk\", 2)\n"
                  "' >/dev/null 2>&1 &) ; sleep 0.3");
        for (int i = 0; i < 20000 && (i < 300 || refused < 20); i++) {
                struct b4_error err = { 0 };
                char *data = NULL;
                uint64_t size = 0;
                size_t len = 0;
                int r = b4_tools_fs_read(t, "real/hostname", 0, 100, &data, &len, &size, &err);
                if (r == 0 && len == 6 && memcmp(data, "dummy\n", 6) == 0)
                        dummy++;
                else if (r == 0)
                        outside++;
                else
                        refused++;
                free(data);
        }
        run_ok(e, "cd /workspace && kill $(cat swap.pid) && rm -rf swap.pid real lnk");
        print_message("# fs read race: %d dummy, %d refused, %d outside\n", dummy, refused,
                      outside);
        assert_int_equal(outside, 0);
        assert_true(refused > 0);
        b4_tools_free(t);
        b4_permissions_free(p);
}

/* Whether the sandbox can run python3 (an imported image may have none). */
static bool has_python(struct env *e)
{
        struct b4_exec_result res = { 0 };
        struct b4_exec_req req = { .command = "command -v python3" };
        struct b4_error err = { 0 };
        bool ok = b4_sandbox_exec(e->sb, &req, &res, &err) >= 0 && res.exit_code == 0;

        b4_exec_result_clear(&res);
        return ok;
}

static const struct {
        const char *name;
        CMUnitTestFunction fn;
        const char *only; /* NULL, or the one provider type this test needs */
        bool python;      /* runs python3 in the sandbox (not every image has it) */
} suite[] = {
        { "tool_table", test_tool_table },
        { "read_cap_default", test_read_cap_default },
        { "editfile_cases", test_editfile_cases },
        { "interactive_command", test_interactive_command },
        { "interactive_path", test_interactive_path },
        { "thread_grants", test_thread_grants },
        { "interactive_tool", test_interactive_tool },
        { "host_dispatch", test_host_dispatch },
        { "symlink_escape", test_symlink_escape, "native" },
        { "h5_tool_output_cap", test_h5_tool_output_cap },
        { "h5_sparse_tool_output", test_h5_sparse_tool_output, "native" },
        { "h5_tool_output_symlink", test_h5_tool_output_symlink, "native" },
        { "l10_list_dir_cap", test_l10_list_dir_cap },
        { "h2_unresolvable_chain", test_h2_unresolvable_chain, "native", true },
        { "h3_swap_race", test_h3_swap_race, "native", true },
        { "fs_ranges", test_fs_ranges },
        { "fs_gates", test_fs_gates },
        { "fs_swap_race", test_fs_swap_race, "native", true },
};

#define N_SUITE (sizeof(suite) / sizeof(suite[0]))

int main(void)
{
        static const char *const types[] = { "fake", "native", "docker", "kubernetes" };
        struct CMUnitTest tests[4 * N_SUITE];
        char names[4 * N_SUITE][64];
        struct env *envs[4] = { NULL };
        /* tests/docker runs this binary against docker alone, with a daemon and an image;
         * tests/kubeprov against kubernetes alone, with the fake API server */
        bool docker = getenv("B4BOX_TEST_DOCKER_IMAGE") && getenv("B4BOX_TEST_DOCKER_SCOPE") &&
                      getenv("B4BOX_TEST_DOCKER_HOST");
        /* ... and tests/image against native alone, on an image (env_open()) */
        bool image = getenv("B4BOX_TEST_NATIVE_IMAGE") && getenv("B4BOX_TEST_NATIVE_STATE");
        bool kube = getenv("B4BOX_TEST_KUBE_IMAGE") && getenv("B4BOX_TEST_KUBE_CONFIG") &&
                    getenv("B4BOX_TEST_KUBE_NAMESPACE");
        const char *only = docker ? "docker" : kube ? "kubernetes" : image ? "native" : NULL;
        size_t k = 0;
        int r;

        /* Tests that cannot run here are not registered (cmocka 1.1's TAP prints a skip as
         * "not ok"); the reason is printed as a TAP comment. */
        for (size_t p = 0; p < 4; p++) {
                if (only ? strcmp(types[p], only) != 0 : p >= 2)
                        continue;
                envs[p] = env_open(types[p]);
                bool python = envs[p]->sb && has_python(envs[p]);
                for (size_t i = 0; envs[p]->sb && i < N_SUITE; i++) {
                        if (suite[i].only && strcmp(suite[i].only, types[p]) != 0)
                                continue;
                        if (suite[i].python && !python) {
                                printf("# SKIP %s: %s: the sandbox has no python3\n", types[p],
                                       suite[i].name);
                                continue;
                        }
                        snprintf(names[k], sizeof(names[k]), "%s: %s", types[p], suite[i].name);
                        tests[k] = (struct CMUnitTest){ .name = names[k],
                                                        .test_func = suite[i].fn,
                                                        .initial_state = envs[p] };
                        k++;
                }
        }
        /* run against one provider alone, that one must be there: no silent empty pass */
        if (only && k == 0) {
                printf("not ok - the %s provider could not be opened\n", only);
                return 1;
        }
        r = _cmocka_run_group_tests("tools over every provider", tests, k, NULL, NULL);
        for (size_t p = 0; p < 4; p++)
                if (envs[p])
                        env_close(envs[p]);
        return r;
}
