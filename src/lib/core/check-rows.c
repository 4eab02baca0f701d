/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The check rows: what a policy gets from a provider's preflight (the enforcement table of
 * `b4box check` and GET /threads/{id}/check, the one copy). The provider says what it can
 * enforce; the rows say what this policy gets.
 */

#include "core/check-rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/provider-impl.h" /* b4_preflight_control() */

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"

/* Network lists: the provider's row for the configured list leads with the entry count; a
 * provider without such a row does not filter by host, and the check says so. */
static int add_list_rows(const struct b4_policy *p, struct b4_preflight *pf)
{
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

static int apply_limits(const struct b4_policy *p, struct b4_preflight *pf)
{
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

int b4_preflight_apply_policy(struct b4_preflight *pf, const struct b4_policy *p)
{
        int r;

        if (!pf || !p)
                return -EINVAL;
        r = apply_limits(p, pf);
        return r < 0 ? r : add_list_rows(p, pf);
}

const char *b4_enforcement_name(enum b4_enforcement s)
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

struct jv *check_rows_json(const struct b4_preflight *pf)
{
        struct jv *a = jv_array_new();

        for (size_t i = 0; a && i < pf->n_controls; i++) {
                const struct b4_control *c = &pf->controls[i];
                if (jv_array_append_new(a, jv_pack("{s:s?, s:s, s:s}", "name", c->name, "state",
                                                   b4_enforcement_name(c->state), "detail",
                                                   c->detail ? c->detail : "")) < 0)
                        return jv_unref(a);
        }
        return a;
}
