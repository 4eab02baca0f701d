/* SPDX-License-Identifier: Apache-2.0 */
/* libnftnl through dlopen (nftnl-dl.h says why). */

#include "nftnl-dl.h"

#include <pthread.h>
#include <stddef.h>

#include "dl-load.h"

#define NFTNL_SONAME "libnftnl.so.11"

static struct nftnl_dl api;
static const struct nftnl_dl *loaded;
static const char *why;
static char why_text[128];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct dl_sym syms[] = {
        DL_SYM(struct nftnl_dl, set_alloc, "nftnl_set_alloc"),
        DL_SYM(struct nftnl_dl, set_free, "nftnl_set_free"),
        DL_SYM(struct nftnl_dl, set_set_str, "nftnl_set_set_str"),
        DL_SYM(struct nftnl_dl, set_set_u32, "nftnl_set_set_u32"),
        DL_SYM(struct nftnl_dl, set_set_data, "nftnl_set_set_data"),
        DL_SYM(struct nftnl_dl, set_build_payload, "nftnl_set_nlmsg_build_payload"),
        DL_SYM(struct nftnl_dl, elem_alloc, "nftnl_set_elem_alloc"),
        DL_SYM(struct nftnl_dl, elem_free, "nftnl_set_elem_free"),
        DL_SYM(struct nftnl_dl, elem_set, "nftnl_set_elem_set"),
        DL_SYM(struct nftnl_dl, elem_set_u32, "nftnl_set_elem_set_u32"),
        DL_SYM(struct nftnl_dl, elem_set_str, "nftnl_set_elem_set_str"),
        DL_SYM(struct nftnl_dl, elem_add, "nftnl_set_elem_add"),
        DL_SYM(struct nftnl_dl, nlmsg_build_hdr, "nftnl_nlmsg_build_hdr"),
        DL_SYM(struct nftnl_dl, elems_build_payload, "nftnl_set_elems_nlmsg_build_payload"),
        DL_SYM(struct nftnl_dl, batch_begin, "nftnl_batch_begin"),
        DL_SYM(struct nftnl_dl, batch_end, "nftnl_batch_end"),
        DL_SYM(struct nftnl_dl, chain_alloc, "nftnl_chain_alloc"),
        DL_SYM(struct nftnl_dl, chain_free, "nftnl_chain_free"),
        DL_SYM(struct nftnl_dl, chain_set_str, "nftnl_chain_set_str"),
        DL_SYM(struct nftnl_dl, chain_set_u32, "nftnl_chain_set_u32"),
        DL_SYM(struct nftnl_dl, chain_build_payload, "nftnl_chain_nlmsg_build_payload"),
        DL_SYM(struct nftnl_dl, rule_alloc, "nftnl_rule_alloc"),
        DL_SYM(struct nftnl_dl, rule_free, "nftnl_rule_free"),
        DL_SYM(struct nftnl_dl, rule_set_str, "nftnl_rule_set_str"),
        DL_SYM(struct nftnl_dl, rule_set_u32, "nftnl_rule_set_u32"),
        DL_SYM(struct nftnl_dl, rule_add_expr, "nftnl_rule_add_expr"),
        DL_SYM(struct nftnl_dl, rule_build_payload, "nftnl_rule_nlmsg_build_payload"),
        DL_SYM(struct nftnl_dl, expr_alloc, "nftnl_expr_alloc"),
        DL_SYM(struct nftnl_dl, expr_set, "nftnl_expr_set"),
        DL_SYM(struct nftnl_dl, expr_set_u32, "nftnl_expr_set_u32"),
        DL_SYM(struct nftnl_dl, expr_set_str, "nftnl_expr_set_str"),
};

static void load(void)
{
        why = dl_load(NFTNL_SONAME, "libnftnl11", syms, sizeof(syms) / sizeof(syms[0]), &api,
                      why_text, sizeof(why_text));
        if (!why)
                loaded = &api;
}

const struct nftnl_dl *nftnl_dl(const char **ret_why)
{
        (void)pthread_once(&once, load);
        if (ret_why)
                *ret_why = why;
        return loaded;
}
