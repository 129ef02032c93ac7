/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_sendmmsg: the baseline of the transmit benchmark
 * (scripts/bench-tx.sh). "send" is a bare sendmmsg loop of N payloads of
 * B bytes to 127.0.0.1:PORT, the least a sender can do per datagram, so
 * the daemon's tx path can be put next to it; "sink" drains the port
 * with recvmmsg and counts what arrived, for both the baseline and the
 * daemon's runs, so that both rates are taken at the same place. With
 * --gso K each message carries K payloads cut by the kernel (UDP_SEGMENT
 * on the socket), as the daemon's socket engine sends runs of one length.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "desc.h"
#include "../tool.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT		103
#endif
#ifndef SOL_UDP
#define SOL_UDP			17
#endif
#define BS_MAX_GSO		64
#ifndef SO_MEMINFO
#define SO_MEMINFO		55
#endif
#define BS_MEMINFO_DROPS	8	/* SK_MEMINFO_DROPS (sock_diag.h) */
#define BS_MEMINFO_VARS		9
#define BS_UDP_MAX		65507
#define BS_MAX_BATCH		1024
#define BS_DEFAULT_BATCH	64
#define BS_DEFAULT_BYTES	8000
#define BS_SNDBUF		(4 << 20)	/* as daqiri-sim */
#define BS_RCVBUF		(64 << 20)	/* as the socket engine */
#define BS_DEFAULT_IDLE_MS	1000

static volatile sig_atomic_t bs_stop;

static void
on_signal(int sig)
{
	(void)sig;
	bs_stop = 1;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
	    "usage: bench_sendmmsg send -p PORT [--bytes B] [--count N] "
	    "[--batch M] [--gso K]\n"
	    "       bench_sendmmsg sink -p PORT [--bytes B] [--expect N] "
	    "[--idle-ms T]\n");
	exit(2);
}

/* A number option, checked (tool.h). */
static uint64_t
num(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
	return tool_num("bench_sendmmsg", opt, s, lo, hi);
}

static struct sockaddr_in
loopback(uint16_t port)
{
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	return sa;
}

/* N payloads of B bytes in sendmmsg bursts of M messages of K payloads
 * each on a connected socket; a full send buffer blocks, as a sender that
 * waits for the wire. */
static int
do_send(uint16_t port, uint32_t bytes, uint64_t count, uint32_t batch,
	uint32_t gso)
{
	struct sockaddr_in sa = loopback(port);
	static struct mmsghdr msgs[BS_MAX_BATCH];
	static struct iovec iov[BS_MAX_BATCH];
	uint64_t sent = 0, t0, t1;
	double c0, c1, secs, gb;
	uint8_t *buf;
	uint32_t i;
	int fd, v = BS_SNDBUF;
	bool refused = false;

	if ((uint64_t)gso * bytes > BS_UDP_MAX) {
		fprintf(stderr, "bench_sendmmsg: --gso %u x %u bytes is over "
		    "%d\n", gso, bytes, BS_UDP_MAX);
		return 2;
	}
	if ((buf = malloc((size_t)bytes * batch * gso)) == NULL)
		return 1;
	for (i = 0; i < bytes * batch * gso; i++)
		buf[i] = (uint8_t)i;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("bench_sendmmsg: socket");
		return 1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (gso > 1) {
		int seg = (int)bytes;

		if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg,
		    sizeof(seg)) == -1) {
			perror("bench_sendmmsg: UDP_SEGMENT");
			return 1;
		}
	}
	for (i = 0; i < batch; i++) {
		iov[i].iov_base = buf + (size_t)i * bytes * gso;
		iov[i].iov_len = (size_t)bytes * gso;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	t0 = daqiri_mono_ns();
	c0 = tool_cpu_s();
	while (sent < count && !bs_stop) {
		uint64_t left = count - sent;
		uint32_t n = left < (uint64_t)batch * gso ?
		    (uint32_t)((left + gso - 1) / gso) : batch, last;
		int r;

		/* the last message of the run may carry fewer payloads */
		last = left < (uint64_t)n * gso ? (uint32_t)(left -
		    (uint64_t)(n - 1) * gso) : gso;
		iov[n - 1].iov_len = (size_t)bytes * last;
		r = sendmmsg(fd, msgs, n, 0);
		iov[n - 1].iov_len = (size_t)bytes * gso;

		if (r < 0) {
			if (errno == EINTR || errno == ENOBUFS ||
			    errno == EAGAIN)
				continue;
			if (errno == ECONNREFUSED) {
				/* the sink is not there (yet) */
				refused = true;
				continue;
			}
			perror("bench_sendmmsg: sendmmsg");
			return 1;
		}
		sent += (uint64_t)r == n ? (uint64_t)(n - 1) * gso + last :
		    (uint64_t)r * gso;
	}
	t1 = daqiri_mono_ns();
	c1 = tool_cpu_s();
	secs = (double)(t1 - t0) / 1e9;
	gb = (double)sent * bytes / 1e9;
	printf("send datagrams=%llu bytes=%llu seconds=%.6f gbps=%.3f "
	    "cpu_s=%.3f cpu_s_per_gb=%.3f refused=%d\n",
	    (unsigned long long)sent, (unsigned long long)sent * bytes, secs,
	    secs > 0 ? gb * 8 / secs : 0.0, c1 - c0,
	    gb > 0 ? (c1 - c0) / gb : 0.0, refused);
	free(buf);
	close(fd);
	return 0;
}

/* Drain the port until `expect` datagrams came (0: no limit) or none for
 * idle_ms; the rate is over first to last datagram. */
static int
do_sink(uint16_t port, uint32_t bytes, uint64_t expect, int idle_ms)
{
	struct sockaddr_in sa = loopback(port);
	static struct mmsghdr msgs[BS_DEFAULT_BATCH];
	static struct iovec iov[BS_DEFAULT_BATCH];
	uint32_t mi[BS_MEMINFO_VARS];
	socklen_t ml = sizeof(mi);
	uint64_t got = 0, gotb = 0, wrong = 0, t_first = 0, t_last = 0;
	size_t cap = (size_t)bytes + 1;		/* a longer one is wrong */
	struct pollfd pfd;
	uint8_t *buf;
	double secs;
	int fd, v = BS_RCVBUF, i;

	if ((buf = malloc(cap * BS_DEFAULT_BATCH)) == NULL)
		return 1;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		perror("bench_sendmmsg: socket");
		return 1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) == -1)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("bench_sendmmsg: bind");
		return 1;
	}
	printf("ready port=%u\n", port);
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while ((expect == 0 || got < expect) && !bs_stop) {
		int r;

		for (i = 0; i < BS_DEFAULT_BATCH; i++) {
			iov[i].iov_base = buf + (size_t)i * cap;
			iov[i].iov_len = cap;
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		r = recvmmsg(fd, msgs, BS_DEFAULT_BATCH, 0, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				perror("bench_sendmmsg: recvmmsg");
				return 1;
			}
			/* the first datagram may take long; then idle_ms */
			r = poll(&pfd, 1, got ? idle_ms : 60000);
			if (r == 0)
				break;
			continue;
		}
		t_last = daqiri_mono_ns();
		if (got == 0)
			t_first = t_last;
		for (i = 0; i < r; i++) {
			if (msgs[i].msg_len != bytes)
				wrong++;
			gotb += msgs[i].msg_len;
		}
		got += (uint64_t)r;
	}
	memset(mi, 0, sizeof(mi));
	(void)getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &ml);
	secs = (double)(t_last - t_first) / 1e9;
	printf("sink datagrams=%llu bytes=%llu wrong_size=%llu drops=%u "
	    "seconds=%.6f gbps=%.3f\n", (unsigned long long)got,
	    (unsigned long long)gotb, (unsigned long long)wrong,
	    mi[BS_MEMINFO_DROPS], secs,
	    secs > 0 ? (double)gotb * 8 / secs / 1e9 : 0.0);
	free(buf);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "expect", required_argument, NULL, 'e' },
		{ "batch", required_argument, NULL, 'm' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "gso", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t count = 100000, expect = 0;
	uint32_t bytes = BS_DEFAULT_BYTES, batch = BS_DEFAULT_BATCH, gso = 1;
	int idle_ms = BS_DEFAULT_IDLE_MS, ch;
	uint16_t port = 0;
	struct sigaction sa;
	const char *mode;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "p:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			port = (uint16_t)num("--port", optarg, 1, 65535);
			break;
		case 'b':
			bytes = (uint32_t)num("--bytes", optarg, 1, BS_UDP_MAX);
			break;
		case 'n':
			count = num("--count", optarg, 1, UINT64_MAX);
			break;
		case 'e':
			expect = num("--expect", optarg, 0, UINT64_MAX);
			break;
		case 'm':
			batch = (uint32_t)num("--batch", optarg, 1,
			    BS_MAX_BATCH);
			break;
		case 'g':
			gso = (uint32_t)num("--gso", optarg, 1, BS_MAX_GSO);
			break;
		case 'i':
			idle_ms = (int)num("--idle-ms", optarg, 1, 600000);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || port == 0)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (strcmp(mode, "send") == 0)
		return do_send(port, bytes, count, batch, gso);
	if (strcmp(mode, "sink") == 0)
		return do_sink(port, bytes, expect, idle_ms);
	usage();
}
