/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the DPDK engine on net_pcap virtual devices (no NIC, no
 * huge pages): captures written here are received frame by frame and
 * byte by byte, chained frames, held buffers, timeouts and the wake fd in
 * both receive modes, two queues, counters, and init errors. EAL starts
 * once per process, so every test runs in its own forked child.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "flow.h"
#include "log.h"
#include "mem.h"

#define SEC		1000000000ll
#define MAXF		ENGINE_MAX_BURST
#define PPB		128u
#define SAMPLE_BYTES	8000u
#define HDR_LEN		42u
#define FIELDS_LEN	8u
#define SENSOR_FRAME	(HDR_LEN + FIELDS_LEN + SAMPLE_BYTES)	/* 8050 */
#define SENSOR_PORT	5005u
#define MAX_FRAMES	2048

static struct cfg c;
static struct mem_region regions[2];
static struct engine *eng;
static const struct engine_ops *ops;
static struct rx_frame fr[MAXF];
static char dir[] = "/tmp/check_engine_dpdk.XXXXXX";
static bool have_dir;

/* What a capture holds: every frame's bytes, for comparison. */
struct capture {
	uint32_t n;
	uint32_t len[MAX_FRAMES];
	uint8_t *bytes[MAX_FRAMES];
};
static struct capture cap[2];

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xFFFF);
}

/*
 * Frame i of a capture: Ethernet/IPv4/UDP to dport, UDP payload = the
 * 32-bit big-endian sequence seq, 4 zero bytes, then bytes that depend on
 * i and their position (so a misplaced or mixed-up frame shows).
 */
static uint8_t *
make_frame(uint32_t i, uint32_t seq, uint32_t dport, uint32_t len)
{
	uint8_t *f = calloc(1, len);
	uint32_t dlen = len - HDR_LEN, sum = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_ge(len, HDR_LEN + FIELDS_LEN);
	for (int k = 0; k < 6; k++) {
		f[k] = (uint8_t)(0x02 + (k == 5));
		f[6 + k] = (uint8_t)(0x02 + 2 * (k == 5));
	}
	put16(f + 12, 0x0800);
	f[14] = 0x45;
	put16(f + 16, 20 + dlen);
	f[22] = 64;
	f[23] = 17;
	put32(f + 26, 0x0a000001);
	put32(f + 30, 0x0a000002);
	for (int k = 14; k < 34; k += 2)
		sum += (uint32_t)(f[k] << 8 | f[k + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	put16(f + 24, ~sum & 0xFFFF);
	put16(f + 34, 4096);
	put16(f + 36, dport);
	put16(f + 38, dlen);
	put32(f + HDR_LEN, seq);
	for (uint32_t k = HDR_LEN + FIELDS_LEN; k < len; k++)
		f[k] = (uint8_t)(i * 7 + k * 13 + (k >> 8));
	return f;
}

/* Write capture x to dir/name by hand: the 24-byte global header, then a
 * 16-byte record header per frame. */
static void
write_pcap(const char *name, const struct capture *x)
{
	const uint32_t gh[6] = { 0xa1b2c3d4u, 2u | 4u << 16, 0, 0, 65535, 1 };
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(gh, sizeof(gh), 1, fp), 1);
	for (uint32_t i = 0; i < x->n; i++) {
		uint32_t rh[4] = { i / 1000000, i % 1000000, x->len[i],
			x->len[i] };

		ck_assert_uint_eq(fwrite(rh, sizeof(rh), 1, fp), 1);
		ck_assert_uint_eq(fwrite(x->bytes[i], x->len[i], 1, fp), 1);
	}
	ck_assert_int_eq(fclose(fp), 0);
}

/* n sensor frames (seq = i) of the default layout, every 10th one short
 * (60 bytes of frame: a minimal Ethernet frame). */
static void
make_capture(struct capture *x, uint32_t n, uint32_t sensor_len)
{
	ck_assert_uint_le(n, MAX_FRAMES);
	x->n = n;
	for (uint32_t i = 0; i < n; i++) {
		x->len[i] = i % 10 == 9 ? 60 : sensor_len;
		x->bytes[i] = make_frame(i, i, SENSOR_PORT, x->len[i]);
	}
}

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	have_dir = true;
	log_init(CFG_LOG_WARN, 0);
}

static void
teardown(void)
{
	char cmd[300];

	if (eng != NULL)
		ops->fini(eng);
	eng = NULL;
	mem_regions_destroy(regions, c.nregions);
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < cap[k].n; i++)
			free(cap[k].bytes[i]);
	if (have_dir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		(void)!system(cmd);
	}
}

/*
 * One dpdk interface "replay" on address with nq queues sharing a host
 * region of nbufs x buf_size (nbufs 0: no region), the EAL arguments
 * given (NULL-terminated), and a flow udp_dst 5005 to queue 0.
 */
static void
setup_cfg(const char *address, int nq, uint32_t nbufs, uint64_t buf_size,
	  const char *const *args)
{
	struct cfg_interface *ifc = &c.interfaces[0];
	char err[MEM_ERR_MAX];

	memset(&c, 0, sizeof(c));
	c.version = 1;
	c.master_core = 0;
	c.stream_type = CFG_STREAM_RAW;
	c.engine = CFG_ENGINE_DPDK;
	c.log_level = CFG_LOG_WARN;
	for (int i = 0; args != NULL && args[i] != NULL; i++) {
		snprintf(c.dpdk_args[i], CFG_PATH_MAX, args[i], dir);
		c.ndpdk_args++;
	}
	c.ninterfaces = 1;
	snprintf(ifc->name, sizeof(ifc->name), "replay");
	snprintf(ifc->address, sizeof(ifc->address), "%s", address);
	ifc->has_rx = true;
	ifc->rx.nqueues = nq;
	for (int i = 0; i < nq; i++) {
		snprintf(ifc->rx.queues[i].name, CFG_NAME_MAX, "q%d", i);
		ifc->rx.queues[i].id = (uint32_t)i;
		ifc->rx.queues[i].cpu_core = -1;
		ifc->rx.queues[i].batch_size = 64;
		ifc->rx.queues[i].nregions = nbufs ? 1 : 0;
		ifc->rx.queues[i].region_idx[0] = 0;
	}
	ifc->rx.nflows = 1;
	snprintf(ifc->rx.flows[0].name, CFG_NAME_MAX, "sensor");
	ifc->rx.flows[0].nqueue_ids = 1;
	ifc->rx.flows[0].has_match = true;
	ifc->rx.flows[0].match.has_udp_dst = true;
	ifc->rx.flows[0].match.udp_dst_lo = SENSOR_PORT;
	ifc->rx.flows[0].match.udp_dst_hi = SENSOR_PORT;
	if (nbufs) {
		c.nregions = 1;
		snprintf(c.regions[0].name, CFG_NAME_MAX, "frames");
		c.regions[0].kind = DAQIRI_MEM_HOST;
		c.regions[0].num_bufs = nbufs;
		c.regions[0].buf_size = buf_size;
		/* as the parser derives it for a dpdk rx region */
		c.regions[0].headroom = CFG_DPDK_MBUF_HEADROOM;
		ck_assert_int_eq(mem_regions_create(&c, regions, err,
		    sizeof(err)), 0);
	}
}

static const char *const pcap_args[] = {
	"--vdev=net_pcap0,rx_pcap=%s/a.pcap", "--no-huge", "--no-shconf",
	"-l", "0", NULL,
};

static int
init(const struct engine_opts *o, char *err, size_t errlen)
{
	ops = engine_lookup(CFG_ENGINE_DPDK);
	ck_assert_ptr_eq(ops, &engine_dpdk_ops);
	ck_assert_str_eq(ops->name, "dpdk");
	err[0] = '\0';
	return ops->init(&eng, &c, &c.interfaces[0], regions, o, err, errlen);
}

static void
init_ok(const struct engine_opts *o)
{
	char err[ENGINE_ERR_MAX];
	int rc = init(o, err, sizeof(err));

	ck_assert_msg(rc == 0, "init: %d %s", rc, err);
	ck_assert_ptr_nonnull(eng);
	ck_assert_int_eq(ops->start(eng), 0);
}

/* Frame f against the capture's frame i, through hdr ++ payload. */
static void
check_frame(const struct rx_frame *f, const struct capture *x,
	    uint32_t i)
{
	uint32_t len = f->hdr_len + f->payload_len;

	ck_assert_uint_eq(len, x->len[i]);
	ck_assert_int_eq(memcmp(f->hdr, x->bytes[i], f->hdr_len), 0);
	if (f->payload_len > 0)
		ck_assert_int_eq(memcmp(f->payload, x->bytes[i] + f->hdr_len,
		    f->payload_len), 0);
	ck_assert_uint_ne(f->rx_ns, 0);
}

/* Receive until n frames came or 5 s passed, checking each in order;
 * release after every burst unless hold. Returns the frames seen. */
static uint32_t
receive_all(struct engine_rxq *q, const struct capture *x, uint32_t n,
	    unsigned max)
{
	uint64_t end = now_ns() + 5 * (uint64_t)SEC, last_ns = 0;
	uint32_t got = 0;

	while (got < n && now_ns() < end) {
		int r = ops->rx_burst(q, fr, max, SEC / 10);

		ck_assert_int_ge(r, 0);
		for (int k = 0; k < r; k++) {
			ck_assert_uint_lt(got, n);
			check_frame(&fr[k], x, got);
			ck_assert_uint_ge(fr[k].rx_ns, last_ns);
			last_ns = fr[k].rx_ns;
			got++;
		}
		ops->release(q, (unsigned)r);
	}
	return got;
}

START_TEST(test_frames_bytes_and_stats)
{
	struct engine_rxq *q;
	struct engine_stats st;
	struct flow_table *t;
	uint64_t bytes = 0;
	uint32_t n = 3 * PPB - 5, got;
	int r;

	make_capture(&cap[0], n, SENSOR_FRAME);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 4096, 9000, pcap_args);
	init_ok(NULL);
	q = ops->rxq(eng, 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_null(ops->rxq(eng, 1));
	ck_assert_ptr_null(ops->rxq(eng, -1));
	ck_assert_int_eq(q->qi, 0);

	/* The first burst: whole frames, in the region's buffers, and the
	 * software classifier understands them. */
	r = ops->rx_burst(q, fr, 16, SEC);
	ck_assert_int_eq(r, 16);
	t = flow_table_create(&c.interfaces[0]);
	ck_assert_ptr_nonnull(t);
	for (int k = 0; k < r; k++) {
		const uint8_t *base = regions[0].base;

		check_frame(&fr[k], &cap[0], (uint32_t)k);
		ck_assert_uint_eq(fr[k].payload_len, 0);
		ck_assert_msg(fr[k].hdr >= base && fr[k].hdr + fr[k].hdr_len <=
		    base + regions[0].size, "frame %d not in the region", k);
		ck_assert_int_eq(flow_classify(t, fr[k].hdr, fr[k].hdr_len),
		    0);
	}
	flow_table_free(t);
	ck_assert_uint_eq(fr[0].rx_ns, fr[r - 1].rx_ns);
	ops->release(q, (unsigned)r);
	for (uint32_t k = 0; k < n; k++)
		bytes += cap[0].len[k];
	/* the rest, from frame 16 on: compare against a shifted capture */
	{
		struct capture rest;

		rest.n = n - 16;
		for (uint32_t k = 0; k < rest.n; k++) {
			rest.len[k] = cap[0].len[k + 16];
			rest.bytes[k] = cap[0].bytes[k + 16];
		}
		got = receive_all(q, &rest, rest.n, 64);
	}
	ck_assert_uint_eq(got + 16, n);
	/* end of the capture: nothing more, now or after a wait */
	ck_assert_int_eq(ops->rx_burst(q, fr, 64, 0), 0);
	ck_assert_int_eq(ops->rx_burst(q, fr, 64, SEC / 100), 0);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets, n);
	ck_assert_uint_eq(st.rx_bytes, bytes);
	ck_assert_uint_eq(st.kernel, 0);
	ck_assert_uint_eq(st.truncated, 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_uint_ge(st.bursts, n / 64);
	{
		/* one queue: nothing to steer */
		struct flow_table *ft = flow_table_create(&c.interfaces[0]);
		char why[128];

		ck_assert_ptr_nonnull(ft);
		ck_assert_int_eq(ops->steer(eng, ft, why, sizeof(why)), 0);
		flow_table_free(ft);
	}
}
END_TEST

/* Buffers of 2048 frame bytes (behind DPDK's headroom): a 3000-byte frame
 * arrives as a chain of two (a header part and a payload part), an
 * 8050-byte one would be a chain of five and is dropped as truncated. */
START_TEST(test_chained_frames)
{
	struct capture *x = &cap[0];
	struct engine_rxq *q;
	struct engine_stats st;
	uint32_t got = 0, two = 0;
	uint64_t end;

	for (uint32_t i = 0; i < 30; i++) {
		x->len[i] = i % 3 == 2 ? SENSOR_FRAME : 3000;
		x->bytes[i] = make_frame(i, i, SENSOR_PORT, x->len[i]);
	}
	x->n = 30;
	write_pcap("a.pcap", x);
	setup_cfg("net_pcap0", 1, 256, 2048, pcap_args);
	init_ok(NULL);
	q = ops->rxq(eng, 0);
	end = now_ns() + 5 * (uint64_t)SEC;
	while (got < 20 && now_ns() < end) {
		int r = ops->rx_burst(q, fr, 64, SEC / 10);

		ck_assert_int_ge(r, 0);
		for (int k = 0; k < r; k++) {
			uint32_t i = got / 2 * 3 + got % 2;	/* skip 2, 5, .. */

			check_frame(&fr[k], x, i);
			two += fr[k].payload_len > 0;
			ck_assert_uint_eq(fr[k].hdr_len, 2048);
			got++;
		}
		ops->release(q, (unsigned)r);
	}
	ck_assert_uint_eq(got, 20);
	ck_assert_uint_eq(two, 20);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets, 20);
	ck_assert_uint_eq(st.truncated, 10);
	ck_assert_uint_eq(st.rx_bytes, 20 * 3000);
}
END_TEST

/* Frames not released keep their buffers: with every buffer held the
 * engine says -ENOBUFS; released ones come back, and nothing is lost. */
START_TEST(test_held_buffers)
{
	struct engine_rxq *q;
	struct engine_stats st;
	uint32_t n = 200, got = 0, held = 0;
	int r;

	make_capture(&cap[0], n, 1000);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 64, 2048, pcap_args);
	init_ok(NULL);
	q = ops->rxq(eng, 0);
	while (held < 64) {
		r = ops->rx_burst(q, fr, 64, SEC);
		ck_assert_int_gt(r, 0);
		for (int k = 0; k < r; k++)
			check_frame(&fr[k], &cap[0], held + (uint32_t)k);
		held += (uint32_t)r;
	}
	ck_assert_uint_eq(held, 64);
	/* the first frame's bytes are intact while held */
	ck_assert_int_eq(ops->rx_burst(q, fr, 64, SEC / 100), -ENOBUFS);
	ops->release(q, 10);
	r = ops->rx_burst(q, fr, 64, SEC);
	ck_assert_int_eq(r, 10);
	for (int k = 0; k < r; k++)
		check_frame(&fr[k], &cap[0], 64 + (uint32_t)k);
	ops->release(q, 1000);	/* more than held: all */
	got = 74;
	{
		struct capture rest;

		rest.n = n - got;
		for (uint32_t k = 0; k < rest.n; k++) {
			rest.len[k] = cap[0].len[k + got];
			rest.bytes[k] = cap[0].bytes[k + got];
		}
		got += receive_all(q, &rest, rest.n, 32);
	}
	ck_assert_uint_eq(got, n);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets, n);
	ck_assert_uint_eq(st.kernel, 0);
}
END_TEST

/* An idle queue waits about its timeout, and the wake fd ends a wait at
 * once, also an endless one. */
static void
idle_waits(enum engine_rx_mode mode)
{
	struct engine_opts o = { .rx_mode = mode };
	struct engine_rxq *q;
	uint64_t t0, dt, one = 1;
	int efd;

	make_capture(&cap[0], 5, 100);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 128, 2048, pcap_args);
	init_ok(&o);
	q = ops->rxq(eng, 0);
	ck_assert_uint_eq(receive_all(q, &cap[0], 5, 64), 5);

	t0 = now_ns();
	ck_assert_int_eq(ops->rx_burst(q, fr, 64, 30 * 1000000ll), 0);
	dt = now_ns() - t0;
	ck_assert_msg(dt >= 30000000u && dt < 500000000u, "waited %llu ns",
	    (unsigned long long)dt);

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(efd, 0);
	ops->set_wake_fd(q, efd);
	ck_assert_int_eq(write(efd, &one, sizeof(one)), sizeof(one));
	t0 = now_ns();
	ck_assert_int_eq(ops->rx_burst(q, fr, 64, -1), 0);
	dt = now_ns() - t0;
	ck_assert_msg(dt < 200000000u, "woken after %llu ns",
	    (unsigned long long)dt);
	/* the engine never reads the fd: it is still readable */
	ck_assert_int_eq(read(efd, &one, sizeof(one)), sizeof(one));
	ops->set_wake_fd(q, -1);
	close(efd);
}

START_TEST(test_idle_blocking)
{
	idle_waits(ENGINE_RX_BLOCKING);
}
END_TEST

START_TEST(test_idle_busy_poll)
{
	idle_waits(ENGINE_RX_BUSY_POLL);
}
END_TEST

/* Two queues of one net_pcap port (one capture each) split one region;
 * the port's counters are reported once, by the first queue. */
START_TEST(test_two_queues)
{
	static const char *const args[] = {
		"--vdev=net_pcap0,rx_pcap=%s/a.pcap,rx_pcap=%s/b.pcap",
		"--no-huge", "--no-shconf", "-l", "0", NULL,
	};
	struct engine_stats st0, st1;
	char a[CFG_PATH_MAX];

	make_capture(&cap[0], 100, SENSOR_FRAME);
	cap[1].n = 70;
	for (uint32_t i = 0; i < cap[1].n; i++) {
		cap[1].len[i] = 500 + i;
		cap[1].bytes[i] = make_frame(1000 + i, i, SENSOR_PORT + 1,
		    cap[1].len[i]);
	}
	write_pcap("a.pcap", &cap[0]);
	write_pcap("b.pcap", &cap[1]);
	setup_cfg("net_pcap0", 2, 512, 9000, NULL);
	/* the format has the directory twice */
	snprintf(a, sizeof(a), args[0], dir, dir);
	snprintf(c.dpdk_args[0], CFG_PATH_MAX, "%s", a);
	for (int i = 1; args[i] != NULL; i++)
		snprintf(c.dpdk_args[i], CFG_PATH_MAX, "%s", args[i]);
	c.ndpdk_args = 5;
	init_ok(NULL);
	ck_assert_uint_eq(receive_all(ops->rxq(eng, 1), &cap[1], 70, 64), 70);
	ck_assert_uint_eq(receive_all(ops->rxq(eng, 0), &cap[0], 100, 64),
	    100);
	ck_assert_int_eq(ops->stats(ops->rxq(eng, 0), &st0), 0);
	ck_assert_int_eq(ops->stats(ops->rxq(eng, 1), &st1), 0);
	ck_assert_uint_eq(st0.rx_packets, 100);
	ck_assert_uint_eq(st1.rx_packets, 70);
	ck_assert_int_eq(ops->rxq(eng, 1)->qi, 1);
	{
		/* net_pcap has no flow rules: refused, with rte_flow's
		 * reason, and nothing left behind */
		struct flow_table *ft = flow_table_create(&c.interfaces[0]);
		char why[256] = "";

		ck_assert_ptr_nonnull(ft);
		ck_assert_int_lt(ops->steer(eng, ft, why, sizeof(why)), 0);
		ck_assert_msg(strstr(why, "rte_flow refused flow 0") != NULL,
		    "why: %s", why);
		flow_table_free(ft);
	}
}
END_TEST

/* A queue without a memory region gets DPDK's own buffers. */
START_TEST(test_no_region)
{
	make_capture(&cap[0], 40, SENSOR_FRAME / 4);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 0, 0, pcap_args);
	init_ok(NULL);
	ck_assert_uint_eq(receive_all(ops->rxq(eng, 0), &cap[0], 40, 64), 40);
}
END_TEST

static char fr_err_hint[ENGINE_ERR_MAX];

static void
init_fails(int want_rc, const char *want_text)
{
	char err[ENGINE_ERR_MAX];
	int rc = init(NULL, err, sizeof(err));

	snprintf(fr_err_hint, sizeof(fr_err_hint), "%s", err);
	ck_assert_msg(rc == want_rc, "rc %d, want %d (%s)", rc, want_rc, err);
	ck_assert_ptr_null(eng);
	ck_assert_msg(strstr(err, want_text) != NULL, "'%s' not in '%s'",
	    want_text, err);
}

START_TEST(test_error_no_such_port)
{
	char err[ENGINE_ERR_MAX];

	make_capture(&cap[0], 1, 100);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap7", 1, 128, 2048, pcap_args);
	init_fails(-ENODEV, "no DPDK port 'net_pcap7' (ports: net_pcap0)");
	ck_assert_ptr_nonnull(strstr(fr_err_hint, "--vdev=net_pcap7"));
	/* EAL went down with the last engine and does not come back */
	setup_cfg("net_pcap0", 1, 128, 2048, pcap_args);
	ck_assert_int_eq(init(NULL, err, sizeof(err)), -EALREADY);
	ck_assert_ptr_nonnull(strstr(err, "cannot be started again"));
}
END_TEST

START_TEST(test_error_missing_vdev_file)
{
	static const char *const args[] = {
		"--vdev=net_pcap0,rx_pcap=%s/nothing-here.pcap", "--no-huge",
		"--no-shconf", "-l", "0", NULL,
	};

	setup_cfg("net_pcap0", 1, 128, 2048, args);
	init_fails(-ENODEV, "no DPDK port 'net_pcap0' (ports: none): its "
	    "--vdev in cfg.dpdk_args did not start");
}
END_TEST

START_TEST(test_error_too_many_queues)
{
	make_capture(&cap[0], 1, 100);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 2, 256, 2048, pcap_args);
	init_fails(-EINVAL, "has 1 rx queue(s), the config 2 (net_pcap: one "
	    "rx_pcap= per queue)");
}
END_TEST

START_TEST(test_error_small_region)
{
	make_capture(&cap[0], 1, 100);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 32, 2048, pcap_args);
	init_fails(-ENOMEM, "32 buffers of memory region 'frames'");
}
END_TEST

START_TEST(test_error_small_buffers)
{
	make_capture(&cap[0], 1, 100);
	write_pcap("a.pcap", &cap[0]);
	setup_cfg("net_pcap0", 1, 128, 64, pcap_args);
	init_fails(-ENOMEM, "buffers of 64 bytes; DPDK needs at least 65");
}
END_TEST

START_TEST(test_error_bad_eal_args)
{
	static const char *const inmem[] = { "--no-huge", "--in-memory",
		NULL };
	static const char *const bogus[] = { "--no-huge", "--no-shconf",
		"--this-is-no-eal-option", NULL };

	/* refused before EAL starts, so a second try in this process works */
	setup_cfg("net_pcap0", 1, 128, 2048, inmem);
	init_fails(-EINVAL, "--no-huge cannot be combined with --in-memory");
	mem_regions_destroy(regions, c.nregions);
	setup_cfg("net_pcap0", 1, 128, 2048, bogus);
	init_fails(-EINVAL, "rte_eal_init failed");
}
END_TEST

/* Without --no-huge on a machine without free huge pages: say what to
 * do instead of letting EAL fail. */
START_TEST(test_error_no_hugepages)
{
	static const char *const args[] = { "--no-shconf", NULL };
	FILE *fp = popen("cat /sys/kernel/mm/hugepages/*/free_hugepages "
	    "2>/dev/null | awk '{ s += $1 } END { print s + 0 }'", "r");
	unsigned long free_pages = 1;

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fscanf(fp, "%lu", &free_pages), 1);
	pclose(fp);
	if (free_pages > 0)
		return;		/* this machine has huge pages: not testable */
	setup_cfg("net_pcap0", 1, 128, 2048, args);
	init_fails(-ENOMEM, "add \"--no-huge\"");
}
END_TEST

static Suite *
engine_dpdk_suite(void)
{
	Suite *s = suite_create("engine_dpdk");
	TCase *tc = tcase_create("net_pcap");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_frames_bytes_and_stats);
	tcase_add_test(tc, test_chained_frames);
	tcase_add_test(tc, test_held_buffers);
	tcase_add_test(tc, test_idle_blocking);
	tcase_add_test(tc, test_idle_busy_poll);
	tcase_add_test(tc, test_two_queues);
	tcase_add_test(tc, test_no_region);
	tcase_add_test(tc, test_error_no_such_port);
	tcase_add_test(tc, test_error_missing_vdev_file);
	tcase_add_test(tc, test_error_too_many_queues);
	tcase_add_test(tc, test_error_small_region);
	tcase_add_test(tc, test_error_small_buffers);
	tcase_add_test(tc, test_error_bad_eal_args);
	tcase_add_test(tc, test_error_no_hugepages);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(engine_dpdk_suite());
	int failed;

	/* EAL starts once per process: every test needs its own child */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
