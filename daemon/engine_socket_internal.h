/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the socket engine (engine_socket.c receives,
 * engine_socket_tx.c transmits): the per-interface state both halves
 * hang their queues on, and the transmit half's set-up and teardown,
 * which init and fini call.
 */
#ifndef DAQIRI_ENGINE_SOCKET_INTERNAL_H
#define DAQIRI_ENGINE_SOCKET_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"

struct sock_rxq;
struct sock_txq;

/* The peer a reply_peer tx queue sends to: IPv4 address << 16 | UDP
 * port, with SOCK_PEER_SET; 0 until a datagram arrived. */
#define SOCK_PEER_SET		(1ull << 48)
#define SOCK_PEER_PACK(a, p)	(SOCK_PEER_SET | (uint64_t)(a) << 16 | (p))
#define SOCK_PEER_ADDR(v)	((uint32_t)((v) >> 16))
#define SOCK_PEER_PORT(v)	((uint16_t)(v))

struct sock_engine {
	struct engine base;
	char name[CFG_NAME_MAX];
	uint32_t addr;
	uint16_t port;
	int nq;
	struct sock_rxq *q[CFG_MAX_QUEUES];
	int ntxq;
	struct sock_txq *txq[CFG_MAX_QUEUES];
	/*
	 * The source of the datagram the interface received last, for its
	 * reply_peer tx queues (cfg_tx_dest). Set before start when one
	 * has such a queue (want_peer); then every rx worker stores each
	 * message's source when it differs (relaxed: the value is one
	 * word, its order against other memory does not matter) and the
	 * tx workers load it once per burst.
	 */
	bool want_peer;
	_Atomic uint64_t peer;
};

/* One connected UDP socket per tx queue of ifc (engine_socket_tx.c):
 * 0, or a negative errno with err naming the queue. Nothing to undo on
 * error beyond sock_tx_fini(). */
int sock_tx_init(struct sock_engine *se, const struct cfg *c,
		 const struct cfg_interface *ifc, char *err, size_t errlen);
void sock_tx_fini(struct sock_engine *se);

/* The socket of rx queue qi (engine_socket.c), -1 when there is none;
 * the caller does not own it. */
int sock_rx_fd(const struct sock_engine *se, int qi);

#endif
