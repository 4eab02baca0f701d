/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libnftables, loaded on first use (dlopen), so that a command that never touches a listed
 * thread's firewall — `b4box version`, a warm `b4box exec` — does not load it and the four
 * libraries it pulls in (libnftnl, libmnl, libxtables, libgmp).
 */

#include <nftables/libnftables.h>

struct nft_dl {
        __typeof__(nft_ctx_new) *ctx_new;
        __typeof__(nft_ctx_free) *ctx_free;
        __typeof__(nft_ctx_buffer_output) *buffer_output;
        __typeof__(nft_ctx_buffer_error) *buffer_error;
        __typeof__(nft_ctx_get_error_buffer) *get_error_buffer;
        __typeof__(nft_ctx_get_output_buffer) *get_output_buffer;
        __typeof__(nft_ctx_set_dry_run) *set_dry_run;
        __typeof__(nft_run_cmd_from_buffer) *run_cmd_from_buffer;
};

/* The library's calls, loaded once per process (thread-safe); NULL when it cannot be loaded,
 * with the reason in *ret_why (static text) when @ret_why is not NULL. */
const struct nft_dl *nft_dl(const char **ret_why);
