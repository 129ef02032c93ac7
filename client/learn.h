/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `daqirictl learn` infers from frames as received: the instrument's
 * sequence field, its batch field or nothing to take packets per batch
 * from, where the samples start, the rate, loss, duplicates, reorder
 * depth and sender restarts. Pure computation over copies of frames (the
 * daemon's tap, or a test's), so every rule is tested on known answers.
 */
#ifndef DAQIRI_LEARN_H
#define DAQIRI_LEARN_H

#include <stdbool.h>
#include <stdint.h>

#define LEARN_HDR	42	/* Ethernet + IPv4 + UDP: fields start here */
#define LEARN_SCAN	64	/* bytes after it searched for fields */
#define LEARN_STEP_MAX	1024	/* a step further than this is a jump */

struct learn_frame {
	const uint8_t *data;		/* the frame's first caplen bytes */
	uint32_t caplen;
	uint32_t len;			/* its length on the wire */
	uint64_t ns;			/* arrival */
};

enum learn_conf { LEARN_NONE, LEARN_LOW, LEARN_MEDIUM, LEARN_HIGH };

struct learn_result {
	/* the traffic: the busiest destination (address and port), which
	 * everything below is about */
	uint32_t frames;		/* of that flow */
	uint32_t other;			/* frames of other flows or not UDP */
	uint32_t ipv4_src, ipv4_dst;	/* host order; the source of */
	uint16_t udp_src, udp_dst;	/* its first frame */
	uint32_t sources_other;		/* frames from other sources */
	uint32_t len;			/* most frequent frame length */
	uint32_t len_other;		/* frames of another length */
	double pps, gbps;		/* over the frames' arrival span */

	/* the sequence field (bit_offset counts from the frame's first
	 * bit, the field read big-endian, as daqirid.yaml(5)) */
	enum learn_conf seq_conf;
	uint32_t seq_bit_offset, seq_bit_width;
	double seq_small;		/* fraction of steps that are small */
	bool seq_wrapped;		/* seen wrapping at its width */
	uint32_t seq_zero_above;	/* bytes before it that were 0 always */

	/* a batch field: the value of seq / ppb, or its low bits */
	bool has_batch;
	uint32_t batch_bit_offset, batch_bit_width;
	uint32_t ppb;			/* from the batch field, else 0 */

	/* the samples: from payload_offset to the frame's end */
	uint32_t payload_offset;
	uint32_t payload_bytes;

	/* counted over the sequence, between restarts */
	uint64_t expected;		/* sequence numbers in the spans seen */
	uint64_t unique;		/* of them received */
	uint64_t duplicates;
	uint32_t reorder_depth;		/* furthest a packet came late */
	uint32_t restarts;		/* jumps of the sequence (a sender
					 * restarted, or the field is wrong) */
	char why[256];			/* when seq_conf is LEARN_NONE */
};

/* Infer r from n frames in arrival order. */
void learn_analyse(const struct learn_frame *f, uint32_t n,
		   struct learn_result *r);

const char *learn_conf_name(enum learn_conf c);

#endif
