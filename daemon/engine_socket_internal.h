/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the socket engine (engine_socket.c receives,
 * engine_socket_tx.c transmits): the per-interface state both halves
 * hang their queues on, and the transmit half's set-up and teardown,
 * which init and fini call.
 */
#ifndef DAQIRI_ENGINE_SOCKET_INTERNAL_H
#define DAQIRI_ENGINE_SOCKET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"

struct sock_rxq;
struct sock_txq;

struct sock_engine {
	struct engine base;
	char name[CFG_NAME_MAX];
	uint32_t addr;
	uint16_t port;
	int nq;
	struct sock_rxq *q[CFG_MAX_QUEUES];
	int ntxq;
	struct sock_txq *txq[CFG_MAX_QUEUES];
};

/* One connected UDP socket per tx queue of ifc (engine_socket_tx.c):
 * 0, or a negative errno with err naming the queue. Nothing to undo on
 * error beyond sock_tx_fini(). */
int sock_tx_init(struct sock_engine *se, const struct cfg *c,
		 const struct cfg_interface *ifc, char *err, size_t errlen);
void sock_tx_fini(struct sock_engine *se);

#endif
