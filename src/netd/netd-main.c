/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd: the DNS filter of one lists-mode thread (docs/native.md §Network). It runs in
 * the provider's network namespace and receives, through the `inet b4box` table's redirect,
 * every packet the thread's sandbox sends to port 53 (UDP and TCP), whatever resolver address
 * it was sent to. It answers admitted names only (others NXDOMAIN, nothing upstream), keeps
 * only the answer chain from the question, refuses rebinding answers, and pins each admitted
 * IPv4 answer into the thread's elements (pin4 / pin4p, keyed by the veth ifindex; netlink,
 * netd-pin.c) before the reply leaves.
 *
 *   b4box-netd --ifindex N --listen ADDR --mode deny|allow [--upstream ADDR]...
 *              [--pin-floor S] [--pin-cap S] [--table NAME] [--] [ENTRY]...
 *
 * It binds ADDR on one free port for UDP and TCP, keeps only CAP_NET_ADMIN (as root), writes
 * "<pid> <port>\n" to stdout, closes stdout and serves until SIGTERM. One query at a time (a
 * thread's resolver load is small; each upstream try waits at most 2 s). Log lines go to stderr.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "core/net-entry.h"
#include "dns-msg.h"
#include "netd-pin.h"
#include "netd-policy.h"

#define UPSTREAM_TIMEOUT_MS 2000
#define TCP_TIMEOUT_S       2
#define TCP_MAX_QUERIES     16
#define PIN_SLACK_S         5
#define MAX_PORTS           16

struct upstream {
        struct sockaddr_storage sa;
        socklen_t len;
};

struct netd {
        struct netd_policy policy;
        struct b4_net_entry *entries;
        unsigned ifindex;
        const char *table;
        struct upstream up[B4_NET_MAX_UPSTREAM];
        size_t n_up;
        struct pinner pin;
        int udp_fd, tcp_fd;
        uint64_t last_pin_us; /* the last pin transaction, for the log */
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
        (void)sig;
        stop = 1;
}

static void usage(void)
{
        fprintf(stderr, "usage: b4box-netd --ifindex N --listen ADDR --mode deny|allow "
                        "[--upstream ADDR]... [--pin-floor S] [--pin-cap S] [--table NAME] "
                        "[--] [ENTRY]...\n");
        exit(2);
}

static int sockaddr_of(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
        struct b4_net_addr a;

        if (net_addr_parse(text, &a) < 0)
                return -EINVAL;
        memset(ss, 0, sizeof(*ss));
        if (a.family == AF_INET) {
                struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

                s4->sin_family = AF_INET;
                s4->sin_port = htons(port);
                memcpy(&s4->sin_addr, a.addr, 4);
                *len = sizeof(*s4);
        } else {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons(port);
                memcpy(&s6->sin6_addr, a.addr, 16);
                *len = sizeof(*s6);
        }
        return 0;
}

static int add_upstream(struct netd *d, const char *text)
{
        if (d->n_up >= B4_NET_MAX_UPSTREAM)
                return 0;
        if (sockaddr_of(text, 53, &d->up[d->n_up].sa, &d->up[d->n_up].len) < 0)
                return -EINVAL;
        d->n_up++;
        return 0;
}

/* The host's resolvers: `nameserver` lines of /etc/resolv.conf. */
static void host_upstreams(struct netd *d)
{
        FILE *f = fopen("/etc/resolv.conf", "re");
        char line[256], addr[64];

        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, " nameserver %63s", addr) == 1)
                        (void)add_upstream(d, addr);
        (void)fclose(f);
}

static uint64_t now_us(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define MAX_PINS (DNS_MAX_RR * MAX_PORTS * 2)

/* Pin every A record of @ans for @life seconds (+ slack), in one transaction: pin4, or pin4p
 * with each port range of the entries admitting the question's name. */
static int pin_answer(struct netd *d,
                      const struct dns_query *q,
                      const struct dns_answer *ans,
                      uint32_t life)
{
        static struct pin_elem pins[MAX_PINS];
        uint16_t lo[MAX_PORTS], hi[MAX_PORTS];
        size_t n_ports = netd_name_ports(&d->policy, q->name, lo, hi, MAX_PORTS), n = 0;
        uint64_t t0 = now_us();
        int r;

        for (size_t i = 0; i < ans->n; i++) {
                if (ans->rr[i].type != DNS_T_A)
                        continue;
                if (n_ports == 0)
                        pin_key4(&pins[n++], d->ifindex, ans->rr[i].data);
                for (size_t k = 0; k < n_ports; k++) {
                        pin_key4p(&pins[n++], d->ifindex, ans->rr[i].data, IPPROTO_TCP, lo[k],
                                  hi[k]);
                        pin_key4p(&pins[n++], d->ifindex, ans->rr[i].data, IPPROTO_UDP, lo[k],
                                  hi[k]);
                }
        }
        r = pinner_run(&d->pin, d->table, n_ports == 0 ? "pin4" : "pin4p", pins, n,
                       (uint64_t)(life + PIN_SLACK_S) * 1000u);
        d->last_pin_us = now_us() - t0;
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

static bool rebinding(struct netd *d, const struct dns_answer *ans)
{
        for (size_t i = 0; i < ans->n; i++)
                if (ans->rr[i].type == DNS_T_A && netd_addr_refused(&d->policy, ans->rr[i].data))
                        return true;
        return false;
}

static int recv_tcp_msg(int fd, uint8_t *buf, size_t cap, size_t *ret_len);

/* Ask one upstream over TCP (after a truncated UDP answer). */
static int ask_tcp(const struct upstream *u,
                   const uint8_t *query,
                   size_t qlen,
                   uint8_t *buf,
                   size_t cap,
                   size_t *ret_len)
{
        struct timeval tv = { .tv_sec = TCP_TIMEOUT_S };
        uint8_t hdr[2] = { (uint8_t)(qlen >> 8), (uint8_t)qlen };
        int fd = socket(u->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), r = -EIO;

        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (const struct sockaddr *)&u->sa, u->len) == 0 &&
            send(fd, hdr, 2, MSG_NOSIGNAL) == 2 &&
            send(fd, query, qlen, MSG_NOSIGNAL) == (ssize_t)qlen)
                r = recv_tcp_msg(fd, buf, cap, ret_len);
        (void)close(fd);
        return r;
}

/* Wait up to the timeout for an answer to @q on the connected @fd (others are ignored). */
static int wait_udp(int fd, const struct dns_query *q, uint8_t *buf, struct dns_answer *ans)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        while (poll(&p, 1, UPSTREAM_TIMEOUT_MS) == 1) {
                ssize_t n = recv(fd, buf, DNS_MSG_MAX, 0);
                int r;

                if (n < 0)
                        return -errno;
                r = dns_answer_parse(buf, (size_t)n, q, ans);
                if (r != -EPROTO)
                        return r;
        }
        return -ETIMEDOUT;
}

/* Forward @q to each upstream in turn until one answers. */
static int resolve(struct netd *d, const struct dns_query *q, struct dns_answer *ans)
{
        static uint8_t buf[DNS_MSG_MAX];
        struct dns_query uq = *q;
        uint8_t query[DNS_UDP_MAX];
        int r = -ENETUNREACH;

        for (size_t i = 0; i < d->n_up; i++) {
                int qlen, fd;
                size_t len;

                if (getrandom(&uq.id, sizeof(uq.id), 0) != sizeof(uq.id))
                        return -EIO;
                uq.flags = DNS_FLAG_RD;
                qlen = dns_query_build(&uq, query, sizeof(query));
                if (qlen < 0)
                        return qlen;
                fd = socket(d->up[i].sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return -errno;
                r = connect(fd, (const struct sockaddr *)&d->up[i].sa, d->up[i].len) == 0 &&
                                    send(fd, query, (size_t)qlen, 0) == qlen
                            ? wait_udp(fd, &uq, buf, ans)
                            : -errno;
                (void)close(fd);
                if (r == -EMSGSIZE) {
                        r = ask_tcp(&d->up[i], query, (size_t)qlen, buf, sizeof(buf), &len);
                        if (r >= 0)
                                r = dns_answer_parse(buf, len, &uq, ans);
                }
                if (r >= 0 && ans->rcode != DNS_RC_SERVFAIL && ans->rcode != DNS_RC_REFUSED)
                        return 0;
        }
        return r < 0 ? r : -EIO;
}

static const char *verdict_name(enum netd_verdict v)
{
        static const char *const names[] = { "forward", "nxdomain-policy", "nodata", "notimp" };

        return names[v];
}

/* Answer a forwarded question: resolve, refuse rebinding, pin, then build. */
static int answer_forward(
        struct netd *d, const struct dns_query *q, uint8_t *out, size_t cap, const char **ret_what)
{
        static struct dns_answer ans;
        uint32_t life;
        int r;

        r = resolve(d, q, &ans);
        if (r == -EBADMSG || r < 0) {
                *ret_what = r == -EBADMSG ? "upstream-malformed" : "upstream-failed";
                return dns_reply_build(q, DNS_RC_SERVFAIL, NULL, 0, out, cap);
        }
        if (ans.rcode != DNS_RC_NOERROR) {
                *ret_what = "upstream-rcode";
                return dns_reply_build(
                        q, ans.rcode == DNS_RC_NXDOMAIN ? DNS_RC_NXDOMAIN : DNS_RC_SERVFAIL, NULL,
                        0, out, cap);
        }
        if (rebinding(d, &ans)) {
                *ret_what = "rebind";
                return dns_reply_build(q, DNS_RC_NXDOMAIN, NULL, 0, out, cap);
        }
        life = netd_pin_life(&d->policy, ans.n ? min_ttl(&ans) : 0);
        if (d->policy.mode == B4_NETWORK_DENY && pin_answer(d, q, &ans, life) < 0) {
                *ret_what = "pin-failed";
                return dns_reply_build(q, DNS_RC_SERVFAIL, NULL, 0, out, cap);
        }
        *ret_what = "answer";
        return dns_reply_build(q, DNS_RC_NOERROR, &ans, life, out, cap);
}

/* The reply to one query message, or -1 for none (not a query). */
static int handle(struct netd *d, const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
        struct dns_query q = { 0 };
        const char *what;
        int r = dns_query_parse(msg, len, &q);
        enum netd_verdict v;

        d->last_pin_us = 0;
        if (r == -EPROTO)
                return -1;
        if (r < 0)
                return dns_reply_build(&q, r == -EOPNOTSUPP ? DNS_RC_NOTIMP : DNS_RC_FORMERR, NULL,
                                       0, out, cap);
        v = netd_query_verdict(&d->policy, &q);
        what = verdict_name(v);
        switch (v) {
        case NETD_FORWARD:
                r = answer_forward(d, &q, out, cap, &what);
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
        fprintf(stderr, "netd: query name=%s type=%u verdict=%s pin_us=%llu\n",
                q.name[0] ? q.name : ".", q.qtype, what, (unsigned long long)d->last_pin_us);
        return r;
}

static void serve_udp(struct netd *d)
{
        uint8_t msg[DNS_MSG_MAX], out[DNS_UDP_MAX];
        struct sockaddr_storage from;
        socklen_t flen = sizeof(from);
        ssize_t n = recvfrom(d->udp_fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from,
                             &flen);
        int r;

        if (n < 0)
                return;
        r = handle(d, msg, (size_t)n, out, sizeof(out));
        if (r > 0)
                (void)sendto(d->udp_fd, out, (size_t)r, 0, (struct sockaddr *)&from, flen);
}

static int read_exact(int fd, uint8_t *buf, size_t n)
{
        while (n > 0) {
                ssize_t k = recv(fd, buf, n, 0);

                if (k <= 0)
                        return k == 0 ? -ECONNRESET : -errno;
                buf += k;
                n -= (size_t)k;
        }
        return 0;
}

static int recv_tcp_msg(int fd, uint8_t *buf, size_t cap, size_t *ret_len)
{
        uint8_t hdr[2];
        size_t len;

        if (read_exact(fd, hdr, 2) < 0)
                return -EIO;
        len = (size_t)hdr[0] << 8 | hdr[1];
        if (len > cap || read_exact(fd, buf, len) < 0)
                return -EIO;
        *ret_len = len;
        return 0;
}

static void serve_tcp(struct netd *d)
{
        static uint8_t msg[DNS_MSG_MAX], out[DNS_MSG_MAX + 2];
        struct timeval tv = { .tv_sec = TCP_TIMEOUT_S };
        int fd = accept4(d->tcp_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        size_t len;

        if (fd < 0)
                return;
        /* blocking with timeouts from here: one connection at a time */
        (void)fcntl(fd, F_SETFL, 0);
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        for (int i = 0; i < TCP_MAX_QUERIES && !stop; i++) {
                int r;

                if (recv_tcp_msg(fd, msg, sizeof(msg), &len) < 0)
                        break;
                r = handle(d, msg, len, out + 2, DNS_MSG_MAX);
                if (r <= 0)
                        break;
                out[0] = (uint8_t)(r >> 8);
                out[1] = (uint8_t)r;
                if (send(fd, out, (size_t)r + 2, MSG_NOSIGNAL) != r + 2)
                        break;
        }
        (void)close(fd);
}

/* Bind UDP and TCP on the same free port of @addr. */
static int bind_both(struct netd *d, const char *addr)
{
        for (int tries = 0; tries < 32; tries++) {
                struct sockaddr_storage ss;
                socklen_t len;
                int one = 1;

                if (sockaddr_of(addr, 0, &ss, &len) < 0)
                        return -EINVAL;
                d->udp_fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (d->udp_fd < 0 || bind(d->udp_fd, (struct sockaddr *)&ss, len) < 0 ||
                    getsockname(d->udp_fd, (struct sockaddr *)&ss, &len) < 0)
                        return -errno;
                d->tcp_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (d->tcp_fd < 0)
                        return -errno;
                (void)setsockopt(d->tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                if (bind(d->tcp_fd, (struct sockaddr *)&ss, len) == 0 && listen(d->tcp_fd, 16) == 0)
                        return ntohs(ss.ss_family == AF_INET
                                             ? ((struct sockaddr_in *)&ss)->sin_port
                                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
                (void)close(d->tcp_fd);
                (void)close(d->udp_fd);
        }
        return -EADDRINUSE;
}

/* Keep only CAP_NET_ADMIN (the pins) once the sockets are bound; no new privileges. */
static int drop_privileges(void)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[2] = { { 0 } };

        for (int cap = 0; cap <= 63; cap++)
                if (cap != CAP_NET_ADMIN && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
                    errno != EINVAL)
                        return -errno;
        data[0].effective = data[0].permitted = 1u << CAP_NET_ADMIN;
        if (syscall(SYS_capset, &hdr, data) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

static uint32_t parse_seconds(const char *s)
{
        char *end;
        unsigned long v = strtoul(s, &end, 10);

        if (*end || v < 1 || v > 86400)
                usage();
        return (uint32_t)v;
}

static void parse_entries(struct netd *d, int argc, char **argv)
{
        d->entries = calloc((size_t)argc + 1, sizeof(*d->entries));
        if (!d->entries)
                exit(1);
        for (int i = 0; i < argc; i++) {
                const char *why = NULL;

                if (net_entry_parse(argv[i], &d->entries[i], &why) < 0) {
                        fprintf(stderr, "b4box-netd: entry '%s' %s\n", argv[i],
                                why ? why : "cannot be parsed");
                        exit(2);
                }
        }
        d->policy.entries = d->entries;
        d->policy.n = (size_t)argc;
}

static const char *parse_args(struct netd *d, int argc, char **argv)
{
        static const struct option opts[] = {
                { "ifindex", required_argument, NULL, 'i' },
                { "listen", required_argument, NULL, 'l' },
                { "mode", required_argument, NULL, 'm' },
                { "upstream", required_argument, NULL, 'u' },
                { "pin-floor", required_argument, NULL, 'f' },
                { "pin-cap", required_argument, NULL, 'c' },
                { "table", required_argument, NULL, 't' },
                {},
        };
        const char *listen_addr = NULL;
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'i':
                        d->ifindex = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'l':
                        listen_addr = optarg;
                        break;
                case 'm':
                        if (strcmp(optarg, "deny") != 0 && strcmp(optarg, "allow") != 0)
                                usage();
                        d->policy.mode = optarg[0] == 'd' ? B4_NETWORK_DENY : B4_NETWORK_ALLOW;
                        break;
                case 'u':
                        if (add_upstream(d, optarg) < 0)
                                usage();
                        break;
                case 'f':
                        d->policy.pin_floor_s = parse_seconds(optarg);
                        break;
                case 'c':
                        d->policy.pin_cap_s = parse_seconds(optarg);
                        break;
                case 't':
                        d->table = optarg;
                        break;
                default:
                        usage();
                }
        }
        if (!listen_addr || d->ifindex == 0 || d->policy.pin_cap_s < d->policy.pin_floor_s)
                usage();
        parse_entries(d, argc - optind, argv + optind);
        return listen_addr;
}

int main(int argc, char **argv)
{
        struct netd d = {
                .policy = { .mode = B4_NETWORK_DENY,
                            .pin_floor_s = B4_DEFAULT_PIN_FLOOR_S,
                            .pin_cap_s = B4_DEFAULT_PIN_CAP_S },
                .table = "b4box",
                .udp_fd = -1,
                .tcp_fd = -1,
        };
        const char *listen_addr = parse_args(&d, argc, argv);
        struct sigaction sa = { .sa_handler = on_term };
        int port;

        if (d.n_up == 0)
                host_upstreams(&d);
        port = pinner_open(&d.pin);
        if (port < 0) {
                fprintf(stderr, "b4box-netd: cannot open a netfilter socket: %s\n",
                        strerror(-port));
                return 1;
        }
        port = bind_both(&d, listen_addr);
        if (port < 0) {
                fprintf(stderr, "b4box-netd: cannot bind %s: %s\n", listen_addr, strerror(-port));
                return 1;
        }
        if (geteuid() == 0 && drop_privileges() < 0) {
                fprintf(stderr, "b4box-netd: cannot drop privileges: %s\n", strerror(errno));
                return 1;
        }
        (void)sigaction(SIGTERM, &sa, NULL);
        (void)sigaction(SIGINT, &sa, NULL);
        sa.sa_handler = SIG_IGN;
        (void)sigaction(SIGPIPE, &sa, NULL);
        printf("%d %d\n", (int)getpid(), port);
        (void)fflush(stdout);
        if (!freopen("/dev/null", "w", stdout))
                return 1;
        fprintf(stderr, "netd: ready ifindex=%u port=%d upstreams=%zu entries=%zu\n", d.ifindex,
                port, d.n_up, d.policy.n);
        while (!stop) {
                struct pollfd p[2] = { { .fd = d.udp_fd, .events = POLLIN },
                                       { .fd = d.tcp_fd, .events = POLLIN } };

                if (poll(p, 2, -1) < 0)
                        continue;
                if (p[0].revents & POLLIN)
                        serve_udp(&d);
                if (p[1].revents & POLLIN)
                        serve_tcp(&d);
        }
        pinner_close(&d.pin);
        for (size_t i = 0; i < d.policy.n; i++)
                net_entry_release(&d.entries[i]);
        free(d.entries);
        return 0;
}
