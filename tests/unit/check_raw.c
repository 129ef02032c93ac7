/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/raw.c, the raw burst plan: frames copied whole in
 * arrival order with their lengths after the bitmap, publication when
 * full, at the deadline or at flush, header parts only when payloads are
 * in device memory, oversize and no-buffer drops, and
 * the accounting invariant, through a fake buffer owner that records
 * every publication.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto.h"
#include "raw.h"

#define MAXBUFS		8
#define MAXPUB		4096
#define GUARD		32
#define FILL_BYTE	0xA5	/* initial buffer and sidecar content */
#define FRAME_MAX	256
#define T0		1000000000ull	/* a receive time base, ns */

/* ------------------------------------------------------------------ */
/* A buffer owner over a small pool of host buffers. */

enum { B_FREE, B_LENT, B_HELD };

struct pub {
	struct daqiri_desc d;
	uint8_t *data;			/* ppb x slot_bytes, copied at publish */
	uint8_t *side;			/* sidecar, copied at publish */
};

struct pool {
	int n;
	uint32_t ppb;
	uint64_t slot;
	uint64_t tbytes;
	uint32_t sbytes;		/* sidecar bytes */
	uint8_t *data[MAXBUFS];
	uint64_t *side[MAXBUFS];
	int state[MAXBUFS];
	int gets, puts, errors;
	int put_index;			/* last index put() got */
	struct pub pubs[MAXPUB];
	int npub;
};

static int
p_get(void *ctx, struct reorder_buf *out)
{
	struct pool *p = ctx;

	p->gets++;
	for (int i = 0; i < p->n; i++) {
		if (p->state[i] != B_FREE)
			continue;
		p->state[i] = B_LENT;
		out->index = (uint32_t)i;
		out->data = p->data[i];
		out->bitmap = p->side[i];
		return 0;
	}
	return -ENOBUFS;
}

static void
p_put(void *ctx, const struct reorder_buf *buf)
{
	struct pool *p = ctx;

	p->puts++;
	p->put_index = (int)buf->index;
	if (buf->index >= (uint32_t)p->n || p->state[buf->index] != B_LENT)
		p->errors++;
	else
		p->state[buf->index] = B_FREE;
}

static void
p_publish(void *ctx, const struct daqiri_desc *d, const struct reorder_buf *buf)
{
	struct pool *p = ctx;
	struct pub *q;

	if (buf->index >= (uint32_t)p->n || p->state[buf->index] != B_LENT ||
	    d->buf_index != buf->index || buf->data != p->data[buf->index] ||
	    buf->bitmap != p->side[buf->index] || p->npub == MAXPUB) {
		p->errors++;
		return;
	}
	q = &p->pubs[p->npub++];
	q->d = *d;
	q->data = malloc(p->tbytes);
	q->side = malloc(p->sbytes);
	memcpy(q->data, buf->data, p->tbytes);
	memcpy(q->side, buf->bitmap, p->sbytes);
	p->state[buf->index] = B_HELD;
}

static void
pool_init(struct pool *p, int n, uint32_t ppb, uint64_t slot)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->ppb = ppb;
	p->slot = slot;
	p->tbytes = (uint64_t)ppb * slot;
	p->sbytes = raw_sidecar_bytes(ppb);
	p->put_index = -1;
	for (int i = 0; i < n; i++) {
		p->data[i] = malloc(p->tbytes + GUARD);
		memset(p->data[i], FILL_BYTE, p->tbytes + GUARD);
		p->side[i] = malloc(p->sbytes + GUARD);
		memset(p->side[i], FILL_BYTE, p->sbytes + GUARD);
	}
}

static void
pool_fini(struct pool *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->data[i]);
		free(p->side[i]);
	}
	for (int j = 0; j < p->npub; j++) {
		free(p->pubs[j].data);
		free(p->pubs[j].side);
	}
}

/* Hand back every held buffer. */
static void
pool_release_all(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		if (p->state[i] == B_HELD)
			p->state[i] = B_FREE;
}

static int
pool_count(const struct pool *p, int state)
{
	int k = 0;

	for (int i = 0; i < p->n; i++)
		k += p->state[i] == state;
	return k;
}

static bool
guards_intact(const struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		for (int k = 0; k < GUARD; k++)
			if (p->data[i][p->tbytes + k] != FILL_BYTE ||
			    ((uint8_t *)p->side[i])[p->sbytes + k] != FILL_BYTE)
				return false;
	return true;
}

static struct raw_plan *
plan_new(struct pool *p, uint32_t timeout_us)
{
	struct reorder_owner o = {
		.ctx = p, .get = p_get, .put = p_put, .publish = p_publish,
	};
	struct raw_plan *r = raw_create(p->ppb, p->slot, timeout_us, false, &o);

	ck_assert_ptr_nonnull(r);
	return r;
}

static bool
pub_bit(const struct pool *p, const struct pub *q, uint32_t s)
{
	(void)p;
	return (((const uint64_t *)(const void *)q->side)[s / 64] >>
	    (s % 64)) & 1;
}

static uint32_t
pub_len(const struct pool *p, const struct pub *q, uint32_t s)
{
	uint32_t words = (p->ppb + 63) / 64;
	uint32_t v;

	memcpy(&v, q->side + (size_t)words * 8 + (size_t)s * 4, sizeof(v));
	return v;
}

static uint64_t
pub_ns(const struct pool *p, const struct pub *q, uint32_t s)
{
	uint64_t v;

	memcpy(&v, q->side + DAQIRI_RAW_RXNS_OFF(p->ppb) + (size_t)s * 8,
	    sizeof(v));
	return v;
}

static void
check_invariant(const struct raw_plan *r)
{
	const struct raw_counters *c = raw_counters(r);

	ck_assert_uint_eq(c->packets_in,
	    c->placed + c->oversize + c->no_buffer);
}

/* ------------------------------------------------------------------ */
/* Frames: frame id k of length len, bytes (k * 31 + i * 7 + 1) & 0xFF,
 * split into a hdr part of hl bytes and a payload part of the rest. */

struct frame {
	uint8_t b[FRAME_MAX];
	uint32_t len;
};

static void
frame_make(struct frame *f, uint32_t k, uint32_t len)
{
	f->len = len;
	for (uint32_t i = 0; i < len; i++)
		f->b[i] = (uint8_t)((k * 31u + i * 7u + 1u) & 0xFF);
}

static struct rx_frame
pkt_of(const struct frame *f, uint32_t hl, uint64_t rx_ns)
{
	struct rx_frame k = {
		.hdr = f->b, .hdr_len = hl,
		.payload = f->b + hl, .payload_len = f->len - hl,
		.rx_ns = rx_ns,
	};

	return k;
}

/* Published slot s of q holds frame f whole, with its length and bit. */
static void
check_slot(const struct pool *p, const struct pub *q, uint32_t s,
	   const struct frame *f)
{
	ck_assert_msg(pub_bit(p, q, s), "slot %u bit clear", s);
	ck_assert_uint_eq(pub_len(p, q, s), f->len);
	ck_assert_msg(memcmp(q->data + (uint64_t)s * p->slot, f->b, f->len) == 0,
	    "slot %u bytes differ", s);
}

/* ------------------------------------------------------------------ */

START_TEST(test_sidecar_bytes)
{
	/* bitmap, lengths, 8-aligned, then a receive time per slot */
	ck_assert_uint_eq(raw_sidecar_bytes(1), 16 + 8);	/* 8 + 4 -> 16 */
	ck_assert_uint_eq(raw_sidecar_bytes(2), 16 + 16);
	ck_assert_uint_eq(raw_sidecar_bytes(4), 24 + 32);
	ck_assert_uint_eq(raw_sidecar_bytes(64), 8 + 256 + 512);
	ck_assert_uint_eq(raw_sidecar_bytes(65), 280 + 520);	/* 16 + 260 */
	ck_assert_uint_eq(raw_sidecar_bytes(70), 16 + 280 + 560);
	for (uint32_t n = 1; n < 300; n++) {
		uint32_t b = raw_sidecar_bytes(n) - n * 8;

		ck_assert_uint_eq(b % 8, 0);
		ck_assert_uint_eq(b, DAQIRI_RAW_RXNS_OFF(n));
		ck_assert_uint_ge(b, (n + 63) / 64 * 8 + n * 4);
		ck_assert_uint_lt(b, (n + 63) / 64 * 8 + n * 4 + 8);
	}
}
END_TEST

START_TEST(test_create_rejects)
{
	struct pool p;
	struct reorder_owner o = {
		.ctx = &p, .get = p_get, .put = p_put, .publish = p_publish,
	};

	errno = 0;
	ck_assert_ptr_null(raw_create(0, 64, 0, false, &o));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(raw_create(4, 0, 0, false, &o));
	ck_assert_int_eq(errno, EINVAL);
	raw_destroy(NULL);
}
END_TEST

/* Frames whole (both parts), in arrival order, lengths and bits; a full
 * burst is COMPLETE and carries the burst's metadata. */
START_TEST(test_full_burst_copies_frames)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[4];
	struct rx_frame k[4];
	const uint32_t lens[4] = { 64, 1, 33, 20 };
	const uint32_t hls[4] = { 14, 1, 0, 20 };	/* split points */
	const struct pub *q;

	pool_init(&p, 2, 4, 64);
	r = plan_new(&p, 0);
	for (uint32_t i = 0; i < 4; i++) {
		frame_make(&f[i], i + 10, lens[i]);
		k[i] = pkt_of(&f[i], hls[i], T0 + i * 100);
	}
	raw_burst(r, k, 3, T0 + 1000);
	check_invariant(r);
	ck_assert_int_eq(p.npub, 0);
	raw_burst(r, k + 3, 1, T0 + 2000);
	check_invariant(r);
	ck_assert_int_eq(p.npub, 1);
	ck_assert_int_eq(p.errors, 0);
	q = &p.pubs[0];
	ck_assert_uint_eq(q->d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(q->d.buf_index, 0);
	ck_assert_uint_eq(q->d.seq, 0);
	ck_assert_uint_eq(q->d.batch_id, 0);
	ck_assert_uint_eq(q->d.packets_expected, 4);
	ck_assert_uint_eq(q->d.packets_received, 4);
	ck_assert_uint_eq(q->d.bytes, 4 * 64);
	ck_assert_uint_eq(q->d.first_rx_ns, T0);
	ck_assert_uint_eq(q->d.last_rx_ns, T0 + 300);
	ck_assert_uint_eq(q->d.publish_ns, T0 + 2000);
	for (uint32_t i = 0; i < 4; i++) {
		check_slot(&p, q, i, &f[i]);
		/* each frame's own receive time, for pcap */
		ck_assert_uint_eq(pub_ns(&p, q, i), T0 + i * 100);
	}
	ck_assert_uint_eq(((const uint64_t *)(const void *)q->side)[0], 0xF);
	ck_assert_uint_eq(raw_counters(r)->placed, 4);
	ck_assert_uint_eq(raw_counters(r)->bursts_full, 1);
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	ck_assert(guards_intact(&p));
	raw_destroy(r);
	ck_assert_int_eq(p.puts, 0);
	pool_fini(&p);
}
END_TEST

/*
 * A contiguous frame may come all in hdr with payload NULL / 0, or all in
 * payload with hdr NULL / 0 (rx_frame.h, struct rx_frame; the reorder
 * plan takes both). UBSan (make asan) catches a memcpy from the NULL part
 * even with length 0, which raw.c once did.
 */
START_TEST(test_null_part)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[2];
	struct rx_frame k[2];

	pool_init(&p, 1, 2, 32);
	r = plan_new(&p, 0);
	frame_make(&f[0], 0, 20);
	frame_make(&f[1], 1, 9);
	memset(k, 0, sizeof(k));
	k[0].hdr = f[0].b;
	k[0].hdr_len = 20;
	k[0].payload = NULL;
	k[0].payload_len = 0;
	k[0].rx_ns = T0;
	k[1].hdr = NULL;
	k[1].hdr_len = 0;
	k[1].payload = f[1].b;
	k[1].payload_len = 9;
	k[1].rx_ns = T0 + 1;
	raw_burst(r, k, 2, T0 + 2);
	ck_assert_int_eq(p.npub, 1);
	check_slot(&p, &p.pubs[0], 0, &f[0]);
	check_slot(&p, &p.pubs[0], 1, &f[1]);
	check_invariant(r);
	raw_destroy(r);
	pool_fini(&p);
}
END_TEST

/*
 * Header-data split into device memory (raw_create's hdr_only): a slot
 * gets the header part and its length only, and the payload part is
 * never read. It lies on a page that may not be read at all, as device
 * memory is for the CPU: a read would end the test with SIGSEGV.
 */
START_TEST(test_hdr_only)
{
	struct pool p;
	struct raw_plan *r;
	struct reorder_owner o = {
		.ctx = &p, .get = p_get, .put = p_put, .publish = p_publish,
	};
	struct frame f[2], h[2];
	struct rx_frame k[2];
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *dev;

	dev = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	ck_assert_ptr_ne(dev, MAP_FAILED);
	/* slots the whole frames would fit: only hdr_only keeps them out */
	pool_init(&p, 1, 2, FRAME_MAX);
	r = raw_create(2, FRAME_MAX, 0, true, &o);
	ck_assert_ptr_nonnull(r);
	frame_make(&f[0], 0, 100);
	frame_make(&f[1], 1, 200);
	for (int i = 0; i < 2; i++) {
		k[i] = pkt_of(&f[i], 16, T0 + (uint64_t)i);
		k[i].payload = dev;		/* 84 and 184 unreadable bytes */
		h[i] = f[i];
		h[i].len = 16;
	}
	raw_burst(r, k, 2, T0 + 2);
	ck_assert_int_eq(p.npub, 1);
	ck_assert_uint_eq(raw_counters(r)->placed, 2);
	ck_assert_uint_eq(raw_counters(r)->oversize, 0);
	check_slot(&p, &p.pubs[0], 0, &h[0]);
	check_slot(&p, &p.pubs[0], 1, &h[1]);
	check_invariant(r);
	ck_assert(guards_intact(&p));
	raw_destroy(r);
	pool_fini(&p);
	munmap(dev, (size_t)pg);
}
END_TEST

/* More than 64 slots: a second bitmap word, lengths after both words. */
START_TEST(test_multiword_bitmap)
{
	struct pool p;
	struct raw_plan *r;
	static struct frame f[70];
	struct rx_frame k[70];
	const struct pub *q;
	const uint64_t *bm;

	pool_init(&p, 2, 70, 24);
	r = plan_new(&p, 0);
	for (uint32_t i = 0; i < 70; i++) {
		frame_make(&f[i], i, 1 + i % 24);
		k[i] = pkt_of(&f[i], (i % 3) * (f[i].len / 3), T0 + i);
	}
	raw_burst(r, k, 69, T0);
	ck_assert_int_eq(p.npub, 0);
	raw_flush(r, T0 + 5);
	ck_assert_int_eq(p.npub, 1);
	q = &p.pubs[0];
	bm = (const uint64_t *)(const void *)q->side;
	ck_assert_uint_eq(bm[0], UINT64_MAX);
	ck_assert_uint_eq(bm[1], (1ull << 5) - 1);	/* slots 64..68 */
	for (uint32_t i = 0; i < 69; i++)
		check_slot(&p, q, i, &f[i]);
	ck_assert_uint_eq(q->d.flags, DAQIRI_TENSOR_FLUSH | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(q->d.packets_received, 69);
	/* and a full one in the next buffer, whose sidecar starts dirty */
	raw_burst(r, k, 70, T0 + 10);
	ck_assert_int_eq(p.npub, 2);
	q = &p.pubs[1];
	bm = (const uint64_t *)(const void *)q->side;
	ck_assert_uint_eq(q->d.buf_index, 1);
	ck_assert_uint_eq(q->d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(bm[0], UINT64_MAX);
	ck_assert_uint_eq(bm[1], (1ull << 6) - 1);
	for (uint32_t i = 0; i < 70; i++)
		check_slot(&p, q, i, &f[i]);
	ck_assert(guards_intact(&p));
	check_invariant(r);
	raw_destroy(r);
	pool_fini(&p);
}
END_TEST

/* timeout_us: the deadline is the first frame's rx_ns + timeout, fixed. */
START_TEST(test_timeout_partial)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[3];
	struct rx_frame k[3];
	uint64_t dl = T0 + 100 * 1000;
	const struct pub *q;

	pool_init(&p, 2, 4, 32);
	r = plan_new(&p, 100);
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	raw_poll(r, UINT64_MAX - 1);
	ck_assert_int_eq(p.npub, 0);
	for (uint32_t i = 0; i < 3; i++)
		frame_make(&f[i], i, 8 + i);
	k[0] = pkt_of(&f[0], 8, T0);
	k[1] = pkt_of(&f[1], 0, T0 + 50 * 1000);
	raw_burst(r, k, 1, T0 + 10);
	ck_assert_uint_eq(raw_next_deadline(r), dl);
	raw_burst(r, k + 1, 1, T0 + 50 * 1000);
	ck_assert_uint_eq(raw_next_deadline(r), dl);	/* not sliding */
	raw_poll(r, dl - 1);
	ck_assert_int_eq(p.npub, 0);
	raw_poll(r, dl);
	check_invariant(r);
	ck_assert_int_eq(p.npub, 1);
	q = &p.pubs[0];
	ck_assert_uint_eq(q->d.flags, DAQIRI_TENSOR_TIMEOUT | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(q->d.packets_received, 2);
	ck_assert_uint_eq(q->d.packets_expected, 4);
	ck_assert_uint_eq(q->d.first_rx_ns, T0);
	ck_assert_uint_eq(q->d.last_rx_ns, T0 + 50 * 1000);
	ck_assert_uint_eq(q->d.publish_ns, dl);
	check_slot(&p, q, 0, &f[0]);
	check_slot(&p, q, 1, &f[1]);
	ck_assert(!pub_bit(&p, q, 2));
	ck_assert(!pub_bit(&p, q, 3));
	ck_assert_uint_eq(raw_counters(r)->bursts_timeout, 1);
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	raw_poll(r, dl + 1000000);
	ck_assert_int_eq(p.npub, 1);
	/* a new burst counts from its own first frame */
	k[2] = pkt_of(&f[2], 3, dl + 7);
	raw_burst(r, k + 2, 1, dl + 8);
	ck_assert_uint_eq(raw_next_deadline(r), dl + 7 + 100 * 1000);
	raw_poll(r, dl + 7 + 100 * 1000);
	ck_assert_int_eq(p.npub, 2);
	q = &p.pubs[1];
	ck_assert_uint_eq(q->d.seq, 1);
	ck_assert_uint_eq(q->d.batch_id, 1);
	ck_assert_uint_eq(q->d.packets_received, 1);
	check_slot(&p, q, 0, &f[2]);
	ck_assert(!pub_bit(&p, q, 1));
	ck_assert_uint_eq(raw_counters(r)->bursts_timeout, 2);
	check_invariant(r);
	raw_destroy(r);
	ck_assert_int_eq(p.errors, 0);
	pool_fini(&p);
}
END_TEST

/* timeout 0: only full bursts, or at flush. */
START_TEST(test_no_timeout_flush)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[6];
	struct rx_frame k[6];
	const struct pub *q;

	pool_init(&p, 2, 4, 32);
	r = plan_new(&p, 0);
	for (uint32_t i = 0; i < 6; i++) {
		frame_make(&f[i], i, 4 + i);
		k[i] = pkt_of(&f[i], 2, T0 + i);
	}
	raw_flush(r, T0);		/* nothing open: nothing published */
	ck_assert_int_eq(p.npub, 0);
	raw_burst(r, k, 6, T0 + 10);	/* one full burst + 2 frames */
	ck_assert_int_eq(p.npub, 1);
	ck_assert_uint_eq(p.pubs[0].d.flags, DAQIRI_TENSOR_COMPLETE);
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	raw_poll(r, T0 + 1000000000000000ull);	/* 11 days later */
	ck_assert_int_eq(p.npub, 1);
	raw_flush(r, T0 + 99);
	ck_assert_int_eq(p.npub, 2);
	q = &p.pubs[1];
	ck_assert_uint_eq(q->d.flags, DAQIRI_TENSOR_FLUSH | DAQIRI_TENSOR_HAS_GAPS);
	ck_assert_uint_eq(q->d.packets_received, 2);
	ck_assert_uint_eq(q->d.seq, 1);
	ck_assert_uint_eq(q->d.first_rx_ns, T0 + 4);
	ck_assert_uint_eq(q->d.last_rx_ns, T0 + 5);
	ck_assert_uint_eq(q->d.publish_ns, T0 + 99);
	check_slot(&p, q, 0, &f[4]);
	check_slot(&p, q, 1, &f[5]);
	ck_assert(!pub_bit(&p, q, 2) && !pub_bit(&p, q, 3));
	ck_assert_uint_eq(raw_counters(r)->bursts_flush, 1);
	ck_assert_uint_eq(raw_counters(r)->bursts_full, 1);
	raw_flush(r, T0 + 100);		/* nothing open again */
	ck_assert_int_eq(p.npub, 2);
	check_invariant(r);
	raw_destroy(r);
	ck_assert_int_eq(p.puts, 0);
	ck_assert_int_eq(p.errors, 0);
	pool_fini(&p);
}
END_TEST

/* Longer than a slot: counted and dropped, nothing opened for it. */
START_TEST(test_oversize)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[4];
	struct rx_frame k[4];
	const struct raw_counters *c;

	pool_init(&p, 2, 2, 16);
	r = plan_new(&p, 0);
	frame_make(&f[0], 0, 17);
	frame_make(&f[1], 1, 16);
	frame_make(&f[2], 2, 200);
	frame_make(&f[3], 3, 5);
	k[0] = pkt_of(&f[0], 10, T0);	/* 10 + 7: over by one */
	k[1] = pkt_of(&f[1], 8, T0 + 1);	/* exactly a slot */
	k[2] = pkt_of(&f[2], 0, T0 + 2);
	k[3] = pkt_of(&f[3], 5, T0 + 3);
	raw_burst(r, k, 1, T0);
	c = raw_counters(r);
	ck_assert_uint_eq(c->oversize, 1);
	ck_assert_int_eq(p.gets, 0);		/* no buffer taken for it */
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	check_invariant(r);
	raw_burst(r, k + 1, 3, T0 + 3);
	check_invariant(r);
	ck_assert_uint_eq(c->packets_in, 4);
	ck_assert_uint_eq(c->oversize, 2);
	ck_assert_uint_eq(c->placed, 2);
	ck_assert_int_eq(p.npub, 1);
	ck_assert_uint_eq(p.pubs[0].d.first_rx_ns, T0 + 1);
	check_slot(&p, &p.pubs[0], 0, &f[1]);
	check_slot(&p, &p.pubs[0], 1, &f[3]);
	ck_assert(guards_intact(&p));
	raw_destroy(r);
	pool_fini(&p);
}
END_TEST

/* No free buffer: frames counted as no_buffer; the plan asks
 * again for the next frame and recovers when a buffer is back. */
START_TEST(test_no_buffer_recovers)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f[8];
	struct rx_frame k[8];
	const struct raw_counters *c;

	pool_init(&p, 1, 2, 16);
	r = plan_new(&p, 0);
	for (uint32_t i = 0; i < 8; i++) {
		frame_make(&f[i], i, 3 + i);
		k[i] = pkt_of(&f[i], 1, T0 + i);
	}
	c = raw_counters(r);
	raw_burst(r, k, 2, T0);		/* the only buffer, published */
	ck_assert_int_eq(p.npub, 1);
	raw_burst(r, k + 2, 3, T0 + 4);
	check_invariant(r);
	ck_assert_uint_eq(c->no_buffer, 3);
	ck_assert_uint_eq(c->placed, 2);
	ck_assert_int_eq(p.npub, 1);
	ck_assert_uint_eq(raw_next_deadline(r), UINT64_MAX);
	raw_flush(r, T0 + 5);		/* nothing open */
	ck_assert_int_eq(p.npub, 1);
	pool_release_all(&p);
	raw_burst(r, k + 5, 2, T0 + 6);
	check_invariant(r);
	ck_assert_int_eq(p.npub, 2);
	ck_assert_uint_eq(p.pubs[1].d.seq, 1);
	ck_assert_uint_eq(p.pubs[1].d.batch_id, 1);
	ck_assert_uint_eq(p.pubs[1].d.first_rx_ns, T0 + 5);
	check_slot(&p, &p.pubs[1], 0, &f[5]);
	check_slot(&p, &p.pubs[1], 1, &f[6]);
	/* held again: the next frame is dropped */
	raw_burst(r, k + 7, 1, T0 + 7);
	ck_assert_uint_eq(c->no_buffer, 4);
	check_invariant(r);
	ck_assert_int_eq(p.errors, 0);
	raw_destroy(r);
	pool_fini(&p);
}
END_TEST

/* raw_destroy hands an open buffer back through put(), once. */
START_TEST(test_destroy_puts_open)
{
	struct pool p;
	struct raw_plan *r;
	struct frame f;
	struct rx_frame k;

	pool_init(&p, 3, 4, 16);
	r = plan_new(&p, 50);
	raw_destroy(r);			/* nothing open */
	ck_assert_int_eq(p.puts, 0);

	r = plan_new(&p, 50);
	frame_make(&f, 1, 10);
	k = pkt_of(&f, 4, T0);
	raw_burst(r, &k, 1, T0);
	ck_assert_int_eq(pool_count(&p, B_LENT), 1);
	raw_destroy(r);
	ck_assert_int_eq(p.puts, 1);
	ck_assert_int_eq(p.put_index, 0);
	ck_assert_int_eq(p.errors, 0);
	ck_assert_int_eq(pool_count(&p, B_FREE), 3);
	ck_assert_int_eq(p.npub, 0);

	/* after a publish, nothing is open: nothing to put */
	r = plan_new(&p, 50);
	raw_burst(r, &k, 1, T0);
	raw_poll(r, T0 + 50 * 1000);
	ck_assert_int_eq(p.npub, 1);
	raw_destroy(r);
	ck_assert_int_eq(p.puts, 1);
	ck_assert_int_eq(p.errors, 0);
	pool_fini(&p);
}
END_TEST

/*
 * Random frames (some oversize), burst sizes, releases, polls and flushes
 * against a small model: after every call the invariant holds, seq and
 * batch_id go up by one per publish, and at the end the concatenation of
 * every published burst is exactly the frames the model says were placed,
 * in arrival order, with their lengths.
 */
START_TEST(test_random_against_model)
{
	enum { NF = 3000, SLOT = 40 };
	static struct frame f[NF];
	static int placed_ids[NF];
	struct pool p;
	struct raw_plan *r;
	uint64_t rng = 0x9E3779B97F4A7C15ull + (uint64_t)_i;
	uint32_t ppb = 1 + (uint32_t)_i * 3, nplaced = 0, got = 0, open_n = 0;
	uint64_t now = T0, timeout_ns = _i % 2 ? 20000 : 0, deadline = 0;
	bool open = false;
	int next = 0;

#define RND() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)
	pool_init(&p, 3, ppb, SLOT);
	r = plan_new(&p, (uint32_t)(timeout_ns / 1000));
	while (next < NF) {
		uint32_t op = (uint32_t)(RND() % 16);

		if (op < 10) {
			struct rx_frame k[16];
			unsigned n = 0, want = 1 + (unsigned)(RND() % 16);
			int model_free = pool_count(&p, B_FREE);

			for (; n < want && next < NF; n++, next++) {
				uint32_t len = 1 + (uint32_t)(RND() % (SLOT + 4));

				frame_make(&f[next], (uint32_t)next, len);
				k[n] = pkt_of(&f[next],
				    (uint32_t)(RND() % (len + 1)), now + n);
				/* the model: oversize and no-buffer drops */
				if (len > SLOT)
					continue;
				if (!open) {
					if (model_free == 0)
						continue;
					model_free--;
					open = true;
					open_n = 0;
					deadline = now + n + timeout_ns;
				}
				placed_ids[nplaced++] = next;
				if (++open_n == ppb)
					open = false;
			}
			raw_burst(r, k, n, now + n);
			now += 1000 + RND() % 30000;
		} else if (op < 13) {
			pool_release_all(&p);
		} else if (op < 15) {
			raw_poll(r, now);
			if (open && timeout_ns != 0 && deadline <= now)
				open = false;
			now += RND() % 40000;
		} else {
			raw_flush(r, now);
			open = false;
		}
		check_invariant(r);
		ck_assert_uint_eq(raw_counters(r)->placed, nplaced);
		ck_assert_int_eq(pool_count(&p, B_LENT), open ? 1 : 0);
		ck_assert_uint_eq(raw_next_deadline(r),
		    open && timeout_ns != 0 ? deadline : UINT64_MAX);
		/* every publish is numbered 0, 1, 2, ... */
		for (; got < (uint32_t)p.npub; got++) {
			ck_assert_uint_eq(p.pubs[got].d.seq, got);
			ck_assert_uint_eq(p.pubs[got].d.batch_id, got);
		}
	}
	raw_flush(r, now);
	check_invariant(r);
	ck_assert_int_eq(p.errors, 0);
	ck_assert(guards_intact(&p));
	ck_assert_uint_gt(raw_counters(r)->oversize, 0);
	ck_assert_uint_gt(raw_counters(r)->no_buffer, 0);
	{
		uint32_t idx = 0;

		for (int j = 0; j < p.npub; j++) {
			const struct pub *q = &p.pubs[j];

			ck_assert_uint_eq(q->d.packets_expected, ppb);
			ck_assert_uint_ge(q->d.packets_received, 1);
			ck_assert_uint_le(q->d.packets_received, ppb);
			ck_assert_uint_eq(q->d.flags == DAQIRI_TENSOR_COMPLETE,
			    q->d.packets_received == ppb);
			for (uint32_t s = 0; s < ppb; s++) {
				if (s >= q->d.packets_received) {
					ck_assert(!pub_bit(&p, q, s));
					continue;
				}
				ck_assert_uint_lt(idx, nplaced);
				check_slot(&p, q, s, &f[placed_ids[idx]]);
				idx++;
			}
		}
		ck_assert_uint_eq(idx, nplaced);
	}
#undef RND
	raw_destroy(r);
	pool_fini(&p);
}
END_TEST

static Suite *
raw_suite(void)
{
	Suite *s = suite_create("raw");
	TCase *tc;

	tc = tcase_create("layout");
	tcase_add_test(tc, test_sidecar_bytes);
	tcase_add_test(tc, test_create_rejects);
	tcase_add_test(tc, test_full_burst_copies_frames);
	tcase_add_test(tc, test_multiword_bitmap);
	tcase_add_test(tc, test_null_part);
	tcase_add_test(tc, test_hdr_only);
	suite_add_tcase(s, tc);

	tc = tcase_create("publish");
	tcase_add_test(tc, test_timeout_partial);
	tcase_add_test(tc, test_no_timeout_flush);
	tcase_add_test(tc, test_destroy_puts_open);
	suite_add_tcase(s, tc);

	tc = tcase_create("drops");
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_no_buffer_recovers);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_add_loop_test(tc, test_random_against_model, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(raw_suite());
	int nfail;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
