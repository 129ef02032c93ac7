/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The header shadow kernel's body (C11 and CUDA): for frames that landed
 * whole in device memory, copy each frame's first bytes into its slot of
 * pinned host memory, so that the CPU classifies and reads sequence
 * numbers there exactly as with header-data split (geometry.h). One block
 * row per frame, its threads stride over the bytes. reorder_cuda.cu
 * launches it; the host grid runner runs the same body (the unit tests,
 * the CUDA stand-in).
 */
#ifndef DAQIRI_SHADOW_KERNEL_H
#define DAQIRI_SHADOW_KERNEL_H

#include <stdint.h>

#include "kernel.h"

/* One frame: len bytes at src (device memory) go to dst + job * pitch. */
struct shadow_job {
	const uint8_t *src;
	uint64_t len;			/* at most the pitch */
};

struct shadow_params {
	const struct shadow_job *jobs;	/* device-readable */
	uint8_t *dst;			/* device-writable view of the host
					 * slots */
	uint32_t pitch;			/* bytes between slots */
};

/* Threads per block of the launch (the shadow is 128 bytes at most). */
#define SHADOW_THREADS	32

K_HD void
shadow_kernel(const struct shadow_params *p, const struct kidx *ix)
{
	const struct shadow_job *j = p->jobs + ix->block.y;
	const uint8_t *src = (const uint8_t *)(uintptr_t)k_ld64(&j->src);
	uint64_t len = k_ld64(&j->len), i;
	uint8_t *dst = p->dst + (uint64_t)ix->block.y * p->pitch;

	if (len > p->pitch)
		len = p->pitch;
	for (i = ix->block.x * ix->bdim.x + ix->thread.x; i < len;
	    i += (uint64_t)ix->grid.x * ix->bdim.x)
		k_st8(dst + i, k_ld8(src + i));
}

#ifndef __CUDA_ARCH__

static inline void
shadow_cpu_body(void *ctx, const struct kidx *ix)
{
	shadow_kernel((const struct shadow_params *)ctx, ix);
}

/* The kernel on the CPU (a kstandin_fn): args[0] is its struct
 * shadow_params. */
static inline void
shadow_cpu_launch(void **args, struct kdim grid, struct kdim block,
		  uint64_t seed, const struct kmem_hooks *h)
{
	kgrid_run(grid, block, seed, h, shadow_cpu_body, args[0]);
}

#endif

#endif
