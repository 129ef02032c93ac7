/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA reorder backend (reorder_cuda.cu): the placement kernel and the
 * reorder_backend that drives it, called on the thread of the plan (an RX
 * worker). Device management (allocations, ranges, events, errors) is
 * gpu.h's. In a build without CUDA the backend does not exist
 * (reorder_cuda_backend() returns NULL).
 *
 * Memory the backend touches (the choice, documented once):
 *  - Tensor buffers (reorder_buf.data) must be device memory (cudaMalloc)
 *    or host memory registered with CUDA (cudaHostRegister/cudaHostAlloc);
 *    such host memory is used through its device alias (with UVA the same
 *    address). Plain host buffers are converted on the CPU with the same
 *    convert.h arithmetic (counted as cpu_fallback).
 *  - Packet payloads (the `in` of place()) are read by the kernel in place
 *    when they are device memory or registered host memory (GPUDirect and
 *    host_pinned queues); any other host memory is first copied into a
 *    pinned staging area of the backend. The kind of a pointer is looked
 *    up in ranges declared with gpu_range_add() (gpu_alloc() and
 *    gpu_host_register() declare theirs), else asked of
 *    cudaPointerGetAttributes() once per 4 KiB page and cached.
 *  - A payload read in place stays the backend's after commit() until
 *    the launch that reads it finished: the caller asks reorder_fence()
 *    after the burst and gives the frames back to the engine once
 *    reorder_fence_done() says so (the worker keeps such bursts in
 *    flight, a bounded number). No CPU wait per burst. Staged payloads
 *    were copied at place() and need no fence.
 *  - finish() records the buffer's interprocess event (one per tensor
 *    buffer, see gpu_event_ipc_handle()) after everything queued for it;
 *    for a buffer in registered host memory it also waits for that event,
 *    since a consumer reads such a tensor with the CPU.
 *  - The plan runs on the CUDA device current on the thread that creates
 *    it (cudaSetDevice(), or gpu_alloc(), which leaves its ordinal
 *    current); every later call selects that device again, so the plan may
 *    be driven from another thread.
 */
#ifndef DAQIRI_REORDER_CUDA_H
#define DAQIRI_REORDER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__cplusplus) && !defined(_Static_assert)
/* proto/desc.h uses the C11 spelling */
#define _Static_assert static_assert
#define REORDER_CUDA_SA_DEFINED
#endif
#include "reorder.h"
#ifdef REORDER_CUDA_SA_DEFINED
#undef _Static_assert
#undef REORDER_CUDA_SA_DEFINED
#endif
#include "reorder_kernel.h"	/* struct reorder_cuda_job */

/* Payloads queued per kernel launch; a fuller burst launches early. */
#define REORDER_CUDA_MAX_JOBS		1024
/* Job tables in flight (a table is reused once its launch finished). */
#define REORDER_CUDA_NTABLES		4
/* Pinned staging bytes per job table, for payloads not device-readable. */
#define REORDER_CUDA_STAGE_BYTES	(4u << 20)
/* Longest message reorder_cuda_last_error() returns, NUL included. */
#define REORDER_CUDA_ERR_MAX	GPU_ERR_MAX

/* What the backend did, per plan (reorder_cuda_stats()). */
struct reorder_cuda_stats {
	uint64_t launches;		/* kernel launches */
	uint64_t jobs;			/* payloads placed on the GPU */
	uint64_t fills;			/* slots filled on the GPU */
	uint64_t staged;		/* payloads copied to staging first */
	uint64_t direct;		/* payloads read in place */
	uint64_t cpu_fallback;		/* slots written on the CPU */
	uint64_t table_waits;		/* waits for a job table to drain */
	uint64_t errors;		/* CUDA errors (the plan stops placing) */
	uint64_t lost;			/* slots not written after an error or
					 * with a payload the GPU cannot read */
};

#ifdef DAQIRI_HAVE_CUDA

/* The backend: pass to reorder_create(). init() fails with -ENODEV when
 * there is no usable device, -EINVAL for a conversion it cannot run, and
 * leaves the reason in reorder_cuda_last_error(). */
extern const struct reorder_backend reorder_backend_cuda;

static inline const struct reorder_backend *
reorder_cuda_backend(void)
{
	return &reorder_backend_cuda;
}

/* Counters of the plan p runs with the CUDA backend (zeros otherwise).
 * Call it on the plan's thread (the counters are not atomic). */
void reorder_cuda_stats(const struct reorder_plan *p,
			struct reorder_cuda_stats *out);

/*
 * Launch the placement kernel over njobs jobs (jobs_dev: device-readable
 * array) on stream (a cudaStream_t; NULL = the legacy default stream):
 * each job converts in_bytes of input into slot_bytes of output exactly as
 * cvt_slot_scalar(), or fills the slot as cvt_fill_slot() when src is
 * NULL. Asynchronous. 0, or -EINVAL for an unsupported pair (outputs:
 * fp16, bf16, fp32, fp64, int32; NONE copies), -EIO on a launch error.
 * The backend's own path; exported for tests and the benchmark.
 */
int reorder_cuda_place_jobs(enum daqiri_dtype in, enum daqiri_dtype out,
			    enum cfg_endian en, enum daqiri_fill fill,
			    uint32_t in_bytes, uint64_t slot_bytes,
			    const struct reorder_cuda_job *jobs_dev,
			    uint32_t njobs, void *stream);

/*
 * The header shadow of frames that land whole in device memory (a queue
 * whose only region is a device region; geometry.h). gpu_shadow_create()
 * makes one for bursts of up to max frames and bytes (at most 4096; the
 * daemon's is GEOM_SHADOW_BYTES) of shadow each, on the current device
 * (main thread; 0, -ENODEV,
 * -ENOMEM or -EINVAL with gpu_last_error()). gpu_shadow_burst(), on the
 * RX worker, copies the first bytes of each of the n frames f[] (each
 * whole in device memory: hdr/hdr_len, or payload/payload_len when hdr_len
 * is 0) into pinned host memory with one kernel launch and one wait, then
 * rewrites each frame as its shadow plus device payload (rx_frame.h
 * RX_FRAME_DEV_PAYLOAD). The shadows stay valid until the next call. 0,
 * or a negative errno with the frames untouched. gpu_shadow_destroy() is
 * NULL-safe.
 */
struct gpu_shadow;
int gpu_shadow_create(uint32_t max, uint32_t bytes, struct gpu_shadow **out);
int gpu_shadow_burst(struct gpu_shadow *s, struct rx_frame *f, unsigned n);
void gpu_shadow_destroy(struct gpu_shadow *s);

#else /* !DAQIRI_HAVE_CUDA */

#define REORDER_CUDA_NO_BUILD	GPU_NO_BUILD

struct gpu_shadow;

static inline int
gpu_shadow_create(uint32_t max, uint32_t bytes, struct gpu_shadow **out)
{
	(void)max;
	(void)bytes;
	*out = NULL;
	return -ENOSYS;
}

static inline int
gpu_shadow_burst(struct gpu_shadow *s, struct rx_frame *f, unsigned n)
{
	(void)s;
	(void)f;
	(void)n;
	return -ENOSYS;
}

static inline void
gpu_shadow_destroy(struct gpu_shadow *s)
{
	(void)s;
}

static inline const struct reorder_backend *
reorder_cuda_backend(void)
{
	return NULL;
}

#endif /* DAQIRI_HAVE_CUDA */

/*
 * The last error of this thread's reorder_cuda and gpu_* calls: one text,
 * kept by gpu.cu (gpu_last_error()); "this daqirid was built without CUDA"
 * in a build without CUDA.
 */
static inline const char *
reorder_cuda_last_error(void)
{
	return gpu_last_error();
}

#ifdef __cplusplus
}
#endif

#endif
