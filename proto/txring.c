/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TX channel ring pair (txring.h): layout, creation, attach, the four
 * single-producer/single-consumer operations and the two doorbells.
 * Whatever one side reads of the other side's positions is checked
 * before it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto_internal.h"
#include "txring.h"

#define TXRING_SUB_OFF	((uint32_t)sizeof(struct daqiri_txring_shm))

static size_t
round_page(size_t n)
{
	return (n + DAQIRI_TXRING_PAGE - 1) & ~(size_t)(DAQIRI_TXRING_PAGE - 1);
}

bool
daqiri_tx_pool_geometry(uint32_t nbufs, uint32_t buf_size, uint32_t *stride,
			uint64_t *pool_bytes)
{
	uint64_t s;

	if (nbufs == 0 || nbufs > DAQIRI_TX_NBUFS_MAX || buf_size == 0 ||
	    buf_size > UINT32_MAX - DAQIRI_TX_BUF_ALIGN)
		return false;
	s = ((uint64_t)buf_size + DAQIRI_TX_BUF_ALIGN - 1) &
	    ~(uint64_t)(DAQIRI_TX_BUF_ALIGN - 1);
	if (stride != NULL)
		*stride = (uint32_t)s;
	if (pool_bytes != NULL)
		*pool_bytes = round_page((size_t)(s * nbufs));
	return true;
}

uint32_t
daqiri_txring_depth(uint32_t nbufs)
{
	uint32_t d = 2;

	if (nbufs == 0 || nbufs > DAQIRI_TX_NBUFS_MAX)
		return 0;
	while (d < nbufs)
		d <<= 1;
	return d;
}

static bool
depth_ok(uint32_t depth)
{
	return depth >= 2 && depth <= DAQIRI_TX_NBUFS_MAX &&
	    (depth & (depth - 1)) == 0;
}

size_t
daqiri_txring_size(uint32_t depth)
{
	if (!depth_ok(depth))
		return 0;
	return round_page(TXRING_SUB_OFF +
	    (size_t)depth * sizeof(struct daqiri_tx_sub) +
	    (size_t)depth * sizeof(struct daqiri_tx_comp));
}

static void
handle_fill(struct daqiri_txring *r, void *mem, uint32_t depth,
	    uint32_t nbufs, uint32_t buf_size, uint32_t stride)
{
	r->shm = mem;
	r->sub = (struct daqiri_tx_sub *)((char *)mem + TXRING_SUB_OFF);
	r->comp = (struct daqiri_tx_comp *)((char *)mem + TXRING_SUB_OFF +
	    (size_t)depth * sizeof(struct daqiri_tx_sub));
	r->depth = depth;
	r->mask = depth - 1;
	r->nbufs = nbufs;
	r->buf_size = buf_size;
	r->buf_stride = stride;
}

int
daqiri_txring_init(struct daqiri_txring *r, void *mem, size_t len,
		   uint32_t nbufs, uint32_t buf_size)
{
	struct daqiri_txring_shm *h = mem;
	uint32_t depth = daqiri_txring_depth(nbufs), stride;
	uint64_t pool;
	size_t need = daqiri_txring_size(depth);

	if (r == NULL || mem == NULL || need == 0 || len < need ||
	    !daqiri_tx_pool_geometry(nbufs, buf_size, &stride, &pool) ||
	    ((uintptr_t)mem & (DAQIRI_TXRING_CACHELINE - 1)) != 0)
		return -EINVAL;
	memset(mem, 0, TXRING_SUB_OFF);
	h->magic = DAQIRI_TXRING_MAGIC;
	h->version = DAQIRI_TXRING_VERSION;
	h->depth = depth;
	h->nbufs = nbufs;
	h->buf_size = buf_size;
	h->buf_stride = stride;
	h->sub_off = TXRING_SUB_OFF;
	h->comp_off = TXRING_SUB_OFF + depth * (uint32_t)sizeof(struct daqiri_tx_sub);
	h->size = need;
	h->pool_bytes = pool;
	atomic_init(&h->sub_head, 0);
	atomic_init(&h->sub_tail, 0);
	atomic_init(&h->comp_head, 0);
	atomic_init(&h->comp_tail, 0);
	/* A worker that never slept yet still gets the first kick. */
	atomic_init(&h->kick_wanted, 1);
	atomic_init(&h->wake_wanted, 0);
	atomic_init(&h->ring_full, 0);
	handle_fill(r, mem, depth, nbufs, buf_size, stride);
	r->sub_pos = 0;
	r->comp_pos = 0;
	atomic_thread_fence(memory_order_release);
	return 0;
}

int
daqiri_txring_attach(struct daqiri_txring *r, void *mem, size_t len)
{
	struct daqiri_txring_shm *h = mem;
	uint32_t depth, nbufs, bsize, stride, head, tail;
	uint64_t pool;

	if (r == NULL || mem == NULL || len < TXRING_SUB_OFF ||
	    ((uintptr_t)mem & (DAQIRI_TXRING_CACHELINE - 1)) != 0)
		return -EPROTO;
	atomic_thread_fence(memory_order_acquire);
	depth = h->depth;
	nbufs = h->nbufs;
	bsize = h->buf_size;
	if (h->magic != DAQIRI_TXRING_MAGIC ||
	    h->version != DAQIRI_TXRING_VERSION || !depth_ok(depth) ||
	    !daqiri_tx_pool_geometry(nbufs, bsize, &stride, &pool) ||
	    depth != daqiri_txring_depth(nbufs) || h->buf_stride != stride ||
	    h->pool_bytes != pool || h->sub_off != TXRING_SUB_OFF ||
	    h->comp_off != TXRING_SUB_OFF + depth * sizeof(struct daqiri_tx_sub) ||
	    h->size != daqiri_txring_size(depth) || h->size != len)
		return -EPROTO;
	handle_fill(r, mem, depth, nbufs, bsize, stride);
	head = atomic_load_explicit(&h->sub_head, memory_order_relaxed);
	tail = atomic_load_explicit(&h->sub_tail, memory_order_acquire);
	if (head - tail > depth)
		return -EPROTO;
	r->sub_pos = head;
	head = atomic_load_explicit(&h->comp_head, memory_order_acquire);
	tail = atomic_load_explicit(&h->comp_tail, memory_order_relaxed);
	if (head - tail > depth)
		return -EPROTO;
	r->comp_pos = tail;
	return 0;
}

int
daqiri_txring_create(struct daqiri_txring *r, uint32_t nbufs,
		     uint32_t buf_size, int *ring_fd, void **ring_mem,
		     size_t *ring_len, int *pool_fd, const void **pool_mem,
		     size_t *pool_len)
{
	size_t n = daqiri_txring_size(daqiri_txring_depth(nbufs));
	bool ring_only = pool_fd == NULL && pool_mem == NULL &&
	    pool_len == NULL;
	uint64_t pool;
	void *rm, *pm = NULL;
	int rf, pf = -1, e;

	if (r == NULL || n == 0 || ring_fd == NULL || ring_mem == NULL ||
	    ring_len == NULL || (!ring_only && (pool_fd == NULL ||
	    pool_mem == NULL || pool_len == NULL)) ||
	    !daqiri_tx_pool_geometry(nbufs, buf_size, NULL, &pool))
		return -EINVAL;
	e = proto_sealed_map("daqiri-txring", n, PROT_READ | PROT_WRITE, &rf, &rm);
	if (e < 0)
		return e;
	if (!ring_only) {
		e = proto_sealed_map("daqiri-txpool", (size_t)pool, PROT_READ, &pf,
		    &pm);
		if (e < 0) {
			munmap(rm, n);
			close(rf);
			return e;
		}
	}
	e = daqiri_txring_init(r, rm, n, nbufs, buf_size);
	if (e < 0) {
		if (pm != NULL) {
			munmap(pm, (size_t)pool);
			close(pf);
		}
		munmap(rm, n);
		close(rf);
		return e;
	}
	*ring_fd = rf;
	*ring_mem = rm;
	*ring_len = n;
	if (!ring_only) {
		*pool_fd = pf;
		*pool_mem = pm;
		*pool_len = (size_t)pool;
	}
	return 0;
}

int
daqiri_tx_sub_push(struct daqiri_txring *r, uint32_t buf, uint32_t len)
{
	uint32_t tail = atomic_load_explicit(&r->shm->sub_tail,
	    memory_order_acquire);
	uint32_t used = r->sub_pos - tail;
	struct daqiri_tx_sub *s;

	if (used > r->depth)
		return -EPROTO;
	if (used == r->depth)
		return -ENOSPC;
	s = &r->sub[r->sub_pos & r->mask];
	s->buf = buf;
	s->len = len;
	r->sub_pos++;
	atomic_store_explicit(&r->shm->sub_head, r->sub_pos,
	    memory_order_release);
	return 0;
}

int
daqiri_tx_sub_pop(struct daqiri_txring *r, struct daqiri_tx_sub *s)
{
	uint32_t head = atomic_load_explicit(&r->shm->sub_head,
	    memory_order_acquire);
	uint32_t avail = head - r->sub_pos;
	struct daqiri_tx_sub *e;

	if (avail > r->depth)
		return -EPROTO;
	if (avail == 0)
		return 0;
	/* One read of each field: the consumer may rewrite the entry
	 * meanwhile; the caller checks the values it got. */
	e = &r->sub[r->sub_pos & r->mask];
	s->buf = atomic_load_explicit((_Atomic uint32_t *)&e->buf,
	    memory_order_relaxed);
	s->len = atomic_load_explicit((_Atomic uint32_t *)&e->len,
	    memory_order_relaxed);
	r->sub_pos++;
	atomic_store_explicit(&r->shm->sub_tail, r->sub_pos,
	    memory_order_release);
	return 1;
}

int
daqiri_tx_comp_push(struct daqiri_txring *r, uint32_t buf,
		    enum daqiri_tx_status st)
{
	uint32_t tail = atomic_load_explicit(&r->shm->comp_tail,
	    memory_order_acquire);
	uint32_t used = r->comp_pos - tail;
	struct daqiri_tx_comp *c;

	if (used > r->depth)
		return -EPROTO;
	if (used == r->depth)
		return -ENOSPC;
	c = &r->comp[r->comp_pos & r->mask];
	c->buf = buf;
	c->status = (uint32_t)st;
	r->comp_pos++;
	atomic_store_explicit(&r->shm->comp_head, r->comp_pos,
	    memory_order_release);
	return 0;
}

int
daqiri_tx_comp_pop(struct daqiri_txring *r, struct daqiri_tx_comp *c)
{
	struct daqiri_tx_comp *e;
	uint32_t head = atomic_load_explicit(&r->shm->comp_head,
	    memory_order_acquire);
	uint32_t avail = head - r->comp_pos;

	if (avail > r->depth)
		return -EPROTO;
	if (avail == 0)
		return 0;
	/* One read of each field, as daqiri_tx_sub_pop(): the other side
	 * may rewrite the entry meanwhile; the caller checks what it got. */
	e = &r->comp[r->comp_pos & r->mask];
	c->buf = atomic_load_explicit((_Atomic uint32_t *)&e->buf,
	    memory_order_relaxed);
	c->status = atomic_load_explicit((_Atomic uint32_t *)&e->status,
	    memory_order_relaxed);
	r->comp_pos++;
	atomic_store_explicit(&r->shm->comp_tail, r->comp_pos,
	    memory_order_release);
	return 1;
}

uint32_t
daqiri_tx_sub_pending(const struct daqiri_txring *r)
{
	uint32_t head = atomic_load_explicit(&r->shm->sub_head,
	    memory_order_acquire);
	uint32_t n = head - r->sub_pos;

	return n > r->depth ? r->depth : n;
}

/* See ring.c "Why the fences": the same store-buffering pattern, once
 * per direction. */
static int
arm(_Atomic uint32_t *word, _Atomic uint32_t *head, uint32_t pos,
    uint32_t depth)
{
	uint32_t avail;

	atomic_store_explicit(word, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	avail = atomic_load_explicit(head, memory_order_acquire) - pos;
	if (avail > depth)
		return -EPROTO;
	return avail != 0;
}

static bool
wanted(_Atomic uint32_t *word)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(word, memory_order_relaxed) == 0)
		return false;
	return atomic_exchange_explicit(word, 0, memory_order_relaxed) != 0;
}

int
daqiri_txring_arm_kick(struct daqiri_txring *r)
{
	return arm(&r->shm->kick_wanted, &r->shm->sub_head, r->sub_pos,
	    r->depth);
}

void
daqiri_txring_disarm_kick(struct daqiri_txring *r)
{
	atomic_store_explicit(&r->shm->kick_wanted, 0, memory_order_relaxed);
}

bool
daqiri_txring_kick_wanted(struct daqiri_txring *r)
{
	return wanted(&r->shm->kick_wanted);
}

int
daqiri_txring_arm_wake(struct daqiri_txring *r)
{
	return arm(&r->shm->wake_wanted, &r->shm->comp_head, r->comp_pos,
	    r->depth);
}

void
daqiri_txring_disarm_wake(struct daqiri_txring *r)
{
	atomic_store_explicit(&r->shm->wake_wanted, 0, memory_order_relaxed);
}

bool
daqiri_txring_wake_wanted(struct daqiri_txring *r)
{
	return wanted(&r->shm->wake_wanted);
}

void
daqiri_txring_count_full(struct daqiri_txring *r)
{
	atomic_fetch_add_explicit(&r->shm->ring_full, 1, memory_order_relaxed);
}

uint64_t
daqiri_txring_full(const struct daqiri_txring *r)
{
	return atomic_load_explicit(&r->shm->ring_full, memory_order_relaxed);
}

int
daqiri_txwake_create(int *mine, int *theirs)
{
	int sv[2], one = 1, e;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0)
		return -errno;
	/* The kernel raises 1 to its minimum buffer (a few KiB): a peer
	 * that never reads holds that much, not the default ~200 KiB. */
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)) < 0 ||
	    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)) < 0) {
		e = -errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	*mine = sv[0];
	*theirs = sv[1];
	return 0;
}
