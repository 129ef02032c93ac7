/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vectorised payload conversion for the CPU reorder backend. Each kernel
 * converts blocks of 32 elements: on x86-64 with AVX2 (+F16C) or SSE4.1,
 * chosen at run time with __builtin_cpu_supports; on aarch64 with ASIMD
 * (NEON, always there), using the FP16 and BF16 instructions where
 * getauxval(AT_HWCAP / AT_HWCAP2) advertises them. One build runs on any
 * CPU of its architecture; the ragged head and tail go through the scalar
 * element code of convert.h, whose results every kernel reproduces bit
 * for bit.
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
#if defined(__aarch64__) && !defined(CVT_NO_SIMD)
#define CVT_NEON 1
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
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

static const size_t cvt_in_blk[KI_MAX] = {
	[KI_I4] = 16, [KI_I8] = 32, [KI_I16L] = 64, [KI_I16B] = 64,
	[KI_I32L] = 128, [KI_I32B] = 128,
};
static const size_t cvt_out_blk[KO_MAX] = {
	[KO_F16] = 64, [KO_BF16] = 64, [KO_F32] = 128, [KO_F64] = 256,
	[KO_I32] = 128,
};

#if defined(CVT_X86) || defined(CVT_NEON)
/* int4 nibble -> fp16 / bf16 bits, split in low and high bytes for a
 * byte shuffle (pshufb, tbl; nibbles 8..15 are -8..-1); checked against
 * convert.h by the tests through every byte value. */
#define T16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) \
	{ a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p }
static const uint16_t cvt_i4_f16[16] = T16(0x0000, 0x3C00, 0x4000, 0x4200,
    0x4400, 0x4500, 0x4600, 0x4700, 0xC800, 0xC700, 0xC600, 0xC500, 0xC400,
    0xC200, 0xC000, 0xBC00);
static const uint16_t cvt_i4_bf16[16] = T16(0x0000, 0x3F80, 0x4000, 0x4040,
    0x4080, 0x40A0, 0x40C0, 0x40E0, 0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080,
    0xC040, 0xC000, 0xBF80);
#endif

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

/* int4 -> fp16 / bf16 by the ISA's table kernel isa_i4_tab(). */
#define CVT_I4_TAB(isa, FN, out)					\
	FN void isa##_i4_##out##_tab(const uint8_t *s, uint8_t *d,	\
	    size_t nblk, int nt)					\
	{								\
		if (nt)							\
			isa##_i4_tab(s, d, nblk, 1, cvt_i4_##out);	\
		else							\
			isa##_i4_tab(s, d, nblk, 0, cvt_i4_##out);	\
	}
#define CVT_I4_TABS(isa, FN) CVT_I4_TAB(isa, FN, f16) CVT_I4_TAB(isa, FN, bf16)

#define CVT_ROW(isa, ki) [ki] = { [KO_F16] = isa##_##ki##_KO_F16,	\
	[KO_BF16] = isa##_##ki##_KO_BF16, [KO_F32] = isa##_##ki##_KO_F32, \
	[KO_F64] = isa##_##ki##_KO_F64, [KO_I32] = isa##_##ki##_KO_I32 }
#define CVT_ROW_I4(isa) [KI_I4] = { [KO_F16] = isa##_i4_f16_tab,	\
	[KO_BF16] = isa##_i4_bf16_tab, [KO_F32] = isa##_KI_I4_KO_F32,	\
	[KO_F64] = isa##_KI_I4_KO_F64, [KO_I32] = isa##_KI_I4_KO_I32 }
#define CVT_TABLE(isa) { CVT_ROW_I4(isa), CVT_ROW(isa, KI_I8),		\
	CVT_ROW(isa, KI_I16L), CVT_ROW(isa, KI_I16B),			\
	CVT_ROW(isa, KI_I32L), CVT_ROW(isa, KI_I32B) }

#ifdef CVT_X86

/* Byte-swap masks for big-endian 16- and 32-bit elements. */
#define BSWAP16_MASK 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14
#define BSWAP32_MASK 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12

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

CVT_I4_TABS(a2, A2_FN)

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

CVT_I4_TABS(s4, S4_FN)

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

CVT_KERNELS(a2, A2_FN)
CVT_KERNELS(s4, S4_FN)

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

#ifdef CVT_NEON

/* ---- aarch64: ASIMD, with FP16 and BF16 conversions where present ---- */

#define NE_INL static inline __attribute__((always_inline))
#define NE_FN static
/* FEAT_FP16 (HWCAP_ASIMDHP): int16 -> fp16 in one rounding, exact as
 * int16 -> fp32 is; FEAT_BF16 (HWCAP2_BF16): fp32 -> bf16, RNE. */
#define NEH_INL static inline __attribute__((target("arch=armv8.2-a+fp16"), \
	always_inline))
#define NEH_FN static __attribute__((target("arch=armv8.2-a+fp16")))
#define NEB_INL static inline __attribute__((target("arch=armv8.2-a+bf16"), \
	always_inline))
#define NEB_FN static __attribute__((target("arch=armv8.2-a+bf16")))

/* 32 bytes at d; streamed past the cache (STNP) when nt. */
NE_INL void
ne_st(uint8_t *d, uint8x16_t a, uint8x16_t b, int nt)
{
	if (nt)
		__asm__ volatile("stnp %q0, %q1, [%2]" : : "w"(a), "w"(b),
		    "r"(d) : "memory");
	else {
		vst1q_u8(d, a);
		vst1q_u8(d + 16, b);
	}
}

/* 16 packed int4 bytes -> 32 int8 in element order (high nibble first,
 * sign-extended by arithmetic shifts). */
NE_INL void
ne_nibbles(const uint8_t *s, int8x16_t *a, int8x16_t *b)
{
	int8x16_t x = vreinterpretq_s8_u8(vld1q_u8(s));
	int8x16_t hi = vshrq_n_s8(x, 4), lo = vshrq_n_s8(vshlq_n_s8(x, 4), 4);

	*a = vzip1q_s8(hi, lo);
	*b = vzip2q_s8(hi, lo);
}

/* 16 int8 -> four vectors of 4 int32. */
NE_INL void
ne_widen8(int8x16_t a, int32x4_t v[4])
{
	int16x8_t l = vmovl_s8(vget_low_s8(a)), h = vmovl_high_s8(a);

	v[0] = vmovl_s16(vget_low_s16(l));
	v[1] = vmovl_high_s16(l);
	v[2] = vmovl_s16(vget_low_s16(h));
	v[3] = vmovl_high_s16(h);
}

/* One block of CVT_BLK elements as eight vectors of 4 int32. */
NE_INL void
ne_load(int ki, const uint8_t *s, int32x4_t v[8])
{
	int8x16_t a, b;
	uint8x16_t x;
	int16x8_t w;
	int i;

	switch (ki) {
	case KI_I4:
		ne_nibbles(s, &a, &b);
		ne_widen8(a, v);
		ne_widen8(b, v + 4);
		break;
	case KI_I8:
		ne_widen8(vld1q_s8((const int8_t *)s), v);
		ne_widen8(vld1q_s8((const int8_t *)s + 16), v + 4);
		break;
	case KI_I16L:
	case KI_I16B:
		for (i = 0; i < 4; i++) {
			x = vld1q_u8(s + 16 * i);
			if (ki == KI_I16B)
				x = vrev16q_u8(x);
			w = vreinterpretq_s16_u8(x);
			v[2 * i] = vmovl_s16(vget_low_s16(w));
			v[2 * i + 1] = vmovl_high_s16(w);
		}
		break;
	default:
		for (i = 0; i < 8; i++) {
			x = vld1q_u8(s + 16 * i);
			if (ki == KI_I32B)
				x = vrev32q_u8(x);
			v[i] = vreinterpretq_s32_u8(x);
		}
		break;
	}
}

/* int32 -> fp32 (FPCR: RNE) -> bfloat16 bits, RNE (finite input), four
 * of them in 64 bits. */
NE_INL uint16x4_t
ne_bf16(int32x4_t v)
{
	uint32x4_t f = vreinterpretq_u32_f32(vcvtq_f32_s32(v));
	uint32x4_t odd = vandq_u32(vshrq_n_u32(f, 16), vdupq_n_u32(1));

	return vshrn_n_u32(vaddq_u32(vaddq_u32(f, vdupq_n_u32(0x7FFF)), odd),
	    16);
}

NE_INL void
ne_store(int ko, uint8_t *d, const int32x4_t v[8], int nt)
{
	float16x8_t h0, h1;
	uint16x8_t b0, b1;
	int i;

	switch (ko) {
	case KO_F16:
		for (i = 0; i < 2; i++) {
			/* int -> fp32 exact or RNE, then RNE to half
			 * (FCVTN: overflow to infinity) */
			h0 = vcombine_f16(vcvt_f16_f32(vcvtq_f32_s32(v[4 * i])),
			    vcvt_f16_f32(vcvtq_f32_s32(v[4 * i + 1])));
			h1 = vcombine_f16(vcvt_f16_f32(vcvtq_f32_s32(
			    v[4 * i + 2])), vcvt_f16_f32(vcvtq_f32_s32(
			    v[4 * i + 3])));
			ne_st(d + 32 * i, vreinterpretq_u8_f16(h0),
			    vreinterpretq_u8_f16(h1), nt);
		}
		break;
	case KO_BF16:
		for (i = 0; i < 2; i++) {
			b0 = vcombine_u16(ne_bf16(v[4 * i]),
			    ne_bf16(v[4 * i + 1]));
			b1 = vcombine_u16(ne_bf16(v[4 * i + 2]),
			    ne_bf16(v[4 * i + 3]));
			ne_st(d + 32 * i, vreinterpretq_u8_u16(b0),
			    vreinterpretq_u8_u16(b1), nt);
		}
		break;
	case KO_F32:
		for (i = 0; i < 4; i++)
			ne_st(d + 32 * i,
			    vreinterpretq_u8_f32(vcvtq_f32_s32(v[2 * i])),
			    vreinterpretq_u8_f32(vcvtq_f32_s32(v[2 * i + 1])),
			    nt);
		break;
	case KO_F64:
		/* through int64: every int32 is exact in binary64 */
		for (i = 0; i < 8; i++)
			ne_st(d + 32 * i, vreinterpretq_u8_f64(vcvtq_f64_s64(
			    vmovl_s32(vget_low_s32(v[i])))),
			    vreinterpretq_u8_f64(vcvtq_f64_s64(
			    vmovl_high_s32(v[i]))), nt);
		break;
	default:
		for (i = 0; i < 4; i++)
			ne_st(d + 32 * i, vreinterpretq_u8_s32(v[2 * i]),
			    vreinterpretq_u8_s32(v[2 * i + 1]), nt);
		break;
	}
}

NE_INL void
ne_generic(const uint8_t *s, uint8_t *d, size_t nblk, int nt, int ki, int ko)
{
	int32x4_t v[8];

	for (; nblk > 0; nblk--) {
		ne_load(ki, s, v);
		ne_store(ko, d, v, nt);
		s += cvt_in_blk[ki];
		d += cvt_out_blk[ko];
	}
}

/* int4 -> a 16-bit type by table (tbl): 16 input bytes, 64 output bytes. */
NE_INL void
ne_i4_tab(const uint8_t *s, uint8_t *d, size_t nblk, int nt,
	  const uint16_t *tab)
{
	uint16x8_t t0 = vld1q_u16(tab), t1 = vld1q_u16(tab + 8);
	/* low and high bytes of the 16 entries */
	uint8x16_t tl = vcombine_u8(vmovn_u16(t0), vmovn_u16(t1));
	uint8x16_t th = vcombine_u8(vshrn_n_u16(t0, 8), vshrn_n_u16(t1, 8));
	uint8x16_t x, hi, lo, n, l, h;
	int j;

	for (; nblk > 0; nblk--) {
		x = vld1q_u8(s);
		hi = vshrq_n_u8(x, 4);
		lo = vandq_u8(x, vdupq_n_u8(0x0F));
		for (j = 0; j < 2; j++) {
			n = j ? vzip2q_u8(hi, lo) : vzip1q_u8(hi, lo);
			l = vqtbl1q_u8(tl, n);
			h = vqtbl1q_u8(th, n);
			ne_st(d + 32 * j, vzip1q_u8(l, h), vzip2q_u8(l, h), nt);
		}
		s += 16;
		d += 64;
	}
}

CVT_I4_TABS(ne, NE_FN)

NE_FN void
ne_copy_nt(uint8_t *d, const uint8_t *s, size_t n)
{
	for (; n >= 64; n -= 64, s += 64, d += 64) {
		uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16);
		uint8x16_t c = vld1q_u8(s + 32), e = vld1q_u8(s + 48);

		ne_st(d, a, b, 1);
		ne_st(d + 32, c, e, 1);
	}
	for (; n >= 32; n -= 32, s += 32, d += 32)
		ne_st(d, vld1q_u8(s), vld1q_u8(s + 16), 1);
}

NE_FN void
ne_zero_nt(uint8_t *d, size_t n)
{
	uint8x16_t z = vdupq_n_u8(0);

	for (; n >= 32; n -= 32, d += 32)
		ne_st(d, z, z, 1);
}

CVT_KERNELS(ne, NE_FN)

/* FEAT_FP16: int4 (by table, as ne), int8 and int16 -> fp16 in one
 * rounding of their int16 value (exact as int16 -> fp32, so the same
 * result as convert.h's two steps). */
NEH_INL void
neh_generic(const uint8_t *s, uint8_t *d, size_t nblk, int nt, int ki)
{
	int16x8_t w[4];
	uint8x16_t x;
	int i;

	for (; nblk > 0; nblk--) {
		if (ki == KI_I8) {
			int8x16_t a = vld1q_s8((const int8_t *)s);
			int8x16_t b = vld1q_s8((const int8_t *)s + 16);

			w[0] = vmovl_s8(vget_low_s8(a));
			w[1] = vmovl_high_s8(a);
			w[2] = vmovl_s8(vget_low_s8(b));
			w[3] = vmovl_high_s8(b);
		} else {
			for (i = 0; i < 4; i++) {
				x = vld1q_u8(s + 16 * i);
				if (ki == KI_I16B)
					x = vrev16q_u8(x);
				w[i] = vreinterpretq_s16_u8(x);
			}
		}
		for (i = 0; i < 2; i++)
			ne_st(d + 32 * i,
			    vreinterpretq_u8_f16(vcvtq_f16_s16(w[2 * i])),
			    vreinterpretq_u8_f16(vcvtq_f16_s16(w[2 * i + 1])),
			    nt);
		s += cvt_in_blk[ki];
		d += cvt_out_blk[KO_F16];
	}
}

#define NEH_KERNEL(ki)							\
	NEH_FN void neh_##ki(const uint8_t *s, uint8_t *d, size_t nblk,	\
	    int nt)							\
	{								\
		if (nt)							\
			neh_generic(s, d, nblk, 1, ki);			\
		else							\
			neh_generic(s, d, nblk, 0, ki);			\
	}
NEH_KERNEL(KI_I8)
NEH_KERNEL(KI_I16L)
NEH_KERNEL(KI_I16B)

/* FEAT_BF16: fp32 -> bf16 by BFCVTN (RNE; inputs here are exact or
 * RNE-rounded integers, never NaN or subnormal). */
NEB_INL void
neb_generic(const uint8_t *s, uint8_t *d, size_t nblk, int nt, int ki)
{
	int32x4_t v[8];
	bfloat16x8_t b0, b1;
	int i;

	for (; nblk > 0; nblk--) {
		ne_load(ki, s, v);
		for (i = 0; i < 2; i++) {
			b0 = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(
			    vcvtq_f32_s32(v[4 * i])), vcvtq_f32_s32(v[4 * i + 1]));
			b1 = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(
			    vcvtq_f32_s32(v[4 * i + 2])),
			    vcvtq_f32_s32(v[4 * i + 3]));
			ne_st(d + 32 * i, vreinterpretq_u8_bf16(b0),
			    vreinterpretq_u8_bf16(b1), nt);
		}
		s += cvt_in_blk[ki];
		d += cvt_out_blk[KO_BF16];
	}
}

#define NEB_KERNEL(ki)							\
	NEB_FN void neb_##ki(const uint8_t *s, uint8_t *d, size_t nblk,	\
	    int nt)							\
	{								\
		if (nt)							\
			neb_generic(s, d, nblk, 1, ki);			\
		else							\
			neb_generic(s, d, nblk, 0, ki);			\
	}
NEB_KERNEL(KI_I8)
NEB_KERNEL(KI_I16L)
NEB_KERNEL(KI_I16B)
NEB_KERNEL(KI_I32L)
NEB_KERNEL(KI_I32B)

/* A row of ASIMD's kernels with its fp16 and bf16 kernels chosen. */
#define NE_ROW(ki, f16, bf16) [ki] = { [KO_F16] = f16, [KO_BF16] = bf16, \
	[KO_F32] = ne_##ki##_KO_F32, [KO_F64] = ne_##ki##_KO_F64,	\
	[KO_I32] = ne_##ki##_KO_I32 }

static const struct cvt_impl cvt_impl_neon = {
	.name = "neon",
	.align = 32,
	.copy_nt = ne_copy_nt,
	.zero_nt = ne_zero_nt,
	.k = CVT_TABLE(ne),
};

static const struct cvt_impl cvt_impl_neon_fp16 = {
	.name = "neon-fp16",
	.align = 32,
	.copy_nt = ne_copy_nt,
	.zero_nt = ne_zero_nt,
	.k = { CVT_ROW_I4(ne),
		NE_ROW(KI_I8, neh_KI_I8, ne_KI_I8_KO_BF16),
		NE_ROW(KI_I16L, neh_KI_I16L, ne_KI_I16L_KO_BF16),
		NE_ROW(KI_I16B, neh_KI_I16B, ne_KI_I16B_KO_BF16),
		CVT_ROW(ne, KI_I32L), CVT_ROW(ne, KI_I32B) },
};

static const struct cvt_impl cvt_impl_neon_bf16 = {
	.name = "neon-fp16-bf16",
	.align = 32,
	.copy_nt = ne_copy_nt,
	.zero_nt = ne_zero_nt,
	.k = { CVT_ROW_I4(ne),
		NE_ROW(KI_I8, neh_KI_I8, neb_KI_I8),
		NE_ROW(KI_I16L, neh_KI_I16L, neb_KI_I16L),
		NE_ROW(KI_I16B, neh_KI_I16B, neb_KI_I16B),
		NE_ROW(KI_I32L, ne_KI_I32L_KO_F16, neb_KI_I32L),
		NE_ROW(KI_I32B, ne_KI_I32B_KO_F16, neb_KI_I32B) },
};

#endif /* CVT_NEON */

static const struct cvt_impl cvt_impl_scalar = {
	.name = "scalar",
	.align = 0,
};

/* Every implementation this build knows, best first. */
static const struct cvt_impl *const cvt_impls[] = {
#ifdef CVT_X86
	&cvt_impl_avx2, &cvt_impl_sse41,
#endif
#ifdef CVT_NEON
	&cvt_impl_neon_bf16, &cvt_impl_neon_fp16, &cvt_impl_neon,
#endif
	&cvt_impl_scalar,
};
#define CVT_NIMPLS	(sizeof(cvt_impls) / sizeof(cvt_impls[0]))

const char *const cvt_impl_names[] = {
#ifdef CVT_X86
	"avx2", "sse4.1",
#endif
#ifdef CVT_NEON
	"neon-fp16-bf16", "neon-fp16", "neon",
#endif
	"scalar", NULL
};
_Static_assert(sizeof(cvt_impl_names) / sizeof(cvt_impl_names[0]) ==
    CVT_NIMPLS + 1, "one name per implementation");

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
#ifdef CVT_NEON
	unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);

	if (im == &cvt_impl_neon)
		return (hw & HWCAP_ASIMD) != 0;
	if (im == &cvt_impl_neon_fp16)
		return (hw & HWCAP_ASIMD) && (hw & HWCAP_ASIMDHP);
	if (im == &cvt_impl_neon_bf16)
		return (hw & HWCAP_ASIMD) && (hw & HWCAP_ASIMDHP) &&
		    (hw2 & HWCAP2_BF16);
#endif
	return im == &cvt_impl_scalar;
}

static const struct cvt_impl *
impl_best(void)
{
	size_t i;

	for (i = 0; i + 1 < CVT_NIMPLS && !impl_supported(cvt_impls[i]); i++)
		;
	return cvt_impls[i];
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
	for (size_t i = 0; im == NULL && i < CVT_NIMPLS; i++)
		if (strcmp(name, cvt_impls[i]->name) == 0)
			im = cvt_impls[i];
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
