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
#include "b4box/provider-impl.h" /* b4_preflight_control(): the config rows */

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "check.h"
#include "cli.h"
#include "json/json.h"

DEFINE_CLEANUP_FUNC(struct b4_config, b4_config_free)
DEFINE_CLEANUP_FUNC(struct b4_provider, b4_provider_free)

static void preflight_clearp(struct b4_preflight *p)
{
        b4_preflight_clear(p);
}

/* Network lists: the provider's row for the configured list leads with the entry count; a
 * provider without such a row does not filter by host, and the check says so. */
static int add_config_controls(const struct b4_config *cfg, struct b4_preflight *pf)
{
        const struct b4_policy *p = b4_config_policy(cfg);
        size_t n = p->n_network_list;
        const char *row = p->network == B4_NETWORK_DENY ? "network allowlist" : "network denylist";
        const char *noun = n == 1 ? "y" : "ies";

        if (n == 0)
                return 0;
        for (size_t i = 0; i < pf->n_controls; i++) {
                struct b4_control *c = &pf->controls[i];
                char *detail = NULL;

                if (strcmp(c->name, row) != 0)
                        continue;
                if (b4_asprintf(&detail, "%zu entr%s configured: %s", n, noun,
                                c->detail ? c->detail : "") < 0)
                        return -ENOMEM;
                free(c->detail);
                c->detail = detail;
                return 0;
        }
        return b4_preflight_control(pf, row, B4_NOT_ENFORCED,
                                    "%zu entr%s configured; b4box does not filter by host", n,
                                    noun);
}

/*
 * Audit L5: a provider's limit row says what it can enforce (a controller, a mechanism); the
 * check says what THIS configuration gets. Each limit row the provider reports is rewritten:
 * a value the config sets leads the detail, and a limit it does not set becomes "not set"
 * (and its NOT ENFORCED warning, if any, goes: there is nothing to enforce). An n/a row stays.
 */
struct limit {
        const char *row; /* the provider's control name */
        const char *key; /* the configuration key */
        /* the configured value as text; false when the config does not set it */
        bool (*value)(const struct b4_policy *p, char *buf, size_t size);
};

static bool memory_value(const struct b4_policy *p, char *buf, size_t size)
{
        (void)snprintf(buf, size, "%llu MiB", (unsigned long long)p->resources.memory_mb);
        return p->resources.memory_mb > 0;
}

static bool cpus_value(const struct b4_policy *p, char *buf, size_t size)
{
        (void)snprintf(buf, size, "%g CPUs", p->resources.cpus);
        return p->resources.cpus > 0;
}

static bool pids_value(const struct b4_policy *p, char *buf, size_t size)
{
        (void)snprintf(buf, size, "%u processes", (unsigned)p->security.pids_limit);
        return p->security.pids_limit > 0;
}

static bool disk_value(const struct b4_policy *p, char *buf, size_t size)
{
        (void)snprintf(buf, size, "%llu GiB", (unsigned long long)p->resources.disk_gb);
        return p->resources.disk_gb > 0;
}

static bool timeout_value(const struct b4_policy *p, char *buf, size_t size)
{
        (void)snprintf(buf, size, "%llu ms", (unsigned long long)p->resources.timeout_ms);
        return p->resources.timeout_ms > 0;
}

static const struct limit limits[] = {
        { "memory limit", "resources.memoryMb", memory_value },
        { "cpu limit", "resources.cpus", cpus_value },
        { "pids limit", "security.pidsLimit", pids_value },
        { "disk quota", "resources.diskGb", disk_value },
        { "command timeout", "resources.timeoutMs", timeout_value },
};

/* Remove the warning b4_preflight_control() added for a NOT ENFORCED row. */
static void drop_warning(struct b4_preflight *pf, const struct b4_control *c)
{
        size_t n = strlen(c->name);

        for (char **w = pf->warnings; w && *w; w++)
                if (strncmp(*w, c->name, n) == 0 && strncmp(*w + n, ": ", 2) == 0 &&
                    strcmp(*w + n + 2, c->detail ? c->detail : "") == 0) {
                        free(*w);
                        memmove(w, w + 1, (strv_length(w + 1) + 1) * sizeof(*w));
                        return;
                }
}

static int apply_limit(const struct limit *l,
                       const struct b4_policy *p,
                       struct b4_control *c,
                       struct b4_preflight *pf)
{
        bool enforced = c->state == B4_ENFORCED;
        char value[64], *detail = NULL;
        bool set = l->value(p, value, sizeof(value));
        int r;

        if (set)
                r = b4_asprintf(&detail, enforced ? "%s (%s)" : "%s configured, but %s", value,
                                c->detail);
        else
                r = b4_asprintf(&detail,
                                enforced ? "no %s; available: %s"
                                         : "no %s; not enforceable here: %s",
                                l->key, c->detail);
        if (r < 0)
                return r;
        if (!set) {
                if (c->state == B4_NOT_ENFORCED)
                        drop_warning(pf, c);
                c->state = B4_NOT_SET;
        }
        free(c->detail);
        c->detail = detail;
        return 0;
}

static int apply_limits(const struct b4_config *cfg, struct b4_preflight *pf)
{
        const struct b4_policy *p = b4_config_policy(cfg);
        int r;

        for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                for (size_t k = 0; k < pf->n_controls; k++) {
                        const struct b4_control *c = &pf->controls[k];
                        if (strcmp(c->name, limits[i].row) != 0 || c->state == B4_NOT_APPLICABLE)
                                continue;
                        r = apply_limit(&limits[i], p, &pf->controls[k], pf);
                        if (r < 0)
                                return r;
                }
        return 0;
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
        if (apply_limits(cfg, pf) < 0 || add_config_controls(cfg, pf) < 0)
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

static const char *json_state(enum b4_enforcement s)
{
        switch (s) {
        case B4_ENFORCED:
                return "enforced";
        case B4_NOT_ENFORCED:
                return "not_enforced";
        case B4_NOT_SET:
                return "not_set";
        case B4_NOT_APPLICABLE:
                break;
        }
        return "n/a";
}

static struct jv *controls_json(const struct b4_preflight *pf)
{
        struct jv *a = jv_array_new();

        for (size_t i = 0; a && i < pf->n_controls; i++) {
                const struct b4_control *c = &pf->controls[i];
                if (jv_array_append_new(a, jv_pack("{s:s?, s:s, s:s}", "name", c->name, "state",
                                                   json_state(c->state), "detail",
                                                   c->detail ? c->detail : "")) < 0)
                        return jv_unref(a);
        }
        return a;
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
                    jv_string_array_new(pf->warnings), "controls", controls_json(pf));
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
