/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Permission lists, matching, suggested patterns, the in-memory grant store and the
 * per-thread view over the app's store (reference §10.3).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

static const char *const key_names[PERM__COUNT] = {
        [PERM_BASH] = "bash",        [PERM_READ_FILE] = "readFile", [PERM_WRITE_FILE] = "writeFile",
        [PERM_LIST_DIR] = "listDir", [PERM_TOOL] = "tool",
};

static const char *const mode_names[] = {
        [B4_PERMISSION_INTERACTIVE] = "interactive",
        [B4_PERMISSION_NON_INTERACTIVE] = "non-interactive",
        [B4_PERMISSION_BYPASS] = "bypass",
};

int perm_key_from_string(const char *key)
{
        for (int i = 0; key && i < PERM__COUNT; i++)
                if (strcmp(key_names[i], key) == 0)
                        return i;
        return -EINVAL;
}

const char *perm_key_to_string(enum perm_key key)
{
        return key < PERM__COUNT ? key_names[key] : NULL;
}

bool b4_permission_key_is_valid(const char *key)
{
        return perm_key_from_string(key) >= 0;
}

int b4_permission_mode_from_string(const char *s, enum b4_permission_mode *ret)
{
        for (size_t i = 0; s && i < ELEMENTSOF(mode_names); i++)
                if (strcmp(mode_names[i], s) == 0) {
                        *ret = (enum b4_permission_mode)i;
                        return 0;
                }
        return -EINVAL;
}

const char *b4_permission_mode_to_string(enum b4_permission_mode mode)
{
        return (size_t)mode < ELEMENTSOF(mode_names) ? mode_names[mode] : NULL;
}

bool b4_permission_pattern_matches(const char *key, const char *pattern, const char *candidate)
{
        if (!key || !pattern || !candidate)
                return false;
        if (strcmp(key, "tool") == 0)
                return strcmp(pattern, candidate) == 0;
        return strncmp(candidate, pattern, strlen(pattern)) == 0;
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int b4_permission_suggest_command(const char *command, char **ret)
{
        const char *p = command;
        const char *tok[2] = { NULL, NULL };
        size_t len[2] = { 0, 0 };
        int n = 0;

        while (*p && n < 2) {
                while (is_space(*p))
                        p++;
                if (!*p)
                        break;
                tok[n] = p;
                while (*p && !is_space(*p))
                        p++;
                len[n] = (size_t)(p - tok[n]);
                n++;
        }
        if (n == 0)
                return b4_asprintf(ret, "%s", "") < 0 ? -ENOMEM : 0;
        if (n == 1)
                return b4_asprintf(ret, "%.*s", (int)len[0], tok[0]) < 0 ? -ENOMEM : 0;
        return b4_asprintf(ret, "%.*s %.*s", (int)len[0], tok[0], (int)len[1], tok[1]) < 0 ? -ENOMEM
                                                                                           : 0;
}

int b4_permission_suggest_path(const char *path, char **ret)
{
        size_t n = strlen(path);
        const char *slash;

        if (n > 0 && path[n - 1] == '/') {
                *ret = b4_strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        slash = strrchr(path, '/');
        if (!slash) /* a relative name: its parent is "." */
                return b4_asprintf(ret, "./") < 0 ? -ENOMEM : 0;
        if (slash == path)
                return b4_asprintf(ret, "/") < 0 ? -ENOMEM : 0;
        return b4_asprintf(ret, "%.*s/", (int)(slash - path), path) < 0 ? -ENOMEM : 0;
}

bool b4_grant_is_recordable(const char *s, size_t len)
{
        bool blank = true;

        if (!s || len == 0 || len > B4_MAX_THREAD_GRANT_LENGTH || memchr(s, '\0', len))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_space(s[i]))
                        blank = false;
        return !blank;
}

/* ---- struct b4_permissions ---- */

struct b4_permissions {
        enum b4_permission_mode mode;
        char **lists[2][PERM__COUNT]; /* [allow|deny][key] */
        char **runtime[PERM__COUNT];  /* app "Always" answers; interactive only */
};

int b4_permissions_new(enum b4_permission_mode mode, struct b4_permissions **ret)
{
        struct b4_permissions *p;

        if (!ret || (size_t)mode >= ELEMENTSOF(mode_names))
                return -EINVAL;
        p = b4_calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->mode = mode;
        *ret = p;
        return 0;
}

struct b4_permissions *b4_permissions_free(struct b4_permissions *p)
{
        if (!p)
                return NULL;
        for (int k = 0; k < PERM__COUNT; k++) {
                strv_free(p->lists[0][k]);
                strv_free(p->lists[1][k]);
                strv_free(p->runtime[k]);
        }
        free(p);
        return NULL;
}

enum b4_permission_mode b4_permissions_mode(const struct b4_permissions *p)
{
        return p ? p->mode : B4_PERMISSION_BYPASS;
}

static int check_entry(const char *key, const char *pattern, struct b4_error *err)
{
        int k = perm_key_from_string(key);

        if (k < 0)
                return b4_error_set(
                        err, -EINVAL,
                        "unknown permission key '%s' (allowed: bash, readFile, writeFile, listDir, tool)",
                        key ? key : "");
        if (!pattern || !*pattern)
                return b4_error_set(err, -EINVAL, "permission pattern for '%s' must not be empty",
                                    key);
        return k;
}

int b4_permissions_add(struct b4_permissions *p,
                       enum b4_permission_list list,
                       const char *key,
                       const char *pattern,
                       struct b4_error *err)
{
        int k;

        if (!p || (list != B4_PERMISSION_LIST_ALLOW && list != B4_PERMISSION_LIST_DENY))
                return b4_error_set(err, -EINVAL, "invalid permission list");
        k = check_entry(key, pattern, err);
        if (k < 0)
                return k;
        return strv_extend(&p->lists[list][k], pattern);
}

int b4_permissions_add_runtime(struct b4_permissions *p,
                               const char *key,
                               const char *pattern,
                               struct b4_error *err)
{
        int k;

        if (!p)
                return -EINVAL;
        k = check_entry(key, pattern, err);
        if (k < 0)
                return k;
        if (strv_contains(p->runtime[k], pattern))
                return 0;
        return strv_extend(&p->runtime[k], pattern);
}

static bool list_matches(char **l, const char *key, const char *candidate)
{
        STRV_FOREACH (s, l)
                if (b4_permission_pattern_matches(key, *s, candidate))
                        return true;
        return false;
}

static bool denies(const struct b4_permissions *p, int k, const char *key, const char *cand)
{
        return p && p->mode != B4_PERMISSION_BYPASS && list_matches(p->lists[1][k], key, cand);
}

static bool allows(const struct b4_permissions *p, int k, const char *key, const char *cand)
{
        return p && p->mode != B4_PERMISSION_BYPASS && list_matches(p->lists[0][k], key, cand);
}

enum b4_permission_decision b4_permissions_match(const struct b4_permissions *p,
                                                 const char *key,
                                                 const char *candidate)
{
        int k = perm_key_from_string(key);

        if (!p || k < 0 || !candidate || p->mode == B4_PERMISSION_BYPASS)
                return B4_PERMISSION_UNKNOWN;
        if (denies(p, k, key, candidate))
                return B4_PERMISSION_DENY;
        if (allows(p, k, key, candidate))
                return B4_PERMISSION_ALLOW;
        if (p->mode == B4_PERMISSION_INTERACTIVE && list_matches(p->runtime[k], key, candidate))
                return B4_PERMISSION_ALLOW;
        return B4_PERMISSION_UNKNOWN;
}

/* ---- in-memory grant store ---- */

struct grant {
        char *thread_id, *key, *pattern;
};

struct memory_store {
        struct b4_grant_store base;
        struct grant *grants;
        size_t n;
};

static int memory_add(struct b4_grant_store *s,
                      const char *thread_id,
                      const char *key,
                      const char *pattern,
                      struct b4_error *err)
{
        struct memory_store *m = (struct memory_store *)s;
        struct grant g = { b4_strdup(thread_id), b4_strdup(key), b4_strdup(pattern) };
        struct grant *a;

        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->grants[i].thread_id, thread_id) == 0 &&
                    strcmp(m->grants[i].key, key) == 0 &&
                    strcmp(m->grants[i].pattern, pattern) == 0) {
                        free(g.thread_id), free(g.key), free(g.pattern);
                        return 0;
                }
        a = g.thread_id && g.key && g.pattern
                    ? b4_reallocarray(m->grants, m->n + 1, sizeof(*m->grants))
                    : NULL;
        if (!a) {
                free(g.thread_id), free(g.key), free(g.pattern);
                return b4_error_set(err, -ENOMEM, "cannot record grant");
        }
        m->grants = a;
        m->grants[m->n++] = g;
        return 0;
}

static int memory_match(struct b4_grant_store *s,
                        const char *thread_id,
                        const char *key,
                        const char *candidate,
                        struct b4_error *err)
{
        struct memory_store *m = (struct memory_store *)s;

        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->grants[i].thread_id, thread_id) == 0 &&
                    strcmp(m->grants[i].key, key) == 0 &&
                    b4_permission_pattern_matches(key, m->grants[i].pattern, candidate))
                        return 1;
        return 0;
}

static int memory_forget(struct b4_grant_store *s, const char *thread_id, struct b4_error *err)
{
        struct memory_store *m = (struct memory_store *)s;
        size_t j = 0;

        for (size_t i = 0; i < m->n; i++) {
                if (strcmp(m->grants[i].thread_id, thread_id) != 0) {
                        m->grants[j++] = m->grants[i];
                        continue;
                }
                free(m->grants[i].thread_id);
                free(m->grants[i].key);
                free(m->grants[i].pattern);
        }
        m->n = j;
        return 0;
}

static void memory_free(struct b4_grant_store *s)
{
        struct memory_store *m = (struct memory_store *)s;

        for (size_t i = 0; i < m->n; i++) {
                free(m->grants[i].thread_id);
                free(m->grants[i].key);
                free(m->grants[i].pattern);
        }
        free(m->grants);
        free(m);
}

static const struct b4_grant_store_ops memory_ops = {
        .add = memory_add,
        .match = memory_match,
        .forget = memory_forget,
        .free = memory_free,
};

int b4_grant_store_memory_new(struct b4_grant_store **ret)
{
        struct memory_store *m = b4_calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->base.ops = &memory_ops;
        *ret = &m->base;
        return 0;
}

int b4_grant_store_add(struct b4_grant_store *s,
                       const char *thread_id,
                       const char *key,
                       const char *pattern,
                       struct b4_error *err)
{
        if (!s || !thread_id || !key || !pattern)
                return b4_error_set(err, -EINVAL, "grant store: missing argument");
        return s->ops->add(s, thread_id, key, pattern, err);
}

int b4_grant_store_match(struct b4_grant_store *s,
                         const char *thread_id,
                         const char *key,
                         const char *candidate,
                         struct b4_error *err)
{
        if (!s || !thread_id || !key || !candidate)
                return b4_error_set(err, -EINVAL, "grant store: missing argument");
        return s->ops->match(s, thread_id, key, candidate, err);
}

int b4_grant_store_forget(struct b4_grant_store *s, const char *thread_id, struct b4_error *err)
{
        if (!s || !thread_id)
                return b4_error_set(err, -EINVAL, "grant store: missing argument");
        return s->ops->forget(s, thread_id, err);
}

struct b4_grant_store *b4_grant_store_free(struct b4_grant_store *s)
{
        if (s && s->ops->free)
                s->ops->free(s);
        return NULL;
}

/* ---- the view the gates consult ---- */

bool perm_view_is_open(const struct perm_view *v)
{
        return !v->app || v->app->mode == B4_PERMISSION_BYPASS;
}

enum b4_permission_mode perm_view_mode(const struct perm_view *v)
{
        return b4_permissions_mode(v->app);
}

int perm_view_match(const struct perm_view *v,
                    const char *key,
                    const char *candidate,
                    enum b4_permission_decision *ret,
                    struct b4_error *err)
{
        int k = perm_key_from_string(key);
        int r;

        if (k < 0)
                return b4_error_set(err, -EINVAL, "unknown permission key '%s'", key);
        if (!v->thread) {
                *ret = b4_permissions_match(v->app, key, candidate);
                return 0;
        }
        *ret = B4_PERMISSION_UNKNOWN;
        if (perm_view_is_open(v))
                return 0;
        if (list_matches(v->thread->lists[1][k], key, candidate) ||
            denies(v->app, k, key, candidate)) {
                *ret = B4_PERMISSION_DENY;
                return 0;
        }
        if (list_matches(v->thread->lists[0][k], key, candidate)) {
                *ret = B4_PERMISSION_ALLOW;
                return 0;
        }
        if (v->grants && v->app->mode == B4_PERMISSION_INTERACTIVE) {
                r = b4_grant_store_match(v->grants, v->thread_id, key, candidate, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        *ret = B4_PERMISSION_ALLOW;
        }
        return 0;
}

int perm_view_add_allow(const struct perm_view *v,
                        const char *key,
                        const char *pattern,
                        struct b4_error *err)
{
        int r;

        if (!b4_grant_is_recordable(key, strlen(key)) ||
            !b4_grant_is_recordable(pattern, strlen(pattern))) {
                log_warning("permission grant for '%s' is not recordable (empty, blank, or longer "
                            "than %d bytes), allowing once",
                            key, B4_MAX_THREAD_GRANT_LENGTH);
                return 0;
        }
        if (v->thread) {
                if (!v->grants)
                        return 0;
                r = b4_grant_store_add(v->grants, v->thread_id, key, pattern, err);
        } else {
                r = b4_permissions_add_runtime(v->app, key, pattern, err);
        }
        return r < 0 ? r : 1;
}

int b4_permissions_from_config(const struct b4_permissions_config *pc,
                               struct b4_permissions **ret,
                               struct b4_error *err)
{
        struct b4_permissions *p = NULL;
        int r;

        r = b4_permissions_new(pc->mode, &p);
        if (r < 0)
                return r;
        for (int k = 0; k < B4_PERM__COUNT; k++) {
                const char *key = b4_permission_key_name((enum b4_permission_key)k);
                STRV_FOREACH (pat, pc->allow[k])
                        if ((r = b4_permissions_add(p, B4_PERMISSION_LIST_ALLOW, key, *pat, err)) <
                            0)
                                goto out_free;
                STRV_FOREACH (pat, pc->deny[k])
                        if ((r = b4_permissions_add(p, B4_PERMISSION_LIST_DENY, key, *pat, err)) <
                            0)
                                goto out_free;
        }
        *ret = p;
        return 0;

out_free:
        b4_permissions_free(p);
        return r;
}
