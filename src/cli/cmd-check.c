/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `b4box check`: load and validate the configuration (-c FILE, else ./b4box.json when
 * present, else the defaults), construct the provider, run its preflight and print which
 * controls are enforced, after the catches of check-catches.c (token files, resolver
 * programs, images). Every refusal is printed as "b4box: <message>" on stderr, or kept for
 * the --json document. Exit: 0 ok, 1 refused or failed, 2 usage, 3 --strict and a control
 * NOT ENFORCED.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/bundle.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "check.h"
#include "cli.h"
#include "core/check-rows.h"
#include "json/json.h"

DEFINE_CLEANUP_FUNC(struct b4_config, b4_config_free)
DEFINE_CLEANUP_FUNC(struct b4_provider, b4_provider_free)

static void preflight_clearp(struct b4_preflight *p)
{
        b4_preflight_clear(p);
}

static const char *state_name(enum b4_enforcement s)
{
        switch (s) {
        case B4_ENFORCED:
                return "enforced";
        case B4_NOT_ENFORCED:
                return "NOT ENFORCED";
        case B4_NOT_SET:
                return "not set";
        case B4_NOT_APPLICABLE:
                break;
        }
        return "n/a";
}

static void print_table(const struct b4_preflight *pf)
{
        size_t counts[4] = { 0 };

        printf("%-24s %-13s %s\n", "CONTROL", "STATE", "DETAIL");
        for (size_t i = 0; i < pf->n_controls; i++) {
                const struct b4_control *c = &pf->controls[i];

                printf("%-24s %-13s %s\n", c->name, state_name(c->state),
                       c->detail ? c->detail : "");
                if ((unsigned)c->state < ELEMENTSOF(counts))
                        counts[c->state]++;
        }
        printf("ok: %zu enforced, %zu not enforced, %zu n/a, %zu not set\n", counts[B4_ENFORCED],
               counts[B4_NOT_ENFORCED], counts[B4_NOT_APPLICABLE], counts[B4_NOT_SET]);
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

/* Preflight into @pf; a failure is a refusal. Return: 0, or -ENOMEM. */
static int run_preflight(struct check *c,
                         const struct b4_config *cfg,
                         struct b4_provider *p,
                         struct b4_preflight *pf)
{
        struct b4_error err = { 0 };
        const char *name = b4_provider_name(p);

        if (b4_provider_preflight(p, pf, &err) < 0) {
                check_refuse(c, "Sandbox provider \"%s\" preflight threw: %s.", name, err.msg);
                return 0;
        }
        if (b4_preflight_apply_policy(pf, b4_config_policy(cfg)) < 0)
                return -ENOMEM;
        if (!c->json)
                STRV_FOREACH (w, pf->warnings)
                        cli_error("warning: %s", *w);
        if (!pf->ok)
                check_refuse(c, "Sandbox provider \"%s\" preflight failed: %s.", name,
                             pf->detail ? pf->detail : "no detail");
        return 0;
}

static const char *network_name(const struct b4_config *cfg)
{
        return b4_config_policy(cfg)->network == B4_NETWORK_DENY ? "deny" : "allow";
}

static void print_text(const struct b4_config *cfg,
                       struct b4_provider *p,
                       const struct b4_preflight *pf)
{
        printf("provider: %s, scope \"%s\"%s%s\n", b4_provider_name(p), cfg->sandbox.provider.scope,
               pf->detail ? ": " : "", pf->detail ? pf->detail : "");
        printf("network: %s\n", network_name(cfg));
        print_managed(cfg);
        print_table(pf);
}

/* A static sandbox.workspace is captured right away (reference §2.3). */
static void capture_static(struct check *c, const struct b4_config *cfg)
{
        struct b4_captured_workspace *ws = NULL;
        struct b4_error err = { 0 };
        int r;

        r = b4_workspace_capture(cfg->base_dir, &cfg->sandbox.workspace, NULL, &ws, &err);
        if (r < 0) {
                check_refuse(c, "Invalid managed workspace: %s",
                             err.msg[0] ? err.msg : strerror(-r));
                return;
        }
        if (!c->json)
                printf("workspace: captured %zu files, %zu links, source %s\n", ws->source->n_files,
                       ws->n_links, ws->source->digest);
        b4_captured_workspace_free(ws);
}

static bool any_not_enforced(const struct b4_preflight *pf)
{
        for (size_t i = 0; i < pf->n_controls; i++)
                if (pf->controls[i].state == B4_NOT_ENFORCED)
                        return true;
        return false;
}

/* The exit code of a finished check. */
static int verdict(const struct check *c, const struct b4_preflight *pf)
{
        if (c->out_of_memory) {
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        if (c->refusals)
                return CLI_EXIT_FAILED;
        return c->strict && any_not_enforced(pf) ? CLI_EXIT_STRICT : CLI_EXIT_OK;
}

/**
 * check_provider() - the provider-dependent checks of a validated config
 * @c:   the run; refusals are added to it
 * @cfg: validated configuration; borrowed
 * @p:   its provider; borrowed
 * @pf:  filled with the preflight (its controls), cleared by the caller
 *
 * In text mode the provider, the workspace lines and the table are printed when nothing
 * was refused. Return: an exit code (verdict()).
 */
static int check_provider(struct check *c,
                          const struct b4_config *cfg,
                          struct b4_provider *p,
                          struct b4_preflight *pf)
{
        if (cfg->sandbox.workspace_kind == B4_WORKSPACE_STATIC)
                capture_static(c, cfg);
        if (cfg->sandbox.workspace_read && !b4_provider_has_reader(p))
                check_refuse(c,
                             "sandbox.workspaceRead needs a provider whose managed workspaces can "
                             "be read (open_reader); \"%s\" cannot",
                             b4_provider_name(p));
        if (run_preflight(c, cfg, p, pf) < 0)
                c->out_of_memory = true;
        else if (pf->ok)
                check_images(c, cfg, p);
        if (!c->json && !c->refusals)
                print_text(cfg, p, pf);
        return verdict(c, pf);
}

/* The --json document (docs/cli.md); @cfg and @p may be NULL when the check stopped early. */
static int print_json(const struct check *c,
                      const char *path,
                      const struct b4_config *cfg,
                      struct b4_provider *p,
                      const struct b4_preflight *pf,
                      int code)
{
        cleanup_(jv_unrefp) struct jv *o = NULL;
        cleanup_free char *text = NULL;

        o = jv_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:b, s:i, s:o, s:o, s:o}", "config", path,
                    "provider", p ? b4_provider_name(p) : NULL, "scope",
                    cfg ? cfg->sandbox.provider.scope : NULL, "network",
                    cfg ? network_name(cfg) : NULL, "detail", pf->detail, "ok", code == CLI_EXIT_OK,
                    "exitCode", code, "refusals", jv_string_array_new(c->refusals), "warnings",
                    jv_string_array_new(pf->warnings), "controls", check_rows_json(pf));
        if (!o || jv_dump(o, 0, &text) < 0) {
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        printf("%s\n", text);
        return code;
}

/* Everything after the config loaded: the config's own catches, then the provider's. */
static int check_config(struct check *c, const char *path, struct b4_config *cfg)
{
        cleanup_(b4_provider_freep) struct b4_provider *p = NULL;
        cleanup_(preflight_clearp) struct b4_preflight pf = { 0 };
        struct b4_error err = { 0 };
        int code;

        check_tokens(c, cfg);
        check_resolvers(c, cfg);
        if (b4_provider_new(&cfg->sandbox.provider, &p, &err) < 0) {
                const char *codename = b4_code_name(err.code);
                check_refuse(c, "%s%s%s%s", err.msg[0] ? err.msg : "failed", codename ? " [" : "",
                             codename ? codename : "", codename ? "]" : "");
                code = verdict(c, &pf);
        } else
                code = check_provider(c, cfg, p, &pf);
        return c->json ? print_json(c, path, cfg, p, &pf, code) : code;
}

static int parse_check(int argc, char **argv, struct check *c)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        c->json = true;
                else if (strcmp(argv[i], "--strict") == 0)
                        c->strict = true;
                else {
                        cli_error("check: unexpected argument '%s'", argv[i]);
                        return -EINVAL;
                }
        }
        return 0;
}

int cmd_check(int argc, char **argv, const struct cli_ctx *ctx)
{
        cleanup_(b4_config_freep) struct b4_config *cfg = NULL;
        cleanup_strv char **refusals = NULL;
        struct check c = { 0 };
        const char *path = NULL;
        int r;

        if (parse_check(argc, argv, &c) < 0)
                return CLI_USAGE;
        r = cli_load_config_collect(ctx, &cfg, &path, c.json ? &c.refusals : NULL);
        refusals = c.refusals; /* freed on every return */
        if (r != 0) {
                struct b4_preflight none = { 0 };
                return c.json ? print_json(&c, path, NULL, NULL, &none, r) : r;
        }
        if (!c.json)
                printf("config: %s\n", path ? path : "none (defaults)");
        r = check_config(&c, path, cfg);
        refusals = c.refusals;
        return r;
}
