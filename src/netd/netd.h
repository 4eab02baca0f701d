/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The state b4box-netd's files share (docs/native.md §Network). One process per listed
 * thread: the main thread receives (netd-main.c) and hands each UDP query, TCP connection
 * and audit reader to a bounded pool of workers (netd-serve.c), each of which may wait on
 * one upstream at a time (netd-upstream.c). What the workers share is below: read-only after
 * setup, but for the pinner (pin_lock) and the audit (netd-audit.c, its own lock).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "b4box/policy.h"

#include "dns-msg.h"
#include "netd-audit.h"
#include "netd-pin.h"
#include "netd-policy.h"

#define NETD_WORKERS          8    /* upstream queries in flight at most */
#define NETD_TCP_WORKERS      4    /* workers a TCP client may hold at once (UDP keeps the rest) */
#define NETD_QUEUE            64   /* jobs waiting for a worker; more are dropped and counted */
#define NETD_UPSTREAM_TIMEOUT 2000 /* ms for one upstream try, UDP or TCP */
#define NETD_TCP_TIMEOUT_MS   2000 /* a sandbox's TCP client: each read and write */
#define NETD_TCP_QUERIES      16   /* queries on one TCP connection */
#define NETD_PIN_SLACK_S      5
#define NETD_UDP_QUERY_MAX    4096 /* a UDP query longer than this is cut (and FORMERR) */

struct netd_upstream {
        struct sockaddr_storage sa;
        socklen_t len;
};

struct netd {
        struct netd_policy policy;
        struct b4_net_entry *entries;
        unsigned ifindex;
        const char *table;
        struct netd_upstream up[B4_NET_MAX_UPSTREAM];
        size_t n_up;
        pthread_mutex_t pin_lock; /* over pin */
        struct pinner pin;
        pthread_mutex_t reader_lock; /* over reader: the audit's set dumps */
        struct pinner reader;
        struct netd_audit audit;
        int udp_fd, tcp_fd, audit_fd;
};

/*
 * netd_resolve() - ask @d's upstreams for @q in turn (UDP with EDNS, TCP after a truncated
 * answer, NETD_UPSTREAM_TIMEOUT each) until one answers other than SERVFAIL or REFUSED.
 * Thread-safe: it uses its own sockets and @buf (DNS_MSG_MAX bytes). Return: 0 with @ans,
 * -EBADMSG (a malformed answer), or another negative errno (no upstream answered).
 */
int netd_resolve(const struct netd *d,
                 const struct dns_query *q,
                 uint8_t *buf,
                 struct dns_answer *ans);

/* netd_recv_tcp_msg() - one length-prefixed DNS message from the stream @fd (its own
 * timeouts apply). Return: 0 with *@ret_len, -EIO (closed, timed out, longer than @cap). */
int netd_recv_tcp_msg(int fd, uint8_t *buf, size_t cap, size_t *ret_len);

#define NETD_NEEDS_UPSTREAM (-2)

/*
 * netd_handle() - the reply to one query message @msg into @out (@cap bytes; over @udp, at
 * most what the query's EDNS size allows: dns_udp_reply_cap()): decide, resolve, refuse
 * rebinding, pin (before the reply exists), record the outcome in the audit and the log.
 * With @local_only, only a query netd answers without asking upstream is answered (the main
 * thread's: no worker for an unlisted name, however many come); the others return
 * NETD_NEEDS_UPSTREAM, untouched. Thread-safe. Return: the reply's length, -1 for none (not
 * a query), or NETD_NEEDS_UPSTREAM.
 */
int netd_handle(struct netd *d,
                const uint8_t *msg,
                size_t len,
                bool udp,
                bool local_only,
                uint8_t *out,
                size_t cap);

/*
 * netd_prefetch_denied() - allow mode: resolve the denylisted name @name (exact) and pin its
 * addresses into dpin4, so they are dropped before the sandbox ever asks. Return: the
 * seconds until it should be done again (the pin's life; pin_floor_s after a failure).
 */
uint32_t netd_prefetch_denied(struct netd *d, const char *name);

/* netd_serve_tcp() - answer the queries of one accepted TCP client @fd, then close it. */
void netd_serve_tcp(struct netd *d, int fd);

/* netd_serve_audit() - write the audit document to one accepted reader @fd, then close it. */
void netd_serve_audit(struct netd *d, int fd);

/* netd_seccomp() - allow, for every thread of the process, only the system calls serving
 * needs (netd-seccomp.c); anything else kills the process. Return: 0 or a negative errno. */
int netd_seccomp(void);
