/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box serve: the HTTP API over the configured provider and the state dir's store. Runs
 * until SIGTERM or SIGINT, reaping idle sandboxes every reap interval; on a signal it stops
 * accepting, lets runs finish within the shutdown deadline, then releases every sandbox.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/state.h"

#include "base/strv.h"
#include "cli.h"
#include "server/server.h"

#define REAP_INTERVAL_MS     60000u
#define SHUTDOWN_DEADLINE_MS 30000u

struct serve_args {
        const char *listen;
        uint64_t reap_interval_ms;
        bool mcp_lifecycle_tools; /* POST /mcp offers createThread ... deleteThread */
};

static int parse_args(int argc, char **argv, struct serve_args *a)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
                        a->listen = argv[++i];
                } else if (strcmp(argv[i], "--reap-interval-ms") == 0 && i + 1 < argc) {
                        a->reap_interval_ms = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--mcp-lifecycle-tools") == 0) {
                        a->mcp_lifecycle_tools = true;
                } else if (strcmp(argv[i], "--log-format") == 0 && i + 1 < argc) {
                        const char *f = argv[++i];

                        if (strcmp(f, "json") != 0 && strcmp(f, "logfmt") != 0) {
                                cli_error("serve: --log-format must be logfmt or json (got '%s')",
                                          f);
                                return -EINVAL;
                        }
                        server_log_set_format(strcmp(f, "json") == 0 ? SERVER_LOG_JSON
                                                                     : SERVER_LOG_LOGFMT);
                } else {
                        cli_error("serve: unexpected argument '%s'", argv[i]);
                        return -EINVAL;
                }
        }
        return 0;
}

/* Wait for SIGTERM/SIGINT, reaping idle sandboxes in between. */
static void wait_for_signal(struct b4_runtime *rt, uint64_t reap_ms)
{
        sigset_t set;
        struct timespec ts = { .tv_sec = (time_t)(reap_ms / 1000),
                               .tv_nsec = (long)(reap_ms % 1000) * 1000000L };

        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        for (;;) {
                int sig = sigtimedwait(&set, NULL, &ts);
                if (sig == SIGTERM || sig == SIGINT)
                        return;
                struct timespec now;
                (void)clock_gettime(CLOCK_MONOTONIC, &now);
                (void)b4_runtime_reap_idle(rt, (uint64_t)now.tv_sec * 1000 +
                                                       (uint64_t)now.tv_nsec / 1000000);
        }
}

struct serve_state {
        struct b4_config *cfg;
        struct b4_store *store;
        struct b4_provider *provider;
        struct b4_runtime *rt;
        struct server *srv;
        struct server *_Atomic observed; /* st->srv once it serves; the runtime's observer */
};

static void serve_observe(void *data, enum b4_runtime_event ev, uint64_t usec)
{
        struct serve_state *st = data;

        server_observe(atomic_load(&st->observed), ev, usec);
}

static void serve_state_clear(struct serve_state *st)
{
        atomic_store(&st->observed, NULL); /* the runtime's last releases are not counted */
        st->srv = server_free(st->srv);
        st->rt = b4_runtime_free(st->rt);
        st->provider = b4_provider_free(st->provider);
        st->store = b4_store_close(st->store);
        st->cfg = b4_config_free(st->cfg);
}

/* After a crash: finish interrupted deletions, remove what belongs to no thread. */
static int reconcile(struct b4_runtime *rt, struct b4_error *err)
{
        struct b4_reconcile_stats rs = { 0 };
        int r;

        r = b4_runtime_reconcile(rt, &rs, err);
        if (r < 0)
                return b4_error_wrap(err, r, "cannot reconcile the state dir");
        char threads[24], finished[24], swept[24];

        (void)snprintf(threads, sizeof(threads), "%zu", rs.threads);
        (void)snprintf(finished, sizeof(finished), "%zu", rs.deletions_finished);
        (void)snprintf(swept, sizeof(swept), "%d", rs.swept);
        server_log("info", "reconciled", "threads", threads, "deletions_finished", finished,
                   "swept", swept, NULL);
        return 0;
}

static int serve_open(struct serve_state *st,
                      const struct cli_ctx *ctx,
                      const struct serve_args *a,
                      struct b4_error *err)
{
        struct b4_runtime_options ro = { 0 };
        int r;

        if (cli_load_config(ctx, &st->cfg, NULL) != 0)
                return -EINVAL;
        st->cfg->sandbox.provider.kube_pool_fill = true; /* a warm pool is the server's to fill */
        st->cfg->sandbox.provider.kube_informer = true;  /* one Pod watch for the process */
        r = b4_store_open(st->cfg->sandbox.provider.state_dir, B4_STORE_EXCLUSIVE, &st->store, err);
        if (r >= 0)
                r = b4_provider_new(&st->cfg->sandbox.provider, &st->provider, err);
        if (r < 0)
                return r;
        ro = (struct b4_runtime_options){ .provider = st->provider,
                                          .store = st->store,
                                          .policy = b4_config_policy(st->cfg),
                                          .idle_timeout_ms = st->cfg->sandbox.idle_timeout_ms,
                                          .idle_pause_ms = st->cfg->sandbox.idle_pause_ms,
                                          .config = st->cfg,
                                          .observe = serve_observe,
                                          .observe_data = st };
        r = b4_runtime_new(&ro, &st->rt, err);
        if (r < 0)
                return r;
        r = reconcile(st->rt, err);
        if (r < 0)
                return r;
        struct b4_preflight pf = { 0 };
        /* the rows `b4box check` prints for this config: NOT ENFORCED ones become gauges */
        bool have_pf = b4_provider_preflight(st->provider, &pf, NULL) >= 0 &&
                       b4_preflight_apply_policy(&pf, b4_config_policy(st->cfg)) >= 0;
        STRV_FOREACH (w, have_pf ? pf.warnings : NULL) /* what check would warn about */
                server_log("warning", *w, NULL);
        struct server_options so = { .config = st->cfg,
                                     .listen = a->listen,
                                     .mcp_lifecycle_tools = a->mcp_lifecycle_tools,
                                     .runtime = st->rt,
                                     .provider_name = b4_provider_name(st->provider),
                                     .preflight = have_pf ? &pf : NULL };
        r = server_start(&so, &st->srv, err);
        b4_preflight_clear(&pf);
        if (r >= 0)
                atomic_store(&st->observed, st->srv);
        return r;
}

/*
 * Tell a service manager where we are (sd_notify(3)'s datagram protocol, without libsystemd):
 * "READY=1" once the API answers, "STOPPING=1" when shutting down. NOTIFY_SOCKET names a
 * unix datagram socket, "@" for the abstract namespace. Best effort: no manager, no message.
 */
static void notify(const char *state)
{
        const char *path = secure_getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = path ? strlen(path) : 0;
        int fd;

        if (n == 0 || n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
                return;
        memcpy(sa.sun_path, path, n);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0';
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return;
        (void)sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
        (void)close(fd);
}

int cmd_serve(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct serve_args a = { .reap_interval_ms = REAP_INTERVAL_MS };
        struct serve_state st = { 0 };
        struct b4_error err = { 0 };
        sigset_t set;

        if (parse_args(argc, argv, &a) < 0)
                return CLI_USAGE;
        /* Block the signals before any thread starts, so only sigtimedwait() sees them. */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        (void)pthread_sigmask(SIG_BLOCK, &set, NULL);
        if (serve_open(&st, ctx, &a, &err) < 0) {
                serve_state_clear(&st);
                return err.error ? cli_fail(&err) : CLI_EXIT_FAILED;
        }
        server_log("info", "serving", "address", server_address(st.srv), "provider",
                   b4_provider_name(st.provider), "state", st.cfg->sandbox.provider.state_dir,
                   NULL);
        notify("READY=1\nSTATUS=serving");
        wait_for_signal(st.rt, a.reap_interval_ms ? a.reap_interval_ms : REAP_INTERVAL_MS);
        server_log("info", "shutting down", NULL);
        notify("STOPPING=1");
        server_quiesce(st.srv);
        b4_runtime_shutdown(st.rt, SHUTDOWN_DEADLINE_MS);
        serve_state_clear(&st);
        return CLI_EXIT_OK;
}
