/* SPDX-License-Identifier: Apache-2.0 */
/* The route table: method, path pattern, the operation the access policy checks, body cap. */

#include "server-internal.h"

#define OP_ANY (~0u) /* any authenticated principal */

const struct route server_routes[] = {
        { .method = "GET", .pattern = "/healthz", .handler = route_healthz, .name = "healthz" },
        { .method = "GET",
          .pattern = "/metrics",
          .op = OP_ANY,
          .handler = route_metrics,
          .name = "metrics" },
        { .method = "POST",
          .pattern = "/threads",
          .op = B4_OP_THREAD_CREATE,
          .handler = route_thread_create,
          .name = "thread.create" },
        { .method = "GET",
          .pattern = "/threads",
          .op = B4_OP_THREAD_READ,
          .read_op = true,
          .handler = route_thread_list,
          .name = "thread.list" },
        { .method = "GET",
          .pattern = "/threads/{}",
          .op = B4_OP_THREAD_READ,
          .thread_scoped = true,
          .read_op = true,
          .handler = route_thread_get,
          .name = "thread.read" },
        { .method = "DELETE",
          .pattern = "/threads/{}",
          .op = B4_OP_THREAD_DELETE,
          .thread_scoped = true,
          .handler = route_thread_delete,
          .name = "thread.delete" },
        { .method = "POST",
          .pattern = "/threads/{}/release",
          .op = B4_OP_THREAD_UPDATE,
          .thread_scoped = true,
          .handler = route_thread_release,
          .name = "thread.release" },
        { .method = "POST",
          .pattern = "/threads/{}/cancel",
          .op = B4_OP_THREAD_RUN,
          .thread_scoped = true,
          .handler = route_thread_cancel,
          .name = "thread.cancel" },
        { .method = "POST",
          .pattern = "/threads/{}/runs",
          .op = B4_OP_THREAD_RUN,
          .thread_scoped = true,
          .tool_body = true,
          .handler = route_runs,
          .name = "thread.run" },
        { .method = "POST",
          .pattern = "/threads/{}/tools/{}",
          .op = B4_OP_THREAD_RUN,
          .thread_scoped = true,
          .tool_body = true,
          .handler = route_tool,
          .name = "thread.tool" },
        { .method = "POST",
          .pattern = "/threads/{}/permissions",
          .op = B4_OP_THREAD_RUN,
          .thread_scoped = true,
          .handler = route_permissions,
          .name = "thread.permissions" },
        { .method = "POST",
          .pattern = "/threads/{}/workspace/inspect",
          .op = B4_OP_THREAD_WORKSPACE,
          .thread_scoped = true,
          .read_op = true,
          .max_body = INSPECT_BODY_MAX_BYTES,
          .handler = route_workspace_inspect,
          .name = "thread.workspace" },
};

const size_t server_n_routes = sizeof(server_routes) / sizeof(server_routes[0]);

bool route_admit(struct request *rq)
{
        if (rq->route->handler == route_workspace_inspect)
                return route_inspect_admit(rq);
        return true;
}
