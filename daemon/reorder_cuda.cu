/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA reorder backend: the CPU (reorder.c) reads headers and keeps the
 * window and bitmaps; this file queues every payload of a burst into a
 * pinned job table and converts them all into their slots with one kernel
 * launch, using the convert.h arithmetic, fills missing slots on the device
 * and records one interprocess event per finished tensor. Called on the
 * plan's thread (an RX worker; init on the main thread). Device memory,
 * ranges and events are gpu.cu's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>

#include <cuda_runtime.h>

#include "reorder_cuda.h"	/* first: it lets C++ read _Static_assert */
#include "convert.h"
#include "gpu.h"
#include "reorder_kernel.h"
#include "shadow_kernel.h"

static_assert(sizeof(struct reorder_cuda_job) == 16, "job layout");

/* Kernel geometry: threads per block, most blocks per job. */
#define RCUDA_BLOCK		256
#define RCUDA_GRID_X_MAX		128u
/* Most jobs in one launch (the y dimension of the grid). */
#define RCUDA_GRID_Y_MAX		65535u
/* Per-plan cache of pointer kinds, by 4 KiB page (direct mapped). */
#define RCUDA_PAGE_SHIFT		12
#define RCUDA_PAGE_CACHE		4096
/* Per-plan cache of tensor buffers, by buffer index (direct mapped). */
#define RCUDA_BUF_CACHE		256
/* Plans whose counters reorder_cuda_stats() can find. */
#define RCUDA_MAX_PLANS		64
/* Staged payloads start on this boundary (vector loads). */
#define RCUDA_STAGE_ALIGN		16u

/*
 * What a payload or tensor pointer is to the GPU (gpu.h): HOST is staged
 * (payloads) or written on the CPU (tensors), DEVICE and PINNED are used in
 * place through their device alias, BAD cannot be used, UNKNOWN marks an
 * empty cache entry.
 */

/* ------------------------------------------------------------------ */
/* the kernel: reorder_kernel.h's body, specialised per conversion */

template <enum daqiri_dtype IN, enum daqiri_dtype OUT>
__global__ void __launch_bounds__(RCUDA_BLOCK)
rcuda_kernel(struct rk_params p)
{
	const struct kidx ix = k_idx();

	rk_kernel(&p, IN, OUT, &ix);
}

typedef void (*rcuda_kernel_fn)(struct rk_params);

template <enum daqiri_dtype IN>
static rcuda_kernel_fn
rcuda_pick_out(enum daqiri_dtype out)
{
	switch (out) {
	case DAQIRI_DTYPE_FP16:
		return rcuda_kernel<IN, DAQIRI_DTYPE_FP16>;
	case DAQIRI_DTYPE_BF16:
		return rcuda_kernel<IN, DAQIRI_DTYPE_BF16>;
	case DAQIRI_DTYPE_FP32:
		return rcuda_kernel<IN, DAQIRI_DTYPE_FP32>;
	case DAQIRI_DTYPE_FP64:
		return rcuda_kernel<IN, DAQIRI_DTYPE_FP64>;
	case DAQIRI_DTYPE_INT32:
		return rcuda_kernel<IN, DAQIRI_DTYPE_INT32>;
	default:
		return nullptr;
	}
}

/* The kernel for a conversion, or NULL when it is not supported. */
static rcuda_kernel_fn
rcuda_pick(enum daqiri_dtype in, enum daqiri_dtype out)
{
	switch (in) {
	case DAQIRI_DTYPE_RAW:
		return rcuda_kernel<DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW>;
	case DAQIRI_DTYPE_INT4:
		return rcuda_pick_out<DAQIRI_DTYPE_INT4>(out);
	case DAQIRI_DTYPE_INT8:
		return rcuda_pick_out<DAQIRI_DTYPE_INT8>(out);
	case DAQIRI_DTYPE_INT16:
		return rcuda_pick_out<DAQIRI_DTYPE_INT16>(out);
	case DAQIRI_DTYPE_INT32:
		return rcuda_pick_out<DAQIRI_DTYPE_INT32>(out);
	default:
		return nullptr;
	}
}

__global__ void __launch_bounds__(SHADOW_THREADS)
rcuda_shadow_kernel(struct shadow_params p)
{
	const struct kidx ix = k_idx();

	shadow_kernel(&p, &ix);
}

/*
 * Every specialisation's CPU body, offered to the CUDA stand-in
 * (tests/standin/) when a program runs on it: the stand-in runs
 * reorder_kernel.h's body where the real runtime runs the device code.
 * Against the real libcudart the registration symbol is absent and
 * nothing happens.
 */
#ifndef __CUDA_ARCH__
#define RCUDA_OFFER(IN, OUT) { (const void *)rcuda_kernel<IN, OUT>,	\
	"rcuda_kernel<" #IN ", " #OUT ">", rk_cpu_launch, 1,		\
	{ sizeof(struct rk_params), 0, 0, 0 } }
#define RCUDA_OFFER_OUTS(IN) RCUDA_OFFER(IN, DAQIRI_DTYPE_FP16),		\
	RCUDA_OFFER(IN, DAQIRI_DTYPE_BF16), RCUDA_OFFER(IN, DAQIRI_DTYPE_FP32),	\
	RCUDA_OFFER(IN, DAQIRI_DTYPE_FP64), RCUDA_OFFER(IN, DAQIRI_DTYPE_INT32)

__attribute__((constructor)) static void
rcuda_offer_cpu_bodies(void)
{
	static const struct kstandin_kernel k[] = {
		RCUDA_OFFER(DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW),
		RCUDA_OFFER_OUTS(DAQIRI_DTYPE_INT4),
		RCUDA_OFFER_OUTS(DAQIRI_DTYPE_INT8),
		RCUDA_OFFER_OUTS(DAQIRI_DTYPE_INT16),
		RCUDA_OFFER_OUTS(DAQIRI_DTYPE_INT32),
		{ (const void *)rcuda_shadow_kernel, "rcuda_shadow_kernel",
		  shadow_cpu_launch, 1, { sizeof(struct shadow_params), 0, 0,
		  0 } },
	};
	kstandin_register_fn reg;

	*(void **)&reg = dlsym(RTLD_DEFAULT, KSTANDIN_REGISTER);
	if (reg != nullptr)
		(void)reg(k, sizeof(k) / sizeof(k[0]));
}
#endif

/* x blocks per job: enough for the widest of conversion and fill. */
static unsigned
rcuda_grid_x(enum daqiri_dtype in, uint32_t in_bytes, uint64_t slot_bytes)
{
	uint64_t units = in == DAQIRI_DTYPE_RAW ? in_bytes / 16 : in_bytes / 4;
	uint64_t g;

	if (slot_bytes / 16 > units)
		units = slot_bytes / 16;
	g = (units + RCUDA_BLOCK - 1) / RCUDA_BLOCK;
	return g < 1 ? 1 : g > RCUDA_GRID_X_MAX ? RCUDA_GRID_X_MAX :
	    (unsigned)g;
}

/* Check a conversion's geometry; 0 or -EINVAL with the message set. */
static int
rcuda_check(enum daqiri_dtype in, enum daqiri_dtype out, uint32_t in_bytes,
	    uint64_t slot_bytes)
{
	if (!rk_conversion_ok(in, out) || rcuda_pick(in, out) == nullptr) {
		gpu_set_error("gpu reorder cannot convert %d to %d (outputs: "
		    RK_OUTPUTS ")", (int)in, (int)out);
		return -EINVAL;
	}
	if (in_bytes == 0 || cvt_in_elems(in, in_bytes) == 0) {
		gpu_set_error("gpu reorder: %u payload bytes are no whole "
		    "number of input elements", in_bytes);
		return -EINVAL;
	}
	if (in != DAQIRI_DTYPE_RAW && slot_bytes !=
	    (uint64_t)cvt_in_elems(in, in_bytes) * cvt_out_size(out)) {
		gpu_set_error("gpu reorder: slot of %llu bytes does not match "
		    "%u payload bytes", (unsigned long long)slot_bytes,
		    in_bytes);
		return -EINVAL;
	}
	if (in == DAQIRI_DTYPE_RAW && slot_bytes < in_bytes) {
		gpu_set_error("gpu reorder: slot of %llu bytes is shorter than "
		    "%u payload bytes", (unsigned long long)slot_bytes,
		    in_bytes);
		return -EINVAL;
	}
	return 0;
}

static int
rcuda_launch(rcuda_kernel_fn fn, const struct rk_params *base, unsigned gx,
	     const struct reorder_cuda_job *jobs_dev, uint32_t njobs,
	     cudaStream_t stream)
{
	struct rk_params p = *base;
	cudaError_t e;
	uint32_t n;
	void *args[1] = { &p };

	while (njobs > 0) {
		n = njobs > RCUDA_GRID_Y_MAX ? RCUDA_GRID_Y_MAX : njobs;
		p.jobs = jobs_dev;
		e = cudaLaunchKernel((const void *)fn, dim3(gx, n),
		    dim3(RCUDA_BLOCK), args, 0, stream);
		if (e != cudaSuccess)
			return gpu_cuda_error("gpu reorder: kernel launch", e);
		jobs_dev += n;
		njobs -= n;
	}
	return 0;
}

extern "C" int
reorder_cuda_place_jobs(enum daqiri_dtype in, enum daqiri_dtype out,
			enum cfg_endian en, enum daqiri_fill fill,
			uint32_t in_bytes, uint64_t slot_bytes,
			const struct reorder_cuda_job *jobs_dev, uint32_t njobs,
			void *stream)
{
	struct rk_params p;
	int rc;

	if (in == DAQIRI_DTYPE_RAW)
		out = DAQIRI_DTYPE_RAW;
	if ((rc = rcuda_check(in, out, in_bytes, slot_bytes)) != 0)
		return rc;
	p.jobs = jobs_dev;
	p.in_bytes = in_bytes;
	p.nelems = cvt_in_elems(in, in_bytes);
	p.slot_bytes = slot_bytes;
	p.en = en;
	p.in = in;
	p.out = out;
	p.fill = fill;
	return rcuda_launch(rcuda_pick(in, out), &p, rcuda_grid_x(in, in_bytes,
	    slot_bytes), jobs_dev, njobs, (cudaStream_t)stream);
}

/* ------------------------------------------------------------------ */
/* the backend */

struct rcuda_table {
	struct reorder_cuda_job *h;	/* pinned, filled by place()/fill() */
	struct reorder_cuda_job *d;	/* device copy the kernel reads */
	uint8_t *stage;			/* pinned staging, host view */
	uint8_t *stage_dev;		/* ... and its device alias */
	uint32_t njobs;
	uint32_t staged;		/* staging bytes used */
	bool direct;			/* some job reads caller memory */
	bool busy;			/* launched; `done` not yet waited */
	uint64_t gen;			/* its launch's number */
	cudaEvent_t done;
};

struct rcuda_page {
	uintptr_t page;
	intptr_t delta;
	enum gpu_ptr_kind kind;
};

struct rcuda_bufent {
	const void *data;
	uint8_t *alias;			/* device address of data, or NULL */
	enum gpu_ptr_kind kind;
	cudaEvent_t ev;			/* NULL until finish() needed it */
};

struct rcuda_state {
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
	rcuda_kernel_fn kernel;
	unsigned gx;
	struct rk_params kp;
	bool failed;			/* a CUDA error: stop using the GPU */
	uint64_t gen;			/* launches so far */
	uint64_t direct_gen;		/* the last that read caller memory */
	uint64_t done_gen;		/* every launch up to it finished */
	uint64_t lost_seen;		/* st.lost at the last commit */
	unsigned cur;
	struct rcuda_table t[REORDER_CUDA_NTABLES];
	struct reorder_cuda_stats st;
	struct rcuda_bufent bufs[RCUDA_BUF_CACHE];
	struct rcuda_page pages[RCUDA_PAGE_CACHE];
};

static std::mutex rcuda_plans_mu;		/* guards rcuda_plans */
static struct {
	const struct reorder_plan *plan;
	struct rcuda_state *s;
} rcuda_plans[RCUDA_MAX_PLANS];

static void
rcuda_fail(struct rcuda_state *s, const char *what, cudaError_t e)
{
	(void)gpu_cuda_error(what, e);
	s->failed = true;
	s->st.errors++;
}

/* Kind and device alias of [p, p + len): declared ranges first, then the
 * page cache (one cudaPointerGetAttributes per new page). */
static enum gpu_ptr_kind
rcuda_lookup(struct rcuda_state *s, const void *p, size_t len, intptr_t *delta)
{
	uintptr_t a = (uintptr_t)p, pg[2];
	enum gpu_ptr_kind k[2], rk;
	intptr_t d[2];
	int i;

	if (gpu_range_find(p, len, &rk, delta))
		return rk;
	pg[0] = a >> RCUDA_PAGE_SHIFT;
	pg[1] = (a + (len ? len - 1 : 0)) >> RCUDA_PAGE_SHIFT;
	for (i = 0; i < 2; i++) {
		struct rcuda_page *c = &s->pages[pg[i] % RCUDA_PAGE_CACHE];

		if (c->kind == GPU_PTR_UNKNOWN || c->page != pg[i]) {
			c->page = pg[i];
			c->kind = gpu_ptr_classify((const void *)(i == 0 ? a :
			    a + len - 1), &c->delta);
		}
		k[i] = c->kind;
		d[i] = c->delta;
	}
	*delta = d[0];
	if (k[0] == k[1] && (k[0] != GPU_PTR_PINNED || d[0] == d[1]))
		return k[0];
	if (k[0] != GPU_PTR_DEVICE && k[1] != GPU_PTR_DEVICE)
		return GPU_PTR_HOST;	/* host on both ends: stage it */
	return GPU_PTR_BAD;
}

/* The cache entry of tensor buffer b (its kind and device alias). */
static struct rcuda_bufent *
rcuda_buf(struct rcuda_state *s, const struct reorder_buf *b)
{
	struct rcuda_bufent *e = &s->bufs[b->index % RCUDA_BUF_CACHE];
	intptr_t delta;

	if (e->data != b->data) {
		e->data = b->data;
		e->kind = rcuda_lookup(s, b->data, s->tensor_bytes, &delta);
		e->alias = (e->kind == GPU_PTR_DEVICE ||
		    e->kind == GPU_PTR_PINNED) ?
		    (uint8_t *)b->data + delta : nullptr;
		e->ev = nullptr;
	}
	return e;
}

/* Launch the current table, move to the next one and make it empty. */
static int
rcuda_flush(struct rcuda_state *s)
{
	struct rcuda_table *t = &s->t[s->cur];
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
		rcuda_fail(s, "gpu reorder: job table copy", e);
		return -EIO;
	}
	if ((rc = rcuda_launch(s->kernel, &s->kp, s->gx, t->d, t->njobs,
	    s->stream)) != 0) {
		s->failed = true;
		s->st.errors++;
		return rc;
	}
	if ((e = cudaEventRecord(t->done, s->stream)) != cudaSuccess) {
		rcuda_fail(s, "gpu reorder: cudaEventRecord", e);
		return -EIO;
	}
	t->busy = true;
	t->gen = ++s->gen;
	s->st.launches++;
	/* payloads read in place belong to the engine once this launch
	 * finished: the caller waits for its fence (rcuda_fence) */
	if (t->direct)
		s->direct_gen = t->gen;
	s->cur = (s->cur + 1) % REORDER_CUDA_NTABLES;
	t = &s->t[s->cur];
	if (t->busy) {
		if ((e = cudaEventQuery(t->done)) == cudaErrorNotReady) {
			s->st.table_waits++;
			e = cudaEventSynchronize(t->done);
		}
		if (e != cudaSuccess) {
			rcuda_fail(s, "gpu reorder: kernel", e);
			return -EIO;
		}
		t->busy = false;
		if (t->gen > s->done_gen)	/* and all before it */
			s->done_gen = t->gen;
	}
	t->njobs = 0;
	t->staged = 0;
	t->direct = false;
	return 0;
}

/* A free job in the current table (launching a full one first). */
static struct rcuda_table *
rcuda_room(struct rcuda_state *s, uint32_t stage_bytes)
{
	struct rcuda_table *t = &s->t[s->cur];

	if (t->njobs == REORDER_CUDA_MAX_JOBS ||
	    t->staged + stage_bytes > REORDER_CUDA_STAGE_BYTES) {
		(void)rcuda_flush(s);
		t = &s->t[s->cur];
	}
	return t;
}

static void
rcuda_place(void *state, const struct reorder_buf *buf, uint32_t slot,
	    const uint8_t *in)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	struct rcuda_bufent *b = rcuda_buf(s, buf);
	uint64_t off = (uint64_t)slot * s->slot_bytes;
	struct rcuda_table *t;
	const uint8_t *src;
	intptr_t delta;
	enum gpu_ptr_kind k;
	uint32_t sb;

	if (b->kind == GPU_PTR_HOST) {
		/* a plain host tensor: the CPU writes it, if it can read in */
		k = rcuda_lookup(s, in, s->in_bytes, &delta);
		if (k != GPU_PTR_HOST && k != GPU_PTR_PINNED) {
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
	k = rcuda_lookup(s, in, s->in_bytes, &delta);
	if (k == GPU_PTR_BAD) {
		s->st.lost++;
		return;
	}
	sb = k == GPU_PTR_HOST ? (s->in_bytes + RCUDA_STAGE_ALIGN - 1) &
	    ~(RCUDA_STAGE_ALIGN - 1) : 0;
	t = rcuda_room(s, sb);
	if (s->failed) {
		s->st.lost++;
		return;
	}
	if (k == GPU_PTR_HOST) {
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
rcuda_commit(void *state)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	int rc = rcuda_flush(s);

	if (rc == 0 && s->st.lost != s->lost_seen)
		rc = -EFAULT;
	s->lost_seen = s->st.lost;
	return rc;
}

static void
rcuda_fill_slots(void *state, const struct reorder_buf *buf)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	struct rcuda_bufent *b;
	struct rcuda_table *t;
	uint32_t w, nw = (s->ppb + 63) / 64, slot;
	uint64_t miss;

	if (s->fill == DAQIRI_FILL_KEEP)
		return;
	b = rcuda_buf(s, buf);
	for (w = 0; w < nw; w++) {
		miss = ~buf->bitmap[w];
		if (w == nw - 1 && s->ppb % 64)
			miss &= (1ull << (s->ppb % 64)) - 1;
		while (miss) {
			slot = 64 * w + (uint32_t)__builtin_ctzll(miss);
			miss &= miss - 1;
			if (b->kind == GPU_PTR_HOST) {
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
			t = rcuda_room(s, 0);
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
rcuda_finish(void *state, const struct reorder_buf *buf)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	struct rcuda_bufent *b = rcuda_buf(s, buf);
	cudaError_t e;

	if (rcuda_flush(s) != 0)
		return -EIO;
	if (b->kind == GPU_PTR_HOST)
		return 0;
	if (b->alias == nullptr || s->failed)
		return -EIO;
	(void)cudaSetDevice(s->dev);	/* the event is made on it */
	if (b->ev == nullptr) {
		void *ev;

		if (gpu_event_get(buf->data, &ev) != 0) {
			s->failed = true;
			s->st.errors++;
			return -EIO;
		}
		b->ev = (cudaEvent_t)ev;
	}
	if ((e = cudaEventRecord(b->ev, s->stream)) != cudaSuccess) {
		rcuda_fail(s, "gpu reorder: cudaEventRecord", e);
		return -EIO;
	}
	/* a consumer reads registered host memory with the CPU */
	if (b->kind == GPU_PTR_PINNED &&
	    (e = cudaEventSynchronize(b->ev)) != cudaSuccess) {
		rcuda_fail(s, "gpu reorder: kernel", e);
		return -EIO;
	}
	return 0;
}

static void
rcuda_fini(void *state)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	struct rcuda_table *t;
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
		std::lock_guard<std::mutex> lk(rcuda_plans_mu);

		for (i = 0; i < RCUDA_MAX_PLANS; i++)
			if (rcuda_plans[i].s == s)
				rcuda_plans[i].s = nullptr,
				rcuda_plans[i].plan = nullptr;
	}
	free(s);
}

static int
rcuda_init(struct reorder_plan *p, void **state)
{
	const struct reorder_geom *g;
	const struct cfg_reorder *r;
	struct rcuda_state *s;
	struct rcuda_table *t;
	cudaError_t e;
	void *dv;
	int i, rc;

	*state = nullptr;
	/* the device first: without one nothing else is looked at */
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	g = reorder_geom(p);
	r = reorder_config(p);
	if ((s = (struct rcuda_state *)calloc(1, sizeof(*s))) == nullptr) {
		gpu_set_error("gpu reorder: out of memory");
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
	if ((rc = rcuda_check(s->in, s->out, s->in_bytes, s->slot_bytes)) != 0)
		goto fail;
	if (s->in_bytes > REORDER_CUDA_STAGE_BYTES) {
		gpu_set_error("gpu reorder: payloads of %u bytes exceed the %u "
		    "staging bytes", s->in_bytes, REORDER_CUDA_STAGE_BYTES);
		rc = -EINVAL;
		goto fail;
	}
	s->kernel = rcuda_pick(s->in, s->out);
	s->gx = rcuda_grid_x(s->in, s->in_bytes, s->slot_bytes);
	s->kp.in_bytes = s->in_bytes;
	s->kp.nelems = cvt_in_elems(s->in, s->in_bytes);
	s->kp.slot_bytes = s->slot_bytes;
	s->kp.en = s->en;
	s->kp.in = s->in;
	s->kp.out = s->out;
	s->kp.fill = s->fill;
	if ((e = cudaGetDevice(&s->dev)) != cudaSuccess ||
	    (e = cudaSetDevice(s->dev)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream,
	    cudaStreamNonBlocking)) != cudaSuccess) {
		rc = gpu_cuda_error("gpu reorder: stream", e);
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
			rc = gpu_cuda_error("gpu reorder: job tables", e);
			goto fail;
		}
		t->stage_dev = (uint8_t *)dv;
	}
	{
		std::lock_guard<std::mutex> lk(rcuda_plans_mu);

		for (i = 0; i < RCUDA_MAX_PLANS; i++)
			if (rcuda_plans[i].s == nullptr) {
				rcuda_plans[i].plan = p;
				rcuda_plans[i].s = s;
				break;
			}
	}
	gpu_clear_error();
	*state = s;
	return 0;
fail:
	rcuda_fini(s);
	return rc;
}

extern "C" void
reorder_cuda_stats(const struct reorder_plan *p,
		   struct reorder_cuda_stats *out)
{
	std::lock_guard<std::mutex> lk(rcuda_plans_mu);
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < RCUDA_MAX_PLANS; i++)
		if (rcuda_plans[i].s != nullptr && rcuda_plans[i].plan == p) {
			*out = rcuda_plans[i].s->st;
			return;
		}
}

/* The last committed launch that reads caller memory, unless it is known
 * finished. */
static uint64_t
rcuda_fence(void *state)
{
	struct rcuda_state *s = (struct rcuda_state *)state;

	return s->direct_gen > s->done_gen ? s->direct_gen : 0;
}

/* Launches finish in order on the plan's stream; a table reused since
 * was waited for then (done_gen). */
static int
rcuda_fence_done(void *state, uint64_t mark, bool wait)
{
	struct rcuda_state *s = (struct rcuda_state *)state;
	struct rcuda_table *t;
	cudaError_t e;
	int i;

	if (mark <= s->done_gen)
		return 1;
	if (s->failed)
		return -EIO;
	for (i = 0; i < REORDER_CUDA_NTABLES; i++) {
		t = &s->t[i];
		if (!t->busy || t->gen != mark)
			continue;
		(void)cudaSetDevice(s->dev);
		e = wait ? cudaEventSynchronize(t->done) :
		    cudaEventQuery(t->done);
		if (e == cudaErrorNotReady)
			return 0;
		if (e != cudaSuccess) {
			rcuda_fail(s, "gpu reorder: kernel", e);
			return -EIO;
		}
		t->busy = false;
		break;
	}
	s->done_gen = mark;
	return 1;
}

/* A reload changed fill: the plan calls this between bursts, after its
 * commit, so no fill job queued with the old value is still waiting. */
static void
rcuda_set_fill(void *state, enum daqiri_fill fill)
{
	struct rcuda_state *s = (struct rcuda_state *)state;

	s->fill = fill;
	s->kp.fill = fill;
}

extern "C" const struct reorder_backend reorder_backend_cuda = {
	"cuda",
	rcuda_init,
	rcuda_fini,
	rcuda_place,
	rcuda_commit,
	rcuda_fill_slots,
	rcuda_finish,
	rcuda_set_fill,
	rcuda_fence,
	rcuda_fence_done,
};

/* ------------------------------------------------------------------ */
/* the header shadow of frames whole in device memory */

struct gpu_shadow {
	int dev;
	cudaStream_t stream;
	cudaEvent_t done;
	uint32_t max, bytes;
	struct shadow_job *jobs;	/* pinned, mapped: the kernel reads */
	struct shadow_job *jobs_dev;	/* ... through this alias */
	uint8_t *host;			/* pinned, mapped: max x bytes */
	uint8_t *host_dev;
};

extern "C" void
gpu_shadow_destroy(struct gpu_shadow *s)
{
	if (s == nullptr)
		return;
	(void)cudaSetDevice(s->dev);
	if (s->stream != nullptr)
		(void)cudaStreamSynchronize(s->stream);
	if (s->jobs != nullptr)
		(void)cudaFreeHost(s->jobs);
	if (s->host != nullptr)
		(void)cudaFreeHost(s->host);
	if (s->done != nullptr)
		(void)cudaEventDestroy(s->done);
	if (s->stream != nullptr)
		(void)cudaStreamDestroy(s->stream);
	(void)cudaGetLastError();
	free(s);
}

extern "C" int
gpu_shadow_create(uint32_t max, uint32_t bytes, struct gpu_shadow **out)
{
	struct gpu_shadow *s;
	cudaError_t e;
	void *d;
	int rc;

	*out = nullptr;
	if (!gpu_available(nullptr, 0))
		return -ENODEV;
	if (max == 0 || bytes == 0 || bytes > 4096) {
		gpu_set_error("header shadow: %u frames of %u bytes", max,
		    bytes);
		return -EINVAL;
	}
	if ((s = (struct gpu_shadow *)calloc(1, sizeof(*s))) == nullptr) {
		gpu_set_error("header shadow: out of memory");
		return -ENOMEM;
	}
	s->max = max;
	s->bytes = bytes;
	if ((e = cudaGetDevice(&s->dev)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream,
	    cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaEventCreateWithFlags(&s->done,
	    cudaEventDisableTiming)) != cudaSuccess ||
	    (e = cudaHostAlloc((void **)&s->jobs, max * sizeof(*s->jobs),
	    cudaHostAllocMapped)) != cudaSuccess ||
	    (e = cudaHostGetDevicePointer(&d, s->jobs, 0)) != cudaSuccess) {
		rc = gpu_cuda_error("header shadow", e);
		gpu_shadow_destroy(s);
		return rc;
	}
	s->jobs_dev = (struct shadow_job *)d;
	if ((e = cudaHostAlloc((void **)&s->host, (size_t)max * bytes,
	    cudaHostAllocMapped)) != cudaSuccess ||
	    (e = cudaHostGetDevicePointer(&d, s->host, 0)) != cudaSuccess) {
		rc = gpu_cuda_error("header shadow", e);
		gpu_shadow_destroy(s);
		return rc;
	}
	s->host_dev = (uint8_t *)d;
	*out = s;
	return 0;
}

extern "C" int
gpu_shadow_burst(struct gpu_shadow *s, struct rx_frame *f, unsigned n)
{
	struct shadow_params p;
	void *args[1] = { &p };
	cudaError_t e;
	unsigned i;

	if (n == 0)
		return 0;
	if (n > s->max)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		/* whole frames: one part only */
		if (f[i].hdr_len != 0 && f[i].payload_len != 0)
			return -EINVAL;
		s->jobs[i].src = f[i].hdr_len != 0 ? f[i].hdr : f[i].payload;
		s->jobs[i].len = (uint64_t)f[i].hdr_len + f[i].payload_len;
	}
	p.jobs = s->jobs_dev;
	p.dst = s->host_dev;
	p.pitch = s->bytes;
	(void)cudaSetDevice(s->dev);
	if ((e = cudaLaunchKernel((const void *)rcuda_shadow_kernel,
	    dim3(1, n), dim3(SHADOW_THREADS), args, 0, s->stream)) !=
	    cudaSuccess || (e = cudaEventRecord(s->done, s->stream)) !=
	    cudaSuccess || (e = cudaEventSynchronize(s->done)) != cudaSuccess)
		return gpu_cuda_error("header shadow", e);
	for (i = 0; i < n; i++) {
		const uint8_t *src = s->jobs[i].src;
		uint32_t len = (uint32_t)s->jobs[i].len;
		uint32_t c = len < s->bytes ? len : s->bytes;

		f[i].hdr = s->host + (size_t)i * s->bytes;
		f[i].hdr_len = c;
		f[i].payload = src + c;
		f[i].payload_len = len - c;
		f[i].flags |= RX_FRAME_DEV_PAYLOAD;
	}
	return 0;
}
