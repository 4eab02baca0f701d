/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Netlink requests for net.c and netpolicy.c (netlink.h), over raw AF_NETLINK sockets (no
 * library: `b4box` loads none for this): each message is built in a stack buffer, sent with
 * NLM_F_ACK and answered by one NLMSG_ERROR whose error is the result (a get's reply comes
 * before it).
 */

#include "netlink.h"

#include <errno.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"

#define MSG_SIZE 8192 /* a request, or an acknowledgement (an error echoes the request) */

struct nl_sock {
        int fd;
        uint32_t seq;
};

/* A request under construction. */
struct msg {
        union {
                struct nlmsghdr nlh;
                char buf[MSG_SIZE];
        };
};

static struct nl_sock *nl_open(int protocol)
{
        struct nl_sock *nl = b4_calloc(1, sizeof(*nl));

        if (!nl)
                return NULL;
        nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
        if (nl->fd < 0) {
                int e = errno;
                free(nl);
                errno = e;
                return NULL;
        }
        return nl;
}

struct nl_sock *rtnl_open(void)
{
        return nl_open(NETLINK_ROUTE);
}

void rtnl_close(struct nl_sock *nl)
{
        if (!nl)
                return;
        (void)close(nl->fd);
        free(nl);
}

static struct nlmsghdr *start(struct msg *m, uint16_t type, uint16_t flags)
{
        memset(&m->nlh, 0, sizeof(m->nlh));
        m->nlh.nlmsg_len = NLMSG_HDRLEN;
        m->nlh.nlmsg_type = type;
        m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        return &m->nlh;
}

/* Room for @len zeroed bytes at the end of the message (the sizes here are far below
 * MSG_SIZE: names are at most IFNAMSIZ or NFT_NAME_MAXLEN). */
static void *put(struct nlmsghdr *nlh, size_t len)
{
        char *tail = (char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len);

        memset(tail, 0, NLMSG_ALIGN(len));
        nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + (uint32_t)NLMSG_ALIGN(len);
        return tail;
}

static void attr(struct nlmsghdr *nlh, uint16_t type, const void *data, size_t len)
{
        struct nlattr *a = put(nlh, NLA_HDRLEN + len);

        a->nla_type = type;
        a->nla_len = (uint16_t)(NLA_HDRLEN + len);
        memcpy((char *)a + NLA_HDRLEN, data, len);
}

static void attr_str(struct nlmsghdr *nlh, uint16_t type, const char *s)
{
        attr(nlh, type, s, strlen(s) + 1);
}

static void attr_u32(struct nlmsghdr *nlh, uint16_t type, uint32_t v)
{
        attr(nlh, type, &v, sizeof(v));
}

static struct nlattr *nest_start(struct nlmsghdr *nlh, uint16_t type)
{
        struct nlattr *a = put(nlh, NLA_HDRLEN);

        a->nla_type = NLA_F_NESTED | type;
        return a;
}

static void nest_end(struct nlmsghdr *nlh, struct nlattr *a)
{
        a->nla_len = (uint16_t)((char *)nlh + nlh->nlmsg_len - (char *)a);
}

/* Send @nlh and wait for its acknowledgement: 0, or the kernel's negative errno. */
static int talk(struct nl_sock *nl, struct nlmsghdr *nlh)
{
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        struct msg reply;
        ssize_t n;

        nlh->nlmsg_seq = ++nl->seq;
        if (sendto(nl->fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return -errno;
        for (;;) {
                n = recv(nl->fd, reply.buf, sizeof(reply.buf), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                for (size_t off = 0, len; off + NLMSG_HDRLEN <= (size_t)n;
                     off += NLMSG_ALIGN(len)) {
                        struct nlmsghdr *h = (struct nlmsghdr *)(void *)(reply.buf + off);
                        len = h->nlmsg_len;
                        if (len < NLMSG_HDRLEN || len > (size_t)n - off)
                                return -EBADMSG;
                        if (h->nlmsg_seq != nl->seq)
                                continue;
                        if (h->nlmsg_type == NLMSG_DONE)
                                return 0;
                        if (h->nlmsg_type != NLMSG_ERROR)
                                continue; /* a get's reply */
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                return -EBADMSG;
                        return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
                }
        }
}

int rtnl_veth_add(struct nl_sock *nl, const char *host, const char *peer, int netns_fd)
{
        struct msg m;
        struct nlmsghdr *nlh = start(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
        struct ifinfomsg *ifi = put(nlh, sizeof(*ifi));
        struct nlattr *info, *data, *pinfo;

        ifi->ifi_family = AF_UNSPEC;
        attr_str(nlh, IFLA_IFNAME, host);
        info = nest_start(nlh, IFLA_LINKINFO);
        attr_str(nlh, IFLA_INFO_KIND, "veth");
        data = nest_start(nlh, IFLA_INFO_DATA);
        pinfo = nest_start(nlh, VETH_INFO_PEER);
        ifi = put(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        attr_str(nlh, IFLA_IFNAME, peer);
        attr_u32(nlh, IFLA_NET_NS_FD, (uint32_t)netns_fd);
        nest_end(nlh, pinfo);
        nest_end(nlh, data);
        nest_end(nlh, info);
        return talk(nl, nlh);
}

int rtnl_link_del(struct nl_sock *nl, const char *name)
{
        struct msg m;
        struct nlmsghdr *nlh = start(&m, RTM_DELLINK, 0);
        struct ifinfomsg *ifi = put(nlh, sizeof(*ifi));

        ifi->ifi_family = AF_UNSPEC;
        attr_str(nlh, IFLA_IFNAME, name);
        return talk(nl, nlh);
}

int rtnl_link_up(struct nl_sock *nl, unsigned ifindex)
{
        struct msg m;
        struct nlmsghdr *nlh = start(&m, RTM_NEWLINK, 0);
        struct ifinfomsg *ifi = put(nlh, sizeof(*ifi));

        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = (int)ifindex;
        ifi->ifi_flags = IFF_UP;
        ifi->ifi_change = IFF_UP;
        return talk(nl, nlh);
}

int rtnl_addr4_add(struct nl_sock *nl, unsigned ifindex, const uint8_t addr[4], unsigned prefix)
{
        struct msg m;
        struct nlmsghdr *nlh = start(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
        struct ifaddrmsg *ifa = put(nlh, sizeof(*ifa));

        ifa->ifa_family = AF_INET;
        ifa->ifa_prefixlen = (uint8_t)prefix;
        ifa->ifa_scope = RT_SCOPE_UNIVERSE;
        ifa->ifa_index = ifindex;
        attr(nlh, IFA_LOCAL, addr, 4);
        attr(nlh, IFA_ADDRESS, addr, 4);
        return talk(nl, nlh);
}

int rtnl_route4_default(struct nl_sock *nl, unsigned ifindex, const uint8_t gw[4])
{
        struct msg m;
        struct nlmsghdr *nlh = start(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
        struct rtmsg *rtm = put(nlh, sizeof(*rtm));

        rtm->rtm_family = AF_INET;
        rtm->rtm_table = RT_TABLE_MAIN;
        rtm->rtm_protocol = RTPROT_BOOT;
        rtm->rtm_scope = RT_SCOPE_UNIVERSE;
        rtm->rtm_type = RTN_UNICAST;
        attr(nlh, RTA_GATEWAY, gw, 4);
        attr_u32(nlh, RTA_OIF, ifindex);
        return talk(nl, nlh);
}

int nft_inet_set_exists(const char *table, const char *set)
{
        struct nl_sock *nl = nl_open(NETLINK_NETFILTER);
        struct msg m;
        struct nlmsghdr *nlh;
        struct nfgenmsg *nfg;
        int r;

        if (!nl)
                return -errno;
        nlh = start(&m, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSET, 0);
        nfg = put(nlh, sizeof(*nfg));
        nfg->nfgen_family = NFPROTO_INET;
        nfg->version = NFNETLINK_V0;
        attr_str(nlh, NFTA_SET_TABLE, table);
        attr_str(nlh, NFTA_SET_NAME, set);
        r = talk(nl, nlh);
        rtnl_close(nl);
        return r;
}
