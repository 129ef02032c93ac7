/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU reorder benchmark: whole reorder plans (fields, window, bitmaps,
 * vectorised conversion with streaming stores) fed 8000-byte payloads,
 * 1024 packets per batch, in order and shuffled with loss and duplicates,
 * against a plain memcpy of the same output bytes measured in the same run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convert.h"
#include "convert_cpu.h"
#include "reorder.h"

#define B_PAYLOAD	8000		/* payload bytes per packet */
#define B_HDR		8		/* frame bytes before the payload */
#define B_PPB		1024		/* packets per batch */
#define B_BURST		32		/* packets per reorder_burst() */
#define B_SHUFFLE	64		/* shuffle window, packets */
#define B_LOSS_PPM	1000		/* 0.1 % */
#define B_DUP_PPM	100		/* 0.01 % */
#define B_NPAYLOADS	2048		/* distinct payloads (16 MB of input) */
#define B_NBUFS		8		/* tensors of the largest variant */
#define B_MAXBUFS	64		/* tensors of a smaller one */
#define B_POOL_MIN	(256ull << 20)	/* at least this much output memory */
#define B_OUT_TARGET	(2ull << 30)	/* output bytes per measurement */
#define B_MIN_BATCHES	8
#ifndef B_RUNS
#define B_RUNS		5		/* measured runs (plus one warm-up) */
#endif
#define B_MEMCPY_CHUNK	(32ull << 20)	/* memcpy baseline block */

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
	{ "int16n-fp32", DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP32,
	  CFG_ENDIAN_NETWORK },
};
#define NVARIANTS ((int)(sizeof(variants) / sizeof(variants[0])))
static const char *const orders[2] = { "in-order", "shuffled" };

/* The output pool: buffers lent round-robin, freed at publication. */
struct pool {
	uint8_t *mem;
	uint64_t bytes;
	uint64_t tensor;
	uint32_t nbufs;
	uint32_t next;
	uint64_t *bitmaps;
	uint64_t published;
	uint64_t complete;
};

static int
pool_get(void *ctx, struct reorder_buf *out)
{
	struct pool *p = ctx;
	uint32_t i = p->next++ % p->nbufs;

	out->index = i;
	out->data = p->mem + (uint64_t)i * p->tensor;
	out->bitmap = p->bitmaps + (uint64_t)i * (B_PPB / 64);
	return 0;
}

static void
pool_put(void *ctx, const struct reorder_buf *buf)
{
}

static void
pool_publish(void *ctx, const struct daqiri_desc *d,
	     const struct reorder_buf *buf)
{
	struct pool *p = ctx;

	p->published++;
	if (d->flags & DAQIRI_TENSOR_COMPLETE)
		p->complete++;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t
slot_bytes_of(const struct variant *v)
{
	if (v->in == DAQIRI_DTYPE_RAW)
		return B_PAYLOAD;
	return (uint64_t)cvt_in_elems(v->in, B_PAYLOAD) * cvt_out_size(v->out);
}

static struct cfg_reorder
bench_cfg(const struct variant *v)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	strcpy(r.name, "bench");
	r.type = CFG_REORDER_CPU;
	r.payload_byte_offset = B_HDR;
	r.payload_bytes = B_PAYLOAD;
	r.slot_bytes = slot_bytes_of(v);
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_offset = 0;
	r.seq.bit_width = 32;
	r.packets_per_batch = B_PPB;
	r.has_data_types = v->in != DAQIRI_DTYPE_RAW;
	r.input_type = v->in;
	r.output_type = v->out;
	r.endianness = v->en;
	r.window = CFG_WINDOW_DEFAULT;
	r.fill = DAQIRI_FILL_ZERO;
	r.timeout_us = 0;
	return r;
}

/* The arrival order of nbatch batches: sequence numbers, in order or
 * shuffled within B_SHUFFLE packets with loss and duplicates. */
static uint32_t *
make_order(int shuffled, uint32_t nbatch, uint32_t *count, uint64_t seed)
{
	uint64_t total = (uint64_t)nbatch * B_PPB, i, j, n = 0;
	uint32_t *seq = malloc((total + total / 100 + 16) * sizeof(*seq)), t;

	if (seq == NULL)
		return NULL;
	for (i = 0; i < total; i++) {
		if (shuffled && xorshift(&seed) % 1000000 < B_LOSS_PPM)
			continue;
		seq[n++] = (uint32_t)i;
		if (shuffled && xorshift(&seed) % 1000000 < B_DUP_PPM)
			seq[n++] = (uint32_t)i;
	}
	if (shuffled) {
		for (i = 0; i < n; i += B_SHUFFLE) {
			uint64_t w = n - i < B_SHUFFLE ? n - i : B_SHUFFLE;

			for (j = w - 1; j > 0; j--) {
				uint64_t k = xorshift(&seed) % (j + 1);

				t = seq[i + j];
				seq[i + j] = seq[i + k];
				seq[i + k] = t;
			}
		}
	}
	*count = (uint32_t)n;
	return seq;
}

struct meas {
	double in_gbps, out_gbps, memcpy_gbps, ratio;
};

/* memcpy of `bytes` in B_MEMCPY_CHUNK blocks from src into the pool. */
static double
memcpy_gbps(struct pool *pl, const uint8_t *src, uint64_t bytes)
{
	uint64_t t0, done = 0, off = 0, n;

	t0 = now_ns();
	while (done < bytes) {
		n = bytes - done < B_MEMCPY_CHUNK ? bytes - done :
		    B_MEMCPY_CHUNK;
		if (off + n > pl->bytes)
			off = 0;
		memcpy(pl->mem + off, src, n);
		off += n;
		done += n;
	}
	return (double)bytes / (double)(now_ns() - t0);
}

/* Feed the packets through a fresh plan; returns seconds. */
static double
run_plan(const struct variant *v, struct pool *pl, const uint32_t *seq,
	 uint32_t count, uint8_t *hdrs, struct rx_frame *pkts,
	 const uint8_t *payloads, uint64_t *placed_out)
{
	struct cfg_reorder r = bench_cfg(v);
	struct reorder_owner o = {
		.ctx = pl, .get = pool_get, .put = pool_put,
		.publish = pool_publish,
	};
	struct reorder_plan *p;
	uint64_t t0, t1;
	uint32_t i, n;

	for (i = 0; i < count; i++) {
		uint8_t *h = hdrs + (uint64_t)i * B_HDR;

		h[0] = (uint8_t)(seq[i] >> 24);
		h[1] = (uint8_t)(seq[i] >> 16);
		h[2] = (uint8_t)(seq[i] >> 8);
		h[3] = (uint8_t)seq[i];
		pkts[i] = (struct rx_frame){ .hdr = h, .hdr_len = B_HDR,
		    .payload = payloads + (uint64_t)(i % B_NPAYLOADS) *
		    B_PAYLOAD, .payload_len = B_PAYLOAD, .rx_ns = i };
	}
	pl->next = 0;
	if ((p = reorder_create(&r, &o, NULL)) == NULL) {
		fprintf(stderr, "bench: reorder_create %s: %s\n", v->name,
		    strerror(errno));
		exit(1);
	}
	t0 = now_ns();
	for (i = 0; i < count; i += n) {
		n = count - i < B_BURST ? count - i : B_BURST;
		reorder_burst(p, pkts + i, n, i);
	}
	reorder_flush(p, count);
	t1 = now_ns();
	*placed_out = reorder_counters(p)->placed;
	if (reorder_counters(p)->packets_in != count ||
	    reorder_counters(p)->late + reorder_counters(p)->malformed +
	    reorder_counters(p)->no_buffer != 0) {
		fprintf(stderr, "bench: %s: unexpected drops\n", v->name);
		exit(1);
	}
	reorder_destroy(p);
	return (double)(t1 - t0) / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(void)
{
	static double r_in[NVARIANTS][2][B_RUNS], r_out[NVARIANTS][2][B_RUNS];
	static double r_mc[NVARIANTS][2][B_RUNS], r_ratio[NVARIANTS][2][B_RUNS];
	uint32_t *seqs[NVARIANTS][2], counts[NVARIANTS][2], maxcount = 0;
	uint64_t max_tensor = 0, seed = 0x9E3779B97F4A7C15ull, k, placed;
	struct pool pl;
	uint8_t *payloads, *hdrs, *src;
	struct rx_frame *pkts;
	struct meas m;
	int v, o, run;

	memset(&pl, 0, sizeof(pl));
	/* BENCH_CVT_IMPL=sse4.1|scalar|avx2 measures one implementation */
	if (getenv("BENCH_CVT_IMPL") != NULL &&
	    cvt_force_impl(getenv("BENCH_CVT_IMPL")) != 0) {
		fprintf(stderr, "bench: implementation %s not available\n",
		    getenv("BENCH_CVT_IMPL"));
		return 1;
	}
	for (v = 0; v < NVARIANTS; v++) {
		uint64_t t = slot_bytes_of(&variants[v]) * B_PPB;
		uint32_t nb = (uint32_t)((B_OUT_TARGET + t - 1) / t);

		if (nb < B_MIN_BATCHES)
			nb = B_MIN_BATCHES;
		if (t > max_tensor)
			max_tensor = t;
		for (o = 0; o < 2; o++) {
			seqs[v][o] = make_order(o, nb, &counts[v][o],
			    seed + (uint64_t)v * 2 + (uint64_t)o);
			if (seqs[v][o] == NULL)
				goto nomem;
			if (counts[v][o] > maxcount)
				maxcount = counts[v][o];
		}
	}
	/* one pool for all variants, B_NBUFS of the largest tensor */
	pl.tensor = max_tensor;
	pl.nbufs = B_NBUFS;
	pl.bytes = max_tensor * B_NBUFS;
	if (pl.bytes < B_POOL_MIN)
		pl.bytes = B_POOL_MIN;
	pl.mem = aligned_alloc(4096, pl.bytes);
	pl.bitmaps = calloc((size_t)B_MAXBUFS * (B_PPB / 64), sizeof(uint64_t));
	payloads = aligned_alloc(64, (size_t)B_NPAYLOADS * B_PAYLOAD);
	src = aligned_alloc(4096, B_MEMCPY_CHUNK);
	hdrs = malloc((size_t)maxcount * B_HDR);
	pkts = malloc((size_t)maxcount * sizeof(*pkts));
	if (pl.mem == NULL || pl.bitmaps == NULL || payloads == NULL ||
	    src == NULL || hdrs == NULL || pkts == NULL)
		goto nomem;
	/* touch everything once so page faults stay out of the timings */
	memset(pl.mem, 0, pl.bytes);
	memset(hdrs, 0, (size_t)maxcount * B_HDR);
	for (k = 0; k < (uint64_t)B_NPAYLOADS * B_PAYLOAD; k++)
		payloads[k] = (uint8_t)xorshift(&seed);
	memset(src, 0x5A, B_MEMCPY_CHUNK);

	printf("reorder CPU benchmark: %d-byte payloads, %d packets per "
	    "batch, window %d, conversion impl %s, median of %d runs\n",
	    B_PAYLOAD, B_PPB, CFG_WINDOW_DEFAULT, cvt_impl_name(), B_RUNS);
	printf("output pool %llu MiB (%d tensors of the largest variant, "
	    "up to %d of smaller ones); "
	    "shuffled = within %d packets, %.2f%% loss, %.3f%% duplicates\n",
	    (unsigned long long)(pl.bytes >> 20), B_NBUFS, B_MAXBUFS, B_SHUFFLE,
	    B_LOSS_PPM / 1e4, B_DUP_PPM / 1e4);
	fflush(stdout);

	/* run 0 warms up and is not counted; the memcpy baseline runs just
	 * before each measurement with the same output bytes */
	for (run = -1; run < B_RUNS; run++) {
		for (v = 0; v < NVARIANTS; v++) {
			for (o = 0; o < 2; o++) {
				double secs, mc, in, out;

				/* as many tensors as the pool holds: every
				 * variant streams through all of it */
				pl.tensor = slot_bytes_of(&variants[v]) * B_PPB;
				pl.nbufs = (uint32_t)(pl.bytes / pl.tensor);
				if (pl.nbufs > B_MAXBUFS)
					pl.nbufs = B_MAXBUFS;
				secs = run_plan(&variants[v], &pl, seqs[v][o],
				    counts[v][o], hdrs, pkts, payloads,
				    &placed);
				in = (double)counts[v][o] * B_PAYLOAD / secs /
				    1e9;
				out = (double)placed *
				    (double)slot_bytes_of(&variants[v]) /
				    secs / 1e9;
				mc = memcpy_gbps(&pl, src, placed *
				    slot_bytes_of(&variants[v]));
				if (run < 0)
					continue;
				r_in[v][o][run] = in;
				r_out[v][o][run] = out;
				r_mc[v][o][run] = mc;
				r_ratio[v][o][run] = out / mc;
			}
		}
	}

	printf("\n%-12s %-9s %9s %9s %12s %7s\n", "variant", "order",
	    "in GB/s", "out GB/s", "memcpy GB/s", "ratio");
	for (v = 0; v < NVARIANTS; v++) {
		for (o = 0; o < 2; o++) {
			m.in_gbps = median(r_in[v][o], B_RUNS);
			m.out_gbps = median(r_out[v][o], B_RUNS);
			m.memcpy_gbps = median(r_mc[v][o], B_RUNS);
			m.ratio = median(r_ratio[v][o], B_RUNS);
			printf("%-12s %-9s %9.2f %9.2f %12.2f %7.2f\n",
			    variants[v].name, orders[o], m.in_gbps,
			    m.out_gbps, m.memcpy_gbps, m.ratio);
		}
	}
	printf("\n");
	for (v = 0; v < NVARIANTS; v++) {
		for (o = 0; o < 2; o++) {
			printf("bench reorder variant=%s order=%s in_gbps=%.2f "
			    "out_gbps=%.2f memcpy_gbps=%.2f ratio=%.2f\n",
			    variants[v].name, orders[o],
			    median(r_in[v][o], B_RUNS),
			    median(r_out[v][o], B_RUNS),
			    median(r_mc[v][o], B_RUNS),
			    median(r_ratio[v][o], B_RUNS));
		}
	}
	printf("targets: copy ratio >= 0.8, int4-fp16 ratio >= 0.6 "
	    "(benchmark, not a test)\n");
	return 0;
nomem:
	fprintf(stderr, "bench: out of memory\n");
	return 1;
}
