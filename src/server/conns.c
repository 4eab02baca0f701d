/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection tracking against slow and idle clients (audit M4). libmicrohttpd's own timeout
 * is an inactivity timeout, so a client sending a byte now and then would hold its
 * connection for ever. Here every connection carries an absolute deadline for the phase it
 * is in (its request headers, then its body); a watchdog thread shuts down the socket of a
 * connection past its deadline, and libmicrohttpd then sees end-of-file and closes it as it
 * does for any client that went away. While a handler runs, or a reply is being sent, there
 * is no deadline.
 *
 * Each client address may hold at most max_per_addr connections. Over that, the address's
 * oldest connection still waiting for its request headers is cut, not the new one: on a
 * loopback listener every client has the same address, so refusing the newest would let a
 * trickling client lock out a fresh /healthz; cutting the oldest idle one only churns the
 * trickler's own connections.
 *
 * Invariant: a record is in the list from libmicrohttpd's "started" notification to its
 * "closed" one, and the socket is closed only after "closed", so shutdown() under the lock
 * never touches a reused descriptor.
 */

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "base/time-util.h"
#include "server-internal.h"

#define WATCHDOG_TICK_MS 100

struct conn {
        struct conn *prev, *next;
        int fd;
        struct sockaddr_storage addr; /* the client; AF_UNIX clients all compare equal */
        uint64_t phase_us;            /* when the current phase began */
        uint64_t deadline_us;         /* 0 = none */
        bool awaiting_headers;        /* between requests, or reading headers */
        bool cut;                     /* shutdown() done; waiting for libmicrohttpd */
};

struct conns {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t watchdog;
        bool stop;
        struct conn *head;
        unsigned max_per_addr;
        uint64_t header_timeout_us;
};

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
        const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) == 0;
        return true;
}

/* Caller holds the lock. */
static void cut(struct conns *cs, struct conn *k)
{
        if (k->cut)
                return;
        (void)shutdown(k->fd, SHUT_RDWR);
        k->cut = true;
}

/* Caller holds the lock; @k is already in the list. Keeps @k's address at its cap. */
static void enforce_addr_cap(struct conns *cs, struct conn *k)
{
        struct conn *oldest = NULL;
        unsigned n = 0;

        for (struct conn *o = cs->head; o; o = o->next) {
                if (o->cut || !same_addr(&o->addr, &k->addr))
                        continue;
                n++;
                if (o->awaiting_headers && (!oldest || o->phase_us < oldest->phase_us))
                        oldest = o;
        }
        if (n > cs->max_per_addr)
                cut(cs, oldest ? oldest : k);
}

static void *watchdog_main(void *arg)
{
        struct conns *cs = arg;

        (void)pthread_mutex_lock(&cs->lock);
        while (!cs->stop) {
                uint64_t now = now_usec();

                for (struct conn *k = cs->head; k; k = k->next)
                        if (k->deadline_us && now >= k->deadline_us)
                                cut(cs, k);
                (void)cond_wait_until_ms(&cs->wake, &cs->lock, now / 1000u + WATCHDOG_TICK_MS);
        }
        (void)pthread_mutex_unlock(&cs->lock);
        return NULL;
}

int conns_new(unsigned max_per_addr, uint64_t header_timeout_ms, struct conns **ret)
{
        struct conns *cs = b4_calloc(1, sizeof(*cs));
        int r;

        if (!cs)
                return -ENOMEM;
        cs->max_per_addr = max_per_addr;
        cs->header_timeout_us = header_timeout_ms * 1000;
        (void)pthread_mutex_init(&cs->lock, NULL);
        (void)pthread_cond_init(&cs->wake, NULL);
        r = -pthread_create(&cs->watchdog, NULL, watchdog_main, cs);
        if (r < 0) {
                (void)pthread_cond_destroy(&cs->wake);
                (void)pthread_mutex_destroy(&cs->lock);
                free(cs);
                return r;
        }
        *ret = cs;
        return 0;
}

struct conns *conns_free(struct conns *cs)
{
        if (!cs)
                return NULL;
        (void)pthread_mutex_lock(&cs->lock);
        cs->stop = true;
        (void)pthread_cond_signal(&cs->wake);
        (void)pthread_mutex_unlock(&cs->lock);
        (void)pthread_join(cs->watchdog, NULL);
        while (cs->head) { /* only if libmicrohttpd did not notify every close */
                struct conn *k = cs->head;
                cs->head = k->next;
                free(k);
        }
        (void)pthread_cond_destroy(&cs->wake);
        (void)pthread_mutex_destroy(&cs->lock);
        free(cs);
        return NULL;
}

void conns_opened(struct conns *cs, struct MHD_Connection *mc, void **socket_context)
{
        const union MHD_ConnectionInfo *fd =
                MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ad =
                MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct conn *k = b4_calloc(1, sizeof(*k));

        *socket_context = k;
        if (!k || !fd)
                return; /* untracked: libmicrohttpd's inactivity timeout still applies */
        k->fd = fd->connect_fd;
        k->addr.ss_family = AF_UNIX;
        if (ad && ad->client_addr && ad->client_addr->sa_family == AF_INET)
                memcpy(&k->addr, ad->client_addr, sizeof(struct sockaddr_in));
        else if (ad && ad->client_addr && ad->client_addr->sa_family == AF_INET6)
                memcpy(&k->addr, ad->client_addr, sizeof(struct sockaddr_in6));
        (void)pthread_mutex_lock(&cs->lock);
        k->phase_us = now_usec();
        k->deadline_us = k->phase_us + cs->header_timeout_us;
        k->awaiting_headers = true;
        k->next = cs->head;
        if (cs->head)
                cs->head->prev = k;
        cs->head = k;
        enforce_addr_cap(cs, k);
        (void)pthread_mutex_unlock(&cs->lock);
}

void conns_closed(struct conns *cs, void **socket_context)
{
        struct conn *k = *socket_context;

        *socket_context = NULL;
        if (!k)
                return;
        (void)pthread_mutex_lock(&cs->lock);
        if (k->prev)
                k->prev->next = k->next;
        else if (cs->head == k)
                cs->head = k->next;
        if (k->next)
                k->next->prev = k->prev;
        (void)pthread_mutex_unlock(&cs->lock);
        free(k);
}

void conns_phase(struct conns *cs, struct conn *k, enum conn_phase phase, uint64_t timeout_ms)
{
        if (!k)
                return;
        (void)pthread_mutex_lock(&cs->lock);
        k->phase_us = now_usec();
        k->awaiting_headers = phase == CONN_HEADERS;
        if (phase == CONN_HEADERS)
                k->deadline_us = k->phase_us + cs->header_timeout_us;
        else if (phase == CONN_BODY)
                k->deadline_us = k->phase_us + timeout_ms * 1000;
        else
                k->deadline_us = 0;
        (void)pthread_mutex_unlock(&cs->lock);
}

struct conn *conns_of(struct MHD_Connection *mc)
{
        const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return ci ? ci->socket_context : NULL;
}
