/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the DPDK engine's files share: engine_dpdk.c owns the port and the
 * rx queues, engine_dpdk_eal.c EAL, engine_dpdk_flow.c the port's flow
 * rules, engine_dpdk_vdev.c the drops two vdevs do not count, and
 * engine_dpdk_tx.c (transmit) sets up the tx queues of the same port
 * through these calls. Only files compiled with DPDK's headers include
 * this.
 */
#ifndef DAQIRI_ENGINE_DPDK_INTERNAL_H
#define DAQIRI_ENGINE_DPDK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ethdev.h>

#include "config.h"
#include "engine.h"
#include "flow.h"
#include "mem.h"

/* EAL (engine_dpdk_eal.c), main thread. Start it once per process with
 * the whole config's arguments and count one more user: 0, or a negative
 * errno with err. */
int dpdk_eal_get(const struct cfg *c, char *err, size_t errlen);

/* One user less; the last one cleans EAL up (it cannot start again). */
void dpdk_eal_put(void);

/* True when a is a PCI address, dddd:bb:dd.f or bb:dd.f. */
bool dpdk_is_pci(const char *a);

/* The DPDK port name of interface ifc: its address, or in software
 * loopback the ring port made for it (net_ring_lb<index>, into buf). */
const char *dpdk_port_of(const struct cfg *c, const struct cfg_interface *ifc,
			 char *buf, size_t len);

/*
 * Steer table t's flows on port with rte_flow (engine_dpdk_flow.c): rx
 * queue k of the port is the queue of id queue_ids[k] (k < nq). 0, or a
 * negative errno with why, every rule undone.
 */
/* flow_isolation on a port: rte_flow_isolate() before the port is
 * configured, so the port delivers only what a flow rule takes; 0, or a
 * negative errno with why (the port then delivers everything, and the
 * worker counts what no flow matches as unmatched). engine_dpdk_flow.c */
int dpdk_flow_isolate(uint16_t port, char *why, size_t whylen);
int dpdk_flow_steer(uint16_t port, const uint32_t *queue_ids, int nq,
		    const struct flow_table *t, char *why, size_t whylen);

/*
 * The sockets (AF_PACKET or AF_XDP, domain) of vdev dev on the interface
 * its devargs' iface= names, found among this process's descriptors, into
 * fds[0..max) (engine_dpdk_vdev.c); how many. None found is logged, with
 * ifc_name and port.
 */
int dpdk_vdev_sockets(const struct rte_device *dev, const char *ifc_name,
		      const char *port, int domain, int *fds, int max);

/* What those sockets' rings dropped: AF_PACKET since the last call (the
 * kernel clears it on reading), AF_XDP's rx_ring_full since the socket
 * was made. */
uint64_t dpdk_vdev_drops(int domain, const int *fds, int nfds);

/* The tx queues of one port (engine_dpdk_tx.c). */
struct dpdk_tx;

/* Before rte_eth_dev_configure: the port-level tx offloads the tx
 * queues use (multi-segment frames, checksums) into conf->txmode. */
void dpdk_tx_conf(const struct cfg_interface *ifc,
		  const struct rte_eth_dev_info *info, struct rte_eth_conf *conf);

/*
 * After rte_eth_dev_configure with ifc->tx.nqueues tx queues: check each
 * tx queue's destination, make its mempools and set it up on port
 * (rte_eth_tx_queue_setup). e is the engine the queues belong to. 0 with
 * *out (NULL when ifc has no tx queue), or a negative errno with err.
 * On failure *out may hold a half-built state for dpdk_tx_fini().
 */
int dpdk_tx_init(struct dpdk_tx **out, struct engine *e, uint16_t port,
		 const struct cfg *c, const struct cfg_interface *ifc,
		 const struct mem_region *regions,
		 const struct rte_eth_dev_info *info, char *err, size_t errlen);

/* Free the tx state; after rte_eth_dev_close (the PMD may still hold
 * frames whose free callbacks write into it until then). NULL-safe. */
void dpdk_tx_fini(struct dpdk_tx *t);

/* The tx state of engine e (engine_dpdk.c), NULL when none. */
struct dpdk_tx *dpdk_engine_tx(struct engine *e);

/* Tests only: make dpdk_tx_init() choose the copying path (payload
 * copied behind the headers in one segment) as it does for a port that
 * cannot send multi-segment frames. */
void dpdk_tx_force_copy(bool on);

#endif
