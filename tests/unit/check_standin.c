/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the CUDA stand-in (tests/standin/), linked against it instead
 * of libcudart: device memory the host cannot read, copies of every
 * kind, work that runs only when waited for (and adversarially when the
 * order is up to CUDA), kernels as CPU bodies and their faults, errors
 * as the runtime gives them, and IPC memory and events across processes.
 * Some cases run this binary again as a child (the modes in main()).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "kernel.h"

/* The stand-in's one export beyond CUDA's (daemon/kernel.h). */
int daqiri_standin_register(const struct kstandin_kernel *k, uint32_t n);

#define N_FILL		1000u
#define FILL_ADD	7u

#define CK_CUDA(x) do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess)						\
		ck_abort_msg("%s: %s", #x, cudaGetErrorString(e_));	\
} while (0)

/* Distinct objects, so distinct stub addresses. */
static const char stub_fill[1], stub_count[1], stub_poke[1];
static const char stub_unknown[1];

/* Threads the CPU bodies ran, in this process. */
static _Atomic unsigned fill_threads, count_threads;

static unsigned
ran(_Atomic unsigned *c)
{
	return atomic_load(c);
}

static uint32_t
lin_id(const struct kidx *ix)
{
	uint32_t b = ix->block.x + ix->grid.x * (ix->block.y +
	    ix->grid.y * ix->block.z);
	uint32_t t = ix->thread.x + ix->bdim.x * (ix->thread.y +
	    ix->bdim.y * ix->thread.z);

	return b * ix->bdim.x * ix->bdim.y * ix->bdim.z + t;
}

/* fill(buf, n, add): buf[i] = i + add as 32-bit words. */
struct fill_args {
	uint8_t *buf;
	uint32_t n, add;
};

static void
fill_body(void *ctx, const struct kidx *ix)
{
	const struct fill_args *a = ctx;
	uint32_t i = lin_id(ix);

	atomic_fetch_add(&fill_threads, 1);
	if (i < a->n)
		k_st32(a->buf + 4 * (size_t)i, i + a->add);
}

static void
fill_fn(void **args, struct kdim grid, struct kdim block, uint64_t seed,
    const struct kmem_hooks *h)
{
	struct fill_args a = { *(uint8_t **)args[0], *(uint32_t *)args[1],
	    *(uint32_t *)args[2] };

	kgrid_run(grid, block, seed, h, fill_body, &a);
}

/* count(buf): buf[i] += 1 for every thread i. */
static void
count_body(void *ctx, const struct kidx *ix)
{
	uint8_t *p = *(uint8_t **)ctx + 4 * (size_t)lin_id(ix);

	atomic_fetch_add(&count_threads, 1);
	k_st32(p, k_ld32(p) + 1);
}

static void
count_fn(void **args, struct kdim grid, struct kdim block, uint64_t seed,
    const struct kmem_hooks *h)
{
	uint8_t *buf = *(uint8_t **)args[0];

	kgrid_run(grid, block, seed, h, count_body, &buf);
}

/* poke(p): every thread stores 4 bytes at p. */
static void
poke_body(void *ctx, const struct kidx *ix)
{
	k_st32(*(uint8_t **)ctx, 0x12345678u);
}

static void
poke_fn(void **args, struct kdim grid, struct kdim block, uint64_t seed,
    const struct kmem_hooks *h)
{
	uint8_t *p = *(uint8_t **)args[0];

	kgrid_run(grid, block, seed, h, poke_body, &p);
}

static const struct kstandin_kernel kernels[] = {
	{ stub_fill, "fill", fill_fn, 3, { sizeof(void *), 4, 4 } },
	{ stub_count, "count", count_fn, 1, { sizeof(void *) } },
	{ stub_poke, "poke", poke_fn, 1, { sizeof(void *) } },
};

static void
register_kernels(void)
{
	if (daqiri_standin_register(kernels,
	    sizeof(kernels) / sizeof(kernels[0])) != 0)
		abort();
}

static cudaError_t
launch_fill(void *buf, uint32_t n, uint32_t add, cudaStream_t s)
{
	void *args[3] = { &buf, &n, &add };
	dim3 g = { (n + 127) / 128, 1, 1 }, b = { 128, 1, 1 };

	return cudaLaunchKernel(stub_fill, g, b, args, 0, s);
}

static cudaError_t
launch_poke(void *p, uint32_t threads)
{
	void *args[1] = { &p };
	dim3 g = { 1, 1, 1 }, b = { threads, 1, 1 };

	return cudaLaunchKernel(stub_poke, g, b, args, 0, 0);
}

static int
fill_ok(const uint32_t *h, uint32_t n, uint32_t add)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (h[i] != i + add)
			return 0;
	return 1;
}

static int
all_words(const uint32_t *h, uint32_t n, uint32_t v)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (h[i] != v)
			return 0;
	return 1;
}

/*
 * A memset on the legacy stream, then the fill kernel on a non-blocking
 * stream (after a wait for the memset's event if with_event), then a
 * device synchronisation. 1: the kernel's values won, 0: the memset's,
 * -1: something failed.
 */
static int
race(int with_event)
{
	uint32_t h[N_FILL];
	cudaStream_t s;
	cudaEvent_t ev;
	void *d;
	int r = -1;

	if (cudaMalloc(&d, sizeof(h)) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) !=
	    cudaSuccess ||
	    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) !=
	    cudaSuccess)
		return -1;
	if (cudaMemset(d, 0xAB, sizeof(h)) != cudaSuccess)
		return -1;
	if (with_event && (cudaEventRecord(ev, 0) != cudaSuccess ||
	    cudaStreamWaitEvent(s, ev, 0) != cudaSuccess))
		return -1;
	if (launch_fill(d, N_FILL, FILL_ADD, s) != cudaSuccess ||
	    cudaDeviceSynchronize() != cudaSuccess ||
	    cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) !=
	    cudaSuccess)
		return -1;
	if (fill_ok(h, N_FILL, FILL_ADD))
		r = 1;
	else if (all_words(h, N_FILL, 0xABABABABu))
		r = 0;
	cudaFree(d);
	cudaStreamDestroy(s);
	cudaEventDestroy(ev);
	return r;
}

static void
hex_encode(char *out, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int
hex_decode(void *p, size_t n, const char *s)
{
	uint8_t *b = p;
	unsigned v;
	size_t i;

	if (strlen(s) != 2 * n)
		return -1;
	for (i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		b[i] = (uint8_t)v;
	}
	return 0;
}

/* Run this binary again with argv; its stdin/stdout as given. */
static pid_t
spawn_self(char *const argv[], int in, int out, int eager)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (in >= 0)
			dup2(in, 0);
		if (out >= 0)
			dup2(out, 1);
		if (eager)
			setenv("DAQIRI_STANDIN_EAGER", "1", 1);
		else
			unsetenv("DAQIRI_STANDIN_EAGER");
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

static int
wait_exit(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* stderr into a file for the fault messages; returns the old fd. */
static int
stderr_to(FILE *f)
{
	int old = dup(2);

	fflush(stderr);
	dup2(fileno(f), 2);
	return old;
}

static char *
stderr_back(FILE *f, int old)
{
	static char buf[4096];
	size_t n;

	fflush(stderr);
	dup2(old, 2);
	close(old);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

static int
count_lines(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what)) != NULL) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* ---- child modes ---- */

/* --ipc-child MEMHEX EVHEX: wait for the event through a stream, copy,
 * check the owner's kernel ran. Exit codes say which step failed. */
static int
ipc_child(const char *mhex, const char *ehex)
{
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	static uint32_t h[N_FILL];
	cudaStream_t s;
	cudaEvent_t ev;
	void *d;

	if (hex_decode(&mh, sizeof(mh), mhex) != 0 ||
	    hex_decode(&eh, sizeof(eh), ehex) != 0)
		return 2;
	if (cudaIpcOpenMemHandle(&d, mh, cudaIpcMemLazyEnablePeerAccess) !=
	    cudaSuccess || cudaIpcOpenEventHandle(&ev, eh) != cudaSuccess)
		return 3;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) !=
	    cudaSuccess || cudaStreamWaitEvent(s, ev, 0) != cudaSuccess ||
	    cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s) !=
	    cudaSuccess)
		return 4;
	if (!all_words(h, N_FILL, 0))
		return 5;		/* copied before any wait */
	if (cudaStreamSynchronize(s) != cudaSuccess)
		return 6;
	if (!fill_ok(h, N_FILL, FILL_ADD))
		return 7;
	if (cudaEventQuery(ev) != cudaSuccess ||
	    cudaEventSynchronize(ev) != cudaSuccess)
		return 8;
	if (cudaIpcCloseMemHandle(d) != cudaSuccess ||
	    cudaEventDestroy(ev) != cudaSuccess)
		return 9;
	return 0;
}

/* --ipc-owner: device memory with a pattern, a queued kernel that
 * overwrites it behind an IPC event; the handles on stdout; exit when
 * stdin has a byte, without ever waiting. */
static int
ipc_owner(void)
{
	static uint32_t h[N_FILL];
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	char mhex[2 * sizeof(mh) + 1], ehex[2 * sizeof(eh) + 1], c;
	cudaStream_t s;
	cudaEvent_t ev;
	void *d;

	register_kernels();
	memset(h, 0x5C, sizeof(h));
	if (cudaMalloc(&d, sizeof(h)) != cudaSuccess ||
	    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice) !=
	    cudaSuccess ||
	    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) !=
	    cudaSuccess ||
	    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming |
	    cudaEventInterprocess) != cudaSuccess ||
	    launch_fill(d, N_FILL, FILL_ADD, s) != cudaSuccess ||
	    cudaEventRecord(ev, s) != cudaSuccess ||
	    cudaIpcGetMemHandle(&mh, d) != cudaSuccess ||
	    cudaIpcGetEventHandle(&eh, ev) != cudaSuccess)
		return 2;
	hex_encode(mhex, &mh, sizeof(mh));
	hex_encode(ehex, &eh, sizeof(eh));
	printf("%s %s\n", mhex, ehex);
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 3;
	_exit(0);
}

/* ---- the cases ---- */

START_TEST(test_host_deref_faults)
{
	uint32_t v = 0xCAFEF00Du, back = 0;
	void *d;
	pid_t pid;

	CK_CUDA(cudaMalloc(&d, 4096));
	ck_assert_uint_eq((uintptr_t)d % 256, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile uint8_t x = *(volatile uint8_t *)d;

		(void)x;
		_exit(0);
	}
	ck_assert_int_eq(wait_exit(pid), 128 + SIGSEGV);
	CK_CUDA(cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice));
	CK_CUDA(cudaMemcpy(&back, d, 4, cudaMemcpyDeviceToHost));
	ck_assert_uint_eq(back, v);
	CK_CUDA(cudaFree(d));
}
END_TEST

START_TEST(test_memcpy_kinds)
{
	enum { N = 8192 };
	static uint8_t src[N], dst[N], reg[N] __attribute__((aligned(4096)));
	uint8_t *d1, *d2, *pin;
	size_t i;

	for (i = 0; i < N; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	CK_CUDA(cudaMalloc((void **)&d1, N));
	CK_CUDA(cudaMalloc((void **)&d2, N));
	CK_CUDA(cudaHostAlloc((void **)&pin, N, cudaHostAllocMapped));
	CK_CUDA(cudaHostRegister(reg, N, cudaHostRegisterDefault));

	CK_CUDA(cudaMemcpy(d1, src, N, cudaMemcpyHostToDevice));
	CK_CUDA(cudaMemcpy(d2, d1, N, cudaMemcpyDeviceToDevice));
	CK_CUDA(cudaMemcpy(dst, d2, N, cudaMemcpyDeviceToHost));
	ck_assert_mem_eq(dst, src, N);

	memset(dst, 0, N);
	CK_CUDA(cudaMemcpy(pin, d1, N, cudaMemcpyDefault));
	CK_CUDA(cudaMemcpy(reg, pin, N, cudaMemcpyDefault));
	CK_CUDA(cudaMemcpy(d2 + 1, reg, N - 1, cudaMemcpyHostToDevice));
	CK_CUDA(cudaMemcpy(dst, d2 + 1, N - 1, cudaMemcpyDefault));
	ck_assert_mem_eq(dst, src, N - 1);
	/* pinned memory is a device pointer too (UVA) */
	CK_CUDA(cudaMemcpy(pin, d1 + 16, 16, cudaMemcpyDeviceToDevice));
	ck_assert_mem_eq(pin, src + 16, 16);
	CK_CUDA(cudaMemcpy(dst, src, N, cudaMemcpyHostToHost));

	CK_CUDA(cudaMemset(d1, 0x3C, N));
	CK_CUDA(cudaMemcpy(dst, d1, N, cudaMemcpyDeviceToHost));
	for (i = 0; i < N; i++)
		ck_assert_uint_eq(dst[i], 0x3C);

	/* directions that do not fit the pointers */
	ck_assert_int_eq(cudaMemcpy(dst, src, N, cudaMemcpyHostToDevice),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaMemcpy(dst, src, N, cudaMemcpyDeviceToHost),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaMemcpy(d1, d2, N, cudaMemcpyHostToDevice),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaMemcpy(d1, src, N, cudaMemcpyHostToHost),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaMemcpy(d1, d2, N + 1, cudaMemcpyDefault),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaMemcpy(d1, d2, N, (enum cudaMemcpyKind)9),
	    cudaErrorInvalidMemcpyDirection);
	ck_assert_int_eq(cudaMemset(dst, 0, N), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

	CK_CUDA(cudaHostUnregister(reg));
	CK_CUDA(cudaFreeHost(pin));
	CK_CUDA(cudaFree(d1));
	CK_CUDA(cudaFree(d2));
}
END_TEST

START_TEST(test_deferred_until_waited)
{
	static uint32_t pat[N_FILL], h[N_FILL];
	cudaStream_t s;
	uint32_t i;
	void *d;

	for (i = 0; i < N_FILL; i++)
		pat[i] = i * 2654435761u;
	CK_CUDA(cudaMalloc(&d, sizeof(pat)));
	CK_CUDA(cudaMemcpy(d, pat, sizeof(pat), cudaMemcpyHostToDevice));
	CK_CUDA(cudaStreamCreate(&s));

	CK_CUDA(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
	ck_assert(all_words(h, N_FILL, 0));	/* nobody waited yet */
	CK_CUDA(cudaStreamSynchronize(s));
	ck_assert_mem_eq(h, pat, sizeof(h));

	/* a polling loop: NotReady once, then the work runs */
	memset(h, 0, sizeof(h));
	CK_CUDA(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
	ck_assert_int_eq(cudaStreamQuery(s), cudaErrorNotReady);
	ck_assert(all_words(h, N_FILL, 0));
	ck_assert_int_eq(cudaStreamQuery(s), cudaSuccess);
	ck_assert_mem_eq(h, pat, sizeof(h));
	/* NotReady is an answer, not an error */
	ck_assert_int_eq(cudaGetLastError(), cudaSuccess);

	/* destroying a stream completes its work first */
	memset(h, 0, sizeof(h));
	CK_CUDA(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
	CK_CUDA(cudaStreamDestroy(s));
	ck_assert_mem_eq(h, pat, sizeof(h));
	ck_assert_int_eq(cudaStreamSynchronize(s),
	    cudaErrorInvalidResourceHandle);
	CK_CUDA(cudaFree(d));
}
END_TEST

/* A synchronous cudaMemcpy is on the legacy stream: it waits for
 * blocking streams' earlier work, not for non-blocking ones'. */
START_TEST(test_legacy_stream_rule)
{
	static uint32_t pat[N_FILL], h1[N_FILL], h2[N_FILL];
	cudaStream_t b, nb;
	uint32_t one = 1, i;
	void *d, *d1;

	for (i = 0; i < N_FILL; i++)
		pat[i] = i + 1;
	CK_CUDA(cudaMalloc(&d, sizeof(pat)));
	CK_CUDA(cudaMalloc(&d1, 4));
	CK_CUDA(cudaMemcpy(d, pat, sizeof(pat), cudaMemcpyHostToDevice));
	CK_CUDA(cudaStreamCreate(&b));
	CK_CUDA(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
	CK_CUDA(cudaMemcpyAsync(h1, d, sizeof(h1), cudaMemcpyDeviceToHost,
	    b));
	CK_CUDA(cudaMemcpyAsync(h2, d, sizeof(h2), cudaMemcpyDeviceToHost,
	    nb));
	CK_CUDA(cudaMemcpy(d1, &one, 4, cudaMemcpyHostToDevice));
	ck_assert_mem_eq(h1, pat, sizeof(h1));
	ck_assert(all_words(h2, N_FILL, 0));
	CK_CUDA(cudaDeviceSynchronize());
	ck_assert_mem_eq(h2, pat, sizeof(h2));
}
END_TEST

/* The race made deterministic: the memset on the legacy stream runs
 * after the kernel on the non-blocking stream; an event orders them. */
START_TEST(test_race_adversarial)
{
	ck_assert_int_eq(race(0), 0);
	ck_assert_int_eq(race(1), 1);
}
END_TEST

START_TEST(test_eager_mode)
{
	char *argv[] = { "check_standin", "--race", NULL };

	/* eager: the kernel after the memset; deferred: before it */
	ck_assert_int_eq(wait_exit(spawn_self(argv, -1, -1, 1)), 11);
	ck_assert_int_eq(wait_exit(spawn_self(argv, -1, -1, 0)), 10);
}
END_TEST

START_TEST(test_kernel_on_sync_every_thread_once)
{
	enum { GX = 3, GY = 2, GZ = 2, BX = 4, BY = 2, BZ = 3 };
	enum { NT = GX * GY * GZ * BX * BY * BZ };
	static uint32_t h[N_FILL];
	dim3 g = { GX, GY, GZ }, b = { BX, BY, BZ };
	cudaStream_t s;
	uint32_t add = FILL_ADD;
	void *d, *args[1] = { &d };
	size_t i;

	CK_CUDA(cudaMalloc(&d, NT * 4));
	CK_CUDA(cudaMemset(d, 0, NT * 4));
	CK_CUDA(cudaStreamCreate(&s));
	CK_CUDA(cudaLaunchKernel(stub_count, g, b, args, 0, s));
	ck_assert_uint_eq(ran(&count_threads), 0);
	CK_CUDA(cudaStreamSynchronize(s));
	ck_assert_uint_eq(ran(&count_threads), NT);
	CK_CUDA(cudaMemcpy(h, d, NT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < NT; i++)
		ck_assert_uint_eq(h[i], 1);
	CK_CUDA(cudaFree(d));

	/* the arguments are copied at launch */
	CK_CUDA(cudaMalloc(&d, sizeof(h)));
	{
		void *fargs[3];
		uint32_t n = N_FILL;
		dim3 fg = { (N_FILL + 127) / 128, 1, 1 }, fb = { 128, 1, 1 };

		fargs[0] = &d;
		fargs[1] = &n;
		fargs[2] = &add;
		CK_CUDA(cudaLaunchKernel(stub_fill, fg, fb, fargs, 0, s));
		add = 99;
		n = 1;
	}
	CK_CUDA(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	ck_assert(fill_ok(h, N_FILL, FILL_ADD));
	CK_CUDA(cudaStreamDestroy(s));
}
END_TEST

START_TEST(test_event_query)
{
	cudaStream_t s;
	cudaEvent_t ev, t0, t1;
	float ms = -1;
	void *d;

	CK_CUDA(cudaMalloc(&d, N_FILL * 4));
	CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CK_CUDA(cudaEventCreate(&t0));
	CK_CUDA(cudaEventCreate(&t1));
	ck_assert_int_eq(cudaEventQuery(ev), cudaSuccess);  /* unrecorded */
	CK_CUDA(cudaEventRecord(t0, s));
	CK_CUDA(launch_fill(d, N_FILL, FILL_ADD, s));
	CK_CUDA(cudaEventRecord(ev, s));
	CK_CUDA(cudaEventRecord(t1, s));
	ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, t1),
	    cudaErrorNotReady);
	ck_assert_int_eq(cudaEventQuery(ev), cudaErrorNotReady);
	ck_assert_uint_eq(ran(&fill_threads), 0);
	ck_assert_int_eq(cudaEventQuery(ev), cudaSuccess);
	ck_assert_uint_ge(ran(&fill_threads), N_FILL);
	CK_CUDA(cudaEventSynchronize(t1));
	CK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
	ck_assert(ms >= 0);
	ck_assert_int_eq(cudaEventElapsedTime(&ms, t0, ev),
	    cudaErrorInvalidResourceHandle);
	CK_CUDA(cudaEventDestroy(ev));
	ck_assert_int_eq(cudaEventRecord(ev, s),
	    cudaErrorInvalidResourceHandle);
	ck_assert_int_eq(cudaEventQuery((cudaEvent_t)&ms),
	    cudaErrorInvalidResourceHandle);
}
END_TEST

/* One fault per launch, however many threads hit it, named; sticky. */
static void
check_fault(void *p, cudaError_t want, const char *what)
{
	FILE *f = tmpfile();
	char *out;
	void *d;
	int old;

	ck_assert_ptr_nonnull(f);
	CK_CUDA(launch_poke(p, 64));
	old = stderr_to(f);
	ck_assert_int_eq(cudaDeviceSynchronize(), want);
	out = stderr_back(f, old);
	ck_assert_msg(strstr(out, what) != NULL, "stderr: %s", out);
	ck_assert_int_eq(count_lines(out, "cuda-standin: kernel poke: "), 1);
	ck_assert_int_eq(cudaGetLastError(), want);
	ck_assert_int_eq(cudaGetLastError(), want);
	ck_assert_int_eq(cudaPeekAtLastError(), want);
	ck_assert_int_eq(cudaMalloc(&d, 16), want);
	fclose(f);
}

START_TEST(test_illegal_address)
{
	char want[128];
	uint8_t *d;

	CK_CUDA(cudaMalloc((void **)&d, 4098));
	snprintf(want, sizeof(want), "kernel poke: illegal address %p "
	    "(store of 4 bytes) by block (0,0,0) thread (", (void *)(d + 4096));
	check_fault(d + 4096, cudaErrorIllegalAddress, want);
}
END_TEST

START_TEST(test_misaligned_address)
{
	char want[128];
	uint8_t *d;

	CK_CUDA(cudaMalloc((void **)&d, 4096));
	snprintf(want, sizeof(want), "kernel poke: misaligned address %p "
	    "(store of 4 bytes)", (void *)(d + 2));
	check_fault(d + 2, cudaErrorMisalignedAddress, want);
}
END_TEST

START_TEST(test_readonly_registered)
{
	static uint32_t ro[1024] __attribute__((aligned(4096)));

	CK_CUDA(cudaHostRegister(ro, sizeof(ro), cudaHostRegisterReadOnly));
	check_fault(&ro[3], cudaErrorIllegalAddress, "illegal address");
	ck_assert_uint_eq(ro[3], 0);
}
END_TEST

START_TEST(test_pageable_is_not_device_memory)
{
	static uint32_t pageable[4];

	check_fault(&pageable[0], cudaErrorIllegalAddress, "illegal address");
}
END_TEST

START_TEST(test_errors_as_the_runtime)
{
	static uint8_t page[8192] __attribute__((aligned(4096)));
	struct cudaPointerAttributes at;
	struct cudaDeviceProp prop;
	cudaIpcMemHandle_t mh;
	cudaEvent_t ev;
	FILE *f = tmpfile();
	dim3 one = { 1, 1, 1 }, big = { 1025, 1, 1 }, zero = { 0, 1, 1 };
	void *d, *pin, *hp, *args[1] = { &d };
	char *out;
	int n, old;

	CK_CUDA(cudaGetDeviceCount(&n));
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cudaSetDevice(1), cudaErrorInvalidDevice);
	CK_CUDA(cudaGetDeviceProperties(&prop, 0));
	ck_assert_str_eq(prop.name, "daqiri CUDA stand-in (CPU)");
	ck_assert_int_eq(prop.major, 9);
	ck_assert_str_eq(cudaGetErrorString(cudaErrorIllegalAddress),
	    "an illegal memory access was encountered");
	ck_assert_str_eq(cudaGetErrorName(cudaErrorMisalignedAddress),
	    "cudaErrorMisalignedAddress");

	CK_CUDA(cudaMalloc(&d, 4096));
	CK_CUDA(cudaMallocHost(&pin, 4096));
	ck_assert_int_eq(cudaFree(page), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaFree((uint8_t *)d + 8), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
	ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
	ck_assert_int_eq(cudaFreeHost(d), cudaErrorInvalidValue);

	CK_CUDA(cudaHostRegister(page, 4096, cudaHostRegisterMapped));
	ck_assert_int_eq(cudaHostRegister(page + 4095, 4096, 0),
	    cudaErrorHostMemoryAlreadyRegistered);
	ck_assert_int_eq(cudaHostUnregister(page + 4096),
	    cudaErrorHostMemoryNotRegistered);
	CK_CUDA(cudaHostGetDevicePointer(&hp, page + 100, 0));
	ck_assert_ptr_eq(hp, page + 100);
	ck_assert_int_eq(cudaHostGetDevicePointer(&hp, page + 4096, 0),
	    cudaErrorInvalidValue);

	CK_CUDA(cudaPointerGetAttributes(&at, (uint8_t *)d + 10));
	ck_assert_int_eq(at.type, cudaMemoryTypeDevice);
	ck_assert_ptr_eq(at.devicePointer, (uint8_t *)d + 10);
	CK_CUDA(cudaPointerGetAttributes(&at, pin));
	ck_assert_int_eq(at.type, cudaMemoryTypeHost);
	ck_assert_ptr_eq(at.hostPointer, pin);
	ck_assert_ptr_eq(at.devicePointer, pin);
	CK_CUDA(cudaPointerGetAttributes(&at, page + 8));
	ck_assert_int_eq(at.type, cudaMemoryTypeHost);
	CK_CUDA(cudaPointerGetAttributes(&at, page + 4096));
	ck_assert_int_eq(at.type, cudaMemoryTypeUnregistered);
	CK_CUDA(cudaHostUnregister(page));

	/* launch errors are not sticky */
	ck_assert_int_eq(cudaLaunchKernel(stub_poke, one, big, args, 0, 0),
	    cudaErrorInvalidConfiguration);
	ck_assert_int_eq(cudaLaunchKernel(stub_poke, zero, one, args, 0, 0),
	    cudaErrorInvalidConfiguration);
	ck_assert_int_eq(cudaLaunchKernel(stub_poke, one, one, args, 0,
	    (cudaStream_t)page), cudaErrorInvalidResourceHandle);
	old = stderr_to(f);
	ck_assert_int_eq(cudaLaunchKernel(stub_unknown, one, one, args, 0,
	    0), cudaErrorInvalidDeviceFunction);
	out = stderr_back(f, old);
	ck_assert_ptr_nonnull(strstr(out, "has no CPU body"));
	CK_CUDA(cudaDeviceSynchronize());

	ck_assert_int_eq(cudaEventCreateWithFlags(&ev, cudaEventInterprocess),
	    cudaErrorInvalidValue);
	ck_assert_int_eq(cudaIpcGetMemHandle(&mh, pin),
	    cudaErrorInvalidValue);
	CK_CUDA(cudaIpcGetMemHandle(&mh, d));
	ck_assert_int_eq(cudaIpcOpenMemHandle(&hp, mh,
	    cudaIpcMemLazyEnablePeerAccess), cudaErrorDeviceUninitialized);
	memset(&mh, 0x5A, sizeof(mh));
	ck_assert_int_eq(cudaIpcOpenMemHandle(&hp, mh,
	    cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidValue);
	fclose(f);
}
END_TEST

/* How a program finds the registration (it is in the stand-in only),
 * and what it refuses. */
START_TEST(test_register_contract)
{
	kstandin_register_fn reg;
	struct kstandin_kernel bad = kernels[0];

	reg = (kstandin_register_fn)dlsym(RTLD_DEFAULT, KSTANDIN_REGISTER);
	ck_assert_ptr_nonnull((void *)reg);
	ck_assert_ptr_eq((void *)reg, (void *)daqiri_standin_register);
	ck_assert_int_eq(reg(kernels, 1), 0);	/* again: replaces */
	bad.nargs = 5;
	ck_assert_int_eq(reg(&bad, 1), -EINVAL);
	bad = kernels[0];
	bad.fn = NULL;
	ck_assert_int_eq(reg(&bad, 1), -EINVAL);
	bad = kernels[0];
	bad.arg_sizes[1] = 0;
	ck_assert_int_eq(reg(&bad, 1), -EINVAL);
	ck_assert_int_eq(reg(NULL, 1), -EINVAL);
}
END_TEST

/* A forked child of a process using CUDA cannot use it, as with CUDA. */
START_TEST(test_fork_child)
{
	void *d;
	pid_t pid;

	CK_CUDA(cudaMalloc(&d, 64));
	pid = fork();
	if (pid == 0)
		_exit(cudaMalloc(&d, 64) == cudaErrorInitializationError &&
		    cudaFree(d) == cudaErrorInitializationError ? 0 : 1);
	ck_assert_int_eq(wait_exit(pid), 0);
}
END_TEST

/* The peer's wait makes our service thread run our queued kernel; we
 * never wait ourselves. */
START_TEST(test_ipc_peer_waits)
{
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	char mhex[2 * sizeof(mh) + 1], ehex[2 * sizeof(eh) + 1];
	char *argv[] = { "check_standin", "--ipc-child", mhex, ehex, NULL };
	cudaStream_t s;
	cudaEvent_t ev;
	void *d;

	/* no memset first: on the legacy stream it would race the kernel */
	CK_CUDA(cudaMalloc(&d, N_FILL * 4));
	CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming |
	    cudaEventInterprocess));
	CK_CUDA(launch_fill(d, N_FILL, FILL_ADD, s));
	CK_CUDA(cudaEventRecord(ev, s));
	CK_CUDA(cudaIpcGetMemHandle(&mh, (uint8_t *)d + 64));
	CK_CUDA(cudaIpcGetEventHandle(&eh, ev));
	hex_encode(mhex, &mh, sizeof(mh));
	hex_encode(ehex, &eh, sizeof(eh));
	ck_assert_uint_eq(ran(&fill_threads), 0);
	ck_assert_int_eq(wait_exit(spawn_self(argv, -1, -1, 0)), 0);
	ck_assert_uint_ge(ran(&fill_threads), N_FILL);
	ck_assert_int_eq(cudaEventQuery(ev), cudaSuccess);
}
END_TEST

/* The owner exits with its record pending: the wait ends with an error
 * instead of hanging, and the opened memory stays readable. */
START_TEST(test_ipc_dead_owner)
{
	cudaIpcMemHandle_t mh;
	cudaIpcEventHandle_t eh;
	char *argv[] = { "check_standin", "--ipc-owner", NULL };
	char line[512], mhex[200], ehex[200];
	static uint32_t h[N_FILL];
	struct timespec t0, t1;
	int to[2], from[2], old;
	cudaEvent_t ev;
	FILE *f, *errf = tmpfile();
	pid_t pid;
	char *out;
	void *d;

	ck_assert_int_eq(pipe(to), 0);
	ck_assert_int_eq(pipe(from), 0);
	pid = spawn_self(argv, to[0], from[1], 0);
	close(to[0]);
	close(from[1]);
	f = fdopen(from[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_int_eq(sscanf(line, "%199s %199s", mhex, ehex), 2);
	ck_assert_int_eq(hex_decode(&mh, sizeof(mh), mhex), 0);
	ck_assert_int_eq(hex_decode(&eh, sizeof(eh), ehex), 0);
	CK_CUDA(cudaIpcOpenMemHandle(&d, mh, cudaIpcMemLazyEnablePeerAccess));
	CK_CUDA(cudaIpcOpenEventHandle(&ev, eh));
	ck_assert_int_eq(write(to[1], "x", 1), 1);
	ck_assert_int_eq(wait_exit(pid), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	old = stderr_to(errf);
	ck_assert_int_eq(cudaEventSynchronize(ev), cudaErrorLaunchFailure);
	out = stderr_back(errf, old);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 3);
	ck_assert_msg(strstr(out, "owner of an IPC event, is gone") != NULL,
	    "stderr: %s", out);
	fclose(errf);
	CK_CUDA(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	ck_assert(all_words(h, N_FILL, 0x5C5C5C5Cu));
	CK_CUDA(cudaIpcCloseMemHandle(d));
	ck_assert_int_eq(cudaIpcOpenMemHandle(&d, mh,
	    cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidValue);
	CK_CUDA(cudaEventDestroy(ev));
	fclose(f);
	close(to[1]);
}
END_TEST

static Suite *
standin_suite(void)
{
	Suite *s = suite_create("standin");
	TCase *tc = tcase_create("standin");

	tcase_add_checked_fixture(tc, register_kernels, NULL);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_host_deref_faults);
	tcase_add_test(tc, test_memcpy_kinds);
	tcase_add_test(tc, test_deferred_until_waited);
	tcase_add_test(tc, test_legacy_stream_rule);
	tcase_add_test(tc, test_race_adversarial);
	tcase_add_test(tc, test_eager_mode);
	tcase_add_test(tc, test_kernel_on_sync_every_thread_once);
	tcase_add_test(tc, test_event_query);
	tcase_add_test(tc, test_illegal_address);
	tcase_add_test(tc, test_misaligned_address);
	tcase_add_test(tc, test_readonly_registered);
	tcase_add_test(tc, test_pageable_is_not_device_memory);
	tcase_add_test(tc, test_errors_as_the_runtime);
	tcase_add_test(tc, test_register_contract);
	tcase_add_test(tc, test_fork_child);
	tcase_add_test(tc, test_ipc_peer_waits);
	tcase_add_test(tc, test_ipc_dead_owner);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	SRunner *sr;
	int nfail;

	/* child modes: this binary run again by a case above */
	if (argc == 2 && strcmp(argv[1], "--race") == 0) {
		register_kernels();
		return 10 + race(0);	/* 11: the kernel won, 10: the memset */
	}
	if (argc == 4 && strcmp(argv[1], "--ipc-child") == 0)
		return ipc_child(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "--ipc-owner") == 0)
		return ipc_owner();

	/* the cases expect work to wait for a wait */
	unsetenv("DAQIRI_STANDIN_EAGER");
	/* each case in its own process: the stand-in's state (a sticky
	 * error above all) is per process, as a CUDA context is */
	sr = srunner_create(standin_suite());
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail ? EXIT_FAILURE : EXIT_SUCCESS;
}
