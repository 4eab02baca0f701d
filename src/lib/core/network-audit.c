/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4_provider_network_audit(): the provider's audit document (netd's shape) with the thread,
 * the provider and whether it is enforced; or, when there is nothing audited, the same
 * shape empty with "enforced": false and the reason, so a client reads one shape always.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/provider-impl.h"

#include "base/macro.h"
#include "json/json.h"

static struct jv *empty_audit(void)
{
        return jv_pack("{s:{s:i, s:i, s:i, s:i, s:i, s:[]}, s:[], s:[]}", "dns", "queries", 0,
                       "admitted", 0, "refused", 0, "failed", 0, "dropped", 0, "events",
                       "destinations", "denials");
}

static int finish(struct jv *doc,
                  const char *thread_id,
                  const char *provider,
                  const char *reason,
                  char **ret_json,
                  struct b4_error *err)
{
        int r = doc && jv_object_set_new(doc, "thread", jv_string_new(thread_id)) >= 0 &&
                                jv_object_set_new(doc, "provider", jv_string_new(provider)) >= 0 &&
                                jv_object_set_new(doc, "enforced", jv_bool_new(!reason)) >= 0 &&
                                (!reason ||
                                 jv_object_set_new(doc, "reason", jv_string_new(reason)) >= 0)
                        ? jv_dump(doc, 0, ret_json)
                        : -ENOMEM;

        jv_unref(doc);
        return r < 0 ? b4_error_set(err, -ENOMEM, "out of memory") : 0;
}

int b4_provider_network_audit(struct b4_provider *p,
                              const char *thread_id,
                              char **ret_json,
                              struct b4_error *err)
{
        cleanup_free char *text = NULL;
        struct b4_error why = { 0 };
        struct jv *doc = NULL;
        int r;

        if (!p || !thread_id || !*thread_id || !ret_json)
                return b4_error_set(err, -EINVAL, "network audit needs a provider and a thread id");
        if (!p->ops->network_audit)
                return finish(empty_audit(), thread_id, p->ops->name,
                              "this provider keeps no network audit", ret_json, err);
        r = p->ops->network_audit(p, thread_id, &text, &why);
        if (r == -ENOENT)
                return finish(empty_audit(), thread_id, p->ops->name,
                              why.msg[0] ? why.msg : "nothing is audited for this thread", ret_json,
                              err);
        if (r < 0) {
                *err = why;
                return r;
        }
        if (jv_parse(text, strlen(text), &doc, &why) < 0 || !jv_is_object(doc)) {
                jv_unref(doc);
                return b4_error_set(err, -EIO,
                                    "the network audit of thread '%s' is not a JSON "
                                    "object",
                                    thread_id);
        }
        return finish(doc, thread_id, p->ops->name, NULL, ret_json, err);
}
