/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background processes, once for every provider (provider.h): argument checks, the shared
 * lease with recover-and-retry-once and the transparent resume of a paused thread (the
 * attempt of lifecycle.h), the named refusal of a provider without them, and wait (the
 * provider's get, polled until the process ends, the deadline passes or @cancel fires).
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/time-util.h"
#include "core/lifecycle.h"

#define WAIT_POLL_MS 20

void b4_proc_info_clear(struct b4_proc_info *i)
{
        if (!i)
                return;
        free(i->tag);
        free(i->command);
        *i = (struct b4_proc_info){ .exit_code = -1 };
}

struct b4_proc_info *b4_proc_infos_free(struct b4_proc_info *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                b4_proc_info_clear(&v[i]);
        free(v);
        return NULL;
}

bool b4_sandbox_has_procs(const struct b4_sandbox *sb)
{
        return sb && sb->core && sb->core->ops->procs;
}

static int ready(struct b4_sandbox *sb, struct b4_error *err)
{
        if (!sb)
                return b4_error_set(err, -EINVAL, "background processes need a sandbox");
        if (!b4_sandbox_has_procs(sb))
                return b4_error_set(err, -EOPNOTSUPP,
                                    "Sandbox provider of thread \"%s\" does not support "
                                    "background processes",
                                    sb->thread_id);
        return 0;
}

/* Run @call under @sb's lease, retried once after a recovery. */
#define PROC_RUN(sb, err, call)               \
 (                                            \
         {                                    \
   struct attempt a_ = { .sb = (sb) };        \
   int r_ = ready((sb), (err));               \
   if (r_ >= 0) {                             \
    do {                                      \
     r_ = attempt_begin(&a_, (err));          \
     if (r_ >= 0)                             \
      r_ = (call);                            \
    } while (attempt_again(&a_, &r_, (err))); \
   }                                          \
   r_;                                        \
         })

#define OPS(sb) ((sb)->core->ops->procs)

int b4_sandbox_proc_start(struct b4_sandbox *sb,
                          const struct b4_proc_req *req,
                          struct b4_proc_info *ret,
                          struct b4_error *err)
{
        *ret = (struct b4_proc_info){ .exit_code = -1 };
        if (!req || !req->command || !*req->command)
                return b4_error_set(err, -EINVAL, "command must be a non-empty string");
        if (req->tag && strlen(req->tag) > B4_PROC_TAG_MAX)
                return b4_error_set(err, -EINVAL, "tag must be at most %u bytes", B4_PROC_TAG_MAX);
        return PROC_RUN(sb, err, OPS(sb)->start(sb, req, ret, err));
}

int b4_sandbox_proc_list(struct b4_sandbox *sb,
                         struct b4_proc_info **ret,
                         size_t *ret_n,
                         struct b4_error *err)
{
        *ret = NULL;
        *ret_n = 0;
        return PROC_RUN(sb, err, OPS(sb)->list(sb, ret, ret_n, err));
}

int b4_sandbox_proc_get(struct b4_sandbox *sb,
                        uint64_t pid,
                        struct b4_proc_info *ret,
                        struct b4_error *err)
{
        *ret = (struct b4_proc_info){ .exit_code = -1 };
        return PROC_RUN(sb, err, OPS(sb)->get(sb, pid, ret, err));
}

int b4_sandbox_proc_read(struct b4_sandbox *sb,
                         uint64_t pid,
                         uint64_t offset,
                         size_t max,
                         char **ret,
                         size_t *ret_len,
                         struct b4_proc_info *ret_info,
                         struct b4_error *err)
{
        *ret = NULL;
        *ret_len = 0;
        if (ret_info)
                *ret_info = (struct b4_proc_info){ .exit_code = -1 };
        return PROC_RUN(sb, err, OPS(sb)->read(sb, pid, offset, max, ret, ret_len, ret_info, err));
}

int b4_sandbox_proc_stdin(struct b4_sandbox *sb,
                          uint64_t pid,
                          const void *data,
                          size_t len,
                          bool eof,
                          struct b4_error *err)
{
        if (len && !data)
                return b4_error_set(err, -EINVAL, "stdin data missing");
        return PROC_RUN(sb, err, OPS(sb)->write_stdin(sb, pid, data, len, eof, err));
}

int b4_sandbox_proc_signal(struct b4_sandbox *sb, uint64_t pid, int sig, struct b4_error *err)
{
        if (sig <= 0 || sig >= NSIG)
                return b4_error_set(err, -EINVAL, "signal %d is not a signal", sig);
        return PROC_RUN(sb, err, OPS(sb)->send_signal(sb, pid, sig, err));
}

int b4_sandbox_proc_forget(struct b4_sandbox *sb, uint64_t pid, struct b4_error *err)
{
        return PROC_RUN(sb, err, OPS(sb)->forget(sb, pid, err));
}

int b4_sandbox_proc_wait(struct b4_sandbox *sb,
                         uint64_t pid,
                         uint64_t timeout_ms,
                         struct b4_cancel *cancel,
                         struct b4_proc_info *ret,
                         struct b4_error *err)
{
        uint64_t deadline = now_msec() + timeout_ms;
        int r;

        for (;;) {
                r = b4_sandbox_proc_get(sb, pid, ret, err);
                if (r < 0 || !ret->running || now_msec() >= deadline)
                        return r;
                struct pollfd pfd = { .fd = b4_cancel_fd(cancel), .events = POLLIN };
                uint64_t left = deadline - now_msec();
                (void)poll(&pfd, pfd.fd >= 0 ? 1 : 0,
                           (int)(left < WAIT_POLL_MS ? left : WAIT_POLL_MS));
                if (b4_cancel_is_set(cancel))
                        return b4_error_set(err, -ECANCELED, "wait cancelled");
                b4_proc_info_clear(ret);
        }
}
