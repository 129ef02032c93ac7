/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RX workers: one per configured RX queue, each a thread of its own, or,
 * for queues of an interface pinned to one core, one thread for them all
 * (worker_join()). A worker receives bursts
 * from its engine queue, classifies frames by flow, feeds the reorder
 * streams it owns, and services them (deadlines, releases, subscription
 * commands). No lock, allocation, syscall or log line per packet.
 */
#ifndef DAQIRI_WORKER_H
#define DAQIRI_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "flow.h"
#include "stream.h"

/* Longest a worker sleeps without looking at its commands and counters
 * (and without a heartbeat; worker_set_idle() may shorten it). */
#define WORKER_IDLE_NS		(50u * 1000u * 1000u)
/* Test-only: the worker of this queue ("<interface>/<queue>" or the
 * queue's name) stops beating after its first burst (daqirid(8)). */
#define WORKER_WEDGE_ENV	"DAQIRID_TEST_WEDGE_WORKER"
/* Test-only: with this set to a path, that worker wedges at any burst
 * while the file exists and resumes once it is gone. */
#define WORKER_WEDGE_FILE_ENV	"DAQIRID_TEST_WEDGE_FILE"
#define WORKER_MAX_STREAMS	CFG_MAX_REORDERS
/* Bursts whose payloads the GPU may still read in place while the worker
 * receives the next (their frames held by the engine). */
#define WORKER_INFLIGHT		4
/* Longest the counters the main thread reads lag behind while busy. */
#define WORKER_SNAP_NS		(1000u * 1000u)
/* Replay: wall time between two looks at a stream's releases while the
 * worker waits for a free buffer. */
#define WORKER_REPLAY_WAIT_NS	(200u * 1000u)

/* A worker's own counters (its queue's). Per queue: rx_packets =
 * streams_packets_in + unmatched + no_stream + misrouted; per interface,
 * the sum of its queues' streams_packets_in is the sum of its streams'
 * packets_in. */
struct worker_counters {
	uint64_t rx_packets;		/* frames from the engine */
	uint64_t rx_bytes;
	uint64_t matched;		/* matched a flow */
	uint64_t unmatched;		/* no flow, flow_isolation on: dropped */
	uint64_t no_stream;		/* for a raw stream when there is none */
	uint64_t misrouted;		/* a stream another queue's worker owns */
	uint64_t bursts;
	uint64_t rx_errors;		/* failed rx_burst calls, and bursts
					 * whose header shadow failed */
	uint64_t inflight;		/* bursts the GPU still reads (now) */
	uint64_t inflight_waits;	/* times WORKER_INFLIGHT were and the
					 * worker waited for the oldest */
	uint64_t streams_packets_in;	/* frames it handed its streams,
					 * each counted there in packets_in
					 * (a spread stream's: the sum over
					 * its queues) */
	uint64_t replay_waits;		/* replay: times a stream had no
					 * free buffer and the worker waited
					 * for its consumers (worker.c) */
	struct engine_stats engine;
};

struct worker;
struct tap;

/*
 * Make the worker of rx queue qi of interface ifc, with a copy of the flow
 * table flows. streams[] are the
 * streams of this interface, stream_cfg[i] their reorder configs; the
 * worker feeds those whose flows reach its queue. raw is the
 * queue's raw stream (frames of flows without a reorder config, and
 * unmatched frames with flow_isolation off), NULL for none. shadow_bytes,
 * when not 0, says that the queue's frames land whole in device memory:
 * the worker reads their first shadow_bytes through a header shadow
 * (reorder_cuda.h gpu_shadow_burst()), which needs CUDA. Returns 0 and
 * *out, or a negative errno with a message in err.
 */
int worker_create(struct worker **out, const struct cfg_interface *ifc,
		  int qi, struct engine *eng, const struct flow_table *flows,
		  struct stream *const *streams,
		  const struct cfg_reorder *const *stream_cfg, int nstreams,
		  struct stream *raw, uint32_t shadow_bytes, char *err,
		  size_t errlen);
/*
 * A flow change in two steps, so that one table can go to every worker of
 * an interface or to none: prepare copies t for w (the caller keeps t) and
 * may fail (NULL, errno EBUSY while w's previous change is not taken yet,
 * or ENOMEM); post hands the copy to w, which takes it between two
 * bursts, and cannot fail; discard frees a copy never posted. Main thread
 * only.
 */
struct flow_change;
struct flow_change *worker_flows_prepare(struct worker *w,
					 const struct flow_table *t);
void worker_flows_post(struct worker *w, struct flow_change *fc);
/*
 * The same for a reload that adds or removes streams: t and a new set
 * of streams of the interface, in the order of nifc (the new config)'s
 * reorder configs, streams[j] for nifc->rx.reorders[j]; keep_cfgs[j] is
 * where that config lives in the running config once the reload copied
 * it in (the worker keeps those pointers). Routes and the streams this
 * queue owns come from nifc. The raw stream stays. When the worker
 * takes it, every stream it no longer has is flushed (FLUSH); once worker_flows_busy() is
 * false the caller may destroy them. NULL with errno EBUSY, ENOMEM or
 * EINVAL (more than WORKER_MAX_STREAMS).
 */
struct flow_change *worker_streams_prepare(struct worker *w,
					   const struct flow_table *t,
					   const struct cfg_interface *nifc,
					   struct stream *const *streams,
					   const struct cfg_reorder *const *keep_cfgs,
					   int nstreams);
void worker_flows_discard(struct flow_change *fc);
/* True while the previous flow change is not taken yet. */
bool worker_flows_busy(struct worker *w);
/* Free the tables the worker has let go of (main thread, periodically). */
void worker_reap(struct worker *w);

/*
 * Core sharing (worker.c's top): w's queue is polled by host's thread
 * (host's own host if it has one), not a thread of its own. Before
 * either starts; -EINVAL otherwise, or when w hosts a group itself.
 */
int worker_join(struct worker *w, struct worker *host);
/* Start the thread (pinned to the queue's cpu_core when it exists); for
 * a member of a group, nothing: its host's thread polls it. */
int worker_start(struct worker *w);
/* Ask it to stop, flush its streams and join it. NULL-safe. */
void worker_stop(struct worker *w);
void worker_destroy(struct worker *w);

/*
 * Heartbeat: the worker stores the CLOCK_MONOTONIC time of every loop
 * iteration, at least every idle interval even with no traffic, so a
 * heartbeat older than a few of them means the worker is stuck (in a
 * syscall, a backend, a lock). worker_heartbeat_ns() reads it (any
 * thread; the time of worker_create() before the first iteration).
 * worker_set_idle() bounds the idle interval to idle_ns (at most
 * WORKER_IDLE_NS; before worker_start()).
 */
uint64_t worker_heartbeat_ns(const struct worker *w);
/* The queue's tap (tap.h), for the main thread. */
struct tap *worker_tap(struct worker *w);
void worker_set_idle(struct worker *w, uint64_t idle_ns);
/* The core it is pinned to, or -1. */
int worker_core(const struct worker *w);

/* Consistent copy of its counters (any thread). */
void worker_snapshot(struct worker *w, struct worker_counters *out);
int worker_stats_json(struct worker *w, cJSON *obj);
const char *worker_queue_name(const struct worker *w);

#endif
