/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the TX channel ring pair (proto/txring.c) and of the client's
 * TX channels (client/client_tx.c). The ring: pool geometry, layout and
 * the attach checks, push/pop both ways, full and empty, positions
 * wrapping at 2^32, impossible positions written by the other side, the
 * two doorbells, the sealed memfds. The client: a forked fake daemon
 * running the real control server (daemon/control.c) whose tx_open makes
 * a real channel (daqiri_txring_create) and whose tick plays the TX
 * worker: it checks and "sends" each submission (a running hash of the
 * payloads, in order), completes it and wakes a sleeper; a test asks it
 * what it got through stats.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "daqiri_client.h"
#include "proto.h"
#include "ring.h"
#include "txring.h"

#define NB		8u
#define BSZ		1000u

static void *
tx_mem(uint32_t nbufs, size_t *len)
{
	void *p;

	*len = daqiri_txring_size(daqiri_txring_depth(nbufs));
	ck_assert_uint_gt(*len, 0);
	p = aligned_alloc(DAQIRI_TXRING_PAGE, *len);
	ck_assert_ptr_nonnull(p);
	memset(p, 0xA5, *len);	/* init must not rely on zeroed memory */
	return p;
}

/* A daemon handle d and a consumer handle c on one fresh ring. */
static void *
pair(uint32_t nbufs, struct daqiri_txring *d, struct daqiri_txring *c,
     size_t *len)
{
	void *m = tx_mem(nbufs, len);

	ck_assert_int_eq(daqiri_txring_init(d, m, *len, nbufs, BSZ), 0);
	ck_assert_int_eq(daqiri_txring_attach(c, m, *len), 0);
	return m;
}

START_TEST(test_layout)
{
	struct daqiri_txring_shm *h = NULL;

	ck_assert_uint_eq(sizeof(*h), 512);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, sub_head), 64);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, sub_tail), 128);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, comp_head), 192);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, comp_tail), 256);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, kick_wanted), 320);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, wake_wanted), 384);
	ck_assert_uint_eq(offsetof(struct daqiri_txring_shm, ring_full), 448);
	ck_assert_uint_eq(sizeof(struct daqiri_tx_sub), 8);
	ck_assert_uint_eq(sizeof(struct daqiri_tx_comp), 8);
	/* PROTOCOL.md gives the magic as its bytes in memory (x86 and
	 * every other little-endian host): "DAQRITXR". */
	ck_assert_uint_eq(DAQIRI_TXRING_MAGIC, 0x5258544952514144ull);
	ck_assert_mem_eq(&(uint64_t){ DAQIRI_TXRING_MAGIC }, "DAQRITXR", 8);
	ck_assert_uint_eq(DAQIRI_TXRING_VERSION, 1);
}
END_TEST

START_TEST(test_geometry)
{
	uint32_t stride;
	uint64_t pool;

	ck_assert(daqiri_tx_pool_geometry(1, 1, &stride, &pool));
	ck_assert_uint_eq(stride, 64);
	ck_assert_uint_eq(pool, 4096);
	ck_assert(daqiri_tx_pool_geometry(64, 1472, &stride, &pool));
	ck_assert_uint_eq(stride, 1472);
	ck_assert_uint_eq(pool, 94208);	/* 64 x 1472 = 23 pages */
	ck_assert(daqiri_tx_pool_geometry(3, 65, &stride, &pool));
	ck_assert_uint_eq(stride, 128);
	ck_assert_uint_eq(pool, 4096);
	ck_assert(daqiri_tx_pool_geometry(DAQIRI_TX_NBUFS_MAX, 9000, &stride,
	    &pool));
	ck_assert_uint_eq(stride, 9024);
	ck_assert_uint_eq(pool % DAQIRI_TXRING_PAGE, 0);
	ck_assert_uint_ge(pool, (uint64_t)9024 * DAQIRI_TX_NBUFS_MAX);
	ck_assert(!daqiri_tx_pool_geometry(0, 100, &stride, &pool));
	ck_assert(!daqiri_tx_pool_geometry(DAQIRI_TX_NBUFS_MAX + 1, 100,
	    &stride, &pool));
	ck_assert(!daqiri_tx_pool_geometry(4, 0, &stride, &pool));
	ck_assert(!daqiri_tx_pool_geometry(4, UINT32_MAX, &stride, &pool));
	ck_assert(daqiri_tx_pool_geometry(4, 100, NULL, NULL));

	ck_assert_uint_eq(daqiri_txring_depth(0), 0);
	ck_assert_uint_eq(daqiri_txring_depth(1), 2);
	ck_assert_uint_eq(daqiri_txring_depth(2), 2);
	ck_assert_uint_eq(daqiri_txring_depth(3), 4);
	ck_assert_uint_eq(daqiri_txring_depth(64), 64);
	ck_assert_uint_eq(daqiri_txring_depth(65), 128);
	ck_assert_uint_eq(daqiri_txring_depth(DAQIRI_TX_NBUFS_MAX),
	    DAQIRI_TX_NBUFS_MAX);
	ck_assert_uint_eq(daqiri_txring_depth(DAQIRI_TX_NBUFS_MAX + 1), 0);
	ck_assert_uint_eq(daqiri_txring_size(0), 0);
	ck_assert_uint_eq(daqiri_txring_size(3), 0);
	ck_assert_uint_eq(daqiri_txring_size(2 * DAQIRI_TX_NBUFS_MAX), 0);
	ck_assert_uint_eq(daqiri_txring_size(2), 4096);
	ck_assert_uint_eq(daqiri_txring_size(64), 4096);	/* 512 + 1024 */
	ck_assert_uint_eq(daqiri_txring_size(256), 8192); /* 512 + 4096 */
	ck_assert_uint_eq(daqiri_txring_size(DAQIRI_TX_NBUFS_MAX),
	    512 + 16 * DAQIRI_TX_NBUFS_MAX + DAQIRI_TXRING_PAGE - 512);
}
END_TEST

START_TEST(test_init_attach)
{
	struct daqiri_txring d, c;
	struct daqiri_txring_shm *h;
	size_t len;
	void *m = tx_mem(5, &len);

	ck_assert_int_eq(daqiri_txring_init(&d, m, len - 1, 5, BSZ), -EINVAL);
	ck_assert_int_eq(daqiri_txring_init(&d, m, len, 0, BSZ), -EINVAL);
	ck_assert_int_eq(daqiri_txring_init(&d, m, len, 5, 0), -EINVAL);
	ck_assert_int_eq(daqiri_txring_init(&d, (char *)m + 8, len - 8, 5,
	    BSZ), -EINVAL);
	ck_assert_int_eq(daqiri_txring_init(&d, m, len, 5, BSZ), 0);
	h = m;
	ck_assert_uint_eq(h->depth, 8);
	ck_assert_uint_eq(h->nbufs, 5);
	ck_assert_uint_eq(h->buf_size, BSZ);
	ck_assert_uint_eq(h->buf_stride, 1024);
	ck_assert_uint_eq(h->sub_off, 512);
	ck_assert_uint_eq(h->comp_off, 512 + 8 * 8);
	ck_assert_uint_eq(h->size, len);
	ck_assert_uint_eq(h->pool_bytes, 8192);
	ck_assert_uint_eq(h->kick_wanted, 1);	/* the first kick goes */
	ck_assert_uint_eq(h->wake_wanted, 0);
	ck_assert_int_eq(daqiri_txring_attach(&c, m, len), 0);
	ck_assert_uint_eq(c.depth, 8);
	ck_assert_uint_eq(c.mask, 7);
	ck_assert_uint_eq(c.nbufs, 5);
	ck_assert_uint_eq(c.buf_size, BSZ);
	ck_assert_uint_eq(c.buf_stride, 1024);
	ck_assert_ptr_eq(c.sub, (char *)m + 512);
	ck_assert_ptr_eq(c.comp, (char *)m + 512 + 64);
	ck_assert_int_eq(daqiri_txring_attach(&c, m, len - 1), -EPROTO);
	ck_assert_int_eq(daqiri_txring_attach(&c, m, 100), -EPROTO);
	ck_assert_int_eq(daqiri_txring_attach(&c, NULL, len), -EPROTO);
	free(m);
}
END_TEST

/* Each header field the consumer checks, made wrong in turn. */
START_TEST(test_attach_rejects)
{
	struct daqiri_txring d, c;
	struct daqiri_txring_shm *h;
	size_t len;
	void *m = tx_mem(NB, &len);
	int i;

	h = m;
	for (i = 0; i < 15; i++) {
		ck_assert_int_eq(daqiri_txring_init(&d, m, len, NB, BSZ), 0);
		switch (i) {
		case 0: h->magic ^= 1; break;
		case 1: h->version = 2; break;
		case 2: h->depth = 16; break;	/* not the nbufs rule */
		case 3: h->depth = 7; break;
		case 4: h->nbufs = 0; break;
		case 5: h->nbufs = 9; break;	/* depth 8 too small */
		case 6: h->buf_size = 0; break;
		case 7: h->buf_stride = 1000; break;	/* not aligned */
		case 8: h->pool_bytes += 4096; break;
		case 9: h->sub_off = 576; break;
		case 10: h->comp_off += 8; break;
		case 11: h->size = len + 4096; break;
		case 12:			/* more submitted than depth */
			atomic_store(&h->sub_head, 9);
			break;
		case 13:			/* tail ahead of head */
			atomic_store(&h->sub_tail, 1);
			break;
		case 14:
			atomic_store(&h->comp_head, UINT32_MAX);
			break;
		}
		ck_assert_msg(daqiri_txring_attach(&c, m, len) == -EPROTO,
		    "case %d accepted", i);
	}
	/* In-flight positions that are possible are fine (a re-attach). */
	ck_assert_int_eq(daqiri_txring_init(&d, m, len, NB, BSZ), 0);
	atomic_store(&h->sub_head, 8);
	atomic_store(&h->sub_tail, 3);
	atomic_store(&h->comp_head, 2);
	ck_assert_int_eq(daqiri_txring_attach(&c, m, len), 0);
	ck_assert_uint_eq(c.sub_pos, 8);
	ck_assert_uint_eq(c.comp_pos, 0);
	free(m);
}
END_TEST

START_TEST(test_push_pop)
{
	struct daqiri_txring d, c;
	struct daqiri_tx_sub s;
	struct daqiri_tx_comp k;
	size_t len;
	void *m = pair(NB, &d, &c, &len);
	uint32_t i;

	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 0);
	ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 0);
	ck_assert_uint_eq(daqiri_tx_sub_pending(&d), 0);
	for (i = 0; i < NB; i++)
		ck_assert_int_eq(daqiri_tx_sub_push(&c, i, 100 + i), 0);
	ck_assert_int_eq(daqiri_tx_sub_push(&c, 0, 1), -ENOSPC);
	ck_assert_uint_eq(daqiri_tx_sub_pending(&d), NB);
	for (i = 0; i < NB; i++) {
		ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 1);
		ck_assert_uint_eq(s.buf, i);
		ck_assert_uint_eq(s.len, 100 + i);
		ck_assert_int_eq(daqiri_tx_comp_push(&d, i, i % 2 ?
		    DAQIRI_TX_TOO_BIG : DAQIRI_TX_SENT), 0);
	}
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 0);
	ck_assert_int_eq(daqiri_tx_comp_push(&d, 0, DAQIRI_TX_SENT), -ENOSPC);
	for (i = 0; i < NB; i++) {
		ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 1);
		ck_assert_uint_eq(k.buf, i);
		ck_assert_uint_eq(k.status, i % 2 ? DAQIRI_TX_TOO_BIG :
		    DAQIRI_TX_SENT);
	}
	ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 0);
	free(m);
}
END_TEST

/* Positions cross 2^32 without a hiccup. */
START_TEST(test_wrap)
{
	struct daqiri_txring d, c;
	struct daqiri_txring_shm *h;
	struct daqiri_tx_sub s;
	struct daqiri_tx_comp k;
	size_t len;
	void *m = tx_mem(NB, &len);
	uint32_t start = UINT32_MAX - 20, i;

	ck_assert_int_eq(daqiri_txring_init(&d, m, len, NB, BSZ), 0);
	h = m;
	atomic_store(&h->sub_head, start);
	atomic_store(&h->sub_tail, start);
	atomic_store(&h->comp_head, start);
	atomic_store(&h->comp_tail, start);
	d.sub_pos = d.comp_pos = start;
	ck_assert_int_eq(daqiri_txring_attach(&c, m, len), 0);
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(daqiri_tx_sub_push(&c, i % NB, i), 0);
		if (i % 3 == 0)
			ck_assert_int_eq(daqiri_tx_sub_push(&c, 7, 7), 0);
		while (daqiri_tx_sub_pop(&d, &s) == 1)
			ck_assert_int_eq(daqiri_tx_comp_push(&d, s.buf,
			    DAQIRI_TX_SENT), 0);
		ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 1);
		ck_assert_uint_eq(k.buf, i % NB);
		if (i % 3 == 0) {
			ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 1);
			ck_assert_uint_eq(k.buf, 7);
		}
		ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 0);
	}
	ck_assert_uint_lt(atomic_load(&h->sub_head), 200);	/* wrapped */
	free(m);
}
END_TEST

/* Whatever the other side writes into its positions, each side's
 * operation refuses what cannot be, instead of reading out of range. */
START_TEST(test_hostile_positions)
{
	struct daqiri_txring d, c;
	struct daqiri_txring_shm *h;
	struct daqiri_tx_sub s;
	struct daqiri_tx_comp k;
	size_t len;
	void *m = pair(NB, &d, &c, &len);

	h = m;
	/* daemon-written sub_tail beyond what the consumer pushed */
	atomic_store(&h->sub_tail, 5);
	ck_assert_int_eq(daqiri_tx_sub_push(&c, 0, 1), -EPROTO);
	atomic_store(&h->sub_tail, 0);
	/* consumer-written sub_head far ahead of the daemon */
	atomic_store(&h->sub_head, NB + 1);
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), -EPROTO);
	ck_assert_uint_eq(daqiri_tx_sub_pending(&d), NB);	/* clamped */
	atomic_store(&h->sub_head, UINT32_MAX);		/* behind */
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), -EPROTO);
	ck_assert_int_eq(daqiri_txring_arm_kick(&d), -EPROTO);
	atomic_store(&h->sub_head, 0);
	/* consumer-written comp_tail ahead of the daemon's head */
	atomic_store(&h->comp_tail, 3);
	ck_assert_int_eq(daqiri_tx_comp_push(&d, 0, DAQIRI_TX_SENT), -EPROTO);
	atomic_store(&h->comp_tail, 0);
	/* daemon-written comp_head far ahead */
	atomic_store(&h->comp_head, NB * 4);
	ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), -EPROTO);
	ck_assert_int_eq(daqiri_txring_arm_wake(&c), -EPROTO);
	atomic_store(&h->comp_head, 0);
	/* sane again: both directions work */
	ck_assert_int_eq(daqiri_tx_sub_push(&c, 1, 2), 0);
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 1);
	ck_assert_int_eq(daqiri_tx_comp_push(&d, 1, DAQIRI_TX_SENT), 0);
	ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 1);
	free(m);
}
END_TEST

START_TEST(test_doorbells)
{
	struct daqiri_txring d, c;
	struct daqiri_tx_sub s;
	struct daqiri_tx_comp k;
	size_t len;
	void *m = pair(NB, &d, &c, &len);

	/* A new ring wants the first kick, once. */
	ck_assert(daqiri_txring_kick_wanted(&c));
	ck_assert(!daqiri_txring_kick_wanted(&c));
	/* The worker arms before it sleeps: nothing waiting, 0. */
	ck_assert_int_eq(daqiri_txring_arm_kick(&d), 0);
	ck_assert_int_eq(daqiri_tx_sub_push(&c, 0, 10), 0);
	ck_assert(daqiri_txring_kick_wanted(&c));
	ck_assert_int_eq(daqiri_tx_sub_push(&c, 1, 10), 0);
	ck_assert(!daqiri_txring_kick_wanted(&c));	/* one per sleep */
	/* Arming with submissions waiting says so: do not sleep. */
	ck_assert_int_eq(daqiri_txring_arm_kick(&d), 1);
	daqiri_txring_disarm_kick(&d);
	ck_assert(!daqiri_txring_kick_wanted(&c));
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 1);
	ck_assert_int_eq(daqiri_tx_sub_pop(&d, &s), 1);

	/* Completions: nobody asked, no wake-up. */
	ck_assert_int_eq(daqiri_tx_comp_push(&d, 0, DAQIRI_TX_SENT), 0);
	ck_assert(!daqiri_txring_wake_wanted(&d));
	/* Arming with a completion waiting: 1. */
	ck_assert_int_eq(daqiri_txring_arm_wake(&c), 1);
	daqiri_txring_disarm_wake(&c);
	ck_assert_int_eq(daqiri_tx_comp_pop(&c, &k), 1);
	ck_assert_int_eq(daqiri_txring_arm_wake(&c), 0);
	ck_assert_int_eq(daqiri_tx_comp_push(&d, 1, DAQIRI_TX_SENT), 0);
	ck_assert(daqiri_txring_wake_wanted(&d));
	ck_assert(!daqiri_txring_wake_wanted(&d));

	/* The consumer's ring_full count, as the daemon reads it. */
	ck_assert_uint_eq(daqiri_txring_full(&d), 0);
	daqiri_txring_count_full(&c);
	daqiri_txring_count_full(&c);
	ck_assert_uint_eq(daqiri_txring_full(&d), 2);
	free(m);
}
END_TEST

START_TEST(test_create_sealed)
{
	struct daqiri_txring r, c;
	const void *pool;
	void *ring;
	size_t rlen, plen;
	int rfd, pfd, seals, w0, w1;
	char b = 0;

	ck_assert_int_eq(daqiri_txring_create(&r, 0, BSZ, &rfd, &ring, &rlen,
	    &pfd, &pool, &plen), -EINVAL);
	ck_assert_int_eq(daqiri_txring_create(&r, 3, BSZ, &rfd, &ring, &rlen,
	    &pfd, &pool, &plen), 0);
	ck_assert_uint_eq(rlen, daqiri_txring_size(4));
	ck_assert_uint_eq(plen, 4096);
	ck_assert_int_eq(daqiri_txring_attach(&c, ring, rlen), 0);
	seals = fcntl(rfd, F_GET_SEALS);
	ck_assert(seals & F_SEAL_SHRINK);
	ck_assert(seals & F_SEAL_GROW);
	ck_assert_int_lt(ftruncate(rfd, 100), 0);
	seals = fcntl(pfd, F_GET_SEALS);
	ck_assert(seals & F_SEAL_SHRINK);
	ck_assert_int_lt(ftruncate(pfd, 1 << 20), 0);
	/* The pool is writable through the fd (the consumer's mapping) but
	 * the creator's own mapping is read-only. */
	{
		uint8_t *w = mmap(NULL, plen, PROT_READ | PROT_WRITE,
		    MAP_SHARED, pfd, 0);

		ck_assert_ptr_ne(w, MAP_FAILED);
		w[5] = 0x5a;
		ck_assert_uint_eq(((const uint8_t *)pool)[5], 0x5a);
		munmap(w, plen);
	}
	munmap((void *)pool, plen);
	munmap(ring, rlen);
	close(rfd);
	close(pfd);
	/* The doorbell pair: datagrams both ways, never blocking. */
	ck_assert_int_eq(daqiri_txwake_create(&w0, &w1), 0);
	ck_assert_int_eq(daqiri_wake_signal(w1), 0);
	ck_assert_int_eq(daqiri_wake_drain(w0), 1);
	ck_assert_int_eq(daqiri_wake_drain(w0), 0);
	ck_assert_int_eq(daqiri_wake_signal(w0), 0);
	ck_assert_int_eq(recv(w1, &b, 1, MSG_DONTWAIT), 1);
	close(w0);
	close(w1);
}
END_TEST

/* A device pool's channel: the ring alone (the pool is the caller's
 * cudaMalloc), its header naming the same pool_bytes; a half-given pool
 * is refused. */
START_TEST(test_create_ring_only)
{
	struct daqiri_txring r, c;
	const void *pool;
	void *ring;
	size_t rlen, plen;
	int rfd, pfd;

	ck_assert_int_eq(daqiri_txring_create(&r, 3, BSZ, &rfd, &ring, &rlen,
	    &pfd, NULL, &plen), -EINVAL);
	ck_assert_int_eq(daqiri_txring_create(&r, 3, BSZ, &rfd, &ring, &rlen,
	    NULL, &pool, NULL), -EINVAL);
	ck_assert_int_eq(daqiri_txring_create(&r, 3, BSZ, &rfd, &ring, &rlen,
	    NULL, NULL, NULL), 0);
	ck_assert_uint_eq(rlen, daqiri_txring_size(4));
	ck_assert_int_eq(daqiri_txring_attach(&c, ring, rlen), 0);
	ck_assert_uint_eq(c.shm->pool_bytes, 4096);
	ck_assert_uint_eq(c.nbufs, 3);
	ck_assert(fcntl(rfd, F_GET_SEALS) & F_SEAL_SHRINK);
	munmap(ring, rlen);
	close(rfd);
}
END_TEST

/* ---- the client's TX channels against a fake daemon */

#define FQ		"sim/tx0"
#define F_NBUFS		16u
#define F_BSZ		256u
#define F_CHANS		4
#define F_CUT_AFTER	5u		/* FM_CLOSE, FM_DIE */

enum fmode {
	FM_NORMAL,	/* the worker sleeps until kicked, like daqirid's */
	FM_HOLD,	/* completes only while the consumer waits */
	FM_CLOSE,	/* tx_closed after F_CUT_AFTER payloads */
	FM_DIE,		/* exits after F_CUT_AFTER payloads */
	FM_BADCOMP,	/* completes a buffer nobody submitted */
	FM_LIE,		/* its reply describes another ring than sent */
};

struct fchan {
	bool used, sleeping;
	uint64_t conn;
	uint32_t id;
	struct daqiri_txring r;
	void *ring;
	size_t rlen;
	const uint8_t *pool;
	size_t plen;
	int rfd, pfd, mine;
};

struct fake {
	enum fmode mode;
	struct control *ctl;
	uint32_t next_id;
	struct fchan ch[F_CHANS];
	uint64_t got, bytes, hash, kicks, closes, bad;
	bool cut;
};

/* FNV-1a over each payload's length and bytes, in order. */
static uint64_t
hash_add(uint64_t h, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	if (h == 0)
		h = 0xcbf29ce484222325ull;
	for (i = 0; i < 4; i++)
		h = (h ^ ((len >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void
chan_release(struct fchan *c)
{
	munmap(c->ring, c->rlen);
	munmap((void *)c->pool, c->plen);
	close(c->rfd);
	close(c->pfd);
	close(c->mine);
	c->used = false;
}

static int
fake_tx_open(void *ctx, const struct daqiri_tx_req *req,
	     const struct control_peer *peer, struct daqiri_tx_info *info,
	     struct control_sub_fds *fds, struct daqiri_err *err)
{
	struct fake *f = ctx;
	struct fchan *c = NULL;
	uint32_t nb = req->nbufs != 0 ? req->nbufs : F_NBUFS;
	const void *pool;
	int i, r, theirs;

	if (strcmp(req->queue, FQ) != 0)
		return daqiri_err_set(err, DAQIRI_ST_NO_SUCH_STREAM,
		    "no tx queue \"%s\"", req->queue);
	if (nb > F_NBUFS)
		return daqiri_err_set(err, DAQIRI_ST_BAD_FIELD,
		    "nbufs %u: the queue allows %u", nb, F_NBUFS);
	for (i = 0; i < F_CHANS && c == NULL; i++)
		if (!f->ch[i].used)
			c = &f->ch[i];
	if (c == NULL)
		return -ENOSPC;
	r = daqiri_txring_create(&c->r, f->mode == FM_LIE ? nb / 2 : nb,
	    F_BSZ, &c->rfd, &c->ring, &c->rlen, &c->pfd, &pool, &c->plen);
	if (r < 0)
		return r;
	c->pool = pool;
	r = daqiri_txwake_create(&c->mine, &theirs);
	if (r < 0)
		return r;
	c->used = true;
	c->sleeping = false;
	c->conn = peer->conn_id;
	c->id = ++f->next_id;
	memset(info, 0, sizeof(*info));
	info->tx_id = c->id;
	snprintf(info->queue, sizeof(info->queue), "%s", req->queue);
	info->nbufs = nb;
	info->buf_size = F_BSZ;
	daqiri_tx_pool_geometry(nb, F_BSZ, &info->buf_stride,
	    &info->pool_bytes);
	info->ring_depth = daqiri_txring_depth(nb);
	info->ring_bytes = daqiri_txring_size(info->ring_depth);
	info->mem_kind = DAQIRI_MEM_HOST;
	info->device = -1;
	info->nfds = 3;
	info->fds[0] = DAQIRI_FD_TX_RING;
	info->fds[1] = DAQIRI_FD_TX_POOL;
	info->fds[2] = DAQIRI_FD_WAKE;
	fds->fd[0] = fcntl(c->rfd, F_DUPFD_CLOEXEC, 0);
	fds->fd[1] = fcntl(c->pfd, F_DUPFD_CLOEXEC, 0);
	fds->fd[2] = theirs;
	fds->n = 3;
	return 0;
}

static int
fake_tx_close(void *ctx, const struct control_peer *peer, uint32_t id,
	      struct daqiri_err *err)
{
	struct fake *f = ctx;
	int i;

	for (i = 0; i < F_CHANS; i++)
		if (f->ch[i].used && f->ch[i].id == id &&
		    f->ch[i].conn == peer->conn_id) {
			chan_release(&f->ch[i]);
			f->closes++;
			return 0;
		}
	return DAQIRI_ST_NO_SUCH_SUBSCRIPTION;
}

static void
fake_conn_closed(void *ctx, const struct control_peer *peer)
{
	struct fake *f = ctx;
	int i;

	for (i = 0; i < F_CHANS; i++)
		if (f->ch[i].used && f->ch[i].conn == peer->conn_id)
			chan_release(&f->ch[i]);
}

static int
fake_stats(void *ctx, cJSON *reply, struct daqiri_err *err)
{
	struct fake *f = ctx;
	int i, open = 0;

	for (i = 0; i < F_CHANS; i++)
		open += f->ch[i].used;
	cJSON_AddNumberToObject(reply, "got", (double)f->got);
	cJSON_AddNumberToObject(reply, "bytes", (double)f->bytes);
	cJSON_AddNumberToObject(reply, "kicks", (double)f->kicks);
	cJSON_AddNumberToObject(reply, "closes", (double)f->closes);
	cJSON_AddNumberToObject(reply, "bad", (double)f->bad);
	cJSON_AddNumberToObject(reply, "open", open);
	/* as text: a double does not hold 64 bits */
	{
		char h[32];

		snprintf(h, sizeof(h), "%016llx", (unsigned long long)f->hash);
		cJSON_AddStringToObject(reply, "hash", h);
	}
	return 0;
}

static const struct control_ops fake_ops = {
	.stats = fake_stats,
	.tx_open = fake_tx_open,
	.tx_close = fake_tx_close,
	.conn_closed = fake_conn_closed,
};

/* One worker turn over channel c. */
static void
fake_work(struct fake *f, struct fchan *c)
{
	struct daqiri_tx_sub s;
	enum daqiri_tx_status st;
	int r;

	if (f->mode == FM_NORMAL && c->sleeping) {
		if (daqiri_wake_drain(c->mine) <= 0)
			return;
		f->kicks++;
		c->sleeping = false;
	}
	if (f->mode == FM_HOLD &&
	    atomic_load(&c->r.shm->wake_wanted) == 0)
		return;
	if (f->mode == FM_BADCOMP && daqiri_tx_sub_pending(&c->r) > 0) {
		daqiri_tx_comp_push(&c->r, c->r.nbufs + 3, DAQIRI_TX_SENT);
		daqiri_wake_signal(c->mine);
		return;
	}
	while (!f->cut && (r = daqiri_tx_sub_pop(&c->r, &s)) == 1) {
		st = DAQIRI_TX_SENT;
		if (s.buf >= c->r.nbufs) {
			f->bad++;
			continue;
		}
		if (s.len > c->r.buf_size) {
			st = DAQIRI_TX_TOO_BIG;
		} else {
			f->hash = hash_add(f->hash,
			    c->pool + (size_t)s.buf * c->r.buf_stride, s.len);
			f->got++;
			f->bytes += s.len;
		}
		ck_assert_int_eq(daqiri_tx_comp_push(&c->r, s.buf, st), 0);
		if ((f->mode == FM_CLOSE || f->mode == FM_DIE) &&
		    f->got == F_CUT_AFTER)
			f->cut = true;
	}
	if (daqiri_txring_wake_wanted(&c->r))
		daqiri_wake_signal(c->mine);
	if (f->cut && f->mode == FM_DIE)
		_exit(0);
	if (f->cut && f->mode == FM_CLOSE && c->used) {
		control_tx_closed(f->ctl, c->conn, c->id, DAQIRI_ST_INTERNAL,
		    "cut off by the test");
		chan_release(c);
		return;
	}
	if (f->mode == FM_NORMAL && daqiri_txring_arm_kick(&c->r) == 0)
		c->sleeping = true;
}

/* The fake's admin group: NULL = this process's own group, so the suite
 * passes as any user; "" = root only (test_tx_not_admin). */
static const char *fake_admin;

static void __attribute__((noreturn))
fake_serve(const char *path, enum fmode mode)
{
	const struct group *g = getgrgid(getegid());
	struct control_opts o = { .mode = 0666, .group = "",
	    .admin_group = "", .max_clients = 4 };

	if (fake_admin != NULL)
		o.admin_group = fake_admin;
	else if (g != NULL)
		o.admin_group = g->gr_name;
	struct fake f;
	struct pollfd p;
	int i;

	memset(&f, 0, sizeof(f));
	f.mode = mode;
	if (control_init(&f.ctl, path, &o, &fake_ops, &f) < 0)
		_exit(22);
	signal(SIGPIPE, SIG_IGN);
	p.fd = control_fd(f.ctl);
	p.events = POLLIN;
	while (getppid() != 1) {
		if (poll(&p, 1, 1) > 0)
			control_handle(f.ctl, p.fd, EPOLLIN);
		for (i = 0; i < F_CHANS; i++)
			if (f.ch[i].used)
				fake_work(&f, &f.ch[i]);
	}
	_exit(0);
}

static char dir[64], sock_path[108];
static pid_t server = -1;

static void
start_server(enum fmode mode)
{
	struct stat st;
	int i;

	snprintf(dir, sizeof(dir), "/tmp/check_txring.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock_path, sizeof(sock_path), "%s/d.sock", dir);
	server = fork();
	ck_assert_int_ge(server, 0);
	if (server == 0)
		fake_serve(sock_path, mode);
	for (i = 0; i < 2500 && stat(sock_path, &st) != 0; i++)
		usleep(2000);
	ck_assert_int_eq(stat(sock_path, &st), 0);
}

static void
stop_server(void)
{
	int st;

	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, &st, 0);
		server = -1;
	}
	unlink(sock_path);
	rmdir(dir);
}

static struct daqiri *
conn(void)
{
	struct daqiri *d = NULL;

	ck_assert_int_eq(daqiri_connect(sock_path, &d), 0);
	return d;
}

/* A number the fake daemon's stats reply names. */
static uint64_t
fake_num(struct daqiri *d, const char *key)
{
	char *reply = NULL;
	cJSON *o, *v;
	uint64_t n;

	ck_assert_int_eq(daqiri_request(d, "{\"type\":\"stats\"}", &reply), 0);
	o = cJSON_Parse(reply);
	v = cJSON_GetObjectItem(o, key);
	ck_assert_ptr_nonnull(v);
	n = cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 16) :
	    (uint64_t)v->valuedouble;
	cJSON_Delete(o);
	free(reply);
	return n;
}

static struct daqiri_tx_stats
tstats(struct daqiri_tx *t)
{
	struct daqiri_tx_stats st = { .size = sizeof(st) };

	ck_assert_int_eq(daqiri_tx_stats(t, &st), 0);
	return st;
}

/* Payload i: 1 .. F_BSZ bytes of a pattern of i. */
static uint32_t
payload(uint32_t i, uint8_t *p)
{
	uint32_t len = 1 + (i * 37) % F_BSZ, k;

	for (k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 7 + k);
	return len;
}

START_TEST(test_tx_open_errors)
{
	struct daqiri_tx_opts o = { .size = sizeof(o) };
	struct daqiri_tx *t = (void *)1;
	struct daqiri_tx_stats st;
	struct daqiri *d;
	char *reply = NULL, q[200];

	start_server(FM_NORMAL);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, "sim/none", NULL, &t), -ENOENT);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d), "sim/none"));
	o.nbufs = F_NBUFS + 1;
	ck_assert_int_eq(daqiri_tx_open(d, FQ, &o, &t), -EINVAL);
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d), "allows"));
	o.nbufs = DAQIRI_TX_NBUFS_MAX + 1;
	ck_assert_int_eq(daqiri_tx_open(d, FQ, &o, &t), -EINVAL);
	o.size = 1;
	ck_assert_int_eq(daqiri_tx_open(d, FQ, &o, &t), -EINVAL);
	o.size = sizeof(o);
	o.nbufs = 0;
	o.flags = 0x2;
	ck_assert_int_eq(daqiri_tx_open(d, FQ, &o, &t), -EINVAL);
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d), "flags 0x2"));
	o.flags = DAQIRI_TX_HOST_ONLY;
	ck_assert_int_eq(daqiri_tx_open(NULL, FQ, NULL, &t), -EINVAL);
	ck_assert_int_eq(daqiri_tx_open(d, NULL, NULL, &t), -EINVAL);
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, NULL), -EINVAL);
	ck_assert_int_eq(daqiri_tx_open(d, "", NULL, &t), -EINVAL);
	memset(q, 'a', sizeof(q) - 1);
	q[sizeof(q) - 1] = '\0';
	ck_assert_int_eq(daqiri_tx_open(d, q, NULL, &t), -EINVAL);
	/* Its reply is followed by fds: not through the raw request. */
	ck_assert_int_eq(daqiri_request(d, "{\"type\":\"tx_open\",\"queue\":"
	    "\"" FQ "\"}", &reply), -EINVAL);
	ck_assert_int_eq(daqiri_tx_close(NULL), 0);
	ck_assert_int_eq(daqiri_tx_buf(NULL, NULL), -EINVAL);
	ck_assert_int_eq(daqiri_tx_fd(NULL), -EINVAL);
	/* And a good one, after all that: the connection is in step. */
	o.size = sizeof(o);
	o.nbufs = 4;
	ck_assert_int_eq(daqiri_tx_open(d, FQ, &o, &t), 0);
	st = tstats(t);
	ck_assert_str_eq(st.queue, FQ);
	ck_assert_uint_eq(st.nbufs, 4);
	ck_assert_uint_eq(st.buf_size, F_BSZ);
	/* a host pool, which DAQIRI_TX_HOST_ONLY takes */
	ck_assert_int_eq(st.device, -1);
	ck_assert_uint_eq(st.free, 4);
	ck_assert_uint_eq(st.sent + st.failed + st.ring_full, 0);
	ck_assert_int_ge(daqiri_tx_fd(t), 0);
	ck_assert_uint_eq(fake_num(d, "open"), 1);
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	ck_assert_uint_eq(fake_num(d, "open"), 0);
	ck_assert_uint_eq(fake_num(d, "closes"), 1);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

/*
 * n payloads through t, one daqiri_tx_buf() / daqiri_tx_send() each
 * (batches: every fifth round sends three at once), waiting on -EAGAIN.
 * Returns the -EAGAIN count; *hash is what the daemon should have seen.
 */
static unsigned
send_many(struct daqiri_tx *t, uint32_t n, bool batches, uint64_t *hash)
{
	struct daqiri_tx_buf b[3];
	unsigned eagain = 0, k, want;
	uint32_t i = 0;
	int r;

	*hash = 0;
	while (i < n) {
		want = (batches && i % 5 == 0 && n - i >= 3) ? 3 : 1;
		for (k = 0; k < want; k++) {
			while ((r = daqiri_tx_buf(t, &b[k])) == -EAGAIN) {
				eagain++;
				ck_assert_int_eq(daqiri_tx_wait(t, 20000), 0);
			}
			ck_assert_int_eq(r, 0);
			ck_assert_uint_eq(b[k].cap, F_BSZ);
			ck_assert_uint_eq(b[k].len, 0);
			b[k].len = payload(i + k, b[k].data);
			*hash = hash_add(*hash, b[k].data, b[k].len);
		}
		ck_assert_int_eq(daqiri_tx_send(t, b, want), (int)want);
		i += want;
	}
	return eagain;
}

START_TEST(test_tx_send_flush)
{
	struct daqiri_tx *t;
	struct daqiri_tx_stats st;
	struct daqiri *d;
	uint64_t hash;

	start_server(FM_NORMAL);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	send_many(t, 10000, true, &hash);
	ck_assert_int_eq(daqiri_tx_flush(t, 20000), 0);
	st = tstats(t);
	ck_assert_uint_eq(st.sent, 10000);
	ck_assert_uint_eq(st.failed, 0);
	ck_assert_uint_eq(st.in_flight, 0);
	ck_assert_uint_eq(st.free, F_NBUFS);
	ck_assert_uint_eq(fake_num(d, "got"), 10000);
	ck_assert_uint_eq(fake_num(d, "hash"), hash);
	ck_assert_uint_eq(fake_num(d, "bad"), 0);
	/* The worker slept and was kicked awake by the library. */
	ck_assert_uint_gt(fake_num(d, "kicks"), 0);
	/* Nothing in flight: flush at once, even with no time. */
	ck_assert_int_eq(daqiri_tx_flush(t, 0), 0);
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

/* The daemon completes only while the consumer waits: every round of
 * F_NBUFS submissions ends in exactly one -EAGAIN, counted in the ring. */
START_TEST(test_tx_eagain)
{
	struct daqiri_tx *t;
	struct daqiri_tx_stats st;
	struct daqiri_tx_buf b;
	struct daqiri *d;
	uint64_t hash;
	unsigned n;
	int i;

	start_server(FM_HOLD);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	for (i = 0; i < (int)F_NBUFS; i++) {
		ck_assert_int_eq(daqiri_tx_buf(t, &b), 0);
		b.len = 1;
		ck_assert_int_eq(daqiri_tx_send(t, &b, 1), 1);
	}
	ck_assert_int_eq(daqiri_tx_buf(t, &b), -EAGAIN);
	ck_assert_int_eq(daqiri_tx_buf(t, &b), -EAGAIN);
	st = tstats(t);
	ck_assert_uint_eq(st.ring_full, 2);
	ck_assert_uint_eq(st.in_flight, F_NBUFS);
	ck_assert_uint_eq(st.free, 0);
	/* A caller's own poll loop: arm, then wait on the fd. */
	ck_assert_int_eq(daqiri_tx_arm(t), 0);
	{
		struct pollfd p = { .fd = daqiri_tx_fd(t), .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 20000), 1);
	}
	ck_assert_int_eq(daqiri_tx_buf(t, &b), 0);
	ck_assert_int_eq(daqiri_tx_discard(t, &b), 0);
	ck_assert_uint_eq(tstats(t).free, F_NBUFS);
	n = send_many(t, 100 * F_NBUFS, false, &hash);
	ck_assert_uint_eq(n, 99);
	ck_assert_int_eq(daqiri_tx_flush(t, 20000), 0);
	st = tstats(t);
	ck_assert_uint_eq(st.ring_full, 2 + 99);
	ck_assert_uint_eq(st.sent, F_NBUFS + 100 * F_NBUFS);
	ck_assert_uint_eq(fake_num(d, "got"), F_NBUFS + 100 * F_NBUFS);
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

START_TEST(test_tx_bad_buffers)
{
	struct daqiri_tx *t, *t2;
	struct daqiri_tx_buf b[2], c, x;
	struct daqiri *d;

	start_server(FM_NORMAL);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t2), 0);
	ck_assert_int_eq(daqiri_tx_buf(t, &b[0]), 0);
	ck_assert_int_eq(daqiri_tx_buf(t, &b[1]), 0);
	ck_assert_uint_ne(b[0].index, b[1].index);
	b[0].len = b[1].len = 10;
	/* over cap */
	b[1].len = F_BSZ + 1;
	ck_assert_int_eq(daqiri_tx_send(t, b, 2), -EINVAL);
	b[1].len = 10;
	/* another channel's buffer, with the same index */
	ck_assert_int_eq(daqiri_tx_buf(t2, &c), 0);
	c.len = 1;
	x = c;
	ck_assert_int_eq(daqiri_tx_send(t, &x, 1), -EINVAL);
	/* a moved data pointer, an index out of range */
	x = b[0];
	x.data = (char *)x.data + 1;
	ck_assert_int_eq(daqiri_tx_send(t, &x, 1), -EINVAL);
	x = b[0];
	x.index = F_NBUFS;
	ck_assert_int_eq(daqiri_tx_send(t, &x, 1), -EINVAL);
	/* the same buffer twice in one call: nothing goes */
	x = b[0];
	{
		struct daqiri_tx_buf two[2] = { b[0], x };

		ck_assert_int_eq(daqiri_tx_send(t, two, 2), -EINVAL);
	}
	ck_assert_uint_eq(tstats(t).in_flight, 0);
	ck_assert_int_eq(daqiri_tx_send(t, b, 0), 0);
	ck_assert_int_eq(daqiri_tx_send(t, b, 2), 2);
	/* submitted: neither sent again nor discarded */
	ck_assert_int_eq(daqiri_tx_send(t, b, 1), -EINVAL);
	ck_assert_int_eq(daqiri_tx_discard(t, &b[0]), -EINVAL);
	ck_assert_int_eq(daqiri_tx_flush(t, 20000), 0);
	ck_assert_uint_eq(tstats(t).sent, 2);
	/* a free buffer is not the caller's to discard */
	ck_assert_int_eq(daqiri_tx_discard(t, &b[0]), -EINVAL);
	ck_assert_int_eq(daqiri_tx_send(t2, &c, 1), 1);
	ck_assert_int_eq(daqiri_tx_flush(t2, 20000), 0);
	ck_assert_uint_eq(fake_num(d, "got"), 3);
	ck_assert_uint_eq(fake_num(d, "bad"), 0);
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	ck_assert_int_eq(daqiri_tx_close(t2), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

/* Submit n one-byte payloads, no waiting (n <= F_NBUFS). */
static void
submit(struct daqiri_tx *t, unsigned n)
{
	struct daqiri_tx_buf b;

	while (n-- > 0) {
		ck_assert_int_eq(daqiri_tx_buf(t, &b), 0);
		b.len = 1;
		ck_assert_int_eq(daqiri_tx_send(t, &b, 1), 1);
	}
}

START_TEST(test_tx_closed_by_daemon)
{
	struct daqiri_tx *t;
	struct daqiri_tx_buf b;
	struct daqiri *d;

	start_server(FM_CLOSE);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	submit(t, 10);
	ck_assert_int_eq(daqiri_tx_flush(t, 20000), -ENOTCONN);
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d), "cut off"));
	ck_assert_uint_eq(tstats(t).sent, F_CUT_AFTER);
	ck_assert_int_eq(daqiri_tx_send(t, &b, 0), -ENOTCONN);
	ck_assert_int_eq(daqiri_tx_arm(t), -ENOTCONN);
	/* The daemon ended it: closing is no error, and sends nothing. */
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	ck_assert_uint_eq(fake_num(d, "closes"), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

/* The daemon dies with payloads in flight: the waits end with
 * -ENOTCONN, and nothing the library does toward the dead daemon (a
 * tx_close on the socket it has not yet seen close, a doorbell to a
 * gone peer) raises SIGPIPE: this test runs with its default action. */
START_TEST(test_tx_daemon_death)
{
	struct daqiri_tx *t, *t2;
	struct daqiri_tx_buf b;
	struct daqiri *d;
	int st;

	signal(SIGPIPE, SIG_DFL);
	start_server(FM_DIE);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t2), 0);
	submit(t, 10);
	ck_assert_int_eq(waitpid(server, &st, 0), server);
	server = -1;
	/* not noticed yet: the doorbell and the tx_close go to a peer
	 * that is gone */
	ck_assert_int_eq(daqiri_tx_buf(t2, &b), 0);
	b.len = 1;
	ck_assert_int_eq(daqiri_tx_send(t2, &b, 1), 1);
	ck_assert_int_eq(daqiri_tx_close(t2), 0);
	ck_assert_int_eq(daqiri_tx_flush(t, -1), -ENOTCONN);
	ck_assert_int_eq(daqiri_tx_wait(t, -1) == 0 ||
	    daqiri_tx_wait(t, -1) == -ENOTCONN, 1);
	ck_assert_int_eq(daqiri_tx_arm(t), -ENOTCONN);
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

START_TEST(test_tx_bad_completion)
{
	struct daqiri_tx *t;
	struct daqiri_tx_buf b;
	struct daqiri *d;

	start_server(FM_BADCOMP);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), 0);
	submit(t, 1);
	ck_assert_int_eq(daqiri_tx_flush(t, 20000), -EPROTO);
	ck_assert_int_eq(daqiri_tx_buf(t, &b), -EPROTO);	/* sticky */
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d), "corrupted"));
	ck_assert_int_eq(daqiri_tx_close(t), 0);
	ck_assert_uint_eq(fake_num(d, "open"), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

/* A reply whose geometry is not the ring's: refused, the daemon's side
 * undone, the connection still usable. */
START_TEST(test_tx_inconsistent)
{
	struct daqiri_tx *t;
	struct daqiri *d;

	start_server(FM_LIE);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t), -EPROTO);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(daqiri_last_error(d),
	    "the daemon's reply"));
	ck_assert_uint_eq(fake_num(d, "closes"), 1);
	ck_assert_uint_eq(fake_num(d, "open"), 0);
	daqiri_disconnect(d);
	stop_server();
}
END_TEST

START_TEST(test_tx_not_admin)
{
	struct daqiri_tx *t;
	struct daqiri *d;
	pid_t pid;
	int st;

	fake_admin = "";
	start_server(FM_NORMAL);
	fake_admin = NULL;
	ck_assert_int_eq(chmod(dir, 0755), 0);	/* mkdtemp's is 0700 */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int r;

		if (getuid() == 0 && (setgroups(0, NULL) < 0 ||
		    setgid(65534) < 0 || setuid(65534) < 0))
			_exit(3);
		if (daqiri_connect(sock_path, &d) < 0)
			_exit(4);
		r = daqiri_tx_open(d, FQ, NULL, &t);
		_exit(r == -EACCES && strstr(daqiri_last_error(d),
		    "admin") != NULL ? 0 : 5);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	stop_server();
}
END_TEST

/* Disconnecting frees open channels; the daemon ends them with the
 * connection. */
START_TEST(test_tx_disconnect)
{
	struct daqiri_tx *t1, *t2;
	struct daqiri *d, *e;
	int i;

	start_server(FM_HOLD);
	d = conn();
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t1), 0);
	ck_assert_int_eq(daqiri_tx_open(d, FQ, NULL, &t2), 0);
	ck_assert_uint_ne(daqiri_tx_fd(t1), daqiri_tx_fd(t2));
	submit(t1, 3);
	e = conn();
	ck_assert_uint_eq(fake_num(e, "open"), 2);
	daqiri_disconnect(d);
	for (i = 0; i < 5000 && fake_num(e, "open") != 0; i++)
		usleep(1000);
	ck_assert_uint_eq(fake_num(e, "open"), 0);
	daqiri_disconnect(e);
	stop_server();
}
END_TEST

static void
client_tests(TCase *tc)
{
	tcase_add_test(tc, test_tx_open_errors);
	tcase_add_test(tc, test_tx_send_flush);
	tcase_add_test(tc, test_tx_eagain);
	tcase_add_test(tc, test_tx_bad_buffers);
	tcase_add_test(tc, test_tx_closed_by_daemon);
	tcase_add_test(tc, test_tx_daemon_death);
	tcase_add_test(tc, test_tx_bad_completion);
	tcase_add_test(tc, test_tx_inconsistent);
	tcase_add_test(tc, test_tx_not_admin);
	tcase_add_test(tc, test_tx_disconnect);
}

static Suite *
txring_suite(void)
{
	Suite *s = suite_create("txring");
	TCase *tc = tcase_create("ring");
	TCase *tcc = tcase_create("client");

	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_init_attach);
	tcase_add_test(tc, test_attach_rejects);
	tcase_add_test(tc, test_push_pop);
	tcase_add_test(tc, test_wrap);
	tcase_add_test(tc, test_hostile_positions);
	tcase_add_test(tc, test_doorbells);
	tcase_add_test(tc, test_create_sealed);
	tcase_add_test(tc, test_create_ring_only);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tcc, 60);
	client_tests(tcc);
	suite_add_tcase(s, tcc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(txring_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
