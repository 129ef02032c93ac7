/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the CUDA reorder backend. Without a device: init fails with
 * -ENODEV and a clear message, and so does every helper. With one: the
 * kernel against cvt_slot_scalar()/cvt_fill_slot() for every conversion and
 * alignment, and whole plans on random streams against the CPU plan (the
 * reference): identical tensors, bitmaps, descriptors and counters.
 * In a build without CUDA it checks that the backend is reported absent.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convert.h"
#include "gpu.h"
#include "reorder.h"
#include "reorder_cuda.h"

#ifdef DAQIRI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifndef DAQIRI_HAVE_CUDA

START_TEST(test_no_cuda_build)
{
	char why[128] = "";
	void *p = &p;

	ck_assert_ptr_null(reorder_cuda_backend());
	ck_assert_int_eq(gpu_available(why, sizeof(why)), 0);
	ck_assert_str_eq(why, "this daqirid was built without CUDA");
	ck_assert_int_eq(gpu_alloc(0, 4096, &p), -ENOSYS);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(gpu_host_register(why, sizeof(why)), -ENOSYS);
	ck_assert_str_eq(reorder_cuda_last_error(), why);
}
END_TEST

static Suite *
cuda_suite(void)
{
	Suite *s = suite_create("reorder_cuda");
	TCase *tc = tcase_create("no-cuda-build");

	tcase_add_test(tc, test_no_cuda_build);
	suite_add_tcase(s, tc);
	return s;
}

#else /* DAQIRI_HAVE_CUDA */

/* xorshift64*, fixed seeds: reproducible. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

#define CK_CUDA(x) do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess)						\
		ck_abort_msg("%s: %s", #x, cudaGetErrorString(e_));	\
} while (0)

/* A reorder config as the config loader (cfg_*.c) would make it
 * (seq_packets_per_batch, sequence number: 16 bits at frame byte 4). */
#define T_HDR		16
#define T_SEQ_BITS	16

static struct cfg_reorder
tcfg(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
     enum daqiri_fill fill, uint32_t in_bytes, uint32_t ppb)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "t");
	r.type = CFG_REORDER_GPU;
	r.payload_byte_offset = T_HDR;
	r.payload_bytes = in_bytes;
	r.nflow_ids = 1;
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_offset = 32;
	r.seq.bit_width = T_SEQ_BITS;
	r.packets_per_batch = ppb;
	r.has_data_types = in != DAQIRI_DTYPE_RAW;
	r.input_type = in;
	r.output_type = r.has_data_types ? out : DAQIRI_DTYPE_RAW;
	r.endianness = en;
	r.window = 4;
	r.fill = fill;
	r.timeout_us = 40;
	return r;
}

static int
t_get(void *ctx, struct reorder_buf *out)
{
	(void)ctx;
	(void)out;
	return -ENOBUFS;
}

static void
t_put(void *ctx, const struct reorder_buf *b)
{
	(void)ctx;
	(void)b;
}

static void
t_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *b)
{
	(void)ctx;
	(void)d;
	(void)b;
}

static int have_gpu;
static char no_gpu_why[REORDER_CUDA_ERR_MAX];

/*
 * gpu_available(), asked in a child process: CUDA cannot be used in a
 * child forked after the parent initialised it, and Check forks every
 * test. Returns 1 or 0 (reason in why).
 */
static int
probe_gpu(char *why, size_t len)
{
	char buf[REORDER_CUDA_ERR_MAX + 1] = "";
	ssize_t n, got = 0;
	int fd[2], st;
	pid_t pid;

	if (pipe(fd) != 0)
		return 0;
	if ((pid = fork()) == 0) {
		close(fd[0]);
		buf[0] = gpu_available(buf + 1, sizeof(buf) - 1) ? '1' : '0';
		n = (ssize_t)strlen(buf);
		if (write(fd[1], buf, (size_t)n) != n)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	while (pid > 0 && got < (ssize_t)sizeof(buf) - 1 &&
	    (n = read(fd[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd[0]);
	if (pid > 0)
		(void)waitpid(pid, &st, 0);
	buf[got] = '\0';
	snprintf(why, len, "%s", got > 1 ? buf + 1 : "probe failed");
	return got > 0 && buf[0] == '1';
}

/* No device: the backend, the plan and the helpers all say so. */
START_TEST(test_no_device)
{
	struct cfg_reorder r = tcfg(DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP16,
	    CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1024, 16);
	struct reorder_owner o = { NULL, t_get, t_put, t_publish, NULL };
	struct reorder_plan *p;
	char why[REORDER_CUDA_ERR_MAX] = "";
	uint8_t h[GPU_IPC_HANDLE_BYTES];
	void *state = &state, *mem = &mem;

	ck_assert_ptr_eq(reorder_cuda_backend(), &reorder_backend_cuda);
	ck_assert_str_eq(reorder_backend_cuda.name, "cuda");
	ck_assert_int_eq(gpu_available(why, sizeof(why)), 0);
	ck_assert_msg(strncmp(why, "no CUDA device: ", 16) == 0, "%s", why);
	ck_assert_msg(strstr(why, "(error ") != NULL, "%s", why);

	/* the device is checked before the plan is looked at */
	ck_assert_int_eq(reorder_backend_cuda.init(NULL, &state), -ENODEV);
	ck_assert_ptr_null(state);
	ck_assert_str_eq(reorder_cuda_last_error(), why);
	reorder_backend_cuda.fini(NULL);

	errno = 0;
	p = reorder_create(&r, &o, &reorder_backend_cuda);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_str_eq(reorder_cuda_last_error(), why);

	ck_assert_int_eq(gpu_alloc(0, 4096, &mem), -ENODEV);
	ck_assert_ptr_null(mem);
	ck_assert_int_eq(gpu_host_register(h, sizeof(h)), -ENODEV);
	gpu_free(NULL);
	gpu_host_unregister(NULL);
}
END_TEST

/* What this machine has, spelt out: CI and the build VMs have no driver,
 * and the toolkit's runtime says so with error 35. */
START_TEST(test_no_device_error_35)
{
	const char *want = "no CUDA device: CUDA driver version is "
	    "insufficient for CUDA runtime version (error 35)";
	char why[REORDER_CUDA_ERR_MAX] = "";

	ck_assert_int_eq(gpu_available(why, sizeof(why)), 0);
	if (strstr(why, "(error 35)") != NULL)
		ck_assert_str_eq(why, want);
	else	/* a driver without a GPU: error 100, also clear */
		ck_assert_msg(strstr(why, "no CUDA device: ") == why, "%s",
		    why);
}
END_TEST

/* ---- with a device ---- */

static const enum daqiri_dtype ins[] = {
	DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32,
};
static const enum daqiri_dtype outs[] = {
	DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32, DAQIRI_DTYPE_FP64,
	DAQIRI_DTYPE_INT32,
};
#define NINS	4
#define NOUTS	5
#define KV_SLOTS	12	/* jobs per launch in the kernel test */

/* Payload sizes: whole words, odd tails, one element. */
static const uint32_t kv_sizes[] = { 8000, 1984, 1002, 999, 6, 4, 2, 1 };
#define NKV_SIZES	8
/* Output offsets mod 16 of the jobs; jobs 3, 7 and 11 are fills (16-, 1-
 * and 2-aligned). */
static const uint32_t kv_oalign[KV_SLOTS] = {
	0, 1, 2, 0, 4, 8, 3, 5, 0, 6, 15, 2,
};

/*
 * The kernel against the scalar reference: every input x output x byte
 * order x payload size, payloads and slots at every alignment mod 16,
 * with fill jobs (zero and NaN) among them; bytes around the slots must
 * stay untouched.
 */
START_TEST(test_kernel_vs_scalar)
{
	uint64_t seed = 0xC0FFEEull + (uint64_t)_i;
	int ii, oi, en, si, fi;

	for (ii = -1; ii < NINS; ii++)
	for (oi = 0; oi < NOUTS; oi++)
	for (en = 0; en < CFG_ENDIAN_MAX; en++)
	for (si = 0; si < NKV_SIZES; si++)
	for (fi = 0; fi < 2; fi++) {
		enum daqiri_dtype in = ii < 0 ? DAQIRI_DTYPE_RAW : ins[ii];
		enum daqiri_dtype out = ii < 0 ? DAQIRI_DTYPE_RAW : outs[oi];
		enum daqiri_fill fill = fi ? DAQIRI_FILL_NAN : DAQIRI_FILL_ZERO;
		uint32_t nb = kv_sizes[si], n, j, k;
		uint64_t sb, ipitch, opitch, isz, osz;
		struct reorder_cuda_job jobs[KV_SLOTS], *djobs;
		uint8_t *hin, *hout, *want, *din, *dout;

		if (ii < 0 && oi > 0)
			continue;	/* copies have one output */
		n = cvt_in_elems(in, nb);
		if (n == 0)
			continue;
		sb = in == DAQIRI_DTYPE_RAW ? nb :
		    (uint64_t)n * cvt_out_size(out);
		ipitch = (nb + 47) & ~15ull;	/* a multiple of 16 */
		opitch = (sb + 47) & ~15ull;
		isz = ipitch * KV_SLOTS;
		osz = opitch * KV_SLOTS;
		hin = malloc(isz);
		hout = malloc(osz);
		want = malloc(osz);
		ck_assert(hin && hout && want);
		for (k = 0; k < isz; k++)
			hin[k] = (uint8_t)rnd(&seed);
		memset(want, 0xA5, osz);
		CK_CUDA(cudaMalloc((void **)&din, isz));
		CK_CUDA(cudaMalloc((void **)&dout, osz));
		CK_CUDA(cudaMalloc((void **)&djobs, sizeof(jobs)));
		CK_CUDA(cudaMemcpy(din, hin, isz, cudaMemcpyHostToDevice));
		CK_CUDA(cudaMemcpy(dout, want, osz, cudaMemcpyHostToDevice));
		for (j = 0; j < KV_SLOTS; j++) {
			/* input offsets j mod 16; outputs as in kv_oalign */
			uint32_t ia = j % 16, oa = kv_oalign[j];
			uint8_t *o = want + j * opitch + oa;

			jobs[j].src = j % 4 == 3 ? NULL :
			    din + j * ipitch + ia;
			jobs[j].dst = dout + j * opitch + oa;
			if (jobs[j].src == NULL)
				cvt_fill_slot(out, fill, o, sb);
			else
				cvt_slot_scalar(in, out, (enum cfg_endian)en,
				    hin + j * ipitch + ia, nb, o);
		}
		CK_CUDA(cudaMemcpy(djobs, jobs, sizeof(jobs),
		    cudaMemcpyHostToDevice));
		ck_assert_int_eq(reorder_cuda_place_jobs(in, out,
		    (enum cfg_endian)en, fill, nb, sb, djobs, KV_SLOTS, NULL),
		    0);
		CK_CUDA(cudaDeviceSynchronize());
		CK_CUDA(cudaMemcpy(hout, dout, osz, cudaMemcpyDeviceToHost));
		for (k = 0; k < osz; k++)
			if (hout[k] != want[k])
				ck_abort_msg("in %d out %d en %d size %u fill "
				    "%d: byte %u (slot %llu) is %02x, want "
				    "%02x", in, out, en, nb, fill, k,
				    (unsigned long long)(k / opitch),
				    hout[k], want[k]);
		cudaFree(din);
		cudaFree(dout);
		cudaFree(djobs);
		free(hin);
		free(hout);
		free(want);
	}
}
END_TEST

/* ---- whole plans: GPU against CPU on the same packet stream ---- */

#define P_NBUFS		8
#define P_MAX_PKTS	8192
#define P_MAX_BURST	64

/* Where the GPU plan's packets are: payloads in host, registered host or
 * device memory (header-data split), or whole frames in device memory,
 * read by the CPU through their header shadow (gpu_shadow_burst()). */
enum pmem { PMEM_HOST, PMEM_PINNED, PMEM_DEVICE, PMEM_WHOLE };

struct tdesc {
	struct daqiri_desc d;
	uint8_t *tensor;
	uint64_t bitmap[4];
};

/* A buffer owner: LIFO free list, releases at once after publishing. */
struct towner {
	int gpu;			/* 0 CPU records, 1 GPU compares, 2 neither */
	uint64_t tensor_bytes;
	uint32_t nbw;			/* bitmap words */
	void *data[P_NBUFS];
	uint64_t bitmap[P_NBUFS][4];
	uint32_t free[P_NBUFS];
	uint32_t nfree;
	/* CPU run: recorded; GPU run: compared against them */
	struct tdesc *rec;
	uint32_t nrec, maxrec, ncmp;
	uint8_t *scratch;
	char fail[256];
};

static int
o_get(void *ctx, struct reorder_buf *out)
{
	struct towner *o = ctx;
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
o_put(void *ctx, const struct reorder_buf *b)
{
	struct towner *o = ctx;

	o->free[o->nfree++] = b->index;
}

static int
desc_eq(const struct daqiri_desc *a, const struct daqiri_desc *b)
{
	return a->flags == b->flags && a->seq == b->seq &&
	    a->batch_id == b->batch_id &&
	    a->packets_expected == b->packets_expected &&
	    a->packets_received == b->packets_received &&
	    a->bytes == b->bytes && a->first_rx_ns == b->first_rx_ns &&
	    a->last_rx_ns == b->last_rx_ns;
}

static void
o_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *b)
{
	struct towner *o = ctx;
	struct tdesc *r;

	if (o->gpu == 2) {	/* no reference: release only */
		o->free[o->nfree++] = b->index;
		return;
	}
	if (!o->gpu) {
		if (o->nrec < o->maxrec) {
			r = &o->rec[o->nrec++];
			r->d = *d;
			r->tensor = malloc(o->tensor_bytes);
			memcpy(r->tensor, b->data, o->tensor_bytes);
			memcpy(r->bitmap, b->bitmap, o->nbw * 8);
		}
	} else if (o->fail[0] == '\0') {
		/* what a consumer does: wait for the buffer's event (here:
		 * the whole device), then read */
		if (cudaDeviceSynchronize() != cudaSuccess ||
		    cudaMemcpy(o->scratch, b->data, o->tensor_bytes,
		    cudaMemcpyDefault) != cudaSuccess) {
			snprintf(o->fail, sizeof(o->fail), "cuda read back");
		} else if (o->ncmp >= o->nrec) {
			snprintf(o->fail, sizeof(o->fail), "GPU published more "
			    "than the CPU (%u)", o->nrec);
		} else {
			r = &o->rec[o->ncmp];
			if (!desc_eq(&r->d, d))
				snprintf(o->fail, sizeof(o->fail), "tensor %u: "
				    "descriptor differs (flags %x/%x recv "
				    "%u/%u)", o->ncmp, r->d.flags, d->flags,
				    r->d.packets_received,
				    d->packets_received);
			else if (memcmp(r->bitmap, b->bitmap, o->nbw * 8))
				snprintf(o->fail, sizeof(o->fail), "tensor %u: "
				    "bitmap differs", o->ncmp);
			else if (memcmp(r->tensor, o->scratch,
			    o->tensor_bytes))
				snprintf(o->fail, sizeof(o->fail), "tensor %u: "
				    "data differs", o->ncmp);
			o->ncmp++;
		}
	}
	o->free[o->nfree++] = b->index;
}

struct pcase {
	enum daqiri_dtype in, out;
	enum cfg_endian en;
	enum daqiri_fill fill;
	uint32_t in_bytes;
	enum pmem mem;
};

static const struct pcase pcases[] = {
	{ DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1000,
	  PMEM_PINNED },
	{ DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP32, CFG_ENDIAN_HOST, DAQIRI_FILL_NAN, 1000,
	  PMEM_HOST },
	{ DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_BF16, CFG_ENDIAN_HOST, DAQIRI_FILL_KEEP, 1000,
	  PMEM_DEVICE },
	{ DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP32, CFG_ENDIAN_NETWORK, DAQIRI_FILL_NAN,
	  1000, PMEM_HOST },
	{ DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_INT32, CFG_ENDIAN_NETWORK, DAQIRI_FILL_ZERO,
	  1000, PMEM_PINNED },
	{ DAQIRI_DTYPE_INT32, DAQIRI_DTYPE_FP64, CFG_ENDIAN_HOST, DAQIRI_FILL_NAN, 1000,
	  PMEM_DEVICE },
	{ DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1001,
	  PMEM_HOST },
	{ DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1002,
	  PMEM_PINNED },
	{ DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_BF16, CFG_ENDIAN_HOST, DAQIRI_FILL_NAN, 999,
	  PMEM_DEVICE },
	{ DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_FP16, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1000,
	  PMEM_WHOLE },
	{ DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_FP32, CFG_ENDIAN_NETWORK, DAQIRI_FILL_NAN,
	  1002, PMEM_WHOLE },
	{ DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_RAW, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 1001,
	  PMEM_WHOLE },
	{ DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_FP64, CFG_ENDIAN_HOST, DAQIRI_FILL_NAN, 60,
	  PMEM_WHOLE },		/* whole frames shorter than a shadow */
};
#define NPCASES ((int)(sizeof(pcases) / sizeof(pcases[0])))

#define P_PPB		16
#define P_JITTER	24		/* packets a packet may move */

/* One packet of the generated stream. */
struct tpkt {
	uint32_t seq;
	uint32_t len;			/* payload bytes (!= in_bytes: malformed) */
	uint32_t pay;			/* index of its payload */
	uint64_t key;			/* arrival order */
};

static int
tpkt_cmp(const void *a, const void *b)
{
	const struct tpkt *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key ? 1 :
	    (x->pay > y->pay) - (x->pay < y->pay);
}

/* A stream over 16-bit sequence numbers starting near the wrap: every
 * packet moved up to P_JITTER places, with losses, duplicates, malformed
 * packets, a gap and a sender restart. Returns the number of packets. */
static uint32_t
gen_stream(struct tpkt *pk, uint32_t in_bytes, uint64_t *s)
{
	uint32_t n = 0, i, seq = 65536 - 5 * P_PPB, b;

	for (b = 0; b < 300 && n < P_MAX_PKTS - 64; b++) {
		if (b == 120)
			seq += 40 * P_PPB;		/* a gap */
		if (b == 200)
			seq = 3 * P_PPB;		/* sender restart */
		for (i = 0; i < P_PPB; i++, seq++) {
			uint64_t r = rnd(s) % 1000;

			if (r < 30)
				continue;		/* lost */
			pk[n].seq = seq & 0xFFFF;
			pk[n].len = r < 40 ? in_bytes - 1 : in_bytes;
			pk[n].pay = n;
			n++;
			if (r >= 40 && r < 70) {	/* duplicate */
				pk[n] = pk[n - 1];
				pk[n].pay = n;
				n++;
			}
		}
	}
	for (i = 0; i < n; i++)
		pk[i].key = pk[i].pay + rnd(s) % P_JITTER;
	qsort(pk, n, sizeof(*pk), tpkt_cmp);
	return n;
}

/* Feed the same stream to plan p: same bursts, same clock. poison:
 * overwrite each payload once its burst's fence is done, as an engine
 * reusing the packet buffer would (mem says how). */
static void
run_stream(struct reorder_plan *p, const struct tpkt *pk, uint32_t n,
	   uint8_t (*hdr)[T_HDR], uint8_t *pay, uint32_t pitch, uint64_t seed,
	   int poison, enum pmem mem, struct gpu_shadow *sh)
{
	struct rx_frame b[P_MAX_BURST];
	uint64_t now = 1000000, s = seed;
	uint32_t i = 0, k, m;

	while (i < n) {
		m = 1 + (uint32_t)(rnd(&s) % P_MAX_BURST);
		for (k = 0; k < m && i < n; k++, i++) {
			b[k].hdr = hdr[pk[i].pay];
			b[k].hdr_len = T_HDR;
			b[k].payload = pay + (uint64_t)pk[i].pay * pitch;
			b[k].payload_len = pk[i].len;
			if (mem == PMEM_WHOLE) {
				/* frame pitch T_HDR + pitch, as a NIC wrote it */
				b[k].hdr = pay + (uint64_t)pk[i].pay *
				    (T_HDR + pitch);
				b[k].hdr_len = T_HDR + pk[i].len;
				b[k].payload = NULL;
				b[k].payload_len = 0;
			}
			b[k].rx_ns = now;
			b[k].stash = NULL;	/* not placed directly */
			b[k].flags = 0;
			now += 500;
		}
		if (mem == PMEM_WHOLE)
			ck_assert_int_eq(gpu_shadow_burst(sh, b, k), 0);
		reorder_burst(p, b, k, now);
		/* the engine gets its buffers back once the GPU read them */
		ck_assert(reorder_fence_done(p, reorder_fence(p), true));
		while (poison && k > 0) {
			k--;
			if (mem == PMEM_WHOLE)
				CK_CUDA(cudaMemset((void *)(b[k].payload -
				    b[k].hdr_len), 0x77, b[k].hdr_len +
				    b[k].payload_len));
			else if (mem == PMEM_DEVICE)
				CK_CUDA(cudaMemset((void *)b[k].payload, 0x77,
				    b[k].payload_len));
			else
				memset((void *)b[k].payload, 0x77,
				    b[k].payload_len);
		}
		if (rnd(&s) % 8 == 0) {
			now += 30000;
			reorder_poll(p, now);
		}
	}
	reorder_flush(p, now);
}

START_TEST(test_plan_vs_cpu)
{
	const struct pcase *c = &pcases[_i];
	struct cfg_reorder r = tcfg(c->in, c->out, c->en, c->fill,
	    c->in_bytes, P_PPB);
	struct towner cpu, gpu;
	struct reorder_owner oc = { &cpu, o_get, o_put, o_publish, NULL };
	struct reorder_owner og = { &gpu, o_get, o_put, o_publish, NULL };
	struct reorder_plan *pc, *pg;
	struct reorder_cuda_stats st;
	struct tpkt *pk;
	uint8_t (*hdr)[T_HDR];
	uint8_t *pay, *gpay = NULL, *whole;
	struct gpu_shadow *sh = NULL;
	uint64_t s = 0x5EED0000ull + (uint64_t)_i;
	uint32_t n, i, k, pitch = (c->in_bytes + 15) & ~15u;
	const struct reorder_geom *g;

	memset(&cpu, 0, sizeof(cpu));
	memset(&gpu, 0, sizeof(gpu));
	pc = reorder_create(&r, &oc, NULL);
	ck_assert_ptr_nonnull(pc);
	g = reorder_geom(pc);
	pg = reorder_create(&r, &og, &reorder_backend_cuda);
	ck_assert_msg(pg != NULL, "cuda plan: %s", reorder_cuda_last_error());

	/* buffers: CPU in host memory, GPU on the device, both zeroed */
	cpu.tensor_bytes = gpu.tensor_bytes = g->tensor_bytes;
	cpu.nbw = gpu.nbw = (g->ppb + 63) / 64;
	gpu.gpu = 1;
	for (i = 0; i < P_NBUFS; i++) {
		cpu.data[i] = calloc(1, g->tensor_bytes);
		ck_assert_int_eq(gpu_alloc(0, g->tensor_bytes, &gpu.data[i]),
		    0);
		/* the legacy stream: the plan's stream does not wait for it */
		CK_CUDA(cudaMemset(gpu.data[i], 0, g->tensor_bytes));
		cpu.free[cpu.nfree++] = P_NBUFS - 1 - i;
		gpu.free[gpu.nfree++] = P_NBUFS - 1 - i;
	}
	CK_CUDA(cudaDeviceSynchronize());
	cpu.maxrec = 1024;
	cpu.rec = calloc(cpu.maxrec, sizeof(*cpu.rec));
	gpu.scratch = malloc(g->tensor_bytes);

	/* the stream: headers in host memory, payloads where the case says */
	pk = calloc(P_MAX_PKTS, sizeof(*pk));
	hdr = calloc(P_MAX_PKTS, T_HDR);
	n = gen_stream(pk, c->in_bytes, &s);
	pay = malloc((uint64_t)n * pitch);
	for (i = 0; i < n; i++) {
		/* payload indexes are unique: a packet's header is hdr[pay] */
		memset(hdr[pk[i].pay], 0xEE, T_HDR);
		hdr[pk[i].pay][4] = (uint8_t)(pk[i].seq >> 8);
		hdr[pk[i].pay][5] = (uint8_t)pk[i].seq;
		for (k = 0; k < pitch; k++)
			pay[(uint64_t)i * pitch + k] = (uint8_t)rnd(&s);
	}
	run_stream(pc, pk, n, hdr, pay, pitch, 77, 0, PMEM_HOST, NULL);
	gpu.rec = cpu.rec;
	gpu.nrec = cpu.nrec;

	switch (c->mem) {
	case PMEM_HOST:
		gpay = pay;
		break;
	case PMEM_PINNED:
		ck_assert_int_eq(gpu_host_register(pay, (uint64_t)n * pitch),
		    0);
		gpay = pay;
		break;
	case PMEM_DEVICE:
		ck_assert_int_eq(gpu_alloc(0, (uint64_t)n * pitch,
		    (void **)&gpay), 0);
		CK_CUDA(cudaMemcpy(gpay, pay, (uint64_t)n * pitch,
		    cudaMemcpyHostToDevice));
		break;
	case PMEM_WHOLE:
		/* each frame whole, as a NIC's DMA writes it to GPU memory */
		whole = malloc((uint64_t)n * (T_HDR + pitch));
		ck_assert_ptr_nonnull(whole);
		for (i = 0; i < n; i++) {
			memcpy(whole + (uint64_t)i * (T_HDR + pitch), hdr[i],
			    T_HDR);
			memcpy(whole + (uint64_t)i * (T_HDR + pitch) + T_HDR,
			    pay + (uint64_t)i * pitch, pitch);
		}
		ck_assert_int_eq(gpu_alloc(0, (uint64_t)n * (T_HDR + pitch),
		    (void **)&gpay), 0);
		CK_CUDA(cudaMemcpy(gpay, whole, (uint64_t)n * (T_HDR + pitch),
		    cudaMemcpyHostToDevice));
		free(whole);
		ck_assert_int_eq(gpu_shadow_create(P_MAX_BURST, 128, &sh), 0);
		break;
	}
	run_stream(pg, pk, n, hdr, gpay, pitch, 77, 1, c->mem, sh);
	gpu_shadow_destroy(sh);
	reorder_cuda_stats(pg, &st);

	ck_assert_msg(gpu.fail[0] == '\0', "%s", gpu.fail);
	ck_assert_uint_eq(gpu.ncmp, cpu.nrec);
	ck_assert_uint_gt(cpu.nrec, 200);
	ck_assert_int_eq(memcmp(reorder_counters(pc), reorder_counters(pg),
	    sizeof(struct reorder_counters)), 0);
	ck_assert_uint_gt(reorder_counters(pc)->duplicate, 0);
	ck_assert_uint_gt(reorder_counters(pc)->malformed, 0);
	ck_assert_uint_gt(reorder_counters(pc)->missing_slots, 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_uint_eq(st.lost, 0);
	ck_assert_uint_eq(st.cpu_fallback, 0);
	ck_assert_uint_eq(st.jobs, reorder_counters(pg)->placed);
	if (c->mem == PMEM_HOST)
		ck_assert_uint_eq(st.staged, st.jobs);
	else
		ck_assert_uint_eq(st.direct, st.jobs);
	if (c->fill != DAQIRI_FILL_KEEP)
		ck_assert_uint_eq(st.fills,
		    reorder_counters(pg)->missing_slots);

	reorder_destroy(pg);
	reorder_destroy(pc);
	if (c->mem == PMEM_PINNED)
		gpu_host_unregister(pay);
	if (c->mem == PMEM_DEVICE || c->mem == PMEM_WHOLE)
		gpu_free(gpay);
	for (i = 0; i < P_NBUFS; i++) {
		free(cpu.data[i]);
		gpu_free(gpu.data[i]);
	}
	for (i = 0; i < cpu.nrec; i++)
		free(cpu.rec[i].tensor);
	free(cpu.rec);
	free(gpu.scratch);
	free(pk);
	free(hdr);
	free(pay);
}
END_TEST

/* Host-registered tensors, and a payload split across the frame's two
 * parts (the plan's bounce buffer: plain host memory, staged). */
START_TEST(test_pinned_tensor_and_split)
{
	struct cfg_reorder r = tcfg(DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_FP32,
	    CFG_ENDIAN_HOST, DAQIRI_FILL_NAN, 64, P_PPB);
	struct towner o;
	struct reorder_owner ow = { &o, o_get, o_put, o_publish, NULL };
	struct reorder_plan *p;
	struct rx_frame pk[P_PPB];
	struct reorder_cuda_stats st;
	uint8_t frames[P_PPB][T_HDR + 64];
	uint8_t want[P_PPB * 64 * 4];
	uint64_t tb = P_PPB * 64 * 4;
	uint32_t i, k;

	memset(&o, 0, sizeof(o));
	o.gpu = 2;
	o.tensor_bytes = tb;
	o.nbw = 1;
	/* every buffer pinned host memory, as a host_pinned region */
	for (i = 0; i < P_NBUFS; i++) {
		o.data[i] = aligned_alloc(4096, tb);
		ck_assert_ptr_nonnull(o.data[i]);
		memset(o.data[i], 0, tb);
		ck_assert_int_eq(gpu_host_register(o.data[i], tb), 0);
		o.free[o.nfree++] = i;
	}
	p = reorder_create(&r, &ow, &reorder_backend_cuda);
	ck_assert_ptr_nonnull(p);
	for (i = 0; i < P_PPB; i++) {
		memset(frames[i], 0, T_HDR);
		frames[i][5] = (uint8_t)i;
		for (k = 0; k < 64; k++)
			frames[i][T_HDR + k] = (uint8_t)(i * 64 + k);
		/* header part ends 10 bytes into the payload */
		pk[i].hdr = frames[i];
		pk[i].hdr_len = T_HDR + 10;
		pk[i].payload = frames[i] + T_HDR + 10;
		pk[i].payload_len = 54;
		pk[i].rx_ns = 1;
		pk[i].stash = NULL;
		pk[i].flags = 0;
		if (i != 5)
			cvt_slot_scalar(DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_FP32,
			    CFG_ENDIAN_HOST, frames[i] + T_HDR, 64,
			    want + i * 256);
		else
			cvt_fill_slot(DAQIRI_DTYPE_FP32, DAQIRI_FILL_NAN,
			    want + i * 256, 256);
	}
	/* all but slot 5, then flush: a partial tensor, NaN in slot 5 */
	reorder_burst(p, pk, 5, 2);
	reorder_burst(p, pk + 6, P_PPB - 6, 3);
	reorder_flush(p, 4);
	reorder_cuda_stats(p, &st);
	ck_assert_uint_eq(st.staged, P_PPB - 1);
	ck_assert_uint_eq(st.fills, 1);
	ck_assert_uint_eq(st.errors, 0);
	/* the flush returned the buffer; finish() waited, so the CPU may
	 * read the pinned tensor now: buffer 7 was lent first */
	ck_assert_int_eq(memcmp(o.data[P_NBUFS - 1], want, tb), 0);
	reorder_destroy(p);
	for (i = 0; i < P_NBUFS; i++) {
		gpu_host_unregister(o.data[i]);
		free(o.data[i]);
	}
}
END_TEST

/* The header shadow: each frame's first 128 bytes (or all of a shorter
 * one) copied to host memory, the frame rewritten as shadow plus device
 * payload; bursts it cannot take leave the frames as they were. */
START_TEST(test_shadow_burst)
{
	static const uint32_t lens[] = { 1, 60, 127, 128, 129, 1000, 9000 };
	enum { NF = sizeof(lens) / sizeof(lens[0]) };
	struct rx_frame f[NF], g[2];
	struct gpu_shadow *sh;
	uint8_t *h, *d;
	uint64_t s = 9, off[NF], o = 0;
	uint32_t i, k, c;

	for (i = 0; i < NF; i++) {
		off[i] = o + i % 4;		/* odd starts too */
		o = off[i] + lens[i] + 3;
	}
	h = malloc(o);
	ck_assert_ptr_nonnull(h);
	for (k = 0; k < o; k++)
		h[k] = (uint8_t)rnd(&s);
	ck_assert_int_eq(gpu_alloc(0, o, (void **)&d), 0);
	CK_CUDA(cudaMemcpy(d, h, o, cudaMemcpyHostToDevice));
	ck_assert_int_eq(gpu_shadow_create(NF, 128, &sh), 0);
	memset(f, 0, sizeof(f));
	for (i = 0; i < NF; i++) {
		f[i].hdr = d + off[i];
		f[i].hdr_len = lens[i];
		if (i == 2) {	/* an engine may give a whole frame as payload */
			f[i].payload = f[i].hdr;
			f[i].payload_len = lens[i];
			f[i].hdr = NULL;
			f[i].hdr_len = 0;
		}
	}
	ck_assert_int_eq(gpu_shadow_burst(sh, f, NF), 0);
	for (i = 0; i < NF; i++) {
		c = lens[i] < 128 ? lens[i] : 128;
		ck_assert_uint_eq(f[i].hdr_len, c);
		ck_assert_int_eq(memcmp(f[i].hdr, h + off[i], c), 0);
		ck_assert_ptr_eq(f[i].payload, d + off[i] + c);
		ck_assert_uint_eq(f[i].payload_len, lens[i] - c);
		ck_assert_uint_eq(f[i].flags, RX_FRAME_DEV_PAYLOAD);
	}
	/* too many frames, or a frame in two parts: nothing changes */
	memset(g, 0, sizeof(g));
	g[0].hdr = d;
	g[0].hdr_len = 10;
	g[0].payload = d + 10;
	g[0].payload_len = 10;
	ck_assert_int_eq(gpu_shadow_burst(sh, g, 1), -EINVAL);
	ck_assert_ptr_eq(g[0].hdr, d);
	ck_assert_uint_eq(g[0].flags, 0);
	ck_assert_int_eq(gpu_shadow_burst(sh, f, NF + 1), -E2BIG);
	gpu_shadow_destroy(sh);
	gpu_free(d);
	free(h);
}
END_TEST

/* IPC handles for a device buffer and its event. */
START_TEST(test_ipc_handles)
{
	uint8_t h1[GPU_IPC_HANDLE_BYTES], h2[GPU_IPC_HANDLE_BYTES];
	uint8_t h3[GPU_IPC_HANDLE_BYTES];
	void *p;

	ck_assert_int_eq(gpu_alloc(0, 1 << 20, &p), 0);
	ck_assert_int_eq(gpu_ipc_handle(p, h1), 0);
	ck_assert_int_eq(gpu_event_ipc_handle(p, h2), 0);
	/* the same buffer has the same event */
	ck_assert_int_eq(gpu_event_ipc_handle(p, h3), 0);
	ck_assert_int_eq(memcmp(h2, h3, sizeof(h2)), 0);
	ck_assert_int_eq(gpu_range_add(p, 1 << 20), 0);
	gpu_range_del(p);
	ck_assert_int_eq(gpu_range_add(h1, sizeof(h1)), -EINVAL);
	gpu_free(p);
}
END_TEST

/* Conversions the backend refuses, with a message. */
START_TEST(test_unsupported)
{
	struct cfg_reorder r = tcfg(DAQIRI_DTYPE_INT8, DAQIRI_DTYPE_INT16,
	    CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 64, P_PPB);
	struct reorder_owner o = { NULL, t_get, t_put, t_publish, NULL };

	ck_assert_int_eq(reorder_cuda_place_jobs(DAQIRI_DTYPE_INT8,
	    DAQIRI_DTYPE_INT16, CFG_ENDIAN_HOST, DAQIRI_FILL_ZERO, 64, 128,
	    NULL, 0, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(reorder_cuda_last_error(), "convert"));
	/* the plan may refuse it first (int16 output); either way no plan */
	ck_assert_ptr_null(reorder_create(&r, &o, &reorder_backend_cuda));
}
END_TEST

static Suite *
cuda_suite(void)
{
	Suite *s = suite_create("reorder_cuda");
	TCase *tc;

	have_gpu = probe_gpu(no_gpu_why, sizeof(no_gpu_why));
	if (!have_gpu) {
		/* Check has no skip: say plainly what is not run */
		fprintf(stderr, "check_reorder_cuda: %s: GPU cases not run, "
		    "checking the no-device path\n", no_gpu_why);
		tc = tcase_create("no-device");
		tcase_add_test(tc, test_no_device);
		tcase_add_test(tc, test_no_device_error_35);
		suite_add_tcase(s, tc);
		return s;
	}
	tc = tcase_create("gpu");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_kernel_vs_scalar, 0, 1);
	tcase_add_loop_test(tc, test_plan_vs_cpu, 0, NPCASES);
	tcase_add_test(tc, test_pinned_tensor_and_split);
	tcase_add_test(tc, test_shadow_burst);
	tcase_add_test(tc, test_ipc_handles);
	tcase_add_test(tc, test_unsupported);
	suite_add_tcase(s, tc);
	return s;
}

#endif /* DAQIRI_HAVE_CUDA */

int
main(void)
{
	SRunner *sr = srunner_create(cuda_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail ? EXIT_FAILURE : EXIT_SUCCESS;
}
