/* SPDX-License-Identifier: Apache-2.0 */
/* The scripted server of kube-server.h. */

#include "kube-server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "b4-test.h"

char *ks_resp(int code, const char *headers, const char *body)
{
        char *r = NULL;

        body = body ? body : "";
        if (asprintf(&r, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n%s",
                     code, strlen(body), headers ? headers : "", body) < 0)
                abort();
        return r;
}

void ks_add(struct ks *s, char *raw, bool hang, ks_hook_fn hook)
{
        assert_true(s->n < KS_MAX);
        s->replies[s->n++] = (struct ks_reply){ .raw = raw, .hang = hang, .hook = hook };
}

static void read_request(int fd, char *buf)
{
        size_t len = 0;

        while (len < KS_REQ_MAX - 1) {
                ssize_t k = read(fd, buf + len, KS_REQ_MAX - 1 - len);
                char *end;
                if (k <= 0)
                        break;
                len += (size_t)k;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
                if (!end)
                        continue;
                const char *cl = strcasestr(buf, "Content-Length:");
                if (len >= (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0))
                        break;
        }
}

static void *serve(void *userdata)
{
        struct ks *s = userdata;

        for (size_t i = 0; i < s->n; i++) {
                struct pollfd p = { .fd = s->stop[0], .events = POLLIN };
                int fd = accept(s->listen_fd, NULL, NULL);
                if (fd < 0)
                        return NULL;
                read_request(fd, s->requests[i]);
                pthread_mutex_lock(&s->lock);
                s->served = i + 1;
                pthread_mutex_unlock(&s->lock);
                if (s->replies[i].hook)
                        s->replies[i].hook(s, i);
                (void)send(fd, s->replies[i].raw, strlen(s->replies[i].raw), MSG_NOSIGNAL);
                if (s->replies[i].hang)
                        (void)poll(&p, 1, 20000);
                (void)close(fd);
        }
        return NULL;
}

void ks_start(struct ks *s)
{
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t n = sizeof(sa);

        assert_int_equal(pipe(s->stop), 0);
        pthread_mutex_init(&s->lock, NULL);
        s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *)&sa, &n), 0);
        assert_int_equal(listen(s->listen_fd, 8), 0);
        (void)snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
        assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

void ks_stop(struct ks *s)
{
        (void)!write(s->stop[1], "x", 1);
        (void)shutdown(s->listen_fd, SHUT_RDWR);
        (void)pthread_join(s->thread, NULL);
        (void)close(s->listen_fd);
        (void)close(s->stop[0]);
        (void)close(s->stop[1]);
        for (size_t i = 0; i < s->n; i++)
                free(s->replies[i].raw);
        pthread_mutex_destroy(&s->lock);
}

size_t ks_served(struct ks *s)
{
        size_t n;

        pthread_mutex_lock(&s->lock);
        n = s->served;
        pthread_mutex_unlock(&s->lock);
        return n;
}
