/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the replay engine (engine_replay.c) on pcap files written
 * here: the clock rule (a burst is the run of frames sharing a timestamp,
 * a timeout that fires on the capture's clock advances it, after the end
 * the clock still runs), frames as whole Ethernet frames split after the
 * UDP header, truncation, buffers and their release, a held replay, a
 * queue without a file, pacing by --replay-speed, and the option parsers
 * and checks.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "engine_replay.h"
#include "log.h"
#include "mem.h"

#define MS		1000000ll
#define T0		1000000000000ull	/* the capture's first stamp, ns */
#define HDR		42u			/* Ethernet + IPv4 + UDP */

static struct cfg c;
static struct mem_region regions[1];
static struct replay_cfg rc;
static struct engine *eng;
static struct engine_rxq *q;
static struct rx_frame fr[ENGINE_MAX_BURST];
static char dir[] = "/tmp/check_replay.XXXXXX";
static char path[256];

/* One interface "sensor0" with nq rx queues; a host region of nbufs x
 * buf_size buffers shared by them (nbufs 0: private memory). */
static void
setup_cfg(int nq, uint32_t nbufs, uint64_t buf_size)
{
	struct cfg_interface *ifc = &c.interfaces[0];
	char err[MEM_ERR_MAX];

	memset(&c, 0, sizeof(c));
	memset(&rc, 0, sizeof(rc));
	c.ninterfaces = 1;
	snprintf(ifc->name, sizeof(ifc->name), "sensor0");
	ifc->has_rx = true;
	ifc->rx.nqueues = nq;
	for (int i = 0; i < nq; i++) {
		snprintf(ifc->rx.queues[i].name, CFG_NAME_MAX, "q%d", i);
		ifc->rx.queues[i].id = (uint32_t)i;
		ifc->rx.queues[i].batch_size = 64;
		ifc->rx.queues[i].nregions = nbufs ? 1 : 0;
		ifc->rx.queues[i].region_idx[0] = 0;
	}
	if (nbufs) {
		c.nregions = 1;
		snprintf(c.regions[0].name, CFG_NAME_MAX, "rx_frames");
		c.regions[0].kind = DAQIRI_MEM_HOST;
		c.regions[0].num_bufs = nbufs;
		c.regions[0].buf_size = buf_size;
		ck_assert_int_eq(mem_region_create(&c.regions[0], &regions[0],
		    err, sizeof(err)), 0);
	}
}

/* A UDP frame of payload_len bytes whose payload starts with tag. */
static uint32_t
frame(uint8_t *f, uint32_t payload_len, uint32_t tag)
{
	memset(f, 0, HDR + payload_len);
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 2] = (uint8_t)((28 + payload_len) >> 8);
	f[14 + 3] = (uint8_t)(28 + payload_len);
	f[14 + 9] = 17;
	f[34 + 2] = 0x13;			/* port 5005 */
	f[34 + 3] = 0x8d;
	memcpy(f + HDR, &tag, sizeof(tag));
	return HDR + payload_len;
}

/* Write a capture of n frames stamped ts[i] (ns), payload len[i] bytes,
 * tagged i; caplen[i] < the length when given. */
static void
write_pcap(const char *p, int n, const uint64_t *ts, const uint32_t *len,
	   const uint32_t *caplen)
{
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535,
	    PCAP_TSTAMP_PRECISION_NANO);
	pcap_dumper_t *d = pcap_dump_open(dead, p);
	static uint8_t f[65536];

	ck_assert_ptr_nonnull(d);
	for (int i = 0; i < n; i++) {
		struct pcap_pkthdr h;
		uint32_t l = frame(f, len != NULL ? len[i] : 100, (uint32_t)i);

		h.ts.tv_sec = (time_t)(ts[i] / 1000000000u);
		h.ts.tv_usec = (suseconds_t)(ts[i] % 1000000000u);
		h.len = l;
		h.caplen = caplen != NULL && caplen[i] != 0 ? caplen[i] : l;
		pcap_dump((u_char *)d, &h, f);
	}
	pcap_dump_close(d);
	pcap_close(dead);
}

static void
start(const char *arg)
{
	char err[ENGINE_ERR_MAX] = "";
	struct engine_opts o = { .replay = &rc };

	if (arg != NULL)
		ck_assert_int_eq(replay_cfg_add(&rc, arg, err, sizeof(err)), 0);
	ck_assert_msg(engine_replay_ops.init(&eng, &c, &c.interfaces[0],
	    regions, &o, err, sizeof(err)) == 0, "init: %s", err);
	ck_assert_int_eq(engine_replay_ops.start(eng), 0);
	q = engine_replay_ops.rxq(eng, 0);
	ck_assert_ptr_nonnull(q);
}

static void
stop(void)
{
	engine_replay_ops.fini(eng);
	eng = NULL;
	mem_region_destroy(&regions[0]);
}

static uint32_t
tag_of(const struct rx_frame *f)
{
	uint32_t t;

	ck_assert_uint_ge(f->payload_len, sizeof(t));
	memcpy(&t, f->payload, sizeof(t));
	return t;
}

static int
burst(unsigned max, int64_t timeout)
{
	return engine_replay_ops.rx_burst(q, fr, max, timeout);
}

static uint64_t
now(void)
{
	return engine_replay_ops.now_ns(q);
}

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.pcap", dir);
}

static void
teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	strcpy(dir, "/tmp/check_replay.XXXXXX");
}

/* Frames that share a stamp come as one burst; the clock is the stamp. */
START_TEST(test_bursts_by_timestamp)
{
	uint64_t ts[] = { T0, T0, T0, T0 + 10, T0 + 10, T0 + 20 };
	int n;

	write_pcap(path, 6, ts, NULL, NULL);
	setup_cfg(1, 64, 2048);
	rc.hold = false;
	{
		char a[300];

		snprintf(a, sizeof(a), "sensor0/q0=%s", path);
		start(a);
	}
	ck_assert_uint_eq(now(), T0);	/* the clock starts at the first */
	n = burst(64, 100 * MS);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(tag_of(&fr[i]), (uint32_t)i);
		ck_assert_uint_eq(fr[i].rx_ns, T0);
		ck_assert_uint_eq(fr[i].hdr_len, HDR);
		ck_assert_uint_eq(fr[i].payload_len, 100);
		ck_assert_ptr_eq(fr[i].payload, fr[i].hdr + HDR);
		ck_assert_ptr_null(fr[i].stash);
	}
	engine_replay_ops.release(q, 3);
	/* max splits a run; the rest comes next, at the same time */
	ck_assert_int_eq(burst(1, 100 * MS), 1);
	ck_assert_uint_eq(tag_of(&fr[0]), 3);
	ck_assert_uint_eq(now(), T0 + 10);
	ck_assert_int_eq(burst(64, 0), 1);
	ck_assert_uint_eq(tag_of(&fr[0]), 4);
	ck_assert_uint_eq(fr[0].rx_ns, T0 + 10);
	engine_replay_ops.release(q, 2);
	ck_assert_int_eq(burst(64, -1), 1);
	ck_assert_uint_eq(now(), T0 + 20);
	stop();
}
END_TEST

/* A timeout that ends before the next stamp fires on the capture's
 * clock: the clock advances by it and nothing comes. */
START_TEST(test_timeouts_advance_the_clock)
{
	uint64_t ts[] = { T0, T0 + 300 * MS };
	char a[300];

	write_pcap(path, 2, ts, NULL, NULL);
	setup_cfg(1, 64, 2048);
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	ck_assert_int_eq(burst(64, 100 * MS), 1);
	engine_replay_ops.release(q, 1);
	ck_assert_int_eq(burst(64, 100 * MS), 0);
	ck_assert_uint_eq(now(), T0 + 100 * MS);
	ck_assert_int_eq(burst(64, 150 * MS), 0);
	ck_assert_uint_eq(now(), T0 + 250 * MS);
	ck_assert_int_eq(burst(64, 0), 0);	/* a zero timeout: nothing */
	ck_assert_uint_eq(now(), T0 + 250 * MS);
	/* reaching the stamp exactly delivers it */
	ck_assert_int_eq(burst(64, 50 * MS), 1);
	ck_assert_uint_eq(now(), T0 + 300 * MS);
	ck_assert_uint_eq(fr[0].rx_ns, T0 + 300 * MS);
	stop();
}
END_TEST

/* After the end the clock still runs by each timeout; status says done. */
START_TEST(test_end_of_file)
{
	uint64_t ts[] = { T0 };
	struct engine_stats st;
	char a[300];
	cJSON *arr = cJSON_CreateArray();
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	write_pcap(path, 1, ts, NULL, NULL);
	setup_cfg(1, 64, 2048);
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	engine_replay_ops.set_wake_fd(q, efd);
	ck_assert_int_eq(burst(64, 5 * MS), 1);
	engine_replay_ops.release(q, 1);
	ck_assert_int_eq(burst(64, 5 * MS), 0);
	ck_assert_uint_eq(now(), T0 + 5 * MS);
	ck_assert_int_eq(burst(64, 7 * MS), 0);
	ck_assert_uint_eq(now(), T0 + 12 * MS);
	/* a negative timeout waits on the wake fd alone */
	ck_assert_int_eq(write(efd, &(uint64_t){ 1 }, 8), 8);
	ck_assert_int_eq(burst(64, -1), 0);
	ck_assert_uint_eq(now(), T0 + 12 * MS);
	ck_assert_int_eq(engine_replay_ops.stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets, 1);
	ck_assert_uint_eq(st.bursts, 1);
	ck_assert_int_eq(engine_replay_json(eng, arr), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
	    "done")));
	ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
	    "frames")->valuedouble, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
	    "queue")->valuestring, "sensor0/q0");
	cJSON_Delete(arr);
	close(efd);
	stop();
}
END_TEST

/* A frame longer than a buffer, or captured short, is truncated; a
 * frame back in time comes at the clock's now. */
START_TEST(test_truncated_and_back_in_time)
{
	uint64_t ts[] = { T0, T0, T0, T0 + 5, T0 + 2 };
	uint32_t len[] = { 100, 3000, 100, 100, 100 };
	uint32_t cap[] = { 0, 0, 60, 0, 0 };
	struct engine_stats st;
	char a[300];

	write_pcap(path, 5, ts, len, cap);
	setup_cfg(1, 64, 2048);
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	ck_assert_int_eq(burst(64, MS), 1);
	ck_assert_uint_eq(tag_of(&fr[0]), 0);
	engine_replay_ops.release(q, 1);
	ck_assert_int_eq(engine_replay_ops.stats(q, &st), 0);
	ck_assert_uint_eq(st.truncated, 2);
	ck_assert_int_eq(burst(64, MS), 2);
	ck_assert_uint_eq(tag_of(&fr[0]), 3);
	ck_assert_uint_eq(tag_of(&fr[1]), 4);
	ck_assert_uint_eq(fr[1].rx_ns, T0 + 5);	/* never back */
	stop();
}
END_TEST

/* Frames stay in their buffers until released: with every buffer out,
 * -ENOBUFS; a run is cut where the buffers end. */
START_TEST(test_buffers_and_release)
{
	uint64_t ts[6] = { T0, T0, T0, T0, T0, T0 };
	char a[300];

	write_pcap(path, 6, ts, NULL, NULL);
	setup_cfg(1, 4, 2048);
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	ck_assert_int_eq(burst(64, MS), 4);
	ck_assert_ptr_eq(fr[0].hdr, mem_buf(&regions[0], 0));
	ck_assert_ptr_eq(fr[3].hdr, mem_buf(&regions[0], 3));
	ck_assert_int_eq(burst(64, MS), -ENOBUFS);
	engine_replay_ops.release(q, 1);
	ck_assert_int_eq(burst(64, MS), 1);
	ck_assert_uint_eq(tag_of(&fr[0]), 4);
	ck_assert_ptr_eq(fr[0].hdr, mem_buf(&regions[0], 0));
	engine_replay_ops.release(q, 64);	/* more than held: all */
	ck_assert_int_eq(burst(64, MS), 1);
	ck_assert_uint_eq(tag_of(&fr[0]), 5);
	stop();
}
END_TEST

/* Held: nothing comes and the clock stands still, until released. */
START_TEST(test_hold)
{
	uint64_t ts[] = { T0 };
	char a[300];

	write_pcap(path, 1, ts, NULL, NULL);
	setup_cfg(1, 0, 0);
	rc.hold = true;
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	ck_assert(!engine_replay_running(eng));
	ck_assert_int_eq(burst(64, MS), 0);
	ck_assert_uint_eq(now(), T0);
	ck_assert_int_eq(engine_replay_release(eng), 0);
	ck_assert_int_eq(engine_replay_release(eng), -EALREADY);
	ck_assert(engine_replay_running(eng));
	ck_assert_int_eq(burst(64, MS), 1);
	stop();
}
END_TEST

/* A queue without a file receives nothing, and its clock runs. */
START_TEST(test_queue_without_file)
{
	uint64_t ts[] = { T0 };
	char a[300];

	write_pcap(path, 1, ts, NULL, NULL);
	setup_cfg(2, 0, 0);
	snprintf(a, sizeof(a), "sensor0/q1=%s", path);
	start(a);
	ck_assert_int_eq(burst(64, 3 * MS), 0);
	ck_assert_uint_eq(now(), 3 * MS);
	q = engine_replay_ops.rxq(eng, 1);
	ck_assert_int_eq(burst(64, 3 * MS), 1);
	stop();
}
END_TEST

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* At speed 10, 200 ms of capture take at least 20 ms of wall time, and a
 * timeout that fires on the capture's clock is paced as well. */
START_TEST(test_speed_paces)
{
	uint64_t ts[] = { T0, T0 + 200 * MS, T0 + 400 * MS };
	uint64_t t0, t1;
	char a[300];

	write_pcap(path, 3, ts, NULL, NULL);
	setup_cfg(1, 0, 0);
	rc.speed = 10;
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	start(a);
	ck_assert_int_eq(burst(64, -1), 1);
	t0 = wall_ns();
	ck_assert_int_eq(burst(64, -1), 1);
	t1 = wall_ns();
	ck_assert_uint_ge(t1 - t0, 19 * MS);
	ck_assert_uint_lt(t1 - t0, 2000 * MS);
	ck_assert_int_eq(burst(64, 100 * MS), 0);	/* fires at +100 ms */
	ck_assert_uint_ge(wall_ns() - t0, 29 * MS);
	ck_assert_uint_eq(now(), T0 + 300 * MS);
	ck_assert_int_eq(burst(64, -1), 1);
	ck_assert_uint_ge(wall_ns() - t0, 39 * MS);
	stop();
}
END_TEST

START_TEST(test_options_and_checks)
{
	uint64_t ts[] = { T0 };
	char err[512], a[300];
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	setup_cfg(1, 0, 0);
	ck_assert_int_eq(replay_cfg_add(&rc, "q0", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "INTERFACE/QUEUE=FILE"));
	ck_assert_int_eq(replay_cfg_add(&rc, "sensor0/q0=", err, sizeof(err)),
	    -1);
	ck_assert_int_eq(replay_cfg_add(&rc, "sensor0/q0=x", err, sizeof(err)),
	    0);
	ck_assert_int_eq(replay_cfg_add(&rc, "sensor0/q0=y", err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	ck_assert_int_eq(replay_cfg_speed(&rc, "max", err, sizeof(err)), 0);
	ck_assert_double_eq(rc.speed, 0);
	ck_assert_int_eq(replay_cfg_speed(&rc, "2.5", err, sizeof(err)), 0);
	ck_assert_double_eq(rc.speed, 2.5);
	ck_assert_int_eq(replay_cfg_speed(&rc, "0", err, sizeof(err)), -1);
	ck_assert_int_eq(replay_cfg_speed(&rc, "-1", err, sizeof(err)), -1);
	ck_assert_int_eq(replay_cfg_speed(&rc, "nan", err, sizeof(err)), -1);
	ck_assert_int_eq(replay_cfg_speed(&rc, "1x", err, sizeof(err)), -1);

	write_pcap(path, 1, ts, NULL, NULL);
	memset(&rc, 0, sizeof(rc));
	snprintf(a, sizeof(a), "sensor0/q0=%s", path);
	ck_assert_int_eq(replay_cfg_add(&rc, a, err, sizeof(err)), 0);
	ck_assert_int_eq(replay_cfg_add(&rc, "sensor0/q7=/nonexistent.pcap",
	    err, sizeof(err)), 0);
	out = open_memstream(&buf, &len);
	ck_assert_int_eq(replay_check(&c, &rc, out), 2);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(buf, "no rx queue 'sensor0/q7'"));
	ck_assert_ptr_nonnull(strstr(buf, "No such file"));
	free(buf);
}
END_TEST

START_TEST(test_hdr_len)
{
	static uint8_t f[200];
	uint32_t l = frame(f, 100, 0);

	ck_assert_uint_eq(replay_hdr_len(f, l), HDR);
	f[14] = 0x46;				/* IPv4 options: 4 more */
	ck_assert_uint_eq(replay_hdr_len(f, l), HDR + 4);
	f[14] = 0x45;
	f[14 + 9] = 6;				/* TCP: the whole frame */
	ck_assert_uint_eq(replay_hdr_len(f, l), l);
	f[14 + 9] = 17;
	f[14 + 7] = 1;				/* a later fragment */
	ck_assert_uint_eq(replay_hdr_len(f, l), l);
	ck_assert_uint_eq(replay_hdr_len(f, 10), 10);
}
END_TEST

static Suite *
replay_suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_bursts_by_timestamp);
	tcase_add_test(tc, test_timeouts_advance_the_clock);
	tcase_add_test(tc, test_end_of_file);
	tcase_add_test(tc, test_truncated_and_back_in_time);
	tcase_add_test(tc, test_buffers_and_release);
	tcase_add_test(tc, test_hold);
	tcase_add_test(tc, test_queue_without_file);
	tcase_add_test(tc, test_speed_paces);
	tcase_add_test(tc, test_options_and_checks);
	tcase_add_test(tc, test_hdr_len);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(replay_suite());
	int failed;

	log_init(CFG_LOG_WARN, 0);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
