/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-subscription ring pair, shared by daemon and consumer in one
 * sealed memfd: a completion ring (daemon -> consumer, struct daqiri_desc
 * entries) and a release ring (consumer -> daemon, uint32 buffer indexes).
 * Single producer / single consumer each way, C11 acquire/release atomics.
 */
#ifndef DAQIRI_PROTO_RING_H
#define DAQIRI_PROTO_RING_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include "daqiri_limits.h"
#include "desc.h"

#define DAQIRI_RING_MAGIC	0x474e495249514144ull	/* "DAQIRING" LE */
#define DAQIRI_RING_VERSION	1u
#define DAQIRI_RING_CACHELINE	64
/* DAQIRI_RING_DEPTH_MIN/MAX: daqiri_limits.h */
/* Depth when the subscriber asks for none: the daemon uses the larger of
 * this and nbufs rounded up to a power of two (so a release never finds
 * the release ring full, see PROTOCOL.md). */
#define DAQIRI_RING_DEPTH_DEFAULT 64u
#define DAQIRI_RING_PAGE	4096u

/*
 * The shared layout (fixed; PROTOCOL.md "Ring layout"). Offsets:
 *   0    header (written once by the daemon, then read-only by contract)
 *   64   comp_head  written by the daemon
 *   128  comp_tail  written by the consumer
 *   192  rel_head   written by the consumer
 *   256  rel_tail   written by the daemon
 *   320  completion entries: depth x struct daqiri_desc (64 B)
 *   320 + depth*64  release entries: depth x uint32_t
 *   size rounded up to DAQIRI_RING_PAGE.
 * Positions are free-running uint32 counters (they wrap at 2^32); an
 * entry lives at index pos & (depth - 1).
 */
struct daqiri_ring_shm {
	alignas(DAQIRI_RING_CACHELINE) uint64_t magic;
	uint32_t version;
	uint32_t depth;			/* power of two */
	uint32_t desc_size;		/* sizeof(struct daqiri_desc) */
	uint32_t nbufs;			/* buffer indexes are < nbufs */
	uint32_t comp_off;		/* byte offset of the completion entries */
	uint32_t rel_off;		/* byte offset of the release entries */
	uint64_t size;			/* bytes of the whole ring memory */
	alignas(DAQIRI_RING_CACHELINE) _Atomic uint32_t comp_head;
	alignas(DAQIRI_RING_CACHELINE) _Atomic uint32_t comp_tail;
	alignas(DAQIRI_RING_CACHELINE) _Atomic uint32_t rel_head;
	alignas(DAQIRI_RING_CACHELINE) _Atomic uint32_t rel_tail;
};

_Static_assert(sizeof(struct daqiri_ring_shm) == 320, "ring header layout");

/*
 * One side's private handle on a ring. Every geometry value the code
 * uses comes from here, never from the shared memory again after init or
 * attach, and each side keeps its own positions privately: the other
 * side's writes to shared memory cannot steer this side's accesses out of
 * bounds. The struct is plain memory the caller owns (stack, embedded);
 * it holds no resources.
 */
struct daqiri_ring {
	struct daqiri_ring_shm *shm;
	struct daqiri_desc *comp;
	uint32_t *rel;
	uint32_t depth;
	uint32_t mask;
	uint32_t nbufs;
	uint32_t comp_pos;		/* daemon: next comp_head; consumer: next comp_tail */
	uint32_t rel_pos;		/* consumer: next rel_head; daemon: next rel_tail */
};

/* Bytes of ring memory for depth entries (a multiple of DAQIRI_RING_PAGE),
 * or 0 when depth is not a power of two in [DEPTH_MIN, DEPTH_MAX]. */
size_t daqiri_ring_size(uint32_t depth);

/*
 * Daemon: lay out a ring in mem (len >= daqiri_ring_size(depth), zeroed
 * or not) and fill the handle r. nbufs >= 1. Returns 0, or -EINVAL for a
 * bad depth, nbufs, len or a misaligned mem.
 */
int daqiri_ring_init(struct daqiri_ring *r, void *mem, size_t len,
		     uint32_t depth, uint32_t nbufs);

/*
 * Consumer: check the header of a ring the daemon sent (magic, version,
 * descriptor size, depth, offsets, size == len, positions consistent)
 * and fill the handle r. Returns 0 or -EPROTO.
 */
int daqiri_ring_attach(struct daqiri_ring *r, void *mem, size_t len);

/*
 * Daemon: create a ring in a new memfd: memfd_create(MFD_CLOEXEC |
 * MFD_ALLOW_SEALING), sized, sealed against shrink/grow (so a consumer
 * cannot make the daemon's mapping fault), mapped shared read-write and
 * initialised into the handle r (as daqiri_ring_init). On success *fd,
 * *mem and *len hold the memfd (send a dup to the consumer), the mapping
 * and its length (munmap and close at the end). Returns 0 or a negative
 * errno; nothing leaks on error.
 */
int daqiri_ring_create(struct daqiri_ring *r, uint32_t depth, uint32_t nbufs,
		       int *fd, void **mem, size_t *len);

/*
 * Daemon: publish a descriptor. Returns 0, -ENOSPC when the consumer has
 * depth entries unread (the descriptor is not written), or -EPROTO when
 * the consumer-written comp_tail is impossible (ahead of comp_head or
 * more than depth behind): the consumer is broken or hostile; drop it.
 */
int daqiri_comp_push(struct daqiri_ring *r, const struct daqiri_desc *d);

/*
 * Consumer: take the next descriptor. Returns 1 with *d filled, 0 when
 * the ring is empty, -EPROTO when the daemon-written comp_head is
 * impossible.
 */
int daqiri_comp_pop(struct daqiri_ring *r, struct daqiri_desc *d);

/*
 * Consumer: hand buffer buf_index back. Returns 0, -ENOSPC when the
 * release ring is full, -EPROTO when the daemon-written rel_tail is
 * impossible.
 */
int daqiri_rel_push(struct daqiri_ring *r, uint32_t buf_index);

/*
 * Daemon: take the next released buffer index. Returns 1 with *buf_index
 * set (the value is as the consumer wrote it: the daemon checks that the
 * subscriber holds that buffer), 0 when empty, -EPROTO when the
 * consumer-written rel_head is more than depth ahead of or behind
 * rel_tail.
 */
int daqiri_rel_pop(struct daqiri_ring *r, uint32_t *buf_index);

/* Daemon: descriptors published and not yet taken by the consumer (for
 * stats), clamped to [0, depth] whatever the consumer wrote. */
uint32_t daqiri_comp_pending(const struct daqiri_ring *r);

#endif
