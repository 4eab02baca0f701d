/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native provider's state directory, below everything that uses it (provider.c,
 * thread.c, sandbox.c, sweep.c): the provider object's lifetime (handles keep it), the host
 * id of a thread's host-global objects, the owner records and the removal of a workspace.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/rm-rf.h"
#include "base/strv.h"
#include "native.h"

void native_host_id(const struct native_provider *np, const char *id, char ret[41])
{
        char hex[SHA256_HEX_LEN + 1];
        struct sha256_ctx *c = sha256_new();

        if (!c) { /* OOM: fall back to the id itself, still deterministic */
                (void)snprintf(ret, 41, "%s", id);
                return;
        }
        sha256_update(c, np->real_dir, strlen(np->real_dir));
        sha256_update(c, "/", 1);
        sha256_update(c, id, strlen(id));
        sha256_final_hex(c, hex);
        memcpy(ret, hex, 40);
        ret[40] = '\0';
}

struct native_provider *native_provider_ref(struct native_provider *np)
{
        atomic_fetch_add(&np->refs, 1);
        return np;
}

void native_provider_unref(struct native_provider *np)
{
        if (!np || atomic_fetch_sub(&np->refs, 1) != 1)
                return;
        cgroup_host_release(&np->cg);
        safe_close(np->run_fd);
        safe_close(np->ws_fd);
        safe_close(np->ids_fd);
        safe_close(np->owners_fd);
        safe_close(np->disks_fd);
        safe_close(np->exe_fd);
        free(np->bpf);
        native_image_unref(np->image);
        free(np->image_cfg);
        strv_free(np->images);
        free(np->state_dir);
        free(np->native_dir);
        free(np->run_dir);
        free(np->ws_dir);
        free(np->stage_dir);
        free(np->real_dir);
        free(np->p.scope);
        free(np);
}

int native_record_write(int dirfd, const char *name, const char *text)
{
        char tmp[80];
        cleanup_close int fd = -EBADF;
        int r;

        if (snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid()) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, text, strlen(text));
        if (r >= 0)
                r = RET_NERRNO(renameat(dirfd, tmp, dirfd, name));
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

int native_owner_mark(struct native_provider *np, const char *id)
{
        const char *scope = np->p.scope;
        cleanup_free char *have = NULL;
        size_t len;

        if (read_file_at(np->owners_fd, id, 4096, &have, &len) >= 0 && len == strlen(scope) &&
            memcmp(have, scope, len) == 0)
                return 0;
        return native_record_write(np->owners_fd, id, scope);
}

bool native_owner_is_ours(struct native_provider *np, const char *id)
{
        cleanup_free char *have = NULL;
        size_t len;

        return read_file_at(np->owners_fd, id, 4096, &have, &len) >= 0 &&
               len == strlen(np->p.scope) && memcmp(have, np->p.scope, len) == 0;
}

int native_remove_storage(struct native_provider *np, const char *id)
{
        int r;

        disk_remove(np, id);
        r = rm_rf_at(np->ws_fd, id);
        if (r >= 0) {
                idmap_forget(np, id);
                (void)unlinkat(np->owners_fd, id, 0);
        }
        return r;
}
