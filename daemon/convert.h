/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-element conversion arithmetic (REFERENCE.md "Element conversion
 * (exact)"), written once for the CPU reorder (C11) and the CUDA kernels
 * (__host__ __device__), in integer arithmetic only, so both give
 * bit-identical tensors whatever the FPU rounding mode or the intrinsics do.
 */
#ifndef DAQIRI_CONVERT_H
#define DAQIRI_CONVERT_H

#include <stdint.h>

#include "config.h"

#ifdef __CUDACC__
#define CVT_HD static __host__ __device__ __forceinline__
#else
#define CVT_HD static inline
#endif

/* Canonical quiet NaNs written by fill: nan. */
#define CVT_NAN_F16	0x7E00u
#define CVT_NAN_BF16	0x7FC0u
#define CVT_NAN_F32	0x7FC00000u
#define CVT_NAN_F64	0x7FF8000000000000ull

/* Index of the most significant set bit of x (x != 0). */
CVT_HD int
cvt_msb32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
	return 31 - __clz((int)x);
#elif defined(__GNUC__)
	return 31 - __builtin_clz(x);
#else
	int p = 0;

	if (x >> 16) { x >>= 16; p += 16; }
	if (x >> 8) { x >>= 8; p += 8; }
	if (x >> 4) { x >>= 4; p += 4; }
	if (x >> 2) { x >>= 2; p += 2; }
	if (x >> 1)
		p += 1;
	return p;
#endif
}

/*
 * Input elements in nbytes of payload: 0 when nbytes is not a whole number
 * of elements (or the type is no input type); NONE counts bytes.
 */
CVT_HD uint32_t
cvt_in_elems(enum daqiri_dtype in, uint32_t nbytes)
{
	switch (in) {
	case DAQIRI_DTYPE_RAW:
	case DAQIRI_DTYPE_INT8:
		return nbytes;
	case DAQIRI_DTYPE_INT4:
		return nbytes > UINT32_MAX / 2 ? 0 : nbytes * 2;
	case DAQIRI_DTYPE_INT16:
		return (nbytes & 1) ? 0 : nbytes / 2;
	case DAQIRI_DTYPE_INT32:
		return (nbytes & 3) ? 0 : nbytes / 4;
	default:
		return 0;
	}
}

/*
 * Bytes of one output element; NONE (bytes copied) is 1. int8/int16 are
 * given for completeness (truncating writes); int4 is no output type: 0.
 */
CVT_HD uint32_t
cvt_out_size(enum daqiri_dtype out)
{
	switch (out) {
	case DAQIRI_DTYPE_RAW:
	case DAQIRI_DTYPE_INT8:
		return 1;
	case DAQIRI_DTYPE_INT16:
	case DAQIRI_DTYPE_FP16:
	case DAQIRI_DTYPE_BF16:
		return 2;
	case DAQIRI_DTYPE_INT32:
	case DAQIRI_DTYPE_FP32:
		return 4;
	case DAQIRI_DTYPE_FP64:
		return 8;
	default:
		return 0;
	}
}

/*
 * Element e of a payload, as a signed value. int4: byte e/2, even e the
 * high nibble; int16/int32: en HOST = little-endian, NETWORK = big-endian
 * (literally, whatever the CPU). NONE gives byte e unsigned.
 */
CVT_HD int32_t
cvt_read(enum daqiri_dtype in, enum cfg_endian en, const uint8_t *src,
	 uint32_t e)
{
	const uint8_t *s;
	uint32_t u;

	switch (in) {
	case DAQIRI_DTYPE_INT4:
		u = src[e >> 1];
		u = (e & 1) ? (u & 0xFu) : (u >> 4);
		return (int32_t)(u ^ 8u) - 8;
	case DAQIRI_DTYPE_INT8:
		return (int8_t)src[e];
	case DAQIRI_DTYPE_INT16:
		s = src + 2 * (uint64_t)e;
		if (en == CFG_ENDIAN_NETWORK)
			u = (uint32_t)s[0] << 8 | s[1];
		else
			u = (uint32_t)s[1] << 8 | s[0];
		return (int16_t)(uint16_t)u;
	case DAQIRI_DTYPE_INT32:
		s = src + 4 * (uint64_t)e;
		if (en == CFG_ENDIAN_NETWORK)
			u = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 |
			    (uint32_t)s[2] << 8 | s[3];
		else
			u = (uint32_t)s[3] << 24 | (uint32_t)s[2] << 16 |
			    (uint32_t)s[1] << 8 | s[0];
		return (int32_t)u;
	default:
		return src[e];
	}
}

/* int32 -> IEEE binary32 bits, round to nearest, ties to even. */
CVT_HD uint32_t
cvt_i32_to_f32_bits(int32_t v)
{
	uint32_t sign = v < 0 ? 0x80000000u : 0;
	uint32_t mag = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	uint32_t m, rem, half;
	int p, sh;

	if (mag == 0)
		return 0;
	p = cvt_msb32(mag);
	if (p <= 23) {
		m = mag << (23 - p);
	} else {
		sh = p - 23;
		m = mag >> sh;
		rem = mag & ((1u << sh) - 1);
		half = 1u << (sh - 1);
		if (rem > half || (rem == half && (m & 1)))
			m++;
	}
	/* m holds the hidden bit (1 << 23); a carry to 1 << 24 rolls into
	 * the exponent by the addition. */
	return sign | (((uint32_t)(p + 126) << 23) + m);
}

/* binary32 bits -> binary16 bits, RNE; |x| >= 65520 -> inf, NaN quiet. */
CVT_HD uint16_t
cvt_f32_bits_to_f16(uint32_t f)
{
	uint32_t sign = (f >> 16) & 0x8000u;
	uint32_t ex = (f >> 23) & 0xFFu;
	uint32_t man = f & 0x7FFFFFu;
	uint32_t h, rem, half;
	int e, sh;

	if (ex == 0xFF)
		return (uint16_t)(sign | 0x7C00u |
		    (man ? 0x200u | (man >> 13) : 0));
	e = (int)ex - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7C00u);
	if (e <= 0) {
		/* subnormal half (or zero); binary32 subnormals are far
		 * below the smallest half and end up 0 */
		if (e < -10 || ex == 0)
			return (uint16_t)sign;
		man |= 0x800000u;
		sh = 14 - e;
		h = man >> sh;
		rem = man & ((1u << sh) - 1);
		half = 1u << (sh - 1);
	} else {
		h = (uint32_t)e << 10 | man >> 13;
		rem = man & 0x1FFFu;
		half = 0x1000u;
	}
	/* a carry rolls into the exponent, up to inf: that is RNE */
	if (rem > half || (rem == half && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

/* binary32 bits -> bfloat16 bits, RNE; NaN quiet. */
CVT_HD uint16_t
cvt_f32_bits_to_bf16(uint32_t f)
{
	if ((f & 0x7F800000u) == 0x7F800000u && (f & 0x7FFFFFu))
		return (uint16_t)((f >> 16) | 0x40u);
	return (uint16_t)((f + 0x7FFFu + ((f >> 16) & 1)) >> 16);
}

/* int -> fp32 (RNE) -> fp16 (RNE), the REFERENCE.md definition. */
CVT_HD uint16_t
cvt_i32_to_f16(int32_t v)
{
	return cvt_f32_bits_to_f16(cvt_i32_to_f32_bits(v));
}

/* int -> fp32 (RNE) -> bf16 (RNE): two roundings, on purpose. */
CVT_HD uint16_t
cvt_i32_to_bf16(int32_t v)
{
	return cvt_f32_bits_to_bf16(cvt_i32_to_f32_bits(v));
}

/* int32 -> binary64 bits, exact. */
CVT_HD uint64_t
cvt_i32_to_f64_bits(int32_t v)
{
	uint64_t sign = v < 0 ? 0x8000000000000000ull : 0;
	uint32_t mag = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	int p;

	if (mag == 0)
		return 0;
	p = cvt_msb32(mag);
	return sign | (uint64_t)(p + 1023) << 52 |
	    (((uint64_t)mag << (52 - p)) & 0xFFFFFFFFFFFFFull);
}

/* Store the low nb bytes of x little-endian at d. */
CVT_HD void
cvt_store_le(uint8_t *d, uint64_t x, uint32_t nb)
{
	uint32_t i;

	for (i = 0; i < nb; i++)
		d[i] = (uint8_t)(x >> (8 * i));
}

/*
 * Write value v as element e of dst in type out, little-endian in memory.
 * int32 is the identity; NONE, int8 and int16 store the low bytes.
 */
CVT_HD void
cvt_write(enum daqiri_dtype out, int32_t v, uint8_t *dst, uint32_t e)
{
	uint64_t x;
	uint32_t sz = cvt_out_size(out);

	switch (out) {
	case DAQIRI_DTYPE_FP16:
		x = cvt_i32_to_f16(v);
		break;
	case DAQIRI_DTYPE_BF16:
		x = cvt_i32_to_bf16(v);
		break;
	case DAQIRI_DTYPE_FP32:
		x = cvt_i32_to_f32_bits(v);
		break;
	case DAQIRI_DTYPE_FP64:
		x = cvt_i32_to_f64_bits(v);
		break;
	default:
		x = (uint32_t)v;
		break;
	}
	cvt_store_le(dst + (uint64_t)e * sz, x, sz);
}

/* Convert input element e of src into output element e of dst (a slot's
 * base); in NONE copies byte e. */
CVT_HD void
cvt_convert_element(enum daqiri_dtype in, enum daqiri_dtype out,
		    enum cfg_endian en, const uint8_t *src, uint32_t e,
		    uint8_t *dst)
{
	if (in == DAQIRI_DTYPE_RAW)
		dst[e] = src[e];
	else
		cvt_write(out, cvt_read(in, en, src, e), dst, e);
}

/* Convert a whole payload of nbytes into one slot, element by element
 * (the reference every faster path is checked against). */
CVT_HD void
cvt_slot_scalar(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
		const uint8_t *src, uint32_t nbytes, uint8_t *dst)
{
	uint32_t e, n = cvt_in_elems(in, nbytes);

	for (e = 0; e < n; e++)
		cvt_convert_element(in, out, en, src, e, dst);
}

/*
 * The canonical quiet NaN of output type out, little-endian in the low
 * *size bytes; 0 with *size 1 for a type with no NaN.
 */
CVT_HD uint64_t
cvt_nan_pattern(enum daqiri_dtype out, uint32_t *size)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		*size = 2;
		return CVT_NAN_F16;
	case DAQIRI_DTYPE_BF16:
		*size = 2;
		return CVT_NAN_BF16;
	case DAQIRI_DTYPE_FP32:
		*size = 4;
		return CVT_NAN_F32;
	case DAQIRI_DTYPE_FP64:
		*size = 8;
		return CVT_NAN_F64;
	default:
		*size = 1;
		return 0;
	}
}

/*
 * Fill nbytes of a missing slot: zero: zeros; nan: the output type's
 * canonical quiet NaN in every element (zeros for a type with no NaN);
 * keep: nothing.
 */
CVT_HD void
cvt_fill_slot(enum daqiri_dtype out, enum daqiri_fill fill, uint8_t *dst,
	      uint64_t nbytes)
{
	uint64_t i, pat = 0;
	uint32_t sz = 1;

	if (fill == DAQIRI_FILL_KEEP)
		return;
	if (fill == DAQIRI_FILL_NAN)
		pat = cvt_nan_pattern(out, &sz);
	for (i = 0; i < nbytes; i++)
		dst[i] = (uint8_t)(pat >> (8 * (i % sz)));
}

#endif
