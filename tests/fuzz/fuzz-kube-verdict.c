/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the kubernetes provider's decisions on objects the API server sends
 * (src/lib/kube/wait.c kube_pod_verdict(), src/lib/kube/reap.c kube_reap_decide()). Trust
 * boundary: Pod and PVC objects from the API server (and whatever controls its objects).
 * Any JSON gives a known verdict and action; the reason kept for messages stays bounded and
 * free of control characters.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kube/provider.h"
#include "kube/reap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (256 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct jv *v = NULL;
        char why[KUBE_WHY_MAX];

        if (size > FUZZ_MAX_INPUT || jv_parse((const char *)data, size, &v, NULL) < 0)
                return 0;
        for (unsigned seen = 1; seen <= 2; seen++) {
                enum kube_pod_verdict k;
                size_t n;

                memset(why, 'x', sizeof(why));
                why[0] = '\0';
                k = kube_pod_verdict(v, seen, why);
                if (k != KUBE_POD_WAIT && k != KUBE_POD_RUNNING && k != KUBE_POD_FAILED)
                        abort();
                n = strnlen(why, sizeof(why));
                if (n >= sizeof(why))
                        abort();
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
                                abort();
        }
        for (int referenced = 0; referenced <= 1; referenced++) {
                enum kube_reap_action a = kube_reap_decide(v, referenced, 1796126400, 168);

                if (a != KUBE_REAP_NONE && a != KUBE_REAP_MARK && a != KUBE_REAP_CLEAR &&
                    a != KUBE_REAP_DELETE)
                        abort();
                if (referenced && (a == KUBE_REAP_MARK || a == KUBE_REAP_DELETE))
                        abort(); /* a referenced PVC is never marked or deleted */
        }
        jv_unref(v);
        return 0;
}
