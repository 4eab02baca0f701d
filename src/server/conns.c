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
 *
 * Each address has a group (a small hash table of them): its count of connections not cut,
 * and its connections waiting for headers in the order they began to wait, so that the cap
 * costs O(1) per connection. On a loopback listener every client is one address, and a walk
 * of the connections per accept made 10,000 accepts quadratic (2 s per 1,024 at 10,000).
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
#define GROUP_BUCKETS    256

struct group;

struct conn {
        struct conn *prev, *next;
        struct group *group;        /* NULL: untracked by address */
        struct conn *wprev, *wnext; /* in the group's waiting list, when waiting */
        bool waiting;               /* in it */
        int fd;
        struct sockaddr_storage addr; /* the client; AF_UNIX clients all compare equal */
        uint64_t phase_us;            /* when the current phase began */
        uint64_t deadline_us;         /* 0 = none */
        bool cut;                     /* shutdown() done; waiting for libmicrohttpd */
};

/* One client address: AF_UNIX clients are all one. */
struct group {
        struct group *next; /* in its bucket */
        struct sockaddr_storage addr;
        unsigned refs;              /* connections in the list */
        unsigned live;              /* of them, not cut */
        struct conn *whead, *wtail; /* waiting for headers, oldest first */
};

struct conns {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t watchdog;
        bool stop;
        struct conn *head;
        struct group *buckets[GROUP_BUCKETS];
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

static unsigned addr_hash(const struct sockaddr_storage *a)
{
        const struct sockaddr_in *a4 = (const void *)a;
        const struct sockaddr_in6 *a6 = (const void *)a;
        const unsigned char *b = NULL;
        size_t n = 0;
        unsigned h = 2166136261u; /* FNV-1a */

        if (a->ss_family == AF_INET) {
                b = (const unsigned char *)&a4->sin_addr;
                n = sizeof(a4->sin_addr);
        } else if (a->ss_family == AF_INET6) {
                b = (const unsigned char *)&a6->sin6_addr;
                n = sizeof(a6->sin6_addr);
        }
        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * 16777619u;
        return (h ^ a->ss_family) % GROUP_BUCKETS;
}

/* Caller holds the lock. The group of @a, made when missing (NULL: out of memory). */
static struct group *group_get(struct conns *cs, const struct sockaddr_storage *a)
{
        struct group **b = &cs->buckets[addr_hash(a)], *g;

        for (g = *b; g; g = g->next)
                if (same_addr(&g->addr, a))
                        return g;
        g = b4_calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        g->addr = *a;
        g->next = *b;
        *b = g;
        return g;
}

static void group_drop(struct conns *cs, struct group *g)
{
        struct group **b = &cs->buckets[addr_hash(&g->addr)];

        if (--g->refs)
                return;
        while (*b != g)
                b = &(*b)->next;
        *b = g->next;
        free(g);
}

/* Caller holds the lock: @k joins or leaves its group's waiting list (the tail is the
 * newest: phases begin in time order under the lock). */
static void set_waiting(struct conn *k, bool waiting)
{
        struct group *g = k->group;

        if (!g || k->waiting == waiting)
                return;
        if (waiting) {
                k->wprev = g->wtail;
                k->wnext = NULL;
                if (g->wtail)
                        g->wtail->wnext = k;
                else
                        g->whead = k;
                g->wtail = k;
        } else {
                if (k->wprev)
                        k->wprev->wnext = k->wnext;
                else
                        g->whead = k->wnext;
                if (k->wnext)
                        k->wnext->wprev = k->wprev;
                else
                        g->wtail = k->wprev;
                k->wprev = k->wnext = NULL;
        }
        k->waiting = waiting;
}

/* Caller holds the lock. */
static void cut(struct conns *cs, struct conn *k)
{
        if (k->cut)
                return;
        (void)shutdown(k->fd, SHUT_RDWR);
        k->cut = true;
        set_waiting(k, false);
        if (k->group)
                k->group->live--;
}

/* Caller holds the lock; @k is already in the list and its group. Keeps @k's address at its
 * cap: over it, the address's oldest connection waiting for headers is cut, else @k. */
static void enforce_addr_cap(struct conns *cs, struct conn *k)
{
        struct group *g = k->group;

        if (g && g->live > cs->max_per_addr)
                cut(cs, g->whead ? g->whead : k);
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
        for (size_t i = 0; i < GROUP_BUCKETS; i++)
                while (cs->buckets[i]) {
                        struct group *g = cs->buckets[i];
                        cs->buckets[i] = g->next;
                        free(g);
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
        k->next = cs->head;
        if (cs->head)
                cs->head->prev = k;
        cs->head = k;
        k->group = group_get(cs, &k->addr);
        if (k->group) { /* else out of memory: not counted against its address */
                k->group->refs++;
                k->group->live++;
                set_waiting(k, true);
        }
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
        if (k->group) {
                if (!k->cut)
                        k->group->live--;
                set_waiting(k, false);
                group_drop(cs, k->group);
        }
        (void)pthread_mutex_unlock(&cs->lock);
        free(k);
}

void conns_phase(struct conns *cs, struct conn *k, enum conn_phase phase, uint64_t timeout_ms)
{
        if (!k)
                return;
        (void)pthread_mutex_lock(&cs->lock);
        k->phase_us = now_usec();
        if (!k->cut) { /* between requests, or reading headers; a new wait goes last */
                set_waiting(k, false);
                set_waiting(k, phase == CONN_HEADERS);
        }
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
