/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docker/net.c without a daemon: which path a policy takes, that a daemon which cannot be
 * asked never downgrades a thread to the bridge silently, and the check rows of the bridge
 * path. (tests/docker/net-docker.sh runs the paths against a real dockerd.)
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "b4-test.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "docker/docker.h"
#include "docker/net.h"
#include "hostnet/hostnet.h"

#define NO_DAEMON "unix:///nonexistent/b4box-test/docker.sock"

struct fixture {
        struct docker_client *d;
        struct docker_net *n;
        struct b4_policy p;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(docker_client_new(NO_DAEMON, &f->d, NULL), 0);
        assert_int_equal(docker_net_new(f->d, &f->n), 0);
        b4_policy_init(&f->p);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        docker_net_free(f->n);
        docker_client_free(f->d);
        b4_policy_clear(&f->p);
        free(f);
        (void)unsetenv("B4BOX_DOCKER_HOSTNET");
        return 0;
}

/* Whether hostnet could be used by this process at all (then only /info decides). */
static bool hostnet_possible(void)
{
        const char *why = NULL;

        return hostnet_available(&why) == 0;
}

static void test_deny_is_none(void **state)
{
        struct fixture *f = *state;
        struct docker_net_spec spec;

        f->p.network = B4_NETWORK_DENY;
        assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_NONE);
        assert_int_equal(docker_net_prepare(f->n, "abc", "t", "s", &f->p, &spec, NULL), 0);
        assert_string_equal(spec.mode, "none");
        assert_null(spec.resolv_bind);
        docker_net_spec_clear(&spec);
}

/* allow with a daemon that does not answer: refused with B4_E2001, never a bridge made
 * because /info could not be asked; not cached either */
static void test_unknown_refuses(void **state)
{
        struct fixture *f = *state;
        struct docker_net_spec spec;
        struct b4_error err = { 0 };

        f->p.network = B4_NETWORK_ALLOW;
        assert_true(docker_net_prepare(f->n, "abc", "t1", "s", &f->p, &spec, &err) < 0);
        assert_int_equal(err.code, B4_CODE_SANDBOX_UNAVAILABLE);
        if (hostnet_possible()) {
                assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_UNKNOWN);
                assert_non_null(strstr(err.msg, "cannot tell whether the Docker daemon runs on "
                                                "this host for the network of thread \"t1\""));
                assert_non_null(strstr(err.msg, "/info failed"));
                assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_UNKNOWN);
        } else {
                assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_BRIDGE);
                assert_non_null(strstr(err.msg, "the Docker network for thread \"t1\" failed"));
        }
        docker_net_spec_clear(&spec);
}

static const struct b4_control *row(const struct b4_preflight *p, const char *name)
{
        for (size_t i = 0; i < p->n_controls; i++)
                if (strcmp(p->controls[i].name, name) == 0)
                        return &p->controls[i];
        return NULL;
}

/* B4BOX_DOCKER_HOSTNET=0: the bridge, an allowlist gets no network at all, and every
 * network row says NOT ENFORCED with that reason */
static void test_forced_bridge(void **state)
{
        struct fixture *f = *state;
        struct b4_preflight pf = { 0 };
        struct docker_net_spec spec;
        const char *names[] = { "network allow", "network allowlist", "network denylist",
                                "network dns" };

        assert_int_equal(setenv("B4BOX_DOCKER_HOSTNET", "0", 1), 0);
        f->p.network = B4_NETWORK_ALLOW;
        assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_BRIDGE);
        f->p.network = B4_NETWORK_DENY;
        f->p.network_list = calloc(1, sizeof(*f->p.network_list));
        assert_non_null(f->p.network_list);
        f->p.n_network_list = 1;
        f->p.network_list[0] = (struct b4_net_entry){
                .kind = B4_NET_CIDR, .family = AF_INET, .addr = { 192, 0, 2, 0 }, .prefix = 24
        };
        assert_int_equal(docker_net_path(f->n, &f->p), DOCKER_NET_BRIDGE);
        assert_int_equal(docker_net_prepare(f->n, "abc", "t", "s", &f->p, &spec, NULL), 0);
        assert_string_equal(spec.mode, "none");
        assert_null(spec.resolv_bind);
        docker_net_spec_clear(&spec);
        assert_int_equal(docker_net_preflight(f->n, &pf), 0);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const struct b4_control *c = row(&pf, names[i]);

                assert_non_null(c);
                assert_int_equal(c->state, B4_NOT_ENFORCED);
                assert_non_null(strstr(c->detail, "B4BOX_DOCKER_HOSTNET=0"));
        }
        assert_null(row(&pf, "network forward"));
        b4_preflight_clear(&pf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_deny_is_none, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unknown_refuses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_forced_bridge, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
