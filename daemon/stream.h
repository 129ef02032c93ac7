/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streams and the hand-off (DESIGN.md "Streams, tensors and the
 * hand-off"): a stream owns the tensor buffers of one reorder config (or
 * one raw queue), their presence-bitmap sidecar, and its subscriptions
 * with their shared rings. The RX worker that feeds the stream is the
 * only thread that touches buffer state and rings; the main thread adds
 * and removes subscriptions through a command queue and reads counters
 * through a seqlock snapshot. stream_main.c is the main thread's side,
 * stream_worker.c the worker's, stream_internal.h what they share.
 */
#ifndef DAQIRI_STREAM_H
#define DAQIRI_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "control.h"
#include "histogram.h"
#include "mem.h"
#include "proto.h"
#include "reorder.h"

/* Subscriptions of one stream until stream_set_limits() says otherwise. */
#define STREAM_MAX_SUBS		64
/* Stream time between two hold-timeout checks of the worker. */
#define STREAM_HOLD_CHECK_NS	(4 * 1000 * 1000)

/* Counters of a stream besides its reorder counters. */
struct stream_counters {
	uint64_t published;		/* tensors published */
	uint64_t delivered;		/* descriptors put into rings */
	uint64_t unseen;		/* tensors no subscriber took */
	uint64_t overruns;		/* sum of the subscribers' overruns */
	uint64_t subs_broken;		/* subscribers cut off for bad rings */
	uint64_t subs_held_too_long;	/* ended for a hold past hold_timeout_ms */
	uint64_t free_bufs;		/* buffers free at the snapshot */
	uint64_t held_bufs;		/* buffers held by consumers */
	uint64_t open_bufs;		/* buffers lent to the reorder plan */
	/* The subscription (sub id; 0 = none yet) that held the most
	 * buffers, its lossless backlog included, when the plan last found
	 * no free buffer (no_buffer). Not a counter: the last one. */
	uint64_t blocked_by;
	/* Not a counter: the last malformed frame's bytes (doctor.c). */
	uint64_t last_malformed_bytes;
	/* Per published tensor: publish time - its first packet's receive
	 * time (both CLOCK_MONOTONIC), so count == published. */
	struct daqiri_hist assembly;
	/* Per released tensor, every subscription together: the time the
	 * worker took the release back - publish time (a subscription's
	 * own is in the consumers view). Buffers taken back from a
	 * subscription that ended or was cut off are not counted. */
	struct daqiri_hist hold;
};

struct stream;

/* --- main thread (stream_main.c) ------------------------------------------ */

/*
 * Create the stream of reorder config r on interface ifc: tensor buffers
 * are the buffers of region (one tensor each), the sidecar is a new
 * memfd. backend NULL = CPU. Returns 0 and *out, or a negative errno with
 * a message in err.
 */
int stream_create(struct stream **out, const struct cfg_interface *ifc,
		  const struct cfg_reorder *r, struct mem_region *region,
		  const struct reorder_backend *backend, char *err,
		  size_t errlen);

/*
 * Create the raw stream of rx queue q: RAW_NBUFS buffers of batch_size
 * slots of frame_bytes in a memfd of its own; hdr_only: frames' payload
 * parts are device memory, copy only their header parts (raw_create()).
 * Same return as stream_create().
 */
int stream_create_raw(struct stream **out, const struct cfg_interface *ifc,
		      const struct cfg_queue *q, uint64_t frame_bytes,
		      bool hdr_only, char *err, size_t errlen);

/*
 * Limits from the daemon section, before the stream's worker runs and
 * while nothing is subscribed: up to max_subs subscriptions (their arrays
 * are allocated now, so the data path never allocates), and a buffer held
 * longer than hold_timeout_ms (0 = forever) ends its subscription with
 * "held too long". 0, -EBUSY, -EINVAL or -ENOMEM.
 */
int stream_set_limits(struct stream *s, uint32_t max_subs,
		      uint32_t hold_timeout_ms);

/*
 * Replay (engine_ops.now_ns): the times the stream is given are the
 * capture's (a virtual clock), and so are its tensors' publish_ns and
 * first_rx_ns; how long a consumer holds a buffer is still measured, and
 * daemon.hold_timeout_ms still enforced, on the wall clock. Main thread,
 * before the stream's worker starts.
 */
void stream_use_capture_clock(struct stream *s);

/* The eventfd that wakes the stream's worker when a command is queued
 * (set before the worker starts). */
void stream_set_wake_fd(struct stream *s, int fd);

/* Flush nothing, free everything (workers must be stopped). NULL-safe. */
void stream_destroy(struct stream *s);

/*
 * Admission rule: the max_held of a stream's subscriptions add up to at
 * most this, nbufs - window - 1 (raw streams: window 1, the burst being
 * filled), so the reorder window always has its buffers and one more to
 * publish into whatever the consumers hold.
 */
uint32_t stream_held_budget(const struct stream *s);

/* Live (not ending) subscriptions of connection conn_id. */
int stream_conn_nsubs(const struct stream *s, uint64_t conn_id);
/* Live subscriptions (not ending, not cut off): all of them, or with
 * uid_only those of unprivileged uid. */
int stream_live_nsubs(const struct stream *s, bool uid_only, uid_t uid);
/* The most max_held one unprivileged uid may hold on the stream:
 * stream_user_share(stream_held_budget()). */
uint32_t stream_uid_share(const struct stream *s);

/* One unprivileged user's share of a pool of total (held buffers of a
 * stream, subscriptions of the daemon): half, or all of a pool of 1. */
static inline uint32_t
stream_user_share(uint32_t total)
{
	return total > 1 ? total / 2 : total;
}

/*
 * Reload (main thread). stream_tune_check(): 0 when window would still
 * leave the buffers the live subscriptions were promised (the held
 * budget, nbufs - window - 1), else -ENOBUFS with the numbers in err.
 * A retune of the reorder plan (timeout_us, fill, window;
 * reorder_tune_apply()) in two steps, so that a reload applies to every
 * stream or to none: stream_tune_prepare() may fail (NULL, errno EINVAL
 * for a raw stream, EBUSY while the previous retune is not taken, or
 * ENOMEM); stream_tune_post() hands it to the worker, which takes it
 * between two bursts, and cannot fail; a prepared retune never posted
 * is freed with reorder_tune_free(). stream_tune_busy(): a posted retune
 * not taken yet.
 */
int stream_tune_check(const struct stream *s, uint32_t window, char *err,
		      size_t errlen);
struct reorder_tune *stream_tune_prepare(struct stream *s, uint32_t timeout_us,
					 enum daqiri_fill fill,
					 uint32_t window);
void stream_tune_post(struct stream *s, struct reorder_tune *t);
bool stream_tune_busy(const struct stream *s);

/* A reload moved the stream's reorder config in the running config
 * (main only; the plan keeps its own copy). */
void stream_set_config(struct stream *s, const struct cfg_reorder *r);
/*
 * Main: a trigger of the stream at ns (daqirictl trigger): counted, and
 * written into every subscription's ring, where recorders watch for it
 * (daqiri_sub_trigger()); a later subscription starts with the count so
 * far. Returns the stream's triggers, this one included.
 */
uint64_t stream_trigger(struct stream *s, uint64_t ns);
/* Call cb for every live subscription (main only). */
void stream_subs_each(const struct stream *s,
		      void (*cb)(void *ctx, uint64_t conn_id, uint32_t sub_id),
		      void *ctx);

/* Fixed at creation; any thread. */
const char *stream_name(const struct stream *s);
struct reorder_plan *stream_plan(struct stream *s);
/* Subscriptions the main thread knows of (ending ones included). */
int stream_nsubs(const struct stream *s);

/*
 * Subscribe peer to the stream as subscription sub_id:
 * creates its ring and wake-up socketpair, fills *info and fds[]
 * (read-only tensor memfd, read-only bitmap memfd, ring memfd, the
 * consumer's end of the wake socketpair; the caller owns them whatever
 * the result) and hands the subscription to the worker.
 * A max_held that would break stream_held_budget() is refused
 * (DAQIRI_ST_NO_RESOURCES, naming the numbers); none given means a
 * quarter of the buffers or what the budget leaves, if anything.
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
 * Periodically: free subscriptions the worker has let go, and report
 * subscriptions the worker cut off (bad release ring, held too long)
 * through cb (conn_id, sub_id, message).
 */
void stream_reap(struct stream *s,
		 void (*cb)(void *ctx, uint64_t conn_id, uint32_t sub_id,
			    const char *why),
		 void *ctx);

/* Consistent counter snapshot, as last published by the worker. For a
 * raw stream reorder holds packets_in, placed, no_buffer and (as
 * malformed) oversize frames. Either pointer may be NULL. */
void stream_snapshot(struct stream *s, struct reorder_counters *reorder,
		     struct stream_counters *handoff);
/* The stream's doctor (doctor.h): main thread only. */
struct doctor *stream_doctor(struct stream *s);
/* A reorder stream (else a raw one). */
bool stream_is_reorder(const struct stream *s);

/* JSON views for the control socket. */
int stream_info_json(const struct stream *s, cJSON *obj);
int stream_stats_json(struct stream *s, cJSON *obj);
int stream_consumers_json(struct stream *s, cJSON *arr);

/* --- the stream's RX worker (stream_worker.c) ------------------------------ */

/* Feed one burst of packets belonging to this stream; jobs is the
 * calling worker's own list (reorder_jobs_create()), which a stream fed
 * by several workers uses (reorder.c "Shared plans"). */
struct reorder_jobs;
void stream_burst(struct stream *s, const struct rx_frame *pkts,
		  unsigned n, uint64_t now_ns, struct reorder_jobs *jobs);
/* After stream_burst(): the mark of the reads of its payloads still to
 * come (0: none; the frames may go back to the engine), and whether a
 * mark's reads finished (wait: block until they did). reorder_fence(). */
uint64_t stream_fence(struct stream *s);
bool stream_fence_done(struct stream *s, uint64_t mark, bool wait);
/* Direct placement: where the stream's next payloads go, for the
 * engine's set_place() (reorder_place_hints()); 0 when it has none. */
unsigned stream_place_hints(struct stream *s, uint8_t **dst, unsigned max,
			    uint32_t *payload_off, uint32_t *payload_len);
/* Once per loop: commands, releases, hold timeouts, deadlines. */
void stream_service(struct stream *s, uint64_t now_ns);
/* Make the counters visible to stream_snapshot() (also once at creation,
 * and by worker_create() before the worker starts). */
void stream_publish_counters(struct stream *s);
/* Replay: how many frames the stream can surely take now without a
 * batch finding no free buffer (each frame opens at most one): its free
 * buffers; 0 when it has none but consumers hold some (a release will
 * come); UINT_MAX when nothing held could come back. */
unsigned stream_room(struct stream *s);
/* Nearest deadline of the stream's plan (UINT64_MAX = none). */
uint64_t stream_next_deadline(struct stream *s);
/* At stop: publish what is open. */
void stream_flush(struct stream *s, uint64_t now_ns);

#endif
