/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes operations beyond the provider: the PVC reaper the b4-sandbox-infra chart's
 * CronJob runs as `b4box kube reap` (docs/kubernetes.md, "The PVC reaper").
 */

#include <stdbool.h>

#include "b4box/config.h"
#include "b4box/error.h"

#define B4_KUBE_REAP_DEFAULT_TTL_HOURS 168u
#define B4_KUBE_REAP_MAX_TTL_HOURS     87600u

struct b4_kube_reap_opts {
        /* the configured provider: its kubernetes keys when its type is "kubernetes", else
         * (or NULL) the in-cluster service account ($KUBECONFIG, ~/.kube/config outside one) */
        const struct b4_provider_config *provider;
        const char *namespace; /* NULL: the provider's namespace, else "b4-sandboxes" */
        unsigned ttl_hours;    /* 0: B4_KUBE_REAP_DEFAULT_TTL_HOURS; at most the max */
        bool dry_run;          /* say what would be done, write nothing */
};

/* One line of output ("mark <pvc>", "would delete <pvc>", the summary); @line is borrowed. */
typedef void b4_kube_reap_line_fn(const char *line, void *userdata);

/**
 * b4_kube_reap() - one run of the PVC reaper: mark unreferenced b4 PVCs, clear the marker of
 * referenced ones, delete those marked more than the TTL ago (preconditions: the listed uid
 * and resourceVersion); a PVC that changed (409) or went (404) is skipped for the next run;
 * terminating PVCs and managed workspace records are never touched.
 * Return: 0 (the run completed), -EINVAL (a bad option), or -errno when the configuration,
 * a list or an API call failed (@err says which).
 */
B4_PUBLIC int b4_kube_reap(const struct b4_kube_reap_opts *o,
                           b4_kube_reap_line_fn *fn,
                           void *userdata,
                           struct b4_error *err);
