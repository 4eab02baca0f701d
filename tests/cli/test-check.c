/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The provider half of `b4box check`, against an in-test provider whose preflight we choose:
 * warnings, the controls table, network lists reported as not enforced, limit rows rewritten
 * for the configuration (audit L5), resolver lines, and the preflight failed/threw and reader
 * refusals. cmd-check.c is compiled in directly so its
 * static functions can be called; cli_error() is replaced to collect messages.
 */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/provider-impl.h"

#include "../../src/cli/check-catches.c"
#include "../../src/cli/cmd-check.c"
#include "../../src/cli/config-load.c"
#include "b4-test.h"

static char **messages;

void cli_error(const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        assert_true(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        assert_int_equal(strv_consume(&messages, s), 0);
}

int cli_fail(const struct b4_error *err)
{
        cli_error("%s", err->msg);
        return CLI_EXIT_FAILED;
}

const char *cli_state_dir(const struct cli_ctx *ctx)
{
        return ctx->state_dir ? ctx->state_dir : ".b4box";
}

enum mode {
        MODE_OK,
        MODE_FAIL,
        MODE_THROW,
        MODE_LIMITS,
};

static enum mode mode;

/* Rows as the native provider reports them: what it can enforce, not what is configured. */
static int limits_preflight(struct b4_preflight *ret)
{
        assert_int_equal(b4_preflight_control(ret, "memory limit", B4_ENFORCED,
                                              "cgroup v1 memory controller"),
                         0);
        assert_int_equal(
                b4_preflight_control(ret, "cpu limit", B4_ENFORCED, "cgroup v1 cpu controller"), 0);
        assert_int_equal(b4_preflight_control(ret, "pids limit", B4_NOT_ENFORCED, "no pids cgroup"),
                         0);
        assert_int_equal(b4_preflight_control(ret, "disk quota", B4_NOT_ENFORCED, "no quota"), 0);
        assert_int_equal(b4_preflight_control(ret, "command timeout", B4_ENFORCED, "supervisor"),
                         0);
        return 0;
}

static int tp_preflight(struct b4_provider *p, struct b4_preflight *ret, struct b4_error *err)
{
        if (mode == MODE_THROW)
                return b4_error_set(err, -EIO, "boom");
        if (mode == MODE_FAIL) {
                ret->ok = false;
                ret->detail = strdup("daemon down");
                return 0;
        }
        ret->detail = strdup("all good");
        if (mode == MODE_LIMITS)
                return limits_preflight(ret);
        assert_int_equal(b4_preflight_control(ret, "seccomp", B4_ENFORCED, "filter loaded"), 0);
        assert_int_equal(b4_preflight_control(ret, "memory limit", B4_NOT_ENFORCED, "no cgroup v2"),
                         0);
        assert_int_equal(b4_preflight_control(ret, "pids limit", B4_NOT_APPLICABLE, "-"), 0);
        return 0;
}

static int tp_unsupported(struct b4_provider *p, struct b4_entry *e, struct b4_error *err)
{
        return -EOPNOTSUPP;
}

static const struct b4_provider_ops tp_ops = {
        .name = "testprov",
        .release = tp_unsupported,
        .destroy = tp_unsupported,
        .preflight = tp_preflight,
};

static struct b4_provider tp = { .ops = &tp_ops };

/* Run check_provider() on @json with stdout captured into @out. Returns the exit code. */
static int run_check(const char *json, char *out, size_t out_size)
{
        struct b4_config *cfg = NULL;
        char **errors = NULL;
        char path[] = "/tmp/b4check-out.XXXXXX";
        int fd = mkstemp(path), saved, code;
        ssize_t n;

        assert_true(fd >= 0);
        assert_int_equal(b4_config_parse(json, strlen(json), "/app", &cfg, &errors, NULL), 0);
        messages = strv_free(messages);
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        assert_true(dup2(fd, STDOUT_FILENO) >= 0);
        struct b4_preflight pf = { 0 };
        struct check c = { 0 };
        code = check_provider(&c, cfg, &tp, &pf);
        b4_preflight_clear(&pf);
        strv_free(c.refusals);
        fflush(stdout);
        assert_true(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        n = pread(fd, out, out_size - 1, 0);
        assert_true(n >= 0);
        out[n] = 0;
        close(fd);
        unlink(path);
        b4_config_free(cfg);
        return code;
}

#define FAKE_SANDBOX "{\"sandbox\": {\"provider\": {\"type\": \"fake\", \"scope\": \"s\"}"

static void test_check_table_and_warnings(void **state)
{
        char out[4096];

        mode = MODE_OK;
        assert_int_equal(run_check(FAKE_SANDBOX ", \"network\": {\"mode\": \"deny\", "
                                                "\"allowlist\": [\"10.0.0.0/8\"]}}}",
                                   out, sizeof(out)),
                         CLI_EXIT_OK);
        assert_string_equal(out, "provider: testprov, scope \"s\": all good\n"
                                 "network: deny\n"
                                 "CONTROL                  STATE         DETAIL\n"
                                 "seccomp                  enforced      filter loaded\n"
                                 "memory limit             not set       no resources.memoryMb; "
                                 "not enforceable here: no cgroup v2\n"
                                 "pids limit               n/a           -\n"
                                 "network allowlist        NOT ENFORCED  1 entry configured; "
                                 "b4box does not filter by host\n"
                                 "ok: 1 enforced, 1 not enforced, 1 n/a, 1 not set\n");
        assert_string_equal(messages[0], "warning: network allowlist: 1 entry configured; b4box "
                                         "does not filter by host");
        assert_null(messages[1]);
}

/* Audit L5: "memory limit enforced" only when the configuration sets one. */
static void test_check_limits_unset(void **state)
{
        char out[4096];

        mode = MODE_LIMITS;
        assert_int_equal(run_check(FAKE_SANDBOX "}}", out, sizeof(out)), CLI_EXIT_OK);
        assert_non_null(strstr(out,
                               "\nmemory limit             not set       no "
                               "resources.memoryMb; available: cgroup v1 memory controller\n"));
        assert_non_null(strstr(out, "\ncpu limit                not set       no resources.cpus; "
                                    "available: cgroup v1 cpu controller\n"));
        /* the default pidsLimit is a value: configured, not enforced here, still a warning */
        assert_non_null(strstr(out, "\npids limit               NOT ENFORCED  512 processes "
                                    "configured, but no pids cgroup\n"));
        assert_non_null(strstr(out, "\ndisk quota               not set       no resources.diskGb; "
                                    "not enforceable here: no quota\n"));
        assert_non_null(strstr(out, "\ncommand timeout          not set       no "
                                    "resources.timeoutMs; available: supervisor\n"));
        assert_non_null(strstr(out, "\nok: 0 enforced, 1 not enforced, 0 n/a, 4 not set\n"));
        /* nothing configured, nothing to warn about: the disk row's warning is gone */
        assert_string_equal(messages[0], "warning: pids limit: no pids cgroup");
        assert_null(messages[1]);
}

static void test_check_limits_set(void **state)
{
        char out[4096];

        mode = MODE_LIMITS;
        assert_int_equal(run_check(FAKE_SANDBOX ", \"resources\": {\"memoryMb\": 512, \"cpus\": "
                                                "1.5, \"diskGb\": 10, \"timeoutMs\": 30000}}}",
                                   out, sizeof(out)),
                         CLI_EXIT_OK);
        assert_non_null(strstr(out, "\nmemory limit             enforced      512 MiB (cgroup v1 "
                                    "memory controller)\n"));
        assert_non_null(strstr(out, "\ncpu limit                enforced      1.5 CPUs (cgroup v1 "
                                    "cpu controller)\n"));
        assert_non_null(strstr(out, "\ndisk quota               NOT ENFORCED  10 GiB configured, "
                                    "but no quota\n"));
        assert_non_null(strstr(out, "\ncommand timeout          enforced      30000 ms "
                                    "(supervisor)\n"));
        assert_string_equal(messages[0], "warning: pids limit: no pids cgroup");
        assert_string_equal(messages[1], "warning: disk quota: no quota");
        assert_null(messages[2]);
}

static void test_check_resolver_lines(void **state)
{
        char out[4096];

        mode = MODE_OK;
        assert_int_equal(run_check(FAKE_SANDBOX ", \"workspace\": {\"command\": [\"w\"]}}}", out,
                                   sizeof(out)),
                         CLI_EXIT_OK);
        assert_non_null(strstr(out, "\nworkspace: managed workspace is resolved per thread\n"));
        assert_int_equal(
                run_check(FAKE_SANDBOX ", \"thread\": {\"command\": [\"t\"]}}}", out, sizeof(out)),
                CLI_EXIT_OK);
        assert_non_null(
                strstr(out, "\nthread: workspace, image and policy are resolved per thread\n"));
        assert_null(strstr(out, "workspace: managed"));
}

static void test_check_preflight_failed(void **state)
{
        char out[4096];

        mode = MODE_FAIL;
        assert_int_equal(run_check(FAKE_SANDBOX "}}", out, sizeof(out)), CLI_EXIT_FAILED);
        assert_string_equal(messages[0], "Sandbox provider \"testprov\" preflight failed: daemon "
                                         "down.");
        assert_null(messages[1]);
        assert_string_equal(out, "");
}

static void test_check_preflight_threw(void **state)
{
        char out[4096];

        mode = MODE_THROW;
        assert_int_equal(run_check(FAKE_SANDBOX "}}", out, sizeof(out)), CLI_EXIT_FAILED);
        assert_string_equal(messages[0], "Sandbox provider \"testprov\" preflight threw: boom.");
}

static void test_check_reader_needed(void **state)
{
        char out[4096];

        mode = MODE_OK;
        assert_int_equal(run_check(FAKE_SANDBOX ", \"thread\": {\"command\": [\"t\"]}, "
                                                "\"workspaceRead\": \"http\"}, "
                                                "\"threadAccess\": {\"principals\": []}}",
                                   out, sizeof(out)),
                         CLI_EXIT_FAILED);
        assert_string_equal(messages[0],
                            "sandbox.workspaceRead needs a provider whose managed workspaces can "
                            "be read (open_reader); \"testprov\" cannot");
}

static int teardown(void **state)
{
        messages = strv_free(messages);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_check_table_and_warnings),
                cmocka_unit_test(test_check_limits_unset),
                cmocka_unit_test(test_check_limits_set),
                cmocka_unit_test(test_check_resolver_lines),
                cmocka_unit_test(test_check_preflight_failed),
                cmocka_unit_test(test_check_preflight_threw),
                cmocka_unit_test(test_check_reader_needed),
        };
        return cmocka_run_group_tests(tests, NULL, teardown);
}
