/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The limits the configuration checker, the control protocol and the
 * shared rings must agree on, stated once: daqirid -n refuses a config the
 * daemon could never serve, and the decoder and ring accept exactly what
 * the daemon can send. Named daqiri_limits.h, not limits.h: proto/ is on
 * the include path and would shadow the C library's <limits.h>.
 */
#ifndef DAQIRI_LIMITS_H
#define DAQIRI_LIMITS_H

/* Bytes of one control message, either way (one SOCK_SEQPACKET datagram). */
#define DAQIRI_MSG_SIZE_MAX	65536

/* Names: an interface, reorder, queue, region, group, flow or client name
 * (NUL included), and a stream's "<interface>/<name>". */
#define DAQIRI_NAME_MAX		64
#define DAQIRI_STREAM_NAME_MAX	128
_Static_assert(2 * DAQIRI_NAME_MAX <= DAQIRI_STREAM_NAME_MAX,
    "any <interface>/<name> fits a stream name");

/* Depth of one subscription ring (entries, a power of two). */
#define DAQIRI_RING_DEPTH_MIN	2u
#define DAQIRI_RING_DEPTH_MAX	65536u

/*
 * Tensor buffers of one stream (a reorder config's memory_region
 * num_bufs). Every buffer may be held by a consumer at once, so the
 * release ring, whose depth is nbufs rounded up to a power of two, must
 * hold them all: nbufs can be no more than the deepest ring.
 */
#define DAQIRI_NBUFS_MAX	DAQIRI_RING_DEPTH_MAX

/* Buffers one subscription may hold (max_held): at most all of them. */
#define DAQIRI_MAX_HELD_MAX	DAQIRI_NBUFS_MAX

/* Packets (slots) of one tensor: packets_per_batch, and the descriptor's
 * and presence bitmap's slot counts. */
#define DAQIRI_PPB_LOG2		24
#define DAQIRI_PPB_MAX		(1u << DAQIRI_PPB_LOG2)

#endif
