/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the latency histograms (proto/histogram.h): the bounds table,
 * the bucket of a value at and around every bound, counting, and the
 * quantile estimate against a sort of synthetic samples.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"

#define NSAMPLES	10007u

/* The bounds are 1, 2, 5 x 10^k us from 1 us to 10 s, increasing. */
START_TEST(test_bounds)
{
	static const uint64_t step[3] = { 1, 2, 5 };
	uint64_t decade = 1000;

	ck_assert_uint_eq(DAQIRI_HIST_NBUCKETS, DAQIRI_HIST_NBOUNDS + 1);
	for (unsigned i = 0; i < DAQIRI_HIST_NBOUNDS; i++) {
		ck_assert_uint_eq(daqiri_hist_le_ns(i), step[i % 3] * decade);
		if (i % 3 == 2)
			decade *= 10;
		if (i > 0)
			ck_assert_uint_gt(daqiri_hist_le_ns(i),
			    daqiri_hist_le_ns(i - 1));
	}
	ck_assert_uint_eq(daqiri_hist_le_ns(0), 1000);
	ck_assert_uint_eq(daqiri_hist_le_ns(DAQIRI_HIST_NBOUNDS - 1),
	    10000000000ull);
}
END_TEST

/* A bound belongs to its own bucket (le is inclusive), one ns more to
 * the next; everything past 10 s to +Inf. */
START_TEST(test_bucket_edges)
{
	ck_assert_uint_eq(daqiri_hist_bucket(0), 0);
	ck_assert_uint_eq(daqiri_hist_bucket(1), 0);
	for (unsigned i = 0; i < DAQIRI_HIST_NBOUNDS; i++) {
		uint64_t le = daqiri_hist_le_ns(i);

		ck_assert_uint_eq(daqiri_hist_bucket(le - 1), i);
		ck_assert_uint_eq(daqiri_hist_bucket(le), i);
		ck_assert_uint_eq(daqiri_hist_bucket(le + 1), i + 1);
	}
	ck_assert_uint_eq(daqiri_hist_bucket(2000000), 10);	/* 2 ms */
	ck_assert_uint_eq(daqiri_hist_bucket(2000001), 11);	/* le 5 ms */
	ck_assert_uint_eq(daqiri_hist_bucket(UINT64_MAX), DAQIRI_HIST_NBOUNDS);
}
END_TEST

/* The binary search agrees with a linear scan on values of every size. */
START_TEST(test_bucket_scan)
{
	uint64_t x = 88172645463325252ull;

	for (unsigned n = 0; n < 100000; n++) {
		uint64_t v;
		unsigned want = 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = x >> (x % 64);	/* all magnitudes */
		while (want < DAQIRI_HIST_NBOUNDS &&
		    daqiri_hist_le_ns(want) < v)
			want++;
		ck_assert_uint_eq(daqiri_hist_bucket(v), want);
	}
}
END_TEST

START_TEST(test_add)
{
	struct daqiri_hist h;
	uint64_t sum = 0;

	memset(&h, 0, sizeof(h));
	daqiri_hist_add(&h, 0);
	daqiri_hist_add(&h, 1500);		/* le 2 us */
	daqiri_hist_add(&h, 2000000);		/* le 2 ms */
	daqiri_hist_add(&h, 2000001);		/* le 5 ms */
	daqiri_hist_add(&h, 20000000000ull);	/* +Inf */
	ck_assert_uint_eq(h.count, 5);
	ck_assert_uint_eq(h.sum_ns, 0 + 1500 + 2000000 + 2000001 +
	    20000000000ull);
	ck_assert_uint_eq(h.buckets[0], 1);
	ck_assert_uint_eq(h.buckets[1], 1);
	ck_assert_uint_eq(h.buckets[10], 1);
	ck_assert_uint_eq(h.buckets[11], 1);
	ck_assert_uint_eq(h.buckets[DAQIRI_HIST_NBOUNDS], 1);
	for (unsigned i = 0; i < DAQIRI_HIST_NBUCKETS; i++)
		sum += h.buckets[i];
	ck_assert_uint_eq(sum, h.count);
	/* a struct of uint64_t only, as the seqlock copies need */
	ck_assert_uint_eq(sizeof(h) % sizeof(uint64_t), 0);
	ck_assert_uint_eq(sizeof(h) / sizeof(uint64_t),
	    DAQIRI_HIST_NBUCKETS + 2);
}
END_TEST

/* Hand-made cases: the rank is ceil(n * q), the bucket the one where the
 * running sum reaches it. */
START_TEST(test_quantile_cases)
{
	uint64_t b[DAQIRI_HIST_NBUCKETS];

	memset(b, 0, sizeof(b));
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 500), -1);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 990), -1);

	b[7] = 1;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 0), 7);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 500), 7);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 1000), 7);

	/* 99 fast, 1 slow: p99 is rank 99, the fast bucket; p100 the slow */
	b[7] = 0;
	b[3] = 99;
	b[12] = 1;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 500), 3);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 990), 3);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 1000), 12);
	/* 98 and 2: rank 99 is a slow one */
	b[3] = 98;
	b[12] = 2;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 990), 12);
	/* 50/50: the median is rank 50, the lower bucket */
	b[3] = 50;
	b[12] = 50;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 500), 3);
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 510), 12);
	/* +Inf is a bucket like the others */
	memset(b, 0, sizeof(b));
	b[DAQIRI_HIST_NBOUNDS] = 3;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 990),
	    DAQIRI_HIST_NBOUNDS);
	/* a permille past 1000 is 1000 */
	b[0] = 3;
	ck_assert_int_eq(daqiri_hist_quantile(b, DAQIRI_HIST_NBUCKETS, 5000),
	    DAQIRI_HIST_NBOUNDS);
}
END_TEST

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Synthetic latencies like an assembly with a 2 ms deadline: most
 * tensors complete in 0.2..1 ms, a fifth time out at 2..2.3 ms, a few
 * stragglers up to 40 ms. The estimate's bucket is that of the sample of
 * rank ceil(n q) in sorted order, for every permille.
 */
START_TEST(test_quantile_sorted)
{
	static uint64_t v[NSAMPLES];
	struct daqiri_hist h;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	memset(&h, 0, sizeof(h));
	for (unsigned i = 0; i < NSAMPLES; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % 100 < 79)
			v[i] = 200000 + x / 7 % 800000;
		else if (x % 100 < 99)
			v[i] = 2000000 + x / 7 % 300000;
		else
			v[i] = 2000000 + x / 7 % 38000000;
		daqiri_hist_add(&h, v[i]);
	}
	qsort(v, NSAMPLES, sizeof(v[0]), cmp_u64);
	for (unsigned q = 0; q <= 1000; q++) {
		uint64_t rank = ((uint64_t)NSAMPLES * q + 999) / 1000;

		if (rank == 0)
			rank = 1;
		ck_assert_int_eq(daqiri_hist_quantile(h.buckets,
		    DAQIRI_HIST_NBUCKETS, q), (int)daqiri_hist_bucket(v[rank - 1]));
	}
	/* and the shape the system test relies on: p99 is the deadline's
	 * bucket, le 5 ms */
	ck_assert_uint_eq(daqiri_hist_le_ns((unsigned)daqiri_hist_quantile(
	    h.buckets, DAQIRI_HIST_NBUCKETS, 990)), 5000000);
	ck_assert_uint_eq(daqiri_hist_le_ns((unsigned)daqiri_hist_quantile(
	    h.buckets, DAQIRI_HIST_NBUCKETS, 500)), 1000000);
}
END_TEST

static Suite *
histogram_suite(void)
{
	Suite *s = suite_create("histogram");
	TCase *tc = tcase_create("histogram");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_bucket_edges);
	tcase_add_test(tc, test_bucket_scan);
	tcase_add_test(tc, test_add);
	tcase_add_test(tc, test_quantile_cases);
	tcase_add_test(tc, test_quantile_sorted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(histogram_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
