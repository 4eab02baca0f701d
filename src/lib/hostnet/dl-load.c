/* SPDX-License-Identifier: Apache-2.0 */
/* dl_load() (dl-load.h). */

#include "dl-load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const char *dl_load(const char *soname,
                    const char *package,
                    const struct dl_sym *syms,
                    size_t n,
                    void *table,
                    char *why,
                    size_t why_size)
{
        void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        void *ptrs[64];

        if (!h) {
                (void)snprintf(why, why_size, "%s cannot be loaded (is %s installed?)", soname,
                               package);
                return why;
        }
        for (size_t i = 0; i < n; i++)
                if (i >= sizeof(ptrs) / sizeof(ptrs[0]) || !(ptrs[i] = dlsym(h, syms[i].name))) {
                        (void)snprintf(why, why_size, "%s lacks a call b4box uses", soname);
                        (void)dlclose(h);
                        return why;
                }
        for (size_t i = 0; i < n; i++) /* POSIX: a dlsym() result converts to a function pointer */
                memcpy((char *)table + syms[i].offset, &ptrs[i], sizeof(ptrs[i]));
        return NULL;
}
