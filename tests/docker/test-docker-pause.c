/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `docker pause` for the Docker provider (b4_provider_pause(), src/lib/docker/pause.c),
 * against a real dockerd (run through with-dockerd.sh): a counter loop in the container stops
 * while the thread is paused and goes on after the resume; a call on a paused thread resumes
 * it; pausing a thread with no container is -ENOENT; release of a paused thread works.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b4box/b4.h"

#include "b4-test.h"

static const char *E_HOST, *E_IMAGE, *E_SCOPE;

static void sleep_ms(long ms)
{
        (void)nanosleep(
                &(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L }, NULL);
}

static long counter(struct b4_sandbox *sb)
{
        struct b4_exec_req req = { .command = "cat /workspace/c 2>/dev/null || echo 0" };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        long v;

        if (b4_sandbox_exec(sb, &req, &res, &err) < 0)
                fail_msg("exec: %s", err.msg);
        v = strtol(res.out ? res.out : "0", NULL, 10);
        b4_exec_result_clear(&res);
        return v;
}

static void test_pause_stops_and_resumes(void **state)
{
        struct b4_provider_config cfg = { .type = (char *)"docker",
                                          .scope = (char *)E_SCOPE,
                                          .image = (char *)E_IMAGE,
                                          .docker_host = (char *)E_HOST };
        struct b4_exec_req loop = {
                .command = "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /workspace/c; "
                           "sleep 0.02; done' >/dev/null 2>&1 </dev/null & echo started"
        };
        struct b4_acquire_req req = { .thread_id = "pause" };
        struct b4_exec_result res = { 0 };
        struct b4_provider *p = NULL;
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };
        struct b4_policy pol;
        long c0, c1, c2;

        b4_policy_init(&pol);
        req.policy = &pol;
        assert_int_equal(b4_provider_new(&cfg, &p, &err), 0);
        assert_int_equal(b4_provider_pause(p, "pause", true, &err), -ENOENT);
        assert_int_equal(b4_provider_acquire(p, &req, &sb, &err), 0);
        assert_int_equal(b4_sandbox_exec(sb, &loop, &res, &err), 0);
        print_message("# loop: exit %d, %s %s\n", res.exit_code, res.out ? res.out : "",
                      res.errout ? res.errout : "");
        b4_exec_result_clear(&res);
        sleep_ms(500);
        c0 = counter(sb);
        assert_int_equal(b4_provider_pause(p, "pause", true, &err), 0);
        assert_true(b4_provider_paused(p, "pause", NULL));
        sleep_ms(1000);
        assert_int_equal(b4_provider_pause(p, "pause", false, &err), 0);
        c1 = counter(sb);
        sleep_ms(1000);
        c2 = counter(sb);
        print_message("# counter %ld, paused 1 s: %ld, running 1 s: %ld\n", c0, c1, c2);
        assert_true(c2 - c1 > (c1 - c0) + 10); /* ~50 ticks running, a few around the pause */
        assert_int_equal(b4_provider_pause(p, "pause", true, &err), 0);
        c0 = counter(sb); /* resumes first */
        assert_false(b4_provider_paused(p, "pause", NULL));
        assert_int_equal(b4_provider_pause(p, "pause", true, &err), 0);
        b4_sandbox_unref(sb);
        assert_int_equal(b4_provider_destroy(p, "pause", &err), 0);
        assert_false(b4_provider_paused(p, "pause", NULL));
        b4_provider_free(p);
        b4_policy_clear(&pol);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pause_stops_and_resumes),
        };

        E_HOST = getenv("B4BOX_TEST_DOCKER_HOST");
        E_IMAGE = getenv("B4BOX_TEST_DOCKER_IMAGE");
        E_SCOPE = getenv("B4BOX_TEST_DOCKER_SCOPE");
        if (!E_HOST || !E_IMAGE || !E_SCOPE) {
                printf("1..0 # SKIP run me through tests/docker/with-dockerd.sh\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
