/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a CUDA kernel body needs to run on the CPU too (C11 and CUDA): the
 * coordinates of its thread, memory primitives, and the host grid runner
 * that visits every (block, thread) of a launch in a permuted order. On the
 * device the primitives are plain (streaming) loads and stores; on the host
 * every access goes through the hooks the runner was given (kmem_hooks):
 * a test watches each access there, the CUDA stand-in (tests/standin/)
 * translates device addresses there and faults on bad ones. Last, the
 * contract by which a program offers its kernels' CPU bodies to the
 * stand-in (KSTANDIN_REGISTER, looked up with dlsym()).
 *
 * Rules for a body: it reads and writes memory only through k_ld*() and
 * k_st*() (a vector access must be aligned to its size, as on the GPU), it
 * takes its coordinates from its struct kidx, and it neither synchronises
 * with nor depends on the order of other threads: the runner permutes them.
 * The hooks are per translation unit: a body must be compiled in the file
 * that calls kgrid_run() (bodies are static inline in headers, so it is).
 */
#ifndef DAQIRI_KERNEL_H
#define DAQIRI_KERNEL_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define K_HD static __host__ __device__ __forceinline__
#else
#define K_HD static inline
#endif

#ifdef __cplusplus
#define K_TLS thread_local
#else
#define K_TLS _Thread_local
#endif

/* A launch's dimensions (dim3) and one thread's coordinates. */
struct kdim {
	uint32_t x, y, z;
};

struct kidx {
	struct kdim block;		/* blockIdx */
	struct kdim thread;		/* threadIdx */
	struct kdim grid;		/* gridDim */
	struct kdim bdim;		/* blockDim */
};

#ifdef __CUDACC__
/* This thread's coordinates on the device (the runner's on the host). */
static __device__ __forceinline__ struct kidx
k_idx(void)
{
	struct kidx ix;

	ix.block.x = blockIdx.x;
	ix.block.y = blockIdx.y;
	ix.block.z = blockIdx.z;
	ix.thread.x = threadIdx.x;
	ix.thread.y = threadIdx.y;
	ix.thread.z = threadIdx.z;
	ix.grid.x = gridDim.x;
	ix.grid.y = gridDim.y;
	ix.grid.z = gridDim.z;
	ix.bdim.x = blockDim.x;
	ix.bdim.y = blockDim.y;
	ix.bdim.z = blockDim.z;
	return ix;
}
#endif

/* 16 bytes as four little-endian words (uint4 on the device). */
struct k_u4 {
	uint32_t x, y, z, w;
};

enum kmem_op {
	KMEM_LOAD,
	KMEM_STORE,
	KMEM_OP_MAX
};

/*
 * Host side of the primitives: access() says where the body's access of n
 * bytes (1, 2, 4, 8 or 16) at addr really goes, or NULL to drop it (a
 * dropped load reads zeros). It is called for every access, so it can
 * check alignment, bounds and who wrote what; ix is the thread's.
 */
struct kmem_hooks {
	void *(*access)(void *ctx, const struct kidx *ix, uintptr_t addr,
			uint32_t n, enum kmem_op op);
	void *ctx;
};

#ifndef __CUDA_ARCH__
/* The runner's hooks and thread, for the primitives of this translation
 * unit (bodies are inline, so they see the runner's copy). */
static K_TLS const struct kmem_hooks *k_cur_hooks;
static K_TLS const struct kidx *k_cur_ix;

static inline void *
k_host_access(const void *p, uint32_t n, enum kmem_op op)
{
	return k_cur_hooks->access(k_cur_hooks->ctx, k_cur_ix, (uintptr_t)p,
	    n, op);
}

#define K_HOST_LOAD(T, p) do {						\
	const void *q_ = k_host_access((p), sizeof(T), KMEM_LOAD);	\
	T v_;								\
	if (q_ == NULL)							\
		memset(&v_, 0, sizeof(v_));				\
	else								\
		memcpy(&v_, q_, sizeof(v_));				\
	return v_;							\
} while (0)

#define K_HOST_STORE(T, p, v) do {					\
	void *q_ = k_host_access((p), sizeof(T), KMEM_STORE);		\
	T v_ = (v);							\
	if (q_ != NULL)							\
		memcpy(q_, &v_, sizeof(v_));				\
} while (0)
#endif

/* Loads. ld128 is a streaming load (__ldcs): read once. */
K_HD uint8_t
k_ld8(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return *p;
#else
	K_HOST_LOAD(uint8_t, p);
#endif
}

K_HD uint32_t
k_ld32(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return *(const uint32_t *)p;
#else
	K_HOST_LOAD(uint32_t, p);
#endif
}

K_HD uint64_t
k_ld64(const void *p)
{
#ifdef __CUDA_ARCH__
	return *(const uint64_t *)p;
#else
	K_HOST_LOAD(uint64_t, p);
#endif
}

K_HD struct k_u4
k_ld128(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	uint4 v = __ldcs((const uint4 *)p);
	struct k_u4 r = { v.x, v.y, v.z, v.w };

	return r;
#else
	K_HOST_LOAD(struct k_u4, p);
#endif
}

/* Stores, all streaming (__stcs): tensors are written once and read by
 * another process later. */
K_HD void
k_st8(uint8_t *p, uint8_t v)
{
#ifdef __CUDA_ARCH__
	*p = v;
#else
	K_HOST_STORE(uint8_t, p, v);
#endif
}

K_HD void
k_st16(uint8_t *p, uint16_t v)
{
#ifdef __CUDA_ARCH__
	__stcs((unsigned short *)p, (unsigned short)v);
#else
	K_HOST_STORE(uint16_t, p, v);
#endif
}

K_HD void
k_st32(uint8_t *p, uint32_t v)
{
#ifdef __CUDA_ARCH__
	__stcs((unsigned int *)p, v);
#else
	K_HOST_STORE(uint32_t, p, v);
#endif
}

K_HD void
k_st64(uint8_t *p, uint32_t lo, uint32_t hi)
{
#ifdef __CUDA_ARCH__
	__stcs((uint2 *)p, make_uint2(lo, hi));
#else
	K_HOST_STORE(uint64_t, p, (uint64_t)hi << 32 | lo);
#endif
}

K_HD void
k_st128(uint8_t *p, struct k_u4 v)
{
#ifdef __CUDA_ARCH__
	__stcs((uint4 *)p, make_uint4(v.x, v.y, v.z, v.w));
#else
	K_HOST_STORE(struct k_u4, p, v);
#endif
}

#ifndef __CUDA_ARCH__

/* One thread's body as the runner calls it. */
typedef void (*kbody_fn)(void *ctx, const struct kidx *ix);

static inline uint64_t
kgrid_gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * Run body once for every (block, thread) of grid x block, on this thread,
 * in an order permuted by seed (i -> (a * i + c) mod N with a coprime to
 * N), with h as the primitives' hooks. Threads never overlap in time, so a
 * body that needs another thread's write to have happened (or not) is
 * caught by a seed that orders them the other way.
 */
static inline void
kgrid_run(struct kdim grid, struct kdim block, uint64_t seed,
	  const struct kmem_hooks *h, kbody_fn body, void *ctx)
{
	uint64_t nb = (uint64_t)block.x * block.y * block.z;
	uint64_t n = (uint64_t)grid.x * grid.y * grid.z * nb;
	uint64_t a, c, i, k, t, b;
	const struct kmem_hooks *ph = k_cur_hooks;
	const struct kidx *pix = k_cur_ix;
	struct kidx ix;

	if (n == 0)
		return;
	seed = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	a = (seed >> 17) % n;
	a = a == 0 ? 1 : a;
	while (kgrid_gcd(a, n) != 1)
		a++;
	c = (seed >> 3) % n;
	ix.grid = grid;
	ix.bdim = block;
	k_cur_hooks = h;
	k_cur_ix = &ix;
	for (i = 0; i < n; i++) {
		k = (uint64_t)(((unsigned __int128)a * i + c) % n);
		t = k % nb;
		b = k / nb;
		ix.thread.x = (uint32_t)(t % block.x);
		ix.thread.y = (uint32_t)(t / block.x % block.y);
		ix.thread.z = (uint32_t)(t / block.x / block.y);
		ix.block.x = (uint32_t)(b % grid.x);
		ix.block.y = (uint32_t)(b / grid.x % grid.y);
		ix.block.z = (uint32_t)(b / grid.x / grid.y);
		body(ctx, &ix);
	}
	k_cur_hooks = ph;
	k_cur_ix = pix;
}

/*
 * The stand-in contract. A program that launches kernels offers each
 * one's CPU version under the address of its host stub (what it passes to
 * cudaLaunchKernel); the stand-in runs that when the launch's turn comes.
 * fn gets the launch's arguments as cudaLaunchKernel took them (copies of
 * nargs values of arg_sizes bytes), its shape, a seed for the order and
 * the stand-in's hooks (device addresses in, host views out).
 */
typedef void (*kstandin_fn)(void **args, struct kdim grid, struct kdim block,
			    uint64_t seed, const struct kmem_hooks *h);

struct kstandin_kernel {
	const void *stub;		/* the __global__ function's address */
	const char *name;		/* for the stand-in's messages */
	kstandin_fn fn;
	uint32_t nargs;
	uint32_t arg_sizes[4];
};

/* Exported by the stand-in library (and by nothing else): register n
 * kernels; 0 or a negative errno. */
#define KSTANDIN_REGISTER	"daqiri_standin_register"
typedef int (*kstandin_register_fn)(const struct kstandin_kernel *k,
				    uint32_t n);

#endif /* !__CUDA_ARCH__ */

#endif
