/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daqiri_control.h: the control packet a closed-loop consumer sends back
 * to the instrument through a TX channel, and that daqiri-sim --control
 * applies. One definition, header-only, shared by the simulator and the
 * C consumer of the closed-loop test (tests/system/closed-loop.c).
 *
 * 32 bytes, little-endian, no padding (Python: struct "<IIQQiI"):
 *   off  0  u32 magic       DAQIRI_CTL_MAGIC, "DQC1" in memory
 *   off  4  u32 seq         decision counter of the consumer, from 0
 *   off  8  u64 tensor_seq  seq of the tensor the decision came from
 *   off 16  u64 publish_ns  that tensor's publish_ns (CLOCK_MONOTONIC of
 *                           the daemon's host; the simulator on the same
 *                           host takes loop latency = now - publish_ns)
 *   off 24  i32 gain_milli  the decision: gain x 1000
 *   off 28  u32 reserved    0
 * Encoded byte by byte, so the layout is the same on any host.
 */
#ifndef DAQIRI_CONTROL_H
#define DAQIRI_CONTROL_H

#include <stdint.h>

#define DAQIRI_CTL_MAGIC	0x31435144u	/* "DQC1" little-endian */
#define DAQIRI_CTL_LEN		32

struct daqiri_ctl {
	uint32_t seq;
	uint64_t tensor_seq;
	uint64_t publish_ns;
	int32_t gain_milli;
};

static inline void
daqiri_ctl_put(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t
daqiri_ctl_get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Write c as DAQIRI_CTL_LEN bytes at out. */
static inline void
daqiri_ctl_encode(const struct daqiri_ctl *c, uint8_t *out)
{
	daqiri_ctl_put(out, DAQIRI_CTL_MAGIC, 4);
	daqiri_ctl_put(out + 4, c->seq, 4);
	daqiri_ctl_put(out + 8, c->tensor_seq, 8);
	daqiri_ctl_put(out + 16, c->publish_ns, 8);
	daqiri_ctl_put(out + 24, (uint32_t)c->gain_milli, 4);
	daqiri_ctl_put(out + 28, 0, 4);
}

/* Read a packet of len bytes into *c: 0, or -1 when it is not a control
 * packet (wrong length or magic; the reserved word is not checked, so
 * that a later version may use it). */
static inline int
daqiri_ctl_decode(const uint8_t *p, uint32_t len, struct daqiri_ctl *c)
{
	if (len != DAQIRI_CTL_LEN ||
	    daqiri_ctl_get(p, 4) != DAQIRI_CTL_MAGIC)
		return -1;
	c->seq = (uint32_t)daqiri_ctl_get(p + 4, 4);
	c->tensor_seq = daqiri_ctl_get(p + 8, 8);
	c->publish_ns = daqiri_ctl_get(p + 16, 8);
	c->gain_milli = (int32_t)(uint32_t)daqiri_ctl_get(p + 24, 4);
	return 0;
}

#endif
