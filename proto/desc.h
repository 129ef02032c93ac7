/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tensor descriptor: what the daemon publishes for every finished
 * batch, both to its own stream code and, byte for byte, into each
 * subscriber's completion ring. Shared by daemon and client; fixed layout.
 */
#ifndef DAQIRI_PROTO_DESC_H
#define DAQIRI_PROTO_DESC_H

#include <stdint.h>
#include <time.h>

#include "daqiri_types.h"	/* enum daqiri_tensor_flag */

struct daqiri_desc {
	uint32_t buf_index;		/* tensor buffer of the stream */
	uint32_t flags;			/* enum daqiri_tensor_flag */
	uint64_t seq;			/* stream sequence number, never wraps */
	uint64_t batch_id;		/* raw batch id from the packets */
	uint32_t packets_expected;	/* packets per batch */
	uint32_t packets_received;	/* slots filled */
	uint64_t bytes;			/* tensor bytes (ppb x slot bytes) */
	uint64_t first_rx_ns;		/* CLOCK_MONOTONIC of the first packet */
	uint64_t last_rx_ns;		/* ... and of the last one placed */
	uint64_t publish_ns;		/* when the daemon published it */
};

#ifdef __cplusplus
static_assert(sizeof(struct daqiri_desc) == 64, "descriptor is one cache line");
#else
_Static_assert(sizeof(struct daqiri_desc) == 64, "descriptor is one cache line");
#endif

/* The clock of every timestamp in a descriptor (CLOCK_MONOTONIC, ns), the
 * same in the daemon and in every consumer on the machine. */
static inline uint64_t
daqiri_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
