/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-netd: the DNS filter of one lists-mode thread (docs/native.md §Network). It runs in
 * the provider's network namespace and receives, through the `inet b4box` table's redirect,
 * every packet the thread's sandbox sends to port 53 (UDP and TCP), whatever resolver address
 * it was sent to. It answers admitted names only (others NXDOMAIN, nothing upstream), keeps
 * only the answer chain from the question, refuses rebinding answers, and pins each admitted
 * IPv4 answer into the thread's elements (pin4 keyed by the veth ifindex, or, for name:port
 * entries, the thread's own pins_<ifindex> / pinsr_<ifindex>; netlink, netd-pin.c) before
 * the reply leaves; in allow mode the addresses of denylisted names go
 * into dpin4 (dropped), exact names' resolved at start and at each pin's end. It keeps the
 * thread's audit (netd-audit.c) and serves it on a unix socket.
 *
 *   b4box-netd --ifindex N --listen ADDR --mode deny|allow [--upstream ADDR]...
 *              [--pin-floor S] [--pin-cap S] [--table NAME] [--audit PATH] [--] [ENTRY]...
 *
 * It binds ADDR on one free port for UDP and TCP (and the unix socket PATH, mode 0600, for
 * the audit: docs/native.md §Audit), keeps only CAP_NET_ADMIN (as root), starts its
 * NETD_WORKERS workers, loads its seccomp filter (netd-seccomp.c), writes "<pid> <port>\n" to
 * stdout, closes stdout and serves until SIGTERM. The main thread receives; it answers what
 * needs no upstream itself (unlisted names, NODATA, errors: a flood of them takes no worker)
 * and queues the rest for a worker (so a slow upstream holds one worker for at most its
 * timeouts, never the others); a full queue drops the query (counted; the client retries),
 * and TCP clients hold at most NETD_TCP_WORKERS workers. On SIGTERM it deletes its thread's
 * audit elements (audited, acct4, deny4) and exits. Log lines go to stderr.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/macro.h"
#include "core/net-entry.h"
#include "netd.h"

struct job {
        enum {
                JOB_UDP,
                JOB_TCP,
                JOB_AUDIT,
                JOB_PREFETCH
        } kind;

        /* JOB_TCP, JOB_AUDIT: the accepted connection (the worker closes it); JOB_PREFETCH:
         * the index of the entry to resolve */
        int fd;
        struct sockaddr_storage from;
        socklen_t from_len;
        size_t len;
        uint8_t msg[NETD_UDP_QUERY_MAX];
};

/* The jobs waiting for a worker: a ring of NETD_QUEUE under one lock. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t more;
        struct job jobs[NETD_QUEUE];
        size_t head, n;
        unsigned tcp_busy; /* TCP jobs queued or being served */
        unsigned ready;    /* workers started, waiting for jobs */
        size_t n_entries;
        int64_t *due_ms; /* per entry: when to prefetch it next (INT64_MAX: never, or queued) */
} queue = { .lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER };

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
                        "[--audit PATH] [--] [ENTRY]...\n");
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

static const char *parse_args(struct netd *d, int argc, char **argv, const char **ret_audit)
{
        static const struct option opts[] = {
                { "ifindex", required_argument, NULL, 'i' },
                { "listen", required_argument, NULL, 'l' },
                { "mode", required_argument, NULL, 'm' },
                { "upstream", required_argument, NULL, 'u' },
                { "pin-floor", required_argument, NULL, 'f' },
                { "pin-cap", required_argument, NULL, 'c' },
                { "table", required_argument, NULL, 't' },
                { "audit", required_argument, NULL, 'a' },
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
                case 'a':
                        *ret_audit = optarg;
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

/* The audit's unix socket at @path (replaced if it exists), 0600, listening. */
static int bind_audit(struct netd *d, const char *path)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };

        if (strlen(path) >= sizeof(sun.sun_path))
                return -ENAMETOOLONG;
        memcpy(sun.sun_path, path, strlen(path) + 1);
        d->audit_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (d->audit_fd < 0)
                return -errno;
        (void)unlink(path);
        if (bind(d->audit_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, 0600) < 0 ||
            listen(d->audit_fd, 8) < 0)
                return -errno;
        return 0;
}

/* ---- the workers ---- */

static int64_t mono_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *worker(void *data)
{
        struct netd *d = data;
        struct job *j = malloc(sizeof(*j));
        uint8_t *out = malloc(DNS_EDNS_MAX);

        if (!j || !out)
                abort(); /* before the filter: nothing is served yet */
        (void)pthread_mutex_lock(&queue.lock);
        queue.ready++;
        (void)pthread_cond_broadcast(&queue.more);
        (void)pthread_mutex_unlock(&queue.lock);
        for (;;) {
                int r;

                (void)pthread_mutex_lock(&queue.lock);
                while (queue.n == 0)
                        (void)pthread_cond_wait(&queue.more, &queue.lock);
                *j = queue.jobs[queue.head];
                queue.head = (queue.head + 1) % NETD_QUEUE;
                queue.n--;
                (void)pthread_mutex_unlock(&queue.lock);
                switch (j->kind) {
                case JOB_UDP:
                        r = netd_handle(d, j->msg, j->len, true, false, out, DNS_EDNS_MAX);
                        if (r > 0)
                                (void)sendto(d->udp_fd, out, (size_t)r, 0,
                                             (struct sockaddr *)&j->from, j->from_len);
                        break;
                case JOB_TCP:
                        netd_serve_tcp(d, j->fd);
                        (void)pthread_mutex_lock(&queue.lock);
                        queue.tcp_busy--;
                        (void)pthread_mutex_unlock(&queue.lock);
                        break;
                case JOB_AUDIT:
                        netd_serve_audit(d, j->fd);
                        break;
                case JOB_PREFETCH: {
                        uint32_t s = netd_prefetch_denied(d, d->policy.entries[j->fd].name);

                        (void)pthread_mutex_lock(&queue.lock);
                        queue.due_ms[j->fd] = mono_ms() + (int64_t)s * 1000;
                        (void)pthread_mutex_unlock(&queue.lock);
                        break;
                }
                }
        }
        return NULL;
}

/* The next free job slot (the queue's lock held), or NULL when the queue is full. */
static struct job *slot(void)
{
        return queue.n < NETD_QUEUE ? &queue.jobs[(queue.head + queue.n) % NETD_QUEUE] : NULL;
}

static void push(void)
{
        queue.n++;
        (void)pthread_cond_signal(&queue.more);
        (void)pthread_mutex_unlock(&queue.lock);
}

/* One datagram: answered here when netd needs no upstream for it, else queued for a worker,
 * or dropped and counted when every slot is taken. */
static void take_udp(struct netd *d)
{
        static uint8_t msg[NETD_UDP_QUERY_MAX], out[DNS_EDNS_MAX];
        struct sockaddr_storage from;
        socklen_t from_len = sizeof(from);
        ssize_t n = recvfrom(d->udp_fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from,
                             &from_len);
        struct job *j;
        int r;

        if (n < 0)
                return;
        r = netd_handle(d, msg, (size_t)n, true, true, out, sizeof(out));
        if (r != NETD_NEEDS_UPSTREAM) {
                if (r > 0)
                        (void)sendto(d->udp_fd, out, (size_t)r, 0, (struct sockaddr *)&from,
                                     from_len);
                return;
        }
        (void)pthread_mutex_lock(&queue.lock);
        j = slot();
        if (!j) {
                (void)pthread_mutex_unlock(&queue.lock);
                netd_audit_dropped(&d->audit);
                return;
        }
        j->kind = JOB_UDP;
        memcpy(j->msg, msg, (size_t)n);
        j->len = (size_t)n;
        j->from = from;
        j->from_len = from_len;
        push();
}

/* One connection on @listen_fd: queued as @kind, or closed (and counted, for TCP clients)
 * when the queue is full or TCP clients already hold NETD_TCP_WORKERS workers. */
static void take_conn(struct netd *d, int listen_fd, int kind)
{
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        struct job *j;

        if (fd < 0)
                return;
        (void)pthread_mutex_lock(&queue.lock);
        j = slot();
        if (!j || (kind == JOB_TCP && queue.tcp_busy >= NETD_TCP_WORKERS)) {
                (void)pthread_mutex_unlock(&queue.lock);
                (void)close(fd);
                if (kind == JOB_TCP)
                        netd_audit_dropped(&d->audit);
                return;
        }
        j->kind = kind;
        j->fd = fd;
        if (kind == JOB_TCP)
                queue.tcp_busy++;
        push();
}

/* The workers block SIGTERM and SIGINT (inherited from here), so the main thread's poll() is
 * the one they interrupt. */
static int start_workers(struct netd *d)
{
        sigset_t term, old;

        (void)sigemptyset(&term);
        (void)sigaddset(&term, SIGTERM);
        (void)sigaddset(&term, SIGINT);
        (void)pthread_sigmask(SIG_BLOCK, &term, &old);
        for (int i = 0; i < NETD_WORKERS; i++) {
                pthread_t t;
                int r = pthread_create(&t, NULL, worker, d);

                if (r != 0)
                        return -r;
                (void)pthread_detach(t);
        }
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* every worker past its start (rseq, its buffers) before the filter is loaded */
        (void)pthread_mutex_lock(&queue.lock);
        while (queue.ready < NETD_WORKERS)
                (void)pthread_cond_wait(&queue.more, &queue.lock);
        (void)pthread_mutex_unlock(&queue.lock);
        return 0;
}

/* Allow mode: every exact denylisted name is due at once (docs/native.md §Network). */
static int prefetch_init(struct netd *d)
{
        queue.due_ms = calloc(d->policy.n + 1, sizeof(*queue.due_ms));
        if (!queue.due_ms)
                return -ENOMEM;
        for (size_t i = 0; i < d->policy.n; i++)
                queue.due_ms[i] = d->policy.mode == B4_NETWORK_ALLOW &&
                                                  d->policy.entries[i].kind == B4_NET_NAME
                                          ? 0
                                          : INT64_MAX;
        return 0;
}

/* Queue the prefetches that are due. Return: the poll timeout until the next one (-1: none). */
static int prefetch_due(void)
{
        int64_t now = mono_ms(), next = INT64_MAX;

        (void)pthread_mutex_lock(&queue.lock);
        for (size_t i = 0; i < queue.n_entries; i++) {
                struct job *j = queue.due_ms[i] <= now ? slot() : NULL;

                if (j) {
                        j->kind = JOB_PREFETCH;
                        j->fd = (int)i;
                        queue.due_ms[i] = INT64_MAX; /* the worker sets the next time */
                        queue.n++;
                        (void)pthread_cond_signal(&queue.more);
                } else if (queue.due_ms[i] < next) {
                        next = queue.due_ms[i]; /* a full queue: due again at once */
                }
        }
        (void)pthread_mutex_unlock(&queue.lock);
        if (next == INT64_MAX)
                return -1;
        return next <= now ? 10 : next - now > 60000 ? 60000 : (int)(next - now);
}

static void serve(struct netd *d)
{
        while (!stop) {
                struct pollfd p[3] = { { .fd = d->udp_fd, .events = POLLIN },
                                       { .fd = d->tcp_fd, .events = POLLIN },
                                       { .fd = d->audit_fd, .events = POLLIN } };

                if (poll(p, d->audit_fd >= 0 ? 3 : 2, prefetch_due()) < 0)
                        continue;
                if (p[0].revents & POLLIN)
                        take_udp(d);
                if (p[1].revents & POLLIN)
                        take_conn(d, d->tcp_fd, JOB_TCP);
                if (p[2].revents & POLLIN)
                        take_conn(d, d->audit_fd, JOB_AUDIT);
        }
}

/* Everything but serving: sockets, privileges, workers, the filter. Return: the port. */
static int setup(struct netd *d, const char *listen_addr, const char *audit_path)
{
        struct pin_elem me;
        int port, r;

        if (d->n_up == 0)
                host_upstreams(d);
        r = pinner_open(&d->pin);
        if (r >= 0)
                r = pinner_open(&d->reader);
        if (r < 0) {
                fprintf(stderr, "b4box-netd: cannot open a netfilter socket: %s\n", strerror(-r));
                return r;
        }
        port = bind_both(d, listen_addr);
        if (port < 0) {
                fprintf(stderr, "b4box-netd: cannot bind %s: %s\n", listen_addr, strerror(-port));
                return port;
        }
        r = audit_path ? bind_audit(d, audit_path) : 0;
        if (r < 0) {
                fprintf(stderr, "b4box-netd: cannot bind %s: %s\n", audit_path, strerror(-r));
                return r;
        }
        if (geteuid() == 0 && drop_privileges() < 0) {
                fprintf(stderr, "b4box-netd: cannot drop privileges: %s\n", strerror(errno));
                return -EPERM;
        }
        tzset(); /* gmtime_r() would read /etc/localtime on its first call, after the filter */
        pin_key_iif(&me, d->ifindex);
        r = pinner_run(&d->pin, d->table, "audited", &me, 1, 0);
        if (r < 0) /* an older table: no audit counters, DNS still filtered */
                fprintf(stderr, "netd: audit counters off: %s\n", strerror(-r));
        queue.n_entries = d->policy.n;
        r = prefetch_init(d);
        if (r >= 0)
                r = start_workers(d);
        if (r >= 0)
                r = netd_seccomp();
        if (r < 0) {
                fprintf(stderr, "b4box-netd: cannot start: %s\n", strerror(-r));
                return r;
        }
        return port;
}

int main(int argc, char **argv)
{
        struct netd d = {
                .policy = { .mode = B4_NETWORK_DENY,
                            .pin_floor_s = B4_DEFAULT_PIN_FLOOR_S,
                            .pin_cap_s = B4_DEFAULT_PIN_CAP_S },
                .table = "b4box",
                .pin_lock = PTHREAD_MUTEX_INITIALIZER,
                .reader_lock = PTHREAD_MUTEX_INITIALIZER,
                .udp_fd = -1,
                .tcp_fd = -1,
                .audit_fd = -1,
        };
        const char *audit_path = NULL, *listen_addr = parse_args(&d, argc, argv, &audit_path);
        struct sigaction sa = { .sa_handler = on_term };
        struct pin_elem me;
        int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC), port;

        netd_audit_init(&d.audit);
        (void)sigaction(SIGTERM, &sa, NULL);
        (void)sigaction(SIGINT, &sa, NULL);
        sa.sa_handler = SIG_IGN;
        (void)sigaction(SIGPIPE, &sa, NULL);
        fprintf(stderr, "netd: starting ifindex=%u upstreams=%zu entries=%zu\n", d.ifindex, d.n_up,
                d.policy.n);
        port = null_fd < 0 ? -errno : setup(&d, listen_addr, audit_path);
        if (port < 0)
                return 1;
        /* confined from here on */
        printf("%d %d\n", (int)getpid(), port);
        (void)fflush(stdout);
        if (dup3(null_fd, STDOUT_FILENO, 0) < 0)
                return 1;
        /* refresh: one add restarts a pin's timer (Linux >= 6.10), or add, delete, add */
        fprintf(stderr, "netd: ready port=%d workers=%d refresh=%s\n", port, NETD_WORKERS,
                d.pin.update ? "update" : "readd");
        serve(&d);
        (void)pthread_mutex_lock(&d.pin_lock); /* no pin in flight from here */
        pin_key_iif(&me, d.ifindex);
        (void)pinner_del(&d.pin, d.table, "audited", &me, 1);
        for (size_t i = 0; i < 2; i++) {
                static const char *const sets[] = { "acct4", "deny4" };
                int r = pinner_forget(&d.pin, d.table, sets[i], d.ifindex);

                if (r < 0)
                        fprintf(stderr, "netd: cannot delete the %s elements: %s\n", sets[i],
                                strerror(-r));
        }
        fprintf(stderr, "netd: stopped\n");
        _exit(0); /* the workers may be waiting on an upstream: no join */
}
