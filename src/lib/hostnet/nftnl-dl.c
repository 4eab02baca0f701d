/* SPDX-License-Identifier: Apache-2.0 */
/* libnftnl through dlopen (nftnl-dl.h says why). */

#include "nftnl-dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define NFTNL_SONAME "libnftnl.so.11"

static struct nftnl_dl api;
static const struct nftnl_dl *loaded;
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
        void *h = dlopen(NFTNL_SONAME, RTLD_NOW | RTLD_LOCAL);
        bool ok = true;

        if (!h) {
                why = NFTNL_SONAME " cannot be loaded (is libnftnl11 installed?)";
                return;
        }
        api.set_alloc = sym(h, "nftnl_set_alloc", &ok);
        api.set_free = sym(h, "nftnl_set_free", &ok);
        api.set_set_str = sym(h, "nftnl_set_set_str", &ok);
        api.set_set_u32 = sym(h, "nftnl_set_set_u32", &ok);
        api.elem_alloc = sym(h, "nftnl_set_elem_alloc", &ok);
        api.elem_free = sym(h, "nftnl_set_elem_free", &ok);
        api.elem_set = sym(h, "nftnl_set_elem_set", &ok);
        api.elem_set_u32 = sym(h, "nftnl_set_elem_set_u32", &ok);
        api.elem_set_str = sym(h, "nftnl_set_elem_set_str", &ok);
        api.elem_add = sym(h, "nftnl_set_elem_add", &ok);
        api.nlmsg_build_hdr = sym(h, "nftnl_nlmsg_build_hdr", &ok);
        api.elems_build_payload = sym(h, "nftnl_set_elems_nlmsg_build_payload", &ok);
        api.batch_begin = sym(h, "nftnl_batch_begin", &ok);
        api.batch_end = sym(h, "nftnl_batch_end", &ok);
        if (!ok) {
                why = NFTNL_SONAME " lacks a call b4box uses";
                (void)dlclose(h);
                return;
        }
        loaded = &api; /* the handle stays open for the process's life */
}

const struct nftnl_dl *nftnl_dl(const char **ret_why)
{
        (void)pthread_once(&once, load);
        if (ret_why)
                *ret_why = why;
        return loaded;
}
