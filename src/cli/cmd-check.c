/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box check`: load and validate the configuration (-c FILE, else ./b4box.json when
 * present, else the defaults), construct the provider, run its preflight and print which
 * controls are enforced. Every refusal is printed as "b4box: <message>" on stderr.
 * Exit: 0 ok, 1 refused or failed, 2 usage.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"

DEFINE_CLEANUP_FUNC(struct b4_config, b4_config_free)
DEFINE_CLEANUP_FUNC(struct b4_provider, b4_provider_free)

static void preflight_clearp(struct b4_preflight *p)
{
        b4_preflight_clear(p);
}

/* Network lists are configurable but no provider filters by host: say so. */
static int add_config_controls(const struct b4_config *cfg, struct b4_preflight *pf)
{
        const struct b4_policy *p = b4_config_policy(cfg);
        size_t n = strv_length(p->network_list);

        if (n == 0)
                return 0;
        return b4_preflight_control(
                pf, p->network == B4_NETWORK_DENY ? "network allowlist" : "network denylist",
                B4_NOT_ENFORCED, "%zu entr%s configured; b4box does not filter by host", n,
                n == 1 ? "y" : "ies");
}

static const char *state_name(enum b4_enforcement s)
{
        switch (s) {
        case B4_ENFORCED:
                return "enforced";
        case B4_NOT_ENFORCED:
                return "NOT ENFORCED";
        case B4_NOT_APPLICABLE:
                break;
        }
        return "n/a";
}

static void print_table(const struct b4_preflight *pf)
{
        size_t counts[3] = { 0 };

        printf("%-24s %-13s %s\n", "CONTROL", "STATE", "DETAIL");
        for (size_t i = 0; i < pf->n_controls; i++) {
                const struct b4_control *c = &pf->controls[i];

                printf("%-24s %-13s %s\n", c->name, state_name(c->state),
                       c->detail ? c->detail : "");
                if ((unsigned)c->state < ELEMENTSOF(counts))
                        counts[c->state]++;
        }
        printf("ok: %zu enforced, %zu not enforced, %zu n/a\n", counts[B4_ENFORCED],
               counts[B4_NOT_ENFORCED], counts[B4_NOT_APPLICABLE]);
}

static void print_managed(const struct b4_config *cfg)
{
        const struct b4_sandbox_config *s = &cfg->sandbox;

        if (s->workspace_kind == B4_WORKSPACE_RESOLVER)
                printf("workspace: managed workspace is resolved per thread\n");
        else if (s->workspace_kind == B4_WORKSPACE_STATIC)
                printf("workspace: static definition from %s (%zu files listed)\n",
                       s->workspace.directory, strv_length(s->workspace.include));
        if (s->thread_kind != B4_THREAD_NONE)
                printf("thread: workspace, image and policy are resolved per thread\n");
        if (s->workspace_read)
                printf("workspaceRead: http (timeout %llu ms)\n",
                       (unsigned long long)s->workspace_read_timeout_ms);
        if (s->staged.enabled)
                printf("stagedWorkspaces: uploads up to %llu bytes\n",
                       (unsigned long long)s->staged.max_upload_bytes);
}

/* Preflight and report; returns the exit code. */
static int run_preflight(const struct b4_config *cfg, struct b4_provider *p)
{
        cleanup_(preflight_clearp) struct b4_preflight pf = { 0 };
        struct b4_error err = { 0 };
        const char *name = b4_provider_name(p);
        int r;

        r = b4_provider_preflight(p, &pf, &err);
        if (r < 0) {
                cli_error("Sandbox provider \"%s\" preflight threw: %s.", name, err.msg);
                return CLI_EXIT_FAILED;
        }
        if (add_config_controls(cfg, &pf) < 0) {
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        STRV_FOREACH (w, pf.warnings)
                cli_error("warning: %s", *w);
        if (!pf.ok) {
                cli_error("Sandbox provider \"%s\" preflight failed: %s.", name,
                          pf.detail ? pf.detail : "no detail");
                return CLI_EXIT_FAILED;
        }
        printf("provider: %s, scope \"%s\"%s%s\n", name, cfg->sandbox.provider.scope,
               pf.detail ? ": " : "", pf.detail ? pf.detail : "");
        print_managed(cfg);
        print_table(&pf);
        return CLI_EXIT_OK;
}

/**
 * check_provider() - the provider-dependent checks of a validated config
 * @cfg: validated configuration; borrowed
 * @p:   its provider; borrowed
 *
 * Return: an exit code (CLI_EXIT_OK or CLI_EXIT_FAILED).
 */
static int check_provider(const struct b4_config *cfg, struct b4_provider *p)
{
        if (cfg->sandbox.workspace_read && !b4_provider_has_reader(p)) {
                cli_error("sandbox.workspaceRead needs a provider whose managed workspaces can "
                          "be read (open_reader); \"%s\" cannot",
                          b4_provider_name(p));
                return CLI_EXIT_FAILED;
        }
        return run_preflight(cfg, p);
}

/* Construct the provider of @cfg (state dir set) and check it. Returns an exit code. */
static int check_config(struct b4_config *cfg)
{
        cleanup_(b4_provider_freep) struct b4_provider *p = NULL;
        struct b4_error err = { 0 };
        int r;

        r = b4_provider_new(&cfg->sandbox.provider, &p, &err);
        if (r < 0)
                return cli_fail(&err);
        return check_provider(cfg, p);
}

int cmd_check(int argc, char **argv, const struct cli_ctx *ctx)
{
        cleanup_(b4_config_freep) struct b4_config *cfg = NULL;
        const char *path = NULL;
        int r;

        if (argc > 1) {
                cli_error("check takes no arguments (got '%s')", argv[1]);
                return CLI_EXIT_USAGE;
        }
        r = cli_load_config(ctx, &cfg, &path);
        if (r != 0)
                return r;
        printf("config: %s\n", path ? path : "none (defaults)");
        return check_config(cfg);
}
