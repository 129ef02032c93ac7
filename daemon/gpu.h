/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA device management (gpu.cu): is there a device, device and pinned
 * allocations, the daemon-wide table of CUDA memory ranges, IPC handles,
 * the interprocess event of each tensor buffer, device TX pools and the
 * copies that stage them to host memory, and the thread-local text of
 * the last CUDA error. The main thread allocates and frees (mem.c,
 * stream_main.c, tx.c); the reorder backend (reorder_cuda.cu) looks
 * ranges and events up from the worker threads, and the socket engine's
 * TX half (engine_socket_tx.c) copies from its TX worker. In a build without CUDA every function is an
 * inline stand-in that reports "built without CUDA", so callers need no
 * #ifdef. C-callable; no CUDA type appears here.
 */
#ifndef DAQIRI_GPU_H
#define DAQIRI_GPU_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Ranges gpu_range_add() can hold (regions of the whole daemon). */
#define GPU_MAX_RANGES			64
/* Tensor buffers with an interprocess event, daemon-wide. */
#define GPU_MAX_EVENTS			4096
/* Size of a cudaIpcMemHandle_t / cudaIpcEventHandle_t. */
#define GPU_IPC_HANDLE_BYTES		64
/* Longest message gpu_last_error() returns, NUL included. */
#define GPU_ERR_MAX			256
/* What every function says in a build without CUDA. */
#define GPU_NO_BUILD			"this daqirid was built without CUDA"

/* What a pointer is to the GPU (gpu_range_find(), gpu_ptr_classify()). */
enum gpu_ptr_kind {
	GPU_PTR_UNKNOWN,		/* not asked yet (callers' caches) */
	GPU_PTR_HOST,			/* plain host memory */
	GPU_PTR_DEVICE,			/* device-readable (device, managed) */
	GPU_PTR_PINNED,			/* registered host memory, via alias */
	GPU_PTR_BAD,			/* neither (a caller's verdict on a
					 * span of mixed kinds) */
	GPU_PTR_MAX
};

#ifdef DAQIRI_HAVE_CUDA

/*
 * The last error of this thread's gpu_* and reorder_cuda calls, e.g. "no
 * CUDA device: CUDA driver version is insufficient for CUDA runtime
 * version (error 35)"; "" when none. Thread-local; valid until the next
 * call on the thread.
 */
const char *gpu_last_error(void);

/* 1 when a CUDA device can be used; else 0 and the reason in why (the
 * same text as gpu_last_error()). why may be NULL. */
int gpu_available(char *why, size_t len);

/* cudaMalloc bytes on GPU ordinal (left the current device) and declare
 * the range. 0, or -ENODEV / -ENOMEM with gpu_last_error(). */
int gpu_alloc(int ordinal, size_t bytes, void **out);

/* cudaFree a gpu_alloc() or gpu_alloc_pool() pointer, drop its range
 * and the events of the buffers inside it. NULL-safe. */
void gpu_free(void *p);

/*
 * A TX channel's device pool (tx.c): cudaMalloc bytes on GPU ordinal,
 * zeroed (a pool never shows what an earlier owner left in reused device
 * memory), declaring no range: only the daemon's own copies and the
 * owner's kernels touch it, so GPU_MAX_RANGES bounds regions alone.
 * Main thread. 0, or -ENODEV / -ENOMEM / -EIO with gpu_last_error().
 */
int gpu_alloc_pool(int ordinal, size_t bytes, void **out);

/* One copy of gpu_copy_to_host() (device to host) or
 * gpu_copy_to_device() (host to device). */
struct gpu_copy {
	void *dst;
	const void *src;
	size_t len;
};

/* A CUDA stream of its own (non-blocking) on GPU ordinal, for one
 * thread's copies. 0 or a negative errno with gpu_last_error(). */
int gpu_stream_create(int ordinal, void **out);

/* Destroy it (after its work). NULL-safe. */
void gpu_stream_destroy(void *stream);

/*
 * Copy v[0..n) from device to host on stream (gpu_stream_create() of the
 * same ordinal, made current on the calling thread first) and wait until every copy is done: on return the host bytes are there and
 * the device memory is no longer read. Device memory another process
 * writes must be complete before (that process synchronised). 0, or a
 * negative errno with gpu_last_error() (then none of the host bytes may
 * be trusted).
 */
int gpu_copy_to_host(int ordinal, void *stream, const struct gpu_copy *v,
		     unsigned n);

/* The same from host to device: on return the device bytes are there and
 * the host memory is no longer read (the DPDK engine's software loopback
 * writing frames into a device region, as a NIC's DMA would). */
int gpu_copy_to_device(int ordinal, void *stream, const struct gpu_copy *v,
		       unsigned n);

/* cudaHostRegister (portable, mapped) len bytes at p and declare the
 * range. 0 or a negative errno. */
int gpu_host_register(void *p, size_t len);

/* Undo gpu_host_register(). NULL-safe. */
void gpu_host_unregister(void *p);

/*
 * Declare [p, p + len) as CUDA memory allocated elsewhere (device memory
 * or registered host memory; its kind is asked once). The reorder backend
 * then reads payloads there in place without asking per page. 0, -ENOSPC
 * when GPU_MAX_RANGES are declared, -EINVAL when p is not CUDA memory.
 */
int gpu_range_add(const void *p, size_t len);

/* Forget the range starting at p (before freeing it). */
void gpu_range_del(const void *p);

/* The cudaIpcMemHandle_t of device allocation p, GPU_IPC_HANDLE_BYTES
 * into handle_out. 0 or a negative errno. */
int gpu_ipc_handle(void *p, void *handle_out);

/*
 * The cudaIpcEventHandle_t of the interprocess event of the tensor buffer
 * that starts at buf (the event the reorder backend's finish() records for
 * it; created on the first call for that buffer, on the current device),
 * GPU_IPC_HANDLE_BYTES into handle_out. Call it when the buffer is made,
 * so the data path never creates one. 0 or a negative errno.
 */
int gpu_event_ipc_handle(const void *buf, void *handle_out);

/* For the reorder backend (reorder_cuda.cu), callable from any thread. */

/* Lock-free: when a declared range holds [p, p + len), 1 with its kind
 * (DEVICE or PINNED) and device alias offset (alias = p + *delta); else 0. */
int gpu_range_find(const void *p, size_t len, enum gpu_ptr_kind *kind,
		   intptr_t *delta);

/* Ask CUDA what p is (HOST, DEVICE or PINNED, never fails); *delta as for
 * gpu_range_find(). One cudaPointerGetAttributes(): callers cache it. */
enum gpu_ptr_kind gpu_ptr_classify(const void *p, intptr_t *delta);

/* The interprocess event (a cudaEvent_t) of tensor buffer buf into *ev,
 * made on the current device on first use. 0 or a negative errno. */
int gpu_event_get(const void *buf, void **ev);

/* Set this thread's gpu_last_error() text (printf format). */
void gpu_set_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Clear it (""). */
void gpu_clear_error(void);

/* Set the text for CUDA error cuda_err (a cudaError_t) in `what`, clear a
 * non-sticky error, and return the negative errno for it: -ENOMEM,
 * -ENODEV (no driver, no or bad device), -EINVAL, else -EIO. */
int gpu_cuda_error(const char *what, int cuda_err);

#else /* !DAQIRI_HAVE_CUDA */

static inline const char *
gpu_last_error(void)
{
	return GPU_NO_BUILD;
}

static inline int
gpu_available(char *why, size_t len)
{
	if (why != NULL && len > 0)
		snprintf(why, len, "%s", GPU_NO_BUILD);
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
gpu_alloc_pool(int ordinal, size_t bytes, void **out)
{
	(void)ordinal;
	(void)bytes;
	*out = NULL;
	return -ENOSYS;
}

struct gpu_copy {
	void *dst;
	const void *src;
	size_t len;
};

static inline int
gpu_stream_create(int ordinal, void **out)
{
	(void)ordinal;
	*out = NULL;
	return -ENOSYS;
}

static inline void
gpu_stream_destroy(void *stream)
{
	(void)stream;
}

static inline int
gpu_copy_to_host(int ordinal, void *stream, const struct gpu_copy *v,
		 unsigned n)
{
	(void)ordinal;
	(void)stream;
	(void)v;
	(void)n;
	return -ENOSYS;
}

static inline int
gpu_copy_to_device(int ordinal, void *stream, const struct gpu_copy *v,
		   unsigned n)
{
	return gpu_copy_to_host(ordinal, stream, v, n);
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
