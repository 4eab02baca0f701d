/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: network list entries (net_entry_parse(), net_entry_admits_name() in
 * src/lib/core/net-entry.c). Trust boundary: sandbox.network.{allowlist,denylist} strings in
 * b4box.json; what they parse to decides what a sandbox may reach.
 *
 * The input is "<entry>\n<name>...": the first line is parsed as an entry, every further
 * line is checked against it as a DNS name. A refusal must say why; an accepted entry must
 * satisfy the grammar's invariants: ports ordered, CIDR host bits clear, names normalized
 * (lowercase, no final dot, valid again), a wildcard never admitting its apex.
 */

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/net-entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 4096

static void check_cidr(const struct b4_net_entry *e)
{
        unsigned bits = e->family == AF_INET ? 32 : 128;

        if ((e->family != AF_INET && e->family != AF_INET6) || e->prefix > bits || e->name)
                abort();
        for (unsigned i = e->prefix; i < bits; i++)
                if (e->addr[i / 8] & (0x80u >> (i % 8)))
                        abort();
}

static void check_name(const struct b4_net_entry *e)
{
        char again[B4_NET_NAME_MAX + 1];
        size_t n = strlen(e->name);

        if (net_name_normalize(e->name, n, again) < 0 || strcmp(again, e->name) != 0)
                abort();
        if (e->kind == B4_NET_NAME && !net_entry_admits_name(e, e->name))
                abort();
        if (e->kind == B4_NET_WILDCARD &&
            (net_entry_admits_name(e, e->name) || !strchr(e->name, '.')))
                abort();
}

static void check_names(const struct b4_net_entry *e, const char *rest)
{
        char name[B4_NET_NAME_MAX + 1];

        while (rest && *rest) {
                const char *nl = strchr(rest, '\n');
                size_t n = nl ? (size_t)(nl - rest) : strlen(rest);

                if (net_name_normalize(rest, n, name) == 0 && net_entry_admits_name(e, name)) {
                        size_t ln = strlen(name), sn = strlen(e->name);

                        if (e->kind == B4_NET_CIDR || ln < sn ||
                            strcmp(name + ln - sn, e->name) != 0)
                                abort();
                }
                rest = nl ? nl + 1 : NULL;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct b4_net_entry e;
        const char *why = NULL;
        char *buf, *nl;
        int r;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        buf = calloc(1, size + 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
        r = net_entry_parse(buf, &e, &why);
        if (r < 0 && (r != -22 || !why || !*why))
                abort();
        if (r == 0) {
                if (strcmp(e.text, buf) != 0 || e.port_lo > e.port_hi ||
                    (e.port_lo == 0) != (e.port_hi == 0))
                        abort();
                if (e.kind == B4_NET_CIDR)
                        check_cidr(&e);
                else
                        check_name(&e);
                check_names(&e, nl ? nl + 1 : NULL);
                net_entry_release(&e);
        }
        free(buf);
        return 0;
}
