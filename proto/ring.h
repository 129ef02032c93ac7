/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-subscription ring pair, shared by daemon and consumer in one
 * sealed memfd: a completion ring (daemon -> consumer, struct daqiri_desc
 * entries) and a release ring (consumer -> daemon, uint32 buffer indexes).
 * Single producer / single consumer each way, C11 acquire/release atomics.
 *
 * The wake-up beside it is one end of an AF_UNIX datagram socketpair: the
 * consumer gets a socket of its own (not a dup of the daemon's open file
 * description, as the eventfd was), so nothing it does to its end -- clear
 * O_NONBLOCK, stop reading, shut it down, close it -- can make the
 * daemon's non-blocking send block. The daemon sends only when the
 * consumer asked for it in need_wakeup before it went to sleep, so a
 * busy-polling consumer costs the daemon no system call at all.
 */
#ifndef DAQIRI_PROTO_RING_H
#define DAQIRI_PROTO_RING_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daqiri_limits.h"
#include "desc.h"

#define DAQIRI_RING_MAGIC	0x474e495249514144ull	/* "DAQIRING" LE */
/* 2: need_wakeup word at 320, entries from 384 (PROTOCOL.md changelog). */
#define DAQIRI_RING_VERSION	2u
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
 *   320  need_wakeup  set by the consumer before it sleeps, cleared by
 *        the daemon when it sends the wake-up
 *   324  trig_seq, 328 trig_count, 336 trig_ns  the stream's triggers
 *        (daqirictl trigger), written by the daemon under a seqlock
 *   384  completion entries: depth x struct daqiri_desc (64 B)
 *   384 + depth*64  release entries: depth x uint32_t
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
	/* Own cache line: the consumer writes it on every sleep, and it must
	 * not bounce the line the daemon's comp_head lives in. Any nonzero
	 * value means "asleep, send a wake-up". */
	alignas(DAQIRI_RING_CACHELINE) _Atomic uint32_t need_wakeup;
	/* The stream's triggers: how many since the daemon started and its
	 * CLOCK_MONOTONIC of the last. Rare writes by the daemon's main
	 * thread, odd trig_seq while it writes; a daemon before them left
	 * all three 0 (no trigger, ever). */
	_Atomic uint32_t trig_seq;
	_Atomic uint64_t trig_count;
	_Atomic uint64_t trig_ns;
};

_Static_assert(sizeof(struct daqiri_ring_shm) == 384, "ring header layout");

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

/*
 * The wake-up protocol (PROTOCOL.md "Ring layout"). A new ring starts
 * with need_wakeup set, so a consumer that sleeps on its socket before it
 * ever armed still gets the first publish.
 *
 * Daemon, after a successful daqiri_comp_push(): true when the consumer
 * is (about to be) asleep and wants a wake-up; the word is cleared, so a
 * burst of publishes sends one wake-up per sleep. No system call.
 */
bool daqiri_ring_wake_wanted(struct daqiri_ring *r);

/*
 * Consumer, before it sleeps: set need_wakeup, then look at the ring
 * again. Returns 0 (armed: safe to sleep on the wake socket), 1 when
 * descriptors arrived meanwhile (do not sleep; pop them), -EPROTO when
 * comp_head is impossible.
 */
int daqiri_ring_arm(struct daqiri_ring *r);

/* Consumer: clear need_wakeup (a busy-polling reader wants no wake-ups). */
void daqiri_ring_disarm(struct daqiri_ring *r);

/*
 * Daemon (main thread, the only writer): the stream's triggers are now
 * count, the last at ns. Readers never wait on it.
 */
void daqiri_ring_trigger_set(struct daqiri_ring_shm *shm, uint64_t count,
			     uint64_t ns);

/*
 * Consumer: read the stream's triggers. Returns 0 with *count and *ns, or
 * -EAGAIN when the daemon was writing them all the while (try again).
 */
int daqiri_ring_trigger_get(const struct daqiri_ring *r, uint64_t *count,
			    uint64_t *ns);

/*
 * Daemon: a wake-up socketpair (AF_UNIX, SOCK_DGRAM, non-blocking,
 * close-on-exec). *mine is shut for reading (the consumer cannot queue
 * data or fds at the daemon) and has the smallest send buffer (a wake-up
 * nobody reads holds a few hundred bytes of kernel memory, not the
 * default ~200 KiB); *theirs goes to the consumer. Returns 0 or -errno.
 */
int daqiri_wake_create(int *mine, int *theirs);

/*
 * Daemon: send one wake-up on fd (MSG_DONTWAIT | MSG_NOSIGNAL). Never
 * blocks. Returns 0, or the send's -errno: -EAGAIN (one is already
 * queued: the consumer is signalled), -ECONNREFUSED / -EPIPE / -EPERM (it
 * closed, shut or connected its end elsewhere: it cut off its own
 * wake-ups), or -ENOBUFS / -ENOMEM (nothing was sent: the caller arms the
 * ring again, daqiri_ring_arm(), so the next publish tries once more).
 */
int daqiri_wake_signal(int fd);

/* Consumer: read every queued wake-up off fd without blocking. Returns
 * the number read, or -errno for an error other than EAGAIN. */
int daqiri_wake_drain(int fd);

#endif
