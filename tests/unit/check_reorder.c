/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/reorder.c: field extraction, the worked examples,
 * every rule of DESIGN.md "Reorder semantics", one regression test per
 * failure of the reference library (REFERENCE.md), and a property test
 * that runs thousands of random streams through the plan and through an
 * independent, deliberately simple model, comparing every published
 * descriptor, bitmap, tensor byte and counter after every call.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "convert_cpu.h"
#include "reorder.h"

#define MAXBUFS		16
#define GUARD		64
#define FRAME_MAX	128
#define GUARD_BYTE	0xC3	/* initial buffer content and guard */

/* ------------------------------------------------------------------ */
/* A buffer owner that logs every publication. */

enum { B_FREE, B_LENT, B_HELD };

struct pub {
	struct daqiri_desc d;
	uint64_t *bitmap;
	uint8_t *data;
};

struct tpool {
	int n;
	uint64_t tbytes;
	uint32_t bmwords;
	uint8_t *data[MAXBUFS];
	uint64_t *bm[MAXBUFS];
	int state[MAXBUFS];
	int held[MAXBUFS];		/* FIFO of held buffer indexes */
	int nheld;
	bool release_at_publish;
	struct pub *log;
	size_t nlog, cap;
	int errors;			/* owner contract violations */
};

static int
tp_get(void *ctx, struct reorder_buf *out)
{
	struct tpool *tp = ctx;
	int i;

	for (i = 0; i < tp->n; i++) {
		if (tp->state[i] == B_FREE) {
			tp->state[i] = B_LENT;
			out->index = (uint32_t)i;
			out->data = tp->data[i];
			out->bitmap = tp->bm[i];
			return 0;
		}
	}
	return -ENOBUFS;
}

static void
tp_put(void *ctx, const struct reorder_buf *buf)
{
	struct tpool *tp = ctx;

	if (buf->index >= (uint32_t)tp->n || tp->state[buf->index] != B_LENT)
		tp->errors++;
	else
		tp->state[buf->index] = B_FREE;
}

static void
tp_publish(void *ctx, const struct daqiri_desc *d,
	   const struct reorder_buf *buf)
{
	struct tpool *tp = ctx;
	struct pub *p;

	if (buf->index >= (uint32_t)tp->n || tp->state[buf->index] != B_LENT ||
	    d->buf_index != buf->index || buf->data != tp->data[buf->index]) {
		tp->errors++;
		return;
	}
	if (tp->nlog == tp->cap) {
		tp->cap = tp->cap ? tp->cap * 2 : 64;
		tp->log = realloc(tp->log, tp->cap * sizeof(*tp->log));
	}
	p = &tp->log[tp->nlog++];
	p->d = *d;
	p->bitmap = malloc(tp->bmwords * 8);
	memcpy(p->bitmap, buf->bitmap, tp->bmwords * 8);
	p->data = malloc(tp->tbytes);
	memcpy(p->data, buf->data, tp->tbytes);
	if (tp->release_at_publish) {
		tp->state[buf->index] = B_FREE;
	} else {
		tp->state[buf->index] = B_HELD;
		tp->held[tp->nheld++] = (int)buf->index;
	}
}

static void
tp_init(struct tpool *tp, int n, uint64_t tbytes, uint32_t ppb)
{
	int i;

	memset(tp, 0, sizeof(*tp));
	tp->n = n;
	tp->tbytes = tbytes;
	tp->bmwords = (ppb + 63) / 64;
	for (i = 0; i < n; i++) {
		tp->data[i] = malloc(tbytes + GUARD);
		memset(tp->data[i], GUARD_BYTE, tbytes + GUARD);
		tp->bm[i] = malloc(tp->bmwords * 8 + 8);
		memset(tp->bm[i], 0xFF, tp->bmwords * 8 + 8);
	}
}

/* Release the oldest held buffer; its index, or -1. */
static int
tp_release_oldest(struct tpool *tp)
{
	int i = tp->held[0];

	if (tp->nheld == 0)
		return -1;
	memmove(tp->held, tp->held + 1, (size_t)(tp->nheld - 1) * sizeof(int));
	tp->nheld--;
	tp->state[i] = B_FREE;
	return i;
}

static void
tp_fini(struct tpool *tp)
{
	size_t j;
	int i;

	for (i = 0; i < tp->n; i++) {
		free(tp->data[i]);
		free(tp->bm[i]);
	}
	for (j = 0; j < tp->nlog; j++) {
		free(tp->log[j].bitmap);
		free(tp->log[j].data);
	}
	free(tp->log);
}

static bool
guards_intact(const struct tpool *tp)
{
	uint64_t k;
	int i;

	for (i = 0; i < tp->n; i++)
		for (k = 0; k < GUARD; k++)
			if (tp->data[i][tp->tbytes + k] != GUARD_BYTE)
				return false;
	return true;
}

static struct reorder_owner
tp_owner(struct tpool *tp)
{
	struct reorder_owner o = {
		.ctx = tp, .get = tp_get, .put = tp_put, .publish = tp_publish,
	};

	return o;
}

static bool
bit(const uint64_t *bm, uint32_t s)
{
	return (bm[s / 64] >> (s % 64)) & 1;
}

static void
check_invariant(const struct reorder_counters *c)
{
	ck_assert_uint_eq(c->packets_in, c->placed + c->duplicate + c->late +
	    c->malformed + c->no_buffer + c->backend_error);
}

/* ------------------------------------------------------------------ */
/* Frames. */

/* Write v into bits [off, off+w) of f, MSB first. */
static void
put_bits(uint8_t *f, uint32_t off, uint32_t w, uint32_t v)
{
	uint32_t i, pos;

	for (i = 0; i < w; i++) {
		pos = off + i;
		if ((v >> (w - 1 - i)) & 1)
			f[pos / 8] |= (uint8_t)(0x80 >> (pos % 8));
		else
			f[pos / 8] &= (uint8_t)~(0x80 >> (pos % 8));
	}
}

/* The simple layout of the direct tests: seq at bit 0 of a 4-byte
 * header, a 4-byte payload copied as it is (slot = the payload). */
static struct cfg_reorder
simple_cfg(uint32_t ppb, uint32_t seq_bits, uint32_t window,
	   uint32_t timeout_us)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	strcpy(r.name, "t");
	r.type = CFG_REORDER_CPU;
	r.payload_byte_offset = 4;
	r.payload_bytes = 4;
	r.slot_bytes = 4;
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_offset = 0;
	r.seq.bit_width = seq_bits;
	r.packets_per_batch = ppb;
	r.window = window;
	r.fill = DAQIRI_FILL_ZERO;
	r.timeout_us = timeout_us;
	return r;
}

struct harness {
	struct tpool tp;
	struct cfg_reorder cfg;
	struct reorder_plan *p;
	uint8_t frames[256][FRAME_MAX];
	struct rx_frame pkts[256];
};

static void
h_init(struct harness *h, const struct cfg_reorder *r, int nbufs)
{
	struct reorder_owner o;

	memset(h, 0, sizeof(*h));
	h->cfg = *r;
	o = tp_owner(&h->tp);
	h->p = reorder_create(r, &o, NULL);
	ck_assert_ptr_nonnull(h->p);
	/* the plan keeps only the pointer: size the pool from its geometry */
	tp_init(&h->tp, nbufs, reorder_geom(h->p)->tensor_bytes,
	    r->packets_per_batch);
	h->tp.release_at_publish = true;
}

static void
h_fini(struct harness *h)
{
	reorder_destroy(h->p);
	ck_assert_int_eq(h->tp.errors, 0);
	ck_assert(guards_intact(&h->tp));
	tp_fini(&h->tp);
}

/* Frame i of the simple layout: seq and a 4-byte payload tag. */
static struct rx_frame *
h_frame(struct harness *h, int i, uint32_t seq, uint32_t tag, uint64_t rx)
{
	uint8_t *f = h->frames[i];

	memset(f, 0, FRAME_MAX);
	put_bits(f, 0, h->cfg.seq.bit_width, seq);
	memcpy(f + 4, &tag, 4);
	h->pkts[i] = (struct rx_frame){ .hdr = f, .hdr_len = 8,
	    .rx_ns = rx };
	return &h->pkts[i];
}

/* One packet as a burst of one at time now = rx. */
static void
h_send(struct harness *h, uint32_t seq, uint32_t tag, uint64_t rx)
{
	h_frame(h, 0, seq, tag, rx);
	reorder_burst(h->p, h->pkts, 1, rx);
	check_invariant(reorder_counters(h->p));
}

/* Send every slot of batch b (seq = b*ppb + s, tag = seq) in order. */
static void
h_batch(struct harness *h, uint32_t b, uint64_t rx)
{
	uint32_t s, ppb = h->cfg.packets_per_batch;

	for (s = 0; s < ppb; s++)
		h_send(h, b * ppb + s, b * ppb + s, rx);
}

static uint32_t
slot_tag(const struct pub *p, uint32_t s)
{
	uint32_t t;

	memcpy(&t, p->data + 4 * s, 4);
	return t;
}

#define C(h) reorder_counters((h)->p)

/* ------------------------------------------------------------------ */
/* Field extraction. */

START_TEST(test_field_worked_example_1)
{
	uint8_t f[32] = { 0 };
	struct rx_frame pk = { .hdr = f, .hdr_len = sizeof(f) };
	uint32_t v;

	f[16] = 0xAB;
	f[17] = 0xCD;
	f[18] = 0xC0;
	ck_assert(reorder_field(&pk, 128, 10, &v));
	ck_assert_uint_eq(v, 687);
	ck_assert(reorder_field(&pk, 144, 2, &v));
	ck_assert_uint_eq(v, 3);
	ck_assert_uint_eq(687 % 256, 175);
}
END_TEST

START_TEST(test_field_worked_example_2)
{
	uint8_t f[80] = { 0 };
	struct rx_frame pk = { .hdr = f, .hdr_len = sizeof(f) };
	uint32_t v;

	f[64] = 0x00;
	f[65] = 0x00;
	f[66] = 0x04;
	f[67] = 0x01;
	ck_assert(reorder_field(&pk, 512, 32, &v));
	ck_assert_uint_eq(v, 1025);
	memset(f + 64, 0xFF, 4);
	ck_assert(reorder_field(&pk, 512, 32, &v));
	ck_assert_uint_eq(v, 0xFFFFFFFFu);
	/* the field ends exactly at the frame's end, and one bit later */
	pk.hdr_len = 68;
	ck_assert(reorder_field(&pk, 512, 32, &v));
	ck_assert(!reorder_field(&pk, 513, 32, &v));
}
END_TEST

/* Bit-by-bit reference reader over a flat frame. */
static uint32_t
ref_bits(const uint8_t *f, uint32_t off, uint32_t w)
{
	uint32_t v = 0, i, pos;

	for (i = 0; i < w; i++) {
		pos = off + i;
		v = v << 1 | ((f[pos / 8] >> (7 - pos % 8)) & 1);
	}
	return v;
}

/* Every width 1..32 at every bit offset 0..71, the frame split in two at
 * every point 0..12 bytes; too-short frames and bad widths refused. */
START_TEST(test_field_all_widths_offsets)
{
	uint8_t f[16], h[16], pl[16];
	uint32_t off, w, v, seed = 99, k, split;
	struct rx_frame pk;

	for (k = 0; k < 16; k++) {
		seed = seed * 1103515245u + 12345u;
		f[k] = (uint8_t)(seed >> 16);
	}
	for (split = 0; split <= 12; split++) {
		memset(h, 0xEE, sizeof(h));
		memset(pl, 0xEE, sizeof(pl));
		memcpy(h, f, split);
		memcpy(pl, f + split, 12 - split);
		pk = (struct rx_frame){ .hdr = h, .hdr_len = split,
		    .payload = pl, .payload_len = 12 - split };
		for (w = 1; w <= 32; w++) {
			for (off = 0; off < 72; off++) {
				bool ok = reorder_field(&pk, off, w, &v);

				if (off + w > 96) {
					ck_assert_msg(!ok, "off %u w %u", off,
					    w);
					continue;
				}
				ck_assert_msg(ok, "off %u w %u", off, w);
				ck_assert_msg(v == ref_bits(f, off, w),
				    "split %u off %u w %u: %#x != %#x", split,
				    off, w, v, ref_bits(f, off, w));
			}
		}
		ck_assert(!reorder_field(&pk, 0, 0, &v));
		ck_assert(!reorder_field(&pk, 0, 33, &v));
		ck_assert(!reorder_field(&pk, 95, 2, &v));
		ck_assert(reorder_field(&pk, 95, 1, &v));
	}
	pk = (struct rx_frame){ .hdr = NULL, .hdr_len = 0 };
	ck_assert(!reorder_field(&pk, 0, 1, &v));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Geometry and creation. */

START_TEST(test_geometry_reference_example)
{
	struct cfg_reorder r = simple_cfg(256, 32, 4, 0);
	const struct reorder_geom *g;
	struct harness *h = malloc(sizeof(*h));

	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT4;
	r.output_type = DAQIRI_DTYPE_FP32;
	r.payload_byte_offset = 64;
	r.payload_bytes = 2048 - 64;
	r.slot_bytes = 0;	/* derived by the plan */
	r.packets_per_batch = 256;
	h_init(h, &r, 1);
	g = reorder_geom(h->p);
	ck_assert_uint_eq(g->in_bytes, 1984);
	ck_assert_uint_eq(g->slot_bytes, 15872);
	ck_assert_uint_eq(g->tensor_bytes, 4063232);
	ck_assert_uint_eq(g->ppb, 256);
	ck_assert_uint_eq(g->id_space, 1u << 24);
	ck_assert_uint_eq(g->window, 4);
	reorder_destroy(h->p);
	tp_fini(&h->tp);
	free(h);
}
END_TEST

static struct reorder_plan *
create_only(const struct cfg_reorder *r, struct tpool *tp)
{
	struct reorder_owner o = tp_owner(tp);

	return reorder_create(r, &o, NULL);
}

START_TEST(test_window_capped_to_half_id_space)
{
	struct cfg_reorder r = simple_cfg(1, 2, 8, 0);
	struct tpool tp;
	struct reorder_plan *p;

	tp_init(&tp, 1, 4, 1);
	/* seq_packets_per_batch: 4 ids -> W 2 */
	p = create_only(&r, &tp);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(reorder_geom(p)->id_space, 4);
	ck_assert_uint_eq(reorder_geom(p)->window, 2);
	reorder_destroy(p);
	/* seq_batch_number with a 2-bit batch field: W <= 2 */
	r.method = CFG_METHOD_SEQ_BATCH_NUMBER;
	r.seq.bit_width = 4;
	r.batch.bit_offset = 8;
	r.batch.bit_width = 2;
	r.packets_per_batch = 4;
	p = create_only(&r, &tp);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(reorder_geom(p)->id_space, 4);
	ck_assert_uint_eq(reorder_geom(p)->window, 2);
	ck_assert_str_eq(reorder_config(p)->name, "t");
	reorder_destroy(p);
	/* one id: W 1 */
	r = simple_cfg(4, 2, 4, 0);
	p = create_only(&r, &tp);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(reorder_geom(p)->id_space, 1);
	ck_assert_uint_eq(reorder_geom(p)->window, 1);
	reorder_destroy(p);
	tp_fini(&tp);
}
END_TEST

START_TEST(test_create_rejects_bad_configs)
{
	struct cfg_reorder r;
	struct tpool tp;
	struct reorder_owner o;

	tp_init(&tp, 1, 64, 16);
	o = tp_owner(&tp);
#define BAD(stmt) do {							\
	r = simple_cfg(16, 32, 4, 0);					\
	stmt;								\
	errno = 0;							\
	ck_assert_ptr_null(reorder_create(&r, &o, NULL));		\
	ck_assert_int_eq(errno, EINVAL);				\
} while (0)
	BAD(r.packets_per_batch = 0);
	BAD(r.packets_per_batch = 12);			/* not 2^k */
	BAD(r.seq.bit_width = 0);
	BAD(r.seq.bit_width = 33);
	BAD(r.seq.bit_width = 3);			/* ppb > 2^seq_bits */
	BAD(r.payload_bytes = 0);
	BAD(r.slot_bytes = 8);			/* not what it derives */
	BAD(r.window = 65);
	BAD(r.method = CFG_METHOD_MAX);
	BAD(r.method = CFG_METHOD_SEQ_BATCH_NUMBER; r.batch.bit_width = 0);
	BAD(r.method = CFG_METHOD_SEQ_BATCH_NUMBER; r.batch.bit_width = 8);
	BAD(r.has_data_types = true; r.input_type = DAQIRI_DTYPE_INT16;
	    r.output_type = DAQIRI_DTYPE_FP32; r.payload_bytes = 3);
	BAD(r.has_data_types = true; r.input_type = DAQIRI_DTYPE_INT16;
	    r.output_type = DAQIRI_DTYPE_INT4; r.slot_bytes = 0);
#undef BAD
	r = simple_cfg(16, 32, 4, 0);
	errno = 0;
	ck_assert_ptr_null(reorder_create(&r, NULL, NULL));
	ck_assert_int_eq(errno, EINVAL);
	reorder_destroy(NULL);
	tp_fini(&tp);
}
END_TEST

START_TEST(test_counter_names)
{
	static const char *const want[REORDER_NCOUNTERS] = {
		"packets_in", "placed", "duplicate", "late", "malformed",
		"no_buffer", "batches_complete", "batches_timeout",
		"batches_evicted", "batches_no_buffer", "resync",
		"missing_slots", "backend_error",
		"batches_backend_error", "incomplete", "batches_incomplete",
	};
	int i;

	for (i = 0; i < REORDER_NCOUNTERS; i++)
		ck_assert_str_eq(reorder_counter_names[i], want[i]);
	ck_assert_str_eq(reorder_backend_cpu.name, "cpu");
}
END_TEST

/* ------------------------------------------------------------------ */
/* The worked examples through a plan. */

/* sequence {128,10}, batch {144,2}: seq 687 -> slot 175 of batch 3. */
START_TEST(test_plan_worked_example_batch_number)
{
	struct cfg_reorder r = simple_cfg(256, 10, 2, 1000);
	struct harness *h = malloc(sizeof(*h));
	struct rx_frame *pk;
	uint8_t *f;
	uint32_t tag = 0xDEADBEEF;

	r.method = CFG_METHOD_SEQ_BATCH_NUMBER;
	r.seq.bit_offset = 128;
	r.batch.bit_offset = 144;
	r.batch.bit_width = 2;
	r.payload_byte_offset = 20;
	h_init(h, &r, 2);
	f = h->frames[0];
	memset(f, 0, FRAME_MAX);
	f[16] = 0xAB;
	f[17] = 0xCD;
	f[18] = 0xC0;
	memcpy(f + 20, &tag, 4);
	pk = &h->pkts[0];
	*pk = (struct rx_frame){ .hdr = f, .hdr_len = 24, .rx_ns = 5 };
	reorder_burst(h->p, pk, 1, 5);
	ck_assert_uint_eq(C(h)->placed, 1);
	reorder_flush(h->p, 10);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 3);
	ck_assert(bit(h->tp.log[0].bitmap, 175));
	ck_assert_uint_eq(h->tp.log[0].d.packets_received, 1);
	ck_assert_uint_eq(slot_tag(&h->tp.log[0], 175), tag);
	ck_assert_uint_eq(slot_tag(&h->tp.log[0], 174), 0);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_HAS_GAPS | DAQIRI_TENSOR_FLUSH);
	h_fini(h);
	free(h);
}
END_TEST

/* sequence {512,32}, ppb 1024: 1025 -> slot 1 of batch 1; 0xFFFFFFFF ->
 * slot 1023 of batch 4194303. */
START_TEST(test_plan_worked_example_packets_per_batch)
{
	struct cfg_reorder r = simple_cfg(1024, 32, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	uint8_t *f;
	uint32_t tag = 7;
	int i;

	r.seq.bit_offset = 512;
	r.payload_byte_offset = 68;
	h_init(h, &r, 2);
	for (i = 0; i < 2; i++) {
		f = h->frames[i];
		memset(f, 0, FRAME_MAX);
		if (i == 0) {
			f[66] = 0x04;
			f[67] = 0x01;
		} else {
			memset(f + 64, 0xFF, 4);
		}
		memcpy(f + 68, &tag, 4);
		h->pkts[i] = (struct rx_frame){ .hdr = f, .hdr_len = 72 };
		reorder_burst(h->p, &h->pkts[i], 1, 0);
		reorder_flush(h->p, 0);
		tag++;
	}
	/* after batch 1, base is 2: 4194303 is 3 behind it mod 2^22, within
	 * W = 4, so it counts as late */
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 1);
	ck_assert(bit(h->tp.log[0].bitmap, 1));
	ck_assert_uint_eq(C(h)->late, 1);
	reorder_destroy(h->p);
	tp_fini(&h->tp);
	/* alone, it opens its batch */
	h_init(h, &r, 2);
	f = h->frames[0];
	memset(f, 0, FRAME_MAX);
	memset(f + 64, 0xFF, 4);
	h->pkts[0] = (struct rx_frame){ .hdr = f, .hdr_len = 72 };
	reorder_burst(h->p, h->pkts, 1, 0);
	reorder_flush(h->p, 0);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 4194303);
	ck_assert(bit(h->tp.log[0].bitmap, 1023));
	ck_assert_uint_eq(h->tp.log[0].d.packets_received, 1);
	h_fini(h);
	free(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Semantics, rule by rule. */

START_TEST(test_in_order_complete_batches)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t b, s;

	h_init(h, &r, 4);
	for (b = 0; b < 3; b++)
		h_batch(h, b, 100 + b);
	ck_assert_uint_eq(h->tp.nlog, 3);
	for (b = 0; b < 3; b++) {
		const struct pub *p = &h->tp.log[b];

		ck_assert_uint_eq(p->d.seq, b);
		ck_assert_uint_eq(p->d.batch_id, b);
		ck_assert_uint_eq(p->d.flags, DAQIRI_TENSOR_COMPLETE);
		ck_assert_uint_eq(p->d.packets_expected, 4);
		ck_assert_uint_eq(p->d.packets_received, 4);
		ck_assert_uint_eq(p->d.bytes, 16);
		ck_assert_uint_eq(p->d.first_rx_ns, 100 + b);
		ck_assert_uint_eq(p->d.last_rx_ns, 100 + b);
		ck_assert_uint_eq(p->d.publish_ns, 100 + b);
		for (s = 0; s < 4; s++)
			ck_assert_uint_eq(slot_tag(p, s), b * 4 + s);
		ck_assert_uint_eq(p->bitmap[0], 0xF);
	}
	ck_assert_uint_eq(C(h)->batches_complete, 3);
	ck_assert_uint_eq(C(h)->placed, 12);
	ck_assert_uint_eq(reorder_next_deadline(h->p), UINT64_MAX);
	h_fini(h);
	free(h);
}
END_TEST

/* Packets of two batches interleaved and reversed: both complete, in
 * order, each slot where its sequence number says. */
START_TEST(test_reordered_within_window)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	static const uint32_t order[] = { 0, 5, 3, 7, 6, 1, 4, 2 };
	unsigned i;

	h_init(h, &r, 4);
	for (i = 0; i < 8; i++)
		h_send(h, order[i], order[i], 10 + i);
	ck_assert_uint_eq(h->tp.nlog, 2);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(slot_tag(&h->tp.log[i / 4], i % 4), i);
	/* batch 1 completed first (at rx 16) but waited for batch 0 */
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 0);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 1);
	ck_assert_uint_eq(h->tp.log[0].d.first_rx_ns, 10);
	ck_assert_uint_eq(h->tp.log[1].d.first_rx_ns, 11);
	ck_assert_uint_eq(h->tp.log[1].d.last_rx_ns, 16);
	ck_assert_uint_eq(h->tp.log[0].d.last_rx_ns, 17);
	ck_assert_uint_eq(h->tp.log[1].d.publish_ns, 17);
	h_fini(h);
	free(h);
}
END_TEST

START_TEST(test_duplicate_dropped_first_wins)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_send(h, 0, 100, 1);
	h_send(h, 0, 999, 2);
	h_send(h, 1, 101, 3);
	h_send(h, 2, 102, 4);
	h_send(h, 3, 103, 5);
	ck_assert_uint_eq(C(h)->duplicate, 1);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(slot_tag(&h->tp.log[0], 0), 100);
	ck_assert_uint_eq(h->tp.log[0].d.last_rx_ns, 5);
	h_fini(h);
	free(h);
}
END_TEST

/* A packet of a batch already published is late; within W of the window,
 * not a resync (unless by time or volume: check_resync.c). */
START_TEST(test_late_packet)
{
	struct cfg_reorder r = simple_cfg(2, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_batch(h, 0, 1);
	h_batch(h, 1, 2);
	h_send(h, 1, 77, 3);		/* batch 0 again: 2 behind base 2 */
	h_send(h, 2, 77, 3);		/* batch 1 */
	ck_assert_uint_eq(C(h)->late, 2);
	ck_assert_uint_eq(C(h)->resync, 0);
	ck_assert_uint_eq(h->tp.nlog, 2);
	h_send(h, 4, 4, 4);		/* batch 2 still opens */
	ck_assert_uint_eq(C(h)->placed, 5);
	h_fini(h);
	free(h);
}
END_TEST

/* Opening a batch W or more ahead of base slides the window: older open
 * batches go out EVICTED, in order; a complete one behind them follows. */
START_TEST(test_slide_evicts_in_order)
{
	struct cfg_reorder r = simple_cfg(2, 16, 3, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 8);
	h_send(h, 0, 0, 1);		/* batch 0 partial */
	h_send(h, 2, 2, 2);		/* batch 1 partial */
	h_send(h, 4, 4, 3);
	h_send(h, 5, 5, 3);		/* batch 2 complete, waits */
	ck_assert_uint_eq(h->tp.nlog, 0);
	h_send(h, 7, 7, 4);		/* batch 3: 3 ahead of base 0 */
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 0);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
	h_send(h, 9, 9, 5);		/* batch 4: evicts 1, then 2 follows */
	ck_assert_uint_eq(h->tp.nlog, 3);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 1);
	ck_assert_uint_eq(h->tp.log[1].d.flags,
	    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(h->tp.log[2].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[2].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(C(h)->batches_evicted, 2);
	ck_assert_uint_eq(C(h)->batches_complete, 1);
	ck_assert_uint_eq(C(h)->missing_slots, 2);
	/* a jump far ahead publishes everything open and leaves a gap */
	h_send(h, 100, 100, 6);		/* batch 50 */
	ck_assert_uint_eq(h->tp.nlog, 5);
	ck_assert_uint_eq(h->tp.log[3].d.batch_id, 3);
	ck_assert_uint_eq(h->tp.log[4].d.batch_id, 4);
	/* the window is now [48, 51): 49 opens, 47 is late */
	h_send(h, 98, 98, 7);
	ck_assert_uint_eq(C(h)->late, 0);
	h_send(h, 94, 94, 7);
	ck_assert_uint_eq(C(h)->late, 1);
	h_send(h, 101, 101, 8);		/* 50 complete, waits behind 49 */
	ck_assert_uint_eq(h->tp.nlog, 5);
	h_send(h, 99, 99, 9);
	ck_assert_uint_eq(h->tp.nlog, 7);
	ck_assert_uint_eq(h->tp.log[5].d.batch_id, 49);
	ck_assert_uint_eq(h->tp.log[5].d.seq, 5);
	ck_assert_uint_eq(h->tp.log[6].d.batch_id, 50);
	ck_assert_uint_eq(h->tp.log[6].d.publish_ns, 9);
	h_fini(h);
	free(h);
}
END_TEST

/* A batch far behind the window means the sender restarted. */
START_TEST(test_resync_on_restart)
{
	struct cfg_reorder r = simple_cfg(2, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_batch(h, 100, 1);
	h_send(h, 202, 202, 2);		/* batch 101 partial */
	h_send(h, 0, 0, 3);		/* batch 0: restart */
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 101);
	ck_assert_uint_eq(h->tp.log[1].d.flags,
	    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(C(h)->batches_evicted, 1);
	h_send(h, 1, 1, 4);
	ck_assert_uint_eq(h->tp.nlog, 3);
	ck_assert_uint_eq(h->tp.log[2].d.batch_id, 0);
	/* the first tensor of the new epoch says so */
	ck_assert_uint_eq(h->tp.log[2].d.flags,
	    DAQIRI_TENSOR_COMPLETE | DAQIRI_TENSOR_RESYNC);
	ck_assert_uint_eq(h->tp.log[2].d.seq, 2);
	ck_assert_uint_eq(C(h)->placed, 5);
	h_fini(h);
	free(h);
}
END_TEST

/* The deadline is fixed at the first packet's arrival + timeout; later
 * packets do not extend it; poll publishes at the deadline exactly. */
START_TEST(test_timeout_fixed_from_first_packet)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 10);	/* 10 us */
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_send(h, 0, 0, 1000);
	ck_assert_uint_eq(reorder_next_deadline(h->p), 11000);
	h_send(h, 1, 1, 9000);
	ck_assert_uint_eq(reorder_next_deadline(h->p), 11000);
	reorder_poll(h->p, 10999);
	ck_assert_uint_eq(h->tp.nlog, 0);
	reorder_poll(h->p, 11000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(h->tp.log[0].d.packets_received, 2);
	ck_assert_uint_eq(h->tp.log[0].d.first_rx_ns, 1000);
	ck_assert_uint_eq(h->tp.log[0].d.last_rx_ns, 9000);
	ck_assert_uint_eq(h->tp.log[0].d.publish_ns, 11000);
	ck_assert_uint_eq(C(h)->batches_timeout, 1);
	ck_assert_uint_eq(C(h)->missing_slots, 2);
	ck_assert_uint_eq(reorder_next_deadline(h->p), UINT64_MAX);
	/* a packet of it now is late */
	h_send(h, 2, 2, 11001);
	ck_assert_uint_eq(C(h)->late, 1);
	h_fini(h);
	free(h);
}
END_TEST

/* A newer batch whose deadline passed waits behind an older one that has
 * not expired; it goes out (TIMEOUT) right after the older one. */
START_TEST(test_timeout_respects_order)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 10);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_batch(h, 0, 0);		/* base is 1 now */
	h_send(h, 4, 4, 1000);		/* batch 2 first: deadline 11000 */
	h_send(h, 2, 2, 5000);		/* batch 1: deadline 15000 */
	ck_assert_uint_eq(reorder_next_deadline(h->p), 15000);
	reorder_poll(h->p, 12000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	h_send(h, 3, 3, 13000);		/* batch 1 completes */
	ck_assert_uint_eq(h->tp.nlog, 3);
	ck_assert_uint_eq(h->tp.log[1].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(h->tp.log[2].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[2].d.flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(h->tp.log[2].d.publish_ns, 13000);
	h_fini(h);
	free(h);
}
END_TEST

/* A burst drains first: a packet for a batch whose deadline passed
 * before the burst is late, not placed. */
START_TEST(test_burst_drains_expired_first)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 1);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_send(h, 0, 0, 0);
	h_frame(h, 0, 1, 1, 500);
	reorder_burst(h->p, h->pkts, 1, 2000);
	ck_assert_uint_eq(C(h)->late, 1);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.publish_ns, 2000);
	h_fini(h);
	free(h);
}
END_TEST

static void
fill_case(enum daqiri_fill fill, uint32_t want_missing)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT16;
	r.output_type = DAQIRI_DTYPE_FP32;
	r.endianness = CFG_ENDIAN_HOST;
	r.slot_bytes = 8;
	r.fill = fill;
	h_init(h, &r, 1);
	h->tp.release_at_publish = true;
	h_send(h, 0, 0x00010002, 1);	/* 2, 1 */
	h_send(h, 2, 0x0003FFFF, 1);	/* -1, 3 */
	reorder_flush(h->p, 2);
	ck_assert_uint_eq(h->tp.nlog, 1);
	{
		const struct pub *p = &h->tp.log[0];
		uint32_t w[8];

		memcpy(w, p->data, 32);
		ck_assert_uint_eq(w[0], 0x40000000);
		ck_assert_uint_eq(w[1], 0x3F800000);
		ck_assert_uint_eq(w[4], 0xBF800000);
		ck_assert_uint_eq(w[5], 0x40400000);
		ck_assert_uint_eq(w[2], want_missing);
		ck_assert_uint_eq(w[3], want_missing);
		ck_assert_uint_eq(w[6], want_missing);
		ck_assert_uint_eq(w[7], want_missing);
		ck_assert_uint_eq(p->bitmap[0], 0x5);
	}
	ck_assert_uint_eq(C(h)->missing_slots, 2);
	h_fini(h);
	free(h);
}

START_TEST(test_fill_zero)
{
	fill_case(DAQIRI_FILL_ZERO, 0);
}
END_TEST

START_TEST(test_fill_nan)
{
	fill_case(DAQIRI_FILL_NAN, CVT_NAN_F32);
}
END_TEST

START_TEST(test_fill_keep)
{
	/* keep leaves the buffer's previous bytes (here its first use) */
	fill_case(DAQIRI_FILL_KEEP, 0xC3C3C3C3u);
}
END_TEST

/* A reload's retune, applied as the worker would between bursts. */
static void
h_tune(struct harness *h, uint32_t timeout_us, enum daqiri_fill fill,
       uint32_t window, uint64_t now)
{
	struct reorder_tune *t = reorder_tune_prepare(h->p, timeout_us, fill,
	    window);

	ck_assert_ptr_nonnull(t);
	reorder_tune_apply(h->p, t, now);
	reorder_tune_free(t);
	check_invariant(reorder_counters(h->p));
}

/* A smaller window publishes the oldest open batches (EVICTED) until the
 * rest fits; a larger one keeps every open batch where it is. Every
 * packet stays counted. */
START_TEST(test_retune_window)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 8);
	h_send(h, 0, 0, 1);		/* batches 0..3, one slot each */
	h_send(h, 2, 2, 1);
	h_send(h, 4, 4, 1);
	h_send(h, 6, 6, 1);
	ck_assert_uint_eq(h->tp.nlog, 0);
	h_tune(h, 0, DAQIRI_FILL_ZERO, 2, 2);
	ck_assert_uint_eq(reorder_geom(h->p)->window, 2);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 0);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 1);
	ck_assert_uint_eq(h->tp.log[1].d.flags,
	    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(C(h)->batches_evicted, 2);
	h_send(h, 5, 5, 3);		/* batch 2 completes */
	ck_assert_uint_eq(h->tp.nlog, 3);
	ck_assert_uint_eq(h->tp.log[2].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[2].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(slot_tag(&h->tp.log[2], 0), 4);
	h_send(h, 3, 3, 4);		/* batch 1: published, within W */
	ck_assert_uint_eq(C(h)->late, 1);
	/* larger: batch 3 stays open and completes in the new ring */
	h_tune(h, 0, DAQIRI_FILL_ZERO, 8, 5);
	ck_assert_uint_eq(reorder_geom(h->p)->window, 8);
	ck_assert_uint_eq(reorder_config(h->p)->window, 8);
	ck_assert_uint_eq(h->tp.nlog, 3);
	h_send(h, 16, 16, 6);		/* batch 8: within 8 of base 3 */
	ck_assert_uint_eq(h->tp.nlog, 3);
	h_send(h, 7, 7, 7);
	ck_assert_uint_eq(h->tp.nlog, 4);
	ck_assert_uint_eq(h->tp.log[3].d.batch_id, 3);
	ck_assert_uint_eq(h->tp.log[3].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(slot_tag(&h->tp.log[3], 0), 6);
	ck_assert_uint_eq(slot_tag(&h->tp.log[3], 1), 7);
	ck_assert_uint_eq(C(h)->packets_in, 8);
	ck_assert_uint_eq(C(h)->placed, 7);
	reorder_flush(h->p, 8);
	ck_assert_uint_eq(h->tp.nlog, 5);
	ck_assert_uint_eq(h->tp.log[4].d.batch_id, 8);
	h_fini(h);
	free(h);
}
END_TEST

/* A new timeout applies to batches opened after the retune; open ones
 * keep their deadline. */
START_TEST(test_retune_timeout)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_send(h, 0, 0, 1000);
	h_tune(h, 10, DAQIRI_FILL_ZERO, 4, 1500);
	ck_assert_uint_eq(reorder_next_deadline(h->p), UINT64_MAX);
	ck_assert_uint_eq(reorder_config(h->p)->timeout_us, 10);
	h_send(h, 1, 1, 2000);		/* batch 0 complete */
	ck_assert_uint_eq(h->tp.nlog, 1);
	h_send(h, 2, 2, 3000);
	ck_assert_uint_eq(reorder_next_deadline(h->p), 13000);
	reorder_poll(h->p, 13000);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	h_fini(h);
	free(h);
}
END_TEST

/* A new fill reaches the backend: the next partial tensor is filled so. */
START_TEST(test_retune_fill)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t w[8];

	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT16;
	r.output_type = DAQIRI_DTYPE_FP32;
	r.endianness = CFG_ENDIAN_HOST;
	r.slot_bytes = 8;
	h_init(h, &r, 1);
	h_tune(h, 0, DAQIRI_FILL_NAN, 4, 1);
	ck_assert_int_eq(reorder_config(h->p)->fill, DAQIRI_FILL_NAN);
	h_send(h, 0, 0x00010002, 1);
	reorder_flush(h->p, 2);
	ck_assert_uint_eq(h->tp.nlog, 1);
	memcpy(w, h->tp.log[0].data, 32);
	ck_assert_uint_eq(w[0], 0x40000000);
	ck_assert_uint_eq(w[2], CVT_NAN_F32);
	ck_assert_uint_eq(w[7], CVT_NAN_F32);
	h_fini(h);
	free(h);
}
END_TEST

START_TEST(test_malformed)
{
	struct cfg_reorder r = simple_cfg(2, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));
	struct rx_frame *pk;

	h_init(h, &r, 2);
	pk = h_frame(h, 0, 0, 0, 1);
	pk->hdr_len = 7;		/* payload 3 bytes */
	reorder_burst(h->p, pk, 1, 1);
	pk->hdr_len = 9;		/* 5 bytes */
	reorder_burst(h->p, pk, 1, 1);
	pk->hdr_len = 1;		/* shorter than the 16-bit field */
	reorder_burst(h->p, pk, 1, 1);
	pk->hdr_len = 0;
	reorder_burst(h->p, pk, 1, 1);
	ck_assert_uint_eq(C(h)->malformed, 4);
	ck_assert_uint_eq(C(h)->packets_in, 4);
	check_invariant(C(h));
	/* nothing opened */
	ck_assert_uint_eq(reorder_next_deadline(h->p), UINT64_MAX);
	reorder_flush(h->p, 2);
	ck_assert_uint_eq(h->tp.nlog, 0);
	h_fini(h);
	free(h);
}
END_TEST

/* Header-data split at every point: the payload may start in either part
 * or straddle both (bounce buffer). */
START_TEST(test_split_frames)
{
	struct cfg_reorder r = simple_cfg(8, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));
	uint8_t hp[8][8], pp[8][8];
	uint32_t s, tag;

	h_init(h, &r, 2);
	for (s = 0; s < 8; s++) {
		uint8_t f[8] = { 0 };

		tag = 0x11223344u + s;
		put_bits(f, 0, 16, s);
		memcpy(f + 4, &tag, 4);
		memset(hp[s], 0xEE, 8);
		memset(pp[s], 0xEE, 8);
		memcpy(hp[s], f, s);
		memcpy(pp[s], f + s, 8 - s);
		h->pkts[s] = (struct rx_frame){ .hdr = hp[s], .hdr_len = s,
		    .payload = pp[s], .payload_len = 8 - s, .rx_ns = 1 };
	}
	/* s = 0: all in payload; hdr_len 8 is exercised elsewhere */
	reorder_burst(h->p, h->pkts, 8, 1);
	ck_assert_uint_eq(h->tp.nlog, 1);
	for (s = 0; s < 8; s++)
		ck_assert_uint_eq(slot_tag(&h->tp.log[0], s), 0x11223344u + s);
	h_fini(h);
	free(h);
}
END_TEST

START_TEST(test_flush_and_destroy_return_buffers)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	int i;

	h_init(h, &r, 4);
	h->tp.release_at_publish = false;
	h_send(h, 0, 0, 1);
	h_send(h, 4, 4, 1);
	h_send(h, 8, 8, 1);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(h->tp.state[i], B_LENT);
	reorder_flush(h->p, 5);
	ck_assert_uint_eq(h->tp.nlog, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(h->tp.log[i].d.flags,
		    DAQIRI_TENSOR_FLUSH | DAQIRI_TENSOR_HAS_GAPS);
		ck_assert_uint_eq(h->tp.log[i].d.batch_id, (uint64_t)i);
		ck_assert_int_eq(h->tp.state[i], B_HELD);
	}
	ck_assert_uint_eq(C(h)->batches_evicted, 3);
	/* after a flush, packets of flushed batches are late */
	h_send(h, 1, 1, 6);
	ck_assert_uint_eq(C(h)->late, 1);
	/* destroy hands open buffers back through put() */
	h_send(h, 12, 12, 7);
	ck_assert_int_eq(h->tp.state[3], B_LENT);
	reorder_destroy(h->p);
	h->p = NULL;
	ck_assert_int_eq(h->tp.state[3], B_FREE);
	ck_assert_int_eq(h->tp.errors, 0);
	tp_fini(&h->tp);
	free(h);
}
END_TEST

/* A 3-bit batch field wraps every 8 batches; in-order and reordered
 * streams go on across many wraps. */
START_TEST(test_batch_id_wrap)
{
	struct cfg_reorder r = simple_cfg(2, 4, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t k, n = 40;

	r.method = CFG_METHOD_SEQ_BATCH_NUMBER;
	r.seq.bit_offset = 0;
	r.seq.bit_width = 4;
	r.batch.bit_offset = 8;
	r.batch.bit_width = 3;
	r.packets_per_batch = 2;
	h_init(h, &r, 4);
	ck_assert_uint_eq(reorder_geom(h->p)->window, 4);
	for (k = 0; k < n; k++) {
		/* slot 1 of batch k+1 before slot 0 of batch k ... */
		uint32_t b0 = k, b1 = k + 1;
		uint8_t *f;

		f = h->frames[0];
		memset(f, 0, FRAME_MAX);
		put_bits(f, 0, 4, (b0 * 2) & 15);
		put_bits(f, 8, 3, b0 & 7);
		memcpy(f + 4, &b0, 4);
		h->pkts[0] = (struct rx_frame){ .hdr = f, .hdr_len = 8 };
		f = h->frames[1];
		memset(f, 0, FRAME_MAX);
		put_bits(f, 0, 4, (b1 * 2 + 1) & 15);
		put_bits(f, 8, 3, b1 & 7);
		memcpy(f + 4, &b1, 4);
		h->pkts[1] = (struct rx_frame){ .hdr = f, .hdr_len = 8 };
		reorder_burst(h->p, h->pkts, k + 1 < n ? 2 : 1, k);
	}
	/* batch 0 never gets slot 1 and is evicted when batch 4 opens; every
	 * batch k > 0 got slot 1 in round k-1 and slot 0 in round k */
	ck_assert_uint_eq(C(h)->resync, 0);
	ck_assert_uint_eq(C(h)->late, 0);
	ck_assert_uint_eq(h->tp.nlog, n);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
	for (k = 0; k < n; k++) {
		ck_assert_uint_eq(h->tp.log[k].d.batch_id, k & 7);
		ck_assert_uint_eq(h->tp.log[k].d.seq, k);
		if (k > 0) {
			ck_assert_uint_eq(h->tp.log[k].d.flags,
			    DAQIRI_TENSOR_COMPLETE);
			ck_assert_uint_eq(slot_tag(&h->tp.log[k], 0), k);
			ck_assert_uint_eq(slot_tag(&h->tp.log[k], 1), k);
		}
	}
	h_fini(h);
	free(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A backend that fails on request, as the CUDA one does after an error. */

static struct {
	int fail_commits;		/* this many next commit()s fail */
	int fail_finishes;		/* ... and finish()es */
	int commits, finishes, fills;
} fb;

static void
fb_place(void *state, const struct reorder_buf *buf, uint32_t slot,
	 const uint8_t *in)
{
	(void)state;
	memcpy((uint8_t *)buf->data + 4 * (uint64_t)slot, in, 4);
}

static int
fb_commit(void *state)
{
	(void)state;
	fb.commits++;
	if (fb.fail_commits > 0) {
		fb.fail_commits--;
		return -EIO;
	}
	return 0;
}

static void
fb_fill(void *state, const struct reorder_buf *buf)
{
	(void)state;
	(void)buf;
	fb.fills++;
}

static int
fb_finish(void *state, const struct reorder_buf *buf)
{
	(void)state;
	(void)buf;
	fb.finishes++;
	if (fb.fail_finishes > 0) {
		fb.fail_finishes--;
		return -EIO;
	}
	return 0;
}

static const struct reorder_backend fail_backend = {
	.name = "failing", .place = fb_place, .commit = fb_commit,
	.fill = fb_fill, .finish = fb_finish,
};

static void
h_init_failing(struct harness *h, const struct cfg_reorder *r, int nbufs)
{
	struct reorder_owner o;

	memset(&fb, 0, sizeof(fb));
	memset(h, 0, sizeof(*h));
	h->cfg = *r;
	o = tp_owner(&h->tp);
	h->p = reorder_create(r, &o, &fail_backend);
	ck_assert_ptr_nonnull(h->p);
	tp_init(&h->tp, nbufs, reorder_geom(h->p)->tensor_bytes,
	    r->packets_per_batch);
	h->tp.release_at_publish = true;
}

/* Issue 7 item 5: a failed commit() was ignored and the batch published
 * COMPLETE with its packets counted placed. Now the batch is dropped, its
 * buffer returns, and the packets move to backend_error. */
START_TEST(test_backend_commit_error_drops_batch)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init_failing(h, &r, 2);
	h_send(h, 0, 0, 1);
	h_send(h, 1, 1, 1);
	ck_assert_uint_eq(C(h)->placed, 2);
	fb.fail_commits = 1;
	h_send(h, 2, 2, 2);		/* its commit fails */
	ck_assert_uint_eq(C(h)->placed, 2);
	ck_assert_uint_eq(C(h)->backend_error, 1);
	h_send(h, 2, 2, 2);		/* a duplicate is still a duplicate */
	ck_assert_uint_eq(C(h)->duplicate, 1);
	h_send(h, 3, 3, 3);		/* completes the failed batch */
	ck_assert_uint_eq(C(h)->backend_error, 2);
	ck_assert_uint_eq(h->tp.nlog, 0);	/* not published */
	ck_assert_uint_eq(C(h)->batches_backend_error, 1);
	ck_assert_uint_eq(C(h)->batches_complete, 0);
	ck_assert_int_eq(h->tp.state[0], B_FREE);	/* buffer returned */
	/* the stream goes on: the next batch is published, seq 0 */
	h_batch(h, 1, 4);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.seq, 0);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 1);
	ck_assert_uint_eq(h->tp.log[0].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(C(h)->batches_complete, 1);
	ck_assert_uint_eq(C(h)->placed, 6);
	check_invariant(C(h));
	h_fini(h);
	free(h);
}
END_TEST

/* A commit failing in a burst fails every batch written to in it, and
 * only those. */
START_TEST(test_backend_commit_error_fails_batches_of_burst)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init_failing(h, &r, 4);
	h_send(h, 0, 0, 1);		/* batch 0, committed fine */
	h_frame(h, 0, 2, 2, 2);		/* batch 1 */
	h_frame(h, 1, 4, 4, 2);		/* batch 2 */
	fb.fail_commits = 1;
	reorder_burst(h->p, h->pkts, 2, 2);
	check_invariant(C(h));
	ck_assert_uint_eq(C(h)->backend_error, 2);
	h_send(h, 1, 1, 3);		/* batch 0 complete: published */
	h_send(h, 3, 3, 3);		/* batch 1 complete: dropped */
	h_send(h, 5, 5, 3);		/* batch 2 complete: dropped */
	ck_assert_uint_eq(C(h)->batches_backend_error, 2);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 0);
	ck_assert_uint_eq(h->tp.log[0].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(C(h)->placed, 2);
	ck_assert_uint_eq(C(h)->backend_error, 4);
	h_fini(h);
	free(h);
}
END_TEST

/* missing_action drop: only complete tensors are published. A batch
 * that did not complete -- its deadline passed, a slide or a flush
 * pushed it out -- goes back to the pool unfilled, counts once in
 * batches_incomplete and its packets in incomplete (which stay in
 * placed); published tensors keep a gapless seq, the dropped batches
 * show as gaps in batch_id. */
START_TEST(test_missing_drop_publishes_only_complete)
{
	struct cfg_reorder r = simple_cfg(4, 16, 2, 100);	/* 100 us */
	struct harness *h = malloc(sizeof(*h));
	uint64_t in_tensors = 0;
	size_t i;

	r.missing_action = CFG_MISSING_DROP;
	h_init(h, &r, 4);
	h->tp.release_at_publish = false;
	/* batch 0: two of four slots, then its deadline */
	h_send(h, 0, 0, 1000);
	h_send(h, 1, 1, 1000);
	ck_assert_int_eq(h->tp.state[0], B_LENT);
	reorder_poll(h->p, 1000 + 100000);
	check_invariant(C(h));
	ck_assert_uint_eq(h->tp.nlog, 0);
	ck_assert_int_eq(h->tp.state[0], B_FREE);	/* back, unpublished */
	ck_assert_uint_eq(C(h)->batches_incomplete, 1);
	ck_assert_uint_eq(C(h)->incomplete, 2);
	ck_assert_uint_eq(C(h)->placed, 2);
	ck_assert_uint_eq(C(h)->batches_timeout, 0);
	ck_assert_uint_eq(C(h)->missing_slots, 0);
	/* batch 1 complete: published first, seq 0 */
	h_batch(h, 1, 200000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.seq, 0);
	ck_assert_uint_eq(h->tp.log[0].d.batch_id, 1);
	ck_assert_uint_eq(h->tp.log[0].d.flags, DAQIRI_TENSOR_COMPLETE);
	/* a slide pushes partial batch 2 out: dropped, not EVICTED */
	h_send(h, 8, 8, 200001);	/* batch 2, one slot */
	h_send(h, 12, 12, 200002);	/* batch 3, one slot */
	h_send(h, 16, 16, 200003);	/* batch 4: 2 ahead of base 2 */
	check_invariant(C(h));
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(C(h)->batches_incomplete, 2);
	ck_assert_uint_eq(C(h)->incomplete, 3);
	ck_assert_uint_eq(C(h)->batches_evicted, 0);
	/* batch 3 completes: seq 1, no gap in seq */
	h_send(h, 13, 13, 200004);
	h_send(h, 14, 14, 200004);
	h_send(h, 15, 15, 200004);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.seq, 1);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 3);
	ck_assert_uint_eq(h->tp.log[1].d.flags, DAQIRI_TENSOR_COMPLETE);
	/* a flush drops partial batch 4 too */
	reorder_flush(h->p, 200005);
	check_invariant(C(h));
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(C(h)->batches_incomplete, 3);
	ck_assert_uint_eq(C(h)->incomplete, 4);
	ck_assert_uint_eq(C(h)->batches_complete, 2);
	/* every buffer not held by the consumer is free again */
	for (i = 0; i < 4; i++)
		ck_assert_int_ne(h->tp.state[i], B_LENT);
	/* placed = packets in published tensors + incomplete */
	for (i = 0; i < h->tp.nlog; i++) {
		in_tensors += h->tp.log[i].d.packets_received;
		ck_assert_uint_eq(h->tp.log[i].d.packets_received, 4);
	}
	ck_assert_uint_eq(C(h)->placed, in_tensors + C(h)->incomplete);
	ck_assert_uint_eq(C(h)->packets_in, 12);
	h_fini(h);
	free(h);
}
END_TEST

/* A dropped batch takes no seq and no RESYNC mark: the first tensor
 * published after a resync carries it. */
START_TEST(test_missing_drop_keeps_resync_mark)
{
	struct cfg_reorder r = simple_cfg(2, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));

	r.missing_action = CFG_MISSING_DROP;
	h_init(h, &r, 4);
	h_batch(h, 100, 1);		/* seq 0 */
	h_send(h, 202, 202, 2);		/* batch 101 partial */
	h_send(h, 0, 0, 3);		/* restart: 101 dropped, 0 opens */
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->batches_incomplete, 1);
	h_send(h, 4, 4, 4);		/* batch 2: slides 0 out, dropped */
	ck_assert_uint_eq(C(h)->batches_incomplete, 2);
	ck_assert_uint_eq(h->tp.nlog, 1);
	h_send(h, 5, 5, 5);		/* batch 2 complete */
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.seq, 1);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[1].d.flags,
	    DAQIRI_TENSOR_COMPLETE | DAQIRI_TENSOR_RESYNC);
	ck_assert_uint_eq(C(h)->incomplete, 2);
	ck_assert_uint_eq(C(h)->placed, 6);
	h_fini(h);
	free(h);
}
END_TEST

/* A batch that failed in the backend is counted there, not as
 * incomplete, whatever missing_action says. */
START_TEST(test_missing_drop_backend_error_first)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 100);
	struct harness *h = malloc(sizeof(*h));

	r.missing_action = CFG_MISSING_DROP;
	h_init_failing(h, &r, 2);
	h_send(h, 0, 0, 1000);
	fb.fail_commits = 1;
	h_send(h, 1, 1, 1000);		/* its commit fails the batch */
	reorder_poll(h->p, 1000 + 100000);
	check_invariant(C(h));
	ck_assert_uint_eq(C(h)->batches_backend_error, 1);
	ck_assert_uint_eq(C(h)->batches_incomplete, 0);
	ck_assert_uint_eq(C(h)->incomplete, 0);
	ck_assert_int_eq(fb.fills, 0);	/* nothing filled for a drop */
	ck_assert_uint_eq(h->tp.nlog, 0);
	h_fini(h);
	free(h);
}
END_TEST

/* missing_action changes live: a batch open at the reload is finished
 * by the new one. */
START_TEST(test_missing_retune_live)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 100);
	struct harness *h = malloc(sizeof(*h));
	struct reorder_tune *t;

	h_init(h, &r, 4);
	h_send(h, 0, 0, 1000);
	t = reorder_tune_prepare(h->p, 100, DAQIRI_FILL_ZERO, 4);
	ck_assert_ptr_nonnull(t);
	reorder_tune_set_missing(t, CFG_MISSING_DROP);
	reorder_tune_apply(h->p, t, 1001);
	reorder_tune_free(t);
	ck_assert_int_eq(reorder_config(h->p)->missing_action,
	    CFG_MISSING_DROP);
	reorder_poll(h->p, 1000 + 100000);
	ck_assert_uint_eq(h->tp.nlog, 0);
	ck_assert_uint_eq(C(h)->batches_incomplete, 1);
	/* and back: partial batches are published with their gaps again */
	t = reorder_tune_prepare(h->p, 100, DAQIRI_FILL_ZERO, 4);
	ck_assert_ptr_nonnull(t);
	reorder_tune_set_missing(t, CFG_MISSING_PASSTHROUGH);
	reorder_tune_apply(h->p, t, 200000);
	reorder_tune_free(t);
	h_send(h, 4, 4, 200000);
	reorder_poll(h->p, 200000 + 100000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.seq, 0);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(C(h)->batches_timeout, 1);
	check_invariant(C(h));
	h_fini(h);
	free(h);
}
END_TEST

/* A partial batch whose fill cannot be committed, and a batch whose
 * finish() fails, are dropped too; missing_slots and the timeout count
 * only what was published. */
START_TEST(test_backend_fill_and_finish_errors)
{
	struct cfg_reorder r = simple_cfg(4, 16, 4, 100);
	struct harness *h = malloc(sizeof(*h));

	h_init_failing(h, &r, 2);
	h_send(h, 0, 0, 1000);
	h_send(h, 1, 1, 1000);
	fb.fail_commits = 1;		/* the commit after the fill */
	reorder_poll(h->p, 1000 + 100000);
	check_invariant(C(h));
	ck_assert_int_eq(fb.fills, 1);
	ck_assert_uint_eq(h->tp.nlog, 0);
	ck_assert_uint_eq(C(h)->batches_backend_error, 1);
	ck_assert_uint_eq(C(h)->batches_timeout, 0);
	ck_assert_uint_eq(C(h)->missing_slots, 0);
	ck_assert_uint_eq(C(h)->placed, 2);	/* their writes succeeded */
	fb.fail_finishes = 1;
	h_batch(h, 1, 200000);
	ck_assert_uint_eq(h->tp.nlog, 0);
	ck_assert_uint_eq(C(h)->batches_backend_error, 2);
	ck_assert_int_eq(h->tp.state[0], B_FREE);
	ck_assert_int_eq(h->tp.state[1], B_FREE);
	h_batch(h, 2, 300000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.seq, 0);
	ck_assert_uint_eq(h->tp.log[0].d.flags, DAQIRI_TENSOR_COMPLETE);
	check_invariant(C(h));
	h_fini(h);
	free(h);
}
END_TEST

START_TEST(test_no_buffer_batch_keeps_its_place)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 1);
	h->tp.release_at_publish = false;
	h_send(h, 0, 0, 1);		/* batch 0 gets the only buffer */
	h_send(h, 2, 2, 2);		/* batch 1: none */
	h_send(h, 3, 3, 2);
	h_send(h, 1, 1, 3);		/* batch 0 completes, published */
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(C(h)->batches_no_buffer, 1);
	ck_assert_uint_eq(C(h)->no_buffer, 2);
	tp_release_oldest(&h->tp);
	h_send(h, 3, 3, 4);		/* still batch 1: counted, no retry */
	ck_assert_uint_eq(C(h)->no_buffer, 3);
	ck_assert_uint_eq(C(h)->batches_no_buffer, 1);
	h_send(h, 4, 4, 5);		/* batch 2 gets the buffer */
	h_send(h, 5, 5, 5);
	ck_assert_uint_eq(h->tp.nlog, 1);	/* waits behind batch 1 */
	reorder_flush(h->p, 6);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[1].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(h->tp.log[1].d.seq, 1);
	ck_assert_uint_eq(slot_tag(&h->tp.log[1], 0), 4);
	h_fini(h);
	free(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Regressions: one per failure of the reference library. */

/* One lost packet must not shift later batches: batch 1 lacks a slot,
 * batches 2.. are whole and exactly where they belong. */
START_TEST(test_regress_loss_does_not_shift_batches)
{
	struct cfg_reorder r = simple_cfg(4, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t b, s;

	h_init(h, &r, 4);
	for (b = 0; b < 6; b++)
		for (s = 0; s < 4; s++)
			if (!(b == 1 && s == 2))
				h_send(h, b * 4 + s, b * 4 + s, b);
	reorder_flush(h->p, 10);
	ck_assert_uint_eq(h->tp.nlog, 6);
	for (b = 0; b < 6; b++) {
		const struct pub *p = &h->tp.log[b];

		ck_assert_uint_eq(p->d.batch_id, b);
		for (s = 0; s < 4; s++) {
			if (b == 1 && s == 2) {
				ck_assert(!bit(p->bitmap, s));
				ck_assert_uint_eq(slot_tag(p, s), 0);
			} else {
				ck_assert(bit(p->bitmap, s));
				ck_assert_uint_eq(slot_tag(p, s), b * 4 + s);
			}
		}
		ck_assert_uint_eq(p->d.flags, b == 1 ?
		    (DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS) : DAQIRI_TENSOR_COMPLETE);
	}
	ck_assert_uint_eq(C(h)->missing_slots, 1);
	h_fini(h);
	free(h);
}
END_TEST

/* ppb packets with one duplicate and one missing slot: not complete. */
START_TEST(test_regress_duplicate_does_not_complete_batch)
{
	struct cfg_reorder r = simple_cfg(4, 16, 2, 5);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_send(h, 0, 0, 0);
	h_send(h, 1, 1, 0);
	h_send(h, 1, 55, 0);
	h_send(h, 3, 3, 0);
	ck_assert_uint_eq(C(h)->packets_in, 4);
	ck_assert_uint_eq(h->tp.nlog, 0);
	reorder_poll(h->p, 5000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(h->tp.log[0].d.packets_received, 3);
	ck_assert_uint_eq(slot_tag(&h->tp.log[0], 1), 1);
	ck_assert_uint_eq(C(h)->duplicate, 1);
	ck_assert_uint_eq(C(h)->batches_complete, 0);
	h_fini(h);
	free(h);
}
END_TEST

/* A buffer reused for a partial batch shows zeros, not its last use. */
START_TEST(test_regress_missing_slots_zero_not_stale)
{
	struct cfg_reorder r = simple_cfg(4, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t s;

	h_init(h, &r, 1);
	h_batch(h, 0, 0);			/* fills buffer 0 */
	h_send(h, 4, 0xAAAA, 1);		/* batch 1, slot 0 only */
	reorder_flush(h->p, 2);
	ck_assert_uint_eq(h->tp.nlog, 2);
	ck_assert_uint_eq(h->tp.log[1].d.buf_index, 0);
	ck_assert_uint_eq(slot_tag(&h->tp.log[1], 0), 0xAAAA);
	for (s = 1; s < 4; s++) {
		ck_assert_uint_eq(slot_tag(&h->tp.log[1], s), 0);
		ck_assert(!bit(h->tp.log[1].bitmap, s));
	}
	ck_assert_uint_eq(h->tp.log[1].bitmap[0], 1);
	h_fini(h);
	free(h);
}
END_TEST

/* A full pool with timeout 0: batches are dropped whole and counted, the
 * stream keeps moving, and it recovers once a buffer is released. */
START_TEST(test_regress_full_pool_drops_and_recovers)
{
	struct cfg_reorder r = simple_cfg(2, 16, 2, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t b;

	h_init(h, &r, 1);
	h->tp.release_at_publish = false;
	h_batch(h, 0, 0);			/* the consumer holds it */
	ck_assert_uint_eq(h->tp.nlog, 1);
	for (b = 1; b < 20; b++)
		h_batch(h, b, b);
	ck_assert_uint_eq(C(h)->batches_no_buffer, 19);
	ck_assert_uint_eq(C(h)->no_buffer, 38);
	ck_assert_uint_eq(h->tp.nlog, 1);
	tp_release_oldest(&h->tp);
	/* batch 18 and 19 are still open without buffers: 20 opens when 21
	 * slides 18 out, then batches flow again */
	for (b = 20; b < 26; b++) {
		h_batch(h, b, b);
		tp_release_oldest(&h->tp);
	}
	ck_assert_uint_ge(h->tp.nlog, 4);
	ck_assert_uint_eq(h->tp.log[1].d.batch_id, 20);
	ck_assert_uint_eq(h->tp.log[1].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(h->tp.log[1].d.seq, 1);
	check_invariant(C(h));
	h_fini(h);
	free(h);
}
END_TEST

/* The reference library never resynchronises: here a restarted sender is
 * followed at once. */
START_TEST(test_regress_restarted_sender_is_followed)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 0);
	struct harness *h = malloc(sizeof(*h));
	uint32_t b;

	h_init(h, &r, 4);
	for (b = 5000; b < 5003; b++)
		h_batch(h, b, 1);
	for (b = 0; b < 3; b++)
		h_batch(h, b, 2);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(h->tp.nlog, 6);
	ck_assert_uint_eq(h->tp.log[3].d.batch_id, 0);
	ck_assert_uint_eq(h->tp.log[3].d.flags,
	    DAQIRI_TENSOR_COMPLETE | DAQIRI_TENSOR_RESYNC);
	ck_assert_uint_eq(h->tp.log[5].d.batch_id, 2);
	ck_assert_uint_eq(h->tp.log[5].d.flags, DAQIRI_TENSOR_COMPLETE);
	h_fini(h);
	free(h);
}
END_TEST

/* The timeout runs from the packet's arrival (rx_ns), not from when the
 * plan happened to see it. */
START_TEST(test_regress_timeout_from_arrival_not_dequeue)
{
	struct cfg_reorder r = simple_cfg(2, 16, 4, 100);
	struct harness *h = malloc(sizeof(*h));

	h_init(h, &r, 4);
	h_frame(h, 0, 0, 0, 1000);		/* arrived at 1000 */
	reorder_burst(h->p, h->pkts, 1, 60000);	/* handled at 60000 */
	ck_assert_uint_eq(reorder_next_deadline(h->p), 101000);
	reorder_poll(h->p, 101000);
	ck_assert_uint_eq(h->tp.nlog, 1);
	ck_assert_uint_eq(h->tp.log[0].d.first_rx_ns, 1000);
	h_fini(h);
	free(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Property test: the plan against an obviously-correct model. */

#define M_MAXPPB	8
#define M_MAXOPEN	64
#define M_MAXSLOT	(12 * 8)
#define M_MAXT		(M_MAXPPB * M_MAXSLOT)

struct rng {
	uint64_t s;
};

static uint32_t
rnd(struct rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static uint32_t
rndn(struct rng *r, uint32_t n)
{
	return n ? rnd(r) % n : 0;
}

/* 1 with probability per/1000 */
static bool
chance(struct rng *r, uint32_t per_mille)
{
	return rndn(r, 1000) < per_mille;
}

struct mbatch {
	uint64_t id;
	bool nobuf;
	int buf;
	bool present[M_MAXPPB];
	uint32_t received;
	uint64_t first, last, deadline;
};

struct mpub {
	struct daqiri_desc d;
	uint64_t bitmap;
	uint8_t data[M_MAXT];
};

/* The model: ids as plain integers below S, open batches in a small
 * unsorted list, buffers as a little array, everything by linear search. */
struct model {
	/* config */
	uint64_t S;
	uint32_t W, ppb, in_bytes, slot_bytes;
	uint64_t timeout_ns;
	enum daqiri_dtype in, out;
	enum cfg_endian en;
	enum daqiri_fill fill;
	bool drop;			/* missing_action drop */
	const struct cfg_reorder *cfg;
	/* state */
	bool started;
	uint64_t base;
	struct mbatch open[M_MAXOPEN];
	int nopen;
	int nbufs;
	int bstate[MAXBUFS];
	uint8_t bdata[MAXBUFS][M_MAXT];
	uint64_t next_seq;
	uint32_t late_run;		/* late packets in a row */
	bool mark_resync;		/* the next tensor starts an epoch */
	struct reorder_counters c;
	struct mpub *pubs;
	size_t npubs, cap;
};

static int64_t
m_sdiff(const struct model *m, uint64_t a, uint64_t b)
{
	uint64_t d = a >= b ? a - b : a + m->S - b;

	if (2 * d > m->S)
		return (int64_t)d - (int64_t)m->S;
	return (int64_t)d;
}

static uint32_t
m_bits(const uint8_t *f, uint32_t len, uint32_t off, uint32_t w, bool *ok)
{
	if ((uint64_t)off + w > (uint64_t)len * 8) {
		*ok = false;
		return 0;
	}
	return ref_bits(f, off, w);
}

/* Index into m->open of the oldest open batch, or -1. */
static int
m_oldest(const struct model *m)
{
	int i, best = -1;

	for (i = 0; i < m->nopen; i++)
		if (best < 0 || m_sdiff(m, m->open[i].id, m->base) <
		    m_sdiff(m, m->open[best].id, m->base))
			best = i;
	return best;
}

static void
m_publish(struct model *m, int i, uint32_t cause, uint64_t now)
{
	struct mbatch b = m->open[i];
	struct mpub *p;
	uint32_t s;

	m->open[i] = m->open[--m->nopen];
	m->base = (b.id + 1) % m->S;
	if (b.nobuf)
		return;
	if (m->drop && b.received != m->ppb) {
		/* back to the pool unpublished; its packets were placed */
		m->c.batches_incomplete++;
		m->c.incomplete += b.received;
		m->bstate[b.buf] = B_FREE;
		return;
	}
	if (m->npubs == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->pubs = realloc(m->pubs, m->cap * sizeof(*m->pubs));
	}
	p = &m->pubs[m->npubs++];
	memset(p, 0, sizeof(*p));
	if (b.received == m->ppb) {
		p->d.flags = DAQIRI_TENSOR_COMPLETE;
		m->c.batches_complete++;
	} else {
		p->d.flags = DAQIRI_TENSOR_HAS_GAPS | cause;
		if (cause == DAQIRI_TENSOR_TIMEOUT)
			m->c.batches_timeout++;
		else
			m->c.batches_evicted++;
		m->c.missing_slots += m->ppb - b.received;
		for (s = 0; s < m->ppb; s++)
			if (!b.present[s])
				cvt_fill_slot(m->out, m->fill,
				    m->bdata[b.buf] + s * m->slot_bytes,
				    m->slot_bytes);
	}
	for (s = 0; s < m->ppb; s++)
		if (b.present[s])
			p->bitmap |= 1ull << s;
	p->d.buf_index = (uint32_t)b.buf;
	p->d.seq = m->next_seq++;
	p->d.batch_id = b.id;
	p->d.packets_expected = m->ppb;
	p->d.packets_received = b.received;
	p->d.bytes = (uint64_t)m->ppb * m->slot_bytes;
	p->d.first_rx_ns = b.first;
	p->d.last_rx_ns = b.last;
	p->d.publish_ns = now;
	if (m->mark_resync)
		p->d.flags |= DAQIRI_TENSOR_RESYNC;
	m->mark_resync = false;
	memcpy(p->data, m->bdata[b.buf], m->ppb * m->slot_bytes);
	m->bstate[b.buf] = B_HELD;
}

static void
m_drain(struct model *m, uint64_t now)
{
	int i;

	while ((i = m_oldest(m)) >= 0) {
		if (!m->open[i].nobuf && m->open[i].received == m->ppb)
			m_publish(m, i, 0, now);
		else if (m->open[i].deadline <= now)
			m_publish(m, i, DAQIRI_TENSOR_TIMEOUT, now);
		else
			break;
	}
}

static void
m_publish_all(struct model *m, uint32_t cause, uint64_t now)
{
	int i;

	while ((i = m_oldest(m)) >= 0)
		m_publish(m, i, cause, now);
}

/* One packet: the frame flattened, f[0..len). */
static void
m_packet(struct model *m, const uint8_t *f, uint32_t len, uint64_t rx,
	 uint64_t now)
{
	const struct cfg_reorder *r = m->cfg;
	bool ok = true;
	uint32_t seq, slot;
	uint64_t b;
	int64_t d;
	int i, j;
	struct mbatch *mb = NULL;

	m->c.packets_in++;
	seq = m_bits(f, len, r->seq.bit_offset, r->seq.bit_width, &ok);
	if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER)
		b = m_bits(f, len, r->batch.bit_offset, r->batch.bit_width,
		    &ok) % m->S;
	else
		b = (seq / m->ppb) % m->S;
	if (!ok || len < r->payload_byte_offset ||
	    len - r->payload_byte_offset != m->in_bytes) {
		m->c.malformed++;
		return;
	}
	slot = seq % m->ppb;
	if (!m->started) {
		m->started = true;
		m->base = b;
	}
	d = m_sdiff(m, b, m->base);
	/* (resync by time is off: these configs have no resync_after_us;
	 * check_resync.c tests it) */
	if (d < 0 && -d <= (int64_t)m->W &&
	    ++m->late_run < (m->ppb > 8 ? m->ppb : 8)) {
		m->c.late++;
		return;
	}
	if (d >= 0)
		m->late_run = 0;
	if (d < 0) {
		m->c.resync++;
		m->late_run = 0;
		m_publish_all(m, DAQIRI_TENSOR_EVICTED, now);
		m->mark_resync = true;
		m->base = b;
	} else if (d >= (int64_t)m->W) {
		/* slide by k: b becomes the window's newest id; open batches
		 * less than k after the old base go out */
		uint64_t orig = m->base, k = (uint64_t)d - m->W + 1;

		while ((i = m_oldest(m)) >= 0 &&
		    m_sdiff(m, m->open[i].id, orig) < (int64_t)k)
			m_publish(m, i, DAQIRI_TENSOR_EVICTED, now);
		m->base = (orig + k) % m->S;
	}
	for (i = 0; i < m->nopen; i++)
		if (m->open[i].id == b)
			mb = &m->open[i];
	if (mb == NULL) {
		mb = &m->open[m->nopen++];
		memset(mb, 0, sizeof(*mb));
		mb->id = b;
		mb->first = rx;
		mb->last = rx;
		mb->deadline = m->timeout_ns ? rx + m->timeout_ns : UINT64_MAX;
		mb->buf = -1;
		for (j = 0; j < m->nbufs; j++) {
			if (m->bstate[j] == B_FREE) {
				mb->buf = j;
				m->bstate[j] = B_LENT;
				break;
			}
		}
		mb->nobuf = mb->buf < 0;
		if (mb->nobuf)
			m->c.batches_no_buffer++;
	}
	if (mb->nobuf) {
		m->c.no_buffer++;
		return;
	}
	if (mb->present[slot]) {
		m->c.duplicate++;
		return;
	}
	mb->present[slot] = true;
	mb->received++;
	mb->last = rx;
	cvt_slot_scalar(m->in, m->out, m->en, f + r->payload_byte_offset,
	    m->in_bytes, m->bdata[mb->buf] + slot * m->slot_bytes);
	m->c.placed++;
}

static uint64_t
m_next_deadline(const struct model *m)
{
	int i = m_oldest(m);

	return i < 0 ? UINT64_MAX : m->open[i].deadline;
}

/* A random stream: config, frames, delivery. */

struct rframe {
	uint8_t f[FRAME_MAX];
	uint32_t len;
	uint64_t rx;
};

struct pstream {
	uint64_t seed;
	struct cfg_reorder cfg;
	uint32_t ppb, sbits, bbits;
	int nbufs, hold_max;
	bool calm;			/* few restarts, enough buffers */
	struct rframe *fr;
	int nfr;
};

static void
random_config(struct pstream *ps, struct rng *g)
{
	static const enum daqiri_dtype ins[] = {
		DAQIRI_DTYPE_RAW, DAQIRI_DTYPE_INT4, DAQIRI_DTYPE_INT8,
		DAQIRI_DTYPE_INT16, DAQIRI_DTYPE_INT32,
	};
	static const enum daqiri_dtype outs[] = {
		DAQIRI_DTYPE_FP16, DAQIRI_DTYPE_BF16, DAQIRI_DTYPE_FP32,
		DAQIRI_DTYPE_FP64, DAQIRI_DTYPE_INT32,
	};
	static const uint32_t timeouts[] = { 0, 1, 3, 10, 50 };
	struct cfg_reorder *r = &ps->cfg;
	uint32_t p = rndn(g, 4), hdr_bits, elems;

	memset(r, 0, sizeof(*r));
	strcpy(r->name, "prop");
	ps->ppb = 1u << p;
	r->packets_per_batch = ps->ppb;
	if (chance(g, 500)) {
		r->method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
		ps->sbits = chance(g, 100) ? 32 : p + rndn(g, 7);
		if (ps->sbits == 0)
			ps->sbits = 1;
		if (ps->sbits < p)
			ps->sbits = p;
	} else {
		r->method = CFG_METHOD_SEQ_BATCH_NUMBER;
		ps->bbits = chance(g, 50) ? 32 - p : 1 + rndn(g, 5);
		ps->sbits = ps->bbits + p;
	}
	r->seq.bit_offset = rndn(g, 24);
	r->seq.bit_width = ps->sbits;
	hdr_bits = r->seq.bit_offset + ps->sbits;
	if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
		r->batch.bit_offset = hdr_bits + rndn(g, 9);
		r->batch.bit_width = ps->bbits;
		hdr_bits = r->batch.bit_offset + ps->bbits;
	}
	r->payload_byte_offset = (hdr_bits + 7) / 8 + rndn(g, 3);
	r->has_data_types = false;
	r->input_type = ins[rndn(g, 5)];
	elems = 1 + rndn(g, 12);
	if (r->input_type == DAQIRI_DTYPE_RAW) {
		r->payload_bytes = elems;
		r->output_type = DAQIRI_DTYPE_RAW;
		r->slot_bytes = elems;
	} else {
		r->has_data_types = true;
		r->output_type = outs[rndn(g, 5)];
		r->endianness = rndn(g, 2);
		if (r->input_type == DAQIRI_DTYPE_INT4)
			elems += elems & 1;
		r->payload_bytes = r->input_type == DAQIRI_DTYPE_INT4 ? elems / 2 :
		    r->input_type == DAQIRI_DTYPE_INT8 ? elems :
		    r->input_type == DAQIRI_DTYPE_INT16 ? elems * 2 : elems * 4;
		r->slot_bytes = (uint64_t)elems * cvt_out_size(r->output_type);
	}
	r->window = 1 + rndn(g, 6);
	r->fill = rndn(g, 3);
	/* a quarter of the streams drop incomplete batches (from the seed,
	 * so every other choice stays what it was) */
	r->missing_action = ps->seed % 4 == 3 ? CFG_MISSING_DROP :
	    CFG_MISSING_PASSTHROUGH;
	r->timeout_us = timeouts[rndn(g, 5)];
	ps->hold_max = (int)rndn(g, 3);
	ps->calm = chance(g, 300);
	if (ps->calm)
		ps->nbufs = (int)r->window + 2 + ps->hold_max;
	else
		ps->nbufs = 1 + (int)rndn(g, r->window + 3);
	if (ps->nbufs > MAXBUFS)
		ps->nbufs = MAXBUFS;
}

/* Frames of a stream: batches in order with loss, duplicates, local
 * shuffles, late repeats, restarts, malformed lengths, time jumps. */
static void
random_frames(struct pstream *ps, struct rng *g)
{
	const struct cfg_reorder *r = &ps->cfg;
	int cap = 600, n = 0, i, j, m;
	uint64_t t = 1000 + rndn(g, 1000), logical, idspace;
	uint32_t shuffle = 1 + rndn(g, 3 * ps->ppb + 2);
	uint32_t loss = rndn(g, 4) * 40, dup = rndn(g, 3) * 30;
	uint32_t late = rndn(g, 3) * 10, bad = rndn(g, 2) * 20;
	int len_target = 40 + (int)rndn(g, 400);
	struct rframe tmp;

	idspace = r->method == CFG_METHOD_SEQ_BATCH_NUMBER ?
	    (1ull << ps->bbits) : ((1ull << ps->sbits) / ps->ppb);
	ps->fr = calloc((size_t)cap, sizeof(*ps->fr));
	logical = ((uint64_t)rnd(g) << 32 | rnd(g)) % (idspace * ps->ppb);
	while (n < len_target && n + 4 < cap) {
		struct rframe *fr = &ps->fr[n];
		uint64_t batch, seq;
		uint32_t slot, k;

		/* restart: jump to an arbitrary point of the id space */
		if (!ps->calm && chance(g, 8))
			logical = ((uint64_t)rnd(g) << 32 | rnd(g)) %
			    (idspace * ps->ppb);
		/* skip some batches entirely now and then */
		if (chance(g, ps->calm ? 2 : 10))
			logical += ps->ppb * (1 + rndn(g, 8));
		batch = (logical / ps->ppb) % idspace;
		slot = logical % ps->ppb;
		logical++;
		if (chance(g, loss))
			continue;
		memset(fr->f, 0, FRAME_MAX);
		if (r->method == CFG_METHOD_SEQ_BATCH_NUMBER) {
			/* the seq field carries the batch in its high bits
			 * like a real counter, plus noise the plan ignores */
			seq = (batch << (ps->sbits - ps->bbits)) | slot;
			put_bits(fr->f, r->batch.bit_offset, ps->bbits,
			    (uint32_t)batch);
		} else {
			seq = batch * ps->ppb + slot;
		}
		put_bits(fr->f, r->seq.bit_offset, ps->sbits, (uint32_t)seq);
		for (k = 0; k < r->payload_bytes; k++)
			fr->f[r->payload_byte_offset + k] = (uint8_t)rnd(g);
		fr->len = r->payload_byte_offset + r->payload_bytes;
		if (chance(g, bad)) {
			switch (rndn(g, 3)) {
			case 0:
				fr->len += 1 + rndn(g, 3);
				break;
			case 1:
				fr->len -= 1 + rndn(g, fr->len < 3 ?
				    fr->len : 3);
				break;
			default:
				fr->len = rndn(g, (r->seq.bit_offset +
				    ps->sbits + 7) / 8);
				break;
			}
		}
		/* time: small steps, sometimes a jump ahead, rarely back */
		t += rndn(g, 800);
		if (chance(g, 20))
			t += rndn(g, 200000);
		if (chance(g, 5) && t > 5000)
			t -= rndn(g, 5000);
		fr->rx = t;
		n++;
		/* a duplicate (new payload bytes, same header) soon after */
		if (chance(g, dup)) {
			ps->fr[n] = *fr;
			for (k = 0; k < r->payload_bytes; k++)
				ps->fr[n].f[r->payload_byte_offset + k] ^= 0x5A;
			ps->fr[n].rx = t + rndn(g, 100);
			n++;
		}
		/* a late repeat of some earlier frame */
		if (n > 2 && chance(g, late)) {
			ps->fr[n] = ps->fr[rndn(g, (uint32_t)n - 1)];
			for (k = 0; k < r->payload_bytes; k++)
				ps->fr[n].f[r->payload_byte_offset + k] ^= 0xA7;
			ps->fr[n].rx = t;
			n++;
		}
	}
	/* shuffle within a window of `shuffle` frames */
	for (i = 0; i < n; i++) {
		m = (int)rndn(g, shuffle);
		j = i + m < n ? i + m : n - 1;
		tmp = ps->fr[i];
		ps->fr[i] = ps->fr[j];
		ps->fr[j] = tmp;
	}
	ps->nfr = n;
}

static void
compare(const struct tpool *tp, const struct model *m,
	const struct reorder_plan *p, uint64_t seed, const char *where)
{
	const struct reorder_counters *c = reorder_counters(p);
	size_t i;
	unsigned k;

	if (tp->errors)
		ck_abort_msg("seed %llu %s: owner contract broken",
		    (unsigned long long)seed, where);
	if (memcmp(c, &m->c, sizeof(*c)) != 0) {
		const uint64_t *a = (const uint64_t *)c;
		const uint64_t *b = (const uint64_t *)&m->c;

		for (k = 0; k < REORDER_NCOUNTERS && a[k] == b[k]; k++)
			;
		ck_abort_msg("seed %llu %s: counter %s is %llu, model %llu",
		    (unsigned long long)seed, where, reorder_counter_names[k],
		    (unsigned long long)a[k], (unsigned long long)b[k]);
	}
	if (c->packets_in != c->placed + c->duplicate + c->late +
	    c->malformed + c->no_buffer + c->backend_error)
		ck_abort_msg("seed %llu: invariant broken",
		    (unsigned long long)seed);
	if (tp->nlog != m->npubs)
		ck_abort_msg("seed %llu %s: %zu published, model %zu",
		    (unsigned long long)seed, where, tp->nlog, m->npubs);
	for (i = 0; i < tp->nlog; i++) {
		const struct pub *a = &tp->log[i];
		const struct mpub *b = &m->pubs[i];

		if (memcmp(&a->d, &b->d, sizeof(a->d)) != 0)
			ck_abort_msg("seed %llu %s: descriptor %zu: buf %u/%u "
			    "flags %#x/%#x seq %llu/%llu id %llu/%llu "
			    "recv %u/%u first %llu/%llu last %llu/%llu "
			    "pub %llu/%llu", (unsigned long long)seed, where,
			    i, a->d.buf_index, b->d.buf_index, a->d.flags,
			    b->d.flags, (unsigned long long)a->d.seq,
			    (unsigned long long)b->d.seq,
			    (unsigned long long)a->d.batch_id,
			    (unsigned long long)b->d.batch_id,
			    a->d.packets_received, b->d.packets_received,
			    (unsigned long long)a->d.first_rx_ns,
			    (unsigned long long)b->d.first_rx_ns,
			    (unsigned long long)a->d.last_rx_ns,
			    (unsigned long long)b->d.last_rx_ns,
			    (unsigned long long)a->d.publish_ns,
			    (unsigned long long)b->d.publish_ns);
		if (a->bitmap[0] != b->bitmap)
			ck_abort_msg("seed %llu %s: bitmap %zu %#llx, model "
			    "%#llx", (unsigned long long)seed, where, i,
			    (unsigned long long)a->bitmap[0],
			    (unsigned long long)b->bitmap);
		if (memcmp(a->data, b->data, tp->tbytes) != 0)
			ck_abort_msg("seed %llu %s: tensor %zu differs",
			    (unsigned long long)seed, where, i);
	}
	if (reorder_next_deadline(p) != m_next_deadline(m))
		ck_abort_msg("seed %llu %s: next deadline %llu, model %llu",
		    (unsigned long long)seed, where,
		    (unsigned long long)reorder_next_deadline(p),
		    (unsigned long long)m_next_deadline(m));
}

/* Release buffers the consumer is done with, in both worlds. */
static void
release_some(struct tpool *tp, struct model *m, struct rng *g, int hold_max)
{
	int i;

	while (tp->nheld > hold_max || (tp->nheld > 0 && chance(g, 300))) {
		i = tp_release_oldest(tp);
		if (m->bstate[i] != B_HELD)
			ck_abort_msg("model: buffer %d not held", i);
		m->bstate[i] = B_FREE;
	}
}

static void
run_stream(uint64_t seed)
{
	struct rng g = { seed };
	struct pstream ps;
	struct tpool tp;
	struct model *m = calloc(1, sizeof(*m));
	struct reorder_owner o;
	struct reorder_plan *p;
	struct rx_frame pk[8];
	uint8_t hp[8][FRAME_MAX], pp[8][FRAME_MAX];
	uint64_t now = 0;
	int i, n, k, split;
	char where[64];

	memset(&ps, 0, sizeof(ps));
	ps.seed = seed;
	random_config(&ps, &g);
	random_frames(&ps, &g);
	tp_init(&tp, ps.nbufs, (uint64_t)ps.ppb * ps.cfg.slot_bytes, ps.ppb);
	o = tp_owner(&tp);
	p = reorder_create(&ps.cfg, &o, NULL);
	if (getenv("REORDER_VERBOSE") != NULL)
		fprintf(stderr, "seed %llu: method %d seq %u/%u batch %u/%u "
		    "ppb %u off %u in %d out %d bytes %u slot %llu W %u "
		    "fill %d missing %d timeout %u bufs %d hold %d "
		    "frames %d\n",
		    (unsigned long long)seed, ps.cfg.method,
		    ps.cfg.seq.bit_offset, ps.sbits, ps.cfg.batch.bit_offset,
		    ps.bbits, ps.ppb, ps.cfg.payload_byte_offset,
		    ps.cfg.input_type, ps.cfg.output_type,
		    ps.cfg.payload_bytes,
		    (unsigned long long)ps.cfg.slot_bytes, ps.cfg.window,
		    ps.cfg.fill, ps.cfg.missing_action, ps.cfg.timeout_us,
		    ps.nbufs, ps.hold_max,
		    ps.nfr);
	if (p == NULL)
		ck_abort_msg("seed %llu: reorder_create: %s",
		    (unsigned long long)seed, strerror(errno));
	m->cfg = &ps.cfg;
	m->S = reorder_geom(p)->id_space;
	ck_assert_uint_eq(m->S, ps.cfg.method == CFG_METHOD_SEQ_BATCH_NUMBER ?
	    (1ull << ps.bbits) : ((1ull << ps.sbits) / ps.ppb));
	m->W = ps.cfg.window;
	if (m->W > m->S / 2)
		m->W = (uint32_t)(m->S / 2);
	if (m->W == 0)
		m->W = 1;
	ck_assert_uint_eq(reorder_geom(p)->window, m->W);
	m->ppb = ps.ppb;
	m->in_bytes = ps.cfg.payload_bytes;
	m->slot_bytes = (uint32_t)ps.cfg.slot_bytes;
	m->timeout_ns = (uint64_t)ps.cfg.timeout_us * 1000;
	m->in = ps.cfg.has_data_types ? ps.cfg.input_type : DAQIRI_DTYPE_RAW;
	m->out = ps.cfg.has_data_types ? ps.cfg.output_type : DAQIRI_DTYPE_RAW;
	m->en = ps.cfg.endianness;
	m->fill = ps.cfg.fill;
	m->drop = ps.cfg.missing_action == CFG_MISSING_DROP;
	m->nbufs = ps.nbufs;
	for (i = 0; i < ps.nbufs; i++)
		memset(m->bdata[i], GUARD_BYTE, sizeof(m->bdata[i]));

	for (i = 0; i < ps.nfr; i += n) {
		n = 1 + (int)rndn(&g, 8);
		if (i + n > ps.nfr)
			n = ps.nfr - i;
		for (k = 0; k < n; k++) {
			const struct rframe *fr = &ps.fr[i + k];

			/* split the frame at a random point, the two parts
			 * in separate buffers with poison after each */
			split = (int)rndn(&g, fr->len + 1);
			memset(hp[k], 0xEE, FRAME_MAX);
			memset(pp[k], 0xEE, FRAME_MAX);
			memcpy(hp[k], fr->f, (size_t)split);
			memcpy(pp[k], fr->f + split, fr->len - (size_t)split);
			pk[k] = (struct rx_frame){ .hdr = hp[k],
			    .hdr_len = (uint32_t)split, .payload = pp[k],
			    .payload_len = fr->len - (uint32_t)split,
			    .rx_ns = fr->rx };
			if (fr->rx > now)
				now = fr->rx;
		}
		now += rndn(&g, 2000);
		if (chance(&g, 30))
			now -= rndn(&g, now / 4);	/* a clock step back */
		reorder_burst(p, pk, (unsigned)n, now);
		m_drain(m, now);
		for (k = 0; k < n; k++) {
			const struct rframe *fr = &ps.fr[i + k];

			m_packet(m, fr->f, fr->len, fr->rx, now);
			m_drain(m, now);
			if (getenv("REORDER_VERBOSE") != NULL)
				fprintf(stderr, "  frame %d len %u rx %llu "
				    "now %llu seq %#x: base %llu open %d "
				    "placed %llu pubs %zu\n", i + k, fr->len,
				    (unsigned long long)fr->rx,
				    (unsigned long long)now, fr->len * 8 >=
				    ps.cfg.seq.bit_offset + ps.sbits ?
				    ref_bits(fr->f, ps.cfg.seq.bit_offset,
				    ps.sbits) : 0, (unsigned long long)m->base,
				    m->nopen,
				    (unsigned long long)m->c.placed, m->npubs);
		}
		if (getenv("REORDER_VERBOSE") != NULL) {
			const uint64_t *a, *b = (const uint64_t *)&m->c;

			a = (const uint64_t *)reorder_counters(p);

			fprintf(stderr, " burst of %d now %llu; plan/model:", n,
			    (unsigned long long)now);
			for (k = 0; k < REORDER_NCOUNTERS; k++)
				if (a[k] || b[k])
					fprintf(stderr, " %s %llu/%llu",
					    reorder_counter_names[k],
					    (unsigned long long)a[k],
					    (unsigned long long)b[k]);
			fprintf(stderr, " pubs %zu/%zu\n", tp.nlog, m->npubs);
		}
		snprintf(where, sizeof(where), "after burst at frame %d", i);
		compare(&tp, m, p, seed, where);
		release_some(&tp, m, &g, ps.hold_max);
		if (chance(&g, 200)) {
			now += rndn(&g, 100000);
			reorder_poll(p, now);
			m_drain(m, now);
			compare(&tp, m, p, seed, "after poll");
			release_some(&tp, m, &g, ps.hold_max);
		}
	}
	if (chance(&g, 700)) {
		now += rndn(&g, 1000);
		reorder_flush(p, now);
		m_drain(m, now);
		m_publish_all(m, DAQIRI_TENSOR_FLUSH, now);
		compare(&tp, m, p, seed, "after flush");
	}
	reorder_destroy(p);
	for (i = 0; i < tp.n; i++)
		if (tp.state[i] == B_LENT)
			ck_abort_msg("seed %llu: buffer %d not returned",
			    (unsigned long long)seed, i);
	if (!guards_intact(&tp))
		ck_abort_msg("seed %llu: wrote past a tensor",
		    (unsigned long long)seed);
	ck_assert_int_eq(tp.errors, 0);
	tp_fini(&tp);
	free(ps.fr);
	free(m->pubs);
	free(m);
}

#define PROP_STREAMS	10000

START_TEST(test_property_plan_matches_model)
{
	const char *env = getenv("REORDER_SEED");
	uint64_t base = 20240601, s;
	int i;

	if (env != NULL) {
		/* reproduce one stream */
		s = strtoull(env, NULL, 0);
		fprintf(stderr, "stream seed %llu\n", (unsigned long long)s);
		run_stream(s);
		return;
	}
	for (i = 0; i < PROP_STREAMS; i++) {
		s = base + (uint64_t)i * 7919;
		run_stream(s);
	}
}
END_TEST

/* Same streams through each conversion implementation. */
START_TEST(test_property_each_impl)
{
	int i;

	if (cvt_force_impl(cvt_impl_names[_i]) != 0) {
		fprintf(stderr, "note: %s not supported here\n",
		    cvt_impl_names[_i]);
		return;
	}
	cvt_set_nt_threshold(0);
	for (i = 0; i < 300; i++)
		run_stream(777 + (uint64_t)i * 104729);
}
END_TEST

static Suite *
reorder_suite(void)
{
	Suite *s = suite_create("reorder");
	TCase *tc;

	tc = tcase_create("fields");
	tcase_add_test(tc, test_field_worked_example_1);
	tcase_add_test(tc, test_field_worked_example_2);
	tcase_add_test(tc, test_field_all_widths_offsets);
	tcase_add_test(tc, test_geometry_reference_example);
	tcase_add_test(tc, test_window_capped_to_half_id_space);
	tcase_add_test(tc, test_create_rejects_bad_configs);
	tcase_add_test(tc, test_counter_names);
	tcase_add_test(tc, test_plan_worked_example_batch_number);
	tcase_add_test(tc, test_plan_worked_example_packets_per_batch);
	suite_add_tcase(s, tc);

	tc = tcase_create("semantics");
	tcase_add_test(tc, test_in_order_complete_batches);
	tcase_add_test(tc, test_reordered_within_window);
	tcase_add_test(tc, test_duplicate_dropped_first_wins);
	tcase_add_test(tc, test_late_packet);
	tcase_add_test(tc, test_slide_evicts_in_order);
	tcase_add_test(tc, test_resync_on_restart);
	tcase_add_test(tc, test_timeout_fixed_from_first_packet);
	tcase_add_test(tc, test_timeout_respects_order);
	tcase_add_test(tc, test_burst_drains_expired_first);
	tcase_add_test(tc, test_fill_zero);
	tcase_add_test(tc, test_fill_nan);
	tcase_add_test(tc, test_fill_keep);
	tcase_add_test(tc, test_retune_window);
	tcase_add_test(tc, test_retune_timeout);
	tcase_add_test(tc, test_retune_fill);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_split_frames);
	tcase_add_test(tc, test_flush_and_destroy_return_buffers);
	tcase_add_test(tc, test_backend_commit_error_drops_batch);
	tcase_add_test(tc, test_backend_commit_error_fails_batches_of_burst);
	tcase_add_test(tc, test_backend_fill_and_finish_errors);
	tcase_add_test(tc, test_batch_id_wrap);
	tcase_add_test(tc, test_no_buffer_batch_keeps_its_place);
	tcase_add_test(tc, test_missing_drop_publishes_only_complete);
	tcase_add_test(tc, test_missing_drop_keeps_resync_mark);
	tcase_add_test(tc, test_missing_drop_backend_error_first);
	tcase_add_test(tc, test_missing_retune_live);
	suite_add_tcase(s, tc);

	tc = tcase_create("regressions");
	tcase_add_test(tc, test_regress_loss_does_not_shift_batches);
	tcase_add_test(tc, test_regress_duplicate_does_not_complete_batch);
	tcase_add_test(tc, test_regress_missing_slots_zero_not_stale);
	tcase_add_test(tc, test_regress_full_pool_drops_and_recovers);
	tcase_add_test(tc, test_regress_restarted_sender_is_followed);
	tcase_add_test(tc, test_regress_timeout_from_arrival_not_dequeue);
	suite_add_tcase(s, tc);

	tc = tcase_create("property");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_property_plan_matches_model);
	tcase_add_loop_test(tc, test_property_each_impl, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(reorder_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
