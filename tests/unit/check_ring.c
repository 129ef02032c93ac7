/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the subscription ring pair (proto/ring.c): layout, push/pop,
 * full and empty, positions wrapping at 2^32, hostile positions and
 * header, and a producer and a consumer process over one memfd.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define DEPTH		16u
#define NBUFS		16u
#define FORK_COUNT	1000000u

static void *
ring_mem(uint32_t depth, size_t *len)
{
	void *p;

	*len = daqiri_ring_size(depth);
	ck_assert_uint_gt(*len, 0);
	p = aligned_alloc(DAQIRI_RING_PAGE, *len);
	ck_assert_ptr_nonnull(p);
	memset(p, 0xA5, *len);	/* init must not rely on zeroed memory */
	return p;
}

static struct daqiri_desc
mkdesc(uint64_t seq)
{
	struct daqiri_desc d;

	memset(&d, 0, sizeof(d));
	d.seq = seq;
	d.buf_index = (uint32_t)(seq % NBUFS);
	d.batch_id = seq * 3;
	d.flags = DAQIRI_TENSOR_COMPLETE;
	d.packets_expected = d.packets_received = 7;
	d.bytes = seq + 100;
	d.publish_ns = seq ^ 0x5555;
	return d;
}

START_TEST(test_size)
{
	ck_assert_uint_eq(daqiri_ring_size(0), 0);
	ck_assert_uint_eq(daqiri_ring_size(1), 0);
	ck_assert_uint_eq(daqiri_ring_size(3), 0);
	ck_assert_uint_eq(daqiri_ring_size(DAQIRI_RING_DEPTH_MAX * 2), 0);
	ck_assert_uint_eq(daqiri_ring_size(100), 0);
	ck_assert_uint_eq(daqiri_ring_size(2), DAQIRI_RING_PAGE);
	ck_assert_uint_eq(daqiri_ring_size(64), 8192);	/* 384+4096+256 */
	ck_assert_uint_eq(daqiri_ring_size(4), DAQIRI_RING_PAGE);
	ck_assert_uint_eq(daqiri_ring_size(DAQIRI_RING_DEPTH_MAX) %
	    DAQIRI_RING_PAGE, 0);
	ck_assert_uint_ge(daqiri_ring_size(DAQIRI_RING_DEPTH_MAX),
	    384 + (size_t)DAQIRI_RING_DEPTH_MAX * 68);
}
END_TEST

START_TEST(test_init_attach)
{
	struct daqiri_ring d, c;
	struct daqiri_ring_shm *h;
	size_t len;
	void *m = ring_mem(DEPTH, &len);

	ck_assert_int_eq(daqiri_ring_init(&d, m, len - 1, DEPTH, NBUFS),
	    -EINVAL);
	ck_assert_int_eq(daqiri_ring_init(&d, m, len, 12, NBUFS), -EINVAL);
	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, 0), -EINVAL);
	ck_assert_int_eq(daqiri_ring_init(&d, (char *)m + 8, len, DEPTH,
	    NBUFS), -EINVAL);
	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	h = m;
	ck_assert_uint_eq(h->magic, DAQIRI_RING_MAGIC);
	ck_assert_uint_eq(h->version, 2);
	ck_assert_uint_eq(h->comp_off, 384);
	ck_assert_uint_eq(h->rel_off, 384 + DEPTH * 64);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	ck_assert_uint_eq(c.depth, DEPTH);
	ck_assert_uint_eq(c.nbufs, NBUFS);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len + DAQIRI_RING_PAGE),
	    -EPROTO);
	h->magic ^= 1;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->magic ^= 1;
	/* a version 1 ring (no need_wakeup word) or a newer one */
	h->version = 1;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->version = DAQIRI_RING_VERSION + 1;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->version = DAQIRI_RING_VERSION;
	h->comp_off = 320;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->comp_off = 384;
	h->version = DAQIRI_RING_VERSION;
	h->depth = 32;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->depth = DEPTH;
	h->desc_size = 32;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->desc_size = sizeof(struct daqiri_desc);
	h->nbufs = 0;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	h->nbufs = NBUFS;
	atomic_store(&h->comp_head, 100);	/* 100 ahead of tail 0 */
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), -EPROTO);
	atomic_store(&h->comp_head, 0);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	free(m);
}
END_TEST

START_TEST(test_push_pop_full)
{
	struct daqiri_ring d, c;
	struct daqiri_desc x, y;
	size_t len;
	void *m = ring_mem(DEPTH, &len);
	uint32_t i, b;

	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	ck_assert_int_eq(daqiri_comp_pop(&c, &y), 0);
	for (i = 0; i < DEPTH; i++) {
		x = mkdesc(i);
		ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	}
	ck_assert_uint_eq(daqiri_comp_pending(&d), DEPTH);
	x = mkdesc(99);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -ENOSPC);
	for (i = 0; i < DEPTH; i++) {
		ck_assert_int_eq(daqiri_comp_pop(&c, &y), 1);
		x = mkdesc(i);
		ck_assert_mem_eq(&x, &y, sizeof(x));
	}
	ck_assert_int_eq(daqiri_comp_pop(&c, &y), 0);
	ck_assert_uint_eq(daqiri_comp_pending(&d), 0);

	ck_assert_int_eq(daqiri_rel_pop(&d, &b), 0);
	for (i = 0; i < DEPTH; i++)
		ck_assert_int_eq(daqiri_rel_push(&c, i * 7), 0);
	ck_assert_int_eq(daqiri_rel_push(&c, 1), -ENOSPC);
	for (i = 0; i < DEPTH; i++) {
		ck_assert_int_eq(daqiri_rel_pop(&d, &b), 1);
		ck_assert_uint_eq(b, i * 7);
	}
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), 0);
	/* Space comes back after pops. */
	ck_assert_int_eq(daqiri_rel_push(&c, 5), 0);
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), 1);
	ck_assert_uint_eq(b, 5);
	free(m);
}
END_TEST

START_TEST(test_wrap)
{
	struct daqiri_ring d, c;
	struct daqiri_ring_shm *h;
	struct daqiri_desc x, y;
	size_t len;
	void *m = ring_mem(DEPTH, &len);
	uint32_t start = UINT32_MAX - 37, i, b;
	uint64_t got = 0, sent = 0;
	int k;

	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	h = m;
	/* As if 2^32 - 38 entries had gone through each way already. */
	atomic_store(&h->comp_head, start);
	atomic_store(&h->comp_tail, start);
	atomic_store(&h->rel_head, start);
	atomic_store(&h->rel_tail, start);
	d.comp_pos = start;
	d.rel_pos = start;
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	ck_assert_uint_eq(c.comp_pos, start);
	for (i = 0; i < 100; i++) {
		/* Uneven batches so the full ring crosses the wrap too. */
		for (k = 0; k < (int)(i % DEPTH) + 1; k++) {
			x = mkdesc(sent);
			if (daqiri_comp_push(&d, &x) != 0)
				break;
			ck_assert_int_eq(daqiri_rel_push(&c,
			    (uint32_t)sent), 0);
			sent++;
		}
		while (daqiri_comp_pop(&c, &y) == 1) {
			ck_assert_uint_eq(y.seq, got);
			ck_assert_int_eq(daqiri_rel_pop(&d, &b), 1);
			ck_assert_uint_eq(b, (uint32_t)got);
			got++;
		}
	}
	ck_assert_uint_eq(got, sent);
	ck_assert_uint_gt(sent, 38);
	/* The positions did wrap past zero. */
	ck_assert_uint_lt(atomic_load(&h->comp_head), start);
	ck_assert_uint_lt(atomic_load(&h->rel_tail), start);
	free(m);
}
END_TEST

START_TEST(test_hostile_positions)
{
	struct daqiri_ring d, c;
	struct daqiri_ring_shm *h;
	struct daqiri_desc x = mkdesc(1), y;
	size_t len;
	void *m = ring_mem(DEPTH, &len);
	uint32_t b, i;

	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	h = m;
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	/* comp_tail ahead of what was published. */
	atomic_store(&h->comp_tail, 5);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -EPROTO);
	/* More than depth behind. */
	atomic_store(&h->comp_tail, (uint32_t)(4 - DEPTH - 1));
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -EPROTO);
	atomic_store(&h->comp_tail, 4 + 0x80000000u);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -EPROTO);
	/* Exactly depth behind = full, not corrupt. */
	atomic_store(&h->comp_tail, (uint32_t)(4 - DEPTH));
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -ENOSPC);
	atomic_store(&h->comp_tail, 4);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	/* The consumer overwriting comp_head does not move the daemon. */
	atomic_store(&h->comp_head, 1000);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert_uint_eq(atomic_load(&h->comp_head), 6);

	/* rel_head: more than depth ahead, or behind rel_tail. */
	atomic_store(&h->rel_head, DEPTH + 1);
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), -EPROTO);
	atomic_store(&h->rel_head, UINT32_MAX);
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), -EPROTO);
	atomic_store(&h->rel_head, 0x80000000u);
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), -EPROTO);
	/* depth ahead is legal: every entry readable, values as written
	 * (the daemon validates the index itself). */
	atomic_store(&h->rel_head, DEPTH);
	for (i = 0; i < DEPTH; i++)
		ck_assert_int_eq(daqiri_rel_pop(&d, &b), 1);
	ck_assert_int_eq(daqiri_rel_pop(&d, &b), 0);

	/* A header rewritten after init changes nothing for the daemon:
	 * its geometry is private. */
	h->depth = DAQIRI_RING_DEPTH_MAX;
	h->nbufs = 1;
	atomic_store(&h->comp_tail, 6);
	atomic_store(&h->comp_head, 6);
	for (i = 0; i < DEPTH; i++)
		ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), -ENOSPC);

	/* Consumer side: a daemon-written position out of range. */
	atomic_store(&h->comp_head, c.comp_pos + DEPTH + 1);
	ck_assert_int_eq(daqiri_comp_pop(&c, &y), -EPROTO);
	atomic_store(&h->rel_tail, c.rel_pos + 1);
	ck_assert_int_eq(daqiri_rel_push(&c, 0), -EPROTO);
	free(m);
}
END_TEST

START_TEST(test_create_sealed)
{
	struct daqiri_ring r;
	void *mem;
	size_t len;
	int fd;

	ck_assert_int_eq(daqiri_ring_create(&r, 12, 4, &fd, &mem, &len),
	    -EINVAL);
	ck_assert_int_eq(daqiri_ring_create(&r, 64, 4, &fd, &mem, &len), 0);
	ck_assert_ptr_eq(r.shm, mem);
	ck_assert_uint_eq(r.depth, 64);
	ck_assert_uint_eq(len, daqiri_ring_size(64));
	/* The consumer gets this fd: it must not be able to resize it. */
	ck_assert_int_eq(ftruncate(fd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(fd, (off_t)len * 2), -1);
	ck_assert_int_eq(fcntl(fd, F_GET_SEALS) &
	    (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	munmap(mem, len);
	close(fd);
}
END_TEST

/* need_wakeup: where it lives, its start value, arm / wanted / disarm. */
START_TEST(test_need_wakeup)
{
	struct daqiri_ring d, c;
	struct daqiri_desc x = mkdesc(0), y;
	size_t len;
	void *m = ring_mem(DEPTH, &len);

	ck_assert_uint_eq(offsetof(struct daqiri_ring_shm, need_wakeup), 320);
	ck_assert_uint_eq(offsetof(struct daqiri_ring_shm, need_wakeup) %
	    DAQIRI_RING_CACHELINE, 0);
	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	/* a new ring asks for the first wake-up: a consumer that sleeps
	 * before it ever armed is still woken */
	ck_assert_uint_eq(atomic_load(&d.shm->need_wakeup), 1);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert(daqiri_ring_wake_wanted(&d));
	ck_assert_uint_eq(atomic_load(&d.shm->need_wakeup), 0);
	/* one wake-up per sleep */
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert(!daqiri_ring_wake_wanted(&d));
	/* arming with descriptors waiting says so: do not sleep */
	ck_assert_int_eq(daqiri_ring_arm(&c), 1);
	ck_assert_int_eq(daqiri_comp_pop(&c, &y), 1);
	ck_assert_int_eq(daqiri_comp_pop(&c, &y), 1);
	ck_assert_int_eq(daqiri_ring_arm(&c), 0);
	ck_assert_uint_eq(atomic_load(&d.shm->need_wakeup), 1);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert(daqiri_ring_wake_wanted(&d));
	/* a busy poller disarms: no wake-up wanted, whatever is pushed */
	daqiri_ring_disarm(&c);
	ck_assert_int_eq(daqiri_comp_push(&d, &x), 0);
	ck_assert(!daqiri_ring_wake_wanted(&d));
	/* any nonzero value the consumer writes means armed */
	atomic_store(&c.shm->need_wakeup, 0xdeadbeef);
	ck_assert(daqiri_ring_wake_wanted(&d));
	/* a hostile comp_head is seen when arming */
	atomic_store(&d.shm->comp_head, c.comp_pos + DEPTH + 1);
	ck_assert_int_eq(daqiri_ring_arm(&c), -EPROTO);
	free(m);
}
END_TEST

/* The stream's triggers: none in a new ring, then what the daemon wrote;
 * a reader never takes a pair while a write is under way. */
START_TEST(test_trigger)
{
	struct daqiri_ring d, c;
	uint64_t n = 99, ns = 99;
	size_t len;
	void *m = ring_mem(DEPTH, &len);

	/* in the need_wakeup line, inside the fixed header's 384 bytes */
	ck_assert_uint_eq(offsetof(struct daqiri_ring_shm, trig_seq), 324);
	ck_assert_uint_eq(offsetof(struct daqiri_ring_shm, trig_count), 328);
	ck_assert_uint_eq(offsetof(struct daqiri_ring_shm, trig_ns), 336);
	memset(m, 0xA5, len);
	ck_assert_int_eq(daqiri_ring_init(&d, m, len, DEPTH, NBUFS), 0);
	ck_assert_int_eq(daqiri_ring_attach(&c, m, len), 0);
	ck_assert_int_eq(daqiri_ring_trigger_get(&c, &n, &ns), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(ns, 0);
	daqiri_ring_trigger_set(d.shm, 1, 123456789);
	ck_assert_int_eq(daqiri_ring_trigger_get(&c, &n, &ns), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(ns, 123456789);
	daqiri_ring_trigger_set(d.shm, 7, UINT64_MAX);
	ck_assert_int_eq(daqiri_ring_trigger_get(&c, &n, &ns), 0);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(ns, UINT64_MAX);
	/* a writer that never finishes (odd sequence): no torn pair */
	atomic_store(&d.shm->trig_seq, 5);
	n = ns = 42;
	ck_assert_int_eq(daqiri_ring_trigger_get(&c, &n, &ns), -EAGAIN);
	free(m);
}
END_TEST

/* The wake-up socketpair: whatever the consumer does to its end, the
 * daemon's send returns at once and nothing reaches the daemon's end. */
START_TEST(test_wake_socket)
{
	int mine, theirs, n = 0, r;
	char b[8];

	ck_assert_int_eq(daqiri_wake_create(&mine, &theirs), 0);
	ck_assert_int_eq(fcntl(mine, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(fcntl(theirs, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	/* the consumer makes its end blocking: a separate description */
	ck_assert_int_eq(fcntl(theirs, F_SETFL, 0), 0);
	ck_assert(fcntl(mine, F_GETFL) & O_NONBLOCK);
	/* ... and never reads: sends stop with EAGAIN, never block */
	while ((r = daqiri_wake_signal(mine)) == 0)
		ck_assert_int_lt(++n, 100000);
	ck_assert_int_eq(r, -EAGAIN);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(daqiri_wake_drain(theirs), n);
	ck_assert_int_eq(daqiri_wake_drain(theirs), 0);
	ck_assert_int_eq(daqiri_wake_signal(mine), 0);
	ck_assert_int_eq(daqiri_wake_drain(theirs), 1);
	/* the consumer cannot queue data (or fds) at the daemon's end */
	ck_assert_int_eq(send(theirs, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(recv(mine, b, sizeof(b), MSG_DONTWAIT), -1);
	/* it shuts or closes its end: no SIGPIPE (default action: death) */
	signal(SIGPIPE, SIG_DFL);
	ck_assert_int_eq(shutdown(theirs, SHUT_RDWR), 0);
	r = daqiri_wake_signal(mine);
	ck_assert(r == -EPIPE || r == -ECONNREFUSED || r == 0);
	close(theirs);
	ck_assert_int_eq(daqiri_wake_signal(mine), -ECONNREFUSED);
	close(mine);
}
END_TEST

/* The sleeping consumer in another process: arm, look again, sleep on
 * the socket. A wake-up lost to the memory ordering would leave it asleep
 * on a non-empty ring; the poll's timeout catches that. */
static int
sleeper(int fd, size_t len, int wfd, uint32_t count)
{
	struct pollfd p = { .fd = wfd, .events = POLLIN };
	struct daqiri_ring c;
	struct daqiri_desc y;
	uint64_t next = 0;
	void *m;
	int r;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || daqiri_ring_attach(&c, m, len) != 0)
		return 2;
	while (next < count) {
		r = daqiri_comp_pop(&c, &y);
		if (r < 0)
			return 3;
		if (r == 1) {
			if (y.seq != next++)
				return 4;
			/* this producer does not hold back buffers the way
			 * the daemon does: its release ring can fill */
			while ((r = daqiri_rel_push(&c, y.buf_index)) ==
			    -ENOSPC)
				sched_yield();
			if (r < 0)
				return 4;
			continue;
		}
		if (daqiri_wake_drain(wfd) < 0)
			return 5;
		r = daqiri_ring_arm(&c);
		if (r < 0)
			return 6;
		if (r == 1)
			continue;
		if (poll(&p, 1, 10000) != 1)
			return 7;	/* asleep with nobody to wake it */
	}
	return 0;
}

/* A wake-up fd that reads 0 (a stream socket whose peer is gone, as a
 * hostile daemon could hand over) ends the drain; it used to loop. */
START_TEST(test_wake_drain_eof)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(write(sv[1], "ab", 2), 2);
	close(sv[1]);
	alarm(10);		/* the old loop never returned */
	ck_assert_int_eq(daqiri_wake_drain(sv[0]), 1);
	ck_assert_int_eq(daqiri_wake_drain(sv[0]), 0);
	alarm(0);
	close(sv[0]);
}
END_TEST

START_TEST(test_fork_sleeper)
{
	const uint32_t count = 20000;
	struct daqiri_ring d;
	struct daqiri_desc x;
	uint64_t sent = 0, wakes = 0;
	uint32_t b;
	void *mem;
	size_t len;
	int fd, st, r, mine, theirs;
	pid_t pid;

	ck_assert_int_eq(daqiri_ring_create(&d, 16, NBUFS, &fd, &mem, &len),
	    0);
	ck_assert_int_eq(daqiri_wake_create(&mine, &theirs), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(sleeper(fd, len, theirs, count));
	close(theirs);
	while (sent < count) {
		x = mkdesc(sent);
		r = daqiri_comp_push(&d, &x);
		ck_assert_int_ne(r, -EPROTO);
		if (r == 0) {
			sent++;
			if (daqiri_ring_wake_wanted(&d)) {
				wakes++;
				r = daqiri_wake_signal(mine);
				ck_assert(r == 0 || r == -EAGAIN);
			}
		}
		while (daqiri_rel_pop(&d, &b) == 1)
			;
		/* vary the gaps so both sides meet in every order; a full
		 * ring waits for the consumer, unless it has died */
		if (r == -ENOSPC) {
			if (waitpid(pid, &st, WNOHANG) == pid)
				ck_abort_msg("sleeper ended early: status %d",
				    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			usleep(100);
		} else if (sent % 3 == 0) {
			sched_yield();
		}
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	printf("ring: %u descriptors to a sleeping consumer, %llu wake-ups\n",
	    count, (unsigned long long)wakes);
	ck_assert_uint_ge(wakes, 1);
	munmap(mem, len);
	close(fd);
	close(mine);
}
END_TEST

static double
elapsed(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) +
	    (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* The consumer process: its own mapping of the fd, everything checked. */
static int
consumer(int fd, size_t len)
{
	struct daqiri_ring c;
	struct daqiri_desc y;
	uint64_t next = 0;
	void *m;
	int r;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || daqiri_ring_attach(&c, m, len) != 0)
		return 2;
	while (next < FORK_COUNT) {
		r = daqiri_comp_pop(&c, &y);
		if (r < 0)
			return 3;
		if (r == 0) {
			sched_yield();
			continue;
		}
		if (y.seq != next || y.buf_index != (uint32_t)(next % NBUFS) ||
		    y.batch_id != next * 3 || y.bytes != next + 100)
			return 4;
		while ((r = daqiri_rel_push(&c, y.buf_index)) == -ENOSPC)
			sched_yield();
		if (r < 0)
			return 5;
		next++;
	}
	return 0;
}

START_TEST(test_fork_million)
{
	struct timespec t0;
	struct daqiri_ring d;
	struct daqiri_desc x;
	uint64_t sent = 0, released = 0;
	uint32_t b, expect_b = 0;
	void *mem;
	size_t len;
	int fd, st, r;
	pid_t pid;

	ck_assert_int_eq(daqiri_ring_create(&d, 256, NBUFS, &fd, &mem, &len),
	    0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(consumer(fd, len));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (released < FORK_COUNT) {
		if (sent < FORK_COUNT) {
			x = mkdesc(sent);
			r = daqiri_comp_push(&d, &x);
			ck_assert_int_ne(r, -EPROTO);
			if (r == 0)
				sent++;
		}
		while ((r = daqiri_rel_pop(&d, &b)) == 1) {
			ck_assert_uint_eq(b, expect_b);
			expect_b = (expect_b + 1) % NBUFS;
			released++;
		}
		ck_assert_int_eq(r, 0);
		if (sent == FORK_COUNT || daqiri_comp_pending(&d) == 256)
			sched_yield();
	}
	printf("ring: %u descriptors through a fork()ed consumer in %.3f s\n",
	    FORK_COUNT, elapsed(&t0));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	munmap(mem, len);
	close(fd);
}
END_TEST

static Suite *
ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_size);
	tcase_add_test(tc, test_init_attach);
	tcase_add_test(tc, test_push_pop_full);
	tcase_add_test(tc, test_wrap);
	tcase_add_test(tc, test_hostile_positions);
	tcase_add_test(tc, test_create_sealed);
	tcase_add_test(tc, test_need_wakeup);
	tcase_add_test(tc, test_trigger);
	tcase_add_test(tc, test_wake_socket);
	tcase_add_test(tc, test_wake_drain_eof);
	tcase_add_test(tc, test_fork_sleeper);
	tcase_add_test(tc, test_fork_million);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ring_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
