/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA reorder backend: the CPU (reorder.c) reads headers and keeps the
 * window and bitmaps; this file queues every payload of a burst into a
 * pinned job table and converts them all into their slots with one kernel
 * launch, using the convert.h arithmetic, fills missing slots on the device
 * and records one interprocess event per finished tensor.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>

#include <cuda_runtime.h>

#include "reorder_cuda.h"
#include "convert.h"

static_assert(sizeof(cudaIpcMemHandle_t) == GPU_IPC_HANDLE_BYTES,
	      "IPC memory handle size");
static_assert(sizeof(cudaIpcEventHandle_t) == GPU_IPC_HANDLE_BYTES,
	      "IPC event handle size");
static_assert(sizeof(struct gpu_job) == 16, "job layout");

/* Kernel geometry: threads per block, most blocks per job. */
#define RC_BLOCK		256
#define RC_GRID_X_MAX		128u
/* Most jobs in one launch (the y dimension of the grid). */
#define RC_GRID_Y_MAX		65535u
/* Per-plan cache of pointer kinds, by 4 KiB page (direct mapped). */
#define RC_PAGE_SHIFT		12
#define RC_PAGE_CACHE		4096
/* Per-plan cache of tensor buffers, by buffer index (direct mapped). */
#define RC_BUF_CACHE		256
/* Plans whose counters reorder_cuda_stats() can find. */
#define RC_MAX_PLANS		64
/* Staged payloads start on this boundary (vector loads). */
#define RC_STAGE_ALIGN		16u

/* What a pointer is to the GPU. */
enum rc_kind {
	RC_KIND_UNKNOWN,		/* not asked yet (caches only) */
	RC_KIND_HOST,			/* plain host memory: stage it */
	RC_KIND_DEVICE,			/* device-readable (device, managed) */
	RC_KIND_PINNED,			/* registered host memory, via alias */
	RC_KIND_BAD,			/* neither: cannot be used */
};

/* ------------------------------------------------------------------ */
/* errors */

static thread_local char rc_err[REORDER_CUDA_ERR_MAX];

static void rc_seterr(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
rc_seterr(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_err, sizeof(rc_err), fmt, ap);
	va_end(ap);
}

/* Set the message for CUDA error e in `what` and return -errno for it. */
static int
rc_cuda_fail(const char *what, cudaError_t e)
{
	rc_seterr("%s: %s (error %d)", what, cudaGetErrorString(e), (int)e);
	(void)cudaGetLastError();	/* clear a non-sticky error */
	switch (e) {
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInsufficientDriver:
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
		return -ENODEV;
	case cudaErrorInvalidValue:
		return -EINVAL;
	default:
		return -EIO;
	}
}

extern "C" const char *
reorder_cuda_last_error(void)
{
	return rc_err;
}

extern "C" int
gpu_available(char *why, size_t len)
{
	cudaError_t e;
	int n = 0;

	if ((e = cudaGetDeviceCount(&n)) != cudaSuccess) {
		rc_seterr("no CUDA device: %s (error %d)",
		    cudaGetErrorString(e), (int)e);
		(void)cudaGetLastError();
	} else if (n <= 0) {
		rc_seterr("no CUDA device: none found");
	} else {
		return 1;
	}
	if (why != NULL && len > 0)
		snprintf(why, len, "%s", rc_err);
	return 0;
}

/* ------------------------------------------------------------------ */
/* the kernel */

struct rc_kparams {
	const struct gpu_job *jobs;
	uint32_t in_bytes;
	uint32_t nelems;		/* input elements per payload */
	uint64_t slot_bytes;
	enum cfg_endian en;
	enum daqiri_dtype out;		/* for fill */
	enum daqiri_fill fill;
};

/* Input elements in 4 input bytes, bytes per output element. */
__host__ __device__ constexpr uint32_t
rc_k(enum daqiri_dtype in)
{
	return in == DAQIRI_DTYPE_INT4 ? 8 : in == DAQIRI_DTYPE_INT8 ? 4 :
	    in == DAQIRI_DTYPE_INT16 ? 2 : 1;
}

__host__ __device__ constexpr uint32_t
rc_s(enum daqiri_dtype out)
{
	return out == DAQIRI_DTYPE_FP64 ? 8 : (out == DAQIRI_DTYPE_FP16 ||
	    out == DAQIRI_DTYPE_BF16) ? 2 : 4;
}

template <enum daqiri_dtype OUT>
__device__ __forceinline__ uint64_t
rc_out_bits(int32_t v)
{
	if constexpr (OUT == DAQIRI_DTYPE_FP16)
		return cvt_i32_to_f16(v);
	else if constexpr (OUT == DAQIRI_DTYPE_BF16)
		return cvt_i32_to_bf16(v);
	else if constexpr (OUT == DAQIRI_DTYPE_FP32)
		return cvt_i32_to_f32_bits(v);
	else if constexpr (OUT == DAQIRI_DTYPE_FP64)
		return cvt_i32_to_f64_bits(v);
	else
		return (uint32_t)v;
}

/* Largest of 16, 8, 4, 2, 1 that p is aligned to. */
__device__ __forceinline__ uint32_t
rc_align(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	return (a & 15) == 0 ? 16 : (a & 7) == 0 ? 8 : (a & 3) == 0 ? 4 :
	    (a & 1) == 0 ? 2 : 1;
}

/* 4 bytes at p, little-endian, p 4-aligned when al4. */
__device__ __forceinline__ uint32_t
rc_ld32(const uint8_t *p, bool al4)
{
	if (al4)
		return *(const uint32_t *)p;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* Store TB bytes held little-endian in words w at d, the widest way the
 * alignment al of the chunk base allows (d = base + c * TB). */
template <uint32_t TB, uint32_t NW>
__device__ __forceinline__ void
rc_store(uint8_t *d, const uint32_t (&w)[NW], uint32_t al)
{
	uint32_t i;

	if constexpr (TB % 16 == 0) {
		if (al >= 16) {
#pragma unroll
			for (i = 0; i < TB / 16; i++)
				__stcs((uint4 *)d + i, make_uint4(w[4 * i],
				    w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]));
			return;
		}
	}
	if constexpr (TB % 8 == 0) {
		if (al >= 8) {
#pragma unroll
			for (i = 0; i < TB / 8; i++)
				__stcs((uint2 *)d + i,
				    make_uint2(w[2 * i], w[2 * i + 1]));
			return;
		}
	}
	if constexpr (TB % 4 == 0) {
		if (al >= 4) {
#pragma unroll
			for (i = 0; i < TB / 4; i++)
				__stcs((unsigned int *)d + i, w[i]);
			return;
		}
	}
	if constexpr (TB == 2) {
		if (al >= 2) {
			__stcs((unsigned short *)d, (unsigned short)w[0]);
			return;
		}
	}
#pragma unroll
	for (i = 0; i < TB; i++)
		d[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
}

/* Convert one payload: each thread takes 4 input bytes at a time (8 int4,
 * 4 int8, 2 int16 or 1 int32 elements) and writes their outputs at once;
 * the element arithmetic is convert.h's. */
template <enum daqiri_dtype IN, enum daqiri_dtype OUT>
__device__ __forceinline__ void
rc_convert(const struct gpu_job &j, const struct rc_kparams &p, uint32_t tid,
	   uint32_t stride)
{
	constexpr uint32_t K = rc_k(IN), S = rc_s(OUT), TB = K * S;
	constexpr uint32_t NW = TB >= 4 ? TB / 4 : 1;
	const uint32_t nchunks = p.in_bytes / 4;
	const bool al4 = ((uintptr_t)j.src & 3) == 0;
	const uint32_t al = rc_align(j.dst);
	uint32_t c, k, done;

	for (c = tid; c < nchunks; c += stride) {
		uint32_t x = rc_ld32(j.src + 4 * (size_t)c, al4);
		uint8_t b[4] = { (uint8_t)x, (uint8_t)(x >> 8),
		    (uint8_t)(x >> 16), (uint8_t)(x >> 24) };
		uint32_t w[NW];

#pragma unroll
		for (k = 0; k < NW; k++)
			w[k] = 0;
#pragma unroll
		for (k = 0; k < K; k++) {
			uint64_t v = rc_out_bits<OUT>(cvt_read(IN, p.en, b, k));

			if constexpr (S == 2)
				w[k / 2] |= (uint32_t)v << (16 * (k % 2));
			else if constexpr (S == 4)
				w[k] = (uint32_t)v;
			else {
				w[2 * k] = (uint32_t)v;
				w[2 * k + 1] = (uint32_t)(v >> 32);
			}
		}
		rc_store<TB>(j.dst + (size_t)c * TB, w, al);
	}
	/* elements of a last partial word (int4/int8/int16 payloads whose
	 * size is no multiple of 4) */
	done = nchunks * K;
	if (tid < p.nelems - done)
		cvt_convert_element(IN, OUT, p.en, j.src, done + tid, j.dst);
}

/* Copy one payload as it is (no data_types). */
__device__ __forceinline__ void
rc_copy(const struct gpu_job &j, const struct rc_kparams &p, uint32_t tid,
	uint32_t stride)
{
	const uint32_t n = p.in_bytes;
	uint32_t i, n16 = 0;

	if (((uintptr_t)j.dst & 15) == 0) {
		const bool al4 = ((uintptr_t)j.src & 3) == 0;
		const bool al16 = ((uintptr_t)j.src & 15) == 0;

		n16 = n / 16;
		for (i = tid; i < n16; i += stride) {
			const uint8_t *s = j.src + 16 * (size_t)i;
			uint4 v;

			if (al16) {
				v = __ldcs((const uint4 *)s);
			} else {
				v.x = rc_ld32(s, al4);
				v.y = rc_ld32(s + 4, al4);
				v.z = rc_ld32(s + 8, al4);
				v.w = rc_ld32(s + 12, al4);
			}
			__stcs((uint4 *)j.dst + i, v);
		}
	}
	for (i = 16 * n16 + tid; i < n; i += stride)
		j.dst[i] = j.src[i];
}

/* Fill one missing slot exactly as cvt_fill_slot() does. */
__device__ __forceinline__ void
rc_fill(uint8_t *dst, const struct rc_kparams &p, uint32_t tid,
	uint32_t stride)
{
	uint64_t i, n16 = 0, pat = 0;
	uint32_t sz = 1;

	if (p.fill == DAQIRI_FILL_KEEP)
		return;
	if (p.fill == DAQIRI_FILL_NAN)
		pat = cvt_nan_pattern(p.out, &sz);
	if (((uintptr_t)dst & 15) == 0) {
		uint32_t w[4];

		/* sz divides 16: every 16-byte unit holds the same bytes */
		for (i = 0; i < 4; i++)
			w[i] = sz == 8 ? (uint32_t)(pat >> (32 * (i & 1))) :
			    sz == 4 ? (uint32_t)pat :
			    sz == 2 ? (uint32_t)pat * 0x10001u : 0;
		n16 = p.slot_bytes / 16;
		for (i = tid; i < n16; i += stride)
			__stcs((uint4 *)dst + i,
			    make_uint4(w[0], w[1], w[2], w[3]));
	}
	for (i = 16 * n16 + tid; i < p.slot_bytes; i += stride)
		dst[i] = (uint8_t)(pat >> (8 * (i % sz)));
}

/* One block row (blockIdx.y) per job; the x blocks stride over it. */
template <enum daqiri_dtype IN, enum daqiri_dtype OUT>
__global__ void __launch_bounds__(RC_BLOCK)
rc_kernel(struct rc_kparams p)
{
	const struct gpu_job j = p.jobs[blockIdx.y];
	const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
	const uint32_t stride = gridDim.x * blockDim.x;

	if (j.src == nullptr)
		rc_fill(j.dst, p, tid, stride);
	else if constexpr (IN == DAQIRI_DTYPE_RAW)
		rc_copy(j, p, tid, stride);
	else
		rc_convert<IN, OUT>(j, p, tid, stride);
}

typedef void (*rc_kernel_fn)(struct rc_kparams);

template <enum daqiri_dtype IN>
static rc_kernel_fn
rc_pick_out(enum daqiri_dtype out)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		return rc_kernel<IN, DAQIRI_DTYPE_FP16>;
	case DAQIRI_DTYPE_BF16:
		return rc_kernel<IN, DAQIRI_DTYPE_BF16>;
	case DAQIRI_DTYPE_FP32:
		return rc_kernel<IN, DAQIRI_DTYPE_FP32>;
	case DAQIRI_DTYPE_FP64:
		return rc_kernel<IN, DAQIRI_DTYPE_FP64>;
	case DAQIRI_DTYPE_INT32:
		return rc_kernel<IN, DAQIRI_DTYPE_INT32>;
	default:
		return nullptr;
	}
}

/* The kernel for a conversion, or NULL when it is not supported. */
static rc_kernel_fn
rc_pick(enum daqiri_dtype in, enum daqiri_dtype out)
{
	switch (in) {
	case DAQIRI_DTYPE_RAW:
		return rc_kernel<DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW>;
	case DAQIRI_DTYPE_INT4:
		return rc_pick_out<DAQIRI_DTYPE_INT4>(out);
	case DAQIRI_DTYPE_INT8:
		return rc_pick_out<DAQIRI_DTYPE_INT8>(out);
	case DAQIRI_DTYPE_INT16:
		return rc_pick_out<DAQIRI_DTYPE_INT16>(out);
	case DAQIRI_DTYPE_INT32:
		return rc_pick_out<DAQIRI_DTYPE_INT32>(out);
	default:
		return nullptr;
	}
}

/* x blocks per job: enough for the widest of conversion and fill. */
static unsigned
rc_grid_x(enum daqiri_dtype in, uint32_t in_bytes, uint64_t slot_bytes)
{
	uint64_t units = in == DAQIRI_DTYPE_RAW ? in_bytes / 16 : in_bytes / 4;
	uint64_t g;

	if (slot_bytes / 16 > units)
		units = slot_bytes / 16;
	g = (units + RC_BLOCK - 1) / RC_BLOCK;
	return g < 1 ? 1 : g > RC_GRID_X_MAX ? RC_GRID_X_MAX : (unsigned)g;
}

/* Check a conversion's geometry; 0 or -EINVAL with the message set. */
static int
rc_check(enum daqiri_dtype in, enum daqiri_dtype out, uint32_t in_bytes,
	 uint64_t slot_bytes)
{
	if (rc_pick(in, out) == nullptr) {
		rc_seterr("gpu reorder cannot convert %d to %d (outputs: fp16, "
		    "bf16, fp32, fp64, int32)", (int)in, (int)out);
		return -EINVAL;
	}
	if (in_bytes == 0 || cvt_in_elems(in, in_bytes) == 0) {
		rc_seterr("gpu reorder: %u payload bytes are no whole number "
		    "of input elements", in_bytes);
		return -EINVAL;
	}
	if (in != DAQIRI_DTYPE_RAW && slot_bytes !=
	    (uint64_t)cvt_in_elems(in, in_bytes) * cvt_out_size(out)) {
		rc_seterr("gpu reorder: slot of %llu bytes does not match %u "
		    "payload bytes", (unsigned long long)slot_bytes, in_bytes);
		return -EINVAL;
	}
	if (in == DAQIRI_DTYPE_RAW && slot_bytes < in_bytes) {
		rc_seterr("gpu reorder: slot of %llu bytes is shorter than %u "
		    "payload bytes", (unsigned long long)slot_bytes, in_bytes);
		return -EINVAL;
	}
	return 0;
}

static int
rc_launch(rc_kernel_fn fn, const struct rc_kparams *base, unsigned gx,
	  const struct gpu_job *jobs_dev, uint32_t njobs, cudaStream_t stream)
{
	struct rc_kparams p = *base;
	cudaError_t e;
	uint32_t n;
	void *args[1] = { &p };

	while (njobs > 0) {
		n = njobs > RC_GRID_Y_MAX ? RC_GRID_Y_MAX : njobs;
		p.jobs = jobs_dev;
		e = cudaLaunchKernel((const void *)fn, dim3(gx, n),
		    dim3(RC_BLOCK), args, 0, stream);
		if (e != cudaSuccess)
			return rc_cuda_fail("gpu reorder: kernel launch", e);
		jobs_dev += n;
		njobs -= n;
	}
	return 0;
}

extern "C" int
gpu_place_jobs(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
	       enum daqiri_fill fill, uint32_t in_bytes, uint64_t slot_bytes,
	       const struct gpu_job *jobs_dev, uint32_t njobs, void *stream)
{
	struct rc_kparams p;
	int rc;

	if (in == DAQIRI_DTYPE_RAW)
		out = DAQIRI_DTYPE_RAW;
	if ((rc = rc_check(in, out, in_bytes, slot_bytes)) != 0)
		return rc;
	p.jobs = jobs_dev;
	p.in_bytes = in_bytes;
	p.nelems = cvt_in_elems(in, in_bytes);
	p.slot_bytes = slot_bytes;
	p.en = en;
	p.out = out;
	p.fill = fill;
	return rc_launch(rc_pick(in, out), &p, rc_grid_x(in, in_bytes,
	    slot_bytes), jobs_dev, njobs, (cudaStream_t)stream);
}

/* ------------------------------------------------------------------ */
/* ranges and events, daemon-wide */

struct rc_range {
	std::atomic<int> live;
	uintptr_t base;
	size_t len;
	intptr_t delta;			/* device alias - host address */
	enum rc_kind kind;
	int owner;			/* RC_OWN_* */
};

enum { RC_OWN_DECLARED, RC_OWN_ALLOC, RC_OWN_REGISTER };

struct rc_event {
	const void *buf;
	cudaEvent_t ev;
};

static std::mutex rc_mu;		/* writers of the tables below */
static struct rc_range rc_ranges[GPU_MAX_RANGES];
static std::atomic<int> rc_nranges;
static struct rc_event rc_events[GPU_MAX_EVENTS];
static int rc_nevents;

/* Lock-free lookup: the range holding [p, p + len), or NULL. */
static const struct rc_range *
rc_range_find(uintptr_t p, size_t len)
{
	int i, n = rc_nranges.load(std::memory_order_acquire);

	for (i = 0; i < n; i++) {
		const struct rc_range *r = &rc_ranges[i];

		if (r->live.load(std::memory_order_acquire) && p >= r->base &&
		    p - r->base <= r->len && len <= r->len - (p - r->base))
			return r;
	}
	return nullptr;
}

static int
rc_range_add(const void *p, size_t len, enum rc_kind kind, intptr_t delta,
	     int owner)
{
	std::lock_guard<std::mutex> lk(rc_mu);
	int i, n = rc_nranges.load(std::memory_order_relaxed);

	for (i = 0; i < n; i++)
		if (!rc_ranges[i].live.load(std::memory_order_relaxed))
			break;
	if (i == GPU_MAX_RANGES) {
		rc_seterr("gpu: more than %d CUDA memory ranges",
		    GPU_MAX_RANGES);
		return -ENOSPC;
	}
	rc_ranges[i].base = (uintptr_t)p;
	rc_ranges[i].len = len;
	rc_ranges[i].delta = delta;
	rc_ranges[i].kind = kind;
	rc_ranges[i].owner = owner;
	rc_ranges[i].live.store(1, std::memory_order_release);
	if (i == n)
		rc_nranges.store(n + 1, std::memory_order_release);
	return 0;
}

/* Drop the range starting at p and destroy the events of buffers inside
 * it; returns its owner, or -1 when there was none. Caller holds rc_mu. */
static int
rc_range_del_locked(const void *p)
{
	int i, j, owner, n = rc_nranges.load(std::memory_order_relaxed);
	struct rc_range *r;

	for (i = 0; i < n; i++) {
		r = &rc_ranges[i];
		if (!r->live.load(std::memory_order_relaxed) ||
		    r->base != (uintptr_t)p)
			continue;
		r->live.store(0, std::memory_order_release);
		owner = r->owner;
		for (j = 0; j < rc_nevents; ) {
			uintptr_t b = (uintptr_t)rc_events[j].buf;

			if (b >= r->base && b - r->base < r->len) {
				(void)cudaEventDestroy(rc_events[j].ev);
				rc_events[j] = rc_events[--rc_nevents];
			} else {
				j++;
			}
		}
		return owner;
	}
	return -1;
}

/* Ask CUDA what p is. */
static enum rc_kind
rc_classify(const void *p, intptr_t *delta)
{
	cudaPointerAttributes a;

	*delta = 0;
	memset(&a, 0, sizeof(a));
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return RC_KIND_HOST;	/* older runtimes: unregistered */
	}
	switch (a.type) {
	case cudaMemoryTypeDevice:
	case cudaMemoryTypeManaged:
		return RC_KIND_DEVICE;
	case cudaMemoryTypeHost:
		if (a.devicePointer == nullptr)
			return RC_KIND_HOST;
		*delta = (intptr_t)a.devicePointer - (intptr_t)p;
		return RC_KIND_PINNED;
	default:
		return RC_KIND_HOST;
	}
}

extern "C" int
gpu_range_add(const void *p, size_t len)
{
	intptr_t delta;
	enum rc_kind k;

	if (p == nullptr || len == 0)
		return -EINVAL;
	k = rc_classify(p, &delta);
	if (k != RC_KIND_DEVICE && k != RC_KIND_PINNED) {
		rc_seterr("gpu: %p is not CUDA memory", p);
		return -EINVAL;
	}
	return rc_range_add(p, len, k, delta, RC_OWN_DECLARED);
}

extern "C" void
gpu_range_del(const void *p)
{
	std::lock_guard<std::mutex> lk(rc_mu);

	if (p != nullptr)
		(void)rc_range_del_locked(p);
}

extern "C" int
gpu_alloc(int ordinal, size_t bytes, void **out)
{
	cudaError_t e;
	void *p = nullptr;
	int rc;

	*out = nullptr;
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaSetDevice", e);
	if ((e = cudaMalloc(&p, bytes)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaMalloc", e);
	if ((rc = rc_range_add(p, bytes, RC_KIND_DEVICE, 0,
	    RC_OWN_ALLOC)) != 0) {
		(void)cudaFree(p);
		return rc;
	}
	*out = p;
	return 0;
}

extern "C" void
gpu_free(void *p)
{
	if (p == nullptr)
		return;
	{
		std::lock_guard<std::mutex> lk(rc_mu);

		(void)rc_range_del_locked(p);
	}
	(void)cudaFree(p);
}

extern "C" int
gpu_host_register(void *p, size_t len)
{
	cudaError_t e;
	void *d = nullptr;
	int rc;

	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	if ((e = cudaHostRegister(p, len, cudaHostRegisterPortable |
	    cudaHostRegisterMapped)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaHostRegister", e);
	if ((e = cudaHostGetDevicePointer(&d, p, 0)) != cudaSuccess) {
		rc = rc_cuda_fail("gpu: cudaHostGetDevicePointer", e);
		(void)cudaHostUnregister(p);
		return rc;
	}
	if ((rc = rc_range_add(p, len, RC_KIND_PINNED,
	    (intptr_t)d - (intptr_t)p, RC_OWN_REGISTER)) != 0) {
		(void)cudaHostUnregister(p);
		return rc;
	}
	return 0;
}

extern "C" void
gpu_host_unregister(void *p)
{
	if (p == nullptr)
		return;
	{
		std::lock_guard<std::mutex> lk(rc_mu);

		(void)rc_range_del_locked(p);
	}
	(void)cudaHostUnregister(p);
}

extern "C" int
gpu_ipc_handle(void *p, void *handle_out)
{
	cudaIpcMemHandle_t h;
	cudaError_t e;

	if ((e = cudaIpcGetMemHandle(&h, p)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaIpcGetMemHandle", e);
	memcpy(handle_out, &h, sizeof(h));
	return 0;
}

/* The interprocess event of tensor buffer buf, made on first use. */
static int
rc_event_get(const void *buf, cudaEvent_t *out)
{
	std::lock_guard<std::mutex> lk(rc_mu);
	cudaEvent_t ev;
	cudaError_t e;
	int i;

	for (i = 0; i < rc_nevents; i++)
		if (rc_events[i].buf == buf) {
			*out = rc_events[i].ev;
			return 0;
		}
	if (rc_nevents == GPU_MAX_EVENTS) {
		rc_seterr("gpu: more than %d tensor buffer events",
		    GPU_MAX_EVENTS);
		return -ENOSPC;
	}
	if ((e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming |
	    cudaEventInterprocess)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaEventCreateWithFlags", e);
	rc_events[rc_nevents].buf = buf;
	rc_events[rc_nevents].ev = ev;
	rc_nevents++;
	*out = ev;
	return 0;
}

extern "C" int
gpu_event_ipc_handle(const void *buf, void *handle_out)
{
	cudaIpcEventHandle_t h;
	cudaEvent_t ev;
	cudaError_t e;
	int rc;

	if ((rc = rc_event_get(buf, &ev)) != 0)
		return rc;
	if ((e = cudaIpcGetEventHandle(&h, ev)) != cudaSuccess)
		return rc_cuda_fail("gpu: cudaIpcGetEventHandle", e);
	memcpy(handle_out, &h, sizeof(h));
	return 0;
}

/* ------------------------------------------------------------------ */
/* the backend */

struct rc_table {
	struct gpu_job *h;		/* pinned, filled by place()/fill() */
	struct gpu_job *d;		/* device copy the kernel reads */
	uint8_t *stage;			/* pinned staging, host view */
	uint8_t *stage_dev;		/* ... and its device alias */
	uint32_t njobs;
	uint32_t staged;		/* staging bytes used */
	bool direct;			/* some job reads caller memory */
	bool busy;			/* launched; `done` not yet waited */
	cudaEvent_t done;
};

struct rc_page {
	uintptr_t page;
	intptr_t delta;
	enum rc_kind kind;
};

struct rc_bufent {
	const void *data;
	uint8_t *alias;			/* device address of data, or NULL */
	enum rc_kind kind;
	cudaEvent_t ev;			/* NULL until finish() needed it */
};

struct rc_state {
	const struct reorder_plan *plan;
	int dev;
	cudaStream_t stream;
	enum daqiri_dtype in, out;
	enum cfg_endian en;
	enum daqiri_fill fill;
	uint32_t in_bytes;
	uint32_t ppb;
	uint64_t slot_bytes;
	uint64_t tensor_bytes;
	rc_kernel_fn kernel;
	unsigned gx;
	struct rc_kparams kp;
	bool failed;			/* a CUDA error: stop using the GPU */
	uint64_t lost_seen;		/* st.lost at the last commit */
	unsigned cur;
	struct rc_table t[REORDER_CUDA_NTABLES];
	struct reorder_cuda_stats st;
	struct rc_bufent bufs[RC_BUF_CACHE];
	struct rc_page pages[RC_PAGE_CACHE];
};

static struct {
	const struct reorder_plan *plan;
	struct rc_state *s;
} rc_plans[RC_MAX_PLANS];

static void
rc_fail(struct rc_state *s, const char *what, cudaError_t e)
{
	(void)rc_cuda_fail(what, e);
	s->failed = true;
	s->st.errors++;
}

/* Kind and device alias of [p, p + len): declared ranges first, then the
 * page cache (one cudaPointerGetAttributes per new page). */
static enum rc_kind
rc_lookup(struct rc_state *s, const void *p, size_t len, intptr_t *delta)
{
	const struct rc_range *r;
	uintptr_t a = (uintptr_t)p, pg[2];
	enum rc_kind k[2];
	intptr_t d[2];
	int i;

	if ((r = rc_range_find(a, len)) != nullptr) {
		*delta = r->delta;
		return r->kind;
	}
	pg[0] = a >> RC_PAGE_SHIFT;
	pg[1] = (a + (len ? len - 1 : 0)) >> RC_PAGE_SHIFT;
	for (i = 0; i < 2; i++) {
		struct rc_page *c = &s->pages[pg[i] % RC_PAGE_CACHE];

		if (c->kind == RC_KIND_UNKNOWN || c->page != pg[i]) {
			c->page = pg[i];
			c->kind = rc_classify((const void *)(i == 0 ? a :
			    a + len - 1), &c->delta);
		}
		k[i] = c->kind;
		d[i] = c->delta;
	}
	*delta = d[0];
	if (k[0] == k[1] && (k[0] != RC_KIND_PINNED || d[0] == d[1]))
		return k[0];
	if (k[0] != RC_KIND_DEVICE && k[1] != RC_KIND_DEVICE)
		return RC_KIND_HOST;	/* host on both ends: stage it */
	return RC_KIND_BAD;
}

/* The cache entry of tensor buffer b (its kind and device alias). */
static struct rc_bufent *
rc_buf(struct rc_state *s, const struct reorder_buf *b)
{
	struct rc_bufent *e = &s->bufs[b->index % RC_BUF_CACHE];
	intptr_t delta;

	if (e->data != b->data) {
		e->data = b->data;
		e->kind = rc_lookup(s, b->data, s->tensor_bytes, &delta);
		e->alias = (e->kind == RC_KIND_DEVICE ||
		    e->kind == RC_KIND_PINNED) ?
		    (uint8_t *)b->data + delta : nullptr;
		e->ev = nullptr;
	}
	return e;
}

/* Launch the current table, move to the next one and make it empty. */
static int
rc_flush(struct rc_state *s)
{
	struct rc_table *t = &s->t[s->cur];
	cudaError_t e;
	int rc = 0;

	if (t->njobs == 0)
		return s->failed ? -EIO : 0;
	if (s->failed) {
		s->st.lost += t->njobs;
		t->njobs = 0;
		t->staged = 0;
		t->direct = false;
		return -EIO;
	}
	(void)cudaSetDevice(s->dev);
	if ((e = cudaMemcpyAsync(t->d, t->h, t->njobs * sizeof(*t->h),
	    cudaMemcpyHostToDevice, s->stream)) != cudaSuccess) {
		rc_fail(s, "gpu reorder: job table copy", e);
		return -EIO;
	}
	if ((rc = rc_launch(s->kernel, &s->kp, s->gx, t->d, t->njobs,
	    s->stream)) != 0) {
		s->failed = true;
		s->st.errors++;
		return rc;
	}
	if ((e = cudaEventRecord(t->done, s->stream)) != cudaSuccess) {
		rc_fail(s, "gpu reorder: cudaEventRecord", e);
		return -EIO;
	}
	t->busy = true;
	s->st.launches++;
	/* payloads read in place belong to the engine after this burst */
	if (t->direct) {
		if ((e = cudaEventSynchronize(t->done)) != cudaSuccess) {
			rc_fail(s, "gpu reorder: kernel", e);
			return -EIO;
		}
		t->busy = false;
	}
	s->cur = (s->cur + 1) % REORDER_CUDA_NTABLES;
	t = &s->t[s->cur];
	if (t->busy) {
		if ((e = cudaEventQuery(t->done)) == cudaErrorNotReady) {
			s->st.table_waits++;
			e = cudaEventSynchronize(t->done);
		}
		if (e != cudaSuccess) {
			rc_fail(s, "gpu reorder: kernel", e);
			return -EIO;
		}
		t->busy = false;
	}
	t->njobs = 0;
	t->staged = 0;
	t->direct = false;
	return 0;
}

/* A free job in the current table (launching a full one first). */
static struct rc_table *
rc_room(struct rc_state *s, uint32_t stage_bytes)
{
	struct rc_table *t = &s->t[s->cur];

	if (t->njobs == REORDER_CUDA_MAX_JOBS ||
	    t->staged + stage_bytes > REORDER_CUDA_STAGE_BYTES) {
		(void)rc_flush(s);
		t = &s->t[s->cur];
	}
	return t;
}

static void
rc_place(void *state, const struct reorder_buf *buf, uint32_t slot,
	 const uint8_t *in)
{
	struct rc_state *s = (struct rc_state *)state;
	struct rc_bufent *b = rc_buf(s, buf);
	uint64_t off = (uint64_t)slot * s->slot_bytes;
	struct rc_table *t;
	const uint8_t *src;
	intptr_t delta;
	enum rc_kind k;
	uint32_t sb;

	if (b->kind == RC_KIND_HOST) {
		/* a plain host tensor: the CPU writes it, if it can read in */
		k = rc_lookup(s, in, s->in_bytes, &delta);
		if (k != RC_KIND_HOST && k != RC_KIND_PINNED) {
			s->st.lost++;
			return;
		}
		cvt_slot_scalar(s->in, s->out, s->en, in, s->in_bytes,
		    (uint8_t *)buf->data + off);
		s->st.cpu_fallback++;
		return;
	}
	if (b->alias == nullptr || s->failed) {
		s->st.lost++;
		return;
	}
	k = rc_lookup(s, in, s->in_bytes, &delta);
	if (k == RC_KIND_BAD) {
		s->st.lost++;
		return;
	}
	sb = k == RC_KIND_HOST ? (s->in_bytes + RC_STAGE_ALIGN - 1) &
	    ~(RC_STAGE_ALIGN - 1) : 0;
	t = rc_room(s, sb);
	if (s->failed) {
		s->st.lost++;
		return;
	}
	if (k == RC_KIND_HOST) {
		memcpy(t->stage + t->staged, in, s->in_bytes);
		src = t->stage_dev + t->staged;
		t->staged += sb;
		s->st.staged++;
	} else {
		src = in + delta;
		t->direct = true;
		s->st.direct++;
	}
	t->h[t->njobs].src = src;
	t->h[t->njobs].dst = b->alias + off;
	t->njobs++;
	s->st.jobs++;
}

/* A slot place() or fill() could not write fails the commit too, so the
 * plan drops its batch instead of publishing it as written. */
static int
rc_commit(void *state)
{
	struct rc_state *s = (struct rc_state *)state;
	int rc = rc_flush(s);

	if (rc == 0 && s->st.lost != s->lost_seen)
		rc = -EFAULT;
	s->lost_seen = s->st.lost;
	return rc;
}

static void
rc_fill_slots(void *state, const struct reorder_buf *buf)
{
	struct rc_state *s = (struct rc_state *)state;
	struct rc_bufent *b;
	struct rc_table *t;
	uint32_t w, nw = (s->ppb + 63) / 64, slot;
	uint64_t miss;

	if (s->fill == DAQIRI_FILL_KEEP)
		return;
	b = rc_buf(s, buf);
	for (w = 0; w < nw; w++) {
		miss = ~buf->bitmap[w];
		if (w == nw - 1 && s->ppb % 64)
			miss &= (1ull << (s->ppb % 64)) - 1;
		while (miss) {
			slot = 64 * w + (uint32_t)__builtin_ctzll(miss);
			miss &= miss - 1;
			if (b->kind == RC_KIND_HOST) {
				cvt_fill_slot(s->out, s->fill,
				    (uint8_t *)buf->data +
				    (uint64_t)slot * s->slot_bytes,
				    s->slot_bytes);
				s->st.cpu_fallback++;
				continue;
			}
			if (b->alias == nullptr || s->failed) {
				s->st.lost++;
				continue;
			}
			t = rc_room(s, 0);
			if (s->failed) {
				s->st.lost++;
				continue;
			}
			t->h[t->njobs].src = nullptr;
			t->h[t->njobs].dst = b->alias +
			    (uint64_t)slot * s->slot_bytes;
			t->njobs++;
			s->st.fills++;
		}
	}
}

static int
rc_finish(void *state, const struct reorder_buf *buf)
{
	struct rc_state *s = (struct rc_state *)state;
	struct rc_bufent *b = rc_buf(s, buf);
	cudaError_t e;

	if (rc_flush(s) != 0)
		return -EIO;
	if (b->kind == RC_KIND_HOST)
		return 0;
	if (b->alias == nullptr || s->failed)
		return -EIO;
	(void)cudaSetDevice(s->dev);	/* the event is made on it */
	if (b->ev == nullptr && rc_event_get(buf->data, &b->ev) != 0) {
		s->failed = true;
		s->st.errors++;
		return -EIO;
	}
	if ((e = cudaEventRecord(b->ev, s->stream)) != cudaSuccess) {
		rc_fail(s, "gpu reorder: cudaEventRecord", e);
		return -EIO;
	}
	/* a consumer reads registered host memory with the CPU */
	if (b->kind == RC_KIND_PINNED &&
	    (e = cudaEventSynchronize(b->ev)) != cudaSuccess) {
		rc_fail(s, "gpu reorder: kernel", e);
		return -EIO;
	}
	return 0;
}

static void
rc_fini(void *state)
{
	struct rc_state *s = (struct rc_state *)state;
	struct rc_table *t;
	int i;

	if (s == nullptr)
		return;
	(void)cudaSetDevice(s->dev);
	if (s->stream != nullptr)
		(void)cudaStreamSynchronize(s->stream);
	for (i = 0; i < REORDER_CUDA_NTABLES; i++) {
		t = &s->t[i];
		if (t->h != nullptr)
			(void)cudaFreeHost(t->h);
		if (t->d != nullptr)
			(void)cudaFree(t->d);
		if (t->stage != nullptr)
			(void)cudaFreeHost(t->stage);
		if (t->done != nullptr)
			(void)cudaEventDestroy(t->done);
	}
	if (s->stream != nullptr)
		(void)cudaStreamDestroy(s->stream);
	(void)cudaGetLastError();
	{
		std::lock_guard<std::mutex> lk(rc_mu);

		for (i = 0; i < RC_MAX_PLANS; i++)
			if (rc_plans[i].s == s)
				rc_plans[i].s = nullptr, rc_plans[i].plan =
				    nullptr;
	}
	free(s);
}

static int
rc_init(struct reorder_plan *p, void **state)
{
	const struct reorder_geom *g;
	const struct cfg_reorder *r;
	struct rc_state *s;
	struct rc_table *t;
	cudaError_t e;
	void *dv;
	int i, rc;

	*state = nullptr;
	/* the device first: without one nothing else is looked at */
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	g = reorder_geom(p);
	r = reorder_config(p);
	if ((s = (struct rc_state *)calloc(1, sizeof(*s))) == nullptr) {
		rc_seterr("gpu reorder: out of memory");
		return -ENOMEM;
	}
	s->plan = p;
	s->in = r->has_data_types ? r->input_type : DAQIRI_DTYPE_RAW;
	s->out = r->has_data_types ? r->output_type : DAQIRI_DTYPE_RAW;
	s->en = r->endianness;
	s->fill = r->fill;
	s->in_bytes = g->in_bytes;
	s->ppb = g->ppb;
	s->slot_bytes = g->slot_bytes;
	s->tensor_bytes = g->tensor_bytes;
	if ((rc = rc_check(s->in, s->out, s->in_bytes, s->slot_bytes)) != 0)
		goto fail;
	if (s->in_bytes > REORDER_CUDA_STAGE_BYTES) {
		rc_seterr("gpu reorder: payloads of %u bytes exceed the %u "
		    "staging bytes", s->in_bytes, REORDER_CUDA_STAGE_BYTES);
		rc = -EINVAL;
		goto fail;
	}
	s->kernel = rc_pick(s->in, s->out);
	s->gx = rc_grid_x(s->in, s->in_bytes, s->slot_bytes);
	s->kp.in_bytes = s->in_bytes;
	s->kp.nelems = cvt_in_elems(s->in, s->in_bytes);
	s->kp.slot_bytes = s->slot_bytes;
	s->kp.en = s->en;
	s->kp.out = s->out;
	s->kp.fill = s->fill;
	if ((e = cudaGetDevice(&s->dev)) != cudaSuccess ||
	    (e = cudaSetDevice(s->dev)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream,
	    cudaStreamNonBlocking)) != cudaSuccess) {
		rc = rc_cuda_fail("gpu reorder: stream", e);
		goto fail;
	}
	for (i = 0; i < REORDER_CUDA_NTABLES; i++) {
		t = &s->t[i];
		if ((e = cudaHostAlloc((void **)&t->h, REORDER_CUDA_MAX_JOBS *
		    sizeof(*t->h), cudaHostAllocDefault)) != cudaSuccess ||
		    (e = cudaMalloc((void **)&t->d, REORDER_CUDA_MAX_JOBS *
		    sizeof(*t->d))) != cudaSuccess ||
		    (e = cudaHostAlloc((void **)&t->stage,
		    REORDER_CUDA_STAGE_BYTES, cudaHostAllocMapped |
		    cudaHostAllocPortable)) != cudaSuccess ||
		    (e = cudaHostGetDevicePointer(&dv, t->stage, 0)) !=
		    cudaSuccess ||
		    (e = cudaEventCreateWithFlags(&t->done,
		    cudaEventDisableTiming)) != cudaSuccess) {
			rc = rc_cuda_fail("gpu reorder: job tables", e);
			goto fail;
		}
		t->stage_dev = (uint8_t *)dv;
	}
	{
		std::lock_guard<std::mutex> lk(rc_mu);

		for (i = 0; i < RC_MAX_PLANS; i++)
			if (rc_plans[i].s == nullptr) {
				rc_plans[i].plan = p;
				rc_plans[i].s = s;
				break;
			}
	}
	rc_err[0] = '\0';
	*state = s;
	return 0;
fail:
	rc_fini(s);
	return rc;
}

extern "C" void
reorder_cuda_stats(const struct reorder_plan *p,
		   struct reorder_cuda_stats *out)
{
	std::lock_guard<std::mutex> lk(rc_mu);
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < RC_MAX_PLANS; i++)
		if (rc_plans[i].s != nullptr && rc_plans[i].plan == p) {
			*out = rc_plans[i].s->st;
			return;
		}
}

extern "C" const struct reorder_backend reorder_backend_cuda = {
	"cuda",
	rc_init,
	rc_fini,
	rc_place,
	rc_commit,
	rc_fill_slots,
	rc_finish,
};
