/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host id blocks (audit M6, L4): as root, every thread's user namespace maps its ids
 * 0..65535 to a block of host ids of its own, so the sandbox's root is an unprivileged nobody
 * on the host, two sandboxes never share a host uid, and the workspace's files belong to the
 * thread's block on the host. A thread's block is recorded in the state dir
 * (native/ids/<id>, the host base as decimal text) and kept until the thread is destroyed, so
 * its workspace keeps its owners across releases and restarts.
 *
 * Blocks come from the configured range (sandbox.provider.idRange). A block is also claimed
 * host-wide, as a symlink /run/b4box/ids/<base> -> "<native dir>/<id>", so two state dirs
 * on one host never hand out the same block: a block claimed for another owner is skipped
 * when allocating, and refused (with the way out) when a recorded block turns out to be
 * claimed by someone else, e.g. after a reboot emptied /run. Allocation is serialised by an
 * flock on native/ids, which the server and local CLI commands share.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strv.h"
#include "native.h"

#define CLAIM_DIR "/run/b4box/ids"

static int claims_open(void)
{
        if (mkdir("/run/b4box", 0700) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(CLAIM_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = open(CLAIM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

static int owner_key(const struct native_provider *np, const char *id, char **ret)
{
        return b4_asprintf(ret, "%s/%s", np->real_dir, id) < 0 ? -ENOMEM : 0;
}

/* A claim whose owner's native dir is gone (its state dir was removed without destroying
 * its threads, as a test or an operator may) holds nothing any more. */
static bool claim_is_stale(const char *owner)
{
        const char *slash = strrchr(owner, '/');
        char dir[4096];
        struct stat st;

        if (!slash || slash == owner || (size_t)(slash - owner) >= sizeof(dir))
                return false;
        memcpy(dir, owner, (size_t)(slash - owner));
        dir[slash - owner] = '\0';
        return lstat(dir, &st) < 0 && errno == ENOENT;
}

/* Claim @base for @key. 0: ours (now or already), -EBUSY: someone else's. */
static int claim(int claims_fd, uint32_t base, const char *key)
{
        char name[16], other[4096];
        ssize_t n;

        (void)snprintf(name, sizeof(name), "%" PRIu32, base);
        for (int tries = 0; tries < 2; tries++) {
                if (symlinkat(key, claims_fd, name) == 0)
                        return 0;
                if (errno != EEXIST)
                        return -errno;
                n = readlinkat(claims_fd, name, other, sizeof(other) - 1);
                if (n < 0)
                        return -errno;
                other[n] = '\0';
                if (strcmp(other, key) == 0)
                        return 0;
                if (!claim_is_stale(other) || unlinkat(claims_fd, name, 0) < 0)
                        return -EBUSY;
        }
        return -EBUSY;
}

static void unclaim(int claims_fd, uint32_t base, const char *key)
{
        char name[16], other[4096];
        ssize_t n;

        (void)snprintf(name, sizeof(name), "%" PRIu32, base);
        n = readlinkat(claims_fd, name, other, sizeof(other) - 1);
        if (n < 0)
                return;
        other[n] = '\0';
        if (strcmp(other, key) == 0)
                (void)unlinkat(claims_fd, name, 0);
}

static int record_read(int ids_fd, const char *id, uint32_t *ret)
{
        cleanup_free char *buf = NULL;
        size_t len;
        uint64_t v;
        int r;

        r = read_file_at(ids_fd, id, 32, &buf, &len);
        if (r < 0)
                return r;
        if (len > 0 && buf[len - 1] == '\n')
                buf[len - 1] = '\0';
        if (safe_atou64(buf, &v) < 0 || v == 0 || v > UINT32_MAX - IDMAP_BLOCK)
                return -EBADMSG;
        *ret = (uint32_t)v;
        return 0;
}

static int record_write(int ids_fd, const char *id, uint32_t base)
{
        char buf[16];

        (void)snprintf(buf, sizeof(buf), "%" PRIu32 "\n", base);
        return write_file_atomic_at(ids_fd, id, buf, strlen(buf), 0600);
}

/* Whether a block of this state dir already holds @base (after a reboot its claim is gone). */
static bool recorded(int ids_fd, uint32_t base)
{
        cleanup_close int fd = fcntl(ids_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        bool found = false;
        uint32_t b;

        if (!d)
                return false;
        fd = -EBADF; /* the DIR owns it */
        while (!found && (de = readdir(d)))
                found = de->d_name[0] != '.' && record_read(ids_fd, de->d_name, &b) >= 0 &&
                        b == base;
        (void)closedir(d);
        return found;
}

static int allocate(
        struct native_provider *np, int claims_fd, const char *id, const char *key, uint32_t *ret)
{
        uint32_t blocks = np->id_size / IDMAP_BLOCK;
        char hid[41];

        /* Probe from a point of our own, so state dirs rarely contend for the same blocks. */
        native_host_id(np, id, hid);
        uint32_t start = (uint32_t)strtoul(
                (char[7]){ hid[0], hid[1], hid[2], hid[3], hid[4], hid[5], 0 }, NULL, 16);
        for (uint32_t k = 0; k < blocks; k++) {
                uint32_t base = np->id_start + ((start + k) % blocks) * IDMAP_BLOCK;
                if (recorded(np->ids_fd, base))
                        continue;
                int r = claim(claims_fd, base, key);
                if (r == -EBUSY)
                        continue;
                if (r < 0)
                        return r;
                r = record_write(np->ids_fd, id, base);
                if (r < 0) {
                        unclaim(claims_fd, base, key);
                        return r;
                }
                *ret = base;
                return 0;
        }
        return -ENOSPC;
}

int idmap_get(struct native_provider *np,
              const char *id,
              bool create,
              uint32_t *ret_base,
              struct b4_error *err)
{
        cleanup_free char *key = NULL;
        cleanup_close int claims_fd = -EBADF;
        uint32_t base;
        int r;

        r = record_read(np->ids_fd, id, &base);
        if (r < 0 && r != -ENOENT)
                return b4_error_set(err, r, "the host id record native/ids/%s is unreadable", id);
        if (r == -ENOENT && !create)
                return r;
        if (owner_key(np, id, &key) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        claims_fd = claims_open();
        if (claims_fd < 0)
                return b4_error_set(err, claims_fd, "cannot open %s", CLAIM_DIR);
        while (flock(np->ids_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return b4_error_set(err, -errno, "cannot lock native/ids");
        if (r == -ENOENT)
                r = record_read(np->ids_fd, id, &base); /* another process may have won */
        if (r == -ENOENT) {
                r = allocate(np, claims_fd, id, key, &base);
                if (r == -ENOSPC)
                        b4_error_set(err, r,
                                     "no free block of host ids in sandbox.provider.idRange "
                                     "(%" PRIu32 " blocks of %u from %" PRIu32
                                     "): destroy threads or widen the range",
                                     np->id_size / IDMAP_BLOCK, IDMAP_BLOCK, np->id_start);
                else if (r < 0)
                        b4_error_set(err, r, "cannot allocate host ids");
        } else if (r >= 0 && (r = claim(claims_fd, base, key)) < 0) {
                b4_error_set(err, r,
                             r == -EBUSY ? "host ids %" PRIu32
                                           "+65536 of this thread are claimed by another "
                                           "state dir on this host (see " CLAIM_DIR
                                           "); give each state dir its own "
                                           "sandbox.provider.idRange"
                                         : "cannot claim host ids %" PRIu32,
                             base);
        }
        (void)flock(np->ids_fd, LOCK_UN);
        if (r < 0)
                return r;
        *ret_base = base;
        return 0;
}

/* The id a claim link's text names when it is one of this state dir's, else NULL. */
static const char *claim_owner(const struct native_provider *np, const char *target)
{
        size_t n = strlen(np->real_dir);

        if (strncmp(target, np->real_dir, n) != 0 || target[n] != '/' || !target[n + 1] ||
            strchr(target + n + 1, '/'))
                return NULL;
        return target + n + 1;
}

/* Visit every claim of this state dir: @fn(claims_fd, name, id, ud); nonzero stops. */
static int for_each_claim(const struct native_provider *np,
                          int claims_fd,
                          int (*fn)(int claims_fd, const char *name, const char *id, void *ud),
                          void *ud)
{
        cleanup_close int fd = fcntl(claims_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        char target[4096];
        int r = 0;

        if (!d)
                return -errno;
        fd = -EBADF; /* the DIR owns it */
        while (r == 0 && (de = readdir(d))) {
                ssize_t n = readlinkat(claims_fd, de->d_name, target, sizeof(target) - 1);
                if (n <= 0)
                        continue;
                target[n] = '\0';
                const char *id = claim_owner(np, target);
                if (id)
                        r = fn(claims_fd, de->d_name, id, ud);
        }
        (void)closedir(d);
        return r < 0 ? r : 0;
}

static int unclaim_cb(int claims_fd, const char *name, const char *id, void *ud)
{
        if (strcmp(id, ud) == 0)
                (void)unlinkat(claims_fd, name, 0);
        return 0;
}

void idmap_forget(struct native_provider *np, const char *id)
{
        cleanup_free char *key = NULL;
        cleanup_close int claims_fd = claims_open();
        uint32_t base;

        if (record_read(np->ids_fd, id, &base) >= 0) {
                if (claims_fd >= 0 && owner_key(np, id, &key) >= 0)
                        unclaim(claims_fd, base, key);
                (void)unlinkat(np->ids_fd, id, 0);
        } else if (claims_fd >= 0) { /* a crash between claiming a block and recording it */
                (void)for_each_claim(np, claims_fd, unclaim_cb, (void *)id);
        }
}

static int collect_cb(int claims_fd, const char *name, const char *id, void *ud)
{
        return strv_extend(ud, id);
}

int idmap_claimed_ids(struct native_provider *np, char ***ret)
{
        cleanup_close int claims_fd = -EBADF;

        if (access(CLAIM_DIR, F_OK) < 0)
                return 0; /* never claimed anything on this boot */
        claims_fd = claims_open();
        if (claims_fd < 0)
                return claims_fd;
        return for_each_claim(np, claims_fd, collect_cb, ret);
}

static const char *userns_why;
static bool userns_ok;
static pthread_once_t userns_once = PTHREAD_ONCE_INIT;

static void userns_probe(void)
{
        cleanup_free char *v = NULL;
        size_t len;
        int status;
        pid_t pid;

        if (read_file_at(AT_FDCWD, "/proc/sys/user/max_user_namespaces", 64, &v, &len) >= 0 &&
            v[0] == '0' && (len == 1 || v[1] == '\n')) {
                userns_why = "user.max_user_namespaces = 0";
        } else if ((pid = fork()) == 0) {
                _exit(unshare(CLONE_NEWUSER) < 0 ? 1 : 0);
        } else if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
                   WEXITSTATUS(status) != 0) {
                userns_why = "this kernel refuses a new user namespace (a container or a "
                             "security module?)";
        }
        userns_ok = !userns_why;
}

bool idmap_userns_works(const char **ret_why)
{
        (void)pthread_once(&userns_once, userns_probe);
        if (ret_why)
                *ret_why = userns_why;
        return userns_ok;
}

bool native_userns(const struct native_provider *np)
{
        return !np->rootless && idmap_userns_works(NULL);
}

bool idmap_recorded(const struct native_provider *np, const char *id)
{
        return faccessat(np->ids_fd, id, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}
