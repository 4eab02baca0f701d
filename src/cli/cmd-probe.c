/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box probe [--json]: escape and abuse probes against the configured provider, run from
 * inside a throwaway thread ("probe-<pid>-<random>", destroyed at the end, also on failure
 * and SIGINT/SIGTERM). One row per probe, "<PASS|FAIL|SKIP> <name> <detail>", then
 * "N passed, N failed"; --json prints one document instead. A SKIP (the probe does not apply
 * to this configuration or host) is never counted as passed. Exit 0 when nothing failed,
 * 1 otherwise, 2 on a usage error. Local only: it refuses while a server owns the state dir.
 * docs/probe.md describes every probe.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "json/json.h"
#include "probe.h"

#ifndef B4_PROBE_HELPER_BUILD_PATH
# define B4_PROBE_HELPER_BUILD_PATH ""
#endif
#ifndef B4_PROBE_HELPER_INSTALL_PATH
# define B4_PROBE_HELPER_INSTALL_PATH ""
#endif

static struct b4_cancel *arg_cancel;
static bool arg_json;

static const char *const result_names[] = { "PASS", "FAIL", "SKIP" };

static void on_signal(int sig)
{
        b4_cancel_fire(arg_cancel);
}

static int parse_probe(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        arg_json = true;
                else {
                        cli_error("probe: unexpected argument '%s'", argv[i]);
                        return -1;
                }
        }
        return 0;
}

/* $B4BOX_PROBE_HELPER, the install path, then the build path. */
static const char *helper_path(void)
{
        const char *paths[] = { secure_getenv("B4BOX_PROBE_HELPER"), B4_PROBE_HELPER_INSTALL_PATH,
                                B4_PROBE_HELPER_BUILD_PATH };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (paths[i] && *paths[i] && access(paths[i], R_OK) == 0)
                        return paths[i];
        return NULL;
}

static void thread_id(char *buf, size_t n)
{
        uint32_t rnd = 0;

        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = (uint32_t)time(NULL) ^ (uint32_t)getpid();
        (void)snprintf(buf, n, "probe-%ld-%08x", (long)getpid(), rnd);
        srand(rnd);
}

static void run_groups(struct probe *p)
{
        void (*const groups[])(struct probe *) = {
                probe_fs_parity,    probe_syscalls,  probe_network,
                probe_cross_thread, probe_jail_race, probe_bombs,
        };

        probe_helper_install(p, &p->a);
        if (!p->a.helper_ready)
                probe_report(p, "helper", PROBE_FAIL, "%s", p->a.helper_error);
        else
                probe_report(p, "helper", PROBE_PASS,
                             "./" PROBE_HELPER_NAME " runs in the sandbox");
        for (size_t i = 0; i < ELEMENTSOF(groups) && !probe_interrupted(p); i++)
                groups[i](p);
        if (probe_interrupted(p))
                probe_report(p, "interrupted", PROBE_FAIL, "stopped before every probe ran");
}

static void count(const struct probe *p, unsigned ret[3])
{
        ret[0] = ret[1] = ret[2] = 0;
        for (size_t i = 0; i < p->n_rows; i++)
                ret[p->rows[i].result]++;
}

static void print_text(const struct probe *p)
{
        unsigned n[3];

        count(p, n);
        printf("# b4box probe: provider %s, network %s, thread %s\n", p->provider,
               p->policy->network == B4_NETWORK_DENY ? "deny" : "allow", p->thread);
        for (size_t i = 0; i < p->n_rows; i++)
                printf("%-4s %-22s %s\n", result_names[p->rows[i].result], p->rows[i].name,
                       p->rows[i].detail ? p->rows[i].detail : "");
        printf("# %u skipped (not applicable here; a skip is not a pass)\n", n[PROBE_SKIP]);
        printf("%u passed, %u failed\n", n[PROBE_PASS], n[PROBE_FAIL]);
}

static struct jv *row_json(const struct probe_row *row)
{
        struct jv *o = jv_object_new();

        if (o &&
            (jv_object_set_new(o, "name", jv_string_new(row->name)) < 0 ||
             jv_object_set_new(o, "result", jv_string_new(result_names[row->result])) < 0 ||
             jv_object_set_new(o, "detail", jv_string_new(row->detail ? row->detail : "")) < 0))
                o = jv_unref(o);
        return o;
}

static int print_json(const struct probe *p)
{
        cleanup_(jv_unrefp) struct jv *doc = jv_object_new(), *rows = jv_array_new();
        cleanup_free char *text = NULL;
        unsigned n[3];
        int r = doc && rows ? 0 : -ENOMEM;

        count(p, n);
        for (size_t i = 0; r >= 0 && i < p->n_rows; i++)
                r = jv_array_append_new(rows, row_json(&p->rows[i]));
        if (r >= 0)
                r = jv_object_set_new(doc, "provider", jv_string_new(p->provider));
        if (r >= 0)
                r = jv_object_set_new(
                        doc, "network",
                        jv_string_new(p->policy->network == B4_NETWORK_DENY ? "deny" : "allow"));
        if (r >= 0)
                r = jv_object_set_new(doc, "thread", jv_string_new(p->thread));
        if (r >= 0)
                r = jv_object_set_new(doc, "probes", jv_ref(rows));
        if (r >= 0)
                r = jv_object_set_new(doc, "passed", jv_integer_new(n[PROBE_PASS]));
        if (r >= 0)
                r = jv_object_set_new(doc, "failed", jv_integer_new(n[PROBE_FAIL]));
        if (r >= 0)
                r = jv_object_set_new(doc, "skipped", jv_integer_new(n[PROBE_SKIP]));
        if (r >= 0)
                r = jv_dump(doc, 0, &text);
        if (r < 0)
                return r;
        puts(text);
        return 0;
}

static void rows_free(struct probe *p)
{
        for (size_t i = 0; i < p->n_rows; i++) {
                free(p->rows[i].name);
                free(p->rows[i].detail);
        }
        free(p->rows);
        p->rows = NULL;
        p->n_rows = 0;
}

/* Open thread A, run every group, destroy both threads. Return: an exit code. */
static int probe_main(struct probe *p)
{
        struct b4_error err = { 0 };
        unsigned n[3];
        int r;

        thread_id(p->thread, sizeof(p->thread));
        r = probe_sandbox_open(p, &p->a, p->thread, &err);
        if (r >= 0)
                run_groups(p);
        probe_sandbox_close(p, &p->b);
        probe_sandbox_close(p, &p->a);
        if (r < 0)
                return cli_fail(&err);
        if (arg_json ? print_json(p) < 0 : (print_text(p), false))
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        count(p, n);
        return n[PROBE_FAIL] ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

int cmd_probe(int argc, char **argv, const struct cli_ctx *ctx)
{
        struct probe p = { 0 };
        struct sigaction sa = { .sa_handler = on_signal };
        int r;

        if (parse_probe(argc, argv) < 0)
                return CLI_USAGE;
        p.helper_path = helper_path();
        if (!p.helper_path) {
                cli_error("probe: b4box-probe-helper not found (set B4BOX_PROBE_HELPER)");
                return CLI_EXIT_FAILED;
        }
        r = cli_local_open(ctx, &p.local);
        if (r != 0)
                return r;
        p.policy = b4_config_policy(p.local.cfg);
        p.provider = b4_provider_name(p.local.provider);
        arg_cancel = p.cancel = b4_cancel_new();
        if (!p.cancel) {
                cli_local_close(&p.local);
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        }
        (void)sigaction(SIGINT, &sa, NULL);
        (void)sigaction(SIGTERM, &sa, NULL);
        r = probe_main(&p);
        sa.sa_handler = SIG_DFL;
        (void)sigaction(SIGINT, &sa, NULL);
        (void)sigaction(SIGTERM, &sa, NULL);
        rows_free(&p);
        arg_cancel = p.cancel = b4_cancel_free(p.cancel);
        cli_local_close(&p.local);
        return r;
}
