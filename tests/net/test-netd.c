/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd's pure parts on canned wire data: query parsing (FORMERR, NOTIMP, drop),
 * answer chains (CNAMEs followed from the question, strays and authority dropped, ID and
 * question checked, TC), replies (TTL capped, TC when too big), and the policy decisions
 * (admitted names, rebinding, pin lifetimes, ports).
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b4-test.h"
#include "base/macro.h"
#include "core/net-entry.h"
#include "dns-msg.h"
#include "hostnet/netpolicy.h"
#include "netd-policy.h"

struct msg {
        uint8_t b[1024];
        size_t n;
};

static void put(struct msg *m, const void *p, size_t n)
{
        assert_true(m->n + n <= sizeof(m->b));
        memcpy(m->b + m->n, p, n);
        m->n += n;
}

static void put16(struct msg *m, uint16_t v)
{
        put(m, (uint8_t[]){ (uint8_t)(v >> 8), (uint8_t)v }, 2);
}

static void put_name(struct msg *m, const char *s)
{
        while (*s) {
                const char *dot = strchr(s, '.');
                size_t n = dot ? (size_t)(dot - s) : strlen(s);

                put(m, (uint8_t[]){ (uint8_t)n }, 1);
                put(m, s, n);
                s += n + (dot ? 1 : 0);
        }
        put(m, "", 1);
}

static void header(
        struct msg *m, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns)
{
        m->n = 0;
        put16(m, id);
        put16(m, flags);
        put16(m, qd);
        put16(m, an);
        put16(m, ns);
        put16(m, 0);
}

static void question(struct msg *m, const char *name, uint16_t type)
{
        put_name(m, name);
        put16(m, type);
        put16(m, DNS_CLASS_IN);
}

static void rr_head(struct msg *m, const char *owner, uint16_t type, uint32_t ttl, uint16_t len)
{
        put_name(m, owner);
        put16(m, type);
        put16(m, DNS_CLASS_IN);
        put16(m, (uint16_t)(ttl >> 16));
        put16(m, (uint16_t)ttl);
        put16(m, len);
}

static void rr_a(
        struct msg *m, const char *owner, uint32_t ttl, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
        rr_head(m, owner, DNS_T_A, ttl, 4);
        put(m, (uint8_t[]){ a, b, c, d }, 4);
}

static void rr_cname(struct msg *m, const char *owner, uint32_t ttl, const char *target)
{
        struct msg t = { 0 };

        put_name(&t, target);
        rr_head(m, owner, DNS_T_CNAME, ttl, (uint16_t)t.n);
        put(m, t.b, t.n);
}

static struct dns_query query_for(const char *name, uint16_t type)
{
        struct dns_query q = { .id = 0x4242, .flags = DNS_FLAG_RD, .qtype = type, .qclass = 1 };

        strcpy(q.name, name);
        return q;
}

static void test_dns_query_parse_cases(void **state)
{
        struct msg m;
        struct dns_query q;

        header(&m, 7, DNS_FLAG_RD, 1, 0, 0);
        question(&m, "API.Example.COM", DNS_T_A);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), 0);
        assert_string_equal(q.name, "api.example.com");
        assert_int_equal(q.id, 7);
        assert_int_equal(q.qtype, DNS_T_A);
        header(&m, 7, 0, 2, 0, 0);
        question(&m, "a.example", DNS_T_A);
        question(&m, "b.example", DNS_T_A);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), -EBADMSG); /* FORMERR */
        assert_int_equal(q.id, 7);
        header(&m, 8, 2u << 11, 1, 0, 0); /* opcode STATUS */
        question(&m, "a.example", DNS_T_A);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), -EOPNOTSUPP);
        header(&m, 9, DNS_FLAG_QR, 1, 0, 0); /* an answer sent as a query: dropped */
        assert_int_equal(dns_query_parse(m.b, m.n, &q), -EPROTO);
        assert_int_equal(dns_query_parse(m.b, 5, &q), -EPROTO);
        header(&m, 9, 0, 1, 0, 0);
        put(&m,
            "\x03"
            "a b\x00\x00\x01\x00\x01",
            9); /* a space in a label */
        assert_int_equal(dns_query_parse(m.b, m.n, &q), -EBADMSG);
}

static void test_dns_answer_parse_cname_chain(void **state)
{
        struct dns_query q = query_for("a.example", DNS_T_A);
        struct dns_answer ans;
        struct msg m;

        header(&m, 0x4242, DNS_FLAG_QR | DNS_FLAG_RA, 1, 5, 0);
        question(&m, "a.example", DNS_T_A);
        rr_a(&m, "c.example", 30, 192, 0, 2, 12); /* before its CNAME: still on the chain */
        rr_cname(&m, "a.example", 300, "B.example");
        rr_a(&m, "evil.example", 60, 10, 0, 0, 1); /* not on the chain: dropped */
        rr_cname(&m, "b.example", 100, "c.example");
        rr_a(&m, "c.example", 20, 192, 0, 2, 13);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), 0);
        assert_int_equal(ans.rcode, DNS_RC_NOERROR);
        assert_int_equal(ans.n, 4);
        assert_int_equal(ans.rr[0].type, DNS_T_CNAME);
        assert_string_equal(ans.rr[0].target, "b.example");
        assert_string_equal(ans.rr[1].target, "c.example");
        assert_int_equal(ans.rr[2].type, DNS_T_A);
        assert_memory_equal(ans.rr[2].data, ((uint8_t[]){ 192, 0, 2, 12 }), 4);
        assert_memory_equal(ans.rr[3].data, ((uint8_t[]){ 192, 0, 2, 13 }), 4);
}

static void test_dns_answer_parse_checks(void **state)
{
        struct dns_query q = query_for("a.example", DNS_T_A);
        struct dns_answer ans;
        struct msg m;

        header(&m, 0x4243, DNS_FLAG_QR, 1, 0, 0); /* wrong ID */
        question(&m, "a.example", DNS_T_A);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), -EPROTO);
        header(&m, 0x4242, DNS_FLAG_QR, 1, 0, 0); /* another question */
        question(&m, "b.example", DNS_T_A);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), -EPROTO);
        header(&m, 0x4242, DNS_FLAG_QR | DNS_FLAG_TC, 1, 0, 0);
        question(&m, "a.example", DNS_T_A);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), -EMSGSIZE);
        header(&m, 0x4242, DNS_FLAG_QR | DNS_RC_NXDOMAIN, 1, 0, 0);
        question(&m, "a.example", DNS_T_A);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), 0);
        assert_int_equal(ans.rcode, DNS_RC_NXDOMAIN);
        header(&m, 0x4242, DNS_FLAG_QR, 1, 1, 0); /* A with 3 bytes of rdata */
        question(&m, "a.example", DNS_T_A);
        rr_head(&m, "a.example", DNS_T_A, 5, 3);
        put(&m, "abc", 3);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), -EBADMSG);
        header(&m, 0x4242, DNS_FLAG_QR, 1, 1, 0); /* a pointer to itself */
        question(&m, "a.example", DNS_T_A);
        put(&m, "\xc0\x1b", 2);
        put16(&m, DNS_T_A);
        put16(&m, DNS_CLASS_IN);
        put(&m, "\0\0\0\5\0\4\1\2\3\4", 10);
        assert_int_equal(dns_answer_parse(m.b, m.n, &q, &ans), 0);
        assert_int_equal(ans.n, 0);
}

static void test_dns_reply_build_caps(void **state)
{
        struct dns_query q = query_for("a.example", DNS_T_A);
        struct dns_answer ans = { .n = 1 }, back;
        uint8_t out[DNS_UDP_MAX];
        int len;

        ans.rr[0] = (struct dns_rr){ .type = DNS_T_A, .ttl = 86400, .data_len = 4 };
        strcpy(ans.rr[0].owner, "a.example");
        memcpy(ans.rr[0].data, (uint8_t[]){ 192, 0, 2, 10 }, 4);
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, sizeof(out));
        assert_true(len > 0);
        assert_int_equal(out[2] & 0x81, 0x81); /* QR, RD echoed */
        assert_int_equal(dns_answer_parse(out, (size_t)len, &q, &back), 0);
        assert_int_equal(back.n, 1);
        assert_int_equal(back.rr[0].ttl, 30);
        ans.n = DNS_MAX_RR; /* 32 TXT records of 100 bytes do not fit in 512 */
        for (size_t i = 0; i < ans.n; i++) {
                ans.rr[i] = (struct dns_rr){ .type = DNS_T_TXT, .ttl = 5, .data_len = 100 };
                strcpy(ans.rr[i].owner, "a.example");
        }
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, sizeof(out));
        assert_true(len > 0);
        assert_true(out[2] & 0x02);  /* TC */
        assert_int_equal(out[7], 0); /* no answers */
}

/* An OPT record (RFC 6891) advertising @size, with @rdlen bytes of options. */
static void opt(struct msg *m, uint16_t size, uint16_t rdlen)
{
        put(m, "", 1);
        put16(m, DNS_T_OPT);
        put16(m, size);
        put(m, "\0\0\0\0", 4);
        put16(m, rdlen);
        for (uint16_t i = 0; i < rdlen; i++)
                put(m, "x", 1);
}

static void test_dns_edns(void **state)
{
        struct dns_answer ans = { .n = 6 }, back;
        struct dns_query q;
        uint8_t out[DNS_MSG_MAX];
        struct msg m;
        int len;

        header(&m, 7, DNS_FLAG_RD, 1, 0, 0);
        question(&m, "a.example", DNS_T_TXT);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), 0);
        assert_int_equal(q.edns_size, 0);
        assert_int_equal(dns_udp_reply_cap(&q), 512);
        m.b[11] = 1; /* arcount */
        opt(&m, 4096, 4);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), 0);
        assert_int_equal(q.edns_size, 4096);
        assert_int_equal(dns_udp_reply_cap(&q), DNS_EDNS_MAX); /* clamped */
        m.n -= 15;
        opt(&m, 100, 0);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), 0);
        assert_int_equal(dns_udp_reply_cap(&q), 512); /* under 512 reads as 512 */
        header(&m, 7, DNS_FLAG_RD, 1, 0, 0);          /* an additional record that is not an OPT */
        m.b[11] = 1;
        question(&m, "a.example", DNS_T_TXT);
        rr_a(&m, "a.example", 5, 1, 2, 3, 4);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), -EBADMSG);

        /* six 200-byte TXT records: ~1.4 KB; too big for 1232 (TC), whole over TCP */
        header(&m, 7, DNS_FLAG_RD, 1, 0, 0);
        m.b[11] = 1;
        question(&m, "a.example", DNS_T_TXT);
        opt(&m, 1232, 0);
        assert_int_equal(dns_query_parse(m.b, m.n, &q), 0);
        for (size_t i = 0; i < ans.n; i++) {
                ans.rr[i] = (struct dns_rr){ .type = DNS_T_TXT, .ttl = 5, .data_len = 200 };
                strcpy(ans.rr[i].owner, "a.example");
        }
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, dns_udp_reply_cap(&q));
        assert_true(len > 0 && len <= DNS_EDNS_MAX);
        assert_true(out[2] & 0x02);   /* TC */
        assert_int_equal(out[7], 0);  /* no answers */
        assert_int_equal(out[11], 1); /* but the OPT */
        assert_int_equal(out[len - 11 + 2], DNS_T_OPT);
        assert_int_equal(out[len - 11 + 3] << 8 | out[len - 11 + 4], DNS_EDNS_MAX);
        ans.n = 4; /* ~900 bytes: fits with EDNS, not without */
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, dns_udp_reply_cap(&q));
        assert_true(len > 512 && len <= DNS_EDNS_MAX);
        assert_false(out[2] & 0x02);
        assert_int_equal(dns_answer_parse(out, (size_t)len, &q, &back), 0);
        assert_int_equal(back.n, 4);
        q.edns_size = 0;
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, dns_udp_reply_cap(&q));
        assert_true(len > 0 && len <= 512);
        assert_true(out[2] & 0x02);
        assert_int_equal(out[11], 0); /* no OPT without one asked */
        ans.n = 6;                    /* over TCP: whole */
        len = dns_reply_build(&q, DNS_RC_NOERROR, &ans, 30, out, DNS_MSG_MAX);
        assert_true(len > DNS_EDNS_MAX);
        assert_false(out[2] & 0x02);
        assert_int_equal(dns_answer_parse(out, (size_t)len, &q, &back), 0);
        assert_int_equal(back.n, 6);
        /* an upstream query carries an OPT when asked to */
        q.edns_size = DNS_EDNS_MAX;
        len = dns_query_build(&q, out, DNS_UDP_MAX);
        assert_int_equal(dns_query_parse(out, (size_t)len, &q), 0);
        assert_int_equal(q.edns_size, DNS_EDNS_MAX);
}

static struct b4_net_entry *entries(const char *const *texts, size_t n)
{
        struct b4_net_entry *l = calloc(n, sizeof(*l));
        const char *why;

        assert_non_null(l);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(net_entry_parse(texts[i], &l[i], &why), 0);
        return l;
}

static void test_netd_policy_decisions(void **state)
{
        static const char *const texts[] = { "api.example.com:443", "*.cdn.example",
                                             "10.1.0.0/16",         "169.254.0.0/16",
                                             "0.0.0.0/0",           "api.example.com:8000-8010" };
        struct b4_net_entry *l = entries(texts, ELEMENTSOF(texts));
        struct netd_policy p = { .mode = B4_NETWORK_DENY,
                                 .entries = l,
                                 .n = ELEMENTSOF(texts),
                                 .pin_floor_s = 30,
                                 .pin_cap_s = 3600 };
        struct dns_query q = query_for("api.example.com", DNS_T_A);
        uint16_t lo[4], hi[4];

        assert_int_equal(netd_query_verdict(&p, &q), NETD_FORWARD);
        q.qtype = DNS_T_AAAA;
        assert_int_equal(netd_query_verdict(&p, &q), NETD_NODATA);
        q.qtype = 255; /* ANY */
        assert_int_equal(netd_query_verdict(&p, &q), NETD_NOTIMP);
        q = query_for("cdn.example", DNS_T_A);
        assert_int_equal(netd_query_verdict(&p, &q), NETD_NXDOMAIN); /* the apex */
        q = query_for("a.b.cdn.example", DNS_T_A);
        assert_int_equal(netd_query_verdict(&p, &q), NETD_FORWARD);
        assert_false(netd_addr_refused(&p, (uint8_t[]){ 10, 1, 2, 3 })); /* opened */
        assert_true(netd_addr_refused(&p, (uint8_t[]){ 10, 2, 0, 1 }));  /* 0/0 does not */
        assert_true(netd_addr_refused(&p, (uint8_t[]){ 127, 0, 0, 1 }));
        assert_false(netd_addr_refused(&p, (uint8_t[]){ 169, 254, 1, 1 })); /* inside 169.254/16 */
        assert_true(netd_addr_refused(&p, (uint8_t[]){ 169, 254, 169, 254 })); /* not exact */
        assert_false(netd_addr_refused(&p, (uint8_t[]){ 192, 0, 2, 10 }));
        assert_int_equal(netd_pin_life(&p, 5), 30);
        assert_int_equal(netd_pin_life(&p, 86400), 3600);
        assert_int_equal(netd_pin_life(&p, 300), 300);
        assert_int_equal(netd_name_ports(&p, "api.example.com", lo, hi, 4), 2);
        assert_int_equal(lo[0], 443);
        assert_int_equal(lo[1], 8000);
        assert_int_equal(hi[1], 8010);
        assert_int_equal(netd_name_ports(&p, "x.cdn.example", lo, hi, 4), 0); /* every port */
        p.mode = B4_NETWORK_ALLOW;                 /* the same list as a denylist */
        q = query_for("api.example.com", DNS_T_A); /* asked upstream for the drop set only */
        assert_int_equal(netd_query_verdict(&p, &q), NETD_DENIED);
        q.qtype = DNS_T_TXT; /* nothing to drop: not asked upstream */
        assert_int_equal(netd_query_verdict(&p, &q), NETD_NXDOMAIN);
        q = query_for("other.example", DNS_T_A);
        assert_int_equal(netd_query_verdict(&p, &q), NETD_FORWARD);
        assert_false(netd_addr_refused(&p, (uint8_t[]){ 10, 2, 0, 1 }));
        b4_net_entries_free(l, ELEMENTSOF(texts));
}

static void test_netd_metadata_exact(void **state)
{
        static const char *const texts[] = { "169.254.169.254" };
        struct b4_net_entry *l = entries(texts, 1);
        struct netd_policy p = { .mode = B4_NETWORK_DENY, .entries = l, .n = 1 };

        assert_false(netd_addr_refused(&p, (uint8_t[]){ 169, 254, 169, 254 }));
        assert_true(netd_addr_refused(&p, (uint8_t[]){ 169, 254, 170, 2 }));
        b4_net_entries_free(l, 1);
}

struct prefixes {
        uint32_t net[512];
        unsigned prefix[512];
        size_t n;
};

static void collect(const uint8_t net[4], unsigned prefix, void *data)
{
        struct prefixes *o = data;

        assert_true(o->n < ELEMENTSOF(o->net));
        o->net[o->n] =
                (uint32_t)net[0] << 24 | (uint32_t)net[1] << 16 | (uint32_t)net[2] << 8 | net[3];
        o->prefix[o->n++] = prefix;
}

static bool covers(const struct prefixes *o, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
        uint32_t v = (uint32_t)a << 24 | (uint32_t)b << 16 | (uint32_t)c << 8 | d;

        for (size_t i = 0; i < o->n; i++)
                if (o->prefix[i] == 0 ||
                    (v >> (32 - o->prefix[i])) == (o->net[i] >> (32 - o->prefix[i])))
                        return true;
        return false;
}

static struct prefixes compile(const char *text)
{
        struct b4_net_entry e;
        struct prefixes o = { .n = 0 };
        const char *why;

        assert_int_equal(net_entry_parse(text, &e, &why), 0);
        netpolicy_cidr4(&e, collect, &o);
        net_entry_release(&e);
        return o;
}

/* An allowlist CIDR opens a special range only when it lies inside it; metadata only exactly. */
static void test_netpolicy_cidr4_special_ranges(void **state)
{
        struct prefixes o = compile("0.0.0.0/0");

        assert_true(covers(&o, 8, 8, 8, 8));
        assert_true(covers(&o, 192, 0, 2, 10));
        assert_true(covers(&o, 172, 32, 0, 1));
        assert_false(covers(&o, 10, 1, 2, 3));
        assert_false(covers(&o, 127, 0, 0, 1));
        assert_false(covers(&o, 169, 254, 169, 254));
        assert_false(covers(&o, 172, 16, 0, 1));
        assert_false(covers(&o, 224, 0, 0, 1));
        o = compile("10.1.0.0/16");
        assert_int_equal(o.n, 1);
        assert_int_equal(o.prefix[0], 16);
        o = compile("169.254.0.0/16");
        assert_true(covers(&o, 169, 254, 1, 1));
        assert_false(covers(&o, 169, 254, 169, 254));
        assert_false(covers(&o, 169, 254, 170, 2));
        o = compile("169.254.169.254");
        assert_int_equal(o.n, 1);
        assert_true(covers(&o, 169, 254, 169, 254));
        o = compile("198.51.100.0/24");
        assert_int_equal(o.n, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dns_query_parse_cases),
                cmocka_unit_test(test_dns_answer_parse_cname_chain),
                cmocka_unit_test(test_dns_answer_parse_checks),
                cmocka_unit_test(test_dns_reply_build_caps),
                cmocka_unit_test(test_dns_edns),
                cmocka_unit_test(test_netd_policy_decisions),
                cmocka_unit_test(test_netd_metadata_exact),
                cmocka_unit_test(test_netpolicy_cidr4_special_ranges),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
