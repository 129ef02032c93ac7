/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for streams (daemon/stream_main.c, stream_worker.c) as the
 * RX worker and a consumer see them, in one process: subscriptions with
 * their real memfds and rings, tensors read through the read-only
 * mappings, broadcast and shared delivery, overruns, bad release rings,
 * unsubscribe, a raw stream, the JSON views, the latency histograms,
 * the lossless policy (never skipped, no_buffer charged to it), and
 * isolation: sealed memory, a private duplicate-detection bitmap,
 * admission control on held buffers, the hold timeout.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "mem.h"
#include "raw.h"
#include "ring.h"
#include "stream.h"

#define PPB		8
#define PAYLOAD		16
#define HDR		4
#define FRAME		(HDR + PAYLOAD)
#define T0		1000000000ull	/* receive time base, ns */
#define ERRLEN		256
#define WINDOW		4
/* Buffers admission keeps from the consumers: the window and one more. */
#define SPARE		(WINDOW + 1)

/* ------------------------------------------------------------------ */
/* The stream under test. */

struct fix {
	struct cfg_region cr;
	struct mem_region region;
	struct cfg_reorder r;
	struct cfg_interface *ifc;
	struct stream *s;
	uint32_t nbufs;
};

static void
fix_init(struct fix *f, uint32_t nbufs, uint32_t timeout_us)
{
	char err[ERRLEN] = "";
	int rc;

	memset(f, 0, sizeof(*f));
	f->nbufs = nbufs;
	snprintf(f->cr.name, sizeof(f->cr.name), "tensors");
	f->cr.kind = DAQIRI_MEM_HOST;
	f->cr.num_bufs = nbufs;
	f->cr.buf_size = PPB * PAYLOAD;
	rc = mem_region_create(&f->cr, &f->region, err, sizeof(err));
	ck_assert_msg(rc == 0, "mem_region_create: %s", err);

	snprintf(f->r.name, sizeof(f->r.name), "r0");
	f->r.type = CFG_REORDER_CPU;
	f->r.region_idx = 0;
	snprintf(f->r.region_name, sizeof(f->r.region_name), "tensors");
	f->r.payload_byte_offset = HDR;
	f->r.payload_bytes = PAYLOAD;
	f->r.slot_bytes = PAYLOAD;
	f->r.method = CFG_METHOD_SEQ_PACKETS_PER_BATCH;
	f->r.seq.bit_offset = 0;
	f->r.seq.bit_width = 32;
	f->r.packets_per_batch = PPB;
	f->r.window = WINDOW;
	f->r.fill = DAQIRI_FILL_ZERO;
	f->r.timeout_us = timeout_us;

	f->ifc = calloc(1, sizeof(*f->ifc));
	ck_assert_ptr_nonnull(f->ifc);
	snprintf(f->ifc->name, sizeof(f->ifc->name), "eth0");
	rc = stream_create(&f->s, f->ifc, &f->r, &f->region, NULL, err,
	    sizeof(err));
	ck_assert_msg(rc == 0, "stream_create: %s", err);
	ck_assert_str_eq(stream_name(f->s), "eth0/r0");
}

static void
fix_fini(struct fix *f)
{
	stream_destroy(f->s);
	mem_region_destroy(&f->region);
	free(f->ifc);
}

/* Counters as main sees them, with the accounting invariant checked. */
static void
counters(struct fix *f, struct reorder_counters *reorder, struct stream_counters *sc)
{
	stream_publish_counters(f->s);
	stream_snapshot(f->s, reorder, sc);
	ck_assert_uint_eq(reorder->packets_in, reorder->placed + reorder->duplicate +
	    reorder->late + reorder->malformed + reorder->no_buffer +
	    reorder->backend_error);
	ck_assert_uint_eq(sc->free_bufs + sc->held_bufs + sc->open_bufs,
	    f->nbufs);
}

/* Payload byte i of the packet with sequence number seq. */
static uint8_t
pay(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 13u + i * 5u + 3u);
}

/* Send the slots of batch b set in mask (bit s = slot s), in order. */
static void
feed(struct fix *f, uint32_t b, uint32_t mask, uint64_t rx_ns)
{
	static uint8_t fr[PPB][FRAME];
	struct rx_frame k[PPB];
	unsigned n = 0;

	memset(k, 0, sizeof(k));	/* fields a frame may leave unset */

	for (uint32_t s = 0; s < PPB; s++) {
		uint32_t seq = b * PPB + s;

		if (!(mask & (1u << s)))
			continue;
		fr[n][0] = (uint8_t)(seq >> 24);
		fr[n][1] = (uint8_t)(seq >> 16);
		fr[n][2] = (uint8_t)(seq >> 8);
		fr[n][3] = (uint8_t)seq;
		for (uint32_t i = 0; i < PAYLOAD; i++)
			fr[n][HDR + i] = pay(seq, i);
		k[n].hdr = fr[n];
		k[n].hdr_len = FRAME;
		k[n].payload = NULL;
		k[n].payload_len = 0;
		k[n].rx_ns = rx_ns + s;
		n++;
	}
	stream_burst(f->s, k, n, rx_ns + PPB, NULL);
}

#define ALL	((1u << PPB) - 1)

/* ------------------------------------------------------------------ */
/* A consumer: the four fds, the ring attached, the memory mapped. */

struct cons {
	struct daqiri_sub_info info;
	int fds[DAQIRI_SUB_MAX_FDS];
	int nfds;
	void *ring_mem;
	struct daqiri_ring ring;
	const uint8_t *tensors;
	const uint8_t *bitmaps;
	size_t bitmaps_len;
	uint64_t conn_id;
	uint32_t sub_id;
};

/* What the last refused subscribe() was told. */
static struct daqiri_err last_err;

/* Ring depth the next subscribe() asks for (0 = the default). */
static uint32_t sub_depth;
/* Whether subscribe()'s peer is root or the admin group: most cases test
 * the mechanics, with the whole budget; test_uid_share the per-uid half. */
static bool sub_admin = true;
/* Delivery policy of the next subscribe() (latest unless a case says). */
static enum daqiri_sub_policy sub_policy = DAQIRI_POLICY_LATEST;

static int
subscribe(struct fix *f, struct cons *c, enum daqiri_sub_mode mode,
	  const char *group, uint32_t max_held, uint64_t conn_id,
	  uint32_t sub_id)
{
	struct daqiri_sub_req req;
	struct control_peer peer;
	struct daqiri_err err;
	void *m;
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&req, 0, sizeof(req));
	memset(&peer, 0, sizeof(peer));
	memset(&err, 0, sizeof(err));
	snprintf(req.stream, sizeof(req.stream), "%s", stream_name(f->s));
	req.mode = mode;
	snprintf(req.group, sizeof(req.group), "%s", group);
	req.max_held = max_held;
	req.depth = sub_depth;
	req.policy = sub_policy;
	peer.conn_id = conn_id;
	peer.pid = 4000 + (pid_t)sub_id;
	peer.uid = 1000;
	peer.admin = sub_admin;
	c->conn_id = conn_id;
	c->sub_id = sub_id;
	for (int k = 0; k < DAQIRI_SUB_MAX_FDS; k++)
		c->fds[k] = -1;
	rc = stream_subscribe(f->s, &req, &peer, sub_id, &c->info, c->fds,
	    &c->nfds, &err);
	last_err = err;
	if (rc != 0) {
		for (int k = 0; k < c->nfds; k++)
			close(c->fds[k]);
		c->nfds = 0;
		return rc;
	}
	ck_assert_int_eq(c->nfds, 4);
	ck_assert_int_eq(daqiri_sub_info_check(&c->info, &err), 0);

	m = mmap(NULL, c->info.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    c->fds[2], 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	c->ring_mem = m;
	ck_assert_int_eq(daqiri_ring_attach(&c->ring, m, c->info.ring_bytes), 0);
	m = mmap(NULL, c->info.map_bytes, PROT_READ, MAP_SHARED, c->fds[0], 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	c->tensors = m;
	c->bitmaps_len = (size_t)c->info.nbufs * c->info.bitmap_bytes;
	m = mmap(NULL, c->bitmaps_len, PROT_READ, MAP_SHARED, c->fds[1], 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	c->bitmaps = m;
	return 0;
}

static void
cons_close(struct cons *c)
{
	if (c->ring_mem != NULL)
		munmap(c->ring_mem, c->info.ring_bytes);
	if (c->tensors != NULL)
		munmap((void *)c->tensors, c->info.map_bytes);
	if (c->bitmaps != NULL)
		munmap((void *)c->bitmaps, c->bitmaps_len);
	for (int k = 0; k < c->nfds; k++)
		if (c->fds[k] >= 0)
			close(c->fds[k]);
	memset(c, 0, sizeof(*c));
}

/* Pop one descriptor: 1 with *d, 0 when empty. */
static int
pop(struct cons *c, struct daqiri_desc *d)
{
	int rc = daqiri_comp_pop(&c->ring, d);

	ck_assert_int_ge(rc, 0);
	return rc;
}

static void
release(struct cons *c, uint32_t idx)
{
	ck_assert_int_eq(daqiri_rel_push(&c->ring, idx), 0);
}

static const uint8_t *
tensor_of(const struct cons *c, uint32_t idx)
{
	return c->tensors + c->info.buf_offset + (uint64_t)idx *
	    c->info.buf_stride;
}

static uint64_t
bitmap_of(const struct cons *c, uint32_t idx)
{
	uint64_t v;

	memcpy(&v, c->bitmaps + (size_t)idx * c->info.bitmap_bytes, sizeof(v));
	return v;
}

/* d is batch b with the slots of mask, bytes and bitmap as sent (missing
 * slots zero-filled). */
static void
check_tensor(const struct cons *c, const struct daqiri_desc *d, uint32_t b,
	     uint32_t mask)
{
	const uint8_t *t;

	ck_assert_uint_lt(d->buf_index, c->info.nbufs);
	ck_assert_uint_eq(d->batch_id, b);
	ck_assert_uint_eq(d->packets_expected, PPB);
	ck_assert_uint_eq(d->packets_received, __builtin_popcount(mask));
	ck_assert_uint_eq(d->bytes, PPB * PAYLOAD);
	ck_assert_uint_eq(bitmap_of(c, d->buf_index), mask);
	t = tensor_of(c, d->buf_index);
	for (uint32_t s = 0; s < PPB; s++)
		for (uint32_t i = 0; i < PAYLOAD; i++)
			ck_assert_msg(t[s * PAYLOAD + i] == (mask & (1u << s) ?
			    pay(b * PPB + s, i) : 0),
			    "batch %u slot %u byte %u", b, s, i);
}

/* The consumers_json record of sub_id (conn_id), field name. */
static double
sub_field(struct fix *f, uint64_t conn_id, uint32_t sub_id, const char *name)
{
	cJSON *arr = cJSON_CreateArray(), *o, *v;
	double r = -1;

	ck_assert_int_eq(stream_consumers_json(f->s, arr), 0);
	cJSON_ArrayForEach(o, arr) {
		if (cJSON_GetObjectItem(o, "conn")->valuedouble != (double)conn_id ||
		    cJSON_GetObjectItem(o, "sub_id")->valuedouble != sub_id)
			continue;
		v = cJSON_GetObjectItem(o, name);
		ck_assert_ptr_nonnull(v);
		r = cJSON_IsNumber(v) ? v->valuedouble : 0;
	}
	cJSON_Delete(arr);
	return r;
}

static const char *
sub_state(struct fix *f, uint64_t conn_id, uint32_t sub_id, char *buf,
	  size_t len)
{
	cJSON *arr = cJSON_CreateArray(), *o;

	snprintf(buf, len, "(none)");
	ck_assert_int_eq(stream_consumers_json(f->s, arr), 0);
	cJSON_ArrayForEach(o, arr)
		if (cJSON_GetObjectItem(o, "conn")->valuedouble == (double)conn_id &&
		    cJSON_GetObjectItem(o, "sub_id")->valuedouble == sub_id)
			snprintf(buf, len, "%s",
			    cJSON_GetStringValue(cJSON_GetObjectItem(o, "state")));
	cJSON_Delete(arr);
	return buf;
}

struct reaped {
	int n;
	uint64_t conn_id;
	uint32_t sub_id;
	char why[256];
};

static void
reap_cb(void *ctx, uint64_t conn_id, uint32_t sub_id, const char *why)
{
	struct reaped *r = ctx;

	r->n++;
	r->conn_id = conn_id;
	r->sub_id = sub_id;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

/* ------------------------------------------------------------------ */

/* (1) Broadcast: every tensor, right bytes and bitmap; buffers return. */
START_TEST(test_broadcast_delivers_all)
{
	struct fix f;
	struct cons c;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	uint64_t ev = 0;
	void *w;

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	ck_assert_uint_eq(c.info.kind, DAQIRI_STREAM_REORDER);
	ck_assert_uint_eq(c.info.mem_kind, DAQIRI_MEM_HOST);
	ck_assert_uint_eq(c.info.nbufs, f.nbufs);
	ck_assert_uint_eq(c.info.ppb, PPB);
	ck_assert_uint_eq(c.info.slot_bytes, PAYLOAD);
	ck_assert_uint_eq(c.info.tensor_bytes, PPB * PAYLOAD);
	ck_assert_uint_eq(c.info.max_held, 4);
	ck_assert_uint_ge(c.info.ring_depth, 4);
	/* the tensor fd is read-only: no writable shared mapping */
	w = mmap(NULL, c.info.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    c.fds[0], 0);
	ck_assert_ptr_eq(w, MAP_FAILED);

	/* before the worker runs the ADD, a tensor reaches nobody */
	feed(&f, 0, ALL, T0);
	ck_assert_int_eq(pop(&c, &d), 0);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 1);
	ck_assert_uint_eq(sc.unseen, 1);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);

	stream_service(f.s, T0);
	for (uint32_t b = 1; b <= 10; b++) {
		feed(&f, b, ALL, T0 + b * 1000);
		stream_service(f.s, T0 + b * 1000 + 500);
		ck_assert_int_eq(pop(&c, &d), 1);
		ck_assert_uint_eq(d.flags, DAQIRI_TENSOR_COMPLETE);
		ck_assert_uint_eq(d.seq, b);
		ck_assert_uint_eq(d.first_rx_ns, T0 + b * 1000);
		ck_assert_uint_eq(d.last_rx_ns, T0 + b * 1000 + PPB - 1);
		ck_assert_uint_ne(d.publish_ns, 0);
		check_tensor(&c, &d, b, ALL);
		ck_assert_int_eq(pop(&c, &d), 0);
		counters(&f, &reorder, &sc);
		ck_assert_uint_eq(sc.held_bufs, 1);
		release(&c, d.buf_index);
		stream_service(f.s, T0 + b * 1000 + 600);
		counters(&f, &reorder, &sc);
		ck_assert_uint_eq(sc.held_bufs, 0);
		ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	}
	/* A new ring asks for a wake-up: the first publish sent one; this
	 * consumer never armed again, so the other ten sent none. */
	ck_assert_int_eq(recv(c.fds[3], &ev, sizeof(ev), MSG_DONTWAIT), 1);
	ck_assert_int_eq(recv(c.fds[3], &ev, sizeof(ev), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);

	/* a batch with gaps, published at stop: bitmap and zero fill */
	feed(&f, 11, 0xB7, T0 + 20000);		/* slots 3 and 6 missing */
	ck_assert_int_eq(pop(&c, &d), 0);
	stream_flush(f.s, T0 + 21000);
	ck_assert_int_eq(pop(&c, &d), 1);
	ck_assert(d.flags & DAQIRI_TENSOR_HAS_GAPS);
	ck_assert(d.flags & DAQIRI_TENSOR_FLUSH);
	ck_assert(!(d.flags & DAQIRI_TENSOR_COMPLETE));
	ck_assert_uint_eq(d.seq, 11);
	check_tensor(&c, &d, 11, 0xB7);
	release(&c, d.buf_index);
	stream_service(f.s, T0 + 22000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 12);
	ck_assert_uint_eq(sc.delivered, 11);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_uint_eq(sc.overruns, 0);
	ck_assert_uint_eq(reorder.packets_in, 11 * PPB + 6);
	ck_assert_uint_eq(reorder.placed, 11 * PPB + 6);
	ck_assert_double_eq(sub_field(&f, 1, 1, "delivered"), 11);
	ck_assert_double_eq(sub_field(&f, 1, 1, "released"), 11);
	ck_assert_double_eq(sub_field(&f, 1, 1, "held"), 0);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

/* (2) A subscriber that never releases overruns once per tensor after
 * max_held; another broadcast subscriber still sees every tensor. */
START_TEST(test_broadcast_overruns)
{
	struct fix f;
	struct cons a, b;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;

	fix_init(&f, 6 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &a, DAQIRI_SUB_BROADCAST, "", 2, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &b, DAQIRI_SUB_BROADCAST, "", 4, 2, 1), 0);
	stream_service(f.s, T0);
	for (uint32_t k = 0; k < 8; k++) {
		uint64_t want = k + 1 > 2 ? k + 1 - 2 : 0;

		feed(&f, k, ALL, T0 + k * 1000);
		ck_assert_int_eq(pop(&b, &d), 1);
		ck_assert_uint_eq(d.seq, k);
		check_tensor(&b, &d, k, ALL);
		release(&b, d.buf_index);
		stream_service(f.s, T0 + k * 1000 + 500);
		counters(&f, &reorder, &sc);
		ck_assert_double_eq(sub_field(&f, 1, 1, "overruns"), (double)want);
		ck_assert_double_eq(sub_field(&f, 2, 1, "overruns"), 0);
		ck_assert_uint_eq(sc.overruns, want);
		ck_assert_uint_eq(sc.held_bufs, k < 2 ? k + 1 : 2);
	}
	/* a got exactly the first two, still intact */
	ck_assert_int_eq(pop(&a, &d), 1);
	ck_assert_uint_eq(d.seq, 0);
	check_tensor(&a, &d, 0, ALL);
	ck_assert_int_eq(pop(&a, &d), 1);
	ck_assert_uint_eq(d.seq, 1);
	check_tensor(&a, &d, 1, ALL);
	ck_assert_int_eq(pop(&a, &d), 0);
	ck_assert_double_eq(sub_field(&f, 1, 1, "held"), 2);
	ck_assert_uint_eq(sc.published, 8);
	ck_assert_uint_eq(sc.delivered, 10);
	ck_assert_uint_eq(sc.unseen, 0);
	cons_close(&a);
	cons_close(&b);
	fix_fini(&f);
}
END_TEST

/* (3) A shared group of two: strict alternation, each tensor once. */
START_TEST(test_shared_round_robin)
{
	struct fix f;
	struct cons m[2];
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	int last = -1, count[2] = { 0, 0 };

	fix_init(&f, 8 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &m[0], DAQIRI_SUB_SHARED, "g", 4, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &m[1], DAQIRI_SUB_SHARED, "g", 4, 2, 1), 0);
	ck_assert_str_eq(m[0].info.group, "g");
	ck_assert_uint_eq(m[1].info.mode, DAQIRI_SUB_SHARED);
	stream_service(f.s, T0);
	for (uint32_t k = 0; k < 12; k++) {
		int who = -1;

		feed(&f, k, ALL, T0 + k * 1000);
		for (int j = 0; j < 2; j++) {
			if (pop(&m[j], &d) == 0)
				continue;
			ck_assert_msg(who == -1, "tensor %u went to both", k);
			who = j;
			ck_assert_uint_eq(d.seq, k);
			check_tensor(&m[j], &d, k, ALL);
			release(&m[j], d.buf_index);
			ck_assert_int_eq(pop(&m[j], &d), 0);
		}
		ck_assert_msg(who >= 0, "tensor %u went to nobody", k);
		ck_assert_msg(who != last, "tensor %u: member %d twice", k, who);
		last = who;
		count[who]++;
		stream_service(f.s, T0 + k * 1000 + 500);
	}
	ck_assert_int_eq(count[0], 6);
	ck_assert_int_eq(count[1], 6);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 12);
	ck_assert_uint_eq(sc.delivered, 12);
	ck_assert_uint_eq(sc.overruns, 0);
	ck_assert_uint_eq(sc.unseen, 0);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	cons_close(&m[0]);
	cons_close(&m[1]);
	fix_fini(&f);
}
END_TEST

/* (3b) A member without room is skipped; when nobody has room the
 * tensor is unseen and one overrun is counted. */
START_TEST(test_shared_skips_full_member)
{
	struct fix f;
	struct cons m[2];
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	int got[2] = { 0, 0 };

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &m[0], DAQIRI_SUB_SHARED, "g", 1, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &m[1], DAQIRI_SUB_SHARED, "g", 3, 2, 1), 0);
	stream_service(f.s, T0);
	/* nobody releases: m0 takes 1, m1 takes 3, the fifth finds no room */
	for (uint32_t k = 0; k < 5; k++)
		feed(&f, k, ALL, T0 + k * 1000);
	for (int j = 0; j < 2; j++)
		while (pop(&m[j], &d) == 1)
			got[j]++;
	ck_assert_int_eq(got[0], 1);
	ck_assert_int_eq(got[1], 3);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 5);
	ck_assert_uint_eq(sc.delivered, 4);
	ck_assert_uint_eq(sc.unseen, 1);
	ck_assert_uint_eq(sc.overruns, 1);
	ck_assert_uint_eq(sc.held_bufs, 4);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs - 4);
	cons_close(&m[0]);
	cons_close(&m[1]);
	fix_fini(&f);
}
END_TEST

/* (4) Garbage in the release ring cuts that subscriber off, once, and
 * gives its buffers back; the other one is unaffected. _i picks the kind:
 * 0 index out of range, 1 index not held, 2 double release, 3 corrupted
 * rel_head. */
START_TEST(test_bad_release_ring)
{
	struct fix f;
	struct cons v, o;
	struct daqiri_desc d0, d1, d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct reaped rp;
	char st[32];
	uint32_t other;

	fix_init(&f, 8 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &v, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &o, DAQIRI_SUB_BROADCAST, "", 4, 2, 1), 0);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	feed(&f, 1, ALL, T0 + 1000);
	ck_assert_int_eq(pop(&v, &d0), 1);
	ck_assert_int_eq(pop(&v, &d1), 1);
	/* the other subscriber releases at once */
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(pop(&o, &d), 1);
		release(&o, d.buf_index);
	}
	stream_service(f.s, T0 + 2000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 2);

	switch (_i) {
	case 0:
		release(&v, f.nbufs + 5);
		break;
	case 1:
		for (other = 0; other == d0.buf_index || other == d1.buf_index;
		    other++)
			;
		release(&v, other);
		break;
	case 2:
		release(&v, d0.buf_index);
		stream_service(f.s, T0 + 2500);
		counters(&f, &reorder, &sc);
		ck_assert_uint_eq(sc.subs_broken, 0);	/* a good release */
		ck_assert_uint_eq(sc.held_bufs, 1);
		release(&v, d0.buf_index);
		break;
	default: {
		struct daqiri_ring_shm *h = v.ring_mem;

		atomic_store(&h->rel_head, atomic_load(&h->rel_tail) +
		    v.info.ring_depth + 5);
		break;
	}
	}
	stream_service(f.s, T0 + 3000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_broken, 1);
	ck_assert_uint_eq(sc.held_bufs, 0);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_str_eq(sub_state(&f, 1, 1, st, sizeof(st)), "broken");
	ck_assert_str_eq(sub_state(&f, 2, 1, st, sizeof(st)), "active");

	memset(&rp, 0, sizeof(rp));
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(rp.n, 1);
	ck_assert_uint_eq(rp.conn_id, 1);
	ck_assert_uint_eq(rp.sub_id, 1);
	ck_assert_str_ne(rp.why, "");
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(rp.n, 1);		/* reported once */

	/* the other subscriber goes on; the broken one gets nothing more */
	feed(&f, 2, ALL, T0 + 4000);
	ck_assert_int_eq(pop(&o, &d), 1);
	ck_assert_uint_eq(d.seq, 2);
	check_tensor(&o, &d, 2, ALL);
	release(&o, d.buf_index);
	ck_assert_int_eq(daqiri_comp_pop(&v.ring, &d), 0);
	stream_service(f.s, T0 + 5000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_uint_eq(sc.delivered, 5);
	ck_assert_uint_eq(sc.subs_broken, 1);

	/* ending the broken one frees it, without another report */
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 1), 1);
	stream_service(f.s, T0 + 6000);
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(rp.n, 1);
	ck_assert_int_eq(stream_nsubs(f.s), 1);
	cons_close(&v);
	cons_close(&o);
	fix_fini(&f);
}
END_TEST

/* (4b) A consumer that corrupts comp_tail is cut off at the next
 * publish; the tensor still reaches the others. */
START_TEST(test_bad_completion_ring)
{
	struct fix f;
	struct cons v, o;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct reaped rp;
	struct daqiri_ring_shm *h;
	char st[32];

	memset(&rp, 0, sizeof(rp));
	fix_init(&f, 8 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &v, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &o, DAQIRI_SUB_BROADCAST, "", 4, 2, 1), 0);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	ck_assert_int_eq(pop(&o, &d), 1);
	release(&o, d.buf_index);
	h = v.ring_mem;
	atomic_store(&h->comp_tail, atomic_load(&h->comp_head) + 5);
	stream_service(f.s, T0 + 1000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_broken, 0);
	ck_assert_uint_eq(sc.held_bufs, 1);	/* v holds tensor 0 */
	feed(&f, 1, ALL, T0 + 2000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_broken, 1);
	ck_assert_uint_eq(sc.held_bufs, 1);	/* tensor 1, held by o only */
	ck_assert_str_eq(sub_state(&f, 1, 1, st, sizeof(st)), "broken");
	ck_assert_int_eq(pop(&o, &d), 1);
	ck_assert_uint_eq(d.seq, 1);
	check_tensor(&o, &d, 1, ALL);
	release(&o, d.buf_index);
	stream_service(f.s, T0 + 3000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(rp.n, 1);
	ck_assert_uint_eq(rp.conn_id, 1);
	cons_close(&v);
	cons_close(&o);
	fix_fini(&f);
}
END_TEST

/* Subscription limits: max_held default and refusal, ring depth, the
 * subscription count (default and raised), and an unsubscribe before
 * the worker saw it. */
START_TEST(test_subscribe_limits)
{
	enum { MANY = STREAM_MAX_SUBS + 36 };
	struct fix f;
	static struct cons c[MANY + 1];
	struct daqiri_desc d;
	struct daqiri_sub_req req;
	struct control_peer peer;
	struct daqiri_sub_info info;
	struct daqiri_err err;
	struct reorder_counters reorder;
	struct stream_counters sc;
	int fds[DAQIRI_SUB_MAX_FDS], nfds = 0;

	fix_init(&f, 8 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 0, 1, 1), 0);
	ck_assert_uint_eq(c[0].info.max_held, (8 + SPARE) / 4);
	cons_close(&c[0]);
	/* more than there are buffers: refused, no longer clamped */
	ck_assert_int_lt(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 100,
	    1, 2), 0);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
	ck_assert_int_eq(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 5, 1, 2), 0);
	ck_assert_uint_eq(c[0].info.max_held, 5);
	ck_assert_uint_ge(c[0].info.ring_depth, f.nbufs);
	cons_close(&c[0]);
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 0), 2);
	stream_service(f.s, T0);
	stream_reap(f.s, NULL, NULL);
	ck_assert_int_eq(stream_nsubs(f.s), 0);
	/* the deepest ring the protocol allows is cut to what can ever be
	 * pending (nbufs, at least the default), so a subscription cannot
	 * make the daemon pin megabytes of ring for nothing */
	sub_depth = DAQIRI_RING_DEPTH_MAX;
	ck_assert_int_eq(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 1, 1, 3), 0);
	sub_depth = 0;
	ck_assert_uint_eq(c[0].info.ring_depth, DAQIRI_RING_DEPTH_DEFAULT);
	cons_close(&c[0]);
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 3), 1);
	stream_service(f.s, T0);
	stream_reap(f.s, NULL, NULL);

	/* subscribed and ended before the worker ran: never delivered to */
	ck_assert_int_eq(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 2, 3, 1), 0);
	ck_assert_int_eq(stream_unsubscribe(f.s, 3, 1), 1);
	stream_service(f.s, T0 + 1);
	feed(&f, 0, ALL, T0 + 2);
	ck_assert_int_eq(pop(&c[0], &d), 0);
	stream_reap(f.s, NULL, NULL);
	ck_assert_int_eq(stream_nsubs(f.s), 0);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.unseen, 1);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	cons_close(&c[0]);
	fix_fini(&f);

	/* STREAM_MAX_SUBS by default, then a clear refusal */
	fix_init(&f, MANY + SPARE, 0);
	for (int k = 0; k < STREAM_MAX_SUBS; k++)
		ck_assert_int_eq(subscribe(&f, &c[k], DAQIRI_SUB_SHARED, "g", 1,
		    10, (uint32_t)k + 1), 0);
	memset(&req, 0, sizeof(req));
	memset(&peer, 0, sizeof(peer));
	memset(&err, 0, sizeof(err));
	req.mode = DAQIRI_SUB_BROADCAST;
	req.max_held = 1;
	peer.conn_id = 11;
	ck_assert_int_lt(stream_subscribe(f.s, &req, &peer, 1, &info, fds,
	    &nfds, &err), 0);
	ck_assert_int_eq(err.status, DAQIRI_ST_TOO_MANY_CONSUMERS);
	for (int k = 0; k < nfds; k++)
		close(fds[k]);
	/* limits change only while nothing is subscribed */
	ck_assert_int_eq(stream_set_limits(f.s, MANY, 0), -EBUSY);
	ck_assert_int_eq(stream_unsubscribe(f.s, 10, 0), STREAM_MAX_SUBS);
	stream_service(f.s, T0 + 3);
	stream_reap(f.s, NULL, NULL);
	for (int k = 0; k < STREAM_MAX_SUBS; k++)
		cons_close(&c[k]);

	/* raised past STREAM_MAX_SUBS (daemon.max_consumers) */
	ck_assert_int_eq(stream_set_limits(f.s, MANY, 0), 0);
	for (int k = 0; k < MANY; k++)
		ck_assert_int_eq(subscribe(&f, &c[k], DAQIRI_SUB_SHARED, "g", 1,
		    10, (uint32_t)k + 1), 0);
	ck_assert_int_lt(subscribe(&f, &c[MANY], DAQIRI_SUB_SHARED, "g", 1,
	    12, 1), 0);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_TOO_MANY_CONSUMERS);
	stream_service(f.s, T0 + 4);
	/* MANY members of one group take one tensor each */
	for (uint32_t b = 1; b <= MANY; b++)
		feed(&f, b, ALL, T0 + b * 1000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.delivered, MANY);
	ck_assert_uint_eq(sc.held_bufs, MANY);
	ck_assert_uint_eq(reorder.batches_no_buffer, 0);
	ck_assert_int_eq(stream_unsubscribe(f.s, 10, 0), MANY);
	stream_service(f.s, T0 + 10000000);
	stream_reap(f.s, NULL, NULL);
	ck_assert_int_eq(stream_nsubs(f.s), 0);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 0);
	for (int k = 0; k < MANY; k++)
		cons_close(&c[k]);
	fix_fini(&f);
}
END_TEST

/* (5) Unsubscribe + service + reap frees the subscription and its
 * buffers; twice is harmless; sub_id 0 ends a whole connection. */
START_TEST(test_unsubscribe)
{
	struct fix f;
	struct cons a, b1, b2;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct reaped rp;
	char st[32];

	memset(&rp, 0, sizeof(rp));
	fix_init(&f, 12 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &a, DAQIRI_SUB_BROADCAST, "", 4, 1, 7), 0);
	ck_assert_int_eq(subscribe(&f, &b1, DAQIRI_SUB_BROADCAST, "", 4, 2, 1), 0);
	ck_assert_int_eq(subscribe(&f, &b2, DAQIRI_SUB_SHARED, "g", 4, 2, 2), 0);
	ck_assert_int_eq(stream_nsubs(f.s), 3);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	feed(&f, 1, ALL, T0 + 1000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 2);

	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 7), 1);
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 7), 0);	/* again */
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 99), 0);	/* no such */
	ck_assert_str_eq(sub_state(&f, 1, 7, st, sizeof(st)), "ending");
	/* b1/b2 still hold both tensors */
	ck_assert_int_eq(pop(&b1, &d), 1);
	release(&b1, d.buf_index);
	ck_assert_int_eq(pop(&b1, &d), 1);
	release(&b1, d.buf_index);
	while (pop(&b2, &d) == 1)
		release(&b2, d.buf_index);
	stream_service(f.s, T0 + 2000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 0);	/* a's held ones came back */
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_int_eq(stream_nsubs(f.s), 3);	/* not reaped yet */
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(stream_nsubs(f.s), 2);
	ck_assert_int_eq(rp.n, 0);
	ck_assert_str_eq(sub_state(&f, 1, 7, st, sizeof(st)), "(none)");
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 7), 0);
	stream_service(f.s, T0 + 2100);
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(stream_nsubs(f.s), 2);

	/* a new tensor is not delivered to the ended one */
	feed(&f, 2, ALL, T0 + 3000);
	ck_assert_int_eq(daqiri_comp_pop(&a.ring, &d), 1);
	ck_assert_uint_eq(d.seq, 0);		/* what it had, unread */
	ck_assert_int_eq(daqiri_comp_pop(&a.ring, &d), 1);
	ck_assert_uint_eq(d.seq, 1);
	ck_assert_int_eq(daqiri_comp_pop(&a.ring, &d), 0);

	/* connection 2 holding tensors, ended whole with sub_id 0 */
	ck_assert_int_eq(pop(&b1, &d), 1);
	ck_assert_uint_eq(d.seq, 2);
	ck_assert_int_eq(stream_unsubscribe(f.s, 2, 0), 2);
	ck_assert_int_eq(stream_unsubscribe(f.s, 2, 0), 0);
	stream_service(f.s, T0 + 4000);
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(stream_nsubs(f.s), 0);
	ck_assert_int_eq(rp.n, 0);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_uint_eq(sc.held_bufs, 0);
	/* with nobody subscribed, tensors are unseen and come straight back */
	feed(&f, 3, ALL, T0 + 5000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.unseen, 1);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	cons_close(&a);
	cons_close(&b1);
	cons_close(&b2);
	fix_fini(&f);
}
END_TEST

/* One batch through the worker to c: published, popped and released. */
static void
one_batch(struct fix *f, struct cons *c, uint32_t b)
{
	struct daqiri_desc d;

	feed(f, b, ALL, T0 + b * 1000);
	stream_service(f->s, T0 + b * 1000 + 500);
	ck_assert_int_eq(pop(c, &d), 1);
	release(c, d.buf_index);
	stream_service(f->s, T0 + b * 1000 + 600);
}

/*
 * Attack 1 of issue 7: the consumer makes its end of the wake-up
 * blocking and fills it, arming before every publish so the worker sends
 * each time. With the eventfd (a dup of the daemon's open file
 * description) clearing O_NONBLOCK and writing 2^64 - 2 made the worker's
 * next write block forever: this test then hangs and Check's timeout
 * fails it. Now each publish returns, the tensors keep coming, and the
 * consumer's writes do not reach the daemon's end.
 */
START_TEST(test_wake_cannot_block)
{
	uint64_t big = 0xfffffffffffffffeull;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct fix f;
	struct cons c;
	char b[8];
	int n = 0;

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 4, 1, 1),
	    0);
	stream_service(f.s, T0);
	ck_assert_int_eq(fcntl(c.fds[3], F_SETFL, 0), 0);
	signal(SIGPIPE, SIG_IGN);
	(void)!write(c.fds[3], &big, sizeof(big));
	(void)!write(c.fds[3], &big, sizeof(big));
	signal(SIGPIPE, SIG_DFL);
	for (uint32_t k = 1; k <= 2000; k++) {
#if DAQIRI_RING_VERSION >= 2
		ck_assert_int_eq(daqiri_ring_arm(&c.ring), 0);
#endif
		one_batch(&f, &c, k);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 2000);
	ck_assert_uint_eq(sc.unseen, 0);
	/* The daemon wrote nothing into its own end: only wake-ups wait
	 * on ours, as many as the daemon's small send buffer holds. */
	while (recv(c.fds[3], b, sizeof(b), MSG_DONTWAIT) == 1)
		n++;
	ck_assert_int_ge(n, 1);
	ck_assert_int_lt(n, 2000);

	/* A shut or closed end: the send fails with EPIPE / ECONNREFUSED,
	 * without SIGPIPE (the default action would kill this test). */
	ck_assert_int_eq(shutdown(c.fds[3], SHUT_RDWR), 0);
	for (uint32_t k = 2001; k <= 2010; k++) {
		ck_assert_int_eq(daqiri_ring_arm(&c.ring), 0);
		one_batch(&f, &c, k);
	}
	close(c.fds[3]);
	c.fds[3] = -1;
	for (uint32_t k = 2011; k <= 2020; k++) {
		ck_assert_int_eq(daqiri_ring_arm(&c.ring), 0);
		one_batch(&f, &c, k);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 2020);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

/* The need_wakeup word: no wake-up for a consumer that does not sleep
 * (the busy-poll case costs the worker no system call), exactly one per
 * arming however many tensors follow. */
START_TEST(test_wake_only_when_armed)
{
	struct fix f;
	struct cons c;
	char b[8];

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 4, 1, 1),
	    0);
	stream_service(f.s, T0);
	daqiri_ring_disarm(&c.ring);
	for (uint32_t k = 1; k <= 10; k++)
		one_batch(&f, &c, k);
	ck_assert_int_eq(recv(c.fds[3], b, sizeof(b), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);

	ck_assert_int_eq(daqiri_ring_arm(&c.ring), 0);
	for (uint32_t k = 11; k <= 15; k++)
		one_batch(&f, &c, k);
	ck_assert_int_eq(recv(c.fds[3], b, sizeof(b), MSG_DONTWAIT), 1);
	ck_assert_int_eq(recv(c.fds[3], b, sizeof(b), MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* the worker cleared the word when it sent */
	ck_assert_uint_eq(atomic_load(&c.ring.shm->need_wakeup), 0);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

/* The daemon's writable mapping of a stream's sidecar, found the way
 * any code in the process could: /proc/self/maps. */
static uint8_t *
daemon_sidecar_mapping(void)
{
	char line[512];
	FILE *fp = fopen("/proc/self/maps", "r");
	unsigned long lo = 0, hi;
	char perms[8];

	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strstr(line, "daqiri-bitmap") == NULL ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (strcmp(perms, "rw-s") == 0)
			break;
		lo = 0;
	}
	fclose(fp);
	ck_assert_msg(lo != 0, "no writable mapping of the sidecar");
	return (uint8_t *)lo;
}

/* (6) Attack 2: a consumer reopens its tensor and sidecar fds O_RDWR
 * through /proc/self/fd; the seals refuse every way to write or resize
 * them, while the daemon's own mapping still works. */
START_TEST(test_consumer_cannot_write)
{
	struct fix f;
	struct cons c;
	struct daqiri_desc d;
	char path[64];
	int fdi[2] = { 0, 1 };

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 2, 1, 1), 0);
	for (int j = 0; j < 2; j++) {
		size_t len = j == 0 ? c.info.map_bytes : c.bitmaps_len;
		const char *what = j == 0 ? "tensor" : "bitmap";
		uint8_t byte = 0x5A;
		void *m;
		int fd, seals;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", c.fds[fdi[j]]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		/* the reopen itself succeeds (memfd inodes are 0777) ... */
		ck_assert_msg(fd >= 0, "%s: reopen O_RDWR: %s", what,
		    strerror(errno));
		seals = fcntl(fd, F_GET_SEALS);
		ck_assert_msg(seals & F_SEAL_FUTURE_WRITE, "%s: not sealed",
		    what);
		ck_assert(seals & F_SEAL_SEAL);
		/* ... but nothing written through it */
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ck_assert_msg(m == MAP_FAILED && errno == EPERM,
		    "%s: mmap(PROT_WRITE) allowed", what);
		errno = 0;
		ck_assert_int_eq(pwrite(fd, &byte, 1, 0), -1);
		ck_assert_msg(errno == EPERM, "%s: write: %s", what,
		    strerror(errno));
		ck_assert_int_eq(ftruncate(fd, 0), -1);
		ck_assert_int_eq(errno, EPERM);
		ck_assert_int_eq(ftruncate(fd, (off_t)len * 2), -1);
		ck_assert_int_eq(errno, EPERM);
		ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert_ptr_ne(m, MAP_FAILED);
		ck_assert_int_eq(mprotect(m, len, PROT_READ | PROT_WRITE), -1);
		ck_assert_int_eq(errno, EACCES);
		munmap(m, len);
		close(fd);
	}
	/* the daemon still writes its tensors and sidecar */
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	ck_assert_int_eq(pop(&c, &d), 1);
	check_tensor(&c, &d, 0, ALL);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

/* (6b) The plan's duplicate detection is its own: clearing the sidecar
 * the consumers map (here through the daemon's own writable mapping,
 * since a consumer cannot get one) neither makes a duplicate count as
 * placed nor changes what is published. */
START_TEST(test_sidecar_is_a_copy)
{
	struct fix f;
	struct cons c;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	uint8_t *side;

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 2, 1, 1), 0);
	stream_service(f.s, T0);
	side = daemon_sidecar_mapping();
	feed(&f, 0, 0x0F, T0);			/* slots 0-3 */
	memset(side, 0, c.bitmaps_len);
	feed(&f, 0, 0x0F, T0 + 100);		/* the same four again */
	memset(side, 0, c.bitmaps_len);
	feed(&f, 0, 0x03, T0 + 200);		/* and two once more */
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(reorder.duplicate, 6);
	ck_assert_uint_eq(reorder.placed, 4);
	ck_assert_uint_eq(sc.published, 0);
	ck_assert_int_eq(pop(&c, &d), 0);
	memset(side, 0xFF, c.bitmaps_len);
	feed(&f, 0, 0xF0, T0 + 300);		/* the other four */
	ck_assert_int_eq(pop(&c, &d), 1);
	ck_assert_uint_eq(d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(d.packets_received, PPB);
	check_tensor(&c, &d, 0, ALL);		/* the bitmap copied at publish */
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(reorder.placed, PPB);
	ck_assert_uint_eq(reorder.missing_slots, 0);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

/* One unprivileged uid gets at most half of a stream's held budget,
 * over all its connections (the static-aftermath finding of the hostile
 * test: one uid could otherwise leave other users no buffer to hold);
 * root and the admin group are bounded by the budget alone. */
START_TEST(test_uid_share)
{
	struct fix f;
	struct cons c[5];

	fix_init(&f, 8 + SPARE, 0);		/* budget 8, share 4 */
	ck_assert_uint_eq(stream_held_budget(f.s), 8);
	ck_assert_uint_eq(stream_uid_share(f.s), 4);
	sub_admin = false;
	ck_assert_int_eq(subscribe(&f, &c[0], DAQIRI_SUB_BROADCAST, "", 3, 1, 1), 0);
	ck_assert_int_lt(subscribe(&f, &c[1], DAQIRI_SUB_BROADCAST, "", 2, 2, 1), 0);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
	ck_assert_msg(strstr(last_err.msg, "max_held 2 would give uid 1000 "
	    "5 held buffers, more than its share of 4") != NULL, "%s",
	    last_err.msg);
	/* a default takes what is left of the share */
	ck_assert_int_eq(subscribe(&f, &c[1], DAQIRI_SUB_BROADCAST, "", 0, 2, 1), 0);
	ck_assert_uint_eq(c[1].info.max_held, 1);
	ck_assert_int_lt(subscribe(&f, &c[2], DAQIRI_SUB_BROADCAST, "", 0, 3, 1), 0);
	ck_assert_msg(strstr(last_err.msg, "its whole share") != NULL, "%s",
	    last_err.msg);
	ck_assert_int_eq(stream_live_nsubs(f.s, true, 1000), 2);
	/* the admin takes the rest of the budget, not more */
	sub_admin = true;
	ck_assert_int_eq(subscribe(&f, &c[2], DAQIRI_SUB_BROADCAST, "", 4, 4, 1), 0);
	ck_assert_int_lt(subscribe(&f, &c[3], DAQIRI_SUB_BROADCAST, "", 1, 4, 2), 0);
	ck_assert_int_eq(stream_live_nsubs(f.s, false, 0), 3);
	/* an ended subscription gives its part of the share back */
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 0), 1);
	sub_admin = false;
	ck_assert_int_eq(subscribe(&f, &c[3], DAQIRI_SUB_BROADCAST, "", 3, 5, 1), 0);
	sub_admin = true;
	for (int k = 0; k < 4; k++)
		cons_close(&c[k]);
	fix_fini(&f);
}
END_TEST

/* (7) Admission: the max_held of a stream's subscriptions add up to at
 * most nbufs - window - 1; a request over it is refused naming the
 * numbers, a default takes what is left, and an ended subscription gives
 * its share back. */
START_TEST(test_admission)
{
	struct fix f;
	struct cons a, b, x;
	char want[256];

	fix_init(&f, 4 + SPARE, 0);		/* 4 to hold */
	ck_assert_uint_eq(stream_held_budget(f.s), 4);
	ck_assert_int_eq(subscribe(&f, &a, DAQIRI_SUB_BROADCAST, "", 3, 1, 1), 0);
	ck_assert_int_lt(subscribe(&f, &x, DAQIRI_SUB_BROADCAST, "", 2, 2, 1), 0);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
	snprintf(want, sizeof(want), "stream 'eth0/r0': max_held 2 would make "
	    "5 held buffers, more than the 4 of %u buffers the reorder window "
	    "leaves (window %u)", 4 + SPARE, WINDOW);
	ck_assert_str_eq(last_err.msg, want);
	/* no max_held given: a quarter of the buffers (2), or what is left */
	ck_assert_int_eq(subscribe(&f, &b, DAQIRI_SUB_SHARED, "g", 0, 2, 2), 0);
	ck_assert_uint_eq(b.info.max_held, 1);
	ck_assert_int_lt(subscribe(&f, &x, DAQIRI_SUB_SHARED, "g", 0, 2, 3), 0);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
	ck_assert_ptr_nonnull(strstr(last_err.msg, "no buffers left"));
	ck_assert_ptr_nonnull(strstr(last_err.msg, "up to 4, all of the 4 of"));
	/* ending a gives its 3 back at once */
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 1), 1);
	ck_assert_int_eq(subscribe(&f, &x, DAQIRI_SUB_BROADCAST, "", 3, 3, 1), 0);
	cons_close(&x);
	cons_close(&a);
	cons_close(&b);
	fix_fini(&f);
}
END_TEST

/* (7b) Attack 3: one connection opens subscriptions until refused and
 * never releases; the consumer that was there first still gets every
 * tensor and no batch is dropped for want of a buffer. */
START_TEST(test_one_conn_cannot_starve)
{
	enum { NB = 16 + SPARE, BATCHES = 40 };
	struct fix f;
	struct cons good, bad[NB];
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	int nbad = 0, rcode;
	uint32_t held = 0;

	fix_init(&f, NB, 0);
	ck_assert_int_eq(subscribe(&f, &good, DAQIRI_SUB_BROADCAST, "", 1, 1, 1), 0);
	while ((rcode = subscribe(&f, &bad[nbad], DAQIRI_SUB_BROADCAST, "",
	    NB, 2, (uint32_t)nbad + 1)) == 0 || nbad < NB) {
		if (rcode != 0) {
			/* asking for all of them fails; what is left does not */
			ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
			if (subscribe(&f, &bad[nbad], DAQIRI_SUB_BROADCAST, "",
			    0, 2, (uint32_t)nbad + 1) != 0)
				break;
		}
		held += bad[nbad].info.max_held;
		nbad++;
	}
	ck_assert_int_eq(last_err.status, DAQIRI_ST_NO_RESOURCES);
	ck_assert_uint_eq(held, stream_held_budget(f.s) - 1);
	stream_service(f.s, T0);
	for (uint32_t k = 0; k < BATCHES; k++) {
		feed(&f, k, ALL, T0 + k * 1000);
		ck_assert_int_eq(pop(&good, &d), 1);
		ck_assert_uint_eq(d.seq, k);
		check_tensor(&good, &d, k, ALL);
		release(&good, d.buf_index);
		stream_service(f.s, T0 + k * 1000 + 500);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(reorder.batches_no_buffer, 0);
	ck_assert_uint_eq(reorder.no_buffer, 0);
	ck_assert_uint_eq(sc.published, BATCHES);
	ck_assert_uint_le(sc.held_bufs, held);
	ck_assert_double_eq(sub_field(&f, 1, 1, "overruns"), 0);
	cons_close(&good);
	for (int k = 0; k < nbad; k++)
		cons_close(&bad[k]);
	fix_fini(&f);
}
END_TEST

/* (8) hold_timeout_ms: a subscription that holds a buffer too long is
 * ended with "held too long" (which buffer, how long), its buffers come
 * back, it is counted; one that releases in time is untouched. Stream
 * time is the test's. */
START_TEST(test_hold_timeout)
{
	const uint64_t ms = 1000000;
	struct fix f;
	struct cons h, g;
	struct daqiri_desc d, hd;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct reaped rp;
	char st[32], want[128];

	memset(&rp, 0, sizeof(rp));
	fix_init(&f, 8 + SPARE, 0);
	ck_assert_int_eq(stream_set_limits(f.s, STREAM_MAX_SUBS, 10), 0);
	ck_assert_int_eq(subscribe(&f, &h, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	ck_assert_int_eq(subscribe(&f, &g, DAQIRI_SUB_BROADCAST, "", 4, 2, 1), 0);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);				/* delivered at T0 + PPB */
	ck_assert_int_eq(pop(&h, &hd), 1);
	ck_assert_int_eq(pop(&g, &d), 1);
	release(&g, d.buf_index);
	/* g keeps getting and releasing tensors, each within 10 ms; h
	 * holds tensors 0-3 (its max_held) */
	for (uint32_t k = 1; k <= 4; k++) {
		uint64_t t = T0 + k * 2 * ms;

		feed(&f, k, ALL, t);
		stream_service(f.s, t + ms);
		ck_assert_int_eq(pop(&g, &d), 1);
		release(&g, d.buf_index);
		stream_service(f.s, t + ms + 1);
	}
	stream_service(f.s, T0 + 10 * ms + PPB);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_held_too_long, 0);	/* 10 ms, not more */
	ck_assert_str_eq(sub_state(&f, 1, 1, st, sizeof(st)), "active");
	ck_assert_double_eq(sub_field(&f, 1, 1, "held"), 4);
	/* checked at most every STREAM_HOLD_CHECK_NS: surely by then */
	stream_service(f.s, T0 + 10 * ms + PPB + STREAM_HOLD_CHECK_NS);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_held_too_long, 1);
	ck_assert_uint_eq(sc.subs_broken, 0);
	ck_assert_uint_eq(sc.held_bufs, 0);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_str_eq(sub_state(&f, 1, 1, st, sizeof(st)), "broken");
	ck_assert_str_eq(sub_state(&f, 2, 1, st, sizeof(st)), "active");
	stream_reap(f.s, reap_cb, &rp);
	ck_assert_int_eq(rp.n, 1);
	ck_assert_uint_eq(rp.conn_id, 1);
	snprintf(want, sizeof(want), "held too long: buffer %u for %llu ms, "
	    "more than daemon.hold_timeout_ms 10", hd.buf_index,
	    (unsigned long long)(10 + STREAM_HOLD_CHECK_NS / ms));
	ck_assert_str_eq(rp.why, want);
	/* g goes on */
	feed(&f, 6, ALL, T0 + 20 * ms);
	ck_assert_int_eq(pop(&g, &d), 1);
	check_tensor(&g, &d, 6, ALL);
	cons_close(&h);
	cons_close(&g);
	fix_fini(&f);
}
END_TEST

/* (8b) hold_timeout_ms 0 (and streams made without limits): a buffer
 * may be held forever. */
START_TEST(test_hold_forever)
{
	struct fix f;
	struct cons h;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;

	fix_init(&f, 4 + SPARE, 0);
	ck_assert_int_eq(stream_set_limits(f.s, STREAM_MAX_SUBS, 0), 0);
	ck_assert_int_eq(subscribe(&f, &h, DAQIRI_SUB_BROADCAST, "", 1, 1, 1), 0);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	ck_assert_int_eq(pop(&h, &d), 1);
	stream_service(f.s, T0 + 3600ull * 1000000000ull);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_held_too_long, 0);
	ck_assert_uint_eq(sc.held_bufs, 1);
	cons_close(&h);
	fix_fini(&f);
}
END_TEST

/* (7) A raw stream: frames whole, in order, lengths after the bitmap. */
START_TEST(test_raw_stream)
{
	struct cfg_interface *ifc = calloc(1, sizeof(*ifc));
	struct cfg_queue q;
	struct stream *s;
	struct daqiri_sub_req req;
	struct control_peer peer;
	struct daqiri_sub_info info;
	struct daqiri_err err;
	struct daqiri_ring ring;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct rx_frame k[5];
	uint8_t fr[5][80];
	const uint32_t lens[5] = { 64, 1, 40, 90, 17 };	/* 90: oversize */
	const uint8_t *t, *bm;
	char errs[ERRLEN] = "";
	int fds[DAQIRI_SUB_MAX_FDS], nfds = 0;
	void *rm;
	uint32_t slot = 0, idx;
	uint64_t bits;

	ck_assert_ptr_nonnull(ifc);
	snprintf(ifc->name, sizeof(ifc->name), "eth1");
	memset(&q, 0, sizeof(q));
	snprintf(q.name, sizeof(q.name), "rawq");
	q.batch_size = 4;
	q.timeout_us = 0;
	ck_assert_msg(stream_create_raw(&s, ifc, &q, 64, false, errs,
	    sizeof(errs)) == 0, "stream_create_raw: %s", errs);
	ck_assert_str_eq(stream_name(s), "eth1/rawq");
	ck_assert_ptr_null(stream_plan(s));

	memset(&req, 0, sizeof(req));
	memset(&peer, 0, sizeof(peer));
	req.mode = DAQIRI_SUB_BROADCAST;
	req.max_held = 2;
	peer.conn_id = 3;
	ck_assert_int_eq(stream_subscribe(s, &req, &peer, 1, &info, fds, &nfds,
	    &err), 0);
	ck_assert_int_eq(nfds, 4);
	ck_assert_uint_eq(info.kind, DAQIRI_STREAM_RAW);
	ck_assert_uint_eq(info.nbufs, RAW_NBUFS);
	ck_assert_uint_eq(info.ppb, 4);
	ck_assert_uint_eq(info.slot_bytes, 64);
	ck_assert_uint_eq(info.bitmap_bytes, raw_sidecar_bytes(4));
	rm = mmap(NULL, info.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fds[2], 0);
	ck_assert_ptr_ne(rm, MAP_FAILED);
	ck_assert_int_eq(daqiri_ring_attach(&ring, rm, info.ring_bytes), 0);
	t = mmap(NULL, info.map_bytes, PROT_READ, MAP_SHARED, fds[0], 0);
	ck_assert_ptr_ne(t, MAP_FAILED);
	bm = mmap(NULL, (size_t)info.nbufs * info.bitmap_bytes, PROT_READ,
	    MAP_SHARED, fds[1], 0);
	ck_assert_ptr_ne(bm, MAP_FAILED);
	stream_service(s, T0);

	memset(k, 0, sizeof(k));
	for (int j = 0; j < 5; j++) {
		for (uint32_t i = 0; i < sizeof(fr[j]); i++)
			fr[j][i] = (uint8_t)(j * 40 + i);
		k[j].hdr = fr[j];
		k[j].hdr_len = lens[j] < sizeof(fr[j]) ? lens[j] :
		    (uint32_t)sizeof(fr[j]);
		k[j].payload = lens[j] < sizeof(fr[j]) ? NULL : fr[j];
		k[j].payload_len = lens[j] - k[j].hdr_len;
		k[j].rx_ns = T0 + (uint64_t)j;
	}
	stream_burst(s, k, 5, T0 + 10, NULL);
	ck_assert_int_eq(daqiri_comp_pop(&ring, &d), 1);
	idx = d.buf_index;
	ck_assert_uint_eq(d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(d.packets_received, 4);
	ck_assert_uint_eq(d.seq, 0);
	ck_assert_uint_eq(d.first_rx_ns, T0);
	ck_assert_uint_eq(d.last_rx_ns, T0 + 4);
	memcpy(&bits, bm + (size_t)d.buf_index * info.bitmap_bytes, 8);
	ck_assert_uint_eq(bits, 0xF);
	for (int j = 0; j < 5; j++) {
		const uint8_t *sl;
		uint32_t len;

		if (lens[j] > 64)
			continue;
		sl = t + info.buf_offset + (uint64_t)d.buf_index *
		    info.buf_stride + (uint64_t)slot * 64;
		memcpy(&len, bm + (size_t)d.buf_index * info.bitmap_bytes + 8 +
		    slot * 4, 4);
		ck_assert_uint_eq(len, lens[j]);
		ck_assert_int_eq(memcmp(sl, fr[j], lens[j]), 0);
		slot++;
	}
	ck_assert_int_eq(daqiri_comp_pop(&ring, &d), 0);
	ck_assert_int_eq(daqiri_comp_pop(&ring, &d), 0);
	stream_publish_counters(s);
	stream_snapshot(s, &reorder, &sc);
	ck_assert_uint_eq(reorder.packets_in, 5);
	ck_assert_uint_eq(reorder.placed, 4);
	ck_assert_uint_eq(reorder.malformed, 1);		/* the oversize frame */
	ck_assert_uint_eq(reorder.packets_in, reorder.placed + reorder.malformed +
	    reorder.no_buffer + reorder.backend_error);
	ck_assert_uint_eq(sc.published, 1);
	ck_assert_uint_eq(sc.held_bufs, 1);
	ck_assert_int_eq(daqiri_rel_push(&ring, idx), 0);
	stream_service(s, T0 + 20);
	stream_publish_counters(s);
	stream_snapshot(s, &reorder, &sc);
	ck_assert_uint_eq(sc.free_bufs, RAW_NBUFS);
	ck_assert_uint_eq(sc.subs_broken, 0);

	munmap(rm, info.ring_bytes);
	munmap((void *)t, info.map_bytes);
	munmap((void *)bm, (size_t)info.nbufs * info.bitmap_bytes);
	for (int j = 0; j < nfds; j++)
		close(fds[j]);
	stream_destroy(s);
	free(ifc);
}
END_TEST

/* (8) The JSON views have the documented fields (PROTOCOL.md). */
/* The count of histogram key in o (a stats or consumers record), after
 * checking its shape: 22 bounds, 23 buckets that add up to count. */
static double
hist_count(const cJSON *o, const char *key)
{
	const cJSON *h = cJSON_GetObjectItem(o, key), *e;
	double sum = 0;

	ck_assert_msg(cJSON_IsObject(h), "no histogram %s", key);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(h, "le_ns")),
	    DAQIRI_HIST_NBOUNDS);
	ck_assert_double_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(h,
	    "le_ns"), 0)->valuedouble, 1000);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(h, "buckets")),
	    DAQIRI_HIST_NBUCKETS);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(h, "buckets"))
		sum += e->valuedouble;
	ck_assert_double_eq(sum, cJSON_GetObjectItem(h, "count")->valuedouble);
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(h, "sum_ns")));
	return sum;
}

/*
 * Latency histograms: one assembly count per published tensor, in the
 * bucket of its descriptor's publish_ns - first_rx_ns (tensors nobody
 * took count too); one hold count per release, for the subscription and
 * the stream; buffers taken back when a subscription ends count none.
 */
START_TEST(test_histograms)
{
	struct fix f;
	struct cons c;
	struct daqiri_desc d[3];
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct daqiri_hist want;
	uint64_t t0 = daqiri_mono_ns(), before, after;
	cJSON *arr, *o;

	memset(&want, 0, sizeof(want));
	fix_init(&f, 4 + SPARE, 0);
	/* nobody subscribed yet: unseen, still assembled */
	feed(&f, 0, ALL, t0);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.unseen, 1);
	ck_assert_uint_eq(sc.assembly.count, 1);
	memcpy(&want, &sc.assembly, sizeof(want));

	ck_assert_int_eq(subscribe(&f, &c, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	stream_service(f.s, t0);
	/* first packets 3 ms before now: at least 3 ms to assemble */
	for (uint32_t b = 1; b <= 3; b++) {
		feed(&f, b, ALL, daqiri_mono_ns() - 3000000);
		ck_assert_int_eq(pop(&c, &d[b - 1]), 1);
		ck_assert_uint_ge(d[b - 1].publish_ns - d[b - 1].first_rx_ns,
		    3000000);
		daqiri_hist_add(&want, d[b - 1].publish_ns - d[b - 1].first_rx_ns);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, 4);
	ck_assert_uint_eq(sc.assembly.count, sc.published);
	ck_assert_mem_eq(&sc.assembly, &want, sizeof(want));
	ck_assert_uint_eq(sc.hold.count, 0);

	/* two released: two hold times, between publish and now */
	release(&c, d[0].buf_index);
	release(&c, d[1].buf_index);
	before = daqiri_mono_ns();
	stream_service(f.s, before);
	after = daqiri_mono_ns();
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.hold.count, 2);
	ck_assert_uint_ge(sc.hold.sum_ns, (before - d[0].publish_ns) +
	    (before - d[1].publish_ns));
	ck_assert_uint_le(sc.hold.sum_ns, (after - d[0].publish_ns) +
	    (after - d[1].publish_ns));
	ck_assert_double_eq(sub_field(&f, 1, 1, "released"), 2);
	arr = cJSON_CreateArray();
	ck_assert_int_eq(stream_consumers_json(f.s, arr), 0);
	ck_assert_double_eq(hist_count(cJSON_GetArrayItem(arr, 0), "hold_ns"), 2);
	cJSON_Delete(arr);

	/* the third goes back with the subscription: no hold time */
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 1), 1);
	stream_service(f.s, daqiri_mono_ns());
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 0);
	ck_assert_uint_eq(sc.hold.count, 2);

	o = cJSON_CreateObject();
	ck_assert_int_eq(stream_stats_json(f.s, o), 0);
	ck_assert_double_eq(hist_count(o, "assembly_ns"), 4);
	ck_assert_double_eq(hist_count(o, "hold_ns"), 2);
	cJSON_Delete(o);
	cons_close(&c);
	fix_fini(&f);
}
END_TEST

START_TEST(test_json_views)
{
	struct fix f;
	struct cons a, b;
	struct daqiri_desc d;
	cJSON *o, *x, *arr, *e;
	static const char *const info_keys[] = {
		"name", "kind", "memory_region", "memory_kind", "dtype", "nbufs",
		"packets_per_batch", "slot_bytes", "tensor_bytes", "subscribers",
		"reorder_type", "input_type", "payload_bytes", "window",
	};
	static const char *const handoff_keys[] = {
		"published", "delivered", "unseen", "overruns", "subs_broken",
		"subs_held_too_long", "free_bufs", "held_bufs", "open_bufs",
	};
	static const char *const cons_keys[] = {
		"stream", "conn", "sub_id", "pid", "uid", "mode", "group", "state",
		"delivered", "released", "overruns", "held", "max_held",
		"ring_depth",
	};
	int n = 0;

	fix_init(&f, 6 + SPARE, 0);
	ck_assert_int_eq(subscribe(&f, &a, DAQIRI_SUB_BROADCAST, "", 4, 5, 1), 0);
	ck_assert_int_eq(subscribe(&f, &b, DAQIRI_SUB_SHARED, "grp", 2, 6, 3), 0);
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	feed(&f, 1, 0x0F, T0 + 1000);
	ck_assert_int_eq(pop(&a, &d), 1);
	release(&a, d.buf_index);
	stream_service(f.s, T0 + 2000);
	stream_publish_counters(f.s);

	o = cJSON_CreateObject();
	ck_assert_int_eq(stream_info_json(f.s, o), 0);
	for (size_t k = 0; k < sizeof(info_keys) / sizeof(info_keys[0]); k++)
		ck_assert_msg(cJSON_HasObjectItem(o, info_keys[k]), "info: %s",
		    info_keys[k]);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")),
	    "eth0/r0");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "kind")),
	    daqiri_stream_kind_name(DAQIRI_STREAM_REORDER));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o,
	    "memory_region")), "tensors");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o,
	    "reorder_type")), "cpu");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o,
	    "input_type")), "raw");
	ck_assert_double_eq(cJSON_GetObjectItem(o, "nbufs")->valuedouble,
	    f.nbufs);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "packets_per_batch")->valuedouble,
	    PPB);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "slot_bytes")->valuedouble,
	    PAYLOAD);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "tensor_bytes")->valuedouble,
	    PPB * PAYLOAD);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "payload_bytes")->valuedouble,
	    PAYLOAD);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "window")->valuedouble, WINDOW);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "subscribers")->valuedouble, 2);
	cJSON_Delete(o);

	o = cJSON_CreateObject();
	ck_assert_int_eq(stream_stats_json(f.s, o), 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")),
	    "eth0/r0");
	x = cJSON_GetObjectItem(o, "reorder");
	ck_assert(cJSON_IsObject(x));
	for (int k = 0; k < REORDER_NCOUNTERS; k++)
		ck_assert_msg(cJSON_HasObjectItem(x, reorder_counter_names[k]),
		    "reorder: %s", reorder_counter_names[k]);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "packets_in")->valuedouble,
	    PPB + 4);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "placed")->valuedouble,
	    PPB + 4);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "batches_complete")->valuedouble,
	    1);
	x = cJSON_GetObjectItem(o, "handoff");
	ck_assert(cJSON_IsObject(x));
	for (size_t k = 0; k < sizeof(handoff_keys) / sizeof(handoff_keys[0]); k++)
		ck_assert_msg(cJSON_HasObjectItem(x, handoff_keys[k]),
		    "handoff: %s", handoff_keys[k]);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "published")->valuedouble, 1);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "delivered")->valuedouble, 2);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "held_bufs")->valuedouble, 1);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "open_bufs")->valuedouble, 1);
	ck_assert_double_eq(cJSON_GetObjectItem(x, "free_bufs")->valuedouble,
	    f.nbufs - 2);
	cJSON_Delete(o);

	arr = cJSON_CreateArray();
	ck_assert_int_eq(stream_consumers_json(f.s, arr), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	cJSON_ArrayForEach(e, arr) {
		for (size_t k = 0; k < sizeof(cons_keys) / sizeof(cons_keys[0]);
		    k++)
			ck_assert_msg(cJSON_HasObjectItem(e, cons_keys[k]),
			    "consumers: %s", cons_keys[k]);
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e,
		    "stream")), "eth0/r0");
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e,
		    "state")), "active");
		if (cJSON_GetObjectItem(e, "conn")->valuedouble == 5) {
			n++;
			ck_assert_str_eq(cJSON_GetStringValue(
			    cJSON_GetObjectItem(e, "mode")),
			    daqiri_sub_mode_name(DAQIRI_SUB_BROADCAST));
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "sub_id")->valuedouble, 1);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "pid")->valuedouble, 4001);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "uid")->valuedouble, 1000);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "delivered")->valuedouble, 1);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "released")->valuedouble, 1);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "held")->valuedouble, 0);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "max_held")->valuedouble, 4);
		} else {
			n += 10;
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "conn")->valuedouble, 6);
			ck_assert_str_eq(cJSON_GetStringValue(
			    cJSON_GetObjectItem(e, "mode")),
			    daqiri_sub_mode_name(DAQIRI_SUB_SHARED));
			ck_assert_str_eq(cJSON_GetStringValue(
			    cJSON_GetObjectItem(e, "group")), "grp");
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "delivered")->valuedouble, 1);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "held")->valuedouble, 1);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "max_held")->valuedouble, 2);
			ck_assert_double_eq(cJSON_GetObjectItem(e,
			    "ring_depth")->valuedouble, b.info.ring_depth);
		}
	}
	ck_assert_int_eq(n, 11);
	cJSON_Delete(arr);
	cons_close(&a);
	cons_close(&b);
	fix_fini(&f);
}
END_TEST

/* (L1) A lossless subscriber that does not release is never skipped:
 * what it has no room for waits with its buffer, the pool runs dry, new
 * batches are dropped as no_buffer and charged to it; a latest one on
 * the same stream gets every tensor meanwhile. Once it releases, it
 * gets the backlog in order, no seq missing. */
START_TEST(test_lossless_backlog)
{
	struct fix f;
	struct cons l, b;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	uint32_t k, next = 0;

	/* a deadline, so the batches that found no buffer end and the
	 * batch after them is published */
	fix_init(&f, 6 + SPARE, 1000);
	sub_policy = DAQIRI_POLICY_LOSSLESS;
	ck_assert_int_eq(subscribe(&f, &l, DAQIRI_SUB_BROADCAST, "", 2, 1, 1), 0);
	ck_assert_uint_eq(l.info.policy, DAQIRI_POLICY_LOSSLESS);
	sub_policy = DAQIRI_POLICY_LATEST;
	ck_assert_int_eq(subscribe(&f, &b, DAQIRI_SUB_BROADCAST, "", 2, 2, 2), 0);
	ck_assert_uint_eq(b.info.policy, DAQIRI_POLICY_LATEST);
	stream_service(f.s, T0);
	/* every buffer ends up with l (2 in its ring, the rest pending),
	 * then two batches find none */
	for (k = 0; k < f.nbufs + 2; k++) {
		feed(&f, k, ALL, T0 + k * 1000);
		if (k < f.nbufs) {
			ck_assert_int_eq(pop(&b, &d), 1);
			ck_assert_uint_eq(d.seq, k);
			check_tensor(&b, &d, k, ALL);
			release(&b, d.buf_index);
		} else
			ck_assert_int_eq(pop(&b, &d), 0);
		stream_service(f.s, T0 + k * 1000 + 500);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.published, f.nbufs);
	ck_assert_uint_eq(sc.overruns, 0);
	ck_assert_uint_eq(sc.unseen, 0);
	ck_assert_uint_eq(sc.free_bufs, 0);
	ck_assert_uint_eq(sc.held_bufs, f.nbufs);
	ck_assert_uint_eq(reorder.batches_no_buffer, 2);
	ck_assert_uint_eq(reorder.no_buffer, 2 * PPB);
	ck_assert_uint_eq(sc.blocked_by, 1);
	ck_assert_double_eq(sub_field(&f, 1, 1, "blocked"), 2);
	ck_assert_double_eq(sub_field(&f, 2, 2, "blocked"), 0);
	ck_assert_double_eq(sub_field(&f, 1, 1, "held"), 2);
	ck_assert_double_eq(sub_field(&f, 1, 1, "pending"), f.nbufs - 2);
	ck_assert_double_eq(sub_field(&f, 1, 1, "overruns"), 0);
	ck_assert_double_eq(sub_field(&f, 2, 2, "overruns"), 0);
	/* l catches up: everything, in order, intact */
	while (next < f.nbufs) {
		int got = 0;

		while (pop(&l, &d) == 1) {
			ck_assert_uint_eq(d.seq, next);
			check_tensor(&l, &d, next, ALL);
			release(&l, d.buf_index);
			next++;
			got++;
		}
		ck_assert_int_gt(got, 0);
		ck_assert_int_le(got, 2);		/* its max_held */
		/* past the deadline (1 ms) of the two refused batches */
		stream_service(f.s, T0 + 5000000 + next);
	}
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_uint_eq(sc.delivered, 2 * f.nbufs);
	ck_assert_double_eq(sub_field(&f, 1, 1, "pending"), 0);
	/* the stream resumes, seq contiguous (dropped batches took none) */
	feed(&f, k, ALL, T0 + 6000000);
	ck_assert_int_eq(pop(&l, &d), 1);
	ck_assert_uint_eq(d.seq, f.nbufs);
	check_tensor(&l, &d, k, ALL);
	cons_close(&l);
	cons_close(&b);
	fix_fini(&f);
}
END_TEST

/* (L2) A lossless subscriber that goes away gives back what it held and
 * what waited for it; shared lossless is refused. */
START_TEST(test_lossless_gone)
{
	struct fix f;
	struct cons l, g;
	struct reorder_counters reorder;
	struct stream_counters sc;

	fix_init(&f, 6 + SPARE, 0);
	sub_policy = DAQIRI_POLICY_LOSSLESS;
	ck_assert_int_eq(subscribe(&f, &g, DAQIRI_SUB_SHARED, "grp", 2, 2, 2),
	    -EINVAL);
	ck_assert_int_eq(last_err.status, DAQIRI_ST_BAD_FIELD);
	ck_assert_ptr_nonnull(strstr(last_err.msg, "broadcast"));
	ck_assert_int_eq(subscribe(&f, &l, DAQIRI_SUB_BROADCAST, "", 2, 1, 1), 0);
	sub_policy = DAQIRI_POLICY_LATEST;
	stream_service(f.s, T0);
	for (uint32_t k = 0; k < 5; k++)
		feed(&f, k, ALL, T0 + k * 1000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 5);
	ck_assert_double_eq(sub_field(&f, 1, 1, "pending"), 3);
	ck_assert_int_eq(stream_unsubscribe(f.s, 1, 1), 1);
	stream_service(f.s, T0 + 10000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.held_bufs, 0);
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	cons_close(&l);
	fix_fini(&f);
}
END_TEST

/* (L3) A lossless consumer cannot make the stream wait by faking a full
 * ring: with fewer tensors held than max_held it is cut off, and what
 * it held and what waited for it comes back. */
START_TEST(test_lossless_fake_full_ring)
{
	struct fix f;
	struct cons l;
	struct daqiri_desc d;
	struct reorder_counters reorder;
	struct stream_counters sc;
	struct daqiri_ring_shm *h;
	char st[32];

	fix_init(&f, 6 + SPARE, 0);
	sub_policy = DAQIRI_POLICY_LOSSLESS;
	ck_assert_int_eq(subscribe(&f, &l, DAQIRI_SUB_BROADCAST, "", 4, 1, 1), 0);
	sub_policy = DAQIRI_POLICY_LATEST;
	stream_service(f.s, T0);
	feed(&f, 0, ALL, T0);
	ck_assert_int_eq(pop(&l, &d), 1);
	/* holds 1 of 4, and moves its tail back: the ring looks full */
	h = l.ring_mem;
	atomic_store(&h->comp_tail, atomic_load(&h->comp_head) -
	    l.info.ring_depth);
	feed(&f, 1, ALL, T0 + 1000);
	counters(&f, &reorder, &sc);
	ck_assert_uint_eq(sc.subs_broken, 1);
	ck_assert_str_eq(sub_state(&f, 1, 1, st, sizeof(st)), "broken");
	ck_assert_uint_eq(sc.free_bufs, f.nbufs);
	ck_assert_uint_eq(sc.unseen, 1);	/* tensor 1: nobody left */
	cons_close(&l);
	fix_fini(&f);
}
END_TEST

static Suite *
stream_suite(void)
{
	Suite *s = suite_create("stream");
	TCase *tc;

	tc = tcase_create("broadcast");
	tcase_add_test(tc, test_broadcast_delivers_all);
	tcase_add_test(tc, test_broadcast_overruns);
	suite_add_tcase(s, tc);

	tc = tcase_create("lossless");
	tcase_add_test(tc, test_lossless_backlog);
	tcase_add_test(tc, test_lossless_gone);
	tcase_add_test(tc, test_lossless_fake_full_ring);
	suite_add_tcase(s, tc);

	tc = tcase_create("wakeup");
	tcase_add_test(tc, test_wake_cannot_block);
	tcase_add_test(tc, test_wake_only_when_armed);
	suite_add_tcase(s, tc);

	tc = tcase_create("shared");
	tcase_add_test(tc, test_shared_round_robin);
	tcase_add_test(tc, test_shared_skips_full_member);
	suite_add_tcase(s, tc);

	tc = tcase_create("lifecycle");
	tcase_add_loop_test(tc, test_bad_release_ring, 0, 4);
	tcase_add_test(tc, test_bad_completion_ring);
	tcase_add_test(tc, test_subscribe_limits);
	tcase_add_test(tc, test_unsubscribe);
	suite_add_tcase(s, tc);

	tc = tcase_create("isolation");
	tcase_add_test(tc, test_consumer_cannot_write);
	tcase_add_test(tc, test_sidecar_is_a_copy);
	tcase_add_test(tc, test_admission);
	tcase_add_test(tc, test_uid_share);
	tcase_add_test(tc, test_one_conn_cannot_starve);
	tcase_add_test(tc, test_hold_timeout);
	tcase_add_test(tc, test_hold_forever);
	suite_add_tcase(s, tc);

	tc = tcase_create("raw_json");
	tcase_add_test(tc, test_raw_stream);
	tcase_add_test(tc, test_json_views);
	tcase_add_test(tc, test_histograms);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(stream_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
