/* SPDX-License-Identifier: Apache-2.0 */
/* The tools context: one thread's sandbox, its permission view and where its requests park. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

int tools_context_new(struct b4_sandbox *sb,
                      const struct b4_tools_options *opts,
                      struct pending_store *store,
                      const char *owner,
                      struct b4_tools **ret,
                      struct b4_error *err)
{
        static const struct b4_tools_options none = { 0 };
        struct b4_tools *t;

        if (!sb || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing sandbox");
        if (!opts)
                opts = &none;
        if (!sb->workspace_root || sb->workspace_root[0] != '/')
                return b4_error_set(err, -EINVAL,
                                    "workspace root must be a POSIX absolute path; got '%s'",
                                    sb->workspace_root ? sb->workspace_root : "");
        t = b4_calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->root = b4_strdup(sb->workspace_root);
        t->thread_id = b4_strdup(sb->thread_id ? sb->thread_id : "");
        t->owner = b4_strdup(owner ? owner : sb->thread_id ? sb->thread_id : "");
        t->approve = strv_copy((char *const *)opts->approve_tools);
        if (!t->root || !t->thread_id || !t->owner || (opts->approve_tools && !t->approve) ||
            (!store && pending_store_new(&t->own_pending) < 0)) {
                (void)b4_tools_free(t);
                return -ENOMEM;
        }
        t->pending = store ? store : t->own_pending;
        t->sb = b4_sandbox_ref(sb);
        t->fs = b4_sandbox_fs(sb);
        t->read_cap = opts->read_cap ? opts->read_cap : B4_TOOLS_DEFAULT_READ_CAP;
        t->cancel = opts->cancel;
        t->on_output = opts->on_output;
        t->output_userdata = opts->output_userdata;
        t->view = (struct perm_view){ .app = opts->app,
                                      .thread = opts->thread,
                                      .grants = opts->grants,
                                      .thread_id = t->thread_id };
        if (b4_permissions_mode(opts->app) == B4_PERMISSION_BYPASS && opts->app)
                log_warning("[b4:permissions] mode=bypass — path-jail disabled, all bash "
                            "unrestricted. Do not use in production.");
        *ret = t;
        return 0;
}

int b4_tools_new(struct b4_sandbox *sb,
                 const struct b4_tools_options *opts,
                 struct b4_tools **ret,
                 struct b4_error *err)
{
        return tools_context_new(sb, opts, NULL, NULL, ret, err);
}

struct b4_tools *b4_tools_free(struct b4_tools *t)
{
        if (!t)
                return NULL;
        pending_store_free(t->own_pending);
        ask_clear(&t->ask);
        (void)b4_sandbox_unref(t->sb);
        free(t->root);
        free(t->real_root);
        free(t->thread_id);
        free(t->owner);
        strv_free(t->approve);
        free(t);
        return NULL;
}
