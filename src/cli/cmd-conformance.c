/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box conformance [--provider TYPE]: run the provider conformance suite against the
 * configured provider. One line per case ("<n>. <name>: ok" / ": FAIL: <msg>" /
 * ": skip: <reason>"), then "N passed, N failed". Exit 0 when nothing failed, 1 when a case
 * failed or the provider could not be made, 2 on a usage error.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/alloc.h"
#include "cli.h"

struct conformance_args {
        const char *provider; /* --provider; NULL = the default type */
};

/* Return: 0, or -1 after printing a usage error. */
static int parse_args(int argc, char **argv, struct conformance_args *a)
{
        for (int i = 1; i < argc; i++) {
                const char *arg = argv[i];

                if (strncmp(arg, "--provider=", 11) == 0)
                        a->provider = arg + 11;
                else if (strcmp(arg, "--provider") == 0) {
                        if (i + 1 >= argc) {
                                cli_error("option '--provider' needs a value");
                                return -1;
                        }
                        a->provider = argv[++i];
                } else {
                        cli_error("conformance: unexpected argument '%s'", arg);
                        return -1;
                }
        }
        if (a->provider && !*a->provider) {
                cli_error("option '--provider' needs a non-empty value");
                return -1;
        }
        return 0;
}

/* The absolute state directory the provider may use. */
/* The configured provider (-c FILE, ./b4box.json or the defaults), its type replaced by
 * --provider when given. Return: 0, or an exit code after printing why. */
static int load_config(const struct cli_ctx *ctx,
                       const struct conformance_args *a,
                       struct b4_config **ret)
{
        struct b4_config *cfg = NULL;
        int r = cli_load_config(ctx, &cfg, NULL);

        if (r != 0)
                return r;
        if (a->provider) {
                char *t = b4_strdup(a->provider);
                if (!t) {
                        b4_config_free(cfg);
                        cli_error("out of memory");
                        return CLI_EXIT_FAILED;
                }
                free(cfg->sandbox.provider.type);
                cfg->sandbox.provider.type = t;
        }
        *ret = cfg;
        return 0;
}

static int make_provider(void *userdata, struct b4_provider **ret, struct b4_error *err)
{
        return b4_provider_new(userdata, ret, err);
}

static void print_case(const struct b4_conformance_report *rep, void *userdata)
{
        printf("%zu. %s: ", rep->index + 1, rep->name);
        switch (rep->result) {
        case B4_CONFORMANCE_PASS:
                printf("ok\n");
                break;
        case B4_CONFORMANCE_FAIL:
                printf("FAIL: %s\n", rep->message);
                break;
        case B4_CONFORMANCE_SKIP:
                printf("skip: %s\n", rep->message);
                break;
        }
        (void)fflush(stdout);
}

/* The provider must be constructible and pass its preflight before the cases run. */
static int check_provider(struct b4_provider_config *cfg, struct b4_error *err)
{
        struct b4_provider *p = NULL;
        struct b4_preflight pf = { 0 };
        int r;

        r = b4_provider_new(cfg, &p, err);
        if (r < 0)
                return r;
        r = b4_provider_preflight(p, &pf, err);
        if (r >= 0 && !pf.ok)
                r = b4_error_set(err, -EIO, "provider \"%s\" failed its preflight: %s",
                                 b4_provider_name(p), pf.detail ? pf.detail : "not ready");
        b4_preflight_clear(&pf);
        b4_provider_free(p);
        return r;
}

int cmd_conformance(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct conformance_args a = { 0 };
        struct b4_config *cfg = NULL;
        struct b4_conformance_summary sum = { 0 };
        struct b4_error err = { 0 };
        int r;

        if (parse_args(argc, argv, &a) < 0)
                return CLI_USAGE;
        r = load_config(ctx, &a, &cfg);
        if (r != 0)
                return r;
        r = check_provider(&cfg->sandbox.provider, &err);
        if (r < 0) {
                b4_config_free(cfg);
                return cli_fail(&err);
        }
        struct b4_conformance_opts o = { .make_provider = make_provider,
                                         .report = print_case,
                                         .userdata = &cfg->sandbox.provider };
        r = b4_conformance_run(&o, &sum, &err);
        b4_config_free(cfg);
        if (r < 0 && r != -EPROTO)
                return cli_fail(&err);
        printf("%u passed, %u failed\n", sum.passed, sum.failed);
        return sum.failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
