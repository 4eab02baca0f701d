/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * DNS messages for b4box-netd (RFC 1035): parse a sandbox's query, parse the upstream
 * answer and keep only the chain that starts at the question (CNAMEs followed), and build
 * the reply netd sends. Pure functions over byte buffers: no I/O, no allocation; the
 * fuzz-dns target drives all three.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/policy.h"

#define DNS_HEADER    12
#define DNS_UDP_MAX   512  /* a UDP message without EDNS (RFC 1035 §4.2.1) */
#define DNS_EDNS_MAX  1232 /* netd's EDNS payload size: what it advertises and answers in */
#define DNS_OPT_LEN   11   /* an OPT record with no options */
#define DNS_MSG_MAX   65535
#define DNS_MAX_RR    32 /* answer records kept from one upstream answer */
#define DNS_MAX_HOPS  8  /* CNAMEs followed from the question */
#define DNS_MAX_RDATA 1024
#define DNS_FLAG_QR   0x8000u
#define DNS_FLAG_TC   0x0200u
#define DNS_FLAG_RD   0x0100u
#define DNS_FLAG_RA   0x0080u
#define DNS_OPCODE(f) (((f) >> 11) & 0xfu)
#define DNS_RCODE(f)  ((f)&0xfu)
#define DNS_CLASS_IN  1

enum dns_type {
        DNS_T_A = 1,
        DNS_T_CNAME = 5,
        DNS_T_MX = 15,
        DNS_T_TXT = 16,
        DNS_T_AAAA = 28,
        DNS_T_SRV = 33,
        DNS_T_OPT = 41,
        DNS_T_SVCB = 64,
        DNS_T_HTTPS = 65,
};

enum dns_rcode {
        DNS_RC_NOERROR = 0,
        DNS_RC_FORMERR = 1,
        DNS_RC_SERVFAIL = 2,
        DNS_RC_NXDOMAIN = 3,
        DNS_RC_NOTIMP = 4,
        DNS_RC_REFUSED = 5,
};

struct dns_query {
        uint16_t id;
        uint16_t flags;                 /* as received (RD is echoed) */
        char name[B4_NET_NAME_MAX + 1]; /* lowercase, no final dot; "" is the root */
        uint16_t qtype;
        uint16_t qclass;
        uint16_t edns_size; /* 0: no EDNS OPT record; else its payload size, at least 512 */
};

/* One answer record on the chain. Names are lowercase text; rdata is what netd re-encodes. */
struct dns_rr {
        uint16_t type;
        uint32_t ttl;
        char owner[B4_NET_NAME_MAX + 1];
        /* CNAME: the target; MX, SRV: the exchange/target after the fixed part */
        char target[B4_NET_NAME_MAX + 1];
        uint8_t data[DNS_MAX_RDATA]; /* A, AAAA, TXT: rdata; MX, SRV: the fixed part */
        uint16_t data_len;
};

struct dns_answer {
        uint16_t rcode;
        size_t n;
        struct dns_rr rr[DNS_MAX_RR];
};

/*
 * dns_query_parse() - a query as a sandbox sends it: one question and at most one additional
 * record, an EDNS OPT (RFC 6891: root owner, its class the payload size, a size under 512
 * read as 512) whose options are ignored. Return: 0; -EPROTO when fewer than 12 bytes or QR
 * set (drop it: no reply); -EOPNOTSUPP when the opcode is not QUERY (NOTIMP); -EBADMSG
 * otherwise, when it is not exactly one well-formed question, or its additional record is
 * not an OPT (FORMERR). On -EOPNOTSUPP and -EBADMSG, ret->id and ret->flags are set (for
 * the error reply).
 */
int dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *ret);

/*
 * dns_answer_parse() - an upstream answer to @q: the same ID and question (else -EPROTO),
 * QR set. Keeps the answer records on the chain from the question: CNAMEs from q->name (at
 * most DNS_MAX_HOPS) and records of q->qtype owned by a chain name; drops authority,
 * additional and every other record. Return: 0 (ret->rcode is the upstream's), -EPROTO
 * (not an answer to @q: keep waiting), -EMSGSIZE (truncated: ask again over TCP), -EBADMSG
 * (malformed: answer SERVFAIL).
 */
int dns_answer_parse(const uint8_t *msg,
                     size_t len,
                     const struct dns_query *q,
                     struct dns_answer *ret);

/*
 * dns_reply_build() - netd's reply to @q into @out (@cap bytes, at most DNS_MSG_MAX):
 * header (ID echoed, QR, RD echoed, RA, @rcode), the question, then @ans's records (NULL for
 * none) with TTLs at most @ttl_cap, names uncompressed, then an OPT record advertising
 * DNS_EDNS_MAX when @q had one. A reply that does not fit drops every answer record and
 * sets TC (the client asks again over TCP). Return: the length, or -ENOBUFS when not even
 * the question fits.
 */
int dns_reply_build(const struct dns_query *q,
                    uint16_t rcode,
                    const struct dns_answer *ans,
                    uint32_t ttl_cap,
                    uint8_t *out,
                    size_t cap);

/* dns_udp_reply_cap() - how large a UDP reply to @q may be: 512 without EDNS, else its
 * payload size clamped to [512, DNS_EDNS_MAX]. */
size_t dns_udp_reply_cap(const struct dns_query *q);

/* dns_query_build() - a query for @q (ID, RD from q->flags; an OPT record advertising
 * DNS_EDNS_MAX when q->edns_size) into @out. Return: length or -ENOBUFS. */
int dns_query_build(const struct dns_query *q, uint8_t *out, size_t cap);
