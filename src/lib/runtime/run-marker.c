/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interrupted runs (docs/http-api.md "Interrupted runs"): a run holds a marker,
 * <state>/runs/<sha256 of the thread id>, locked (flock) and holding its start time, from
 * b4_runtime_run_begin() to b4_run_end(), which removes it. A process that dies in between
 * (a server crash, kill -9) leaves the marker unlocked and not empty: the thread's next run
 * finds it and reports the interrupted run's start time. A marker another live process holds
 * (a concurrent local command) is left alone. A file write and an unlink per run, no fsync:
 * a process crash leaves the page cache, so the marker survives it; a machine crash loses at
 * most the report.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "runtime-internal.h"
#include "store/store.h"

#define MARKER_DIR "runs"

static void marker_name(const char *thread_id, char name[SHA256_HEX_LEN + sizeof(MARKER_DIR) + 1])
{
        char hex[SHA256_HEX_LEN + 1];

        sha256_hex(thread_id, strlen(thread_id), hex);
        (void)snprintf(name, SHA256_HEX_LEN + sizeof(MARKER_DIR) + 1, MARKER_DIR "/%s", hex);
}

/* The start time an unfinished marker in @fd records, or 0. */
static int64_t read_started(int fd)
{
        char buf[32] = { 0 };
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        long long v = 0;

        if (n <= 0 || sscanf(buf, "%lld", &v) != 1 || v <= 0)
                return 0;
        return (int64_t)v;
}

int run_marker_begin(struct b4_runtime *rt, struct b4_run *run)
{
        char name[SHA256_HEX_LEN + sizeof(MARKER_DIR) + 1], text[32];
        int dfd = b4_store_dir_fd(rt->opts.store);
        cleanup_close int fd = -EBADF;
        int n;

        marker_name(run->thread_id, name);
        fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == ENOENT && mkdirat(dfd, MARKER_DIR, 0700) >= 0)
                fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return 0; /* a live process runs on this thread: its marker, not ours */
        run->interrupted_ms = read_started(fd);
        n = snprintf(text, sizeof(text), "%lld\n", (long long)realtime_msec());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n)
                return -errno;
        run->marker_fd = TAKE_FD(fd);
        return 0;
}

void run_marker_end(struct b4_runtime *rt, struct b4_run *run)
{
        char name[SHA256_HEX_LEN + sizeof(MARKER_DIR) + 1];

        if (run->marker_fd < 0)
                return;
        marker_name(run->thread_id, name);
        (void)unlinkat(b4_store_dir_fd(rt->opts.store), name, 0); /* still locked: ours */
        run->marker_fd = safe_close(run->marker_fd);
}

int64_t b4_run_interrupted_ms(const struct b4_run *run)
{
        return run->interrupted_ms;
}
