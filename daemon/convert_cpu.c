/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vectorised payload conversion for the CPU reorder backend. Each kernel
 * converts blocks of 32 elements with AVX2 (+F16C) or SSE4.1, chosen at
 * run time with __builtin_cpu_supports, so one build runs on any x86-64;
 * the ragged head and tail go through the scalar element code of
 * convert.h, whose results every kernel reproduces bit for bit.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "convert.h"
#include "convert_cpu.h"

/* CVT_NO_SIMD builds the portable scalar-only variant (as on non-x86). */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(CVT_NO_SIMD)
#define CVT_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#define CVT_BLK		32	/* elements per kernel block */
#define CVT_ALIGN_MAX	32	/* widest non-temporal store */

/* Kernel input and output kinds (endianness folded into the input). */
enum cvt_kin { KI_I4, KI_I8, KI_I16L, KI_I16B, KI_I32L, KI_I32B, KI_MAX };
enum cvt_kout { KO_F16, KO_BF16, KO_F32, KO_F64, KO_I32, KO_MAX };

/* Convert nblk blocks of CVT_BLK elements; nt: streaming stores, dst then
 * aligned to the implementation's alignment. */
typedef void (*cvt_kernel)(const uint8_t *src, uint8_t *dst, size_t nblk,
			   int nt);

struct cvt_impl {
	const char *name;
	size_t align;			/* of non-temporal stores; 0 = none */
	/* streaming copy / zero of n bytes (a multiple of align) to an
	 * aligned dst */
	void (*copy_nt)(uint8_t *dst, const uint8_t *src, size_t n);
	void (*zero_nt)(uint8_t *dst, size_t n);
	cvt_kernel k[KI_MAX][KO_MAX];
};

static uint64_t cvt_nt_threshold = CVT_NT_THRESHOLD_DEFAULT;

static int
kin_of(enum daqiri_dtype in, enum cfg_endian en)
{
	switch (in) {
	case DAQIRI_DTYPE_INT4:
		return KI_I4;
	case DAQIRI_DTYPE_INT8:
		return KI_I8;
	case DAQIRI_DTYPE_INT16:
		return en == CFG_ENDIAN_NETWORK ? KI_I16B : KI_I16L;
	case DAQIRI_DTYPE_INT32:
		return en == CFG_ENDIAN_NETWORK ? KI_I32B : KI_I32L;
	default:
		return -1;
	}
}

static int
kout_of(enum daqiri_dtype out)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		return KO_F16;
	case DAQIRI_DTYPE_BF16:
		return KO_BF16;
	case DAQIRI_DTYPE_FP32:
		return KO_F32;
	case DAQIRI_DTYPE_FP64:
		return KO_F64;
	case DAQIRI_DTYPE_INT32:
		return KO_I32;
	default:
		return -1;
	}
}

/* Input bytes of e elements (e even for int4). */
static size_t
in_offset(enum daqiri_dtype in, size_t e)
{
	switch (in) {
	case DAQIRI_DTYPE_INT4:
		return e / 2;
	case DAQIRI_DTYPE_INT16:
		return e * 2;
	case DAQIRI_DTYPE_INT32:
		return e * 4;
	default:
		return e;
	}
}

#ifdef CVT_X86

/* Byte-swap masks for big-endian 16- and 32-bit elements. */
#define BSWAP16_MASK 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14
#define BSWAP32_MASK 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12

/* int4 nibble -> fp16 / bf16 bits, split in low and high bytes for
 * pshufb (nibbles 8..15 are -8..-1); checked against convert.h by the
 * tests through every byte value. */
#define T16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) \
	{ a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p }
static const uint16_t cvt_i4_f16[16] = T16(0x0000, 0x3C00, 0x4000, 0x4200,
    0x4400, 0x4500, 0x4600, 0x4700, 0xC800, 0xC700, 0xC600, 0xC500, 0xC400,
    0xC200, 0xC000, 0xBC00);
static const uint16_t cvt_i4_bf16[16] = T16(0x0000, 0x3F80, 0x4000, 0x4040,
    0x4080, 0x40A0, 0x40C0, 0x40E0, 0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080,
    0xC040, 0xC000, 0xBF80);

/* ---- AVX2 + F16C ---- */

#define A2_INL static inline __attribute__((target("avx2,f16c"), always_inline))
#define A2_FN static __attribute__((target("avx2,f16c")))

A2_INL void
a2_st(uint8_t *d, __m256i v, int nt)
{
	if (nt)
		_mm256_stream_si256((__m256i *)(void *)d, v);
	else
		_mm256_storeu_si256((__m256i *)(void *)d, v);
}

/* 16 packed int4 bytes -> 32 sign-extended int8 (element order). */
A2_INL void
a2_nibbles(const uint8_t *s, __m128i *a, __m128i *b)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i m = _mm_set1_epi8(0x0F);
	__m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
	__m128i lo = _mm_and_si128(x, m);

	*a = _mm_unpacklo_epi8(hi, lo);
	*b = _mm_unpackhi_epi8(hi, lo);
}

/* SSE2 only, so both ISAs inline it. */
static inline __attribute__((always_inline)) __m128i
sx4(__m128i n)
{
	__m128i e8 = _mm_set1_epi8(8);

	return _mm_sub_epi8(_mm_xor_si128(n, e8), e8);
}

/* One block of CVT_BLK elements as four vectors of 8 int32. */
A2_INL void
a2_load(int ki, const uint8_t *s, __m256i v[4])
{
	__m128i a, b, x;
	__m256i y;
	int i;

	switch (ki) {
	case KI_I4:
		a2_nibbles(s, &a, &b);
		a = sx4(a);
		b = sx4(b);
		goto widen8;
	case KI_I8:
		a = _mm_loadu_si128((const __m128i *)(const void *)s);
		b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
	widen8:
		v[0] = _mm256_cvtepi8_epi32(a);
		v[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8));
		v[2] = _mm256_cvtepi8_epi32(b);
		v[3] = _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8));
		break;
	case KI_I16L:
	case KI_I16B:
		for (i = 0; i < 4; i++) {
			x = _mm_loadu_si128((const __m128i *)(const void *)
			    (s + 16 * i));
			if (ki == KI_I16B)
				x = _mm_shuffle_epi8(x,
				    _mm_setr_epi8(BSWAP16_MASK));
			v[i] = _mm256_cvtepi16_epi32(x);
		}
		break;
	default:
		for (i = 0; i < 4; i++) {
			y = _mm256_loadu_si256((const __m256i *)(const void *)
			    (s + 32 * i));
			if (ki == KI_I32B)
				y = _mm256_shuffle_epi8(y, _mm256_setr_epi8(
				    BSWAP32_MASK, BSWAP32_MASK));
			v[i] = y;
		}
		break;
	}
}

/* binary32 bits -> bfloat16 bits in the low half, RNE (finite input). */
A2_INL __m256i
a2_bf16(__m256i f)
{
	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(f, 16),
	    _mm256_set1_epi32(1));

	return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(f,
	    _mm256_set1_epi32(0x7FFF)), odd), 16);
}

A2_INL void
a2_store(int ko, uint8_t *d, const __m256i v[4], int nt)
{
	__m128i h0, h1;
	__m256i f0, f1;
	int i;

	switch (ko) {
	case KO_F16:
		for (i = 0; i < 2; i++) {
			/* exact int -> fp32 (MXCSR: RNE), then RNE to half */
			h0 = _mm256_cvtps_ph(_mm256_cvtepi32_ps(v[2 * i]),
			    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			h1 = _mm256_cvtps_ph(_mm256_cvtepi32_ps(v[2 * i + 1]),
			    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			a2_st(d + 32 * i, _mm256_set_m128i(h1, h0), nt);
		}
		break;
	case KO_BF16:
		for (i = 0; i < 2; i++) {
			f0 = a2_bf16(_mm256_castps_si256(
			    _mm256_cvtepi32_ps(v[2 * i])));
			f1 = a2_bf16(_mm256_castps_si256(
			    _mm256_cvtepi32_ps(v[2 * i + 1])));
			a2_st(d + 32 * i, _mm256_permute4x64_epi64(
			    _mm256_packus_epi32(f0, f1), 0xD8), nt);
		}
		break;
	case KO_F32:
		for (i = 0; i < 4; i++)
			a2_st(d + 32 * i, _mm256_castps_si256(
			    _mm256_cvtepi32_ps(v[i])), nt);
		break;
	case KO_F64:
		for (i = 0; i < 4; i++) {
			a2_st(d + 64 * i, _mm256_castpd_si256(
			    _mm256_cvtepi32_pd(_mm256_castsi256_si128(v[i]))),
			    nt);
			a2_st(d + 64 * i + 32, _mm256_castpd_si256(
			    _mm256_cvtepi32_pd(_mm256_extracti128_si256(v[i],
			    1))), nt);
		}
		break;
	default:
		for (i = 0; i < 4; i++)
			a2_st(d + 32 * i, v[i], nt);
		break;
	}
}

static const size_t cvt_in_blk[KI_MAX] = {
	[KI_I4] = 16, [KI_I8] = 32, [KI_I16L] = 64, [KI_I16B] = 64,
	[KI_I32L] = 128, [KI_I32B] = 128,
};
static const size_t cvt_out_blk[KO_MAX] = {
	[KO_F16] = 64, [KO_BF16] = 64, [KO_F32] = 128, [KO_F64] = 256,
	[KO_I32] = 128,
};

A2_INL void
a2_generic(const uint8_t *s, uint8_t *d, size_t nblk, int nt, int ki, int ko)
{
	__m256i v[4];

	for (; nblk > 0; nblk--) {
		a2_load(ki, s, v);
		a2_store(ko, d, v, nt);
		s += cvt_in_blk[ki];
		d += cvt_out_blk[ko];
	}
}

/* int4 -> a 16-bit type by table: 16 input bytes, 64 output bytes. */
A2_INL void
a2_i4_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt,
	  const uint16_t *tab)
{
	__m128i t = _mm_loadu_si128((const __m128i *)(const void *)tab);
	__m128i t2 = _mm_loadu_si128((const __m128i *)(const void *)(tab + 8));
	/* low and high bytes of the 16 entries */
	__m128i sel = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9,
	    11, 13, 15);
	__m128i p0 = _mm_shuffle_epi8(t, sel), p1 = _mm_shuffle_epi8(t2, sel);
	__m256i tl = _mm256_broadcastsi128_si256(_mm_unpacklo_epi64(p0, p1));
	__m256i th = _mm256_broadcastsi128_si256(_mm_unpackhi_epi64(p0, p1));
	__m256i n, l, h, w0, w1;
	__m128i a, b;

	for (; nblk > 0; nblk--) {
		a2_nibbles(s, &a, &b);
		n = _mm256_set_m128i(b, a);
		l = _mm256_shuffle_epi8(tl, n);
		h = _mm256_shuffle_epi8(th, n);
		w0 = _mm256_unpacklo_epi8(l, h);	/* e0-7 | e16-23 */
		w1 = _mm256_unpackhi_epi8(l, h);	/* e8-15 | e24-31 */
		a2_st(d, _mm256_permute2x128_si256(w0, w1, 0x20), nt);
		a2_st(d + 32, _mm256_permute2x128_si256(w0, w1, 0x31), nt);
		s += 16;
		d += 64;
	}
}

A2_FN void
a2_i4_f16_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt)
{
	if (nt)
		a2_i4_tab(s, d, nblk, 1, cvt_i4_f16);
	else
		a2_i4_tab(s, d, nblk, 0, cvt_i4_f16);
}

A2_FN void
a2_i4_bf16_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt)
{
	if (nt)
		a2_i4_tab(s, d, nblk, 1, cvt_i4_bf16);
	else
		a2_i4_tab(s, d, nblk, 0, cvt_i4_bf16);
}

A2_FN void
a2_copy_nt(uint8_t *d, const uint8_t *s, size_t n)
{
	__m256i a, b, c, e;

	for (; n >= 128; n -= 128, s += 128, d += 128) {
		a = _mm256_loadu_si256((const __m256i *)(const void *)s);
		b = _mm256_loadu_si256((const __m256i *)(const void *)(s + 32));
		c = _mm256_loadu_si256((const __m256i *)(const void *)(s + 64));
		e = _mm256_loadu_si256((const __m256i *)(const void *)(s + 96));
		_mm256_stream_si256((__m256i *)(void *)d, a);
		_mm256_stream_si256((__m256i *)(void *)(d + 32), b);
		_mm256_stream_si256((__m256i *)(void *)(d + 64), c);
		_mm256_stream_si256((__m256i *)(void *)(d + 96), e);
	}
	for (; n >= 32; n -= 32, s += 32, d += 32)
		_mm256_stream_si256((__m256i *)(void *)d,
		    _mm256_loadu_si256((const __m256i *)(const void *)s));
}

A2_FN void
a2_zero_nt(uint8_t *d, size_t n)
{
	__m256i z = _mm256_setzero_si256();

	for (; n >= 32; n -= 32, d += 32)
		_mm256_stream_si256((__m256i *)(void *)d, z);
}

/* ---- SSE4.1 ---- */

#define S4_INL static inline __attribute__((target("sse4.1"), always_inline))
#define S4_FN static __attribute__((target("sse4.1")))

S4_INL void
s4_st(uint8_t *d, __m128i v, int nt)
{
	if (nt)
		_mm_stream_si128((__m128i *)(void *)d, v);
	else
		_mm_storeu_si128((__m128i *)(void *)d, v);
}

/* One block as eight vectors of 4 int32. */
S4_INL void
s4_load(int ki, const uint8_t *s, __m128i v[8])
{
	__m128i a, b, x, m, hi, lo;
	int i;

	switch (ki) {
	case KI_I4:
		x = _mm_loadu_si128((const __m128i *)(const void *)s);
		m = _mm_set1_epi8(0x0F);
		hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
		lo = _mm_and_si128(x, m);
		a = sx4(_mm_unpacklo_epi8(hi, lo));
		b = sx4(_mm_unpackhi_epi8(hi, lo));
		goto widen8;
	case KI_I8:
		a = _mm_loadu_si128((const __m128i *)(const void *)s);
		b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
	widen8:
		v[0] = _mm_cvtepi8_epi32(a);
		v[1] = _mm_cvtepi8_epi32(_mm_srli_si128(a, 4));
		v[2] = _mm_cvtepi8_epi32(_mm_srli_si128(a, 8));
		v[3] = _mm_cvtepi8_epi32(_mm_srli_si128(a, 12));
		v[4] = _mm_cvtepi8_epi32(b);
		v[5] = _mm_cvtepi8_epi32(_mm_srli_si128(b, 4));
		v[6] = _mm_cvtepi8_epi32(_mm_srli_si128(b, 8));
		v[7] = _mm_cvtepi8_epi32(_mm_srli_si128(b, 12));
		break;
	case KI_I16L:
	case KI_I16B:
		for (i = 0; i < 4; i++) {
			x = _mm_loadu_si128((const __m128i *)(const void *)
			    (s + 16 * i));
			if (ki == KI_I16B)
				x = _mm_shuffle_epi8(x,
				    _mm_setr_epi8(BSWAP16_MASK));
			v[2 * i] = _mm_cvtepi16_epi32(x);
			v[2 * i + 1] = _mm_cvtepi16_epi32(_mm_srli_si128(x, 8));
		}
		break;
	default:
		for (i = 0; i < 8; i++) {
			x = _mm_loadu_si128((const __m128i *)(const void *)
			    (s + 16 * i));
			if (ki == KI_I32B)
				x = _mm_shuffle_epi8(x,
				    _mm_setr_epi8(BSWAP32_MASK));
			v[i] = x;
		}
		break;
	}
}

/* int32 -> fp32 (MXCSR: RNE) -> fp16 bits (RNE) in the low half, in
 * integer arithmetic: a nonzero int is a normal half or overflows. */
S4_INL __m128i
s4_f16(__m128i v)
{
	__m128i f = _mm_castps_si128(_mm_cvtepi32_ps(v));
	__m128i a = _mm_and_si128(f, _mm_set1_epi32(0x7FFFFFFF));
	__m128i sign = _mm_and_si128(_mm_srli_epi32(f, 16),
	    _mm_set1_epi32(0x8000));
	__m128i odd = _mm_and_si128(_mm_srli_epi32(a, 13), _mm_set1_epi32(1));
	__m128i h = _mm_add_epi32(_mm_sub_epi32(a, _mm_set1_epi32(0x38000000)),
	    _mm_add_epi32(_mm_set1_epi32(0xFFF), odd));

	h = _mm_min_epu32(_mm_srli_epi32(h, 13), _mm_set1_epi32(0x7C00));
	h = _mm_andnot_si128(_mm_cmpeq_epi32(a, _mm_setzero_si128()), h);
	return _mm_or_si128(h, sign);
}

S4_INL __m128i
s4_bf16(__m128i v)
{
	__m128i f = _mm_castps_si128(_mm_cvtepi32_ps(v));
	__m128i odd = _mm_and_si128(_mm_srli_epi32(f, 16), _mm_set1_epi32(1));

	return _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(f,
	    _mm_set1_epi32(0x7FFF)), odd), 16);
}

S4_INL void
s4_store(int ko, uint8_t *d, const __m128i v[8], int nt)
{
	int i;

	switch (ko) {
	case KO_F16:
		for (i = 0; i < 4; i++)
			s4_st(d + 16 * i, _mm_packus_epi32(s4_f16(v[2 * i]),
			    s4_f16(v[2 * i + 1])), nt);
		break;
	case KO_BF16:
		for (i = 0; i < 4; i++)
			s4_st(d + 16 * i, _mm_packus_epi32(s4_bf16(v[2 * i]),
			    s4_bf16(v[2 * i + 1])), nt);
		break;
	case KO_F32:
		for (i = 0; i < 8; i++)
			s4_st(d + 16 * i,
			    _mm_castps_si128(_mm_cvtepi32_ps(v[i])), nt);
		break;
	case KO_F64:
		for (i = 0; i < 8; i++) {
			s4_st(d + 32 * i, _mm_castpd_si128(
			    _mm_cvtepi32_pd(v[i])), nt);
			s4_st(d + 32 * i + 16, _mm_castpd_si128(
			    _mm_cvtepi32_pd(_mm_srli_si128(v[i], 8))), nt);
		}
		break;
	default:
		for (i = 0; i < 8; i++)
			s4_st(d + 16 * i, v[i], nt);
		break;
	}
}

S4_INL void
s4_generic(const uint8_t *s, uint8_t *d, size_t nblk, int nt, int ki, int ko)
{
	__m128i v[8];

	for (; nblk > 0; nblk--) {
		s4_load(ki, s, v);
		s4_store(ko, d, v, nt);
		s += cvt_in_blk[ki];
		d += cvt_out_blk[ko];
	}
}

S4_INL void
s4_i4_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt,
	  const uint16_t *tab)
{
	__m128i t = _mm_loadu_si128((const __m128i *)(const void *)tab);
	__m128i t2 = _mm_loadu_si128((const __m128i *)(const void *)(tab + 8));
	__m128i sel = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9,
	    11, 13, 15);
	__m128i p0 = _mm_shuffle_epi8(t, sel), p1 = _mm_shuffle_epi8(t2, sel);
	__m128i tl = _mm_unpacklo_epi64(p0, p1);
	__m128i th = _mm_unpackhi_epi64(p0, p1);
	__m128i x, hi, lo, n, l, h, m = _mm_set1_epi8(0x0F);
	int j;

	for (; nblk > 0; nblk--) {
		x = _mm_loadu_si128((const __m128i *)(const void *)s);
		hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
		lo = _mm_and_si128(x, m);
		for (j = 0; j < 2; j++) {
			n = j ? _mm_unpackhi_epi8(hi, lo) :
			    _mm_unpacklo_epi8(hi, lo);
			l = _mm_shuffle_epi8(tl, n);
			h = _mm_shuffle_epi8(th, n);
			s4_st(d + 32 * j, _mm_unpacklo_epi8(l, h), nt);
			s4_st(d + 32 * j + 16, _mm_unpackhi_epi8(l, h), nt);
		}
		s += 16;
		d += 64;
	}
}

S4_FN void
s4_i4_f16_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt)
{
	if (nt)
		s4_i4_tab(s, d, nblk, 1, cvt_i4_f16);
	else
		s4_i4_tab(s, d, nblk, 0, cvt_i4_f16);
}

S4_FN void
s4_i4_bf16_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt)
{
	if (nt)
		s4_i4_tab(s, d, nblk, 1, cvt_i4_bf16);
	else
		s4_i4_tab(s, d, nblk, 0, cvt_i4_bf16);
}

S4_FN void
s4_copy_nt(uint8_t *d, const uint8_t *s, size_t n)
{
	__m128i a, b, c, e;

	for (; n >= 64; n -= 64, s += 64, d += 64) {
		a = _mm_loadu_si128((const __m128i *)(const void *)s);
		b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
		c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
		e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
		_mm_stream_si128((__m128i *)(void *)d, a);
		_mm_stream_si128((__m128i *)(void *)(d + 16), b);
		_mm_stream_si128((__m128i *)(void *)(d + 32), c);
		_mm_stream_si128((__m128i *)(void *)(d + 48), e);
	}
	for (; n >= 16; n -= 16, s += 16, d += 16)
		_mm_stream_si128((__m128i *)(void *)d,
		    _mm_loadu_si128((const __m128i *)(const void *)s));
}

S4_FN void
s4_zero_nt(uint8_t *d, size_t n)
{
	__m128i z = _mm_setzero_si128();

	for (; n >= 16; n -= 16, d += 16)
		_mm_stream_si128((__m128i *)(void *)d, z);
}

/* One kernel per (input, output) pair and ISA, with nt folded in. */
#define CVT_KERNEL(isa, FN, ki, ko)					\
	FN void isa##_##ki##_##ko(const uint8_t *s, uint8_t *d,		\
	    size_t nblk, int nt)					\
	{								\
		if (nt)							\
			isa##_generic(s, d, nblk, 1, ki, ko);		\
		else							\
			isa##_generic(s, d, nblk, 0, ki, ko);		\
	}
#define CVT_KERNELS_OUT(isa, FN, ki)					\
	CVT_KERNEL(isa, FN, ki, KO_F16)					\
	CVT_KERNEL(isa, FN, ki, KO_BF16)				\
	CVT_KERNEL(isa, FN, ki, KO_F32)					\
	CVT_KERNEL(isa, FN, ki, KO_F64)					\
	CVT_KERNEL(isa, FN, ki, KO_I32)
/* int4 -> fp16 / bf16 use the table kernels instead */
#define CVT_KERNELS(isa, FN)						\
	CVT_KERNEL(isa, FN, KI_I4, KO_F32)				\
	CVT_KERNEL(isa, FN, KI_I4, KO_F64)				\
	CVT_KERNEL(isa, FN, KI_I4, KO_I32)				\
	CVT_KERNELS_OUT(isa, FN, KI_I8)					\
	CVT_KERNELS_OUT(isa, FN, KI_I16L)				\
	CVT_KERNELS_OUT(isa, FN, KI_I16B)				\
	CVT_KERNELS_OUT(isa, FN, KI_I32L)				\
	CVT_KERNELS_OUT(isa, FN, KI_I32B)

CVT_KERNELS(a2, A2_FN)
CVT_KERNELS(s4, S4_FN)

#define CVT_ROW(isa, ki) [ki] = { [KO_F16] = isa##_##ki##_KO_F16,	\
	[KO_BF16] = isa##_##ki##_KO_BF16, [KO_F32] = isa##_##ki##_KO_F32, \
	[KO_F64] = isa##_##ki##_KO_F64, [KO_I32] = isa##_##ki##_KO_I32 }
#define CVT_ROW_I4(isa) [KI_I4] = { [KO_F16] = isa##_i4_f16_tab,	\
	[KO_BF16] = isa##_i4_bf16_tab, [KO_F32] = isa##_KI_I4_KO_F32,	\
	[KO_F64] = isa##_KI_I4_KO_F64, [KO_I32] = isa##_KI_I4_KO_I32 }
#define CVT_TABLE(isa) { CVT_ROW_I4(isa), CVT_ROW(isa, KI_I8),		\
	CVT_ROW(isa, KI_I16L), CVT_ROW(isa, KI_I16B),			\
	CVT_ROW(isa, KI_I32L), CVT_ROW(isa, KI_I32B) }

static const struct cvt_impl cvt_impl_avx2 = {
	.name = "avx2",
	.align = 32,
	.copy_nt = a2_copy_nt,
	.zero_nt = a2_zero_nt,
	.k = CVT_TABLE(a2),
};

static const struct cvt_impl cvt_impl_sse41 = {
	.name = "sse4.1",
	.align = 16,
	.copy_nt = s4_copy_nt,
	.zero_nt = s4_zero_nt,
	.k = CVT_TABLE(s4),
};

#endif /* CVT_X86 */

static const struct cvt_impl cvt_impl_scalar = {
	.name = "scalar",
	.align = 0,
};

const char *const cvt_impl_names[] = { "avx2", "sse4.1", "scalar", NULL };

static const struct cvt_impl *cvt_cur;

static bool
impl_supported(const struct cvt_impl *im)
{
#ifdef CVT_X86
	__builtin_cpu_init();
	unsigned a, b, c, d;

	if (im == &cvt_impl_avx2)
		/* F16C by cpuid: not every compiler's builtin knows it (the
		 * builtin's avx2 also checks that the OS saves ymm state) */
		return __builtin_cpu_supports("avx2") &&
		    __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
	if (im == &cvt_impl_sse41)
		return __builtin_cpu_supports("sse4.1");
#endif
	return im == &cvt_impl_scalar;
}

static const struct cvt_impl *
impl_best(void)
{
#ifdef CVT_X86
	if (impl_supported(&cvt_impl_avx2))
		return &cvt_impl_avx2;
	if (impl_supported(&cvt_impl_sse41))
		return &cvt_impl_sse41;
#endif
	return &cvt_impl_scalar;
}

static const struct cvt_impl *
impl_get(void)
{
	const struct cvt_impl *im = __atomic_load_n(&cvt_cur, __ATOMIC_ACQUIRE);

	if (im == NULL) {
		im = impl_best();
		__atomic_store_n(&cvt_cur, im, __ATOMIC_RELEASE);
	}
	return im;
}

int
cvt_force_impl(const char *name)
{
	const struct cvt_impl *im = NULL;

	impl_get();
	if (name == NULL || strcmp(name, "auto") == 0)
		im = impl_best();
#ifdef CVT_X86
	else if (strcmp(name, "avx2") == 0)
		im = &cvt_impl_avx2;
	else if (strcmp(name, "sse4.1") == 0)
		im = &cvt_impl_sse41;
#endif
	else if (strcmp(name, "scalar") == 0)
		im = &cvt_impl_scalar;
	if (im == NULL || !impl_supported(im))
		return -1;
	__atomic_store_n(&cvt_cur, im, __ATOMIC_RELEASE);
	return 0;
}

const char *
cvt_impl_name(void)
{
	return impl_get()->name;
}

void
cvt_set_nt_threshold(uint64_t bytes)
{
	cvt_nt_threshold = bytes;
}

void
cvt_fence(void)
{
#ifdef CVT_X86
	_mm_sfence();
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* Bytes to write before dst reaches align (align a power of two). */
static size_t
head_bytes(const uint8_t *dst, size_t align)
{
	return (align - ((uintptr_t)dst & (align - 1))) & (align - 1);
}

static void
copy_fast(const struct cvt_impl *im, uint8_t *dst, const uint8_t *src,
	  size_t n)
{
	size_t h, bulk;

	if (im->copy_nt == NULL || n < cvt_nt_threshold ||
	    n < 2 * im->align) {
		memcpy(dst, src, n);
		return;
	}
	h = head_bytes(dst, im->align);
	memcpy(dst, src, h);
	bulk = (n - h) & ~(im->align - 1);
	im->copy_nt(dst + h, src + h, bulk);
	memcpy(dst + h + bulk, src + h + bulk, n - h - bulk);
}

void
cvt_slot_fast(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
	      const uint8_t *src, uint32_t nbytes, uint8_t *dst)
{
	const struct cvt_impl *im = impl_get();
	int ki = kin_of(in, en), ko = kout_of(out);
	size_t n, h = 0, e, nblk, osz, unit, mis;
	cvt_kernel k;
	int nt;

	if (in == DAQIRI_DTYPE_RAW) {
		copy_fast(im, dst, src, nbytes);
		return;
	}
	if (ki < 0 || ko < 0 || (k = im->k[ki][ko]) == NULL) {
		cvt_slot_scalar(in, out, en, src, nbytes, dst);
		return;
	}
	n = cvt_in_elems(in, nbytes);
	osz = cvt_out_size(out);
	nt = (uint64_t)n * osz >= cvt_nt_threshold;
	if (nt) {
		/* stream only from an aligned element (an int4 pair) on;
		 * a dst not on an element boundary stays unstreamed */
		unit = in == DAQIRI_DTYPE_INT4 ? 2 : 1;
		mis = (uintptr_t)dst & (im->align - 1);
		if (mis % (osz * unit) != 0)
			nt = 0;
		else
			h = ((im->align - mis) & (im->align - 1)) / osz;
	}
	if (h > n)
		h = n;
	for (e = 0; e < h; e++)
		cvt_convert_element(in, out, en, src, (uint32_t)e, dst);
	nblk = (n - h) / CVT_BLK;
	if (nblk > 0)
		k(src + in_offset(in, h), dst + h * osz, nblk, nt);
	for (e = h + nblk * CVT_BLK; e < n; e++)
		cvt_convert_element(in, out, en, src, (uint32_t)e, dst);
}

void
cvt_fill_fast(enum daqiri_dtype out, enum daqiri_fill fill, uint8_t *dst,
	      uint64_t nbytes)
{
	const struct cvt_impl *im = impl_get();
	uint8_t pat[64];
	uint64_t i, h, bulk;

	if (fill == DAQIRI_FILL_KEEP)
		return;
	if (fill == DAQIRI_FILL_ZERO) {
		if (im->zero_nt == NULL || nbytes < cvt_nt_threshold ||
		    nbytes < 2 * im->align) {
			memset(dst, 0, nbytes);
			return;
		}
		h = head_bytes(dst, im->align);
		memset(dst, 0, h);
		bulk = (nbytes - h) & ~(uint64_t)(im->align - 1);
		im->zero_nt(dst + h, bulk);
		memset(dst + h + bulk, 0, nbytes - h - bulk);
		return;
	}
	/* every element size divides 64: the pattern repeats in place */
	cvt_fill_slot(out, fill, pat, sizeof(pat));
	for (i = 0; i + sizeof(pat) <= nbytes; i += sizeof(pat))
		memcpy(dst + i, pat, sizeof(pat));
	memcpy(dst + i, pat, nbytes - i);
}
