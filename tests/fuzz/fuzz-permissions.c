/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: permission patterns (src/lib/tools/permissions.c). Trust boundary: the
 * candidates are what a model asks for (commands, paths, tool names) and "Always" grants are
 * recorded from user answers; patterns come from b4box.json.
 *
 * The input is lines: "+<k> <pattern>" allow, "-<k> <pattern>" deny, "g<k> <pattern>" an
 * app-level "Always" answer (interactive mode), "?<k> <candidate>" a query, where <k> picks the key
 * (0 bash, 1 readFile, 2 writeFile, 3 listDir, 4 tool, else an invalid key). Every query must
 * follow the documented rule "deny first, then allow, else unknown" over the patterns added so far,
 * and the suggestions an "Always" answer records must be well formed.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/tools.h"

#include "base/alloc.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (16 * 1024)

static const char *const keys[] = { "bash", "readFile", "writeFile", "listDir", "tool", "nope" };

/* What the harness added, as "key\npattern": the model the decisions are checked against. */
struct lists {
        char **allow, **deny;
};

static bool any_match(char **l, const char *key, const char *cand)
{
        size_t klen = strlen(key);

        STRV_FOREACH (s, l)
                if (strncmp(*s, key, klen) == 0 && (*s)[klen] == '\n' &&
                    b4_permission_pattern_matches(key, *s + klen + 1, cand))
                        return true;
        return false;
}

static void check_suggestions(const char *key, const char *cand)
{
        char *p = NULL;
        size_t n;

        if (strcmp(key, "bash") == 0 && b4_permission_suggest_command(cand, &p) == 0) {
                n = strlen(p);
                /* two tokens at most, joined by one space, never padded */
                if (n && (p[0] == ' ' || p[n - 1] == ' ' || strstr(p, "  ")))
                        abort();
                if (n > strlen(cand))
                        abort();
        } else if (strcmp(key, "bash") && strcmp(key, "tool") &&
                   b4_permission_suggest_path(cand, &p) == 0) {
                n = strlen(p);
                if (n == 0 || p[n - 1] != '/')
                        abort();
                /* the parent of an absolute path covers the path */
                if (cand[0] == '/' && !b4_permission_pattern_matches(key, p, cand))
                        abort();
        }
        free(p);
}

static void query(struct perm_view *v, const struct lists *l, const char *key, const char *cand)
{
        enum b4_permission_decision d = B4_PERMISSION_UNKNOWN, want;

        want = any_match(l->deny, key, cand)    ? B4_PERMISSION_DENY
               : any_match(l->allow, key, cand) ? B4_PERMISSION_ALLOW
                                                : B4_PERMISSION_UNKNOWN;
        if (b4_permissions_match(v->app, key, cand) != want)
                abort();
        if (perm_view_match(v, key, cand, &d, NULL) < 0 ? b4_permission_key_is_valid(key)
                                                        : d != want)
                abort();
        if (b4_permission_key_is_valid(key))
                check_suggestions(key, cand);
}

static void run(char *text, struct b4_permissions *app)
{
        struct perm_view v = { .app = app, .thread_id = "t" };
        struct lists l = { 0 };

        for (char *line = text, *next; line; line = next) {
                const char *key, *arg;
                char *entry = NULL;
                int k;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strlen(line) < 3 || line[2] != ' ')
                        continue;
                k = line[1] - '0';
                key = keys[k >= 0 && k < 5 ? k : 5];
                arg = line + 3;
                if (line[0] == '?') {
                        query(&v, &l, key, arg);
                        continue;
                }
                if (line[0] == 'g') {
                        /* an app-level "Always": an allow from now on (interactive mode) */
                        if (perm_view_add_allow(&v, key, arg, NULL) <= 0)
                                continue;
                } else if (line[0] == '+' || line[0] == '-') {
                        if (b4_permissions_add(app,
                                               line[0] == '+' ? B4_PERMISSION_LIST_ALLOW
                                                              : B4_PERMISSION_LIST_DENY,
                                               key, arg, NULL) < 0)
                                continue;
                } else {
                        continue;
                }
                if (b4_asprintf(&entry, "%s\n%s", key, arg) < 0 ||
                    strv_consume(line[0] == '-' ? &l.deny : &l.allow, entry) < 0)
                        break;
        }
        strv_free(l.allow);
        strv_free(l.deny);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct b4_permissions *app = NULL;
        char *text;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        if (b4_permissions_new(B4_PERMISSION_INTERACTIVE, &app) == 0)
                run(text, app);
        b4_permissions_free(app);
        free(text);
        return 0;
}
