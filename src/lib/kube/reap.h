/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The PVC reaper behind `b4box kube reap` (reap.c; docs/kubernetes.md "The PVC reaper"). */

#include <stdbool.h>
#include <time.h>

#include "b4box/kube.h"

struct jv;
struct kube_client;

/* The annotations: the reaper's marker, and a managed workspace's record (never reaped). */
#define KUBE_ANNOT_UNREFERENCED     "b4box.io/unreferenced-since"
#define KUBE_ANNOT_WORKSPACE_RECORD "b4box.io/workspace-record"

enum kube_reap_action {
        KUBE_REAP_NONE,
        KUBE_REAP_MARK,   /* unreferenced, no valid marker: mark it now */
        KUBE_REAP_CLEAR,  /* referenced and marked */
        KUBE_REAP_DELETE, /* unreferenced, marked more than the TTL ago */
};

/* What one run does with @pvc (untrusted: a listed object) at @now. A marker that does not
 * parse or lies more than 5 minutes ahead is not valid; a terminating PVC and one with a
 * workspace record get KUBE_REAP_NONE. Pure. */
enum kube_reap_action kube_reap_decide(const struct jv *pvc,
                                       bool referenced,
                                       time_t now,
                                       unsigned ttl_hours);

/* Whether @obj (a listed Pod or PVC, untrusted) is a warm pool pair's whose owner is taken
 * for gone: labelled KUBE_LABEL_POOL_OWNER, never adopted (no thread label), not being
 * deleted, and created more than @ttl_hours before @now (a creationTimestamp that does not
 * parse is not). A live owner refills what this removes. Pure. */
bool kube_reap_pool_expired(const struct jv *obj, time_t now, unsigned ttl_hours);

/* One run in @ns. @fn gets one line per action and a summary. Return: 0 (409/404 skipped),
 * -errno when a list or an API call failed (@err says which). */
int kube_reap_run(struct kube_client *c,
                  const char *ns,
                  unsigned ttl_hours,
                  bool dry_run,
                  time_t now,
                  b4_kube_reap_line_fn *fn,
                  void *userdata,
                  struct b4_error *err);
