/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Docker keeper's network (net.h says which path and why; docs/docker.md §Network).
 * hostnet: the records live in /run/b4box/docker (root's, 0700), named by a host id that
 * is unique per daemon socket and thread (sha256 over the socket's path and the resource
 * id), so two daemons on one host, or native and Docker, never share a veth name or a /30.
 * The veth goes with the container's namespace when the container goes; release and
 * recover then drop the elements, netd and the subnet claim (docker_net_detach()).
 * bridge: b4-net-<id>, labelled like the volume, removed with the keeper.
 */

#include "docker/net.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "docker/docker.h"
#include "hostnet/audit.h"
#include "hostnet/hostnet.h"
#include "json/json.h"

#define RUN_DIR "/run/b4box/docker"

struct docker_net {
        struct docker_client *d; /* borrowed */
        pthread_mutex_t lock;    /* path, why, run_fd */
        int path;                /* -1 not asked yet, else DOCKER_NET_HOSTNET or _BRIDGE */
        char why[256];           /* why not hostnet */
        int run_fd;              /* RUN_DIR, opened on first use */
};

int docker_net_new(struct docker_client *d, struct docker_net **ret)
{
        struct docker_net *n = b4_calloc(1, sizeof(*n));

        if (!n)
                return -ENOMEM;
        n->d = d;
        n->path = -1;
        n->run_fd = -EBADF;
        (void)pthread_mutex_init(&n->lock, NULL);
        *ret = n;
        return 0;
}

void docker_net_free(struct docker_net *n)
{
        if (!n)
                return;
        safe_close(n->run_fd);
        (void)pthread_mutex_destroy(&n->lock);
        free(n);
}

/* Whether the daemon's /info names this kernel and host name (it runs here, not in a VM or
 * behind a forwarded socket): 1, 0 (@why says what it names), -1 (/info failed: @why). */
static int daemon_is_here(struct docker_net *n, char *why, size_t size)
{
        cleanup_(jv_unrefp) struct jv *info = NULL;
        struct utsname u;
        const char *kernel, *name;
        struct b4_error e = { 0 };

        if (docker_call(n->d, "GET", "/info", NULL, &info, &e) < 0) {
                (void)snprintf(why, size, "the daemon's /info failed (%.160s)", e.msg);
                return -1;
        }
        kernel = jv_string(jv_object_get(info, "KernelVersion"));
        name = jv_string(jv_object_get(info, "Name"));
        if (uname(&u) == 0 && kernel && name && strcmp(kernel, u.release) == 0 &&
            strcmp(name, u.nodename) == 0)
                return 1;
        (void)snprintf(why, size,
                       "the daemon is not on this host (its /info names kernel %s on %s, this is "
                       "%s on %s)",
                       kernel ? kernel : "?", name ? name : "?", u.release, u.nodename);
        return 0;
}

/* The path of a policy with a network, decided once (under the lock); an /info that failed
 * decides nothing (DOCKER_NET_UNKNOWN: asked again next time, never a silent downgrade). */
static int decide(struct docker_net *n)
{
        const char *off = secure_getenv("B4BOX_DOCKER_HOSTNET");
        const char *why = NULL;
        int here;

        if (n->path >= 0)
                return n->path;
        if (off && strcmp(off, "0") == 0)
                (void)snprintf(n->why, sizeof(n->why), "B4BOX_DOCKER_HOSTNET=0 forces the bridge");
        else if (hostnet_available(&why) < 0)
                (void)snprintf(n->why, sizeof(n->why), "%s", why);
        else if ((here = daemon_is_here(n, n->why, sizeof(n->why))) < 0)
                return DOCKER_NET_UNKNOWN;
        else if (here)
                return n->path = DOCKER_NET_HOSTNET;
        return n->path = DOCKER_NET_BRIDGE;
}

enum docker_net_path docker_net_path(struct docker_net *n, const struct b4_policy *p)
{
        int path;

        if (p->network == B4_NETWORK_DENY && !hostnet_listed(p))
                return DOCKER_NET_NONE;
        (void)pthread_mutex_lock(&n->lock);
        path = decide(n);
        (void)pthread_mutex_unlock(&n->lock);
        return (enum docker_net_path)path;
}

/* The hostnet records' directory (created 0700, root's). */
static int run_dir(struct docker_net *n, struct hostnet *ret)
{
        int r = 0;

        (void)pthread_mutex_lock(&n->lock);
        if (n->run_fd < 0) {
                cleanup_close int run = -EBADF;

                r = open_private_dir_at(AT_FDCWD, "/run/b4box", 0700, &run);
                if (r >= 0)
                        r = open_private_dir_at(run, "docker", 0700, &n->run_fd);
        }
        (void)pthread_mutex_unlock(&n->lock);
        *ret = (struct hostnet){ .run_fd = n->run_fd, .run_dir = RUN_DIR };
        return r;
}

/* The host id of keeper @id behind this daemon: names its records and its veth. */
static void host_id(struct docker_net *n, const char *id, char ret[41])
{
        char hex[SHA256_HEX_LEN + 1];
        struct sha256_ctx *c = sha256_new();
        const char *sock = docker_client_socket(n->d);

        if (!c) { /* OOM: the id alone, still deterministic */
                (void)snprintf(ret, 41, "%s", id);
                return;
        }
        sha256_update(c, "b4box-docker-net\n", 17);
        sha256_update(c, sock, strlen(sock));
        sha256_update(c, "\n", 1);
        sha256_update(c, id, strlen(id));
        sha256_final_hex(c, hex);
        memcpy(ret, hex, 40);
        ret[40] = '\0';
}

/* B4_E2001 in @err for a failure @what whose cause is in @inner. */
static int unavailable(struct b4_error *err,
                       const struct b4_error *inner,
                       int r,
                       const char *thread_id,
                       const char *what)
{
        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: %s for thread \"%s\" failed: %s. Run "
                                 "`b4box check`.",
                                 what, thread_id, inner->msg);
}

/* DELETE /networks/b4-net-<id>; a missing one is not an error. */
static int bridge_remove(struct docker_net *n, const char *id, struct b4_error *err)
{
        char path[96];
        int r;

        (void)snprintf(path, sizeof(path), "/networks/b4-net-%s", id);
        r = docker_call(n->d, "DELETE", path, NULL, NULL, err);
        return r == -ENOENT ? 0 : r;
}

/* A fresh b4-net-<id> with ICC off (allow mode only). */
static int bridge_create(struct docker_net *n,
                         const char *id,
                         const char *scope,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *body = NULL;
        char name[64];
        int r;

        (void)snprintf(name, sizeof(name), "b4-net-%s", id);
        r = bridge_remove(n, id, err);
        if (r < 0)
                return r;
        body = jv_pack("{s:s, s:s, s:b, s:{s:s}, s:{s:s, s:s}}", "Name", name, "Driver", "bridge",
                       "CheckDuplicate", true, "Options", "com.docker.network.bridge.enable_icc",
                       "false", "Labels", "b4.sandbox", id, "b4.sandbox.scope", scope);
        if (!body)
                return b4_error_set(err, -ENOMEM, "out of memory");
        return docker_call(n->d, "POST", "/networks/create", body, NULL, err);
}

void docker_net_spec_clear(struct docker_net_spec *s)
{
        free(s->resolv_bind);
        *s = (struct docker_net_spec){ 0 };
}

int docker_net_prepare(struct docker_net *n,
                       const char *id,
                       const char *thread_id,
                       const char *scope,
                       const struct b4_policy *p,
                       struct docker_net_spec *ret,
                       struct b4_error *err)
{
        enum docker_net_path path = docker_net_path(n, p);
        cleanup_free char *resolv = NULL;
        struct b4_error e = { 0 };
        struct hostnet hn = { .run_fd = -EBADF };
        char hid[41];
        int r = 0;

        *ret = (struct docker_net_spec){ .mode = "none" };
        if (path == DOCKER_NET_UNKNOWN) {
                (void)pthread_mutex_lock(&n->lock);
                r = b4_error_set_code(err, -EAGAIN, B4_CODE_SANDBOX_UNAVAILABLE,
                                      "Sandbox unavailable: cannot tell whether the Docker daemon "
                                      "runs on this host for the network of thread \"%s\": %s. "
                                      "Run `b4box check`.",
                                      thread_id, n->why);
                (void)pthread_mutex_unlock(&n->lock);
                return r;
        }
        if (path == DOCKER_NET_HOSTNET) { /* a previous keeper's records, if it left any */
                host_id(n, id, hid);
                r = run_dir(n, &hn);
                if (r >= 0)
                        hostnet_teardown(&hn, hid, hid, true);
        }
        /* an allowlist cannot be enforced here: no network at all. (An Internal network
         * is not that: under dockerd --iptables=false it reached the outside, tested.) */
        if (path == DOCKER_NET_BRIDGE && p->network == B4_NETWORK_ALLOW) {
                (void)snprintf(ret->mode, sizeof(ret->mode), "b4-net-%s", id);
                r = bridge_create(n, id, scope, &e);
                return r < 0 ? unavailable(err, &e, r, thread_id, "the Docker network") : 0;
        }
        if (path != DOCKER_NET_HOSTNET || !hostnet_listed(p))
                return 0;
        if (r >= 0)
                r = hostnet_resolv_prepare(&hn, hid, &resolv);
        if (r >= 0 && b4_asprintf(&ret->resolv_bind, "%s:/etc/resolv.conf:ro", resolv) < 0)
                r = -ENOMEM;
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: cannot prepare the resolv.conf of "
                                         "thread \"%s\" in " RUN_DIR ": %s. Run `b4box check`.",
                                         thread_id, strerror(-r));
        return 0;
}

int docker_net_restart(struct docker_net *n,
                       const char *id,
                       const char *thread_id,
                       const struct b4_policy *p,
                       struct b4_error *err)
{
        enum docker_net_path path = docker_net_path(n, p);
        struct docker_net_spec spec;
        int r;

        if (path == DOCKER_NET_NONE || path == DOCKER_NET_BRIDGE)
                return 0;
        r = docker_net_prepare(n, id, thread_id, NULL, p, &spec, err);
        docker_net_spec_clear(&spec);
        return r;
}

/* The keeper's State.Pid and Id. */
static int keeper_pid(struct docker_net *n,
                      const char *name,
                      pid_t *ret_pid,
                      char ret_id[65],
                      struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL;
        char path[96];
        const char *cid;
        int64_t pid;
        int r;

        (void)snprintf(path, sizeof(path), "/containers/%s/json", name);
        r = docker_call(n->d, "GET", path, NULL, &v, err);
        if (r < 0)
                return r;
        pid = jv_integer(jv_object_get(jv_object_get(v, "State"), "Pid"));
        cid = jv_string(jv_object_get(v, "Id"));
        if (pid <= 1 || !cid || strlen(cid) != 64)
                return b4_error_set(err, -ESRCH, "the keeper has no process");
        *ret_pid = (pid_t)pid;
        memcpy(ret_id, cid, 65);
        return 0;
}

/* Whether /proc/@pid/cgroup names container @cid (so @pid is the keeper's, on this host). */
static bool pid_is_container(pid_t pid, const char *cid)
{
        cleanup_free char *cg = NULL;
        char path[64];
        size_t len;

        (void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        return read_file_at(AT_FDCWD, path, 1u << 16, &cg, &len) >= 0 && strstr(cg, cid);
}

/* Whether @nsfd is this process's own network namespace. */
static bool is_own_netns(int nsfd)
{
        struct stat a, b;

        return fstat(nsfd, &a) < 0 || stat("/proc/self/ns/net", &b) < 0 ||
               (a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* The keeper's network namespace, proven to be the container's: the pidfd pins the pid
 * while its cgroup is read and the namespace opened. Return: an fd or a negative errno. */
static int keeper_netns(struct docker_net *n, const char *name, struct b4_error *err)
{
        cleanup_close int pidfd = -EBADF, nsfd = -EBADF;
        struct pollfd pfd;
        char cid[65];
        pid_t pid = 0;
        int r;

        r = keeper_pid(n, name, &pid, cid, err);
        if (r < 0)
                return r;
        pidfd = pidfd_open(pid, 0);
        if (pidfd < 0)
                return b4_error_set(err, -errno, "the keeper's process %d is not on this host",
                                    (int)pid);
        if (!pid_is_container(pid, cid))
                return b4_error_set(err, -ESRCH,
                                    "process %d is not the keeper's (its cgroup does not name the "
                                    "container)",
                                    (int)pid);
        nsfd = hostnet_netns_open(pid);
        if (nsfd < 0)
                return b4_error_set(err, nsfd, "cannot open the keeper's network namespace");
        pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
        if (poll(&pfd, 1, 0) != 0)
                return b4_error_set(err, -ESRCH, "the keeper exited");
        if (is_own_netns(nsfd))
                return b4_error_set(err, -EEXIST, "the keeper shares b4box's network namespace");
        return TAKE_FD(nsfd);
}

int docker_net_attach(struct docker_net *n,
                      const char *id,
                      const char *name,
                      const char *thread_id,
                      const struct b4_policy *p,
                      struct b4_error *err)
{
        cleanup_close int nsfd = -EBADF;
        struct b4_error e = { 0 };
        struct hostnet hn;
        char hid[41];
        int r;

        if (docker_net_path(n, p) != DOCKER_NET_HOSTNET)
                return 0;
        host_id(n, id, hid);
        r = run_dir(n, &hn);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: cannot open " RUN_DIR
                                         " for thread \"%s\": %s. Run `b4box check`.",
                                         thread_id, strerror(-r));
        nsfd = keeper_netns(n, name, &e);
        if (nsfd < 0)
                return unavailable(err, &e, nsfd, thread_id, "the keeper's network");
        r = hostnet_setup(&hn, hid, hid, nsfd, p, &e);
        if (r < 0 && e.code != B4_CODE_NONE) {
                if (err)
                        *err = e;
                return r;
        }
        return r < 0 ? unavailable(err, &e, r, thread_id, "the keeper's network") : 0;
}

int docker_net_revive(struct docker_net *n, const char *id, const struct b4_policy *p)
{
        struct hostnet hn;
        char hid[41];

        if (!hostnet_listed(p) || docker_net_path(n, p) != DOCKER_NET_HOSTNET)
                return 0;
        host_id(n, id, hid);
        if (run_dir(n, &hn) < 0)
                return -EIO;
        return hostnet_lists_revive(&hn, hid, hid, p, NULL);
}

void docker_net_detach(struct docker_net *n, const char *id)
{
        struct hostnet hn;
        char hid[41];
        int path;

        (void)pthread_mutex_lock(&n->lock);
        path = decide(n); /* a fresh process's release: one /info call */
        (void)pthread_mutex_unlock(&n->lock);
        if (path != DOCKER_NET_HOSTNET) /* unknown (the daemon is not answering): both */
                (void)bridge_remove(n, id, NULL);
        if (path == DOCKER_NET_BRIDGE || geteuid() != 0 || run_dir(n, &hn) < 0)
                return;
        host_id(n, id, hid);
        hostnet_teardown(&hn, hid, hid, false);
}

int docker_net_audit(struct docker_net *n, const char *id, char **ret_json, struct b4_error *err)
{
        struct hostnet hn;
        char hid[41];
        size_t len;
        int path, r;

        (void)pthread_mutex_lock(&n->lock);
        path = decide(n);
        (void)pthread_mutex_unlock(&n->lock);
        if (path != DOCKER_NET_HOSTNET || run_dir(n, &hn) < 0)
                return b4_error_set(err, -ENOENT,
                                    "this Docker provider does not plumb its keepers' network "
                                    "(the bridge path): nothing is audited");
        host_id(n, id, hid);
        r = hostnet_audit_read(&hn, hid, ret_json, &len, err);
        if (r == -ENOENT)
                return b4_error_set(err, -ENOENT,
                                    "no b4box-netd runs for this thread: it has no network list "
                                    "(only listed threads are audited), or no live sandbox");
        return r;
}

/* Rows of the bridge path: @why is the reason hostnet is not used. */
static int bridge_rows(struct b4_preflight *p, const char *why)
{
        int r;

        r = b4_preflight_control(
                p, "network allow", B4_NOT_ENFORCED,
                "%s: a per-thread bridge network b4-net-<id> (never the default bridge; "
                "enable_icc off); the metadata address 169.254.169.254 stays reachable, and "
                "other sandboxes' bridges unless dockerd's own iptables isolates them",
                why);
        if (r >= 0)
                r = b4_preflight_control(p, "network allowlist", B4_NOT_ENFORCED,
                                         "%s: an allowlist thread gets NetworkMode none: no egress "
                                         "at all, listed destinations included",
                                         why);
        if (r >= 0)
                r = b4_preflight_control(p, "network denylist", B4_NOT_ENFORCED,
                                         "%s: nothing listed is dropped (the bridge of network "
                                         "allow)",
                                         why);
        if (r >= 0)
                r = b4_preflight_control(p, "network dns", B4_NOT_ENFORCED,
                                         "%s: the container asks Docker's resolver, unfiltered",
                                         why);
        return r;
}

int docker_net_preflight(struct docker_net *n, struct b4_preflight *ret)
{
        char why[sizeof(n->why)];
        int path;

        (void)pthread_mutex_lock(&n->lock);
        path = decide(n);
        memcpy(why, n->why, sizeof(why));
        (void)pthread_mutex_unlock(&n->lock);
        if (path == DOCKER_NET_HOSTNET)
                return hostnet_preflight(ret);
        return bridge_rows(ret, why);
}
