/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libnftnl (and through it libmnl), loaded on first use (dlopen) like libnftables
 * (nft-dl.h): only a thread with a veth adds or deletes elements, and `b4box` links no
 * shared library for a command that never does (docs/ARCHITECTURE.md "A CLI that starts
 * fast"). These are the calls nft-elems.c builds its nf_tables batches with: set elements,
 * and a thread's own set and chain (nft-elems.h).
 */

#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

struct nftnl_dl {
        __typeof__(nftnl_set_alloc) *set_alloc;
        __typeof__(nftnl_set_free) *set_free;
        __typeof__(nftnl_set_set_str) *set_set_str;
        __typeof__(nftnl_set_set_u32) *set_set_u32;
        __typeof__(nftnl_set_set_data) *set_set_data;
        __typeof__(nftnl_set_nlmsg_build_payload) *set_build_payload;
        __typeof__(nftnl_set_elem_alloc) *elem_alloc;
        __typeof__(nftnl_set_elem_free) *elem_free;
        __typeof__(nftnl_set_elem_set) *elem_set;
        __typeof__(nftnl_set_elem_set_u32) *elem_set_u32;
        __typeof__(nftnl_set_elem_set_str) *elem_set_str;
        __typeof__(nftnl_set_elem_add) *elem_add;
        __typeof__(nftnl_nlmsg_build_hdr) *nlmsg_build_hdr;
        __typeof__(nftnl_set_elems_nlmsg_build_payload) *elems_build_payload;
        __typeof__(nftnl_batch_begin) *batch_begin;
        __typeof__(nftnl_batch_end) *batch_end;
        __typeof__(nftnl_chain_alloc) *chain_alloc;
        __typeof__(nftnl_chain_free) *chain_free;
        __typeof__(nftnl_chain_set_str) *chain_set_str;
        __typeof__(nftnl_chain_set_u32) *chain_set_u32;
        __typeof__(nftnl_chain_nlmsg_build_payload) *chain_build_payload;
        __typeof__(nftnl_rule_alloc) *rule_alloc;
        __typeof__(nftnl_rule_free) *rule_free;
        __typeof__(nftnl_rule_set_str) *rule_set_str;
        __typeof__(nftnl_rule_set_u32) *rule_set_u32;
        __typeof__(nftnl_rule_add_expr) *rule_add_expr;
        __typeof__(nftnl_rule_nlmsg_build_payload) *rule_build_payload;
        __typeof__(nftnl_expr_alloc) *expr_alloc;
        __typeof__(nftnl_expr_set) *expr_set;
        __typeof__(nftnl_expr_set_u32) *expr_set_u32;
        __typeof__(nftnl_expr_set_str) *expr_set_str;
};

/* The library's calls, loaded once per process (thread-safe); NULL when it cannot be loaded,
 * with the reason in *ret_why (static text) when @ret_why is not NULL. */
const struct nftnl_dl *nftnl_dl(const char **ret_why);
