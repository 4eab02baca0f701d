/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network probes (docs/probe.md): what the sandbox can reach in the configured mode. The
 * probe listens (no accept) on a port of every host address, so "reached" means a connection
 * was made, never a guess; the sandbox side is the helper's `connect`.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "probe.h"

#define MAX_ADDRS  16
#define CONNECT_MS "1000"

struct host_addr {
        char text[INET6_ADDRSTRLEN];
        int family;
        int fd; /* the listener, -EBADF when it could not bind */
};

struct host_net {
        int port;
        struct host_addr loop[2]; /* 127.0.0.1 and ::1 */
        struct host_addr addrs[MAX_ADDRS];
        size_t n_addrs;
};

static int listen_on(const struct sockaddr *sa, socklen_t len)
{
        int one = 1;
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        /* a fresh veth's link-local address is tentative for a moment: bind it anyway */
        if (sa->sa_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
        else
                (void)setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
        if (sa->sa_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, sa, len) < 0 || listen(fd, 16) < 0) {
                int r = -errno;
                (void)close(fd);
                return r;
        }
        return fd;
}

/* Fill @a from @sa and listen on it at @port. */
static void host_addr_open(struct host_addr *a, const struct sockaddr *sa, int port)
{
        struct sockaddr_storage ss = { 0 };
        socklen_t len =
                sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

        memcpy(&ss, sa, len);
        a->family = sa->sa_family;
        if (a->family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;
                in->sin_port = htons((uint16_t)port);
                (void)inet_ntop(AF_INET, &in->sin_addr, a->text, sizeof(a->text));
        } else {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
                in6->sin6_port = htons((uint16_t)port);
                (void)inet_ntop(AF_INET6, &in6->sin6_addr, a->text, sizeof(a->text));
        }
        a->fd = listen_on((struct sockaddr *)&ss, len);
}

static void host_net_loopback(struct host_net *h)
{
        struct sockaddr_in in = { .sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };

        for (int tries = 0; tries < 20; tries++) {
                h->port = 20000 + rand() % 40000;
                host_addr_open(&h->loop[0], (struct sockaddr *)&in, h->port);
                if (h->loop[0].fd >= 0)
                        break;
        }
        host_addr_open(&h->loop[1], (struct sockaddr *)&in6, h->port);
}

static void host_net_open(struct host_net *h)
{
        struct ifaddrs *ifa = NULL;

        host_net_loopback(h);
        if (getifaddrs(&ifa) < 0)
                return;
        for (struct ifaddrs *i = ifa; i && h->n_addrs < MAX_ADDRS; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK) ||
                    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                struct host_addr *a = &h->addrs[h->n_addrs];
                host_addr_open(a, i->ifa_addr, h->port);
                if (a->fd >= 0)
                        h->n_addrs++;
        }
        freeifaddrs(ifa);
}

static void host_net_close(struct host_net *h)
{
        for (size_t i = 0; i < 2; i++)
                h->loop[i].fd = safe_close(h->loop[i].fd);
        for (size_t i = 0; i < h->n_addrs; i++)
                h->addrs[i].fd = safe_close(h->addrs[i].fd);
}

/* ---- connecting from the sandbox ---- */

/* Addresses the helper reached; loopback: only a connection counts (a refusal is the
 * sandbox's own lo answering). Return: 0 with the reached list in @ret (owned), -errno. */
static int reach(struct probe_sandbox *s,
                 int port,
                 const char *const *targets,
                 bool loopback,
                 char **ret,
                 size_t *ret_n,
                 struct b4_error *err)
{
        struct strbuf args, hit;
        struct probe_out o = { 0 };
        size_t n = 0;
        int r;

        strbuf_init(&args, STRBUF_UNLIMITED);
        strbuf_init(&hit, STRBUF_UNLIMITED);
        r = strbuf_addf(&args, "connect " CONNECT_MS " %d", port);
        for (const char *const *t = targets; r >= 0 && *t; t++)
                r = strbuf_addf(&args, " %s", *t);
        if (r >= 0)
                r = strbuf_addc(&args, '\0');
        if (r >= 0)
                r = probe_helper(s, args.buf, &o, err);
        for (char *line = r >= 0 ? o.out : NULL, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                char *state = strchr(line, ' ');
                if (!state)
                        continue;
                *state++ = '\0';
                if (strcmp(state, "connected") == 0 ||
                    (!loopback && strcmp(state, "refused-by-peer") == 0)) {
                        r = strbuf_addf(&hit, "%s%s (%s)", n ? ", " : "", line, state);
                        n++;
                }
        }
        if (r >= 0 && o.exit_code != 0)
                r = b4_error_set(err, -EIO, "the helper exited %d: %.120s", o.exit_code, o.err);
        probe_out_clear(&o);
        if (r >= 0)
                r = strbuf_detach(&hit, ret, NULL);
        strbuf_release(&args);
        strbuf_release(&hit);
        if (r >= 0)
                *ret_n = n;
        return r;
}

static void reach_row(struct probe *p,
                      struct probe_sandbox *s,
                      const char *name,
                      int port,
                      const char *const *targets,
                      bool loopback)
{
        cleanup_free char *hit = NULL;
        struct b4_error err = { 0 };
        size_t n = 0, tried = 0;

        while (targets[tried])
                tried++;

        if (probe_interrupted(p))
                return;
        if (reach(s, port, targets, loopback, &hit, &n, &err) < 0)
                probe_report(p, name, PROBE_FAIL, "cannot verify: %s", err.msg);
        else if (n)
                probe_report(p, name, PROBE_FAIL, "reached %zu of %zu: %s", n, tried, hit);
        else
                probe_report(p, name, PROBE_PASS, "%zu address%s tried, none reached", tried,
                             tried == 1 ? "" : "es");
}

static bool is_deny(const struct probe *p)
{
        return p->policy->network == B4_NETWORK_DENY;
}

static void interfaces_row(struct probe *p)
{
        struct probe_out o = { 0 };
        struct b4_error err = { 0 };

        if (!is_deny(p)) {
                probe_report(p, "net:only-lo", PROBE_SKIP, "network allow: a veth by design");
                return;
        }
        if (probe_helper(&p->a, "ifaces", &o, &err) < 0)
                probe_report(p, "net:only-lo", PROBE_FAIL, "cannot verify: %s", err.msg);
        else if (o.exit_code != 0)
                probe_report(p, "net:only-lo", PROBE_FAIL, "cannot verify: exit %d", o.exit_code);
        else if (strcmp(o.out, "lo\n") == 0)
                probe_report(p, "net:only-lo", PROBE_PASS, "only lo is up");
        else
                probe_report(p, "net:only-lo", PROBE_FAIL, "interfaces up: %.120s", o.out);
        probe_out_clear(&o);
}

/* The host's addresses of one family as a strv (borrowed texts copied). */
static char **family_targets(const struct host_net *h, int family)
{
        char **l = NULL;

        for (size_t i = 0; i < h->n_addrs; i++)
                if (h->addrs[i].family == family && strv_extend(&l, h->addrs[i].text) < 0)
                        return strv_free(l);
        return l;
}

static void host_rows(struct probe *p, const struct host_net *h)
{
        const char *loop[] = { "127.0.0.1", "::1", NULL };

        const struct {
                const char *name;
                int family;
        } fams[] = { { "net:host-ipv4", AF_INET }, { "net:host-ipv6", AF_INET6 } };

        reach_row(p, &p->a, "net:host-loopback", h->port, loop, true);
        for (size_t i = 0; i < ELEMENTSOF(fams); i++) {
                cleanup_strv char **t = family_targets(h, fams[i].family);
                if (!t)
                        probe_report(p, fams[i].name, PROBE_SKIP,
                                     "the host has no non-loopback address of this family");
                else
                        reach_row(p, &p->a, fams[i].name, h->port, (const char *const *)t, false);
        }
}

static void fixed_rows(struct probe *p)
{
        const char *metadata[] = { "169.254.169.254", NULL };
        const char *private[] = { "10.0.0.1", "172.16.0.1", "192.168.0.1", "2001:db8::1", NULL };

        reach_row(p, &p->a, "net:metadata", 80, metadata, false);
        if (is_deny(p))
                reach_row(p, &p->a, "net:private", 80, private, false);
        else
                probe_report(p, "net:private", PROBE_SKIP,
                             "network allow: private ranges are reachable by design");
}

/* Thread B listens on all its addresses; thread A must reach none of them. */
static int peer_targets(struct probe *p,
                        struct probe_sandbox **ret_b,
                        char ***ret,
                        int *ret_port,
                        struct b4_error *err)
{
        struct probe_out o = { 0 };
        char args[64];
        char **l = NULL;
        int r, port = 20000 + rand() % 40000;

        r = probe_sandbox_b(p, ret_b, err);
        if (r >= 0)
                r = probe_helper(*ret_b, "addrs", &o, err);
        for (char *line = r >= 0 ? o.out : NULL, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strv_extend(&l, line) < 0)
                        r = -ENOMEM;
        }
        probe_out_clear(&o);
        (void)snprintf(args, sizeof(args), "listen %d 60", port);
        if (r >= 0)
                r = probe_helper(*ret_b, args, &o, err);
        if (r >= 0 && strncmp(o.out, "listening", 9) != 0)
                r = b4_error_set(err, -EIO, "thread B cannot listen: %.80s", o.out);
        probe_out_clear(&o);
        if (r < 0)
                return strv_free(l), r;
        *ret = l;
        *ret_port = port;
        return 0;
}

static void peer_row(struct probe *p)
{
        cleanup_strv char **targets = NULL;
        struct probe_sandbox *b = NULL;
        struct b4_error err = { 0 };
        int port = 0;

        if (is_deny(p)) {
                probe_report(p, "net:other-sandbox", PROBE_SKIP,
                             "network deny: sandboxes have only lo");
                return;
        }
        if (peer_targets(p, &b, &targets, &port, &err) < 0)
                probe_report(p, "net:other-sandbox", PROBE_FAIL, "cannot verify: %s", err.msg);
        else if (!targets)
                probe_report(p, "net:other-sandbox", PROBE_FAIL,
                             "cannot verify: thread B has no address");
        else
                reach_row(p, &p->a, "net:other-sandbox", port, (const char *const *)targets, false);
}

void probe_network(struct probe *p)
{
        struct host_net h = { .loop = { { .fd = -EBADF }, { .fd = -EBADF } } };

        if (probe_interrupted(p))
                return;
        host_net_open(&h);
        interfaces_row(p);
        fixed_rows(p);
        host_rows(p, &h);
        peer_row(p);
        host_net_close(&h);
}
