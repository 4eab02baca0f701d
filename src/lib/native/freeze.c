/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Freezing a thread, for consistent reads (docs/inspect.md) and for pause/resume
 * (b4_provider_pause()): every process in the thread's cgroup stops (v1 freezer.state, v2
 * cgroup.freeze) until thawed. Freezing and thawing wait until the kernel reports the state
 * reached, polling from 20 us up (a pause takes well under a few ms), bounded by 1 s; a
 * thread with no cgroup (released) has nothing to freeze and succeeds. A v1 freeze right
 * after a thaw can leave a busy task running and the cgroup FREEZING for good (seen on 6.18
 * with two `while :; do :; done` loops, paused and resumed back to back): while it waits,
 * the freeze is written again every 5 ms, which kicks the stragglers.
 */

#include <errno.h>
#include <string.h>
#include <time.h>

#include "base/fd-util.h"
#include "base/macro.h"
#include "native.h"

#define FREEZE_WAIT_US  1000000u /* how long the kernel may take to settle */
#define FREEZE_POLL_MIN 20u      /* the first wait, in us; doubled up to ... */
#define FREEZE_POLL_MAX 5000u    /* ... this (a pause is a few ms: poll finely at first) */

/* The v1 freezer dir of @cg, or the v2 cgroup dir; -EBADF when there is none. */
static int freezer_fd(const struct cgroup *cg)
{
        if (cg->mode == CGROUP_V2)
                return cg->dirfd[0];
        for (size_t i = 0; cg->mode == CGROUP_V1 && i < CGROUP_V1_MAX; i++)
                if (strcmp(cgroup_v1_names[i], "freezer") == 0)
                        return cg->dirfd[i];
        return -EBADF;
}

static bool reached(int fd, enum cgroup_mode mode, bool frozen)
{
        cleanup_free char *s = NULL;

        if (mode == CGROUP_V1) {
                if (read_file_at(fd, "freezer.state", 64, &s, NULL) < 0)
                        return false;
                return strncmp(s, frozen ? "FROZEN" : "THAWED", 6) == 0;
        }
        if (read_file_at(fd, "cgroup.events", 4096, &s, NULL) < 0)
                return false;
        return strstr(s, frozen ? "frozen 1" : "frozen 0") != NULL;
}

static int set_state(int fd, enum cgroup_mode mode, bool frozen)
{
        if (mode == CGROUP_V1)
                return write_string_at(fd, "freezer.state", frozen ? "FROZEN" : "THAWED");
        return write_string_at(fd, "cgroup.freeze", frozen ? "1" : "0");
}

static int freeze_cgroup(const struct cgroup *cg, bool frozen, struct b4_error *err)
{
        int fd = freezer_fd(cg);
        int r;

        if (fd < 0)
                return b4_error_set(err, -EOPNOTSUPP, "no freezer for this thread's cgroup");
        r = set_state(fd, cg->mode, frozen);
        if (r < 0)
                return b4_error_set(err, r, "cannot %s the thread's cgroup",
                                    frozen ? "freeze" : "thaw");
        for (unsigned waited = 0, step = FREEZE_POLL_MIN; waited < FREEZE_WAIT_US;
             waited += step, step = step * 2 < FREEZE_POLL_MAX ? step * 2 : FREEZE_POLL_MAX) {
                if (reached(fd, cg->mode, frozen))
                        return 0;
                if (frozen && step == FREEZE_POLL_MAX) /* kick again: see the file comment */
                        (void)set_state(fd, cg->mode, true);
                (void)nanosleep(&(struct timespec){ .tv_nsec = (long)step * 1000 }, NULL);
        }
        if (frozen)
                (void)set_state(fd, cg->mode, false);
        return b4_error_set(err, -EBUSY, "the thread's cgroup did not %s within 1 s",
                            frozen ? "freeze" : "thaw");
}

int native_freeze(struct b4_provider *p, const char *thread_id, bool frozen, struct b4_error *err)
{
        struct native_provider *np = (struct native_provider *)p;
        struct cgroup cg;
        char id[41], hid[41];
        int r;

        r = b4_resource_id(p->scope, thread_id, id);
        if (r < 0)
                return b4_error_set(err, r, "invalid thread id");
        native_host_id(np, id, hid);
        r = cgroup_open(&np->cg, hid, &cg);
        if (r == -ENOENT)
                return 0; /* no live sandbox: nothing runs, nothing to freeze */
        if (r < 0)
                return b4_error_set(err, r, "cannot open the thread's cgroup");
        r = freeze_cgroup(&cg, frozen, err);
        cgroup_close(&cg);
        return r;
}
