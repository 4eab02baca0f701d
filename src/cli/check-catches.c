/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catches of `b4box check` that look past the loader: files and programs the config
 * names, and images its provider must be able to run. Each one says what a start-up or a
 * first run would otherwise refuse later.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "check.h"
#include "cli.h"

#define TOKEN_MIN 16 /* as src/server/access.c */

void check_refuse(struct check *c, const char *fmt, ...)
{
        char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = b4_vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                c->out_of_memory = true;
                return;
        }
        if (!c->json)
                cli_error("%s", msg);
        if (strv_consume(&c->refusals, msg) < 0) /* takes msg */
                c->out_of_memory = true;
}

/* The token's length as serve counts it: trailing newlines, CRs and spaces do not count. */
static size_t token_length(const char *t, size_t len)
{
        while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
                len--;
        return len;
}

static void check_token(struct check *c, const struct b4_principal *p)
{
        cleanup_free char *t = NULL;
        size_t len = 0;
        int r;

        if (!p->token_file) {
                const char *v = secure_getenv(p->token_env);
                if (!v)
                        check_refuse(c,
                                     "environment variable '%s' (token of principal '%s') is not "
                                     "set",
                                     p->token_env, p->name);
                else if (token_length(v, strlen(v)) < TOKEN_MIN)
                        check_refuse(c, "the token of principal '%s' is shorter than %d characters",
                                     p->name, TOKEN_MIN);
                return;
        }
        r = read_file_at(AT_FDCWD, p->token_file, 4096, &t, &len);
        if (r < 0)
                check_refuse(c, "cannot read the token of principal '%s' from '%s': %s", p->name,
                             p->token_file, strerror(-r));
        else if (token_length(t, len) < TOKEN_MIN)
                check_refuse(c, "the token of principal '%s' in '%s' is shorter than %d characters",
                             p->name, p->token_file, TOKEN_MIN);
        if (t)
                explicit_bzero(t, len);
}

void check_tokens(struct check *c, const struct b4_config *cfg)
{
        const struct b4_thread_access_config *ta = &cfg->thread_access;

        for (size_t i = 0; ta->present && i < ta->n_principals; i++)
                check_token(c, &ta->principals[i]);
}

/* @prog without a '/' is looked up in $PATH, as execvp() does. Return: 0 or -errno. */
static int find_in_path(const char *prog)
{
        const char *path = secure_getenv("PATH");
        int r = -ENOENT;

        for (const char *s = path ? path : "/usr/bin:/bin"; s;
             s = strchr(s, ':') ? strchr(s, ':') + 1 : NULL) {
                size_t n = strcspn(s, ":");
                cleanup_free char *full = NULL;
                if (b4_asprintf(&full, "%.*s/%s", (int)n, n ? s : ".", prog) < 0)
                        return -ENOMEM;
                if (access(full, X_OK) == 0)
                        return 0;
                if (errno == EACCES)
                        r = -EACCES;
        }
        return r;
}

static int executable(const char *prog)
{
        struct stat st;

        if (!strchr(prog, '/'))
                return find_in_path(prog);
        if (stat(prog, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EACCES;
        return access(prog, X_OK) < 0 ? -errno : 0;
}

/* @what: "resolver" or "policy". */
static void check_program(struct check *c, const char *key, char *const *argv, const char *what)
{
        const char *prog = argv && argv[0] ? argv[0] : NULL;
        int r;

        if (!prog)
                return;
        r = executable(prog);
        if (r == -ENOENT)
                check_refuse(c, "%s.command: the %s program '%s' does not exist", key, what, prog);
        else if (r < 0)
                check_refuse(c, "%s.command: the %s program '%s' is not executable: %s", key, what,
                             prog, strerror(-r));
}

void check_resolvers(struct check *c, const struct b4_config *cfg)
{
        const struct b4_sandbox_config *s = &cfg->sandbox;

        if (s->thread_kind == B4_THREAD_RESOLVER)
                check_program(c, "sandbox.thread", s->thread_resolver.argv, "resolver");
        if (s->workspace_kind == B4_WORKSPACE_RESOLVER)
                check_program(c, "sandbox.workspace", s->workspace_resolver.argv, "resolver");
        check_program(c, "threadAccess", cfg->thread_access.command, "policy");
}

/* The images a thread target names (environment.image), in order. */
static int target_images(const struct b4_config *cfg, char ***ret)
{
        const struct b4_thread_targets *t = &cfg->sandbox.thread_targets;

        if (cfg->sandbox.thread_kind != B4_THREAD_TARGETS)
                return 0;
        for (size_t i = 0; i < t->n_values; i++)
                if (t->values[i].sandbox.image && strv_extend(ret, t->values[i].sandbox.image) < 0)
                        return -ENOMEM;
        if (t->fallback && t->fallback->image && strv_extend(ret, t->fallback->image) < 0)
                return -ENOMEM;
        return 0;
}

/* No resolve_image: nothing but the provider's own image can run. */
static void refuse_per_thread_images(struct check *c,
                                     const struct b4_config *cfg,
                                     struct b4_provider *p,
                                     char **targets)
{
        const char *name = b4_provider_name(p);

        if (cfg->sandbox.provider.images)
                check_refuse(c,
                             "sandbox.provider.images: provider \"%s\" cannot run a per-thread "
                             "image; remove it or use one that can (docker)",
                             name);
        STRV_FOREACH (img, targets)
                check_refuse(c,
                             "sandbox.thread: a target names the image '%s', and provider \"%s\" "
                             "cannot run a per-thread image",
                             *img, name);
}

static bool is_pattern(const char *s)
{
        return strpbrk(s, "*?[") != NULL;
}

static bool seen_before(char *const *images, char *const *img)
{
        for (char *const *i = images; i < img; i++)
                if (strcmp(*i, *img) == 0)
                        return true;
        return false;
}

/* A provider without resolve_image answers -EOPNOTSUPP; one with it refuses a NULL reference
 * before any side effect (provider.h). */
static bool can_resolve_images(struct b4_provider *p)
{
        struct b4_error err = { 0 };
        char *id = NULL;

        return b4_provider_resolve_image(p, NULL, &id, &err) != -EOPNOTSUPP;
}

static int extend_all(char ***l, char **more)
{
        STRV_FOREACH (s, more)
                if (strv_extend(l, *s) < 0)
                        return -ENOMEM;
        return 0;
}

/* Each exact image the config names must be known to the daemon (docker) or be in the store
 * (native). */
static void resolve_each(struct check *c, struct b4_provider *p, char **images)
{
        STRV_FOREACH (img, images) {
                struct b4_error err = { 0 };
                char *id = NULL;
                if (is_pattern(*img) || seen_before(images, img))
                        continue;
                if (b4_provider_resolve_image(p, *img, &id, &err) < 0)
                        check_refuse(c, "image '%s': %s", *img, err.msg);
                free(id);
        }
}

void check_images(struct check *c, const struct b4_config *cfg, struct b4_provider *p)
{
        const struct b4_provider_config *pc = &cfg->sandbox.provider;
        cleanup_strv char **images = NULL;
        cleanup_strv char **targets = NULL;

        if (target_images(cfg, &targets) < 0) {
                c->out_of_memory = true;
                return;
        }
        if (!can_resolve_images(p)) {
                refuse_per_thread_images(c, cfg, p, targets);
                return;
        }
        if (strcmp(pc->type, "docker") != 0 && strcmp(pc->type, "native") != 0)
                return;
        if ((pc->image && strv_extend(&images, pc->image) < 0) ||
            extend_all(&images, pc->images) < 0 || extend_all(&images, targets) < 0) {
                c->out_of_memory = true;
                return;
        }
        resolve_each(c, p, images);
}
