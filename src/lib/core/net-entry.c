/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network list entries: `target[:port[-port]]` where target is an address or CIDR
 * (`10.0.0.0/8`, `203.0.113.7`, `[2001:db8::1]:443`), an exact name (`api.example.com`) or a
 * wildcard (`*.example.com`: subdomains at any depth, not the apex). IPv6 with a port needs
 * brackets. Names are compared lowercased, as A-labels.
 */

#include "net-entry.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/alloc.h"

#define TARGET_MAX 256

static bool is_label_char(char c)
{
        return isalnum((unsigned char)c) || c == '-' || c == '_';
}

int net_name_normalize(const char *s, size_t len, char *out)
{
        size_t label = 0;

        if (len > 0 && s[len - 1] == '.')
                len--;
        if (len == 0 || len > B4_NET_NAME_MAX)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '.') {
                        if (label == 0)
                                return -EINVAL;
                        label = 0;
                } else if (!is_label_char(s[i]) || ++label > 63) {
                        return -EINVAL;
                }
                out[i] = (char)tolower((unsigned char)s[i]);
        }
        out[len] = '\0';
        return label == 0 ? -EINVAL : 0;
}

int net_addr_parse(const char *s, struct b4_net_addr *ret)
{
        struct b4_net_addr a = { 0 };

        if (inet_pton(AF_INET, s, a.addr) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, s, a.addr) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        *ret = a;
        return 0;
}

/* @len decimal digits, no sign, no leading zero ("0" itself is fine), at most @max. */
static int parse_decimal(const char *s, size_t len, unsigned max, unsigned *ret)
{
        unsigned v = 0;

        if (len == 0 || len > 5 || (len > 1 && s[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return -EINVAL;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_port(const char *s, size_t len, uint16_t *ret)
{
        unsigned v;

        if (parse_decimal(s, len, 65535, &v) < 0 || v == 0)
                return -EINVAL;
        *ret = (uint16_t)v;
        return 0;
}

static int parse_ports(const char *s, struct b4_net_entry *e)
{
        const char *dash = strchr(s, '-');

        if (!dash)
                return parse_port(s, strlen(s), &e->port_lo) < 0 ? -EINVAL
                                                                 : (e->port_hi = e->port_lo, 0);
        if (parse_port(s, (size_t)(dash - s), &e->port_lo) < 0 ||
            parse_port(dash + 1, strlen(dash + 1), &e->port_hi) < 0 || e->port_lo > e->port_hi)
                return -EINVAL;
        return 0;
}

static bool host_bits_clear(const uint8_t *addr, unsigned prefix, unsigned bits)
{
        for (unsigned i = prefix; i < bits; i++)
                if (addr[i / 8] & (0x80u >> (i % 8)))
                        return false;
        return true;
}

/* @t is an address or CIDR without brackets or port. 1 = parsed, 0 = not an address. */
static int parse_cidr(const char *t, struct b4_net_entry *e, const char **ret_why)
{
        char buf[TARGET_MAX + 1];
        const char *slash = strchr(t, '/');
        struct b4_net_addr a;
        unsigned bits, prefix;

        if (strlen(t) > TARGET_MAX)
                return 0;
        memcpy(buf, t, strlen(t) + 1);
        if (slash)
                buf[slash - t] = '\0';
        if (net_addr_parse(buf, &a) < 0)
                return 0;
        bits = a.family == AF_INET ? 32 : 128;
        prefix = bits;
        if (slash && parse_decimal(slash + 1, strlen(slash + 1), bits, &prefix) < 0) {
                *ret_why = "has a prefix length out of range (IPv4 /0-/32, IPv6 /0-/128)";
                return -EINVAL;
        }
        if (!host_bits_clear(a.addr, prefix, bits)) {
                *ret_why = "has address bits set past its prefix length";
                return -EINVAL;
        }
        e->kind = B4_NET_CIDR;
        e->family = a.family;
        memcpy(e->addr, a.addr, sizeof(e->addr));
        e->prefix = (uint8_t)prefix;
        return 1;
}

/* The last label of an address-looking string is all digits: it is no name. */
static bool looks_numeric(const char *s, size_t len)
{
        size_t i = len;

        if (i > 0 && s[i - 1] == '.')
                i--;
        while (i > 0 && s[i - 1] != '.')
                if (!isdigit((unsigned char)s[--i]))
                        return false;
        return true;
}

static int parse_name(const char *t, struct b4_net_entry *e, const char **ret_why)
{
        char norm[B4_NET_NAME_MAX + 1];
        bool wild = strncmp(t, "*.", 2) == 0;
        const char *n = wild ? t + 2 : t;

        if (strcmp(t, "*") == 0) {
                *ret_why = "would admit every name";
                return -EINVAL;
        }
        if (strchr(n, '*')) {
                *ret_why = "may use * only as the whole first label (*.example.com)";
                return -EINVAL;
        }
        if (looks_numeric(n, strlen(n)) || net_name_normalize(n, strlen(n), norm) < 0) {
                *ret_why = "is not an address, a CIDR, a DNS name or *.name (labels of 1-63 "
                           "letters, digits, '-' or '_'; at most 253 bytes; IDNs as xn-- "
                           "A-labels)";
                return -EINVAL;
        }
        if (wild && !strchr(norm, '.')) {
                *ret_why = "would admit a whole top-level domain";
                return -EINVAL;
        }
        e->kind = wild ? B4_NET_WILDCARD : B4_NET_NAME;
        e->name = b4_strdup(norm);
        return e->name ? 0 : -ENOMEM;
}

/* Split @s into target (copied to @t) and port text (*@ret_port, NULL for none). */
static int split_port(const char *s, char *t, const char **ret_port, const char **ret_why)
{
        const char *colon = strchr(s, ':');
        size_t n;

        *ret_port = NULL;
        if (s[0] == '[') {
                const char *close = strchr(s, ']');

                if (!close || (close[1] != '\0' && close[1] != ':') || close == s + 1) {
                        *ret_why = "has unbalanced brackets: write [IPv6]:port";
                        return -EINVAL;
                }
                n = (size_t)(close - s - 1);
                memcpy(t, s + 1, n);
                t[n] = '\0';
                if (!strchr(t, ':')) {
                        *ret_why = "puts brackets around something other than an IPv6 address";
                        return -EINVAL;
                }
                *ret_port = close[1] == ':' ? close + 2 : NULL;
                return 0;
        }
        if (colon && strchr(colon + 1, ':')) { /* bare IPv6: no port */
                memcpy(t, s, strlen(s) + 1);
                return 0;
        }
        n = colon ? (size_t)(colon - s) : strlen(s);
        memcpy(t, s, n);
        t[n] = '\0';
        *ret_port = colon ? colon + 1 : NULL;
        return 0;
}

int net_entry_parse(const char *s, struct b4_net_entry *ret, const char **ret_why)
{
        struct b4_net_entry e = { 0 };
        char target[TARGET_MAX + 1];
        const char *port;
        int r;

        if (strlen(s) > TARGET_MAX) {
                *ret_why = "is longer than 256 bytes";
                return -EINVAL;
        }
        r = split_port(s, target, &port, ret_why);
        if (r < 0)
                return r;
        if (port && parse_ports(port, &e) < 0) {
                *ret_why = "has a bad port: write :port or :low-high, from 1 to 65535";
                return -EINVAL;
        }
        r = parse_cidr(target, &e, ret_why);
        if (r == 0 && s[0] == '[') {
                *ret_why = "puts brackets around something other than an IPv6 address";
                return -EINVAL;
        }
        if (r == 0)
                r = parse_name(target, &e, ret_why);
        if (r < 0) {
                net_entry_release(&e);
                return r;
        }
        e.text = b4_strdup(s);
        if (!e.text) {
                net_entry_release(&e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

void net_entry_release(struct b4_net_entry *e)
{
        free(e->text);
        free(e->name);
        *e = (struct b4_net_entry){ 0 };
}

bool net_entry_admits_name(const struct b4_net_entry *e, const char *name)
{
        size_t n, sn;

        if (e->kind == B4_NET_NAME)
                return strcmp(e->name, name) == 0;
        if (e->kind != B4_NET_WILDCARD)
                return false;
        n = strlen(name);
        sn = strlen(e->name);
        return n > sn + 1 && name[n - sn - 1] == '.' && strcmp(name + n - sn, e->name) == 0;
}

void b4_net_entries_free(struct b4_net_entry *l, size_t n)
{
        for (size_t i = 0; i < n; i++)
                net_entry_release(&l[i]);
        free(l);
}
