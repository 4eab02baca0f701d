/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Loading a library's calls through dlopen, for nft-dl.c and nftnl-dl.c (each says why). */

#include <stddef.h>

struct dl_sym {
        const char *name; /* the symbol */
        size_t offset;    /* where its function pointer goes in the caller's table */
};

#define DL_SYM(type, field, symbol) \
 {                                  \
  symbol, offsetof(type, field)     \
 }

/*
 * dl_load() - dlopen @soname (RTLD_NOW | RTLD_LOCAL; the handle stays open for the process's
 * life) and store each of @syms (@n) at its offset in @table.
 * Return: NULL, or why not in @why (@why_size bytes, naming @soname, and @package when the
 * library is missing); @table is then untouched and the library closed.
 */
const char *dl_load(const char *soname,
                    const char *package,
                    const struct dl_sym *syms,
                    size_t n,
                    void *table,
                    char *why,
                    size_t why_size);
