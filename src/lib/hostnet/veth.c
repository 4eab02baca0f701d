/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network "allow": a per-thread veth pair, its addresses and routes made over rtnetlink
 * (netlink.c) into a sandbox's existing, empty network namespace (a native keeper's, a
 * Docker container's), and the thread's elements
 * in the host-side `inet b4box` table (b4box.nft, libnftables); nothing is exec'd.
 *   host side  b4h<12 hex of hid>  10.233.<n>.1/30     sandbox side  eth0  10.233.<n>.2/30,
 *   default route via the host side (hid: the provider's, unique on the host). The /30
 *   is claimed with an O_EXCL file /run/b4box/net-<n> (linear probing from the hid), and
 *   remembered in run/<id>.net. The peer is created in the sandbox's namespace as eth0; a
 *   short-lived thread setns()es there to open a NETLINK_ROUTE socket and write a sysctl.
 *   Elements (keyed by the host veth's ifindex): masq4 (MASQUERADE when it leaves by a
 *   non-b4h interface), src4 (anti-spoof) and mode: goto open_mode, whose rules reject
 *   link-local (169.254.0.0/16, metadata) and let the rest out; the table's input chain drops
 *   everything for the host (IPv4 and IPv6), its forward chain other sandboxes, IPv6 and new
 *   flows into the sandbox. The delete commands are kept in run/<id>.nft for the teardown.
 *   IPv6 (audit H4): allow mode is IPv4 only. disable_ipv6=1 on both ends before they go up
 *   (no link-local address, so nothing of the host is reachable over fe80::); the table is
 *   the belt.
 * Network lists (a denylist in allow mode, an allowlist in deny mode; netpolicy.c): the same
 * veth and masq4, the list's elements (mode: goto allow_mode / deny_mode) and its netd.
 * Coexistence: a FORWARD policy of DROP in iptables-nft's `ip filter` table (Docker's) would
 * drop what this table accepts, so accepts for b4h* are appended there once (forward_coexist).
 * Needs net.ipv4.ip_forward=1 in the provider's namespace: it is checked, never changed.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <net/if.h>
#include <pthread.h>
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
#include "base/proc-util.h"
#include "base/strbuf.h"
#include "hostnet.h"
#include "internal.h"
#include "netlink.h"
#include "netpolicy.h"
#include "nft-dl.h"
#include "nft-elems.h"

#define SUBNETS     16384 /* /30s in 10.233.0.0/16 */
#define PEER        "eth0"
#define COEXIST_TAG "b4box-coexist"

/* Whether this network namespace has IPv6 at all (not booted with ipv6.disable=1). */
static bool has_ipv6(void)
{
        return access("/proc/sys/net/ipv6/conf", F_OK) == 0;
}

/* Root and forwarding only: the nf_tables probe (a dry run of the table, which loads
 * libnftables) is preflight's (netpolicy_probe()); acquire installs the table and reports a
 * refusal, and a warm exec must not pay for either. */
int hostnet_available(const char **ret_why)
{
        cleanup_free char *fwd = NULL;
        size_t len;

        if (geteuid() != 0)
                return *ret_why = "rootless mode (not root) cannot create them", -EPERM;
        if (read_file_at(AT_FDCWD, "/proc/sys/net/ipv4/ip_forward", 16, &fwd, &len) < 0 ||
            fwd[0] != '1')
                return *ret_why = "net.ipv4.ip_forward is not 1", -ENETDOWN;
        *ret_why = NULL;
        return 0;
}

/* Disable IPv6 on @ifname in the calling thread's network namespace (net sysctls are those
 * of the namespace the opener is in). */
static int ipv6_off(const char *ifname)
{
        char path[96];
        int fd, r;

        if (!has_ipv6())
                return 0;
        (void)snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = write_all(fd, "1", 1);
        safe_close(fd);
        return r;
}

/* Subnets are host-wide (several state dirs may share a network namespace): their O_EXCL
 * claims live in /run/b4box, or in the state dir when /run is not writable. */
static int alloc_dir(const struct hostnet *hn)
{
        int fd;

        if (mkdir("/run/b4box", 0700) < 0 && errno != EEXIST)
                return fcntl(hn->run_fd, F_DUPFD_CLOEXEC, 3);
        fd = open("/run/b4box", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd >= 0 ? fd : fcntl(hn->run_fd, F_DUPFD_CLOEXEC, 3);
}

int hostnet_claims_open(const struct hostnet *hn)
{
        return alloc_dir(hn);
}

static int alloc_subnet(const struct hostnet *hn, const char *hid, unsigned *ret)
{
        unsigned start =
                (unsigned)strtoul((char[5]){ hid[0], hid[1], hid[2], hid[3], 0 }, NULL, 16);
        cleanup_close int dfd = alloc_dir(hn);

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

/* Address @host (0 the network, 1 the host side, 2 the sandbox) of /30 number @n. */
static void addr4(unsigned n, unsigned host, uint8_t out[4])
{
        unsigned v = n * 4 + host;

        out[0] = 10;
        out[1] = 233;
        out[2] = (uint8_t)(v >> 8);
        out[3] = (uint8_t)(v & 255);
}

static void addr(unsigned n, unsigned host, char *buf, size_t size)
{
        uint8_t a[4];

        addr4(n, host, a);
        (void)inet_ntop(AF_INET, a, buf, (socklen_t)size);
}

static void host_name(const char *hid, char host[16])
{
        (void)snprintf(host, 16, "b4h%.12s", hid);
}

int hostnet_resolv_prepare(const struct hostnet *hn, const char *id, char **ret)
{
        char name[64];
        int fd;

        (void)snprintf(name, sizeof(name), "%s.resolv", id);
        fd = openat(hn->run_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        safe_close(fd);
        return b4_asprintf(ret, "%s/%s", hn->run_dir, name) < 0 ? -ENOMEM : 0;
}

/* Write the thread's nameserver into run/<id>.resolv in place (the sandbox binds that inode;
 * any address would do, as every :53 packet goes to netd, but the gateway reads honestly). */
static int write_resolv(const struct hostnet *hn, const char *id, const char *gw)
{
        char name[64], text[160];
        int fd, r;

        (void)snprintf(name, sizeof(name), "%s.resolv", id);
        (void)snprintf(text, sizeof(text),
                       "# b4box: every DNS query goes to b4box-netd\n"
                       "nameserver %s\noptions timeout:2 attempts:2\n",
                       gw);
        fd = openat(hn->run_fd, name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = write_all(fd, text, strlen(text));
        safe_close(fd);
        return r;
}

/* What hostnet_setup() made for @id: netd and the records here, the rest by hostnet_gone(). */
void hostnet_teardown(const struct hostnet *hn, const char *id, const char *hid, bool wait)
{
        cleanup_free char *buf = NULL, *text = NULL;
        char name[64], nft[64], host[16];
        size_t len;

        (void)snprintf(name, sizeof(name), "%s.net", id);
        if (read_file_at(hn->run_fd, name, 32, &buf, &len) < 0)
                return;
        host_name(hid, host);
        netd_stop(hn, id);
        (void)snprintf(nft, sizeof(nft), "%s.nft", id);
        if (read_file_at(hn->run_fd, nft, 1u << 22, &text, &len) < 0)
                text = NULL;
        /* a record of another boot names nothing that exists: only the files go */
        if (!text || hostnet_record_body(text))
                hostnet_gone(hn, (unsigned)strtoul(buf, NULL, 10), if_nametoindex(host),
                             text ? hostnet_record_body(text) : NULL, wait);
        (void)unlinkat(hn->run_fd, nft, 0);
        (void)snprintf(nft, sizeof(nft), "%s.resolv", id);
        (void)unlinkat(hn->run_fd, nft, 0);
        (void)unlinkat(hn->run_fd, name, 0);
}

struct sandbox_side {
        int nsfd;           /* in: the sandbox's network namespace */
        struct nl_sock *nl; /* out: a NETLINK_ROUTE socket there */
        unsigned ifindex;   /* out: eth0's index there */
        int r;
};

/* A short-lived thread joins the sandbox's namespace (setns() moves only the calling thread)
 * to disable IPv6 on eth0, open the socket and find eth0; the caller's namespace never
 * changes, and the socket stays in the sandbox's after the thread is gone. */
static void *sandbox_side_thread(void *data)
{
        struct sandbox_side *s = data;

        s->r = setns(s->nsfd, CLONE_NEWNET) < 0 ? -errno : ipv6_off(PEER);
        if (s->r >= 0 && !(s->nl = rtnl_open()))
                s->r = -errno;
        if (s->r >= 0 && (s->ifindex = if_nametoindex(PEER)) == 0)
                s->r = -errno;
        return NULL;
}

static int sandbox_side(struct sandbox_side *s)
{
        pthread_t tid;
        int r = pthread_create(&tid, NULL, sandbox_side_thread, s);

        if (r != 0)
                return -r;
        (void)pthread_join(tid, NULL);
        return s->r;
}

int hostnet_netns_open(pid_t pid)
{
        char path[64];
        int fd;

        (void)snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
}

bool hostnet_listed(const struct b4_policy *p)
{
        return netpolicy_listed(p);
}

/* The veth pair, its addresses, link state and the sandbox's default route. */
static int configure(const char *hid, int nsfd, unsigned n)
{
        uint8_t hip[4], sip[4];
        char host[16];
        struct sandbox_side sb = { .nsfd = -EBADF };
        struct nl_sock *nl = NULL;
        unsigned hidx = 0;
        int r;

        host_name(hid, host);
        addr4(n, 1, hip);
        addr4(n, 2, sip);
        nl = rtnl_open();
        r = nl ? rtnl_veth_add(nl, host, PEER, nsfd) : -errno;
        if (r == -EEXIST && rtnl_link_del(nl, host) >= 0) /* a release still deleting it */
                r = rtnl_veth_add(nl, host, PEER, nsfd);
        if (r >= 0)
                r = ipv6_off(host);
        if (r >= 0 && (hidx = if_nametoindex(host)) == 0)
                r = -errno;
        if (r >= 0)
                r = rtnl_addr4_add(nl, hidx, hip, 30);
        if (r >= 0)
                r = rtnl_link_up(nl, hidx);
        sb.nsfd = nsfd;
        if (r >= 0)
                r = sandbox_side(&sb);
        if (r >= 0)
                r = rtnl_addr4_add(sb.nl, sb.ifindex, sip, 30);
        if (r >= 0)
                r = rtnl_link_up(sb.nl, sb.ifindex);
        if (r >= 0)
                r = rtnl_route4_default(sb.nl, sb.ifindex, hip);
        rtnl_close(sb.nl);
        rtnl_close(nl);
        return r;
}

/* Run nft @cmd; *@ret_out is its output (new) when it succeeded. */
static int nft_query(const char *cmd, char **ret_out)
{
        const struct nft_dl *nft = nft_dl(NULL);
        struct nft_ctx *ctx;
        int r = -EIO;

        if (!nft)
                return -EOPNOTSUPP;
        ctx = nft->ctx_new(NFT_CTX_DEFAULT);
        if (!ctx)
                return -ENOMEM;
        (void)nft->buffer_output(ctx);
        (void)nft->buffer_error(ctx);
        if (nft->run_cmd_from_buffer(ctx, cmd) == 0) {
                const char *out = nft->get_output_buffer(ctx);
                *ret_out = strdup(out ? out : "");
                r = *ret_out ? 0 : -ENOMEM;
        }
        nft->ctx_free(ctx);
        return r;
}

int hostnet_forward_state(const char **ret_what)
{
        cleanup_free char *out = NULL;
        cleanup_free char *legacy = NULL;
        uint32_t policy = NF_ACCEPT;
        size_t len;

        if (read_file_at(AT_FDCWD, "/proc/net/ip_tables_names", 4096, &legacy, &len) >= 0 &&
            strstr(legacy, "filter"))
                return *ret_what = "legacy iptables has a filter table: a FORWARD policy of "
                                   "DROP there would drop allow-mode traffic, and b4box "
                                   "cannot add its accepts to it",
                       -EOPNOTSUPP;
        /* one netlink query says the common case (no such chain, or policy accept) without
         * loading libnftables; only a drop policy needs the rules listed */
        if (nft_ip_chain_policy("filter", "FORWARD", &policy) < 0 || policy != NF_DROP ||
            nft_query("list chain ip filter FORWARD", &out) < 0 || !strstr(out, "policy drop"))
                return *ret_what = "no FORWARD policy of DROP", 0;
        if (strstr(out, COEXIST_TAG))
                return *ret_what = "iptables-nft FORWARD policy DROP: b4box's accepts for b4h* "
                                   "are appended to it",
                       1;
        return *ret_what = "iptables-nft FORWARD policy DROP: b4box appends accepts for b4h* "
                           "at the first allow-mode acquire",
               2;
}

/* Every base chain on the forward hook runs and a drop anywhere is final, so a FORWARD policy
 * of DROP in iptables-nft's `ip filter` (Docker sets one) would drop what inet b4box accepts.
 * Append, once, accepts for b4h* there: they come after every rule of the chain (an admin's
 * or Docker's drops still apply), and inet b4box has already dropped what a thread may not
 * send. A legacy iptables table is out of reach without exec: reported by `b4box check`. */
static int forward_coexist(struct b4_error *err)
{
        const char *what = NULL;

        if (hostnet_forward_state(&what) != 2)
                return 0;
        return netpolicy_run(
                "add rule ip filter FORWARD iifname \"b4h*\" accept comment \"" COEXIST_TAG
                "\"\nadd rule ip filter FORWARD oifname \"b4h*\" accept comment \"" COEXIST_TAG
                "\"\n",
                err);
}

/* The table, a listed thread's netd, then the thread's elements. */
static int elements_setup(const struct hostnet *hn,
                          const char *id,
                          const char *hid,
                          unsigned n,
                          const struct b4_policy *p,
                          struct b4_error *err)
{
        cleanup_free char *record = NULL;
        bool listed = netpolicy_listed(p);
        char host[16], gw[32], name[64];
        struct netpolicy_thread t = { 0 };
        struct nft_elems add = { 0 };
        int r;

        host_name(hid, host);
        addr(n, 1, gw, sizeof(gw));
        addr4(n, 2, t.sandbox);
        t.ifindex = if_nametoindex(host);
        if (t.ifindex == 0)
                return b4_error_set(err, -ENODEV, "cannot find the veth '%s'", host);
        if (listed && !netpolicy_has_upstream(p))
                return b4_error_set_code(err, -ENETUNREACH, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: the network list names hosts but "
                                         "there is no upstream resolver (no nameserver in "
                                         "/etc/resolv.conf). Set sandbox.network.dns.upstream.");
        r = netpolicy_table_install(err);
        if (r >= 0)
                r = forward_coexist(err);
        if (r >= 0 && listed)
                r = netd_start(hn, id, p, t.ifindex, gw, &t.netd_port, err);
        if (r >= 0 &&
            (netpolicy_thread_elems(p, &t, &add) < 0 || nft_elems_format(&add, &record) < 0))
                r = b4_error_set(err, -ENOMEM, "cannot compile the network elements");
        (void)snprintf(name, sizeof(name), "%s.nft", id);
        if (r >= 0 && (r = hostnet_record_write(hn->run_fd, name, record)) < 0)
                b4_error_set(err, r, "cannot record the network elements of sandbox %s", id);
        if (r >= 0)
                r = nft_elems_commit(NULL, &add, err);
        if (r >= 0 && listed && (r = write_resolv(hn, id, gw)) < 0)
                b4_error_set(err, r, "cannot write the resolv.conf of sandbox %s", id);
        nft_elems_release(&add);
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
static bool netd_alive(const struct hostnet *hn, const char *id)
{
        cleanup_free char *buf = NULL;
        unsigned long long st = 0;
        char name[64];
        uint64_t now;
        size_t len;
        int pid = 0;

        (void)snprintf(name, sizeof(name), "%s.netd", id);
        return read_file_at(hn->run_fd, name, 64, &buf, &len) >= 0 &&
               sscanf(buf, "%d %llu", &pid, &st) == 2 && pid > 1 &&
               proc_starttime(pid, &now) == 0 && now == st && !is_zombie(pid);
}

int hostnet_lists_revive(const struct hostnet *hn,
                         const char *id,
                         const char *hid,
                         const struct b4_policy *p,
                         struct b4_error *err)
{
        cleanup_free char *old = NULL, *num = NULL, *record = NULL;
        char host[16], gw[32], net_name[64], name[64];
        struct nft_elems del = { 0 }, add = { 0 };
        struct netpolicy_thread t = { 0 };
        size_t len;
        unsigned n;
        int r;

        if (netd_alive(hn, id))
                return 0;
        host_name(hid, host);
        (void)snprintf(net_name, sizeof(net_name), "%s.net", id);
        (void)snprintf(name, sizeof(name), "%s.nft", id);
        if (read_file_at(hn->run_fd, net_name, 32, &num, &len) < 0 ||
            read_file_at(hn->run_fd, name, 1u << 22, &old, &len) < 0)
                return b4_error_set(err, -ENOENT, "sandbox %s has no network lists to revive", id);
        n = (unsigned)strtoul(num, NULL, 10);
        addr(n, 1, gw, sizeof(gw));
        addr4(n, 2, t.sandbox);
        t.ifindex = if_nametoindex(host);
        if (t.ifindex == 0)
                return b4_error_set(err, -ENODEV, "cannot find the veth '%s'", host);
        /* the old one is gone (or a zombie): its record is overwritten, its log kept */
        r = netd_start(hn, id, p, t.ifindex, gw, &t.netd_port, err);
        if (r >= 0 &&
            (!hostnet_record_body(old) || nft_elems_parse(hostnet_record_body(old), &del) < 0))
                r = b4_error_set(err, -EINVAL, "the network record of sandbox %s is unreadable",
                                 id);
        if (r >= 0 &&
            (netpolicy_thread_elems(p, &t, &add) < 0 || nft_elems_format(&add, &record) < 0))
                r = b4_error_set(err, -ENOMEM, "cannot compile the network lists");
        /* the old elements out and the new in, in one transaction: never unfiltered; the
         * thread's pin sets stay, with netd's pins (the record names them still) */
        if (r >= 0) {
                nft_elems_keep_pins(&del, &add);
                r = nft_elems_commit(&del, &add, err);
        }
        if (r >= 0 && (r = hostnet_record_write(hn->run_fd, name, record)) < 0)
                b4_error_set(err, r, "cannot record the network lists of sandbox %s", id);
        nft_elems_release(&del);
        nft_elems_release(&add);
        return r;
}

int hostnet_setup(const struct hostnet *hn,
                  const char *id,
                  const char *hid,
                  int netns_fd,
                  const struct b4_policy *p,
                  struct b4_error *err)
{
        const char *why = NULL;
        char name[64], num[16];
        unsigned n = 0;
        int r;

        r = hostnet_available(&why);
        if (r < 0)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: network \"allow\" needs a veth and "
                                         "NAT but %s. Use network \"deny\" or fix the host. Run "
                                         "`b4box check`.",
                                         why);
        r = alloc_subnet(hn, hid, &n);
        if (r < 0)
                return b4_error_set(err, r, "cannot allocate a sandbox subnet");
        (void)snprintf(name, sizeof(name), "%s.net", id);
        (void)snprintf(num, sizeof(num), "%u", n);
        r = write_string_at(hn->run_fd, name, num);
        if (r == -ENOENT) {
                int fd = openat(hn->run_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                r = fd < 0 ? -errno : write_all(fd, num, strlen(num));
                safe_close(fd);
        }
        if (r >= 0 && (r = configure(hid, netns_fd, n)) < 0)
                b4_error_set(err, r, "cannot set up the veth of sandbox %s", id);
        if (r >= 0)
                r = elements_setup(hn, id, hid, n, p, err);
        if (r < 0) {
                hostnet_teardown(hn, id, hid, true);
                return r;
        }
        return 0;
}
