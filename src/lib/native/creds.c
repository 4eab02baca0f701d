/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's identity for host-side file operations (audit H1). A file tool must see
 * exactly what a command in the sandbox sees, so for the length of one operation the calling
 * thread takes the sandbox user's host ids as its filesystem ids, no supplementary groups and
 * an empty effective capability set (DAC overrides, CAP_SYSLOG for /proc/kallsyms and
 * CAP_SYS_PTRACE for /proc/<pid> are capabilities, not ids, so switching fsuid alone would not
 * do), then takes its own back. Only the calling thread changes: fsuid, fsgid, groups and
 * capabilities are per-thread in the kernel, and every call here is a raw syscall because
 * glibc's setgroups() would broadcast to every thread of the server. The permitted set is
 * kept, which is what lets the thread restore its effective set afterwards.
 *
 * The thread also leaves the server's session keyring once, for a new one nobody may view
 * (for /proc/keys): keys it possesses would otherwise be listed to the tools.
 */

#include <errno.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "native.h"

static gid_t *process_groups;
static int n_process_groups;
static pthread_once_t groups_once = PTHREAD_ONCE_INIT;
static _Thread_local bool own_keyring;

/* The server's supplementary groups, the same in every thread: what leave() restores. */
static void capture_groups(void)
{
        int n = getgroups(0, NULL);

        if (n <= 0)
                return;
        process_groups = b4_calloc((size_t)n, sizeof(gid_t)); /* kept for the process */
        if (process_groups)
                n_process_groups = getgroups(n, process_groups);
        if (n_process_groups < 0)
                n_process_groups = 0;
}

static int caps_get(struct __user_cap_data_struct data[2])
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

        return syscall(SYS_capget, &h, data) < 0 ? -errno : 0;
}

static int caps_set(const struct __user_cap_data_struct data[2])
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

        return syscall(SYS_capset, &h, data) < 0 ? -errno : 0;
}

/* setfsuid/setfsgid report no error; ask for the current value (-1 changes nothing). */
static bool fsuid_is(uint32_t uid)
{
        return (uint32_t)syscall(SYS_setfsuid, -1) == uid;
}

static bool fsgid_is(uint32_t gid)
{
        return (uint32_t)syscall(SYS_setfsgid, -1) == gid;
}

static _Noreturn void die(const char *what)
{
        log_warning("%s", what);
        abort(); /* checksrc: allow */
}

static void leave_session_keyring(void)
{
        if (own_keyring)
                return;
        /* An anonymous session keyring of this thread's own, which nobody may view (we
         * possess it, so /proc/keys would list it otherwise); failure leaves nothing worse. */
        if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) >= 0)
                (void)syscall(SYS_keyctl, KEYCTL_SETPERM, KEY_SPEC_SESSION_KEYRING, 0);
        own_keyring = true;
}

int creds_enter(uint32_t uid, uint32_t gid, struct creds_saved *ret)
{
        struct __user_cap_data_struct caps[2];
        int r;

        *ret = (struct creds_saved){ 0 };
        (void)pthread_once(&groups_once, capture_groups);
        r = caps_get(ret->caps);
        if (r < 0)
                return r;
        ret->fsuid = (uint32_t)syscall(SYS_setfsuid, -1);
        ret->fsgid = (uint32_t)syscall(SYS_setfsgid, -1);
        leave_session_keyring();
        if (syscall(SYS_setgroups, 0, NULL) < 0)
                return -errno;
        ret->switched = true; /* from here on leave() must run */
        (void)syscall(SYS_setfsgid, gid);
        (void)syscall(SYS_setfsuid, uid);
        caps[0] = ret->caps[0];
        caps[1] = ret->caps[1];
        caps[0].effective = caps[1].effective = 0;
        caps[0].inheritable = caps[1].inheritable = 0;
        r = caps_set(caps);
        if (r >= 0 && (!fsuid_is(uid) || !fsgid_is(gid)))
                r = -EPERM;
        if (r < 0)
                creds_leave(ret);
        return r;
}

void creds_leave(struct creds_saved *s)
{
        if (!s->switched)
                return;
        /* A thread that cannot become itself again must not serve anything else. */
        if (caps_set(s->caps) < 0)
                die("cannot restore this thread's capabilities");
        (void)syscall(SYS_setfsuid, s->fsuid);
        (void)syscall(SYS_setfsgid, s->fsgid);
        if (!fsuid_is(s->fsuid) || !fsgid_is(s->fsgid) ||
            syscall(SYS_setgroups, (size_t)n_process_groups, process_groups) < 0)
                die("cannot restore this thread's filesystem identity");
        s->switched = false;
}
