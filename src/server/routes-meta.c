/* SPDX-License-Identifier: Apache-2.0 */
/* GET /healthz, GET /metrics and GET /openapi.json. */

#include <stdlib.h>
#include <string.h>

#include "server-internal.h"

extern const char openapi_json[]; /* docs/openapi.json, embedded at build time (meson.build) */

void route_healthz(struct request *rq)
{
        reply_json(rq, 200, jv_pack("{s:b}", "ok", true));
}

void route_metrics(struct request *rq)
{
        struct MHD_Response *resp;
        char *text = NULL;

        if (metrics_render(rq->srv->metrics, rq->srv->opts.runtime, &text) < 0) {
                reply_error(rq, 500, "internal_error", "cannot render metrics");
                return;
        }
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(text);
                return;
        }
        (void)MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
        reply_response(rq, 200, resp);
}

/* The document describing every route (docs/openapi.json), as it was when this binary was
 * built; static bytes, so nothing is copied. Same access as /metrics: any principal. */
void route_openapi(struct request *rq)
{
        struct MHD_Response *resp;

        resp = MHD_create_response_from_buffer(strlen(openapi_json), (void *)openapi_json,
                                               MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        (void)MHD_add_response_header(resp, "Content-Type", "application/json");
        reply_response(rq, 200, resp);
}
