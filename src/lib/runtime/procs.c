/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background processes through the runtime: the start passes the gates a runBash of the same
 * command would (the thread's effective permissions, the cwd's jail), so a process is never
 * a way around them; the other calls are the sandbox's (b4_sandbox_proc_*()) on
 * b4_runtime_procs_sandbox().
 */

#include <errno.h>
#include <stdlib.h>

#include "b4box/tools.h"

#include "base/macro.h"
#include "runtime-internal.h"
#include "tools/host.h"

/* The gates of a runBash of @req in @id's sandbox @sb; *ret_cwd the jailed cwd (heap). */
static int gate(struct b4_runtime *rt,
                const char *id,
                struct b4_sandbox *sb,
                const struct b4_proc_req *req,
                char **ret_cwd,
                struct b4_error *err)
{
        cleanup_free char *key = NULL;
        struct b4_permissions *perms = NULL;
        struct b4_tools *tools = NULL;
        int r;

        r = runtime_sandbox_key(rt, id, &key, err);
        if (r >= 0)
                r = runtime_run_permissions(rt, key, &perms, err);
        if (r >= 0) {
                struct tools_host_call c = { .sb = sb, .thread_id = id, .perms = perms };
                r = tools_host_open(rt->tools, &c, &tools, err);
        }
        if (r >= 0)
                r = b4_tools_gate_command(tools, req->command, req->cwd, ret_cwd, err);
        if (r == -ENOENT || r == -ENOTDIR) /* the cwd: a bad argument, not a missing thread */
                r = err ? (err->error = -EINVAL) : -EINVAL;
        b4_tools_free(tools);
        b4_permissions_free(perms);
        return r;
}

int b4_runtime_proc_start(struct b4_runtime *rt,
                          const char *id,
                          const struct b4_proc_req *req,
                          struct b4_proc_info *ret,
                          struct b4_error *err)
{
        cleanup_free char *cwd = NULL;
        struct b4_sandbox *sb = NULL;
        struct b4_proc_req jailed;
        int r;

        *ret = (struct b4_proc_info){ .exit_code = -1 };
        if (!req || !req->command || !*req->command)
                return b4_error_set(err, -EINVAL, "command must be a non-empty string");
        r = b4_runtime_procs_sandbox(rt, id, &sb, err);
        if (r >= 0)
                r = gate(rt, id, sb, req, &cwd, err);
        if (r >= 0) {
                jailed = *req;
                jailed.cwd = cwd;
                r = b4_sandbox_proc_start(sb, &jailed, ret, err);
        }
        b4_sandbox_unref(sb);
        return r;
}
