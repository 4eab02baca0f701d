/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /threads/{id}/network (docs/http-api.md): the thread's network audit, read with the
 * access rules of GET /threads/{id}; and its totals over every thread for /metrics. The
 * document is the library's (b4_provider_network_audit()): always one shape, "enforced":
 * false with a reason where nothing is audited. Reading asks the thread's b4box-netd over a
 * unix socket (bounded: 2 s, 2 MiB).
 */

#include <stdlib.h>
#include <string.h>

#include "b4box/provider.h"
#include "b4box/runtime.h"

#include "base/macro.h"
#include "base/strbuf.h"
#include "json/json.h"
#include "server-internal.h"

/* The audit as a parsed document; NULL with @err set. */
static struct jv *audit_of(struct b4_runtime *rt, const char *thread_id, struct b4_error *err)
{
        cleanup_free char *text = NULL;
        struct jv *doc = NULL;

        if (b4_provider_network_audit(b4_runtime_provider(rt), thread_id, &text, err) < 0)
                return NULL;
        if (jv_parse(text, strlen(text), &doc, err) < 0)
                return NULL;
        return doc;
}

void route_thread_network(struct request *rq)
{
        struct b4_error err = { 0 };
        struct jv *doc = audit_of(rq->srv->opts.runtime, rq->thread.id, &err);

        if (!doc) {
                reply_b4_error(rq, &err);
                return;
        }
        reply_json(rq, 200, doc);
}

struct net_totals {
        int64_t admitted, refused, failed, dropped, denied_packets, bytes, packets;
        size_t audited;
};

static int64_t member(const struct jv *o, const char *a, const char *b)
{
        const struct jv *v = jv_object_get(o, a);

        if (b)
                v = jv_object_get(v, b);
        return v && jv_is_number(v) ? jv_integer(v) : 0;
}

static int64_t sum(const struct jv *arr, const char *key)
{
        int64_t s = 0;

        for (size_t i = 0; i < jv_array_size(arr); i++)
                s += member(jv_array_get(arr, i), key, NULL);
        return s;
}

static void add_thread(struct net_totals *t, const struct jv *doc)
{
        if (!jv_is_true(jv_object_get(doc, "enforced")))
                return;
        t->audited++;
        t->admitted += member(doc, "dns", "admitted");
        t->refused += member(doc, "dns", "refused");
        t->failed += member(doc, "dns", "failed");
        t->dropped += member(doc, "dns", "dropped");
        t->denied_packets += sum(jv_object_get(doc, "denials"), "packets");
        t->bytes += sum(jv_object_get(doc, "destinations"), "bytes");
        t->packets += sum(jv_object_get(doc, "destinations"), "packets");
}

void network_metrics_render(struct b4_runtime *rt, struct strbuf *sb)
{
        struct b4_thread_row *rows = NULL;
        struct net_totals t = { 0 };
        size_t n = 0;

        if (b4_runtime_thread_list(rt, NULL, &rows, &n, NULL) < 0)
                n = 0;
        for (size_t i = 0; i < n; i++) {
                struct jv *doc = audit_of(rt, rows[i].id, NULL);

                add_thread(&t, doc);
                jv_unref(doc);
        }
        b4_thread_rows_free(rows, n);
        (void)strbuf_addf(
                sb,
                "# HELP b4box_network_audited_threads Threads whose network is audited now.\n"
                "# TYPE b4box_network_audited_threads gauge\n"
                "b4box_network_audited_threads %zu\n"
                "# HELP b4box_network_dns_queries DNS queries of the audited threads, by result.\n"
                "# TYPE b4box_network_dns_queries gauge\n"
                "b4box_network_dns_queries{result=\"admitted\"} %lld\n"
                "b4box_network_dns_queries{result=\"refused\"} %lld\n"
                "b4box_network_dns_queries{result=\"failed\"} %lld\n"
                "b4box_network_dns_queries{result=\"dropped\"} %lld\n"
                "# HELP b4box_network_denied_packets Packets the audited threads were refused.\n"
                "# TYPE b4box_network_denied_packets gauge\n"
                "b4box_network_denied_packets %lld\n"
                "# HELP b4box_network_bytes Bytes to and from the audited threads' destinations.\n"
                "# TYPE b4box_network_bytes gauge\n"
                "b4box_network_bytes %lld\n"
                "# HELP b4box_network_packets Packets to and from the audited threads' "
                "destinations.\n"
                "# TYPE b4box_network_packets gauge\n"
                "b4box_network_packets %lld\n",
                t.audited, (long long)t.admitted, (long long)t.refused, (long long)t.failed,
                (long long)t.dropped, (long long)t.denied_packets, (long long)t.bytes,
                (long long)t.packets);
}
