/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/tap.c, the queue tap behind daqirictl learn: a
 * session takes count frames and no more, snap bytes of each (only the
 * header shadow of a frame in device memory), one owner at a time; what
 * a worker wrote for an ended session is never read in the next; a full
 * ring is counted, never waited on. The ring in its memfd, read as a
 * capture reads it (proto/tapring.c's attach and reader, behind
 * daqiri_tap_next()): its layout checks, and a reader that writes
 * garbage into the tail or the records, which loses only its capture.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "tap.h"

static struct tap t;
static uint8_t hdr[64], pay[1000];
static struct rx_frame fr[64];

static void
setup(void)
{
	memset(&t, 0, sizeof(t));
	for (unsigned i = 0; i < sizeof(hdr); i++)
		hdr[i] = (uint8_t)i;
	for (unsigned i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(0x80 + i);
	for (unsigned i = 0; i < 64; i++) {
		fr[i].hdr = hdr;
		fr[i].hdr_len = 50;
		fr[i].payload = pay;
		fr[i].payload_len = 1000;
		fr[i].rx_ns = 1000 + i;
		fr[i].flags = 0;
	}
}

static void
teardown(void)
{
	tap_free(&t);
}

/* read once; the reply's frames array and counters */
static cJSON *
rd(uint64_t owner, uint32_t max, int want_rc)
{
	cJSON *o = cJSON_CreateObject();

	ck_assert_int_eq(tap_read(&t, owner, max, o), want_rc);
	return o;
}

static double
num(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k)->valuedouble;
}

START_TEST(test_session)
{
	const cJSON *a, *f;
	cJSON *o;

	/* nothing before a start: frames pass untouched */
	tap_frames(&t, fr, 8);
	ck_assert_ptr_null(t.ring.hdr);
	ck_assert_int_eq(tap_stop(&t, 7), -ENOENT);
	cJSON_Delete(rd(7, 10, -ENOENT));

	ck_assert_int_eq(tap_start(&t, 7, 10, 60), 0);
	ck_assert_int_eq(tap_start(&t, 8, 10, 60), -EBUSY);
	cJSON_Delete(rd(8, 10, -ENOENT));
	tap_frames(&t, fr, 6);
	tap_frames(&t, fr + 6, 6);		/* 2 of these are one too many */
	o = rd(7, 4, 0);
	a = cJSON_GetObjectItemCaseSensitive(o, "frames");
	ck_assert_int_eq(cJSON_GetArraySize(a), 4);
	f = cJSON_GetArrayItem(a, 3);
	ck_assert_uint_eq(num(f, "ns"), 1003);
	ck_assert_uint_eq(num(f, "len"), 1050);
	/* 50 header bytes then 10 of the payload */
	const char *d = cJSON_GetObjectItemCaseSensitive(f, "data")->valuestring;
	ck_assert_uint_eq(strlen(d), 120);
	ck_assert(strncmp(d, "000102", 6) == 0);
	ck_assert(strncmp(d + 96, "3031808182", 10) == 0);
	ck_assert_uint_eq(num(o, "taken"), 10);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "done")));
	cJSON_Delete(o);
	o = rd(7, 100, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o,
	    "frames")), 6);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "done")));
	ck_assert_uint_eq(num(o, "full"), 0);
	cJSON_Delete(o);

	/* the owner's stop frees the queue for another */
	ck_assert_int_eq(tap_stop(&t, 8), -ENOENT);
	ck_assert_int_eq(tap_stop(&t, 7), 0);
	tap_frames(&t, fr, 8);
	ck_assert_int_eq(tap_start(&t, 8, 3, 512), 0);
	/* a frame in device memory: its header shadow only */
	fr[0].flags = RX_FRAME_DEV_PAYLOAD;
	tap_frames(&t, fr, 1);
	o = rd(8, 10, 0);
	f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "frames"), 0);
	ck_assert_uint_eq(strlen(cJSON_GetObjectItemCaseSensitive(f,
	    "data")->valuestring), 100);
	ck_assert_uint_eq(num(f, "len"), 1050);
	cJSON_Delete(o);
	fr[0].flags = 0;
	/* snap 512 of a 1050-byte frame */
	tap_frames(&t, fr, 1);
	o = rd(8, 10, 0);
	f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "frames"), 0);
	ck_assert_uint_eq(strlen(cJSON_GetObjectItemCaseSensitive(f,
	    "data")->valuestring), 1024);
	cJSON_Delete(o);
}
END_TEST

/* A worker still in an ended session's burst writes records the next
 * session never returns; a ring left unread fills and counts. */
START_TEST(test_stale_and_full)
{
	uint64_t ctl;
	cJSON *o;

	ck_assert_int_eq(tap_start(&t, 1, 4096, 16), 0);
	ctl = atomic_load(&t.ctl);
	ck_assert_int_eq(tap_start(&t, 1, 5, 16), 0);	/* the same owner: anew */
	/* the worker has not seen the new session yet: the old one's word */
	atomic_store(&t.ctl, ctl);
	tap_frames(&t, fr, 3);
	atomic_store(&t.ctl, (uint64_t)t.gen | 5ull << 16 | 16ull << 36);
	tap_frames(&t, fr + 10, 2);
	o = rd(1, 100, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o,
	    "frames")), 2);
	ck_assert_uint_eq(num(cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(o, "frames"), 0), "ns"), 1010);
	ck_assert_uint_eq(num(o, "taken"), 2);
	cJSON_Delete(o);

	/* TAP_RING frames unread, then more: counted as full */
	ck_assert_int_eq(tap_start(&t, 1, DAQIRI_TAP_COUNT_MAX, 16), 0);
	for (unsigned i = 0; i < TAP_RING / 64; i++)
		tap_frames(&t, fr, 64);
	atomic_store(&t.ctl, atomic_load(&t.ctl));
	t.w_taken = 0;		/* as if the session wanted more */
	tap_frames(&t, fr, 5);
	ck_assert_uint_eq(t.w_full, 5);
	o = rd(1, DAQIRI_TAP_READ_MAX, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o,
	    "frames")), DAQIRI_TAP_READ_MAX);
	ck_assert_uint_eq(num(o, "full"), 5);
	cJSON_Delete(o);
}
END_TEST

/* The owner's ring as a reader process maps it (read-write), attached. */
static void *
map_ring(uint64_t owner, struct daqiri_tapring *r)
{
	struct stat st;
	void *p;
	int f = tap_ring_fd(&t, owner);

	ck_assert_int_ge(f, 0);
	ck_assert_int_eq(fcntl(f, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(fstat(f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, DAQIRI_TAPRING_BYTES);
	/* sealed: neither side can shrink it under the other's mapping */
	ck_assert_int_eq(fcntl(f, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW),
	    F_SEAL_SHRINK | F_SEAL_GROW);
	ck_assert_int_ne(ftruncate(f, 4096), 0);
	p = mmap(NULL, DAQIRI_TAPRING_BYTES, PROT_READ | PROT_WRITE,
	    MAP_SHARED, f, 0);
	close(f);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(daqiri_tapring_attach(r, p, DAQIRI_TAPRING_BYTES), 0);
	return p;
}

/* A mapped session: the frames as the worker copied them, in order, then
 * empty; the counts in the header; an earlier session's records skipped. */
START_TEST(test_mapped)
{
	struct daqiri_tapring r;
	struct daqiri_tapring_reader rd;
	const struct daqiri_tapring_rec *rec;
	uint64_t ctl;
	uint32_t caplen;
	void *p;

	ck_assert_int_eq(tap_ring_fd(&t, 3), -ENOENT);
	ck_assert_int_eq(tap_start(&t, 3, 0, DAQIRI_TAP_SNAP_MAX), 0);
	ck_assert_int_eq(tap_ring_fd(&t, 4), -ENOENT);
	p = map_ring(3, &r);
	daqiri_tapring_reader_init(&rd, &r, t.gen);
	ck_assert_int_eq(daqiri_tapring_next(&rd, &rec, &caplen), 0);
	tap_frames(&t, fr, 5);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_int_eq(daqiri_tapring_next(&rd, &rec, &caplen), 1);
		ck_assert_uint_eq(rec->ns, 1000 + i);
		ck_assert_uint_eq(rec->len, 1050);
		ck_assert_uint_eq(caplen, 1050);
		ck_assert_int_eq(memcmp(rec->data, hdr, 50), 0);
		ck_assert_int_eq(memcmp(rec->data + 50, pay, 1000), 0);
	}
	ck_assert_int_eq(daqiri_tapring_next(&rd, &rec, &caplen), 0);
	/* given back: the worker sees the tail */
	ck_assert_uint_eq(atomic_load(&r.hdr->tail), 5);
	ck_assert_uint_eq(daqiri_tapring_acct(atomic_load(&r.hdr->taken),
	    t.gen), 5);
	ck_assert_uint_eq(daqiri_tapring_acct(atomic_load(&r.hdr->taken),
	    t.gen + 1), 0);

	/* a new session while the worker still writes the old one's */
	ctl = atomic_load(&t.ctl);
	ck_assert_int_eq(tap_start(&t, 3, 0, 64), 0);
	daqiri_tapring_reader_init(&rd, &r, t.gen);
	atomic_store(&t.ctl, ctl);
	tap_frames(&t, fr, 2);
	atomic_store(&t.ctl, (uint64_t)t.gen | 64ull << 36);
	tap_frames(&t, fr + 20, 1);
	ck_assert_int_eq(daqiri_tapring_next(&rd, &rec, &caplen), 1);
	ck_assert_uint_eq(rec->ns, 1020);
	ck_assert_uint_eq(caplen, 64);
	ck_assert_int_eq(daqiri_tapring_next(&rd, &rec, &caplen), 0);
	munmap(p, DAQIRI_TAPRING_BYTES);
}
END_TEST

/* The reader trusts no geometry it was not built for. */
START_TEST(test_layout)
{
	struct daqiri_tapring r;
	struct daqiri_tapring_hdr *h;
	void *p;

	ck_assert_int_eq(tap_start(&t, 3, 0, 64), 0);
	p = map_ring(3, &r);
	h = p;
	ck_assert_uint_eq(h->magic, DAQIRI_TAPRING_MAGIC);
	ck_assert_uint_eq(h->records, TAP_RING);
	ck_assert_uint_eq(h->rec_bytes % 64, 0);
	ck_assert_uint_ge(h->rec_bytes, sizeof(struct daqiri_tapring_rec) +
	    DAQIRI_TAP_SNAP_MAX);
	ck_assert_uint_eq(h->total_bytes, DAQIRI_TAPRING_BYTES);
	/* head, tail and the counts on cache lines of their own */
	ck_assert_uint_eq(offsetof(struct daqiri_tapring_hdr, head) % 64, 0);
	ck_assert_uint_eq(offsetof(struct daqiri_tapring_hdr, tail) -
	    offsetof(struct daqiri_tapring_hdr, head), 64);
	ck_assert_uint_eq(offsetof(struct daqiri_tapring_hdr, taken) -
	    offsetof(struct daqiri_tapring_hdr, tail), 64);
	ck_assert_int_eq(daqiri_tapring_attach(&r, p, DAQIRI_TAPRING_BYTES - 4096),
	    -EPROTO);
	ck_assert_int_eq(daqiri_tapring_attach(&r, NULL, DAQIRI_TAPRING_BYTES),
	    -EPROTO);
#define BAD(field, v) do { \
	uint64_t keep = h->field; \
	h->field = (v); \
	ck_assert_int_eq(daqiri_tapring_attach(&r, p, DAQIRI_TAPRING_BYTES), \
	    -EPROTO); \
	h->field = keep; \
} while (0)
	BAD(magic, 1);
	BAD(version, DAQIRI_TAPRING_VERSION + 1);
	BAD(records, TAP_RING * 2);
	BAD(rec_bytes, 64);
	BAD(data_max, DAQIRI_TAP_SNAP_MAX + 1);
	BAD(total_bytes, DAQIRI_TAPRING_BYTES * 2);
#undef BAD
	ck_assert_int_eq(daqiri_tapring_attach(&r, p, DAQIRI_TAPRING_BYTES), 0);
	munmap(p, DAQIRI_TAPRING_BYTES);
}
END_TEST

/* A reader that writes garbage: a tail past head or a ring behind makes
 * the worker count full and write nothing; the daemon's JSON read starts
 * over at head and clamps a record's caplen; the reader's own next says
 * -EPROTO. Nothing overruns. */
START_TEST(test_hostile_tail)
{
	struct daqiri_tapring r;
	struct daqiri_tapring_reader rdr;
	const struct daqiri_tapring_rec *rec;
	struct daqiri_tapring_rec *w;
	uint32_t caplen;
	cJSON *o;
	void *p;

	ck_assert_int_eq(tap_start(&t, 3, 0, 128), 0);
	p = map_ring(3, &r);
	tap_frames(&t, fr, 4);
	ck_assert_uint_eq(atomic_load(&r.hdr->head), 4);
	/* tail past head: unsigned head - tail is huge, so full */
	atomic_store(&r.hdr->tail, 100);
	tap_frames(&t, fr, 3);
	ck_assert_uint_eq(t.w_full, 3);
	ck_assert_uint_eq(atomic_load(&t.head), 4);
	/* nor does a head the reader rewrote move the worker's */
	atomic_store(&r.hdr->head, 1u << 30);
	atomic_store(&r.hdr->tail, (uint64_t)0 - TAP_RING);
	tap_frames(&t, fr, 2);
	ck_assert_uint_eq(t.w_full, 5);
	ck_assert_uint_eq(atomic_load(&t.head), 4);
	ck_assert_uint_eq(daqiri_tapring_acct(atomic_load(&r.hdr->full),
	    t.gen), 5);
	/* the reader's view of that: not a ring */
	daqiri_tapring_reader_init(&rdr, &r, t.gen);
	ck_assert_int_eq(daqiri_tapring_next(&rdr, &rec, &caplen), -EPROTO);
	/* the daemon's own read starts over at its head: nothing */
	o = rd(3, 100, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o,
	    "frames")), 0);
	cJSON_Delete(o);
	ck_assert_uint_eq(atomic_load(&r.hdr->tail), 4);
	/* a record's caplen made huge: clamped to what a record holds */
	tap_frames(&t, fr, 1);
	w = daqiri_tapring_rec(&r, 4);
	w->caplen = UINT32_MAX;
	daqiri_tapring_reader_init(&rdr, &r, t.gen);
	ck_assert_int_eq(daqiri_tapring_next(&rdr, &rec, &caplen), 1);
	ck_assert_uint_eq(caplen, DAQIRI_TAP_SNAP_MAX);
	atomic_store(&r.hdr->tail, 4);
	o = rd(3, 100, 0);
	ck_assert_uint_eq(strlen(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "frames"),
	    0), "data")->valuestring), 2 * DAQIRI_TAP_SNAP_MAX);
	cJSON_Delete(o);
	/* the last record of the ring, read whole, stays inside the map */
	w = daqiri_tapring_rec(&r, TAP_RING - 1);
	ck_assert((uint8_t *)w->data + DAQIRI_TAP_SNAP_MAX <=
	    (uint8_t *)p + DAQIRI_TAPRING_BYTES);
	munmap(p, DAQIRI_TAPRING_BYTES);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tap");
	TCase *tc = tcase_create("tap");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_session);
	tcase_add_test(tc, test_stale_and_full);
	tcase_add_test(tc, test_mapped);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_hostile_tail);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
