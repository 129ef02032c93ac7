/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streams and the hand-off (DESIGN.md "Streams, tensors and the
 * hand-off"): a stream owns the tensor buffers of one reorder config (or
 * one raw queue), their presence-bitmap sidecar, and its subscriptions
 * with their shared rings. The RX worker that feeds the stream is the
 * only thread that touches buffer state and rings; the main thread adds
 * and removes subscriptions through a command queue and reads counters
 * through a seqlock snapshot.
 */
#ifndef DAQIRI_STREAM_H
#define DAQIRI_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "control.h"
#include "mem.h"
#include "proto.h"
#include "reorder.h"

#define STREAM_MAX_SUBS		64	/* subscriptions of one stream */
#define STREAM_MAX_CMDS		128	/* pending main -> worker commands */

/* Counters of a stream besides its reorder counters. */
struct stream_counters {
	uint64_t published;		/* tensors published */
	uint64_t delivered;		/* descriptors put into rings */
	uint64_t unseen;		/* tensors no subscriber took */
	uint64_t overruns;		/* sum of the subscribers' overruns */
	uint64_t subs_broken;		/* subscribers cut off for bad rings */
	uint64_t free_bufs;		/* buffers free at the snapshot */
	uint64_t held_bufs;		/* buffers held by consumers */
	uint64_t open_bufs;		/* buffers lent to the reorder plan */
};

struct stream;

/*
 * Create the stream of reorder config r on interface ifc: tensor buffers
 * are the buffers of output region out (one tensor each), the sidecar is
 * a new memfd. backend NULL = CPU. Returns 0 and *out, or a negative
 * errno with a message in err.
 */
int stream_create(struct stream **out, const struct cfg_interface *ifc,
		  const struct cfg_reorder *r, struct mem_region *region,
		  const struct reorder_backend *backend, char *err,
		  size_t errlen);

/*
 * Create the raw stream of rx queue q: RAW_NBUFS buffers of batch_size
 * slots of frame_bytes in a memfd of its own. Same return as
 * stream_create().
 */
int stream_create_raw(struct stream **out, const struct cfg_interface *ifc,
		      const struct cfg_queue *q, uint64_t frame_bytes,
		      char *err, size_t errlen);

/* Flush nothing, free everything (workers must be stopped). NULL-safe. */
void stream_destroy(struct stream *s);

const char *stream_name(const struct stream *s);
/* Subscriptions the main thread knows of (ending ones included). */
int stream_nsubs(const struct stream *s);
struct reorder_plan *stream_plan(struct stream *s);

/* Worker side. Feed one burst of packets belonging to this stream. */
void stream_burst(struct stream *s, const struct reorder_pkt *pkts,
		  unsigned n, uint64_t now_ns);
/* Worker side, once per loop: deadlines, releases, commands. */
void stream_service(struct stream *s, uint64_t now_ns);
/* Worker side: make the counters visible to stream_snapshot(). */
void stream_publish_counters(struct stream *s);
/* Worker side: packets_in right now (reorder or raw). */
uint64_t stream_packets_in(const struct stream *s);
/* Nearest deadline of the stream's plan (UINT64_MAX = none). */
uint64_t stream_next_deadline(const struct stream *s);
/* Worker side at stop: publish what is open. */
void stream_flush(struct stream *s, uint64_t now_ns);
/* Ask the stream's worker to run stream_service() soon (eventfd). */
void stream_set_wake_fd(struct stream *s, int fd);

/*
 * Main-thread side. Subscribe peer to the stream as subscription sub_id:
 * creates its ring and wake-up socketpair, fills *info and fds[]
 * (read-only tensor memfd, read-only bitmap memfd, ring memfd, the
 * consumer's end of the wake socketpair; the caller owns them whatever
 * the result) and hands the subscription to the worker.
 * Returns 0 or a negative errno with *err set.
 */
int stream_subscribe(struct stream *s, const struct daqiri_sub_req *req,
		     const struct control_peer *peer, uint32_t sub_id,
		     struct daqiri_sub_info *info,
		     int fds[DAQIRI_SUB_MAX_FDS], int *nfds,
		     struct daqiri_err *err);
/* End subscription (conn_id, sub_id); sub_id 0 = all of that connection.
 * Returns how many were ended. */
int stream_unsubscribe(struct stream *s, uint64_t conn_id, uint32_t sub_id);
/*
 * Main thread, periodically: free subscriptions the worker has let go,
 * and report subscriptions the worker cut off (bad release ring) through
 * cb (conn_id, sub_id, message).
 */
void stream_reap(struct stream *s,
		 void (*cb)(void *ctx, uint64_t conn_id, uint32_t sub_id,
			    const char *why),
		 void *ctx);

/* Consistent counter snapshot. For a raw stream rc holds packets_in,
 * placed, no_buffer_packets and (as malformed) oversize frames. */
void stream_snapshot(struct stream *s, struct reorder_counters *rc,
		     struct stream_counters *sc);
/* JSON views for the control socket. */
int stream_info_json(const struct stream *s, cJSON *obj);
int stream_stats_json(struct stream *s, cJSON *obj);
int stream_consumers_json(struct stream *s, cJSON *arr);

#endif
