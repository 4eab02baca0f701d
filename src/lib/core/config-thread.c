/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox.thread`: a resolver command, or declarative targets that pick a thread sandbox by
 * one metadata key. A thread sandbox follows reference §2.4: a required static workspace, an
 * optional image, a narrow policy (network mode and lists that narrow the app's, env,
 * memoryMb/cpus/timeoutMs) and permission lists; the thread network as it is recorded and
 * applied over the app's policy.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-answer.h"
#include "config-internal.h"
#include "json/json.h"
#include "net-narrow.h"

#define WHY_MAX 1024 /* a narrowing refusal's reason: two entries of at most 256 bytes */

static const char *const thread_keys[] = { "targets", NULL };
static const char *const targets_keys[] = { "key", "values", "default", NULL };
static const char *const sandbox_keys[] = { "workspace", "environment", "policy", "permissions",
                                            NULL };
static const char *const env_keys[] = { "image", NULL };
static const char *const policy_keys[] = { "network", "env", "resources", NULL };
static const char *const network_keys[] = { "mode", "allowlist", "denylist", NULL };
static const char *const resource_keys[] = { "memoryMb", "cpus", "timeoutMs", NULL };
static const char *const perm_keys[] = { "allow", "deny", NULL };

static bool image_ok(const char *s, size_t len)
{
        static const char extra[] = "._/:@-";

        if (len == 0 || len > CFG_MAX_IMAGE || strlen(s) != len)
                return false;
        for (size_t i = 0; i < len; i++) {
                char ch = s[i];
                bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                             (ch >= '0' && ch <= '9');

                if (!alnum && (i == 0 || !strchr(extra, ch)))
                        return false;
        }
        return true;
}

static void parse_environment(struct cfg *c,
                              const struct jv *v,
                              const char *path,
                              struct b4_thread_sandbox *t)
{
        const struct jv *img = jv_object_get(v, "image");

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json %s must be { image } (got: %s).", path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "an environment option", env_keys);
        if (!img)
                return;
        if (!jv_is_string(img) || !image_ok(jv_string(img), jv_string_length(img)))
                cfg_refuse(c,
                           "b4box.json %s.image must match ^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,511}$ "
                           "(got: %s).",
                           path, cfg_got(c, img));
        else if (!(t->image = b4_strdup(jv_string(img))))
                cfg_fail(c, -ENOMEM);
}

static void parse_thread_lists(struct cfg *c,
                               const struct jv *v,
                               const char *path,
                               struct b4_thread_policy *p)
{
        const struct jv *allow = jv_object_get(v, "allowlist");
        const struct jv *deny = jv_object_get(v, "denylist");
        bool is_deny = p->network == B4_NETWORK_DENY;
        const struct jv *list = is_deny ? allow : deny;
        char q[CFG_PATH_MAX];

        if (deny && is_deny)
                cfg_refuse(c, "b4box.json %s.denylist applies only with mode \"allow\".", path);
        if (allow && !is_deny)
                cfg_refuse(c, "b4box.json %s.allowlist applies only with mode \"deny\".", path);
        if (!list)
                return;
        p->has_network_list = true;
        config_parse_net_list(c, list, cfg_path(q, path, is_deny ? "allowlist" : "denylist"),
                              is_deny, &p->network_list, &p->n_network_list);
}

static void parse_thread_network(struct cfg *c,
                                 const struct jv *v,
                                 const char *path,
                                 struct b4_thread_policy *p)
{
        const struct jv *mode = jv_object_get(v, "mode");

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be { \"mode\": \"allow\" | \"deny\", "
                           "\"allowlist\"?, \"denylist\"? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        if (jv_object_get(v, "dns"))
                cfg_refuse(c,
                           "b4box.json %s.dns is the app's (sandbox.network.dns): a thread may "
                           "not set it.",
                           path);
        else
                cfg_known_keys(c, v, path, "a thread network option", network_keys);
        if (jv_is_string(mode) &&
            (strcmp(jv_string(mode), "allow") == 0 || strcmp(jv_string(mode), "deny") == 0)) {
                p->has_network = true;
                p->network =
                        strcmp(jv_string(mode), "deny") == 0 ? B4_NETWORK_DENY : B4_NETWORK_ALLOW;
                parse_thread_lists(c, v, path, p);
                return;
        }
        cfg_refuse(c, "b4box.json %s.mode must be \"allow\" or \"deny\" (got: %s).", path,
                   cfg_got(c, mode));
}

static void parse_thread_resources(struct cfg *c,
                                   const struct jv *v,
                                   const char *path,
                                   struct b4_thread_policy *p)
{
        const struct jv *x;
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json %s must be an object (got: %s).", path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a thread policy resource", resource_keys);
        if ((x = jv_object_get(v, "memoryMb")))
                (void)cfg_positive_int(c, x, cfg_path(q, path, "memoryMb"), 4194304, &p->memory_mb);
        if ((x = jv_object_get(v, "cpus")))
                (void)cfg_positive_number(c, x, cfg_path(q, path, "cpus"), &p->cpus);
        if ((x = jv_object_get(v, "timeoutMs")))
                (void)cfg_positive_int(c, x, cfg_path(q, path, "timeoutMs"), 86400000,
                                       &p->timeout_ms);
}

static void parse_thread_policy(struct cfg *c,
                                const struct jv *v,
                                const char *path,
                                struct b4_thread_policy *p)
{
        const struct jv *x;
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json %s must be { network?, env?, resources? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a thread policy option", policy_keys);
        if ((x = jv_object_get(v, "network")))
                parse_thread_network(c, x, cfg_path(q, path, "network"), p);
        if ((x = jv_object_get(v, "env"))) {
                p->has_env = true;
                config_parse_env(c, x, cfg_path(q, path, "env"), &p->env, &p->n_env);
        }
        if ((x = jv_object_get(v, "resources")))
                parse_thread_resources(c, x, cfg_path(q, path, "resources"), p);
}

static void parse_thread_permissions(struct cfg *c,
                                     const struct jv *v,
                                     const char *path,
                                     struct b4_thread_sandbox *t)
{
        const struct jv *x;
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json %s must be { allow?, deny? } (got: %s).", path,
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a permissions option", perm_keys);
        if ((x = jv_object_get(v, "allow")))
                config_parse_tool_map(c, x, cfg_path(q, path, "allow"), &t->allow, &t->n_allow);
        if ((x = jv_object_get(v, "deny")))
                config_parse_tool_map(c, x, cfg_path(q, path, "deny"), &t->deny, &t->n_deny);
}

void config_parse_thread_sandbox(struct cfg *c,
                                 const struct jv *v,
                                 const char *path,
                                 struct b4_thread_sandbox *t)
{
        const struct jv *x;
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be a thread sandbox { workspace, environment?, "
                           "policy?, permissions? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, path, "a thread sandbox option", sandbox_keys);
        if ((x = jv_object_get(v, "workspace")))
                config_parse_workspace_def(c, x, cfg_path(q, path, "workspace"), &t->workspace);
        else
                cfg_refuse(c, "b4box.json %s.workspace is required.", path);
        if ((x = jv_object_get(v, "environment")))
                parse_environment(c, x, cfg_path(q, path, "environment"), t);
        if ((x = jv_object_get(v, "policy")))
                parse_thread_policy(c, x, cfg_path(q, path, "policy"), &t->policy);
        if ((x = jv_object_get(v, "permissions")))
                parse_thread_permissions(c, x, cfg_path(q, path, "permissions"), t);
}

int config_parse_resolver_answer(const struct jv *v,
                                 bool thread,
                                 const char *base_dir,
                                 struct b4_thread_sandbox *t,
                                 struct b4_error *err)
{
        struct cfg c = { .base_dir = base_dir };
        int r;

        if (thread)
                config_parse_thread_sandbox(&c, v, "sandbox.thread result", t);
        else
                config_parse_workspace_def(&c, v, "sandbox.workspace result", &t->workspace);
        r = c.r < 0 ? c.r : c.n_errors ? -EINVAL : 0;
        if (r == -EINVAL)
                b4_error_set(err, r, "%s", c.errors[0]);
        strv_free(c.errors);
        return r;
}

void config_thread_sandbox_clear(struct b4_thread_sandbox *t)
{
        config_workspace_def_clear(&t->workspace);
        free(t->image);
        config_env_free(t->policy.env, t->policy.n_env);
        b4_net_entries_free(t->policy.network_list, t->policy.n_network_list);
        config_tool_map_free(t->allow, t->n_allow);
        config_tool_map_free(t->deny, t->n_deny);
        *t = (struct b4_thread_sandbox){ 0 };
}

void config_thread_targets_clear(struct b4_thread_targets *t)
{
        free(t->key);
        for (size_t i = 0; t->values && i < t->n_values; i++) {
                free(t->values[i].value);
                config_thread_sandbox_clear(&t->values[i].sandbox);
        }
        free(t->values);
        if (t->fallback)
                config_thread_sandbox_clear(t->fallback);
        free(t->fallback);
        *t = (struct b4_thread_targets){ 0 };
}

static void parse_values(struct cfg *c, const struct jv *v, struct b4_thread_targets *t)
{
        const char *base = "sandbox.thread.targets.values";
        char q[CFG_PATH_MAX];

        if (!jv_is_object(v) || jv_object_size(v) > CFG_MAX_TARGETS) {
                cfg_refuse(c,
                           "b4box.json %s must be an object of at most %d metadata values to "
                           "thread sandboxes (got: %s).",
                           base, CFG_MAX_TARGETS, cfg_got(c, v));
                return;
        }
        t->values = b4_calloc(jv_object_size(v) + 1, sizeof(*t->values));
        if (!t->values) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (void *it = jv_object_iter(v); it; it = jv_object_next(v, it)) {
                struct b4_thread_target *e = &t->values[t->n_values++];

                e->value = b4_strdup(jv_iter_key(it));
                if (!e->value)
                        cfg_fail(c, -ENOMEM);
                config_parse_thread_sandbox(c, jv_iter_value(it),
                                            cfg_path(q, base, cfg_key(c, jv_iter_key(it))),
                                            &e->sandbox);
        }
}

static void parse_targets(struct cfg *c, const struct jv *v, struct b4_thread_targets *t)
{
        const struct jv *x;

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.thread.targets must be { key, values, default? } "
                           "(got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.thread.targets", "a targets option", targets_keys);
        (void)cfg_string(c, jv_object_get(v, "key"), "sandbox.thread.targets.key",
                         CFG_MAX_TOOL_NAME, &t->key);
        parse_values(c, jv_object_get(v, "values"), t);
        if (!(x = jv_object_get(v, "default")))
                return;
        t->fallback = b4_calloc(1, sizeof(*t->fallback));
        if (!t->fallback) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        config_parse_thread_sandbox(c, x, "sandbox.thread.targets.default", t->fallback);
}

void config_parse_thread(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s)
{
        bool cmd = jv_object_get(v, "command") != NULL;
        bool targets = jv_object_get(v, "targets") != NULL;

        if (cmd && !targets) {
                s->thread_kind = B4_THREAD_RESOLVER;
                config_parse_resolver(c, v, "sandbox.thread", &s->thread_resolver);
        } else if (targets && !cmd) {
                s->thread_kind = B4_THREAD_TARGETS;
                cfg_known_keys(c, v, "sandbox.thread", "a thread option", thread_keys);
                parse_targets(c, jv_object_get(v, "targets"), &s->thread_targets);
        } else {
                cfg_refuse(c, "b4box.json sandbox.thread must be a resolver command or "
                              "declarative targets.");
        }
}

/* ---- the thread network over the app's policy ------------------------------------------ */

/*
 * Whether the thread network @t narrows @app; else the reason in @why. Without a list a
 * thread keeps the app's list (same mode) or has none (mode deny over the app's allow).
 */
static bool thread_narrows(const struct b4_policy *app,
                           const struct b4_thread_policy *t,
                           char why[static WHY_MAX])
{
        if (!t->has_network || (!t->has_network_list && t->network == app->network))
                return true;
        return net_narrow_check(app, t->network, t->network_list, t->n_network_list, why, WHY_MAX);
}

static void check_target(struct cfg *c,
                         const struct b4_policy *app,
                         const struct b4_thread_policy *p,
                         const char *path)
{
        char why[WHY_MAX];

        if (!thread_narrows(app, p, why))
                cfg_refuse(c, "b4box.json %s.policy %s.", path, why);
}

void config_check_thread_network(struct cfg *c, const struct b4_sandbox_config *s)
{
        const struct b4_thread_targets *t = &s->thread_targets;
        char q[CFG_PATH_MAX];

        if (s->thread_kind != B4_THREAD_TARGETS || c->r < 0) /* c->r: a value may be missing */
                return;
        for (size_t i = 0; i < t->n_values; i++)
                check_target(c, &s->policy, &t->values[i].sandbox.policy,
                             cfg_path(q, "sandbox.thread.targets.values",
                                      cfg_key(c, t->values[i].value)));
        if (t->fallback)
                check_target(c, &s->policy, &t->fallback->policy, "sandbox.thread.targets.default");
}

struct jv *config_thread_network_json(const struct b4_thread_policy *p)
{
        cleanup_(jv_unrefp) struct jv *net = jv_object_new();
        const char *mode = p->network == B4_NETWORK_DENY ? "deny" : "allow";
        const char *key = p->network == B4_NETWORK_DENY ? "allowlist" : "denylist";
        struct jv *l = NULL;
        int r = net ? jv_object_set_new(net, "mode", jv_string_new(mode)) : -ENOMEM;

        if (r >= 0 && p->has_network_list)
                r = jv_object_set_new(net, key, l = jv_array_new());
        for (size_t i = 0; r >= 0 && l && i < p->n_network_list; i++)
                r = jv_array_append_new(l, jv_string_new(p->network_list[i].text));
        return r < 0 ? NULL : TAKE_PTR(net);
}

int config_thread_network_apply(const struct b4_policy *app,
                                const struct jv *net,
                                struct b4_policy *p,
                                struct b4_error *err)
{
        struct cfg c = { 0 };
        struct b4_thread_policy t = { 0 };
        char why[WHY_MAX];
        int r;

        if (!net)
                return 0;
        parse_thread_network(&c, net, "sandbox record policy.network", &t);
        r = c.r < 0 ? c.r : c.n_errors ? b4_error_set(err, -EBADMSG, "%s", c.errors[0]) : 0;
        strv_free(c.errors);
        if (r >= 0 && !thread_narrows(app, &t, why))
                r = b4_error_set_code(err, -EPERM, B4_CODE_THREAD_REFUSED,
                                      "A thread's sandbox policy %s", why);
        if (r >= 0 && (t.has_network_list || t.network != app->network)) {
                b4_net_entries_free(p->network_list, p->n_network_list);
                p->network = t.network;
                p->network_list = TAKE_PTR(t.network_list);
                p->n_network_list = t.n_network_list;
                t.n_network_list = 0;
        }
        b4_net_entries_free(t.network_list, t.n_network_list);
        return r;
}
