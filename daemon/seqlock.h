/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A seqlock for counter snapshots: one writer thread (an RX worker)
 * publishes a copy of its counters, any thread reads a consistent copy
 * without ever making the writer wait. The copied data are arrays of
 * uint64_t moved with relaxed atomic accesses, so the pattern is data-race
 * free in the C11 sense (and clean under ThreadSanitizer).
 */
#ifndef DAQIRI_SEQLOCK_H
#define DAQIRI_SEQLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct seqlock {
	_Atomic uint32_t seq;		/* odd while a write is in progress */
};

/* Copy n words with relaxed atomic loads and stores (either side may be
 * shared). */
static inline void
seqlock_copy(uint64_t *dst, const uint64_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&dst[i], __atomic_load_n(&src[i],
		    __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* Writer: bracket the copies into the shared snapshot. */
static inline void
seqlock_write_begin(struct seqlock *l)
{
	uint32_t s = atomic_load_explicit(&l->seq, memory_order_relaxed);

	atomic_store_explicit(&l->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static inline void
seqlock_write_end(struct seqlock *l)
{
	uint32_t s = atomic_load_explicit(&l->seq, memory_order_relaxed);

	atomic_store_explicit(&l->seq, s + 1, memory_order_release);
}

/* Reader: do { v = seqlock_read_begin(l); copies } while
 * (seqlock_read_retry(l, v)); */
static inline uint32_t
seqlock_read_begin(struct seqlock *l)
{
	return atomic_load_explicit(&l->seq, memory_order_acquire);
}

static inline int
seqlock_read_retry(struct seqlock *l, uint32_t v)
{
	atomic_thread_fence(memory_order_acquire);
	return (v & 1) != 0 ||
	    atomic_load_explicit(&l->seq, memory_order_relaxed) != v;
}

/* Words of a counter struct made only of uint64_t. */
#define SEQLOCK_WORDS(x) (sizeof(x) / sizeof(uint64_t))

#endif
