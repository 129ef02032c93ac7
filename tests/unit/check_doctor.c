/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for daemon/doctor.c: each verdict from the counters of two
 * looks, the thresholds (a period with too few packets keeps the
 * verdict; silence counts only with a consumer, and only after
 * DOCTOR_SILENT_NS), and that a change is reported once.
 */
#include <check.h>
#include <string.h>

#include "doctor.h"

#define S	1000000000ull

static struct cfg_interface ifc;
static struct cfg_reorder r;

static void
setup(void)
{
	memset(&ifc, 0, sizeof(ifc));
	memset(&r, 0, sizeof(r));
	strcpy(ifc.name, "in0");
	ifc.socket.present = true;
	ifc.socket.local.set = true;
	ifc.socket.local.addr = 0x7f000001;
	ifc.socket.local.port = 5005;
	r.payload_byte_offset = 50;
	r.payload_bytes = 8000;
	r.seq.bit_offset = 336;
	r.seq.bit_width = 32;
}

/* One look at time t (s) with these cumulative counters. */
static bool
look(struct doctor *d, uint64_t t, uint64_t in, uint64_t dup, uint64_t mal,
     uint64_t rx, bool subscribed)
{
	struct doctor_sample s = { .ns = t * S, .packets_in = in,
	    .duplicate = dup, .malformed = mal, .last_malformed_bytes = 4050,
	    .if_rx = rx };

	return doctor_look(d, &s, &ifc, &r, subscribed);
}

START_TEST(test_verdicts)
{
	struct doctor d;

	memset(&d, 0, sizeof(d));
	ck_assert(!look(&d, 1, 0, 0, 0, 0, true));
	ck_assert_int_eq(d.state, DOCTOR_WAITING);
	/* good packets */
	ck_assert(look(&d, 2, 100, 0, 0, 100, true));
	ck_assert_int_eq(d.state, DOCTOR_OK);
	ck_assert(!look(&d, 3, 200, 10, 0, 200, true));	/* no change */
	/* most malformed: the lengths seen and expected */
	ck_assert(look(&d, 4, 300, 10, 60, 300, true));
	ck_assert_int_eq(d.state, DOCTOR_MALFORMED);
	ck_assert_ptr_nonnull(strstr(d.why, "60 of 100 packets malformed: "
	    "frames of 4050 bytes, where this stream takes frames of exactly "
	    "8050 bytes (payload_byte_offset 50 + payload_bytes 8000)"));
	/* too few to say: the verdict stays */
	ck_assert(!look(&d, 5, 310, 20, 60, 310, true));
	ck_assert_int_eq(d.state, DOCTOR_MALFORMED);
	/* most duplicates: the field named */
	ck_assert(look(&d, 6, 410, 80, 60, 410, true));
	ck_assert_int_eq(d.state, DOCTOR_DUPLICATES);
	ck_assert_ptr_nonnull(strstr(d.why, "bit_offset 336, bit_width 32"));
	/* the interface receives, the stream nothing */
	ck_assert(look(&d, 7, 410, 80, 60, 600, true));
	ck_assert_int_eq(d.state, DOCTOR_NO_MATCH);
	ck_assert_ptr_nonnull(strstr(d.why, "interface 'in0' received 190 "
	    "frames"));
	/* nothing at all: silent only after DOCTOR_SILENT_NS since the last
	 * packet of the stream (at 6 s), and only with a consumer */
	ck_assert(!look(&d, 10, 410, 80, 60, 600, true));
	ck_assert_int_eq(d.state, DOCTOR_NO_MATCH);
	ck_assert(!look(&d, 12, 410, 80, 60, 600, false));
	ck_assert(look(&d, 13, 410, 80, 60, 600, true));
	ck_assert_int_eq(d.state, DOCTOR_SILENT);
	ck_assert_ptr_nonnull(strstr(d.why, "receives on udp://127.0.0.1:5005"
	    " (socket_config.local_addr)"));
	ck_assert(look(&d, 14, 600, 80, 60, 800, true));
	ck_assert_int_eq(d.state, DOCTOR_OK);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("doctor");
	TCase *tc = tcase_create("doctor");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_verdicts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
