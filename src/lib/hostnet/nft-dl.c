/* SPDX-License-Identifier: Apache-2.0 */
/* libnftables through dlopen (nft-dl.h says why). */

#include "nft-dl.h"

#include <pthread.h>
#include <stddef.h>

#include "dl-load.h"

#define NFT_SONAME "libnftables.so.1"

static struct nft_dl api;
static const struct nft_dl *loaded;
static const char *why;
static char why_text[128];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct dl_sym syms[] = {
        DL_SYM(struct nft_dl, ctx_new, "nft_ctx_new"),
        DL_SYM(struct nft_dl, ctx_free, "nft_ctx_free"),
        DL_SYM(struct nft_dl, buffer_output, "nft_ctx_buffer_output"),
        DL_SYM(struct nft_dl, buffer_error, "nft_ctx_buffer_error"),
        DL_SYM(struct nft_dl, get_error_buffer, "nft_ctx_get_error_buffer"),
        DL_SYM(struct nft_dl, get_output_buffer, "nft_ctx_get_output_buffer"),
        DL_SYM(struct nft_dl, set_dry_run, "nft_ctx_set_dry_run"),
        DL_SYM(struct nft_dl, run_cmd_from_buffer, "nft_run_cmd_from_buffer"),
};

static void load(void)
{
        why = dl_load(NFT_SONAME, "libnftables1", syms, sizeof(syms) / sizeof(syms[0]), &api,
                      why_text, sizeof(why_text));
        if (!why)
                loaded = &api;
}

const struct nft_dl *nft_dl(const char **ret_why)
{
        (void)pthread_once(&once, load);
        if (ret_why)
                *ret_why = why;
        return loaded;
}
