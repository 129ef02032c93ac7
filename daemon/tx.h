/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TX workers and channels (DESIGN.md "TX"): one thread per configured tx
 * queue sends what the queue's channels submit. A channel belongs to one
 * consumer connection: a payload pool only its owner can write (the
 * daemon maps it read-only; a queue in device memory has device pools
 * its owner opens by CUDA IPC), a submission/completion ring pair and a
 * doorbell socket (proto/txring.h). The worker takes submissions round
 * robin, at most batch_size per channel per turn (a flooding channel
 * cannot starve the others), checks each (a buffer the channel does not
 * hold, a length over the queue's MTU), paces the queue in software to
 * pacing_mbps, hands the payloads to the engine (engine_tx_ops, which
 * writes every header from the configuration) and completes each buffer
 * back. It never waits on a consumer: a channel whose completion ring is
 * full keeps its completions until there is room, and one whose ring
 * positions are impossible is cut off (tx_closed event), counted.
 * The main thread adds and removes channels through a command queue; the
 * worker is the only thread that touches a channel's ring after that.
 */
#ifndef DAQIRI_TX_H
#define DAQIRI_TX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "engine.h"
#include "proto.h"

/* Channels of one tx queue. */
#define TX_MAX_CHANNELS		64

/* Why a submission did not go out (stats "drops", metrics "reason"). */
enum tx_drop {
	TX_DROP_TOO_BIG,		/* len over the channel's buf_size */
	TX_DROP_BAD_BUFFER,		/* an index not in the pool, or a buffer
					 * already submitted: no completion */
	TX_DROP_ENGINE_ERROR,		/* the engine refused this payload */
	TX_DROP_CLOSED,			/* the channel or queue ended first */
	TX_DROP_NO_PEER,		/* a reply_peer queue (cfg_tx_dest) before
					 * any datagram arrived: completed
					 * DAQIRI_TX_ENGINE_ERROR */
	TX_DROP_MAX
};
extern const char *const tx_drop_names[TX_DROP_MAX];

/* Counters of one channel, or of a queue (the sum over its channels,
 * those gone included). ring_full is what the consumer reports (its
 * -EAGAIN count in the shared ring), not a daemon drop. */
struct tx_counters {
	uint64_t submitted;		/* submissions taken off rings */
	uint64_t packets;		/* sent */
	uint64_t bytes;			/* their payload bytes */
	uint64_t drops[TX_DROP_MAX];
	uint64_t ring_full;
	uint64_t paced_ns;		/* time the worker waited for pacing */
	uint64_t broken;		/* channels cut off (a channel: 0 or 1) */
};

struct tx_worker;

/* Make the worker of tx queue qi of ifc on eng (whose tx ops are
 * eng->ops->tx). 0 and *out, or a negative errno with err. */
int tx_worker_create(struct tx_worker **out, const struct cfg_interface *ifc,
		     int qi, struct engine *eng, char *err, size_t errlen);
int tx_worker_start(struct tx_worker *w);
/* Stop and join (channels still open are cut off: every buffer they had
 * submitted completes DAQIRI_TX_CLOSED where the ring has room).
 * NULL-safe. */
void tx_worker_stop(struct tx_worker *w);
void tx_worker_destroy(struct tx_worker *w);

/* The queue's name ("<interface>/<queue>"), its largest payload, and
 * the heartbeat (as worker_heartbeat_ns()). */
const char *tx_worker_name(const struct tx_worker *w);
uint32_t tx_worker_max_payload(const struct tx_worker *w);
uint64_t tx_worker_heartbeat_ns(const struct tx_worker *w);
/* Bound the idle interval (a heartbeat at least this often; at most the
 * default 50 ms). Before tx_worker_start(). */
void tx_worker_set_idle(struct tx_worker *w, uint64_t idle_ns);
/* Channels open (main thread; those closed but not yet freed not
 * counted). */
int tx_worker_nchannels(const struct tx_worker *w);
/* The core it is pinned to, or -1. */
int tx_worker_core(const struct tx_worker *w);

/*
 * Main thread: open a channel for connection conn_id (tx id tx_id) with
 * nbufs buffers (0 = default): fill *info (every field, fds in the order
 * tx_ring, tx_pool, wake; tx_ring, ipc, wake for a device pool, when the
 * engine's queue says device) and put the consumer's fds into fds[0..2]
 * (control takes them). 0, or a negative errno with err: -ENOSPC
 * (TX_MAX_CHANNELS open), -EINVAL (nbufs over what the queue allows),
 * -ENOMEM / -EMFILE, -EIO (CUDA failed making the device pool; err
 * names CUDA's reason).
 */
int tx_channel_open(struct tx_worker *w, uint64_t conn_id, uint32_t tx_id,
		    pid_t pid, uint32_t nbufs, struct daqiri_tx_info *info,
		    int fds[3], char *err, size_t errlen);
/* Main thread: close channel (conn_id, tx_id) of w, or every channel of
 * conn_id when tx_id is 0. Returns how many it closed (0: none). The
 * worker lets go of them at its next turn; tx_worker_reap() frees them. */
int tx_channel_close(struct tx_worker *w, uint64_t conn_id, uint32_t tx_id);

/*
 * Main thread, every tick: free channels the worker let go of, and for
 * each channel the worker cut off (bad ring) call broken(ctx, conn_id,
 * tx_id, why) once so the consumer is told.
 */
void tx_worker_reap(struct tx_worker *w,
		    void (*broken)(void *ctx, uint64_t conn_id, uint32_t tx_id,
				   const char *why),
		    void *ctx);

/* Consistent counters of the queue (any thread). */
void tx_worker_snapshot(struct tx_worker *w, struct tx_counters *out);
/* The queue object of stats: name, max_payload, pacing_mbps, counters
 * (drops by reason), engine counters and "channels": [{tx, conn, pid,
 * nbufs, in_flight, counters...}]. 0 or -ENOMEM. */
int tx_worker_stats_json(struct tx_worker *w, cJSON *obj);

#endif
