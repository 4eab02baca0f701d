/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox policy: secure defaults, copy, env helpers. */

#include "b4box/policy.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"

void b4_policy_init(struct b4_policy *p)
{
        *p = (struct b4_policy){
                .network = B4_NETWORK_ALLOW,
                .security = {
                        .drop_all_capabilities = true,
                        .no_new_privileges = true,
                        .read_only_root = true,
                        .run_as_non_root = true,
                        .uid = B4_DEFAULT_UID,
                        .gid = B4_DEFAULT_GID,
                        .pids_limit = B4_DEFAULT_PIDS_LIMIT,
                },
                .output_cap = B4_DEFAULT_OUTPUT_CAP,
                .dns = {
                        .pin_floor_s = B4_DEFAULT_PIN_FLOOR_S,
                        .pin_cap_s = B4_DEFAULT_PIN_CAP_S,
                },
        };
}

static void env_free(struct b4_env_var *env, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(env[i].name);
                free(env[i].value);
        }
        free(env);
}

void b4_policy_clear(struct b4_policy *p)
{
        b4_net_entries_free(p->network_list, p->n_network_list);
        env_free(p->env, p->n_env);
        b4_policy_init(p);
}

static int copy_entries(struct b4_policy *dst, const struct b4_policy *src)
{
        dst->network_list = b4_calloc(src->n_network_list + 1, sizeof(*dst->network_list));
        if (!dst->network_list)
                return -ENOMEM;
        for (size_t i = 0; i < src->n_network_list; i++) {
                struct b4_net_entry *d = &dst->network_list[i];

                *d = src->network_list[i];
                d->text = b4_strdup(d->text);
                d->name = d->name ? b4_strdup(d->name) : NULL;
                dst->n_network_list++;
                if (!d->text || (src->network_list[i].name && !d->name))
                        return -ENOMEM;
        }
        return 0;
}

int b4_policy_copy(struct b4_policy *dst, const struct b4_policy *src)
{
        struct b4_policy tmp = *src;

        tmp.network_list = NULL;
        tmp.n_network_list = 0;
        tmp.env = NULL;
        tmp.n_env = 0;
        if (src->network_list && copy_entries(&tmp, src) < 0)
                goto out_nomem;
        for (size_t i = 0; i < src->n_env; i++)
                if (b4_policy_set_env(&tmp, src->env[i].name, src->env[i].value) < 0)
                        goto out_nomem;
        *dst = tmp;
        return 0;

out_nomem:
        b4_policy_clear(&tmp);
        b4_policy_init(dst);
        return -ENOMEM;
}

bool b4_env_name_is_valid(const char *name)
{
        if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
                return false;
        for (const char *c = name + 1; *c; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_'))
                        return false;
        return true;
}

int b4_policy_set_env(struct b4_policy *p, const char *name, const char *value)
{
        cleanup_free char *v = NULL;
        struct b4_env_var *n;

        if (!b4_env_name_is_valid(name) || !value)
                return -EINVAL;
        v = b4_strdup(value);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_env; i++)
                if (strcmp(p->env[i].name, name) == 0) {
                        free(p->env[i].value);
                        p->env[i].value = TAKE_PTR(v);
                        return 0;
                }
        n = b4_reallocarray(p->env, p->n_env + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->env = n;
        n[p->n_env].name = b4_strdup(name);
        if (!n[p->n_env].name)
                return -ENOMEM;
        n[p->n_env].value = TAKE_PTR(v);
        p->n_env++;
        return 0;
}
