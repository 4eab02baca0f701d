/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background processes on native (docs/native.md, "Background processes"). The keeper owns
 * them (keeper-proto.h, version 2): it forks the command in its own cgroup, copies its
 * output into the spool, bounded, kills it at its deadline and writes its exit line, with no
 * client connected, so a server that restarts loses nothing. This side keeps, per thread,
 * under <state>/native/procs/<host id>/ (0700, root's):
 *   <n>.meta  JSON {command, tag, stdin, timeoutMs, startedMs, keeper: "pid:starttime",
 *             cgroup}: written before the start, so a crash leaves a record
 *   <n>.log   the spool (the keeper appends to it)
 *   <n>.exit  "<wait status> <timed out> <truncated>\n" once reaped (its mtime: endedMs)
 * A record without an exit line whose keeper is not the thread's live one was killed by a
 * release (or a crash of the sandbox): exited, released, 137. Records and spools stay until
 * forgotten or the thread is destroyed. A stdin pipe's write end lives in this process
 * (a server restart closes it: the process sees EOF). Signals go to every process of the
 * command's own cgroup, read host-side.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "json/json.h"
#include "keeper-proto.h"
#include "native.h"

_Static_assert(KEEPER_SPOOL_MAX == B4_PROC_SPOOL_MAX, "one spool bound");

#define META_MAX      (KEEPER_REQ_MAX + 4096)
#define STDIN_WAIT_MS 10000 /* a full pipe: how long a write may wait for the reader */

struct native_stdin {
        struct native_stdin *next;
        uint64_t pid;
        int fd;
};

/* ---- the record dir ---- */

static int procs_dir(struct native_provider *np, const char *hid, bool create, int *ret)
{
        cleanup_free char *path = NULL;
        cleanup_close int top = -EBADF;

        if (b4_asprintf(&path, "%s/procs", np->native_dir) < 0)
                return -ENOMEM;
        if (create && mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        top = open(path, O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return -errno;
        if (create && mkdirat(top, hid, 0700) < 0 && errno != EEXIST)
                return -errno;
        *ret = openat(top, hid, O_DIRECTORY | O_CLOEXEC);
        return *ret < 0 ? -errno : 0;
}

void native_procs_remove(struct native_provider *np, const char *hid)
{
        cleanup_close int dir = -EBADF;
        DIR *d;
        struct dirent *de;

        if (procs_dir(np, hid, false, &dir) < 0)
                return;
        d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 3));
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        (void)unlinkat(dir, de->d_name, 0);
        if (d)
                (void)closedir(d);
        cleanup_free char *path = NULL;
        if (b4_asprintf(&path, "%s/procs/%s", np->native_dir, hid) >= 0)
                (void)rmdir(path);
}

/* The numbers of the records in @dir, ascending (*ret heap). */
static int record_numbers(int dir, uint64_t **ret, size_t *ret_n)
{
        DIR *d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 3));
        uint64_t *v = NULL;
        size_t n = 0;
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char *end = NULL;
                uint64_t k = strtoull(de->d_name, &end, 10);
                if (k == 0 || !end || strcmp(end, ".meta") != 0)
                        continue;
                uint64_t *nv = b4_reallocarray(v, n + 1, sizeof(*v));
                if (!nv) {
                        free(v);
                        (void)closedir(d);
                        return -ENOMEM;
                }
                v = nv;
                size_t i = n++;
                while (i > 0 && v[i - 1] > k) {
                        v[i] = v[i - 1];
                        i--;
                }
                v[i] = k;
        }
        (void)closedir(d);
        *ret = v;
        *ret_n = n;
        return 0;
}

static void file_name(char buf[40], uint64_t pid, const char *ext)
{
        (void)snprintf(buf, 40, "%llu.%s", (unsigned long long)pid, ext);
}

/* ---- reading a record ---- */

struct record {
        struct jv *meta; /* a reference */
        bool exited, timed_out, truncated;
        int status;
        int64_t ended_ms;
        uint64_t bytes;
};

static bool keeper_is_live(const struct native_thread *t, const char *keeper)
{
        char id[64];

        (void)snprintf(id, sizeof(id), "%d:%llu", (int)t->kp.pid,
                       (unsigned long long)t->kp.starttime);
        return t->live && keeper && strcmp(id, keeper) == 0;
}

static int record_load(int dir, uint64_t pid, struct record *ret, struct b4_error *err)
{
        cleanup_free char *meta = NULL, *ex = NULL;
        char name[40];
        struct stat st;
        size_t len = 0;
        int r;

        *ret = (struct record){ 0 };
        file_name(name, pid, "meta");
        r = read_file_at(dir, name, META_MAX, &meta, &len);
        if (r == -ENOENT)
                return b4_error_set(err, -ESRCH, "no background process %llu",
                                    (unsigned long long)pid);
        if (r >= 0)
                r = jv_parse(meta, len, &ret->meta, NULL);
        if (r < 0)
                return b4_error_set(err, r < 0 ? r : -EIO, "cannot read background process %llu",
                                    (unsigned long long)pid);
        file_name(name, pid, "log");
        if (fstatat(dir, name, &st, 0) == 0)
                ret->bytes = (uint64_t)st.st_size;
        file_name(name, pid, "exit");
        if (read_file_at(dir, name, 128, &ex, NULL) >= 0 && fstatat(dir, name, &st, 0) == 0) {
                int to = 0, tr = 0;
                ret->exited = sscanf(ex, "%d %d %d", &ret->status, &to, &tr) == 3;
                ret->timed_out = to;
                ret->truncated = tr;
                ret->ended_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        }
        return 0;
}

static int exit_code_of(int status)
{
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int info_fill(struct native_thread *t,
                     uint64_t pid,
                     struct record *rec,
                     struct b4_proc_info *ret)
{
        const struct jv *m = rec->meta;
        const char *tag = jv_string(jv_object_get(m, "tag"));
        bool released = !rec->exited && !keeper_is_live(t, jv_string(jv_object_get(m, "keeper")));
        bool running = !rec->exited && !released;
        struct native_stdin *in;

        *ret = (struct b4_proc_info){
                .pid = pid,
                .tag = tag ? b4_strdup(tag) : NULL,
                .command = b4_strdup(jv_string(jv_object_get(m, "command"))),
                .running = running,
                .timed_out = rec->timed_out,
                .released = released,
                .truncated = rec->truncated || rec->bytes >= KEEPER_SPOOL_MAX,
                .exit_code = running    ? -1
                             : released ? 137
                                        : exit_code_of(rec->status),
                .started_ms = jv_integer(jv_object_get(m, "startedMs")),
                .ended_ms = rec->exited ? rec->ended_ms : 0,
                .bytes = rec->bytes,
        };
        if (rec->timed_out)
                ret->exit_code = 124;
        (void)pthread_mutex_lock(&t->cg_lock);
        for (in = t->stdins; in; in = in->next)
                if (in->pid == pid)
                        ret->stdin_open = running;
        (void)pthread_mutex_unlock(&t->cg_lock);
        if (!ret->command || (tag && !ret->tag)) {
                b4_proc_info_clear(ret);
                return -ENOMEM;
        }
        return 0;
}

static struct native_sandbox *handle(struct b4_sandbox *sb)
{
        return (struct native_sandbox *)sb;
}

/* The record @pid of the handle's thread, as a view. */
static int load_info(struct b4_sandbox *sb,
                     int dir,
                     uint64_t pid,
                     struct b4_proc_info *ret,
                     struct jv **ret_meta,
                     struct b4_error *err)
{
        struct record rec;
        int r = record_load(dir, pid, &rec, err);

        if (r < 0)
                return r;
        r = info_fill(handle(sb)->t, pid, &rec, ret);
        if (ret_meta)
                *ret_meta = jv_ref(rec.meta);
        jv_unref(rec.meta);
        return r < 0 ? b4_error_set(err, r, "out of memory") : 0;
}

static int open_dir(struct b4_sandbox *sb, bool create, int *ret, struct b4_error *err)
{
        struct native_sandbox *s = handle(sb);
        int r = procs_dir(s->np, s->t->hid, create, ret);

        if (r == -ENOENT && !create) {
                *ret = -EBADF;
                return 0; /* no process ever: nothing to list */
        }
        return r < 0 ? b4_error_set(err, r, "cannot open the process records of thread '%s'",
                                    s->t->thread_id)
                     : 0;
}

/* ---- stdin pipes ---- */

static void stdin_add(struct native_thread *t, struct native_stdin *in)
{
        (void)pthread_mutex_lock(&t->cg_lock);
        in->next = t->stdins;
        t->stdins = in;
        (void)pthread_mutex_unlock(&t->cg_lock);
}

/* Take @pid's pipe out of the list (the caller closes or puts it back). */
static struct native_stdin *stdin_take(struct native_thread *t, uint64_t pid)
{
        struct native_stdin **p, *in = NULL;

        (void)pthread_mutex_lock(&t->cg_lock);
        for (p = &t->stdins; *p; p = &(*p)->next)
                if ((*p)->pid == pid) {
                        in = *p;
                        *p = in->next;
                        break;
                }
        (void)pthread_mutex_unlock(&t->cg_lock);
        return in;
}

void native_procs_forget_stdin(struct native_thread *t)
{
        struct native_stdin *in, *next;

        (void)pthread_mutex_lock(&t->cg_lock);
        in = t->stdins;
        t->stdins = NULL;
        (void)pthread_mutex_unlock(&t->cg_lock);
        for (; in; in = next) {
                next = in->next;
                safe_close(in->fd);
                free(in);
        }
}

/* ---- start ---- */

static int next_number(int dir, uint64_t *ret, struct b4_error *err)
{
        uint64_t *v = NULL;
        size_t n = 0;
        int r = record_numbers(dir, &v, &n);

        if (r < 0)
                return b4_error_set(err, r, "cannot list the process records");
        *ret = n ? v[n - 1] + 1 : 1;
        free(v);
        if (n >= B4_PROC_MAX_RECORDS)
                return b4_error_set(err, -ENOSPC,
                                    "the thread has %u background process records: forget some",
                                    B4_PROC_MAX_RECORDS);
        return 0;
}

static int write_meta(int dir,
                      uint64_t pid,
                      const struct b4_proc_req *req,
                      const struct native_thread *t,
                      const char *cg_name)
{
        cleanup_(jv_unrefp) struct jv *m = NULL;
        cleanup_free char *text = NULL, *keeper = NULL;
        cleanup_close int fd = -EBADF;
        char name[40];

        if (b4_asprintf(&keeper, "%d:%llu", (int)t->kp.pid, (unsigned long long)t->kp.starttime) <
            0)
                return -ENOMEM;
        m = jv_pack("{s:s, s:s?, s:b, s:I, s:I, s:s, s:s}", "command", req->command, "tag",
                    req->tag, "stdin", req->stdin_pipe, "timeoutMs", (int64_t)req->timeout_ms,
                    "startedMs", realtime_msec(), "keeper", keeper, "cgroup", cg_name);
        if (!m || jv_dump(m, 0, &text) < 0)
                return -ENOMEM;
        file_name(name, pid, "meta");
        fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        return write_all(fd, text, strlen(text));
}

static void unlink_record(int dir, uint64_t pid)
{
        static const char *const exts[] = { "log", "exit", "meta" };
        char name[40];

        for (size_t i = 0; i < ELEMENTSOF(exts); i++) {
                file_name(name, pid, exts[i]);
                (void)unlinkat(dir, name, 0);
        }
}

/* Send the background request with its files and wait for STARTED. */
static int ask_keeper(struct native_sandbox *s,
                      const struct exec_spec *spec,
                      const int *fds,
                      size_t nfd,
                      uint64_t timeout_ms,
                      struct b4_error *err)
{
        cleanup_close int sock = -EBADF;
        struct keeper_msg m = { 0 };
        char trailer[24];
        int r;

        r = keeper_connect(s->np->run_fd, s->np->run_dir, s->t->id, &sock);
        if (r < 0)
                return b4_error_set(err, -ENOTCONN, "cannot reach the keeper of thread '%s'",
                                    s->t->thread_id);
        (void)snprintf(trailer, sizeof(trailer), "%llu", (unsigned long long)timeout_ms);
        r = keeper_send(sock, spec, fds, nfd, 2, trailer);
        if (r >= 0 && recv(sock, &m, sizeof(m), MSG_WAITALL) != (ssize_t)sizeof(m))
                r = -EPROTO;
        if (r < 0)
                return b4_error_set(err, -EIO,
                                    "the keeper of thread '%s' did not start the "
                                    "process (a keeper older than background "
                                    "processes: release the thread)",
                                    s->t->thread_id);
        if (m.type == KEEPER_MSG_FAILED)
                return b4_error_set(err, m.value == EAGAIN ? -EAGAIN : -EIO,
                                    "the background process could not start: %s",
                                    strerror(m.value));
        return m.type == KEEPER_MSG_STARTED ? 0 : b4_error_set(err, -EIO, "keeper protocol error");
}

/* Open the record's spool and status files, and the stdin pipe. fds: log, exit, (stdin). */
static int open_files(int dir, uint64_t pid, bool want_stdin, int fds[3], int *ret_stdin_w)
{
        char name[40];
        int p[2];

        file_name(name, pid, "log");
        fds[0] = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
        file_name(name, pid, "exit");
        fds[1] = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fds[0] < 0 || fds[1] < 0)
                return -errno;
        if (!want_stdin)
                return 0;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fds[2] = p[0];
        *ret_stdin_w = p[1];
        return 0;
}

static int np_start(struct b4_sandbox *sb,
                    const struct b4_proc_req *req,
                    struct b4_proc_info *ret,
                    struct b4_error *err)
{
        struct native_sandbox *s = handle(sb);
        struct b4_exec_req x = {
                .command = req->command, .cwd = req->cwd, .env = req->env, .n_env = req->n_env
        };
        cleanup_close int dir = -EBADF, stdin_w = -EBADF;
        struct exec_cg cg = { .parent_fd = -EBADF, .fd = -EBADF };
        int fds[4] = { -EBADF, -EBADF, -EBADF, -EBADF }, sfds[4];
        cleanup_strv char **env = NULL;
        struct exec_spec spec;
        size_t nfd = 2;
        uint64_t pid = 0;
        int r;

        if (!s->t->live)
                return b4_error_set_code(err, -ENOTCONN, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: thread \"%s\" has no keeper",
                                         s->t->thread_id);
        r = native_exec_spec(s, &x, &env, &spec, err);
        if (r >= 0)
                r = open_dir(sb, true, &dir, err);
        if (r >= 0)
                r = next_number(dir, &pid, err);
        if (r < 0)
                return r;
        exec_cg_make(s->t, &cg);
        r = write_meta(dir, pid, req, s->t, cg.fd >= 0 ? cg.name : "");
        if (r >= 0)
                r = open_files(dir, pid, req->stdin_pipe, fds, &stdin_w);
        if (r >= 0) {
                sfds[0] = fds[0];
                sfds[1] = fds[1];
                if (cg.fd >= 0)
                        sfds[nfd++] = cg.fd;
                if (req->stdin_pipe)
                        sfds[nfd++] = fds[2];
                spec.cg_fd = cg.fd;
                spec.flags = (spec.flags & ~(uint32_t)KEEPER_CG_MASK) | cg.flags |
                             KEEPER_BACKGROUND | (req->stdin_pipe ? KEEPER_STDIN : 0);
                r = ask_keeper(s, &spec, sfds, nfd, req->timeout_ms, err);
        } else {
                r = b4_error_set(err, r, "cannot create the process record");
        }
        for (size_t i = 0; i < 3; i++)
                safe_close(fds[i]);
        safe_close(cg.fd);
        safe_close(cg.parent_fd);
        if (r < 0) {
                unlink_record(dir, pid);
                return r;
        }
        if (req->stdin_pipe) {
                struct native_stdin *in = b4_calloc(1, sizeof(*in));
                if (in) {
                        *in = (struct native_stdin){ .pid = pid, .fd = TAKE_FD(stdin_w) };
                        stdin_add(s->t, in);
                }
        }
        return load_info(sb, dir, pid, ret, NULL, err);
}

/* ---- views ---- */

static int np_list(struct b4_sandbox *sb,
                   struct b4_proc_info **ret,
                   size_t *ret_n,
                   struct b4_error *err)
{
        cleanup_close int dir = -EBADF;
        cleanup_free uint64_t *v = NULL;
        struct b4_proc_info *out;
        size_t n = 0, k = 0;
        int r;

        r = open_dir(sb, false, &dir, err);
        if (r >= 0 && dir >= 0 && (r = record_numbers(dir, &v, &n)) < 0)
                r = b4_error_set(err, r, "cannot list the process records");
        if (r < 0)
                return r;
        out = b4_calloc(n + 1, sizeof(*out));
        if (!out)
                return b4_error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                if (load_info(sb, dir, v[i], &out[k], NULL, NULL) >= 0)
                        k++; /* one forgotten meanwhile is left out */
        *ret = out;
        *ret_n = k;
        return 0;
}

static int np_get(struct b4_sandbox *sb,
                  uint64_t pid,
                  struct b4_proc_info *ret,
                  struct b4_error *err)
{
        cleanup_close int dir = -EBADF;
        int r = open_dir(sb, false, &dir, err);

        if (r >= 0 && dir < 0)
                return b4_error_set(err, -ESRCH, "no background process %llu",
                                    (unsigned long long)pid);
        return r < 0 ? r : load_info(sb, dir, pid, ret, NULL, err);
}

static int np_read(struct b4_sandbox *sb,
                   uint64_t pid,
                   uint64_t offset,
                   size_t max,
                   char **ret,
                   size_t *ret_len,
                   struct b4_proc_info *ret_info,
                   struct b4_error *err)
{
        struct b4_proc_info info = { 0 };
        cleanup_close int dir = -EBADF, fd = -EBADF;
        char name[40];
        ssize_t n = 0;
        int r;

        r = np_get(sb, pid, &info, err); /* the view first: output read after it is complete */
        if (r < 0)
                return r;
        uint64_t avail = info.bytes > offset ? info.bytes - offset : 0;
        if (max > avail)
                max = (size_t)avail;
        *ret = b4_malloc(max + 1);
        r = *ret ? open_dir(sb, false, &dir, err) : -ENOMEM;
        file_name(name, pid, "log");
        if (r >= 0 && (fd = openat(dir, name, O_RDONLY | O_CLOEXEC)) >= 0)
                n = pread(fd, *ret, max, (off_t)offset);
        if (r < 0 || n < 0) {
                free(*ret);
                *ret = NULL;
                b4_proc_info_clear(&info);
                return b4_error_set(err, r < 0 ? r : -errno, "cannot read the process's output");
        }
        (*ret)[n] = '\0';
        *ret_len = (size_t)n;
        if (ret_info)
                *ret_info = info;
        else
                b4_proc_info_clear(&info);
        return 0;
}

/* ---- stdin, signals, forget ---- */

static int write_some(int fd, const char *p, size_t len)
{
        uint64_t deadline = now_msec() + STDIN_WAIT_MS;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EAGAIN && now_msec() < deadline) {
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                        (void)poll(&pfd, 1, 100);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static int np_stdin(struct b4_sandbox *sb,
                    uint64_t pid,
                    const void *data,
                    size_t len,
                    bool eof,
                    struct b4_error *err)
{
        struct native_thread *t = handle(sb)->t;
        struct b4_proc_info info = { 0 };
        struct native_stdin *in;
        int r = np_get(sb, pid, &info, err);

        b4_proc_info_clear(&info);
        if (r < 0)
                return r;
        in = stdin_take(t, pid);
        if (!in)
                return b4_error_set(err, -EPIPE,
                                    "the stdin of background process %llu is closed (or was "
                                    "never opened, or the server restarted)",
                                    (unsigned long long)pid);
        (void)fcntl(in->fd, F_SETFL, O_NONBLOCK);
        r = write_some(in->fd, data, len);
        if (eof || r == -EPIPE) {
                safe_close(in->fd);
                free(in);
        } else {
                stdin_add(t, in);
        }
        if (r == -EPIPE)
                return b4_error_set(err, r, "background process %llu no longer reads its stdin",
                                    (unsigned long long)pid);
        return r < 0 ? b4_error_set(err, r, "cannot write to the stdin of process %llu",
                                    (unsigned long long)pid)
                     : 0;
}

/* @sig to every process listed in @cg's cgroup.procs; how many. */
static int signal_listed(int cg, int sig)
{
        cleanup_free char *list = NULL;
        int n = 0;

        if (read_file_at(cg, "cgroup.procs", 1 << 20, &list, NULL) < 0)
                return 0;
        for (char *p = list, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 1 && kill((pid_t)pid, sig) == 0)
                        n++;
        }
        return n;
}

static int signal_cgroup(struct native_thread *t, const char *name, int sig)
{
        cleanup_close int cg = -EBADF;

        if (t->cg_fd < 0 || !name || !*name)
                return -EOPNOTSUPP;
        cg = openat(t->cg_fd, name, O_DIRECTORY | O_CLOEXEC);
        if (cg < 0)
                return errno == ENOENT ? 0 : -errno;
        if (sig == SIGKILL && (t->cg_flags & KEEPER_CG_KILL))
                (void)write_string_at(cg, "cgroup.kill", "1");
        for (int i = 0; i < (sig == SIGKILL ? 100 : 1); i++) {
                if (signal_listed(cg, sig) == 0)
                        break;
                (void)nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
        }
        return 0;
}

static int np_signal(struct b4_sandbox *sb, uint64_t pid, int sig, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *meta = NULL;
        struct b4_proc_info info = { 0 };
        cleanup_close int dir = -EBADF;
        int r = open_dir(sb, false, &dir, err);

        if (r >= 0 && dir < 0)
                return b4_error_set(err, -ESRCH, "no background process %llu",
                                    (unsigned long long)pid);
        if (r >= 0)
                r = load_info(sb, dir, pid, &info, &meta, err);
        if (r < 0 || !info.running) {
                b4_proc_info_clear(&info);
                return r;
        }
        b4_proc_info_clear(&info);
        r = signal_cgroup(handle(sb)->t, jv_string(jv_object_get(meta, "cgroup")), sig);
        return r < 0 ? b4_error_set(err, r, "cannot signal background process %llu (%s)",
                                    (unsigned long long)pid,
                                    r == -EOPNOTSUPP ? "it has no cgroup of its own" : strerror(-r))
                     : 0;
}

static int np_forget(struct b4_sandbox *sb, uint64_t pid, struct b4_error *err)
{
        cleanup_close int dir = -EBADF;
        struct native_stdin *in;
        int r = np_signal(sb, pid, SIGKILL, err);

        if (r < 0 && r != -EOPNOTSUPP)
                return r;
        in = stdin_take(handle(sb)->t, pid);
        if (in) {
                safe_close(in->fd);
                free(in);
        }
        r = open_dir(sb, false, &dir, err);
        if (r >= 0 && dir >= 0)
                unlink_record(dir, pid);
        return r;
}

const struct b4_proc_ops native_proc_ops = {
        .start = np_start,
        .list = np_list,
        .get = np_get,
        .read = np_read,
        .write_stdin = np_stdin,
        .send_signal = np_signal,
        .forget = np_forget,
};
