/* SPDX-License-Identifier: Apache-2.0 */
/* The tools context: one thread's sandbox (or reader), its permission view and where its
 * requests park. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

/* A context over @fs rooted at @root; @sb (may be NULL: a reader's, no shell) is referenced. */
static int context_new(struct b4_sandbox *sb,
                       struct b4_fs *fs,
                       const char *root,
                       const char *thread_id,
                       const struct b4_tools_options *opts,
                       struct pending_store *store,
                       const char *owner,
                       struct b4_tools **ret,
                       struct b4_error *err)
{
        static const struct b4_tools_options none = { 0 };
        struct b4_tools *t;

        if (!fs || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing sandbox");
        if (!opts)
                opts = &none;
        if (!root || root[0] != '/')
                return b4_error_set(err, -EINVAL,
                                    "workspace root must be a POSIX absolute path; got '%s'",
                                    root ? root : "");
        t = b4_calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->root = b4_strdup(root);
        t->thread_id = b4_strdup(thread_id ? thread_id : "");
        t->owner = b4_strdup(owner ? owner : thread_id ? thread_id : "");
        t->approve = strv_copy((char *const *)opts->approve_tools);
        if (!t->root || !t->thread_id || !t->owner || (opts->approve_tools && !t->approve) ||
            (!store && pending_store_new(&t->own_pending) < 0)) {
                (void)b4_tools_free(t);
                return -ENOMEM;
        }
        t->pending = store ? store : t->own_pending;
        t->sb = sb ? b4_sandbox_ref(sb) : NULL;
        t->fs = fs;
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

int tools_context_new(struct b4_sandbox *sb,
                      const struct b4_tools_options *opts,
                      struct pending_store *store,
                      const char *owner,
                      struct b4_tools **ret,
                      struct b4_error *err)
{
        if (!sb || !ret)
                return b4_error_set(err, -EINVAL, "tools: missing sandbox");
        return context_new(sb, b4_sandbox_fs(sb), sb->workspace_root, sb->thread_id, opts, store,
                           owner, ret, err);
}

int tools_context_new_reader(struct b4_reader *rd,
                             const struct b4_tools_options *opts,
                             struct pending_store *store,
                             struct b4_permissions *perms,
                             struct b4_tools **ret,
                             struct b4_error *err)
{
        int r;

        if (!rd || !ret) {
                b4_permissions_free(perms);
                return b4_error_set(err, -EINVAL, "tools: missing reader");
        }
        r = context_new(NULL, b4_reader_fs(rd), rd->workspace_root, rd->thread_id, opts, store,
                        NULL, ret, err);
        if (r < 0) {
                b4_permissions_free(perms);
                return r;
        }
        (*ret)->own_perms = perms;
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
        b4_permissions_free(t->own_perms);
        free(t->root);
        free(t->real_root);
        free(t->thread_id);
        free(t->owner);
        strv_free(t->approve);
        free(t);
        return NULL;
}
