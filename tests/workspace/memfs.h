/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * An in-memory struct b4_fs for the inspection tests: files (with an executable bit),
 * directories, symlinks and "other" entries under /workspace, a walk that answers in
 * reverse storage order (the inspection must sort), a batched read that first runs an
 * injectable writer (to race the inspection), and call counters.
 */

#include <stdbool.h>
#include <stddef.h>

#include "b4box/provider.h"

struct memfs;
typedef void memfs_hook(struct memfs *m, void *userdata);

struct memfs {
        struct b4_fs fs;
        struct mnode *v;
        size_t n;
        memfs_hook *before_read; /* runs at the start of read_files */
        void *hook_data;
        unsigned walks, batch_reads, lstats, lists, reads;
        bool dup_walk; /* the walk reports its first entry twice */
};

/* @batched: offer walk + read_files; otherwise the generic fallbacks are used. */
struct memfs *memfs_new(bool batched);
void memfs_free(struct memfs *m);
/* Add (or replace) entries; @path relative to /workspace. Parents are not implied. */
void memfs_dir(struct memfs *m, const char *path);
void memfs_file(struct memfs *m, const char *path, const char *data, size_t len, bool exec);
void memfs_text(struct memfs *m, const char *path, const char *text);
void memfs_link(struct memfs *m, const char *path, const char *target);
void memfs_other(struct memfs *m, const char *path);
void memfs_del(struct memfs *m, const char *path);
