/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net-narrow.c: entry coverage and disjointness (/0, /32, IPv6, unaligned prefixes, ports,
 * wildcard depth, apex against wildcard, the special ranges and the metadata address), their
 * laws over every pair of a set of entries, whole-list narrowing with its reasons, and a
 * recorded thread network applied over the app's policy (the list the keeper identity hashes),
 * and the special ranges equal to native's table.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/error.h"

#include "b4-test.h"
#include "core/config-answer.h"
#include "core/launch.h"
#include "core/net-entry.h"
#include "core/net-narrow.h"
#include "json/json.h"

static const char *const samples[] = {
        "0.0.0.0/0",
        "0.0.0.0/0:443",
        "10.0.0.0/8",
        "10.0.0.0/7",
        "10.1.0.0/16",
        "10.128.0.0/9",
        "10.192.0.0/10",
        "10.64.0.0/10",
        "203.0.113.7",
        "203.0.113.7:1-1024",
        "203.0.113.7:80-81",
        "169.254.0.0/16",
        "169.254.169.254",
        "169.254.1.0/24",
        "224.0.0.0/3",
        "224.0.0.0/4",
        "::/0",
        "2001:db8::/32",
        "2001:db8:8000::/33",
        "[2001:db8::1]:443",
        "example.com",
        "api.example.com",
        "*.example.com",
        "*.a.example.com",
        "badexample.com",
        "*.badexample.com",
        "api.example.com:443",
        "*.example.com:1-1024",
};

static struct b4_net_entry entry(const char *s)
{
        struct b4_net_entry e;
        const char *why = NULL;

        assert_int_equal(net_entry_parse(s, &e, &why), 0);
        return e;
}

static bool covers(const char *outer, const char *inner, bool allowlist)
{
        struct b4_net_entry o = entry(outer), i = entry(inner);
        bool r = net_entry_covers(&o, &i, allowlist);

        net_entry_release(&o);
        net_entry_release(&i);
        return r;
}

static bool disjoint(const char *a, const char *b)
{
        struct b4_net_entry x = entry(a), y = entry(b);
        bool r = net_entries_disjoint(&x, &y);

        net_entry_release(&x);
        net_entry_release(&y);
        return r;
}

static void test_cidr(void **state)
{
        (void)state;
        assert_true(covers("0.0.0.0/0", "203.0.113.7", true));
        assert_true(covers("0.0.0.0/0", "0.0.0.0/0", true));
        assert_false(covers("0.0.0.0/0", "10.0.0.1", true)); /* private: closed by /0 */
        assert_true(covers("0.0.0.0/0", "10.0.0.1", false)); /* a denylist /0 drops it */
        assert_true(covers("10.0.0.0/8", "10.0.0.0/8", true));
        assert_true(covers("10.0.0.0/8", "10.255.255.255", true));
        assert_false(covers("10.0.0.0/8", "10.0.0.0/7", true));
        assert_false(covers("10.0.0.0/8", "11.0.0.0/8", true));
        assert_false(covers("10.0.0.0/7", "10.0.0.0/8", true)); /* /7 lies in no special range */
        assert_true(covers("10.0.0.0/7", "11.0.0.0/8", true));
        assert_true(covers("10.128.0.0/9", "10.192.0.0/10", true));
        assert_false(covers("10.128.0.0/9", "10.64.0.0/10", true));
        assert_true(covers("203.0.113.7", "203.0.113.7", true));
        assert_false(covers("203.0.113.7", "203.0.113.6", true));
        assert_false(covers("203.0.113.7", "203.0.113.6/31", true));
        assert_true(covers("224.0.0.0/3", "224.0.0.0/4", true));
        assert_false(covers("0.0.0.0/0", "224.0.0.0/4", true));
}

static void test_metadata(void **state)
{
        (void)state;
        assert_true(covers("169.254.0.0/16", "169.254.1.0/24", true));
        assert_false(covers("169.254.0.0/16", "169.254.169.254", true));
        assert_false(covers("0.0.0.0/0", "169.254.169.254", true));
        assert_true(covers("169.254.169.254", "169.254.169.254", true));
        assert_true(covers("169.254.169.254", "169.254.169.254:80", true));
        assert_false(covers("169.254.169.254", "169.254.170.2", true));
        assert_true(covers("169.254.0.0/16", "169.254.169.254", false));
        assert_true(covers("169.254.0.0/16", "169.254.169.254/31", true)); /* opens no metadata */
}

static void test_ipv6(void **state)
{
        (void)state;
        assert_true(covers("::/0", "2001:db8::1", true));
        assert_true(covers("::/0", "::/0", true));
        assert_true(covers("2001:db8::/32", "2001:db8:8000::/33", true));
        assert_false(covers("2001:db8::/33", "2001:db8:8000::/33", true));
        assert_false(covers("2001:db8::/32", "2001:db9::/32", true));
        assert_true(covers("2001:db8::1", "[2001:db8::1]:443", true));
        assert_false(covers("::/0", "0.0.0.0/0", true));
        assert_false(covers("0.0.0.0/0", "::/0", true));
        assert_false(covers("::/0", "10.0.0.1", false));
        assert_true(covers("2001:db8::/127", "2001:db8::1", true));
        assert_false(covers("2001:db8::/128", "2001:db8::1", true));
}

static void test_ports(void **state)
{
        (void)state;
        assert_true(covers("203.0.113.7", "203.0.113.7:443", true));
        assert_false(covers("203.0.113.7:443", "203.0.113.7", true));
        assert_true(covers("203.0.113.7:1-1024", "203.0.113.7:80-81", true));
        assert_true(covers("203.0.113.7:1-1024", "203.0.113.7:1024", true));
        assert_false(covers("203.0.113.7:80-81", "203.0.113.7:80-82", true));
        assert_false(covers("203.0.113.7:80-81", "203.0.113.7:79", true));
        assert_true(covers("203.0.113.7:1-65535", "203.0.113.7:65535", true));
        assert_false(covers("203.0.113.7:1-65535", "203.0.113.7", true)); /* written, not "all" */
        assert_true(covers("*.example.com:1-1024", "api.example.com:443", true));
        assert_false(covers("*.example.com:1-1024", "api.example.com", true));
}

static void test_names(void **state)
{
        (void)state;
        assert_true(covers("api.example.com", "API.Example.com.", true));
        assert_false(covers("api.example.com", "www.example.com", true));
        assert_false(covers("example.com", "api.example.com", true));
        assert_true(covers("*.example.com", "api.example.com", true));
        assert_true(covers("*.example.com", "a.b.c.example.com", true));
        assert_false(covers("*.example.com", "example.com", true)); /* not the apex */
        assert_false(covers("*.example.com", "badexample.com", true));
        assert_false(covers("*.example.com", "*.badexample.com", true));
        assert_true(covers("*.example.com", "*.example.com", true));
        assert_true(covers("*.example.com", "*.a.example.com", true));
        assert_false(covers("*.a.example.com", "*.example.com", true));
        assert_false(covers("*.a.example.com", "a.example.com", true));
        assert_false(covers("api.example.com", "*.api.example.com", true));
        assert_false(covers("0.0.0.0/0", "api.example.com", true)); /* a name opens its DNS */
        assert_false(covers("api.example.com", "203.0.113.7", true));
}

static void test_disjoint(void **state)
{
        (void)state;
        assert_true(disjoint("203.0.113.7:80", "203.0.113.7:81-90"));
        assert_false(disjoint("203.0.113.7:80-85", "203.0.113.0/24:85-90"));
        assert_true(disjoint("10.0.0.0/8", "11.0.0.0/8"));
        assert_false(disjoint("10.0.0.0/8", "10.1.0.0/16"));
        assert_false(disjoint("10.1.0.0/16", "10.0.0.0/8"));
        assert_false(disjoint("0.0.0.0/0", "203.0.113.7"));
        assert_true(disjoint("10.0.0.0/8", "::/0"));
        assert_true(disjoint("2001:db8::/33", "2001:db8:8000::/33"));
        assert_true(disjoint("example.com", "*.example.com"));
        assert_false(disjoint("api.example.com", "*.example.com"));
        assert_false(disjoint("*.a.example.com", "*.example.com"));
        assert_true(disjoint("*.example.com", "*.badexample.com"));
        assert_false(disjoint("api.example.com", "203.0.113.7"));
        assert_true(disjoint("api.example.com:443", "203.0.113.7:80"));
}

/* The ranges here are the ones native's table rejects: never4 is net_special4 and linklocal4
 * net_closed4, element for element (src/lib/hostnet/b4box.nft). */
static void expect_set(const char *nft, const char *set, const struct net_range4 *r, size_t n)
{
        char want[512] = "", head[64], ip[INET_ADDRSTRLEN];
        const char *line, *el;
        size_t len = 0;

        for (size_t i = 0; i < n; i++) {
                (void)inet_ntop(AF_INET, r[i].net, ip, sizeof(ip));
                len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s/%u", i ? ", " : "",
                                        ip, r[i].prefix);
        }
        (void)snprintf(head, sizeof(head), "add set inet b4box %s {", set);
        line = strstr(nft, head);
        assert_non_null(line);
        el = strstr(line, "elements = { ");
        assert_non_null(el);
        el += strlen("elements = { ");
        assert_true(strncmp(el, want, len) == 0 && strncmp(el + len, " }", 2) == 0);
}

static void test_table_ranges(void **state)
{
        const char *src = getenv("B4BOX_SRCDIR");
        char path[4096], *nft = NULL;
        size_t len = 0;
        FILE *f;

        (void)state;
        assert_non_null(src);
        (void)snprintf(path, sizeof(path), "%s/src/lib/hostnet/b4box.nft", src);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_true(getdelim(&nft, &len, '\0', f) > 0);
        (void)fclose(f);
        expect_set(nft, "never4", net_special4, NET_N_SPECIAL4);
        expect_set(nft, "linklocal4", net_closed4, NET_N_CLOSED4);
        free(nft);
}

/* Out-of-grammar entries (a prefix past the family, no name, half a port range, an unknown
 * kind) cover nothing and are disjoint from nothing. */
static void test_total(void **state)
{
        struct b4_net_entry ok = entry("10.0.0.0/8"), bad[5];

        (void)state;
        for (size_t i = 0; i < 5; i++)
                bad[i] = ok;
        bad[0].prefix = 200;
        bad[1].family = 0;
        bad[2].kind = B4_NET_WILDCARD; /* name NULL */
        bad[3].port_hi = 80;           /* port_lo 0 */
        bad[4].kind = (enum b4_net_kind)77;
        for (size_t i = 0; i < 5; i++) {
                assert_false(net_entry_covers(&ok, &bad[i], true));
                assert_false(net_entry_covers(&bad[i], &ok, false));
                assert_false(net_entry_covers(&bad[i], &bad[i], true));
                assert_false(net_entries_disjoint(&ok, &bad[i]));
                assert_false(net_entries_disjoint(&bad[i], &bad[i]));
        }
        net_entry_release(&ok);
}

/* Laws over every pair and triple: coverage is reflexive and transitive, implies overlap;
 * disjointness is symmetric and irreflexive. */
static void test_laws(void **state)
{
        enum {
                N = sizeof(samples) / sizeof(samples[0])
        };
        struct b4_net_entry e[N];

        (void)state;
        for (size_t i = 0; i < N; i++)
                e[i] = entry(samples[i]);
        for (int mode = 0; mode < 2; mode++)
                for (size_t a = 0; a < N; a++) {
                        assert_true(net_entry_covers(&e[a], &e[a], mode));
                        assert_false(net_entries_disjoint(&e[a], &e[a]));
                        for (size_t b = 0; b < N; b++) {
                                bool ab = net_entry_covers(&e[a], &e[b], mode);

                                assert_int_equal(net_entries_disjoint(&e[a], &e[b]),
                                                 net_entries_disjoint(&e[b], &e[a]));
                                if (ab)
                                        assert_false(net_entries_disjoint(&e[a], &e[b]));
                                for (size_t c = 0; ab && c < N; c++)
                                        if (net_entry_covers(&e[b], &e[c], mode))
                                                assert_true(net_entry_covers(&e[a], &e[c], mode));
                        }
                }
        for (size_t i = 0; i < N; i++)
                net_entry_release(&e[i]);
}

static void policy_of(struct b4_policy *p,
                      enum b4_network_mode mode,
                      const char *const *list,
                      size_t n,
                      struct b4_net_entry *store)
{
        b4_policy_init(p);
        p->network = mode;
        for (size_t i = 0; i < n; i++)
                store[i] = entry(list[i]);
        p->network_list = n ? store : NULL;
        p->n_network_list = n;
}

static void check(enum b4_network_mode app_mode,
                  const char *const *app_list,
                  size_t app_n,
                  enum b4_network_mode mode,
                  const char *const *list,
                  size_t n,
                  const char *want)
{
        struct b4_net_entry a[8], t[8];
        struct b4_policy app;
        char why[1024] = "";
        bool ok;

        policy_of(&app, app_mode, app_list, app_n, a);
        for (size_t i = 0; i < n; i++)
                t[i] = entry(list[i]);
        ok = net_narrow_check(&app, mode, t, n, why, sizeof(why));
        assert_int_equal(ok, want == NULL);
        if (want)
                assert_string_equal(why, want);
        for (size_t i = 0; i < n; i++)
                net_entry_release(&t[i]);
        for (size_t i = 0; i < app_n; i++)
                net_entry_release(&a[i]);
}

static void test_narrow(void **state)
{
        static const char *const allow[] = { "10.0.0.0/8:443", "*.example.com" };
        static const char *const inside[] = { "10.1.0.0/16:443", "api.example.com" };
        static const char *const outside[] = { "api.example.com", "example.com" };
        static const char *const deny[] = { "bad.example.net", "192.0.2.0/24:53" };
        static const char *const more[] = { "*.example.net", "192.0.2.0/24", "x.example" };
        static const char *const fewer[] = { "192.0.2.0/24:53" };
        static const char *const reach[] = { "10.0.0.0/8:53", "192.0.2.7:53" };
        static const char *const metadata[] = { "169.254.169.254" };
        static const char *const loopback[] = { "0.0.0.0/0", "127.0.0.0/8:80" };

        (void)state;
        check(B4_NETWORK_DENY, allow, 2, B4_NETWORK_DENY, inside, 2, NULL);
        check(B4_NETWORK_DENY, allow, 2, B4_NETWORK_DENY, NULL, 0, NULL);
        check(B4_NETWORK_DENY, allow, 2, B4_NETWORK_DENY, outside, 2,
              "network.allowlist[1] \"example.com\" is not inside any entry of the app's "
              "sandbox.network.allowlist");
        check(B4_NETWORK_DENY, NULL, 0, B4_NETWORK_DENY, inside, 1,
              "network.allowlist[0] \"10.1.0.0/16:443\" is not inside any entry of the app's "
              "sandbox.network.allowlist");
        check(B4_NETWORK_DENY, allow, 2, B4_NETWORK_ALLOW, NULL, 0,
              "may not open the network the app's policy denies");
        check(B4_NETWORK_ALLOW, deny, 2, B4_NETWORK_ALLOW, more, 3, NULL);
        check(B4_NETWORK_ALLOW, NULL, 0, B4_NETWORK_ALLOW, NULL, 0, NULL);
        check(B4_NETWORK_ALLOW, deny, 2, B4_NETWORK_ALLOW, fewer, 1,
              "network.denylist does not deny the app's sandbox.network.denylist[0] "
              "\"bad.example.net\": a thread may add entries, not remove them");
        check(B4_NETWORK_ALLOW, NULL, 0, B4_NETWORK_DENY, reach, 2, NULL);
        check(B4_NETWORK_ALLOW, NULL, 0, B4_NETWORK_DENY, metadata, 1,
              "network.allowlist[0] \"169.254.169.254\" opens what mode \"allow\" closes (this "
              "network, loopback, link-local and metadata, multicast)");
        check(B4_NETWORK_ALLOW, NULL, 0, B4_NETWORK_DENY, loopback, 2,
              "network.allowlist[1] \"127.0.0.0/8:80\" opens what mode \"allow\" closes (this "
              "network, loopback, link-local and metadata, multicast)");
        check(B4_NETWORK_ALLOW, fewer, 1, B4_NETWORK_DENY, reach, 2,
              "network.allowlist[1] \"192.0.2.7:53\" may reach what the app's "
              "sandbox.network.denylist[0] \"192.0.2.0/24:53\" denies");
}

/* The record's network @json over @app into a fresh copy @p; the return value. */
static int apply(const struct b4_policy *app,
                 const char *json,
                 struct b4_policy *p,
                 struct b4_error *err)
{
        struct jv *v = NULL;
        int r;

        assert_int_equal(jv_parse(json, strlen(json), &v, NULL), 0);
        assert_int_equal(b4_policy_copy(p, app), 0);
        r = config_thread_network_apply(app, v, p, err);
        jv_unref(v);
        return r;
}

static void assert_list(const struct b4_policy *p,
                        enum b4_network_mode mode,
                        const char *first,
                        size_t n)
{
        assert_int_equal(p->network, mode);
        assert_int_equal(p->n_network_list, n);
        if (first)
                assert_string_equal(p->network_list[0].text, first);
}

static void test_apply(void **state)
{
        static const char *const allow[] = { "*.example.com:443", "10.0.0.0/8" };
        static const char *const deny[] = { "bad.example.net" };
        struct b4_net_entry a[2], d[1];
        struct b4_policy app, app2, p;
        struct b4_error err = { 0 };
        char id_app[65], id_thread[65];

        (void)state;
        policy_of(&app, B4_NETWORK_DENY, allow, 2, a);
        assert_int_equal(apply(&app,
                               "{\"mode\": \"deny\", \"allowlist\": [\"api.example.com:443\"]}", &p,
                               &err),
                         0);
        assert_list(&p, B4_NETWORK_DENY, "api.example.com:443", 1);
        assert_int_equal(launch_identity("img", &app, id_app), 0);
        assert_int_equal(launch_identity("img", &p, id_thread), 0);
        assert_string_not_equal(id_app, id_thread);
        b4_policy_clear(&p);
        assert_int_equal(apply(&app, "{\"mode\": \"deny\"}", &p, &err), 0);
        assert_list(&p, B4_NETWORK_DENY, "*.example.com:443", 2);
        b4_policy_clear(&p);
        assert_int_equal(apply(&app, "{\"mode\": \"deny\", \"allowlist\": []}", &p, &err), 0);
        assert_list(&p, B4_NETWORK_DENY, NULL, 0);
        b4_policy_clear(&p);
        assert_int_equal(
                apply(&app, "{\"mode\": \"deny\", \"allowlist\": [\"example.com\"]}", &p, &err),
                -EPERM);
        assert_int_equal(err.code, B4_CODE_THREAD_REFUSED);
        assert_string_equal(err.msg, "A thread's sandbox policy network.allowlist[0] "
                                     "\"example.com\" is not inside any entry of the app's "
                                     "sandbox.network.allowlist");
        b4_policy_clear(&p);
        assert_int_equal(apply(&app, "{\"mode\": \"allow\"}", &p, &err), -EPERM);
        assert_string_equal(err.msg, "A thread's sandbox policy may not open the network the "
                                     "app's policy denies");
        b4_policy_clear(&p);
        assert_int_equal(apply(&app, "{\"mode\": \"deny\", \"allowlist\": [\"*\"]}", &p, &err),
                         -EBADMSG);
        b4_policy_clear(&p);

        policy_of(&app2, B4_NETWORK_ALLOW, deny, 1, d);
        assert_int_equal(apply(&app2, "{\"mode\": \"deny\"}", &p, &err), 0);
        assert_list(&p, B4_NETWORK_DENY, NULL, 0);
        b4_policy_clear(&p);
        assert_int_equal(apply(&app2, "{\"mode\": \"allow\"}", &p, &err), 0);
        assert_list(&p, B4_NETWORK_ALLOW, "bad.example.net", 1);
        b4_policy_clear(&p);
        assert_int_equal(apply(&app2,
                               "{\"mode\": \"allow\", \"denylist\": [\"*.example.net\", "
                               "\"x.example\"]}",
                               &p, &err),
                         0);
        assert_list(&p, B4_NETWORK_ALLOW, "*.example.net", 2);
        b4_policy_clear(&p);
        for (size_t i = 0; i < 2; i++)
                net_entry_release(&a[i]);
        net_entry_release(&d[0]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cidr),         cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_ipv6),         cmocka_unit_test(test_ports),
                cmocka_unit_test(test_names),        cmocka_unit_test(test_disjoint),
                cmocka_unit_test(test_laws),         cmocka_unit_test(test_narrow),
                cmocka_unit_test(test_apply),        cmocka_unit_test(test_total),
                cmocka_unit_test(test_table_ranges),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
