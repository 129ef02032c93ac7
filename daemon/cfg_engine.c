/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each engine can do, in one table: the address forms its interfaces
 * take, whether it needs socket_config, where received frames and sent
 * payloads may live, whether it writes Ethernet headers. The config
 * checker and the daemon ask here instead of branching on stream_type,
 * the reference library's word, which the parser translates into an
 * engine once. Pure.
 */
#include <stddef.h>

#include "config.h"

static const struct cfg_engine_traits traits[CFG_ENGINE_MAX] = {
	[CFG_ENGINE_DPDK] = {
		.name = "dpdk",
		.stream_type = "raw",
		.addr_ipv4 = false,
		.socket_config = false,
		.rx_device = true,
		.rx_split = true,
		.tx_device = true,
		.tx_l2 = true,
		.eal_args = true,
		.rx_headroom = CFG_DPDK_MBUF_HEADROOM,
		.steer_by = "NIC (rte_flow)",
		.spread_by = "port (RSS)",
		.sw_loopback = true,
	},
	[CFG_ENGINE_SOCKET] = {
		.name = "socket",
		.stream_type = "socket",
		.addr_ipv4 = true,
		.socket_config = true,
		.rx_device = false,
		.rx_split = false,
		.tx_device = true,
		.tx_l2 = false,
		.eal_args = false,
		.rx_headroom = 0,
		.steer_by = "kernel (a BPF program on the queues' reuseport "
		    "group)",
		.spread_by = "kernel (its reuseport hash)",
		.sw_loopback = false,
	},
};

const struct cfg_engine_traits *
cfg_engine_traits(enum cfg_engine e)
{
	return (unsigned)e < CFG_ENGINE_MAX ? &traits[e] : NULL;
}

const struct cfg_engine_traits *
cfg_iface_traits(const struct cfg *c, const struct cfg_interface *ifc)
{
	(void)ifc;	/* one engine for every interface, for now */
	return cfg_engine_traits(c->engine);
}
