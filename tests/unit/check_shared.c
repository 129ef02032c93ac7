/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for shared reorder plans (reorder.c "Shared plans"): one
 * plan fed by several threads at once, as the workers of a stream spread
 * over several rx queues feed it (stream_worker.c stream_burst(): the
 * decisions under a lock, the copies outside it, then a poll under it).
 * Every batch's packets are spread over the threads.
 *
 *  - A window wider than a round of batches: whatever the interleaving,
 *    no batch slides out, so the outcome is exact -- every tensor, bit
 *    and byte, and every counter -- under shuffle, loss and duplicates.
 *  - A narrow window: threads run ahead of each other, batches are pushed
 *    out while another thread's copies into them are under way (the wait
 *    for writers). The outcome depends on the interleaving; what must
 *    hold whatever it is: in-order publication, each published slot's
 *    bytes exact and its bit set, packets_received = the bits, and the
 *    packets of the published tensors = placed, with the identity exact.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

#define PPB		16
#define PAYLOAD		64
#define FRAME		(4 + PAYLOAD)
#define NBUFS		96
#define NTHREADS	2
#define BURST		24

static uint8_t
pattern(uint32_t seq, uint32_t k)
{
	return (uint8_t)(seq * 131u + k * 7u + 1u);
}

/* The frame of seq: its 4-byte big-endian seq, then its pattern. */
static struct rx_frame
make_frame(uint8_t *fr, uint32_t seq)
{
	fr[0] = (uint8_t)(seq >> 24);
	fr[1] = (uint8_t)(seq >> 16);
	fr[2] = (uint8_t)(seq >> 8);
	fr[3] = (uint8_t)seq;
	for (uint32_t k = 0; k < PAYLOAD; k++)
		fr[4 + k] = pattern(seq, k);
	return (struct rx_frame){ .payload = fr, .payload_len = FRAME,
	    .rx_ns = 1000 };
}

/* The owner: called under the plan's lock, so no lock of its own. It
 * checks each tensor as it is published and lends the buffer again. */
struct owner {
	uint8_t *data[NBUFS];
	uint64_t bm[NBUFS];
	bool lent[NBUFS];
	uint64_t last_batch;
	bool any;
	uint64_t tensors, received, bad_bytes, bad_bits, out_of_order, errors;
	uint64_t last_seq;
	/* phase A: which seqs were sent (1 bit per seq of the round) */
	const uint8_t *sent;
	uint64_t sent_base, sent_n;
};

static int
o_get(void *ctx, struct reorder_buf *out)
{
	struct owner *o = ctx;

	for (uint32_t i = 0; i < NBUFS; i++)
		if (!o->lent[i]) {
			o->lent[i] = true;
			out->index = i;
			out->data = o->data[i];
			out->bitmap = &o->bm[i];
			return 0;
		}
	return -ENOBUFS;
}

static void
o_put(void *ctx, const struct reorder_buf *buf)
{
	struct owner *o = ctx;

	if (buf->index >= NBUFS || !o->lent[buf->index])
		o->errors++;
	else
		o->lent[buf->index] = false;
}

static void
o_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *b)
{
	struct owner *o = ctx;
	uint32_t bits = 0;

	if (b->index >= NBUFS || !o->lent[b->index] || d->buf_index != b->index) {
		o->errors++;
		return;
	}
	/* batch ids go back only where a tensor starts an epoch */
	if (o->any && ((d->batch_id <= o->last_batch &&
	    !(d->flags & DAQIRI_TENSOR_RESYNC)) || d->seq != o->last_seq + 1))
		o->out_of_order++;
	o->any = true;
	o->last_batch = d->batch_id;
	o->last_seq = d->seq;
	for (uint32_t s = 0; s < PPB; s++) {
		uint32_t seq = (uint32_t)(d->batch_id * PPB + s);
		const uint8_t *slot = (const uint8_t *)b->data +
		    (size_t)s * PAYLOAD;
		bool set = (*b->bitmap >> s) & 1;

		if (o->sent != NULL && seq >= o->sent_base &&
		    seq - o->sent_base < o->sent_n &&
		    set != (o->sent[seq - o->sent_base] != 0))
			o->bad_bits++;
		if (!set)
			continue;
		bits++;
		for (uint32_t k = 0; k < PAYLOAD; k++)
			if (slot[k] != pattern(seq, k)) {
				o->bad_bytes++;
				break;
			}
	}
	if (bits != d->packets_received)
		o->bad_bits++;
	o->tensors++;
	o->received += d->packets_received;
	o->lent[b->index] = false;
}

struct rig {
	pthread_mutex_t lock;
	struct reorder_plan *p;
	struct owner o;
	uint8_t *frames;		/* one FRAME per packet sent */
	struct rx_frame *pkts[NTHREADS];
	uint32_t npkts[NTHREADS];
	_Atomic int go;
};

struct feeder {
	struct rig *r;
	int t;
};

/* One thread: the stream_burst() protocol, burst after burst. */
static void *
feed(void *arg)
{
	struct feeder *f = arg;
	struct rig *r = f->r;
	struct reorder_jobs *jobs = reorder_jobs_create((unsigned)f->t);

	while (!atomic_load(&r->go))
		;
	for (uint32_t i = 0; i < r->npkts[f->t]; i += BURST) {
		uint32_t n = r->npkts[f->t] - i < BURST ? r->npkts[f->t] - i :
		    BURST;

		pthread_mutex_lock(&r->lock);
		reorder_burst_shared(r->p, r->pkts[f->t] + i, n, 1000, jobs);
		pthread_mutex_unlock(&r->lock);
		reorder_jobs_run(r->p, jobs);
		pthread_mutex_lock(&r->lock);
		reorder_poll(r->p, 1000);
		pthread_mutex_unlock(&r->lock);
	}
	reorder_jobs_free(jobs);
	return NULL;
}

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void
rig_init(struct rig *r, uint32_t window)
{
	struct reorder_owner ow = { .ctx = &r->o, .get = o_get, .put = o_put,
	    .publish = o_publish };
	struct cfg_reorder c;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	for (int i = 0; i < NBUFS; i++)
		r->o.data[i] = malloc((size_t)PPB * PAYLOAD);
	memset(&c, 0, sizeof(c));
	strcpy(c.name, "shared");
	c.type = CFG_REORDER_CPU;
	c.payload_byte_offset = 4;
	c.payload_bytes = PAYLOAD;
	c.slot_bytes = PAYLOAD;
	c.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	c.seq.bit_offset = 0;
	c.seq.bit_width = 32;
	c.packets_per_batch = PPB;
	c.window = window;
	c.fill = DAQIRI_FILL_ZERO;
	c.timeout_us = 0;
	r->p = reorder_create(&c, &ow, NULL);
	ck_assert_ptr_nonnull(r->p);
	ck_assert_int_eq(reorder_set_shared(r->p, (1u << NTHREADS) - 1), 0);
}

static void
rig_fini(struct rig *r)
{
	reorder_destroy(r->p);
	for (int i = 0; i < NBUFS; i++)
		free(r->o.data[i]);
	free(r->frames);
	for (int t = 0; t < NTHREADS; t++)
		free(r->pkts[t]);
}

/* One round: batches [first, first + nb) sent shuffled within shuf
 * packets, each lost with 1/loss_in and duplicated with 1/dup_in (0: never),
 * spread over the threads by seq; sent[] says which seqs went at least
 * once. Returns packets and duplicates sent. */
static void
rig_round(struct rig *r, uint32_t first, uint32_t nb, uint32_t shuf,
	  uint32_t loss_in, uint32_t dup_in, uint8_t *sent, uint64_t *npk,
	  uint64_t *ndup)
{
	uint32_t total = nb * PPB, n = 0, *order = malloc(total * 2 * 4);

	*npk = *ndup = 0;
	for (uint32_t i = 0; i < total; i++) {
		sent[i] = 0;
		if (loss_in && rnd(loss_in) == 0)
			continue;
		order[n++] = first * PPB + i;
		sent[i] = 1;
		if (dup_in && rnd(dup_in) == 0) {
			order[n++] = first * PPB + i;
			(*ndup)++;
		}
	}
	for (uint32_t i = 0; shuf > 1 && i < n; i++) {
		uint32_t j = i + rnd(shuf < n - i ? shuf : n - i), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	free(r->frames);
	r->frames = malloc((size_t)n * FRAME);
	for (int t = 0; t < NTHREADS; t++) {
		free(r->pkts[t]);
		r->pkts[t] = calloc(n, sizeof(struct rx_frame));
		r->npkts[t] = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t seq = order[i];
		int t = (int)((seq / 3) % NTHREADS);	/* every batch spread */

		r->pkts[t][r->npkts[t]++] = make_frame(r->frames +
		    (size_t)i * FRAME, seq);
	}
	*npk = n;
	free(order);
}

static void
rig_run(struct rig *r)
{
	pthread_t th[NTHREADS];
	struct feeder f[NTHREADS];

	atomic_store(&r->go, 0);
	for (int t = 0; t < NTHREADS; t++) {
		f[t].r = r;
		f[t].t = t;
		ck_assert_int_eq(pthread_create(&th[t], NULL, feed, &f[t]), 0);
	}
	atomic_store(&r->go, 1);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
}

/* The start of the stream, on its own: base = batch 0. */
static void
rig_start(struct rig *r)
{
	uint8_t fr[FRAME];
	struct rx_frame p = make_frame(fr, 0);
	struct reorder_jobs *jobs = reorder_jobs_create(0);

	reorder_burst_shared(r->p, &p, 1, 1000, jobs);
	reorder_jobs_run(r->p, jobs);
	reorder_jobs_free(jobs);
}

START_TEST(test_exact_outcome)
{
	struct rig r;
	const uint32_t nb = 32;
	uint8_t sent[32 * PPB];
	uint64_t npk, ndup, uniq_total = 0, dup_total = 0, in_total = 1;
	uint64_t batches = 1;

	rng = 0x9E3779B97F4A7C15ull;
	rig_init(&r, 64);
	rig_start(&r);
	r.o.sent = sent;
	for (uint32_t round = 0; round < 200; round++) {
		uint32_t first = 1 + round * nb;
		uint64_t sent_batches = 0;

		rig_round(&r, first, nb, round % 2 ? 40 : 1, 20, 25, sent, &npk,
		    &ndup);
		r.o.sent_base = (uint64_t)first * PPB;
		r.o.sent_n = (uint64_t)nb * PPB;
		for (uint32_t b = 0; b < nb; b++) {
			bool any = false;

			for (uint32_t s = 0; s < PPB; s++)
				any |= sent[b * PPB + s] != 0;
			sent_batches += any;
		}
		rig_run(&r);
		reorder_flush(r.p, 2000);
		uniq_total += npk - ndup;
		dup_total += ndup;
		in_total += npk;
		batches += sent_batches;
		ck_assert_uint_eq(r.o.tensors, batches);
	}
	{
		const struct reorder_counters *c = reorder_counters(r.p);

		ck_assert_uint_eq(c->packets_in, in_total);
		ck_assert_uint_eq(c->placed, uniq_total + 1);
		/* a copy that comes after its batch went out is late */
		ck_assert_uint_eq(c->duplicate + c->late, dup_total);
		ck_assert_uint_eq(c->resync, 0);
		ck_assert_uint_eq(c->no_buffer, 0);
		ck_assert_uint_eq(r.o.received, c->placed);
	}
	ck_assert_uint_eq(r.o.bad_bytes, 0);
	ck_assert_uint_eq(r.o.bad_bits, 0);
	ck_assert_uint_eq(r.o.out_of_order, 0);
	ck_assert_uint_eq(r.o.errors, 0);
	rig_fini(&r);
}
END_TEST

START_TEST(test_narrow_window_invariants)
{
	struct rig r;
	const uint32_t nb = 48;
	uint8_t sent[48 * PPB];
	uint64_t npk, ndup, in_total = 1;

	rng = 0xD1B54A32D192ED03ull;
	rig_init(&r, 2);
	rig_start(&r);
	for (uint32_t round = 0; round < 200; round++) {
		rig_round(&r, 1 + round * nb, nb, 8, 50, 30, sent, &npk, &ndup);
		rig_run(&r);
		in_total += npk;
	}
	reorder_flush(r.p, 2000);
	{
		const struct reorder_counters *c = reorder_counters(r.p);

		ck_assert_uint_eq(c->packets_in, in_total);
		ck_assert_uint_eq(c->placed + c->duplicate + c->late +
		    c->malformed + c->no_buffer + c->backend_error,
		    c->packets_in);
		ck_assert_uint_eq(r.o.received, c->placed);
		ck_assert_uint_eq(c->no_buffer, 0);
	}
	ck_assert_uint_eq(r.o.bad_bytes, 0);
	ck_assert_uint_eq(r.o.bad_bits, 0);
	ck_assert_uint_eq(r.o.out_of_order, 0);
	ck_assert_uint_eq(r.o.errors, 0);
	rig_fini(&r);
}
END_TEST

/* Feed frames for seqs [from, to) of feeder t's share (seq / 3 % 2)
 * through its own jobs list, on this thread, in bursts. */
static void
feed_share(struct rig *r, struct reorder_jobs *jobs, int t, uint32_t from,
	   uint32_t to, uint8_t *store)
{
	struct rx_frame p[BURST];
	uint32_t n = 0;

	for (uint32_t seq = from; seq < to; seq++) {
		if ((int)((seq / 3) % 2) != t)
			continue;
		p[n] = make_frame(store + (size_t)(seq - from) * FRAME, seq);
		if (++n == BURST || seq + 1 == to) {
			reorder_burst_shared(r->p, p, n, 1000, jobs);
			reorder_jobs_run(r->p, jobs);
			reorder_poll(r->p, 1000);
			n = 0;
		}
	}
	if (n > 0) {
		reorder_burst_shared(r->p, p, n, 1000, jobs);
		reorder_jobs_run(r->p, jobs);
		reorder_poll(r->p, 1000);
	}
}

/* A feeder that lags far behind the other sends a long run of late
 * packets of its own: no restart. A restart reaches both feeders: one
 * resync. (One thread plays both feeders, in a fixed order.) */
START_TEST(test_lag_is_no_restart)
{
	struct rig r;
	struct reorder_jobs *a = reorder_jobs_create(0);
	struct reorder_jobs *b = reorder_jobs_create(1);
	uint8_t *store = malloc((size_t)20 * PPB * FRAME);
	const struct reorder_counters *c;

	rig_init(&r, 2);
	/* feeder 0 runs 10 batches ahead, then feeder 1 sends its half of
	 * them: 80 late packets in a row, all feeder 1's */
	feed_share(&r, a, 0, 0, 10 * PPB, store);
	feed_share(&r, b, 1, 0, 10 * PPB, store);
	c = reorder_counters(r.p);
	ck_assert_uint_eq(c->resync, 0);
	ck_assert_uint_gt(c->late, 2 * PPB);
	/* the sender restarts at 0: each feeder's share is late, both are
	 * in the run, and the stream starts again */
	feed_share(&r, a, 0, 0, 2 * PPB, store);
	feed_share(&r, b, 1, 0, 2 * PPB, store);
	ck_assert_uint_eq(c->resync, 1);
	ck_assert_uint_eq(c->placed + c->duplicate + c->late + c->malformed +
	    c->no_buffer + c->backend_error, c->packets_in);
	ck_assert_uint_eq(r.o.bad_bytes, 0);
	ck_assert_uint_eq(r.o.out_of_order, 0);
	reorder_jobs_free(a);
	reorder_jobs_free(b);
	free(store);
	rig_fini(&r);
}
END_TEST

/* Only the CPU backend's writes can be split from the decisions: a plan
 * of another backend (here the CPU one under another identity) is
 * refused, and stays a plan of one thread. */
START_TEST(test_shared_needs_cpu_backend)
{
	static struct owner o;
	struct reorder_owner ow = { .ctx = &o, .get = o_get, .put = o_put,
	    .publish = o_publish };
	struct reorder_backend other = reorder_backend_cpu;
	struct cfg_reorder c;
	struct reorder_plan *p;

	memset(&c, 0, sizeof(c));
	strcpy(c.name, "other");
	c.type = CFG_REORDER_CPU;
	c.payload_byte_offset = 4;
	c.payload_bytes = PAYLOAD;
	c.slot_bytes = PAYLOAD;
	c.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	c.seq.bit_width = 32;
	c.packets_per_batch = PPB;
	c.window = 4;
	other.name = "other";
	p = reorder_create(&c, &ow, &other);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(reorder_set_shared(p, 3), -EINVAL);
	reorder_destroy(p);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("shared");
	TCase *tc = tcase_create("shared");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exact_outcome);
	tcase_add_test(tc, test_narrow_window_invariants);
	tcase_add_test(tc, test_lag_is_no_restart);
	tcase_add_test(tc, test_shared_needs_cpu_backend);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
