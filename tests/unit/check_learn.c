/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for client/learn.c (daqirictl learn's inference) on frames
 * with known answers: the simulator's layout under loss, duplicates and
 * reordering; a 16-bit counter behind a constant magic that wraps; a
 * sequence field with a batch field on its top bits; a sender that
 * restarts; other flows mixed in; and traffic with no counter at all.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "learn.h"

#define NMAX	8192
#define FLEN	600

struct gen {
	uint32_t seq_end, seq_width;	/* field ending on bit seq_end */
	uint32_t batch_end, batch_width, ppb_log2;	/* width 0: none */
	uint32_t payload;		/* first sample byte */
	uint32_t len;
	uint64_t first;			/* counter of the first packet */
	uint32_t n;			/* packets sent */
	uint32_t loss_every;		/* drop every k-th (0: none) */
	uint32_t dup_every;		/* send every k-th twice */
	uint32_t shuffle;		/* reverse blocks of this many */
	uint32_t restart_at;		/* counter back to first here */
	uint32_t noise_every;		/* a frame of another flow */
};

static uint8_t buf[NMAX][FLEN];
static struct learn_frame fr[NMAX];
static uint32_t nfr, dropped, duplicated;

/* v into bits [end + 1 - width, end], big-endian, MSB first. */
static void
put_field(uint8_t *f, uint32_t end, uint32_t width, uint64_t v)
{
	for (uint32_t b = 0; b < width; b++)
		if (v >> b & 1)
			f[(end - b) / 8] |= (uint8_t)(0x80u >> ((end - b) % 8));
}

static void
frame(uint8_t *f, const struct gen *g, uint64_t c, bool noise)
{
	memset(f, 0, FLEN);
	f[12] = 0x08;
	f[14] = 0x45;
	f[23] = 17;
	f[26] = 10; f[29] = 1;		/* 10.0.0.1 -> 10.0.0.2 */
	f[30] = 10; f[33] = 2;
	f[34] = 0x9c; f[35] = 0x40;	/* 40000 -> 5005 */
	f[36] = 0x13; f[37] = noise ? 0x8e : 0x8d;
	if (g->seq_end + 1 - g->seq_width >= 44 * 8) {
		f[42] = 0xDA;		/* a constant magic */
		f[43] = 0x71;
	}
	put_field(f, g->seq_end, g->seq_width, c & ((1ull << g->seq_width) - 1));
	if (g->batch_width > 0)
		put_field(f, g->batch_end, g->batch_width, (c >> g->ppb_log2) &
		    ((1ull << g->batch_width) - 1));
	for (uint32_t i = g->payload; i < g->len && i < FLEN; i++)
		f[i] = (uint8_t)(c * 7 + i);
}

static void
emit(const struct gen *g, uint64_t c, bool noise)
{
	ck_assert_uint_lt(nfr, NMAX);
	frame(buf[nfr], g, c, noise);
	fr[nfr].data = buf[nfr];
	fr[nfr].caplen = FLEN;
	fr[nfr].len = g->len;
	fr[nfr].ns = 1000000ull * nfr;
	nfr++;
}

/* The packets of g in their order of arrival. */
static void
generate(const struct gen *g)
{
	uint64_t order[NMAX];

	nfr = dropped = duplicated = 0;
	for (uint32_t i = 0; i < g->n; i++)
		order[i] = (g->restart_at != 0 ? i % g->restart_at : i) +
		    g->first;
	if (g->shuffle > 1)
		for (uint32_t b = 0; b + g->shuffle <= g->n; b += g->shuffle)
			for (uint32_t i = 0; i < g->shuffle / 2; i++) {
				uint64_t t = order[b + i];

				order[b + i] = order[b + g->shuffle - 1 - i];
				order[b + g->shuffle - 1 - i] = t;
			}
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->noise_every > 0 && i % g->noise_every == 0)
			emit(g, 0, true);
		if (g->loss_every > 0 && i % g->loss_every == g->loss_every / 2) {
			dropped++;
			continue;
		}
		emit(g, order[i], false);
		if (g->dup_every > 0 && i % g->dup_every == 1) {
			emit(g, order[i], false);
			duplicated++;
		}
	}
}

START_TEST(test_sim_layout)
{
	struct gen g = { .seq_end = 45 * 8 + 7, .seq_width = 32, .payload = 50,
	    .len = 550, .n = 4000, .loss_every = 100, .dup_every = 250,
	    .shuffle = 32 };
	struct learn_result r;

	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_HIGH);
	ck_assert_uint_eq(r.seq_bit_offset, 336);
	ck_assert_uint_eq(r.seq_bit_width, 32);
	ck_assert(!r.seq_wrapped);
	ck_assert(!r.has_batch);
	ck_assert_uint_eq(r.payload_offset, 50);
	ck_assert_uint_eq(r.payload_bytes, 500);
	ck_assert_uint_eq(r.len, 550);
	ck_assert_uint_eq(r.frames, nfr);
	ck_assert_uint_eq(r.other, 0);
	ck_assert_uint_eq(r.udp_src, 40000);
	ck_assert_uint_eq(r.udp_dst, 5005);
	ck_assert_uint_eq(r.ipv4_dst, 0x0a000002);
	/* every count exact: the first and last packets arrived */
	ck_assert_uint_eq(r.expected, 4000);
	ck_assert_uint_eq(r.unique, 4000 - dropped);
	ck_assert_uint_eq(r.duplicates, duplicated);
	ck_assert_uint_eq(r.reorder_depth, 31);
	ck_assert_uint_eq(r.restarts, 0);
	ck_assert(r.pps > 999 && r.pps < 1001);
}
END_TEST

/* A 16-bit counter behind the magic and two zero bytes: the wrap at
 * 2^16 makes every wider reading jump, so 16 bits win. */
START_TEST(test_wrap_width)
{
	struct gen g = { .seq_end = 47 * 8 + 7, .seq_width = 16, .payload = 48,
	    .len = 300, .first = 65000, .n = 2048, .shuffle = 4 };
	struct learn_result r;

	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_HIGH);
	ck_assert_uint_eq(r.seq_bit_offset, 46 * 8);
	ck_assert_uint_eq(r.seq_bit_width, 16);
	ck_assert(r.seq_wrapped);
	ck_assert_uint_eq(r.expected, 2048);
	ck_assert_uint_eq(r.unique, 2048);
	ck_assert_uint_eq(r.restarts, 0);
	ck_assert_uint_eq(r.reorder_depth, 3);

	/* without the wrap: the widest reading over zero bytes, said so */
	g.first = 0;
	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_uint_eq(r.seq_bit_offset, 44 * 8);
	ck_assert_uint_eq(r.seq_bit_width, 32);
	ck_assert(!r.seq_wrapped);
}
END_TEST

/* The simulator's seq_batch_number layout: a 12-bit counter and a 4-bit
 * batch field equal to its top bits: 256 packets per batch. */
START_TEST(test_batch_field)
{
	struct gen g = { .seq_end = 45 * 8 + 7, .seq_width = 12, .batch_end = 47 * 8 + 7,
	    .batch_width = 4, .ppb_log2 = 8, .payload = 48, .len = 400,
	    .first = 3000, .n = 3000, .loss_every = 50, .shuffle = 8 };
	struct learn_result r;

	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_HIGH);
	ck_assert_uint_eq(r.seq_bit_offset, 45 * 8 + 8 - 12);
	ck_assert_uint_eq(r.seq_bit_width, 12);
	ck_assert(r.seq_wrapped);
	ck_assert(r.has_batch);
	ck_assert_uint_eq(r.batch_bit_offset, 47 * 8 + 4);
	ck_assert_uint_eq(r.batch_bit_width, 4);
	ck_assert_uint_eq(r.ppb, 256);
	ck_assert_uint_eq(r.payload_offset, 48);
	ck_assert_uint_eq(r.unique, 3000 - dropped);
}
END_TEST

/* The reference's bit fields (a 10-bit counter from bit 340, a 2-bit
 * batch field from bit 356: 2^(10 - 2) = 256 packets per batch), neither
 * ending on a byte. */
START_TEST(test_bit_fields)
{
	struct gen g = { .seq_end = 349, .seq_width = 10, .batch_end = 357,
	    .batch_width = 2, .ppb_log2 = 8, .payload = 46, .len = 300,
	    .first = 700, .n = 3000, .shuffle = 8 };
	struct learn_result r;

	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_HIGH);
	ck_assert_uint_eq(r.seq_bit_offset, 340);
	ck_assert_uint_eq(r.seq_bit_width, 10);
	ck_assert(r.has_batch);
	ck_assert_uint_eq(r.batch_bit_offset, 356);
	ck_assert_uint_eq(r.batch_bit_width, 2);
	ck_assert_uint_eq(r.ppb, 256);
	ck_assert_uint_eq(r.payload_offset, 46);
	/* 3000 packets of a 10-bit counter: each value about three times */
	ck_assert_uint_eq(r.unique, 3000);
	ck_assert_uint_eq(r.restarts, 0);
}
END_TEST

/* A sender that restarts its counter, with other flows mixed in. */
START_TEST(test_restart_and_noise)
{
	struct gen g = { .seq_end = 45 * 8 + 7, .seq_width = 32, .payload = 50,
	    .len = 550, .first = 5000000, .n = 3000, .restart_at = 2000,
	    .shuffle = 16, .noise_every = 10 };
	struct learn_result r;

	generate(&g);
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_HIGH);
	ck_assert_uint_eq(r.seq_bit_offset, 336);
	ck_assert_uint_eq(r.frames, 3000);
	ck_assert_uint_eq(r.other, 300);
	ck_assert_uint_eq(r.restarts, 1);
	ck_assert_uint_eq(r.unique, 3000);
	ck_assert_uint_eq(r.expected, 3000);
	ck_assert_uint_eq(r.reorder_depth, 15);
}
END_TEST

/* No field counts packets: said, with nothing made up. */
START_TEST(test_no_counter)
{
	struct learn_result r;
	uint32_t x = 12345;

	nfr = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		struct gen g = { .seq_end = 45 * 8 + 7, .seq_width = 1, .payload = 44,
		    .len = 200 };

		emit(&g, 0, false);
		for (uint32_t b = 42; b < FLEN; b++) {
			x = x * 1103515245u + 12345u;
			buf[i][b] = (uint8_t)(x >> 16);
		}
	}
	learn_analyse(fr, nfr, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_NONE);
	ck_assert_ptr_nonnull(strstr(r.why, "counts packets"));

	/* too few frames, and frames that are not UDP */
	learn_analyse(fr, 10, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_NONE);
	ck_assert_ptr_nonnull(strstr(r.why, "fewer than 16"));
	for (uint32_t i = 0; i < 100; i++)
		buf[i][23] = 6;
	learn_analyse(fr, 100, &r);
	ck_assert_int_eq(r.seq_conf, LEARN_NONE);
	ck_assert_str_eq(r.why, "no UDP/IPv4 frames");
	ck_assert_uint_eq(r.other, 100);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("learn");
	TCase *tc = tcase_create("learn");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_sim_layout);
	tcase_add_test(tc, test_wrap_width);
	tcase_add_test(tc, test_batch_field);
	tcase_add_test(tc, test_bit_fields);
	tcase_add_test(tc, test_restart_and_noise);
	tcase_add_test(tc, test_no_counter);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
