/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `sandbox` block of b4box.json: the seeds' keys one for one (reference §2.2) with the
 * refusal texts of §2.3, `b4.config` read as `b4box.json`. The provider object, the managed
 * workspace options and the cross-key rules live here; the policy parts (network, env,
 * resources, security) are in config-policy.c, resolvers and definitions in
 * config-workspace.c.
 */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"

#define STAGED_MAX_UPLOAD   100663296ull
#define STAGED_MAX_STAGED   (16ull * 1024 * 1024 * 1024)
#define STAGED_MAX_RETAIN   2592000000ull
#define STAGED_MAX_TIMEOUT  1800000ull
#define MAX_IDLE_TIMEOUT_MS 2592000000ull
#define MAX_IMAGES          256

static const char *const sandbox_keys[] = {
        "workspace",
        "thread",
        "workspaceRead",
        "workspaceReadTimeoutMs",
        "stagedWorkspaces",
        "provider",
        "network",
        "env",
        "resources",
        "security",
        "idleTimeoutMs",
        "idlePauseMs",
        NULL,
};

static const char *const staged_keys[] = { "maxUploadBytes", "retentionMs", "maxStagedBytes",
                                           "uploadTimeoutMs", NULL };

static const struct {
        const char *type;
        const char *const *keys;
} provider_types[] = {
        { "native", (const char *const[]){ "type", "scope", "image", "images", "idRange", NULL } },
        { "docker", (const char *const[]){ "type", "scope", "image", "images", "host", NULL } },
        { "kubernetes",
          (const char *const[]){ "type", "scope", "image", "images", "apiServer", "namespace",
                                 "tokenFile", "caFile", "kubeconfig", "context", "storageClass",
                                 "startupTimeoutMs", "hostUsers", "warmPool", NULL } },
        { "fake", (const char *const[]){ "type", "scope", "image", "images", NULL } },
};

static const char *const all_provider_keys[] = {
        "type",       "scope",     "image",        "images",           "idRange",
        "host",       "apiServer", "namespace",    "tokenFile",        "caFile",
        "kubeconfig", "context",   "storageClass", "startupTimeoutMs", "warmPool",
        NULL,
};

void config_sandbox_init(struct b4_sandbox_config *s)
{
        *s = (struct b4_sandbox_config){
                .idle_timeout_ms = B4_DEFAULT_IDLE_TIMEOUT_MS,
                .workspace_read_timeout_ms = B4_DEFAULT_READ_TIMEOUT_MS,
                .staged = {
                        .max_upload_bytes = STAGED_MAX_UPLOAD,
                        .retention_ms = 24ull * 60 * 60 * 1000,
                        .max_staged_bytes = 1024ull * 1024 * 1024,
                        .upload_timeout_ms = 120000,
                },
        };
        b4_policy_init(&s->policy);
}

void config_sandbox_clear(struct b4_sandbox_config *s)
{
        b4_provider_config_clear(&s->provider);
        b4_policy_clear(&s->policy);
        config_workspace_def_clear(&s->workspace);
        config_resolver_clear(&s->workspace_resolver);
        config_resolver_clear(&s->thread_resolver);
        config_thread_targets_clear(&s->thread_targets);
        config_sandbox_init(s);
}

void b4_provider_config_clear(struct b4_provider_config *c)
{
        free(c->type);
        free(c->scope);
        free(c->image);
        strv_free(c->images);
        free(c->state_dir);
        free(c->docker_host);
        free(c->kube_api);
        free(c->kube_namespace);
        free(c->kube_token_file);
        free(c->kube_ca_file);
        free(c->kubeconfig);
        free(c->kube_context);
        free(c->kube_storage_class);
        free(c->kube_pool_owner);
        if (c->kube_pool_policy)
                b4_policy_clear(c->kube_pool_policy);
        free(c->kube_pool_policy);
        *c = (struct b4_provider_config){ 0 };
}

int config_provider_default(struct b4_provider_config *p)
{
        b4_provider_config_clear(p);
        p->type = b4_strdup("native");
        p->scope = b4_strdup(B4_DEFAULT_SCOPE);
        if (!p->type || !p->scope)
                return -ENOMEM;
        return 0;
}

static bool scope_is_blank(const char *s)
{
        for (; *s; s++)
                if (!strchr(" \t\n\r\v\f", *s))
                        return false;
        return true;
}

static void parse_scope(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        if (!jv_is_string(v) || strlen(jv_string(v)) != jv_string_length(v) ||
            scope_is_blank(jv_string(v)) || jv_string_length(v) > CFG_MAX_PATH) {
                cfg_refuse(c, "Sandbox scope must be a non-empty application/environment "
                              "identifier");
                return;
        }
        p->scope = b4_strdup(jv_string(v));
        if (!p->scope)
                cfg_fail(c, -ENOMEM);
}

static void parse_images(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        char path[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) > MAX_IMAGES) {
                cfg_refuse(c,
                           "b4box.json sandbox.provider.images must be an array of at most %d "
                           "image patterns (got: %s).",
                           MAX_IMAGES, cfg_got(c, v));
                return;
        }
        p->images = b4_calloc(1, sizeof(char *));
        if (!p->images) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        for (size_t i = 0; i < jv_array_size(v); i++) {
                char *s = NULL;

                if (cfg_string(c, jv_array_get(v, i), cfg_index(path, "sandbox.provider.images", i),
                               CFG_MAX_IMAGE, &s) &&
                    strv_consume(&p->images, s) < 0)
                        cfg_fail(c, -ENOMEM);
        }
}

static const char *const *provider_keys(const char *type)
{
        for (size_t i = 0; type && i < ELEMENTSOF(provider_types); i++)
                if (strcmp(provider_types[i].type, type) == 0)
                        return provider_types[i].keys;
        return NULL;
}

static void opt_string(
        struct cfg *c, const struct jv *o, const char *key, bool path, const char *dflt, char **ret)
{
        const struct jv *v = jv_object_get(o, key);
        char full[CFG_PATH_MAX];
        char *s = NULL;

        if (!v) {
                if (dflt && !(*ret = b4_strdup(dflt)))
                        cfg_fail(c, -ENOMEM);
                return;
        }
        if (!cfg_string(c, v, cfg_path(full, "sandbox.provider", key), CFG_MAX_PATH, &s))
                return;
        if (path) {
                *ret = cfg_abs_path(c, s);
                free(s);
                return;
        }
        *ret = s;
}

/* Native as root: the host ids each thread's user namespace gets a 65536-id block of. */
#define ID_BLOCK     65536u
#define ID_RANGE_MAX 4294901760u /* 2^32 - 65536: (uid_t)-1 and its block stay out */

static void parse_id_range(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        static const char *const keys[] = { "start", "size", NULL };
        const struct jv *start = jv_object_get(v, "start"), *size = jv_object_get(v, "size");
        uint64_t a = 0, n = 0;

        if (!jv_is_object(v) || !start || !size) {
                cfg_refuse(c,
                           "b4box.json sandbox.provider.idRange must be { \"start\": <host id>, "
                           "\"size\": <ids> }, both multiples of 65536 (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.provider.idRange", "an option", keys);
        if (!cfg_uint_range(c, start, "sandbox.provider.idRange.start", ID_BLOCK,
                            ID_RANGE_MAX - ID_BLOCK, &a) ||
            !cfg_uint_range(c, size, "sandbox.provider.idRange.size", ID_BLOCK,
                            ID_RANGE_MAX - ID_BLOCK, &n))
                return;
        if (a % ID_BLOCK || n % ID_BLOCK || a + n > ID_RANGE_MAX) {
                cfg_refuse(c,
                           "b4box.json sandbox.provider.idRange must lie within 65536 and "
                           "4294901760, start and size multiples of 65536 (got: start %llu, "
                           "size %llu).",
                           (unsigned long long)a, (unsigned long long)n);
                return;
        }
        p->id_start = (uint32_t)a;
        p->id_size = (uint32_t)n;
}

/* A label value (Kubernetes): 1-63 of [A-Za-z0-9._-], alphanumeric at both ends. */
static bool is_label_value(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
                        return false;
        return true;
}

/* warmPool: { "size": 0..64, "owner": "<label value>" } (docs/configuration.md). The key
 * given at all turns the label lookups of adopted threads on, even with size 0. */
static void parse_warm_pool(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        static const char *const keys[] = { "size", "owner", NULL };
        const struct jv *x;
        uint64_t n = 0;

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.provider.warmPool must be { \"size\": <pairs, 0 "
                           "to %u>, \"owner\"?: <replica id> } (got: %s).",
                           B4_KUBE_MAX_POOL_SIZE, cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.provider.warmPool", "a warm pool option", keys);
        p->kube_pool = true;
        if ((x = jv_object_get(v, "size")) &&
            cfg_uint_range(c, x, "sandbox.provider.warmPool.size", 0, B4_KUBE_MAX_POOL_SIZE, &n))
                p->kube_pool_size = (uint32_t)n;
        if (!(x = jv_object_get(v, "owner")))
                return;
        if (!cfg_string(c, x, "sandbox.provider.warmPool.owner", 63, &p->kube_pool_owner))
                return;
        if (!is_label_value(p->kube_pool_owner))
                cfg_refuse(c,
                           "b4box.json sandbox.provider.warmPool.owner must be a Kubernetes label "
                           "value: 1 to 63 of A-Z a-z 0-9 . _ -, a letter or digit at both ends "
                           "(got: %s).",
                           cfg_got(c, x));
}

/* Kubernetes: the in-cluster keys (defaults: the service account's files) or a kubeconfig
 * (+ context), never both; the seed's storageClass and startupTimeoutMs. */
static void parse_kube_options(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        static const char *const in_cluster[] = { "apiServer", "tokenFile", "caFile" };
        const struct jv *x;
        bool kubeconfig = jv_object_get(v, "kubeconfig") != NULL;

        opt_string(c, v, "namespace", false, "b4-sandboxes", &p->kube_namespace);
        opt_string(c, v, "storageClass", false, NULL, &p->kube_storage_class);
        p->kube_startup_timeout_ms = B4_KUBE_DEFAULT_STARTUP_TIMEOUT_MS;
        if ((x = jv_object_get(v, "startupTimeoutMs"))) {
                uint64_t ms = 0;

                if (cfg_uint_range(c, x, "sandbox.provider.startupTimeoutMs", 1000,
                                   B4_KUBE_MAX_STARTUP_TIMEOUT_MS, &ms))
                        p->kube_startup_timeout_ms = (uint32_t)ms;
        }
        if ((x = jv_object_get(v, "hostUsers"))) {
                bool host_users = true;

                if (cfg_bool(c, x, "sandbox.provider.hostUsers", &host_users))
                        p->kube_user_namespace = !host_users;
        }
        if ((x = jv_object_get(v, "warmPool")))
                parse_warm_pool(c, x, p);
        if (jv_object_get(v, "context") && !kubeconfig)
                cfg_refuse(c, "b4box.json sandbox.provider.context needs kubeconfig (it names "
                              "one of its contexts).");
        if (kubeconfig) {
                for (size_t i = 0; i < ELEMENTSOF(in_cluster); i++)
                        if (jv_object_get(v, in_cluster[i]))
                                cfg_refuse(c,
                                           "b4box.json sandbox.provider.%s cannot be combined "
                                           "with kubeconfig (the kubeconfig names the server "
                                           "and the credentials).",
                                           in_cluster[i]);
                opt_string(c, v, "kubeconfig", true, NULL, &p->kubeconfig);
                opt_string(c, v, "context", false, NULL, &p->kube_context);
                return;
        }
        opt_string(c, v, "apiServer", false, "https://kubernetes.default.svc", &p->kube_api);
        opt_string(c, v, "tokenFile", true, "/var/run/secrets/kubernetes.io/serviceaccount/token",
                   &p->kube_token_file);
        opt_string(c, v, "caFile", true, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
                   &p->kube_ca_file);
}

static void parse_type_options(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        const struct jv *x;

        if (strcmp(p->type, "native") == 0 && (x = jv_object_get(v, "idRange")))
                parse_id_range(c, x, p);
        bool has_image = p->image || jv_object_get(v, "image");
        bool has_images = jv_object_get(v, "images") != NULL;

        if (strcmp(p->type, "docker") == 0) {
                opt_string(c, v, "host", false, "unix:///var/run/docker.sock", &p->docker_host);
                if (!has_image && !has_images)
                        cfg_refuse(c, "b4box.json sandbox.provider needs an image, or images "
                                      "patterns when every thread names its own image.");
        } else if (strcmp(p->type, "kubernetes") == 0) {
                parse_kube_options(c, v, p);
                if (!has_image)
                        cfg_refuse(c, "b4box.json sandbox.provider.image is required by the "
                                      "kubernetes provider.");
        }
}

void config_parse_provider(struct cfg *c, const struct jv *v, struct b4_provider_config *p)
{
        const struct jv *t, *x;
        const char *const *keys;

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.provider must be an object with \"type\" and "
                           "\"scope\" (got: %s).",
                           cfg_got(c, v));
                return;
        }
        t = jv_object_get(v, "type");
        keys = provider_keys(jv_string(t));
        if (!keys)
                cfg_refuse(c,
                           "b4box.json sandbox.provider.type must be \"native\", \"docker\", "
                           "\"kubernetes\" or \"fake\" (got: %s).",
                           cfg_got(c, t));
        cfg_known_keys(c, v, "sandbox.provider", "a provider option",
                       keys ? keys : all_provider_keys);
        parse_scope(c, jv_object_get(v, "scope"), p);
        if ((x = jv_object_get(v, "image")))
                (void)cfg_string(c, x, "sandbox.provider.image", CFG_MAX_PATH, &p->image);
        if ((x = jv_object_get(v, "images")))
                parse_images(c, x, p);
        if (!keys)
                return;
        p->type = b4_strdup(jv_string(t));
        if (!p->type) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        parse_type_options(c, v, p);
}

static void parse_staged(struct cfg *c, const struct jv *v, struct b4_staged_config *s)
{
        struct b4_staged_config n = *s;
        const struct jv *x;

        if (jv_is_bool(v)) {
                s->enabled = jv_is_true(v);
                return;
        }
        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json sandbox.stagedWorkspaces must be true, false or { "
                           "maxUploadBytes?, retentionMs?, maxStagedBytes?, uploadTimeoutMs? } "
                           "(got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "sandbox.stagedWorkspaces", "an option", staged_keys);
        if ((x = jv_object_get(v, "maxUploadBytes")))
                (void)cfg_uint_range(c, x, "sandbox.stagedWorkspaces.maxUploadBytes", 1,
                                     STAGED_MAX_UPLOAD, &n.max_upload_bytes);
        if ((x = jv_object_get(v, "retentionMs")))
                (void)cfg_uint_range(c, x, "sandbox.stagedWorkspaces.retentionMs", 60000,
                                     STAGED_MAX_RETAIN, &n.retention_ms);
        if ((x = jv_object_get(v, "maxStagedBytes")))
                (void)cfg_uint_range(c, x, "sandbox.stagedWorkspaces.maxStagedBytes", 1,
                                     STAGED_MAX_STAGED, &n.max_staged_bytes);
        if ((x = jv_object_get(v, "uploadTimeoutMs")))
                (void)cfg_uint_range(c, x, "sandbox.stagedWorkspaces.uploadTimeoutMs", 1000,
                                     STAGED_MAX_TIMEOUT, &n.upload_timeout_ms);
        n.enabled = true;
        *s = n;
}

static void parse_managed(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s)
{
        const struct jv *x;

        if ((x = jv_object_get(v, "workspace")))
                config_parse_workspace(c, x, s);
        if ((x = jv_object_get(v, "thread")))
                config_parse_thread(c, x, s);
        if ((x = jv_object_get(v, "workspaceRead"))) {
                if (jv_is_string(x) && strcmp(jv_string(x), "http") == 0 &&
                    jv_string_length(x) == 4)
                        s->workspace_read = true;
                else
                        cfg_refuse(c,
                                   "b4box.json sandbox.workspaceRead must be \"http\" (got: %s).",
                                   cfg_got(c, x));
        }
        if ((x = jv_object_get(v, "workspaceReadTimeoutMs")))
                (void)cfg_uint_range(c, x, "sandbox.workspaceReadTimeoutMs", 1000, 1800000,
                                     &s->workspace_read_timeout_ms);
        if ((x = jv_object_get(v, "stagedWorkspaces")))
                parse_staged(c, x, &s->staged);
}

/* A warm pool's pairs are made for the app's policy (the default launch identity). */
static void copy_pool_policy(struct cfg *c, struct b4_sandbox_config *s)
{
        struct b4_policy *pol;

        if (!s->provider.kube_pool_size)
                return;
        pol = b4_calloc(1, sizeof(*pol));
        if (!pol) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        b4_policy_init(pol);
        if (b4_policy_copy(pol, &s->policy) < 0) {
                b4_policy_clear(pol);
                free(pol);
                cfg_fail(c, -ENOMEM);
                return;
        }
        s->provider.kube_pool_policy = pol;
}

void config_parse_sandbox(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s)
{
        const struct jv *x;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json sandbox must be an object.");
                return;
        }
        cfg_known_keys(c, v, "sandbox", "a sandbox option", sandbox_keys);
        parse_managed(c, v, s);
        if ((x = jv_object_get(v, "provider")))
                config_parse_provider(c, x, &s->provider);
        else
                cfg_refuse(c, "b4box.json sandbox.provider is required.");
        if ((x = jv_object_get(v, "network")))
                config_parse_network(c, x, &s->policy);
        if ((x = jv_object_get(v, "env")))
                config_parse_env(c, x, "sandbox.env", &s->policy.env, &s->policy.n_env);
        if ((x = jv_object_get(v, "resources")))
                config_parse_resources(c, x, &s->policy);
        if ((x = jv_object_get(v, "security")))
                config_parse_security(c, x, &s->policy.security);
        if ((x = jv_object_get(v, "idleTimeoutMs")))
                (void)cfg_positive_int(c, x, "sandbox.idleTimeoutMs", MAX_IDLE_TIMEOUT_MS,
                                       &s->idle_timeout_ms);
        if ((x = jv_object_get(v, "idlePauseMs"))) /* ours: pause before release */
                (void)cfg_positive_int(c, x, "sandbox.idlePauseMs", MAX_IDLE_TIMEOUT_MS,
                                       &s->idle_pause_ms);
        copy_pool_policy(c, s);
}

/* The adapted workspaceProtocolPolicyMessage; NULL when no HTTP workspace option is on. */
static void check_protocol_policy(struct cfg *c, const struct b4_config *cfg)
{
        const struct b4_sandbox_config *s = &cfg->sandbox;
        const char *what;

        if (cfg->thread_access.present)
                return;
        if (s->workspace_read && s->staged.enabled)
                what = "sandbox.workspaceRead and sandbox.stagedWorkspaces serve";
        else if (s->workspace_read)
                what = "sandbox.workspaceRead serves";
        else if (s->staged.enabled)
                what = "sandbox.stagedWorkspaces serves";
        else
                return;
        cfg_refuse(c,
                   "%s a thread's workspace over HTTP, and this app has no thread-access "
                   "policy, so anyone who can reach the port could use it. Add a threadAccess "
                   "block to b4box.json (see docs/configuration.md) or remove the option.",
                   what);
}

void config_check_sandbox(struct cfg *c, const struct jv *sandbox, const struct b4_config *cfg)
{
        const struct b4_sandbox_config *s = &cfg->sandbox;
        bool has_ws = jv_object_get(sandbox, "workspace") != NULL;
        bool has_thread = jv_object_get(sandbox, "thread") != NULL;
        bool has_read = jv_object_get(sandbox, "workspaceRead") != NULL;

        if (has_ws && has_thread)
                cfg_refuse(c, "b4box.json sandbox.thread and sandbox.workspace are exclusive: a "
                              "thread resolver returns the thread's workspace itself.");
        if (s->workspace_read && !has_ws && !has_thread)
                cfg_refuse(c, "b4box.json sandbox.workspaceRead needs managed workspaces: set "
                              "sandbox.workspace or sandbox.thread.");
        if (jv_object_get(sandbox, "workspaceReadTimeoutMs") && !has_read)
                cfg_refuse(c, "b4box.json sandbox.workspaceReadTimeoutMs applies only with "
                              "sandbox.workspaceRead: \"http\".");
        if (s->staged.enabled && !has_thread && s->workspace_kind != B4_WORKSPACE_RESOLVER &&
            !(has_ws && s->workspace_kind == B4_WORKSPACE_NONE))
                cfg_refuse(c, "b4box.json sandbox.stagedWorkspaces needs a resolver "
                              "(sandbox.thread, or a resolver command sandbox.workspace): a "
                              "static workspace would ignore what was staged.");
        if (s->staged.enabled && s->thread_kind == B4_THREAD_TARGETS)
                cfg_refuse(c, "b4box.json sandbox.stagedWorkspaces needs a resolver command "
                              "(sandbox.thread.command or sandbox.workspace.command): declarative "
                              "sandbox.thread targets would ignore what was staged.");
        check_protocol_policy(c, cfg);
        config_check_thread_network(c, s);
}
