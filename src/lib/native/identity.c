/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exact environment of a command (the launch identity is core/launch.c):
 * the policy's env, the request's over it, HOME=/workspace when non-root, and a default PATH
 * when none is given. The host's environment is never consulted.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/strv.h"
#include "core/launch.h"
#include "json/json.h"
#include "native.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static int env_set(char ***env, const char *name, const char *value)
{
        size_t n = strlen(name);
        char *kv = NULL;

        if (b4_asprintf(&kv, "%s=%s", name, value) < 0)
                return -ENOMEM;
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
                        free(*e);
                        *e = kv;
                        return 0;
                }
        return strv_consume(env, kv);
}

static bool env_has(char **env, const char *name)
{
        size_t n = strlen(name);

        STRV_FOREACH (e, env)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return true;
        return false;
}

int native_build_env(char *const *base,
                     const struct b4_policy *p,
                     const struct b4_env_var *extra,
                     size_t n_extra,
                     char ***ret,
                     struct b4_error *err)
{
        cleanup_strv char **env = NULL;
        int r = 0;

        for (char *const *e = base; r >= 0 && e && *e; e++) { /* an image's Env: the base */
                const char *eq = strchr(*e, '=');
                cleanup_free char *name = eq ? b4_strndup(*e, (size_t)(eq - *e)) : NULL;

                if (name && b4_env_name_is_valid(name))
                        r = env_set(&env, name, eq + 1);
        }
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = env_set(&env, p->env[i].name, p->env[i].value);
        if (r >= 0 && p->security.run_as_non_root)
                r = env_set(&env, "HOME", "/workspace");
        for (size_t i = 0; r >= 0 && i < n_extra; i++) {
                if (!b4_env_name_is_valid(extra[i].name))
                        return b4_error_set(err, -EINVAL,
                                            "Invalid environment variable name \"%s\": keys must "
                                            "match /^[A-Za-z_][A-Za-z0-9_]*$/",
                                            extra[i].name ? extra[i].name : "");
                r = env_set(&env, extra[i].name, extra[i].value ? extra[i].value : "");
        }
        if (r >= 0 && !env_has(env, "PATH"))
                r = env_set(&env, "PATH", DEFAULT_PATH);
        if (r < 0)
                return b4_error_set(err, r, "cannot build the command environment");
        *ret = TAKE_PTR(env);
        return 0;
}
