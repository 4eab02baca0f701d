/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep (b4_provider_sweep()): after a crash, remove what this state dir holds for
 * threads that no longer exist, found by resource id in the state dir itself:
 *   run/<id>.{host,keeper,sock,lock,net}, workspaces/<id> (and .<id>.rm* leftovers of an
 *   interrupted removal), ids/<id>, disks/<id>.img, and the host-wide id claims that name
 *   this state dir.
 * Host-global objects (cgroups, veth, rules, subnet claims) are named by the host id and so
 * cannot be told apart by scanning; they are reached through the intent record run/<id>.host
 * that thread.c writes before making any of them. A dead thread loses its keeper, cgroups,
 * network, disk image, workspace, id block and records (native_thread_stop_id(),
 * native_remove_storage()), but storage only when native/owners/<id> says it was made for
 * this scope (or a start was cut short): see sweep_one(). A
 * live thread keeps its workspace and a keeper that can be adopted; a keeper that cannot (a
 * crash between spawn and record, or one that died) is stopped and its cgroups removed.
 * Stale temp files of interrupted record writes (.<name>.tmp) go as well.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/strv.h"
#include "native.h"

#define ID_LEN 40

static bool is_id(const char *s, size_t len)
{
        if (len != ID_LEN)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The resource id a state-dir entry belongs to: "<id>", "<id>.<ext>" or ".<id>.rm<n>". */
static bool entry_id(const char *name, char ret[ID_LEN + 1])
{
        const char *s = name[0] == '.' ? name + 1 : name;
        const char *end = strchr(s, '.');
        size_t len = end ? (size_t)(end - s) : strlen(s);

        if (!is_id(s, len) || (name[0] == '.' && (!end || strncmp(end, ".rm", 3) != 0)))
                return false;
        memcpy(ret, s, ID_LEN);
        ret[ID_LEN] = '\0';
        return true;
}

static bool is_stale_tmp(const char *name)
{
        return name[0] == '.' && has_suffix(name, ".tmp");
}

/* Add the id of every entry of @dirfd to @ids; unlink stale temp files on the way. */
static int scan_dir(int dirfd, char ***ids)
{
        int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        char id[ID_LEN + 1];
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = -errno;
                safe_close(fd);
                return r;
        }
        while (r >= 0 && (de = readdir(d))) {
                if (is_stale_tmp(de->d_name))
                        (void)unlinkat(dirfd, de->d_name, 0);
                else if (entry_id(de->d_name, id))
                        r = strv_extend(ids, id);
        }
        (void)closedir(d);
        return r;
}

static int collect(struct native_provider *np, char ***ret)
{
        cleanup_strv char **ids = NULL;
        int r;

        r = scan_dir(np->run_fd, &ids);
        if (r >= 0)
                r = scan_dir(np->ws_fd, &ids);
        if (r >= 0)
                r = scan_dir(np->ids_fd, &ids);
        if (r >= 0)
                r = scan_dir(np->owners_fd, &ids);
        if (r >= 0 && np->disks_fd >= 0)
                r = scan_dir(np->disks_fd, &ids);
        if (r >= 0 && native_userns(np))
                r = idmap_claimed_ids(np, &ids);
        if (r < 0)
                return r;
        strv_sort(ids);
        *ret = TAKE_PTR(ids);
        return 0;
}

static int live_set(struct native_provider *np, char *const *live, struct hashmap **ret)
{
        struct hashmap *m = hashmap_new();
        char id[ID_LEN + 1];

        if (!m)
                return -ENOMEM;
        for (size_t i = 0; live[i]; i++) {
                int r = b4_resource_id(np->p.scope, live[i], id);
                if (r >= 0)
                        r = hashmap_put(m, id, m);
                if (r < 0 && r != -EINVAL) { /* an id no thread can have owns nothing */
                        hashmap_free(m);
                        return r;
                }
        }
        *ret = m;
        return 0;
}

/* Whether this process holds a keeper for @id (never swept from under a user). */
static int live_with_id(const char *thread_id, void *state, void *userdata)
{
        struct native_thread *t = state;
        bool live;

        (void)pthread_mutex_lock(&t->cg_lock);
        live = t->live;
        (void)pthread_mutex_unlock(&t->cg_lock);
        return live && strcmp(t->id, userdata) == 0;
}

static bool held_here(struct native_provider *np, const char *id)
{
        return b4_provider_foreach_state(&np->p, live_with_id, (void *)id) > 0;
}

static bool run_file_exists(struct native_provider *np, const char *id, const char *suffix)
{
        char name[64];

        (void)snprintf(name, sizeof(name), "%s%s", id, suffix);
        return faccessat(np->run_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A live thread's compute that cannot be adopted: intent or record, but no verified keeper. */
static bool has_stray_compute(struct native_provider *np, const char *id)
{
        struct keeper_record rec;
        int pidfd = -EBADF;

        if (!run_file_exists(np, id, NATIVE_INTENT_SUFFIX) && !run_file_exists(np, id, ".keeper"))
                return false;
        if (keeper_record_read(np->run_fd, id, &rec) >= 0 && keeper_verify(&rec, &pidfd) >= 0) {
                safe_close(pidfd);
                return false;
        }
        return true;
}

/* Remove everything of @id (@dead) or only its stray compute. Return: 1 swept, 0, -errno. */
static int sweep_one(struct native_provider *np, const char *id, bool dead)
{
        cleanup_close int lock_fd = -EBADF;
        char name[64];
        int r;

        if (held_here(np, id) || (!dead && !has_stray_compute(np, id)))
                return 0;
        r = native_thread_flock(np, id, &lock_fd);
        if (r < 0)
                return r;
        /* Storage goes only with proof it is this scope's: its owner record, or the intent of
         * a start cut short. A workspace of another scope (the config's scope changed) or of
         * a b4box before owner records keeps its data; only its compute is stopped. With no
         * workspace left there is nothing to keep: its records and lock go. */
        bool ours = native_owner_is_ours(np, id) || run_file_exists(np, id, NATIVE_INTENT_SUFFIX) ||
                    faccessat(np->ws_fd, id, F_OK, AT_SYMLINK_NOFOLLOW) < 0; /* no data left */
        native_thread_stop_id(np, id, -EBADF);
        if (!dead || !ours)
                return 1;
        r = native_remove_storage(np, id);
        if (r < 0)
                return r;
        (void)snprintf(name, sizeof(name), "%s.lock", id);
        (void)unlinkat(np->run_fd, name, 0); /* held: nobody else can be waiting on it */
        return 1;
}

int native_sweep(struct b4_provider *p, char *const *live_thread_ids, struct b4_error *err)
{
        struct native_provider *np = (struct native_provider *)p;
        cleanup_strv char **ids = NULL;
        struct hashmap *live = NULL;
        int swept = 0, first = 0;
        int r;

        r = live_set(np, live_thread_ids, &live);
        if (r >= 0)
                r = collect(np, &ids);
        if (r < 0) {
                hashmap_free(live);
                return b4_error_set(err, r, "cannot scan '%s' for leftovers", np->native_dir);
        }
        for (size_t i = 0; ids && ids[i]; i++) {
                if (i > 0 && strcmp(ids[i], ids[i - 1]) == 0)
                        continue;
                r = sweep_one(np, ids[i], !hashmap_get(live, ids[i]));
                if (r > 0)
                        swept++;
                if (r < 0 && first == 0) /* the first failure is reported; the rest go on */
                        first = b4_error_set(err, r, "cannot remove the leftovers of sandbox %s",
                                             ids[i]);
        }
        hashmap_free(live);
        struct hostnet hn = native_hostnet(np);
        hostnet_sweep(&hn); /* teardowns a crash cut short (run/.netgone-*) */
        return first < 0 ? first : swept;
}
