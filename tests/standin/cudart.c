/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A strict stand-in for the CUDA runtime (libcudart.so.13) on the CPU, so
 * the GPU unit suites and whole programs run on machines without a GPU
 * (scripts/cuda-standin CMD). This file is the runtime's core (state,
 * errors, kernels, the device, nvcc's start-up calls); memory.c holds
 * allocations and copies, stream.c the queues and events, ipc.c the IPC.
 *
 * What it proves: the programs' logic and bookkeeping around CUDA, that
 * every read of device results is preceded by the right wait, and the IPC
 * protocol between the daemon and its consumers. It is strict where a
 * real GPU is unforgiving but a lenient emulation would not be:
 *  - Device memory is a PROT_NONE mapping of a memfd; a host dereference
 *    SIGSEGVs as on a machine with a discrete GPU. A second, writable
 *    mapping (the view) is what copies, memsets and kernels touch.
 *  - Streams are queues that run only when something waits: a stream,
 *    event or device synchronisation, a synchronous cudaMemcpy (which is
 *    on the legacy stream and so waits for blocking streams, not for
 *    cudaStreamNonBlocking ones), a query asked twice (the first says
 *    cudaErrorNotReady), a peer process waiting on an IPC event.
 *    cudaDeviceSynchronize runs independent streams adversarially: the
 *    stream whose oldest pending operation was issued last goes first,
 *    honouring only what CUDA orders (a stream's own order, event waits,
 *    the legacy stream's implicit synchronisation). A missing wait thus
 *    gives a wrong result every time instead of once in a while.
 *    DAQIRI_STANDIN_EAGER=1 runs every operation as it is issued instead.
 *  - Kernels run as CPU bodies a program registers by stub address
 *    (daqiri_standin_register(), daemon/kernel.h), thread order permuted
 *    by DAQIRI_STANDIN_SEED; every access goes through a hook that
 *    translates device addresses and faults on anything outside an
 *    allocation, past its end, misaligned, or a store into read-only
 *    registered memory: the sticky errors 700 and 716 and one line on
 *    stderr naming the kernel, the address, the block and the thread.
 *  - Errors are the runtime's codes and texts, the last error is per
 *    thread, and after a sticky error every call returns it.
 *  - IPC handles are opened by another process through /proc/<pid>/fd of
 *    the owner (ipc.c); waiting on an opened event makes the owner's
 *    service thread run the owner's queue up to that record.
 *
 * What it does not prove: anything of nvcc's device code (the CPU bodies
 * are the kernels' C twins), the real driver's semantics (HMM/ATS pointer
 * classification: pageable host memory is never device-accessible here;
 * DPDK or GPUDirect memory registration; recovery from real errors),
 * concurrency inside a kernel (threads never overlap) and any speed.
 * Those are scripts/gpu-check.sh's, on a GPU.
 *
 * Choices where CUDA leaves room or the stand-in cannot follow:
 *  - A fork()ed child of a process that made a context (its first
 *    runtime call; loading and registering kernels is not one) gets
 *    cudaErrorInitializationError from every call, as with a real CUDA
 *    context (exec first, or fork before the first call).
 *  - cudaFree, cudaFreeHost, cudaHostUnregister and cudaIpcCloseMemHandle
 *    run all pending work first (the real ones synchronise too), and so
 *    does cudaStreamDestroy for its stream.
 *  - Synchronous D2D cudaMemcpy and cudaMemset on device memory stay
 *    queued on the legacy stream (CUDA documents them as asynchronous).
 *  - cudaEventRecord on an event opened from another process is
 *    cudaErrorNotSupported: only the creating process records.
 *  - Opening the same memory handle twice returns the same address and
 *    counts the opens, as current drivers do.
 *  - An allocation of 2 MiB or more starts on a 2 MiB boundary, as the
 *    driver's allocator places them (the API promises 256 bytes); a
 *    smaller one on a page.
 *  - A wait on an IPC event whose owner died returns
 *    cudaErrorLaunchFailure once (not sticky) instead of hanging.
 *  - Kernels run on the waiting thread with the stand-in's lock held; a
 *    kernel body must not call the CUDA API (none does on a GPU either).
 *  - Streams' bookkeeping (a few dozen bytes) is kept after
 *    cudaStreamDestroy, as a queued wait may still name it.
 * Known limits: IPC needs the peer to be able to open /proc/<pid>/fd of
 * the owner (same uid, or root); every cudaMalloc keeps one memfd open;
 * one service thread per process serves all peers, so a cycle of
 * cross-process waits that needs the same service twice stalls.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "kernel.h"
#include "standin.h"

/* What nvcc's generated host code calls (crt/host_runtime.h and
 * crt/device_functions.h declare these for C++ only). */
void **__cudaRegisterFatBinary(void *fat);
void __cudaRegisterFatBinaryEnd(void **h);
void __cudaUnregisterFatBinary(void **h);
void __cudaRegisterFunction(void **h, const char *host_fun, char *dev_fun,
    const char *dev_name, int thread_limit, uint3 *tid, uint3 *bid,
    dim3 *bdim, dim3 *gdim, int *wsize);
void __cudaRegisterVar(void **h, char *host_var, char *dev_addr,
    const char *dev_name, int ext, size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **h, void **host_var, char *dev_addr,
    const char *dev_name, int ext, size_t size, int constant, int global);
char __cudaInitModule(void **h);
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem,
    struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block,
    size_t *shmem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *fun);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block,
    void **args, size_t shmem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 grid, dim3 block,
    void **args, size_t shmem, cudaStream_t stream);
int daqiri_standin_register(const struct kstandin_kernel *k, uint32_t n);

#define SI_VERSION	13000
#define SI_MAX_ARG	4096		/* bytes of one kernel argument */
#define SI_CALL_DEPTH	8		/* nested <<< >>> configurations */

pthread_mutex_t si_mu = PTHREAD_MUTEX_INITIALIZER;
pid_t si_mypid;
int si_trace;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic int g_sticky;		/* cudaError_t, 0 while healthy */
int si_eager;
static uint64_t g_seed;
static uint64_t g_launches;
static _Thread_local cudaError_t tls_last;

/* ---- error codes and texts (the real runtime's) ---- */

static const struct {
	cudaError_t code;
	const char *name, *text;
} errs[] = {
#define E(c, t) { c, #c, t }
	E(cudaSuccess, "no error"),
	E(cudaErrorInvalidValue, "invalid argument"),
	E(cudaErrorMemoryAllocation, "out of memory"),
	E(cudaErrorInitializationError, "initialization error"),
	E(cudaErrorInvalidConfiguration, "invalid configuration argument"),
	E(cudaErrorInvalidDevicePointer, "invalid device pointer"),
	E(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
	E(cudaErrorInsufficientDriver,
	    "CUDA driver version is insufficient for CUDA runtime version"),
	E(cudaErrorInvalidDeviceFunction, "invalid device function"),
	E(cudaErrorNoDevice, "no CUDA-capable device is detected"),
	E(cudaErrorInvalidDevice, "invalid device ordinal"),
	E(cudaErrorDeviceUninitialized, "invalid device context"),
	E(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"),
	E(cudaErrorInvalidResourceHandle, "invalid resource handle"),
	E(cudaErrorNotReady, "device not ready"),
	E(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
	E(cudaErrorHostMemoryAlreadyRegistered,
	    "part or all of the requested memory range is already mapped"),
	E(cudaErrorHostMemoryNotRegistered,
	    "pointer does not correspond to a registered memory region"),
	E(cudaErrorMisalignedAddress, "misaligned address"),
	E(cudaErrorLaunchFailure, "unspecified launch failure"),
	E(cudaErrorNotSupported, "operation not supported"),
	E(cudaErrorUnknown, "unknown error"),
#undef E
};

const char *
cudaGetErrorName(cudaError_t e)
{
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == e)
			return errs[i].name;
	return "unrecognized error code";
}

const char *
cudaGetErrorString(cudaError_t e)
{
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == e)
			return errs[i].text;
	return "unrecognized error code";
}

void
si_log(const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (!si_trace)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cuda-standin[%d]: %s\n", (int)getpid(), buf);
}

static uint64_t
env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0') {
		fprintf(stderr, "cuda-standin: %s=\"%s\" is not a number, "
		    "using %" PRIu64 "\n", name, s, def);
		return def;
	}
	return v;
}

int
si_ptr_push(void ***arr, size_t *n, void *p)
{
	void **a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (a == NULL)
		return -1;
	a[(*n)++] = p;
	*arr = a;
	return 0;
}

int
si_ptr_remove(void **arr, size_t *n, const void *p)
{
	size_t i;

	for (i = 0; i < *n; i++) {
		if (arr[i] == p) {
			memmove(&arr[i], &arr[i + 1],
			    (*n - i - 1) * sizeof(*arr));
			(*n)--;
			return 0;
		}
	}
	return -1;
}

int
si_ptr_has(void *const *arr, size_t n, const void *p)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (arr[i] == p)
			return 1;
	return 0;
}

static void
si_init(void)
{
	si_trace = env_u64("DAQIRI_STANDIN_TRACE", 0) != 0;
	si_eager = env_u64("DAQIRI_STANDIN_EAGER", 0) != 0;
	g_seed = env_u64("DAQIRI_STANDIN_SEED", 0);
	si_stream_init();
	si_log("loaded (%s, seed %" PRIu64 ")",
	    si_eager ? "eager" : "deferred", g_seed);
}

/* A child forked after its parent made the context (its first call that
 * takes the lock) cannot use it, as with the real runtime; a child of a
 * parent that only loaded the library (and registered kernels) can. */
static int
si_forked(void)
{
	return si_mypid != 0 && getpid() != si_mypid;
}

/* Every API call starts here: on success the lock is held. */
cudaError_t
si_enter(void)
{
	cudaError_t e;

	pthread_once(&g_once, si_init);
	if (si_forked())
		return cudaErrorInitializationError;
	pthread_mutex_lock(&si_mu);
	if (si_mypid == 0)
		si_mypid = getpid();	/* the first call makes the context */
	if ((e = (cudaError_t)atomic_load(&g_sticky)) != cudaSuccess) {
		pthread_mutex_unlock(&si_mu);
		return e;
	}
	return cudaSuccess;
}

/* The last error is the thread's; NotReady is an answer, not an error. */
cudaError_t
si_err(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		tls_last = e;
	return e;
}

cudaError_t
si_leave(cudaError_t e)
{
	pthread_mutex_unlock(&si_mu);
	return si_err(e);
}

cudaError_t
si_sticky(void)
{
	return (cudaError_t)atomic_load(&g_sticky);
}

void
si_set_sticky(cudaError_t e)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&g_sticky, &zero, (int)e))
		si_arena_fail();
}

uint64_t
si_nonce(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^
		    (uint64_t)getpid();
	return v;
}

uint64_t
si_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- kernels ---- */

static void *si_access(void *ctx, const struct kidx *ix, uintptr_t addr,
    uint32_t n, enum kmem_op op);

struct si_launch {
	const struct si_kernel *k;
	struct si_alloc *last;		/* the allocation hit last */
	cudaError_t fault;
};


static struct si_kernel *g_kernels;
static size_t g_nkernels;

static struct si_fname {
	const void *stub;
	const char *name;
} *g_fnames;				/* from __cudaRegisterFunction */
static size_t g_nfnames;

int
daqiri_standin_register(const struct kstandin_kernel *k, uint32_t n)
{
	struct si_kernel *nk;
	uint32_t i, j;
	size_t m;
	int r = 0;

	/* registering is loading code, not making a context: a child
	 * forked afterwards may still make its own */
	pthread_once(&g_once, si_init);
	if (si_forked())
		return -EIO;
	pthread_mutex_lock(&si_mu);
	if (k == NULL && n > 0) {
		r = -EINVAL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (k[i].stub == NULL || k[i].fn == NULL || k[i].nargs > 4) {
			r = -EINVAL;
			goto out;
		}
		for (j = 0; j < k[i].nargs; j++)
			if (k[i].arg_sizes[j] == 0 ||
			    k[i].arg_sizes[j] > SI_MAX_ARG) {
				r = -EINVAL;
				goto out;
			}
	}
	for (i = 0; i < n; i++) {
		for (m = 0; m < g_nkernels; m++)
			if (g_kernels[m].stub == k[i].stub)
				break;
		if (m == g_nkernels) {
			nk = realloc(g_kernels, (m + 1) * sizeof(*nk));
			if (nk == NULL) {
				r = -ENOMEM;
				goto out;
			}
			g_kernels = nk;
			g_nkernels++;
		} else
			free(g_kernels[m].name);
		g_kernels[m].stub = k[i].stub;
		g_kernels[m].name = strdup(k[i].name ? k[i].name : "?");
		g_kernels[m].fn = k[i].fn;
		g_kernels[m].nargs = k[i].nargs;
		memcpy(g_kernels[m].arg_sizes, k[i].arg_sizes,
		    sizeof(k[i].arg_sizes));
		si_log("kernel %s registered at %p", g_kernels[m].name,
		    k[i].stub);
	}
out:
	pthread_mutex_unlock(&si_mu);
	return r;
}

/* Run a queued launch; a fault makes the error sticky. */
cudaError_t
si_kernel_exec(struct si_op *op)
{
	struct si_launch l;
	struct kmem_hooks h;

	memset(&l, 0, sizeof(l));
	l.k = op->u.kern.k;
	h.access = si_access;
	h.ctx = &l;
	l.k->fn(op->u.kern.args, op->u.kern.grid, op->u.kern.block,
	    op->u.kern.seed, &h);
	if (l.fault != cudaSuccess)
		si_set_sticky(l.fault);
	return l.fault;
}

static const char *
stub_name(const void *stub)
{
	size_t i;

	for (i = 0; i < g_nfnames; i++)
		if (g_fnames[i].stub == stub)
			return g_fnames[i].name;
	return NULL;
}

static void
fault(struct si_launch *l, const struct kidx *ix, cudaError_t e,
    uintptr_t addr, uint32_t n, enum kmem_op op)
{
	if (l->fault != cudaSuccess)
		return;		/* the first fault aborts the kernel */
	l->fault = e;
	fprintf(stderr, "cuda-standin: kernel %s: %s 0x%" PRIxPTR
	    " (%s of %u bytes) by block (%u,%u,%u) thread (%u,%u,%u)\n",
	    l->k->name, e == cudaErrorMisalignedAddress ?
	    "misaligned address" : "illegal address", addr,
	    op == KMEM_STORE ? "store" : "load", n, ix->block.x, ix->block.y,
	    ix->block.z, ix->thread.x, ix->thread.y, ix->thread.z);
}

/* The kernels' memory hook: device addresses to views, host ranges as
 * they are, anything else a fault that ends the kernel. */
static void *
si_access(void *ctx, const struct kidx *ix, uintptr_t addr, uint32_t n,
    enum kmem_op op)
{
	struct si_launch *l = ctx;
	struct si_alloc *a = l->last;

	if (l->fault != cudaSuccess)
		return NULL;
	if ((n != 1 && n != 2 && n != 4 && n != 8 && n != 16) ||
	    addr % n != 0) {
		fault(l, ix, cudaErrorMisalignedAddress, addr, n, op);
		return NULL;
	}
	if (a == NULL || addr < a->base || addr - a->base >= a->size)
		a = si_alloc_find(addr);
	if (a == NULL || n > a->size - (addr - a->base) ||
	    (op == KMEM_STORE && a->kind == SI_REGISTERED &&
	    (a->flags & cudaHostRegisterReadOnly))) {
		fault(l, ix, cudaErrorIllegalAddress, addr, n, op);
		return NULL;
	}
	l->last = a;
	return si_is_devmem(a) ? a->view + (addr - a->base) : (void *)addr;
}

static uint64_t
mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

cudaError_t
cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
    size_t shmem, cudaStream_t stream)
{
	const struct si_kernel *k = NULL;
	struct si_stream *s;
	struct si_op *op;
	size_t i, total = 0, off = 0;
	uint64_t nthr;
	cudaError_t e;
	const char *nm;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	for (i = 0; i < g_nkernels; i++)
		if (g_kernels[i].stub == func)
			k = &g_kernels[i];
	if (k == NULL) {
		nm = stub_name(func);
		fprintf(stderr, "cuda-standin: kernel %s (stub %p) has no CPU "
		    "body (daqiri_standin_register)\n", nm ? nm : "?", func);
		return si_leave(cudaErrorInvalidDeviceFunction);
	}
	nthr = (uint64_t)block.x * block.y * block.z;
	if (grid.x == 0 || grid.y == 0 || grid.z == 0 || nthr == 0 ||
	    nthr > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
	    grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
		return si_leave(cudaErrorInvalidConfiguration);
	if ((s = si_stream_get(stream)) == NULL)
		return si_leave(cudaErrorInvalidResourceHandle);
	if (k->nargs > 0 && args == NULL)
		return si_leave(cudaErrorInvalidValue);
	(void)shmem;		/* CPU bodies have no shared memory */
	for (i = 0; i < k->nargs; i++)
		total += (k->arg_sizes[i] + 15) & ~15u;
	if ((op = si_op_new(SI_OP_KERNEL, total)) == NULL)
		return si_leave(cudaErrorMemoryAllocation);
	/* Parameters are copied at launch, as CUDA does. */
	for (i = 0; i < k->nargs; i++) {
		memcpy(op->argbuf + off, args[i], k->arg_sizes[i]);
		op->u.kern.args[i] = op->argbuf + off;
		off += (k->arg_sizes[i] + 15) & ~15u;
	}
	op->u.kern.k = k;
	op->u.kern.grid = (struct kdim){ grid.x, grid.y, grid.z };
	op->u.kern.block = (struct kdim){ block.x, block.y, block.z };
	op->u.kern.seed = mix64(g_seed ^ mix64(++g_launches));
	si_log("launch %s grid (%u,%u,%u) block (%u,%u,%u)", k->name,
	    grid.x, grid.y, grid.z, block.x, block.y, block.z);
	return si_leave(si_enqueue(s, op));
}

/* ---- what nvcc's host code calls ---- */

static void *g_fatbin_handle[1];

void **
__cudaRegisterFatBinary(void *fat)
{
	(void)fat;
	return g_fatbin_handle;
}

void
__cudaRegisterFatBinaryEnd(void **h)
{
	(void)h;
}

void
__cudaUnregisterFatBinary(void **h)
{
	(void)h;
}

/* Called from constructors, before main: no si_enter (and no pid
 * fixed yet), only the name table. */
void
__cudaRegisterFunction(void **h, const char *host_fun, char *dev_fun,
    const char *dev_name, int thread_limit, uint3 *tid, uint3 *bid,
    dim3 *bdim, dim3 *gdim, int *wsize)
{
	struct si_fname *n;

	pthread_mutex_lock(&si_mu);
	n = realloc(g_fnames, (g_nfnames + 1) * sizeof(*n));
	if (n != NULL) {
		g_fnames = n;
		g_fnames[g_nfnames].stub = host_fun;
		g_fnames[g_nfnames].name = dev_name;
		g_nfnames++;
	}
	pthread_mutex_unlock(&si_mu);
}

void
__cudaRegisterVar(void **h, char *host_var, char *dev_addr,
    const char *dev_name, int ext, size_t size, int constant, int global)
{
}

void
__cudaRegisterManagedVar(void **h, void **host_var, char *dev_addr,
    const char *dev_name, int ext, size_t size, int constant, int global)
{
}

char
__cudaInitModule(void **h)
{
	return 1;
}

static _Thread_local struct {
	dim3 grid, block;
	size_t shmem;
	struct CUstream_st *stream;
} tls_calls[SI_CALL_DEPTH];
static _Thread_local unsigned tls_ncalls;

unsigned
__cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem,
    struct CUstream_st *stream)
{
	if (tls_ncalls == SI_CALL_DEPTH)
		return 1;
	tls_calls[tls_ncalls].grid = grid;
	tls_calls[tls_ncalls].block = block;
	tls_calls[tls_ncalls].shmem = shmem;
	tls_calls[tls_ncalls].stream = stream;
	tls_ncalls++;
	return 0;
}

cudaError_t
__cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem,
    void *stream)
{
	if (tls_ncalls == 0)
		return cudaErrorMissingConfiguration;
	tls_ncalls--;
	*grid = tls_calls[tls_ncalls].grid;
	*block = tls_calls[tls_ncalls].block;
	*shmem = tls_calls[tls_ncalls].shmem;
	*(struct CUstream_st **)stream = tls_calls[tls_ncalls].stream;
	return cudaSuccess;
}

/* A kernel handle is its stub's address. */
cudaError_t
__cudaGetKernel(cudaKernel_t *k, const void *fun)
{
	if (k == NULL)
		return cudaErrorInvalidValue;
	*k = (cudaKernel_t)(uintptr_t)fun;
	return cudaSuccess;
}

cudaError_t
__cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void **args,
    size_t shmem, cudaStream_t stream)
{
	return cudaLaunchKernel((const void *)k, grid, block, args, shmem,
	    stream);
}

cudaError_t
__cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 grid, dim3 block, void **args,
    size_t shmem, cudaStream_t stream)
{
	/* compiled for per-thread default streams: 0 means this thread's */
	return cudaLaunchKernel((const void *)k, grid, block, args, shmem,
	    stream == NULL ? cudaStreamPerThread : stream);
}

/* ---- the device ---- */

cudaError_t
cudaGetDeviceCount(int *n)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (n == NULL)
		return si_leave(cudaErrorInvalidValue);
	*n = 1;
	return si_leave(cudaSuccess);
}

cudaError_t
cudaSetDevice(int d)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	return si_leave(d == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t
cudaGetDevice(int *d)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (d == NULL)
		return si_leave(cudaErrorInvalidValue);
	*d = 0;
	return si_leave(cudaSuccess);
}

cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
	cudaError_t e;

	if ((e = si_enter()) != cudaSuccess)
		return si_err(e);
	if (p == NULL)
		return si_leave(cudaErrorInvalidValue);
	if (d != 0)
		return si_leave(cudaErrorInvalidDevice);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "daqiri CUDA stand-in (CPU)");
	p->totalGlobalMem = SI_DEVICE_MEM;
	p->sharedMemPerBlock = 48 << 10;
	p->regsPerBlock = 65536;
	p->warpSize = 32;
	p->memPitch = SIZE_MAX;
	p->maxThreadsPerBlock = 1024;
	p->maxThreadsDim[0] = 1024;
	p->maxThreadsDim[1] = 1024;
	p->maxThreadsDim[2] = 64;
	p->maxGridSize[0] = 0x7fffffff;
	p->maxGridSize[1] = 65535;
	p->maxGridSize[2] = 65535;
	p->totalConstMem = 64 << 10;
	p->major = 9;
	p->minor = 0;
	p->textureAlignment = 512;
	p->texturePitchAlignment = 32;
	p->multiProcessorCount = 1;
	p->canMapHostMemory = 1;
	p->concurrentKernels = 1;
	p->asyncEngineCount = 2;
	p->unifiedAddressing = 1;
	p->memoryBusWidth = 64;
	p->l2CacheSize = 1 << 20;
	p->maxThreadsPerMultiProcessor = 2048;
	p->streamPrioritiesSupported = 0;
	p->sharedMemPerMultiprocessor = 228 << 10;
	p->regsPerMultiprocessor = 65536;
	p->maxBlocksPerMultiProcessor = 32;
	p->hostRegisterSupported = 1;
	p->hostRegisterReadOnlySupported = 1;
	p->ipcEventSupported = 1;
	p->gpuDirectRDMASupported = 0;	/* there is no device to DMA to */
	p->pciBusID = 0;
	p->hostNumaId = -1;
	p->deviceNumaId = -1;
	return si_leave(cudaSuccess);
}

cudaError_t
cudaGetLastError(void)
{
	cudaError_t e;

	pthread_once(&g_once, si_init);
	if (si_forked())
		return cudaErrorInitializationError;
	if ((e = si_sticky()) != cudaSuccess)
		return e;
	e = tls_last;
	tls_last = cudaSuccess;
	return e;
}

cudaError_t
cudaPeekAtLastError(void)
{
	cudaError_t e;

	pthread_once(&g_once, si_init);
	if (si_forked())
		return cudaErrorInitializationError;
	if ((e = si_sticky()) != cudaSuccess)
		return e;
	return tls_last;
}

cudaError_t
cudaRuntimeGetVersion(int *v)
{
	if (v == NULL)
		return si_err(cudaErrorInvalidValue);
	*v = SI_VERSION;
	return cudaSuccess;
}

cudaError_t
cudaDriverGetVersion(int *v)
{
	if (v == NULL)
		return si_err(cudaErrorInvalidValue);
	*v = SI_VERSION;
	return cudaSuccess;
}

