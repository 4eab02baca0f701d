/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Netlink requests for net.c and netpolicy.c (netlink.h): each message is built in a stack
 * buffer, sent with NLM_F_ACK and answered by one NLMSG_ERROR whose error is the result.
 */

#include "netlink.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MSG_SIZE 8192 /* a request, or an acknowledgement (an error echoes the request) */

static struct mnl_socket *nl_open(int protocol)
{
        struct mnl_socket *nl = mnl_socket_open2(protocol, SOCK_CLOEXEC);

        if (nl && mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int e = errno;
                (void)mnl_socket_close(nl);
                errno = e;
                return NULL;
        }
        return nl;
}

struct mnl_socket *rtnl_open(void)
{
        return nl_open(NETLINK_ROUTE);
}

void rtnl_close(struct mnl_socket *nl)
{
        if (nl)
                (void)mnl_socket_close(nl);
}

static struct nlmsghdr *start(char *buf, uint16_t type, uint16_t flags)
{
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

        nlh->nlmsg_type = type;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        nlh->nlmsg_seq = (uint32_t)time(NULL);
        return nlh;
}

/* Send @nlh and wait for its acknowledgement. */
static int talk(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
        char buf[MSG_SIZE];
        uint32_t seq = nlh->nlmsg_seq, portid = mnl_socket_get_portid(nl);
        ssize_t n;
        int r;

        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        do {
                n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
                if (n < 0)
                        return -errno;
                r = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
        } while (r == MNL_CB_OK);
        return r < 0 ? -errno : 0;
}

int rtnl_veth_add(struct mnl_socket *nl, const char *host, const char *peer, int netns_fd)
{
        char buf[MSG_SIZE];
        struct nlmsghdr *nlh = start(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
        struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        struct nlattr *info, *data, *pinfo;

        ifi->ifi_family = AF_UNSPEC;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, host);
        info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
        mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
        data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
        pinfo = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
        mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)netns_fd);
        mnl_attr_nest_end(nlh, pinfo);
        mnl_attr_nest_end(nlh, data);
        mnl_attr_nest_end(nlh, info);
        return talk(nl, nlh);
}

int rtnl_link_del(struct mnl_socket *nl, const char *name)
{
        char buf[MSG_SIZE];
        struct nlmsghdr *nlh = start(buf, RTM_DELLINK, 0);
        struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

        ifi->ifi_family = AF_UNSPEC;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
        return talk(nl, nlh);
}

int rtnl_link_up(struct mnl_socket *nl, unsigned ifindex)
{
        char buf[MSG_SIZE];
        struct nlmsghdr *nlh = start(buf, RTM_NEWLINK, 0);
        struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = (int)ifindex;
        ifi->ifi_flags = IFF_UP;
        ifi->ifi_change = IFF_UP;
        return talk(nl, nlh);
}

int rtnl_addr4_add(struct mnl_socket *nl, unsigned ifindex, const uint8_t addr[4], unsigned prefix)
{
        char buf[MSG_SIZE];
        struct nlmsghdr *nlh = start(buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
        struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));

        ifa->ifa_family = AF_INET;
        ifa->ifa_prefixlen = (uint8_t)prefix;
        ifa->ifa_scope = RT_SCOPE_UNIVERSE;
        ifa->ifa_index = ifindex;
        mnl_attr_put(nlh, IFA_LOCAL, 4, addr);
        mnl_attr_put(nlh, IFA_ADDRESS, 4, addr);
        return talk(nl, nlh);
}

int rtnl_route4_default(struct mnl_socket *nl, unsigned ifindex, const uint8_t gw[4])
{
        char buf[MSG_SIZE];
        struct nlmsghdr *nlh = start(buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
        struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

        rtm->rtm_family = AF_INET;
        rtm->rtm_table = RT_TABLE_MAIN;
        rtm->rtm_protocol = RTPROT_BOOT;
        rtm->rtm_scope = RT_SCOPE_UNIVERSE;
        rtm->rtm_type = RTN_UNICAST;
        mnl_attr_put(nlh, RTA_GATEWAY, 4, gw);
        mnl_attr_put_u32(nlh, RTA_OIF, ifindex);
        return talk(nl, nlh);
}

int nft_inet_set_exists(const char *table, const char *set)
{
        char buf[MSG_SIZE];
        struct mnl_socket *nl = nl_open(NETLINK_NETFILTER);
        struct nlmsghdr *nlh;
        struct nfgenmsg *nfg;
        int r;

        if (!nl)
                return -errno;
        nlh = start(buf, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSET, 0);
        nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
        nfg->nfgen_family = NFPROTO_INET;
        nfg->version = NFNETLINK_V0;
        mnl_attr_put_strz(nlh, NFTA_SET_TABLE, table);
        mnl_attr_put_strz(nlh, NFTA_SET_NAME, set);
        r = talk(nl, nlh);
        (void)mnl_socket_close(nl);
        return r;
}
