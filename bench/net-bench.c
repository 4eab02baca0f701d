/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network benchmarks' probes (bench/net-rules.sh drives them in namespaces of its own):
 *   net-bench serve PORT                 TCP: accept and read to EOF, forever
 *   net-bench connect ADDR PORT N        N new connections one after the other (connect, then
 *                                        close): p50 and p90 of connect(), microseconds
 *   net-bench stream ADDR PORT SECONDS   one connection sending 128 KiB writes: Gbit/s
 *   net-bench nft THREADS PINS RUNS [ENTRY...]
 *                                        in this network namespace: the inet b4box table with
 *                                        THREADS threads' elements (deny mode, an allowlist
 *                                        of ENTRY..., default 198.51.100.0/24:443) and PINS
 *                                        pins each in pin4, and (when ENTRY... has a
 *                                        name:port) 2 name:443 pins each in the thread's
 *                                        own hash pins_<iif> (else, with a name:port-port,
 *                                        2 8000-8100 pins in pinsr_<iif>), then RUNS times: one
 *                                        pin (netd's pinner_run(), src/netd/netd-pin.c),
 *                                        one thread's elements added and deleted
 *                                        (nft_elems_commit()), and the first 20 of those
 *                                        runs one new name:port pin into the pins_<iif> of
 *                                        one more thread (2 pins before the first); p50,
 *                                        p90 and p99, microseconds
 *   net-bench install IFINDEX ADDR THREADS PINS [ENTRY...]
 *                                        the same table and population, and the elements of
 *                                        one real thread: host veth IFINDEX, sandbox ADDR
 * Output: one "key value ..." line per figure.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "core/net-entry.h"
#include "hostnet/netpolicy.h"
#include "hostnet/nft-elems.h"
#include "netd-pin.h"

#define PIN4P_RUNS 20 /* a name:port pin was slow with 1,000 threads' in one shared set */

static double now_us(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void report(const char *key, double *v, size_t n)
{
        if (n == 0) {
                printf("%s none\n", key); /* nothing of that kind in this population */
                return;
        }
        qsort(v, n, sizeof(*v), cmp_double);
        printf("%s p50 %.1f p90 %.1f p99 %.1f\n", key, v[n / 2], v[n * 9 / 10], v[n * 99 / 100]);
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };

        if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
                fprintf(stderr, "net-bench: bad address %s\n", ip);
                exit(2);
        }
        return a;
}

static int serve(const char *port)
{
        struct sockaddr_in a = addr_of("0.0.0.0", port);
        int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);
        static char buf[1 << 17];

        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1024) < 0) {
                perror("net-bench: listen");
                return 1;
        }
        for (;;) {
                int c = accept(s, NULL, NULL);

                if (c < 0)
                        continue;
                while (read(c, buf, sizeof(buf)) > 0)
                        ;
                close(c);
        }
}

static int connect_n(const char *ip, const char *port, size_t n)
{
        struct sockaddr_in a = addr_of(ip, port);
        double *v = calloc(n, sizeof(*v));
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        for (size_t i = 0; i < n; i++) {
                int s = socket(AF_INET, SOCK_STREAM, 0);
                double t0 = now_us();

                if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
                        perror("net-bench: connect");
                        return 1;
                }
                v[i] = now_us() - t0;
                /* RST, not FIN: no TIME_WAIT piles up over thousands of connections */
                setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
                close(s);
        }
        report("connect_us", v, n);
        free(v);
        return 0;
}

static int stream(const char *ip, const char *port, double seconds)
{
        struct sockaddr_in a = addr_of(ip, port);
        static char buf[1 << 17];
        int s = socket(AF_INET, SOCK_STREAM, 0);
        double t0, t;
        size_t sent = 0;

        if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
                perror("net-bench: connect");
                return 1;
        }
        t0 = now_us();
        do {
                ssize_t w = write(s, buf, sizeof(buf));

                if (w < 0) {
                        perror("net-bench: write");
                        return 1;
                }
                sent += (size_t)w;
                t = now_us();
        } while (t - t0 < seconds * 1e6);
        close(s);
        printf("stream_gbit %.2f\n", (double)sent * 8 / ((t - t0) * 1e3));
        return 0;
}

static void thread_of(unsigned i, struct netpolicy_thread *t)
{
        *t = (struct netpolicy_thread){ .ifindex = 100000 + i, .netd_port = 5353 };
        t->sandbox[0] = 10;
        t->sandbox[1] = 233;
        t->sandbox[2] = (uint8_t)(i >> 6);
        t->sandbox[3] = (uint8_t)((i & 63) * 4 + 2);
}

/* The policy of every thread: deny mode, an allowlist of @list (default one CIDR:port). */
static int policy_of(struct b4_policy *p, struct b4_net_entry e[16], char **list, size_t n_list)
{
        static char deflt0[] = "198.51.100.0/24:443";
        char *deflt[] = { deflt0 };
        const char *why;

        if (n_list == 0) {
                list = deflt;
                n_list = 1;
        }
        if (n_list > 16)
                return -1;
        b4_policy_init(p);
        p->network = B4_NETWORK_DENY;
        for (size_t i = 0; i < n_list; i++)
                if (net_entry_parse(list[i], &e[i], &why) < 0)
                        return -1;
        p->network_list = e;
        p->n_network_list = n_list;
        return 0;
}

/* Which pin set of its own @l (a thread's elements) has: 0 none, 1 pins_<iif> (a name:port
 * entry), 2 pinsr_<iif> only (name:port-port). */
static int pin_kind(const struct nft_elems *l)
{
        int kind = 0;

        for (size_t i = 0; i < l->n; i++)
                if (l->v[i].set == NFT_OWN_PINS)
                        return 1;
                else if (l->v[i].set == NFT_OWN_PINSR)
                        kind = 2;
        return kind;
}

/* @ip's name:port pin of @kind: port 443, or the range 8000-8100. */
static void pin_key_of(struct pin_elem *e, int kind, const uint8_t ip[4])
{
        pin_key4p(e, ip, IPPROTO_TCP, kind == 1 ? 443 : 8000, kind == 1 ? 443 : 8100);
}

/* Two name:port pins in @ifindex's own set of @kind, as netd pins them (one answer). */
static int pins_fill(struct pinner *pn, unsigned ifindex, int kind)
{
        struct pin_elem pe[2];
        char set[PIN_SET_NAME_MAX];

        for (unsigned k = 0; k < 2; k++)
                pin_key_of(&pe[k], kind, (const uint8_t[4]){ 192, 0, 2, (uint8_t)(10 + k) });
        pin_set4p(ifindex, kind == 2, set);
        return pinner_run(pn, "b4box", set, pe, 2, 3600000) < 0 ? -1 : 0;
}

/* The table, and @threads threads' elements (inert ifindexes) with @pins pins each. */
static int populate(const struct b4_policy *p, struct pinner *pn, unsigned threads, unsigned pins)
{
        struct b4_error err = { 0 };
        struct netpolicy_thread t;

        if (netpolicy_table_install(&err) < 0 || pinner_open(pn) < 0) {
                fprintf(stderr, "net-bench: %s\n", err.msg);
                return -1;
        }
        for (unsigned i = 0; i < threads; i++) {
                struct nft_elems l = { 0 };
                struct pin_elem pe[64];
                unsigned left = pins;

                thread_of(i, &t);
                if (netpolicy_thread_elems(p, &t, &l) < 0 || nft_elems_commit(NULL, &l, &err) < 0) {
                        fprintf(stderr, "net-bench: %s\n", err.msg);
                        return -1;
                }
                if (pin_kind(&l) && pins_fill(pn, t.ifindex, pin_kind(&l)) < 0)
                        return -1;
                nft_elems_release(&l);
                while (left > 0) {
                        unsigned n = left < 64 ? left : 64;

                        for (unsigned k = 0; k < n; k++) {
                                uint8_t ip[4] = { 192, 0, (uint8_t)(2 + (left - k) / 250),
                                                  (uint8_t)((left - k) % 250) };

                                pin_key4(&pe[k], t.ifindex, ip);
                        }
                        if (pinner_run(pn, "b4box", "pin4", pe, n, 3600000) < 0)
                                return -1;
                        left -= n;
                }
        }
        return 0;
}

static int install(unsigned ifindex,
                   const char *addr,
                   unsigned threads,
                   unsigned pins,
                   char **list,
                   size_t n_list)
{
        struct b4_net_entry e[16];
        struct b4_policy p;
        struct b4_error err = { 0 };
        struct pinner pn = { 0 };
        struct nft_elems l = { 0 };
        struct netpolicy_thread t = { .ifindex = ifindex, .netd_port = 5353 };

        if (inet_pton(AF_INET, addr, t.sandbox) != 1 || policy_of(&p, e, list, n_list) < 0 ||
            populate(&p, &pn, threads, pins) < 0)
                return 1;
        if (netpolicy_thread_elems(&p, &t, &l) < 0 || nft_elems_commit(NULL, &l, &err) < 0) {
                fprintf(stderr, "net-bench: %s\n", err.msg);
                return 1;
        }
        nft_elems_release(&l);
        pinner_close(&pn);
        return 0;
}

static int nft_costs(unsigned threads, unsigned pins, size_t runs, char **list, size_t n_list)
{
        struct b4_net_entry e[16];
        struct b4_policy p;
        struct b4_error err = { 0 };
        struct pinner pn = { 0 };
        struct nft_elems one = { 0 }, probe = { 0 };
        struct netpolicy_thread t, tp;
        char probe_set[PIN_SET_NAME_MAX];
        size_t n_pinp = 0;
        int kind;
        double *pin = calloc(runs, sizeof(double)), *add = calloc(runs, sizeof(double)),
               *del = calloc(runs, sizeof(double)), *pinp = calloc(runs, sizeof(double));

        if (policy_of(&p, e, list, n_list) < 0 || populate(&p, &pn, threads, pins) < 0)
                return 1;
        thread_of(threads + 1, &t);
        if (netpolicy_thread_elems(&p, &t, &one) < 0)
                return 1;
        /* the thread the name:port pins go to: installed like the others, 2 pins */
        thread_of(threads, &tp);
        if (netpolicy_thread_elems(&p, &tp, &probe) < 0 || nft_elems_commit(NULL, &probe, &err) < 0)
                return 1;
        kind = pin_kind(&probe);
        pin_set4p(tp.ifindex, kind == 2, probe_set);
        if (kind && pins_fill(&pn, tp.ifindex, kind) < 0)
                return 1;
        for (size_t r = 0; r < runs; r++) {
                struct pin_elem pe;
                uint8_t ip[4] = { 198, 18, (uint8_t)(r >> 8), (uint8_t)r };
                double t0 = now_us();

                pin_key4(&pe, t.ifindex, ip);
                if (pinner_run(&pn, "b4box", "pin4", &pe, 1, 30000) < 0)
                        return 1;
                pin[r] = now_us() - t0;
                if (r < PIN4P_RUNS && kind) {
                        pin_key_of(&pe, kind, ip);
                        t0 = now_us();
                        if (pinner_run(&pn, "b4box", probe_set, &pe, 1, 30000) < 0)
                                return 1;
                        pinp[n_pinp++] = now_us() - t0;
                }
                t0 = now_us();
                if (nft_elems_commit(NULL, &one, &err) < 0)
                        return 1;
                add[r] = now_us() - t0;
                t0 = now_us();
                if (nft_elems_commit(&one, NULL, &err) < 0)
                        return 1;
                del[r] = now_us() - t0;
        }
        printf("elements threads %u pins %u elements_per_thread %zu\n", threads, pins, one.n);
        report("pin_us", pin, runs);
        report("port_pin_us", pinp, n_pinp);
        report("thread_add_us", add, runs);
        report("thread_delete_us", del, runs);
        pinner_close(&pn);
        nft_elems_release(&one);
        nft_elems_release(&probe);
        free(pin);
        free(pinp);
        free(add);
        free(del);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "serve") == 0)
                return serve(argv[2]);
        if (argc == 5 && strcmp(argv[1], "connect") == 0)
                return connect_n(argv[2], argv[3], (size_t)atol(argv[4]));
        if (argc == 5 && strcmp(argv[1], "stream") == 0)
                return stream(argv[2], argv[3], atof(argv[4]));
        if (argc >= 6 && strcmp(argv[1], "install") == 0)
                return install((unsigned)atoi(argv[2]), argv[3], (unsigned)atoi(argv[4]),
                               (unsigned)atoi(argv[5]), argv + 6, (size_t)argc - 6);
        if (argc >= 5 && strcmp(argv[1], "nft") == 0)
                return nft_costs((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]),
                                 (size_t)atol(argv[4]), argv + 5, (size_t)argc - 5);
        fprintf(stderr,
                "usage: net-bench serve PORT | connect ADDR PORT N | stream ADDR PORT SECONDS | "
                "nft THREADS PINS RUNS [ENTRY...] | install IFINDEX ADDR THREADS PINS [ENTRY...]\n");
        return 2;
}
