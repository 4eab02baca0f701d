/* SPDX-License-Identifier: Apache-2.0 */
/* The route table: method, path pattern, the operation the access policy checks, body cap. */

#include "server-internal.h"

#define OP_ANY (~0u) /* any authenticated principal */

const struct route server_routes[] = {
        { "GET", "/healthz", 0, false, false, 0, route_healthz, "healthz" },
        { "GET", "/metrics", OP_ANY, false, false, 0, route_metrics, "metrics" },
        { "POST", "/threads", B4_OP_THREAD_CREATE, false, false, 0, route_thread_create,
          "thread.create" },
        { "GET", "/threads", B4_OP_THREAD_READ, false, true, 0, route_thread_list, "thread.list" },
        { "GET", "/threads/{}", B4_OP_THREAD_READ, true, true, 0, route_thread_get, "thread.read" },
        { "DELETE", "/threads/{}", B4_OP_THREAD_DELETE, true, false, 0, route_thread_delete,
          "thread.delete" },
        { "POST", "/threads/{}/release", B4_OP_THREAD_UPDATE, true, false, 0, route_thread_release,
          "thread.release" },
        { "POST", "/threads/{}/cancel", B4_OP_THREAD_RUN, true, false, 0, route_thread_cancel,
          "thread.cancel" },
        { "POST", "/threads/{}/runs", B4_OP_THREAD_RUN, true, false, TOOL_BODY_MAX_BYTES,
          route_runs, "thread.run" },
        { "POST", "/threads/{}/tools/{}", B4_OP_THREAD_RUN, true, false, TOOL_BODY_MAX_BYTES,
          route_tool, "thread.tool" },
        { "POST", "/threads/{}/permissions", B4_OP_THREAD_RUN, true, false, 0, route_permissions,
          "thread.permissions" },
        { "POST", "/threads/{}/workspace/inspect", B4_OP_THREAD_WORKSPACE, true, true,
          INSPECT_BODY_MAX_BYTES, route_workspace_inspect, "thread.workspace" },
};

const size_t server_n_routes = sizeof(server_routes) / sizeof(server_routes[0]);

bool route_admit(struct request *rq)
{
        if (rq->route->handler == route_workspace_inspect)
                return route_inspect_admit(rq);
        return true;
}
