/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latency histograms, the one definition both sides use: fixed bucket
 * bounds in 1-2-5 steps from 1 us to 10 s plus +Inf, a struct made of
 * uint64_t only (so a seqlock snapshot copies it like any counters), the
 * bucket of a value, and the quantile estimate daqirictl prints. The
 * stats JSON carries the bounds (le_ns) beside the counts, so a reader
 * never needs this table to make sense of a reply.
 */
#ifndef DAQIRI_HISTOGRAM_H
#define DAQIRI_HISTOGRAM_H

#include <stdint.h>

/* Upper bounds (ns, inclusive, as Prometheus' le): 1, 2, 5 us ... 5, 10 s. */
#define DAQIRI_HIST_NBOUNDS	22
/* Buckets: one per bound, then +Inf. */
#define DAQIRI_HIST_NBUCKETS	(DAQIRI_HIST_NBOUNDS + 1)

/*
 * buckets[i] counts the values v with le(i-1) < v <= le(i) (bucket 0:
 * v <= 1 us; the last: v > 10 s). Not cumulative. count is their sum,
 * kept apart so a reader can check it; sum_ns the sum of the values.
 */
struct daqiri_hist {
	uint64_t buckets[DAQIRI_HIST_NBUCKETS];
	uint64_t count;
	uint64_t sum_ns;
};

/* The upper bound of bucket i < DAQIRI_HIST_NBOUNDS, in ns. */
static inline uint64_t
daqiri_hist_le_ns(unsigned i)
{
	static const uint64_t le[DAQIRI_HIST_NBOUNDS] = {
		1000, 2000, 5000,
		10000, 20000, 50000,
		100000, 200000, 500000,
		1000000, 2000000, 5000000,
		10000000, 20000000, 50000000,
		100000000, 200000000, 500000000,
		1000000000, 2000000000, 5000000000,
		10000000000,
	};

	return le[i];
}

/* The bucket of a value: the first bound >= ns, DAQIRI_HIST_NBOUNDS
 * (+Inf) past the last. A binary search: five compares. */
static inline unsigned
daqiri_hist_bucket(uint64_t ns)
{
	unsigned lo = 0, hi = DAQIRI_HIST_NBOUNDS;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (daqiri_hist_le_ns(mid) < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Count one value. Single writer; no atomics (a seqlock publishes it). */
static inline void
daqiri_hist_add(struct daqiri_hist *h, uint64_t ns)
{
	h->buckets[daqiri_hist_bucket(ns)]++;
	h->count++;
	h->sum_ns += ns;
}

/*
 * The bucket the permille-quantile falls in (500: p50, 990: p99): the
 * bucket of the value of rank ceil(n * permille / 1000) (at least 1) in
 * the sorted values, n the sum of buckets[0..nbuckets). Callers report
 * that bucket's upper bound: the true quantile is at most that, and more
 * than the bound below. No interpolation inside the bucket, which would
 * claim a precision the buckets do not have. -1 when there are no values.
 */
static inline int
daqiri_hist_quantile(const uint64_t *buckets, unsigned nbuckets,
		     unsigned permille)
{
	uint64_t n = 0, rank, seen = 0;

	for (unsigned i = 0; i < nbuckets; i++)
		n += buckets[i];
	if (n == 0)
		return -1;
	if (permille > 1000)
		permille = 1000;
	/* n * permille overflows only past 1.8e16 values */
	rank = (n * permille + 999) / 1000;
	if (rank == 0)
		rank = 1;
	for (unsigned i = 0; i < nbuckets; i++) {
		seen += buckets[i];
		if (seen >= rank)
			return (int)i;
	}
	return (int)nbuckets - 1;
}

#endif
