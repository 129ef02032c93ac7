/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The placement kernel's per-thread body (C11 and CUDA): one thread's share
 * of a job, i.e. converting a payload into its slot, copying it, or filling
 * a missing slot, with convert.h's arithmetic and kernel.h's memory
 * primitives. reorder_cuda.cu wraps it in a few-line __global__ function;
 * on the host the grid runner runs the same body (rk_cpu_launch()), for the
 * unit tests and for the CUDA stand-in.
 */
#ifndef DAQIRI_REORDER_KERNEL_H
#define DAQIRI_REORDER_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "convert.h"
#include "kernel.h"

#ifdef __CUDA_ARCH__
#define RK_UNROLL _Pragma("unroll")
#else
#define RK_UNROLL
#endif

/* One placement: payload src (device-readable) into the slot at dst
 * (device-writable); src NULL = fill the slot per the launch's fill. */
struct reorder_cuda_job {
	const uint8_t *src;
	uint8_t *dst;
};

/* What every job of a launch shares. `in` and `out` select the body on
 * the host; the device kernel is specialised for them at compile time. */
struct rk_params {
	const struct reorder_cuda_job *jobs;	/* device-readable */
	uint32_t in_bytes;
	uint32_t nelems;		/* input elements per payload */
	uint64_t slot_bytes;
	enum cfg_endian en;
	enum daqiri_dtype in;
	enum daqiri_dtype out;		/* also the fill's type */
	enum daqiri_fill fill;
};

/* Words a thread's widest output chunk holds (8 int4 -> 8 fp64). */
#define RK_MAX_WORDS	16

/*
 * Whether the kernel converts in to out: raw copies (out raw), and every
 * integer input converts to fp16, bf16, fp32, fp64 or int32. The one rule
 * of the CUDA backend (reorder_cuda.cu) and of the config checker.
 */
K_HD int
rk_conversion_ok(enum daqiri_dtype in, enum daqiri_dtype out)
{
	if (in == DAQIRI_DTYPE_RAW)
		return out == DAQIRI_DTYPE_RAW;
	if (in != DAQIRI_DTYPE_INT4 && in != DAQIRI_DTYPE_INT8 &&
	    in != DAQIRI_DTYPE_INT16 && in != DAQIRI_DTYPE_INT32)
		return 0;
	return out == DAQIRI_DTYPE_FP16 || out == DAQIRI_DTYPE_BF16 ||
	    out == DAQIRI_DTYPE_FP32 || out == DAQIRI_DTYPE_FP64 ||
	    out == DAQIRI_DTYPE_INT32;
}

/* The outputs rk_conversion_ok() allows, for messages. */
#define RK_OUTPUTS	"fp16, bf16, fp32, fp64 or int32"

/* Input elements in 4 input bytes, bytes per output element. */
K_HD uint32_t
rk_in_per_word(enum daqiri_dtype in)
{
	return in == DAQIRI_DTYPE_INT4 ? 8 : in == DAQIRI_DTYPE_INT8 ? 4 :
	    in == DAQIRI_DTYPE_INT16 ? 2 : 1;
}

K_HD uint32_t
rk_out_bytes(enum daqiri_dtype out)
{
	return out == DAQIRI_DTYPE_FP64 ? 8 : (out == DAQIRI_DTYPE_FP16 ||
	    out == DAQIRI_DTYPE_BF16) ? 2 : 4;
}

/* The output bits of value v (int32 is the identity). */
K_HD uint64_t
rk_out_bits(enum daqiri_dtype out, int32_t v)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		return cvt_i32_to_f16(v);
	case DAQIRI_DTYPE_BF16:
		return cvt_i32_to_bf16(v);
	case DAQIRI_DTYPE_FP32:
		return cvt_i32_to_f32_bits(v);
	case DAQIRI_DTYPE_FP64:
		return cvt_i32_to_f64_bits(v);
	default:
		return (uint32_t)v;
	}
}

/* Largest of 16, 8, 4, 2, 1 that p is aligned to. */
K_HD uint32_t
rk_align(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	return (a & 15) == 0 ? 16 : (a & 7) == 0 ? 8 : (a & 3) == 0 ? 4 :
	    (a & 1) == 0 ? 2 : 1;
}

/* 4 bytes at p, little-endian; one load when p is 4-aligned (al4). */
K_HD uint32_t
rk_ld32(const uint8_t *p, int al4)
{
	if (al4)
		return k_ld32(p);
	return (uint32_t)k_ld8(p) | (uint32_t)k_ld8(p + 1) << 8 |
	    (uint32_t)k_ld8(p + 2) << 16 | (uint32_t)k_ld8(p + 3) << 24;
}

K_HD struct k_u4
rk_u4(uint32_t x, uint32_t y, uint32_t z, uint32_t w)
{
	struct k_u4 v;

	v.x = x;
	v.y = y;
	v.z = z;
	v.w = w;
	return v;
}

/* Store tb bytes held little-endian in words w at d, the widest way the
 * alignment al of the chunk base allows (d = base + c * tb). */
K_HD void
rk_store(uint8_t *d, const uint32_t *w, uint32_t tb, uint32_t al)
{
	uint32_t i;

	if (tb % 16 == 0 && al >= 16) {
		RK_UNROLL
		for (i = 0; i < tb / 16; i++)
			k_st128(d + 16 * i, rk_u4(w[4 * i], w[4 * i + 1],
			    w[4 * i + 2], w[4 * i + 3]));
		return;
	}
	if (tb % 8 == 0 && al >= 8) {
		RK_UNROLL
		for (i = 0; i < tb / 8; i++)
			k_st64(d + 8 * i, w[2 * i], w[2 * i + 1]);
		return;
	}
	if (tb % 4 == 0 && al >= 4) {
		RK_UNROLL
		for (i = 0; i < tb / 4; i++)
			k_st32(d + 4 * i, w[i]);
		return;
	}
	if (tb == 2 && al >= 2) {
		k_st16(d, (uint16_t)w[0]);
		return;
	}
	RK_UNROLL
	for (i = 0; i < tb; i++)
		k_st8(d + i, (uint8_t)(w[i / 4] >> (8 * (i % 4))));
}

/* Element e of the payload at src into output element e of dst (the tail
 * of a payload that is no whole number of 4-byte words). */
K_HD void
rk_element(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
	   const uint8_t *src, uint32_t e, uint8_t *dst)
{
	uint32_t ib = in == DAQIRI_DTYPE_INT16 ? 2 :
	    in == DAQIRI_DTYPE_INT32 ? 4 : 1;
	uint64_t off = in == DAQIRI_DTYPE_INT4 ? e >> 1 : (uint64_t)e * ib;
	uint32_t i, sz = cvt_out_size(out);
	uint8_t b[4] = { 0, 0, 0, 0 };
	uint64_t x;

	for (i = 0; i < ib; i++)
		b[i] = k_ld8(src + off + i);
	x = rk_out_bits(out, cvt_read(in, en, b,
	    in == DAQIRI_DTYPE_INT4 ? (e & 1) : 0));
	for (i = 0; i < sz; i++)
		k_st8(dst + (uint64_t)e * sz + i, (uint8_t)(x >> (8 * i)));
}

/* Convert one payload: each thread takes 4 input bytes at a time (8 int4,
 * 4 int8, 2 int16 or 1 int32 elements) and writes their outputs at once;
 * the elements after the last whole word go one per thread, strided like
 * the words (so any launch shape covers them). */
K_HD void
rk_convert(const struct rk_params *p, enum daqiri_dtype in,
	   enum daqiri_dtype out, const uint8_t *src, uint8_t *dst,
	   uint32_t tid, uint32_t stride)
{
	const uint32_t k_n = rk_in_per_word(in);
	const uint32_t s = rk_out_bytes(out), tb = k_n * s;
	const uint32_t nchunks = p->in_bytes / 4;
	const int al4 = ((uintptr_t)src & 3) == 0;
	const uint32_t al = rk_align(dst);
	uint32_t c, k, e;

	for (c = tid; c < nchunks; c += stride) {
		uint32_t x = rk_ld32(src + 4 * (size_t)c, al4);
		uint8_t b[4] = { (uint8_t)x, (uint8_t)(x >> 8),
		    (uint8_t)(x >> 16), (uint8_t)(x >> 24) };
		uint32_t w[RK_MAX_WORDS];

		RK_UNROLL
		for (k = 0; k < RK_MAX_WORDS; k++)
			w[k] = 0;
		RK_UNROLL
		for (k = 0; k < k_n; k++) {
			uint64_t v = rk_out_bits(out, cvt_read(in, p->en, b,
			    k));

			if (s == 2) {
				w[k / 2] |= (uint32_t)v << (16 * (k % 2));
			} else if (s == 4) {
				w[k] = (uint32_t)v;
			} else {
				w[2 * k] = (uint32_t)v;
				w[2 * k + 1] = (uint32_t)(v >> 32);
			}
		}
		rk_store(dst + (size_t)c * tb, w, tb, al);
	}
	for (e = nchunks * k_n + tid; e < p->nelems; e += stride)
		rk_element(in, out, p->en, src, e, dst);
}

/* Copy one payload as it is (no data_types). */
K_HD void
rk_copy(const struct rk_params *p, const uint8_t *src, uint8_t *dst,
	uint32_t tid, uint32_t stride)
{
	const uint32_t n = p->in_bytes;
	uint32_t i, n16 = 0;

	if (((uintptr_t)dst & 15) == 0) {
		const int al4 = ((uintptr_t)src & 3) == 0;
		const int al16 = ((uintptr_t)src & 15) == 0;

		n16 = n / 16;
		for (i = tid; i < n16; i += stride) {
			const uint8_t *q = src + 16 * (size_t)i;

			k_st128(dst + 16 * (size_t)i, al16 ? k_ld128(q) :
			    rk_u4(rk_ld32(q, al4), rk_ld32(q + 4, al4),
			    rk_ld32(q + 8, al4), rk_ld32(q + 12, al4)));
		}
	}
	for (i = 16 * n16 + tid; i < n; i += stride)
		k_st8(dst + i, k_ld8(src + i));
}

/* Fill one missing slot exactly as cvt_fill_slot() does. */
K_HD void
rk_fill(const struct rk_params *p, uint8_t *dst, uint32_t tid,
	uint32_t stride)
{
	uint64_t i, n16 = 0, pat = 0;
	uint32_t sz = 1;

	if (p->fill == DAQIRI_FILL_KEEP)
		return;
	if (p->fill == DAQIRI_FILL_NAN)
		pat = cvt_nan_pattern(p->out, &sz);
	if (((uintptr_t)dst & 15) == 0) {
		uint32_t w[4];

		/* sz divides 16: every 16-byte unit holds the same bytes */
		for (i = 0; i < 4; i++)
			w[i] = sz == 8 ? (uint32_t)(pat >> (32 * (i & 1))) :
			    sz == 4 ? (uint32_t)pat :
			    sz == 2 ? (uint32_t)pat * 0x10001u : 0;
		n16 = p->slot_bytes / 16;
		for (i = tid; i < n16; i += stride)
			k_st128(dst + 16 * i, rk_u4(w[0], w[1], w[2], w[3]));
	}
	for (i = 16 * n16 + tid; i < p->slot_bytes; i += stride)
		k_st8(dst + i, (uint8_t)(pat >> (8 * (i % sz))));
}

/*
 * One thread of the launch: thread tid of stride threads working on job
 * `job`. in and out are constants in the device kernel (the compiler
 * drops the other bodies) and p->in, p->out on the host.
 */
K_HD void
rk_thread(const struct rk_params *p, enum daqiri_dtype in,
	  enum daqiri_dtype out, uint32_t job, uint32_t tid, uint32_t stride)
{
	const struct reorder_cuda_job *j = p->jobs + job;
	const uint8_t *src = (const uint8_t *)(uintptr_t)k_ld64(&j->src);
	uint8_t *dst = (uint8_t *)(uintptr_t)k_ld64(&j->dst);

	if (src == NULL)
		rk_fill(p, dst, tid, stride);
	else if (in == DAQIRI_DTYPE_RAW)
		rk_copy(p, src, dst, tid, stride);
	else
		rk_convert(p, in, out, src, dst, tid, stride);
}

/* The launch's geometry: one block row (block.y) per job; the x blocks'
 * threads stride over it. The whole kernel, on the device and the host. */
K_HD void
rk_kernel(const struct rk_params *p, enum daqiri_dtype in,
	  enum daqiri_dtype out, const struct kidx *ix)
{
	rk_thread(p, in, out, ix->block.y,
	    ix->block.x * ix->bdim.x + ix->thread.x, ix->grid.x * ix->bdim.x);
}

#ifndef __CUDA_ARCH__

static inline void
rk_cpu_body(void *ctx, const struct kidx *ix)
{
	const struct rk_params *p = (const struct rk_params *)ctx;

	rk_kernel(p, p->in, p->out, ix);
}

/* The kernel on the CPU (a kstandin_fn): args[0] is its struct
 * rk_params. */
static inline void
rk_cpu_launch(void **args, struct kdim grid, struct kdim block, uint64_t seed,
	      const struct kmem_hooks *h)
{
	kgrid_run(grid, block, seed, h, rk_cpu_body, args[0]);
}

#endif

#endif
