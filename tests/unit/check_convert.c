/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/convert.h: every test vector of REFERENCE.md
 * "Element conversion (exact)" through every entry point, and exhaustive or
 * random cross-checks against independent references (the C cast, and a
 * double -> half / bfloat16 rounding written here with libm).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert_test.h"

#define MAX_ELEMS	16
#define RANDOM_N	2000000

/* One row of the first REFERENCE.md table. */
struct vec {
	const char *name;
	enum daqiri_dtype in;
	enum cfg_endian en;
	uint8_t bytes[16];
	uint32_t nbytes;
	uint32_t nelems;
	int32_t values[MAX_ELEMS];
	uint16_t f16[MAX_ELEMS];
	uint16_t bf16[MAX_ELEMS];
	uint32_t f32[MAX_ELEMS];
};

static const struct vec vecs[] = {
	{ "int4", DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST, { 0x12, 0xF8, 0x7F, 0x80 },
	  4, 8, { 1, 2, -1, -8, 7, -1, -8, 0 },
	  { 0x3C00, 0x4000, 0xBC00, 0xC800, 0x4700, 0xBC00, 0xC800, 0x0000 },
	  { 0x3F80, 0x4000, 0xBF80, 0xC100, 0x40E0, 0xBF80, 0xC100, 0x0000 },
	  { 0x3F800000, 0x40000000, 0xBF800000, 0xC1000000, 0x40E00000,
	    0xBF800000, 0xC1000000, 0x00000000 } },
	/* endianness does not apply to int4: network gives the same */
	{ "int4-net", DAQIRI_DTYPE_INT4, CFG_ENDIAN_NETWORK,
	  { 0x12, 0xF8, 0x7F, 0x80 },
	  4, 8, { 1, 2, -1, -8, 7, -1, -8, 0 },
	  { 0x3C00, 0x4000, 0xBC00, 0xC800, 0x4700, 0xBC00, 0xC800, 0x0000 },
	  { 0x3F80, 0x4000, 0xBF80, 0xC100, 0x40E0, 0xBF80, 0xC100, 0x0000 },
	  { 0x3F800000, 0x40000000, 0xBF800000, 0xC1000000, 0x40E00000,
	    0xBF800000, 0xC1000000, 0x00000000 } },
	{ "int8", DAQIRI_DTYPE_INT8, CFG_ENDIAN_HOST,
	  { 0x00, 0x7F, 0x80, 0xFF, 0x05 }, 5, 5, { 0, 127, -128, -1, 5 },
	  { 0x0000, 0x57F0, 0xD800, 0xBC00, 0x4500 },
	  { 0x0000, 0x42FE, 0xC300, 0xBF80, 0x40A0 },
	  { 0x00000000, 0x42FE0000, 0xC3000000, 0xBF800000, 0x40A00000 } },
	{ "int8-net", DAQIRI_DTYPE_INT8, CFG_ENDIAN_NETWORK,
	  { 0x00, 0x7F, 0x80, 0xFF, 0x05 }, 5, 5, { 0, 127, -128, -1, 5 },
	  { 0x0000, 0x57F0, 0xD800, 0xBC00, 0x4500 },
	  { 0x0000, 0x42FE, 0xC300, 0xBF80, 0x40A0 },
	  { 0x00000000, 0x42FE0000, 0xC3000000, 0xBF800000, 0x40A00000 } },
	{ "int16-host", DAQIRI_DTYPE_INT16, CFG_ENDIAN_HOST,
	  { 0x34, 0x12, 0xFF, 0x7F, 0x00, 0x80, 0xFE, 0xFF }, 8, 4,
	  { 4660, 32767, -32768, -2 },
	  { 0x6C8D, 0x7800, 0xF800, 0xC000 },
	  { 0x4592, 0x4700, 0xC700, 0xC000 },
	  { 0x4591A000, 0x46FFFE00, 0xC7000000, 0xC0000000 } },
	{ "int16-net", DAQIRI_DTYPE_INT16, CFG_ENDIAN_NETWORK,
	  { 0x12, 0x34, 0x7F, 0xFF, 0x80, 0x00, 0xFF, 0xFE }, 8, 4,
	  { 4660, 32767, -32768, -2 },
	  { 0x6C8D, 0x7800, 0xF800, 0xC000 },
	  { 0x4592, 0x4700, 0xC700, 0xC000 },
	  { 0x4591A000, 0x46FFFE00, 0xC7000000, 0xC0000000 } },
	{ "int32-host", DAQIRI_DTYPE_INT32, CFG_ENDIAN_HOST,
	  { 0x00, 0x00, 0x01, 0x00 }, 4, 1, { 65536 },
	  { 0x7C00 }, { 0x4780 }, { 0x47800000 } },
	{ "int32-net", DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK,
	  { 0x00, 0x00, 0x01, 0x00 }, 4, 1, { 256 },
	  { 0x5C00 }, { 0x4380 }, { 0x43800000 } },
};
#define NVECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

/* The second table: int32 values. */
struct ivec {
	int32_t v;
	uint32_t f32;
	uint16_t f16;
	uint16_t bf16;
};

static const struct ivec ivecs[] = {
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

static uint32_t
f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static uint64_t
f64_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static float
bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint64_t
load_le(const uint8_t *p, uint32_t n)
{
	uint64_t x = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

/*
 * Reference rounding of a finite double to a binary format with `mant`
 * stored mantissa bits, exponent bias `bias` and `ebits` exponent bits,
 * round to nearest even, overflow to inf, with subnormals: a different
 * method (frexp/ldexp/rint in the default rounding mode) from convert.h.
 */
static uint32_t
ref_round(double x, int mant, int bias, int ebits)
{
	uint32_t sign = signbit(x) ? 1u : 0u;
	uint32_t bits, emax = (1u << ebits) - 1;
	double a = fabs(x), q, r;
	int e, qe;

	if (a == 0)
		return sign << (mant + ebits);
	(void)frexp(a, &e);
	e -= 1;				/* a in [2^e, 2^(e+1)) */
	qe = e < 1 - bias ? 1 - bias - mant : e - mant;
	q = ldexp(a, -qe);		/* exact: scaling by a power of 2 */
	r = rint(q);			/* ties to even */
	if (e < 1 - bias)
		bits = (uint32_t)r;	/* subnormal; r = 2^mant rolls over */
	else
		bits = ((uint32_t)(e + bias - 1) << mant) + (uint32_t)r;
	if ((bits >> mant) >= emax)
		bits = emax << mant;	/* inf */
	return sign << (mant + ebits) | bits;
}

static uint16_t
ref_f16(double x)
{
	return (uint16_t)ref_round(x, 10, 15, 5);
}

static uint16_t
ref_bf16(double x)
{
	return (uint16_t)ref_round(x, 7, 127, 8);
}

/* Expected output element of value v in type out, from the tables. */
static uint64_t
expect(const struct vec *t, enum daqiri_dtype out, uint32_t e)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		return t->f16[e];
	case DAQIRI_DTYPE_BF16:
		return t->bf16[e];
	case DAQIRI_DTYPE_FP32:
		return t->f32[e];
	case DAQIRI_DTYPE_FP64:
		return f64_bits((double)t->values[e]);
	default:
		return (uint32_t)t->values[e];
	}
}

START_TEST(test_vectors_read)
{
	const struct vec *t = &vecs[_i];
	uint32_t e;

	ck_assert_uint_eq(cvt_in_elems(t->in, t->nbytes), t->nelems);
	for (e = 0; e < t->nelems; e++)
		ck_assert_msg(cvt_read(t->in, t->en, t->bytes, e) ==
		    t->values[e], "%s element %u: %d != %d", t->name, e,
		    cvt_read(t->in, t->en, t->bytes, e), t->values[e]);
}
END_TEST

START_TEST(test_vectors_write)
{
	const struct vec *t = &vecs[_i];
	uint8_t buf[MAX_ELEMS * 8];
	uint32_t e, sz;
	int o;

	for (o = 0; o < NOUT; o++) {
		sz = cvt_out_size(out_types[o]);
		memset(buf, 0xAA, sizeof(buf));
		for (e = 0; e < t->nelems; e++)
			cvt_write(out_types[o], t->values[e], buf, e);
		for (e = 0; e < t->nelems; e++)
			ck_assert_msg(load_le(buf + e * sz, sz) ==
			    expect(t, out_types[o], e),
			    "%s -> %s element %u: %llx != %llx", t->name,
			    out_names[o], e,
			    (unsigned long long)load_le(buf + e * sz, sz),
			    (unsigned long long)expect(t, out_types[o], e));
		/* nothing written past the last element */
		ck_assert_uint_eq(buf[t->nelems * sz], 0xAA);
	}
}
END_TEST

START_TEST(test_vectors_slot)
{
	const struct vec *t = &vecs[_i];
	uint8_t buf[MAX_ELEMS * 8 + 8], buf2[MAX_ELEMS * 8 + 8];
	uint32_t e, sz;
	int o;

	for (o = 0; o < NOUT; o++) {
		sz = cvt_out_size(out_types[o]);
		memset(buf, 0xAA, sizeof(buf));
		memset(buf2, 0xAA, sizeof(buf2));
		cvt_slot_scalar(t->in, out_types[o], t->en, t->bytes,
		    t->nbytes, buf);
		for (e = 0; e < t->nelems; e++) {
			ck_assert_msg(load_le(buf + e * sz, sz) ==
			    expect(t, out_types[o], e),
			    "%s -> %s slot element %u", t->name,
			    out_names[o], e);
			cvt_convert_element(t->in, out_types[o], t->en,
			    t->bytes, e, buf2);
		}
		ck_assert_uint_eq(buf[t->nelems * sz], 0xAA);
		ck_assert_int_eq(memcmp(buf, buf2, sizeof(buf)), 0);
	}
}
END_TEST

START_TEST(test_int32_table)
{
	const struct ivec *t = &ivecs[_i];
	uint8_t in[4], out[8];

	ck_assert_msg(cvt_i32_to_f32_bits(t->v) == t->f32, "%d fp32 %08x",
	    t->v, cvt_i32_to_f32_bits(t->v));
	ck_assert_msg(cvt_i32_to_f16(t->v) == t->f16, "%d fp16 %04x", t->v,
	    cvt_i32_to_f16(t->v));
	ck_assert_msg(cvt_i32_to_bf16(t->v) == t->bf16, "%d bf16 %04x", t->v,
	    cvt_i32_to_bf16(t->v));
	ck_assert(cvt_i32_to_f64_bits(t->v) == f64_bits((double)t->v));

	/* and through the slot path, both byte orders */
	in[0] = (uint8_t)t->v;
	in[1] = (uint8_t)((uint32_t)t->v >> 8);
	in[2] = (uint8_t)((uint32_t)t->v >> 16);
	in[3] = (uint8_t)((uint32_t)t->v >> 24);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP32, CFG_ENDIAN_HOST,
	    in, 4, out);
	ck_assert_uint_eq(load_le(out, 4), t->f32);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST,
	    in, 4, out);
	ck_assert_uint_eq(load_le(out, 2), t->f16);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP64, CFG_ENDIAN_HOST,
	    in, 4, out);
	ck_assert(load_le(out, 8) == f64_bits((double)t->v));
	in[0] = (uint8_t)((uint32_t)t->v >> 24);
	in[1] = (uint8_t)((uint32_t)t->v >> 16);
	in[2] = (uint8_t)((uint32_t)t->v >> 8);
	in[3] = (uint8_t)t->v;
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_BF16, CFG_ENDIAN_NETWORK,
	    in, 4, out);
	ck_assert_uint_eq(load_le(out, 2), t->bf16);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK,
	    in, 4, out);
	ck_assert_uint_eq(load_le(out, 4), (uint32_t)t->v);
}
END_TEST

/* The two-roundings case, spelt out. */
START_TEST(test_bf16_two_roundings)
{
	ck_assert_uint_eq(cvt_i32_to_bf16(16842753), 0x4B80);
	/* a single direct rounding of the exact value would give 4B81 */
	ck_assert_uint_eq(ref_bf16(16842753.0), 0x4B81);
	ck_assert_uint_eq(ref_bf16(bits_f32(cvt_i32_to_f32_bits(16842753))),
	    0x4B80);
}
END_TEST

START_TEST(test_int32_network)
{
	static const uint8_t in[4] = { 0x01, 0x02, 0x03, 0x04 };
	static const uint8_t want[4] = { 0x04, 0x03, 0x02, 0x01 };
	uint8_t out[4];

	ck_assert_int_eq(cvt_read(DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK, in, 0),
	    0x01020304);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK,
	    in, 4, out);
	ck_assert_int_eq(memcmp(out, want, 4), 0);
	cvt_slot_scalar(DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32, CFG_ENDIAN_HOST,
	    in, 4, out);
	ck_assert_int_eq(memcmp(out, in, 4), 0);
}
END_TEST

START_TEST(test_sizes)
{
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_RAW, 7), 7);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT4, 7), 14);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT8, 7), 7);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT16, 7), 0);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT16, 8000), 4000);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT32, 6), 0);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT32, 8000), 2000);
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT4, 0x80000000u), 0);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_RAW), 1);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_FP16), 2);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_BF16), 2);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_FP32), 4);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_INT32), 4);
	ck_assert_uint_eq(cvt_out_size(DAQIRI_DTYPE_FP64), 8);
	/* REFERENCE.md geometry example: int4 -> fp32, 1984 bytes */
	ck_assert_uint_eq(cvt_in_elems(DAQIRI_DTYPE_INT4, 1984) *
	    cvt_out_size(DAQIRI_DTYPE_FP32), 15872);
}
END_TEST

START_TEST(test_copy_none)
{
	uint8_t in[37], out[40];
	unsigned i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 37 + 5);
	memset(out, 0xAA, sizeof(out));
	cvt_slot_scalar(DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW, CFG_ENDIAN_HOST, in,
	    sizeof(in), out);
	ck_assert_int_eq(memcmp(in, out, sizeof(in)), 0);
	ck_assert_uint_eq(out[sizeof(in)], 0xAA);
	memset(out, 0, sizeof(out));
	for (i = 0; i < sizeof(in); i++)
		cvt_convert_element(DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_FP32,
		    CFG_ENDIAN_NETWORK, in, i, out);
	ck_assert_int_eq(memcmp(in, out, sizeof(in)), 0);
}
END_TEST

START_TEST(test_fill)
{
	static const struct {
		enum daqiri_dtype out;
		uint32_t sz;
		uint64_t nan;
	} f[] = {
		{ DAQIRI_DTYPE_FP16, 2, 0x7E00 },
		{ DAQIRI_DTYPE_BF16, 2, 0x7FC0 },
		{ DAQIRI_DTYPE_FP32, 4, 0x7FC00000 },
		{ DAQIRI_DTYPE_FP64, 8, 0x7FF8000000000000ull },
	};
	uint8_t buf[72];
	unsigned i, e;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		memset(buf, 0xAA, sizeof(buf));
		cvt_fill_slot(f[i].out, DAQIRI_FILL_NAN, buf, 64);
		for (e = 0; e < 64 / f[i].sz; e++)
			ck_assert(load_le(buf + e * f[i].sz, f[i].sz) ==
			    f[i].nan);
		ck_assert_uint_eq(buf[64], 0xAA);

		memset(buf, 0xAA, sizeof(buf));
		cvt_fill_slot(f[i].out, DAQIRI_FILL_ZERO, buf, 64);
		for (e = 0; e < 64; e++)
			ck_assert_uint_eq(buf[e], 0);
		ck_assert_uint_eq(buf[64], 0xAA);

		memset(buf, 0xAA, sizeof(buf));
		cvt_fill_slot(f[i].out, DAQIRI_FILL_KEEP, buf, 64);
		for (e = 0; e < sizeof(buf); e++)
			ck_assert_uint_eq(buf[e], 0xAA);
	}
	/* NaN of the canonical patterns really is a NaN, and quiet */
	ck_assert(isnan(bits_f32(0x7FC00000)));
	/* types without a NaN fall back to zeros */
	memset(buf, 0xAA, sizeof(buf));
	cvt_fill_slot(DAQIRI_DTYPE_INT32, DAQIRI_FILL_NAN, buf, 16);
	for (e = 0; e < 16; e++)
		ck_assert_uint_eq(buf[e], 0);
}
END_TEST

/* Every int16 value: fp32 equals the C cast, fp16 and bf16 equal the
 * independent rounding, fp64 equals the C cast, through both byte orders. */
START_TEST(test_exhaustive_int16)
{
	uint8_t le[2], be[2], o1[8], o2[8];
	int32_t v;

	for (v = -32768; v <= 32767; v++) {
		EXPECT_EQ(cvt_i32_to_f32_bits(v), f32_bits((float)v));
		EXPECT_EQ(cvt_i32_to_f16(v), ref_f16((double)v));
		EXPECT_EQ(cvt_i32_to_bf16(v),
		    ref_bf16((double)(float)v));
		EXPECT_EQ(cvt_i32_to_f64_bits(v), f64_bits((double)v));
		le[0] = (uint8_t)v;
		le[1] = (uint8_t)((uint32_t)v >> 8);
		be[0] = le[1];
		be[1] = le[0];
		cvt_slot_scalar(DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP16,
		    CFG_ENDIAN_HOST, le, 2, o1);
		cvt_slot_scalar(DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP16,
		    CFG_ENDIAN_NETWORK, be, 2, o2);
		EXPECT_EQ(load_le(o1, 2), ref_f16((double)v));
		EXPECT_EQ(load_le(o2, 2), ref_f16((double)v));
		cvt_slot_scalar(DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP32,
		    CFG_ENDIAN_NETWORK, be, 2, o2);
		EXPECT_EQ(load_le(o2, 4), f32_bits((float)v));
	}
}
END_TEST

/* Every int8 and int4 byte. */
START_TEST(test_exhaustive_bytes)
{
	uint8_t b, o[4];
	unsigned i;

	for (i = 0; i < 256; i++) {
		b = (uint8_t)i;
		EXPECT_EQ(cvt_read(DAQIRI_DTYPE_INT8, CFG_ENDIAN_HOST,
		    &b, 0), (int8_t)b);
		EXPECT_EQ(cvt_read(DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST,
		    &b, 0), (int)(i >> 4) - ((i >> 4) >= 8 ? 16 : 0));
		EXPECT_EQ(cvt_read(DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST,
		    &b, 1), (int)(i & 15) - ((i & 15) >= 8 ? 16 : 0));
		cvt_slot_scalar(DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_FP16,
		    CFG_ENDIAN_HOST, &b, 1, o);
		EXPECT_EQ(load_le(o, 2), ref_f16((int8_t)b));
		cvt_slot_scalar(DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_BF16,
		    CFG_ENDIAN_HOST, &b, 1, o);
		EXPECT_EQ(load_le(o, 2),
		    ref_bf16(cvt_read(DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST, &b, 0)));
		EXPECT_EQ(load_le(o + 2, 2),
		    ref_bf16(cvt_read(DAQIRI_DTYPE_INT4, CFG_ENDIAN_HOST, &b, 1)));
	}
}
END_TEST

/* xorshift64*, fixed seed: reproducible. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* Random int32 (uniform bits, and uniform magnitudes so every exponent is
 * hit) against the C cast (gcc: RNE) and the independent half/bf16. */
START_TEST(test_random_int32)
{
	uint64_t s = 0x9E3779B97F4A7C15ull, r;
	int32_t v;
	float f;
	long i;

	for (i = 0; i < RANDOM_N; i++) {
		r = rnd(&s);
		v = (int32_t)(uint32_t)r;
		if (i & 1)	/* random width 0..31 */
			v >>= (r >> 32) & 31;
		f = (float)v;
		EXPECT_EQ(cvt_i32_to_f32_bits(v), f32_bits(f));
		EXPECT_EQ(cvt_i32_to_f16(v), ref_f16((double)f));
		EXPECT_EQ(cvt_i32_to_bf16(v), ref_bf16((double)f));
		EXPECT_EQ(cvt_i32_to_f64_bits(v), f64_bits((double)v));
	}
}
END_TEST

/* Rounding near every power of two: ties and the carry into the exponent. */
START_TEST(test_int32_ties)
{
	int p, d, sg;
	int64_t base, x;
	int32_t v;

	for (p = 1; p < 31; p++) {
		base = (int64_t)1 << p;
		for (d = -3; d <= 3; d++)
			for (sg = -1; sg <= 1; sg += 2) {
				int64_t cand[3] = { base + d, base + (base >> 1)
				    + d, 2 * base - 1 - d };
				int k;

				for (k = 0; k < 3; k++) {
					x = sg * cand[k];
					if (x > INT32_MAX || x < INT32_MIN)
						continue;
					v = (int32_t)x;
					EXPECT_EQ(
					    cvt_i32_to_f32_bits(v),
					    f32_bits((float)v));
					EXPECT_EQ(cvt_i32_to_f16(v),
					    ref_f16((double)(float)v));
				}
			}
	}
}
END_TEST

/* binary32 -> half over random floats of every class (subnormal halves,
 * overflow, inf, NaN) against the reference. */
START_TEST(test_random_f32_to_f16)
{
	uint64_t s = 12345;
	uint32_t u, ex;
	uint16_t h;
	float f;
	long i;

	for (i = 0; i < RANDOM_N; i++) {
		u = (uint32_t)rnd(&s);
		/* concentrate exponents around the half range */
		ex = 127 - 30 + (uint32_t)(rnd(&s) % 50);
		if (i % 3)
			u = (u & 0x807FFFFFu) | ex << 23;
		f = bits_f32(u);
		h = cvt_f32_bits_to_f16(u);
		if (isnan(f)) {
			EXPECT_EQ(h & 0x7C00, 0x7C00);
			EXPECT_EQ(h & 0x200, 0x200);
			continue;
		}
		EXPECT_EQ(h, ref_f16((double)f));
		EXPECT_EQ(cvt_f32_bits_to_bf16(u), ref_bf16((double)f));
	}
	EXPECT_EQ(cvt_f32_bits_to_f16(0x7F800000), 0x7C00);
	EXPECT_EQ(cvt_f32_bits_to_f16(0xFF800000), 0xFC00);
	EXPECT_EQ(cvt_f32_bits_to_f16(0x33800000), 0x0001); /* 2^-24 */
	EXPECT_EQ(cvt_f32_bits_to_f16(0x33000000), 0x0000); /* tie */
	EXPECT_EQ(cvt_f32_bits_to_bf16(0x7FC00000), 0x7FC0);
	EXPECT_EQ(cvt_f32_bits_to_bf16(0x7F800001) & 0x7FC0, 0x7FC0);
	EXPECT_EQ(cvt_f32_bits_to_bf16(0x7F7FFFFF), 0x7F80);
}
END_TEST

/* A whole 8000-byte payload of each input type: slot == element loop. */
START_TEST(test_slot_random_payload)
{
	enum daqiri_dtype ins[4] = { DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8,
	    DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32 };
	static uint8_t in[8000], a[16000 * 8], b[16000 * 8];
	uint64_t s = 7;
	uint32_t n, e, sz;
	int i, o, en;

	for (e = 0; e < sizeof(in); e++)
		in[e] = (uint8_t)rnd(&s);
	for (i = 0; i < 4; i++)
		for (o = 0; o < NOUT; o++)
			for (en = 0; en < 2; en++) {
				n = cvt_in_elems(ins[i], sizeof(in));
				sz = cvt_out_size(out_types[o]);
				cvt_slot_scalar(ins[i], out_types[o],
				    (enum cfg_endian)en, in, sizeof(in), a);
				for (e = 0; e < n; e++)
					cvt_write(out_types[o],
					    cvt_read(ins[i], (enum cfg_endian)en,
					    in, e), b, e);
				ck_assert_int_eq(memcmp(a, b, n * sz), 0);
			}
}
END_TEST

static Suite *
convert_suite(void)
{
	Suite *s = suite_create("convert");
	TCase *tc;

	tc = tcase_create("vectors");
	tcase_add_loop_test(tc, test_vectors_read, 0, NVECS);
	tcase_add_loop_test(tc, test_vectors_write, 0, NVECS);
	tcase_add_loop_test(tc, test_vectors_slot, 0, NVECS);
	tcase_add_loop_test(tc, test_int32_table, 0, NIVECS);
	tcase_add_test(tc, test_bf16_two_roundings);
	tcase_add_test(tc, test_int32_network);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_copy_none);
	tcase_add_test(tc, test_fill);
	suite_add_tcase(s, tc);

	tc = tcase_create("crosscheck");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exhaustive_int16);
	tcase_add_test(tc, test_exhaustive_bytes);
	tcase_add_test(tc, test_random_int32);
	tcase_add_test(tc, test_int32_ties);
	tcase_add_test(tc, test_random_f32_to_f16);
	tcase_add_test(tc, test_slot_random_payload);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(convert_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail ? EXIT_FAILURE : EXIT_SUCCESS;
}
