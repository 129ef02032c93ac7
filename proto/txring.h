/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TX channel ring pair (PROTOCOL.md "TX channels"), shared by daemon
 * and consumer in one sealed memfd: a submission ring (consumer ->
 * daemon: which pool buffer, how many payload bytes) and a completion
 * ring (daemon -> consumer: the buffer is free again, and how it went).
 * Single producer / single consumer each way, C11 acquire/release
 * atomics, the same rules as the subscription ring (ring.h): each side
 * keeps its own positions and geometry privately and checks whatever it
 * reads of the other side's.
 *
 * The payload pool beside it is a second sealed memfd of nbufs buffers
 * of buf_stride bytes; only the channel's owner gets it, read-write; the
 * daemon maps it read-only and never writes it. A tx queue whose region
 * is device memory has a device pool instead (one cudaMalloc of the same
 * pool_bytes, handed over as a CUDA IPC memory handle: daemon/tx.c); the
 * ring is the same.
 *
 * Doorbells go both ways on one AF_UNIX datagram socketpair: the daemon's
 * tx worker sets kick_wanted before it sleeps and the consumer, after a
 * submission, sends one byte when it finds the word set; the consumer
 * sets wake_wanted before it waits for completions and the daemon sends
 * one byte when it finds that set. Neither side ever blocks on the other.
 */
#ifndef DAQIRI_PROTO_TXRING_H
#define DAQIRI_PROTO_TXRING_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daqiri_limits.h"

#define DAQIRI_TXRING_MAGIC	0x5258544952514144ull	/* "DAQRITXR" LE */
#define DAQIRI_TXRING_VERSION	1u
#define DAQIRI_TXRING_CACHELINE	64
#define DAQIRI_TXRING_PAGE	4096u
/* Buffers of one channel's pool, and its ring depth. */
#define DAQIRI_TX_NBUFS_MAX	4096u
#define DAQIRI_TX_NBUFS_DEFAULT	64u
/* A buffer's stride in the pool is its size rounded up to this. */
#define DAQIRI_TX_BUF_ALIGN	64u

/* How a submitted payload went (daqiri_tx_comp.status). */
enum daqiri_tx_status {
	DAQIRI_TX_SENT,			/* handed to the kernel / NIC */
	DAQIRI_TX_TOO_BIG,		/* len over the channel's buf_size */
	DAQIRI_TX_ENGINE_ERROR,		/* the engine failed to send it */
	DAQIRI_TX_CLOSED,		/* the queue stopped before it went */
	DAQIRI_TX_STATUS_MAX
};

/* One submission: pool buffer buf holds len payload bytes. */
struct daqiri_tx_sub {
	uint32_t buf;
	uint32_t len;
};

/* One completion: buffer buf is the consumer's again. */
struct daqiri_tx_comp {
	uint32_t buf;
	uint32_t status;		/* enum daqiri_tx_status */
};

/*
 * The shared layout (fixed). Offsets:
 *   0    header (written once by the daemon, read-only by contract)
 *   64   sub_head     written by the consumer
 *   128  sub_tail     written by the daemon
 *   192  comp_head    written by the daemon
 *   256  comp_tail    written by the consumer
 *   320  kick_wanted  set by the daemon before it sleeps, cleared by the
 *        consumer when it sends the kick
 *   384  wake_wanted  set by the consumer before it sleeps, cleared by
 *        the daemon when it sends the wake-up
 *   448  ring_full    the consumer's count of submissions refused with
 *        -EAGAIN (no free buffer or a full ring): reported as it is
 *   512  submission entries: depth x struct daqiri_tx_sub (8 B)
 *   512 + depth*8  completion entries: depth x struct daqiri_tx_comp
 *   size rounded up to DAQIRI_TXRING_PAGE.
 */
struct daqiri_txring_shm {
	alignas(DAQIRI_TXRING_CACHELINE) uint64_t magic;
	uint32_t version;
	uint32_t depth;			/* power of two, >= nbufs */
	uint32_t nbufs;
	uint32_t buf_size;		/* largest payload of one buffer */
	uint32_t buf_stride;		/* bytes between buffers in the pool */
	uint32_t sub_off;
	uint32_t comp_off;
	uint32_t pad;
	uint64_t size;			/* bytes of the whole ring memory */
	uint64_t pool_bytes;		/* bytes of the pool memfd */
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t sub_head;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t sub_tail;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t comp_head;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t comp_tail;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t kick_wanted;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint32_t wake_wanted;
	alignas(DAQIRI_TXRING_CACHELINE) _Atomic uint64_t ring_full;
};

_Static_assert(sizeof(struct daqiri_txring_shm) == 512, "tx ring header");

/* One side's private handle (plain memory; no resources). */
struct daqiri_txring {
	struct daqiri_txring_shm *shm;
	struct daqiri_tx_sub *sub;
	struct daqiri_tx_comp *comp;
	uint32_t depth;
	uint32_t mask;
	uint32_t nbufs;
	uint32_t buf_size;
	uint32_t buf_stride;
	uint32_t sub_pos;		/* consumer: next sub_head; daemon: next sub_tail */
	uint32_t comp_pos;		/* daemon: next comp_head; consumer: next comp_tail */
};

/* The pool geometry for nbufs buffers of buf_size bytes: the stride and
 * the pool's bytes (a multiple of DAQIRI_TXRING_PAGE); false when nbufs
 * is 0 or over DAQIRI_TX_NBUFS_MAX, or buf_size is 0. */
bool daqiri_tx_pool_geometry(uint32_t nbufs, uint32_t buf_size,
			     uint32_t *stride, uint64_t *pool_bytes);

/* The ring depth for nbufs buffers (nbufs rounded up to a power of two,
 * at least 2), and the bytes of ring memory for it; 0 when out of range. */
uint32_t daqiri_txring_depth(uint32_t nbufs);
size_t daqiri_txring_size(uint32_t depth);

/*
 * Daemon: lay out a ring in mem and fill the handle. depth from
 * daqiri_txring_depth(nbufs). Returns 0 or -EINVAL.
 */
int daqiri_txring_init(struct daqiri_txring *r, void *mem, size_t len,
		       uint32_t nbufs, uint32_t buf_size);

/*
 * Consumer: check the header the daemon wrote (magic, version, depth,
 * offsets, geometry, size == len, positions consistent) and fill the
 * handle. Returns 0 or -EPROTO.
 */
int daqiri_txring_attach(struct daqiri_txring *r, void *mem, size_t len);

/*
 * Daemon: the two memfds of a new channel, sealed against shrink and
 * grow: the ring (mapped read-write into *ring_mem, initialised into r)
 * and the pool (mapped read-only into *pool_mem). pool_fd, pool_mem and
 * pool_len all NULL: the ring only (a device pool is the caller's to
 * make; the header's pool_bytes is the same). On success the fds,
 * mappings and lengths are the caller's. Returns 0 or a negative errno;
 * nothing leaks on error.
 */
int daqiri_txring_create(struct daqiri_txring *r, uint32_t nbufs,
			 uint32_t buf_size, int *ring_fd, void **ring_mem,
			 size_t *ring_len, int *pool_fd,
			 const void **pool_mem, size_t *pool_len);

/* Consumer: submit buffer buf with len bytes. 0, -ENOSPC (ring full),
 * -EPROTO (daemon-written sub_tail impossible). */
int daqiri_tx_sub_push(struct daqiri_txring *r, uint32_t buf, uint32_t len);
/* Daemon: take the next submission (as the consumer wrote it: the caller
 * checks buf and len). 1, 0 when empty, -EPROTO when sub_head is more
 * than depth ahead of or behind sub_tail. */
int daqiri_tx_sub_pop(struct daqiri_txring *r, struct daqiri_tx_sub *s);
/* Daemon: complete buffer buf. 0, -ENOSPC, -EPROTO (comp_tail
 * impossible). */
int daqiri_tx_comp_push(struct daqiri_txring *r, uint32_t buf,
			enum daqiri_tx_status st);
/* Consumer: take the next completion. 1, 0 when empty, -EPROTO. */
int daqiri_tx_comp_pop(struct daqiri_txring *r, struct daqiri_tx_comp *c);
/* Daemon: submissions waiting, clamped to [0, depth]. */
uint32_t daqiri_tx_sub_pending(const struct daqiri_txring *r);

/*
 * Doorbells (the same store-buffering fences as ring.c).
 * Daemon, before it sleeps: set kick_wanted, then look again: 0 armed
 * (safe to sleep), 1 submissions arrived meanwhile, -EPROTO.
 * Consumer, after a push: true when the daemon wants a kick (the word is
 * cleared, so a run of pushes sends one kick per sleep).
 * Consumer, before it waits for completions: set wake_wanted and look
 * again: 0, 1 or -EPROTO. Daemon, after a completion push: true when the
 * consumer wants a wake-up.
 */
int daqiri_txring_arm_kick(struct daqiri_txring *r);
void daqiri_txring_disarm_kick(struct daqiri_txring *r);
bool daqiri_txring_kick_wanted(struct daqiri_txring *r);
int daqiri_txring_arm_wake(struct daqiri_txring *r);
void daqiri_txring_disarm_wake(struct daqiri_txring *r);
bool daqiri_txring_wake_wanted(struct daqiri_txring *r);

/* Consumer: count one refused submission; daemon: read the count. */
void daqiri_txring_count_full(struct daqiri_txring *r);
uint64_t daqiri_txring_full(const struct daqiri_txring *r);

/*
 * Daemon: the doorbell socketpair (AF_UNIX, SOCK_DGRAM, close-on-exec,
 * both ends non-blocking, smallest buffers). *mine reads kicks and sends
 * wake-ups; *theirs goes to the consumer. 0 or -errno. Both sides use
 * daqiri_wake_signal() / daqiri_wake_drain() (ring.h) on their end.
 */
int daqiri_txwake_create(int *mine, int *theirs);

#endif
