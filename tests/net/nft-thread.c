/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A thread's elements in the inet b4box table, as the native provider writes them
 * (netpolicy_thread_elems(), nft_elems_commit()), for tests/net/own-sets.sh, in the network
 * namespace it runs in:
 *   nft-thread add IFINDEX ADDR deny|allow ENTRY...   the table (idempotent) and the thread
 *                                                     (netd port 5353); its record on stdout
 *   nft-thread del RECORD                             delete what the record file names
 *   nft-thread fill N                                 N threads of inert ifindexes 200000+i,
 *                                                     deny, allowlist 203.0.113.<i%250>/32:443
 *                                                     and 198.51.100.0/24:<1000+i>
 * Exit status 0, or 1 with the reason on stderr.
 */

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/b4.h"

#include "base/fd-util.h"
#include "core/net-entry.h"
#include "hostnet/netpolicy.h"
#include "hostnet/nft-elems.h"

#define MAX_ENTRIES 16

static int fail(const char *what, const struct b4_error *err)
{
        fprintf(stderr, "nft-thread: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
        return 1;
}

/* Install thread @t under @mode with @n entries @texts; its record into *@ret when not NULL. */
static int install(const struct netpolicy_thread *t,
                   enum b4_network_mode mode,
                   char **texts,
                   size_t n,
                   char **ret)
{
        struct b4_net_entry e[MAX_ENTRIES];
        struct b4_policy p;
        struct b4_error err = { 0 };
        struct nft_elems l = { 0 };
        const char *why = NULL;
        int r = 0;

        if (n > MAX_ENTRIES)
                return fail("too many entries", NULL);
        b4_policy_init(&p);
        p.network = mode;
        for (size_t i = 0; i < n; i++)
                if (net_entry_parse(texts[i], &e[i], &why) < 0)
                        return fail(why, NULL);
        p.network_list = e;
        p.n_network_list = n;
        if (netpolicy_table_install(&err) < 0)
                r = fail("table", &err);
        if (r == 0 && netpolicy_thread_elems(&p, t, &l) < 0)
                r = fail("out of memory", NULL);
        if (r == 0 && nft_elems_commit(NULL, &l, &err) < 0)
                r = fail("commit", &err);
        if (r == 0 && ret && nft_elems_format(&l, ret) < 0)
                r = fail("out of memory", NULL);
        nft_elems_release(&l);
        for (size_t i = 0; i < n; i++)
                net_entry_release(&e[i]);
        return r;
}

static int add(char **argv, size_t argc)
{
        struct netpolicy_thread t = { .ifindex = (unsigned)strtoul(argv[0], NULL, 10),
                                      .netd_port = 5353 };
        char *record = NULL;
        int r;

        if (inet_pton(AF_INET, argv[1], t.sandbox) != 1)
                return fail("bad address", NULL);
        r = install(&t, strcmp(argv[2], "deny") == 0 ? B4_NETWORK_DENY : B4_NETWORK_ALLOW, argv + 3,
                    argc - 3, &record);
        if (r == 0)
                fputs(record, stdout);
        free(record);
        return r;
}

static int del(const char *path)
{
        char *text = NULL;
        struct nft_elems l = { 0 };
        struct b4_error err = { 0 };
        size_t len;
        int r = 0;

        if (read_file_at(AT_FDCWD, path, 1u << 22, &text, &len) < 0 ||
            nft_elems_parse(text, &l) < 0)
                r = fail("unreadable record", NULL);
        if (r == 0 && nft_elems_commit(&l, NULL, &err) < 0)
                r = fail("commit", &err);
        nft_elems_release(&l);
        free(text);
        return r;
}

static int fill(unsigned n)
{
        for (unsigned i = 0; i < n; i++) {
                struct netpolicy_thread t = { .ifindex = 200000 + i, .netd_port = 5353 };
                char a[32], b[32];
                char *texts[] = { a, b };

                t.sandbox[0] = 10;
                t.sandbox[1] = 234;
                t.sandbox[2] = (uint8_t)(i >> 6);
                t.sandbox[3] = (uint8_t)((i & 63) * 4 + 2);
                (void)snprintf(a, sizeof(a), "203.0.113.%u/32:443", i % 250);
                (void)snprintf(b, sizeof(b), "198.51.100.0/24:%u", 1000 + i);
                if (install(&t, B4_NETWORK_DENY, texts, 2, NULL) != 0)
                        return 1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc >= 5 && strcmp(argv[1], "add") == 0)
                return add(argv + 2, (size_t)argc - 2);
        if (argc == 3 && strcmp(argv[1], "del") == 0)
                return del(argv[2]);
        if (argc == 3 && strcmp(argv[1], "fill") == 0)
                return fill((unsigned)strtoul(argv[2], NULL, 10));
        fprintf(stderr, "usage: nft-thread add IFINDEX ADDR deny|allow ENTRY... | del RECORD | "
                        "fill N\n");
        return 2;
}
