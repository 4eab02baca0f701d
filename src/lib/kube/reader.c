/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace readers on Kubernetes (docs/kubernetes-provider.md, "Readers"; the design
 * brief's §8): a separate Pod b4-sbx-rdr-<id>-<8 hex> that mounts the thread's PVC
 * readOnly, pinned to the keeper's node when a keeper runs (ReadWriteOnce is per node), with
 * no fsGroup (it never changes a file's group) and no thread label (the thread's policy
 * does not select it; the chart denies readers everything). It never touches the keeper and
 * takes no lifecycle lease. Its b4box-agent runs with --read-only and serves every read (a Pod
 * that cannot run it is read through the sh scripts, shell-fs.c).
 *
 * The PVC must exist, be Bound and not be terminating: a reader never mounts an unbound
 * claim (that would provision an empty one). close deletes the reader Pod.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "agent/agent-client.h"
#include "agent/agent-fs-ops.h"
#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube/kube.h"
#include "kube/provider.h"
#include "kube/shell-fs.h"

struct kube_reader {
        struct b4_reader base;
        struct kube_core *core; /* a reference */
        char name[64];
        struct kube_agent *agent; /* owned */
        pthread_mutex_t lock;
        bool closed; /* the Pod is deleted (close is idempotent) */
};

static struct kube_reader *of_fs(struct b4_fs *fs)
{
        return container_of(fs, struct kube_reader, base.fs);
}

/* agent_fs_ops' getter: the reader's own agent (0: the sh scripts serve it). */
static int r_conn(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err)
{
        return kube_agent_conn(of_fs(fs)->agent, ret, err);
}

static const struct agent_fs_ops reader_fs_ops = {
        .ops = { AGENT_FS_READ_MEMBERS },
        .conn = r_conn,
        .fallback = &kube_shell_fs_ops, /* its reads only: a reader has no write member */
};

struct kube_agent *kube_reader_agent(struct b4_reader *r)
{
        return container_of(r, struct kube_reader, base)->agent;
}

static int delete_reader_pod(struct kube_core *c, const char *name, struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", c->namespace, "pods", name, NULL);
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_delete(c->client, path, "gracePeriodSeconds=0", err);
        return r == -ENOENT ? 0 : r;
}

static int reader_close(struct b4_reader *r, struct b4_error *err)
{
        struct kube_reader *rd = container_of(r, struct kube_reader, base);
        bool was;
        int res = 0;

        (void)pthread_mutex_lock(&rd->lock);
        was = rd->closed;
        rd->closed = true;
        (void)pthread_mutex_unlock(&rd->lock);
        if (was)
                return 0;
        kube_agent_reset(rd->agent);
        res = delete_reader_pod(rd->core, rd->name, err);
        return res < 0 ? b4_error_wrap(err, res, "removing reader pod \"%s\"", rd->name) : 0;
}

static void reader_free(struct b4_reader *r)
{
        struct kube_reader *rd = container_of(r, struct kube_reader, base);

        (void)reader_close(r, NULL);
        kube_agent_free(rd->agent);
        kube_core_unref(rd->core);
        (void)pthread_mutex_destroy(&rd->lock);
        free(rd);
}

static const struct b4_reader_ops reader_ops = {
        .close = reader_close,
        .free = reader_free,
};

static int no_storage(const char *thread_id, int r, struct b4_error *err)
{
        return b4_error_set_code(err, r < 0 && r != -ENOENT ? r : -ENOENT,
                                 B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: no workspace storage for thread \"%s\". It "
                                 "was never created, or it was destroyed.",
                                 thread_id);
}

/* The claim must be Bound and not going away. */
static int check_pvc(struct kube_core *c,
                     const struct kube_names *n,
                     const char *thread_id,
                     struct b4_error *err)
{
        cleanup_free char *path =
                kube_path("v1", c->namespace, "persistentvolumeclaims", n->pvc, NULL);
        cleanup_(jv_unrefp) struct jv *pvc = NULL;
        struct b4_error e = { 0 };
        const char *phase;
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_get(c->client, path, &pvc, &e);
        if (r == -ENOENT)
                return no_storage(thread_id, r, err);
        if (r < 0)
                return b4_error_set_code(
                        err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                        "Sandbox unavailable: could not read persistentvolumeclaim "
                        "\"%s\": %s",
                        n->pvc, e.msg);
        phase = jv_string(jv_object_get(jv_object_get(pvc, "status"), "phase"));
        if (!phase || strcmp(phase, "Bound") != 0 ||
            jv_object_get(jv_object_get(pvc, "metadata"), "deletionTimestamp"))
                return no_storage(thread_id, -ENOENT, err);
        return 0;
}

/* The node of a running keeper, to pin the reader there (RWO is per node); NULL: none. */
static char *keeper_node(struct kube_core *c, const struct kube_names *n)
{
        cleanup_free char *path = kube_path("v1", c->namespace, "pods", n->pod, NULL);
        cleanup_(jv_unrefp) struct jv *pod = NULL;
        const char *node;

        if (!path || kube_get(c->client, path, &pod, NULL) < 0)
                return NULL;
        node = jv_string(jv_object_get(jv_object_get(pod, "spec"), "nodeName"));
        return node && *node ? b4_strdup(node) : NULL;
}

static int start_reader(struct kube_reader *rd,
                        const struct kube_names *n,
                        const struct b4_reader_req *req,
                        struct b4_error *err)
{
        struct kube_core *c = rd->core;
        uint64_t deadline = now_msec() + c->startup_timeout_ms;
        cleanup_free char *node = keeper_node(c, n);
        cleanup_free char *coll = kube_path("v1", c->namespace, "pods", NULL, NULL);
        cleanup_(jv_unrefp) struct jv *body = NULL, *made = NULL;
        struct kube_reader_spec s = { .names = n,
                                      .name = rd->name,
                                      .namespace = c->namespace,
                                      .image = c->image,
                                      .node = node,
                                      .run_as_non_root = req->run_as_non_root,
                                      .uid = req->uid,
                                      .gid = req->gid };
        const char *rv;
        int r;

        if (!coll || kube_reader_pod(&s, &body) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_create(c->client, coll, body, &made, err);
        if (r < 0)
                return r;
        rv = jv_string(jv_object_get(jv_object_get(made, "metadata"), "resourceVersion"));
        r = kube_pod_wait_running(c, rd->name, rv, deadline, c->startup_timeout_ms,
                                  b4_cancel_fd(req->cancel), NULL, err);
        if (r >= 0)
                r = kube_agent_install(rd->agent, err);
        return r;
}

int kube_reader_open(struct kube_core *c,
                     const struct b4_reader_req *req,
                     const struct kube_names *names,
                     struct b4_reader **ret,
                     struct b4_error *err)
{
        struct kube_reader *rd;
        struct kube_names n;
        struct b4_error e = { 0 };
        uint32_t rnd = 0;
        char suffix[9];
        int r;

        if (b4_cancel_is_set(req->cancel))
                return b4_error_set(err, -ECANCELED, "cancelled");
        if (names)
                n = *names;
        else if (kube_names_of(c->scope, req->thread_id, &n) < 0)
                return b4_error_set(err, -EINVAL, "invalid thread id");
        r = check_pvc(c, &n, req->thread_id, err);
        if (r < 0)
                return r;
        rd = b4_calloc(1, sizeof(*rd));
        if (!rd)
                return b4_error_set(err, -ENOMEM, "out of memory");
        (void)pthread_mutex_init(&rd->lock, NULL);
        kube_core_ref(c);
        rd->core = c;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = (uint32_t)now_usec();
        (void)snprintf(suffix, sizeof(suffix), "%08x", rnd);
        r = kube_reader_name(&n, suffix, rd->name);
        if (r >= 0)
                r = kube_agent_new(c, rd->name, true, &rd->agent);
        if (r >= 0)
                r = b4_reader_init(&rd->base, &reader_ops, &reader_fs_ops.ops, req->thread_id);
        if (r < 0) {
                kube_agent_free(rd->agent);
                kube_core_unref(c);
                free(rd);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        r = start_reader(rd, &n, req, &e);
        if (r < 0) {
                b4_reader_free(&rd->base); /* deletes the Pod */
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: could not open a workspace reader "
                                         "for thread \"%s\": %s",
                                         req->thread_id, e.msg);
        }
        *ret = &rd->base;
        return 0;
}
