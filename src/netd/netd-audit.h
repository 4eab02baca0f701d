/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box-netd's audit of its thread (docs/native.md §Audit): a bounded ring of the last
 * NETD_AUDIT_EVENTS DNS events with running totals, and the document netd serves on its
 * audit socket: those events, plus the thread's per-destination counters (set acct4) and
 * denials (set deny4) read from the kernel at that moment. Thread-safe (one lock).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/policy.h"

#include "dns-msg.h"

#define NETD_AUDIT_EVENTS  256  /* DNS events kept; older ones are dropped, counted */
#define NETD_AUDIT_ADDRS   8    /* answer addresses kept per event (more: "moreAnswers") */
#define NETD_AUDIT_DESTS   1024 /* destinations and denials listed (more: "truncated") */
#define NETD_AUDIT_DOC_MAX (1u << 20)

struct netd_event {
        int64_t time_ms; /* wall clock */
        char name[B4_NET_NAME_MAX + 1];
        uint16_t qtype;
        const char *verdict; /* static */
        bool admitted, more_addrs;
        uint8_t n_addrs;
        uint8_t addrs[NETD_AUDIT_ADDRS][4];
        uint32_t pin_s;
};

struct netd_audit {
        pthread_mutex_t lock;
        struct netd_event ring[NETD_AUDIT_EVENTS];
        uint64_t events; /* recorded ever; the ring holds the last min(events, capacity) */
        uint64_t admitted, refused, failed, dropped;
};

/* One counted key of acct4 / deny4 for this thread. */
struct netd_counted {
        uint8_t addr[4];
        uint8_t proto;
        uint16_t port;
        uint64_t packets, bytes;
};

void netd_audit_init(struct netd_audit *a);

/* netd_audit_record() - append an event (@admitted counts as admitted, @failed as failed,
 * else refused); @ans's A records are its answers (NULL for none). */
void netd_audit_record(struct netd_audit *a,
                       const struct dns_query *q,
                       const char *verdict,
                       bool admitted,
                       bool failed,
                       const struct dns_answer *ans,
                       uint32_t pin_s);

/* netd_audit_dropped() - a query dropped because every worker was busy. */
void netd_audit_dropped(struct netd_audit *a);

/*
 * netd_audit_render() - the audit document (JSON, docs/native.md §Audit) into *@ret (heap,
 * NUL-terminated, at most NETD_AUDIT_DOC_MAX): @mode, the events, the totals and the
 * counted destinations @dest (@n_dest, @dest_more when some were left out) and denials.
 * Return: the length, or -ENOMEM.
 */
int netd_audit_render(struct netd_audit *a,
                      enum b4_network_mode mode,
                      const struct netd_counted *dest,
                      size_t n_dest,
                      bool dest_more,
                      const struct netd_counted *deny,
                      size_t n_deny,
                      bool deny_more,
                      char **ret);
