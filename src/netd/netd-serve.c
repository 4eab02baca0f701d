/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a b4box-netd worker does with one job: answer a query (decide, resolve, refuse
 * rebinding, pin before the reply exists, record it), serve one TCP client, or write the
 * audit document to one reader. Several workers run these at once; the pinner is locked, the
 * audit locks itself, everything else is per call.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "netd.h"

#define MAX_PORTS 16
#define MAX_PINS  (DNS_MAX_RR * MAX_PORTS * 2)

static uint64_t now_us(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The elements pinning @ans's A records: pin4 / dpin4 keys (all of them *@ret_exact), or,
 * with the port ranges of the entries admitting the question's name, one port's pins
 * (pins_<ifindex>: the first *@ret_exact) and then ranges' (pinsr_<ifindex>). Return: how
 * many. */
static size_t pin_elems(const struct netd *d,
                        const struct dns_query *q,
                        const struct dns_answer *ans,
                        bool ports,
                        struct pin_elem *pins,
                        size_t *ret_exact)
{
        uint16_t lo[MAX_PORTS], hi[MAX_PORTS];
        size_t n_ports = ports ? netd_name_ports(&d->policy, q->name, lo, hi, MAX_PORTS) : 0, n = 0;

        for (size_t i = 0; i < ans->n; i++)
                if (ans->rr[i].type == DNS_T_A && n_ports == 0)
                        pin_key4(&pins[n++], d->ifindex, ans->rr[i].data);
        for (int range = 0; range < 2; range++) {
                if (range)
                        *ret_exact = n;
                for (size_t i = 0; i < ans->n; i++) {
                        if (ans->rr[i].type != DNS_T_A)
                                continue;
                        for (size_t k = 0; k < n_ports; k++) {
                                if ((lo[k] != hi[k]) != range)
                                        continue;
                                pin_key4p(&pins[n++], ans->rr[i].data, IPPROTO_TCP, lo[k], hi[k]);
                                pin_key4p(&pins[n++], ans->rr[i].data, IPPROTO_UDP, lo[k], hi[k]);
                        }
                }
        }
        return n;
}

/* Pin @ans for @life seconds (+ slack): into the thread's allow pins (pin4, or its own
 * pins_<ifindex> and pinsr_<ifindex>: one transaction each), or (@drop: a denylisted name)
 * into dpin4. */
static int pin_answer(struct netd *d,
                      const struct dns_query *q,
                      const struct dns_answer *ans,
                      uint32_t life,
                      bool drop,
                      uint64_t *ret_us)
{
        struct pin_elem pins[MAX_PINS];
        char exact[PIN_SET_NAME_MAX], ranges[PIN_SET_NAME_MAX];
        size_t n_exact = 0, n = pin_elems(d, q, ans, !drop, pins, &n_exact);
        bool ported = n > 0 && pins[0].len == 12; /* not pin4's iif . ip */
        uint64_t t0 = now_us(), ms = (uint64_t)(life + NETD_PIN_SLACK_S) * 1000u;
        int r;

        pin_set4p(d->ifindex, false, exact);
        pin_set4p(d->ifindex, true, ranges);
        (void)pthread_mutex_lock(&d->pin_lock);
        r = pinner_run(&d->pin, d->table,
                       drop     ? "dpin4"
                       : ported ? exact
                                : "pin4",
                       pins, n_exact, ms);
        if (r >= 0 && n > n_exact)
                r = pinner_run(&d->pin, d->table, ranges, pins + n_exact, n - n_exact, ms);
        (void)pthread_mutex_unlock(&d->pin_lock);
        *ret_us = now_us() - t0;
        if (r < 0)
                fprintf(stderr, "netd: pin: %s\n", strerror(-r));
        return r;
}

static uint32_t min_ttl(const struct dns_answer *ans)
{
        uint32_t t = UINT32_MAX;

        for (size_t i = 0; i < ans->n; i++)
                if (ans->rr[i].ttl < t)
                        t = ans->rr[i].ttl;
        return t;
}

static bool rebinding(const struct netd *d, const struct dns_answer *ans)
{
        for (size_t i = 0; i < ans->n; i++)
                if (ans->rr[i].type == DNS_T_A && netd_addr_refused(&d->policy, ans->rr[i].data))
                        return true;
        return false;
}

/* How one query ended, for the audit and the log. */
struct outcome {
        const char *verdict;
        bool admitted, failed;
        const struct dns_answer *ans;
        uint32_t pin_s;
        uint64_t pin_us;
};

/* Answer a forwarded question: resolve, refuse rebinding, pin, then build. */
static int answer_forward(struct netd *d,
                          const struct dns_query *q,
                          struct dns_answer *ans,
                          uint8_t *buf,
                          uint8_t *out,
                          size_t cap,
                          struct outcome *o)
{
        uint32_t life;
        int r = netd_resolve(d, q, buf, ans);

        if (r < 0) {
                o->verdict = r == -EBADMSG ? "upstream-malformed" : "upstream-failed";
                o->failed = true;
                return dns_reply_build(q, DNS_RC_SERVFAIL, NULL, 0, out, cap);
        }
        o->ans = ans;
        if (ans->rcode != DNS_RC_NOERROR) {
                o->verdict = "upstream-rcode";
                o->admitted = true;
                return dns_reply_build(
                        q, ans->rcode == DNS_RC_NXDOMAIN ? DNS_RC_NXDOMAIN : DNS_RC_SERVFAIL, NULL,
                        0, out, cap);
        }
        if (rebinding(d, ans)) {
                o->verdict = "rebind";
                return dns_reply_build(q, DNS_RC_NXDOMAIN, NULL, 0, out, cap);
        }
        life = netd_pin_life(&d->policy, ans->n ? min_ttl(ans) : 0);
        if (d->policy.mode == B4_NETWORK_DENY) {
                if (pin_answer(d, q, ans, life, false, &o->pin_us) < 0) {
                        o->verdict = "pin-failed";
                        o->failed = true;
                        return dns_reply_build(q, DNS_RC_SERVFAIL, NULL, 0, out, cap);
                }
                o->pin_s = life;
        }
        o->verdict = "answer";
        o->admitted = true;
        return dns_reply_build(q, DNS_RC_NOERROR, ans, life, out, cap);
}

/* A denylisted name: its addresses go into the thread's drop set; the sandbox gets NXDOMAIN
 * whatever the upstream said (and when it said nothing). */
static int answer_denied(struct netd *d,
                         const struct dns_query *q,
                         struct dns_answer *ans,
                         uint8_t *buf,
                         uint8_t *out,
                         size_t cap,
                         struct outcome *o)
{
        o->verdict = "denied";
        if (netd_resolve(d, q, buf, ans) == 0 && ans->rcode == DNS_RC_NOERROR) {
                uint32_t life = netd_pin_life(&d->policy, ans->n ? min_ttl(ans) : 0);

                o->ans = ans;
                if (pin_answer(d, q, ans, life, true, &o->pin_us) == 0)
                        o->pin_s = life;
        }
        return dns_reply_build(q, DNS_RC_NXDOMAIN, NULL, 0, out, cap);
}

uint32_t netd_prefetch_denied(struct netd *d, const char *name)
{
        struct dns_query q = { .flags = DNS_FLAG_RD, .qtype = DNS_T_A, .qclass = DNS_CLASS_IN };
        uint8_t buf[DNS_MSG_MAX];
        struct dns_answer ans;
        uint64_t us = 0;
        uint32_t life;

        (void)snprintf(q.name, sizeof(q.name), "%s", name);
        if (netd_resolve(d, &q, buf, &ans) < 0 || ans.rcode != DNS_RC_NOERROR) {
                fprintf(stderr, "netd: prefetch name=%s failed\n", name);
                return d->policy.pin_floor_s;
        }
        life = netd_pin_life(&d->policy, ans.n ? min_ttl(&ans) : 0);
        if (pin_answer(d, &q, &ans, life, true, &us) < 0)
                return d->policy.pin_floor_s;
        fprintf(stderr, "netd: prefetch name=%s verdict=denied pin_s=%u pin_us=%llu\n", name, life,
                (unsigned long long)us);
        return life;
}

static const char *const verdict_names[] = {
        [NETD_FORWARD] = "answer", [NETD_NXDOMAIN] = "nxdomain-policy",
        [NETD_DENIED] = "denied",  [NETD_NODATA] = "nodata",
        [NETD_NOTIMP] = "notimp",
};

int netd_handle(struct netd *d,
                const uint8_t *msg,
                size_t len,
                bool udp,
                bool local_only,
                uint8_t *out,
                size_t cap)
{
        uint8_t buf[DNS_MSG_MAX];
        struct dns_answer ans;
        struct dns_query q = { 0 };
        struct outcome o = { 0 };
        int r = dns_query_parse(msg, len, &q);
        enum netd_verdict v;

        if (r == -EPROTO)
                return -1;
        if (r < 0) {
                r = dns_reply_build(&q, r == -EOPNOTSUPP ? DNS_RC_NOTIMP : DNS_RC_FORMERR, NULL, 0,
                                    out, cap);
                fprintf(stderr, "netd: query malformed verdict=formerr\n");
                return r;
        }
        if (udp && cap > dns_udp_reply_cap(&q))
                cap = dns_udp_reply_cap(&q);
        v = netd_query_verdict(&d->policy, &q);
        if (local_only && (v == NETD_FORWARD || v == NETD_DENIED))
                return NETD_NEEDS_UPSTREAM;
        o.verdict = verdict_names[v];
        switch (v) {
        case NETD_FORWARD:
                r = answer_forward(d, &q, &ans, buf, out, cap, &o);
                break;
        case NETD_DENIED:
                r = answer_denied(d, &q, &ans, buf, out, cap, &o);
                break;
        case NETD_NXDOMAIN:
                r = dns_reply_build(&q, DNS_RC_NXDOMAIN, NULL, 0, out, cap);
                break;
        case NETD_NODATA:
                r = dns_reply_build(&q, DNS_RC_NOERROR, NULL, 0, out, cap);
                break;
        case NETD_NOTIMP:
                r = dns_reply_build(&q, DNS_RC_NOTIMP, NULL, 0, out, cap);
                break;
        }
        netd_audit_record(&d->audit, &q, o.verdict, o.admitted, o.failed, o.ans, o.pin_s);
        fprintf(stderr, "netd: query name=%s type=%u verdict=%s pin_us=%llu\n",
                q.name[0] ? q.name : ".", q.qtype, o.verdict, (unsigned long long)o.pin_us);
        return r;
}

static void set_timeouts(int fd, unsigned ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };

        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void netd_serve_tcp(struct netd *d, int fd)
{
        uint8_t *msg = malloc(DNS_MSG_MAX), *out = malloc(DNS_MSG_MAX + 2);
        size_t len;

        set_timeouts(fd, NETD_TCP_TIMEOUT_MS);
        for (int i = 0; msg && out && i < NETD_TCP_QUERIES; i++) {
                int r;

                if (netd_recv_tcp_msg(fd, msg, DNS_MSG_MAX, &len) < 0)
                        break;
                r = netd_handle(d, msg, len, false, false, out + 2, DNS_MSG_MAX);
                if (r <= 0)
                        break;
                out[0] = (uint8_t)(r >> 8);
                out[1] = (uint8_t)r;
                if (send(fd, out, (size_t)r + 2, MSG_NOSIGNAL) != r + 2)
                        break;
        }
        free(msg);
        free(out);
        (void)close(fd);
}

/* ---- the audit document ---- */

struct counted_list {
        unsigned ifindex;
        struct netd_counted *c;
        size_t n;
        bool more;
};

/* acct4 / deny4 keys: iif (host order) . ipv4_addr . inet_proto (padded) . inet_service. */
static void take_counted(
        const uint8_t *key, size_t len, uint64_t packets, uint64_t bytes, void *data)
{
        struct counted_list *l = data;
        struct netd_counted *c;
        uint32_t ifx;

        if (len != 16)
                return;
        memcpy(&ifx, key, 4);
        if (ifx != l->ifindex)
                return;
        if (l->n == NETD_AUDIT_DESTS) {
                l->more = true;
                return;
        }
        c = &l->c[l->n++];
        memcpy(c->addr, key + 4, 4);
        c->proto = key[8];
        c->port = (uint16_t)(key[12] << 8 | key[13]);
        c->packets = packets;
        c->bytes = bytes;
}

static int dump_counted(struct netd *d, const char *set, struct counted_list *l)
{
        int r;

        l->ifindex = d->ifindex;
        l->c = calloc(NETD_AUDIT_DESTS, sizeof(*l->c));
        if (!l->c)
                return -ENOMEM;
        (void)pthread_mutex_lock(&d->reader_lock);
        r = pinner_dump(&d->reader, d->table, set, take_counted, l);
        (void)pthread_mutex_unlock(&d->reader_lock);
        if (r < 0)
                fprintf(stderr, "netd: audit: cannot read set %s: %s\n", set, strerror(-r));
        return r;
}

void netd_serve_audit(struct netd *d, int fd)
{
        struct counted_list dest = { 0 }, deny = { 0 };
        char *doc = NULL;
        int len = -ENOMEM;

        if (dump_counted(d, "acct4", &dest) >= 0 && dump_counted(d, "deny4", &deny) >= 0)
                len = netd_audit_render(&d->audit, d->policy.mode, dest.c, dest.n, dest.more,
                                        deny.c, deny.n, deny.more, &doc);
        set_timeouts(fd, NETD_TCP_TIMEOUT_MS);
        for (size_t off = 0; len > 0 && off < (size_t)len;) {
                ssize_t k = send(fd, doc + off, (size_t)len - off, MSG_NOSIGNAL);

                if (k <= 0)
                        break;
                off += (size_t)k;
        }
        free(doc);
        free(dest.c);
        free(deny.c);
        (void)close(fd);
}
