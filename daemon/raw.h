/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Raw bursts: the stream of one RX queue for frames no reorder config
 * takes (a flow without one, or unmatched frames when flow_isolation is
 * off). Frames are copied whole (only their header parts when the
 * payloads are in device memory), in arrival order, one per slot of a
 * burst tensor, with their lengths in the sidecar after the bitmap.
 */
#ifndef DAQIRI_RAW_H
#define DAQIRI_RAW_H

#include <stdbool.h>
#include <stdint.h>

#include "reorder.h"

/* Buffers of a raw stream. */
#define RAW_NBUFS		16

/* Counters; packets_in = placed + oversize + no_buffer. */
struct raw_counters {
	uint64_t packets_in;
	uint64_t placed;
	uint64_t oversize;		/* frame longer than a slot: dropped */
	uint64_t no_buffer;	/* no free buffer: dropped */
	uint64_t bursts_full;		/* published with every slot used */
	uint64_t bursts_timeout;	/* published at the queue's timeout_us */
	uint64_t bursts_flush;		/* published at stop */
};

#define RAW_NCOUNTERS 7
extern const char *const raw_counter_names[RAW_NCOUNTERS];

struct raw_plan;

/*
 * A plan of ppb slots of slot_bytes; a started burst is published after
 * timeout_us (0 = only when full, or at flush). The sidecar the owner
 * lends with each buffer holds the bitmap (ceil(ppb/64) words) followed
 * by ppb uint32 lengths: the bytes of each slot. hdr_only: frames'
 * payload parts are device memory (header-data split into a device
 * region, geom_queue_device_part()), which the CPU must not read: a
 * slot gets the header part only. NULL with errno on failure.
 */
struct raw_plan *raw_create(uint32_t ppb, uint64_t slot_bytes,
			    uint32_t timeout_us, bool hdr_only,
			    const struct reorder_owner *owner);
void raw_destroy(struct raw_plan *p);
void raw_burst(struct raw_plan *p, const struct rx_frame *pkts,
	       unsigned n, uint64_t now_ns);
void raw_poll(struct raw_plan *p, uint64_t now_ns);
uint64_t raw_next_deadline(const struct raw_plan *p);
void raw_flush(struct raw_plan *p, uint64_t now_ns);
const struct raw_counters *raw_counters(const struct raw_plan *p);

/* Sidecar bytes per buffer for ppb slots (a multiple of 8). */
uint32_t raw_sidecar_bytes(uint32_t ppb);

#endif
