/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the API server is and how to authenticate (kube.h has the precedence): a kubeconfig
 * list read with libyaml's document API (merged as kubectl merges: the first file to set
 * current-context or to define a name wins; relative paths resolve against the folder of
 * the file that defines the entry), the in-cluster service account, then the explicit
 * options on top. Every kubeconfig is untrusted input of at most KUBECONFIG_MAX bytes.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "kube/kube-internal.h"
#include "kube/kube.h"

#define KUBECONFIG_MAX  (1024u * 1024)
#define KUBECONFIG_LIST 16 /* files in one ':'-list */
#define SA_FILE_MAX     (64u * 1024)

/* One parsed kubeconfig file. */
struct kc_file {
        char *path;
        char *dir; /* its folder, for relative paths */
        yaml_document_t doc;
        bool loaded;
};

struct kc {
        struct kc_file files[KUBECONFIG_LIST];
        size_t n;
        const char *list; /* as given, for messages */
};

/* An entry found by name: its file and its inner mapping (context:, cluster:, user:). */
struct kc_entry {
        struct kc_file *file;
        yaml_node_t *node;
        const char *name;
};

static void kc_release(struct kc *kc)
{
        for (size_t i = 0; i < kc->n; i++) {
                if (kc->files[i].loaded)
                        yaml_document_delete(&kc->files[i].doc);
                free(kc->files[i].path);
                free(kc->files[i].dir);
        }
        kc->n = 0;
}

static void free_secret(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

static void free_pem(void *p, size_t len)
{
        if (p)
                explicit_bzero(p, len);
        free(p);
}

void kube_config_release(struct kube_config *cfg)
{
        if (!cfg)
                return;
        free(cfg->server);
        free(cfg->namespace);
        free_secret(cfg->token);
        free(cfg->token_file);
        free(cfg->ca_file);
        free_pem(cfg->ca_pem, cfg->ca_pem_len);
        free(cfg->cert_file);
        free_pem(cfg->cert_pem, cfg->cert_pem_len);
        free(cfg->key_file);
        free_pem(cfg->key_pem, cfg->key_pem_len);
        free(cfg->tls_server_name);
        free(cfg->source);
        *cfg = (struct kube_config){ 0 };
}

/* ---- YAML access ---- */

static yaml_node_t *node_at(yaml_document_t *doc, int id)
{
        return id ? yaml_document_get_node(doc, id) : NULL;
}

/* A plain null (~, null, empty) counts as absent, as kubectl reads it. */
static bool is_null(const yaml_node_t *n)
{
        const char *v = (const char *)n->data.scalar.value;

        if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                return false;
        return !v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
               strcmp(v, "NULL") == 0;
}

/* The value of @key in mapping @map, NULL when absent (or null). */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
        if (!map || map->type != YAML_MAPPING_NODE)
                return NULL;
        for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
             p++) {
                yaml_node_t *k = node_at(doc, p->key), *v = node_at(doc, p->value);
                if (k && k->type == YAML_SCALAR_NODE &&
                    strcmp((const char *)k->data.scalar.value, key) == 0)
                        return v && !is_null(v) ? v : NULL;
        }
        return NULL;
}

/*
 * The string at @key of @map: *ret borrowed (NULL when absent or empty).
 * Return: 0, -EINVAL (not a scalar, or holds a NUL).
 */
static int map_string(struct kc_file *f,
                      yaml_node_t *map,
                      const char *key,
                      const char *where,
                      const char **ret,
                      struct b4_error *err)
{
        yaml_node_t *v = map_get(&f->doc, map, key);

        *ret = NULL;
        if (!v)
                return 0;
        if (v->type != YAML_SCALAR_NODE ||
            strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
                return b4_error_set(err, -EINVAL, "kubeconfig '%s': %s.%s must be a string",
                                    f->path, where, key);
        *ret = v->data.scalar.value[0] ? (const char *)v->data.scalar.value : NULL;
        return 0;
}

/* YAML 1.1 booleans, as kubectl's YAML reader takes them. Return: 0, -EINVAL. */
static int map_bool(struct kc_file *f,
                    yaml_node_t *map,
                    const char *key,
                    const char *where,
                    bool *ret,
                    struct b4_error *err)
{
        static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES",
                                           "on",   "On",   "ON",   "y",   "Y",   NULL };
        static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO",
                                          "off",   "Off",   "OFF",   "n",  "N",  NULL };
        const char *v;
        int r = map_string(f, map, key, where, &v, err);

        *ret = false;
        if (r < 0 || !v)
                return r;
        for (size_t i = 0; yes[i]; i++)
                if (strcmp(v, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; no[i]; i++)
                if (strcmp(v, no[i]) == 0)
                        return 0;
        return b4_error_set(err, -EINVAL,
                            "kubeconfig '%s': %s.%s must be true or false (got: '%s')", f->path,
                            where, key, v);
}

/* ---- loading ---- */

static int kc_load_one(struct kc_file *f, const char *path, struct b4_error *err)
{
        cleanup_free char *buf = NULL;
        yaml_parser_t parser;
        const char *slash;
        size_t len = 0;
        int r;

        f->path = b4_strdup(path);
        slash = strrchr(path, '/');
        f->dir = slash ? b4_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                       : b4_strdup(".");
        if (!f->path || !f->dir)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = read_file_at(AT_FDCWD, path, KUBECONFIG_MAX, &buf, &len);
        if (r == -EFBIG)
                return b4_error_set(err, r, "kubeconfig '%s' is larger than %u bytes", path,
                                    KUBECONFIG_MAX);
        if (r < 0)
                return b4_error_set(err, r, "cannot read kubeconfig '%s': %s", path, strerror(-r));
        if (!yaml_parser_initialize(&parser))
                return b4_error_set(err, -ENOMEM, "out of memory");
        yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
        if (!yaml_parser_load(&parser, &f->doc)) {
                r = b4_error_set(err, parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL,
                                 "kubeconfig '%s' is not valid YAML: %s at line %zu", path,
                                 parser.problem ? parser.problem : "error",
                                 parser.problem_mark.line + 1);
                yaml_parser_delete(&parser);
                return r;
        }
        yaml_parser_delete(&parser);
        f->loaded = true;
        yaml_node_t *root = yaml_document_get_root_node(&f->doc);
        if (root && root->type != YAML_MAPPING_NODE)
                return b4_error_set(err, -EINVAL, "kubeconfig '%s' is not a mapping", path);
        return 0;
}

/* Load every file of the ':'-list @list (empty items skipped). */
static int kc_load(struct kc *kc, const char *list, struct b4_error *err)
{
        const char *p = list;
        int r;

        kc->list = list;
        while (*p) {
                const char *end = strchrnul(p, ':');
                if (end > p) {
                        cleanup_free char *path = b4_strndup(p, (size_t)(end - p));
                        if (!path)
                                return b4_error_set(err, -ENOMEM, "out of memory");
                        if (kc->n == KUBECONFIG_LIST)
                                return b4_error_set(err, -E2BIG, "more than %d kubeconfig files",
                                                    KUBECONFIG_LIST);
                        r = kc_load_one(&kc->files[kc->n++], path, err);
                        if (r < 0)
                                return r;
                }
                p = *end ? end + 1 : end;
        }
        if (kc->n == 0)
                return b4_error_set(err, -ENOENT, "the kubeconfig list '%s' names no file", list);
        return 0;
}

static yaml_node_t *file_root(struct kc_file *f)
{
        return yaml_document_get_root_node(&f->doc);
}

/* The first current-context of the list. Return: 0, -EINVAL. */
static int kc_current_context(struct kc *kc, const char **ret, struct b4_error *err)
{
        int r;

        *ret = NULL;
        for (size_t i = 0; i < kc->n && !*ret; i++) {
                r = map_string(&kc->files[i], file_root(&kc->files[i]), "current-context", "", ret,
                               err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* In one file's @list_key ("clusters"), the entry named @name: its @inner mapping. */
static int file_find(struct kc_file *f,
                     const char *list_key,
                     const char *inner,
                     const char *name,
                     yaml_node_t **ret,
                     struct b4_error *err)
{
        yaml_node_t *seq = map_get(&f->doc, file_root(f), list_key);
        const char *n;
        int r;

        *ret = NULL;
        if (!seq)
                return 0;
        if (seq->type != YAML_SEQUENCE_NODE)
                return b4_error_set(err, -EINVAL, "kubeconfig '%s': %s must be a list", f->path,
                                    list_key);
        for (yaml_node_item_t *it = seq->data.sequence.items.start;
             it < seq->data.sequence.items.top; it++) {
                yaml_node_t *e = node_at(&f->doc, *it);
                if (!e || e->type != YAML_MAPPING_NODE)
                        return b4_error_set(err, -EINVAL,
                                            "kubeconfig '%s': %s[%td] must be a mapping", f->path,
                                            list_key, it - seq->data.sequence.items.start);
                r = map_string(f, e, "name", list_key, &n, err);
                if (r < 0)
                        return r;
                if (!n || strcmp(n, name) != 0)
                        continue;
                *ret = map_get(&f->doc, e, inner); /* NULL: found, with an empty body */
                if (*ret && (*ret)->type != YAML_MAPPING_NODE)
                        return b4_error_set(
                                err, -EINVAL,
                                "kubeconfig '%s': %s '%s' has a %s that is not a mapping", f->path,
                                list_key, name, inner);
                return 1;
        }
        return 0;
}

/* The entry named @name in the first file that defines it. Return: 0, -ENOENT, -EINVAL. */
static int kc_find(struct kc *kc,
                   const char *list_key,
                   const char *inner,
                   const char *name,
                   const char *what,
                   struct kc_entry *ret,
                   struct b4_error *err)
{
        int r;

        for (size_t i = 0; i < kc->n; i++) {
                yaml_node_t *node = NULL;
                r = file_find(&kc->files[i], list_key, inner, name, &node, err);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret = (struct kc_entry){ .file = &kc->files[i],
                                                  .node = node,
                                                  .name = name };
                        return 0;
                }
        }
        return b4_error_set(err, -ENOENT, "kubeconfig '%s': %s", kc->list, what);
}

/* ---- filling the config ---- */

/* @path as given when absolute, else against @dir. */
static int resolve_path(const char *dir, const char *path, char **ret)
{
        if (path[0] == '/')
                *ret = b4_strdup(path);
        else if (b4_asprintf(ret, "%s/%s", dir, path) < 0)
                *ret = NULL;
        return *ret ? 0 : -ENOMEM;
}

/* base64 with line breaks and blanks allowed (as Go's decoder skips \r and \n). */
static int decode_data(const char *s, void **ret, size_t *ret_len)
{
        cleanup_free char *clean = b4_malloc(strlen(s) + 1);
        char *out = NULL;
        size_t n = 0;
        int r;

        if (!clean)
                return -ENOMEM;
        for (const char *p = s; *p; p++)
                if (!strchr(" \t\r\n", *p))
                        clean[n++] = *p;
        clean[n] = '\0';
        if (n == 0)
                return -EINVAL;
        r = base64_decode(clean, n, &out, ret_len);
        if (r < 0)
                return r;
        *ret = out;
        return 0;
}

/*
 * One PEM item of an entry: "<key>" (a file) or "<key>-data" (base64). Both given: the data
 * wins, as in client-go. Return: 0, -EINVAL (bad base64), -ENOMEM.
 */
static int pem_item(const struct kc_entry *e,
                    const char *key,
                    const char *where,
                    char **ret_file,
                    void **ret_pem,
                    size_t *ret_len,
                    struct b4_error *err)
{
        cleanup_free char *data_key = NULL;
        const char *file, *data;
        int r;

        if (b4_asprintf(&data_key, "%s-data", key) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = map_string(e->file, e->node, key, where, &file, err);
        if (r >= 0)
                r = map_string(e->file, e->node, data_key, where, &data, err);
        if (r < 0)
                return r;
        if (data) {
                r = decode_data(data, ret_pem, ret_len);
                if (r == -ENOMEM)
                        return b4_error_set(err, r, "out of memory");
                if (r < 0)
                        return b4_error_set(err, -EINVAL,
                                            "kubeconfig '%s': %s '%s': %s is not "
                                            "valid base64",
                                            e->file->path, where, e->name, data_key);
                return 0;
        }
        if (file && resolve_path(e->file->dir, file, ret_file) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

static int fill_cluster(struct kube_config *cfg,
                        const struct kc_entry *e,
                        bool allow_insecure,
                        struct b4_error *err)
{
        const char *server, *sni;
        int r;

        r = map_string(e->file, e->node, "server", "clusters", &server, err);
        if (r >= 0)
                r = map_string(e->file, e->node, "tls-server-name", "clusters", &sni, err);
        if (r >= 0)
                r = map_bool(e->file, e->node, "insecure-skip-tls-verify", "clusters",
                             &cfg->insecure, err);
        if (r < 0)
                return r;
        if (!server)
                return b4_error_set(err, -EINVAL, "kubeconfig '%s': cluster '%s' has no server",
                                    e->file->path, e->name);
        if (map_get(&e->file->doc, e->node, "proxy-url"))
                return b4_error_set(err, -EOPNOTSUPP,
                                    "kubeconfig '%s': cluster '%s': proxy-url "
                                    "is not supported",
                                    e->file->path, e->name);
        if (cfg->insecure && !allow_insecure)
                return b4_error_set(err, -EPERM,
                                    "kubeconfig '%s': cluster '%s' sets "
                                    "insecure-skip-tls-verify, which is refused",
                                    e->file->path, e->name);
        if (!(cfg->server = b4_strdup(server)) || (sni && !(cfg->tls_server_name = b4_strdup(sni))))
                return b4_error_set(err, -ENOMEM, "out of memory");
        return pem_item(e, "certificate-authority", "clusters", &cfg->ca_file, &cfg->ca_pem,
                        &cfg->ca_pem_len, err);
}

/* What client-go can do and b4box cannot: refused by name rather than ignored. */
static int user_unsupported(const struct kc_entry *e, struct b4_error *err)
{
        static const char *const keys[] = { "exec", "auth-provider", "username", "password",
                                            "as",   "as-groups",     NULL };

        for (size_t i = 0; keys[i]; i++)
                if (map_get(&e->file->doc, e->node, keys[i]))
                        return b4_error_set(err, -EOPNOTSUPP,
                                            "kubeconfig '%s': user '%s': %s "
                                            "is not supported (use a token, a "
                                            "token file or a client certificate)",
                                            e->file->path, e->name, keys[i]);
        return 0;
}

static int fill_user(struct kube_config *cfg, const struct kc_entry *e, struct b4_error *err)
{
        const char *token, *token_file;
        int r;

        r = user_unsupported(e, err);
        if (r >= 0)
                r = map_string(e->file, e->node, "token", "users", &token, err);
        if (r >= 0)
                r = map_string(e->file, e->node, "tokenFile", "users", &token_file, err);
        if (r >= 0)
                r = pem_item(e, "client-certificate", "users", &cfg->cert_file, &cfg->cert_pem,
                             &cfg->cert_pem_len, err);
        if (r >= 0)
                r = pem_item(e, "client-key", "users", &cfg->key_file, &cfg->key_pem,
                             &cfg->key_pem_len, err);
        if (r < 0)
                return r;
        if ((cfg->cert_file || cfg->cert_pem) != (cfg->key_file || cfg->key_pem))
                return b4_error_set(err, -EINVAL,
                                    "kubeconfig '%s': user '%s' has a client %s "
                                    "without its %s",
                                    e->file->path, e->name,
                                    cfg->key_file || cfg->key_pem ? "key" : "certificate",
                                    cfg->key_file || cfg->key_pem ? "certificate" : "key");
        if (token && !(cfg->token = b4_strdup(token)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (token_file && resolve_path(e->file->dir, token_file, &cfg->token_file) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

/* The context's cluster and user into @cfg. */
static int fill_context(struct kc *kc,
                        const struct kc_entry *ctx,
                        const struct kube_options *o,
                        struct kube_config *cfg,
                        struct b4_error *err)
{
        const char *cluster, *user, *ns;
        cleanup_free char *what = NULL;
        struct kc_entry e;
        int r;

        r = map_string(ctx->file, ctx->node, "cluster", "contexts", &cluster, err);
        if (r >= 0)
                r = map_string(ctx->file, ctx->node, "user", "contexts", &user, err);
        if (r >= 0)
                r = map_string(ctx->file, ctx->node, "namespace", "contexts", &ns, err);
        if (r < 0)
                return r;
        if (!cluster)
                return b4_error_set(err, -EINVAL, "kubeconfig '%s': context '%s' names no cluster",
                                    ctx->file->path, ctx->name);
        if (b4_asprintf(&what, "cluster '%s' of context '%s' is not defined", cluster, ctx->name) <
            0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kc_find(kc, "clusters", "cluster", cluster, what, &e, err);
        if (r >= 0)
                r = fill_cluster(cfg, &e, o->allow_insecure, err);
        if (r < 0 || !user)
                return r;
        free(what);
        if (b4_asprintf(&what, "user '%s' of context '%s' is not defined", user, ctx->name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kc_find(kc, "users", "user", user, what, &e, err);
        if (r >= 0)
                r = fill_user(cfg, &e, err);
        if (r >= 0 && ns && !(cfg->namespace = b4_strdup(ns)))
                r = b4_error_set(err, -ENOMEM, "out of memory");
        return r;
}

static int from_kubeconfig(const char *list,
                           const struct kube_options *o,
                           struct kube_config *cfg,
                           struct b4_error *err)
{
        cleanup_(kc_release) struct kc kc = { 0 };
        cleanup_free char *what = NULL;
        const char *name = o->context;
        struct kc_entry ctx;
        int r;

        r = kc_load(&kc, list, err);
        if (r >= 0 && !name)
                r = kc_current_context(&kc, &name, err);
        if (r < 0)
                return r;
        if (!name)
                return b4_error_set(err, -ENOENT,
                                    "kubeconfig '%s' has no current-context (name "
                                    "a context)",
                                    list);
        if (b4_asprintf(&what, "context '%s' is not defined", name) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kc_find(&kc, "contexts", "context", name, what, &ctx, err);
        if (r >= 0)
                r = fill_context(&kc, &ctx, o, cfg, err);
        if (r >= 0 && b4_asprintf(&cfg->source, "kubeconfig '%s' context '%s'", list, name) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        return r;
}

/* ---- in-cluster ---- */

/* @dir/@name when it exists, else NULL. Return: 0, -ENOMEM. */
static int sa_file(const char *dir, const char *name, char **ret)
{
        *ret = NULL;
        if (b4_asprintf(ret, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        if (access(*ret, F_OK) < 0) {
                free(*ret);
                *ret = NULL;
        }
        return 0;
}

static int incluster_server(struct kube_config *cfg, struct b4_error *err)
{
        const char *host = secure_getenv("KUBERNETES_SERVICE_HOST");
        const char *port = secure_getenv("KUBERNETES_SERVICE_PORT");
        bool v6 = host && strchr(host, ':');

        if (!host || !host[0] || !port || !port[0])
                return b4_error_set(err, -ENOENT,
                                    "not in a cluster: KUBERNETES_SERVICE_HOST and "
                                    "KUBERNETES_SERVICE_PORT are not both set");
        for (const char *p = port; *p; p++)
                if (*p < '0' || *p > '9')
                        return b4_error_set(err, -EINVAL,
                                            "KUBERNETES_SERVICE_PORT '%s' is not a "
                                            "port",
                                            port);
        if (b4_asprintf(&cfg->server, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

static int from_incluster(const struct kube_options *o,
                          struct kube_config *cfg,
                          struct b4_error *err)
{
        const char *dir = o->sa_dir ? o->sa_dir : KUBE_SA_DIR;
        cleanup_free char *ns_path = NULL;
        int r;

        if (!o->api_server) {
                r = incluster_server(cfg, err);
                if (r < 0)
                        return r;
        }
        if (sa_file(dir, "token", &cfg->token_file) < 0 ||
            sa_file(dir, "ca.crt", &cfg->ca_file) < 0 || sa_file(dir, "namespace", &ns_path) < 0 ||
            !(cfg->source = b4_strdup("in-cluster")))
                return b4_error_set(err, -ENOMEM, "out of memory");
        if (ns_path) {
                size_t len = 0;
                r = read_file_at(AT_FDCWD, ns_path, SA_FILE_MAX, &cfg->namespace, &len);
                if (r < 0)
                        return b4_error_set(err, r, "cannot read '%s': %s", ns_path, strerror(-r));
                while (len > 0 && strchr(" \t\r\n", cfg->namespace[len - 1]))
                        cfg->namespace[--len] = '\0';
        }
        return 0;
}

/* ---- the resolution ---- */

/* Which kubeconfig list applies, if any: borrowed or in *ret_owned. */
static const char *kubeconfig_list(const struct kube_options *o, bool *ret_home, char **ret_owned)
{
        const char *env = secure_getenv("KUBECONFIG"), *home = secure_getenv("HOME");

        *ret_home = false;
        if (o->kubeconfig)
                return o->kubeconfig;
        if (env && env[0])
                return env;
        if (o->context || !(o->api_server || secure_getenv("KUBERNETES_SERVICE_HOST"))) {
                *ret_home = true;
                if (home && home[0] && b4_asprintf(ret_owned, "%s/.kube/config", home) >= 0)
                        return *ret_owned;
        }
        return NULL;
}

static int replace(char **field, const char *value)
{
        char *v = b4_strdup(value);

        if (!v)
                return -ENOMEM;
        free(*field);
        *field = v;
        return 0;
}

/* The explicit options over the base. */
static int apply_explicit(const struct kube_options *o, struct kube_config *cfg)
{
        int r = 0;

        if (o->api_server)
                r = replace(&cfg->server, o->api_server);
        if (r >= 0 && o->namespace)
                r = replace(&cfg->namespace, o->namespace);
        if (r >= 0 && o->token_file) {
                r = replace(&cfg->token_file, o->token_file);
                free_secret(cfg->token);
                cfg->token = NULL;
        }
        if (r >= 0 && o->ca_file) {
                r = replace(&cfg->ca_file, o->ca_file);
                free_pem(cfg->ca_pem, cfg->ca_pem_len);
                cfg->ca_pem = NULL;
                cfg->ca_pem_len = 0;
        }
        if (r >= 0 && !cfg->namespace)
                r = replace(&cfg->namespace, "default");
        return r;
}

static int check_server(const struct kube_config *cfg, struct b4_error *err)
{
        if (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0)
                return b4_error_set(err, -EINVAL,
                                    "the API server '%s' (%s) is not an http(s):// "
                                    "URL",
                                    cfg->server, cfg->source);
        if (cfg->tls_server_name)
                return b4_error_set(err, -EOPNOTSUPP, "%s: tls-server-name is not supported",
                                    cfg->source);
        return 0;
}

int kube_config_resolve(const struct kube_options *opts,
                        struct kube_config *ret,
                        struct b4_error *err)
{
        struct kube_config cfg = { 0 };
        cleanup_free char *home_path = NULL;
        const char *list;
        bool home;
        int r;

        list = kubeconfig_list(opts, &home, &home_path);
        if (list && home && access(list, F_OK) < 0 && !opts->context)
                list = NULL;
        if (list)
                r = from_kubeconfig(list, opts, &cfg, err);
        else
                r = from_incluster(opts, &cfg, err);
        if (r >= 0 && apply_explicit(opts, &cfg) < 0)
                r = b4_error_set(err, -ENOMEM, "out of memory");
        if (r >= 0)
                r = check_server(&cfg, err);
        for (size_t n = r >= 0 ? strlen(cfg.server) : 0; n > 8 && cfg.server[n - 1] == '/'; n--)
                cfg.server[n - 1] = '\0';
        if (r < 0) {
                kube_config_release(&cfg);
                return r;
        }
        cfg.qps = opts->qps == 0 ? KUBE_DEFAULT_QPS : opts->qps;
        cfg.burst = opts->burst ? opts->burst : KUBE_DEFAULT_BURST;
        *ret = cfg;
        return 0;
}

static int dup_pem(void **dst, size_t *dst_len, const void *src, size_t len)
{
        *dst = NULL;
        *dst_len = 0;
        if (!src)
                return 0;
        *dst = b4_malloc(len ? len + 1 : 1);
        if (!*dst)
                return -ENOMEM;
        memcpy(*dst, src, len);
        ((char *)*dst)[len] = '\0';
        *dst_len = len;
        return 0;
}

static int dup_str(char **dst, const char *src)
{
        *dst = src ? b4_strdup(src) : NULL;
        return !src || *dst ? 0 : -ENOMEM;
}

int kube_config_copy(struct kube_config *dst, const struct kube_config *src)
{
        int r = 0;

        *dst = (struct kube_config){ .insecure = src->insecure,
                                     .qps = src->qps,
                                     .burst = src->burst };
        r |= dup_str(&dst->server, src->server);
        r |= dup_str(&dst->namespace, src->namespace);
        r |= dup_str(&dst->token, src->token);
        r |= dup_str(&dst->token_file, src->token_file);
        r |= dup_str(&dst->ca_file, src->ca_file);
        r |= dup_str(&dst->cert_file, src->cert_file);
        r |= dup_str(&dst->key_file, src->key_file);
        r |= dup_str(&dst->tls_server_name, src->tls_server_name);
        r |= dup_str(&dst->source, src->source);
        r |= dup_pem(&dst->ca_pem, &dst->ca_pem_len, src->ca_pem, src->ca_pem_len);
        r |= dup_pem(&dst->cert_pem, &dst->cert_pem_len, src->cert_pem, src->cert_pem_len);
        r |= dup_pem(&dst->key_pem, &dst->key_pem_len, src->key_pem, src->key_pem_len);
        if (r) {
                kube_config_release(dst);
                return -ENOMEM;
        }
        return 0;
}
