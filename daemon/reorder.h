/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reorder stage: sequence-numbered packets in any order in, one
 * contiguous converted tensor per batch out, published strictly in batch
 * order, with every packet accounted for (DESIGN.md "Reorder semantics").
 * Placement is delegated to a backend (CPU here, CUDA in reorder_cuda.cu);
 * the window, bitmaps, deadlines and counters are kept here, on the CPU.
 */
#ifndef DAQIRI_REORDER_H
#define DAQIRI_REORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "geometry.h"	/* struct reorder_geom */
#include "rx_frame.h"
#include "../proto/desc.h"

/* Per-plan counters. Invariant after every call:
 * packets_in = placed + duplicate + late + malformed + no_buffer
 *              + backend_error
 * placed counts packets whose write the backend confirmed (its commit()
 * succeeded); backend_error those whose write failed, and every
 * later packet of a batch that failed. A failed batch is never published:
 * its buffer goes back to the owner and it counts once in
 * batches_backend_error. With missing_action drop a batch that did not
 * complete is not published either: it counts once in batches_incomplete
 * and its packets, placed already, in incomplete, so incomplete <=
 * placed (a part of placed, not a term beside it: reorder.c's top). */
struct reorder_counters {
	uint64_t packets_in;
	uint64_t placed;
	uint64_t duplicate;
	uint64_t late;
	uint64_t malformed;
	uint64_t no_buffer;
	uint64_t batches_complete;
	uint64_t batches_timeout;
	uint64_t batches_evicted;
	uint64_t batches_no_buffer;
	uint64_t resync;
	uint64_t missing_slots;
	uint64_t backend_error;
	uint64_t batches_backend_error;
	uint64_t incomplete;
	uint64_t batches_incomplete;
};

/* Names of the counters in struct order, for stats output. */
#define REORDER_NCOUNTERS 16

/* A resync by volume needs this many consecutive late packets at least
 * (packets_per_batch of them, or this many when a batch is smaller). */
#define REORDER_RESYNC_RUN_MIN	8

/* The last this many positions the window passed keep the time they were
 * published or passed over (the time rule of a resync); >= CFG_WINDOW_MAX,
 * a power of two. */
#define REORDER_CLOSED_MAX	64

/* A backend failing burst after burst logs at most this often. */
#define REORDER_ERROR_LOG_NS	1000000000ull
extern const char *const reorder_counter_names[REORDER_NCOUNTERS];

/* A tensor buffer lent to the plan by its owner (the stream). */
struct reorder_buf {
	uint32_t index;			/* the owner's buffer index */
	void *data;			/* ppb x slot_bytes (host or device) */
	uint64_t *bitmap;		/* ppb bits, host memory, owner's sidecar;
					 * slot s = bit s % 64 of word s / 64 */
};

/*
 * The buffer owner. get() lends a free buffer (0, or -ENOBUFS when none is
 * free: the batch is then dropped whole and counted). put() takes back a
 * buffer the plan did not publish (a batch dropped for a backend error,
 * and at destroy); all three are required. publish() hands over a
 * finished tensor: from then on the buffer belongs to the owner, who lends
 * it again through get() once every consumer released it. All three run on
 * the plan's thread and must not block.
 */
struct reorder_owner {
	void *ctx;
	int (*get)(void *ctx, struct reorder_buf *out);
	void (*put)(void *ctx, const struct reorder_buf *buf);
	void (*publish)(void *ctx, const struct daqiri_desc *d,
			const struct reorder_buf *buf);
	/* Optional: get() ahead of need, for direct placement's spare
	 * (reorder_place_hints()); its failure is no stall of the stream.
	 * NULL: the plan hints only into batches already open. */
	int (*get_ahead)(void *ctx, struct reorder_buf *out);
};

struct reorder_plan;

/*
 * The placement backend (strategy). place() writes one packet's payload,
 * converted, into slot `slot` of buf; it may defer the work until
 * commit(), which the plan calls at the end of every burst and before it
 * publishes anything (so a published tensor is always fully written, or
 * for device memory, ordered before the buffer's event). fill() writes
 * the missing slots of buf (bit clear in bitmap) per cfg fill.
 * place() and fill() cannot fail on their own: a backend that could not
 * do their work (a CUDA error, a source it cannot read) says so at the
 * next commit(). commit() returns 0 when everything placed or filled
 * since the previous commit() is written, or a negative errno when any
 * of it may not be; the plan then drops every batch written to since.
 * finish() returns 0, or a negative errno: that batch is dropped.
 */
struct reorder_backend {
	const char *name;
	int (*init)(struct reorder_plan *p, void **state);
	void (*fini)(void *state);
	void (*place)(void *state, const struct reorder_buf *buf, uint32_t slot,
		      const uint8_t *in);
	int (*commit)(void *state);
	void (*fill)(void *state, const struct reorder_buf *buf);
	/* called just before publish(); e.g. records the CUDA event */
	int (*finish)(void *state, const struct reorder_buf *buf);
	/* A reload changed fill: later fill() calls use it (plan's thread,
	 * between bursts, nothing placed uncommitted). */
	void (*set_fill)(void *state, enum daqiri_fill fill);
	/* A backend that reads payloads after commit() returned (the GPU
	 * reads them in place): fence() marks the work committed so far
	 * (0: none reads a payload any more); fence_done() says whether the
	 * work of a mark finished: 1 yes, 0 not yet, < 0 an error (taken
	 * as done: the batches are failed); wait blocks until it did. NULL
	 * where commit() leaves nothing to read (the CPU backend). */
	uint64_t (*fence)(void *state);
	int (*fence_done)(void *state, uint64_t mark, bool wait);
};

extern const struct reorder_backend reorder_backend_cpu;

/*
 * Build a plan for reorder config r. backend NULL = reorder_backend_cpu.
 * Returns NULL with errno set (EINVAL: config the plan cannot run,
 * ENOMEM, or the backend's error such as ENODEV for no GPU).
 */
struct reorder_plan *reorder_create(const struct cfg_reorder *r,
				    const struct reorder_owner *owner,
				    const struct reorder_backend *backend);

/* Return every open buffer through owner.put() and free. NULL-safe. */
void reorder_destroy(struct reorder_plan *p);

/*
 * The frames of a burst belong to the engine again only once the backend
 * has read their payloads: reorder_fence() after reorder_burst() gives a
 * mark (0: nothing left to read, release at once), reorder_fence_done()
 * says whether the mark's reads finished (wait: block until they did;
 * true then). Marks finish in order. Plan's thread.
 */
uint64_t reorder_fence(struct reorder_plan *p);
bool reorder_fence_done(struct reorder_plan *p, uint64_t mark, bool wait);

/* Most frames one reorder_burst() takes, and most destinations one
 * reorder_place_hints() gives. */
#define REORDER_BURST_MAX	1024

/* Feed one burst (n <= REORDER_BURST_MAX). Publishes whatever the burst
 * finishes. Never blocks, allocates or makes a syscall. Frames with a
 * stash (direct placement) must have been received with this plan's
 * latest hints: one already in its slot is not copied again. */
void reorder_burst(struct reorder_plan *p, const struct rx_frame *pkts,
		   unsigned n, uint64_t now_ns);

/*
 * Shared plans (a stream spread over several rx queues; the rules at the
 * top of reorder.c). reorder_set_shared() makes p one, fed by the
 * feeders whose bits are set in feeders (bit i: feeder i < 32, the rx
 * queue's index), at creation, before any packet; -EINVAL for a backend
 * other than the CPU one. Every call on a shared plan is then made under
 * the caller's lock except reorder_jobs_run(): reorder_burst_shared()
 * decides the burst and leaves its copies in jobs (the feeder's own
 * list, made by reorder_jobs_create(its index); one per thread), which
 * the caller runs after letting the lock go, then takes it again for
 * reorder_poll() to publish what they finished. On a plan not shared,
 * reorder_burst_shared() is reorder_burst() and leaves no job.
 */
struct reorder_jobs;
struct reorder_jobs *reorder_jobs_create(unsigned feeder);
void reorder_jobs_free(struct reorder_jobs *jobs);
int reorder_set_shared(struct reorder_plan *p, uint32_t feeders);
void reorder_burst_shared(struct reorder_plan *p, const struct rx_frame *pkts,
			  unsigned n, uint64_t now_ns,
			  struct reorder_jobs *jobs);
void reorder_jobs_run(struct reorder_plan *p, struct reorder_jobs *jobs);

/*
 * Direct placement: where the payloads of the next packets will go if
 * they arrive in order (the slots after the last one placed: the rest of
 * its batch, then the next batch, in a buffer got ahead), for the
 * engine's set_place() before the next receive. Up to max destinations
 * into dst, with the frame offset and bytes of the payload; 0 when the
 * plan does not place directly (only the CPU backend copying raw bytes
 * does). Every destination is a slot of a buffer lent to the plan and not
 * yet filled, so a wrong guess costs a copy, never data: reorder_burst()
 * copies a frame out of a destination before anything else is written
 * there or its buffer is published. Valid until the next reorder_burst().
 */
unsigned reorder_place_hints(struct reorder_plan *p, uint8_t **dst,
			     unsigned max, uint32_t *payload_off,
			     uint32_t *payload_len);

/* What direct placement did (for tests and benchmarks): packets found in
 * their slot, copied there from another destination or their stash, and
 * copied out of a destination before something else used it. */
struct reorder_direct_counters {
	uint64_t hits;
	uint64_t moved;
	uint64_t staged;
};
const struct reorder_direct_counters *
reorder_direct_counters(const struct reorder_plan *p);

/* Publish every open batch whose deadline is <= now_ns (TIMEOUT), in batch
 * order: an expired batch waits behind an older one that has not expired.
 * The rules in full are at the top of reorder.c. */
void reorder_poll(struct reorder_plan *p, uint64_t now_ns);

/* Deadline of the oldest open batch (the only one a deadline can
 * publish), or UINT64_MAX when none is open. */
uint64_t reorder_next_deadline(const struct reorder_plan *p);

/* Publish everything open now (stream stop), flagged FLUSH. */
void reorder_flush(struct reorder_plan *p, uint64_t now_ns);

/*
 * A reload's change of timeout_us, fill and window for a running plan.
 * reorder_tune_prepare() runs on the main thread and allocates what the
 * new window needs (NULL with errno ENOMEM); reorder_tune_apply() runs
 * on the plan's thread between bursts and cannot fail: batches already
 * open keep their deadline; a smaller window first publishes the oldest
 * open batches as EVICTED until the rest fits (no packet is lost, every
 * one stays counted). Afterwards t holds what the plan let go: free it
 * with reorder_tune_free() on any thread. window is the configured one
 * (capped here as geom_window() does).
 */
struct reorder_tune;
struct reorder_tune *reorder_tune_prepare(const struct reorder_plan *p,
					  uint32_t timeout_us,
					  enum daqiri_fill fill,
					  uint32_t window);
void reorder_tune_apply(struct reorder_plan *p, struct reorder_tune *t,
			uint64_t now_ns);
void reorder_tune_free(struct reorder_tune *t);
/* Also set resync_after_us (0 = the time rule off); without this call
 * the plan keeps the one it has. Main thread, before the tune is posted. */
void reorder_tune_set_resync_after(struct reorder_tune *t,
				   uint32_t resync_after_us);
/* Also set missing_action; without this call the plan keeps the one it
 * has. Batches already open are finished by the new one. Main thread,
 * before the tune is posted. */
void reorder_tune_set_missing(struct reorder_tune *t,
			      enum cfg_missing missing_action);
/* The window t sets (after the cap). */
uint32_t reorder_tune_window(const struct reorder_tune *t);

const struct reorder_counters *reorder_counters(const struct reorder_plan *p);
/* The length of the last malformed frame (header and payload), 0 = none
 * yet: what a stream that explains itself tells (doctor.c). */
uint64_t reorder_last_malformed_bytes(const struct reorder_plan *p);
const struct reorder_geom *reorder_geom(const struct reorder_plan *p);
const struct cfg_reorder *reorder_config(const struct reorder_plan *p);

/* Read the big-endian bit field at bit_offset/bit_width of a frame split
 * in two parts; returns false when the frame is too short. */
bool reorder_field(const struct rx_frame *pkt, uint32_t bit_offset,
		   uint32_t bit_width, uint32_t *out);

#endif
