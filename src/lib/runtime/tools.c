/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime's tools: the app's permission lists from the config, "Always" grants kept in
 * the state store (so they survive restarts and vanish with their thread), the tools host
 * that holds pending permission requests, and each run's effective permissions (§9.4).
 */

#include "b4box/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"
#include "b4box/runtime.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "json/json.h"
#include "runtime-internal.h"
#include "tools/host.h"

/* ---- grants in the SQLite store ---- */

struct store_grants {
        struct b4_grant_store base;
        struct b4_store *store; /* borrowed */
};

static int grants_add(struct b4_grant_store *s,
                      const char *thread_id,
                      const char *key,
                      const char *pattern,
                      struct b4_error *err)
{
        struct store_grants *g = (struct store_grants *)s;

        return b4_store_grant_add(g->store, thread_id, key, pattern, err);
}

static int grants_match(struct b4_grant_store *s,
                        const char *thread_id,
                        const char *key,
                        const char *candidate,
                        struct b4_error *err)
{
        struct store_grants *g = (struct store_grants *)s;
        cleanup_strv char **patterns = NULL;
        int r;

        r = b4_store_grant_list(g->store, thread_id, key, &patterns, err);
        if (r < 0)
                return r;
        STRV_FOREACH (p, patterns)
                if (b4_permission_pattern_matches(key, *p, candidate))
                        return 1;
        return 0;
}

static int grants_forget(struct b4_grant_store *s, const char *thread_id, struct b4_error *err)
{
        return 0; /* the rows go with the thread (ON DELETE CASCADE) */
}

static void grants_free(struct b4_grant_store *s)
{
        free(s);
}

static const struct b4_grant_store_ops store_grants_ops = {
        .add = grants_add,
        .match = grants_match,
        .forget = grants_forget,
        .free = grants_free,
};

/* ---- the runtime's tools ---- */

static int grants_new(struct b4_store *store, struct b4_grant_store **ret)
{
        struct store_grants *g = b4_calloc(1, sizeof(*g));

        if (!g)
                return -ENOMEM;
        g->base.ops = &store_grants_ops;
        g->store = store;
        *ret = &g->base;
        return 0;
}

/* The app's lists: the caller's, else the config's permissions block, else none. */
static int app_permissions(struct b4_runtime *rt, struct b4_error *err)
{
        const struct b4_config *cfg = rt->opts.config;
        int r = 0;

        rt->perm_mode = cfg ? cfg->permissions.mode : B4_PERMISSION_NON_INTERACTIVE;
        if (rt->opts.permissions) {
                rt->app_perms = rt->opts.permissions;
                rt->perm_mode = b4_permissions_mode(rt->opts.permissions);
        } else if (cfg && cfg->permissions.present) {
                r = b4_permissions_from_config(&cfg->permissions, &rt->own_perms, err);
                rt->app_perms = rt->own_perms;
        }
        return r;
}

int runtime_tools_init(struct b4_runtime *rt, struct b4_error *err)
{
        int r;

        r = app_permissions(rt, err);
        if (r >= 0)
                r = grants_new(rt->opts.store, &rt->grants);
        if (r >= 0) {
                struct tools_host_options o = { .app = rt->app_perms,
                                                .grants = rt->grants,
                                                .read_cap = rt->opts.read_cap };
                r = tools_host_new(&o, &rt->tools);
        }
        if (r < 0)
                runtime_tools_clear(rt);
        return r;
}

void runtime_tools_clear(struct b4_runtime *rt)
{
        rt->tools = tools_host_free(rt->tools);
        rt->grants = b4_grant_store_free(rt->grants);
        rt->own_perms = b4_permissions_free(rt->own_perms);
        rt->app_perms = NULL;
}

/* ---- per-thread permissions (§9.4) ---- */

static int add_tool_map(struct b4_permissions *p,
                        enum b4_permission_list list,
                        const struct jv *map,
                        struct b4_error *err)
{
        for (void *it = jv_object_iter(map); it; it = jv_object_next(map, it)) {
                const struct jv *pats = jv_iter_value(it);
                const char *key = jv_iter_key(it);

                if (!b4_permission_key_is_valid(key)) /* no gate asks about it */
                        continue;
                for (size_t i = 0; i < jv_array_size(pats); i++) {
                        int r = b4_permissions_add(p, list, key, jv_string(jv_array_get(pats, i)),
                                                   err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int runtime_run_permissions(struct b4_runtime *rt,
                            const char *box_key,
                            struct b4_permissions **ret,
                            struct b4_error *err)
{
        cleanup_free char *digest = NULL, *payload = NULL;
        cleanup_(jv_unrefp) struct jv *rec = NULL;
        struct b4_permissions *p = NULL;
        const struct jv *perm;
        int r;

        *ret = NULL;
        r = b4_store_record_get(rt->opts.store, box_key, &digest, &payload, NULL);
        if (r == -ENOENT)
                return 0; /* no record: the app's lists apply */
        if (r >= 0)
                r = jv_parse(payload, strlen(payload), &rec, err);
        if (r < 0)
                return r;
        perm = jv_object_get(rec, "permissions");
        if (!perm)
                return 0;
        r = b4_permissions_new(rt->perm_mode, &p);
        if (r >= 0)
                r = add_tool_map(p, B4_PERMISSION_LIST_ALLOW, jv_object_get(perm, "allow"), err);
        if (r >= 0)
                r = add_tool_map(p, B4_PERMISSION_LIST_DENY, jv_object_get(perm, "deny"), err);
        if (r < 0) {
                b4_permissions_free(p);
                return r;
        }
        *ret = p;
        return 0;
}
