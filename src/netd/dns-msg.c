/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DNS wire format for b4box-netd. Reading follows compression pointers only backwards (each
 * pointer must point before the one being read, so a name ends), accepts labels of letters,
 * digits, '-' and '_' only (anything else cannot be on an admitted chain) and lowercases
 * them. Writing never compresses.
 */

#include "dns-msg.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "base/macro.h"

struct rd {
        const uint8_t *msg;
        size_t len, off;
};

static int get16(struct rd *r, uint16_t *ret)
{
        if (r->off > r->len || r->len - r->off < 2)
                return -EBADMSG;
        *ret = (uint16_t)(r->msg[r->off] << 8 | r->msg[r->off + 1]);
        r->off += 2;
        return 0;
}

static int get32(struct rd *r, uint32_t *ret)
{
        uint16_t hi, lo;

        if (get16(r, &hi) < 0 || get16(r, &lo) < 0)
                return -EBADMSG;
        *ret = (uint32_t)hi << 16 | lo;
        return 0;
}

static bool label_char_ok(uint8_t c)
{
        return isalnum(c) || c == '-' || c == '_';
}

/* Append one label of @n bytes at @p to @out (length *@olen). */
static int put_label(const uint8_t *p, size_t n, char *out, size_t *olen)
{
        if (*olen + (*olen ? 1 : 0) + n > B4_NET_NAME_MAX)
                return -EBADMSG;
        if (*olen)
                out[(*olen)++] = '.';
        for (size_t i = 0; i < n; i++) {
                if (!label_char_ok(p[i]))
                        return -EBADMSG;
                out[(*olen)++] = (char)tolower(p[i]);
        }
        out[*olen] = '\0';
        return 0;
}

/* Read a (possibly compressed) name at r->off into @out; r->off moves past it. */
static int get_name(struct rd *r, char *out)
{
        size_t pos = r->off, olen = 0, end = 0;
        bool jumped = false;

        out[0] = '\0';
        for (;;) {
                uint8_t n;

                if (pos >= r->len)
                        return -EBADMSG;
                n = r->msg[pos];
                if ((n & 0xc0) == 0xc0) {
                        size_t to;

                        if (pos + 1 >= r->len)
                                return -EBADMSG;
                        to = (size_t)(n & 0x3f) << 8 | r->msg[pos + 1];
                        if (to >= pos)
                                return -EBADMSG;
                        if (!jumped)
                                end = pos + 2;
                        jumped = true;
                        pos = to;
                        continue;
                }
                if (n & 0xc0)
                        return -EBADMSG;
                if (n == 0)
                        break;
                if (pos + 1 + n > r->len || put_label(r->msg + pos + 1, n, out, &olen) < 0)
                        return -EBADMSG;
                pos += 1 + (size_t)n;
        }
        r->off = jumped ? end : pos + 1;
        return 0;
}

/* Skip a name without decoding it (any bytes in labels): for records netd drops. */
static int skip_name(struct rd *r)
{
        for (;;) {
                uint8_t n;

                if (r->off >= r->len)
                        return -EBADMSG;
                n = r->msg[r->off];
                if ((n & 0xc0) == 0xc0)
                        return r->off + 2 > r->len ? -EBADMSG : (r->off += 2, 0);
                if (n & 0xc0)
                        return -EBADMSG;
                r->off += 1 + (size_t)n;
                if (n == 0)
                        return r->off > r->len ? -EBADMSG : 0;
        }
}

/* The one additional record of a query: an OPT owned by the root; its class is the size. */
static int get_opt(struct rd *r, uint16_t *ret_size)
{
        uint16_t type, size, rdlen;
        uint32_t ttl;

        if (r->off >= r->len || r->msg[r->off] != 0)
                return -EBADMSG;
        r->off++;
        if (get16(r, &type) < 0 || type != DNS_T_OPT || get16(r, &size) < 0 || get32(r, &ttl) < 0 ||
            get16(r, &rdlen) < 0 || r->len - r->off < rdlen)
                return -EBADMSG;
        r->off += rdlen;
        *ret_size = size < DNS_UDP_MAX ? DNS_UDP_MAX : size;
        return 0;
}

int dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *ret)
{
        struct rd r = { .msg = msg, .len = len };
        uint16_t qd, an, ns, ar;
        struct dns_query q = { 0 };

        if (len < DNS_HEADER)
                return -EPROTO;
        (void)get16(&r, &q.id);
        (void)get16(&r, &q.flags);
        if (q.flags & DNS_FLAG_QR)
                return -EPROTO;
        ret->id = q.id;
        ret->flags = q.flags;
        if (DNS_OPCODE(q.flags) != 0)
                return -EOPNOTSUPP;
        (void)get16(&r, &qd);
        (void)get16(&r, &an);
        (void)get16(&r, &ns);
        (void)get16(&r, &ar);
        if (qd != 1 || an != 0 || ns != 0 || ar > 1 || get_name(&r, q.name) < 0 ||
            get16(&r, &q.qtype) < 0 || get16(&r, &q.qclass) < 0 ||
            (ar == 1 && get_opt(&r, &q.edns_size) < 0))
                return -EBADMSG;
        *ret = q;
        return 0;
}

/* The fixed rdata part of @type that precedes a name (MX: preference, SRV: 3 × 16 bits). */
static size_t fixed_len(uint16_t type)
{
        return type == DNS_T_MX ? 2 : type == DNS_T_SRV ? 6 : 0;
}

/* Decode the rdata of a kept record; r->off is at the rdata, @end is past it. */
static int get_rdata(struct rd *r, size_t end, struct dns_rr *rr)
{
        size_t fixed = fixed_len(rr->type);
        struct rd sub = { .msg = r->msg, .len = end, .off = r->off };

        rr->target[0] = '\0';
        rr->data_len = 0;
        switch (rr->type) {
        case DNS_T_A:
        case DNS_T_AAAA:
        case DNS_T_TXT:
                if ((rr->type == DNS_T_A && end - r->off != 4) ||
                    (rr->type == DNS_T_AAAA && end - r->off != 16) || end - r->off > DNS_MAX_RDATA)
                        return -EBADMSG;
                rr->data_len = (uint16_t)(end - r->off);
                memcpy(rr->data, r->msg + r->off, rr->data_len);
                return 0;
        case DNS_T_CNAME:
        case DNS_T_MX:
        case DNS_T_SRV:
                if (end - r->off < fixed)
                        return -EBADMSG;
                memcpy(rr->data, r->msg + r->off, fixed);
                rr->data_len = (uint16_t)fixed;
                sub.off += fixed;
                /* names may point anywhere earlier in the message, but must end in the rdata */
                sub.len = r->len;
                if (get_name(&sub, rr->target) < 0 || sub.off != end)
                        return -EBADMSG;
                return 0;
        default:
                return -EBADMSG;
        }
}

struct raw_rr {
        size_t owner_off; /* where the owner name starts */
        uint16_t type, class;
        uint32_t ttl;
        size_t rdata_off, rdata_len;
};

static int get_rr(struct rd *r, struct raw_rr *ret)
{
        uint16_t rdlen;

        ret->owner_off = r->off;
        if (skip_name(r) < 0 || get16(r, &ret->type) < 0 || get16(r, &ret->class) < 0 ||
            get32(r, &ret->ttl) < 0 || get16(r, &rdlen) < 0 || r->len - r->off < rdlen)
                return -EBADMSG;
        ret->rdata_off = r->off;
        ret->rdata_len = rdlen;
        r->off += rdlen;
        return 0;
}

/* Whether record @raw is on the chain at name @cur for question type @qtype; decode it. */
static int take_rr(
        struct rd *r, const struct raw_rr *raw, const char *cur, uint16_t qtype, struct dns_rr *rr)
{
        struct rd at = { .msg = r->msg, .len = r->len, .off = raw->owner_off };

        if (raw->class != DNS_CLASS_IN || (raw->type != qtype && raw->type != DNS_T_CNAME))
                return 0;
        if (get_name(&at, rr->owner) < 0)
                return 0; /* an owner netd cannot read is no chain name */
        if (strcmp(rr->owner, cur) != 0)
                return 0;
        rr->type = raw->type;
        rr->ttl = raw->ttl > 0x7fffffffu ? 0 : raw->ttl; /* RFC 2181 §8 */
        at.off = raw->rdata_off;
        if (get_rdata(&at, raw->rdata_off + raw->rdata_len, rr) < 0)
                return -EBADMSG;
        return 1;
}

static int check_question(struct rd *r, const struct dns_query *q)
{
        char name[B4_NET_NAME_MAX + 1];
        uint16_t type, class;

        if (get_name(r, name) < 0 || get16(r, &type) < 0 || get16(r, &class) < 0)
                return -EPROTO;
        return strcmp(name, q->name) == 0 && type == q->qtype && class == q->qclass ? 0 : -EPROTO;
}

/* Follow the chain through @n_an records starting at r->off. */
static int walk_chain(struct rd *r,
                      uint16_t n_an,
                      const struct dns_query *q,
                      struct dns_answer *ans)
{
        struct raw_rr raw[DNS_MAX_RR * 2];
        const char *cur = q->name;
        size_t n_raw = 0;

        for (uint16_t i = 0; i < n_an; i++) {
                struct raw_rr x;

                if (get_rr(r, &x) < 0)
                        return -EBADMSG;
                if (n_raw < ELEMENTSOF(raw))
                        raw[n_raw++] = x;
        }
        for (unsigned hop = 0; hop <= DNS_MAX_HOPS; hop++) {
                const char *next = NULL;

                for (size_t i = 0; i < n_raw && ans->n < DNS_MAX_RR; i++) {
                        struct dns_rr *rr = &ans->rr[ans->n];
                        int k = take_rr(r, &raw[i], cur, q->qtype, rr);

                        if (k < 0)
                                return k;
                        if (k == 0)
                                continue;
                        ans->n++;
                        if (rr->type == DNS_T_CNAME && q->qtype != DNS_T_CNAME) {
                                next = rr->target;
                                break; /* one CNAME per owner (RFC 1034 §3.6.2) */
                        }
                }
                if (!next)
                        return 0;
                cur = next;
        }
        return 0; /* chain longer than DNS_MAX_HOPS: the tail is dropped */
}

int dns_answer_parse(const uint8_t *msg,
                     size_t len,
                     const struct dns_query *q,
                     struct dns_answer *ret)
{
        struct rd r = { .msg = msg, .len = len };
        uint16_t id, flags, qd, an, ns, ar;

        if (len < DNS_HEADER)
                return -EPROTO;
        (void)get16(&r, &id);
        (void)get16(&r, &flags);
        (void)get16(&r, &qd);
        (void)get16(&r, &an);
        (void)get16(&r, &ns);
        (void)get16(&r, &ar);
        if (id != q->id || !(flags & DNS_FLAG_QR) || DNS_OPCODE(flags) != 0 || qd != 1 ||
            check_question(&r, q) < 0)
                return -EPROTO;
        ret->rcode = DNS_RCODE(flags);
        ret->n = 0;
        if (flags & DNS_FLAG_TC)
                return -EMSGSIZE;
        return walk_chain(&r, an, q, ret);
}

struct wr {
        uint8_t *out;
        size_t cap, off;
};

static int put16(struct wr *w, uint16_t v)
{
        if (w->cap - w->off < 2)
                return -ENOBUFS;
        w->out[w->off++] = (uint8_t)(v >> 8);
        w->out[w->off++] = (uint8_t)v;
        return 0;
}

static int put32(struct wr *w, uint32_t v)
{
        return put16(w, (uint16_t)(v >> 16)) < 0 ? -ENOBUFS : put16(w, (uint16_t)v);
}

static int put_bytes(struct wr *w, const void *p, size_t n)
{
        if (w->cap - w->off < n)
                return -ENOBUFS;
        memcpy(w->out + w->off, p, n);
        w->off += n;
        return 0;
}

/* Encode the text name @s (validated labels, "" = root). */
static int put_name(struct wr *w, const char *s)
{
        while (*s) {
                const char *dot = strchr(s, '.');
                size_t n = dot ? (size_t)(dot - s) : strlen(s);
                uint8_t b = (uint8_t)n;

                if (n == 0 || n > 63 || put_bytes(w, &b, 1) < 0 || put_bytes(w, s, n) < 0)
                        return -ENOBUFS;
                s += n + (dot ? 1 : 0);
        }
        return put_bytes(w, "", 1);
}

static int put_rr(struct wr *w, const struct dns_rr *rr, uint32_t ttl_cap)
{
        size_t len_at;
        int r;

        r = put_name(w, rr->owner);
        if (r >= 0)
                r = put16(w, rr->type);
        if (r >= 0)
                r = put16(w, DNS_CLASS_IN);
        if (r >= 0)
                r = put32(w, rr->ttl < ttl_cap ? rr->ttl : ttl_cap);
        len_at = w->off;
        if (r >= 0)
                r = put16(w, 0);
        if (r >= 0)
                r = put_bytes(w, rr->data, rr->data_len);
        if (r >= 0 && (rr->type == DNS_T_CNAME || fixed_len(rr->type) > 0))
                r = put_name(w, rr->target);
        if (r < 0)
                return r;
        w->out[len_at] = (uint8_t)((w->off - len_at - 2) >> 8);
        w->out[len_at + 1] = (uint8_t)(w->off - len_at - 2);
        return 0;
}

static int put_header(struct wr *w, const struct dns_query *q, uint16_t flags, uint16_t n_an)
{
        int r = put16(w, q->id);

        if (r >= 0)
                r = put16(w, flags);
        if (r >= 0)
                r = put16(w, 1);
        if (r >= 0)
                r = put16(w, n_an);
        if (r >= 0)
                r = put16(w, 0);
        if (r >= 0)
                r = put16(w, q->edns_size ? 1 : 0);
        if (r >= 0)
                r = put_name(w, q->name);
        if (r >= 0)
                r = put16(w, q->qtype);
        if (r >= 0)
                r = put16(w, q->qclass);
        return r;
}

/* The OPT record netd sends: root owner, DNS_EDNS_MAX, no extended rcode, no option. */
static int put_opt(struct wr *w)
{
        static const uint8_t opt[DNS_OPT_LEN] = {
                0, DNS_T_OPT >> 8, DNS_T_OPT & 0xff, DNS_EDNS_MAX >> 8, DNS_EDNS_MAX & 0xff,
        };

        return put_bytes(w, opt, sizeof(opt));
}

int dns_reply_build(const struct dns_query *q,
                    uint16_t rcode,
                    const struct dns_answer *ans,
                    uint32_t ttl_cap,
                    uint8_t *out,
                    size_t cap)
{
        uint16_t flags =
                (uint16_t)(DNS_FLAG_QR | (q->flags & DNS_FLAG_RD) | DNS_FLAG_RA | (rcode & 0xfu));
        size_t n = ans ? ans->n : 0, opt = q->edns_size ? DNS_OPT_LEN : 0;
        struct wr w = { .out = out, .cap = cap > DNS_MSG_MAX ? DNS_MSG_MAX : cap };

        if (w.cap < opt)
                return -ENOBUFS;
        w.cap -= opt; /* the OPT record's room is kept whatever the answers take */
        if (put_header(&w, q, flags, (uint16_t)n) < 0)
                return -ENOBUFS;
        for (size_t i = 0; i < n; i++)
                if (put_rr(&w, &ans->rr[i], ttl_cap) < 0) {
                        w.off = 0;
                        if (put_header(&w, q, flags | DNS_FLAG_TC, 0) < 0)
                                return -ENOBUFS;
                        break;
                }
        w.cap += opt;
        if (opt && put_opt(&w) < 0)
                return -ENOBUFS;
        return (int)w.off;
}

size_t dns_udp_reply_cap(const struct dns_query *q)
{
        if (q->edns_size == 0)
                return DNS_UDP_MAX;
        return q->edns_size > DNS_EDNS_MAX ? DNS_EDNS_MAX : q->edns_size;
}

int dns_query_build(const struct dns_query *q, uint8_t *out, size_t cap)
{
        struct wr w = { .out = out, .cap = cap };
        int r = put16(&w, q->id);

        if (r >= 0)
                r = put16(&w, q->flags & DNS_FLAG_RD);
        if (r >= 0)
                r = put16(&w, 1);
        if (r >= 0)
                r = put32(&w, 0);
        if (r >= 0)
                r = put16(&w, q->edns_size ? 1 : 0);
        if (r >= 0)
                r = put_name(&w, q->name);
        if (r >= 0)
                r = put16(&w, q->qtype);
        if (r >= 0)
                r = put16(&w, q->qclass);
        if (r >= 0 && q->edns_size)
                r = put_opt(&w);
        return r < 0 ? -ENOBUFS : (int)w.off;
}
