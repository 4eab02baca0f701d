/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools host: the settings and the pending-request store shared by every call of every
 * thread; each call runs on a short-lived context that parks into (and answers from) that
 * store directly.
 */

#include "tools/host.h"

#include <errno.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "tools/tools-internal.h"

struct tools_host {
        struct tools_host_options opts;
        char **approve;
        struct pending_store *pending;
};

int tools_host_new(const struct tools_host_options *opts, struct tools_host **ret)
{
        struct tools_host *h;

        if (!opts || !ret)
                return -EINVAL;
        h = b4_calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->opts = *opts;
        h->approve = strv_copy((char *const *)opts->approve_tools);
        if ((opts->approve_tools && !h->approve) || pending_store_new(&h->pending) < 0) {
                tools_host_free(h);
                return -ENOMEM;
        }
        h->opts.approve_tools = (const char *const *)h->approve;
        *ret = h;
        return 0;
}

struct tools_host *tools_host_free(struct tools_host *h)
{
        if (!h)
                return NULL;
        pending_store_free(h->pending);
        strv_free(h->approve);
        free(h);
        return NULL;
}

static int open_context(struct tools_host *h,
                        const struct tools_host_call *c,
                        struct b4_tools **ret,
                        struct b4_error *err)
{
        struct b4_tools_options o = {
                .app = h->opts.app,
                .thread = c->perms,
                .grants = h->opts.grants,
                .read_cap = h->opts.read_cap,
                .approve_tools = h->opts.approve_tools,
                .cancel = c->cancel,
                .on_output = c->on_output,
                .output_userdata = c->output_userdata,
        };

        if (!c->sb || !c->thread_id)
                return b4_error_set(err, -EINVAL, "tools host: missing argument");
        return tools_context_new(c->sb, &o, h->pending, c->thread_id, ret, err);
}

int tools_host_open(struct tools_host *h,
                    const struct tools_host_call *c,
                    struct b4_tools **ret,
                    struct b4_error *err)
{
        return open_context(h, c, ret, err);
}

int tools_host_open_reader(struct tools_host *h,
                           const struct tools_host_call *c,
                           struct b4_reader *rd,
                           struct b4_tools **ret,
                           struct b4_error *err)
{
        struct b4_tools_options o = {
                .app = h->opts.app,
                .thread = c->perms,
                .grants = h->opts.grants,
                .read_cap = h->opts.read_cap,
                .approve_tools = h->opts.approve_tools,
                .cancel = c->cancel,
        };

        return tools_context_new_reader(rd, &o, h->pending, c->perms, ret, err);
}

int tools_host_call(struct tools_host *h,
                    const struct tools_host_call *c,
                    const char *tool,
                    const struct jv *args,
                    struct b4_tool_result *ret,
                    struct b4_error *err)
{
        struct b4_tools *t = NULL;
        int r;

        r = open_context(h, c, &t, err);
        if (r >= 0)
                r = b4_tools_call(t, tool, args, ret, err);
        b4_tools_free(t);
        return r;
}

int tools_host_resume(struct tools_host *h,
                      const struct tools_host_call *c,
                      const char *interrupt_id,
                      const char *answer,
                      struct b4_tool_result *ret,
                      struct b4_error *err)
{
        struct b4_tools *t = NULL;
        int r;

        r = open_context(h, c, &t, err);
        if (r >= 0)
                r = b4_tools_resume(t, interrupt_id, answer, ret, err);
        b4_tools_free(t);
        return r;
}

int tools_host_check(struct tools_host *h,
                     const struct tools_host_call *c,
                     const char *tool,
                     const struct jv *args,
                     struct b4_tool_result *ret,
                     struct b4_error *err)
{
        struct b4_tools *t = NULL;
        int r;

        r = open_context(h, c, &t, err);
        if (r >= 0)
                r = b4_tools_check(t, tool, args, ret, err);
        b4_tools_free(t);
        return r;
}
