/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subscription ring pair (ring.h): layout, creation, attach and the
 * four single-producer/single-consumer operations. Whatever one side reads
 * of the other side's positions is checked before it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto_internal.h"
#include "ring.h"

#define RING_COMP_OFF	((uint32_t)sizeof(struct daqiri_ring_shm))

static int
depth_ok(uint32_t depth)
{
	return depth >= DAQIRI_RING_DEPTH_MIN && depth <= DAQIRI_RING_DEPTH_MAX &&
	    (depth & (depth - 1)) == 0;
}

size_t
daqiri_ring_size(uint32_t depth)
{
	size_t n;

	if (!depth_ok(depth))
		return 0;
	n = RING_COMP_OFF + (size_t)depth * sizeof(struct daqiri_desc) +
	    (size_t)depth * sizeof(uint32_t);
	return (n + DAQIRI_RING_PAGE - 1) & ~(size_t)(DAQIRI_RING_PAGE - 1);
}

static void
handle_fill(struct daqiri_ring *r, void *mem, uint32_t depth, uint32_t nbufs)
{
	r->shm = mem;
	r->comp = (struct daqiri_desc *)((char *)mem + RING_COMP_OFF);
	r->rel = (uint32_t *)((char *)mem + RING_COMP_OFF +
	    (size_t)depth * sizeof(struct daqiri_desc));
	r->depth = depth;
	r->mask = depth - 1;
	r->nbufs = nbufs;
}

int
daqiri_ring_init(struct daqiri_ring *r, void *mem, size_t len, uint32_t depth,
		 uint32_t nbufs)
{
	struct daqiri_ring_shm *h = mem;
	size_t need = daqiri_ring_size(depth);

	if (r == NULL || mem == NULL || need == 0 || len < need || nbufs == 0 ||
	    nbufs > DAQIRI_NBUFS_MAX ||
	    ((uintptr_t)mem & (DAQIRI_RING_CACHELINE - 1)) != 0)
		return -EINVAL;
	memset(mem, 0, RING_COMP_OFF);
	h->magic = DAQIRI_RING_MAGIC;
	h->version = DAQIRI_RING_VERSION;
	h->depth = depth;
	h->desc_size = sizeof(struct daqiri_desc);
	h->nbufs = nbufs;
	h->comp_off = RING_COMP_OFF;
	h->rel_off = RING_COMP_OFF + depth * (uint32_t)sizeof(struct daqiri_desc);
	h->size = need;
	atomic_init(&h->comp_head, 0);
	atomic_init(&h->comp_tail, 0);
	atomic_init(&h->rel_head, 0);
	atomic_init(&h->rel_tail, 0);
	atomic_init(&h->need_wakeup, 1);
	handle_fill(r, mem, depth, nbufs);
	r->comp_pos = 0;
	r->rel_pos = 0;
	/* The header must be visible before the fd reaches anyone. */
	atomic_thread_fence(memory_order_release);
	return 0;
}

int
daqiri_ring_attach(struct daqiri_ring *r, void *mem, size_t len)
{
	struct daqiri_ring_shm *h = mem;
	uint32_t depth, head, tail;

	if (r == NULL || mem == NULL || len < RING_COMP_OFF ||
	    ((uintptr_t)mem & (DAQIRI_RING_CACHELINE - 1)) != 0)
		return -EPROTO;
	atomic_thread_fence(memory_order_acquire);
	depth = h->depth;
	if (h->magic != DAQIRI_RING_MAGIC || h->version != DAQIRI_RING_VERSION ||
	    h->desc_size != sizeof(struct daqiri_desc) || !depth_ok(depth) ||
	    h->nbufs == 0 || h->nbufs > DAQIRI_NBUFS_MAX ||
	    h->comp_off != RING_COMP_OFF ||
	    h->rel_off != RING_COMP_OFF + depth * sizeof(struct daqiri_desc) ||
	    h->size != daqiri_ring_size(depth) || h->size != len)
		return -EPROTO;
	handle_fill(r, mem, depth, h->nbufs);
	/* A consumer may attach after the daemon published: start from the
	 * positions as they are, after checking they make sense. */
	head = atomic_load_explicit(&h->comp_head, memory_order_acquire);
	tail = atomic_load_explicit(&h->comp_tail, memory_order_relaxed);
	if (head - tail > depth)
		return -EPROTO;
	r->comp_pos = tail;
	head = atomic_load_explicit(&h->rel_head, memory_order_relaxed);
	tail = atomic_load_explicit(&h->rel_tail, memory_order_acquire);
	if (head - tail > depth)
		return -EPROTO;
	r->rel_pos = head;
	return 0;
}

int
proto_sealed_map(const char *name, size_t n, int prot, int *fd, void **mem)
{
	void *p;
	int f, e;

	f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)n) < 0 ||
	    fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		e = -errno;
		close(f);
		return e;
	}
	p = mmap(NULL, n, prot, MAP_SHARED, f, 0);
	if (p == MAP_FAILED) {
		e = -errno;
		close(f);
		return e;
	}
	*fd = f;
	*mem = p;
	return 0;
}

int
daqiri_ring_create(struct daqiri_ring *r, uint32_t depth, uint32_t nbufs,
		   int *fd, void **mem, size_t *len)
{
	size_t n = daqiri_ring_size(depth);
	void *p;
	int f, e;

	if (r == NULL || n == 0 || nbufs == 0 || nbufs > DAQIRI_NBUFS_MAX ||
	    fd == NULL || mem == NULL || len == NULL)
		return -EINVAL;
	e = proto_sealed_map("daqiri-ring", n, PROT_READ | PROT_WRITE, &f, &p);
	if (e < 0)
		return e;
	e = daqiri_ring_init(r, p, n, depth, nbufs);
	if (e < 0) {
		munmap(p, n);
		close(f);
		return e;
	}
	*fd = f;
	*mem = p;
	*len = n;
	return 0;
}

int
daqiri_comp_push(struct daqiri_ring *r, const struct daqiri_desc *d)
{
	uint32_t tail = atomic_load_explicit(&r->shm->comp_tail,
	    memory_order_acquire);
	uint32_t used = r->comp_pos - tail;

	if (used > r->depth)
		return -EPROTO;
	if (used == r->depth)
		return -ENOSPC;
	memcpy(&r->comp[r->comp_pos & r->mask], d, sizeof(*d));
	r->comp_pos++;
	atomic_store_explicit(&r->shm->comp_head, r->comp_pos,
	    memory_order_release);
	return 0;
}

int
daqiri_comp_pop(struct daqiri_ring *r, struct daqiri_desc *d)
{
	uint32_t head = atomic_load_explicit(&r->shm->comp_head,
	    memory_order_acquire);
	uint32_t avail = head - r->comp_pos;

	if (avail > r->depth)
		return -EPROTO;
	if (avail == 0)
		return 0;
	memcpy(d, &r->comp[r->comp_pos & r->mask], sizeof(*d));
	r->comp_pos++;
	atomic_store_explicit(&r->shm->comp_tail, r->comp_pos,
	    memory_order_release);
	return 1;
}

int
daqiri_rel_push(struct daqiri_ring *r, uint32_t buf_index)
{
	uint32_t tail = atomic_load_explicit(&r->shm->rel_tail,
	    memory_order_acquire);
	uint32_t used = r->rel_pos - tail;

	if (used > r->depth)
		return -EPROTO;
	if (used == r->depth)
		return -ENOSPC;
	r->rel[r->rel_pos & r->mask] = buf_index;
	r->rel_pos++;
	atomic_store_explicit(&r->shm->rel_head, r->rel_pos,
	    memory_order_release);
	return 0;
}

int
daqiri_rel_pop(struct daqiri_ring *r, uint32_t *buf_index)
{
	uint32_t head = atomic_load_explicit(&r->shm->rel_head,
	    memory_order_acquire);
	uint32_t avail = head - r->rel_pos;

	if (avail > r->depth)
		return -EPROTO;
	if (avail == 0)
		return 0;
	/* One read of the slot: the consumer may rewrite it meanwhile, the
	 * caller validates the value it got. */
	*buf_index = atomic_load_explicit(
	    (_Atomic uint32_t *)&r->rel[r->rel_pos & r->mask],
	    memory_order_relaxed);
	r->rel_pos++;
	atomic_store_explicit(&r->shm->rel_tail, r->rel_pos,
	    memory_order_release);
	return 1;
}

uint32_t
daqiri_comp_pending(const struct daqiri_ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->shm->comp_tail,
	    memory_order_acquire);
	uint32_t n = r->comp_pos - tail;

	return n > r->depth ? r->depth : n;
}

/*
 * Why the fences. The daemon stores comp_head then loads need_wakeup; the
 * consumer stores need_wakeup then loads comp_head. That is the
 * store-buffering pattern: with only release/acquire both loads may see
 * the old values (the daemon sees "awake", the consumer sees "empty"),
 * and the consumer sleeps on a tensor nobody wakes it for. A seq_cst
 * fence between the store and the load on both sides forbids that
 * outcome (C11 7.17.4): at least one side sees the other's store, so
 * either the daemon sends or the consumer does not sleep. On x86 each
 * fence is one mfence (or locked op); the busy-polling consumer never
 * arms, and the daemon's fence is a few ns next to the ring push.
 */
bool
daqiri_ring_wake_wanted(struct daqiri_ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	/* A plain load first: the common busy-poll case does not write the
	 * consumer's cache line. */
	if (atomic_load_explicit(&r->shm->need_wakeup,
	    memory_order_relaxed) == 0)
		return false;
	return atomic_exchange_explicit(&r->shm->need_wakeup, 0,
	    memory_order_relaxed) != 0;
}

int
daqiri_ring_arm(struct daqiri_ring *r)
{
	uint32_t head, avail;

	atomic_store_explicit(&r->shm->need_wakeup, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	head = atomic_load_explicit(&r->shm->comp_head, memory_order_acquire);
	avail = head - r->comp_pos;
	if (avail > r->depth)
		return -EPROTO;
	return avail != 0;
}

void
daqiri_ring_disarm(struct daqiri_ring *r)
{
	atomic_store_explicit(&r->shm->need_wakeup, 0, memory_order_relaxed);
}

int
daqiri_wake_create(int *mine, int *theirs)
{
	int sv[2], one = 1, e;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0)
		return -errno;
	/* The kernel raises 1 to its minimum send buffer (a few KiB). */
	if (shutdown(sv[0], SHUT_RD) < 0 ||
	    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)) < 0) {
		e = -errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	*mine = sv[0];
	*theirs = sv[1];
	return 0;
}

int
daqiri_wake_signal(int fd)
{
	static const char b = 1;

	return send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int
daqiri_wake_drain(int fd)
{
	char b[16];
	int n = 0;

	for (;;) {
		ssize_t k = recv(fd, b, sizeof(b), MSG_DONTWAIT);

		if (k > 0) {
			n++;
			continue;
		}
		/* 0 is no wake-up: a stream socket whose peer is gone,
		 * which a datagram socket never reads; looping on it
		 * would never end */
		if (k == 0)
			return n;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? n : -errno;
	}
}

/*
 * The triggers are a seqlock of one writer: trig_seq odd while the
 * daemon writes. The reader takes the pair between two equal, even
 * sequence numbers; the fences order the plain loads of the pair against
 * them (the seqlock pattern of seqlock.h, on shared memory).
 */
void
daqiri_ring_trigger_set(struct daqiri_ring_shm *shm, uint64_t count,
			uint64_t ns)
{
	uint32_t seq = atomic_load_explicit(&shm->trig_seq,
	    memory_order_relaxed);

	atomic_store_explicit(&shm->trig_seq, seq | 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&shm->trig_count, count, memory_order_relaxed);
	atomic_store_explicit(&shm->trig_ns, ns, memory_order_relaxed);
	atomic_store_explicit(&shm->trig_seq, (seq | 1) + 1,
	    memory_order_release);
}

#define TRIGGER_READ_TRIES	64

int
daqiri_ring_trigger_get(const struct daqiri_ring *r, uint64_t *count,
			uint64_t *ns)
{
	struct daqiri_ring_shm *shm = r->shm;
	uint32_t s0, s1;

	for (int i = 0; i < TRIGGER_READ_TRIES; i++) {
		s0 = atomic_load_explicit(&shm->trig_seq, memory_order_acquire);
		if (s0 & 1)
			continue;
		*count = atomic_load_explicit(&shm->trig_count,
		    memory_order_relaxed);
		*ns = atomic_load_explicit(&shm->trig_ns, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s1 = atomic_load_explicit(&shm->trig_seq, memory_order_relaxed);
		if (s0 == s1)
			return 0;
	}
	return -EAGAIN;
}
