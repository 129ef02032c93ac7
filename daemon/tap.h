/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tap on an rx queue: copies of the first bytes of the frames its
 * worker receives, before classification, for `daqirictl learn` (and
 * whoever else reads frames as they arrive). One session at a time per
 * queue, owned by one control connection; a bounded ring the worker fills
 * and the main thread drains (JSON "read") or, with "map", the owner's
 * process drains from shared memory (proto/tapring.h), so the worker
 * never waits: a frame that finds the ring full is not copied and is
 * counted (outside the data-loss identity: the frame itself goes on as
 * always).
 */
#ifndef DAQIRI_TAP_H
#define DAQIRI_TAP_H

#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rx_frame.h"
#include "tapring.h"

#define TAP_RING	DAQIRI_TAPRING_RECORDS

struct tap {
	/* the session: gen (16 bits, 0 = none) | count << 16 | snap << 36;
	 * written by the main thread, read by the worker */
	_Atomic uint64_t ctl;
	/* records written (worker): the daemon's own copy, as the one in
	 * shared memory is the reader's to overwrite */
	_Atomic uint64_t head;
	/* the worker's account of the session: DAQIRI_TAPRING_ACCT(gen, n),
	 * also published in the ring's header */
	_Atomic uint64_t taken, full;
	/* and of every session so far (stats: tap_taken, tap_full) */
	_Atomic uint64_t taken_total, full_total;
	/* the ring (made at first start; its tail is written by whoever
	 * reads: the main thread or the mapping process) */
	struct daqiri_tapring ring;
	int fd;				/* its memfd, when ring.hdr != NULL */
	/* main thread only */
	uint64_t owner;			/* control connection, 0 = none */
	uint16_t gen;
	uint32_t count;
	/* worker only */
	uint64_t w_ctl;
	uint64_t w_head, w_taken, w_full;
	uint64_t w_taken_total, w_full_total;
};

/* The worker, before routing a burst: copy what the session wants. */
void tap_frames(struct tap *t, const struct rx_frame *f, unsigned n);

/* Main thread. Start a session of count frames of snap bytes for
 * connection owner (one at a time: -EBUSY while another connection's
 * runs; the same connection's restarts). -ENOMEM. */
int tap_start(struct tap *t, uint64_t owner, uint32_t count, uint32_t snap);
/* A new fd of the ring's memfd (O_CLOEXEC) for owner's session, to send;
 * -ENOENT when owner has none, or -errno. */
int tap_ring_fd(struct tap *t, uint64_t owner);
/* Move up to max frames of owner's session into reply ("frames": [{"ns",
 * "len", "data" (hex)}], "taken", "full", "done"). -ENOENT: no session
 * of owner's; -ENOMEM. */
int tap_read(struct tap *t, uint64_t owner, uint32_t max, cJSON *reply);
/* End owner's session (owner 0: whoever's); -ENOENT when none. */
int tap_stop(struct tap *t, uint64_t owner);
/* Unmap and close the ring (the worker has stopped; a reader's mapping
 * stays its own). */
void tap_free(struct tap *t);

#endif
