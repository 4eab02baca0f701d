/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-http-load: a small closed-loop HTTP/1.1 load generator for the b4box API.
 *
 *   b4box-http-load HOST PORT CONNECTIONS SECONDS PATH_TEMPLATE BODY
 *
 * Each connection is one keep-alive TCP connection driven by its own pthread; PATH_TEMPLATE's
 * "%d" is replaced by the connection's index (so each connection can work its own thread).
 * Prints one line: calls/s, p50 and p99 latency in microseconds, and the error count.
 * Loopback only: it refuses any host but 127.0.0.1. With $B4BOX_TOKEN set, requests carry
 * "Authorization: Bearer $B4BOX_TOKEN".
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1u << 22)

struct worker {
        int index;
        const char *host;
        int port;
        double seconds;
        const char *path_tmpl;
        const char *body;
        uint32_t *lat_us; /* samples */
        size_t n;
        size_t errors;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(const char *host, int port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        int fd, one = 1;

        if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
                return -1;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* Read one response; returns the status or -1. */
static int read_response(int fd, char *buf, size_t cap)
{
        size_t len = 0;
        long clen = -1;
        char *hdr_end = NULL;

        for (;;) {
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n <= 0)
                        return -1;
                len += (size_t)n;
                buf[len] = '\0';
                if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n"))) {
                        char *cl = strcasestr(buf, "Content-Length:");
                        clen = cl ? strtol(cl + 15, NULL, 10) : 0;
                }
                if (hdr_end && (long)(len - (size_t)(hdr_end + 4 - buf)) >= clen)
                        return atoi(buf + 9);
                if (len + 1 >= cap)
                        return -1;
        }
}

static void *run(void *arg)
{
        struct worker *w = arg;
        char path[512], req[65536], *resp = malloc(64 << 20);
        int fd = connect_to(w->host, w->port);
        double end = now_s() + w->seconds;
        int reqlen;

        const char *token = getenv("B4BOX_TOKEN");
        char auth[512] = "";

        if (token)
                snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", token);
        snprintf(path, sizeof(path), w->path_tmpl, w->index);
        reqlen = snprintf(req, sizeof(req),
                          "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                          "%sContent-Length: %zu\r\n\r\n%s",
                          path, w->host, w->port, auth, strlen(w->body), w->body);
        while (fd >= 0 && resp && now_s() < end && w->n < MAX_SAMPLES) {
                double t0 = now_s();
                if (write(fd, req, (size_t)reqlen) != reqlen ||
                    read_response(fd, resp, 64 << 20) != 200) {
                        w->errors++;
                        close(fd);
                        fd = connect_to(w->host, w->port);
                        continue;
                }
                w->lat_us[w->n++] = (uint32_t)((now_s() - t0) * 1e6);
        }
        if (fd >= 0)
                close(fd);
        free(resp);
        return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        if (argc != 7) {
                fprintf(stderr, "usage: %s HOST PORT CONNECTIONS SECONDS PATH_TEMPLATE BODY\n",
                        argv[0]);
                return 2;
        }
        if (strcmp(argv[1], "127.0.0.1") != 0) {
                fprintf(stderr, "loopback only\n");
                return 2;
        }
        int conns = atoi(argv[3]);
        double secs = atof(argv[4]);
        struct worker *w = calloc((size_t)conns, sizeof(*w));
        pthread_t *th = calloc((size_t)conns, sizeof(*th));
        size_t total = 0, errors = 0;

        for (int i = 0; i < conns; i++) {
                w[i] = (struct worker){
                        .index = i,
                        .host = argv[1],
                        .port = atoi(argv[2]),
                        .seconds = secs,
                        .path_tmpl = argv[5],
                        .body = argv[6],
                        .lat_us = malloc(sizeof(uint32_t) * MAX_SAMPLES / (size_t)conns + 1)
                };
                pthread_create(&th[i], NULL, run, &w[i]);
        }
        uint32_t *all = malloc(sizeof(uint32_t) * MAX_SAMPLES);
        for (int i = 0; i < conns; i++) {
                pthread_join(th[i], NULL);
                memcpy(all + total, w[i].lat_us, w[i].n * sizeof(uint32_t));
                total += w[i].n;
                errors += w[i].errors;
                free(w[i].lat_us);
        }
        qsort(all, total, sizeof(uint32_t), cmp_u32);
        printf("%.0f calls/s  p50 %u us  p99 %u us  errors %zu\n", (double)total / secs,
               total ? all[total / 2] : 0, total ? all[(size_t)((double)total * 0.99)] : 0, errors);
        free(all);
        free(w);
        free(th);
        return 0;
}
