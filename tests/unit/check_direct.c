/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for direct placement in daemon/reorder.c (its top comment,
 * "Direct placement"): the plan names the slots the next payloads take,
 * an engine receives payloads straight into them, and whatever the
 * traffic does -- in order, shuffled, lost, duplicated, restarted, late
 * past a deadline -- the plan publishes exactly what it publishes when
 * every frame comes the ordinary way: the same descriptors, the same
 * tensor bytes, the same counters. A differential test against a second
 * plan fed the same packets as plain frames, plus the hazards one by one.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

#define NBUFS		8
#define PAYLOAD		16
#define HDR		4
#define MAXPPB		16
#define MAXBURST	48
#define MAXHINTS	64

struct pub {
	struct daqiri_desc d;
	uint8_t data[MAXPPB * PAYLOAD];
};

/* A buffer owner; published buffers are held until the test lets go. */
struct owner {
	uint8_t data[NBUFS][MAXPPB * PAYLOAD];
	uint64_t bm[NBUFS][1];
	int state[NBUFS];		/* 0 free, 1 lent, 2 held */
	int held[NBUFS], nheld;
	size_t pub_of[NBUFS];		/* a held buffer's publication */
	struct pub *log;
	size_t nlog, cap;
	uint64_t tbytes;
	int errors;
};

static int
o_get(void *ctx, struct reorder_buf *out)
{
	struct owner *o = ctx;

	for (uint32_t i = 0; i < NBUFS; i++)
		if (o->state[i] == 0) {
			o->state[i] = 1;
			out->index = i;
			out->data = o->data[i];
			out->bitmap = o->bm[i];
			return 0;
		}
	return -ENOBUFS;
}

static void
o_put(void *ctx, const struct reorder_buf *buf)
{
	struct owner *o = ctx;

	if (buf->index >= NBUFS || o->state[buf->index] != 1)
		o->errors++;
	else
		o->state[buf->index] = 0;
}

static void
o_publish(void *ctx, const struct daqiri_desc *d,
	  const struct reorder_buf *buf)
{
	struct owner *o = ctx;
	struct pub *p;

	if (buf->index >= NBUFS || o->state[buf->index] != 1) {
		o->errors++;
		return;
	}
	if (o->nlog == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 256;
		o->log = realloc(o->log, o->cap * sizeof(*o->log));
		ck_assert_ptr_nonnull(o->log);
	}
	p = &o->log[o->nlog++];
	p->d = *d;
	memcpy(p->data, buf->data, o->tbytes);
	o->state[buf->index] = 2;
	o->held[o->nheld++] = (int)buf->index;
	o->pub_of[buf->index] = o->nlog - 1;
}

/* Let the n oldest held buffers go. */
static void
o_release(struct owner *o, int n)
{
	while (n-- > 0 && o->nheld > 0) {
		int i = o->held[0];

		memmove(o->held, o->held + 1, (size_t)--o->nheld * sizeof(int));
		/* nothing wrote into it while a consumer held it */
		ck_assert_msg(memcmp(o->data[i], o->log[o->pub_of[i]].data,
		    o->tbytes) == 0, "buffer %d written after it was "
		    "published", i);
		/* a released buffer comes back with stale bytes */
		memset(o->data[i], 0xA5, sizeof(o->data[i]));
		o->state[i] = 0;
	}
}

/* Where the sequence number is: in the header (seq_in_payload false), or
 * in the first payload bytes, which the tensor keeps (true). */
static bool seq_in_payload;

static struct cfg_reorder
cfg_of(uint32_t ppb, uint32_t window, uint32_t timeout_us,
       enum daqiri_fill fill)
{
	struct cfg_reorder r;

	memset(&r, 0, sizeof(r));
	strcpy(r.name, "t");
	r.type = CFG_REORDER_CPU;
	r.payload_byte_offset = HDR;
	r.payload_bytes = PAYLOAD;
	r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	r.seq.bit_width = 32;
	r.seq.bit_offset = seq_in_payload ? 8 * HDR : 0;
	r.packets_per_batch = ppb;
	r.window = window;
	r.fill = fill;
	r.timeout_us = timeout_us;
	return r;
}

static struct reorder_plan *
plan_of(const struct cfg_reorder *r, struct owner *o, bool ahead)
{
	struct reorder_owner ow = { .ctx = o, .get = o_get, .put = o_put,
	    .publish = o_publish, .get_ahead = ahead ? o_get : NULL };
	struct reorder_plan *p;

	memset(o, 0, sizeof(*o));
	memset(o->data, 0xA5, sizeof(o->data));
	o->tbytes = (uint64_t)r->packets_per_batch * PAYLOAD;
	p = reorder_create(r, &ow, NULL);
	ck_assert_ptr_nonnull(p);
	return p;
}

/* The payload of packet seq in its epoch: distinct per packet. */
static void
payload(uint8_t *out, uint32_t seq, uint32_t epoch)
{
	for (int i = 0; i < PAYLOAD; i++)
		out[i] = (uint8_t)(seq * 7u + epoch * 131u +
		    (uint32_t)i * 13u + 1u);
}

static void
put_seq(uint8_t *h, uint32_t seq)
{
	h[0] = (uint8_t)(seq >> 24);
	h[1] = (uint8_t)(seq >> 16);
	h[2] = (uint8_t)(seq >> 8);
	h[3] = (uint8_t)seq;
}

/* Datagram seq of its epoch: header, then the payload (with the seq in
 * its first bytes when seq_in_payload). */
static void
datagram(uint8_t *w, uint32_t seq, uint32_t epoch)
{
	memset(w, 0, HDR);
	payload(w + HDR, seq, epoch);
	put_seq(seq_in_payload ? w + HDR : w, seq);
}

/* Two plans fed the same packets: `plain` as whole frames, `direct` the
 * way the socket engine hands them with the plan's hints. */
struct pair {
	struct cfg_reorder cfg;
	struct owner oa, ob;
	struct reorder_plan *plain, *direct;
	uint8_t whole[MAXBURST][HDR + PAYLOAD];
	uint8_t side[MAXHINTS][HDR];
	uint8_t stash[MAXBURST][PAYLOAD];
	struct rx_frame fa[MAXBURST], fb[MAXBURST];
	uint8_t *dst[MAXHINTS];
	uint64_t nframes, ndirect;
	uint32_t rng;
};

static uint32_t
rnd(struct pair *x, uint32_t n)
{
	x->rng = x->rng * 1103515245u + 12345u;
	return n == 0 ? 0 : (x->rng >> 8) % n;
}

static void
pair_init(struct pair *x, const struct cfg_reorder *r, uint32_t seed)
{
	memset(x, 0, sizeof(*x));
	x->cfg = *r;
	x->plain = plan_of(r, &x->oa, false);
	x->direct = plan_of(r, &x->ob, true);
	x->rng = seed * 2654435761u + 1;
}

/* Every publication, tensor byte and counter of the two plans agree. */
static void
pair_same(struct pair *x)
{
	const struct reorder_counters *a = reorder_counters(x->plain);
	const struct reorder_counters *b = reorder_counters(x->direct);

	ck_assert_int_eq(x->oa.errors, 0);
	ck_assert_int_eq(x->ob.errors, 0);
	ck_assert_mem_eq(a, b, sizeof(*a));
	ck_assert_uint_eq(x->oa.nlog, x->ob.nlog);
	for (size_t i = 0; i < x->oa.nlog; i++) {
		struct daqiri_desc da = x->oa.log[i].d, db = x->ob.log[i].d;

		da.buf_index = db.buf_index = 0;
		ck_assert_msg(memcmp(&da, &db, sizeof(da)) == 0,
		    "tensor %zu: descriptors differ (seq %llu/%llu flags "
		    "%#x/%#x)", i, (unsigned long long)da.seq,
		    (unsigned long long)db.seq, da.flags, db.flags);
		ck_assert_msg(memcmp(x->oa.log[i].data, x->ob.log[i].data,
		    x->oa.tbytes) == 0, "tensor %zu (batch %llu): bytes differ",
		    i, (unsigned long long)da.batch_id);
	}
}

/*
 * One burst of packets seqs[0..n) (epochs as given) at time now. The
 * engine puts packet i straight into the next hint unless told to skip
 * hints (a read that held fewer datagrams than it had pairs for), and
 * sometimes scribbles on a skipped one (a datagram of another shape that
 * was gathered back).
 */
static void
pair_burst(struct pair *x, const uint32_t *seqs, const uint32_t *epochs,
	   unsigned n, uint64_t now, bool skips)
{
	uint32_t off = 0, len = 0, k, h = 0;

	k = reorder_place_hints(x->direct, x->dst, MAXHINTS, &off, &len);
	if (k > 0) {
		ck_assert_uint_eq(off, HDR);
		ck_assert_uint_eq(len, PAYLOAD);
	}
	for (unsigned i = 0; i < n; i++) {
		uint8_t *w = x->whole[i];

		datagram(w, seqs[i], epochs[i]);
		x->fa[i] = (struct rx_frame){ .hdr = w,
		    .hdr_len = HDR + PAYLOAD, .rx_ns = now };
		if (skips && h < k && rnd(x, 8) == 0) {
			uint32_t skip = 1 + rnd(x, 3);

			for (; skip > 0 && h < k; skip--, h++)
				if (rnd(x, 2) == 0)
					memset(x->dst[h], 0x5A, PAYLOAD);
		}
		if (h < k) {
			memcpy(x->side[h], w, HDR);
			memcpy(x->dst[h], w + HDR, PAYLOAD);
			x->fb[i] = (struct rx_frame){ .hdr = x->side[h],
			    .hdr_len = HDR, .payload = x->dst[h],
			    .payload_len = PAYLOAD, .rx_ns = now,
			    .stash = x->stash[i] };
			h++;
			x->ndirect++;
		} else {
			x->fb[i] = x->fa[i];
		}
	}
	x->nframes += n;
	reorder_burst(x->plain, x->fa, n, now);
	reorder_burst(x->direct, x->fb, n, now);
	reorder_poll(x->plain, now);
	reorder_poll(x->direct, now);
	pair_same(x);
}

static void
pair_fini(struct pair *x)
{
	uint64_t now = UINT64_MAX / 2;

	reorder_flush(x->plain, now);
	reorder_flush(x->direct, now);
	pair_same(x);
	reorder_destroy(x->plain);
	reorder_destroy(x->direct);
	for (int i = 0; i < NBUFS; i++) {
		ck_assert_int_ne(x->oa.state[i], 1);
		ck_assert_int_ne(x->ob.state[i], 1);
	}
	free(x->oa.log);
	free(x->ob.log);
}

/* ------------------------------------------------------------------ */

/* In order, every payload lands in its slot: no copy at all. */
START_TEST(test_in_order_no_copy)
{
	struct cfg_reorder r;
	const struct reorder_direct_counters *dc;
	uint32_t seqs[MAXBURST], ep[MAXBURST] = { 0 }, seq = 0, first = 0;
	struct pair x;

	seq_in_payload = _i == 1;
	r = cfg_of(8, 4, 0, DAQIRI_FILL_ZERO);

	pair_init(&x, &r, 1);
	for (int b = 0; b < 200; b++) {
		/* the hints reach three batches past the one being filled */
		unsigned n = 1 + rnd(&x, 3 * 8);

		for (unsigned i = 0; i < n; i++)
			seqs[i] = seq++;
		if (b == 0)
			first = n;
		pair_burst(&x, seqs, ep, n, 1000, false);
		o_release(&x.oa, 8);
		o_release(&x.ob, 8);
	}
	dc = reorder_direct_counters(x.direct);
	/* the first burst has no hint yet; after it, every packet hits */
	ck_assert_uint_eq(dc->hits, seq - first);
	ck_assert_uint_eq(dc->moved, 0);
	ck_assert_uint_eq(dc->staged, 0);
	ck_assert_uint_eq(x.ndirect, seq - first);
	ck_assert_uint_eq(reorder_counters(x.direct)->batches_complete,
	    seq / 8);
	pair_fini(&x);
}
END_TEST

/* Two packets swapped in one burst land in each other's slots: each is
 * copied to its own without the other being lost. */
START_TEST(test_swapped_pair)
{
	struct cfg_reorder r;
	uint32_t s1[1] = { 0 }, s2[2] = { 2, 1 }, s3[5] = { 3, 4, 5, 6, 7 };
	uint32_t ep[8] = { 0 };
	const struct reorder_direct_counters *dc;
	struct pair x;
	uint8_t want[HDR + PAYLOAD];

	seq_in_payload = _i == 1;
	r = cfg_of(8, 4, 0, DAQIRI_FILL_ZERO);

	pair_init(&x, &r, 2);
	pair_burst(&x, s1, ep, 1, 10, false);
	pair_burst(&x, s2, ep, 2, 20, false);
	pair_burst(&x, s3, ep, 5, 30, false);
	ck_assert_uint_eq(x.ob.nlog, 1);
	for (uint32_t s = 0; s < 8; s++) {
		datagram(want, s, 0);
		ck_assert_mem_eq(x.ob.log[0].data + s * PAYLOAD, want + HDR,
		    PAYLOAD);
	}
	dc = reorder_direct_counters(x.direct);
	ck_assert_uint_eq(dc->moved, 2);
	ck_assert_uint_ge(dc->staged, 1);
	ck_assert_uint_eq(dc->hits, 5);
	pair_fini(&x);
}
END_TEST

/* What a wrong guess wrote into a slot that never arrives is filled
 * over (zero) and never published as data. */
START_TEST(test_wrong_guess_is_filled)
{
	struct cfg_reorder r;
	/* slot 2 never comes: 3 lands in 2's place, 4 in 3's, ... */
	uint32_t s1[2] = { 0, 1 }, s2[5] = { 3, 4, 5, 6, 7 }, s3[1] = { 8 };
	uint32_t ep[8] = { 0 };
	uint8_t zero[PAYLOAD] = { 0 };
	struct pair x;

	seq_in_payload = _i == 1;
	r = cfg_of(8, 1, 0, DAQIRI_FILL_ZERO);

	pair_init(&x, &r, 3);
	pair_burst(&x, s1, ep, 2, 10, false);
	pair_burst(&x, s2, ep, 5, 20, false);
	/* batch 1 starts: window 1 evicts batch 0, slot 2 missing */
	pair_burst(&x, s3, ep, 1, 30, false);
	ck_assert_uint_eq(x.ob.nlog, 1);
	ck_assert(x.ob.log[0].d.flags & DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_mem_eq(x.ob.log[0].data + 2 * PAYLOAD, zero, PAYLOAD);
	ck_assert_uint_ge(reorder_direct_counters(x.direct)->moved, 5);
	pair_fini(&x);
}
END_TEST

/* A sender restart inside one burst: the late run that resyncs sits in
 * slots of the batch the resync publishes. */
START_TEST(test_resync_inside_burst)
{
	struct cfg_reorder r;
	uint32_t seqs[MAXBURST], ep[MAXBURST];
	struct pair x;
	unsigned n = 0;

	seq_in_payload = _i == 1;
	r = cfg_of(8, 4, 0, DAQIRI_FILL_ZERO);

	pair_init(&x, &r, 4);
	for (uint32_t s = 0; s < 12; s++) {
		seqs[n] = s;
		ep[n++] = 0;
	}
	pair_burst(&x, seqs, ep, n, 10, false);
	/* the sender restarts from 0: twelve packets of a new epoch */
	n = 0;
	for (uint32_t s = 0; s < 12; s++) {
		seqs[n] = s;
		ep[n++] = 1;
	}
	pair_burst(&x, seqs, ep, n, 20, false);
	ck_assert_uint_eq(reorder_counters(x.direct)->resync, 1);
	pair_fini(&x);
}
END_TEST

/* Random traffic, many seeds: shuffled, lost, duplicated, skipped
 * ahead, restarted, with deadlines passing and a small pool that runs
 * out; the direct plan publishes exactly what the plain one does. (With
 * fill keep a missing slot may hold what a wrong guess wrote, which is
 * as stale as what it held before, so only zero is compared here.) */
START_TEST(test_random_traffic_matches_plain)
{
	uint64_t hits = 0, moved = 0, staged = 0, frames = 0, direct = 0;

	seq_in_payload = _i == 1;

	for (uint32_t seed = 1; seed <= 120; seed++) {
		uint32_t ppb = 1u << (seed % 5);	/* 1 .. 16 */
		struct cfg_reorder r = cfg_of(ppb, 1 + seed % 4,
		    seed % 3 == 0 ? 0 : 500, DAQIRI_FILL_ZERO);
		const struct reorder_direct_counters *dc;
		uint32_t seqs[MAXBURST], ep[MAXBURST], seq = 0, epoch = 0;
		uint32_t shuffle = seed % 4 == 0 ? 0 : 1 + seed % 7;
		uint32_t loss = seed % 5, dup = seed % 3;
		uint64_t now = 1000;
		struct pair x;

		pair_init(&x, &r, seed);
		for (int b = 0; b < 150; b++) {
			unsigned n = 1 + rnd(&x, MAXBURST);

			for (unsigned i = 0; i < n; i++) {
				uint32_t ev = rnd(&x, 400);

				if (ev == 0)
					seq += ppb * (1 + rnd(&x, 6));
				else if (ev == 1 && seq > 2 * ppb) {
					seq = 0;		/* restart */
					epoch++;
				} else if (ev < 2 + loss)
					seq++;
				ep[i] = epoch;
				seqs[i] = seq;
				if (rnd(&x, 16) >= dup)
					seq++;
			}
			/* shuffle within a few places */
			for (unsigned i = 0; shuffle && i + 1 < n; i++) {
				unsigned j = i + rnd(&x, shuffle + 1);

				if (j < n) {
					uint32_t t = seqs[i], e = ep[i];

					seqs[i] = seqs[j];
					ep[i] = ep[j];
					seqs[j] = t;
					ep[j] = e;
				}
			}
			now += rnd(&x, 300) * 1000;
			pair_burst(&x, seqs, ep, n, now, seed % 2 == 0);
			/* a consumer that mostly keeps up, sometimes not */
			{
				int k = (int)rnd(&x, 2 * (n / ppb) + 3);

				o_release(&x.oa, k);
				o_release(&x.ob, k);
			}
		}
		dc = reorder_direct_counters(x.direct);
		hits += dc->hits;
		moved += dc->moved;
		staged += dc->staged;
		frames += x.nframes;
		direct += x.ndirect;
		pair_fini(&x);
	}
	/* every path was taken: hits, moves, frames saved from a write */
	ck_assert_uint_gt(hits, 0);
	ck_assert_uint_gt(moved, 0);
	ck_assert_uint_gt(staged, 0);
	ck_assert_uint_gt(direct, frames / 20);
}
END_TEST

/* A plan that converts gives no hint. */
START_TEST(test_converting_plan_gives_no_hint)
{
	struct cfg_reorder r = cfg_of(8, 4, 0, DAQIRI_FILL_ZERO);
	struct owner o;
	struct reorder_plan *p;
	uint8_t *dst[4];
	uint32_t off, len;

	r.has_data_types = true;
	r.input_type = DAQIRI_DTYPE_INT8;
	r.output_type = DAQIRI_DTYPE_FP32;
	p = plan_of(&r, &o, true);
	ck_assert_uint_eq(reorder_place_hints(p, dst, 4, &off, &len), 0);
	reorder_destroy(p);
}
END_TEST

/* With fill keep a missing slot keeps what it held, so a wrong guess
 * would show there: no hints, even after packets were placed. */
START_TEST(test_fill_keep_gives_no_hint)
{
	struct cfg_reorder r;
	uint32_t seqs[4] = { 0, 1, 2, 3 }, ep[4] = { 0 };
	struct pair x;

	seq_in_payload = false;
	r = cfg_of(8, 4, 0, DAQIRI_FILL_KEEP);
	pair_init(&x, &r, 6);
	pair_burst(&x, seqs, ep, 4, 10, false);
	ck_assert_uint_eq(reorder_place_hints(x.direct, x.dst, MAXHINTS,
	    &(uint32_t){ 0 }, &(uint32_t){ 0 }), 0);
	pair_fini(&x);
}
END_TEST

/* The spare goes back between bursts: an idle plan holds no buffer. */
START_TEST(test_spare_returned_when_idle)
{
	struct cfg_reorder r = cfg_of(4, 4, 0, DAQIRI_FILL_ZERO);
	uint32_t seqs[4] = { 0, 1, 2, 3 }, ep[4] = { 0 };
	struct pair x;

	pair_init(&x, &r, 5);
	pair_burst(&x, seqs, ep, 4, 10, false);	/* batch 0 complete */
	/* hints now run into batch 1, in a buffer got ahead */
	ck_assert_uint_gt(reorder_place_hints(x.direct, x.dst, MAXHINTS,
	    &(uint32_t){ 0 }, &(uint32_t){ 0 }), 0);
	reorder_poll(x.direct, 20);
	for (int i = 0; i < NBUFS; i++)
		ck_assert_int_ne(x.ob.state[i], 1);
	pair_fini(&x);
}
END_TEST

static Suite *
direct_suite(void)
{
	Suite *s = suite_create("direct");
	TCase *tc = tcase_create("direct");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_in_order_no_copy, 0, 2);
	tcase_add_loop_test(tc, test_swapped_pair, 0, 2);
	tcase_add_loop_test(tc, test_wrong_guess_is_filled, 0, 2);
	tcase_add_loop_test(tc, test_resync_inside_burst, 0, 2);
	tcase_add_loop_test(tc, test_random_traffic_matches_plain, 0, 2);
	tcase_add_test(tc, test_converting_plan_gives_no_hint);
	tcase_add_test(tc, test_fill_keep_gives_no_hint);
	tcase_add_test(tc, test_spare_returned_when_idle);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(direct_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
