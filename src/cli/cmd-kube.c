/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box kube reap [--namespace NS] [--ttl-hours N] [--dry-run]: one run of the PVC reaper
 * (b4_kube_reap(), docs/kubernetes.md "The PVC reaper"), what the b4-sandbox-infra chart's
 * CronJob runs. Credentials: the configured kubernetes provider's keys, else the in-cluster
 * service account. In b4box-full only (the light b4box hands it over).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

#include "base/parse.h"
#include "cli.h"

static void print_line(const char *line, void *userdata)
{
        (void)userdata;
        printf("%s\n", line);
}

/* Return: 0, or CLI_USAGE after printing why. */
static int parse_reap(int argc, char **argv, struct b4_kube_reap_opts *o)
{
        for (int i = 2; i < argc; i++) {
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                uint64_t n = 0;

                if (strcmp(argv[i], "--dry-run") == 0) {
                        o->dry_run = true;
                } else if (strcmp(argv[i], "--namespace") == 0 && v && *v) {
                        o->namespace = v;
                        i++;
                } else if (strcmp(argv[i], "--ttl-hours") == 0 && v) {
                        if (safe_atou64(v, &n) < 0 || n < 1 || n > B4_KUBE_REAP_MAX_TTL_HOURS) {
                                cli_error("kube reap: --ttl-hours must be an integer from 1 to %u",
                                          B4_KUBE_REAP_MAX_TTL_HOURS);
                                return CLI_USAGE;
                        }
                        o->ttl_hours = (unsigned)n;
                        i++;
                } else {
                        cli_error("kube reap: unexpected argument '%s'", argv[i]);
                        return CLI_USAGE;
                }
        }
        return 0;
}

int cmd_kube(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct b4_kube_reap_opts o = { 0 };
        struct b4_error err = { 0 };
        struct b4_config *cfg = NULL;
        int r;

        if (argc < 2 || strcmp(argv[1], "reap") != 0) {
                cli_error("kube: needs a subcommand: reap");
                return CLI_USAGE;
        }
        r = parse_reap(argc, argv, &o);
        if (r != 0)
                return r;
        r = cli_load_config(ctx, &cfg, NULL);
        if (r != 0)
                return r;
        o.provider = &cfg->sandbox.provider;
        r = b4_kube_reap(&o, print_line, NULL, &err);
        b4_config_free(cfg);
        return r < 0 ? cli_fail(&err) : CLI_EXIT_OK;
}
