/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The placement kernel's body (reorder_kernel.h) run by the host grid
 * runner (kernel.h), in every build, with nvcc or without: every input x
 * output type, both byte orders, every tail length, odd payload and slot
 * alignments, every fill and launch shapes down to one thread, bit-compared
 * with convert.h's scalar reference and the CPU backend (convert_cpu.c).
 * Every access goes through a watcher that fails the test on a misaligned
 * vector access, a load outside the job's table entry and payload, a store
 * outside its slot, or a byte written by two threads. The header shadow
 * kernel (shadow_kernel.h) likewise. The watcher and the runner are
 * tested too, so a pass means something.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "convert_cpu.h"
#include "reorder_kernel.h"
#include "shadow_kernel.h"

/* xorshift64*, fixed seeds: reproducible. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* ---- the watcher ---- */

/* One block row's job: its table entry and source it may read, the
 * destination it may write. */
struct wrow {
	const void *entry;
	size_t entry_len;
	const uint8_t *src;
	uint64_t src_len;
	uint8_t *dst;
	uint64_t dst_len;
};

struct watch {
	const struct wrow *rows;	/* what block row y may touch */
	uint32_t njobs;
	uint8_t *arena;			/* every slot lies in here */
	size_t arena_len;
	uint64_t *writer;		/* per arena byte: thread id + 1 */
	uint64_t accesses;
	uint32_t nerr;
	char err[256];
};

static void
watch_fail(struct watch *w, const char *fmt, ...)
{
	va_list ap;

	if (w->nerr++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static int
inside(uintptr_t a, uint32_t n, const void *base, uint64_t len)
{
	uintptr_t b = (uintptr_t)base;

	return base != NULL && a >= b && a - b <= len && n <= len - (a - b);
}

/* A thread's number in its launch, unique over the whole grid. */
static uint64_t
thread_id(const struct kidx *ix)
{
	uint64_t b = ((uint64_t)ix->block.z * ix->grid.y + ix->block.y) *
	    ix->grid.x + ix->block.x;

	return b * ix->bdim.x * ix->bdim.y * ix->bdim.z +
	    ((uint64_t)ix->thread.z * ix->bdim.y + ix->thread.y) *
	    ix->bdim.x + ix->thread.x;
}

static void *
watch_access(void *ctx, const struct kidx *ix, uintptr_t a, uint32_t n,
	     enum kmem_op op)
{
	struct watch *w = ctx;
	const struct wrow *j;
	uint64_t me, i, off;

	w->accesses++;
	if (a % n != 0) {
		watch_fail(w, "misaligned %u-byte %s at %#lx", n,
		    op == KMEM_LOAD ? "load" : "store", (unsigned long)a);
		return NULL;
	}
	if (ix->block.y >= w->njobs) {
		watch_fail(w, "block row %u has no job", ix->block.y);
		return NULL;
	}
	j = &w->rows[ix->block.y];
	if (op == KMEM_LOAD) {
		if (inside(a, n, j->entry, j->entry_len) ||
		    inside(a, n, j->src, j->src_len))
			return (void *)a;
		watch_fail(w, "job %u: load of %u bytes at %#lx, outside its "
		    "payload", ix->block.y, n, (unsigned long)a);
		return NULL;
	}
	if (!inside(a, n, j->dst, j->dst_len)) {
		watch_fail(w, "job %u: store of %u bytes at %#lx, outside its "
		    "slot", ix->block.y, n, (unsigned long)a);
		return NULL;
	}
	me = thread_id(ix) + 1;
	off = a - (uintptr_t)w->arena;
	for (i = 0; i < n; i++) {
		if (w->writer[off + i] != 0 && w->writer[off + i] != me) {
			watch_fail(w, "job %u: byte %llu of its slot written "
			    "by two threads", ix->block.y,
			    (unsigned long long)(a + i - (uintptr_t)j->dst));
			return NULL;
		}
		w->writer[off + i] = me;
	}
	return (void *)a;
}

/* What a placement job's block row may touch. */
static struct wrow
reorder_row(const struct reorder_cuda_job *j, uint32_t in_bytes,
	    uint64_t slot_bytes)
{
	struct wrow r = { j, sizeof(*j), j->src, in_bytes, j->dst,
	    slot_bytes };

	return r;
}

/* Run the kernel over njobs jobs with shape (gx, bx), watched. */
static void
run_watched(struct watch *w, struct rk_params *p, uint32_t gx, uint32_t bx,
	    uint64_t seed)
{
	struct kmem_hooks h = { watch_access, w };
	struct kdim grid = { gx, w->njobs, 1 }, block = { bx, 1, 1 };
	void *args[1] = { p };

	memset(w->writer, 0, w->arena_len * sizeof(*w->writer));
	rk_cpu_launch(args, grid, block, seed, &h);
}

/* ---- the matrix ---- */

static const enum daqiri_dtype ins[] = {
	DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8,
	DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32,
};
static const enum daqiri_dtype outs[] = {
	DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32,
	DAQIRI_DTYPE_FP64, DAQIRI_DTYPE_INT32,
};
#define NINS	5
#define NOUTS	5

/* Payload sizes: every tail mod 16 near 0 and near 1000, and a large one. */
static const uint32_t sizes[] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 31,
	33, 1000, 1001, 1002, 1003, 1004, 1006, 1012, 1015, 8000,
};
#define NSIZES	((int)(sizeof(sizes) / sizeof(sizes[0])))

/* Launch shapes (x blocks, threads per block): one thread, odd tiny
 * blocks, fewer threads than words, and the backend's 256. */
static const uint32_t shapes[][2] = {
	{ 1, 1 }, { 1, 2 }, { 1, 3 }, { 2, 5 }, { 3, 7 }, { 1, 32 },
	{ 4, 64 }, { 0, 256 },		/* 0: as many blocks as it takes */
};
#define NSHAPES	((int)(sizeof(shapes) / sizeof(shapes[0])))

/* Jobs per launch: payload offsets mod 16 (0, odd, even) and slot
 * offsets mod 16; jobs 2 and 6 are fills (src NULL), at 16 and 3 mod 16. */
#define NJOBS	8
static const uint32_t src_off[NJOBS] = { 0, 1, 0, 3, 8, 13, 0, 4 };
static const uint32_t dst_off[NJOBS] = { 0, 0, 0, 1, 8, 15, 3, 4 };

/* The reference for one job: convert.h's scalar code or its fill. */
static void
ref_job(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
	enum daqiri_fill fill, const uint8_t *src, uint32_t nb, uint8_t *dst,
	uint64_t sb)
{
	if (src == NULL)
		cvt_fill_slot(out, fill, dst, sb);
	else if (in == DAQIRI_DTYPE_RAW)
		memcpy(dst, src, nb);
	else
		cvt_slot_scalar(in, out, en, src, nb, dst);
}

/* The CPU backend for the same job. */
static void
cpu_job(enum daqiri_dtype in, enum daqiri_dtype out, enum cfg_endian en,
	enum daqiri_fill fill, const uint8_t *src, uint32_t nb, uint8_t *dst,
	uint64_t sb)
{
	if (src == NULL)
		cvt_fill_fast(out, fill, dst, sb);
	else
		cvt_slot_fast(in, out, en, src, nb, dst);
}

/*
 * One conversion (_i = input x output) over every byte order, size,
 * shape and fill: the kernel's output equals the reference's and the CPU
 * backend's byte for byte, slots and the bytes around them, with no
 * watcher complaint.
 */
START_TEST(test_kernel_matrix)
{
	enum daqiri_dtype in = ins[_i / NOUTS], out = outs[_i % NOUTS];
	uint64_t seed = 0xC0FFEEull + (uint64_t)_i;
	int en, si, sh;

	if (in == DAQIRI_DTYPE_RAW) {
		if (_i % NOUTS != 0)
			return;	/* a copy has one output */
		out = DAQIRI_DTYPE_RAW;
	}
	for (en = 0; en < CFG_ENDIAN_MAX; en++)
	for (si = 0; si < NSIZES; si++)
	for (sh = 0; sh < NSHAPES; sh++) {
		enum daqiri_fill fill = (enum daqiri_fill)((si + sh) %
		    DAQIRI_FILL_MAX);
		uint32_t nb = sizes[si], n = cvt_in_elems(in, nb), j;
		uint64_t sb, ip, op, k;
		struct reorder_cuda_job jobs[NJOBS];
		struct wrow rows[NJOBS];
		struct rk_params p;
		struct watch w;
		uint8_t *hin, *got, *want, *cpu;
		uint32_t gx = shapes[sh][0], bx = shapes[sh][1];

		if (n == 0)
			continue;
		if (nb == 8000 && sh < NSHAPES - 2)
			continue;	/* large payloads: wide shapes only */
		sb = in == DAQIRI_DTYPE_RAW ? nb :
		    (uint64_t)n * cvt_out_size(out);
		ip = (nb + 47) & ~15ull;
		op = (sb + 47) & ~15ull;
		hin = malloc(ip * NJOBS);
		got = malloc(op * NJOBS);
		want = malloc(op * NJOBS);
		cpu = malloc(op * NJOBS);
		memset(&w, 0, sizeof(w));
		w.arena_len = op * NJOBS;
		w.writer = malloc(w.arena_len * sizeof(*w.writer));
		ck_assert(hin && got && want && cpu && w.writer);
		for (k = 0; k < ip * NJOBS; k++)
			hin[k] = (uint8_t)rnd(&seed);
		/* the same guard bytes around every slot everywhere */
		memset(got, 0xA5, op * NJOBS);
		memset(want, 0xA5, op * NJOBS);
		memset(cpu, 0xA5, op * NJOBS);
		for (j = 0; j < NJOBS; j++) {
			const uint8_t *s = j == 2 || j == 6 ? NULL :
			    hin + j * ip + src_off[j];

			jobs[j].src = s;
			jobs[j].dst = got + j * op + dst_off[j];
			ref_job(in, out, (enum cfg_endian)en, fill, s, nb,
			    want + j * op + dst_off[j], sb);
			cpu_job(in, out, (enum cfg_endian)en, fill, s, nb,
			    cpu + j * op + dst_off[j], sb);
		}
		memset(&p, 0, sizeof(p));
		p.jobs = jobs;
		p.in_bytes = nb;
		p.nelems = n;
		p.slot_bytes = sb;
		p.en = (enum cfg_endian)en;
		p.in = in;
		p.out = out;
		p.fill = fill;
		for (j = 0; j < NJOBS; j++)
			rows[j] = reorder_row(&jobs[j], nb, sb);
		w.rows = rows;
		w.njobs = NJOBS;
		w.arena = got;
		if (gx == 0) {
			uint64_t units = in == DAQIRI_DTYPE_RAW ? nb / 16 :
			    nb / 4;

			if (sb / 16 > units)
				units = sb / 16;
			gx = (uint32_t)((units + bx - 1) / bx);
			gx = gx < 1 ? 1 : gx;
		}
		run_watched(&w, &p, gx, bx, seed + (uint64_t)sh);
		ck_assert_msg(w.nerr == 0, "in %d out %d en %d size %u shape "
		    "%ux%u fill %d: %u watcher errors, first: %s", in, out,
		    en, nb, gx, bx, fill, w.nerr, w.err);
		ck_assert_msg(memcmp(want, cpu, op * NJOBS) == 0,
		    "the CPU backend and the reference differ (in %d out %d "
		    "size %u)", in, out, nb);
		for (k = 0; k < op * NJOBS; k++)
			if (got[k] != want[k])
				ck_abort_msg("in %d out %d en %d size %u shape "
				    "%ux%u fill %d: byte %llu of job %llu is "
				    "%02x, want %02x", in, out, en, nb, gx, bx,
				    fill, (unsigned long long)(k % op),
				    (unsigned long long)(k / op), got[k],
				    want[k]);
		free(hin);
		free(got);
		free(want);
		free(cpu);
		free(w.writer);
	}
}
END_TEST

/* ---- the instruments themselves ---- */

struct visit {
	uint32_t *count;
	uint32_t *order;
	uint64_t n, pos;
};

static void
visit_body(void *ctx, const struct kidx *ix)
{
	struct visit *v = ctx;
	uint64_t t = thread_id(ix);

	if (t < v->n)
		v->count[t]++;
	if (v->pos < v->n)
		v->order[v->pos++] = (uint32_t)t;
}

/* Every (block, thread) of 3-D shapes exactly once, in a permuted order
 * that depends on the seed. */
START_TEST(test_runner_visits_all)
{
	static const struct kdim g[] = { { 1, 1, 1 }, { 3, 2, 2 },
	    { 7, 1, 1 }, { 2, 5, 3 } };
	static const struct kdim b[] = { { 1, 1, 1 }, { 4, 3, 1 },
	    { 32, 1, 1 }, { 5, 2, 3 } };
	struct kmem_hooks h = { watch_access, NULL };
	uint32_t i, k, same, ident;

	for (i = 0; i < 4; i++) {
		uint64_t n = (uint64_t)g[i].x * g[i].y * g[i].z * b[i].x *
		    b[i].y * b[i].z;
		struct visit v1 = { calloc(n, 4), calloc(n, 4), n, 0 };
		struct visit v2 = { v1.count, calloc(n, 4), n, 0 };

		ck_assert(v1.count && v1.order && v2.order);
		kgrid_run(g[i], b[i], 1, &h, visit_body, &v1);
		kgrid_run(g[i], b[i], 2, &h, visit_body, &v2);
		ck_assert_uint_eq(v1.pos, n);
		ck_assert_uint_eq(v2.pos, n);
		for (k = 0, same = 0, ident = 0; k < n; k++) {
			ck_assert_uint_eq(v1.count[k], 2);
			same += v1.order[k] == v2.order[k];
			ident += v1.order[k] == k;
		}
		if (n >= 12) {
			ck_assert_uint_lt(same, n);
			ck_assert_uint_lt(ident, n);
		}
		free(v1.count);
		free(v1.order);
		free(v2.order);
	}
}
END_TEST

/* Bodies that break one rule each; the watcher must say which. */
enum bad_mode {
	BAD_MISALIGNED,			/* a 4-byte store at an odd address */
	BAD_TWO_WRITERS,		/* every thread writes byte 0 */
	BAD_STORE_OUTSIDE,		/* one byte past the slot */
	BAD_LOAD_OUTSIDE,		/* one byte before the payload */
	BAD_MODE_MAX
};

struct bad_ctx {
	enum bad_mode mode;
	const struct reorder_cuda_job *job;
};

static void
bad_body(void *ctx, const struct kidx *ix)
{
	struct bad_ctx *c = ctx;
	uint8_t *d = (uint8_t *)(uintptr_t)k_ld64(&c->job->dst);
	const uint8_t *s = (const uint8_t *)(uintptr_t)k_ld64(&c->job->src);

	switch (c->mode) {
	case BAD_MISALIGNED:
		k_st32(d + 1, 0);
		break;
	case BAD_TWO_WRITERS:
		k_st8(d, (uint8_t)ix->thread.x);
		break;
	case BAD_STORE_OUTSIDE:
		k_st8(d + 16 + ix->thread.x, 0);
		break;
	default:
		(void)k_ld8(s - 1 + ix->thread.x);
		break;
	}
}

START_TEST(test_watcher_catches)
{
	static const char *want[BAD_MODE_MAX] = { "misaligned", "two threads",
	    "outside its slot", "outside its payload" };
	uint8_t src[32], dst[32];
	struct reorder_cuda_job job = { src + 8, dst };
	struct bad_ctx c = { (enum bad_mode)_i, &job };
	uint64_t writer[32];
	struct watch w;
	struct kmem_hooks h = { watch_access, &w };
	struct kdim grid = { 1, 1, 1 }, block = { 2, 1, 1 };

	struct wrow row = reorder_row(&job, 16, 16);

	memset(&w, 0, sizeof(w));
	w.rows = &row;
	w.njobs = 1;
	w.arena = dst;
	w.arena_len = sizeof(dst);
	w.writer = writer;
	memset(writer, 0, sizeof(writer));
	kgrid_run(grid, block, 3, &h, bad_body, &c);
	ck_assert_uint_gt(w.nerr, 0);
	ck_assert_msg(strstr(w.err, want[_i]) != NULL, "mode %d: %s", _i,
	    w.err);
}
END_TEST

/*
 * The header shadow kernel (shadow_kernel.h): frames of every length
 * around the pitch, at odd addresses, under every launch shape; each
 * slot holds the frame's first bytes, the rest of it and everything
 * around it untouched, no watcher complaint.
 */
START_TEST(test_shadow_matrix)
{
	static const uint32_t lens[] = { 0, 1, 3, 31, 32, 33, 64, 127, 128,
	    129, 1500, 9000 };
	enum { NF = sizeof(lens) / sizeof(lens[0]), PITCH = 128 };
	uint32_t gx = shapes[_i][0] == 0 ? 1 : shapes[_i][0];
	uint32_t bx = shapes[_i][1], i, c;
	struct shadow_job jobs[NF];
	struct wrow rows[NF];
	struct shadow_params p;
	struct watch w;
	uint8_t *src, *dst;
	uint64_t s = 77 + (uint64_t)_i, k, o = 0;
	void *args[1] = { &p };
	struct kmem_hooks h = { watch_access, &w };
	struct kdim grid = { gx, NF, 1 }, block = { bx, 1, 1 };

	src = malloc(NF * 9100);
	dst = malloc(NF * PITCH + 64);
	memset(&w, 0, sizeof(w));
	w.arena_len = NF * PITCH + 64;
	w.writer = calloc(w.arena_len, sizeof(*w.writer));
	ck_assert(src && dst && w.writer);
	for (k = 0; k < NF * 9100; k++)
		src[k] = (uint8_t)rnd(&s);
	memset(dst, 0xA5, NF * PITCH + 64);
	for (i = 0; i < NF; i++) {
		jobs[i].src = src + o + i % 5;
		jobs[i].len = lens[i];
		o += 9100;
		rows[i].entry = &jobs[i];
		rows[i].entry_len = sizeof(jobs[i]);
		rows[i].src = jobs[i].src;
		rows[i].src_len = lens[i];
		rows[i].dst = dst + 32 + (uint64_t)i * PITCH;
		rows[i].dst_len = PITCH;
	}
	p.jobs = jobs;
	p.dst = dst + 32;
	p.pitch = PITCH;
	w.rows = rows;
	w.njobs = NF;
	w.arena = dst;
	shadow_cpu_launch(args, grid, block, s, &h);
	ck_assert_msg(w.nerr == 0, "shape %ux%u: %s", gx, bx, w.err);
	for (k = 0; k < 32; k++)
		ck_assert_uint_eq(dst[k], 0xA5);
	for (i = 0; i < NF; i++) {
		c = lens[i] < PITCH ? lens[i] : PITCH;
		ck_assert_msg(memcmp(rows[i].dst, jobs[i].src, c) == 0,
		    "shape %ux%u: frame of %u bytes", gx, bx, lens[i]);
		for (k = c; k < PITCH; k++)
			ck_assert_uint_eq(rows[i].dst[k], 0xA5);
	}
	for (k = 32 + NF * PITCH; k < NF * PITCH + 64; k++)
		ck_assert_uint_eq(dst[k], 0xA5);
	free(src);
	free(dst);
	free(w.writer);
}
END_TEST

static Suite *
kernel_suite(void)
{
	Suite *s = suite_create("reorder_kernel");
	TCase *tc = tcase_create("matrix");

	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_kernel_matrix, 0, NINS * NOUTS);
	tcase_add_loop_test(tc, test_shadow_matrix, 0, NSHAPES);
	suite_add_tcase(s, tc);
	tc = tcase_create("instruments");
	tcase_add_test(tc, test_runner_visits_all);
	tcase_add_loop_test(tc, test_watcher_catches, 0, BAD_MODE_MAX);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(kernel_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail ? EXIT_FAILURE : EXIT_SUCCESS;
}
