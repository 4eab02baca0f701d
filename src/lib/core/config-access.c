/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `threadAccess` block: who may call the HTTP API. Each principal names where its bearer
 * token lives (a file or an environment variable, exactly one), which operations it may call
 * and whether it sees only the threads it created. A token itself is never accepted in the
 * file, so b4box.json can be committed. A policy program (`command`) may decide instead of,
 * or after, the principals (src/server/access-program.c).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/config.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"

#define MAX_PRINCIPAL_NAME 128

static const char *const access_keys[] = { "principals", "stagedSources", "command",
                                           "decisionTimeoutMs", NULL };
static const char *const principal_keys[] = { "name",       "tokenFile", "tokenEnv",
                                              "operations", "threads",   NULL };

static const struct {
        const char *name;
        enum b4_access_op op;
} ops[] = {
        { "thread.create", B4_OP_THREAD_CREATE },
        { "thread.read", B4_OP_THREAD_READ },
        { "thread.update", B4_OP_THREAD_UPDATE },
        { "thread.delete", B4_OP_THREAD_DELETE },
        { "thread.run", B4_OP_THREAD_RUN },
        { "thread.workspace", B4_OP_THREAD_WORKSPACE },
        { "workspace.source.put", B4_OP_SOURCE_PUT },
        { "thread.approve", B4_OP_THREAD_APPROVE },
        { "workspace.source.read", B4_OP_SOURCE_READ },
        { "workspace.source.delete", B4_OP_SOURCE_DELETE },
};

const char *b4_access_op_name(enum b4_access_op op)
{
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (ops[i].op == op)
                        return ops[i].name;
        return NULL;
}

static unsigned op_bit(const struct jv *v)
{
        for (size_t i = 0; jv_is_string(v) && i < ELEMENTSOF(ops); i++)
                if (strcmp(jv_string(v), ops[i].name) == 0 &&
                    jv_string_length(v) == strlen(ops[i].name))
                        return ops[i].op;
        return 0;
}

static void parse_operations(struct cfg *c, const struct jv *v, const char *path, unsigned *ret)
{
        char p[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) == 0 || jv_array_size(v) > ELEMENTSOF(ops)) {
                cfg_refuse(c, "b4box.json %s must be a non-empty array of operations (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        for (size_t i = 0; i < jv_array_size(v); i++) {
                const struct jv *e = jv_array_get(v, i);
                unsigned bit = op_bit(e);

                cfg_index(p, path, i);
                if (!bit)
                        cfg_refuse(c,
                                   "b4box.json %s must be one of thread.create, thread.read, "
                                   "thread.update, thread.delete, thread.run, thread.workspace, "
                                   "workspace.source.put, thread.approve, "
                                   "workspace.source.read, workspace.source.delete (got: %s).",
                                   p, cfg_got(c, e));
                else if (*ret & bit)
                        cfg_refuse(c, "b4box.json %s repeats %s.", p, cfg_got(c, e));
                *ret |= bit;
        }
}

/* Unknown keys, with a plain `token` refused by name. */
static void principal_keys_ok(struct cfg *c, const struct jv *v, const char *path)
{
        for (void *it = jv_object_iter(v); it; it = jv_object_next(v, it)) {
                const char *key = jv_iter_key(it);
                bool known = false;

                for (size_t i = 0; principal_keys[i]; i++)
                        known = known || strcmp(key, principal_keys[i]) == 0;
                if (known)
                        continue;
                if (strcmp(key, "token") == 0)
                        cfg_refuse(c,
                                   "b4box.json %s.token is refused: never put a token in "
                                   "b4box.json; use tokenFile or tokenEnv.",
                                   path);
                else
                        cfg_refuse(c,
                                   "b4box.json %s.%s is not a principal option (known: name, "
                                   "tokenFile, tokenEnv, operations, threads).",
                                   path, cfg_key(c, key));
        }
}

static void parse_token(struct cfg *c,
                        const struct jv *v,
                        const char *path,
                        struct b4_principal *pr)
{
        const struct jv *file = jv_object_get(v, "tokenFile"), *env = jv_object_get(v, "tokenEnv");
        char p[CFG_PATH_MAX];
        cleanup_free char *s = NULL;

        if (!file == !env) {
                cfg_refuse(c, "b4box.json %s needs exactly one of tokenFile or tokenEnv.", path);
                return;
        }
        if (file && cfg_string(c, file, cfg_path(p, path, "tokenFile"), CFG_MAX_PATH, &s))
                pr->token_file = cfg_abs_path(c, s);
        if (!env)
                return;
        if (!jv_is_string(env) || !b4_env_name_is_valid(jv_string(env)) ||
            jv_string_length(env) > CFG_MAX_ENV_NAME ||
            strlen(jv_string(env)) != jv_string_length(env))
                cfg_refuse(c, "b4box.json %s.tokenEnv must be a variable name (got: %s).", path,
                           cfg_got(c, env));
        else if (!(pr->token_env = b4_strdup(jv_string(env))))
                cfg_fail(c, -ENOMEM);
}

static void parse_principal(struct cfg *c,
                            const struct jv *v,
                            const char *path,
                            struct b4_principal *pr)
{
        const struct jv *x;
        char p[CFG_PATH_MAX];

        if (!jv_is_object(v)) {
                cfg_refuse(c,
                           "b4box.json %s must be { name, tokenFile | tokenEnv, operations, "
                           "threads? } (got: %s).",
                           path, cfg_got(c, v));
                return;
        }
        principal_keys_ok(c, v, path);
        (void)cfg_string(c, jv_object_get(v, "name"), cfg_path(p, path, "name"), MAX_PRINCIPAL_NAME,
                         &pr->name);
        parse_token(c, v, path, pr);
        parse_operations(c, jv_object_get(v, "operations"), cfg_path(p, path, "operations"),
                         &pr->operations);
        if (!(x = jv_object_get(v, "threads")))
                return;
        if (jv_is_string(x) && strcmp(jv_string(x), "all") == 0 && jv_string_length(x) == 3)
                pr->threads = B4_THREADS_ALL;
        else if (!(jv_is_string(x) && strcmp(jv_string(x), "own") == 0 && jv_string_length(x) == 3))
                cfg_refuse(c, "b4box.json %s.threads must be \"own\" or \"all\" (got: %s).", path,
                           cfg_got(c, x));
}

static void check_unique_names(struct cfg *c, const struct b4_thread_access_config *a)
{
        char p[CFG_PATH_MAX];

        for (size_t i = 1; i < a->n_principals; i++) {
                if (!a->principals[i].name)
                        continue;
                for (size_t j = 0; j < i; j++)
                        if (a->principals[j].name &&
                            strcmp(a->principals[i].name, a->principals[j].name) == 0) {
                                cfg_refuse(c, "b4box.json %s.name repeats \"%s\".",
                                           cfg_index(p, "threadAccess.principals", i),
                                           cfg_key(c, a->principals[i].name));
                                break;
                        }
        }
}

static void parse_principals(struct cfg *c, const struct jv *v, struct b4_thread_access_config *a)
{
        char p[CFG_PATH_MAX];

        if (!jv_is_array(v) || jv_array_size(v) > CFG_MAX_PRINCIPALS) {
                cfg_refuse(c,
                           "b4box.json threadAccess.principals must be an array of at most %d "
                           "principals (got: %s).",
                           CFG_MAX_PRINCIPALS, cfg_got(c, v));
                return;
        }
        a->principals = b4_calloc(jv_array_size(v) + 1, sizeof(*a->principals));
        if (!a->principals) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        a->n_principals = jv_array_size(v);
        for (size_t i = 0; i < a->n_principals; i++)
                parse_principal(c, jv_array_get(v, i), cfg_index(p, "threadAccess.principals", i),
                                &a->principals[i]);
        check_unique_names(c, a);
}

void config_parse_thread_access(struct cfg *c,
                                const struct jv *v,
                                struct b4_thread_access_config *a)
{
        const struct jv *x;

        a->present = true;
        if (!jv_is_object(v)) {
                cfg_refuse(c, "b4box.json threadAccess must be an object (got: %s).",
                           cfg_got(c, v));
                return;
        }
        cfg_known_keys(c, v, "threadAccess", "a threadAccess option", access_keys);
        a->decision_timeout_ms = B4_DEFAULT_DECISION_TIMEOUT_MS;
        if ((x = jv_object_get(v, "command")))
                config_parse_argv(c, x, "threadAccess", &a->command);
        if ((x = jv_object_get(v, "decisionTimeoutMs")))
                (void)cfg_uint_range(c, x, "threadAccess.decisionTimeoutMs", 1, 60000,
                                     &a->decision_timeout_ms);
        /* principals may be left out only when a policy program decides */
        if ((x = jv_object_get(v, "principals")) || !jv_object_get(v, "command"))
                parse_principals(c, x, a);
        if (!(x = jv_object_get(v, "stagedSources")))
                return;
        if (jv_is_string(x) && strcmp(jv_string(x), "own") == 0 && jv_string_length(x) == 3)
                a->staged_sources_own = true;
        else
                cfg_refuse(c, "b4box.json threadAccess.stagedSources must be \"own\" (got: %s).",
                           cfg_got(c, x));
}

void config_thread_access_clear(struct b4_thread_access_config *a)
{
        for (size_t i = 0; a->principals && i < a->n_principals; i++) {
                free(a->principals[i].name);
                free(a->principals[i].token_file);
                free(a->principals[i].token_env);
        }
        free(a->principals);
        strv_free(a->command);
        *a = (struct b4_thread_access_config){ 0 };
}
