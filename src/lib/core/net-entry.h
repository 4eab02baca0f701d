/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The grammar of network list entries, `target[:port[-port]]` (docs/configuration.md
 * §sandbox.network), and DNS name matching against parsed entries. Pure functions: the
 * config loader, b4box-netd and the fuzzer share them.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/policy.h"

/*
 * net_entry_parse() - parse @s into *@ret (ret->text and ret->name are new copies).
 * Return: 0; -EINVAL with *@ret_why set to a static phrase naming the problem (the tail of
 * the refusal, e.g. "has a port out of range"); -ENOMEM. *@ret is written only on success.
 */
int net_entry_parse(const char *s, struct b4_net_entry *ret, const char **ret_why);

/* net_entry_release() - free what @e owns. */
void net_entry_release(struct b4_net_entry *e);

/*
 * net_name_normalize() - check the DNS name @s (@len bytes, an optional final dot) and
 * write it lowercased without the final dot to @out (B4_NET_NAME_MAX + 1 bytes). Labels are
 * 1-63 bytes of letters, digits, '-' and '_'; at most 253 bytes. Return: 0 or -EINVAL.
 */
int net_name_normalize(const char *s, size_t len, char *out);

/* net_entry_admits_name() - whether the name entry @e admits @name (normalized). */
bool net_entry_admits_name(const struct b4_net_entry *e, const char *name);

/* net_addr_parse() - an IPv4 or IPv6 address in text. Return: 0 or -EINVAL. */
int net_addr_parse(const char *s, struct b4_net_addr *ret);
