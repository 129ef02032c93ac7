/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/convert_cpu.c: every REFERENCE.md vector through
 * every implementation this CPU runs (avx2, sse4.1 or the three NEON
 * ones, and scalar) and every
 * output type, and the vectorised paths against cvt_slot_scalar() on
 * random payloads of every length 0..300 at odd alignments, streamed and
 * not, with guard bytes around the slot.
 */
#include <check.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert_test.h"
#include "convert_cpu.h"

#define REPS		40	/* vector repetitions: whole blocks + tails */
#define MAXLEN		300
#define GUARD		64
#define BIG		8000

struct vec {
	enum daqiri_dtype in;
	enum cfg_endian en;
	uint8_t bytes[8];
	uint32_t nbytes;
	uint32_t nelems;
	int32_t values[8];
	uint16_t f16[8];
	uint16_t bf16[8];
	uint32_t f32[8];
};

/* REFERENCE.md, first table. */
static const struct vec vecs[] = {
	{ DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST, { 0x12, 0xF8, 0x7F, 0x80 }, 4, 8,
	  { 1, 2, -1, -8, 7, -1, -8, 0 },
	  { 0x3C00, 0x4000, 0xBC00, 0xC800, 0x4700, 0xBC00, 0xC800, 0x0000 },
	  { 0x3F80, 0x4000, 0xBF80, 0xC100, 0x40E0, 0xBF80, 0xC100, 0x0000 },
	  { 0x3F800000, 0x40000000, 0xBF800000, 0xC1000000, 0x40E00000,
	    0xBF800000, 0xC1000000, 0x00000000 } },
	{ DAQIRI_DTYPE_INT8, CFG_ENDIAN_HOST, { 0x00, 0x7F, 0x80, 0xFF, 0x05 },
	  5, 5, { 0, 127, -128, -1, 5 },
	  { 0x0000, 0x57F0, 0xD800, 0xBC00, 0x4500 },
	  { 0x0000, 0x42FE, 0xC300, 0xBF80, 0x40A0 },
	  { 0x00000000, 0x42FE0000, 0xC3000000, 0xBF800000, 0x40A00000 } },
	{ DAQIRI_DTYPE_INT16, CFG_ENDIAN_HOST,
	  { 0x34, 0x12, 0xFF, 0x7F, 0x00, 0x80, 0xFE, 0xFF }, 8, 4,
	  { 4660, 32767, -32768, -2 },
	  { 0x6C8D, 0x7800, 0xF800, 0xC000 },
	  { 0x4592, 0x4700, 0xC700, 0xC000 },
	  { 0x4591A000, 0x46FFFE00, 0xC7000000, 0xC0000000 } },
	{ DAQIRI_DTYPE_INT16, CFG_ENDIAN_NETWORK,
	  { 0x12, 0x34, 0x7F, 0xFF, 0x80, 0x00, 0xFF, 0xFE }, 8, 4,
	  { 4660, 32767, -32768, -2 },
	  { 0x6C8D, 0x7800, 0xF800, 0xC000 },
	  { 0x4592, 0x4700, 0xC700, 0xC000 },
	  { 0x4591A000, 0x46FFFE00, 0xC7000000, 0xC0000000 } },
	{ DAQIRI_DTYPE_INT32, CFG_ENDIAN_HOST, { 0x00, 0x00, 0x01, 0x00 }, 4, 1,
	  { 65536 }, { 0x7C00 }, { 0x4780 }, { 0x47800000 } },
	{ DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK, { 0x00, 0x00, 0x01, 0x00 }, 4, 1,
	  { 256 }, { 0x5C00 }, { 0x4380 }, { 0x43800000 } },
};
#define NVECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

/* REFERENCE.md, second table: int32 value -> fp32, fp16, bf16. */
static const struct {
	int32_t v;
	uint32_t f32;
	uint16_t f16, bf16;
} ivecs[] = {
	{ 257, 0x43808000, 0x5C04, 0x4380 },
	{ 259, 0x43818000, 0x5C0C, 0x4382 },
	{ 2049, 0x45001000, 0x6800, 0x4500 },
	{ 2051, 0x45003000, 0x6802, 0x4500 },
	{ 65519, 0x477FEF00, 0x7BFF, 0x4780 },
	{ 65520, 0x477FF000, 0x7C00, 0x4780 },
	{ 16777217, 0x4B800000, 0x7C00, 0x4B80 },
	{ 16842753, 0x4B808000, 0x7C00, 0x4B80 },
	{ 33554435, 0x4C000001, 0x7C00, 0x4C00 },
	{ 2147483647, 0x4F000000, 0x7C00, 0x4F00 },
	{ INT32_MIN, 0xCF000000, 0xFC00, 0xCF00 },
};
#define NIVECS ((int)(sizeof(ivecs) / sizeof(ivecs[0])))

static uint64_t
rd_le(const uint8_t *p, unsigned n)
{
	uint64_t x = 0;

	while (n-- > 0)
		x = x << 8 | p[n];
	return x;
}

/* Expected output bits of value v in out, computed without convert.h for
 * fp64 (the C conversion is exact) and int32; fp16/bf16/fp32 from the
 * tables. */
static uint64_t
f64_bits(int32_t v)
{
	double d = v;
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* The implementations this CPU runs; fills names, returns the count. */
static int
impls(const char **names)
{
	int i, n = 0;

	for (i = 0; cvt_impl_names[i] != NULL; i++) {
		if (cvt_force_impl(cvt_impl_names[i]) == 0)
			names[n++] = cvt_impl_names[i];
		else
			fprintf(stderr, "note: %s not supported here\n",
			    cvt_impl_names[i]);
	}
	ck_assert_int_ge(n, 1);
	return n;
}

/* Every vector, repeated REPS times so the vector kernels see whole
 * blocks, into every output type, streamed and not, every impl. */
START_TEST(test_vectors_all_impls)
{
	const struct vec *v = &vecs[_i];
	const char *names[8];
	uint8_t in[8 * REPS], *out, *dst;
	uint32_t n = v->nbytes * REPS, ne = v->nelems * REPS, e, k, o;
	int ni = impls(names), i, nt;
	uint64_t want, got;

	for (k = 0; k < REPS; k++)
		memcpy(in + k * v->nbytes, v->bytes, v->nbytes);
	out = malloc(ne * 8 + 64);
	for (i = 0; i < ni; i++) {
		ck_assert_int_eq(cvt_force_impl(names[i]), 0);
		ck_assert_str_eq(cvt_impl_name(), names[i]);
		for (nt = 0; nt < 2; nt++) {
			cvt_set_nt_threshold(nt ? 0 : UINT64_MAX);
			for (o = 0; o < NOUT; o++) {
				unsigned sz = cvt_out_size(out_types[o]);

				dst = out + 32;	/* aligned */
				memset(out, 0xEE, ne * 8 + 64);
				cvt_slot_fast(v->in, out_types[o], v->en, in,
				    n, dst);
				cvt_fence();
				for (e = 0; e < ne; e++) {
					uint32_t j = e % v->nelems;

					switch (out_types[o]) {
					case DAQIRI_DTYPE_FP16:
						want = v->f16[j];
						break;
					case DAQIRI_DTYPE_BF16:
						want = v->bf16[j];
						break;
					case DAQIRI_DTYPE_FP32:
						want = v->f32[j];
						break;
					case DAQIRI_DTYPE_FP64:
						want = f64_bits(v->values[j]);
						break;
					default:
						want = (uint32_t)v->values[j];
						break;
					}
					got = rd_le(dst + (uint64_t)e * sz, sz);
					if (got != want)
						ck_abort_msg("%s nt=%d in=%d "
						    "en=%d out=%s e=%u: %#llx, "
						    "expected %#llx", names[i],
						    nt, v->in, v->en,
						    out_names[o],
						    e, (unsigned long long)got,
						    (unsigned long long)want);
				}
				EXPECT_EQ(dst[ne * sz], 0xEE);
			}
		}
	}
	free(out);
}
END_TEST

/* The int32 value table through the vector kernels (host and network). */
START_TEST(test_int32_table_all_impls)
{
	const char *names[8];
	uint8_t in[4 * NIVECS * 4], out[8 * NIVECS * 4 + 64], *dst;
	int ni = impls(names), i, j, r, en;
	uint32_t u;

	for (i = 0; i < ni; i++) {
		cvt_force_impl(names[i]);
		for (en = 0; en < 2; en++) {
			/* 4 repetitions: 44 elements, one block + a tail */
			for (r = 0; r < 4; r++) {
				for (j = 0; j < NIVECS; j++) {
					u = (uint32_t)ivecs[j].v;
					uint8_t *p = in + 4 * (r * NIVECS + j);

					if (en == CFG_ENDIAN_NETWORK) {
						p[0] = u >> 24; p[1] = u >> 16;
						p[2] = u >> 8; p[3] = u;
					} else {
						p[3] = u >> 24; p[2] = u >> 16;
						p[1] = u >> 8; p[0] = u;
					}
				}
			}
			dst = out + 32;
			cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP32, en, in,
			    sizeof(in), dst);
			for (j = 0; j < 4 * NIVECS; j++)
				EXPECT_EQ(rd_le(dst + 4 * j, 4),
				    ivecs[j % NIVECS].f32);
			cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP16, en, in,
			    sizeof(in), dst);
			for (j = 0; j < 4 * NIVECS; j++)
				EXPECT_EQ(rd_le(dst + 2 * j, 2),
				    ivecs[j % NIVECS].f16);
			cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_BF16, en, in,
			    sizeof(in), dst);
			for (j = 0; j < 4 * NIVECS; j++)
				EXPECT_EQ(rd_le(dst + 2 * j, 2),
				    ivecs[j % NIVECS].bf16);
			cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP64, en, in,
			    sizeof(in), dst);
			for (j = 0; j < 4 * NIVECS; j++)
				EXPECT_EQ(rd_le(dst + 8 * j, 8),
				    f64_bits(ivecs[j % NIVECS].v));
			cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32, en, in,
			    sizeof(in), dst);
			for (j = 0; j < 4 * NIVECS; j++)
				EXPECT_EQ(rd_le(dst + 4 * j, 4),
				    (uint32_t)ivecs[j % NIVECS].v);
		}
	}
}
END_TEST

START_TEST(test_int32_network_identity)
{
	const char *names[8];
	uint8_t in[4 * 64], out[4 * 64 + 32];
	int ni = impls(names), i, k;

	for (k = 0; k < 64; k++) {
		in[4 * k] = 1; in[4 * k + 1] = 2;
		in[4 * k + 2] = 3; in[4 * k + 3] = 4;
	}
	for (i = 0; i < ni; i++) {
		cvt_force_impl(names[i]);
		cvt_set_nt_threshold(0);
		cvt_slot_fast(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32,
		    CFG_ENDIAN_NETWORK, in, sizeof(in), out + 32);
		cvt_fence();
		for (k = 0; k < 64; k++) {
			EXPECT_EQ(out[32 + 4 * k], 4);
			EXPECT_EQ(out[32 + 4 * k + 1], 3);
			EXPECT_EQ(out[32 + 4 * k + 2], 2);
			EXPECT_EQ(out[32 + 4 * k + 3], 1);
		}
	}
}
END_TEST

/* Every int4 byte value (all nibble pairs) through the table kernels. */
START_TEST(test_int4_all_bytes)
{
	const char *names[8];
	uint8_t in[256], want[256 * 2 * 8], got[256 * 2 * 8 + 64];
	int ni = impls(names), i, o, b;

	for (b = 0; b < 256; b++)
		in[b] = (uint8_t)b;
	for (o = 0; o < NOUT; o++) {
		unsigned sz = cvt_out_size(out_types[o]);

		cvt_slot_scalar(DAQIRI_DTYPE_INT4, out_types[o], CFG_ENDIAN_HOST,
		    in, 256, want);
		for (i = 0; i < ni; i++) {
			cvt_force_impl(names[i]);
			cvt_set_nt_threshold(0);
			cvt_slot_fast(DAQIRI_DTYPE_INT4, out_types[o],
			    CFG_ENDIAN_HOST, in, 256, got + 32);
			cvt_fence();
			if (memcmp(got + 32, want, 512 * sz) != 0)
				ck_abort_msg("%s int4->%s differs", names[i],
				    out_names[o]);
		}
	}
}
END_TEST

struct combo {
	enum daqiri_dtype in, out;
	enum cfg_endian en;
};

static int
all_combos(struct combo *c)
{
	static const enum daqiri_dtype ins[] = {
		DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_INT16,
		DAQIRI_DTYPE_INT32,
	};
	int n = 0;
	unsigned i, o, en;

	c[n++] = (struct combo){ DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW,
	    CFG_ENDIAN_HOST };
	for (i = 0; i < 4; i++)
		for (en = 0; en < 2; en++)
			for (o = 0; o < NOUT; o++)
				c[n++] = (struct combo){ ins[i], out_types[o],
				    en };
	return n;
}

/* Compare fast against scalar for one call; guard bytes around dst. */
static void
cross_one(const char *impl, const struct combo *c, const uint8_t *src,
	  uint32_t len, uint8_t *buf, uint8_t *ref, size_t dst_off)
{
	uint32_t ne = cvt_in_elems(c->in, len);
	size_t ob = (size_t)ne * cvt_out_size(c->out), k;
	uint8_t *dst = buf + GUARD + dst_off;

	if (c->in == DAQIRI_DTYPE_RAW)
		ob = len;
	memset(buf, 0xA5, GUARD * 2 + dst_off + ob + 64);
	memset(ref, 0xA5, ob);
	cvt_slot_scalar(c->in, c->out, c->en, src, len, ref);
	cvt_slot_fast(c->in, c->out, c->en, src, len, dst);
	cvt_fence();
	if (memcmp(dst, ref, ob) != 0) {
		for (k = 0; k < ob && dst[k] == ref[k]; k++)
			;
		ck_abort_msg("%s in=%d en=%d out=%d len=%u dst_off=%zu: "
		    "byte %zu is %#x, scalar %#x", impl, c->in, c->en, c->out,
		    len, dst_off, k, dst[k], ref[k]);
	}
	for (k = 0; k < GUARD + dst_off; k++)
		if (buf[k] != 0xA5)
			ck_abort_msg("%s in=%d out=%d len=%u: wrote before "
			    "the slot", impl, c->in, c->out, len);
	for (k = 0; k < GUARD; k++)
		if (dst[ob + k] != 0xA5)
			ck_abort_msg("%s in=%d out=%d len=%u dst_off=%zu: "
			    "wrote after the slot", impl, c->in, c->out, len,
			    dst_off);
}

/* Every implementation, every combination, every length 0..300, odd
 * source and destination alignments, streamed (threshold 0) and not. */
START_TEST(test_random_lengths_alignments)
{
	static const size_t dst_offs[] = { 0, 1, 2, 4, 6, 8, 12, 16, 20, 30 };
	const char *names[8];
	struct combo c[64];
	int ni = impls(names), nc = all_combos(c), i, j, nt;
	uint8_t *src, *buf, *ref;
	uint32_t len, seed = 12345, k;
	size_t a;

	src = malloc(MAXLEN + 64);
	buf = malloc(GUARD * 2 + 32 + MAXLEN * 16 + 64);
	ref = malloc(MAXLEN * 16 + 64);
	for (k = 0; k < MAXLEN + 64; k++) {
		seed = seed * 1103515245u + 12345u;
		src[k] = (uint8_t)(seed >> 16);
	}
	for (i = 0; i < ni; i++) {
		ck_assert_int_eq(cvt_force_impl(names[i]), 0);
		for (nt = 0; nt < 2; nt++) {
			cvt_set_nt_threshold(nt ? 0 : UINT64_MAX);
			for (j = 0; j < nc; j++)
				for (len = 0; len <= MAXLEN; len++)
					for (a = 0; a < 10; a++)
						cross_one(names[i], &c[j],
						    src + (len + a) % 7, len,
						    buf, ref, dst_offs[(a +
						    len) % 10]);
		}
	}
	free(src);
	free(buf);
	free(ref);
}
END_TEST

/* Large payloads (the benchmark's 8000 bytes) with the default threshold,
 * at every destination offset 0..31, random data. */
START_TEST(test_big_payloads)
{
	const char *names[8];
	struct combo c[64];
	int ni = impls(names), nc = all_combos(c), i, j;
	uint8_t *src, *buf, *ref;
	uint32_t seed = 777, k;
	size_t a;

	src = malloc(BIG + 8);
	buf = malloc(GUARD * 2 + 32 + BIG * 16 + 64);
	ref = malloc(BIG * 16 + 64);
	for (k = 0; k < BIG + 8; k++) {
		seed = seed * 1103515245u + 12345u;
		src[k] = (uint8_t)(seed >> 16);
	}
	for (i = 0; i < ni; i++) {
		cvt_force_impl(names[i]);
		cvt_set_nt_threshold(CVT_NT_THRESHOLD_DEFAULT);
		for (j = 0; j < nc; j++)
			for (a = 0; a < 32; a++)
				cross_one(names[i], &c[j], src + a % 3, BIG,
				    buf, ref, a);
	}
	free(src);
	free(buf);
	free(ref);
}
END_TEST

/* cvt_fill_fast writes exactly what cvt_fill_slot writes. */
START_TEST(test_fill_fast)
{
	static const enum daqiri_dtype outs[] = {
		DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16,
		DAQIRI_DTYPE_FP32, DAQIRI_DTYPE_FP64, DAQIRI_DTYPE_INT32,
	};
	static const uint64_t lens[] = { 0, 2, 8, 62, 64, 66, 200, 4096, 9000 };
	const char *names[8];
	uint8_t *buf = malloc(9000 + 2 * GUARD + 64), *ref = malloc(9000);
	int ni = impls(names), i, th;
	unsigned o, f, l, a;

	for (i = 0; i < ni; i++) {
		cvt_force_impl(names[i]);
		for (th = 0; th < 2; th++) {
			cvt_set_nt_threshold(th ? 0 : CVT_NT_THRESHOLD_DEFAULT);
			for (o = 0; o < 6; o++)
			for (f = 0; f < DAQIRI_FILL_MAX; f++)
			for (l = 0; l < 9; l++)
			for (a = 0; a < 40; a += 2) {
				uint8_t *dst = buf + GUARD + a;
				uint64_t n = lens[l] - lens[l] %
				    (cvt_out_size(outs[o]));

				memset(buf, 0x5A, 9000 + 2 * GUARD + 64);
				memset(ref, 0x5A, n);
				cvt_fill_slot(outs[o], f, ref, n);
				cvt_fill_fast(outs[o], f, dst, n);
				cvt_fence();
				if (memcmp(dst, ref, n) != 0 ||
				    buf[GUARD + a - 1] != 0x5A ||
				    dst[n] != 0x5A)
					ck_abort_msg("%s fill %u out %u len "
					    "%llu off %u", names[i], f, o,
					    (unsigned long long)n, a);
			}
		}
	}
	free(buf);
	free(ref);
}
END_TEST

#if defined(__x86_64__) && !defined(CVT_NO_SIMD)
#include <cpuid.h>

static bool
cpu_has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

START_TEST(test_force_impl)
{
	ck_assert_int_eq(cvt_force_impl("bogus"), -1);
	ck_assert_int_eq(cvt_force_impl("scalar"), 0);
	ck_assert_str_eq(cvt_impl_name(), "scalar");
	ck_assert_int_eq(cvt_force_impl("bogus"), -1);
	ck_assert_str_eq(cvt_impl_name(), "scalar");
	ck_assert_int_eq(cvt_force_impl(NULL), 0);
#if defined(__x86_64__) && !defined(CVT_NO_SIMD)
	/* every x86-64 this runs on has at least SSE4.1 in practice; say
	 * which one auto picked */
	fprintf(stderr, "note: auto implementation: %s\n", cvt_impl_name());
	if (__builtin_cpu_supports("avx2") && cpu_has_f16c())
		ck_assert_str_eq(cvt_impl_name(), "avx2");
	else if (__builtin_cpu_supports("sse4.1"))
		ck_assert_str_eq(cvt_impl_name(), "sse4.1");
#endif
#if defined(__aarch64__) && !defined(CVT_NO_SIMD)
	/* ASIMD always; its FP16 and BF16 conversions as the kernel says */
	unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);

	fprintf(stderr, "note: auto implementation: %s\n", cvt_impl_name());
	if ((hw & HWCAP_ASIMDHP) && (hw2 & HWCAP2_BF16))
		ck_assert_str_eq(cvt_impl_name(), "neon-fp16-bf16");
	else if (hw & HWCAP_ASIMDHP)
		ck_assert_str_eq(cvt_impl_name(), "neon-fp16");
	else
		ck_assert_str_eq(cvt_impl_name(), "neon");
#endif
}
END_TEST

static Suite *
convert_fast_suite(void)
{
	Suite *s = suite_create("convert_fast");
	TCase *tc = tcase_create("vectors");

	tcase_add_loop_test(tc, test_vectors_all_impls, 0, NVECS);
	tcase_add_test(tc, test_int32_table_all_impls);
	tcase_add_test(tc, test_int32_network_identity);
	tcase_add_test(tc, test_int4_all_bytes);
	tcase_add_test(tc, test_force_impl);
	tcase_add_test(tc, test_fill_fast);
	suite_add_tcase(s, tc);
	tc = tcase_create("cross");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_lengths_alignments);
	tcase_add_test(tc, test_big_payloads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(convert_fast_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
