/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tensor geometry, computed in one place: the frames a queue's buffers
 * hold, the output bytes of one slot, the batch-id space, the window
 * after its cap, and the tensor of a reorder config or a raw stream. The
 * config checker, the reorder stage and the streams all ask here, so
 * they cannot disagree. Pure: no I/O, no allocation, no global state.
 */
#ifndef DAQIRI_GEOMETRY_H
#define DAQIRI_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ethernet (14) + IPv4 without options (20) + UDP (8): the headers in
 * front of a datagram (the socket engine synthesises them). */
#define GEOM_ETH_IP_UDP_HDR	42
/* Largest UDP payload of one IPv4 datagram (65535 - 20 - 8). */
#define GEOM_UDP_PAYLOAD_MAX	65507

/* Geometry of one stream's tensors. */
struct reorder_geom {
	uint32_t ppb;			/* packets (slots) per batch */
	uint32_t in_bytes;		/* payload bytes per packet */
	uint64_t slot_bytes;		/* output bytes per slot */
	uint64_t tensor_bytes;		/* ppb x slot_bytes */
	uint64_t id_space;		/* number of distinct batch ids */
	uint32_t window;		/* after capping to id_space / 2 */
	uint32_t ppb_shift;		/* log2(ppb); 0 for a raw stream */
};

/*
 * Longest frame rx queue q of interface ifc holds: the buffers of its
 * regions added up (a header-data split has two), at most the headers
 * and one datagram, GEOM_ETH_IP_UDP_HDR + GEOM_UDP_PAYLOAD_MAX, or on a
 * socket stream with a max_payload_size, GEOM_ETH_IP_UDP_HDR + that.
 * 0 when a region of q is not resolved (region_idx < 0).
 */
uint64_t geom_queue_frame_bytes(const struct cfg *c,
				const struct cfg_interface *ifc,
				const struct cfg_queue *q);

/*
 * The one rule for which bytes of a frame the CPU may read. With
 * header-data split into device memory (q's second region is a device
 * region) the CPU may read only the header part, the first region's
 * bytes; any other queue whose first region is host memory (host, huge,
 * host_pinned) is host memory throughout. A cpu reorder config needs the
 * whole frame; a gpu one reads its bit fields, and joins a payload that
 * starts in the header part, on the CPU (cfg_check.c refuses what would
 * read past it); a raw stream copies only the header part (raw.c).
 * Frames that land whole in device memory (q's only region is a device
 * region, the reference library's GPUDirect path) are read by the CPU
 * through their header shadow: a copy of each frame's first
 * GEOM_SHADOW_BYTES (gpu.h gpu_shadow_burst()).
 *
 * geom_queue_device_part: the index into q's regions of the device
 * region that holds the rest of each frame: 1 with header-data split, 0
 * for whole frames in device memory; -1 when there is none, when q's
 * first region is a device region followed by others (the checker
 * refuses that queue apart), or when a region of q is not resolved.
 * geom_queue_host_bytes: how many leading bytes of q's frames the CPU
 * may read: geom_queue_frame_bytes() when geom_queue_device_part() is
 * -1, else the first region's buf_size (split) or GEOM_SHADOW_BYTES
 * (whole frames), at most the frame; 0 when a region of q is not
 * resolved or its regions are refused.
 */
#define GEOM_SHADOW_BYTES	128
int geom_queue_device_part(const struct cfg *c, const struct cfg_queue *q);
uint64_t geom_queue_host_bytes(const struct cfg *c,
			       const struct cfg_interface *ifc,
			       const struct cfg_queue *q);

/*
 * Which share of region ridx rx queue qi of interface ifc gets: the rx
 * queues of every interface of c that name the region split its buffers
 * in config order, *users of them, this one the *me-th (0-based); the
 * DPDK and replay engines carve by it. *users is at least 1.
 */
void geom_region_share(const struct cfg *c, const struct cfg_interface *ifc,
		       int qi, int ridx, uint32_t *users, uint32_t *me);

/*
 * Output bytes of one slot of reorder config r for n payload bytes per
 * packet: n copied when r has no data_types, else n's input elements
 * times the output element size. 0 when n is 0, not a whole number of
 * input elements, or r's output type is none the stage writes.
 */
uint64_t geom_slot_bytes(const struct cfg_reorder *r, uint64_t n);

/* Number of distinct batch ids of r's method: 2^batch_bits, or
 * 2^seq_bits / packets_per_batch; 0 when packets_per_batch is 0. */
uint64_t geom_id_space(const struct cfg_reorder *r);

/* The window a plan runs: window (0 = CFG_WINDOW_DEFAULT) capped to half
 * the id space, and at least 1. */
uint32_t geom_window(uint32_t window, uint64_t id_space);

/* ppb x slot_bytes, or 0 when that does not fit 64 bits. */
uint64_t geom_tensor_bytes(uint32_t ppb, uint64_t slot_bytes);

/*
 * The whole geometry of reorder config r into *g. Checks what the
 * reorder stage relies on (bit widths, a power-of-two packets_per_batch
 * that the method's fields agree with, enums in range, a slot_bytes, if
 * set, equal to the derived one); false when r fails any, and *g is
 * then zero.
 */
bool geom_reorder(const struct cfg_reorder *r, struct reorder_geom *g);

/*
 * The geometry of the raw stream of rx queue q: batch_size slots (at
 * least one) of frame_bytes each, frames copied as they are, window 1.
 */
void geom_raw(const struct cfg_queue *q, uint64_t frame_bytes,
	      struct reorder_geom *g);

#ifdef __cplusplus
}
#endif

#endif
