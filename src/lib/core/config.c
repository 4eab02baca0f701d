/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box.json: top-level blocks (server, sandbox, permissions, threadAccess), the server block,
 * loading, defaults and freeing. A config is either fully valid or not returned at all: every
 * refusal is collected and handed back, and nothing is half-applied.
 */

#include "b4box/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strv.h"
#include "config-internal.h"

#define UNIX_PATH_MAX_BYTES 107

static const char *const top_keys[] = { "server", "sandbox", "permissions", "threadAccess", NULL };
static const char *const server_keys[] = {
        "listen",          "maxBodyBytes",        "maxToolBodyBytes",
        "maxConnections",  "maxConnectionsPerIp", "requestTimeoutMs",
        "headerTimeoutMs", "streamKeepaliveMs",   NULL
};

void config_server_init(struct b4_server_config *s)
{
        *s = (struct b4_server_config){
                .max_body_bytes = B4_DEFAULT_MAX_BODY_BYTES,
                .max_tool_body_bytes = B4_DEFAULT_MAX_TOOL_BODY_BYTES,
                .max_connections = B4_DEFAULT_MAX_CONNECTIONS,
                .max_connections_ip = B4_DEFAULT_MAX_CONNECTIONS_IP,
                .request_timeout_ms = B4_DEFAULT_REQUEST_TIMEOUT_MS,
                .header_timeout_ms = B4_DEFAULT_HEADER_TIMEOUT_MS,
                .stream_keepalive_ms = B4_DEFAULT_STREAM_KEEPALIVE_MS,
        };
}

void config_server_clear(struct b4_server_config *s)
{
        free(s->listen);
        config_server_init(s);
}

/* Connections cost a descriptor, not a thread (docs/http-api.md "Limits"), hence the range. */
static void parse_connection_limits(struct cfg *c, const struct jv *v, struct b4_server_config *s)
{
        const struct jv *x;
        uint64_t n;

        if ((x = jv_object_get(v, "maxConnections")) &&
            cfg_uint_range(c, x, "server.maxConnections", 1, 65536, &n))
                s->max_connections = (uint32_t)n;
        if ((x = jv_object_get(v, "maxConnectionsPerIp")) &&
            cfg_uint_range(c, x, "server.maxConnectionsPerIp", 1, 65536, &n))
                s->max_connections_ip = (uint32_t)n;
}

static bool host_port_ok(const char *s)
{
        const char *colon = strrchr(s, ':');
        uint64_t port;

        if (!colon || colon == s)
                return false;
        if (s[0] == '[' && colon[-1] != ']')
                return false;
        if (s[0] != '[' && memchr(s, ':', (size_t)(colon - s)))
                return false;
        if (colon[1] < '0' || colon[1] > '9')
                return false;
        if (safe_atou64(colon + 1, &port) < 0 || port < 1 || port > 65535)
                return false;
        return true;
}

static void parse_listen(struct cfg *c, const struct jv *v, struct b4_server_config *s)
{
        cleanup_free char *l = NULL;

        if (!cfg_string(c, v, "server.listen", CFG_MAX_PATH, &l))
                return;
        if (strncmp(l, "unix:", 5) != 0) {
                if (!host_port_ok(l))
                        cfg_refuse(c,
                                   "b4box.json server.listen must be \"host:port\" or "
                                   "\"unix:/path\" (got: %s).",
                                   cfg_got(c, v));
                else
                        s->listen = TAKE_PTR(l);
                return;
        }
        cleanup_free char *path = l[5] ? cfg_abs_path(c, l + 5) : NULL;
        if (!l[5] || (path && strlen(path) > UNIX_PATH_MAX_BYTES)) {
                cfg_refuse(c,
                           "b4box.json server.listen needs a unix socket path of 1 to %d bytes "
                           "(got: %s).",
                           UNIX_PATH_MAX_BYTES, cfg_got(c, v));
                return;
        }
        if (path && b4_asprintf(&s->listen, "unix:%s", path) < 0)
                cfg_fail(c, -ENOMEM);
}

void config_parse_server(struct cfg *c, const struct jv *v, struct b4_server_config *s)
{
        const struct jv *x;

        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json server must be an object (got: %s).", cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "server", "a server option", server_keys);
        if ((x = jv_object_get(v, "listen")))
                parse_listen(c, x, s);
        if ((x = jv_object_get(v, "maxBodyBytes")))
                (void)cfg_uint_range(c, x, "server.maxBodyBytes", 1024, 64u * 1024 * 1024,
                                     &s->max_body_bytes);
        if ((x = jv_object_get(v, "maxToolBodyBytes")))
                (void)cfg_uint_range(c, x, "server.maxToolBodyBytes", 1024, 256u * 1024 * 1024,
                                     &s->max_tool_body_bytes);
        parse_connection_limits(c, v, s);
        if ((x = jv_object_get(v, "requestTimeoutMs")))
                (void)cfg_uint_range(c, x, "server.requestTimeoutMs", 1000, 600000,
                                     &s->request_timeout_ms);
        if ((x = jv_object_get(v, "headerTimeoutMs")))
                (void)cfg_uint_range(c, x, "server.headerTimeoutMs", 100, 600000,
                                     &s->header_timeout_ms);
        if ((x = jv_object_get(v, "streamKeepaliveMs")))
                (void)cfg_uint_range(c, x, "server.streamKeepaliveMs", 100, 15000,
                                     &s->stream_keepalive_ms);
}

static int config_new(const char *base_dir, struct b4_config **ret)
{
        cleanup_free char *cwd = NULL;
        struct b4_config *cfg;

        if (!base_dir || base_dir[0] != '/') {
                cwd = getcwd(NULL, 0);
                if (!cwd)
                        return -errno;
        }
        cfg = b4_calloc(1, sizeof(*cfg));
        if (!cfg)
                return -ENOMEM;
        config_server_init(&cfg->server);
        config_sandbox_init(&cfg->sandbox);
        if (!base_dir)
                cfg->base_dir = TAKE_PTR(cwd);
        else if (base_dir[0] == '/')
                cfg->base_dir = b4_strdup(base_dir);
        else if (b4_asprintf(&cfg->base_dir, "%s/%s", cwd, base_dir) < 0)
                cfg->base_dir = NULL;
        cfg->server.listen = b4_strdup(B4_DEFAULT_LISTEN);
        if (!cfg->base_dir || !cfg->server.listen) {
                b4_config_free(cfg);
                return -ENOMEM;
        }
        *ret = cfg;
        return 0;
}

static void parse_blocks(struct cfg *c, const struct jv *root, struct b4_config *cfg)
{
        const struct jv *v;

        if (!jv_is_object(root)) {
                cfg_refuse(c, "b4box.json must be a JSON object (got: %s).", cfg_got(c, root));
                return;
        }
        cfg_known_keys(c, root, "", "a b4box.json block", top_keys);
        if ((v = jv_object_get(root, "server"))) {
                free(cfg->server.listen);
                cfg->server.listen = NULL;
                config_parse_server(c, v, &cfg->server);
                if (!cfg->server.listen && !(cfg->server.listen = b4_strdup(B4_DEFAULT_LISTEN)))
                        cfg_fail(c, -ENOMEM);
        }
        if ((v = jv_object_get(root, "sandbox")))
                config_parse_sandbox(c, v, &cfg->sandbox);
        else if (config_provider_default(&cfg->sandbox.provider) < 0)
                cfg_fail(c, -ENOMEM);
        if ((v = jv_object_get(root, "permissions")))
                config_parse_permissions(c, v, &cfg->permissions);
        if ((v = jv_object_get(root, "threadAccess")))
                config_parse_thread_access(c, v, &cfg->thread_access);
        config_check_sandbox(c, jv_object_get(root, "sandbox"), cfg);
}

static int finish(struct cfg *c,
                  struct b4_config *cfg,
                  struct b4_config **ret,
                  char ***ret_errors,
                  struct b4_error *err)
{
        if (c->r == 0 && c->n_dropped > 0) {
                char *s = NULL;

                if (b4_asprintf(&s, "b4box.json: %zu more refusals not shown.", c->n_dropped) < 0 ||
                    strv_consume(&c->errors, s) < 0)
                        cfg_fail(c, -ENOMEM);
        }
        if (c->r < 0) {
                b4_config_free(cfg);
                c->errors = strv_free(c->errors);
                return b4_error_set(err, c->r, "b4box.json: out of memory");
        }
        if (c->n_errors > 0) {
                b4_config_free(cfg);
                *ret_errors = TAKE_PTR(c->errors);
                return b4_error_set(err, -EINVAL, "b4box.json refused (%zu problems)",
                                    c->n_errors + c->n_dropped);
        }
        *ret = cfg;
        return 0;
}

int b4_config_parse(const char *json,
                    size_t len,
                    const char *base_dir,
                    struct b4_config **ret,
                    char ***ret_errors,
                    struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *root = NULL;
        struct b4_error perr = { 0 };
        struct b4_config *cfg = NULL;
        struct cfg c = { 0 };
        int r;

        r = config_new(base_dir, &cfg);
        if (r < 0)
                return b4_error_set(err, r, "b4box.json: cannot set up the configuration");
        c.base_dir = cfg->base_dir;
        r = jv_parse(json, len, &root, &perr);
        if (r == -ENOMEM)
                cfg_fail(&c, r);
        else if (r < 0)
                cfg_refuse(&c, "b4box.json is not valid JSON: %s.", perr.msg);
        else
                parse_blocks(&c, root, cfg);
        return finish(&c, cfg, ret, ret_errors, err);
}

static int dir_of(const char *path, char **ret)
{
        const char *slash = strrchr(path, '/');

        if (!slash)
                *ret = b4_strdup(".");
        else if (slash == path)
                *ret = b4_strdup("/");
        else
                *ret = b4_strndup(path, (size_t)(slash - path));
        return *ret ? 0 : -ENOMEM;
}

int b4_config_load(const char *path,
                   struct b4_config **ret,
                   char ***ret_errors,
                   struct b4_error *err)
{
        cleanup_free char *buf = NULL, *dir = NULL;
        size_t len = 0;
        int r;

        r = read_file_at(AT_FDCWD, path, B4_CONFIG_MAX_BYTES, &buf, &len);
        if (r == -EFBIG)
                return b4_error_set(err, r, "config '%s' is larger than %u bytes", path,
                                    B4_CONFIG_MAX_BYTES);
        if (r < 0)
                return b4_error_set(err, r, "cannot read config '%s': %s", path, strerror(-r));
        r = dir_of(path, &dir);
        if (r < 0)
                return b4_error_set(err, r, "out of memory");
        return b4_config_parse(buf, len, dir, ret, ret_errors, err);
}

int b4_config_default(struct b4_config **ret, struct b4_error *err)
{
        struct b4_config *cfg = NULL;
        int r;

        r = config_new(NULL, &cfg);
        if (r >= 0)
                r = config_provider_default(&cfg->sandbox.provider);
        if (r < 0) {
                b4_config_free(cfg);
                return b4_error_set(err, r, "cannot set up the default configuration");
        }
        *ret = cfg;
        return 0;
}

struct b4_config *b4_config_free(struct b4_config *c)
{
        if (!c)
                return NULL;
        free(c->base_dir);
        config_server_clear(&c->server);
        config_sandbox_clear(&c->sandbox);
        config_permissions_clear(&c->permissions);
        config_thread_access_clear(&c->thread_access);
        free(c);
        return NULL;
}

const struct b4_policy *b4_config_policy(const struct b4_config *c)
{
        return &c->sandbox.policy;
}

char **b4_config_errors_free(char **errors)
{
        return strv_free(errors);
}
