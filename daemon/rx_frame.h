/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one descriptor of a received frame, from the engine that received it
 * through the worker's routing to the stream, the reorder stage (CPU and
 * CUDA) and the raw path. Filled on an RX worker thread by rx_burst() and
 * read there; nothing else crosses threads.
 */
#ifndef DAQIRI_RX_FRAME_H
#define DAQIRI_RX_FRAME_H

#include <stdint.h>

/*
 * One received frame: the concatenation hdr[0..hdr_len) ++
 * payload[0..payload_len). Header-data split gives two parts; a
 * contiguous frame puts everything in hdr with payload_len 0 (or the
 * reverse). Bit and byte offsets of the config address that
 * concatenation. The bytes belong to the engine and are valid until the
 * frame is released (engine_ops.release()).
 */
struct rx_frame {
	const uint8_t *hdr;
	const uint8_t *payload;
	uint32_t hdr_len;
	uint32_t payload_len;
	uint64_t rx_ns;			/* arrival, CLOCK_MONOTONIC; see
					 * engine_ops.rx_burst() */
	/* Direct placement (engine_ops.set_place): non-NULL when the
	 * engine received the payload straight into one of the
	 * destinations it was hinted. Then payload is that destination and
	 * stash is engine memory of payload_len bytes, valid until the
	 * frame is released, that whoever needs the destination for
	 * something else first copies the payload into (and reads it from
	 * there on). NULL for every other frame. */
	uint8_t *stash;
	uint32_t flags;			/* RX_FRAME_* */
};

/* The frame arrived whole in device memory: hdr is a copy of its first
 * hdr_len bytes in host memory (its header shadow, reorder_cuda.h
 * gpu_shadow_burst()) and payload the device address of the bytes after
 * them, so payload - hdr_len is the frame's device address. No CPU code
 * reads payload then: a field past the shadow is taken as malformed. */
#define RX_FRAME_DEV_PAYLOAD	0x1u

#endif
