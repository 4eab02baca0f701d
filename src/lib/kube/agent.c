/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box-agent in a keeper Pod (docs/kubernetes.md, "No exec per file"): the host's binary
 * is copied into the Pod's memory emptyDir at KUBE_AGENT_DIR by one exec with the binary on
 * stdin (`head -c N`, so that it ends under v4 too, which cannot half-close stdin), then one
 * long-lived exec runs it and kube_exec_transport() makes that exec's stdin/stdout the agent
 * connection's byte stream. File operations, walks, reads and commands then cost no API
 * request. The agent lives where the sandbox can replace it: src/lib/agent parses every
 * reply as hostile.
 *
 * As in the Docker provider, the connection is made on first use and kept until lost; only
 * reset (exclusive lease, or free) replaces it.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent/agent-client.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "kube/exec.h"
#include "kube/kube.h"
#include "kube/provider.h"

#define INSTALL_TIMEOUT_MS     60000u
#define INSTALL_RETRY_DELAY_US 200000u

struct kube_agent {
        struct agent_slot slot; /* the connection, made on first use */
        struct kube_core *core; /* a reference */
        char pod[64];
        bool read_only; /* a reader's: the agent refuses every write */
};

int kube_agent_new(struct kube_core *c, const char *pod, bool read_only, struct kube_agent **ret)
{
        struct kube_agent *a = b4_calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        agent_slot_init(&a->slot);
        kube_core_ref(c);
        a->core = c;
        (void)snprintf(a->pod, sizeof(a->pod), "%s", pod);
        a->read_only = read_only;
        *ret = a;
        return 0;
}

struct kube_agent *kube_agent_free(struct kube_agent *a)
{
        if (!a)
                return NULL;
        agent_slot_clear(&a->slot);
        kube_core_unref(a->core);
        free(a);
        return NULL;
}

/* The exec connection's options: the REST client's server, TLS and current token. */
static int conn_opts(struct kube_core *c,
                     struct kube_conn_opts *ret,
                     char **ret_token,
                     struct b4_error *err)
{
        const struct kube_config *k = kube_client_config(c->client);
        int r;

        r = kube_client_token(c->client, ret_token, err);
        if (r < 0)
                return r;
        *ret = (struct kube_conn_opts){
                .server = k->server,
                .token = *ret_token ? *ret_token : k->token,
                .ca_file = k->ca_file,
                .ca_blob = k->ca_pem,
                .ca_blob_len = k->ca_pem_len,
                .cert_file = k->cert_file,
                .cert_blob = k->cert_pem,
                .cert_blob_len = k->cert_pem_len,
                .key_file = k->key_file,
                .key_blob = k->key_pem,
                .key_blob_len = k->key_pem_len,
        };
        return 0;
}

static void token_free(char *t)
{
        if (t) {
                explicit_bzero(t, strlen(t));
                free(t);
        }
}

static int install_once(struct kube_agent *a, struct b4_error *err)
{
        struct kube_core *c = a->core;
        cleanup_free char *script = NULL;
        struct kube_exec_result res = { 0 };
        struct kube_conn_opts o;
        char *token = NULL;
        uint64_t tmp = 0;
        int r;

        if (!c->agent_bin)
                return b4_error_set(err, -ENOENT, "%s", c->agent_reason);
        /* a temporary name of its own: two replicas may install into one Pod at once, and
         * $$ is no help where each exec has its own PID namespace */
        if (getrandom(&tmp, sizeof(tmp), 0) != sizeof(tmp))
                tmp = (uint64_t)now_usec();
        if (b4_asprintf(
                    &script,
                    "head -c %zu >" KUBE_AGENT_DIR "/.agent.%016llx && chmod 0555 " KUBE_AGENT_DIR
                    "/.agent.%016llx && mv -f " KUBE_AGENT_DIR "/.agent.%016llx " KUBE_AGENT_PATH,
                    c->agent_len, (unsigned long long)tmp, (unsigned long long)tmp,
                    (unsigned long long)tmp) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        char sh[] = "sh", dash_c[] = "-c";
        char *argv[] = { sh, dash_c, script, NULL };
        struct kube_exec_target t = { .namespace_name = c->namespace,
                                      .pod = a->pod,
                                      .container = KUBE_CONTAINER,
                                      .argv = argv };
        struct kube_exec_run_opts ro = { .stdin_data = c->agent_bin,
                                         .stdin_len = c->agent_len,
                                         .output_cap = 4096,
                                         .timeout_ms = INSTALL_TIMEOUT_MS,
                                         .cancel_fd = -EBADF };

        r = conn_opts(c, &o, &token, err);
        if (r >= 0)
                r = kube_exec_run(&o, &t, &ro, &res, err);
        token_free(token);
        if (r < 0)
                return b4_error_wrap(err, r, "copying b4box-agent into pod \"%s\"", a->pod);
        if (res.exit_code != 0)
                r = b4_error_set(err, -EIO,
                                 "copying b4box-agent into pod \"%s\" failed (exit %d): %.200s",
                                 a->pod, res.exit_code, res.errout ? res.errout : "");
        kube_exec_result_clear(&res);
        return r < 0 ? r : 0;
}

/* The copy is idempotent (a temporary file, then an atomic rename), so a failed one is tried
 * once more: an exec into a container that has just started can fail on its own. */
int kube_agent_install(struct kube_agent *a, struct b4_error *err)
{
        int r = install_once(a, err);

        if (r < 0 && r != -ENOMEM && r != -ENOENT && r != -EACCES && r != -EPERM) {
                log_debug("kubernetes: %s; copying again", err ? err->msg : "");
                (void)usleep(INSTALL_RETRY_DELAY_US);
                r = install_once(a, err);
        }
        return r;
}

static int connect_agent(void *userdata, struct agent_conn **ret, struct b4_error *err)
{
        struct kube_agent *a = userdata;
        char agent[] = KUBE_AGENT_PATH, ro[] = "--read-only";
        char *argv[] = { agent, a->read_only ? ro : NULL, NULL };
        struct kube_exec_target t = { .namespace_name = a->core->namespace,
                                      .pod = a->pod,
                                      .container = KUBE_CONTAINER,
                                      .argv = argv };
        struct agent_transport tr;
        struct kube_conn_opts o;
        char *token = NULL;
        int r;

        r = conn_opts(a->core, &o, &token, err);
        if (r >= 0)
                r = kube_exec_transport(&o, &t, -EBADF, &tr, err);
        token_free(token);
        if (r < 0)
                return r;
        return agent_conn_open(&tr, NULL, ret, err);
}

int kube_agent_conn(struct kube_agent *a, struct agent_conn **ret, struct b4_error *err)
{
        struct b4_error e = { 0 };
        int r = agent_slot_get(&a->slot, connect_agent, a, ret, &e);

        if (r >= 0 && !agent_conn_alive(*ret))
                return b4_error_set(err, -ENOTCONN,
                                    "the b4box-agent connection to pod \"%s\" "
                                    "was lost",
                                    a->pod);
        if (r >= 0)
                return 0;
        return b4_error_set(err, r == -ENOMEM ? r : -ENOTCONN,
                            "b4box-agent could not start in pod \"%s\": %s", a->pod, e.msg);
}

bool kube_agent_lost(struct kube_agent *a)
{
        return agent_slot_lost(&a->slot);
}

void kube_agent_reset(struct kube_agent *a)
{
        agent_slot_reset(&a->slot);
}
