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
 *
 * When the Pod cannot run the agent, the link says so instead (kube_agent_conn() answers 0)
 * and every file operation and command goes through the reference's `sh -s` scripts
 * (shell-fs.c), one exec each, run here by kube_agent_shell_run(). Decided per Pod, then
 * kept: no agent on the host (or B4BOX_KUBE_AGENT=off); the copy exits 126 or 127 (the
 * image lacks head, chmod or mv); the agent copied in does not start (a probe exec finds
 * `sh -c /b4/agent` exiting 126 or 127: a binary the image cannot run). Everything else
 * stays an error: an exec the API server refuses or that breaks (the fallback needs the
 * same exec), a copy failing otherwise (a full emptyDir), an image without sh (the
 * fallback needs it too).
 */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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

enum {
        LINK_AGENT,
        LINK_DECIDING,
        LINK_SHELL
};

struct kube_agent {
        struct agent_slot slot; /* the connection, made on first use */
        struct kube_core *core; /* a reference */
        char pod[64];
        bool read_only; /* a reader's: the agent refuses every write */
        /* LINK_SHELL: the Pod cannot run the agent, the sh scripts serve it (shell_why is
         * written by the one caller that moved mode from LINK_AGENT to LINK_DECIDING) */
        atomic_int mode;
        char shell_why[256];
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

/* The Pod goes without the agent: the sh scripts serve it. */
static void use_shell(struct kube_agent *a, const char *fmt, ...) B4_PRINTF(2, 3);

static void use_shell(struct kube_agent *a, const char *fmt, ...)
{
        int agent = LINK_AGENT;
        va_list ap;

        if (!atomic_compare_exchange_strong(&a->mode, &agent, LINK_DECIDING))
                return;
        va_start(ap, fmt);
        (void)vsnprintf(a->shell_why, sizeof(a->shell_why), fmt, ap);
        va_end(ap);
        for (char *p = a->shell_why; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = ' ';
        log_debug("kubernetes: pod \"%s\": %s; the sh scripts serve it", a->pod, a->shell_why);
        atomic_store(&a->mode, LINK_SHELL);
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
        if (res.exit_code == 126 || res.exit_code == 127)
                use_shell(a, "copying b4box-agent into the Pod failed (exit %d: %.120s)",
                          res.exit_code, res.errout ? res.errout : "");
        else if (res.exit_code != 0)
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
        int r;

        atomic_store(&a->mode, LINK_AGENT); /* a new Pod: decided again (exclusive lease) */
        if (!a->core->agent_bin) {
                use_shell(a, "%s", a->core->agent_reason);
                return 0;
        }
        r = install_once(a, err);
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

/* After a failed start: whether the agent copied in cannot run at all (one exec, its
 * output bounded): `sh -c` reports 126 (cannot execute) or 127 (its interpreter or loader
 * is missing). */
static bool agent_cannot_run(struct kube_agent *a)
{
        char sh[] = "sh", dash_c[] = "-c",
             probe[] = KUBE_AGENT_PATH " </dev/null >/dev/null 2>&1; echo $?";
        char *argv[] = { sh, dash_c, probe, NULL };
        struct kube_exec_result res = { 0 };
        bool cannot = false;

        if (kube_agent_run(a, argv, NULL, 0,
                           &(struct kube_shell_run){
                                   .output_cap = 64, .timeout_ms = 10000, .cancel_fd = -EBADF },
                           &res, NULL) >= 0 &&
            res.exit_code == 0)
                cannot = strcmp(res.out, "126\n") == 0 || strcmp(res.out, "127\n") == 0;
        kube_exec_result_clear(&res);
        return cannot;
}

int kube_agent_conn(struct kube_agent *a, struct agent_conn **ret, struct b4_error *err)
{
        struct b4_error e = { 0 };
        int r;

        if (atomic_load(&a->mode) == LINK_SHELL)
                return 0;
        r = agent_slot_get(&a->slot, connect_agent, a, ret, &e);
        if (r >= 0 && !agent_conn_alive(*ret))
                return b4_error_set(err, -ENOTCONN,
                                    "the b4box-agent connection to pod \"%s\" "
                                    "was lost",
                                    a->pod);
        if (r >= 0)
                return 1;
        if (r != -ENOMEM && agent_cannot_run(a)) {
                use_shell(a, "b4box-agent does not start in the Pod (%.120s)", e.msg);
                return 0;
        }
        return b4_error_set(err, r == -ENOMEM ? r : -ENOTCONN,
                            "b4box-agent could not start in pod \"%s\": %s", a->pod, e.msg);
}

bool kube_agent_shell(struct kube_agent *a, const char **ret_why)
{
        bool shell = atomic_load(&a->mode) == LINK_SHELL;

        if (ret_why)
                *ret_why = shell ? a->shell_why : NULL;
        return shell;
}

int kube_agent_run(struct kube_agent *a,
                   char *const *argv,
                   const void *stdin_data,
                   size_t stdin_len,
                   const struct kube_shell_run *o,
                   struct kube_exec_result *ret,
                   struct b4_error *err)
{
        struct kube_exec_target t = { .namespace_name = a->core->namespace,
                                      .pod = a->pod,
                                      .container = KUBE_CONTAINER,
                                      .argv = argv };
        struct kube_exec_run_opts ro = { .stdin_data = stdin_data,
                                         .stdin_len = stdin_len,
                                         .output_cap = o->output_cap,
                                         .timeout_ms = o->timeout_ms,
                                         .cancel_fd = o->cancel_fd };
        struct kube_conn_opts co;
        char *token = NULL;
        int r;

        r = conn_opts(a->core, &co, &token, err);
        if (r >= 0)
                r = kube_exec_run(&co, &t, &ro, ret, err);
        token_free(token);
        return r;
}

int kube_agent_shell_run(struct kube_agent *a,
                         const char *script,
                         size_t len,
                         const struct kube_shell_run *o,
                         struct kube_exec_result *ret,
                         struct b4_error *err)
{
        char cmd[64];
        char sh[] = "sh", dash_c[] = "-c";
        char *argv[] = { sh, dash_c, cmd, NULL };

        /* `head -c N` ends the script under v4 too, which cannot half-close stdin */
        (void)snprintf(cmd, sizeof(cmd), "head -c %zu | sh -s", len);
        return kube_agent_run(a, argv, script, len, o, ret, err);
}

bool kube_agent_lost(struct kube_agent *a)
{
        return agent_slot_lost(&a->slot);
}

void kube_agent_reset(struct kube_agent *a)
{
        agent_slot_reset(&a->slot);
}
