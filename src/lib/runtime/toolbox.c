/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The toolbox: what a server needs to run tools for its threads — the app's permission
 * lists from the config, "Always" grants kept in the state store (so they survive restarts
 * and vanish with their thread), and the tools host whose dispatch the runtime calls.
 */

#include <errno.h>
#include <stdlib.h>

#include "b4box/config.h"
#include "b4box/runtime.h"
#include "b4box/tools.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "runtime-internal.h"

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

/* ---- the toolbox ---- */

struct b4_toolbox {
        struct b4_store *store;
        enum b4_permission_mode mode;
        struct b4_permissions *app;
        struct b4_grant_store *grants;
        struct b4_tools_host *host;
};

static int thread_permissions(void *userdata,
                              const char *thread_id,
                              struct b4_permissions **ret,
                              struct b4_error *err)
{
        struct b4_toolbox *tb = userdata;

        return admission_thread_permissions(tb->store, tb->mode, thread_id, ret, err);
}

int b4_toolbox_new(const struct b4_config *cfg,
                   struct b4_store *store,
                   struct b4_toolbox **ret,
                   struct b4_error *err)
{
        struct b4_toolbox *tb = b4_calloc(1, sizeof(*tb));
        struct store_grants *g = b4_calloc(1, sizeof(*g));
        int r;

        if (!tb || !g) {
                free(tb);
                free(g);
                return -ENOMEM;
        }
        g->base.ops = &store_grants_ops;
        g->store = store;
        tb->store = store;
        tb->mode = cfg->permissions.mode;
        tb->grants = &g->base;
        r = cfg->permissions.present ? b4_permissions_from_config(&cfg->permissions, &tb->app, err)
                                     : 0;
        if (r >= 0) {
                struct b4_tools_host_options o = { .app = tb->app,
                                                   .grants = tb->grants,
                                                   .thread_permissions = thread_permissions,
                                                   .userdata = tb };
                r = b4_tools_host_new(&o, &tb->host);
        }
        if (r < 0) {
                b4_toolbox_free(tb);
                return r;
        }
        *ret = tb;
        return 0;
}

struct b4_toolbox *b4_toolbox_free(struct b4_toolbox *tb)
{
        if (!tb)
                return NULL;
        b4_tools_host_free(tb->host);
        b4_grant_store_free(tb->grants);
        b4_permissions_free(tb->app);
        free(tb);
        return NULL;
}

struct b4_tools_host *b4_toolbox_host(struct b4_toolbox *tb)
{
        return tb->host;
}
