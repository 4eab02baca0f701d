/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's audit: the DNS event ring and the JSON document of docs/native.md §Audit.
 * Names in events come from dns-msg.c, which admits only letters, digits, '-', '_' and '.',
 * so they need no escaping; they are escaped anyway (one place, no assumption).
 */

#include "netd-audit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/macro.h"

struct out {
        char *buf;
        size_t len, cap;
        bool failed;
};

static void outf(struct out *o, const char *fmt, ...) B4_PRINTF(2, 3);

static void outf(struct out *o, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (o->failed)
                return;
        va_start(ap, fmt);
        n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= o->cap - o->len)
                o->failed = true;
        else
                o->len += (size_t)n;
}

static void out_string(struct out *o, const char *s)
{
        outf(o, "\"");
        for (; *s; s++)
                if (*s == '"' || *s == '\\')
                        outf(o, "\\%c", *s);
                else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
                        outf(o, "\\u%04x", (unsigned char)*s);
                else
                        outf(o, "%c", *s);
        outf(o, "\"");
}

void netd_audit_init(struct netd_audit *a)
{
        memset(a, 0, sizeof(*a));
        (void)pthread_mutex_init(&a->lock, NULL);
}

static int64_t wall_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void netd_audit_record(struct netd_audit *a,
                       const struct dns_query *q,
                       const char *verdict,
                       bool admitted,
                       bool failed,
                       const struct dns_answer *ans,
                       uint32_t pin_s)
{
        struct netd_event e = { .time_ms = wall_ms(),
                                .qtype = q->qtype,
                                .verdict = verdict,
                                .admitted = admitted,
                                .pin_s = pin_s };

        (void)snprintf(e.name, sizeof(e.name), "%s", q->name);
        for (size_t i = 0; ans && i < ans->n; i++) {
                if (ans->rr[i].type != DNS_T_A)
                        continue;
                if (e.n_addrs == NETD_AUDIT_ADDRS) {
                        e.more_addrs = true;
                        break;
                }
                memcpy(e.addrs[e.n_addrs++], ans->rr[i].data, 4);
        }
        (void)pthread_mutex_lock(&a->lock);
        a->ring[a->events % NETD_AUDIT_EVENTS] = e;
        a->events++;
        if (admitted)
                a->admitted++;
        else if (failed)
                a->failed++;
        else
                a->refused++;
        (void)pthread_mutex_unlock(&a->lock);
}

void netd_audit_dropped(struct netd_audit *a)
{
        (void)pthread_mutex_lock(&a->lock);
        a->dropped++;
        (void)pthread_mutex_unlock(&a->lock);
}

static const char *type_name(uint16_t t, char buf[16])
{
        static const struct {
                uint16_t t;
                const char *name;
        } names[] = {
                { DNS_T_A, "A" },       { DNS_T_CNAME, "CNAME" }, { DNS_T_MX, "MX" },
                { DNS_T_TXT, "TXT" },   { DNS_T_AAAA, "AAAA" },   { DNS_T_SRV, "SRV" },
                { DNS_T_SVCB, "SVCB" }, { DNS_T_HTTPS, "HTTPS" },
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (names[i].t == t)
                        return names[i].name;
        (void)snprintf(buf, 16, "TYPE%u", t); /* RFC 3597 */
        return buf;
}

static void out_event(struct out *o, const struct netd_event *e)
{
        time_t s = (time_t)(e->time_ms / 1000);
        char when[32], ip[INET_ADDRSTRLEN], tbuf[16];
        struct tm tm;

        (void)gmtime_r(&s, &tm);
        (void)strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        outf(o, "{\"time\":\"%s.%03dZ\",\"name\":", when, (int)(e->time_ms % 1000));
        out_string(o, e->name);
        outf(o, ",\"type\":\"%s\",\"verdict\":\"%s\",\"admitted\":%s,\"answers\":[",
             type_name(e->qtype, tbuf), e->verdict, e->admitted ? "true" : "false");
        for (size_t i = 0; i < e->n_addrs; i++) {
                (void)inet_ntop(AF_INET, e->addrs[i], ip, sizeof(ip));
                outf(o, "%s\"%s\"", i ? "," : "", ip);
        }
        outf(o, "]");
        if (e->more_addrs)
                outf(o, ",\"moreAnswers\":true");
        if (e->pin_s)
                outf(o, ",\"pinSeconds\":%u", e->pin_s);
        outf(o, "}");
}

static void out_counted(
        struct out *o, const char *key, const struct netd_counted *c, size_t n, bool bytes)
{
        char ip[INET_ADDRSTRLEN];

        outf(o, ",\"%s\":[", key);
        for (size_t i = 0; i < n; i++) {
                (void)inet_ntop(AF_INET, c[i].addr, ip, sizeof(ip));
                outf(o, "%s{\"address\":\"%s\",\"protocol\":\"%s\",\"port\":%u,\"packets\":%llu",
                     i ? "," : "", ip,
                     c[i].proto == IPPROTO_TCP   ? "tcp"
                     : c[i].proto == IPPROTO_UDP ? "udp"
                                                 : "other",
                     c[i].port, (unsigned long long)c[i].packets);
                if (bytes)
                        outf(o, ",\"bytes\":%llu", (unsigned long long)c[i].bytes);
                outf(o, "}");
        }
        outf(o, "]");
}

int netd_audit_render(struct netd_audit *a,
                      enum b4_network_mode mode,
                      const struct netd_counted *dest,
                      size_t n_dest,
                      bool dest_more,
                      const struct netd_counted *deny,
                      size_t n_deny,
                      bool deny_more,
                      char **ret)
{
        struct out o = { .buf = malloc(NETD_AUDIT_DOC_MAX), .cap = NETD_AUDIT_DOC_MAX };
        uint64_t first;

        if (!o.buf)
                return -ENOMEM;
        (void)pthread_mutex_lock(&a->lock);
        first = a->events > NETD_AUDIT_EVENTS ? a->events - NETD_AUDIT_EVENTS : 0;
        outf(&o,
             "{\"version\":1,\"mode\":\"%s\",\"dns\":{\"queries\":%llu,\"admitted\":%llu,"
             "\"refused\":%llu,\"failed\":%llu,\"dropped\":%llu,\"capacity\":%u,"
             "\"eventsDropped\":%llu,\"events\":[",
             mode == B4_NETWORK_DENY ? "deny" : "allow", (unsigned long long)a->events,
             (unsigned long long)a->admitted, (unsigned long long)a->refused,
             (unsigned long long)a->failed, (unsigned long long)a->dropped, NETD_AUDIT_EVENTS,
             (unsigned long long)first);
        for (uint64_t i = first; i < a->events; i++) {
                if (i > first)
                        outf(&o, ",");
                out_event(&o, &a->ring[i % NETD_AUDIT_EVENTS]);
        }
        (void)pthread_mutex_unlock(&a->lock);
        outf(&o, "]}");
        out_counted(&o, "destinations", dest, n_dest, true);
        out_counted(&o, "denials", deny, n_deny, false);
        outf(&o, ",\"truncated\":{\"destinations\":%s,\"denials\":%s}}\n",
             dest_more ? "true" : "false", deny_more ? "true" : "false");
        if (o.failed) {
                free(o.buf);
                return -ENOMEM;
        }
        *ret = o.buf;
        return (int)o.len;
}
