/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands through the exec API: create, start with the multiplexed stdout/stderr stream
 * (8-byte frame headers: stream id, 3 zero bytes, big-endian length) decoded as it arrives,
 * then inspect for the exit code. Each stream is captured up to its cap, keeping the head and
 * the tail around a "[... N bytes truncated ...]" marker, as the native provider does.
 *
 * Timeout and cancel are b4box's, not the image's: the exec's process (a session leader, as
 * runc makes every exec process) is looked up with exec inspect and its process group is
 * SIGKILLed from the host, which is what GNU timeout does inside the sandbox. No `timeout`
 * binary is needed in the image.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/time-util.h"
#include "core/capture.h"
#include "docker/docker.h"
#include "http/http.h"
#include "json/json.h"

#define KILL_DRAIN_MS 10000
#define FRAME_MAX     (1u << 20)

int docker_shell_quote(const char *s, char **ret)
{
        struct strbuf sb;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_add_shell_quoted(&sb, s);
        if (r >= 0)
                r = strbuf_detach(&sb, ret, NULL);
        strbuf_release(&sb);
        return r;
}

/* ---- the exec object ---- */

static int exec_create(struct docker_client *d,
                       const struct docker_exec_spec *s,
                       char **ret_id,
                       struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        cleanup_(jv_unrefp) struct jv *resp = NULL;
        cleanup_free char *path = NULL;
        bool lost = false;
        const char *id;
        int r;

        body = jv_pack("{s:b, s:b, s:b, s:b, s:o, s:o*, s:s*}", "AttachStdin", false,
                       "AttachStdout", true, "AttachStderr", true, "Tty", false, "Cmd",
                       jv_string_array_new(s->argv), "Env",
                       jv_opt(s->env, jv_string_array_new(s->env), &lost), "User", s->user);
        if (!body || lost || b4_asprintf(&path, "/containers/%s/exec", s->container) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(d, "POST", path, body, &resp, err);
        if (r < 0)
                return r;
        id = jv_string(jv_object_get(resp, "Id"));
        if (!id)
                return b4_error_set(err, -EPROTO, "Docker returned no exec id");
        *ret_id = b4_strdup(id);
        return *ret_id ? 0 : b4_error_set(err, -ENOMEM, "out of memory");
}

struct exec_state {
        int exit_code; /* -1 = not known */
        bool running;
        pid_t pid;
        char container[65]; /* ContainerID, "" when not given */
};

static int exec_inspect(struct docker_client *d,
                        const char *id,
                        struct exec_state *ret,
                        struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        cleanup_free char *path = NULL;
        struct jv *code;
        int r;

        if (b4_asprintf(&path, "/exec/%s/json", id) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = docker_call(d, "GET", path, NULL, &v, err);
        if (r < 0)
                return r;
        code = jv_object_get(v, "ExitCode");
        ret->exit_code = code && jv_is_number(code) ? (int)jv_integer(code) : -1;
        ret->running = jv_is_true(jv_object_get(v, "Running"));
        ret->pid = (pid_t)jv_integer(jv_object_get(v, "Pid"));
        const char *c = jv_string(jv_object_get(v, "ContainerID"));
        (void)snprintf(ret->container, sizeof(ret->container), "%s", c && strlen(c) == 64 ? c : "");
        return 0;
}

/* Whether the process behind @pidfd (pid @pid) is one of container @container's: its cgroup
 * path names the container (cgroupfs and systemd drivers both put the id in it). Read after
 * the pidfd is open, so the answer is about the process the pidfd holds (audit L9). */
static bool in_container(pid_t pid, const char *container)
{
        cleanup_free char *cg = NULL;
        char path[64];
        size_t len;

        (void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        return *container && read_file_at(AT_FDCWD, path, 65536, &cg, &len) >= 0 &&
               strstr(cg, container) != NULL;
}

/*
 * SIGKILL the exec's process group (runc makes each exec process a session leader). The host
 * pid Docker reports may have been reused by the time we act, and means nothing when b4box
 * runs in another PID namespace (audit L9): the process is pinned with a pidfd first and
 * killed only when it is still one of the container's; while it lives its pid (and so its
 * process group id) cannot be reused.
 */
static void exec_kill(struct docker_client *d, const char *id)
{
        struct exec_state st = { 0 };
        cleanup_close int pidfd = -EBADF;

        if (exec_inspect(d, id, &st, NULL) < 0 || !st.running || st.pid <= 1)
                return;
        pidfd = (int)syscall(SYS_pidfd_open, st.pid, 0);
        if (pidfd < 0 || !in_container(st.pid, st.container))
                return; /* gone, or not ours to kill */
        (void)kill(-st.pid, SIGKILL);
        (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* ---- the stream ---- */

struct demux {
        unsigned char hdr[8];
        size_t hdr_len;
        size_t left; /* payload bytes left in the current frame */
        int stream;  /* 1 stdout, 2 stderr */
        struct capture out, errc;
        const char *marker; /* to strip from the start of stdout; NULL when done */
        size_t marker_off;
        bool started;
};

static void feed_stdout(struct demux *m, const char *p, size_t n)
{
        while (m->marker && n > 0) {
                if (m->marker[m->marker_off] == '\0') {
                        m->started = true;
                        m->marker = NULL;
                        break;
                }
                if (*p != m->marker[m->marker_off]) {
                        /* not the marker: what matched so far is output */
                        capture_add(&m->out, m->marker, m->marker_off);
                        m->marker = NULL;
                        break;
                }
                m->marker_off++;
                p++;
                n--;
        }
        if (m->marker && m->marker[m->marker_off] == '\0') {
                m->started = true;
                m->marker = NULL;
        }
        capture_add(&m->out, p, n);
}

static int demux_feed(struct demux *m, const char *p, size_t n)
{
        while (n > 0) {
                if (m->left == 0) {
                        size_t k = 8 - m->hdr_len < n ? 8 - m->hdr_len : n;
                        memcpy(m->hdr + m->hdr_len, p, k);
                        m->hdr_len += k;
                        p += k;
                        n -= k;
                        if (m->hdr_len < 8)
                                return 0;
                        m->hdr_len = 0;
                        m->stream = m->hdr[0];
                        m->left = (size_t)m->hdr[4] << 24 | (size_t)m->hdr[5] << 16 |
                                  (size_t)m->hdr[6] << 8 | m->hdr[7];
                        if (m->stream > 2)
                                return -EPROTO;
                        continue;
                }
                size_t k = m->left < n ? m->left : n;
                if (m->stream == 2)
                        capture_add(&m->errc, p, k);
                else
                        feed_stdout(m, p, k);
                m->left -= k;
                p += k;
                n -= k;
        }
        return 0;
}

struct run {
        bool timed_out, cancelled;
};

static int pump_stream(struct docker_client *d,
                       const char *id,
                       struct http_stream *s,
                       const struct docker_exec_spec *spec,
                       struct demux *m,
                       struct run *u,
                       struct b4_error *err)
{
        uint64_t deadline = spec->timeout_ms ? now_msec() + spec->timeout_ms : 0;
        int cancel_fd = spec->cancel ? b4_cancel_fd(spec->cancel) : -EBADF;
        char buf[16384];

        for (;;) {
                ssize_t n = http_stream_read(s, buf, sizeof(buf), deadline, cancel_fd, err);

                if (n == 0)
                        return 0;
                if (n > 0) {
                        if (demux_feed(m, buf, (size_t)n) < 0)
                                return b4_error_set(err, -EPROTO, "invalid exec stream frame");
                        continue;
                }
                if (n == -ETIMEDOUT && !u->timed_out && !u->cancelled) {
                        u->timed_out = true;
                } else if (n == -ECANCELED && !u->timed_out && !u->cancelled) {
                        u->cancelled = true;
                        cancel_fd = -EBADF;
                } else {
                        return (int)n;
                }
                exec_kill(d, id);
                deadline = now_msec() + KILL_DRAIN_MS;
        }
}

static int wait_exit(struct docker_client *d, const char *id, int *ret, struct b4_error *err)
{
        struct exec_state st = { 0 };
        int r;

        for (int i = 0; i < 200; i++) {
                r = exec_inspect(d, id, &st, err);
                if (r < 0)
                        return r;
                if (!st.running && st.exit_code >= 0) {
                        *ret = st.exit_code;
                        return 0;
                }
                (void)usleep(10000);
        }
        return b4_error_set(err, -EIO, "the command's exit code never became known");
}

static int finish(struct demux *m, const struct run *u, int code, struct b4_exec_result *ret)
{
        struct b4_exec_result res = { 0 };
        int r;

        r = capture_finish(&m->out, &res.out, &res.out_len, &res.truncated);
        if (r >= 0)
                r = capture_finish(&m->errc, &res.errout, &res.errout_len, &res.truncated);
        if (r < 0) {
                b4_exec_result_clear(&res);
                return r;
        }
        res.exit_code = u->timed_out ? 124 : code;
        res.timed_out = u->timed_out;
        res.cancelled = u->cancelled;
        *ret = res;
        return 0;
}

int docker_exec_run_marked(struct docker_client *d,
                           const struct docker_exec_spec *s,
                           const char *marker,
                           bool *ret_started,
                           struct b4_exec_result *ret,
                           struct b4_error *err)
{
        cleanup_(http_stream_freep) struct http_stream *st = NULL;
        cleanup_(jv_unrefp) struct jv *body = jv_pack("{s:b, s:b}", "Detach", false, "Tty", false);
        cleanup_free char *id = NULL;
        cleanup_free char *path = NULL;
        struct demux m = { .marker = marker };
        struct run u = { 0 };
        int code = -1, r;

        if (b4_cancel_is_set(s->cancel))
                return b4_error_set(err, -ECANCELED, "cancelled before the command started");
        r = exec_create(d, s, &id, err);
        if (r < 0)
                return r;
        if (!body || b4_asprintf(&path, "/exec/%s/start", id) < 0 ||
            capture_init(&m.out, s->output_cap) < 0 || capture_init(&m.errc, s->output_cap) < 0) {
                r = b4_error_set(err, -ENOMEM, "out of memory");
                goto out;
        }
        r = docker_stream(d, "POST", path, body, -EBADF, &st, err);
        if (r >= 0)
                r = pump_stream(d, id, st, s, &m, &u, err);
        if (r >= 0)
                r = wait_exit(d, id, &code, err);
        if (r >= 0)
                r = finish(&m, &u, code, ret);
        if (r >= 0 && ret_started)
                *ret_started = m.started;
out:
        capture_release(&m.out);
        capture_release(&m.errc);
        return r;
}

int docker_exec_run(struct docker_client *d,
                    const struct docker_exec_spec *s,
                    struct b4_exec_result *ret,
                    struct b4_error *err)
{
        return docker_exec_run_marked(d, s, NULL, NULL, ret, err);
}
