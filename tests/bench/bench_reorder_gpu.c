/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU placement benchmark: the output bandwidth of the reorder kernel (copy
 * and conversions, 8000-byte payloads, 1024 packets per launch, scattered
 * to their slots) against device-to-device cudaMemcpy of the same bytes,
 * and the whole CUDA plan fed from pinned and from plain host packets.
 * Without a GPU (or CUDA) it prints one line saying so and exits 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"
#include "gpu.h"
#include "reorder.h"
#include "reorder_cuda.h"

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>

#define B_PKTS		1024		/* packets per launch (one burst) */
#define B_PAYLOAD	8000		/* payload bytes */
#define B_HDR		64		/* frame bytes before the payload */
#define B_FRAME		(B_HDR + B_PAYLOAD)
/* Launches timed per variant, tensors through the plan: the defaults, or
 * BENCH_GPU_ITERS and BENCH_GPU_PLAN_BATCHES (a quick run, e.g. on the
 * CUDA stand-in, where only "it runs" means anything). */
static int b_iters = 50;
static uint32_t b_plan_batches = 64;
#define B_ITERS		b_iters
#define B_WARMUP	(b_iters < 3 ? b_iters : 3)
#define B_PLAN_BATCHES	b_plan_batches

struct variant {
	const char *name;
	enum daqiri_dtype in, out;
	enum cfg_endian en;
};

static const struct variant variants[] = {
	{ "copy", DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW, CFG_ENDIAN_HOST },
	{ "int4-fp16", DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST },
	{ "int4-fp32", DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP32, CFG_ENDIAN_HOST },
	{ "int8-fp16", DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST },
	{ "int16net-fp32", DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP32,
	  CFG_ENDIAN_NETWORK },
};
#define NVARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))

#define CK(x) do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "bench gpu: %s: %s\n", #x,		\
		    cudaGetErrorString(e_));				\
		exit(1);						\
	}								\
} while (0)

static uint64_t
slot_bytes(const struct variant *v)
{
	if (v->in == DAQIRI_DTYPE_RAW)
		return B_PAYLOAD;
	return (uint64_t)cvt_in_elems(v->in, B_PAYLOAD) * cvt_out_size(v->out);
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Kernel output bandwidth against cudaMemcpy of the same bytes. */
static void
bench_kernel(const struct variant *v, uint8_t *frames, uint8_t *scratch,
	     uint8_t *tensor, struct reorder_cuda_job *djobs,
	     const uint32_t *perm)
{
	struct reorder_cuda_job jobs[B_PKTS];
	uint64_t sb = slot_bytes(v), bytes = sb * B_PKTS;
	cudaEvent_t t0, t1;
	float ms_k, ms_c;
	double kg, cg;
	int i;

	/* packet i goes to slot perm[i]: the scatter of a reordered burst */
	for (i = 0; i < B_PKTS; i++) {
		jobs[i].src = frames + (uint64_t)i * B_FRAME + B_HDR;
		jobs[i].dst = tensor + (uint64_t)perm[i] * sb;
	}
	CK(cudaMemcpy(djobs, jobs, sizeof(jobs), cudaMemcpyHostToDevice));
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	for (i = 0; i < B_WARMUP; i++)
		if (reorder_cuda_place_jobs(v->in, v->out, v->en,
		    DAQIRI_FILL_ZERO, B_PAYLOAD, sb, djobs, B_PKTS,
		    NULL) != 0) {
			fprintf(stderr, "bench gpu: %s\n",
			    reorder_cuda_last_error());
			exit(1);
		}
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(t0, NULL));
	for (i = 0; i < B_ITERS; i++)
		(void)reorder_cuda_place_jobs(v->in, v->out, v->en,
		    DAQIRI_FILL_ZERO, B_PAYLOAD, sb, djobs, B_PKTS, NULL);
	CK(cudaEventRecord(t1, NULL));
	CK(cudaEventSynchronize(t1));
	CK(cudaGetLastError());
	CK(cudaEventElapsedTime(&ms_k, t0, t1));

	for (i = 0; i < B_WARMUP; i++)
		CK(cudaMemcpy(tensor, scratch, bytes,
		    cudaMemcpyDeviceToDevice));
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(t0, NULL));
	for (i = 0; i < B_ITERS; i++)
		CK(cudaMemcpyAsync(tensor, scratch, bytes,
		    cudaMemcpyDeviceToDevice, NULL));
	CK(cudaEventRecord(t1, NULL));
	CK(cudaEventSynchronize(t1));
	CK(cudaEventElapsedTime(&ms_c, t0, t1));

	kg = (double)bytes * B_ITERS / (ms_k * 1e-3) / 1e9;
	cg = (double)bytes * B_ITERS / (ms_c * 1e-3) / 1e9;
	printf("bench gpu variant=%s out_gbps=%.1f d2d_memcpy_gbps=%.1f "
	    "ratio=%.2f\n", v->name, kg, cg, kg / cg);
	fflush(stdout);
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
}

/* The tensor buffers a plan borrows, recycled at once. */
struct bowner {
	void *data[8];
	uint64_t bitmap[8][B_PKTS / 64];
	uint32_t free[8], nfree;
	uint64_t published;
};

static int
b_get(void *ctx, struct reorder_buf *out)
{
	struct bowner *o = ctx;
	uint32_t i;

	if (o->nfree == 0)
		return -ENOBUFS;
	i = o->free[--o->nfree];
	out->index = i;
	out->data = o->data[i];
	out->bitmap = o->bitmap[i];
	return 0;
}

static void
b_put(void *ctx, const struct reorder_buf *b)
{
	struct bowner *o = ctx;

	o->free[o->nfree++] = b->index;
}

static void
b_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *b)
{
	struct bowner *o = ctx;

	(void)d;
	o->published++;
	o->free[o->nfree++] = b->index;
}

/* The whole CUDA plan: headers parsed on the CPU, one launch per burst of
 * B_PKTS shuffled packets, payloads in pinned or plain host memory. */
static void
bench_plan(const struct variant *v, int pinned)
{
	struct cfg_reorder r;
	struct bowner o;
	struct reorder_owner ow = {
		.ctx = &o, .get = b_get, .put = b_put, .publish = b_publish,
	};
	struct rx_frame *pk;
	struct reorder_plan *p;
	struct reorder_cuda_stats st;
	uint8_t *frames;
	uint64_t s = 42, sb = slot_bytes(v), bytes;
	uint32_t i, j, b, t, order[B_PKTS];
	double t0, dt;

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "bench");
	r.type = CFG_REORDER_GPU;
	r.payload_byte_offset = B_HDR;
	r.payload_bytes = B_PAYLOAD;
	r.nflow_ids = 1;
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_offset = 0;
	r.seq.bit_width = 32;
	r.packets_per_batch = B_PKTS;
	r.has_data_types = v->in != DAQIRI_DTYPE_RAW;
	r.input_type = v->in;
	r.output_type = v->out;
	r.endianness = v->en;
	r.window = 4;
	r.fill = DAQIRI_FILL_ZERO;
	memset(&o, 0, sizeof(o));
	for (i = 0; i < 8; i++) {
		if (gpu_alloc(0, sb * B_PKTS, &o.data[i]) != 0) {
			fprintf(stderr, "bench gpu: %s\n",
			    reorder_cuda_last_error());
			exit(1);
		}
		o.free[o.nfree++] = i;
	}
	frames = aligned_alloc(4096, (uint64_t)B_FRAME * B_PKTS);
	pk = calloc(B_PKTS, sizeof(*pk));
	if (frames == NULL || pk == NULL)
		exit(1);
	memset(frames, 0x5A, (uint64_t)B_FRAME * B_PKTS);
	if (pinned && gpu_host_register(frames, (uint64_t)B_FRAME * B_PKTS)) {
		fprintf(stderr, "bench gpu: %s\n", reorder_cuda_last_error());
		exit(1);
	}
	if ((p = reorder_create(&r, &ow, &reorder_backend_cuda)) == NULL) {
		fprintf(stderr, "bench gpu: plan: %s\n",
		    reorder_cuda_last_error());
		exit(1);
	}
	for (i = 0; i < B_PKTS; i++) {
		pk[i].hdr = frames + (uint64_t)i * B_FRAME;
		pk[i].hdr_len = B_FRAME;
		pk[i].rx_ns = 1;
	}
	for (i = 0; i < B_PKTS; i++)
		order[i] = i;
	t0 = now_s();
	for (b = 0; b < B_PLAN_BATCHES; b++) {
		/* one batch per burst, its packets shuffled */
		for (i = B_PKTS - 1; i > 0; i--) {
			j = (uint32_t)(rnd(&s) % (i + 1));
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < B_PKTS; i++) {
			uint32_t seq = b * B_PKTS + order[i];
			uint8_t *h = frames + (uint64_t)i * B_FRAME;

			h[0] = (uint8_t)(seq >> 24);
			h[1] = (uint8_t)(seq >> 16);
			h[2] = (uint8_t)(seq >> 8);
			h[3] = (uint8_t)seq;
		}
		reorder_burst(p, pk, B_PKTS, 2);
	}
	reorder_flush(p, 3);
	dt = now_s() - t0;
	reorder_cuda_stats(p, &st);
	bytes = (uint64_t)B_PLAN_BATCHES * B_PKTS * sb;
	printf("bench gpu-plan variant=%s input=%s tensors=%llu "
	    "in_gbps=%.2f out_gbps=%.2f launches=%llu staged=%llu "
	    "direct=%llu\n", v->name, pinned ? "pinned" : "host",
	    (unsigned long long)o.published,
	    (double)B_PLAN_BATCHES * B_PKTS * B_PAYLOAD / dt / 1e9,
	    (double)bytes / dt / 1e9, (unsigned long long)st.launches,
	    (unsigned long long)st.staged, (unsigned long long)st.direct);
	fflush(stdout);
	reorder_destroy(p);
	if (pinned)
		gpu_host_unregister(frames);
	for (i = 0; i < 8; i++)
		gpu_free(o.data[i]);
	free(frames);
	free(pk);
}

int
main(void)
{
	char why[REORDER_CUDA_ERR_MAX];
	uint8_t *frames, *scratch, *tensor, *h;
	struct reorder_cuda_job *djobs;
	uint32_t perm[B_PKTS], i, j, t;
	uint64_t s = 1, maxout = 0, k;
	struct cudaDeviceProp prop;
	int v;

	if (getenv("BENCH_GPU_ITERS") != NULL)
		b_iters = atoi(getenv("BENCH_GPU_ITERS"));
	if (getenv("BENCH_GPU_PLAN_BATCHES") != NULL)
		b_plan_batches = (uint32_t)atoi(getenv(
		    "BENCH_GPU_PLAN_BATCHES"));
	if (b_iters < 1 || b_plan_batches < 1 || b_plan_batches > 1u << 20) {
		fprintf(stderr, "bench gpu: BENCH_GPU_ITERS and "
		    "BENCH_GPU_PLAN_BATCHES must be at least 1\n");
		return 2;
	}
	if (!gpu_available(why, sizeof(why))) {
		printf("bench gpu: %s (skipped)\n", why);
		return 0;
	}
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	printf("bench gpu device=\"%s\" sm=%d%d payload=%u packets=%u\n",
	    prop.name, prop.major, prop.minor, B_PAYLOAD, B_PKTS);
	for (v = 0; v < NVARIANTS; v++)
		if (slot_bytes(&variants[v]) * B_PKTS > maxout)
			maxout = slot_bytes(&variants[v]) * B_PKTS;
	CK(cudaMalloc((void **)&frames, (uint64_t)B_FRAME * B_PKTS));
	CK(cudaMalloc((void **)&scratch, maxout));
	CK(cudaMalloc((void **)&tensor, maxout));
	CK(cudaMalloc((void **)&djobs,
	    sizeof(struct reorder_cuda_job) * B_PKTS));
	h = malloc((uint64_t)B_FRAME * B_PKTS);
	if (h == NULL)
		return 1;
	for (k = 0; k < (uint64_t)B_FRAME * B_PKTS; k++)
		h[k] = (uint8_t)rnd(&s);
	CK(cudaMemcpy(frames, h, (uint64_t)B_FRAME * B_PKTS,
	    cudaMemcpyHostToDevice));
	CK(cudaMemset(scratch, 1, maxout));
	free(h);
	for (i = 0; i < B_PKTS; i++)
		perm[i] = i;
	for (i = B_PKTS - 1; i > 0; i--) {
		j = (uint32_t)(rnd(&s) % (i + 1));
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (v = 0; v < NVARIANTS; v++)
		bench_kernel(&variants[v], frames, scratch, tensor, djobs, perm);
	cudaFree(frames);
	cudaFree(scratch);
	cudaFree(tensor);
	cudaFree(djobs);
	bench_plan(&variants[1], 1);
	bench_plan(&variants[1], 0);
	return 0;
}

#else /* !DAQIRI_HAVE_CUDA */

int
main(void)
{
	printf("bench gpu: %s (skipped)\n", REORDER_CUDA_NO_BUILD);
	return 0;
}

#endif
