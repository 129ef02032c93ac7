/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packet engines (DESIGN.md "Engines"): the strategy that receives
 * Ethernet frames for one interface into its queues' memory regions and
 * hands them to the RX workers, burst by burst, without copying.
 */
#ifndef DAQIRI_ENGINE_H
#define DAQIRI_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "flow.h"
#include "mem.h"
#include "rx_frame.h"

/* Ethernet (14) + IPv4 without options (20) + UDP (8): the synthetic
 * header of the socket engine, and where datagrams start in its buffers. */
#define ENGINE_SYNTH_HDR_LEN	42
/* Largest UDP payload of one IPv4 datagram (also of one GRO read). */
#define ENGINE_UDP_MAX_PAYLOAD	65507
/* Most frames one rx_burst() returns. */
#define ENGINE_MAX_BURST	1024
/* Longest error text init() writes (including the NUL). */
#define ENGINE_ERR_MAX		256

/* Counters of one rx queue since init; monotonic. */
struct engine_stats {
	uint64_t rx_packets;		/* frames handed out by rx_burst() */
	uint64_t rx_bytes;		/* their frame bytes (hdr + payload) */
	uint64_t kernel;		/* dropped before we read them
					 * (SO_RXQ_OVFL / SO_MEMINFO: socket
					 * buffer full). The kernel counts
					 * buffers: with UDP_GRO one drop may
					 * be a coalesced run of datagrams, so
					 * this is a lower bound then */
	uint64_t truncated;		/* datagrams longer than a buffer
					 * (MSG_TRUNC): malformed, never handed
					 * out, not in rx_packets */
	uint64_t errors;		/* failed receive calls */
	uint64_t bursts;		/* receive calls that returned data */
	uint64_t gro_reads;		/* reads that held more than one
					 * datagram (UDP_GRO) */
	uint64_t direct;		/* frames whose payload was received
					 * straight into a hinted destination
					 * (engine_ops.set_place) */
};

/*
 * Direct placement: where the payloads of the next datagrams are expected
 * to go (DESIGN.md "Engines"). The worker hands it to set_place() just
 * before an rx_burst(), for that call only; the engine may read payloads
 * of payload_len bytes at frame offset payload_off straight into dst[0],
 * dst[1], ... in arrival order, and then marks each such frame (struct
 * rx_frame.stash). A datagram of another shape, or more datagrams than
 * there are destinations, is received as always; a destination it wrote
 * but that frame did not end up in holds garbage. So a destination must be
 * memory the worker lets the engine scribble on (a slot not yet filled).
 */
struct rx_place {
	uint32_t payload_off;		/* frame offset of the payload */
	uint32_t payload_len;		/* its bytes in every datagram */
	uint32_t n;			/* destinations, at most
					 * ENGINE_MAX_BURST */
	uint8_t *const *dst;
};

/* How rx_burst() waits. */
enum engine_rx_mode {
	ENGINE_RX_BLOCKING,		/* sleep in ppoll() up to the timeout */
	ENGINE_RX_BUSY_POLL,		/* spin on non-blocking reads up to the
					 * timeout (burns the worker's core) */
	ENGINE_RX_MODE_MAX
};

/* Options of init(); a zeroed struct means the defaults. */
struct engine_opts {
	enum engine_rx_mode rx_mode;	/* default blocking */
	uint64_t rcvbuf_bytes;		/* socket: SO_RCVBUF per queue; 0 = the
					 * queue's buffer bytes, at least
					 * ENGINE_RCVBUF_MIN */
	bool no_gro;			/* socket: leave UDP_GRO off */
	/* replay: the files and how to play them (engine_replay.h) */
	const struct replay_cfg *replay;
};
/* A socket buffer that rides out a few ms of the worker being descheduled
 * at 5 GB/s; with 4 MiB, 30 s at 2 GB/s on loopback lost 219 datagrams
 * (kernel), with 64 MiB none. Kernel memory is only used while a
 * backlog exists. */
#define ENGINE_RCVBUF_MIN	(64u << 20)

struct engine_ops;
struct engine_tx_ops;
struct replay_cfg;

/* Every engine's per-interface state begins with this (the rest is the
 * engine's own), and every queue's with struct engine_rxq. */
struct engine {
	const struct engine_ops *ops;
};

struct engine_rxq {
	struct engine *engine;
	int qi;				/* index into ifc->rx.queues */
	uint32_t queue_id;		/* cfg_queue.id */
};

/*
 * The engine strategy. init/start/steer/fini run on the main
 * thread; rxq() hands a queue to its worker, and from then on rx_burst,
 * release and stats of that queue are called only by that worker thread.
 */
struct engine_ops {
	const char *name;

	/*
	 * Set up interface ifc of config c (validated): open and bind what
	 * receives (the socket engine binds every socket here, so address
	 * errors show at start-up), and carve each rx queue's buffers out of
	 * the memory region the queue names (regions[] indexed like
	 * c->regions, created by mem_regions_create(); with two regions the
	 * last one takes the data). opts NULL = defaults. Returns 0 and *out,
	 * or a negative errno and a message in err ("interface 'X': ...").
	 */
	int (*init)(struct engine **out, const struct cfg *c,
		    const struct cfg_interface *ifc, struct mem_region *regions,
		    const struct engine_opts *opts, char *err, size_t errlen);

	/* Start receiving (0 or a negative errno). */
	int (*start)(struct engine *e);

	/* The handle of rx queue qi (index into ifc->rx.queues), NULL when out
	 * of range. */
	struct engine_rxq *(*rxq)(struct engine *e, int qi);

	/*
	 * Receive up to max (<= ENGINE_MAX_BURST) frames into f[]. Waits at
	 * most timeout_ns when nothing is there (0 = do not wait, < 0 = until
	 * a frame arrives or the wake fd is readable). Returns the number of
	 * frames, 0 on timeout or wake-up, or a negative errno (-ENOBUFS: every
	 * buffer is held by unreleased frames). rx_ns is read once per receive
	 * call (CLOCK_MONOTONIC, after the call returned): frames of one read
	 * share it. At most two system calls per burst, none per frame.
	 */
	int (*rx_burst)(struct engine_rxq *q, struct rx_frame *f,
			unsigned max, int64_t timeout_ns);

	/*
	 * Return the n oldest frames not yet released to the engine; their
	 * buffers may be reused by the next rx_burst(). Frames are released in
	 * the order they were received; the worker copies or converts what it
	 * needs first. Releasing more than are held releases all.
	 */
	void (*release)(struct engine_rxq *q, unsigned n);

	/*
	 * Steer the frames of table t's flows to their queues before any
	 * queue sees them (first match wins, as flow_route()), on the main
	 * thread after start() and whenever the interface's table changes;
	 * a flow with several queues spreads over them (the engine's way:
	 * RSS, the UDP source port). 0: every flow of t now arrives at its
	 * queues (the worker still classifies: steering only picks the
	 * queue); a negative errno: the engine cannot (-EOPNOTSUPP) or the
	 * kernel or NIC refused, with a message in why, and frames keep
	 * arriving where the port or the kernel spreads them. With one rx
	 * queue there is nothing to steer: 0. NULL: never.
	 */
	int (*steer)(struct engine *e, const struct flow_table *t, char *why,
		     size_t whylen);

	/* Copy the queue's counters into *out (0 or a negative errno). */
	int (*stats)(struct engine_rxq *q, struct engine_stats *out);

	/*
	 * Let rx_burst() also return 0 as soon as fd is readable (the worker's
	 * command eventfd); the engine never reads it. -1 = none (default).
	 * Blocking mode polls it with the socket; busy-poll mode checks it
	 * every ENGINE_BUSY_WAKE_SPINS empty reads.
	 */
	void (*set_wake_fd)(struct engine_rxq *q, int fd);

	/*
	 * Optional (NULL: -1). An fd that is readable whenever rx_burst()
	 * of q would return frames without waiting (the socket), or -1 when
	 * there is none (busy-poll mode, DPDK): a thread that polls several
	 * queues sleeps in one ppoll() on theirs (worker.c).
	 */
	int (*rx_fd)(struct engine_rxq *q);

	/*
	 * Optional (NULL: the engine never places directly). Hint the next
	 * rx_burst() of q where payloads go (struct rx_place, above); pl is
	 * read during that call only, NULL = no hint. Worker thread of q.
	 */
	void (*set_place)(struct engine_rxq *q, const struct rx_place *pl);

	/*
	 * Optional (NULL: the wall clock, CLOCK_MONOTONIC). The clock of
	 * q's frames and of its worker's loop: the replay engine's virtual
	 * clock, which runs on the capture's timestamps and advances by
	 * the timeouts rx_burst() was given (engine_replay.c). The worker
	 * then takes its streams' "now" from here, not from the wall
	 * clock, and waits for buffers instead of dropping batches
	 * (worker.c "Replay"). Worker thread of q.
	 */
	uint64_t (*now_ns)(struct engine_rxq *q);

	/* Transmit (NULL: the engine does not transmit). */
	const struct engine_tx_ops *tx;

	/* Close and free everything. NULL-safe, safe on a half-built engine.
	 * Workers must have stopped calling into its queues. */
	void (*fini)(struct engine *e);
};
#define ENGINE_BUSY_WAKE_SPINS	256

/*
 * Transmit (DESIGN.md "TX"). One engine_txq per configured tx queue; the
 * payloads come from a consumer's channel pool (daemon/tx.h) and the
 * engine writes every header from the configuration (the queue's
 * destination: the socket engine's connected UDP socket, the DPDK
 * engine's Ethernet/IPv4/UDP template), so a payload can reach only the
 * address the configuration names.
 */
struct engine_txq {
	struct engine *engine;
	int qi;				/* index into ifc->tx.queues */
	uint32_t queue_id;		/* cfg_queue.id */
	uint32_t max_payload;		/* largest payload tx_burst() takes:
					 * the region's buf_size, the UDP
					 * limit, max_payload_size and (DPDK)
					 * the port's MTU less the headers */
	bool device;			/* the channels' pools are device
					 * memory (the queue's region is
					 * kind device): tx_burst() gets
					 * device pointers */
	int gpu;			/* their GPU ordinal (device only) */
};

/* One payload to send. tag is the caller's (the channel and buffer it
 * came from); tx_done() hands it back once the engine no longer reads
 * data. */
struct engine_tx_pkt {
	const void *data;
	uint32_t len;			/* <= txq->max_payload */
	uint64_t tag;
};

/* Counters of one tx queue since init; monotonic. */
struct engine_tx_stats {
	uint64_t tx_packets;		/* payloads handed to the kernel/NIC */
	uint64_t tx_bytes;		/* their payload bytes */
	uint64_t errors;		/* payloads the engine failed to send */
	uint64_t calls;			/* sendmmsg / rte_eth_tx_burst calls */
	uint64_t full;			/* calls that found the queue full */
	uint64_t gso_sends;		/* socket: messages sent with
					 * UDP_SEGMENT (several payloads) */
	uint64_t copied;		/* DPDK: payloads copied behind the
					 * headers, not sent zero copy */
	uint64_t staged;		/* socket: payloads in device memory
					 * copied to host memory to be sent */
	uint64_t staged_bytes;		/* their bytes */
};

struct engine_tx_ops {
	/* The handle of tx queue qi (index into ifc->tx.queues), NULL when
	 * out of range or the interface has no tx. Main thread, after init. */
	struct engine_txq *(*txq)(struct engine *e, int qi);

	/*
	 * Send up to n payloads, in order, from the tx worker of q only.
	 * With q->device each data is a device pointer whose bytes the
	 * channel's owner finished writing before it submitted (PROTOCOL.md
	 * "TX channels"); the engine sends them from there or stages them.
	 * Returns how many were accepted (0..n). When fewer than n: *err is
	 * -EAGAIN when the queue is full (p[ret] was not tried: offer it
	 * again later), or another negative errno when p[ret] itself failed
	 * (the caller drops it, counted engine_error, and goes on with
	 * p[ret + 1]): -EDESTADDRREQ says the queue replies to the peer
	 * that sent last and none has (counted no_peer). *err is 0 when
	 * all were accepted. An accepted
	 * payload's memory may be read until tx_done() returns its tag.
	 */
	int (*tx_burst)(struct engine_txq *q, const struct engine_tx_pkt *p,
			unsigned n, int *err);

	/*
	 * Tags of accepted payloads the engine no longer reads, up to max,
	 * in any order (the socket engine copies in sendmmsg: at once; DPDK
	 * with external mbufs: when the PMD frees them). Tx worker only.
	 */
	unsigned (*tx_done)(struct engine_txq *q, uint64_t *tags, unsigned max);

	/* Copy the queue's counters into *out (0 or a negative errno). */
	int (*tx_stats)(struct engine_txq *q, struct engine_tx_stats *out);
};

/* The tx ops of an engine kind (NULL when it has none). Each engine
 * sets them up for its tx queues in init(). */
extern const struct engine_tx_ops engine_socket_tx_ops;
extern const struct engine_tx_ops engine_dpdk_tx_ops;

/* The socket engine (engine_socket.c) and the DPDK engine (engine_dpdk.c);
 * the replay engine is engine_replay.h's. */
extern const struct engine_ops engine_socket_ops;
extern const struct engine_ops engine_dpdk_ops;

/*
 * The address the socket engine's rx sockets are bound to (host byte
 * order; the port the kernel picked when the config says port 0). 0, or
 * -EINVAL when e is not a socket engine.
 */
int engine_socket_bound(const struct engine *e, uint32_t *addr,
			uint16_t *port);

/* The ops of engine kind k, or NULL when this build does not have it. */
const struct engine_ops *engine_lookup(enum cfg_engine k);

/*
 * Write the synthetic Ethernet/IPv4/UDP header for a datagram of
 * payload_len bytes from src to dst (addresses and ports in host byte
 * order) into h[0 .. ENGINE_SYNTH_HDR_LEN): zero MACs, ethertype IPv4,
 * IHL 5, TTL 64, protocol UDP, total length and UDP length from
 * payload_len, a valid IPv4 header checksum, UDP checksum 0.
 */
void engine_synth_hdr(uint8_t *h, uint32_t src_addr, uint16_t src_port,
		      uint32_t dst_addr, uint16_t dst_port,
		      uint32_t payload_len);

#endif
