/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA device management for the whole daemon: whether a device can be
 * used, device and pinned allocations, the table of CUDA memory ranges the
 * reorder backend reads payloads from in place, IPC handles, the
 * interprocess event of each tensor buffer, device TX pools and their
 * staging copies, and the thread-local text of the last CUDA error. The main thread allocates, registers and frees
 * (mem.c, stream_main.c); worker threads look ranges up (lock-free) and
 * fetch events (under gpu_mu) through reorder_cuda.cu.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <mutex>

#include <cuda_runtime.h>

#include "gpu.h"

static_assert(sizeof(cudaIpcMemHandle_t) == GPU_IPC_HANDLE_BYTES,
	      "IPC memory handle size");
static_assert(sizeof(cudaIpcEventHandle_t) == GPU_IPC_HANDLE_BYTES,
	      "IPC event handle size");
static_assert(sizeof(cudaEvent_t) == sizeof(void *),
	      "gpu_event_get() passes a cudaEvent_t as a pointer");

/* ------------------------------------------------------------------ */
/* errors */

static thread_local char gpu_err[GPU_ERR_MAX];

extern "C" void
gpu_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gpu_err, sizeof(gpu_err), fmt, ap);
	va_end(ap);
}

extern "C" void
gpu_clear_error(void)
{
	gpu_err[0] = '\0';
}

extern "C" int
gpu_cuda_error(const char *what, int cuda_err)
{
	cudaError_t e = (cudaError_t)cuda_err;

	gpu_set_error("%s: %s (error %d)", what, cudaGetErrorString(e), (int)e);
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
gpu_last_error(void)
{
	return gpu_err;
}

extern "C" int
gpu_available(char *why, size_t len)
{
	cudaError_t e;
	int n = 0;

	if ((e = cudaGetDeviceCount(&n)) != cudaSuccess) {
		gpu_set_error("no CUDA device: %s (error %d)",
		    cudaGetErrorString(e), (int)e);
		(void)cudaGetLastError();
	} else if (n <= 0) {
		gpu_set_error("no CUDA device: none found");
	} else {
		return 1;
	}
	if (why != NULL && len > 0)
		snprintf(why, len, "%s", gpu_err);
	return 0;
}

/* ------------------------------------------------------------------ */
/* ranges and events, daemon-wide */

struct gpu_range {
	std::atomic<int> live;
	uintptr_t base;
	size_t len;
	intptr_t delta;			/* device alias - host address */
	enum gpu_ptr_kind kind;
	int owner;			/* GPU_OWN_* */
};

enum { GPU_OWN_DECLARED, GPU_OWN_ALLOC, GPU_OWN_REGISTER };

struct gpu_event {
	const void *buf;
	cudaEvent_t ev;
};

static std::mutex gpu_mu;		/* writers of the tables below */
static struct gpu_range gpu_ranges[GPU_MAX_RANGES];
static std::atomic<int> gpu_nranges;
static struct gpu_event gpu_events[GPU_MAX_EVENTS];
static int gpu_nevents;

/* Lock-free lookup: the range holding [p, p + len), or NULL. */
static const struct gpu_range *
gpu_range_lookup(uintptr_t p, size_t len)
{
	int i, n = gpu_nranges.load(std::memory_order_acquire);

	for (i = 0; i < n; i++) {
		const struct gpu_range *r = &gpu_ranges[i];

		if (r->live.load(std::memory_order_acquire) && p >= r->base &&
		    p - r->base <= r->len && len <= r->len - (p - r->base))
			return r;
	}
	return nullptr;
}

extern "C" int
gpu_range_find(const void *p, size_t len, enum gpu_ptr_kind *kind,
	       intptr_t *delta)
{
	const struct gpu_range *r = gpu_range_lookup((uintptr_t)p, len);

	if (r == nullptr)
		return 0;
	*kind = r->kind;
	*delta = r->delta;
	return 1;
}

static int
gpu_range_insert(const void *p, size_t len, enum gpu_ptr_kind kind,
		 intptr_t delta, int owner)
{
	std::lock_guard<std::mutex> lk(gpu_mu);
	int i, n = gpu_nranges.load(std::memory_order_relaxed);

	for (i = 0; i < n; i++)
		if (!gpu_ranges[i].live.load(std::memory_order_relaxed))
			break;
	if (i == GPU_MAX_RANGES) {
		gpu_set_error("gpu: more than %d CUDA memory ranges",
		    GPU_MAX_RANGES);
		return -ENOSPC;
	}
	gpu_ranges[i].base = (uintptr_t)p;
	gpu_ranges[i].len = len;
	gpu_ranges[i].delta = delta;
	gpu_ranges[i].kind = kind;
	gpu_ranges[i].owner = owner;
	gpu_ranges[i].live.store(1, std::memory_order_release);
	if (i == n)
		gpu_nranges.store(n + 1, std::memory_order_release);
	return 0;
}

/* Drop the range starting at p and destroy the events of buffers inside
 * it; returns its owner, or -1 when there was none. Caller holds gpu_mu. */
static int
gpu_range_remove_locked(const void *p)
{
	int i, j, owner, n = gpu_nranges.load(std::memory_order_relaxed);
	struct gpu_range *r;

	for (i = 0; i < n; i++) {
		r = &gpu_ranges[i];
		if (!r->live.load(std::memory_order_relaxed) ||
		    r->base != (uintptr_t)p)
			continue;
		r->live.store(0, std::memory_order_release);
		owner = r->owner;
		for (j = 0; j < gpu_nevents; ) {
			uintptr_t b = (uintptr_t)gpu_events[j].buf;

			if (b >= r->base && b - r->base < r->len) {
				(void)cudaEventDestroy(gpu_events[j].ev);
				gpu_events[j] = gpu_events[--gpu_nevents];
			} else {
				j++;
			}
		}
		return owner;
	}
	return -1;
}

extern "C" enum gpu_ptr_kind
gpu_ptr_classify(const void *p, intptr_t *delta)
{
	cudaPointerAttributes a;

	*delta = 0;
	memset(&a, 0, sizeof(a));
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return GPU_PTR_HOST;	/* older runtimes: unregistered */
	}
	switch (a.type) {
	case cudaMemoryTypeDevice:
	case cudaMemoryTypeManaged:
		return GPU_PTR_DEVICE;
	case cudaMemoryTypeHost:
		if (a.devicePointer == nullptr)
			return GPU_PTR_HOST;
		*delta = (intptr_t)a.devicePointer - (intptr_t)p;
		return GPU_PTR_PINNED;
	default:
		return GPU_PTR_HOST;
	}
}

extern "C" int
gpu_range_add(const void *p, size_t len)
{
	intptr_t delta;
	enum gpu_ptr_kind k;

	if (p == nullptr || len == 0)
		return -EINVAL;
	k = gpu_ptr_classify(p, &delta);
	if (k != GPU_PTR_DEVICE && k != GPU_PTR_PINNED) {
		gpu_set_error("gpu: %p is not CUDA memory", p);
		return -EINVAL;
	}
	return gpu_range_insert(p, len, k, delta, GPU_OWN_DECLARED);
}

extern "C" void
gpu_range_del(const void *p)
{
	std::lock_guard<std::mutex> lk(gpu_mu);

	if (p != nullptr)
		(void)gpu_range_remove_locked(p);
}

/* Select GPU ordinal (left current) and cudaMalloc bytes on it. */
static int
gpu_malloc_on(int ordinal, size_t bytes, void **p)
{
	cudaError_t e;

	*p = nullptr;
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaSetDevice", e);
	if ((e = cudaMalloc(p, bytes)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaMalloc", e);
	return 0;
}

extern "C" int
gpu_alloc(int ordinal, size_t bytes, void **out)
{
	void *p;
	int rc;

	*out = nullptr;
	if ((rc = gpu_malloc_on(ordinal, bytes, &p)) != 0)
		return rc;
	if ((rc = gpu_range_insert(p, bytes, GPU_PTR_DEVICE, 0,
	    GPU_OWN_ALLOC)) != 0) {
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
		std::lock_guard<std::mutex> lk(gpu_mu);

		(void)gpu_range_remove_locked(p);
	}
	(void)cudaFree(p);
}

extern "C" int
gpu_alloc_pool(int ordinal, size_t bytes, void **out)
{
	cudaError_t e;
	void *p;
	int rc;

	*out = nullptr;
	if ((rc = gpu_malloc_on(ordinal, bytes, &p)) != 0)
		return rc;
	/* cudaMemset is asynchronous for device memory: wait for it, so
	 * the pool is zero before its owner can open it */
	if ((e = cudaMemset(p, 0, bytes)) != cudaSuccess ||
	    (e = cudaStreamSynchronize(0)) != cudaSuccess) {
		rc = gpu_cuda_error("gpu: zeroing a TX pool", e);
		(void)cudaFree(p);
		return rc;
	}
	*out = p;
	return 0;
}

extern "C" int
gpu_stream_create(int ordinal, void **out)
{
	cudaStream_t s;
	cudaError_t e;

	*out = nullptr;
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaSetDevice", e);
	if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) !=
	    cudaSuccess)
		return gpu_cuda_error("gpu: cudaStreamCreateWithFlags", e);
	*out = (void *)s;
	return 0;
}

extern "C" void
gpu_stream_destroy(void *stream)
{
	if (stream != nullptr)
		(void)cudaStreamDestroy((cudaStream_t)stream);
}

/* gpu_copy_to_host() and gpu_copy_to_device(): queue every copy on the
 * stream, then wait for all, so no copy outlives the call. */
static int
gpu_copy_batch(int ordinal, void *stream, const struct gpu_copy *v,
	       unsigned n, cudaMemcpyKind kind, const char *what)
{
	cudaStream_t s = (cudaStream_t)stream;
	char ctx[96];
	cudaError_t e;
	unsigned i;

	/* the thread's current device is its own (one cheap call) */
	if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaSetDevice", e);
	for (i = 0; i < n; i++)
		if ((e = cudaMemcpyAsync(v[i].dst, v[i].src, v[i].len, kind,
		    s)) != cudaSuccess) {
			/* what was queued still runs: wait for it */
			(void)cudaStreamSynchronize(s);
			snprintf(ctx, sizeof(ctx), "gpu: cudaMemcpyAsync (%s)",
			    what);
			return gpu_cuda_error(ctx, e);
		}
	if ((e = cudaStreamSynchronize(s)) != cudaSuccess) {
		snprintf(ctx, sizeof(ctx), "gpu: cudaStreamSynchronize (%s)",
		    what);
		return gpu_cuda_error(ctx, e);
	}
	return 0;
}

extern "C" int
gpu_copy_to_host(int ordinal, void *stream, const struct gpu_copy *v,
		 unsigned n)
{
	return gpu_copy_batch(ordinal, stream, v, n, cudaMemcpyDeviceToHost,
	    "TX staging");
}

extern "C" int
gpu_copy_to_device(int ordinal, void *stream, const struct gpu_copy *v,
		   unsigned n)
{
	return gpu_copy_batch(ordinal, stream, v, n, cudaMemcpyHostToDevice,
	    "software loopback");
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
		return gpu_cuda_error("gpu: cudaHostRegister", e);
	if ((e = cudaHostGetDevicePointer(&d, p, 0)) != cudaSuccess) {
		rc = gpu_cuda_error("gpu: cudaHostGetDevicePointer", e);
		(void)cudaHostUnregister(p);
		return rc;
	}
	if ((rc = gpu_range_insert(p, len, GPU_PTR_PINNED,
	    (intptr_t)d - (intptr_t)p, GPU_OWN_REGISTER)) != 0) {
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
		std::lock_guard<std::mutex> lk(gpu_mu);

		(void)gpu_range_remove_locked(p);
	}
	(void)cudaHostUnregister(p);
}

extern "C" int
gpu_ipc_handle(void *p, void *handle_out)
{
	cudaIpcMemHandle_t h;
	cudaError_t e;

	if ((e = cudaIpcGetMemHandle(&h, p)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaIpcGetMemHandle", e);
	memcpy(handle_out, &h, sizeof(h));
	return 0;
}

extern "C" int
gpu_event_get(const void *buf, void **out)
{
	std::lock_guard<std::mutex> lk(gpu_mu);
	cudaEvent_t ev;
	cudaError_t e;
	int i;

	for (i = 0; i < gpu_nevents; i++)
		if (gpu_events[i].buf == buf) {
			*out = (void *)gpu_events[i].ev;
			return 0;
		}
	if (gpu_nevents == GPU_MAX_EVENTS) {
		gpu_set_error("gpu: more than %d tensor buffer events",
		    GPU_MAX_EVENTS);
		return -ENOSPC;
	}
	if ((e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming |
	    cudaEventInterprocess)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaEventCreateWithFlags", e);
	gpu_events[gpu_nevents].buf = buf;
	gpu_events[gpu_nevents].ev = ev;
	gpu_nevents++;
	*out = (void *)ev;
	return 0;
}

extern "C" int
gpu_event_ipc_handle(const void *buf, void *handle_out)
{
	cudaIpcEventHandle_t h;
	cudaError_t e;
	void *ev;
	int rc;

	if ((rc = gpu_event_get(buf, &ev)) != 0)
		return rc;
	if ((e = cudaIpcGetEventHandle(&h, (cudaEvent_t)ev)) != cudaSuccess)
		return gpu_cuda_error("gpu: cudaIpcGetEventHandle", e);
	memcpy(handle_out, &h, sizeof(h));
	return 0;
}

