/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handlers' threads: a pool that grows to what is in flight and shrinks when idle. A
 * request's handler may block (a long runBash, an acquire), so it never runs on one of
 * libmicrohttpd's polling threads; but a thread per request costs a clone, a fresh stack and
 * its page faults on every call, which measured as the larger part of a small request's
 * latency. Idle threads wait WORKER_IDLE_MS for the next job before they exit, so a busy
 * server reuses them and an idle one holds none; the number of threads never exceeds the
 * jobs in flight, which libmicrohttpd's connection limit bounds.
 */

#include <errno.h>
#include <pthread.h>

#include "base/time-util.h"
#include "server-internal.h"

#define WORKER_IDLE_MS 30000

void workers_init(struct workers *w)
{
        *w = (struct workers){ 0 };
        (void)pthread_mutex_init(&w->lock, NULL);
        (void)pthread_cond_init(&w->work, NULL);
        (void)pthread_cond_init(&w->gone, NULL);
}

/* Wait for a job (lock held); NULL once idle for WORKER_IDLE_MS or stopping. */
static struct worker_job *next_job(struct workers *w)
{
        uint64_t deadline = now_msec() + WORKER_IDLE_MS;

        while (!w->head && !w->stopping) {
                if (now_msec() >= deadline)
                        return NULL;
                w->idle++;
                (void)cond_wait_until_ms(&w->work, &w->lock, deadline);
                w->idle--;
        }
        struct worker_job *j = w->head;
        if (j) {
                w->head = j->next;
                if (!w->head)
                        w->tail = NULL;
                w->queued--;
        }
        return j;
}

static void *worker_main(void *arg)
{
        struct workers *w = arg;

        (void)pthread_mutex_lock(&w->lock);
        for (struct worker_job *j; (j = next_job(w));) {
                (void)pthread_mutex_unlock(&w->lock);
                j->fn(j); /* may free j */
                (void)pthread_mutex_lock(&w->lock);
        }
        w->threads--;
        (void)pthread_cond_broadcast(&w->gone);
        (void)pthread_mutex_unlock(&w->lock);
        return NULL;
}

int workers_submit(struct workers *w, struct worker_job *job)
{
        pthread_attr_t attr;
        pthread_t t;
        int r = 0;

        job->next = NULL;
        (void)pthread_mutex_lock(&w->lock);
        if (w->stopping) {
                (void)pthread_mutex_unlock(&w->lock);
                return -ESHUTDOWN;
        }
        if (w->tail)
                w->tail->next = job;
        else
                w->head = job;
        w->tail = job;
        w->queued++;
        if (w->idle >= w->queued) {
                (void)pthread_cond_signal(&w->work);
        } else {
                (void)pthread_attr_init(&attr);
                (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&t, &attr, worker_main, w);
                (void)pthread_attr_destroy(&attr);
                if (r == 0) {
                        w->threads++;
                } else if (w->threads == 0) { /* nobody will ever take it */
                        w->head = w->tail = NULL;
                        w->queued--;
                } else {
                        r = 0; /* a running worker takes it when it is free */
                }
        }
        (void)pthread_mutex_unlock(&w->lock);
        return r;
}

void workers_stop(struct workers *w)
{
        (void)pthread_mutex_lock(&w->lock);
        w->stopping = true;
        (void)pthread_cond_broadcast(&w->work);
        while (w->threads > 0)
                (void)pthread_cond_wait(&w->gone, &w->lock);
        (void)pthread_mutex_unlock(&w->lock);
        (void)pthread_mutex_destroy(&w->lock);
        (void)pthread_cond_destroy(&w->work);
        (void)pthread_cond_destroy(&w->gone);
}
