/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network "allow": a per-thread veth pair and NAT, set up by the provider after the keeper's
 * (empty) network namespace exists and torn down at release.
 *   host side  b4h<12 hex of hid>  10.233.<n>.1/30     sandbox side  eth0  10.233.<n>.2/30,
 *   default route via the host side (hid = native_host_id(), unique per state dir). The /30
 *   is claimed with an O_EXCL file /run/b4box/net-<n> (linear probing from the hid), and
 *   remembered in run/<id>.net.
 *   iptables (each rule tagged "--comment b4box:<hid>", removed by that tag):
 *     nat POSTROUTING -s <subnet> ! -o b4h.. -j MASQUERADE
 *     INPUT  -i b4h.. -j DROP                       the host's own addresses, all of them
 *     FORWARD -i b4h.. -d 169.254.0.0/16 -j DROP    cloud metadata and link-local
 *     FORWARD -i b4h.. -o b4h+ -j DROP               other sandboxes
 *     FORWARD -i b4h.. -j ACCEPT, FORWARD -o b4h.. ESTABLISHED,RELATED -j ACCEPT
 *   IPv6 (audit H4): allow mode is IPv4 only. disable_ipv6=1 on both ends before they go up
 *   (no link-local address, so nothing of the host is reachable over fe80::), and as a belt
 *   ip6tables INPUT/FORWARD -i b4h.. -j DROP, tagged and removed like the IPv4 rules.
 * Network lists (a denylist in allow mode, an allowlist in deny mode; netpolicy.c): the same
 * veth and NAT, minus the iptables INPUT and 169.254.0.0/16 DROPs (the `inet b4box` table
 * drops the host but for the thread's b4box-netd, and link-local and metadata unless the
 * allowlist names the metadata address exactly), plus the thread's elements and its netd. The
 * delete commands are kept in run/<id>.nft for the teardown. `ip`, `iptables` and `ip6tables` are
 * exec'd (fixed paths, empty environment but PATH); the in-sandbox half runs `ip` in a forked child
 * that setns()es into the keeper's network namespace. Needs net.ipv4.ip_forward=1 in the provider's
 * namespace: it is checked, never changed.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "native.h"
#include "netpolicy.h"

#define SUBNETS    16384 /* /30s in 10.233.0.0/16 */
#define OUT_MAX    (1u << 20)
#define TAG_PREFIX "b4box:"

static const char *const ip_paths[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };
static const char *const ipt_paths[] = { "/usr/sbin/iptables", "/sbin/iptables",
                                         "/usr/bin/iptables" };
static const char *const ip6t_paths[] = { "/usr/sbin/ip6tables", "/sbin/ip6tables",
                                          "/usr/bin/ip6tables" };

static const char *find_exe(const char *const *paths, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

/* Whether this network namespace has IPv6 at all (not booted with ipv6.disable=1). */
static bool has_ipv6(void)
{
        return access("/proc/sys/net/ipv6/conf", F_OK) == 0;
}

int net_available(const char **ret_why)
{
        cleanup_free char *fwd = NULL;
        size_t len;

        if (geteuid() != 0)
                return *ret_why = "rootless mode (not root) cannot create them", -EPERM;
        if (!find_exe(ip_paths, ELEMENTSOF(ip_paths)))
                return *ret_why = "the ip tool (iproute2) is not installed", -ENOENT;
        if (!find_exe(ipt_paths, ELEMENTSOF(ipt_paths)))
                return *ret_why = "iptables is not installed", -ENOENT;
        if (has_ipv6() && !find_exe(ip6t_paths, ELEMENTSOF(ip6t_paths)))
                return *ret_why = "ip6tables is not installed (the kernel has IPv6)", -ENOENT;
        if (read_file_at(AT_FDCWD, "/proc/sys/net/ipv4/ip_forward", 16, &fwd, &len) < 0 ||
            fwd[0] != '1')
                return *ret_why = "net.ipv4.ip_forward is not 1", -ENETDOWN;
        *ret_why = NULL;
        return 0;
}

/* Run argv (in @netns_fd's network namespace when >= 0); capture stdout when asked. */
static int run(int netns_fd, const char *const argv[], char **ret_out)
{
        char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        int p[2] = { -EBADF, -EBADF };
        size_t len;
        int status, r = 0;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                r = -errno;
                safe_close(p[0]);
                safe_close(p[1]);
                return r;
        }
        if (pid == 0) {
                int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                if ((netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) < 0) || null_fd < 0 ||
                    dup3(null_fd, STDIN_FILENO, 0) < 0 || dup3(p[1], STDOUT_FILENO, 0) < 0 ||
                    dup3(null_fd, STDERR_FILENO, 0) < 0)
                        _exit(126);
                execve(argv[0], (char *const *)argv, envp);
                _exit(127);
        }
        p[1] = safe_close(p[1]);
        if (ret_out)
                r = read_full_fd(p[0], OUT_MAX, ret_out, &len);
        else
                while (read(p[0], &status, sizeof(status)) > 0)
                        ;
        safe_close(p[0]);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                r = -EIO;
        return r;
}

#define RUN(fd, ...) run((fd), (const char *const[]){ __VA_ARGS__, NULL }, NULL)

/* Write "1" to @path (a disable_ipv6 sysctl); async-signal-safe. */
static int write_one(const char *path)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC), r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, "1", 1);
        (void)close(fd);
        return r;
}

/* Disable IPv6 on @ifname, in @netns_fd's namespace when >= 0 (net sysctls are those of the
 * namespace the opener is in, so a forked child joins it first). */
static int ipv6_off(int netns_fd, const char *ifname)
{
        char path[96];
        int status;
        pid_t pid;

        if (!has_ipv6())
                return 0;
        (void)snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
        if (netns_fd < 0)
                return write_one(path);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                _exit(setns(netns_fd, CLONE_NEWNET) < 0 || write_one(path) < 0 ? 1 : 0);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Subnets are host-wide (several state dirs may share a network namespace): their O_EXCL
 * claims live in /run/b4box, or in the state dir when /run is not writable. */
static int alloc_dir(struct native_provider *np)
{
        int fd;

        if (mkdir("/run/b4box", 0700) < 0 && errno != EEXIST)
                return fcntl(np->run_fd, F_DUPFD_CLOEXEC, 3);
        fd = open("/run/b4box", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd >= 0 ? fd : fcntl(np->run_fd, F_DUPFD_CLOEXEC, 3);
}

static int alloc_subnet(struct native_provider *np, const char *hid, unsigned *ret)
{
        unsigned start =
                (unsigned)strtoul((char[5]){ hid[0], hid[1], hid[2], hid[3], 0 }, NULL, 16);
        cleanup_close int dfd = alloc_dir(np);

        if (dfd < 0)
                return -errno;
        for (unsigned k = 0; k < SUBNETS; k++) {
                unsigned n = (start + k) % SUBNETS;
                char name[32];
                (void)snprintf(name, sizeof(name), "net-%u", n);
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0 && errno == EEXIST)
                        continue;
                if (fd < 0)
                        return -errno;
                int r = write_all(fd, hid, strlen(hid));
                safe_close(fd);
                if (r < 0)
                        return r;
                *ret = n;
                return 0;
        }
        return -ENOSPC;
}

static void addr(unsigned n, unsigned host, char *buf, size_t size)
{
        unsigned v = n * 4 + host;

        (void)snprintf(buf, size, "10.233.%u.%u", v >> 8, v & 255);
}

/* The iptables rules of one thread, in insertion order (each -I goes on top). A listed thread
 * gets neither the INPUT DROP nor the 169.254.0.0/16 DROP: the table's input chain lets its
 * netd be reached and drops the rest of the host, and its mode chains drop link-local and
 * metadata unless the allowlist names the metadata address exactly. */
static int add_rules(
        const char *ipt, const char *veth, const char *subnet, const char *tag, bool listed)
{
        int r;

        r = RUN(-1, ipt, "-w", "-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-o", veth,
                "-m", "comment", "--comment", tag, "-j", "MASQUERADE");
        if (r >= 0)
                r = RUN(-1, ipt, "-w", "-I", "FORWARD", "-o", veth, "-m", "conntrack", "--ctstate",
                        "ESTABLISHED,RELATED", "-m", "comment", "--comment", tag, "-j", "ACCEPT");
        if (r >= 0)
                r = RUN(-1, ipt, "-w", "-I", "FORWARD", "-i", veth, "-m", "comment", "--comment",
                        tag, "-j", "ACCEPT");
        if (r >= 0)
                r = RUN(-1, ipt, "-w", "-I", "FORWARD", "-i", veth, "-o", "b4h+", "-m", "comment",
                        "--comment", tag, "-j", "DROP");
        if (r >= 0 && !listed)
                r = RUN(-1, ipt, "-w", "-I", "FORWARD", "-i", veth, "-d", "169.254.0.0/16", "-m",
                        "comment", "--comment", tag, "-j", "DROP");
        if (r >= 0 && !listed)
                r = RUN(-1, ipt, "-w", "-I", "INPUT", "-i", veth, "-m", "comment", "--comment", tag,
                        "-j", "DROP");
        return r;
}

/* IPv6 from the sandbox goes nowhere: not to the host, not forwarded (the belt behind
 * disable_ipv6, should anything turn it back on). */
static int add_rules6(const char *ip6t, const char *veth, const char *tag)
{
        int r;

        if (!has_ipv6())
                return 0;
        r = RUN(-1, ip6t, "-w", "-I", "FORWARD", "-i", veth, "-m", "comment", "--comment", tag,
                "-j", "DROP");
        if (r >= 0)
                r = RUN(-1, ip6t, "-w", "-I", "INPUT", "-i", veth, "-m", "comment", "--comment",
                        tag, "-j", "DROP");
        return r;
}

static void names(const char *id, char host[16], char peer[16])
{
        (void)snprintf(host, 16, "b4h%.12s", id);
        (void)snprintf(peer, 16, "b4s%.12s", id);
}

/* Whether an `iptables -S` line carries the comment @tag (printed quoted or not). */
static bool has_tag(const char *line, const char *tag)
{
        char plain[96], quoted[96];

        (void)snprintf(plain, sizeof(plain), "--comment %s", tag);
        (void)snprintf(quoted, sizeof(quoted), "--comment \"%s\"", tag);
        for (const char *n = plain; n; n = n == plain ? quoted : NULL) {
                const char *hit = strstr(line, n);
                if (hit && (hit[strlen(n)] == ' ' || hit[strlen(n)] == '\0'))
                        return true;
        }
        return false;
}

/* Delete every rule of @table whose comment is exactly @tag. */
static void drop_rules(const char *ipt, const char *table, const char *tag)
{
        cleanup_free char *out = NULL;

        if (run(-1, (const char *const[]){ ipt, "-w", "-t", table, "-S", NULL }, &out) < 0)
                return;
        for (char *line = out, *next; line && *line; line = next) {
                const char *argv[72] = { ipt, "-w", "-t", table };
                size_t n = 4;
                char *save = NULL;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, "-A ", 3) != 0 || !has_tag(line, tag))
                        continue;
                line[1] = 'D';
                for (char *tok = strtok_r(line, " ", &save); tok && n < ELEMENTSOF(argv) - 1;
                     tok = strtok_r(NULL, " ", &save)) {
                        size_t len = strlen(tok);
                        if (len >= 2 && tok[0] == '"' && tok[len - 1] == '"') {
                                tok[len - 1] = '\0';
                                tok++;
                        }
                        argv[n++] = tok;
                }
                argv[n] = NULL;
                (void)run(-1, (const char *const *)argv, NULL);
        }
}

int net_resolv_prepare(struct native_provider *np, const char *id, char **ret)
{
        char name[64];
        int fd;

        (void)snprintf(name, sizeof(name), "%s.resolv", id);
        fd = openat(np->run_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        safe_close(fd);
        return b4_asprintf(ret, "%s/%s", np->run_dir, name) < 0 ? -ENOMEM : 0;
}

/* Write the thread's nameserver into run/<id>.resolv in place (the sandbox binds that inode;
 * any address would do, as every :53 packet goes to netd, but the gateway reads honestly). */
static int write_resolv(struct native_provider *np, const char *id, const char *gw)
{
        char name[64], text[160];
        int fd, r;

        (void)snprintf(name, sizeof(name), "%s.resolv", id);
        (void)snprintf(text, sizeof(text),
                       "# b4box: every DNS query goes to b4box-netd\n"
                       "nameserver %s\noptions timeout:2 attempts:2\n",
                       gw);
        fd = openat(np->run_fd, name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = write_all(fd, text, strlen(text));
        safe_close(fd);
        return r;
}

/* Delete a listed thread's elements (run/<id>.nft) and stop its netd; its pins expire. */
static void lists_teardown(struct native_provider *np, const char *id)
{
        cleanup_free char *text = NULL;
        char name[64];
        size_t len;

        (void)snprintf(name, sizeof(name), "%s.nft", id);
        if (read_file_at(np->run_fd, name, 1u << 22, &text, &len) >= 0)
                (void)netpolicy_run(text, NULL);
        (void)unlinkat(np->run_fd, name, 0);
        (void)snprintf(name, sizeof(name), "%s.resolv", id);
        (void)unlinkat(np->run_fd, name, 0);
        netd_stop(np, id);
}

void net_teardown(struct native_provider *np, const char *id, const char *hid)
{
        cleanup_free char *buf = NULL;
        const char *ip = find_exe(ip_paths, ELEMENTSOF(ip_paths));
        const char *ipt = find_exe(ipt_paths, ELEMENTSOF(ipt_paths));
        const char *ip6t = find_exe(ip6t_paths, ELEMENTSOF(ip6t_paths));
        char name[64], host[16], peer[16], tag[64];
        size_t len;

        (void)snprintf(name, sizeof(name), "%s.net", id);
        if (read_file_at(np->run_fd, name, 32, &buf, &len) < 0)
                return;
        names(hid, host, peer);
        (void)snprintf(tag, sizeof(tag), TAG_PREFIX "%s", hid);
        lists_teardown(np, id);
        if (ip)
                (void)RUN(-1, ip, "link", "del", host);
        if (ipt) {
                drop_rules(ipt, "filter", tag);
                drop_rules(ipt, "nat", tag);
        }
        if (ip6t)
                drop_rules(ip6t, "filter", tag);
        char sub[32];
        cleanup_close int dfd = alloc_dir(np);
        (void)snprintf(sub, sizeof(sub), "net-%lu", strtoul(buf, NULL, 10));
        if (dfd >= 0)
                (void)unlinkat(dfd, sub, 0);
        (void)unlinkat(np->run_fd, name, 0);
}

struct net_tools {
        const char *ip, *ipt, *ip6t;
};

static int configure(const struct net_tools *t, const char *hid, pid_t pid, unsigned n, bool listed)
{
        char host[16], peer[16], tag[64], pids[16], hip[32], hcidr[40], scidr[40], subnet[40];
        char nspath[64];
        cleanup_close int nsfd = -EBADF;
        int r;

        names(hid, host, peer);
        (void)snprintf(tag, sizeof(tag), TAG_PREFIX "%s", hid);
        (void)snprintf(pids, sizeof(pids), "%d", (int)pid);
        addr(n, 1, hip, sizeof(hip));
        (void)snprintf(hcidr, sizeof(hcidr), "%s/30", hip);
        addr(n, 2, scidr, sizeof(scidr));
        (void)strncat(scidr, "/30", sizeof(scidr) - strlen(scidr) - 1);
        addr(n, 0, subnet, sizeof(subnet));
        (void)strncat(subnet, "/30", sizeof(subnet) - strlen(subnet) - 1);
        (void)snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)pid);
        nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
        if (nsfd < 0)
                return -errno;
        r = RUN(-1, t->ip, "link", "add", host, "type", "veth", "peer", "name", peer);
        if (r >= 0)
                r = RUN(-1, t->ip, "link", "set", peer, "netns", pids);
        if (r >= 0)
                r = ipv6_off(-1, host);
        if (r >= 0)
                r = RUN(-1, t->ip, "addr", "add", hcidr, "dev", host);
        if (r >= 0)
                r = RUN(-1, t->ip, "link", "set", host, "up");
        if (r >= 0)
                r = RUN(nsfd, t->ip, "link", "set", peer, "name", "eth0");
        if (r >= 0)
                r = ipv6_off(nsfd, "eth0");
        if (r >= 0)
                r = RUN(nsfd, t->ip, "addr", "add", scidr, "dev", "eth0");
        if (r >= 0)
                r = RUN(nsfd, t->ip, "link", "set", "eth0", "up");
        if (r >= 0)
                r = RUN(nsfd, t->ip, "route", "add", "default", "via", hip);
        if (r >= 0)
                r = add_rules6(t->ip6t, host, tag);
        if (r >= 0)
                r = add_rules(t->ipt, host, subnet, tag, listed);
        return r;
}

/* The table, the thread's netd, then its elements (the mode element last: the sandbox runs
 * nothing before acquire returns, and from then on every new flow meets the lists). */
static int lists_setup(struct native_provider *np,
                       const char *id,
                       const char *hid,
                       unsigned n,
                       const struct b4_policy *p,
                       struct b4_error *err)
{
        cleanup_free char *add = NULL, *del = NULL;
        char host[16], peer[16], gw[32], sbx[32], name[64];
        struct netpolicy_thread t = { 0 };
        int r;

        names(hid, host, peer);
        addr(n, 1, gw, sizeof(gw));
        addr(n, 2, sbx, sizeof(sbx));
        t.ifindex = if_nametoindex(host);
        if (t.ifindex == 0 || inet_pton(AF_INET, sbx, t.sandbox) != 1)
                return b4_error_set(err, -ENODEV, "cannot find the veth '%s'", host);
        if (!netpolicy_has_upstream(p))
                return b4_error_set_code(err, -ENETUNREACH, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: the network list names hosts but "
                                         "there is no upstream resolver (no nameserver in "
                                         "/etc/resolv.conf). Set sandbox.network.dns.upstream.");
        r = netpolicy_table_install(err);
        if (r >= 0)
                r = netd_start(np, id, p, t.ifindex, gw, &t.netd_port, err);
        if (r >= 0 && (netpolicy_thread_text(p, &t, true, &add) < 0 ||
                       netpolicy_thread_text(p, &t, false, &del) < 0))
                r = b4_error_set(err, -ENOMEM, "cannot compile the network lists");
        (void)snprintf(name, sizeof(name), "%s.nft", id);
        if (r >= 0 && (r = write_file_atomic_at(np->run_fd, name, del, strlen(del), 0600)) < 0)
                b4_error_set(err, r, "cannot record the network lists of sandbox %s", id);
        if (r >= 0)
                r = netpolicy_run(add, err);
        if (r >= 0 && (r = write_resolv(np, id, gw)) < 0)
                b4_error_set(err, r, "cannot write the resolv.conf of sandbox %s", id);
        return r;
}

/* Whether @pid is a zombie (a dead netd whose reaper has not come by yet). */
static bool is_zombie(int pid)
{
        cleanup_free char *stat = NULL;
        char path[32];
        const char *paren;
        size_t len;

        (void)snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        if (read_file_at(AT_FDCWD, path, 4096, &stat, &len) < 0)
                return true;
        paren = strrchr(stat, ')');
        return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* Whether thread @id's recorded netd is alive (same pid and start time, not a zombie). */
static bool netd_alive(struct native_provider *np, const char *id)
{
        cleanup_free char *buf = NULL;
        unsigned long long st = 0;
        char name[64];
        uint64_t now;
        size_t len;
        int pid = 0;

        (void)snprintf(name, sizeof(name), "%s.netd", id);
        return read_file_at(np->run_fd, name, 64, &buf, &len) >= 0 &&
               sscanf(buf, "%d %llu", &pid, &st) == 2 && pid > 1 &&
               proc_starttime(pid, &now) == 0 && now == st && !is_zombie(pid);
}

int net_lists_revive(struct native_provider *np,
                     const char *id,
                     const struct b4_policy *p,
                     struct b4_error *err)
{
        cleanup_free char *old = NULL, *add = NULL, *del = NULL, *num = NULL, *batch = NULL;
        char hid[41], host[16], peer[16], gw[32], sbx[32], net_name[64], name[64];
        struct netpolicy_thread t = { 0 };
        size_t len;
        unsigned n;
        int r;

        if (netd_alive(np, id))
                return 0;
        native_host_id(np, id, hid);
        names(hid, host, peer);
        (void)snprintf(net_name, sizeof(net_name), "%s.net", id);
        (void)snprintf(name, sizeof(name), "%s.nft", id);
        if (read_file_at(np->run_fd, net_name, 32, &num, &len) < 0 ||
            read_file_at(np->run_fd, name, 1u << 22, &old, &len) < 0)
                return b4_error_set(err, -ENOENT, "sandbox %s has no network lists to revive", id);
        n = (unsigned)strtoul(num, NULL, 10);
        addr(n, 1, gw, sizeof(gw));
        addr(n, 2, sbx, sizeof(sbx));
        t.ifindex = if_nametoindex(host);
        if (t.ifindex == 0 || inet_pton(AF_INET, sbx, t.sandbox) != 1)
                return b4_error_set(err, -ENODEV, "cannot find the veth '%s'", host);
        /* the old one is gone (or a zombie): its record is overwritten, its log kept */
        r = netd_start(np, id, p, t.ifindex, gw, &t.netd_port, err);
        if (r >= 0 && (netpolicy_thread_text(p, &t, true, &add) < 0 ||
                       netpolicy_thread_text(p, &t, false, &del) < 0 ||
                       b4_asprintf(&batch, "%s%s", old, add) < 0))
                r = b4_error_set(err, -ENOMEM, "cannot compile the network lists");
        /* the old elements out and the new in, in one transaction: never unfiltered */
        if (r >= 0)
                r = netpolicy_run(batch, err);
        if (r >= 0 && (r = write_file_atomic_at(np->run_fd, name, del, strlen(del), 0600)) < 0)
                b4_error_set(err, r, "cannot record the network lists of sandbox %s", id);
        return r;
}

int net_setup(struct native_provider *np,
              const char *id,
              const char *hid,
              pid_t pid,
              const struct b4_policy *p,
              struct b4_error *err)
{
        bool listed = netpolicy_listed(p);
        const char *why = NULL;
        char name[64], num[16];
        unsigned n = 0;
        int r;

        r = net_available(&why);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: network \"allow\" needs a veth and "
                                         "NAT but %s. Use network \"deny\" or fix the host. Run "
                                         "`b4box check`.",
                                         why);
        r = alloc_subnet(np, hid, &n);
        if (r < 0)
                return b4_error_set(err, r, "cannot allocate a sandbox subnet");
        (void)snprintf(name, sizeof(name), "%s.net", id);
        (void)snprintf(num, sizeof(num), "%u", n);
        r = write_string_at(np->run_fd, name, num);
        if (r == -ENOENT) {
                int fd = openat(np->run_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                r = fd < 0 ? -errno : write_all(fd, num, strlen(num));
                safe_close(fd);
        }
        struct net_tools t = { .ip = find_exe(ip_paths, ELEMENTSOF(ip_paths)),
                               .ipt = find_exe(ipt_paths, ELEMENTSOF(ipt_paths)),
                               .ip6t = find_exe(ip6t_paths, ELEMENTSOF(ip6t_paths)) };
        if (r >= 0 && (r = configure(&t, hid, pid, n, listed)) < 0)
                b4_error_set(err, r, "cannot set up the veth and NAT of sandbox %s", id);
        if (r >= 0 && listed)
                r = lists_setup(np, id, hid, n, p, err);
        if (r < 0) {
                net_teardown(np, id, hid);
                return r;
        }
        return 0;
}
