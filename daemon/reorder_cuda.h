/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA reorder backend (reorder_cuda.cu) and the few CUDA host helpers
 * the daemon needs for device regions. In a build without CUDA the helpers
 * are inline stand-ins that report "built without CUDA", so callers need
 * no #ifdef; the backend itself then does not exist (reorder_cuda_backend()
 * returns NULL).
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
 *  - A payload read in place is owned by the caller only for the burst:
 *    commit() waits for the kernel of such a burst before it returns, so
 *    the engine may reuse the packet buffer afterwards. Staged bursts are
 *    not waited for.
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

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Payloads queued per kernel launch; a fuller burst launches early. */
#define REORDER_CUDA_MAX_JOBS		1024
/* Job tables in flight (a table is reused once its launch finished). */
#define REORDER_CUDA_NTABLES		4
/* Pinned staging bytes per job table, for payloads not device-readable. */
#define REORDER_CUDA_STAGE_BYTES	(4u << 20)
/* Ranges gpu_range_add() can hold (regions of the whole daemon). */
#define GPU_MAX_RANGES			64
/* Tensor buffers with an interprocess event, daemon-wide. */
#define GPU_MAX_EVENTS			4096
/* Size of a cudaIpcMemHandle_t / cudaIpcEventHandle_t. */
#define GPU_IPC_HANDLE_BYTES		64
/* Longest message reorder_cuda_last_error() returns, NUL included. */
#define REORDER_CUDA_ERR_MAX		256

/* One placement: payload src (device-readable) into the slot at dst
 * (device-writable); src NULL = fill the slot per the plan's fill. */
struct gpu_job {
	const uint8_t *src;
	uint8_t *dst;
};

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

/*
 * The last error of this thread's reorder_cuda / gpu_* calls, e.g. "no
 * CUDA device: CUDA driver version is insufficient for CUDA runtime
 * version (error 35)"; "" when none. Thread-local; valid until the next
 * call on the thread.
 */
const char *reorder_cuda_last_error(void);

/* Counters of the plan p runs with the CUDA backend (zeros otherwise).
 * Call it on the plan's thread (the counters are not atomic). */
void reorder_cuda_stats(const struct reorder_plan *p,
			struct reorder_cuda_stats *out);

/* 1 when a CUDA device can be used; else 0 and the reason in why (the
 * same text as reorder_cuda_last_error()). why may be NULL. */
int gpu_available(char *why, size_t len);

/* cudaMalloc bytes on GPU ordinal (left the current device) and declare
 * the range. 0, or -ENODEV / -ENOMEM with reorder_cuda_last_error(). */
int gpu_alloc(int ordinal, size_t bytes, void **out);

/* cudaFree a gpu_alloc() pointer, drop its range and the events of the
 * buffers inside it. NULL-safe. */
void gpu_free(void *p);

/* cudaHostRegister (portable, mapped) len bytes at p and declare the
 * range. 0 or a negative errno. */
int gpu_host_register(void *p, size_t len);

/* Undo gpu_host_register(). NULL-safe. */
void gpu_host_unregister(void *p);

/*
 * Declare [p, p + len) as CUDA memory allocated elsewhere (device memory
 * or registered host memory; its kind is asked once). The backend then
 * reads payloads there in place without asking per page. 0, -ENOSPC when
 * GPU_MAX_RANGES are declared, -EINVAL when p is not CUDA memory.
 */
int gpu_range_add(const void *p, size_t len);

/* Forget the range starting at p (before freeing it). */
void gpu_range_del(const void *p);

/* The cudaIpcMemHandle_t of device allocation p, GPU_IPC_HANDLE_BYTES
 * into handle_out. 0 or a negative errno. */
int gpu_ipc_handle(void *p, void *handle_out);

/*
 * The cudaIpcEventHandle_t of the interprocess event of the tensor buffer
 * that starts at buf (the event finish() records for it; created on the
 * first call for that buffer, on the current device), GPU_IPC_HANDLE_BYTES
 * into handle_out. Call it when the buffer is made, so the data path
 * never creates one. 0 or a negative errno.
 */
int gpu_event_ipc_handle(const void *buf, void *handle_out);

/*
 * Launch the placement kernel over njobs jobs (jobs_dev: device-readable
 * array) on stream (a cudaStream_t; NULL = the legacy default stream):
 * each job converts in_bytes of input into slot_bytes of output exactly as
 * cvt_slot_scalar(), or fills the slot as cvt_fill_slot() when src is
 * NULL. Asynchronous. 0, or -EINVAL for an unsupported pair (outputs:
 * fp16, bf16, fp32, fp64, int32; NONE copies), -EIO on a launch error.
 * The backend's own path; exported for tests and the benchmark.
 */
int gpu_place_jobs(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
		   enum daqiri_fill fill, uint32_t in_bytes, uint64_t slot_bytes,
		   const struct gpu_job *jobs_dev, uint32_t njobs, void *stream);

#else /* !DAQIRI_HAVE_CUDA */

#define REORDER_CUDA_NO_BUILD	"this daqirid was built without CUDA"

static inline const struct reorder_backend *
reorder_cuda_backend(void)
{
	return NULL;
}

static inline const char *
reorder_cuda_last_error(void)
{
	return REORDER_CUDA_NO_BUILD;
}

static inline int
gpu_available(char *why, size_t len)
{
	if (why != NULL && len > 0)
		snprintf(why, len, "%s", REORDER_CUDA_NO_BUILD);
	return 0;
}

static inline int
gpu_alloc(int ordinal, size_t bytes, void **out)
{
	(void)ordinal;
	(void)bytes;
	*out = NULL;
	return -ENOSYS;
}

static inline void
gpu_free(void *p)
{
	(void)p;
}

static inline int
gpu_host_register(void *p, size_t len)
{
	(void)p;
	(void)len;
	return -ENOSYS;
}

static inline void
gpu_host_unregister(void *p)
{
	(void)p;
}

static inline int
gpu_range_add(const void *p, size_t len)
{
	(void)p;
	(void)len;
	return -ENOSYS;
}

static inline void
gpu_range_del(const void *p)
{
	(void)p;
}

static inline int
gpu_ipc_handle(void *p, void *handle_out)
{
	(void)p;
	(void)handle_out;
	return -ENOSYS;
}

static inline int
gpu_event_ipc_handle(const void *buf, void *handle_out)
{
	(void)buf;
	(void)handle_out;
	return -ENOSYS;
}

#endif /* DAQIRI_HAVE_CUDA */

#ifdef __cplusplus
}
#endif

#endif
