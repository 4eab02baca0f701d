/* SPDX-License-Identifier: Apache-2.0 */
/* libnftables through dlopen (nft-dl.h says why). */

#include "nft-dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define NFT_SONAME "libnftables.so.1"

static struct nft_dl api;
static const struct nft_dl *loaded;
static const char *why;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(void *h, const char *name, bool *ok)
{
        void *p = dlsym(h, name);

        *ok &= p != NULL;
        return p;
}

static void load(void)
{
        void *h = dlopen(NFT_SONAME, RTLD_NOW | RTLD_LOCAL);
        bool ok = true;

        if (!h) {
                why = NFT_SONAME " cannot be loaded (is libnftables1 installed?)";
                return;
        }
        api.ctx_new = sym(h, "nft_ctx_new", &ok);
        api.ctx_free = sym(h, "nft_ctx_free", &ok);
        api.buffer_output = sym(h, "nft_ctx_buffer_output", &ok);
        api.buffer_error = sym(h, "nft_ctx_buffer_error", &ok);
        api.get_error_buffer = sym(h, "nft_ctx_get_error_buffer", &ok);
        api.get_output_buffer = sym(h, "nft_ctx_get_output_buffer", &ok);
        api.set_dry_run = sym(h, "nft_ctx_set_dry_run", &ok);
        api.run_cmd_from_buffer = sym(h, "nft_run_cmd_from_buffer", &ok);
        if (!ok) {
                why = NFT_SONAME " lacks a call b4box uses";
                (void)dlclose(h);
                return;
        }
        loaded = &api; /* the handle stays open for the process's life */
}

const struct nft_dl *nft_dl(const char **ret_why)
{
        (void)pthread_once(&once, load);
        if (ret_why)
                *ret_why = why;
        return loaded;
}
