/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the socket engine over 127.0.0.1: frames and synthetic
 * headers, order, UDP_GRO splitting of GSO sends, truncation, kernel drop
 * accounting, timeouts, busy-poll, wake fd, buffer release, several queues
 * on one port, init errors, and direct placement into hinted destinations.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "flow.h"
#include "log.h"
#include "mem.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT	103
#endif
#define LOOPBACK	0x7F000001u
#define SEC		1000000000ll
#define MAXF		ENGINE_MAX_BURST

static struct cfg c;
static struct mem_region regions[2];
static struct engine *eng;
static const struct engine_ops *ops;
static struct rx_frame fr[MAXF];

/* One interface "lo" on 127.0.0.1:0 with nq queues; nbufs x buf_size
 * host region shared by them (nbufs 0 = no region). */
static void
setup_cfg(int nq, uint32_t nbufs, uint64_t buf_size)
{
	struct cfg_interface *ifc = &c.interfaces[0];
	char err[MEM_ERR_MAX];
	int i;

	memset(&c, 0, sizeof(c));
	c.stream_type = CFG_STREAM_SOCKET;
	c.engine = CFG_ENGINE_SOCKET;
	c.ninterfaces = 1;
	snprintf(ifc->name, sizeof(ifc->name), "lo");
	ifc->socket.present = true;
	ifc->socket.mode = CFG_SOCK_SERVER;
	ifc->socket.local.set = true;
	ifc->socket.local.transport = CFG_TRANSPORT_UDP;
	ifc->socket.local.addr = LOOPBACK;
	ifc->socket.local.port = 0;
	ifc->has_rx = true;
	ifc->rx.nqueues = nq;
	for (i = 0; i < nq; i++) {
		snprintf(ifc->rx.queues[i].name, CFG_NAME_MAX, "q%d", i);
		ifc->rx.queues[i].id = (uint32_t)i;
		ifc->rx.queues[i].batch_size = 64;
		ifc->rx.queues[i].nregions = nbufs ? 1 : 0;
		ifc->rx.queues[i].region_idx[0] = 0;
	}
	if (nbufs) {
		c.nregions = 1;
		snprintf(c.regions[0].name, CFG_NAME_MAX, "rx_buf");
		c.regions[0].kind = DAQIRI_MEM_HOST;
		c.regions[0].num_bufs = nbufs;
		c.regions[0].buf_size = buf_size;
		ck_assert_int_eq(mem_region_create(&c.regions[0], &regions[0],
		    err, sizeof(err)), 0);
	}
}

static uint16_t
start(const struct engine_opts *o)
{
	char err[ENGINE_ERR_MAX] = "";
	uint32_t addr;
	uint16_t port;

	ops = engine_lookup(CFG_ENGINE_SOCKET);
	ck_assert_ptr_eq(ops, &engine_socket_ops);
	ck_assert_msg(ops->init(&eng, &c, &c.interfaces[0], regions, o, err,
	    sizeof(err)) == 0, "init: %s", err);
	ck_assert_int_eq(ops->start(eng), 0);
	ck_assert_int_eq(engine_socket_bound(eng, &addr, &port), 0);
	ck_assert_uint_eq(addr, LOOPBACK);
	ck_assert_uint_ne(port, 0);
	return port;
}

static void
teardown(void)
{
	if (ops != NULL)
		ops->fini(eng);
	eng = NULL;
	mem_region_destroy(&regions[0]);
	mem_region_destroy(&regions[1]);
}

/* A sender on 127.0.0.1 aimed at port; returns the fd, its port in *sp. */
static int
sender(uint16_t port, uint16_t *sp)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	if (sp != NULL)
		*sp = ntohs(a.sin_port);
	a.sin_port = htons(port);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Datagram k: len bytes of a pattern that names k. */
static void
pattern(uint8_t *b, uint32_t len, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(k * 7 + i * 13);
}

static void
send_dgram(int fd, uint32_t len, uint32_t k)
{
	uint8_t b[65536];

	pattern(b, len, k);
	ck_assert_int_eq(send(fd, b, len, 0), (ssize_t)len);
}

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

/* The synthetic header says what a real one would. */
static void
check_hdr(const struct rx_frame *f, uint32_t src, uint16_t sport,
	  uint32_t dst, uint16_t dport)
{
	const uint8_t *h = f->hdr, *ip = h + 14, *udp = h + 34;
	uint32_t sum = 0;
	int i;

	ck_assert_uint_eq(f->hdr_len, 42);
	ck_assert_uint_eq(be16(h + 12), 0x0800);
	ck_assert_uint_eq(ip[0], 0x45);
	ck_assert_uint_eq(be16(ip + 2), 28 + f->payload_len);
	ck_assert_uint_eq(ip[9], 17);
	ck_assert_uint_eq(be32(ip + 12), src);
	ck_assert_uint_eq(be32(ip + 16), dst);
	for (i = 0; i < 20; i += 2)
		sum += be16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	ck_assert_uint_eq(sum, 0xFFFF);		/* checksum valid */
	ck_assert_uint_eq(be16(udp), sport);
	ck_assert_uint_eq(be16(udp + 2), dport);
	ck_assert_uint_eq(be16(udp + 4), 8 + f->payload_len);
}

static void
check_payload(const struct rx_frame *f, uint32_t len, uint32_t k)
{
	uint8_t b[65536];

	ck_assert_uint_eq(f->payload_len, len);
	pattern(b, len, k);
	ck_assert_mem_eq(f->payload, b, len);
}

/* Receive until n frames are in fr[] (1 s per burst at most). */
static unsigned
recv_n(struct engine_rxq *q, unsigned n, unsigned max)
{
	unsigned got = 0;
	int r;

	while (got < n) {
		r = ops->rx_burst(q, fr + got, max < n - got ? max : n - got,
		    SEC);
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		got += (unsigned)r;
	}
	return got;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

START_TEST(test_frames_and_headers)
{
	struct engine_opts o = { .no_gro = true };
	struct engine_stats st;
	struct engine_rxq *q;
	uint16_t port, sport;
	uint64_t t0, bytes = 0;
	uint32_t k;
	int fd;

	setup_cfg(1, 64, 2048);
	port = start(&o);
	q = ops->rxq(eng, 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_null(ops->rxq(eng, 1));
	ck_assert_int_eq(q->qi, 0);
	fd = sender(port, &sport);
	t0 = now_ns();
	for (k = 0; k < 40; k++) {
		send_dgram(fd, 1 + k * 50, k);
		bytes += 42 + 1 + k * 50;
	}
	ck_assert_uint_eq(recv_n(q, 40, MAXF), 40);
	for (k = 0; k < 40; k++) {
		check_hdr(&fr[k], LOOPBACK, sport, LOOPBACK, port);
		check_payload(&fr[k], 1 + k * 50, k);	/* in order */
		/* header written in front, inside the region */
		ck_assert_ptr_eq(fr[k].payload, fr[k].hdr + 42);
		ck_assert(fr[k].hdr >= (uint8_t *)regions[0].base &&
		    fr[k].payload + fr[k].payload_len <=
		    (uint8_t *)regions[0].base + 64 * 2048);
		ck_assert_uint_ge(fr[k].rx_ns, t0);
		ck_assert_uint_le(fr[k].rx_ns, now_ns());
	}
	ops->release(q, 40);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets, 40);
	ck_assert_uint_eq(st.rx_bytes, bytes);
	ck_assert_uint_eq(st.truncated, 0);
	ck_assert_uint_eq(st.kernel, 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_uint_ge(st.bursts, 1);
	close(fd);
	teardown();
}
END_TEST

/* The header part is what the flow classifier reads. */
START_TEST(test_flow_on_synthetic_header)
{
	struct engine_opts o = { .no_gro = true };
	struct cfg_interface *ifc = &c.interfaces[0];
	struct flow_table *t;
	struct engine_rxq *q;
	uint16_t port, sport;
	int fd;

	setup_cfg(1, 16, 2048);
	port = start(&o);
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	ifc->rx.nflows = 1;
	ifc->rx.flows[0].id = 3;
	ifc->rx.flows[0].has_match = true;
	ifc->rx.flows[0].match.has_udp_dst = true;
	ifc->rx.flows[0].match.udp_dst_lo = port;
	ifc->rx.flows[0].match.udp_dst_hi = port;
	ifc->rx.flows[0].match.has_ipv4_len = true;
	ifc->rx.flows[0].match.ipv4_len = 28 + 100;
	t = flow_table_create(ifc);
	ck_assert_ptr_nonnull(t);
	send_dgram(fd, 100, 1);
	send_dgram(fd, 101, 2);
	ck_assert_uint_eq(recv_n(q, 2, MAXF), 2);
	ck_assert_int_eq(flow_classify(t, fr[0].hdr, fr[0].hdr_len), 0);
	ck_assert_int_eq(flow_classify(t, fr[1].hdr, fr[1].hdr_len),
	    FLOW_UNMATCHED);
	ops->release(q, 2);
	flow_table_free(t);
	close(fd);
	teardown();
}
END_TEST

/* One GSO send of 4500 bytes in 1000-byte segments: one GRO read, five
 * frames, the last one short, handed out over several bursts. */
START_TEST(test_gro_split)
{
	struct engine_stats st;
	struct engine_rxq *q;
	uint8_t b[4500];
	uint16_t port, sport;
	int fd, gso = 1000, i;
	unsigned got = 0;

	setup_cfg(1, 256, 8192);	/* 9 buffers a read: 28 reads */
	port = start(NULL);
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	ck_assert_int_eq(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso,
	    sizeof(gso)), 0);
	pattern(b, sizeof(b), 9);
	ck_assert_int_eq(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	while (got < 5) {
		int r = ops->rx_burst(q, fr + got, 2, SEC);

		ck_assert_int_gt(r, 0);
		ck_assert_int_le(r, 2);
		got += (unsigned)r;
	}
	ck_assert_uint_eq(got, 5);
	for (i = 0; i < 5; i++) {
		uint32_t len = i < 4 ? 1000 : 500;

		ck_assert_uint_eq(fr[i].payload_len, len);
		ck_assert_mem_eq(fr[i].payload, b + i * 1000, len);
		check_hdr(&fr[i], LOOPBACK, sport, LOOPBACK, port);
		ck_assert_uint_eq(fr[i].rx_ns, fr[0].rx_ns);	/* one read */
	}
	/* back to back in one buffer, nothing copied */
	ck_assert_ptr_eq(fr[4].payload, fr[0].payload + 4000);
	ck_assert_ptr_ne(fr[4].hdr, fr[0].hdr);
	ck_assert_ptr_eq(fr[3].hdr, fr[0].hdr);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.gro_reads, 1);
	ck_assert_uint_eq(st.rx_packets, 5);
	ck_assert_uint_eq(st.rx_bytes, 5 * 42 + 4500);
	ops->release(q, 5);
	/* an ordinary datagram afterwards on the same socket */
	ck_assert_int_eq(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &(int){ 0 },
	    sizeof(int)), 0);
	send_dgram(fd, 700, 4);
	ck_assert_uint_eq(recv_n(q, 1, MAXF), 1);
	check_payload(&fr[0], 700, 4);
	ops->release(q, 1);
	close(fd);
	teardown();
}
END_TEST

/* GRO off: the kernel hands the same GSO send over as five datagrams. */
START_TEST(test_gso_without_gro)
{
	struct engine_opts o = { .no_gro = true };
	struct engine_stats st;
	struct engine_rxq *q;
	uint8_t b[4500];
	uint16_t port;
	int fd, gso = 1000, i;

	setup_cfg(1, 64, 2048);
	port = start(&o);
	q = ops->rxq(eng, 0);
	fd = sender(port, NULL);
	ck_assert_int_eq(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso,
	    sizeof(gso)), 0);
	pattern(b, sizeof(b), 3);
	ck_assert_int_eq(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	ck_assert_uint_eq(recv_n(q, 5, MAXF), 5);
	for (i = 0; i < 5; i++) {
		ck_assert_uint_eq(fr[i].payload_len, i < 4 ? 1000 : 500);
		ck_assert_mem_eq(fr[i].payload, b + i * 1000,
		    fr[i].payload_len);
		ck_assert_ptr_eq(fr[i].payload, fr[i].hdr + 42);
	}
	ops->release(q, 5);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.gro_reads, 0);
	close(fd);
	teardown();
}
END_TEST

/* Buffers too small for GRO turn it off by themselves; a datagram longer
 * than a buffer is counted as truncated and never handed out. */
START_TEST(test_truncated)
{
	struct engine_stats st;
	struct engine_rxq *q;
	uint16_t port;
	int fd;

	setup_cfg(1, 16, 142);		/* 100 payload bytes a buffer */
	port = start(NULL);
	q = ops->rxq(eng, 0);
	fd = sender(port, NULL);
	send_dgram(fd, 200, 1);
	send_dgram(fd, 100, 2);
	send_dgram(fd, 101, 3);
	send_dgram(fd, 50, 4);
	ck_assert_uint_eq(recv_n(q, 2, MAXF), 2);
	check_payload(&fr[0], 100, 2);
	check_payload(&fr[1], 50, 4);
	ops->release(q, 2);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.truncated, 2);
	ck_assert_uint_eq(st.rx_packets, 2);
	/* the slots of truncated reads came back: 16 more fit */
	for (int k = 0; k < 16; k++)
		send_dgram(fd, 10, (uint32_t)k);
	ck_assert_uint_eq(recv_n(q, 16, MAXF), 16);
	ops->release(q, 16);
	close(fd);
	teardown();
}
END_TEST

/* Overrun a small socket buffer: every datagram is either received or
 * counted as a kernel drop. */
START_TEST(test_kernel_drops)
{
	struct engine_opts o = { .no_gro = true, .rcvbuf_bytes = 65536 };
	struct engine_stats st;
	struct engine_rxq *q;
	uint16_t port;
	unsigned got = 0, sent = 3000;
	uint32_t k;
	int fd, r;

	setup_cfg(1, 256, 2048);
	port = start(&o);
	q = ops->rxq(eng, 0);
	fd = sender(port, NULL);
	for (k = 0; k < sent; k++)
		send_dgram(fd, 1000, k);
	for (;;) {
		r = ops->rx_burst(q, fr, MAXF, SEC / 10);
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		got += (unsigned)r;
		ops->release(q, (unsigned)r);
	}
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_gt(st.kernel, 0);
	ck_assert_uint_eq(st.rx_packets, got);
	ck_assert_uint_eq(got + st.kernel, sent);
	/* later datagrams carry the count (SO_RXQ_OVFL): no double count */
	send_dgram(fd, 10, 1);
	ck_assert_uint_eq(recv_n(q, 1, MAXF), 1);
	ops->release(q, 1);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.rx_packets + st.kernel, sent + 1);
	close(fd);
	teardown();
}
END_TEST

static void
check_timeout(enum engine_rx_mode mode)
{
	struct engine_opts o = { .rx_mode = mode };
	struct engine_rxq *q;
	uint64_t t0, dt;

	setup_cfg(1, 64, 2048);
	start(&o);
	q = ops->rxq(eng, 0);
	ck_assert_int_eq(ops->rx_burst(q, fr, MAXF, 0), 0);
	t0 = now_ns();
	ck_assert_int_eq(ops->rx_burst(q, fr, MAXF, 30 * 1000000ll), 0);
	dt = now_ns() - t0;
	ck_assert_uint_ge(dt, 29 * 1000000ull);	/* never early */
	teardown();
}

START_TEST(test_timeout_blocking)
{
	check_timeout(ENGINE_RX_BLOCKING);
}
END_TEST

START_TEST(test_timeout_busy_poll)
{
	check_timeout(ENGINE_RX_BUSY_POLL);
}
END_TEST

START_TEST(test_busy_poll)
{
	struct engine_opts o = { .rx_mode = ENGINE_RX_BUSY_POLL };
	struct engine_rxq *q;
	uint16_t port, sport;
	uint32_t k;
	int fd;

	setup_cfg(1, 256, 8192);
	port = start(&o);
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	for (k = 0; k < 200; k++)
		send_dgram(fd, 3000, k);
	for (k = 0; k < 200;) {
		int r = ops->rx_burst(q, fr, 64, SEC), i;

		ck_assert_int_gt(r, 0);
		for (i = 0; i < r; i++, k++) {
			check_payload(&fr[i], 3000, k);
			check_hdr(&fr[i], LOOPBACK, sport, LOOPBACK, port);
		}
		ops->release(q, (unsigned)r);
	}
	close(fd);
	teardown();
}
END_TEST

static void
check_wake(enum engine_rx_mode mode)
{
	struct engine_opts o = { .rx_mode = mode };
	struct engine_rxq *q;
	uint64_t one = 1;
	int efd;

	setup_cfg(1, 64, 2048);
	start(&o);
	q = ops->rxq(eng, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(efd, 0);
	ops->set_wake_fd(q, efd);
	ck_assert_int_eq(write(efd, &one, sizeof(one)), 8);
	/* an endless wait returns for the command (Check's timeout would
	 * catch a hang) */
	ck_assert_int_eq(ops->rx_burst(q, fr, MAXF, -1), 0);
	close(efd);
	teardown();
}

START_TEST(test_wake_blocking)
{
	check_wake(ENGINE_RX_BLOCKING);
}
END_TEST

START_TEST(test_wake_busy_poll)
{
	check_wake(ENGINE_RX_BUSY_POLL);
}
END_TEST

/* Unreleased frames keep their buffers; released ones are reused in
 * order; frames still held are not overwritten. */
START_TEST(test_release_and_nobufs)
{
	struct engine_opts o = { .no_gro = true };
	struct rx_frame keep[8];
	struct engine_rxq *q;
	uint16_t port;
	uint32_t k;
	int fd, r;

	setup_cfg(1, 8, 1024);
	port = start(&o);
	q = ops->rxq(eng, 0);
	fd = sender(port, NULL);
	for (k = 0; k < 20; k++)
		send_dgram(fd, 500, k);
	ck_assert_uint_eq(recv_n(q, 8, MAXF), 8);
	memcpy(keep, fr, sizeof(keep));
	ck_assert_int_eq(ops->rx_burst(q, fr, MAXF, 0), -ENOBUFS);
	ops->release(q, 3);
	r = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(r, 3);
	for (k = 0; k < 3; k++)
		check_payload(&fr[k], 500, 8 + k);
	for (k = 3; k < 8; k++)
		check_payload(&keep[k], 500, k);	/* untouched */
	ops->release(q, 100);				/* all of them */
	ck_assert_uint_eq(recv_n(q, 8, MAXF), 8);
	for (k = 0; k < 8; k++)
		check_payload(&fr[k], 500, 11 + k);
	ops->release(q, 8);
	ck_assert_uint_eq(recv_n(q, 1, MAXF), 1);
	check_payload(&fr[0], 500, 19);
	ops->release(q, 1);
	close(fd);
	teardown();
}
END_TEST

/* Two queues on one port (SO_REUSEPORT), each on its half of the region:
 * every datagram arrives exactly once. */
START_TEST(test_two_queues)
{
	struct engine_opts o = { .no_gro = true };
	struct engine_rxq *q0, *q1;
	struct engine_stats s0, s1;
	uint8_t *half;
	uint16_t port;
	int fds[16], i, r, k;
	unsigned total = 0, idle = 0;

	setup_cfg(2, 64, 2048);
	port = start(&o);
	q0 = ops->rxq(eng, 0);
	q1 = ops->rxq(eng, 1);
	ck_assert_uint_eq(q1->queue_id, 1);
	half = (uint8_t *)regions[0].base + 32 * 2048;
	for (i = 0; i < 16; i++) {
		fds[i] = sender(port, NULL);
		for (k = 0; k < 10; k++)
			send_dgram(fds[i], 100, (uint32_t)k);
	}
	while (total < 160 && idle < 4) {
		r = ops->rx_burst(q0, fr, MAXF, SEC / 20);
		ck_assert_int_ge(r, 0);
		for (k = 0; k < r; k++)
			ck_assert(fr[k].hdr < half);
		ops->release(q0, (unsigned)r);
		total += (unsigned)r;
		idle += r == 0;
		r = ops->rx_burst(q1, fr, MAXF, SEC / 20);
		ck_assert_int_ge(r, 0);
		for (k = 0; k < r; k++)
			ck_assert(fr[k].hdr >= half);
		ops->release(q1, (unsigned)r);
		total += (unsigned)r;
	}
	ck_assert_uint_eq(total, 160);
	ck_assert_int_eq(ops->stats(q0, &s0), 0);
	ck_assert_int_eq(ops->stats(q1, &s1), 0);
	ck_assert_uint_eq(s0.rx_packets + s1.rx_packets, 160);
	for (i = 0; i < 16; i++)
		close(fds[i]);
	teardown();
}
END_TEST

/* Drain q until idle; count the frames from sender port sport into
 * *from and the rest into *other. */
static void
drain_by_port(struct engine_rxq *q, uint16_t sport, unsigned *from,
	      unsigned *other)
{
	int r;

	while ((r = ops->rx_burst(q, fr, MAXF, SEC / 20)) > 0) {
		for (int k = 0; k < r; k++) {
			if (be16(fr[k].hdr + 34) == sport)
				(*from)++;
			else
				(*other)++;
		}
		ops->release(q, (unsigned)r);
	}
	ck_assert_int_eq(r, 0);
}

/* Two queues on one port, steered (engine_ops.steer): 16 senders, each a
 * flow by its source port, half to each queue in an order the kernel's
 * hash would not give; every datagram reaches its flow's queue, and a
 * sender no flow names lands by hash, on one queue. One queue has
 * nothing to steer; a table the kernel's program cannot hold is refused
 * with the reason. */
START_TEST(test_steer_two_queues)
{
	struct engine_opts o = { .no_gro = true };
	struct cfg_interface *ifc = &c.interfaces[0];
	struct flow_table *t;
	struct engine_rxq *q[2];
	uint16_t port, sp[17];
	int fds[17], k;
	char why[256] = "";
	unsigned got[2] = { 0, 0 }, other[2] = { 0, 0 };

	setup_cfg(2, 64, 2048);
	port = start(&o);
	q[0] = ops->rxq(eng, 0);
	q[1] = ops->rxq(eng, 1);
	for (int i = 0; i < 17; i++)
		fds[i] = sender(port, &sp[i]);
	/* flow i: udp_src sp[i], queue i % 2 (i < 16); sender 16 has none */
	ifc->rx.nflows = 16;
	for (int i = 0; i < 16; i++) {
		struct cfg_flow *f = &ifc->rx.flows[i];

		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "f%d", i);
		f->id = (uint32_t)i;
		f->nqueue_ids = 1;
		f->queue_ids[0] = (uint32_t)(i % 2);
		f->has_match = true;
		f->match.has_udp_src = true;
		f->match.udp_src_lo = f->match.udp_src_hi = sp[i];
	}
	t = flow_table_create(ifc);
	ck_assert_ptr_nonnull(t);
	ck_assert_msg(ops->steer(eng, t, why, sizeof(why)) == 0, "steer: %s",
	    why);
	for (int i = 0; i < 16; i++) {
		unsigned g[2] = { 0, 0 }, x[2] = { 0, 0 };

		for (k = 0; k < 8; k++)
			send_dgram(fds[i], 100, (uint32_t)k);
		drain_by_port(q[i % 2], sp[i], &g[i % 2], &x[i % 2]);
		drain_by_port(q[1 - i % 2], sp[i], &g[1 - i % 2],
		    &x[1 - i % 2]);
		ck_assert_msg(g[i % 2] == 8 && g[1 - i % 2] == 0,
		    "flow %d: %u on its queue %d, %u on the other", i,
		    g[i % 2], i % 2, g[1 - i % 2]);
		got[i % 2] += g[i % 2];
	}
	ck_assert_uint_eq(got[0] + got[1], 128);
	/* no flow: the kernel's hash picks one queue for the sender */
	for (k = 0; k < 8; k++)
		send_dgram(fds[16], 100, (uint32_t)k);
	drain_by_port(q[0], sp[16], &other[0], &got[0]);
	drain_by_port(q[1], sp[16], &other[1], &got[1]);
	ck_assert_msg((other[0] == 8 && other[1] == 0) ||
	    (other[0] == 0 && other[1] == 8), "unsteered: %u and %u",
	    other[0], other[1]);
	/* more flows than a program holds: refused, saying so */
	{
		struct flow_table *big = flow_table_clone(t, 2000);
		struct cfg_flow f;

		ck_assert_ptr_nonnull(big);
		memset(&f, 0, sizeof(f));
		f.nqueue_ids = 1;
		f.has_match = true;
		f.match.has_udp_src = f.match.has_udp_dst = true;
		for (uint32_t i = 0; i < 2000; i++) {
			f.id = 100 + i;
			f.queue_ids[0] = i % 2;
			f.match.udp_src_lo = f.match.udp_src_hi =
			    (uint16_t)(1000 + i);
			f.match.udp_dst_lo = f.match.udp_dst_hi = port;
			ck_assert_int_eq(flow_table_add(big, &f), 0);
		}
		ck_assert_int_eq(ops->steer(eng, big, why, sizeof(why)),
		    -E2BIG);
		ck_assert_msg(strstr(why, "program longer than") != NULL,
		    "why: %s", why);
		flow_table_free(big);
	}
	flow_table_free(t);
	for (int i = 0; i < 17; i++)
		close(fds[i]);
	teardown();

	/* one queue: nothing to steer */
	setup_cfg(1, 64, 2048);
	start(&o);
	t = flow_table_create(&c.interfaces[0]);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(ops->steer(eng, t, why, sizeof(why)), 0);
	flow_table_free(t);
	teardown();
}
END_TEST

/* No memory region: private buffers; bound to 0.0.0.0 the destination
 * address still comes from the datagram (IP_PKTINFO). */
START_TEST(test_private_buffers_wildcard)
{
	struct engine_rxq *q;
	char err[ENGINE_ERR_MAX] = "";
	uint32_t addr;
	uint16_t port, sport;
	int fd;

	setup_cfg(1, 0, 0);
	c.interfaces[0].socket.local.addr = 0;
	c.interfaces[0].socket.max_payload_size = 9000;
	ops = &engine_socket_ops;
	ck_assert_msg(ops->init(&eng, &c, &c.interfaces[0], regions, NULL,
	    err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(engine_socket_bound(eng, &addr, &port), 0);
	ck_assert_uint_eq(addr, 0);
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	send_dgram(fd, 9000, 5);
	ck_assert_uint_eq(recv_n(q, 1, MAXF), 1);
	check_payload(&fr[0], 9000, 5);
	check_hdr(&fr[0], LOOPBACK, sport, LOOPBACK, port);
	ops->release(q, 1);
	close(fd);
	teardown();
}
END_TEST

START_TEST(test_init_errors)
{
	struct cfg_interface *ifc;
	char err[ENGINE_ERR_MAX] = "";
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd, rc;

	ck_assert_ptr_eq(engine_lookup(CFG_ENGINE_SOCKET), &engine_socket_ops);
#ifdef DAQIRI_HAVE_DPDK
	ck_assert_ptr_eq(engine_lookup(CFG_ENGINE_DPDK), &engine_dpdk_ops);
#else
	ck_assert_ptr_null(engine_lookup(CFG_ENGINE_DPDK));	/* not built */
#endif
	engine_socket_ops.fini(NULL);
	ck_assert_int_eq(engine_socket_bound(NULL, &(uint32_t){ 0 },
	    &(uint16_t){ 0 }), -EINVAL);

	setup_cfg(1, 8, 1024);
	ifc = &c.interfaces[0];
	ops = &engine_socket_ops;
	ifc->socket.local.set = false;
	ck_assert_int_eq(ops->init(&eng, &c, ifc, regions, NULL, err,
	    sizeof(err)), -EINVAL);
	ck_assert_ptr_null(eng);
	ck_assert_ptr_nonnull(strstr(err, "interface 'lo'"));
	ck_assert_ptr_nonnull(strstr(err, "local_addr"));
	ifc->socket.local.set = true;

	/* a port someone else holds */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	ifc->socket.local.port = ntohs(a.sin_port);
	rc = ops->init(&eng, &c, ifc, regions, NULL, err, sizeof(err));
	ck_assert_int_eq(rc, -EADDRINUSE);
	ck_assert_ptr_nonnull(strstr(err, "bind udp://127.0.0.1:"));
	close(fd);

	/* a device region cannot be received into */
	ifc->socket.local.port = 0;
	memset(&regions[1], 0, sizeof(regions[1]));
	snprintf(regions[1].name, CFG_NAME_MAX, "gpu");
	regions[1].kind = DAQIRI_MEM_DEVICE;
	regions[1].nbufs = 8;
	regions[1].buf_size = 1024;
	regions[1].fd = -1;
	ifc->rx.queues[0].region_idx[0] = 1;
	c.nregions = 2;
	rc = ops->init(&eng, &c, ifc, regions, NULL, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "memory region 'gpu'"));
	c.nregions = 1;
	rc = ops->init(&eng, &c, ifc, regions, NULL, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);	/* an index beyond the regions */
	ck_assert_ptr_nonnull(strstr(err, "no memory region 1"));
	ifc->rx.queues[0].region_idx[0] = 0;

	ck_assert_int_eq(ops->init(&eng, &c, ifc, regions, NULL, err,
	    sizeof(err)), 0);
	teardown();
}
END_TEST

/* ---- direct placement (engine_ops.set_place) ------------------------ */

#define DP_HDR		8		/* the instrument's header */
#define DP_PAY		1000		/* payload bytes hinted */
#define DP_N		16

static uint8_t dp_dest[DP_N][DP_PAY];
static uint8_t *dp_dst[DP_N];

static const struct rx_place *
dp_hint(void)
{
	static struct rx_place pl;

	for (int i = 0; i < DP_N; i++)
		dp_dst[i] = dp_dest[i];
	memset(dp_dest, 0xEE, sizeof(dp_dest));
	pl = (struct rx_place){ .payload_off = 42 + DP_HDR,
	    .payload_len = DP_PAY, .n = DP_N, .dst = dp_dst };
	return &pl;
}

/* Frame f is datagram b (DP_HDR + DP_PAY bytes) split at the payload:
 * the synthetic header and the instrument's header in hdr, the payload in
 * destination d (direct, with a stash) or elsewhere (d < 0). */
static void
dp_check(const struct rx_frame *f, const uint8_t *b, int d, uint32_t src,
	 uint16_t sport, uint16_t dport)
{
	const uint8_t *ip = f->hdr + 14, *udp = f->hdr + 34;

	ck_assert_uint_eq(f->hdr_len, 42 + DP_HDR);
	ck_assert_uint_eq(f->payload_len, DP_PAY);
	ck_assert_uint_eq(be16(ip + 2), 28 + DP_HDR + DP_PAY);
	ck_assert_uint_eq(be32(ip + 12), src);
	ck_assert_uint_eq(be16(udp), sport);
	ck_assert_uint_eq(be16(udp + 2), dport);
	ck_assert_uint_eq(be16(udp + 4), 8 + DP_HDR + DP_PAY);
	ck_assert_mem_eq(f->hdr + 42, b, DP_HDR);
	ck_assert_mem_eq(f->payload, b + DP_HDR, DP_PAY);
	if (d >= 0) {
		ck_assert_ptr_eq(f->payload, dp_dest[d]);
		ck_assert_ptr_nonnull(f->stash);
	} else {
		ck_assert_ptr_null(f->stash);
	}
}

/* n datagrams of the hinted shape, one after another at d, as one send (with
 * UDP_SEGMENT set, one GSO send that UDP_GRO reads as one). */
static void
dp_send(int fd, const void *d, int n)
{
	size_t len = (size_t)n * (DP_HDR + DP_PAY);

	ck_assert_int_eq(send(fd, d, len, 0), (ssize_t)len);
}

/* One datagram per read: each payload lands in the next destination. */
START_TEST(test_direct_one_per_read)
{
	struct engine_stats st;
	struct engine_rxq *q;
	uint8_t b[6][DP_HDR + DP_PAY];
	uint16_t port, sport;
	int fd, i, n;

	setup_cfg(1, 64, 2048);
	port = start(&(struct engine_opts){ .no_gro = true });
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	for (i = 0; i < 6; i++) {
		pattern(b[i], sizeof(b[i]), (uint32_t)i);
		ck_assert_int_eq(send(fd, b[i], sizeof(b[i]), 0),
		    (ssize_t)sizeof(b[i]));
	}
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 6);
	for (i = 0; i < 6; i++)
		dp_check(&fr[i], b[i], i, LOOPBACK, sport, port);
	/* the stash takes a copy and reads back the same */
	memcpy(fr[2].stash, fr[2].payload, DP_PAY);
	ck_assert_mem_eq(fr[2].stash, b[2] + DP_HDR, DP_PAY);
	ops->release(q, 6);
	/* the hint was for that call only */
	send_dgram(fd, DP_HDR + DP_PAY, 9);
	ck_assert_uint_eq(recv_n(q, 1, MAXF), 1);
	check_payload(&fr[0], DP_HDR + DP_PAY, 9);
	ck_assert_ptr_null(fr[0].stash);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.direct, 6);
	ck_assert_uint_eq(st.rx_packets, 7);
	ck_assert_uint_eq(st.rx_bytes, 7 * (42 + DP_HDR + DP_PAY));
	ops->release(q, 1);
	close(fd);
	teardown();
}
END_TEST

/* GSO sends read with UDP_GRO: the first read shows several datagrams a
 * read (one pair, the rest in the slot), then each read gets pairs for
 * all of them, the next read going on from the last filled. */
START_TEST(test_direct_gro)
{
	struct engine_stats st;
	struct engine_rxq *q;
	uint8_t b[8][DP_HDR + DP_PAY];
	uint16_t port, sport;
	int fd, gso = DP_HDR + DP_PAY, i, n;

	setup_cfg(1, 512, 2048);
	port = start(NULL);
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	ck_assert_int_eq(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso,
	    sizeof(gso)), 0);
	for (i = 0; i < 8; i++)
		pattern(b[i], sizeof(b[i]), (uint32_t)i);
	dp_send(fd, b, 5);
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 5);
	dp_check(&fr[0], b[0], 0, LOOPBACK, sport, port);
	for (i = 1; i < 5; i++) {
		ck_assert_uint_eq(fr[i].hdr_len, 42);
		ck_assert_ptr_null(fr[i].stash);
		check_hdr(&fr[i], LOOPBACK, sport, LOOPBACK, port);
		ck_assert_mem_eq(fr[i].payload, b[i], sizeof(b[i]));
	}
	ops->release(q, 5);
	/* now a read of 5 and one of 3: all eight in destinations 0..7 */
	dp_send(fd, b, 5);
	dp_send(fd, b[5], 3);
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 8);
	for (i = 0; i < 8; i++)
		dp_check(&fr[i], b[i], i, LOOPBACK, sport, port);
	ck_assert_int_eq(ops->stats(q, &st), 0);
	ck_assert_uint_eq(st.direct, 9);
	ck_assert_uint_eq(st.gro_reads, 3);
	ops->release(q, 8);
	close(fd);
	teardown();
}
END_TEST

/* Datagrams of another length land scattered and are put back together
 * as if no hint had been given. */
START_TEST(test_direct_other_shapes)
{
	struct engine_rxq *q;
	uint8_t b[DP_HDR + DP_PAY];
	uint16_t port, sport;
	int fd, n;

	setup_cfg(1, 64, 4096);
	port = start(&(struct engine_opts){ .no_gro = true });
	q = ops->rxq(eng, 0);
	fd = sender(port, &sport);
	send_dgram(fd, 500, 1);			/* short: hdr + dst */
	send_dgram(fd, 3000, 2);		/* long: into the slot too */
	send_dgram(fd, 4, 3);			/* in the header part */
	pattern(b, sizeof(b), 4);
	ck_assert_int_eq(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 4);
	check_payload(&fr[0], 500, 1);
	check_payload(&fr[1], 3000, 2);
	check_payload(&fr[2], 4, 3);
	for (int i = 0; i < 3; i++) {
		check_hdr(&fr[i], LOOPBACK, sport, LOOPBACK, port);
		ck_assert_ptr_null(fr[i].stash);
	}
	dp_check(&fr[3], b, 3, LOOPBACK, sport, port);
	ops->release(q, 4);
	close(fd);
	teardown();
}
END_TEST

/* A queue with UDP_GRO and a GSO sender of datagrams of the hinted
 * shape whose first read (of two) made the engine take several datagrams
 * a read; the sender's fd, ports in *port and *sport. */
static int
dp_gro_warm(struct engine_rxq **q, uint16_t *port, uint16_t *sport)
{
	uint8_t b[2][DP_HDR + DP_PAY] = { { 0 } };
	int fd, gso = DP_HDR + DP_PAY;

	setup_cfg(1, 512, 2048);
	*port = start(NULL);
	*q = ops->rxq(eng, 0);
	fd = sender(*port, sport);
	ck_assert_int_eq(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso,
	    sizeof(gso)), 0);
	ck_assert_int_eq(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	ops->set_place(*q, dp_hint());
	ck_assert_int_eq(ops->rx_burst(*q, fr, MAXF, SEC), 2);
	ops->release(*q, 2);
	return fd;
}

/* A read with more frames than the call may hand out: the direct ones
 * that wait for the next call were copied to their stash. */
START_TEST(test_direct_deferred_are_copied)
{
	struct engine_rxq *q;
	uint8_t b[5][DP_HDR + DP_PAY];
	uint16_t port, sport;
	int fd = dp_gro_warm(&q, &port, &sport), i, n;

	for (i = 0; i < 5; i++)
		pattern(b[i], sizeof(b[i]), (uint32_t)i + 20);
	dp_send(fd, b, 5);
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, 3, SEC);
	ck_assert_int_eq(n, 3);
	for (i = 0; i < 3; i++)
		dp_check(&fr[i], b[i], i, LOOPBACK, sport, port);
	/* the worker may now reuse destinations 3 and 4 */
	memset(dp_dest[3], 0, DP_PAY);
	memset(dp_dest[4], 0, DP_PAY);
	n = ops->rx_burst(q, fr + 3, MAXF, SEC);
	ck_assert_int_eq(n, 2);
	for (i = 3; i < 5; i++) {
		dp_check(&fr[i], b[i], -1, LOOPBACK, sport, port);
		ck_assert_ptr_ne(fr[i].payload, dp_dest[i]);
	}
	ops->release(q, 5);
	close(fd);
	teardown();
}
END_TEST

/* Once reads hold several datagrams, a read of one does not end it; and
 * when the hint runs out, the rest of the call reads as always. */
START_TEST(test_direct_gro_mixed_and_short_hint)
{
	static struct rx_place pl;
	struct engine_rxq *q;
	uint8_t b[8][DP_HDR + DP_PAY];
	uint16_t port, sport;
	int fd = dp_gro_warm(&q, &port, &sport), i, n;

	for (i = 0; i < 8; i++)
		pattern(b[i], sizeof(b[i]), (uint32_t)i + 40);
	/* one datagram, then five: six frames, all in place */
	dp_send(fd, b, 1);
	dp_send(fd, b[1], 5);
	ops->set_place(q, dp_hint());
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 6);
	for (i = 0; i < 6; i++)
		dp_check(&fr[i], b[i], i, LOOPBACK, sport, port);
	ops->release(q, 6);
	/* four destinations for five + three datagrams */
	dp_send(fd, b, 5);
	dp_send(fd, b[5], 3);
	pl = *dp_hint();
	pl.n = 4;
	ops->set_place(q, &pl);
	n = ops->rx_burst(q, fr, MAXF, SEC);
	ck_assert_int_eq(n, 8);
	for (i = 0; i < 4; i++)
		dp_check(&fr[i], b[i], i, LOOPBACK, sport, port);
	for (i = 4; i < 8; i++) {
		ck_assert_ptr_null(fr[i].stash);
		check_hdr(&fr[i], LOOPBACK, sport, LOOPBACK, port);
		ck_assert_mem_eq(fr[i].payload, b[i], sizeof(b[i]));
	}
	ops->release(q, 8);
	close(fd);
	teardown();
}
END_TEST

static Suite *
engine_suite(void)
{
	Suite *s = suite_create("engine_socket");
	TCase *tc = tcase_create("loopback");

	tcase_add_test(tc, test_frames_and_headers);
	tcase_add_test(tc, test_flow_on_synthetic_header);
	tcase_add_test(tc, test_gro_split);
	tcase_add_test(tc, test_gso_without_gro);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_kernel_drops);
	tcase_add_test(tc, test_timeout_blocking);
	tcase_add_test(tc, test_timeout_busy_poll);
	tcase_add_test(tc, test_busy_poll);
	tcase_add_test(tc, test_wake_blocking);
	tcase_add_test(tc, test_wake_busy_poll);
	tcase_add_test(tc, test_release_and_nobufs);
	tcase_add_test(tc, test_two_queues);
	tcase_add_test(tc, test_steer_two_queues);
	tcase_add_test(tc, test_private_buffers_wildcard);
	tcase_add_test(tc, test_init_errors);
	tcase_add_test(tc, test_direct_one_per_read);
	tcase_add_test(tc, test_direct_gro);
	tcase_add_test(tc, test_direct_other_shapes);
	tcase_add_test(tc, test_direct_deferred_are_copied);
	tcase_add_test(tc, test_direct_gro_mixed_and_short_hint);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(engine_suite());
	int failed;

	log_init(CFG_LOG_WARN, 0);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
