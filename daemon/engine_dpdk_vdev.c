/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What two of DPDK's virtual devices lose without counting it, read from
 * their sockets: net_af_packet's kernel ring drops (PACKET_STATISTICS,
 * which the PMD never asks for) and net_af_xdp's rx ring overflows
 * (XDP_STATISTICS rx_ring_full; the PMD counts only rx_dropped). The
 * engine adds them to the port's `kernel` count, so rx + kernel = sent
 * holds on these devices too. Main thread finds the sockets at start; the
 * queue's worker reads them with the port's counters.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

#include "engine_dpdk_begin.h"

#ifdef DPDK_HAVE_HEADERS

#include <rte_config.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

#include "engine_dpdk_internal.h"

/* Ports of driver drv in this process. */
static int
dpdk_driver_ports(const char *drv)
{
	struct rte_eth_dev_info info;
	uint16_t p;
	int n = 0;

	RTE_ETH_FOREACH_DEV(p)
		if (rte_eth_dev_info_get(p, &info) == 0 &&
		    info.driver_name != NULL &&
		    strcmp(info.driver_name, drv) == 0)
			n++;
	return n;
}

/*
 * Drops two PMDs do not count. net_af_packet never asks the kernel what
 * its ring dropped (no PACKET_STATISTICS in DPDK 22.11); net_af_xdp
 * counts XDP_STATISTICS' rx_dropped as imissed, but not rx_ring_full
 * (frames the XDP socket's rx ring had no room for). So frames were lost
 * and counted nowhere. Find the PMD's sockets on its interface (iface= of
 * its devargs) among this process's descriptors, for the port's counters
 * to ask (dpdk_vdev_drops()); none found leaves that count out, said once.
 */
int
dpdk_vdev_sockets(const struct rte_device *dev, const char *ifc_name,
		  const char *port, int domain, int *fds, int max)
{
	const struct rte_devargs *da = rte_dev_devargs(dev);
	const char *a = da != NULL ? da->args : NULL, *p;
	char ifname[IF_NAMESIZE] = "";
	unsigned ifindex;
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (a == NULL || (p = strstr(a, "iface=")) == NULL)
		return 0;
	p += 6;
	for (size_t i = 0; i + 1 < sizeof(ifname) && p[i] != '\0' &&
	    p[i] != ','; i++) {
		ifname[i] = p[i];
		ifname[i + 1] = '\0';
	}
	if ((ifindex = if_nametoindex(ifname)) == 0 ||
	    (d = opendir("/proc/self/fd")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		union {
			struct sockaddr_ll ll;
			struct sockaddr_xdp xdp;
		} sa;
		socklen_t len = sizeof(int);
		int fd = atoi(e->d_name), dom = 0;
		unsigned idx;

		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) != 0 ||
		    dom != domain)
			continue;
		len = sizeof(sa);
		memset(&sa, 0, sizeof(sa));
		/* an XDP socket does not say where it is bound: with one
		 * af_xdp port in the process, every one is its */
		if (domain == AF_XDP && dpdk_driver_ports("net_af_xdp") == 1)
			idx = ifindex;
		else if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
			continue;
		else
			idx = domain == AF_PACKET ?
			    (unsigned)sa.ll.sll_ifindex : sa.xdp.sxdp_ifindex;
		if (idx == ifindex)
			fds[n++] = fd;
	}
	closedir(d);
	if (n == 0)
		log_warnx("interface '%s': port '%s': no %s socket on '%s' "
		    "found: frames its ring drops are not counted", ifc_name,
		    port, domain == AF_PACKET ? "AF_PACKET" : "AF_XDP", ifname);
	else
		log_debug("interface '%s': port '%s': %d %s socket(s) on '%s': "
		    "their rings' drops count as kernel", ifc_name, port, n,
		    domain == AF_PACKET ? "AF_PACKET" : "AF_XDP", ifname);
	return n;
}

uint64_t
dpdk_vdev_drops(int domain, const int *fds, int nfds)
{
	uint64_t n = 0;

	for (int i = 0; i < nfds; i++) {
		struct tpacket_stats_v3 ps;
		struct xdp_statistics xs;
		socklen_t len;

		if (domain == AF_PACKET) {
			len = sizeof(ps);
			memset(&ps, 0, sizeof(ps));
			if (getsockopt(fds[i], SOL_PACKET,
			    PACKET_STATISTICS, &ps, &len) == 0)
				n += ps.tp_drops;
		} else {
			len = sizeof(xs);
			memset(&xs, 0, sizeof(xs));
			if (getsockopt(fds[i], SOL_XDP, XDP_STATISTICS,
			    &xs, &len) == 0)
				n += xs.rx_ring_full;
		}
	}
	return n;
}

#include "engine_dpdk_end.h"

#endif /* DPDK_HAVE_HEADERS */
