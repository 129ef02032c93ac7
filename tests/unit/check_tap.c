/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/tap.c, the queue tap behind daqirictl learn: a
 * session takes count frames and no more, snap bytes of each (only the
 * header shadow of a frame in device memory), one owner at a time; what
 * a worker wrote for an ended session is never read in the next; a full
 * ring is counted, never waited on.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

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
	ck_assert_ptr_null(t.buf);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
