/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration every command uses: -c FILE, else ./b4box.json when present, else the
 * defaults; the provider's state dir is --state (else ./.b4box) made absolute.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/runtime.h"
#include "b4box/store.h"
#include "b4box/tools.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"

/* Print @msg as "b4box: <msg>", or append it to *@collect when collecting. */
static void say(char ***collect, const char *msg)
{
        if (!collect)
                cli_error("%s", msg);
        else if (strv_extend(collect, msg) < 0)
                cli_error("out of memory");
}

/*
 * The loader's refusals start "b4box.json <key>": that names the format (the reference's
 * texts, kept as they are), not the file. The last line names the file that was read.
 */
static int refused(const char *path, char **errors, char ***collect)
{
        cleanup_free char *last = NULL;

        STRV_FOREACH (e, errors)
                say(collect, *e);
        b4_config_errors_free(errors);
        if (b4_asprintf(&last, "the configuration file '%s' is refused", path) >= 0)
                say(collect, last);
        return CLI_EXIT_FAILED;
}

static int load_config(const struct cli_ctx *ctx,
                       struct b4_config **ret,
                       const char **ret_path,
                       char ***collect)
{
        struct b4_error err = { 0 };
        char **errors = NULL;
        const char *path = ctx->config_path;
        int r;

        if (!path && access("b4box.json", F_OK) == 0)
                path = "b4box.json";
        *ret_path = path;
        if (!path)
                r = b4_config_default(ret, &err);
        else
                r = b4_config_load(path, ret, &errors, &err);
        if (r == -EINVAL && errors)
                return refused(path, errors, collect);
        if (r < 0 && collect) {
                say(collect, err.msg[0] ? err.msg : strerror(-r));
                return CLI_EXIT_FAILED;
        }
        if (r < 0)
                return cli_fail(&err);
        return -1;
}

static int set_state_dir(struct b4_provider_config *pc, const struct cli_ctx *ctx)
{
        const char *dir = cli_state_dir(ctx);
        cleanup_free char *cwd = NULL;

        free(pc->state_dir);
        pc->state_dir = NULL;
        if (dir[0] == '/') {
                pc->state_dir = b4_strdup(dir);
                return pc->state_dir ? 0 : -ENOMEM;
        }
        cwd = getcwd(NULL, 0);
        if (!cwd)
                return -errno;
        return b4_asprintf(&pc->state_dir, "%s/%s", cwd, dir) < 0 ? -ENOMEM : 0;
}

int cli_load_config(const struct cli_ctx *ctx, struct b4_config **ret, const char **ret_path)
{
        return cli_load_config_collect(ctx, ret, ret_path, NULL);
}

int cli_load_config_collect(const struct cli_ctx *ctx,
                            struct b4_config **ret,
                            const char **ret_path,
                            char ***collect)
{
        struct b4_config *cfg = NULL;
        const char *path = NULL;
        int r;

        r = load_config(ctx, &cfg, &path, collect);
        if (ret_path)
                *ret_path = path;
        if (r >= 0)
                return r;
        r = set_state_dir(&cfg->sandbox.provider, ctx);
        if (r < 0) {
                cleanup_free char *msg = NULL;
                if (b4_asprintf(&msg, "cannot resolve the state directory: %s", strerror(-r)) >= 0)
                        say(collect, msg);
                b4_config_free(cfg);
                return CLI_EXIT_FAILED;
        }
        *ret = cfg;
        return 0;
}

int cli_local_open(const struct cli_ctx *ctx, struct cli_local *ret)
{
        return cli_local_open_with(ctx, &(struct cli_local_options){ 0 }, ret);
}

static int open_runtime(struct cli_local *l,
                        const struct cli_local_options *o,
                        struct b4_error *err)
{
        struct b4_runtime_options ro = { .provider = l->provider,
                                         .store = l->store,
                                         .policy = b4_config_policy(l->cfg),
                                         .config = l->cfg,
                                         .permissions = o->permissions,
                                         .read_cap = o->read_cap,
                                         .local = true };

        return b4_runtime_new(&ro, &l->rt, err);
}

static int replace_provider_type(struct b4_config *cfg, const char *type)
{
        char *t = strdup(type);

        if (!t)
                return -ENOMEM;
        free(cfg->sandbox.provider.type);
        cfg->sandbox.provider.type = t;
        return 0;
}

int cli_local_open_with(const struct cli_ctx *ctx,
                        const struct cli_local_options *o,
                        struct cli_local *ret)
{
        struct b4_error err = { 0 };
        struct cli_local l = { 0 };
        int r;

        r = cli_load_config(ctx, &l.cfg, NULL);
        if (r != 0)
                return r;
        r = o->provider_type ? replace_provider_type(l.cfg, o->provider_type) : 0;
        if (r < 0)
                r = b4_error_set(&err, r, "out of memory");
        if (r >= 0)
                r = b4_store_open(l.cfg->sandbox.provider.state_dir, B4_STORE_SHARED, &l.store,
                                  &err);
        if (r >= 0)
                r = b4_provider_new(&l.cfg->sandbox.provider, &l.provider, &err);
        if (r >= 0)
                r = open_runtime(&l, o, &err);
        if (r < 0) {
                cli_local_close(&l);
                if (err.error == -EBUSY)
                        cli_error(
                                "%s: a running b4box server owns it; use --server, or stop the server",
                                err.msg);
                else
                        (void)cli_fail(&err);
                return CLI_EXIT_FAILED;
        }
        *ret = l;
        return 0;
}

int cli_local_thread_register(struct cli_local *l, const char *thread_id, struct b4_error *err)
{
        struct b4_thread_row row = { 0 };
        int r;

        r = b4_store_thread_get(l->store, thread_id, &row, NULL);
        if (r >= 0) {
                bool deleting = row.deleting;
                b4_thread_row_clear(&row);
                return deleting ? b4_error_set(err, -ENOENT,
                                               "thread '%s' is being deleted; run `b4box destroy "
                                               "%s` to finish",
                                               thread_id, thread_id)
                                : 0;
        }
        row = (struct b4_thread_row){ .id = (char *)thread_id,
                                      .metadata_json = (char *)"{}",
                                      .created_ms = (int64_t)time(NULL) * 1000 };
        r = b4_store_thread_insert(l->store, &row, err);
        return r == -EEXIST ? 0 : r; /* another local command won */
}

void cli_local_close(struct cli_local *l)
{
        l->rt = b4_runtime_free(l->rt);
        l->provider = b4_provider_free(l->provider);
        l->store = b4_store_close(l->store);
        l->cfg = b4_config_free(l->cfg);
}
