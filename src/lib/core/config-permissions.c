/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `permissions` block (reference §10.3): mode plus allow/deny lists keyed by tool key,
 * and the pattern and tool-map rules of §2.4 that thread sandboxes share: at most 64 tools,
 * 1024 patterns per tool, each pattern a non-blank string of at most 4096 bytes without NUL.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"

static const char *const permissions_keys[] = { "mode", "allow", "deny", NULL };
static const char *const key_names[B4_PERM__COUNT + 1] = {
        [B4_PERM_BASH] = "bash",
        [B4_PERM_READ_FILE] = "readFile",
        [B4_PERM_WRITE_FILE] = "writeFile",
        [B4_PERM_LIST_DIR] = "listDir",
        [B4_PERM_TOOL] = "tool",
        [B4_PERM__COUNT] = NULL,
};
static const char *const mode_names[] = {
        [B4_PERMISSION_NON_INTERACTIVE] = "non-interactive",
        [B4_PERMISSION_INTERACTIVE] = "interactive",
        [B4_PERMISSION_BYPASS] = "bypass",
};

const char *b4_permission_key_name(enum b4_permission_key k)
{
        return (unsigned)k < B4_PERM__COUNT ? key_names[k] : NULL;
}

static bool pattern_ok(const struct jv *v)
{
        const char *s = jv_string(v);

        if (!s || strlen(s) != jv_string_length(v) || jv_string_length(v) > CFG_MAX_PATTERN)
                return false;
        for (; *s; s++)
                if (!strchr(" \t\n\r\v\f", *s))
                        return true;
        return false;
}

char **config_parse_patterns(struct cfg *c, const struct jv *v, const char *path)
{
        char p[CFG_PATH_MAX];
        char **l;

        if (!jv_is_array(v) || jv_array_size(v) > CFG_MAX_PATTERNS) {
                cfg_refuse(c, "b4box.json %s must be an array of at most %d patterns (got: %s).",
                           path, CFG_MAX_PATTERNS, cfg_got(c, v));
                return NULL;
        }
        l = b4_calloc(1, sizeof(char *));
        if (!l) {
                cfg_fail(c, -ENOMEM);
                return NULL;
        }
        for (size_t i = 0; i < jv_array_size(v); i++) {
                const struct jv *e = jv_array_get(v, i);

                if (!pattern_ok(e))
                        cfg_refuse(c,
                                   "b4box.json %s must be a non-blank string of at most %d bytes "
                                   "without NUL (got: %s).",
                                   cfg_index(p, path, i), CFG_MAX_PATTERN, cfg_got(c, e));
                else if (strv_extend(&l, jv_string(e)) < 0)
                        cfg_fail(c, -ENOMEM);
        }
        return l;
}

static bool tool_name_ok(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > CFG_MAX_TOOL_NAME || strcmp(s, "__proto__") == 0)
                return false;
        for (; *s; s++)
                if ((unsigned char)*s < 0x20)
                        return false;
        return true;
}

static int tool_cmp(const void *a, const void *b)
{
        return strcmp(((const struct b4_tool_patterns *)a)->tool,
                      ((const struct b4_tool_patterns *)b)->tool);
}

void config_tool_map_free(struct b4_tool_patterns *m, size_t n)
{
        for (size_t i = 0; m && i < n; i++) {
                free(m[i].tool);
                strv_free(m[i].patterns);
        }
        free(m);
}

void config_parse_tool_map(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           struct b4_tool_patterns **ret,
                           size_t *ret_n)
{
        struct b4_tool_patterns *m;
        char p[CFG_PATH_MAX];
        size_t n = 0;

        if (!jv_is_object(v) || jv_object_size(v) > CFG_MAX_TOOLS) {
                cfg_refuse(c,
                           "b4box.json %s must be an object of at most %d tool names to pattern "
                           "arrays (got: %s).",
                           path, CFG_MAX_TOOLS, cfg_got(c, v));
                return;
        }
        m = b4_calloc(jv_object_size(v) + 1, sizeof(*m));
        if (!m) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (void *it = jv_object_iter(v); it; it = jv_object_next(v, it)) {
                const char *tool = jv_iter_key(it);

                cfg_path(p, path, cfg_key(c, tool));
                if (!tool_name_ok(tool)) {
                        cfg_refuse(c,
                                   "b4box.json %s is not a valid tool name (1 to %d characters, "
                                   "no control characters, not __proto__).",
                                   p, CFG_MAX_TOOL_NAME);
                        continue;
                }
                m[n].patterns = config_parse_patterns(c, jv_iter_value(it), p);
                m[n].tool = b4_strdup(tool);
                if (!m[n++].tool)
                        cfg_fail(c, -ENOMEM);
        }
        qsort_safe(m, n, sizeof(*m), tool_cmp);
        config_tool_map_free(*ret, *ret_n);
        *ret = m;
        *ret_n = n;
}

static void parse_lists(struct cfg *c, const struct jv *v, const char *path, char **lists[])
{
        char p[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be an object of tool keys to pattern arrays (got: "
                           "%s).",
                           path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a permission tool key", key_names);
        for (size_t k = 0; k < B4_PERM__COUNT; k++) {
                const struct jv *x = jv_object_get(v, key_names[k]);

                if (x)
                        lists[k] = config_parse_patterns(c, x, cfg_path(p, path, key_names[k]));
        }
}

static void parse_mode(struct cfg *c, const struct jv *v, struct b4_permissions_config *p)
{
        for (size_t i = 0; i < ELEMENTSOF(mode_names); i++)
                if (jv_is_string(v) && strcmp(jv_string(v), mode_names[i]) == 0) {
                        p->mode = (enum b4_permission_mode)i;
                        return;
                }
        cfg_refuse(c,
                   "b4box.json permissions.mode must be \"interactive\", \"non-interactive\" or "
                   "\"bypass\" (got: %s).",
                   cfg_got(c, v));
}

void config_parse_permissions(struct cfg *c, const struct jv *v, struct b4_permissions_config *p)
{
        const struct jv *x;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json permissions must be an object (got: %s).", cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "permissions", "a permissions option", permissions_keys);
        p->present = true;
        if ((x = jv_object_get(v, "mode")))
                parse_mode(c, x, p);
        if ((x = jv_object_get(v, "allow")))
                parse_lists(c, x, "permissions.allow", p->allow);
        if ((x = jv_object_get(v, "deny")))
                parse_lists(c, x, "permissions.deny", p->deny);
}

void config_permissions_clear(struct b4_permissions_config *p)
{
        for (size_t k = 0; k < B4_PERM__COUNT; k++) {
                strv_free(p->allow[k]);
                strv_free(p->deny[k]);
        }
        *p = (struct b4_permissions_config){ 0 };
}
