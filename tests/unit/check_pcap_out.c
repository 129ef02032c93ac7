/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for client/pcap_out.c: frames written are read back by
 * libpcap's own reader with their bytes, lengths and nanosecond
 * timestamps (monotonic + the offset taken at open); an existing file is
 * refused without force; rotation by size and by time names the files
 * FILE, FILE1, FILE2 ... each complete; a full file system is said with
 * the file's name (/dev/full).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "pcap_out.h"

static char dir[] = "/tmp/check_pcap_out.XXXXXX";

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)system(cmd);
	strcpy(dir, "/tmp/check_pcap_out.XXXXXX");
}

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Frames of a file: their count; the first's length, caplen, ns and
 * first byte in *len, *cap, *ns, *b0. -1 when libpcap cannot read it. */
static int
read_back(const char *path, uint32_t *len, uint32_t *cap, uint64_t *ns,
	  int *b0)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *p;
	int n = 0;

	p = pcap_open_offline_with_tstamp_precision(path,
	    PCAP_TSTAMP_PRECISION_NANO, err);
	if (p == NULL)
		return -1;
	ck_assert_int_eq(pcap_datalink(p), DLT_EN10MB);
	while (pcap_next_ex(p, &h, &d) == 1) {
		if (n++ == 0) {
			*len = h->len;
			*cap = h->caplen;
			*ns = (uint64_t)h->ts.tv_sec * 1000000000u +
			    (uint64_t)h->ts.tv_usec;
			*b0 = d[0];
		}
	}
	pcap_close(p);
	return n;
}

START_TEST(test_write_read_back)
{
	struct pcap_out_opts o = { .snaplen = 100 };
	struct pcap_out *p;
	struct pcap_out_stats st;
	char path[PATH_MAX], err[512];
	uint8_t frame[300];
	uint64_t mono = clock_ns(CLOCK_MONOTONIC), wall, ns;
	uint32_t len, cap;
	int b0, i;

	wall = clock_ns(CLOCK_REALTIME);
	snprintf(path, sizeof(path), "%s/a.pcap", dir);
	ck_assert_int_eq(pcap_out_open(path, &o, &p, err, sizeof(err)), 0);
	memset(frame, 0xab, sizeof(frame));
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(pcap_out_write(p, frame, sizeof(frame),
		    mono + (uint64_t)i * 1000), 0);
	pcap_out_stats(p, &st);
	ck_assert_uint_eq(st.frames, 10);
	ck_assert_uint_eq(st.files, 1);
	ck_assert_uint_eq(st.bytes, 24 + 10 * (16 + 100));
	ck_assert_int_eq(pcap_out_close(p, err, sizeof(err)), 0);
	ck_assert_int_eq(read_back(path, &len, &cap, &ns, &b0), 10);
	ck_assert_uint_eq(len, 300);
	ck_assert_uint_eq(cap, 100);	/* cut at snaplen */
	ck_assert_int_eq(b0, 0xab);
	/* the monotonic time made wall time, within the test's run */
	ck_assert(ns + 1000000000u > wall && ns < wall + 1000000000u);
}
END_TEST

START_TEST(test_no_overwrite)
{
	struct pcap_out_opts o = { 0 };
	struct pcap_out *p;
	char path[PATH_MAX], err[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/b.pcap", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("keep me", f);
	fclose(f);
	ck_assert_int_eq(pcap_out_open(path, &o, &p, err, sizeof(err)),
	    -EEXIST);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(err, "exists: add --force to replace it"));
	o.force = true;
	ck_assert_int_eq(pcap_out_open(path, &o, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(pcap_out_close(p, NULL, 0), 0);
}
END_TEST

START_TEST(test_rotation)
{
	struct pcap_out_opts o = { .rotate_bytes = 10000 };
	struct pcap_out *p;
	char path[PATH_MAX], f[PATH_MAX + 8], err[512];
	uint8_t frame[1000] = { 0 };
	uint32_t len, cap;
	uint64_t ns;
	int b0, i, n, total = 0;

	/* by size: 24 + 9 x 1016 fit in 10000 bytes, the tenth does not */
	snprintf(path, sizeof(path), "%s/r.pcap", dir);
	ck_assert_int_eq(pcap_out_open(path, &o, &p, err, sizeof(err)), 0);
	for (i = 0; i < 25; i++)
		ck_assert_int_eq(pcap_out_write(p, frame, sizeof(frame),
		    1000 + (uint64_t)i), 0);
	ck_assert_int_eq(pcap_out_close(p, NULL, 0), 0);
	for (i = 0; i < 3; i++) {
		if (i == 0)
			snprintf(f, sizeof(f), "%s", path);
		else
			snprintf(f, sizeof(f), "%s%d", path, i);
		n = read_back(f, &len, &cap, &ns, &b0);
		ck_assert_int_eq(n, i < 2 ? 9 : 7);
		total += n;
	}
	ck_assert_int_eq(total, 25);
	snprintf(f, sizeof(f), "%s3", path);
	ck_assert_int_ne(access(f, F_OK), 0);

	/* by time: a new file for each second of frames */
	o.rotate_bytes = 0;
	o.rotate_ns = 1000000000u;
	snprintf(path, sizeof(path), "%s/t.pcap", dir);
	ck_assert_int_eq(pcap_out_open(path, &o, &p, err, sizeof(err)), 0);
	for (i = 0; i < 30; i++)
		ck_assert_int_eq(pcap_out_write(p, frame, 64,
		    5000000000u + (uint64_t)i * 100000000u), 0);
	ck_assert_int_eq(pcap_out_close(p, NULL, 0), 0);
	for (i = 0, total = 0; i < 3; i++) {
		if (i == 0)
			snprintf(f, sizeof(f), "%s", path);
		else
			snprintf(f, sizeof(f), "%s%d", path, i);
		n = read_back(f, &len, &cap, &ns, &b0);
		ck_assert_int_eq(n, 10);
		total += n;
	}
	ck_assert_int_eq(total, 30);
}
END_TEST

START_TEST(test_disk_full)
{
	struct pcap_out_opts o = { .force = true };
	struct pcap_out *p;
	char err[512];
	uint8_t frame[1500] = { 0 };
	int i, r = 0;

	if (access("/dev/full", W_OK) != 0)
		return;		/* no /dev/full here */
	ck_assert_int_eq(pcap_out_open("/dev/full", &o, &p, err, sizeof(err)),
	    0);
	/* buffered: the failure shows when the buffer is written */
	for (i = 0; i < 2000 && r == 0; i++)
		r = pcap_out_write(p, frame, sizeof(frame), 1);
	if (r == 0)
		r = pcap_out_flush(p);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_str_eq(pcap_out_error(p), "/dev/full: writing: the disk is "
	    "full (No space left on device)");
	ck_assert_int_eq(pcap_out_write(p, frame, 10, 1), -ENOSPC);
	ck_assert_int_eq(pcap_out_close(p, err, sizeof(err)), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(err, "the disk is full"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pcap_out");
	TCase *tc = tcase_create("pcap_out");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_write_read_back);
	tcase_add_test(tc, test_no_overwrite);
	tcase_add_test(tc, test_rotation);
	tcase_add_test(tc, test_disk_full);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
