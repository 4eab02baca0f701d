/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /threads/{id}/check: what is enforced for this thread (docs/http-api.md, "Check"). The
 * thread's effective policy (b4_runtime_thread_policy(): the app's, or its sandbox record's)
 * over the provider's preflight, made into rows by the code `b4box check` uses
 * (b4_preflight_apply_policy(), check_rows_json()): no second copy of the rows. Touches no
 * compute and runs no resolver; the preflight runs on every request (it proves what the host
 * can do now).
 */

#include <errno.h>
#include <stdlib.h>

#include "b4box/provider.h"
#include "b4box/runtime.h"

#include "base/macro.h"
#include "core/check-rows.h"
#include "server-internal.h"

static const char *source_name(enum b4_policy_source s)
{
        switch (s) {
        case B4_POLICY_THREAD:
                return "thread";
        case B4_POLICY_PENDING:
                return "pending";
        case B4_POLICY_APP:
                break;
        }
        return "app";
}

/* The policy's own values: what the rows are about. */
static struct jv *policy_json(const struct b4_policy *p)
{
        cleanup_(jv_unrefp) struct jv *list = jv_array_new();

        for (size_t i = 0; list && i < p->n_network_list; i++)
                if (jv_array_append_new(list, jv_string_new(p->network_list[i].text)) < 0)
                        return NULL;
        if (!list)
                return NULL;
        return jv_pack("{s:{s:s, s:O}, s:{s:I, s:f, s:I, s:I}, s:{s:I, s:b, s:b, s:b, s:b}}",
                       "network", "mode", p->network == B4_NETWORK_DENY ? "deny" : "allow",
                       p->network == B4_NETWORK_DENY ? "allowlist" : "denylist", list, "resources",
                       "memoryMb", (int64_t)p->resources.memory_mb, "cpus", p->resources.cpus,
                       "timeoutMs", (int64_t)p->resources.timeout_ms, "diskGb",
                       (int64_t)p->resources.disk_gb, "security", "pidsLimit",
                       (int64_t)p->security.pids_limit, "runAsNonRoot", p->security.run_as_non_root,
                       "readOnlyRoot", p->security.read_only_root, "dropAllCapabilities",
                       p->security.drop_all_capabilities, "noNewPrivileges",
                       p->security.no_new_privileges);
}

static struct jv *check_json(struct request *rq,
                             const struct b4_policy *p,
                             enum b4_policy_source source,
                             const struct b4_preflight *pf)
{
        struct b4_provider *prov = b4_runtime_provider(rq->srv->opts.runtime);

        return jv_pack("{s:s, s:s, s:b, s:s?, s:s, s:o, s:o, s:o}", "threadId", rq->thread.id,
                       "provider", b4_provider_name(prov), "ok", pf->ok, "detail", pf->detail,
                       "policySource", source_name(source), "policy", policy_json(p), "warnings",
                       jv_string_array_new(pf->warnings), "controls", check_rows_json(pf));
}

void route_thread_check(struct request *rq)
{
        struct b4_runtime *rt = rq->srv->opts.runtime;
        enum b4_policy_source source = B4_POLICY_APP;
        struct b4_preflight pf = { 0 };
        struct b4_error err = { 0 };
        struct b4_policy p;
        int r;

        b4_policy_init(&p);
        r = b4_runtime_thread_policy(rt, rq->thread.id, &p, &source, &err);
        if (r >= 0)
                r = b4_provider_preflight(b4_runtime_provider(rt), &pf, &err);
        if (r >= 0 && b4_preflight_apply_policy(&pf, &p) < 0)
                r = b4_error_set(&err, -ENOMEM, "out of memory");
        if (r < 0)
                reply_b4_error(rq, &err);
        else
                reply_json(rq, 200, check_json(rq, &p, source, &pf));
        b4_preflight_clear(&pf);
        b4_policy_clear(&p);
}
