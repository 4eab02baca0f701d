/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client-side token bucket (default 50 QPS, burst 100: kubernetes.md §12). A caller
 * reserves one token and waits for it outside the lock, so concurrent callers queue in
 * order of arrival and none waits for another's sleep.
 */

#include "kube/kube-internal.h"

void kube_bucket_init(struct kube_bucket *b, double qps, unsigned burst, uint64_t now_us)
{
        *b = (struct kube_bucket){ .rate = qps, .burst = burst ? burst : 1, .last_us = now_us };
        b->tokens = b->burst;
        (void)pthread_mutex_init(&b->lock, NULL);
}

void kube_bucket_release(struct kube_bucket *b)
{
        (void)pthread_mutex_destroy(&b->lock);
}

uint64_t kube_bucket_reserve(struct kube_bucket *b, uint64_t now_us)
{
        uint64_t wait = 0;

        if (b->rate <= 0)
                return 0;
        (void)pthread_mutex_lock(&b->lock);
        if (now_us > b->last_us) {
                b->tokens += (double)(now_us - b->last_us) * b->rate / 1e6;
                if (b->tokens > b->burst)
                        b->tokens = b->burst;
                b->last_us = now_us;
        }
        b->tokens -= 1;
        if (b->tokens < 0)
                wait = (uint64_t)(-b->tokens * 1e6 / b->rate + 0.5);
        (void)pthread_mutex_unlock(&b->lock);
        return wait;
}
