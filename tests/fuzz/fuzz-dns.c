/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: DNS messages in b4box-netd (src/netd/dns-msg.c). Trust boundary: queries come
 * from the sandbox (hostile), answers from the upstream resolver (anything on the path).
 *
 * The input is used twice: as a query (dns_query_parse(), then netd's reply to it must parse
 * back as an answer to the same question, within the UDP size its EDNS record allows, and
 * end in netd's OPT record when it had one), and as an upstream answer to a fixed question
 * for "a.example" (dns_answer_parse()): every record kept must be on the chain from the
 * question, the reply built from it must parse back to the same records, and the same reply
 * cut to a UDP size is either whole or TC with no record.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns-msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT DNS_MSG_MAX

static struct dns_answer ans, back;
static uint8_t out[DNS_MSG_MAX];

/* Each kept record is owned by the question or by an earlier CNAME's target. */
static void check_chain(const struct dns_query *q, const struct dns_answer *a)
{
        const char *cur = q->name;

        for (size_t i = 0; i < a->n; i++) {
                if (strcmp(a->rr[i].owner, cur) != 0)
                        abort();
                if (a->rr[i].type == DNS_T_CNAME && q->qtype != DNS_T_CNAME)
                        cur = a->rr[i].target;
                else if (a->rr[i].type != q->qtype)
                        abort();
        }
}

static void round_trip(const struct dns_query *q, const struct dns_answer *a)
{
        int len = dns_reply_build(q, DNS_RC_NOERROR, a, 60, out, sizeof(out));

        if (len < 0 || dns_answer_parse(out, (size_t)len, q, &back) != 0 || back.n != a->n)
                abort();
        for (size_t i = 0; i < a->n; i++)
                if (back.rr[i].type != a->rr[i].type || back.rr[i].ttl > 60 ||
                    strcmp(back.rr[i].owner, a->rr[i].owner) != 0 ||
                    strcmp(back.rr[i].target, a->rr[i].target) != 0 ||
                    back.rr[i].data_len != a->rr[i].data_len ||
                    memcmp(back.rr[i].data, a->rr[i].data, a->rr[i].data_len) != 0)
                        abort();
}

/* The reply at a UDP size (with and without EDNS): whole, or TC with no record. */
static void cut(struct dns_query *q, const struct dns_answer *a)
{
        for (int edns = 0; edns < 2; edns++) {
                size_t cap;
                int len;

                q->edns_size = edns ? DNS_EDNS_MAX : 0;
                cap = dns_udp_reply_cap(q);
                len = dns_reply_build(q, DNS_RC_NOERROR, a, 60, out, cap);
                if (len < 0 || (size_t)len > cap ||
                    dns_answer_parse(out, (size_t)len, q, &back) == -EBADMSG)
                        abort();
                if (out[2] & 0x02
                            ? (out[6] | out[7]) != 0
                            : dns_answer_parse(out, (size_t)len, q, &back) != 0 || back.n != a->n)
                        abort();
        }
        q->edns_size = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct dns_query q = { 0 }, fixed = { .id = 0x1234, .qtype = DNS_T_A, .qclass = 1 };
        int r;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        r = dns_query_parse(data, size, &q);
        if (r == 0) {
                size_t cap = dns_udp_reply_cap(&q);
                int len = dns_reply_build(&q, DNS_RC_NXDOMAIN, NULL, 0, out, cap);

                if (len < 0 || (size_t)len > cap || cap < DNS_UDP_MAX || cap > DNS_EDNS_MAX ||
                    dns_answer_parse(out, (size_t)len, &q, &back) != 0 ||
                    back.rcode != DNS_RC_NXDOMAIN || back.n != 0)
                        abort();
                if (q.edns_size &&
                    (len < DNS_HEADER + DNS_OPT_LEN || out[11] != 1 ||
                     out[len - DNS_OPT_LEN] != 0 || out[len - DNS_OPT_LEN + 2] != DNS_T_OPT))
                        abort();
        } else if (r != -EPROTO && r != -EBADMSG && r != -EOPNOTSUPP) {
                abort();
        }
        strcpy(fixed.name, "a.example");
        if (size >= 2)
                fixed.id = (uint16_t)(data[0] << 8 | data[1]);
        r = dns_answer_parse(data, size, &fixed, &ans);
        if (r == 0) {
                check_chain(&fixed, &ans);
                round_trip(&fixed, &ans);
                cut(&fixed, &ans);
        } else if (r != -EPROTO && r != -EBADMSG && r != -EMSGSIZE) {
                abort();
        }
        return 0;
}
