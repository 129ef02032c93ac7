/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the resync rules of daemon/reorder.c (its top comment,
 * "Resync"): a sender that restarts its counter close behind the window is
 * recognised by volume (a whole batch of late packets in a row) and by time
 * (a late packet for a batch published longer ago than resync_after_us),
 * while a real straggler within its batch's deadline stays `late`, and
 * packets_in = placed + drops holds after every burst. A suite of its own:
 * check_reorder.c is long already.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

#define NBUFS	8
#define MAXLOG	64

/* An owner that frees every buffer as it is published and logs it. */
struct owner {
	uint8_t data[NBUFS][64 * 4];
	uint64_t bm[NBUFS][1];
	bool lent[NBUFS];
	struct daqiri_desc log[MAXLOG];
	int nlog;
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
			out->bitmap = o->bm[i];
			return 0;
		}
	return -ENOBUFS;
}

static void
o_put(void *ctx, const struct reorder_buf *buf)
{
	((struct owner *)ctx)->lent[buf->index] = false;
}

static void
o_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *buf)
{
	struct owner *o = ctx;

	ck_assert_int_lt(o->nlog, MAXLOG);
	o->log[o->nlog++] = *d;
	o->lent[buf->index] = false;
}

struct h {
	struct owner o;
	struct cfg_reorder cfg;
	struct reorder_plan *p;
	uint8_t f[8];
};

/* seq: bits 0..31 of the frame; a 4-byte payload after it. */
static void
h_init(struct h *h, uint32_t ppb, uint32_t window, uint32_t timeout_us,
       uint32_t resync_after_us)
{
	struct reorder_owner ow = { .get = o_get, .put = o_put,
	    .publish = o_publish };

	memset(h, 0, sizeof(*h));
	ow.ctx = &h->o;
	strcpy(h->cfg.name, "t");
	h->cfg.type = CFG_REORDER_CPU;
	h->cfg.payload_byte_offset = 4;
	h->cfg.payload_bytes = 4;
	h->cfg.slot_bytes = 4;
	h->cfg.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	h->cfg.seq.bit_width = 32;
	h->cfg.packets_per_batch = ppb;
	h->cfg.window = window;
	h->cfg.timeout_us = timeout_us;
	h->cfg.resync_after_us = resync_after_us;
	h->p = reorder_create(&h->cfg, &ow, NULL);
	ck_assert_ptr_nonnull(h->p);
}

#define C(h) reorder_counters((h)->p)

static void
identity(const struct h *h)
{
	const struct reorder_counters *c = C(h);

	ck_assert_uint_eq(c->packets_in, c->placed + c->duplicate + c->late +
	    c->malformed + c->no_buffer + c->backend_error);
}

/* One packet as a burst of one, received and processed at time t (ns). */
static void
h_send(struct h *h, uint32_t seq, uint64_t t)
{
	struct rx_frame pk = { .hdr = h->f, .hdr_len = sizeof(h->f),
	    .rx_ns = t };

	h->f[0] = (uint8_t)(seq >> 24);
	h->f[1] = (uint8_t)(seq >> 16);
	h->f[2] = (uint8_t)(seq >> 8);
	h->f[3] = (uint8_t)seq;
	memcpy(h->f + 4, &seq, 4);
	reorder_burst(h->p, &pk, 1, t);
	identity(h);
}

/* Batches [first, first + n) of a run, in order, all at time t. */
static void
h_run(struct h *h, uint32_t first, uint32_t n, uint64_t t)
{
	uint32_t ppb = h->cfg.packets_per_batch;

	for (uint32_t s = first * ppb; s < (first + n) * ppb; s++)
		h_send(h, s, t);
}

/* The sender of `daqiri-sim --batches 2` run twice: the second run's
 * batch 0 is two behind base 2, within the window (4): late, until a
 * whole batch of them in a row starts a new epoch. Its 16th packet is
 * placed there; the 15 before it stay late. */
START_TEST(test_restart_within_window_by_volume)
{
	struct h *h = malloc(sizeof(*h));

	h_init(h, 16, 4, 10, 0);
	h_run(h, 0, 2, 1000);
	ck_assert_int_eq(h->o.nlog, 2);
	h_run(h, 0, 2, 2000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 15);
	ck_assert_uint_eq(C(h)->placed, 32 + 1 + 16);
	/* batch 1 is complete, waiting behind batch 0 until its deadline */
	ck_assert_int_eq(h->o.nlog, 2);
	reorder_poll(h->p, 2000 + 10000);
	ck_assert_int_eq(h->o.nlog, 4);
	ck_assert_uint_eq(h->o.log[2].batch_id, 0);
	ck_assert_uint_eq(h->o.log[2].packets_received, 1);
	ck_assert_uint_eq(h->o.log[2].flags, DAQIRI_TENSOR_RESYNC |
	    DAQIRI_TENSOR_HAS_GAPS | DAQIRI_TENSOR_TIMEOUT);
	ck_assert_uint_eq(h->o.log[3].batch_id, 1);
	ck_assert_uint_eq(h->o.log[3].flags, DAQIRI_TENSOR_COMPLETE);
	/* and a third run the same way */
	h_run(h, 0, 2, 3000000);
	ck_assert_uint_eq(C(h)->resync, 2);
	ck_assert_uint_eq(C(h)->late, 30);
	reorder_flush(h->p, 3000001);
	ck_assert_int_eq(h->o.nlog, 6);
	ck_assert(h->o.log[4].flags & DAQIRI_TENSOR_RESYNC);
	ck_assert(!(h->o.log[5].flags & DAQIRI_TENSOR_RESYNC));
	identity(h);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* A row of late packets ends at any packet of an open or newer batch:
 * stragglers mixed into a live stream never add up to a resync. */
START_TEST(test_late_row_broken_by_live_packet)
{
	struct h *h = malloc(sizeof(*h));
	struct rx_frame pk = { .hdr_len = 6, .rx_ns = 2000 };
	uint32_t s;

	h_init(h, 16, 4, 0, 0);
	h_run(h, 0, 3, 1000);		/* base 3 */
	for (s = 0; s < 15; s++)
		h_send(h, 16 + s, 2000);	/* batch 1 again: late */
	h_send(h, 3 * 16, 2000);	/* batch 3 opens: the row ends */
	for (s = 0; s < 15; s++)
		h_send(h, 16 + s, 2000);
	ck_assert_uint_eq(C(h)->late, 30);
	ck_assert_uint_eq(C(h)->resync, 0);
	/* a malformed packet (2 payload bytes, not 4) does not end a row */
	pk.hdr = h->f;
	reorder_burst(h->p, &pk, 1, 2000);
	ck_assert_uint_eq(C(h)->malformed, 1);
	h_send(h, 16 + 15, 2000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 30);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* Tiny batches need REORDER_RESYNC_RUN_MIN late packets in a row. */
START_TEST(test_volume_minimum_for_small_batches)
{
	struct h *h = malloc(sizeof(*h));
	uint32_t s;

	h_init(h, 1, 4, 0, 0);
	h_run(h, 0, 4, 1000);		/* base 4 */
	for (s = 0; s < REORDER_RESYNC_RUN_MIN - 1; s++)
		h_send(h, s % 4, 2000);
	ck_assert_uint_eq(C(h)->late, REORDER_RESYNC_RUN_MIN - 1);
	ck_assert_uint_eq(C(h)->resync, 0);
	h_send(h, 0, 2000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->placed, 5);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* By time: a late packet for a batch published more than resync_after_us
 * ago starts a new epoch at once, so nothing of the new run is lost. At
 * exactly resync_after_us it is still late. */
START_TEST(test_restart_by_time)
{
	struct h *h = malloc(sizeof(*h));

	h_init(h, 16, 4, 100, 200);
	h_run(h, 0, 2, 1000);		/* published at 1000 ns */
	h_send(h, 0, 1000 + 200000);
	ck_assert_uint_eq(C(h)->late, 1);
	ck_assert_uint_eq(C(h)->resync, 0);
	h_run(h, 0, 2, 1000 + 200001);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 1);
	ck_assert_uint_eq(C(h)->placed, 64);
	ck_assert_int_eq(h->o.nlog, 4);
	ck_assert_uint_eq(h->o.log[2].batch_id, 0);
	ck_assert_uint_eq(h->o.log[2].flags, DAQIRI_TENSOR_COMPLETE |
	    DAQIRI_TENSOR_RESYNC);
	ck_assert_uint_eq(h->o.log[3].flags, DAQIRI_TENSOR_COMPLETE);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* A real straggler: batch 0 is pushed out (EVICTED) by newer batches
 * before its last packet arrives, still within its deadline: late, never
 * a resync -- with the default resync_after_us (2 x timeout_us) and even
 * with the shortest the config allows (timeout_us). A straggler of a
 * batch still open is placed. */
START_TEST(test_straggler_within_deadline_stays_late)
{
	for (uint32_t after = 100; after <= 200; after += 100) {
		struct h *h = malloc(sizeof(*h));

		h_init(h, 4, 2, 100, after);
		h_send(h, 0, 0);
		h_send(h, 1, 0);
		h_send(h, 2, 0);		/* batch 0: slot 3 delayed */
		h_send(h, 4, 5000);		/* batch 1 */
		h_send(h, 9, 10000);		/* batch 2 evicts batch 0 */
		ck_assert_int_eq(h->o.nlog, 1);
		ck_assert_uint_eq(h->o.log[0].flags,
		    DAQIRI_TENSOR_EVICTED | DAQIRI_TENSOR_HAS_GAPS);
		h_send(h, 5, 20000);		/* open batch 1: placed */
		h_send(h, 3, 99999);		/* batch 0's straggler */
		ck_assert_uint_eq(C(h)->late, 1);
		ck_assert_uint_eq(C(h)->resync, 0);
		ck_assert_uint_eq(C(h)->placed, 6);
		reorder_destroy(h->p);
		free(h);
	}
}
END_TEST

/* resync_after_us 0: no resync by time, however old the batch. */
START_TEST(test_time_rule_off)
{
	struct h *h = malloc(sizeof(*h));

	h_init(h, 16, 4, 100, 0);
	h_run(h, 0, 2, 1000);
	h_send(h, 0, 1000000000000ull);
	ck_assert_uint_eq(C(h)->late, 1);
	ck_assert_uint_eq(C(h)->resync, 0);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* A reload's retune turns the time rule on (and the window change keeps
 * the positions' times). */
START_TEST(test_retune_resync_after)
{
	struct h *h = malloc(sizeof(*h));
	struct reorder_tune *t;

	h_init(h, 16, 4, 100, 0);
	h_run(h, 0, 2, 1000);
	h_send(h, 0, 5000000);
	ck_assert_uint_eq(C(h)->late, 1);
	t = reorder_tune_prepare(h->p, 100, DAQIRI_FILL_ZERO, 8);
	ck_assert_ptr_nonnull(t);
	reorder_tune_set_resync_after(t, 1000);
	reorder_tune_apply(h->p, t, 5000000);
	reorder_tune_free(t);
	ck_assert_uint_eq(reorder_config(h->p)->resync_after_us, 1000);
	h_send(h, 1, 5000000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 1);
	/* a tune without the call keeps it */
	t = reorder_tune_prepare(h->p, 100, DAQIRI_FILL_ZERO, 4);
	ck_assert_ptr_nonnull(t);
	reorder_tune_apply(h->p, t, 5000000);
	reorder_tune_free(t);
	ck_assert_uint_eq(reorder_config(h->p)->resync_after_us, 1000);
	identity(h);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* Far behind the window stays a resync on the first packet, as before. */
START_TEST(test_far_behind_resyncs_at_once)
{
	struct h *h = malloc(sizeof(*h));

	h_init(h, 16, 4, 100, 0);
	h_run(h, 0, 10, 1000);
	h_run(h, 0, 2, 2000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 0);
	ck_assert_uint_eq(C(h)->placed, 12 * 16);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

/* A restart in the middle of a batch: the half batch goes out at its
 * deadline; the next run starts a new epoch and is followed. */
START_TEST(test_restart_mid_batch)
{
	struct h *h = malloc(sizeof(*h));
	uint32_t s;

	h_init(h, 16, 4, 100, 200);
	h_run(h, 0, 1, 1000);
	for (s = 16; s < 24; s++)
		h_send(h, s, 2000);		/* batch 1: half */
	reorder_poll(h->p, 2000 + 100000);	/* its deadline */
	ck_assert_int_eq(h->o.nlog, 2);
	ck_assert_uint_eq(h->o.log[1].flags,
	    DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	/* restarted soon after: by volume */
	h_run(h, 0, 3, 150000);
	ck_assert_uint_eq(C(h)->resync, 1);
	ck_assert_uint_eq(C(h)->late, 15);
	reorder_flush(h->p, 150001);
	ck_assert_int_eq(h->o.nlog, 5);
	ck_assert(h->o.log[2].flags & DAQIRI_TENSOR_RESYNC);
	ck_assert_uint_eq(h->o.log[3].flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(h->o.log[4].flags, DAQIRI_TENSOR_COMPLETE);
	reorder_destroy(h->p);
	free(h);
}
END_TEST

static Suite *
resync_suite(void)
{
	Suite *s = suite_create("resync");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, test_restart_within_window_by_volume);
	tcase_add_test(tc, test_late_row_broken_by_live_packet);
	tcase_add_test(tc, test_volume_minimum_for_small_batches);
	tcase_add_test(tc, test_restart_by_time);
	tcase_add_test(tc, test_straggler_within_deadline_stays_late);
	tcase_add_test(tc, test_time_rule_off);
	tcase_add_test(tc, test_retune_resync_after);
	tcase_add_test(tc, test_far_behind_resyncs_at_once);
	tcase_add_test(tc, test_restart_mid_batch);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(resync_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
