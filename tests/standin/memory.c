/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stand-in's memory: device allocations the host cannot dereference
 * (a PROT_NONE mapping of a memfd, and a view of it for the stand-in
 * itself), pinned and registered host memory, and the copies and
 * memsets between them, queued like every other operation.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "kernel.h"
#include "standin.h"

#define SI_DEVICE_MEM	(16ull << 30)	/* totalGlobalMem, enforced */

static struct si_alloc **g_allocs;	/* sorted by base */
static size_t g_nallocs;

static uint64_t g_dev_bytes;

/* ---- the allocation table ---- */

struct si_alloc *
si_alloc_find(uintptr_t a)
{
	size_t lo = 0, hi = g_nallocs;
	struct si_alloc *x;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g_allocs[mid]->base <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	x = g_allocs[lo - 1];
	return a - x->base < (x->size ? x->size : 1) ? x : NULL;
}

int
si_alloc_add(struct si_alloc *a)
{
	struct si_alloc **n;
	size_t i;

	n = realloc(g_allocs, (g_nallocs + 1) * sizeof(*n));
	if (n == NULL)
		return -1;
	g_allocs = n;
	for (i = g_nallocs; i > 0 && g_allocs[i - 1]->base > a->base; i--)
		g_allocs[i] = g_allocs[i - 1];
	g_allocs[i] = a;
	g_nallocs++;
	return 0;
}

struct si_alloc *
si_alloc_nth(size_t i)
{
	return i < g_nallocs ? g_allocs[i] : NULL;
}

void
si_alloc_del(struct si_alloc *a)
{
	si_ptr_remove((void **)g_allocs, &g_nallocs, a);
}

/* Two mappings of one memfd: the device address nobody on the host may
 * touch, and the view the stand-in itself works through. The device
 * address of 2 MiB or more is 2 MiB-aligned, as the driver's allocator
 * gives them (its pages are 2 MiB; the API promises 256 bytes): code
 * that needs 64 KiB GPU pages (DPDK's) sees what it sees on a GPU. */
int
si_map_fd(int fd, size_t maplen, uintptr_t *dev, uint8_t **view)
{
	size_t align = maplen >= SI_BIG_PAGE ? SI_BIG_PAGE : 0;
	uint8_t *r;
	uintptr_t a;
	void *d, *v;

	r = mmap(NULL, maplen + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	if (r == MAP_FAILED)
		return -1;
	a = align != 0 ? ((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1) :
	    (uintptr_t)r;
	d = mmap((void *)a, maplen, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (d == MAP_FAILED) {
		munmap(r, maplen + align);
		return -1;
	}
	/* the reservation's slack before and after */
	if (a > (uintptr_t)r)
		munmap(r, a - (uintptr_t)r);
	if ((uintptr_t)r + maplen + align > a + maplen)
		munmap((void *)(a + maplen), (uintptr_t)r + maplen + align -
		    (a + maplen));
	v = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (v == MAP_FAILED) {
		munmap(d, maplen);
		return -1;
	}
	*dev = (uintptr_t)d;
	*view = v;
	return 0;
}

void
si_unmap(struct si_alloc *a)
{
	munmap((void *)a->base, a->maplen);
	munmap(a->view, a->maplen);
}

/* Ranges overlapping [p, p+n), for cudaHostRegister. */
static struct si_alloc *
alloc_overlap(uintptr_t p, size_t n)
{
	size_t i;

	for (i = 0; i < g_nallocs; i++) {
		struct si_alloc *a = g_allocs[i];

		if (a->base < p + n && p < a->base + a->size)
			return a;
	}
	return NULL;
}

int
si_is_devmem(const struct si_alloc *a)
{
	return a != NULL && (a->kind == SI_DEVICE || a->kind == SI_IPC);
}

/* ---- memory ---- */

cudaError_t
cudaMalloc(void **p, size_t size)
{
	struct si_alloc *a;
	cudaError_t e;
	char name[64];
	long pg = sysconf(_SC_PAGESIZE);

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p == NULL) {
		e = cudaErrorInvalidValue;
		goto out;
	}
	*p = NULL;
	if (size == 0)
		goto out;
	if (size > SI_DEVICE_MEM - g_dev_bytes ||
	    (a = calloc(1, sizeof(*a))) == NULL) {
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	a->kind = SI_DEVICE;
	a->size = size;
	a->maplen = (size + (size_t)pg - 1) & ~((size_t)pg - 1);
	a->nonce = si_nonce();
	snprintf(name, sizeof(name), "daqiri-standin-%016" PRIx64, a->nonce);
	a->fd = memfd_create(name, MFD_CLOEXEC);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)a->maplen) != 0 ||
	    si_map_fd(a->fd, a->maplen, &a->base, &a->view) != 0) {
		if (a->fd >= 0)
			close(a->fd);
		free(a);
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	if (si_alloc_add(a) != 0) {
		si_unmap(a);
		close(a->fd);
		free(a);
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	g_dev_bytes += size;
	*p = (void *)a->base;
	si_log("cudaMalloc %zu -> %p", size, *p);
out:
	return si_leave(e);
}

/* Lock held: the allocation of `kind` that starts at p, with all pending
 * work run first (the real frees synchronise), taken off the table; or
 * NULL and *e cudaErrorInvalidValue (or the work's error). */
static struct si_alloc *
take_alloc(void *p, int kind, cudaError_t *e)
{
	struct si_alloc *a = si_alloc_find((uintptr_t)p);

	if (a == NULL || (int)a->kind != kind || a->base != (uintptr_t)p) {
		*e = cudaErrorInvalidValue;
		return NULL;
	}
	if ((*e = si_sync_all()) != cudaSuccess)
		return NULL;
	si_alloc_del(a);
	return a;
}

cudaError_t
cudaFree(void *p)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p != NULL && (a = take_alloc(p, SI_DEVICE, &e)) != NULL) {
		si_unmap(a);
		close(a->fd);
		g_dev_bytes -= a->size;
		free(a);
		si_log("cudaFree %p", p);
	}
	return si_leave(e);
}

cudaError_t
cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
	struct si_alloc *a;
	cudaError_t e;
	void *m;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p == NULL || (flags & ~(unsigned)(cudaHostAllocPortable |
	    cudaHostAllocMapped | cudaHostAllocWriteCombined)) != 0) {
		e = cudaErrorInvalidValue;
		goto out;
	}
	*p = NULL;
	if (size == 0)
		goto out;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || (a = calloc(1, sizeof(*a))) == NULL) {
		if (m != MAP_FAILED)
			munmap(m, size);
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	a->kind = SI_PINNED;
	a->base = (uintptr_t)m;
	a->size = size;
	a->flags = flags;
	a->fd = -1;
	if (si_alloc_add(a) != 0) {
		munmap(m, size);
		free(a);
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	*p = m;
out:
	return si_leave(e);
}

cudaError_t
cudaMallocHost(void **p, size_t size)
{
	return cudaHostAlloc(p, size, cudaHostAllocDefault);
}

cudaError_t
cudaFreeHost(void *p)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p != NULL && (a = take_alloc(p, SI_PINNED, &e)) != NULL) {
		munmap(p, a->size);
		free(a);
	}
	return si_leave(e);
}

cudaError_t
cudaHostRegister(void *p, size_t size, unsigned int flags)
{
	struct si_alloc *a;
	cudaError_t e;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p == NULL || size == 0 || (flags & ~(unsigned)(
	    cudaHostRegisterPortable | cudaHostRegisterMapped |
	    cudaHostRegisterIoMemory | cudaHostRegisterReadOnly)) != 0) {
		e = cudaErrorInvalidValue;
		goto out;
	}
	if (flags & cudaHostRegisterIoMemory) {
		e = cudaErrorNotSupported;	/* no device BARs here */
		goto out;
	}
	if ((a = alloc_overlap((uintptr_t)p, size)) != NULL) {
		e = si_is_devmem(a) ? cudaErrorInvalidValue :
		    cudaErrorHostMemoryAlreadyRegistered;
		goto out;
	}
	/* The range must be mapped host memory, as the driver pins it. */
	lo = (uintptr_t)p & ~(pg - 1);
	hi = ((uintptr_t)p + size + pg - 1) & ~(pg - 1);
	if (msync((void *)lo, hi - lo, MS_ASYNC) != 0) {
		e = cudaErrorInvalidValue;
		goto out;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		e = cudaErrorMemoryAllocation;
		goto out;
	}
	a->kind = SI_REGISTERED;
	a->base = (uintptr_t)p;
	a->size = size;
	a->flags = flags;
	a->fd = -1;
	if (si_alloc_add(a) != 0) {
		free(a);
		e = cudaErrorMemoryAllocation;
	}
out:
	return si_leave(e);
}

cudaError_t
cudaHostUnregister(void *p)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	a = si_alloc_find((uintptr_t)p);
	if (p == NULL || a == NULL || a->kind != SI_REGISTERED ||
	    a->base != (uintptr_t)p) {
		e = cudaErrorHostMemoryNotRegistered;
		goto out;
	}
	if ((e = si_sync_all()) != cudaSuccess)
		goto out;
	si_alloc_del(a);
	free(a);
out:
	return si_leave(e);
}

cudaError_t
cudaHostGetDevicePointer(void **pdev, void *host, unsigned int flags)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	a = si_alloc_find((uintptr_t)host);
	if (pdev == NULL || flags != 0 || a == NULL || si_is_devmem(a))
		e = cudaErrorInvalidValue;
	else
		*pdev = host;		/* UVA: the same address */
	return si_leave(e);
}

cudaError_t
cudaPointerGetAttributes(struct cudaPointerAttributes *at, const void *p)
{
	struct si_alloc *a;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (at == NULL) {
		e = cudaErrorInvalidValue;
		goto out;
	}
	memset(at, 0, sizeof(*at));
	a = si_alloc_find((uintptr_t)p);
	if (a == NULL) {
		at->type = cudaMemoryTypeUnregistered;
		at->device = cudaInvalidDeviceId;
	} else if (si_is_devmem(a)) {
		at->type = cudaMemoryTypeDevice;
		at->devicePointer = (void *)p;
	} else {
		at->type = cudaMemoryTypeHost;
		at->devicePointer = (void *)p;
		at->hostPointer = (void *)p;
	}
out:
	return si_leave(e);
}

/*
 * Where n bytes at p really are for a copy. dev_side: the pointer is the
 * device side of the copy, which pinned and registered memory may be
 * (UVA) but pageable memory may not; the host side may not be device
 * memory. A device range must lie inside one allocation.
 */
enum { SIDE_ANY, SIDE_DEV, SIDE_HOST };

static cudaError_t
resolve(const void *p, size_t n, int side, void **out, int *isdev)
{
	struct si_alloc *a = si_alloc_find((uintptr_t)p);

	*isdev = si_is_devmem(a);
	if (p == NULL)
		return cudaErrorInvalidValue;
	if (side == SIDE_DEV && a == NULL)
		return cudaErrorInvalidValue;
	if (side == SIDE_HOST && *isdev)
		return cudaErrorInvalidValue;
	if (*isdev) {
		if (n > a->size - ((uintptr_t)p - a->base))
			return cudaErrorInvalidValue;
		*out = a->view + ((uintptr_t)p - a->base);
	} else
		*out = (void *)p;
	return cudaSuccess;
}

static cudaError_t
copy_op(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
    struct si_op **opp, int *d2d)
{
	int ds, ss, ddev, sdev;
	void *d, *s;
	cudaError_t e;

	switch (kind) {
	case cudaMemcpyHostToHost:
		ds = SIDE_HOST, ss = SIDE_HOST;
		break;
	case cudaMemcpyHostToDevice:
		ds = SIDE_DEV, ss = SIDE_HOST;
		break;
	case cudaMemcpyDeviceToHost:
		ds = SIDE_HOST, ss = SIDE_DEV;
		break;
	case cudaMemcpyDeviceToDevice:
		ds = SIDE_DEV, ss = SIDE_DEV;
		break;
	case cudaMemcpyDefault:
		ds = SIDE_ANY, ss = SIDE_ANY;
		break;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
	if ((e = resolve(dst, n, ds, &d, &ddev)) != cudaSuccess ||
	    (e = resolve(src, n, ss, &s, &sdev)) != cudaSuccess)
		return e;
	if ((*opp = si_op_new(SI_OP_COPY, 0)) == NULL)
		return cudaErrorMemoryAllocation;
	(*opp)->u.copy.dst = d;
	(*opp)->u.copy.src = s;
	(*opp)->u.copy.n = n;
	*d2d = ddev && sdev;
	return cudaSuccess;
}

cudaError_t
cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	struct si_op *op;
	cudaError_t e;
	uint64_t seq;
	int d2d;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (n == 0)
		goto out;
	if ((e = copy_op(dst, src, n, kind, &op, &d2d)) != cudaSuccess ||
	    (e = si_enqueue(&si_legacy, op)) != cudaSuccess)
		goto out;
	seq = si_seq;
	/* Device to device returns at once, as documented. */
	if (!d2d)
		e = si_run_until(&si_legacy, seq);
out:
	return si_leave(e);
}

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t n,
    enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct si_stream *s;
	struct si_op *op;
	cudaError_t e;
	int d2d;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((s = si_stream_get(stream)) == NULL) {
		e = cudaErrorInvalidResourceHandle;
		goto out;
	}
	if (n == 0)
		goto out;
	if ((e = copy_op(dst, src, n, kind, &op, &d2d)) == cudaSuccess)
		e = si_enqueue(s, op);
out:
	return si_leave(e);
}

static cudaError_t
memset_common(void *p, int value, size_t n, struct si_stream *s, int sync)
{
	struct si_op *op;
	cudaError_t e;
	void *d;
	int dev;

	if (n == 0)
		return cudaSuccess;
	if ((e = resolve(p, n, SIDE_DEV, &d, &dev)) != cudaSuccess)
		return e;
	if ((op = si_op_new(SI_OP_SET, 0)) == NULL)
		return cudaErrorMemoryAllocation;
	op->u.set.dst = d;
	op->u.set.value = value;
	op->u.set.n = n;
	if ((e = si_enqueue(s, op)) != cudaSuccess)
		return e;
	/* cudaMemset is synchronous only for host (pinned) memory. */
	return sync && !dev ? si_run_until(s, si_seq) : cudaSuccess;
}

cudaError_t
cudaMemset(void *p, int value, size_t n)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	return si_leave(memset_common(p, value, n, &si_legacy, 1));
}

cudaError_t
cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t stream)
{
	struct si_stream *s;
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if ((s = si_stream_get(stream)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	return si_leave(memset_common(p, value, n, s, 0));
}
