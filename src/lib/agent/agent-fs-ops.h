/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One agent-backed struct b4_fs_ops for every provider that forwards file operations to
 * b4box-agent (Docker's keepers and readers, Kubernetes' keepers and readers): each member
 * asks the provider for "the agent connection of this fs", sends the call over it, and hands
 * the answer back, or hands the call to the provider's fallback members when there is no
 * agent or the provider says the agent's answer is one its fallback serves instead.
 *
 * A provider defines one const struct agent_fs_ops per kind of fs and points b4_fs.ops at
 * its .ops member (b4_sandbox_init / b4_reader_init take &table.ops): the members find the
 * table again from fs->ops. Fill .ops with the member groups below; a group left out is
 * NULL (the wrappers answer -EOPNOTSUPP), as readers leave out the writes.
 */

#include <stdbool.h>

#include "b4box/error.h"
#include "b4box/provider-impl.h"

struct agent_conn;

enum agent_fs_op {
        AGENT_FS_READ_FILE,
        AGENT_FS_LSTAT,
        AGENT_FS_STAT,
        AGENT_FS_LIST_DIR,
        AGENT_FS_REALPATH,
        AGENT_FS_WALK,
        AGENT_FS_READ_FILES,
        AGENT_FS_WRITE_FILE,
        AGENT_FS_MKDIR_P,
        AGENT_FS_REMOVE,
        AGENT_FS_TOUCH,
        AGENT_FS_SYMLINK,
        AGENT_FS_CHMOD,
};

struct agent_fs_ops {
        struct b4_fs_ops ops; /* b4_fs.ops points here */
        /* The agent connection serving @fs, stable for the call (the caller holds the lease
         * that keeps it): 1 with *ret set; 0 when @fs has no agent (@fallback serves the
         * call); -errno with @err set (returned as it is: core recovers -ENOTCONN). */
        int (*conn)(struct b4_fs *fs, struct agent_conn **ret, struct b4_error *err);
        /* Optional: the members serving @fs without an agent, and those calls for which
         * @falls_back(op, r) says the agent's answer r is the fallback's to give instead
         * (Docker: -EIO, the agent could not start the request). A NULL member there: the
         * call fails -EOPNOTSUPP. */
        const struct b4_fs_ops *fallback;
        bool (*falls_back)(enum agent_fs_op op, int r);
};

int agent_fs_read_file(struct b4_fs *fs,
                       const char *path,
                       unsigned flags,
                       uint64_t max_bytes,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err);
int agent_fs_lstat(struct b4_fs *fs, const char *path, struct b4_stat *ret, struct b4_error *err);
int agent_fs_stat(struct b4_fs *fs,
                  const char *path,
                  unsigned flags,
                  struct b4_stat *ret,
                  struct b4_error *err);
int agent_fs_list_dir(
        struct b4_fs *fs, const char *path, unsigned flags, char ***ret, struct b4_error *err);
int agent_fs_realpath(struct b4_fs *fs, const char *path, char **ret, struct b4_error *err);
int agent_fs_walk(struct b4_fs *fs,
                  const char *path,
                  size_t max_entries,
                  char *const *prune,
                  struct b4_walk_entry **ret,
                  size_t *ret_n,
                  struct b4_error *err);
/* A batch larger than one agent request is sent as several, their answers joined in
 * order. */
int agent_fs_read_files(struct b4_fs *fs,
                        const struct b4_read_req *reqs,
                        size_t n,
                        struct b4_blob **ret,
                        struct b4_error *err);
int agent_fs_write_file(struct b4_fs *fs,
                        const char *path,
                        unsigned flags,
                        const void *data,
                        size_t len,
                        struct b4_error *err);
int agent_fs_mkdir_p(struct b4_fs *fs, const char *path, struct b4_error *err);
int agent_fs_remove(struct b4_fs *fs, const char *path, struct b4_error *err);
int agent_fs_touch(struct b4_fs *fs, const char *path, unsigned flags, struct b4_error *err);
int agent_fs_symlink(struct b4_fs *fs, const char *target, const char *path, struct b4_error *err);
int agent_fs_chmod(struct b4_fs *fs, const char *path, uint32_t mode, struct b4_error *err);

/* The reads (a reader's whole table). */
#define AGENT_FS_READ_MEMBERS                                                         \
 .read_file = agent_fs_read_file, .lstat = agent_fs_lstat, .stat = agent_fs_stat,     \
 .list_dir = agent_fs_list_dir, .realpath = agent_fs_realpath, .walk = agent_fs_walk, \
 .read_files = agent_fs_read_files
/* The required writes. */
#define AGENT_FS_WRITE_MEMBERS                                                              \
 .write_file = agent_fs_write_file, .mkdir_p = agent_fs_mkdir_p, .remove = agent_fs_remove, \
 .touch = agent_fs_touch
/* The optional writes. */
#define AGENT_FS_LINK_MEMBERS .symlink = agent_fs_symlink, .chmod = agent_fs_chmod
